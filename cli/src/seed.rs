//! `roundledger seed`: plays a simulated floor straight into a ledger directory, without
//! NATS: the same table devices, events, injected faults and signed checkpoints (after the
//! opening, every round and the closing) as `simulate`, appended in bounded batches as
//! ingest would (arrival order = round-robin over tables, receive time = device time; a
//! checkpoint after the batch holding the events it signs). For demo data behind
//! `serve --no-ingest`, the browser test and the API latency benchmark (`--rounds` large
//! enough for ten million events).

use crate::simulate::FloorArgs;
use crate::Outcome;
use anyhow::{bail, Context, Result};
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
    /// Then send this many messages the ledger refuses, so that the quarantine has demo
    /// data: in turn bytes that are no event, a table's first event on another table's
    /// subject, and a second, different event at a stored seq (a fork).
    #[arg(long, default_value_t = 0)]
    refused: u64,
    /// Then store the opening of one more table, `HELD-01`, all but its first event: a
    /// table held beyond a gap, as `table status` and the web UI show one (RUNBOOK.md).
    #[arg(long)]
    held: bool,
    /// Start the device clocks this many days ago: a history of past gaming days that can
    /// be sealed (`day seal` refuses days not yet ended).
    #[arg(long, value_name = "DAYS")]
    days_ago: Option<u32>,
    /// Close value-log segments at this many bytes instead of 1 GiB, so that a small
    /// ledger has several (tests of compaction). Later opens keep the default.
    #[arg(long, value_name = "BYTES", hide = true, value_parser = clap::value_parser!(u64).range(4096..))]
    segment_bytes: Option<u64>,
}

/// `seed --held`: the opening of table `HELD-01` but its first event, after stream seq
/// `stream_seq`, received when the device stamped them; returns how many are held.
fn held_table(ledger: &ledger::Ledger, stream_seq: u64) -> Result<u64> {
    let table = schemas::TableId::new("HELD-01").map_err(|e| anyhow::anyhow!("{e}"))?;
    let config = simulator::default_config(schemas::RuleSet::Csp6);
    let mut t = simulator::TableSim::new(table, config, 5, simulator::FaultPlan::none())?;
    let events = t.opening_events()?;
    let held: Vec<ledger::Incoming> = (1u64..)
        .zip(events.into_iter().skip(1))
        .map(|(i, p)| ledger::Incoming {
            subject_table: Some(p.event.table.clone()),
            stream_seq: stream_seq + i,
            received_at_ns: p.event.occurred_at_ns,
            bytes: p.bytes,
            provenance: Default::default(),
        })
        .collect();
    let out = ledger.writer().append_batch(&held).context("appending")?;
    ledger.flush().context("flushing")?;
    Ok(out
        .iter()
        .filter(|a| matches!(a, ledger::Appended::Held { .. }))
        .count() as u64)
}

/// The `n`th refused message of `seed --refused`: what each kind of bad input looks like.
fn refused_message(
    ledger: &ledger::Ledger,
    tables: &[schemas::TableId],
    n: u64,
    stream_seq: u64,
    received_at_ns: i64,
) -> Result<ledger::Incoming> {
    let table = &tables[n as usize % tables.len()];
    let other = &tables[(n as usize + 1) % tables.len()];
    let first = ledger
        .reader()
        .stored_event(table, 1)
        .context("reading a table's first event")?
        .with_context(|| format!("table {table} has no event"))?;
    let (subject, bytes) = match n % 3 {
        0 => (table, format!("not an event #{n}").into_bytes()),
        1 => (other, first.bytes),
        _ => {
            let (mut event, form) =
                schemas::codec::decode(&first.bytes).context("decoding a stored event")?;
            event.occurred_at_ns += 1 + n as i64;
            (table, schemas::codec::encode(&event, form))
        }
    };
    Ok(ledger::Incoming {
        bytes,
        subject_table: Some(subject.clone()),
        stream_seq,
        received_at_ns,
        provenance: Default::default(),
    })
}

