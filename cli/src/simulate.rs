//! `roundledger simulate`: a floor of simulated tables playing the five games and
//! publishing every event over NATS JetStream, as table controllers would.

use crate::Outcome;
use anyhow::{Context, Result};
use simulator::{FaultPlan, Floor, PublishOptions};

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
    /// Rounds per second per table (unlimited when absent).
    #[arg(long)]
    pub rate: Option<f64>,
}

impl FloorArgs {
    pub fn fault_plan(&self) -> FaultPlan {
        let mut plan = FaultPlan::all(self.irregularities.unwrap_or(0.0));
        plan.wrong_payout = self.payout_errors.clamp(0.0, 1.0);
        plan
    }

    /// The floor, its device clocks set so the last rounds end near now: the ledger
    /// quarantines events whose device time is more than a day from their arrival
    /// (`ledger::CLOCK_SKEW_MAX_NS`). A round takes about a minute of device time.
    pub fn floor(&self) -> Result<Floor> {
        anyhow::ensure!(self.tables > 0, "--tables must be at least 1");
        anyhow::ensure!(self.first_table > 0, "--first-table counts from 1");
        let now_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .context("system clock before 1970")?
            .as_nanos() as i64;
        let span_ns = (self.rounds as i64).saturating_mul(90_000_000_000);
        let skip = self.first_table - 1;
        let mut floor = Floor::new(skip + self.tables, self.seed, self.fault_plan())
            .context("building the simulated floor")?;
        floor.tables.drain(..skip);
        Ok(floor.starting_at(now_ns - span_ns.min(20 * 3_600_000_000_000)))
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// NATS server URL (`tls://` for a bus with TLS).
    #[arg(long, default_value = "nats://127.0.0.1:4222")]
    nats: String,
    #[command(flatten)]
    bus: crate::bus::DeviceBusArgs,
    #[command(flatten)]
    floor: FloorArgs,
    /// Print the published events and injected faults as JSON.
    #[arg(long)]
    json: bool,
    /// Trust JetStream's publish ack instead of keeping an outbox until the ledger's
    /// durable head (`ledger.<table>.head`) confirms each event (use without a server).
    #[arg(long)]
    no_outbox: bool,
}

pub fn run(args: Args) -> Result<Outcome> {
    let floor = args.floor.floor()?;
    let rt = crate::serve::runtime()?;
    let report = rt
        .block_on(simulator::publish_floor(
            &args.nats,
            floor.tables,
            args.floor.rounds,
            args.floor.rate,
            PublishOptions {
                durable: (!args.no_outbox).then(simulator::DurableWait::default),
                access: args.bus.access(),
                ..PublishOptions::default()
            },
        ))
        .context("publishing the simulated floor")?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "published {} events of {} rounds over {} tables and {} checkpoints; injected {} faults ({} JetStream duplicates, {} republished from the outbox)",
            report.events.len(),
            report.rounds,
            args.floor.tables,
            report.checkpoints,
            report.faults.len(),
            report.duplicates,
            report.republished
        );
    }
    Ok(Outcome::Clean)
}
