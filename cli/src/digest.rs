//! `roundledger digest`: the ledger's state to hand to an outside party: every table's
//! chain head, the quarantine's and the API journals' heads, a Merkle root over them, the
//! event count and the time (format in schemas/README.md §6). Taken only when every chain verifies. With `--sign-key`, signed
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

/// Why no digest was taken, on stderr: what does not verify.
fn print_refusal(refused: DigestRefused) {
    eprintln!("no digest: the ledger does not verify (run `roundledger verify`):");
    let report = match refused {
        DigestRefused::DoesNotVerify { report } => report,
        other => {
            eprintln!("{other}");
            return;
        }
    };
    if !matches!(report.arrival, ledger::ArrivalVerdict::Ok { .. }) {
        eprintln!("{}", crate::verify::arrival_line(&report.arrival));
    }
    if !matches!(report.quarantine, ledger::QuarantineVerdict::Ok { .. }) {
        eprintln!("{}", crate::verify::quarantine_line(&report.quarantine));
    }
    if !report.held.is_ok() {
        eprintln!("held events do not verify: {}", report.failures());
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
    let api_dir = ledger::journals::api_dir(&args.ledger);
    let taken = digest_store(&store, crate::when::now_ns()?)
        .and_then(|d| ledger::digest::to_version_4(&store, d, &api_dir));
    let digest = match taken {
        Ok(d) => d,
        Err(DigestRefused::Store(e)) => return Err(e).context("verifying before the digest"),
        Err(r @ DigestRefused::Removed { .. }) => anyhow::bail!(
            "no digest: {r}. `verify --against` still checks digests taken before the removal; hand over `export --after-removed` and the day's seal instead"
        ),
        Err(refused) => {
            print_refusal(refused);
            return Ok(Outcome::Findings);
        }
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
