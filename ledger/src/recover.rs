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
//! The same holds for what a lost commit kept besides records: quarantine entries, held
//! events and kept checkpoints are first-hand (no record holds them), so the store gives
//! back their puts too (`store::RECOVERED_SPACES`).
//!
//! Invariants:
//! - Nothing is trusted for being in the value log: each event, and each held event, goes
//!   through `append_batch` as it was received (its bytes, stream seq and receive time), so
//!   it must chain from the head, and anything else is a duplicate, held or quarantined as
//!   usual. Enrollments among them are judged with the admin keys the ledger last trusted
//!   (`Writer::trust_admin_keys` keeps them), as they were the first time. Checkpoints go
//!   through `append_checkpoints` after the events found before them (a commit's records
//!   come before its copied puts), so each is checked against the chain it signed again. Quarantine entries are put back verbatim, reason and all, under their own ids.
//! - Idempotent: the re-appended events are written as new entries and commits, which
//!   move the recorded end past everything scanned, so the next open finds nothing. A
//!   crash part way through does not hide the rest: from `Store::recovery_started` (before
//!   the first append) to `Store::recovery_done`, the store gives the same records again
//!   from the same start (the ones already appended come back as duplicates, a quarantine
//!   entry already put back is recognised by its id and bytes).
//! - Bounded: what is found is appended in calls of at most `APPEND_BATCH_LEN_MAX` events
//!   or checkpoints, whatever the size of the loss.
//! - What was found is logged and kept in `Ledger::recovered` for the caller to report.
//!   Counters kept only in `Space::Meta` (duplicates seen, enrollments refused) are not
//!   recovered: they count again only what is appended again.

use crate::store::{Space, Unreferenced};
pub use crate::types::Recovery;
use crate::{
    error::Error, limits::APPEND_BATCH_LEN_MAX, owner::Ledger, record, types::Appended,
    types::Incoming, types::Refused,
};

/// Damaged entries a `Recovery` names at most; the rest are counted.
pub const DAMAGED_NAMED_MAX: usize = 100;

impl Recovery {
    /// Whether the open found nothing beyond the last commit.
    pub fn is_empty(&self) -> bool {
        self.found() == 0 && self.torn.is_none() && self.damaged.is_empty()
    }

    fn damaged(&mut self, at: String) {
        if self.damaged.len() < DAMAGED_NAMED_MAX {
            self.damaged.push(at);
        } else {
            self.damaged_more += 1;
        }
    }

    /// Records, held events, quarantine entries, checkpoints and seals found.
    pub fn found(&self) -> u64 {
        self.records + self.held_events + self.quarantine_entries + self.checkpoints + self.seals
    }

    fn count(&mut self, outcomes: &[Appended]) {
        for o in outcomes {
            match o {
                Appended::Stored { .. } => self.stored += 1,
                Appended::Duplicate { .. } => self.duplicates += 1,
                Appended::Held { .. } => self.held += 1,
                Appended::Refused(Refused::Quarantined { .. }) => self.quarantined += 1,
                Appended::Refused(Refused::QuarantinedBefore { .. }) => self.duplicates += 1,
                Appended::Refused(Refused::Repeated { .. }) => self.repeats += 1,
                Appended::Refused(Refused::Overflowed { .. }) => self.overflowed += 1,
                // Records hold events only: an admin act is never recovered from them.
                Appended::Admin { .. } => self.duplicates += 1,
            }
        }
    }
}

/// The events and checkpoints found and not yet appended: each at most
/// `APPEND_BATCH_LEN_MAX`, appended in a call of its own when full.
#[derive(Default)]
struct Found {
    events: Vec<Incoming>,
    /// Appended after every event found before them, so each is checked against the chain
    /// it signed.
    checkpoints: Vec<Incoming>,
}

