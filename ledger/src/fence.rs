//! Fencing: a damaged table is set apart so that ingest goes on for every other table.
//!
//! A table is fenced when its head record does not read back (checked for every table at
//! open), or when an append touching it fails and its head record then fails the same
//! check. While fenced, each new event or checkpoint of the table passes the decode,
//! subject and signature checks and is then quarantined verbatim as `table_fenced`: kept,
//! never dropped, never stored in the damaged chain.
//!
//! Invariants:
//! - Nothing is deleted. Unfencing (`Writer::unfence`) re-checks the table and appends its
//!   `table_fenced` entries again through the one append path; the entries stay.
//! - Every unfence is recorded in `Space::Meta` (`FENCE_LOG_PREFIX`), with what it released.
//! - Fences live in memory and are derived again at each open: a table still damaged is
//!   fenced again, a repaired one is not.

use crate::faces::{Reader, Verifier, Writer};
use crate::store::{Op, Space};
pub use crate::types::Fence;
use crate::types::{reason, CheckpointOutcome, Incoming};
use crate::{error::Error, owner::Ledger};
use schemas::{Seq, TableId};
use std::collections::BTreeMap;

/// Stable names of the checks a table can fail (shown to operators; never rename).
pub mod check {
    /// The table's head record is missing or fails its checksum.
    pub const HEAD_UNREADABLE: &str = "head_unreadable";
    /// The head record reads, but its last event is not the head the ledger keeps.
    pub const HEAD_MISMATCH: &str = "head_mismatch";
    /// A read of one of the table's records failed (the read side met it).
    pub const RECORD_UNREADABLE: &str = "record_unreadable";
}

/// `Space::Meta` key prefix of the unfence log: `prefix ++ id (u64 BE)`.
pub const FENCE_LOG_PREFIX: &[u8] = b"fence_log/";
/// Most `table_fenced` entries one unfence appends again; run it again for more.
pub const UNFENCE_ENTRIES_MAX: usize = 100_000;

/// What an unfence did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Unfenced {
    /// `table_fenced` entries of the table found and appended again.
    pub entries: u64,
    /// Of them, events stored now.
    pub stored: u64,
    /// Of them, events already stored (a device resent them after the repair).
    pub duplicates: u64,
    /// Of them, events held behind a gap.
    pub held: u64,
    /// Of them, messages refused again (for another reason) or checkpoints not kept.
    pub refused: u64,
    /// The table's head after the unfence.
    pub head_seq: u64,
}

impl Ledger {
    /// Checks every table's head record and fences those that fail (`check_table`). Run
    /// at open; each fence is logged at `warn`.
    pub(crate) fn fence_damaged_tables(&self) {
        for table in self.reader().tables() {
            if let Err(f) = self.check_head_at_open(&table) {
                self.fence(&table, f);
            }
        }
    }

    /// `check_table`, except for a head whose record is in an archived day whose file
    /// exists and whose seal ends the table's range at the head: then that is enough.
    /// The file is not read: its frames are checked against the seal when read
    /// (`store::tier_read`), and a failed read fences the table then. So an open reads
    /// no day file, however many days are archived.
    fn check_head_at_open(&self, table: &TableId) -> Result<(), Fence> {
        let Some(head) = self.reader().head(table) else {
            return Ok(());
        };
        let Some(day) = self.archived_head_day(table, head.seq.0) else {
            return self.verifier().check_table(table);
        };
        let file = self
            .store
            .tier_dir()
            .map(|d| d.join(crate::tier::file_name(&day)));
        let sealed = self.reader().sealed_head_at(&day, table);
        match (sealed, file) {
            (Ok(Some((seq, hash))), Some(f))
                if seq == head.seq.0 && hash == head.hash && f.is_file() =>
            {
                Ok(())
            }
            // Anything else (a day removed by retention, a missing file, another head)
            // is judged by the full check, which reads the record or the removal.
            _ => self.verifier().check_table(table),
        }
    }

    /// The archived day holding the record of `table` that holds `seq`, from its pointer.
    fn archived_head_day(&self, table: &TableId, seq: u64) -> Option<String> {
        let tk = crate::record::table_key(table);
        let at = crate::record::seq_key(table, seq);
        let key = self
            .store
            .last_key_at_or_before(Space::Batch, &tk, &at)
            .ok()??;
        self.store.archived_day_of(&key).ok()?
    }

    /// Fences `table` (no-op if it is already). Logged at `warn`.
    pub(crate) fn fence(&self, table: &TableId, fence: Fence) {
        let mut state = self.lock();
        if state.fenced.contains_key(table) {
            return;
        }
        tracing::warn!(%table, check = fence.check, detail = %fence.detail, "table fenced: its new events are quarantined as table_fenced until `roundledger table unfence`");
        state.fenced.insert(table.clone(), fence);
    }

