//! The ledger's errors: integrity and operating failures.

use schemas::TableId;
use std::path::PathBuf;

/// The ledger's errors: integrity and operating failures. Bad input bytes are never an
/// error: they are quarantined.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Another process, or another `Ledger` here, holds the directory's lock.
    #[error("ledger directory {path} is locked by another process (one process owns a ledger; use its API or an export): {detail}")]
    Locked {
        /// The ledger directory.
        path: PathBuf,
        /// The store's error.
        detail: String,
    },
    /// The store failed an operation.
    #[error("store {op}: {detail}")]
    Store {
        /// The operation, e.g. `commit`.
        op: &'static str,
        /// The store's error.
        detail: String,
    },
    /// A stored value does not decode: the ledger is damaged.
    #[error("corrupt stored value: {detail} (run verify)")]
    CorruptRecord {
        /// What does not decode, and where.
        detail: String,
    },
    /// One `append` call carried more than `APPEND_BATCH_LEN_MAX` messages.
    #[error("append batch of {len} messages exceeds the limit of {max}")]
    BatchTooLarge {
        /// Messages in the call.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// No event of this table is stored.
    #[error("table {0} is not in the ledger")]
    UnknownTable(TableId),
    /// No event of this round is stored for the table.
    #[error("round {round} of table {table} is not in the ledger")]
    UnknownRound {
        /// The table asked for.
        table: TableId,
        /// The round id asked for.
        round: u64,
    },
    /// An export cannot be made; the text says why.
    #[error("export: {0}")]
    Export(String),
    /// An export selection holds more events than its limit.
    #[error("export: the selection holds {events} events, more than the {max} allowed (choose a table and fewer rounds)")]
    ExportTooLarge {
        /// Events the selection holds.
        events: u64,
        /// The limit (`ExportSelection::events_max`).
        max: u64,
    },
    /// An export would cover events removed by retention. It is refused: an export never
    /// holds a gap, so it never looks complete without being so.
    #[error("export: table {table} seqs {first_seq}..={last_seq} (day {day}) were removed by retention; an export cannot hold them")]
    ExportRemoved {
        /// The table.
        table: TableId,
        /// The removed gaming day, `YYYY-MM-DD`.
        day: String,
        /// The day's first seq of the table.
        first_seq: u64,
        /// The day's last seq of the table.
        last_seq: u64,
    },
    /// A gaming-day rule or date is not valid.
    #[error("gaming day: {0}")]
    Day(String),
    /// A day cannot be sealed.
    #[error("cannot seal day {day}: {why}")]
    Seal {
        /// The gaming day, `YYYY-MM-DD`.
        day: String,
        /// Why it cannot, in words.
        why: String,
    },
    /// A sealed day cannot be imported (`rebuild`); nothing of it claims to be complete.
    #[error("day {day} cannot be imported: {why}")]
    Import {
        /// The gaming day, `YYYY-MM-DD`.
        day: String,
        /// Why, in words.
        why: String,
    },
    /// The archive tier refused or failed an operation.
    #[error("archive tier: {0}")]
    Tier(String),
    /// A signed retention act removed the day's records; its seal remains.
    #[error("table {table}: its records of day {day} were removed by retention; the day's seal keeps its heads")]
    RetentionRemoved {
        /// The gaming day, `YYYY-MM-DD`.
        day: String,
        /// The table asked for.
        table: TableId,
    },
    /// A setting is out of its allowed range.
    #[error("bad setting: {0}")]
    BadSetting(String),
    /// Writing an export to a file or stream failed.
    #[error("writing the export: {0}")]
    Io(#[from] std::io::Error),
}
