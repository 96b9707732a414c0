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
//! - Appends go on meanwhile. A segment moves in steps of at most `STEP_BOUNDS` entries
//!   and bytes. The writer lock is held for one step's commit, then released. Each copy
//!   is checked again against sled in its step, under the lock. A read that finds its
//!   segment gone reads where sled points now (`SledStore`).
//! - Each step is one atomic commit, so a crash between steps leaves the segment live:
//!   its moved entries read from the tail, the rest from it. The next run moves it again.
//! - One compaction or archive move runs at a time (the caller's): nothing else
//!   repoints records.

use crate::faces::Tier;
use crate::store::segments::{retired_key, RetiredSegment, SegmentUse};
use crate::store::{Op, Space, Unreferenced};
use crate::{error::Error, owner::Ledger};
use std::collections::BTreeMap;

/// A closed segment is retired when at most this share of its bytes is referenced (%).
pub const LIVE_PERCENT_MAX: u64 = 50;

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
    /// The longest one relocation step held the writer lock (appends waited), ms.
    pub lock_held_ms_max: u64,
}

impl Ledger {
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

    /// Relocates a plan in steps of at most `bounds`, each under the writer lock, which is
    /// released between steps; `between` runs after each step with the steps done.
    fn relocate(
        &self,
        plan: Plan,
        bounds: StepBounds,
        between: &mut dyn FnMut(u64) -> Result<(), Error>,
    ) -> Result<(RetiredSegment, u64), Error> {
        assert!(
            bounds.entries_max > 0 && bounds.bytes_max > 0,
            "a step moves something"
        );
        let mut done = RetiredSegment {
            segment: plan.segment,
            file_bytes: plan.file_bytes,
            records_moved: 0,
            copies_moved: 0,
            bytes_moved: 0,
        };
        let mut steps = Steps::default();
        let mut records = plan.records.into_iter().peekable();
        while records.peek().is_some() {
            let (ops, bytes) = self.records_step(&mut records, bounds)?;
            done.records_moved += ops.len() as u64;
            done.bytes_moved += bytes;
            steps.commit(self, ops, between)?;
        }
        for chunk in chunks(plan.copies, bounds) {
            let (n, bytes) = steps.commit_copies(self, chunk, between)?;
            done.copies_moved += n;
            done.bytes_moved += bytes;
        }
        // Records are not repointed meanwhile (one compaction at a time); copies may only
        // have gone stale.
        assert!(done.bytes_moved <= plan.live_bytes, "relocated bytes");
        let mark = Op::Put(Space::Meta, retired_key(plan.segment), done.encode());
        steps.commit(self, vec![mark], &mut |_| Ok(()))?;
        self.store.flush()?;
        Ok((done, steps.lock_held_ms_max))
    }

    /// The next step's records, read outside the writer lock (only a move or a compaction
    /// repoints records, and one runs at a time: the caller's), and their entry bytes.
    fn records_step(
        &self,
        keys: &mut dyn Iterator<Item = Vec<u8>>,
        bounds: StepBounds,
    ) -> Result<(Vec<Op>, u64), Error> {
        let mut ops = Vec::new();
        let mut bytes = 0u64;
        for key in keys {
            let record = self.store.get(Space::Batch, &key)?.ok_or_else(|| {
                crate::record::corrupt(&format!("record {} vanished", hex::encode(&key)))
            })?;
            bytes += entry_bytes(&record);
            ops.push(Op::Relocate(key, record));
            if ops.len() >= bounds.entries_max || bytes >= bounds.bytes_max {
                break;
            }
        }
        Ok((ops, bytes))
    }
}