    /// After a failed append: checks the tables its messages name and fences those that
    /// fail. Whether any table was fenced now (then the append is worth trying again).
    pub(crate) fn fence_after_failure(&self, messages: &[&[Incoming]], error: &Error) -> bool {
        let tables: std::collections::BTreeSet<&TableId> = messages
            .iter()
            .flat_map(|m| m.iter())
            .filter_map(|m| m.subject_table.as_ref())
            .collect();
        let fenced = self.reader().fenced();
        let mut any = false;
        for table in tables.into_iter().filter(|t| !fenced.contains_key(*t)) {
            if let Err(mut f) = self.verifier().check_table(table) {
                f.detail = format!("{}; the append failed with: {error}", f.detail);
                self.fence(table, f);
                any = true;
            }
        }
        any
    }

    /// The table's `table_fenced` entries as they arrived (by stream seq: a purge moves
    /// some past newer ones): events, then checkpoints.
    fn fenced_entries(&self, table: &TableId) -> Result<(Vec<Incoming>, Vec<Incoming>), Error> {
        let (mut events, mut checkpoints) = (Vec::new(), Vec::new());
        for kv in self.store.range(Space::Quarantine, &[], None) {
            let (k, v) = kv?;
            let id = crate::record::be_u64(&k)?;
            let e = crate::QuarantineEntry::decode(id, &v)?;
            if e.reason != reason::TABLE_FENCED || e.subject_table.as_ref() != Some(table) {
                continue;
            }
            let list = match e.text.starts_with(CHECKPOINT_TEXT) {
                true => &mut checkpoints,
                false => &mut events,
            };
            if list.len() >= UNFENCE_ENTRIES_MAX {
                continue;
            }
            list.push(Incoming {
                bytes: e.bytes,
                subject_table: e.subject_table,
                stream_seq: e.stream_seq,
                received_at_ns: e.received_at_ns,
                provenance: crate::Provenance::Unsigned,
            });
        }
        events.sort_by_key(|m| m.stream_seq);
        checkpoints.sort_by_key(|m| m.stream_seq);
        Ok((events, checkpoints))
    }

    /// Appends fenced events again. Their signatures were checked before they were
    /// quarantined as `table_fenced`, as recovery's records were before they were written.
    fn append_unfenced(&self, events: &[Incoming]) -> Result<Vec<crate::types::Appended>, Error> {
        Ok(self
            .append_as(events, &[], crate::types::Admission::Recovered)?
            .events)
    }

    fn log_unfence(
        &self,
        table: &TableId,
        by: &str,
        at_ns: i64,
        r: &Unfenced,
    ) -> Result<(), Error> {
        let id = self
            .store
            .keys(Space::Meta, FENCE_LOG_PREFIX, None)
            .take_while(|k| k.as_ref().is_ok_and(|k| k.starts_with(FENCE_LOG_PREFIX)))
            .count() as u64;
        let mut key = FENCE_LOG_PREFIX.to_vec();
        key.extend_from_slice(&id.to_be_bytes());
        let entry = serde_json::json!({
            "act": "unfence", "table": table, "by": by, "at_ns": at_ns, "report": r,
        });
        let value = serde_json::to_vec(&entry).map_err(|e| Error::Store {
            op: "unfence log",
            detail: e.to_string(),
        })?;
        self.store.commit(vec![Op::Put(Space::Meta, key, value)])
    }
}

impl Writer<'_> {
    /// After a read of `table`'s records failed with `error`: fences the table, with the
    /// head check's finding when that fails too. Returns `error`, for the caller to report.
    pub fn fence_after_read_error(&self, table: &TableId, error: Error) -> Error {
        let fence = self
            .verifier()
            .check_table(table)
            .err()
            .unwrap_or_else(|| Fence {
                check: check::RECORD_UNREADABLE,
                detail: error.to_string(),
            });
        self.fence(table, fence);
        error
    }

    /// Lifts the fence of `table` once it passes `check_table`, then appends its
    /// `table_fenced` quarantine entries again (events, then checkpoints, in entry order)
    /// through the one append path, flushes, and records the act in the unfence log.
    /// `Err` when the table still fails its check; nothing is then changed.
    pub fn unfence(&self, table: &TableId, by: &str, at_ns: i64) -> Result<Unfenced, Error> {
        if let Err(f) = self.verifier().check_table(table) {
            return Err(Error::BadSetting(format!(
                "table {table} still fails the {} check ({}); repair it first",
                f.check, f.detail
            )));
        }
        self.lock().fenced.remove(table);
        let (events, checkpoints) = self.fenced_entries(table)?;
        let mut report = Unfenced {
            entries: (events.len() + checkpoints.len()) as u64,
            ..Unfenced::default()
        };
        for chunk in events.chunks(crate::limits::APPEND_BATCH_LEN_MAX) {
            for o in self.append_unfenced(chunk)? {
                match o {
                    crate::Appended::Stored { .. } => report.stored += 1,
                    crate::Appended::Duplicate { .. } => report.duplicates += 1,
                    crate::Appended::Held { .. } => report.held += 1,
                    _ => report.refused += 1,
                }
            }
        }
        for chunk in checkpoints.chunks(crate::limits::APPEND_BATCH_LEN_MAX) {
            let out = self.append(&[], chunk)?;
            report.refused += out
                .checkpoints
                .iter()
                .filter(|c| !matches!(c, CheckpointOutcome::Kept { .. }))
                .count() as u64;
        }
        report.head_seq = self.reader().head(table).map_or(0, |h| h.seq.0);
        self.log_unfence(table, by, at_ns, &report)?;
        self.flush()?;
        tracing::warn!(%table, by, ?report, "table unfenced");
        Ok(report)
    }
}

