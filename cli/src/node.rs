//! `roundledger node rebuild`: a lost ledger node rebuilt into an empty directory from
//! the sealed days in the day bucket (`ingest::day_store`), then left for `serve` to
//! consume the stream from there.
//!
//! Order: the newest day with events is checked first, and the stream must still hold
//! every message after it; otherwise nothing is imported. Then each day is fetched,
//! checked against its signed seal and imported in day order (`ledger::rebuild`) into
//! `<ledger>.rebuilding`, renamed to the ledger only once every day is in. On any error
//! that directory is removed: nothing half-imported claims to be complete.
//!
//! The node's old durable consumer is deleted, so `serve` creates it again from the
//! stream's first message. Messages up to the last imported one then come again and are
//! recognised as duplicates by (table, seq, hash).

use crate::Outcome;
use anyhow::{bail, Context, Result};
use async_nats::jetstream;
use ingest::day_store;
use ledger::Ledger;
use schemas::attest::PublicKey;
use schemas::subjects;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(clap::Subcommand)]
enum Sub {
    /// Rebuild a lost node's ledger from the day bucket's sealed days.
    Rebuild(RebuildArgs),
}

#[derive(clap::Args)]
struct RebuildArgs {
    /// The ledger directory to create (refused if it exists and is not empty).
    #[arg(long)]
    ledger: PathBuf,
    /// NATS server URL (several comma-separated for a cluster).
    #[arg(long, default_value = "nats://127.0.0.1:4222")]
    nats: String,
    #[command(flatten)]
    bus: crate::bus::BusArgs,
    /// The House's seal public key (64 hex): every day's seal must verify under it.
    #[arg(long, value_name = "PUBLIC_KEY")]
    seal_key_pub: String,
    /// The node's id (`serve --node-id`): its old durable consumer is deleted.
    #[arg(long)]
    node_id: Option<String>,
    /// An admin public key (64 hex) trusted to enroll device keys, as `serve` is given.
    #[arg(long = "admin-key", value_name = "HEX")]
    admin_keys: Vec<String>,
    /// Tests only: also trust the simulator's admin key (as `serve`).
    #[arg(long)]
    trust_simulated_admin: bool,
    #[command(flatten)]
    day: crate::args::DayArgs,
}

pub fn run(args: Args) -> Result<Outcome> {
    let Sub::Rebuild(a) = args.command;
    let rt = crate::runtime::runtime()?;
    rt.block_on(rebuild(a))
}

async fn rebuild(a: RebuildArgs) -> Result<Outcome> {
    let started = std::time::Instant::now();
    refuse_used(&a.ledger)?;
    let key = crate::keygen::public_key(&a.seal_key_pub)?;
    let client = bus::connect(&a.nats, &a.bus.access())
        .await
        .context("connecting to the bus")?;
    let js = jetstream::new(client);
    let bucket = day_store::existing_bucket(&js).await?;
    let days = day_store::days(&bucket).await?;
    let through = last_stream_seq(&bucket, &days, key).await?;
    let first = check_stream(&js, through).await?;
    let partial = partial_dir(&a.ledger);
    let _ = std::fs::remove_dir_all(&partial);
    let imported = match import(&a, &bucket, &days, key, &partial).await {
        Ok(n) => n,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&partial);
            return Err(e.context(format!(
                "nothing rebuilt: {} removed, {} not made",
                partial.display(),
                a.ledger.display()
            )));
        }
    };
    forget_consumer(&js, a.node_id.as_deref()).await?;
    if a.ledger.exists() {
        std::fs::remove_dir(&a.ledger).context("removing the empty ledger directory")?;
    }
    std::fs::rename(&partial, &a.ledger)
        .with_context(|| format!("naming {} as {}", partial.display(), a.ledger.display()))?;
    let through = through.map_or("none".to_string(), |s| s.to_string());
    println!(
        "rebuilt {}: {} days, {imported} events, through stream seq {through}, in {:.1} s",
        a.ledger.display(),
        days.len(),
        started.elapsed().as_secs_f64()
    );
    println!("the stream holds seqs from {first}: start serve on this ledger to consume them");
    Ok(Outcome::Clean)
}

