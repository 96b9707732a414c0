//! `roundledger readmodel rebuild|check|price-edges --ledger DIR`: the server's read model
//! (`<ledger>/readmodel`, `readside::model`). `rebuild` deletes it and derives it again
//! from the ledger. `price-edges` prices the configured pay tables the model has seen
//! (`readside::edges`), as the server's pricing worker does in the background: for a
//! ledger no server holds, whose reports otherwise show "theoretical pending". `check` brings it to the ledger's heads, as `serve` would at start,
//! then compares it with a fresh rebuild: exit 1 naming each difference. `verify` runs the
//! same check when a model exists.

use crate::Outcome;
use anyhow::{Context, Result};
use readside::model::{self, Model, ModelError};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Most differences one check names.
pub const CHECK_DIFFERENCES_MAX: usize = 20;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Delete the read model and derive it again from the ledger.
    Rebuild {
        /// The ledger directory (no server may hold it).
        #[arg(long)]
        ledger: PathBuf,
        /// The day rule the finance rows are cut by: the ledger's (`serve` sets it); flags
        /// saying another are refused.
        #[command(flatten)]
        day: crate::args::DayArgs,
        /// Judge every decision as `serve --decision-analytics RATE` does, so that a
        /// server started with the same setting finds its signals computed. Without it,
        /// the rebuild keeps the old model's own setting.
        #[arg(long, value_name = "RATE")]
        decision_analytics: Option<f64>,
    },
    /// Price the configured pay tables the read model has seen and not priced yet.
    PriceEdges {
        /// The ledger directory (no server may hold it).
        #[arg(long)]
        ledger: PathBuf,
    },
    /// Compare the read model with a fresh rebuild; exit 1 naming each difference.
    Check {
        /// The ledger directory (no server may hold it).
        #[arg(long)]
        ledger: PathBuf,
    },
}

pub fn run(args: Args) -> Result<Outcome> {
    match args.command {
        Command::Rebuild {
            ledger,
            day,
            decision_analytics,
        } => rebuild(&ledger, &day, decision_analytics),
        Command::PriceEdges { ledger } => price_edges(&ledger),
        Command::Check { ledger } => {
            let l = crate::source::open_ledger(&ledger)?;
            let diffs = check(&l, &ledger)?;
            for d in &diffs {
                println!("read model: {d}");
            }
            if diffs.is_empty() {
                println!("read model: matches a fresh rebuild from the ledger");
                Ok(Outcome::Clean)
            } else {
                println!("read model: differs from the ledger; `roundledger readmodel rebuild` rebuilds it");
                Ok(Outcome::Findings)
            }
        }
    }
}

/// The decision analytics at `rate` false alarms per 1,000 rounds; `None` without one.
fn setting(rate: Option<f64>) -> Result<Option<analytics::TestSetting>> {
    let Some(rate) = rate else {
        return Ok(None);
    };
    anyhow::ensure!(
        rate > 0.0 && rate < 1000.0,
        "--decision-analytics {rate}: false alarms per 1,000 rounds, between 0 and 1000"
    );
    Ok(Some(analytics::TestSetting {
        false_alarms_per_1000_rounds: rate,
        ..analytics::TestSetting::default()
    }))
}

/// Deletes the model and derives it again, judging decisions at `rate` when given, else
/// as the old model did (`analytics_before`).
fn rebuild(dir: &Path, day: &crate::args::DayArgs, rate: Option<f64>) -> Result<Outcome> {
    let given = setting(rate)?;
    let ledger = crate::source::open_ledger(dir)?;
    let rule = &day.rule_of(&ledger)?;
    let mdir = model::default_dir(dir);
    let kept = analytics_before(&mdir);
    let analytics = given.or(kept);
    if mdir.exists() {
        std::fs::remove_dir_all(&mdir)
            .with_context(|| format!("deleting the read model at {}", mdir.display()))?;
    }
    let t0 = Instant::now();
    let m = Model::open(&mdir, rule)?;
    let events = readside::index::catch_up_as(&ledger, &m, analytics)
        .context("rebuilding the read model")?;
    let meta = m.meta()?;
    let why = if given.is_some() {
        "as given"
    } else {
        "as the model was built"
    };
    let said = analytics.map_or(
        "off (as the model was built, or it did not open)".into(),
        |a| {
            format!(
                "on at {} false alarms per 1,000 rounds, {why}",
                a.false_alarms_per_1000_rounds
            )
        },
    );
    println!(
        "read model rebuilt at {}: {events} events, {} rounds in {:.1?}; decision analytics {said}",
        mdir.display(),
        meta.rounds,
        t0.elapsed(),
    );
    Ok(Outcome::Clean)
}

