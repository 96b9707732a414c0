//! `roundledger simulate`: a floor of simulated tables playing the five games and
//! publishing every event over NATS JetStream, as table controllers would. Each table
//! signs with its own device key, enrolled by an admin (`--device-keys`, `devicekeys`).

use crate::Outcome;
use anyhow::{Context, Result};
use simulator::{FaultPlan, FinanceFaultKind, Floor, PublishOptions, ShiftClock};

/// The floor to simulate and the faults to inject; shared with `demo`.
#[derive(clap::Args, Debug, Clone)]
pub struct FloorArgs {
    /// Number of tables; they cycle through CSP6, MLP3, SSP4, CS51, TCP3.
    #[arg(long, default_value_t = 10)]
    pub tables: usize,
    /// Number of the first table: tables `N` to `N + tables - 1` of the floor play (table
    /// `n` is the same game, name and seed whatever the others), so that several
    /// simulators can feed one server with distinct tables.
    #[arg(long, default_value_t = 1)]
    pub first_table: usize,
    /// Rounds each table plays.
    #[arg(long, default_value_t = 300)]
    pub rounds: u64,
    /// Seed of the floor: the same seed plays the same rounds, byte for byte.
    #[arg(long, default_value_t = 2026)]
    pub seed: u64,
    /// Probability per round of a dealer payout error.
    #[arg(long, default_value_t = 0.03)]
    pub payout_errors: f64,
    /// Probability per round of each kind of irregularity (late bet, skipped burnt card,
    /// duplicate card, exposed card, wrong card count, swapped hands, round not closed).
    /// Default 0, and 0.004 for `demo`.
    #[arg(long)]
    pub irregularities: Option<f64>,
    /// Probability of each finance error: a fill without its slip (per fill), a
    /// miscounted closer (per closing count), a short drop (per drop box); and a forced
    /// jackpot hit at a fiftieth of it (per round, CSP6 and MLP3 from a manual shoe), so a
    /// floor's hold stays a floor's. Default 0, and 0.1 for `demo`.
    #[arg(long)]
    pub finance_errors: Option<f64>,
    /// Rounds per second per table (unlimited when absent).
    #[arg(long)]
    pub rate: Option<f64>,
    /// Shift length in seconds of device time: at each boundary a table counts its tray,
    /// its drop box is removed, the next shift counts again. 0: one shift per table run.
    #[arg(long, value_name = "SECONDS", default_value_t = 8 * 3600)]
    pub shift_every: u64,
    /// A shift boundary, UTC `HH:MM` (the others follow every `--shift-every`); the default
    /// is the default gaming day start.
    #[arg(long, value_name = "HH:MM", default_value = ledger::days::DAY_START_DEFAULT)]
    pub shift_start: String,
    /// A player at table N, box B who sees the dealer's first hole card and plays on it
    /// (`N:B`; repeatable). The read model's decision analytics flag it (`/v1/analytics`).
    #[arg(long, value_name = "N:B")]
    pub hole_carder: Vec<String>,
    /// Boxes B and B + 1 of table N show each other their cards and play on both (`N:B`;
    /// repeatable).
    #[arg(long, value_name = "N:B")]
    pub card_sharers: Vec<String>,
    /// Table N's dealer at roster place P (0-3) pays wrongly at RATE per round while
    /// dealing (`N:P:RATE`; repeatable, one per table).
    #[arg(long, value_name = "N:P:RATE")]
    pub error_prone_dealer: Vec<String>,
    /// Table N's dealer settles every line of the table's shift SHIFT (counting its
    /// shifts from 1) PCT percent of its due amount in the players' favour (negative: the
    /// house's). Each such line is a payout error; the shift's hold leaves its interval
    /// (`hold_outside`). `N:SHIFT:PCT`; repeatable, one per table.
    #[arg(long, value_name = "N:SHIFT:PCT", allow_hyphen_values = true)]
    pub hold_skew: Vec<String>,
}

/// A forced jackpot hit is this many times rarer per round than `--finance-errors`: a
/// straight flush in one round in ten pays the BET at 50 to 1 so often that holds read
/// -480%, which no floor shows.
const JACKPOT_HITS_PER_ERROR_RATE: f64 = 50.0;