impl Ledger {
    /// Appends again the records (and puts back the held events, quarantine entries and
    /// checkpoints) the store holds beyond its last commit, then flushes.
    pub(crate) fn recover_unreferenced(&self) -> Result<Recovery, Error> {
        let mut report = Recovery::default();
        let mut found = Found::default();
        for item in self.store.unreferenced()? {
            let item = item?;
            let bytes_only = matches!(item, Unreferenced::Torn(_) | Unreferenced::Damaged(_));
            if report.found() == 0 && !bytes_only {
                self.store.recovery_started()?;
            }
            match item {
                Unreferenced::Torn(at) => {
                    // The scan goes on past them at the next segment; each is logged, the
                    // first is reported.
                    tracing::warn!(%at, "the value log holds bytes that are not a whole entry (a write cut short); they are ignored");
                    report.torn.get_or_insert(at);
                }
                Unreferenced::Damaged(at) => {
                    // The scan resumed after them: what follows is appended again. What
                    // they held is lost unless sled still holds it; verify names it.
                    tracing::error!(%at, "the value log holds a damaged entry beyond the store's last commit; the entries after it are recovered, its own are not (run verify)");
                    report.damaged(at);
                }
                Unreferenced::Record(value) => {
                    report.records += 1;
                    self.found_record(&value, &mut found, &mut report)?;
                }
                Unreferenced::Put { space, key, value } => {
                    self.found_put(space, &key, &value, &mut found, &mut report)?;
                }
            }
        }
        self.append_found_checkpoints(&mut found, &mut report)?;
        if report.found() > 0 {
            self.flush()?;
            self.store.recovery_done()?;
            tracing::warn!(
                records = report.records,
                events = report.events,
                held_events = report.held_events,
                stored = report.stored,
                duplicates = report.duplicates,
                held = report.held,
                quarantined = report.quarantined,
                quarantine_entries = report.quarantine_entries,
                quarantine_restored = report.quarantine_restored,
                checkpoints = report.checkpoints,
                checkpoints_kept = report.checkpoints_kept,
                checkpoints_refused = report.checkpoints_refused,
                damaged = report.damaged.len() as u64 + report.damaged_more,
                "the value log held writes beyond the store's last commit (a crash before a commit, or commits the store lost, a rollback): appended again"
            );
        }
        Ok(report)
    }

    /// Queues the events of a record found beyond the last commit.
    fn found_record(
        &self,
        value: &[u8],
        found: &mut Found,
        report: &mut Recovery,
    ) -> Result<(), Error> {
        let events = match record::decode_record(value) {
            Ok(events) => events,
            Err(e) => {
                // Its checksum matched, so it was written so: not ours to repair.
                tracing::error!(error = %e, "an unreferenced value-log record does not decode; skipped");
                return Ok(());
            }
        };
        for e in events {
            report.events += 1;
            // The subject it arrived on was checked against its table when it was first
            // appended; the table is read from the bytes again (an event that does not
            // decode has none, and is quarantined).
            let subject_table = schemas::codec::decode(&e.bytes)
                .ok()
                .map(|(event, _)| event.table);
            self.queue_event(
                Incoming {
                    bytes: e.bytes,
                    subject_table,
                    stream_seq: e.stream_seq,
                    received_at_ns: e.received_at_ns,
                    provenance: Default::default(),
                },
                found,
                report,
            )?;
        }
        Ok(())
    }

    /// Handles one put of `store::RECOVERED_SPACES` found beyond the last commit. A put
    /// that does not decode was written so: not ours to repair, logged and skipped.
    fn found_put(
        &self,
        space: Space,
        key: &[u8],
        value: &[u8],
        found: &mut Found,
        report: &mut Recovery,
    ) -> Result<(), Error> {
        let handled = match space {
            Space::Quarantine => {
                report.quarantine_entries += 1;
                let restored =
                    record::be_u64(key).and_then(|id| self.restore_quarantined(id, value));
                restored.map(|r| report.quarantine_restored += u64::from(r.is_some()))
            }
            Space::Pending => {
                report.held_events += 1;
                self.found_held(key, value, found, report)
            }
            Space::Checkpoint => {
                report.checkpoints += 1;
                self.found_checkpoint(key, value, found, report)
            }
            Space::Resync => {
                // Applied again as received: it follows the records' events in the log.
                report.resyncs += 1;
                match crate::resync::recovered_message(value) {
                    Ok(message) => self.queue_event(message, found, report),
                    Err(e) => skipped(space, e),
                }
            }
            Space::Seal => self.restore_seal(key, value).map(|restored| {
                report.seals += 1;
                report.seals_restored += u64::from(restored);
            }),
            other => {
                // The store's contract names the spaces it gives back; another is its bug.
                tracing::error!(space = ?other, "the store gave back a put of a space recovery does not take; skipped");
                Ok(())
            }
        };
        match handled {
            Err(e @ Error::CorruptRecord { .. }) => skipped(space, e),
            other => other,
        }
    }