/// The analytics setting of the model at `mdir` (`analytics_of`), to rebuild it with the
/// same; `None` when it is off, or the model does not open (none, another version).
fn analytics_before(mdir: &Path) -> Option<analytics::TestSetting> {
    let m = Model::open_as_built(mdir).ok()?;
    readside::index::analytics_of(&m).ok().flatten()
}

/// Brings the model to the ledger's heads, then prices every configuration it has not.
fn price_edges(dir: &Path) -> Result<Outcome> {
    let ledger = crate::source::open_ledger(dir)?;
    let mdir = model::default_dir(dir);
    anyhow::ensure!(mdir.exists(), "no read model at {}", mdir.display());
    let m = Model::open_as_built(&mdir)?;
    readside::index::catch_up(&ledger, &m).context("bringing the read model to the heads")?;
    let t0 = Instant::now();
    let budget = readside::edges::Budget::CONFIGURED;
    let n = readside::edges::price_all(&m, &budget).context("pricing the edges")?;
    let book = readside::edges::EdgeBook::load(&m)?;
    for r in book.records() {
        for e in r.priced.iter().flatten() {
            println!(
                "{} {}: edge {} ppm, 95% +-{} ppm ({})",
                r.config.rule_set.code(),
                e.line.name(),
                e.edge_ppm(),
                e.error_ppm,
                e.method
            );
        }
    }
    println!("priced {n} configurations in {:.1?}", t0.elapsed());
    Ok(Outcome::Clean)
}

/// Rebuilds the read model of `dir`, if it has one, under the day rule it was built with:
/// after a retention removal its rounds' rows go. The events read, `None` without a model.
pub fn rebuild_if_present(ledger: &ledger::Ledger, dir: &Path) -> Result<Option<u64>> {
    let mdir = model::default_dir(dir);
    if !mdir.exists() {
        return Ok(None);
    }
    let rule = Model::open_as_built(&mdir)
        .map(|m| m.rule().clone())
        .with_context(|| format!("reading the read model at {}", mdir.display()))?;
    let analytics = analytics_before(&mdir);
    std::fs::remove_dir_all(&mdir)
        .with_context(|| format!("deleting the read model at {}", mdir.display()))?;
    let m = Model::open(&mdir, &rule)?;
    let events =
        readside::index::catch_up_as(ledger, &m, analytics).context("rebuilding the read model")?;
    Ok(Some(events))
}

/// The model's differences from a fresh rebuild (empty: it matches), each naming its key.
/// A model of another version, or one failing its checks, is one difference.
pub fn check(ledger: &ledger::Ledger, dir: &Path) -> Result<Vec<String>> {
    let mdir = model::default_dir(dir);
    anyhow::ensure!(mdir.exists(), "no read model at {}", mdir.display());
    let m = match Model::open_as_built(&mdir) {
        Ok(m) => m,
        Err(e @ (ModelError::Version { .. } | ModelError::Corrupt(_))) => {
            return Ok(vec![e.to_string()])
        }
        Err(e) => return Err(e.into()),
    };
    // Both judge decisions as the model's passes did: a node's analytics are no difference.
    let analytics = readside::index::analytics_of(&m)?;
    if let Err(e) = readside::index::catch_up_as(ledger, &m, analytics) {
        return Ok(vec![format!("bringing it to the ledger's heads: {e}")]);
    }
    let fresh = Model::temporary(m.rule())?;
    fresh.copy_edges_from(&m)?;
    readside::index::catch_up_as(ledger, &fresh, analytics)
        .context("rebuilding a fresh read model")?;
    Ok(m.differences(&fresh, CHECK_DIFFERENCES_MAX)?)
}

/// `verify`'s part: checks the model when one exists, printing each difference (to stderr
/// with `--json`, so the JSON stays the chain verdicts). Returns whether it matches.
pub fn verify_part(dir: &Path, json: bool) -> Result<bool> {
    if !model::default_dir(dir).exists() {
        return Ok(true);
    }
    let ledger = crate::source::open_ledger(dir)?;
    let diffs = check(&ledger, dir)?;
    let mut lines: Vec<String> = diffs.iter().map(|d| format!("read model: {d}")).collect();
    if diffs.is_empty() {
        lines.push("read model: matches a fresh rebuild from the ledger".into());
    }
    for l in &lines {
        if json {
            eprintln!("{l}");
        } else {
            println!("{l}");
        }
    }
    Ok(diffs.is_empty())
}
