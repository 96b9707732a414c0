//! `roundledger export --parquet --day D`: a sealed gaming day as Parquet files
//! (`dayparquet`, docs/PARQUET.md), by default beside the day files in
//! `<ledger>/archive/`. The same day again leaves the files as they are; a file with
//! other content is refused unless `--replace` is given.
//!
//! The archiver writes them too, by `beside_day_file`: `archive move` after each day it
//! moves, and `serve --archive-after-days` through `ingest::archiver`'s `after_move`. Then
//! a file with other content is refused, never replaced. `archive remove` deletes a day's
//! files in `<ledger>/archive/` with its day file (`remove_day`).

use crate::args::DayArgs;
use crate::Outcome;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// What `export --parquet` was asked.
pub struct Request<'a> {
    pub ledger: &'a Path,
    pub day: &'a str,
    pub out: Option<PathBuf>,
    pub replace: bool,
    pub rule: &'a DayArgs,
}

/// Writes the day's files and prints one line per file.
pub fn export(r: Request) -> Result<Outcome> {
    let l = crate::source::open_ledger(r.ledger)?;
    let rule = r.rule.rule_of(&l)?;
    let dir = r.out.unwrap_or_else(|| dayparquet::default_dir(r.ledger));
    let on_exists = match r.replace {
        true => dayparquet::OnExists::Replace,
        false => dayparquet::OnExists::Refuse,
    };
    let t0 = std::time::Instant::now();
    let p = dayparquet::write_day(&l, &rule, r.day, &dir, on_exists)
        .with_context(|| format!("writing day {} as Parquet to {}", r.day, dir.display()))?;
    for f in &p.files {
        let what = match f.placed {
            dayparquet::Placed::Written => "written",
            dayparquet::Placed::Unchanged => "unchanged (the same bytes)",
            dayparquet::Placed::Replaced => "REPLACED (other content before)",
        };
        println!(
            "{}: {} rows, {} bytes, {what}",
            f.path.display(),
            f.rows,
            f.bytes
        );
    }
    println!(
        "day {} (seal {}): {} sealed events, {} read, as Parquet in {:.1?}",
        p.day,
        p.seal,
        p.events,
        p.events_read,
        t0.elapsed()
    );
    Ok(Outcome::Clean)
}

/// Writes sealed `day` beside its day file under the ledger's own day rule, refusing to
/// replace a file with other content: the archiver's one way to write a day.
pub fn beside_day_file(
    l: &ledger::Ledger,
    ledger_dir: &Path,
    day: &str,
) -> Result<dayparquet::DayParquet> {
    let rule = match l
        .reader()
        .day_rule()
        .context("reading the ledger's day rule")?
    {
        Some(r) => r,
        None => rule_of_seal(l, day)?,
    };
    let dir = dayparquet::default_dir(ledger_dir);
    dayparquet::write_day(l, &rule, day, &dir, dayparquet::OnExists::Refuse)
        .with_context(|| format!("writing day {day} as Parquet to {}", dir.display()))
}

/// The day rule a ledger that keeps none sealed `day` under: its seal's zone and start,
/// one shift (the files' metadata names it).
fn rule_of_seal(l: &ledger::Ledger, day: &str) -> Result<ledger::days::DayRule> {
    let seal = l
        .reader()
        .day_seal(day)?
        .with_context(|| format!("day {day} is not sealed"))?;
    let zone = jiff::tz::TimeZone::get(&seal.time_zone)
        .with_context(|| format!("the seal's time zone {:?}", seal.time_zone))?;
    let start = jiff::Timestamp::from_nanosecond(i128::from(seal.starts_at_ns))?
        .to_zoned(zone)
        .strftime("%H:%M")
        .to_string();
    Ok(ledger::days::DayRule::new(&start, &seal.time_zone)?)
}

/// The files of a day as one line: rows per table and what became of them.
pub fn summary(p: &dayparquet::DayParquet) -> String {
    let files: Vec<String> = p
        .files
        .iter()
        .map(|f| format!("{} {} rows ({:?})", f.table, f.rows, f.placed).to_lowercase())
        .collect();
    format!("Parquet of day {}: {}", p.day, files.join(", "))
}

/// `serve`'s archiver hook: each archived day's Parquet, beside its day file.
pub fn after_move(ledger_dir: &Path) -> ingest::archiver::AfterMove {
    let dir = ledger_dir.to_path_buf();
    std::sync::Arc::new(move |l: &ledger::Ledger, day: &str| {
        beside_day_file(l, &dir, day)
            .map(|p| summary(&p))
            .map_err(|e| format!("{e:#}"))
    })
}

/// Deletes the Parquet files of `day` kept beside the day files, naming each: retention
/// removes a day's derived copies with its events.
pub fn remove_day(ledger: &Path, day: &str) -> Result<()> {
    let dir = dayparquet::default_dir(ledger);
    for t in dayparquet::schema::TABLES {
        let path = dayparquet::file_path(&dir, day, t.name);
        match std::fs::remove_file(&path) {
            Ok(()) => println!("day {day}: {} removed by retention", path.display()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(e).with_context(|| format!("removing {}", path.display()));
            }
        }
    }
    Ok(())
}
