//! `roundledger day seal|show|archive|check-archive` and `roundledger verify-seal`: gaming days and their
//! seals (ledger::days, schemas/SEALS.md). `verify --day` and `audit --day` read one
//! sealed day; their options live beside the others of those commands.

use crate::args::DayArgs;
use crate::Outcome;
use anyhow::{Context, Result};
use ledger::days::Sealed;
use schemas::attest::PublicKey;
use schemas::seal::DaySeal;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Seal an ended gaming day with the House's seal key (`roundledger keygen`).
    Seal(SealArgs),
    /// Show a day: its seal, digest and per-table ranges (computed, when not sealed).
    Show(ShowArgs),
    /// Write a sealed day's events to a compressed, self-verifying day file.
    Archive(crate::dayfile::ArchiveArgs),
    /// Check a day file alone: its seal, and every table's chain against it.
    CheckArchive(crate::dayfile::CheckArgs),
}

#[derive(clap::Args)]
struct SealArgs {
    /// A ledger directory no server holds open.
    #[arg(long)]
    ledger: PathBuf,
    /// The gaming day, YYYY-MM-DD (its local date).
    #[arg(long)]
    day: String,
    /// The House's seal key file (`roundledger keygen`).
    #[arg(long, value_name = "KEY_FILE")]
    seal_key: PathBuf,
    /// Also write the seal's JSON here.
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    rule: DayArgs,
}

#[derive(clap::Args)]
struct ShowArgs {
    /// The gaming day, YYYY-MM-DD.
    day: String,
    /// A ledger directory no server holds open.
    #[arg(long)]
    ledger: PathBuf,
    /// Print the seal (or the computed ranges) as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    rule: DayArgs,
}

/// `roundledger verify-seal FILE`: a seal file checked alone.
#[derive(clap::Args)]
pub struct VerifySealArgs {
    /// A seal file (`day seal --out`, or a message received on `seals.<day>`).
    file: PathBuf,
    /// The House's seal public key (64 hex); refuse a seal it did not sign.
    #[arg(long, value_name = "PUBLIC_KEY")]
    seal_key_pub: Option<String>,
}

pub fn run(args: Args) -> Result<Outcome> {
    match args.command {
        Command::Seal(a) => seal(a),
        Command::Show(a) => show(a),
        Command::Archive(a) => crate::dayfile::archive(a),
        Command::CheckArchive(a) => crate::dayfile::check(a),
    }
}

fn seal(args: SealArgs) -> Result<Outcome> {
    let key = crate::keygen::read_signing_key(&args.seal_key)?;
    let l = crate::source::open_ledger(&args.ledger)?;
    let rule = args.rule.rule_of(&l)?;
    let sealed = l
        .writer()
        .seal_day(&rule, &args.day, &key, crate::when::now_ns()?)?;
    let s = sealed.seal();
    let what = match &sealed {
        Sealed::Made(_) => "sealed",
        Sealed::Existing(_) => "already sealed, the same",
    };
    let events: u64 = s.tables.iter().map(|t| t.events).sum();
    println!(
        "day {} {what}: seal {}, {} tables, {events} events",
        s.day,
        s.digest(),
        s.tables.len()
    );
    if let Some(out) = &args.out {
        std::fs::write(out, s.to_json()).with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(Outcome::Clean)
}

fn show(args: ShowArgs) -> Result<Outcome> {
    let l = crate::source::open_ledger(&args.ledger)?;
    if let Some(seal) = l.reader().day_seal(&args.day)? {
        if args.json {
            println!("{}", String::from_utf8_lossy(&seal.to_json()));
        } else {
            print!("{}", render_seal(&seal));
        }
        return Ok(Outcome::Clean);
    }
    let rule = args.rule.rule_of(&l)?;
    let ranges = l.reader().day_ranges(&rule, &args.day)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&ranges.tables)?);
        return Ok(Outcome::Clean);
    }
    let b = &ranges.bounds;
    println!(
        "day {} (not sealed) in {}: {} ns to {} ns",
        b.day,
        rule.time_zone(),
        b.starts_at_ns,
        b.ends_at_ns
    );
    for t in &ranges.tables {
        println!("{}", range_line(t));
    }
    Ok(Outcome::Clean)
}