/// A rebuild writes only into a new or empty directory.
fn refuse_used(ledger: &Path) -> Result<()> {
    if let Ok(mut entries) = std::fs::read_dir(ledger) {
        if entries.next().is_some() {
            bail!(
                "{} is not empty: a rebuild writes only into a new or empty directory",
                ledger.display()
            );
        }
    }
    Ok(())
}

fn partial_dir(ledger: &Path) -> PathBuf {
    let mut name = ledger.as_os_str().to_owned();
    name.push(".rebuilding");
    PathBuf::from(name)
}

/// The highest stream seq of the newest day with events, each day walked checked
/// against its seal; `None` when no day holds events.
async fn last_stream_seq(
    bucket: &async_nats::jetstream::object_store::ObjectStore,
    days: &[String],
    key: PublicKey,
) -> Result<Option<u64>> {
    for day in days.iter().rev() {
        let file = day_store::get_day(bucket, day).await?;
        let checked =
            tokio::task::spawn_blocking(move || ledger::rebuild::check_day_file(&file, &key))
                .await??;
        if checked.last_stream_seq.is_some() {
            return Ok(checked.last_stream_seq);
        }
    }
    Ok(None)
}

/// The stream must hold every message after `through`: its first seq. Refuses a gap,
/// naming the missing seqs, and a stream that ends before `through`.
async fn check_stream(js: &jetstream::Context, through: Option<u64>) -> Result<u64> {
    let mut stream = js
        .get_stream(subjects::STREAM)
        .await
        .with_context(|| format!("opening stream {}", subjects::STREAM))?;
    let state = stream.info().await.context("stream info")?.state.clone();
    let after = through.map_or(1, |s| s + 1);
    if state.last_sequence + 1 < after {
        bail!(
            "stream {} ends at seq {}, before the sealed days' last message (seq {after} - 1): it is not the stream these days came from",
            subjects::STREAM,
            state.last_sequence
        );
    }
    if state.first_sequence > after {
        bail!(
            "a gap: stream {} no longer holds seqs {after}..={} (after the last sealed day); its retention is shorter than the time since that seal. Nothing imported",
            subjects::STREAM,
            state.first_sequence - 1
        );
    }
    Ok(state.first_sequence)
}

/// Imports every day in order into `dir`: the events imported.
async fn import(
    a: &RebuildArgs,
    bucket: &async_nats::jetstream::object_store::ObjectStore,
    days: &[String],
    key: PublicKey,
    dir: &Path,
) -> Result<u64> {
    let rule = a.day.rule()?;
    let keys = crate::serve::trusted_admin_keys(&a.admin_keys, a.trust_simulated_admin)?;
    let l = Arc::new(Ledger::open(dir).with_context(|| format!("creating {}", dir.display()))?);
    l.writer().set_day_rule(&rule)?;
    l.writer().trust_admin_keys(keys)?;
    let mut events = 0u64;
    for day in days {
        let file = day_store::get_day(bucket, day).await?;
        let ledger = l.clone();
        let checked =
            tokio::task::spawn_blocking(move || ledger.writer().import_day(&file, &key)).await??;
        anyhow::ensure!(
            checked.seal.day == *day,
            "object {day} holds day {}'s file",
            checked.seal.day
        );
        events += checked.events;
        eprintln!("day {day}: {} events imported", checked.events);
        if checked.previous_from_other_node {
            eprintln!("day {day}: its seal names another node's seal of the day before (a sealer takeover); `day verify` names that link");
        }
    }
    l.flush()?;
    Ok(events)
}

/// Deletes the node's durable consumer, if any: its ack floor is the lost ledger's.
async fn forget_consumer(js: &jetstream::Context, node_id: Option<&str>) -> Result<()> {
    let name = subjects::ingest_consumer(node_id);
    let stream = js.get_stream(subjects::STREAM).await?;
    if stream.consumer_info(&name).await.is_ok() {
        stream
            .delete_consumer(&name)
            .await
            .with_context(|| format!("deleting the old consumer {name}"))?;
    }
    Ok(())
}
