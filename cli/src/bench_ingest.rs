//! `roundledger bench-ingest`: the ingest benchmark through the real binary (its
//! allocator, its runtime). Starts a private nats-server with JetStream, pre-publishes the
//! messages (events, and each table controller's signed checkpoints), then in each round
//! measures (a) a raw pull consumer that only fetches and acks and (b) roundledger's
//! ingest end to end into a fresh ledger, signatures checked, over the same messages; then
//! (c) latency from publish to durable head. Prints the report as JSON.

use crate::Outcome;
use anyhow::{Context, Result};

#[derive(clap::Args)]
pub struct Args {
    /// Events pre-published. Each table's controller adds a signed checkpoint after every
    /// 45 of its events, so (a) and (b) each consume about 2% more messages than this.
    #[arg(long, default_value_t = 200_000)]
    messages: u64,
    /// Messages per fetch, for both consumers.
    #[arg(long, default_value_t = 512)]
    batch: usize,
    /// Rounds of (a) then (b); the report gives each and the medians.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// A secured bus: TLS, and a credential per principal (ingest, an observer, each
    /// bench table's device).
    #[arg(long)]
    secured: bool,
    /// Each event signed by its table's controller; the ledgers require it.
    #[arg(long)]
    signed_events: bool,
}

pub fn run(args: Args) -> Result<Outcome> {
    let mut nats = match args.secured {
        true => natsd::NatsServer::start_secured(),
        false => natsd::NatsServer::start(),
    }
    .context("starting nats-server (scripts/setup.sh installs it)")?;
    let mut bb = match args.secured {
        true => secured_bus(&mut nats)?,
        false => ingest::BenchBus::default(),
    };
    bb.signed_events = args.signed_events;
    let dir = tempfile::tempdir().context("creating a temporary directory")?;
    let report = crate::runtime::runtime()?
        .block_on(ingest::bench_ingest(
            &nats.url(),
            dir.path(),
            args.messages,
            args.batch,
            args.rounds,
            nats.pid(),
            &bb,
        ))
        .context("ingest benchmark")?;
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(Outcome::Clean)
}

/// Credentials for the bench's principals on its own secured server.
fn secured_bus(nats: &mut natsd::NatsServer) -> Result<ingest::BenchBus> {
    let issued = nats
        .issue_floor(&ingest::bench_tables())
        .context("issuing bus credentials")?;
    Ok(ingest::BenchBus {
        ingest: issued.ingest,
        observer: issued.observer,
        device_creds_dir: Some(issued.creds_dir),
        signed_events: false,
    })
}
