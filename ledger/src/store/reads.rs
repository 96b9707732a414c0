//! Counts of what a store reads, per key space and per day file: how tests and benchmarks
//! show that a cost does not grow with archived days (ARCHITECTURE.md, `ledger/` `tier`).

use super::Space;
use std::sync::atomic::{AtomicU64, Ordering};

/// What a store has read since it opened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreReads {
    /// Entries read per space, in `Space::ALL` order: point reads that found a value, and
    /// each entry or key a range gave.
    pub entries: [u64; Space::ALL.len()],
    /// Day files of the archive tier opened.
    pub day_files_opened: u64,
    /// Tables' days decoded from day files.
    pub frames_loaded: u64,
}

impl StoreReads {
    /// Entries read from `space`.
    pub fn of(&self, space: Space) -> u64 {
        self.entries[index(space)]
    }
}

/// The live counters a store keeps: relaxed atomics, as they only count.
#[derive(Debug, Default)]
pub struct ReadCounter {
    entries: [AtomicU64; Space::ALL.len()],
    day_files_opened: AtomicU64,
}

impl ReadCounter {
    /// Counts one entry read from `space`.
    pub fn entry(&self, space: Space) {
        self.entries[index(space)].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one day file opened.
    pub fn day_file(&self) {
        self.day_files_opened.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts now, with `frames_loaded` from the tier reader.
    pub fn snapshot(&self, frames_loaded: u64) -> StoreReads {
        let mut entries = [0u64; Space::ALL.len()];
        for (n, c) in entries.iter_mut().zip(&self.entries) {
            *n = c.load(Ordering::Relaxed);
        }
        StoreReads {
            entries,
            day_files_opened: self.day_files_opened.load(Ordering::Relaxed),
            frames_loaded,
        }
    }
}

fn index(space: Space) -> usize {
    Space::ALL
        .iter()
        .position(|s| *s == space)
        .unwrap_or_default()
}
