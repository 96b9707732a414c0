//! The archive tier: sealed gaming days whose records are read from day files
//! (crate `archive`, schemas/ARCHIVE.md) instead of the value log.
//!
//! A move writes the day file, fsyncs it and reads it back. It then checks that every
//! record the day holds rebuilds from the file byte for byte. Then one sled commit points
//! those records into the file (`Op::Repoint`) and records the day in `Space::Tier`.
//! Readers are unchanged: the store resolves a tier pointer to the same record bytes.
//!
//! Invariants:
//! - A record is repointed only if the day file rebuilds it exactly.
//! - A day file is checked against the day's seal when a table's frame is loaded:
//!   its range, anchor and head must be the seal's. Otherwise the read is `CorruptRecord`.
//! - The value log keeps the records' bytes; no compaction removes them yet. A lost
//!   repoint commit leaves the day hot, never lost.
//! - A record that straddles the day's end stays hot: the day file holds it in part.
//! - Retention removal (`retention`) is the only way a day file goes; it is signed by an
//!   admin key, logged in `Space::Tier`, and the seal keeps the day's heads.

mod load;
mod moves;
pub mod retention;

pub use load::TierReader;
pub use moves::{ArchivePlan, DayFile};

use serde::{Deserialize, Serialize};

/// First byte of a tier pointer. Value-log pointers start with `valuelog::POINTER_TAG`,
/// inline records with `record::RECORD_VERSION`: the three never meet.
pub const POINTER_TAG: u8 = 0xA4;
const _: () = assert!(POINTER_TAG != crate::valuelog::POINTER_TAG);
const _: () = assert!(POINTER_TAG != crate::record::RECORD_VERSION);
/// `POINTER_TAG ++ day (10 ASCII bytes, YYYY-MM-DD) ++ event count (u32 BE)`.
pub const POINTER_LEN: usize = 1 + 10 + 4;
/// The directory of day files inside a ledger directory.
pub const DIR: &str = "archive";
/// Most records one move repoints: a busy floor's day in records of one call each.
pub const DAY_RECORDS_MAX: usize = 50_000_000;

/// Where a day's records are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TierState {
    /// In the day file.
    Archived,
    /// Removed by retention: the seal alone still proves the day's heads.
    Removed,
}

/// A day's entry in `Space::Tier`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierEntry {
    pub day: String,
    pub state: TierState,
    /// The file's name inside `archive/`.
    pub file: String,
    pub file_len: u64,
    /// BLAKE3 of the whole file, lowercase hex.
    pub file_blake3: String,
    /// The seal's digest, lowercase hex.
    pub seal_digest: String,
    /// Records repointed into the file, and their events.
    pub records: u64,
    pub events: u64,
    /// The signed removal, once removed (`retention`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removal: Option<retention::Removal>,
}

impl TierEntry {
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a tier entry serializes")
    }

    pub fn decode(v: &[u8]) -> Result<TierEntry, crate::Error> {
        serde_json::from_slice(v).map_err(|e| crate::record::corrupt(&format!("tier entry: {e}")))
    }
}

/// The pointer of a record of `count` events inside `day`'s file.
pub fn encode_pointer(day: &str, count: u32) -> Vec<u8> {
    assert_eq!(day.len(), 10, "a day is YYYY-MM-DD");
    let mut v = Vec::with_capacity(POINTER_LEN);
    v.push(POINTER_TAG);
    v.extend_from_slice(day.as_bytes());
    v.extend_from_slice(&count.to_be_bytes());
    v
}

/// Whether a stored Batch value is a tier pointer.
pub fn is_pointer(v: &[u8]) -> bool {
    v.len() == POINTER_LEN && v[0] == POINTER_TAG
}

/// The day and event count of a tier pointer.
pub fn decode_pointer(v: &[u8]) -> Option<(String, u32)> {
    if !is_pointer(v) {
        return None;
    }
    let day = std::str::from_utf8(&v[1..11]).ok()?.to_string();
    let count = u32::from_be_bytes([v[11], v[12], v[13], v[14]]);
    Some((day, count))
}

/// The day file's name for `day`.
pub fn file_name(day: &str) -> String {
    format!("{day}.rlday")
}
