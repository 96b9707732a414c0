//! Every sealed gaming day as Parquet, for SQL engines and notebooks (DuckDB, Spark,
//! Trino): `rounds`, `bet_lines`, `findings`, `finance_lines` and `decisions`, each in its
//! own file `<day>.<table>.parquet` beside the day's day file (`<ledger>/archive/`). The columns
//! are documented in docs/PARQUET.md, generated from `schema`.
//!
//! - `schema`: the tables' columns as data: names, types, nullability, meanings.
//! - `day`: one table's part of a day streamed from the ledger through the replayer.
//! - `rows`: a round's rows (its decisions judged by `analytics::verdict`) and a finance
//!   event's row.
//! - `sink`: Arrow builders and parquet's writer, one row group at a time.
//! - `place`: the finished files renamed into place: new, unchanged, refused or replaced.
//!
//! Invariants: reads the ledger only, and only a sealed day. Money is Int64 minor units
//! with the currency in a column; times are UTC ns timestamps. An unknown figure is null
//! and the column's meaning says when. Memory holds one row group per table, whatever
//! the day's size. The same day gives the same bytes, so writing it again changes
//! nothing; a file with other bytes is never silently overwritten (`place`).

#![warn(missing_docs)]

pub mod day;
pub mod place;
pub mod rows;
pub mod schema;
pub mod sink;

