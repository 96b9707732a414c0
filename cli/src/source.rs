//! Where the read-only commands get events from: a ledger directory that no server holds
//! open, or an export file (verified before anything is read from it).

use anyhow::{Context, Result};
use proofs::export::ExportEvent;
use schemas::{Seq, TableId};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `--ledger DIR` or `--export FILE`, shared by replay, verify, audit and export.
#[derive(clap::Args, Debug, Clone)]
pub struct SourceArgs {
    /// A ledger directory no server holds open (stop `serve` first, or use an export).
    #[arg(long, conflicts_with = "export")]
    pub ledger: Option<PathBuf>,
    /// An export file written by `roundledger export`.
    #[arg(long)]
    pub export: Option<PathBuf>,
}

/// An opened source of events.
pub enum Source {
    /// Boxed: an open ledger is ten times the size of the other variant.
    Ledger(Box<ledger::Ledger>),
    /// A verified export, held in memory by table, in seq order.
    Export(BTreeMap<TableId, Vec<ledger::StoredEvent>>),
}

impl Source {
    pub fn open(args: &SourceArgs) -> Result<Source> {
        match (&args.ledger, &args.export) {
            (Some(dir), None) => Ok(Source::Ledger(Box::new(open_ledger(dir)?))),
            (None, Some(file)) => read_export(file),
            _ => anyhow::bail!("say where the events are: --ledger DIR or --export FILE"),
        }
    }

    pub fn tables(&self) -> Result<Vec<TableId>> {
        match self {
            Source::Ledger(l) => Ok(l.reader().tables()),
            Source::Export(m) => Ok(m.keys().cloned().collect()),
        }
    }

    /// Calls `f` with each event of `table` in sequence order: (seq, exact bytes).
    pub fn visit(
        &self,
        table: &TableId,
        f: &mut dyn FnMut(Seq, &[u8]) -> Result<()>,
    ) -> Result<()> {
        match self {
            Source::Ledger(l) => {
                for stored in l.reader().events(table, 1..=u64::MAX) {
                    let stored = stored.with_context(|| format!("reading table {table}"))?;
                    f(stored.seq, &stored.bytes)?;
                }
                Ok(())
            }
            Source::Export(m) => {
                for e in m.get(table).map(|v| v.as_slice()).unwrap_or_default() {
                    f(e.seq, &e.bytes)?;
                }
                Ok(())
            }
        }
    }
}

pub fn open_ledger(dir: &std::path::Path) -> Result<ledger::Ledger> {
    anyhow::ensure!(dir.exists(), "no ledger at {}", dir.display());
    ledger::Ledger::open(dir).with_context(|| {
        format!(
            "opening the ledger at {} (if `roundledger serve` is running on it, stop it or work on an export)",
            dir.display()
        )
    })
}

fn read_export(file: &std::path::Path) -> Result<Source> {
    let open = || {
        std::fs::File::open(file)
            .map(std::io::BufReader::new)
            .with_context(|| format!("opening {}", file.display()))
    };
    proofs::export::verify_export(open()?)
        .with_context(|| format!("{} does not verify", file.display()))?;
    let mut tables: BTreeMap<TableId, Vec<ledger::StoredEvent>> = BTreeMap::new();
    use std::io::BufRead;
    for (i, line) in open()?.lines().enumerate().skip(1) {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let e: ExportEvent = serde_json::from_str(&line)
            .with_context(|| format!("{} line {}", file.display(), i + 1))?;
        let bytes = hex::decode(&e.bytes)
            .with_context(|| format!("{} line {}: bytes", file.display(), i + 1))?;
        tables
            .entry(e.table.clone())
            .or_default()
            .push(stored(e, bytes));
    }
    Ok(Source::Export(tables))
}

/// An export line as the ledger would read it back. Device time and round come from the
/// bytes; bytes that do not decode keep neither, and reading the round reports them.
fn stored(e: ExportEvent, bytes: Vec<u8>) -> ledger::StoredEvent {
    let decoded = schemas::codec::decode(&bytes).ok().map(|(ev, _)| ev);
    ledger::StoredEvent {
        seq: Seq(e.seq),
        hash: e.hash,
        stream_seq: e.stream_seq,
        received_at_ns: e.received_at_ns,
        occurred_at_ns: decoded.as_ref().map_or(0, |ev| ev.occurred_at_ns),
        round: decoded.and_then(|ev| ev.round),
        bytes,
    }
}