/// A seal for people: its day, digest, signer and each table's range.
pub fn render_seal(s: &DaySeal) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "day {} in {}: {} ns to {} ns",
        s.day, s.time_zone, s.starts_at_ns, s.ends_at_ns
    );
    let _ = writeln!(
        o,
        "seal {} signed by {} at {} ns",
        s.digest(),
        s.signer,
        s.signed_at_ns
    );
    match &s.previous {
        Some(p) => {
            let _ = writeln!(o, "previous seal {p}");
        }
        None => {
            let _ = writeln!(o, "previous seal: none (the first seal)");
        }
    }
    for t in &s.tables {
        let _ = writeln!(o, "{}", range_line(t));
    }
    o
}

fn range_line(t: &schemas::seal::SealedTable) -> String {
    format!(
        "{:<12} seq {}..={} ({} events) anchor {} head {}",
        t.table.as_str(),
        t.first_seq.0,
        t.last_seq.0,
        t.events,
        t.anchor_hash,
        t.head_hash
    )
}

pub fn verify_seal(args: VerifySealArgs) -> Result<Outcome> {
    let key = args
        .seal_key_pub
        .as_deref()
        .map(crate::keygen::public_key)
        .transpose()?;
    let meta = std::fs::metadata(&args.file)
        .with_context(|| format!("reading {}", args.file.display()))?;
    anyhow::ensure!(
        meta.len() <= schemas::seal::SEAL_LEN_MAX as u64,
        "{}: {} bytes, more than a seal's {}",
        args.file.display(),
        meta.len(),
        schemas::seal::SEAL_LEN_MAX
    );
    let bytes =
        std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let seal = match DaySeal::from_json(&bytes) {
        Ok(s) => s,
        Err(e) => {
            println!("{}: not a seal: {e}", args.file.display());
            return Ok(Outcome::Findings);
        }
    };
    match seal.verify(key.as_ref()) {
        Ok(()) => {
            print!("{}", render_seal(&seal));
            println!("{}: the seal verifies", args.file.display());
            Ok(Outcome::Clean)
        }
        Err(e) => {
            println!("{}: verification FAILED: {e}", args.file.display());
            Ok(Outcome::Findings)
        }
    }
}

/// `verify --ledger DIR --day D`: the day's ranges recomputed from their anchors.
pub fn verify_day(
    dir: &std::path::Path,
    day: &str,
    signer: Option<PublicKey>,
    json: bool,
) -> Result<Outcome> {
    let l = crate::source::open_ledger(dir)?;
    let v = l.verifier().verify_day(day, signer.as_ref())?;
    if json {
        let problems: Vec<serde_json::Value> = v
            .problems
            .iter()
            .map(|p| serde_json::json!({"table": p.table, "seq": p.seq, "problem": p.what}))
            .collect();
        let out = serde_json::json!({
            "day": v.seal.day, "seal": v.digest, "ok": v.is_ok(),
            "events_read": v.events_read, "checkpoints": v.checkpoints, "problems": problems,
            "removed_by_retention": v.removed_by_retention,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for t in &v.seal.tables {
            let bad = v
                .problems
                .iter()
                .find(|p| p.table.as_ref() == Some(&t.table));
            match bad {
                None if v.removed_by_retention => println!(
                    "{} removed by retention; head {} proven by the seal",
                    range_line(t),
                    t.head_hash
                ),
                None => println!("{} ok", range_line(t)),
                Some(p) => println!(
                    "{:<12} BAD  first bad position: seq {}: {}",
                    t.table.as_str(),
                    p.seq.unwrap_or_default(),
                    p.what
                ),
            }
        }
        for p in v.problems.iter().filter(|p| p.table.is_none()) {
            println!("seal: {}", p.what);
        }
        println!(
            "day {} seal {}: {} ({} events read, {} checkpoints checked)",
            v.seal.day,
            v.digest,
            if v.is_ok() {
                "verifies"
            } else {
                "verification FAILED"
            },
            v.events_read,
            v.checkpoints
        );
    }
    Ok(if v.is_ok() {
        Outcome::Clean
    } else {
        Outcome::Findings
    })
}
