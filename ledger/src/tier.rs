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
//! - A moved record's old entry stays in the value log until compaction (`compact`)
//!   retires its segment. A lost repoint commit leaves the day hot, never lost.
//! - A record that straddles the day's end stays hot: the day file holds it in part.
//! - Retention removal (`retention`) is the only way a day file goes; it is signed by an
//!   admin key, logged in `Space::Tier`, and the seal keeps the day's heads.

pub mod catalog;
pub mod compact;
pub mod journal;
pub mod kept;
mod moves;
pub mod pass;
pub mod removed;
pub mod retention;

pub use crate::store::tier_read::TierReader;
pub use crate::store::tier_ref::{
    decode_pointer, encode_pointer, file_name, is_pointer, TierEntry, TierState, DIR, POINTER_LEN,
    POINTER_TAG,
};
pub use moves::{ArchivePlan, DayFile};

/// Most records one move repoints: a busy floor's day in records of one call each.
pub const DAY_RECORDS_MAX: usize = 50_000_000;
