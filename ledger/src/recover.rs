//! Recovery at open: event records the store wrote durably but holds no commit for are
//! appended again, through the same checks as any message.
//!
//! Why: the value log is written and fsynced before sled's commit takes its pointers. A
//! crash between the two leaves one call's records unreferenced (that call was never
//! acknowledged, so NATS delivers its events again, and they would be appended then).
//! But sled 0.34 can also lose commits it had flushed: RELIABILITY.md records a single
//! flipped byte in its log making it roll back, silently, to an earlier state. Those
//! commits were acknowledged, and JetStream may no longer hold their events. Their
//! records are still in the value log, past the end the surviving commit recorded, so
//! they are appended again here instead of being lost.
//!
//! Invariants:
//! - Nothing is trusted for being in the value log: each event goes through
//!   `append_batch` as it was received (its bytes, stream seq and receive time), so it must
//!   chain from the head, and anything else is a duplicate, held or quarantined as usual.
//! - Idempotent: the re-appended events are written as new entries and commits, which
//!   move the recorded end past everything scanned, so the next open finds nothing. A
//!   crash part way through does not hide the rest: from `Store::recovery_started` (before
//!   the first append) to `Store::recovery_done`, the store gives the same records again
//!   from the same start (the ones already appended come back as duplicates).
//! - What was found is logged and kept in `Ledger::recovered` for the caller to report.
//!   Sled-only data of the lost commits (kept checkpoints, quarantine entries, counters)
//!   is not in the value log and is not recovered: devices send checkpoints again at the
//!   next round close.

use crate::store::Unreferenced;
use crate::{record, Appended, Error, Incoming, Ledger, APPEND_BATCH_LEN_MAX};

/// What an open found beyond the store's last commit, and what became of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Recovery {
    /// Whole records found.
    pub records: u64,
    /// Events in them.
    pub events: u64,
    /// Events appended again (the rest were already stored, held or quarantined).
    pub stored: u64,
    pub duplicates: u64,
    pub held: u64,
    pub quarantined: u64,
    /// Bytes after the last whole record that are not one (a write cut short), and where.
    pub torn: Option<String>,
}

impl Recovery {
    /// Whether the open found nothing beyond the last commit.
    pub fn is_empty(&self) -> bool {
        self.records == 0 && self.torn.is_none()
    }

    fn count(&mut self, outcomes: &[Appended]) {
        for o in outcomes {
            match o {
                Appended::Stored { .. } => self.stored += 1,
                Appended::Duplicate { .. } => self.duplicates += 1,
                Appended::Held { .. } => self.held += 1,
                Appended::Quarantined { .. } => self.quarantined += 1,
            }
        }
    }
}

impl Ledger {
    /// Appends again the records the store holds beyond its last commit, then flushes.
    pub(crate) fn recover_unreferenced(&self) -> Result<Recovery, Error> {
        let mut report = Recovery::default();
        let mut batch: Vec<Incoming> = Vec::new();
        for item in self.store.unreferenced()? {
            let value = match item? {
                Unreferenced::Record(value) => value,
                Unreferenced::Torn(at) => {
                    report.torn = Some(at);
                    continue;
                }
            };
            if report.records == 0 {
                self.store.recovery_started()?;
            }
            report.records += 1;
            let events = match record::decode_record(&value) {
                Ok(events) => events,
                Err(e) => {
                    // Its checksum matched, so it was written so: not ours to repair.
                    tracing::error!(error = %e, "an unreferenced value-log record does not decode; skipped");
                    continue;
                }
            };
            for e in events {
                // Per event, not per record: a record is checked by its checksum only, so its
                // event count is not trusted to keep a call within the bound.
                if batch.len() == APPEND_BATCH_LEN_MAX {
                    report.count(&self.append_batch(&batch)?);
                    batch.clear();
                }
                report.events += 1;
                // The subject it arrived on was checked against its table when it was
                // first appended; the table is read from the bytes again (an event that
                // does not decode has none, and is quarantined).
                let subject_table = schemas::codec::decode(&e.bytes)
                    .ok()
                    .map(|(event, _)| event.table);
                batch.push(Incoming {
                    bytes: e.bytes,
                    subject_table,
                    stream_seq: e.stream_seq,
                    received_at_ns: e.received_at_ns,
                });
            }
        }
        if !batch.is_empty() {
            report.count(&self.append_batch(&batch)?);
        }
        if report.records > 0 {
            self.flush()?;
            self.store.recovery_done()?;
            tracing::warn!(
                records = report.records,
                events = report.events,
                stored = report.stored,
                duplicates = report.duplicates,
                held = report.held,
                quarantined = report.quarantined,
                "the value log held records beyond the store's last commit (a crash before a commit, or commits the store lost): appended again"
            );
        }
        if let Some(at) = &report.torn {
            tracing::warn!(at, "the value log ends with bytes that are not a whole entry (a write cut short); they are ignored");
        }
        Ok(report)
    }
}
