//! `roundledger export`: writes a table (or every table), or a round range of one table,
//! to a single file that `roundledger verify --export FILE` checks without the ledger
//! (format: proofs/src/export.rs). With `--parquet --day D`: a sealed gaming day as
//! Parquet files (`crate::parquet`).

use crate::source::open_ledger;
use crate::Outcome;
use anyhow::{Context, Result};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The ledger directory (no server may hold it open); or use --server.
    #[arg(long, required_unless_present = "server")]
    ledger: Option<PathBuf>,
    #[command(flatten)]
    server: crate::client::ServerArgs,
    /// Only this table (all tables when absent).
    #[arg(long)]
    table: Option<String>,
    /// Only these rounds of the table, e.g. `10..20` (inclusive); needs --table.
    #[arg(long, requires = "table")]
    rounds: Option<String>,
    /// Each table from just after its last day removed by retention, anchored at that
    /// day's sealed head. Without it, an export that covers a removed day is refused.
    #[arg(long, conflicts_with_all = ["rounds", "server"])]
    after_removed: bool,
    /// The file to write. With --parquet: the directory (default: <ledger>/archive, beside
    /// the day files).
    #[arg(long, required_unless_present = "parquet")]
    out: Option<PathBuf>,
    /// Write sealed gaming day --day as Parquet: rounds, bet lines, findings and finance
    /// lines, one file each (docs/PARQUET.md).
    #[arg(long, requires = "day", conflicts_with_all = ["server", "table", "rounds", "after_removed"])]
    parquet: bool,
    /// With --parquet: the sealed gaming day, YYYY-MM-DD.
    #[arg(long, requires = "parquet")]
    day: Option<String>,
    /// With --parquet: replace a file of the day that exists with other content (refused
    /// otherwise; the same content is left as it is).
    #[arg(long, requires = "parquet")]
    replace: bool,
    #[command(flatten)]
    rule: crate::args::DayArgs,
}

pub fn run(args: Args) -> Result<Outcome> {
    if args.parquet {
        let ledger = args
            .ledger
            .as_deref()
            .context("--parquet needs --ledger DIR")?;
        return crate::parquet::export(crate::parquet::Request {
            ledger,
            day: args.day.as_deref().unwrap_or_default(),
            out: args.out,
            replace: args.replace,
            rule: &args.rule,
        });
    }
    let out = args.out.clone().context("--out FILE")?;
    if let Some(c) = crate::client::Client::from_args(&args.server)? {
        let n = crate::remote::export(&c, args.table.as_deref(), args.rounds.as_deref(), &out)?;
        println!("wrote {n} events to {} (verified)", out.display());
        return Ok(Outcome::Clean);
    }
    let dir = args
        .ledger
        .as_ref()
        .context("say where the events are: --ledger DIR or --server URL")?;
    let ledger = open_ledger(dir)?;
    let table = args
        .table
        .as_deref()
        .map(schemas::TableId::new)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--table: {e}"))?;
    let rounds = args.rounds.as_deref().map(parse_range).transpose()?;
    let range = match rounds {
        Some(r) => ledger::ExportRange::Rounds(r),
        None if args.after_removed => ledger::ExportRange::AfterRemoved,
        None => ledger::ExportRange::All,
    };
    let sel = ledger::ExportSelection {
        table,
        range,
        // A file is written as it goes: no bound beyond the disk's.
        events_max: None,
    };
    let summary = match write_export(&ledger, &sel, &out) {
        Ok(s) => s,
        Err(e) => {
            // A failed export leaves no file that could pass for one.
            let _ = std::fs::remove_file(&out);
            return Err(removed_hint(e)).with_context(|| format!("exporting to {}", out.display()));
        }
    };
    println!(
        "wrote {} events of {} tables to {}",
        summary.events,
        summary.tables.len(),
        out.display()
    );
    print_sealed_anchors(&ledger, &sel, &summary)?;
    Ok(Outcome::Clean)
}

fn write_export(
    ledger: &ledger::Ledger,
    sel: &ledger::ExportSelection,
    out: &std::path::Path,
) -> Result<proofs::export::ExportSummary, ledger::Error> {
    let file = std::fs::File::create(out)?;
    let mut w = std::io::BufWriter::new(file);
    let summary = ledger.reader().export(sel, &mut w)?;
    use std::io::Write;
    w.flush()?;
    w.get_ref().sync_all()?;
    Ok(summary)
}

/// An export refused for a removed day, with the ways around it.
fn removed_hint(e: ledger::Error) -> anyhow::Error {
    let ledger::Error::ExportRemoved {
        table,
        day,
        last_seq,
        ..
    } = &e
    else {
        return e.into();
    };
    let after = last_seq + 1;
    anyhow::anyhow!(
        "{e}. Export what follows the day with --after-removed: table {table} then starts at seq {after}, anchored at the head that day {day}'s seal proves (`roundledger day show {day}`). Or export rounds outside the day: --table {table} --rounds A..B"
    )
}

/// For each table exported from a removed day's sealed head: which day, so that a reader
/// can check the anchor against the seal. With `--after-removed`, the tables left out.
fn print_sealed_anchors(
    ledger: &ledger::Ledger,
    sel: &ledger::ExportSelection,
    summary: &proofs::export::ExportSummary,
) -> Result<()> {
    let removed = ledger.removed_days()?;
    // Every table was asked for: say which have nothing after their removed days.
    let every = matches!(
        sel,
        ledger::ExportSelection {
            table: None,
            range: ledger::ExportRange::AfterRemoved,
            ..
        }
    );
    for table in ledger.reader().tables().into_iter().filter(|_| every) {
        let listed = summary.tables.iter().any(|t| t.table == table);
        if let (false, Some(r)) = (listed, removed.ranges(&table).last()) {
            println!(
                "{table}: not exported, its events end with day {}, removed by retention",
                r.day
            );
        }
    }
    for t in &summary.tables {
        let sealed = removed
            .ranges(&t.table)
            .iter()
            .find(|r| r.last_seq + 1 == t.from_seq);
        if let Some(r) = sealed {
            println!(
                "{}: seqs {}..={}, anchored at {}, the head of day {}'s seal (seqs {}..={} removed by retention)",
                t.table, t.from_seq, t.to_seq, t.anchor, r.day, r.first_seq, r.last_seq
            );
        }
    }
    Ok(())
}

fn parse_range(s: &str) -> Result<std::ops::RangeInclusive<u64>> {
    let (a, b) = s.split_once("..").context("--rounds: expected A..B")?;
    let a: u64 = a.trim().parse().context("--rounds: start")?;
    let b: u64 = b
        .trim_start_matches('=')
        .trim()
        .parse()
        .context("--rounds: end")?;
    anyhow::ensure!(a <= b, "--rounds: {a} > {b}");
    Ok(a..=b)
}
