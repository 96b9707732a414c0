//! `roundledger day archive` and `day check-archive`: a sealed day written to a day file
//! (crate `archive`, schemas/ARCHIVE.md), and a day file checked on its own: every table's
//! chain rebuilt from its anchor and tied to the day's seal, whose signature is checked.
//!
//! Writing reads the ledger only. `roundledger archive move` moves a day into the archive
//! tier (`crate::tier`).

use crate::Outcome;
use anyhow::{Context, Result};
use schemas::seal::DaySeal;
use std::path::{Path, PathBuf};

/// Largest day file `check-archive` reads.
pub const DAY_FILE_LEN_MAX: u64 = 64 << 30;

#[derive(clap::Args)]
pub struct ArchiveArgs {
    /// A ledger directory no server holds open.
    #[arg(long)]
    ledger: PathBuf,
    /// The sealed gaming day, YYYY-MM-DD.
    #[arg(long)]
    day: String,
    /// The day file to write (refused if it exists).
    #[arg(long)]
    out: PathBuf,
}

#[derive(clap::Args)]
pub struct CheckArgs {
    /// A day file (`day archive`).
    file: PathBuf,
    /// The House's seal public key (64 hex); refuse a day its key did not seal.
    #[arg(long, value_name = "PUBLIC_KEY")]
    seal_key_pub: Option<String>,
}

/// Writes the sealed day's events of every table to a day file.
pub fn archive(args: ArchiveArgs) -> Result<Outcome> {
    let l = crate::source::open_ledger(&args.ledger)?;
    let seal = l
        .reader()
        .day_seal(&args.day)?
        .with_context(|| format!("day {} is not sealed: seal it first", args.day))?;
    // One table's events in memory at a time; the writer keeps only compressed frames.
    let mut writer = archive::DayWriter::new(&seal.day, &seal.to_json());
    let (mut wire, mut events) = (0usize, 0usize);
    for t in &seal.tables {
        let day = table_day(&l, t)?;
        wire += day.events.iter().map(|e| e.bytes.len()).sum::<usize>();
        events += day.events.len();
        writer.add(&day)?;
    }
    let file = writer.finish()?;
    write_new(&args.out, &file)?;
    println!(
        "day {}: {} tables, {events} events, {wire} wire bytes -> {} ({} bytes, {:.3}x)",
        seal.day,
        seal.tables.len(),
        args.out.display(),
        file.len(),
        file.len() as f64 / wire.max(1) as f64
    );
    Ok(Outcome::Clean)
}

/// One table's range of the day, read from the ledger with its anchor.
fn table_day(l: &ledger::Ledger, t: &schemas::seal::SealedTable) -> Result<archive::TableDay> {
    // An empty range has first_seq == last_seq + 1, which reads nothing.
    let day = read_range(l, &t.table, t.first_seq.0..=t.last_seq.0, t.anchor_hash)?;
    anyhow::ensure!(
        day.events.len() as u64 == t.events,
        "table {}: {} events read, the seal says {}",
        t.table,
        day.events.len(),
        t.events
    );
    Ok(day)
}

/// Events `seqs` of `table` as a day file's range after `anchor`.
pub fn read_range(
    l: &ledger::Ledger,
    table: &schemas::TableId,
    seqs: std::ops::RangeInclusive<u64>,
    anchor: schemas::Hash32,
) -> Result<archive::TableDay> {
    let mut events = Vec::new();
    if !seqs.is_empty() {
        for e in l.reader().events(table, seqs) {
            let e = e.with_context(|| format!("reading table {table}"))?;
            events.push(archive::DayEvent {
                seq: e.seq.0,
                hash: e.hash,
                stream_seq: e.stream_seq,
                received_at_ns: e.received_at_ns,
                bytes: e.bytes,
            });
        }
    }
    Ok(archive::TableDay {
        table: table.as_str().to_string(),
        anchor,
        events,
    })
}

/// Writes `bytes` to a new file, synced before it is named.
fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    anyhow::ensure!(!path.exists(), "{} exists", path.display());
    let tmp = path.with_extension("partial");
    let mut f =
        std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path).with_context(|| format!("naming {}", path.display()))?;
    Ok(())
}

/// Checks a day file alone: the seal's signature, then each table's frame against it.
pub fn check(args: CheckArgs) -> Result<Outcome> {
    let key = args
        .seal_key_pub
        .as_deref()
        .map(crate::keygen::public_key)
        .transpose()?;
    let len = std::fs::metadata(&args.file)
        .with_context(|| format!("reading {}", args.file.display()))?
        .len();
    anyhow::ensure!(
        len <= DAY_FILE_LEN_MAX,
        "{}: {len} bytes, over the limit",
        args.file.display()
    );
    let file = std::fs::read(&args.file)?;
    let (header, _) = archive::read_header(&file)?;
    let seal_bytes = hex::decode(&header.seal).context("the header's seal is not hex")?;
    let seal = DaySeal::from_json(&seal_bytes).context("the header's seal")?;
    let mut bad = 0;
    if let Err(e) = seal.verify(key.as_ref()) {
        println!("seal of day {}: FAILED: {e}", seal.day);
        bad += 1;
    }
    for t in seal.tables.iter().filter(|t| t.events > 0) {
        match check_table(&file, t) {
            Ok(()) => println!(
                "{:<12} seq {}..={} ok",
                t.table.as_str(),
                t.first_seq.0,
                t.last_seq.0
            ),
            Err(e) => {
                println!("{:<12} BAD: {e:#}", t.table.as_str());
                bad += 1;
            }
        }
    }
    Ok(if bad == 0 {
        Outcome::Clean
    } else {
        Outcome::Findings
    })
}

/// One table's frame read back and tied to the seal: its range, anchor and head.
fn check_table(file: &[u8], t: &schemas::seal::SealedTable) -> Result<()> {
    let (span, events) = archive::read_table(file, t.table.as_str())?;
    anyhow::ensure!(
        span.first_seq == t.first_seq.0 && span.last_seq == t.last_seq.0,
        "range {}..={}, the seal says {}..={}",
        span.first_seq,
        span.last_seq,
        t.first_seq.0,
        t.last_seq.0
    );
    anyhow::ensure!(
        span.anchor == t.anchor_hash,
        "anchor differs from the seal's"
    );
    anyhow::ensure!(span.head == t.head_hash, "head differs from the seal's");
    anyhow::ensure!(events.len() as u64 == t.events, "event count differs");
    Ok(())
}
