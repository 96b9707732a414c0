//! Compaction of the value log: what the archive tier and retention leave behind.
//!
//! A move repoints a day's records into its day file, and a retention removal drops the
//! file; the records' old entries stay in the value log until compaction frees them. A
//! closed segment (`store::segments`) at most `LIVE_PERCENT_MAX` % referenced is retired:
//! 1. its live records and its recovery copies are written again at the log's tail
//!    (`Op::Relocate`, `Op::Put`), and the last of those commits marks it retired;
//! 2. the store removes its file, after checking that nothing points into it.
//!
//! Invariants:
//! - Nothing live is lost: a record is written again with the bytes read and checked
//!   through its pointer; a copy is written again only while sled holds the same value.
//! - A crash anywhere leaves every record readable. Before the last commit the segment
//!   is live (relocated records read from their new place, the rest from it). After it,
//!   the file is only garbage, removed by the next run.
//! - A segment with damage that may hide entries is kept, and named.
//! - Appends go on meanwhile. The writer lock is held for each segment's relocation, in
//!   which every copy is checked again against sled. A read that finds its segment gone
//!   reads where sled points now (`SledStore`).
//! - One compaction or archive move runs at a time (the caller's): nothing else
//!   repoints records.

use crate::store::segments::{retired_key, RetiredSegment, SegmentUse};
use crate::store::{Op, Space, Unreferenced};
use crate::{Error, Ledger};
use std::collections::BTreeMap;

/// A closed segment is retired when at most this share of its bytes is referenced (%).
pub const LIVE_PERCENT_MAX: u64 = 50;

/// Most bytes one relocation commit writes again.
pub const RELOCATE_COMMIT_BYTES_MAX: u64 = 64 << 20;

/// What a compaction did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Compaction {
    /// Closed segments looked at.
    pub segments_closed: u64,
    /// Segments retired and removed by this run.
    pub retired: Vec<RetiredSegment>,
    /// Segments retired by an earlier run, whose files this run removed.
    pub leftovers_removed: u64,
    /// Bytes of segment files removed.
    pub bytes_freed: u64,
    /// Closed segments kept because more than `LIVE_PERCENT_MAX` % is referenced.
    pub kept_live: u64,
    /// Closed segments kept because of damage, and why.
    pub kept_damaged: Vec<String>,
    /// The longest one segment's relocation held the writer lock (appends waited), ms.
    pub lock_held_ms_max: u64,
}

