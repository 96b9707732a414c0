//! `roundledger archive move|status|remove`: sealed days into the archive tier
//! (`ledger::tier`), and a day file removed past its retention by a signed admin act.
//! `move` writes each moved day's Parquet beside its day file (`crate::parquet`).
//! `move` and `remove` end by compacting the value log (`ledger::tier::compact`): the
//! segments they left mostly unreferenced are retired and their files deleted.
//! Reads need no command: replay, verify, audit, evidence and the API find an archived
//! round through the same read path.
//!
//! The ages come from the flags, else from serve's settings file (`--settings FILE`, keys
//! `archive-after-days` and `retention-days`). A flag wins. Zero, or a retention shorter
//! than the archive age, is refused.

use crate::Outcome;
use anyhow::{Context, Result};
use ledger::tier::retention::Removal;
use std::path::PathBuf;

/// The longest age either setting takes: a century.
pub const AGE_DAYS_MAX: u32 = ledger::tier::retention::RETENTION_DAYS_MAX;

/// The archive and retention ages of serve's settings.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TierAges {
    pub archive_after_days: Option<u32>,
    pub retention_days: Option<u32>,
}

impl TierAges {
    /// Refuses zero, more than a century, and a retention shorter than the archive age.
    pub fn check(&self) -> Result<()> {
        let ages = [
            ("archive-after-days", self.archive_after_days),
            ("retention-days", self.retention_days),
        ];
        for (key, days) in ages {
            if let Some(d) = days.filter(|d| !(1..=AGE_DAYS_MAX).contains(d)) {
                anyhow::bail!("{key} = {d}: must be 1 to {AGE_DAYS_MAX} days");
            }
        }
        if let (Some(a), Some(r)) = (self.archive_after_days, self.retention_days) {
            anyhow::ensure!(
                r >= a,
                "retention-days = {r} is shorter than archive-after-days = {a}: a day would be removed before it is archived"
            );
        }
        Ok(())
    }

    /// The two keys of a settings file, checked; other keys are serve's own.
    pub fn from_file(path: &std::path::Path) -> Result<TierAges> {
        let table = crate::settings::read(path)?;
        let days = |key: &str| -> Result<Option<u32>> {
            let Some(v) = table.get(key) else {
                return Ok(None);
            };
            let n = v.as_integer().and_then(|n| u32::try_from(n).ok());
            let n = n.with_context(|| {
                format!("{}: {key} = {v:?}: not a number of days", path.display())
            })?;
            Ok(Some(n))
        };
        let ages = TierAges {
            archive_after_days: days("archive-after-days")?,
            retention_days: days("retention-days")?,
        };
        ages.check()
            .with_context(|| format!("--settings {}", path.display()))?;
        Ok(ages)
    }
}

/// The ages of `--settings FILE`, none without one.
fn ages(settings: Option<&std::path::Path>) -> Result<TierAges> {
    settings.map_or(Ok(TierAges::default()), TierAges::from_file)
}

/// Most days one `archive move` moves.
pub const MOVE_DAYS_MAX: usize = 366;
const DAY_NS: i64 = 86_400 * 1_000_000_000;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Move every sealed day older than --older-than-days into compressed day files.
    Move(MoveArgs),
    /// List the days in the archive tier: their files, events and state.
    Status(StatusArgs),
    /// Remove an archived day's file past its retention (signed by a trusted admin key).
    Remove(RemoveArgs),
}

#[derive(clap::Args)]
struct MoveArgs {
    /// A ledger directory no server holds open.
    #[arg(long)]
    ledger: PathBuf,
    /// Move sealed days that ended at least this many days ago (default: the settings'
    /// archive-after-days).
    #[arg(long, value_name = "DAYS", value_parser = clap::value_parser!(u32).range(0..=36_500))]
    older_than_days: Option<u32>,
    /// Serve's settings file (TOML): its archive-after-days stands in for the flag.
    #[arg(long, value_name = "FILE")]
    settings: Option<PathBuf>,
}

#[derive(clap::Args)]
struct StatusArgs {
    /// A ledger directory no server holds open.
    #[arg(long)]
    ledger: PathBuf,
}

#[derive(clap::Args)]
struct RemoveArgs {
    /// A ledger directory no server holds open.
    #[arg(long)]
    ledger: PathBuf,
    /// The archived gaming day, YYYY-MM-DD.
    #[arg(long)]
    day: String,
    /// The legal retention, in days after the day's end; a younger day is refused
    /// (default: the settings' retention-days).
    #[arg(long, value_name = "DAYS")]
    retention_days: Option<u32>,
    /// Serve's settings file (TOML): its retention-days stands in for the flag.
    #[arg(long, value_name = "FILE")]
    settings: Option<PathBuf>,
    /// A trusted admin's key file (`roundledger keygen`): it signs the act.
    #[arg(long, value_name = "KEY_FILE")]
    admin_key: PathBuf,
}

pub fn run(args: Args) -> Result<Outcome> {
    match args.command {
        Command::Move(a) => move_days(a),
        Command::Status(a) => status(a),
        Command::Remove(a) => remove(a),
    }
}

