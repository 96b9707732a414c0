//! Argument groups that several commands flatten into theirs: the property's gaming day
//! (`DayArgs`) and its pits (`PitArgs`). Each checks its values into the type the
//! libraries take; a bad value is an error naming the flag.

use anyhow::{bail, Context, Result};
use ledger::days::{DayRule, DAY_START_DEFAULT, TIME_ZONE_DEFAULT};
use readside::finance::{parse_pit, Pit};

/// The property's gaming day and shifts: `serve`, `day`, `report`, `readmodel`, `audit --day`.
/// The ledger keeps the rule (`Reader::day_rule`): `serve` and `seed` set it, every other
/// command reads it, and a flag that says another rule is refused, never obeyed quietly.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct DayArgs {
    /// Local time the gaming day starts, HH:MM (default: the ledger's, else 06:00).
    #[arg(long, value_name = "HH:MM")]
    pub day_start: Option<String>,
    /// The property's IANA time zone, e.g. Asia/Singapore (default: the ledger's, else UTC).
    /// Wall times typed on the command line (--from, --to) are read in it when given.
    #[arg(long, value_name = "ZONE")]
    pub time_zone: Option<String>,
    /// Local shift start times, the first being the day start, e.g. 06:00,14:00,22:00.
    /// Empty: one shift, the whole day (default: the ledger's, else one shift).
    #[arg(long, value_name = "HH:MM,...")]
    pub shifts: Option<String>,
}

impl DayArgs {
    /// Whether any of the flags was given.
    pub fn given(&self) -> bool {
        self.day_start.is_some() || self.time_zone.is_some() || self.shifts.is_some()
    }

    /// The day rule the flags give over `base` (each flag not given is `base`'s, or the
    /// default), or an error naming them.
    pub fn over(&self, base: Option<&DayRule>) -> Result<DayRule> {
        let spec = base.map(DayRule::spec);
        let mut parts = spec.as_deref().unwrap_or_default().splitn(3, ' ');
        let (start, zone, shifts) = (parts.next(), parts.next(), parts.next());
        let parts_start = start;
        let start = self
            .day_start
            .as_deref()
            .or(start.filter(|s| !s.is_empty()))
            .unwrap_or(DAY_START_DEFAULT);
        let zone = self
            .time_zone
            .as_deref()
            .or(zone)
            .unwrap_or(TIME_ZONE_DEFAULT);
        // Another day start with the old shifts would not start the day: one shift then.
        let kept_start = parts_start.filter(|s| !s.is_empty());
        let shifts = match (&self.shifts, &self.day_start) {
            (Some(s), _) => s.as_str(),
            (None, Some(d)) if Some(d.as_str()) != kept_start => "",
            (None, _) => shifts.unwrap_or_default(),
        };
        DayRule::new(start, zone)
            .and_then(|r| r.with_shifts(shifts))
            .context("--day-start / --time-zone / --shifts")
    }

    /// The day rule without a ledger: the flags over the defaults.
    pub fn rule(&self) -> Result<DayRule> {
        self.over(None)
    }

    /// The rule a command reading `ledger` uses: the ledger's (else the defaults). Flags
    /// saying another rule are refused: a report never splits days another way.
    pub fn rule_of(&self, ledger: &ledger::Ledger) -> Result<DayRule> {
        let kept = ledger
            .reader()
            .day_rule()
            .context("reading the ledger's day rule")?;
        let rule = self.over(kept.as_ref())?;
        if let Some(k) = &kept {
            if self.given() && k.spec() != rule.spec() {
                bail!(
                    "the ledger's day rule is `{}`; the flags say `{}`. `serve` sets the \
                     rule (--day-start, --time-zone, --shifts); other commands use it",
                    k.spec(),
                    rule.spec()
                );
            }
        }
        Ok(rule)
    }

    /// The rule `serve` (the ledger's owner) keeps: the flags over the ledger's rule,
    /// stored when new or changed. Returns it and the rule it replaced, if another.
    pub fn settle(&self, ledger: &ledger::Ledger) -> Result<(DayRule, Option<DayRule>)> {
        let kept = ledger
            .reader()
            .day_rule()
            .context("reading the ledger's day rule")?;
        let rule = self.over(kept.as_ref())?;
        let changed = kept.as_ref().is_none_or(|k| k.spec() != rule.spec());
        if changed {
            ledger
                .writer()
                .set_day_rule(&rule)
                .context("keeping the day rule in the ledger")?;
        }
        Ok((rule, kept.filter(|_| changed)))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(start: Option<&str>, shifts: Option<&str>) -> DayArgs {
        DayArgs {
            day_start: start.map(str::to_string),
            time_zone: None,
            shifts: shifts.map(str::to_string),
        }
    }

    #[test]
    fn the_ledger_keeps_one_day_rule_and_other_flags_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let l = ledger::Ledger::open(dir.path()).unwrap();
        let none = DayArgs::default();
        assert_eq!(
            none.rule_of(&l).unwrap().spec(),
            "06:00 UTC 06:00",
            "the defaults"
        );
        let three = flags(None, Some("06:00,14:00,22:00"));
        assert!(
            l.reader().day_rule().unwrap().is_none(),
            "reading keeps nothing"
        );
        let (rule, replaced) = three.settle(&l).unwrap();
        assert_eq!(rule.spec(), "06:00 UTC 06:00,14:00,22:00");
        assert!(replaced.is_none());
        // Every reader now splits days by it, given no flag or the same rule.
        assert_eq!(none.rule_of(&l).unwrap().spec(), rule.spec());
        assert_eq!(three.rule_of(&l).unwrap().spec(), rule.spec());
        let same_start = flags(Some("06:00"), None);
        assert_eq!(same_start.rule_of(&l).unwrap().spec(), rule.spec());
        for other in [flags(None, Some("06:00,18:00")), flags(Some("00:00"), None)] {
            let e = other.rule_of(&l).unwrap_err().to_string();
            assert!(
                e.contains("the ledger's day rule is `06:00 UTC 06:00,14:00,22:00`"),
                "{e}"
            );
        }
        // serve changes it, and says what it replaced.
        let (rule, replaced) = flags(None, Some("06:00,18:00")).settle(&l).unwrap();
        assert_eq!(rule.spec(), "06:00 UTC 06:00,18:00");
        assert_eq!(
            replaced.map(|r| r.spec()).as_deref(),
            Some("06:00 UTC 06:00,14:00,22:00")
        );
        assert_eq!(l.reader().day_rule().unwrap().unwrap().spec(), rule.spec());
    }
}
