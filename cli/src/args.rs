//! Argument groups that several commands flatten into theirs: the property's gaming day
//! (`DayArgs`) and its pits (`PitArgs`). Each checks its values into the type the
//! libraries take; a bad value is an error naming the flag.

use anyhow::{bail, Context, Result};
use ledger::days::{DayRule, DAY_START_DEFAULT, TIME_ZONE_DEFAULT};
use readside::finance::{parse_pit, Pit};

/// The property's gaming day and shifts: `serve`, `day`, `report`, `readmodel`, `audit --day`.
#[derive(clap::Args, Debug, Clone)]
pub struct DayArgs {
    /// Local time the gaming day starts, HH:MM.
    #[arg(long, value_name = "HH:MM", default_value = DAY_START_DEFAULT)]
    pub day_start: String,
    /// The property's IANA time zone, e.g. Asia/Singapore (default UTC). Wall times typed
    /// on the command line (--from, --to) are read in it when given.
    #[arg(long, value_name = "ZONE")]
    pub time_zone: Option<String>,
    /// Local shift start times, the first being the day start, e.g. 06:00,14:00,22:00.
    /// Empty: one shift, the whole day.
    #[arg(long, value_name = "HH:MM,...", default_value = "")]
    pub shifts: String,
}

impl DayArgs {
    /// The zone `--time-zone` names, else the default (UTC).
    pub fn zone_name(&self) -> &str {
        self.time_zone.as_deref().unwrap_or(TIME_ZONE_DEFAULT)
    }

    /// The day rule the flags give, or an error naming them.
    pub fn rule(&self) -> Result<DayRule> {
        DayRule::new(&self.day_start, self.zone_name())
            .and_then(|r| r.with_shifts(&self.shifts))
            .context("--day-start / --time-zone / --shifts")
    }
}

/// `--pit NAME=T1,T2`, repeatable: the property's pits (`serve` and `report`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct PitArgs {
    /// A pit and its tables, NAME=T1,T2 (repeatable).
    #[arg(long = "pit", value_name = "NAME=TABLES")]
    pub pit: Vec<String>,
}

impl PitArgs {
    /// The pits the flags give: at most `PITS_MAX`, each `NAME=T1,T2`.
    pub fn pits(&self) -> Result<Vec<Pit>> {
        if self.pit.len() > readside::finance::PITS_MAX {
            bail!("more than {} pits", readside::finance::PITS_MAX);
        }
        let pits = self
            .pit
            .iter()
            .map(|p| parse_pit(p).map_err(anyhow::Error::msg))
            .collect::<Result<Vec<_>>>()?;
        Ok(pits)
    }
}
