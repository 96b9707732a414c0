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
    pub seq: u64,
    pub hash: Hash32,
    pub stream_seq: u64,
    pub received_at_ns: i64,
    pub bytes: Vec<u8>,
}

/// One table's range of the day, to write: `anchor` is the hash at `events[0].seq - 1`.
#[derive(Debug, Clone)]
pub struct TableDay {
    pub table: String,
    pub anchor: Hash32,
    pub events: Vec<DayEvent>,
}

/// What the header says of one table's range and where its frame is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSpan {
    pub table: String,
    pub first_seq: u64,
    pub last_seq: u64,
    pub anchor: Hash32,
    pub head: Hash32,
    /// Offset of the table's zstd frame from the start of the file, and its length.
    pub frame_offset: u64,
    pub frame_len: u64,
    /// Length and BLAKE3 of the frame once decompressed.
    pub raw_len: u64,
    pub raw_blake3: Hash32,
}

/// The header of a day file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DayHeader {
    pub format: String,
    pub version: u32,
    /// The gaming day, as the seal names it (`2026-11-25`).
    pub day: String,
    /// The day's seal, verbatim, lowercase hex (empty when the day has none).
    pub seal: String,
    pub tables: Vec<TableSpan>,
}

/// Why a day file could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("not a day file: {0}")]
    Format(String),
    #[error("table {table}: {what}")]
    Table { table: String, what: String },
    #[error("table {table} seq {seq}: {what}")]
    Event {
        table: String,
        seq: u64,
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