impl Ledger {
    /// Retires every closed segment that is mostly unreferenced, and removes the files of
    /// segments retired before.
    pub fn compact_values(&self) -> Result<Compaction, Error> {
        let mut out = Compaction::default();
        for u in self.store.value_segments()? {
            out.segments_closed += 1;
            if u.retired {
                out.bytes_freed += self.store.remove_segment(u.segment)?;
                out.leftovers_removed += 1;
                continue;
            }
            // Records alone keep it: its copies need not be read.
            if !share_at_most(u.live_record_bytes, u.file_bytes) {
                out.kept_live += 1;
                continue;
            }
            match self.plan(&u) {
                Ok(plan) if share_at_most(plan.live_bytes, plan.file_bytes) => {
                    let started = std::time::Instant::now();
                    let retired = {
                        let _appends = self.lock();
                        self.relocate(plan)?
                    };
                    let held_ms = started.elapsed().as_millis() as u64;
                    out.lock_held_ms_max = out.lock_held_ms_max.max(held_ms);
                    out.retired.push(retired);
                    out.bytes_freed += self.store.remove_segment(u.segment)?;
                }
                Ok(_) => out.kept_live += 1,
                Err(Error::Tier(why)) => out.kept_damaged.push(why),
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// Step 1 alone: relocates what a closed segment holds and marks it retired, durably,
    /// however live it is. Its file stays until `compact_values` (tests stop here).
    pub fn relocate_segment(&self, segment: u32) -> Result<RetiredSegment, Error> {
        let uses = self.store.value_segments()?;
        let u = uses
            .iter()
            .find(|u| u.segment == segment && !u.retired)
            .ok_or_else(|| Error::Tier(format!("value segment {segment}: not closed and live")))?;
        let plan = self.plan(u)?;
        let _appends = self.lock();
        self.relocate(plan)
    }

    /// The segments retired so far, by number.
    pub fn retired_segments(&self) -> Result<Vec<RetiredSegment>, Error> {
        let prefix = crate::store::segments::RETIRED_KEY_PREFIX;
        let mut end = prefix.to_vec();
        *end.last_mut().expect("a prefix") += 1;
        self.store
            .range(Space::Meta, prefix, Some(&end))
            .map(|kv| RetiredSegment::decode(&kv?.1))
            .collect()
    }

    /// What of a closed segment is live: read before any write, so damage refuses the
    /// segment with nothing changed. Copies are checked again under the writer lock.
    fn plan(&self, u: &SegmentUse) -> Result<Plan, Error> {
        let mut copies = Vec::new();
        for ((space, key), value) in latest_copies(self.store.segment_copies(u.segment)?) {
            if self.store.get(space, &key)?.as_deref() == Some(value.as_slice()) {
                copies.push((space, key, value));
            }
        }
        let copy_bytes: u64 = copies.iter().map(|(_, _, v)| entry_bytes(v)).sum();
        Ok(Plan {
            segment: u.segment,
            file_bytes: u.file_bytes,
            records: self.store.segment_records(u.segment)?,
            live_bytes: u.live_record_bytes + copy_bytes,
            copies,
        })
    }

    fn relocate(&self, plan: Plan) -> Result<RetiredSegment, Error> {
        let mut done = RetiredSegment {
            segment: plan.segment,
            file_bytes: plan.file_bytes,
            records_moved: 0,
            copies_moved: 0,
            bytes_moved: 0,
        };
        let mut commits = Commits::new(self);
        for key in plan.records {
            let record = self.store.get(Space::Batch, &key)?.ok_or_else(|| {
                crate::record::corrupt(&format!("record {} vanished", hex::encode(&key)))
            })?;
            done.records_moved += 1;
            done.bytes_moved += entry_bytes(&record);
            commits.push(Op::Relocate(key, record))?;
        }
        for (space, key, value) in plan.copies {
            // Sled's value may have changed since the plan: a newer copy is at the tail.
            if self.store.get(space, &key)?.as_deref() != Some(value.as_slice()) {
                continue;
            }
            done.copies_moved += 1;
            done.bytes_moved += entry_bytes(&value);
            commits.push(Op::Put(space, key, value))?;
        }
        // Records are not repointed meanwhile (one compaction at a time); copies may only
        // have gone stale.
        assert!(done.bytes_moved <= plan.live_bytes, "relocated bytes");
        let mark = Op::Put(Space::Meta, retired_key(plan.segment), done.encode());
        commits.push(mark)?;
        commits.finish()?;
        Ok(done)
    }
}

/// A closed segment's live records (keys) and copies (still sled's values).
struct Plan {
    segment: u32,
    file_bytes: u64,
    records: Vec<Vec<u8>>,
    copies: Vec<(Space, Vec<u8>, Vec<u8>)>,
    /// Entry bytes of both, headers included.
    live_bytes: u64,
}

/// Whether `live_bytes` are at most `LIVE_PERCENT_MAX` % of `file_bytes`.
fn share_at_most(live_bytes: u64, file_bytes: u64) -> bool {
    live_bytes.saturating_mul(100) <= file_bytes.saturating_mul(LIVE_PERCENT_MAX)
}

/// A value's entry in the value log, header included.
fn entry_bytes(v: &[u8]) -> u64 {
    (crate::valuelog::ENTRY_HEADER_LEN + v.len()) as u64
}

/// The last copy of each key, in key order (an earlier copy of a key is superseded).
fn latest_copies(found: Vec<Unreferenced>) -> BTreeMap<(Space, Vec<u8>), Vec<u8>> {
    let mut out = BTreeMap::new();
    for f in found {
        if let Unreferenced::Put { space, key, value } = f {
            out.insert((space, key), value);
        }
    }
    out
}

/// Relocation ops gathered into commits of at most `RELOCATE_COMMIT_BYTES_MAX` bytes.
struct Commits<'a> {
    ledger: &'a Ledger,
    ops: Vec<Op>,
    bytes: u64,
}

impl<'a> Commits<'a> {
    fn new(ledger: &'a Ledger) -> Self {
        Commits {
            ledger,
            ops: Vec::new(),
            bytes: 0,
        }
    }

    fn push(&mut self, op: Op) -> Result<(), Error> {
        if let Op::Relocate(_, v) | Op::Put(_, _, v) = &op {
            self.bytes += entry_bytes(v);
        }
        self.ops.push(op);
        if self.bytes >= RELOCATE_COMMIT_BYTES_MAX {
            self.commit()?;
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<(), Error> {
        self.bytes = 0;
        let ops = std::mem::take(&mut self.ops);
        if ops.is_empty() {
            return Ok(());
        }
        self.ledger.store.commit(ops)
    }

    /// Commits the rest and makes every commit durable.
    fn finish(mut self) -> Result<(), Error> {
        self.commit()?;
        self.ledger.store.flush()
    }
}