pub fn run(args: Args) -> Result<Outcome> {
    let started = Instant::now();
    let segment_bytes = args
        .segment_bytes
        .unwrap_or(ledger::valuelog::SEGMENT_BYTES_MAX);
    let ledger = ledger::store::SledStore::open_sized(&args.ledger, segment_bytes)
        .and_then(|store| ledger::Ledger::with_store(Box::new(store)))
        .with_context(|| format!("opening the ledger at {}", args.ledger.display()))?;
    // A simulated floor: its device keys are enrolled by the simulator's admin key.
    ledger
        .writer()
        .trust_admin_keys(vec![simulator::admin_key().public()])
        .context("keeping the trusted admin key")?;
    keep_day_rule(&ledger, &args.floor)?;
    // Appended directly, not through the bus: the ledger checks no signatures here.
    let mut floor = args.floor.floor()?.without_event_signatures();
    if let Some(days) = args.days_ago {
        let now_ns = crate::when::now_ns()?;
        floor = floor.starting_at(now_ns - i64::from(days) * 86_400_000_000_000);
    }
    let mut seeder = Seeder::new(&ledger, segment_bytes);
    play(&mut seeder, &mut floor, &args)?;
    let (stored, kept) = (seeder.stored, seeder.kept);
    let tables: Vec<schemas::TableId> = floor.tables.iter().map(|t| t.table().clone()).collect();
    let quarantined = refuse(&ledger, &tables, args.refused)?;
    if args.held {
        let n = held_table(&ledger, ledger.reader().stats().events + 2_000_000)?;
        anyhow::ensure!(n > 0, "--held: HELD-01's events were not held");
        println!("held {n} events of HELD-01 beyond a gap at seq 1");
    }
    println!(
        "seeded {} tables x {} rounds: {stored} events and {kept} signed checkpoints stored{} in {} in {:.1?}",
        floor.tables.len(),
        args.floor.rounds,
        if args.refused > 0 {
            format!(", {quarantined} refused messages quarantined")
        } else {
            String::new()
        },
        args.ledger.display(),
        started.elapsed()
    );
    Ok(Outcome::Clean)
}

/// Keeps the day rule of the floor's shift clock in the ledger, so reports split its days
/// where its tables change shift. A ledger kept under another rule is refused.
fn keep_day_rule(ledger: &ledger::Ledger, floor: &crate::simulate::FloorArgs) -> Result<()> {
    let rule = crate::demo_finance::day_rule(&floor.shift_start, floor.shift_every)?;
    match ledger
        .reader()
        .day_rule()
        .context("reading the ledger's day rule")?
    {
        Some(kept) if kept.spec() != rule.spec() => bail!(
            "the ledger's day rule is `{}`; this floor changes shift as `{}`",
            kept.spec(),
            rule.spec()
        ),
        Some(_) => Ok(()),
        None => Ok(ledger.writer().set_day_rule(&rule)?),
    }
}

/// Every table's opening, its rounds, and its closing with `--close`, each step followed
/// by its dealer terminal's signed checkpoint, as `simulate` publishes them.
fn play(seeder: &mut Seeder, floor: &mut simulator::Floor, args: &Args) -> Result<()> {
    for t in floor.tables.iter_mut() {
        let events = t.opening_events()?;
        seeder.push(events, t.checkpoint())?;
    }
    for _ in 0..args.floor.rounds {
        for t in floor.tables.iter_mut() {
            let events = t.play_round()?.events;
            seeder.push(events, t.checkpoint())?;
        }
    }
    if args.close {
        for t in floor.tables.iter_mut() {
            let events = t.closing_events()?;
            seeder.push(events, t.checkpoint())?;
        }
    }
    seeder.append()
}

/// Events and checkpoints on their way into the ledger, in batches as ingest appends
/// them; checkpoints wait until the batch holding the events they sign is appended.
struct Seeder<'a> {
    ledger: &'a ledger::Ledger,
    stream_seq: u64,
    batch: Vec<ledger::Incoming>,
    /// The batch's event bytes, and the most it holds before it is appended: a quarter
    /// of a small value-log segment (`--segment-bytes`), so that every record fits one.
    batch_bytes: u64,
    batch_bytes_max: u64,
    checkpoints: Vec<ledger::Incoming>,
    stored: u64,
    kept: u64,
}