impl Tier<'_> {
    /// Retires every closed segment that is mostly unreferenced, and removes the files of
    /// segments retired before.
    pub fn compact_values(&self) -> Result<Compaction, Error> {
        self.compact_values_in_steps(STEP_BOUNDS, &mut |_| Ok(()))
    }

    /// `compact_values` in steps of at most `bounds`; `between` runs after each step,
    /// outside the writer lock, with the segment's steps done (tests stop or append there).
    pub fn compact_values_in_steps(
        &self,
        bounds: StepBounds,
        between: &mut dyn FnMut(u64) -> Result<(), Error>,
    ) -> Result<Compaction, Error> {
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
                    let (retired, held_ms) = self.relocate(plan, bounds, between)?;
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
        self.relocate_segment_in_steps(segment, STEP_BOUNDS, &mut |_| Ok(()))
    }

    /// `relocate_segment` in steps of at most `bounds`; `between` runs after each step,
    /// outside the writer lock, with the steps done (tests stop or append there).
    pub fn relocate_segment_in_steps(
        &self,
        segment: u32,
        bounds: StepBounds,
        between: &mut dyn FnMut(u64) -> Result<(), Error>,
    ) -> Result<RetiredSegment, Error> {
        let uses = self.store.value_segments()?;
        let u = uses
            .iter()
            .find(|u| u.segment == segment && !u.retired)
            .ok_or_else(|| Error::Tier(format!("value segment {segment}: not closed and live")))?;
        let plan = self.plan(u)?;
        Ok(self.relocate(plan, bounds, between)?.0)
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
}

/// How much one relocation step moves: the writer lock is held for one step at a time,
/// so an append waits behind one step at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepBounds {
    /// Most entries (records or copies) one step writes again.
    pub entries_max: usize,
    /// A step ends once it has written this many bytes (the entry that reaches it is the
    /// step's last).
    pub bytes_max: u64,
}

/// The steps `compact_values` takes: a step's commit writes at most about 4 MiB.
pub const STEP_BOUNDS: StepBounds = StepBounds {
    entries_max: 4_096,
    bytes_max: 4 << 20,
};

/// A recovery copy to write again: space, key and the value sled held at the plan.
type PlannedCopy = (Space, Vec<u8>, Vec<u8>);

/// Splits copies into steps of at most `bounds`.
fn chunks(copies: Vec<PlannedCopy>, bounds: StepBounds) -> Vec<Vec<PlannedCopy>> {
    let mut out: Vec<Vec<PlannedCopy>> = Vec::new();
    let mut bytes = 0u64;
    for c in copies {
        let full = out
            .last()
            .is_none_or(|l| l.len() >= bounds.entries_max || bytes >= bounds.bytes_max);
        if full {
            out.push(Vec::new());
            bytes = 0;
        }
        bytes += entry_bytes(&c.2);
        if let Some(last) = out.last_mut() {
            last.push(c);
        }
    }
    out
}

/// The steps taken so far, and the longest the writer lock was held for one.
#[derive(Default)]
struct Steps {
    done: u64,
    lock_held_ms_max: u64,
}

impl Steps {
    /// One step: `ops` committed under the writer lock, then `between`.
    fn commit(
        &mut self,
        l: &Ledger,
        ops: Vec<Op>,
        between: &mut dyn FnMut(u64) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let started = std::time::Instant::now();
        {
            let _appends = l.lock();
            l.store.commit(ops)?;
        }
        self.held(started);
        between(self.done)
    }

    /// One step of copies: each written again only while sled holds the planned value,
    /// checked under the writer lock. The copies and bytes written.
    fn commit_copies(
        &mut self,
        l: &Ledger,
        copies: Vec<PlannedCopy>,
        between: &mut dyn FnMut(u64) -> Result<(), Error>,
    ) -> Result<(u64, u64), Error> {
        let started = std::time::Instant::now();
        let (mut n, mut bytes) = (0, 0);
        {
            let _appends = l.lock();
            let mut ops = Vec::new();
            for (space, key, value) in copies {
                // Sled's value may have changed since the plan: a newer copy is at the tail.
                if l.store.get(space, &key)?.as_deref() != Some(value.as_slice()) {
                    continue;
                }
                n += 1;
                bytes += entry_bytes(&value);
                ops.push(Op::Put(space, key, value));
            }
            if !ops.is_empty() {
                l.store.commit(ops)?;
            }
        }
        self.held(started);
        between(self.done)?;
        Ok((n, bytes))
    }

    fn held(&mut self, started: std::time::Instant) {
        self.done += 1;
        let ms = started.elapsed().as_millis() as u64;
        self.lock_held_ms_max = self.lock_held_ms_max.max(ms);
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
