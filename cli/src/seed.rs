//! `roundledger seed`: plays a simulated floor straight into a ledger directory, without
//! NATS: the same table devices, events and injected faults as `simulate`, appended in
//! bounded batches as ingest would (arrival order = round-robin over tables, receive time =
//! device time). For demo data behind `serve --no-ingest`, the browser test and the API
//! latency benchmark (`--rounds` large enough for ten million events).

use crate::simulate::FloorArgs;
use crate::Outcome;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    floor: FloorArgs,
    /// The ledger directory (created if missing; no server may hold it).
    #[arg(long)]
    ledger: PathBuf,
    /// Close every table at the end (so the last round of each is reported at once).
    #[arg(long)]
    close: bool,
}

pub fn run(args: Args) -> Result<Outcome> {
    let started = Instant::now();
    let ledger = ledger::Ledger::open(&args.ledger)
        .with_context(|| format!("opening the ledger at {}", args.ledger.display()))?;
    // A simulated floor: its device keys are enrolled by the simulator's admin key.
    ledger.trust_admin_keys(vec![simulator::admin_key().public()]);
    let mut floor = args.floor.floor()?;
    let mut stream_seq = ledger.stats().events;
    let mut batch: Vec<ledger::Incoming> = Vec::with_capacity(ledger::APPEND_BATCH_LEN_MAX);
    let mut stored = 0u64;
    let mut push = |events: Vec<simulator::Published>,
                    batch: &mut Vec<ledger::Incoming>,
                    force: bool|
     -> Result<()> {
        for p in events {
            stream_seq += 1;
            batch.push(ledger::Incoming {
                subject_table: Some(p.event.table.clone()),
                stream_seq,
                received_at_ns: p.event.occurred_at_ns,
                bytes: p.bytes,
            });
        }
        if force || batch.len() + 1024 > ledger::APPEND_BATCH_LEN_MAX {
            let out = ledger.append_batch(batch).context("appending")?;
            stored += out
                .iter()
                .filter(|a| matches!(a, ledger::Appended::Stored { .. }))
                .count() as u64;
            batch.clear();
            ledger.flush().context("flushing")?;
        }
        Ok(())
    };
    for t in floor.tables.iter_mut() {
        push(t.opening_events()?, &mut batch, false)?;
    }
    for _ in 0..args.floor.rounds {
        for t in floor.tables.iter_mut() {
            push(t.play_round()?.events, &mut batch, false)?;
        }
    }
    if args.close {
        for t in floor.tables.iter_mut() {
            push(t.closing_events()?, &mut batch, false)?;
        }
    }
    push(Vec::new(), &mut batch, true)?;
    println!(
        "seeded {} tables x {} rounds: {stored} events stored in {} in {:.1?}",
        floor.tables.len(),
        args.floor.rounds,
        args.ledger.display(),
        started.elapsed()
    );
    Ok(Outcome::Clean)
}