impl<'a> Seeder<'a> {
    fn new(ledger: &'a ledger::Ledger, segment_bytes: u64) -> Seeder<'a> {
        Seeder {
            ledger,
            stream_seq: ledger.reader().stats().events,
            batch: Vec::with_capacity(ledger::APPEND_BATCH_LEN_MAX),
            batch_bytes: 0,
            batch_bytes_max: segment_bytes / 4,
            checkpoints: Vec::new(),
            stored: 0,
            kept: 0,
        }
    }

    /// One table's step and its checkpoint; appends when a batch is nearly full.
    fn push(
        &mut self,
        events: Vec<simulator::Published>,
        checkpoint: Option<schemas::attest::Checkpoint>,
    ) -> Result<()> {
        for p in events {
            self.stream_seq += 1;
            self.batch_bytes += p.bytes.len() as u64;
            self.batch.push(ledger::Incoming {
                subject_table: Some(p.event.table.clone()),
                stream_seq: self.stream_seq,
                received_at_ns: p.event.occurred_at_ns,
                bytes: p.bytes,
                provenance: Default::default(),
            });
        }
        if let Some(c) = checkpoint {
            self.stream_seq += 1;
            self.checkpoints.push(ledger::Incoming {
                subject_table: Some(c.table.clone()),
                stream_seq: self.stream_seq,
                received_at_ns: c.signed_at_ns,
                bytes: c.to_bincode(),
                provenance: Default::default(),
            });
        }
        let full = self.batch.len() + 1024 > ledger::APPEND_BATCH_LEN_MAX
            || self.checkpoints.len() + 64 > ledger::APPEND_BATCH_LEN_MAX
            || self.batch_bytes >= self.batch_bytes_max;
        if full {
            self.append()?;
        }
        Ok(())
    }

    /// Appends the batch, then its checkpoints, and flushes.
    fn append(&mut self) -> Result<()> {
        let out = self
            .ledger
            .writer()
            .append_batch(&self.batch)
            .context("appending")?;
        let stored = out
            .iter()
            .filter(|a| matches!(a, ledger::Appended::Stored { .. }));
        self.stored += stored.count() as u64;
        self.batch.clear();
        self.batch_bytes = 0;
        let out = self
            .ledger
            .writer()
            .append_checkpoints(&self.checkpoints)
            .context("appending checkpoints")?;
        let kept = out
            .iter()
            .filter(|o| matches!(o, ledger::attest::CheckpointOutcome::Kept { .. }));
        self.kept += kept.count() as u64;
        self.checkpoints.clear();
        self.ledger.flush().context("flushing")
    }
}

/// `--refused N`: messages the ledger refuses, quarantined; how many were.
fn refuse(ledger: &ledger::Ledger, tables: &[schemas::TableId], n_max: u64) -> Result<u64> {
    if n_max == 0 || tables.is_empty() {
        return Ok(0);
    }
    let received_at_ns = ledger
        .reader()
        .heads()
        .first()
        .and_then(|h| {
            ledger
                .reader()
                .stored_event(&h.table, h.seq.0)
                .ok()
                .flatten()
        })
        .map_or(0, |e| e.received_at_ns);
    let (mut n, mut quarantined) = (0, 0u64);
    while n < n_max {
        let end = (n + ledger::APPEND_BATCH_LEN_MAX as u64).min(n_max);
        let refused = (n..end)
            .map(|i| {
                let seq = ledger.reader().stats().events + 1_000_000 + i;
                refused_message(ledger, tables, i, seq, received_at_ns + i as i64)
            })
            .collect::<Result<Vec<_>>>()?;
        let out = ledger
            .writer()
            .append_batch(&refused)
            .context("appending")?;
        let q = out.iter().filter(|a| {
            matches!(
                a,
                ledger::Appended::Refused(ledger::Refused::Quarantined { .. })
            )
        });
        quarantined += q.count() as u64;
        n = end;
    }
    ledger.flush().context("flushing")?;
    Ok(quarantined)
}