fn move_days(args: MoveArgs) -> Result<Outcome> {
    let older_than_days = match args.older_than_days {
        Some(d) => d,
        None => ages(args.settings.as_deref())?.archive_after_days.context(
            "say how old: --older-than-days N, or --settings FILE with archive-after-days",
        )?,
    };
    let l = crate::source::open_ledger(&args.ledger)?;
    let now = crate::when::now_ns()?;
    let age_ns = i64::from(older_than_days) * DAY_NS;
    let started = std::time::Instant::now();
    let never = std::sync::atomic::AtomicBool::new(false);
    let pass = l.tier().archive_pass(now, age_ns, MOVE_DAYS_MAX, &never)?;
    if pass.moved.is_empty() {
        println!("no sealed day older than {older_than_days} days is hot");
    }
    let mut parquet_failed = false;
    for (entry, plan) in &pass.moved {
        print_moved(entry, plan);
        match crate::parquet::beside_day_file(&l, &args.ledger, &entry.day) {
            Ok(p) => println!("{}", crate::parquet::summary(&p)),
            Err(e) => {
                println!("Parquet of day {}: NOT written: {e:#}", entry.day);
                parquet_failed = true;
            }
        }
    }
    if pass.days_left > 0 {
        println!("{} more days: run again", pass.days_left);
    }
    // After the Parquet: a pending act removes the day and its files together.
    let applied = l.tier().apply_pending_removals(now)?;
    for outcome in &applied {
        println!("pending retention act applied: {outcome}");
    }
    if !applied.is_empty() {
        if let Some(events) = crate::readmodel::rebuild_if_present(&l, &args.ledger)? {
            println!("read model rebuilt: {events} events");
        }
    }
    let mut outcome = print_compaction(&pass.compaction);
    if parquet_failed {
        outcome = Outcome::Findings;
    }
    println!("done in {:.1} s", started.elapsed().as_secs_f64());
    Ok(outcome)
}

fn print_moved(entry: &ledger::tier::TierEntry, plan: &ledger::tier::ArchivePlan) {
    let ratio = match plan.wire_bytes {
        0 => "no events".to_string(),
        w => format!("{:.3}x", entry.file_len as f64 / w as f64),
    };
    println!(
        "day {}: {} records, {} events, {} wire bytes -> {} ({} bytes, {ratio}); {} records straddle the day's end and stay hot",
        entry.day,
        entry.records,
        entry.events,
        plan.wire_bytes,
        plan.file.path.display(),
        entry.file_len,
        plan.straddling
    );
}

/// Compacts the value log and says what it did.
fn compact(l: &ledger::Ledger) -> Result<Outcome> {
    let c = l
        .tier()
        .compact_values()
        .context("compacting the value log")?;
    Ok(print_compaction(&c))
}

/// The compaction's line, and each damaged segment kept (a finding).
fn print_compaction(c: &ledger::tier::compact::Compaction) -> Outcome {
    let (records, copies) = c.retired.iter().fold((0, 0), |(r, k), s| {
        (r + s.records_moved, k + s.copies_moved)
    });
    println!(
        "value log: {} of {} closed segments retired, {} bytes freed ({records} records and {copies} recovery copies written again, appends held at most {} ms); {} kept, mostly live",
        c.retired.len() as u64 + c.leftovers_removed,
        c.segments_closed,
        c.bytes_freed,
        c.lock_held_ms_max,
        c.kept_live,
    );
    for why in &c.kept_damaged {
        println!("{why}");
    }
    if c.kept_damaged.is_empty() {
        Outcome::Clean
    } else {
        Outcome::Findings
    }
}

fn status(args: StatusArgs) -> Result<Outcome> {
    let l = crate::source::open_ledger(&args.ledger)?;
    let entries = l.tier().tier_entries()?;
    let mut bad = 0;
    for e in &entries {
        let state = match e.state {
            ledger::tier::TierState::Archived if l.tier().day_file_intact(&e.day)? => "archived",
            ledger::tier::TierState::Archived => {
                bad += 1;
                "archived, FILE MISSING OR ALTERED"
            }
            ledger::tier::TierState::Removed => "removed by retention",
        };
        // What the seal seals, alike on every node: `admin remove-day --seal-content`.
        let content = l
            .reader()
            .day_seal(&e.day)?
            .map_or("unknown: no seal".to_string(), |s| {
                s.content_digest().to_string()
            });
        println!(
            "{} {state}: {} ({} bytes), {} events, seal {}, content {content}",
            e.day, e.file, e.file_len, e.events, e.seal_digest
        );
    }
    println!("{} days in the archive tier", entries.len());
    let retired = l.tier().retired_segments()?;
    println!(
        "value log: {} segments retired by compaction, {} bytes freed",
        retired.len(),
        retired.iter().map(|r| r.file_bytes).sum::<u64>()
    );
    let journal = l.tier().removal_journal()?;
    print!("{}", crate::verify::journal_line(&journal));
    bad += usize::from(journal.problem.is_some());
    Ok(if bad == 0 {
        Outcome::Clean
    } else {
        Outcome::Findings
    })
}

fn remove(args: RemoveArgs) -> Result<Outcome> {
    let retention_days = match args.retention_days {
        Some(d) => d,
        None => ages(args.settings.as_deref())?.retention_days.context(
            "say the retention: --retention-days N, or --settings FILE with retention-days",
        )?,
    };
    let key = crate::keygen::read_signing_key(&args.admin_key)?;
    let l = crate::source::open_ledger(&args.ledger)?;
    let entry = l
        .tier()
        .tier_entry(&args.day)?
        .with_context(|| format!("day {} is not in the archive tier: move it first", args.day))?;
    let now = crate::when::now_ns()?;
    let act = Removal::sign(&entry, retention_days, &key, now);
    let done = l.tier().retention_remove(&act, now)?;
    println!(
        "day {}: day file {} removed by retention ({} days), signed by {}; seal {} keeps its heads",
        done.day, done.file, retention_days, act.admin, done.seal_digest
    );
    crate::parquet::remove_day(&args.ledger, &done.day)?;
    // The read model keeps no row of a round retention removed.
    if let Some(events) = crate::readmodel::rebuild_if_present(&l, &args.ledger)? {
        println!("read model rebuilt: {events} events");
    }
    // The removed day's records leave the value log too.
    compact(&l)
}
