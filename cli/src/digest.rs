//! `roundledger digest`: the ledger's state to hand to an outside party: every table's
//! chain head, a Merkle root over them, the event count and the time (format in
//! schemas/README.md §6). Taken only when every chain verifies. With `--sign-key`, signed
//! with the House's key (`roundledger keygen`), which binds the time too. Later,
//! `roundledger verify --ledger DIR --against FILE [--signer KEY]` proves the ledger still
//! extends it.

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
    /// Sign the digest with this key file (`roundledger keygen`): the signature covers
    /// the root, the event count and the time.
    #[arg(long, value_name = "KEY_FILE")]
    sign_key: Option<PathBuf>,
}

/// UTC nanoseconds now: the digest's time comes from this process's clock (an edge).
pub fn now_ns() -> Result<i64> {
    Ok(std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .context("system clock before 1970")?
        .as_nanos() as i64)
}

pub fn run(args: Args) -> Result<Outcome> {
    // Read before the ledger, so that a bad key file costs no verification.
    let key = args
        .sign_key
        .as_deref()
        .map(crate::keygen::read_signing_key)
        .transpose()?;
    let store = SledStore::open(&args.ledger)
        .with_context(|| format!("opening the ledger at {}", args.ledger.display()))?;
    let digest = match digest_store(&store, now_ns()?) {
        Ok(d) => d,
        Err(DigestRefused::DoesNotVerify { report, .. }) => {
            eprintln!("no digest: the ledger does not verify (run `roundledger verify`):");
            if !matches!(report.arrival, ledger::ArrivalVerdict::Ok { .. }) {
                eprintln!("{}", crate::verify::arrival_line(&report.arrival));
            }
            if !matches!(report.quarantine, ledger::QuarantineVerdict::Ok { .. }) {
                eprintln!("{}", crate::verify::quarantine_line(&report.quarantine));
            }
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
    let digest = match &key {
        Some(k) => digest.signed(k),
        None => digest,
    };
    let signed = match &digest.signature {
        Some(s) => format!(", signed by {}", s.signer),
        None => String::new(),
    };
    let json = digest.to_json();
    match &args.out {
        Some(path) => {
            std::fs::write(path, &json).with_context(|| format!("writing {}", path.display()))?;
            eprintln!(
                "digest of {} tables, {} events, root {}{signed} written to {}",
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