impl Reader<'_> {
    /// Tables fenced now, and why.
    pub fn fenced(&self) -> BTreeMap<TableId, Fence> {
        self.lock().fenced.clone()
    }

    /// Reads every key of every space of the store, as a corrupt sled page fails only the
    /// reads that reach it. Returns each space whose reading failed, with the last key read
    /// before it and the store's error; empty when every page reads. Reads sled's index
    /// only (pointers, heads, indexes), not the value log. Cost: one pass over the index,
    /// so tools run it (`table status --ledger`), not the open.
    pub fn store_read_failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for space in Space::ALL {
            let mut last: Option<Vec<u8>> = None;
            for k in self.store.keys(space, &[], None) {
                match k {
                    Ok(k) => last = Some(k),
                    Err(e) => {
                        let after = match last.as_deref().map(crate::record::split_table_key) {
                            Some(Ok((t, _))) => format!("after a key of table {t}"),
                            Some(Err(_)) => "after its first keys".to_string(),
                            None => "at its first key".to_string(),
                        };
                        out.push(format!("{space:?} space: a read failed {after}: {e}"));
                        break;
                    }
                }
            }
        }
        out
    }

    /// The unfence log, oldest first: one JSON object per act.
    pub fn fence_log(&self) -> Result<Vec<String>, Error> {
        let mut out = Vec::new();
        for kv in self.store.range(Space::Meta, FENCE_LOG_PREFIX, None) {
            let (k, v) = kv?;
            if !k.starts_with(FENCE_LOG_PREFIX) {
                break;
            }
            out.push(String::from_utf8_lossy(&v).into_owned());
        }
        Ok(out)
    }
}

impl Verifier<'_> {
    /// Checks one table's head record: it reads back and ends with the head the ledger
    /// keeps. `Err` names the failed check.
    pub fn check_table(&self, table: &TableId) -> Result<(), Fence> {
        let Some(head) = self.reader().head(table) else {
            return Ok(());
        };
        let problem = |check, detail| Err(Fence { check, detail });
        match self.reader().stored_event(table, head.seq.0) {
            // The head's day was removed by retention: its seal proves the head.
            Err(Error::RetentionRemoved { day, .. }) => {
                match self.reader().sealed_head_at(&day, table) {
                    Ok(Some((seq, hash))) if seq == head.seq.0 && hash == head.hash => Ok(()),
                    _ => problem(
                        check::HEAD_MISMATCH,
                        format!(
                            "seq {}: removed day {day}'s seal does not end there",
                            head.seq.0
                        ),
                    ),
                }
            }
            Err(e) => problem(check::HEAD_UNREADABLE, format!("seq {}: {e}", head.seq.0)),
            Ok(None) => problem(
                check::HEAD_UNREADABLE,
                format!("seq {}: no stored record holds it", head.seq.0),
            ),
            Ok(Some(e)) if e.hash != head.hash => problem(
                check::HEAD_MISMATCH,
                format!(
                    "seq {}: stored hash {} is not the head's {}",
                    head.seq.0, e.hash, head.hash
                ),
            ),
            Ok(Some(_)) => Ok(()),
        }
    }
}

/// How a fenced checkpoint's quarantine text begins (tells it from a fenced event).
pub(crate) const CHECKPOINT_TEXT: &str = "checkpoint: ";

/// The quarantine text of a message of a fenced table.
pub(crate) fn fenced_text(
    table: &TableId,
    fence: &Fence,
    seq: Option<Seq>,
    checkpoint: bool,
) -> String {
    let what = match checkpoint {
        true => CHECKPOINT_TEXT,
        false => "",
    };
    let at = seq.map(|s| format!(" seq {}", s.0)).unwrap_or_default();
    format!(
        "{what}table {table}{at} is fenced ({}: {}); kept until `roundledger table unfence {table}`",
        fence.check, fence.detail
    )
}
