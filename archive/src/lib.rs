//! Day files: one gaming day's events, compressed and self-verifying, for the archive tier.
//!
//! A day file holds, per table, a contiguous seq range of the table's chain: the anchor
//! (the hash before the range), every event's exact bytes, stream seq and arrival time,
//! and the head the range ends at. What the chain determines is not stored twice: event
//! hashes are recomputed, and each event's `prev` field is blanked and restored from the
//! chain. Reading recomputes every hash from the anchor, so a file that reads is exactly
//! the chain it claims; the caller checks anchors and heads against the day's seal.
//!
//! Layout (all integers big-endian or LEB128 varints):
//! `MAGIC`, header length (u32), header (JSON `DayHeader`), then one zstd frame per table,
//! at the offsets the header gives. Format page: schemas/ARCHIVE.md.
//!
//! Invariants: pure (no clock); every length is bounded before it is allocated; reading
//! never panics on any input; a table's frame is read and checked alone.

#![warn(missing_docs)]

mod frame;

use schemas::Hash32;
use serde::{Deserialize, Serialize};

pub use frame::{read_header_from, read_table, read_table_from, write_day, DayWriter};

/// First bytes of every day file.
pub const MAGIC: &[u8; 8] = b"RLDAYv1\n";
/// The header's `format` field.
pub const DAY_FORMAT: &str = "roundledger-day";
/// The version this crate writes and reads.
pub const DAY_VERSION: u32 = 1;
/// Largest header (JSON): a day of many tables.
pub const HEADER_LEN_MAX: usize = 16 << 20;
/// Largest decompressed frame: one table's day.
pub const FRAME_RAW_LEN_MAX: u64 = 2 << 30;
/// Most events of one table in one day file.
pub const TABLE_EVENTS_MAX: u64 = 20_000_000;
/// zstd level: archives are written once and read rarely.
pub const ZSTD_LEVEL: i32 = 19;

/// One event as the ledger keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayEvent {
    /// The event's seq in its table's chain.
    pub seq: u64,
    /// The event's chain hash (`chain::event_hash`); the file recomputes it, never stores it.
    pub hash: Hash32,
    /// The JetStream stream sequence it arrived with: the House's arrival order.
    pub stream_seq: u64,
    /// When ingest received it, in nanoseconds since the Unix epoch.
    pub received_at_ns: i64,
    /// The exact message body as received.
    pub bytes: Vec<u8>,
}

/// One table's range of the day, to write: `anchor` is the hash at `events[0].seq - 1`.
#[derive(Debug, Clone)]
pub struct TableDay {
    /// The table id.
    pub table: String,
    /// The hash of the event before the range; zeros when the range starts at seq 1.
    pub anchor: Hash32,
    /// The range's events, in contiguous seq order.
    pub events: Vec<DayEvent>,
}

/// What the header says of one table's range and where its frame is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSpan {
    /// The table id.
    pub table: String,
    /// Seq of the range's first event; 0 for an empty range.
    pub first_seq: u64,
    /// Seq of the range's last event, inclusive; 0 for an empty range.
    pub last_seq: u64,
    /// The hash of the event at `first_seq - 1`.
    pub anchor: Hash32,
    /// The hash of the event at `last_seq`; the anchor for an empty range.
    pub head: Hash32,
    /// Offset of the table's zstd frame from the start of the file, and its length.
    pub frame_offset: u64,
    /// Length of the compressed frame, in bytes.
    pub frame_len: u64,
    /// Length and BLAKE3 of the frame once decompressed.
    pub raw_len: u64,
    /// BLAKE3 of the decompressed frame, checked before its records are read.
    pub raw_blake3: Hash32,
}

/// The header of a day file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DayHeader {
    /// Always `DAY_FORMAT`.
    pub format: String,
    /// Always `DAY_VERSION`.
    pub version: u32,
    /// The gaming day, as the seal names it (`2026-11-25`).
    pub day: String,
    /// The day's seal, verbatim, lowercase hex (empty when the day has none).
    pub seal: String,
    /// One span per table, in the order of their frames.
    pub tables: Vec<TableSpan>,
}

/// Why a day file could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// zstd failed to compress a frame.
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    /// The magic, header or format is wrong, or the table is not in the file.
    #[error("not a day file: {0}")]
    Format(String),
    /// A table's frame does not check: length, digest, count or head.
    #[error("table {table}: {what}")]
    Table {
        /// The table id.
        table: String,
        /// What does not check.
        what: String,
    },
    /// One event does not check: its seq, record or hash.
    #[error("table {table} seq {seq}: {what}")]
    Event {
        /// The table id.
        table: String,
        /// The event's seq.
        seq: u64,
        /// What does not check.
        what: String,
    },
}

/// Reads the header of a day file from its first bytes.
pub fn read_header(file: &[u8]) -> Result<(DayHeader, usize), ArchiveError> {
    let bad = |w: &str| ArchiveError::Format(w.to_string());
    if file.len() < MAGIC.len() + 4 || &file[..MAGIC.len()] != MAGIC {
        return Err(bad("the magic bytes are missing"));
    }
    let at = MAGIC.len();
    let len = u32::from_be_bytes([file[at], file[at + 1], file[at + 2], file[at + 3]]) as usize;
    if len > HEADER_LEN_MAX || file.len() < at + 4 + len {
        return Err(bad("the header length is out of range"));
    }
    let header: DayHeader = serde_json::from_slice(&file[at + 4..at + 4 + len])
        .map_err(|e| ArchiveError::Format(format!("header: {e}")))?;
    if header.format != DAY_FORMAT || header.version != DAY_VERSION {
        return Err(bad("unknown format or version"));
    }
    Ok((header, at + 4 + len))
}