impl FloorArgs {
    pub fn fault_plan(&self) -> FaultPlan {
        let mut plan = FaultPlan::all(self.irregularities.unwrap_or(0.0));
        plan.wrong_payout = self.payout_errors.clamp(0.0, 1.0);
        let finance = self.finance_errors.unwrap_or(0.0);
        FinanceFaultKind::ALL.into_iter().fold(plan, |p, k| {
            let rate = match k {
                FinanceFaultKind::JackpotHit => finance / JACKPOT_HITS_PER_ERROR_RATE,
                _ => finance,
            };
            p.with_finance(k, rate)
        })
    }

    /// The shift boundaries of `--shift-every` and `--shift-start`; `None` for 0.
    pub fn shift_clock(&self) -> Result<Option<ShiftClock>> {
        if self.shift_every == 0 {
            return Ok(None);
        }
        let origin_ns = utc_time_of_day_ns(&self.shift_start).context("--shift-start")?;
        let period_ns = i64::try_from(self.shift_every)
            .ok()
            .and_then(|s| s.checked_mul(1_000_000_000))
            .context("--shift-every is too large")?;
        let clock = ShiftClock::new(origin_ns, period_ns).context("--shift-every")?;
        Ok(Some(clock))
    }

    /// The floor, its device clocks started `head_start_ns` before now: the ledger
    /// quarantines events whose device time is more than a day from their arrival
    /// (`ledger::CLOCK_SKEW_MAX_NS`), so the head start is capped (`HEAD_START_MAX_NS`)
    /// and `rate` paces a longer run so that it never passes now.
    pub fn floor(&self) -> Result<Floor> {
        anyhow::ensure!(self.tables > 0, "--tables must be at least 1");
        anyhow::ensure!(self.first_table > 0, "--first-table counts from 1");
        let now_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .context("system clock before 1970")?
            .as_nanos() as i64;
        let skip = self.first_table - 1;
        let mut floor = Floor::new(skip + self.tables, self.seed, self.fault_plan())
            .context("building the simulated floor")?;
        floor.tables.drain(..skip);
        let cheats = crate::cheats::Cheats {
            hole_carders: &self.hole_carder,
            card_sharers: &self.card_sharers,
            error_prone_dealers: &self.error_prone_dealer,
            hold_skews: &self.hold_skew,
        };
        floor.tables = crate::cheats::place(floor.tables, self.first_table, &cheats)?;
        let floor = floor.starting_at(now_ns - self.head_start_ns());
        Ok(match self.shift_clock()? {
            Some(clock) => floor.with_shifts(clock),
            None => floor,
        })
    }

    /// Device time the whole run spans, at most: `ROUND_DEVICE_NS_MAX` per round, plus
    /// the floor's stagger of the tables' clocks (`Floor::starting_at`).
    fn span_ns(&self) -> i64 {
        let stagger_ns = (self.tables as i64).saturating_mul(TABLE_STAGGER_NS);
        (self.rounds as i64)
            .saturating_mul(ROUND_DEVICE_NS_MAX)
            .saturating_add(stagger_ns)
    }

    fn head_start_ns(&self) -> i64 {
        self.span_ns().min(HEAD_START_MAX_NS)
    }

    /// Rounds per second per table: `--rate`, slowed (never sped up) so that device time
    /// never passes the wall clock. A run whose span fits the head start needs no pacing;
    /// a longer one must take at least `span - head start` of real time, spread evenly.
    pub fn rate(&self) -> Option<f64> {
        let ahead_ns = self.span_ns() - self.head_start_ns();
        if ahead_ns <= 0 {
            return self.rate;
        }
        let paced = self.rounds as f64 / (ahead_ns as f64 / 1e9);
        let rate = self.rate.map_or(paced, |r| r.min(paced));
        if self.rate != Some(rate) {
            eprintln!(
                "pacing at {rate:.4} rounds/s per table: {} rounds span more device time than the {} h head start, and device clocks never run ahead of now",
                self.rounds,
                HEAD_START_MAX_NS / 3_600_000_000_000
            );
        }
        Some(rate)
    }
}

/// `HH:MM` as ns after UTC midnight.
fn utc_time_of_day_ns(hh_mm: &str) -> Result<i64> {
    let bad = || anyhow::anyhow!("{hh_mm:?} is not HH:MM with HH 00-23 and MM 00-59");
    let (h, m) = hh_mm.split_once(':').ok_or_else(bad)?;
    let part = |s: &str, max: i64| {
        (s.len() == 2)
            .then(|| s.parse::<i64>().ok())
            .flatten()
            .filter(|v| (0..=max).contains(v))
    };
    let (Some(h), Some(m)) = (part(h, 23), part(m, 59)) else {
        return Err(bad());
    };
    Ok((h * 60 + m) * 60_000_000_000)
}