use ledger::days::DayRule;
pub use place::{OnExists, Placed};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Why a day's Parquet was not written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The day has no seal.
    #[error("day {0} is not sealed: seal it first (`roundledger day seal`)")]
    NotSealed(String),
    /// Retention removed the day: its rounds are gone, only its seal and kept events stay.
    #[error("day {0} was removed by retention: no rounds to write (its seal remains)")]
    Removed(String),
    /// The day rule splits the day elsewhere than its seal.
    #[error(
        "day {day}: the seal spans {seal} in {seal_zone}; the day rule `{rule}` gives {given}"
    )]
    RuleDiffers {
        /// The day.
        day: String,
        /// The seal's bounds, UTC ns.
        seal: String,
        /// The seal's time zone.
        seal_zone: String,
        /// The rule's spec.
        rule: String,
        /// The rule's bounds, UTC ns.
        given: String,
    },
    /// A file of the day exists with other bytes.
    #[error("{}: exists with other content; it is kept (replace it with --replace)", path.display())]
    Differs {
        /// The file.
        path: PathBuf,
    },
    /// A stored event does not decode.
    #[error("table {table} seq {seq}: the stored event does not decode: {why}")]
    Decode {
        /// The table.
        table: String,
        /// The event's seq.
        seq: u64,
        /// The decoder's words.
        why: String,
    },
    /// The ledger failed.
    #[error("ledger: {0}")]
    Ledger(#[from] ledger::Error),
    /// Locating a round failed.
    #[error("{0}")]
    Read(#[from] readside::ReadError),
    /// The Parquet writer failed.
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    /// Arrow refused a batch.
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// A file could not be written or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// One file of a day, written or found.
#[derive(Debug, Clone)]
pub struct DayFile {
    /// The table: rounds, bet_lines, findings or finance_lines.
    pub table: &'static str,
    /// Its path.
    pub path: PathBuf,
    /// Its rows.
    pub rows: u64,
    /// Its length in bytes.
    pub bytes: u64,
    /// What became of it.
    pub placed: Placed,
}

/// A day's Parquet, written.
#[derive(Debug, Clone)]
pub struct DayParquet {
    /// The gaming day.
    pub day: String,
    /// Its seal's digest, as the files' metadata names it.
    pub seal: String,
    /// The sealed events of the day.
    pub events: u64,
    /// Events read: the day's and the replay windows around it.
    pub events_read: u64,
    /// Its files, in `schema::TABLES` order.
    pub files: Vec<DayFile>,
}

/// The file of `table` of `day` in `dir`: `<dir>/<day>.<table>.parquet`.
pub fn file_path(dir: &Path, day: &str, table: &str) -> PathBuf {
    dir.join(format!("{day}.{table}.parquet"))
}

/// Where a ledger keeps a day's Parquet: beside its day files, `<ledger>/archive/`.
pub fn default_dir(ledger_dir: &Path) -> PathBuf {
    ledger_dir.join("archive")
}

/// Writes sealed `day` of `l` as Parquet into `dir`, its shifts named by `rule`.
pub fn write_day(
    l: &ledger::Ledger,
    rule: &DayRule,
    day: &str,
    dir: &Path,
    on_exists: OnExists,
) -> Result<DayParquet, Error> {
    let seal = l
        .reader()
        .day_seal(day)?
        .ok_or_else(|| Error::NotSealed(day.to_string()))?;
    if l.removed_day(day)?.is_some() {
        return Err(Error::Removed(day.to_string()));
    }
    let bounds = rule.bounds(day)?;
    if (bounds.starts_at_ns, bounds.ends_at_ns) != (seal.starts_at_ns, seal.ends_at_ns) {
        return Err(Error::RuleDiffers {
            day: day.to_string(),
            seal: format!("{}..{}", seal.starts_at_ns, seal.ends_at_ns),
            seal_zone: seal.time_zone.clone(),
            rule: rule.spec(),
            given: format!("{}..{}", bounds.starts_at_ns, bounds.ends_at_ns),
        });
    }
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let digest = seal.digest().to_string();
    let mut meta = HashMap::new();
    meta.insert(
        "roundledger.schema_version".into(),
        schema::SCHEMA_VERSION.into(),
    );
    meta.insert("roundledger.gaming_day".into(), day.to_string());
    meta.insert("roundledger.seal".into(), digest.clone());
    meta.insert("roundledger.day_rule".into(), rule.spec());
    let written = stream_day(l, rule, &seal, dir, &meta);
    let (finished, events_read) = match written {
        Ok(w) => w,
        Err(e) => {
            // A failed day leaves no partial file behind.
            for t in schema::TABLES {
                let _ = std::fs::remove_file(sink::partial_of(&file_path(dir, day, t.name)));
            }
            return Err(e);
        }
    };
    let placed = place::place(&finished, on_exists)?;
    let files = finished
        .iter()
        .zip(placed)
        .map(|(f, placed)| DayFile {
            table: f.name,
            path: f.dest.clone(),
            rows: f.rows,
            bytes: f.bytes,
            placed,
        })
        .collect();
    Ok(DayParquet {
        day: day.to_string(),
        seal: digest,
        events: seal.tables.iter().map(|t| t.events).sum(),
        events_read,
        files,
    })
}

/// Streams every sealed table of the day into its five sinks and finishes them.
fn stream_day(
    l: &ledger::Ledger,
    rule: &DayRule,
    seal: &schemas::seal::DaySeal,
    dir: &Path,
    meta: &HashMap<String, String>,
) -> Result<(Vec<sink::Finished>, u64), Error> {
    let mut sinks = open_sinks(dir, &seal.day, meta)?;
    let mut events_read = 0;
    for t in &seal.tables {
        events_read += day::stream_table(l, rule, &seal.day, t, &mut sinks)?.events_read;
    }
    let finished = [
        sinks.rounds,
        sinks.bet_lines,
        sinks.findings,
        sinks.finance_lines,
        sinks.decisions,
    ]
    .into_iter()
    .map(sink::Sink::finish)
    .collect::<Result<Vec<_>, Error>>()?;
    Ok((finished, events_read))
}

fn open_sinks(dir: &Path, day: &str, meta: &HashMap<String, String>) -> Result<day::Sinks, Error> {
    let open = |spec: &'static schema::TableSpec| {
        sink::Sink::create(spec, file_path(dir, day, spec.name), meta)
    };
    Ok(day::Sinks {
        rounds: open(&schema::ROUNDS)?,
        bet_lines: open(&schema::BET_LINES)?,
        findings: open(&schema::FINDINGS)?,
        finance_lines: open(&schema::FINANCE_LINES)?,
        decisions: open(&schema::DECISIONS)?,
    })
}