    /// A held event found: queued to be appended again, as received.
    fn found_held(
        &self,
        key: &[u8],
        value: &[u8],
        found: &mut Found,
        report: &mut Recovery,
    ) -> Result<(), Error> {
        let decoded = record::split_table_key(key)
            .and_then(|(table, _)| Ok((table, crate::types::decode_held(value)?)));
        let (table, held) = match decoded {
            Ok(d) => d,
            Err(e) => return skipped(Space::Pending, e),
        };
        let message = Incoming {
            bytes: held.bytes,
            subject_table: Some(table),
            stream_seq: held.stream_seq,
            received_at_ns: held.received_at_ns,
            provenance: Default::default(),
        };
        self.queue_event(message, found, report)
    }

    /// A kept checkpoint found: queued after the events it signs.
    fn found_checkpoint(
        &self,
        key: &[u8],
        value: &[u8],
        found: &mut Found,
        report: &mut Recovery,
    ) -> Result<(), Error> {
        let decoded = record::split_table_key(key)
            .and_then(|(table, _)| Ok((table, crate::attest::decode_checkpoint(value)?)));
        let (
            table,
            crate::attest::CheckpointRecord {
                received_at_ns,
                stream_seq,
                bytes,
                ..
            },
        ) = match decoded {
            Ok(d) => d,
            Err(e) => return skipped(Space::Checkpoint, e),
        };
        if found.checkpoints.len() == APPEND_BATCH_LEN_MAX {
            self.append_found_checkpoints(found, report)?;
        }
        found.checkpoints.push(Incoming {
            bytes,
            subject_table: Some(table),
            stream_seq,
            received_at_ns,
            provenance: Default::default(),
        });
        Ok(())
    }

    /// Appends the checkpoints found so far, after every event found before them (the
    /// events they sign), and the events too.
    fn append_found_checkpoints(
        &self,
        found: &mut Found,
        report: &mut Recovery,
    ) -> Result<(), Error> {
        if !found.events.is_empty() {
            report.count(&self.append_recovered(&found.events)?);
            found.events.clear();
        }
        if !found.checkpoints.is_empty() {
            for o in self.writer().append_checkpoints(&found.checkpoints)? {
                use crate::types::CheckpointOutcome as C;
                match o {
                    C::Kept { .. } => report.checkpoints_kept += 1,
                    C::Duplicate { .. } | C::Refused(Refused::QuarantinedBefore { .. }) => {}
                    C::Refused(Refused::Repeated { .. }) => report.repeats += 1,
                    C::Refused(Refused::Overflowed { .. }) => report.overflowed += 1,
                    C::Refused(Refused::Quarantined { .. }) => report.checkpoints_refused += 1,
                }
            }
            found.checkpoints.clear();
        }
        Ok(())
    }

    /// Adds an event to the next call, appending the full call first.
    fn queue_event(
        &self,
        event: Incoming,
        found: &mut Found,
        report: &mut Recovery,
    ) -> Result<(), Error> {
        // Per event, not per record: a record is checked by its checksum only, so its event
        // count is not trusted to keep a call within the bound.
        if found.events.len() == APPEND_BATCH_LEN_MAX {
            report.count(&self.append_recovered(&found.events)?);
            found.events.clear();
        }
        found.events.push(event);
        Ok(())
    }
}

/// A put found beyond the last commit that does not decode: written so, not ours to
/// repair. Logged and skipped.
fn skipped(space: Space, e: Error) -> Result<(), Error> {
    tracing::error!(error = %e, ?space, "an unreferenced put in the value log does not decode; skipped");
    Ok(())
}