/// Device time one simulated round takes, at most (a round is about a minute).
const ROUND_DEVICE_NS_MAX: i64 = 90_000_000_000;
/// How far apart `Floor::starting_at` starts the tables' clocks.
const TABLE_STAGGER_NS: i64 = 7_000_000_000;
/// The furthest before now a floor's clocks start: 4 h inside the ledger's default skew
/// limit, so a run's first events, published at once, are not `clock_skew`.
const HEAD_START_MAX_NS: i64 = 20 * 3_600_000_000_000;

#[derive(clap::Args)]
pub struct Args {
    /// NATS server URL (`tls://` for a bus with TLS).
    #[arg(long, default_value = "nats://127.0.0.1:4222")]
    nats: String,
    #[command(flatten)]
    bus: crate::bus::DeviceBusArgs,
    #[command(flatten)]
    floor: FloorArgs,
    /// Each table's device key and its admin's enrollment: `DIR/<table>.key`
    /// (`roundledger keygen`) and `DIR/<table>.enrollment` (`roundledger enroll --device
    /// dealer-terminal`). The server trusts the enrolling admin (`serve --admin-key`).
    #[arg(long, value_name = "DIR", required_unless_present = "simulated_keys")]
    device_keys: Option<std::path::PathBuf>,
    /// Tests only: sign with keys derived from public labels, enrolled by the simulated
    /// admin key anybody can sign with. Refused unless ROUNDLEDGER_TEST_ONLY_SIMULATED_KEYS=1.
    #[arg(long, conflicts_with = "device_keys")]
    simulated_keys: bool,
    /// Print the published events and injected faults as JSON.
    #[arg(long)]
    json: bool,
    /// Trust JetStream's publish ack instead of keeping an outbox until the ledger's
    /// durable head (`ledger.<table>.head`) confirms each event (use without a server).
    #[arg(long)]
    no_outbox: bool,
}

/// Resolves on SIGINT or SIGTERM; never when neither handler can be installed.
async fn interrupted() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
}

pub fn run(args: Args) -> Result<Outcome> {
    let floor = match &args.device_keys {
        Some(dir) => crate::devicekeys::attach(args.floor.floor()?, dir)?,
        None => {
            crate::keygen::simulated_keys_allowed("--simulated-keys")?;
            args.floor.floor()?
        }
    };
    let rt = crate::runtime::runtime()?;
    let publishing = simulator::publish_floor(
        &args.nats,
        floor.tables,
        args.floor.rounds,
        args.floor.rate(),
        PublishOptions {
            durable: (!args.no_outbox).then(simulator::DurableWait::default),
            access: args.bus.access(),
            ..PublishOptions::default()
        },
    );
    // The devices wait for NATS without end (their outboxes republish): a signal stops
    // them, even where the shell started this with SIGINT ignored (a background job).
    let report = rt.block_on(async {
        tokio::select! {
            r = publishing => r.map(Some),
            () = interrupted() => Ok(None),
        }
    });
    let Some(report) = report.context("publishing the simulated floor")? else {
        eprintln!("interrupted: stopped publishing; events not yet acknowledged are not sent");
        return Ok(Outcome::Interrupted);
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "published {} events of {} rounds over {} tables and {} checkpoints; injected {} faults; {} finance variances listed, {} drop boxes counted ({} JetStream duplicates, {} republished from the outbox)",
            report.events.len(),
            report.rounds,
            args.floor.tables,
            report.checkpoints,
            report.faults.len(),
            report.finance.variances.len(),
            report.finance.counts.len(),
            report.duplicates,
            report.republished
        );
        if let Some((table, seq)) = report.checkpoints_claimed.first() {
            println!(
                "{} checkpoints (the first: {table} at seq {}) were called JetStream duplicates on their first publish: another publisher used their message ids first, or an earlier run sent them; each was sent again under a fresh id",
                report.checkpoints_claimed.len(),
                seq.0
            );
        }
    }
    Ok(Outcome::Clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shift_start_is_a_utc_time_of_day() {
        assert_eq!(utc_time_of_day_ns("06:00").unwrap(), 6 * 3_600_000_000_000);
        assert_eq!(utc_time_of_day_ns("23:59").unwrap(), 86_340_000_000_000);
        for bad in ["6:00", "24:00", "06:60", "0600", "ab:cd", ""] {
            assert!(utc_time_of_day_ns(bad).is_err(), "{bad}");
        }
    }
}
