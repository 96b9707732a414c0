//! Ingest's fault counters and state, as plain atomics that a metrics endpoint reads.
//!
//! The writer thread sets them; nothing here blocks or allocates. Shared through
//! `IngestConfig::health` (an `Arc`), so `serve` hands the same one to the API.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The table name ingest-wide alerts (`ingest_paused`, `ingest_resumed`) are raised on:
/// `alerts._ingest.<kind>`. Not a table any device may use (no device credential has it).
pub const INGEST_ALERT_TABLE: &str = "_ingest";

/// Alerts the writer may queue for publishing outside a batch's reply.
pub const ALERT_QUEUE_LEN_MAX: usize = 256;

/// The first pause before retrying a failed write, in ms; doubled per failure.
pub const WRITE_RETRY_PAUSE_MIN_MS: u64 = 50;
/// The longest pause between retries of a failed write, in ms.
pub const WRITE_RETRY_PAUSE_MAX_MS: u64 = 5_000;

/// Ingest's health, for `/metrics` and `/ready`.
#[derive(Debug, Default)]
pub struct Health {
    /// Whether ingest is paused now: a write or flush failed and has not yet succeeded.
    pub paused: AtomicBool,
    /// Pauses so far (each from a first failed write to the write that succeeded).
    pub pauses_total: AtomicU64,
    /// Failed attempts to append or flush a group of batches.
    pub write_errors_total: AtomicU64,
    /// When the current pause began (UTC ns), 0 when not paused.
    pub paused_since_ns: AtomicU64,
    /// Tables fenced now (`ledger::fence`).
    pub fenced_tables: AtomicU64,
    /// Messages of fenced tables kept as `table_fenced` quarantine entries or repeats.
    pub fenced_messages_total: AtomicU64,
}

impl Health {
    /// Whether ingest is paused now.
    pub fn is_paused(&self) -> bool {
        self.paused.load(Ordering::SeqCst)
    }

    /// Counts a failed write; `true` when it begins a pause.
    pub(crate) fn write_failed(&self, now_ns: i64) -> bool {
        self.write_errors_total.fetch_add(1, Ordering::SeqCst);
        let began = !self.paused.swap(true, Ordering::SeqCst);
        if began {
            self.pauses_total.fetch_add(1, Ordering::SeqCst);
            self.paused_since_ns
                .store(now_ns.max(0) as u64, Ordering::SeqCst);
        }
        began
    }

    /// Ends a pause after a write succeeded. The pause's start (UTC ns) when one ended.
    pub(crate) fn write_succeeded(&self) -> Option<i64> {
        if !self.paused.swap(false, Ordering::SeqCst) {
            return None;
        }
        Some(self.paused_since_ns.swap(0, Ordering::SeqCst) as i64)
    }
}

/// The pause before retry `attempt` (1 for the first): doubling from
/// `WRITE_RETRY_PAUSE_MIN_MS`, at most `WRITE_RETRY_PAUSE_MAX_MS`.
pub(crate) fn retry_pause_ms(attempt: u32) -> u64 {
    let doublings = attempt.saturating_sub(1).min(16);
    (WRITE_RETRY_PAUSE_MIN_MS << doublings).min(WRITE_RETRY_PAUSE_MAX_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_pauses_double_and_stay_bounded() {
        let pauses: Vec<u64> = (1..=9).map(retry_pause_ms).collect();
        assert_eq!(pauses, [50, 100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        assert_eq!(retry_pause_ms(u32::MAX), WRITE_RETRY_PAUSE_MAX_MS);
    }

    #[test]
    fn a_pause_is_counted_once_until_a_write_succeeds() {
        let h = Health::default();
        assert!(h.write_failed(10));
        assert!(!h.write_failed(20));
        assert!(h.is_paused());
        assert_eq!(h.write_succeeded(), Some(10));
        assert_eq!(h.write_succeeded(), None);
        assert_eq!(h.pauses_total.load(Ordering::SeqCst), 1);
        assert_eq!(h.write_errors_total.load(Ordering::SeqCst), 2);
    }
}
