//! `roundledger export`: writes a table (or every table), or a round range of one table,
//! to a single file that `roundledger verify --export FILE` checks without the ledger
//! (format: proofs/src/export.rs).

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
    /// The file to write.
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: Args) -> Result<Outcome> {
    if let Some(c) = crate::client::Client::from_args(&args.server)? {
        let n =
            crate::remote::export(&c, args.table.as_deref(), args.rounds.as_deref(), &args.out)?;
        println!("wrote {n} events to {} (verified)", args.out.display());
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
    let file = std::fs::File::create(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let mut w = std::io::BufWriter::new(file);
    let range = match rounds {
        Some(r) => ledger::ExportRange::Rounds(r),
        None => ledger::ExportRange::All,
    };
    let summary = ledger
        .export(
            &ledger::ExportSelection {
                table,
                range,
                // A file is written as it goes: no bound beyond the disk's.
                events_max: None,
            },
            &mut w,
        )
        .with_context(|| format!("exporting to {}", args.out.display()))?;
    use std::io::Write;
    w.flush()?;
    println!(
        "wrote {} events of {} tables to {}",
        summary.events,
        summary.tables.len(),
        args.out.display()
    );
    Ok(Outcome::Clean)
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
