//! Why a table stops advancing: what it holds and the quarantined event its gap waits
//! for. Read-only views of the in-memory hold (`State::pending`) and the newest
//! quarantine entries, for the status views, `verify` and ingest's `TableStuck` alert.

use crate::error::Error;
use crate::faces::Reader;
use crate::read::QuarantineEntry;
use crate::record::be_u64;
use crate::store::Space;
use schemas::api::{GapBlocker, GapView};
use schemas::{codec, Seq, TableId};
use std::collections::BTreeMap;

/// Newest quarantine entries read back to find the refused event a gap waits for. Older
/// blockers are not named (the status says so); the scan stays bounded after a flood.
pub const BLOCKER_SCAN_MAX: usize = 4096;

/// A quarantined event inside a table's gap: the chain waits for its seq.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocker {
    /// The quarantined event's seq, inside the gap.
    pub seq: Seq,
    /// Its quarantine entry.
    pub quarantine_id: u64,
    /// The entry's stable reason code.
    pub reason: String,
}

impl Reader<'_> {
    /// For each of `gaps`, the lowest-seq quarantined event of its table inside its
    /// missing range, among the newest `BLOCKER_SCAN_MAX` entries: one scan for all. A
    /// gap without one waits for events the ledger never received (a lost outbox), or
    /// for a refusal older than the scan.
    pub fn gap_blockers(
        &self,
        gaps: &[crate::read::Gap],
    ) -> Result<BTreeMap<TableId, Blocker>, Error> {
        let ranges: BTreeMap<&TableId, std::ops::RangeInclusive<u64>> = gaps
            .iter()
            .map(|g| (&g.table, g.missing_from.0..=g.missing_to.0))
            .collect();
        let mut found: BTreeMap<TableId, Blocker> = BTreeMap::new();
        if ranges.is_empty() {
            return Ok(found);
        }
        for kv in self
            .store
            .range_back(Space::Quarantine)
            .take(BLOCKER_SCAN_MAX)
        {
            let (k, v) = kv?;
            let e = QuarantineEntry::decode(be_u64(&k)?, &v)?;
            let Some((table, range)) = e
                .subject_table
                .as_ref()
                .and_then(|t| ranges.get_key_value(t))
            else {
                continue;
            };
            let Some(seq) = event_seq(&e.bytes, table).filter(|s| range.contains(s)) else {
                continue;
            };
            if found.get(*table).is_none_or(|b| seq < b.seq.0) {
                let blocker = Blocker {
                    seq: Seq(seq),
                    quarantine_id: e.id,
                    reason: e.reason,
                };
                found.insert((*table).clone(), blocker);
            }
        }
        Ok(found)
    }

    /// Each held table's gap as the API and the CLI show it, with its blocker.
    pub fn gap_views(&self) -> Result<BTreeMap<TableId, GapView>, Error> {
        let gaps = self.gaps();
        let mut blockers = self.gap_blockers(&gaps)?;
        let mut views = BTreeMap::new();
        for g in gaps {
            let blocked_by = blockers.remove(&g.table).map(|b| GapBlocker {
                seq: b.seq,
                quarantine_id: b.quarantine_id,
                reason: b.reason,
            });
            let view = GapView {
                missing_from: g.missing_from,
                missing_to: g.missing_to,
                held: g.held as u64,
                since_ns: g.since_ns,
                held_last: g.held_last,
                held_bytes: g.held_bytes,
                blocked_by,
            };
            views.insert(g.table, view);
        }
        Ok(views)
    }

    /// The gaps whose oldest held event arrived at or before `held_before_ns`: tables
    /// that have not advanced for that long.
    pub fn stuck(&self, held_before_ns: i64) -> Vec<crate::read::Gap> {
        self.gaps()
            .into_iter()
            .filter(|g| g.since_ns <= held_before_ns)
            .collect()
    }
}

/// The seq of an event of `table` in `bytes`, if they decode to one.
fn event_seq(bytes: &[u8], table: &TableId) -> Option<u64> {
    let (event, _) = codec::decode(bytes).ok()?;
    (&event.table == table).then_some(event.seq.0)
}
