//! `roundledger digest`: the ledger's state to hand to an outside party: every table's
//! chain head, a Merkle root over them, the event count and the time (format in
//! schemas/README.md §5). Taken only when every chain verifies. Later,
//! `roundledger verify --ledger DIR --against FILE` proves the ledger still extends it.

use crate::Outcome;
use anyhow::{Context, Result};
use ledger::digest::{digest_store, DigestRefused};
use ledger::store::SledStore;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// A ledger directory no server holds open.
    #[arg(long)]
    ledger: PathBuf,
    /// Write the digest here (default: standard output).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// UTC nanoseconds now: the digest's time comes from this process's clock (an edge).
pub fn now_ns() -> Result<i64> {
    Ok(std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .context("system clock before 1970")?
        .as_nanos() as i64)
}

pub fn run(args: Args) -> Result<Outcome> {
    let store = SledStore::open(&args.ledger)
        .with_context(|| format!("opening the ledger at {}", args.ledger.display()))?;
    let digest = match digest_store(&store, now_ns()?) {
        Ok(d) => d,
        Err(DigestRefused::DoesNotVerify { report, .. }) => {
            eprintln!("no digest: the ledger does not verify (run `roundledger verify`):");
            for t in report.tables {
                if let ledger::TableVerdict::Bad {
                    table,
                    seq,
                    problem,
                } = t
                {
                    eprintln!(
                        "{:<12} BAD  first bad position: seq {seq}: {problem}",
                        table.as_str()
                    );
                }
            }
            return Ok(Outcome::Findings);
        }
        Err(DigestRefused::Store(e)) => return Err(e).context("verifying before the digest"),
    };
    let json = digest.to_json();
    match &args.out {
        Some(path) => {
            std::fs::write(path, &json).with_context(|| format!("writing {}", path.display()))?;
            eprintln!(
                "digest of {} tables, {} events, root {} written to {}",
                digest.tables.len(),
                digest.events,
                digest.root,
                path.display()
            );
        }
        None => {
            use std::io::Write;
            std::io::stdout()
                .write_all(&json)
                .context("writing the digest to standard output")?;
        }
    }
    Ok(Outcome::Clean)
}
