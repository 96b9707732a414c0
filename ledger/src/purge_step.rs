//! One step of a quarantine purge (`purge`): at most `PURGE_STEP_ENTRIES` entries below
//! the target, in id order, removed or (a fenced table's) moved past the cut, and the new
//! cut, in one commit; then the state in memory follows.

use crate::faces::Writer;
use crate::purge::{PurgeMark, PurgeStep, MARK_KEY, PURGE_STEP_ENTRIES};
use crate::quarantine::{repeat_key, QuarantineHead, HEAD_KEY};
use crate::quarantine_limits::charge;
use crate::read::QuarantineEntry;
use crate::record::be_u64;
use crate::store::{Op, Space};
use crate::types::reason;
use crate::{error::Error, owner::Ledger};
use std::collections::HashMap;

/// What a step writes and what the state takes from it after the commit.
struct Step {
    ops: Vec<Op>,
    mark: PurgeMark,
    head: QuarantineHead,
    next_id: u64,
    removed: u64,
    /// Moved entries: old id -> new id.
    moved: HashMap<u64, u64>,
    /// Charged bytes removed, per source (`table_fenced` apart).
    by_source: HashMap<String, u64>,
    fenced_bytes: u64,
    by_reason: HashMap<String, u64>,
}

impl Ledger {
    /// Removes entry `id` (stored bytes `v`), or moves it past the cut when it is a
    /// fenced table's, and chains it into the cut.
    fn step_entry(
        &self,
        state: &crate::owner::State,
        step: &mut Step,
        id: u64,
        v: &[u8],
    ) -> Result<(), Error> {
        let e = QuarantineEntry::decode(id, v)?;
        step.mark.hash = proofs::digest::quarantine_next(&step.mark.hash, id, v);
        step.mark.entries += 1;
        step.ops
            .push(Op::Remove(Space::Quarantine, id.to_be_bytes().to_vec()));
        step.ops.push(Op::Remove(Space::Meta, repeat_key(id)));
        let fenced = e.reason == reason::TABLE_FENCED;
        let kept = fenced
            && e.subject_table
                .as_ref()
                .is_some_and(|t| state.fenced.contains_key(t));
        if kept {
            let new_id = step.next_id;
            step.next_id += 1;
            step.head = step.head.next(new_id, v);
            step.ops.push(Op::Put(
                Space::Quarantine,
                new_id.to_be_bytes().to_vec(),
                v.to_vec(),
            ));
            if let Some(r) = self.store.get(Space::Meta, &repeat_key(id))? {
                step.ops.push(Op::Put(Space::Meta, repeat_key(new_id), r));
            }
            step.moved.insert(id, new_id);
            return Ok(());
        }
        let charged = charge(e.bytes.len());
        if fenced {
            step.fenced_bytes += charged;
        } else {
            let source = crate::quarantine::source_of(e.subject_table.as_ref());
            *step.by_source.entry(source).or_default() += charged;
        }
        *step.by_reason.entry(e.reason).or_default() += 1;
        step.removed += 1;
        step.mark.purged_entries += 1;
        step.mark.purged_bytes += charged;
        Ok(())
    }
}

impl Writer<'_> {
    /// Runs one step of a pending purge; `None` when none is pending. Each step is one
    /// atomic commit, so a crash resumes at the next step.
    pub fn purge_step(&self) -> Result<Option<PurgeStep>, Error> {
        let mut state = self.lock();
        let q = &state.quarantine;
        let (mark, target) = (q.purge_mark, q.purge_target);
        if mark.below_id >= target {
            return Ok(None);
        }
        let mut step = Step {
            ops: Vec::new(),
            mark,
            head: q.head,
            next_id: q.next_id,
            removed: 0,
            moved: HashMap::new(),
            by_source: HashMap::new(),
            fenced_bytes: 0,
            by_reason: HashMap::new(),
        };
        let from = mark.below_id.to_be_bytes();
        let to = target.to_be_bytes();
        let mut seen = 0usize;
        for kv in self.store.range(Space::Quarantine, &from, Some(&to)) {
            let (k, v) = kv?;
            let id = be_u64(&k)?;
            self.step_entry(&state, &mut step, id, &v)?;
            step.mark.below_id = id + 1;
            seen += 1;
            if seen == PURGE_STEP_ENTRIES {
                break;
            }
        }
        if seen < PURGE_STEP_ENTRIES {
            step.mark.below_id = target;
        }
        let done = step.mark.below_id >= target;
        let json = serde_json::to_vec(&step.mark).expect("a purge mark serializes");
        step.ops.push(Op::Put(Space::Meta, MARK_KEY.to_vec(), json));
        step.ops
            .push(Op::Put(Space::Meta, HEAD_KEY.to_vec(), step.head.encode()));
        self.store.commit(std::mem::take(&mut step.ops))?;
        let out = PurgeStep {
            removed: step.removed,
            moved: step.moved.len() as u64,
            mark: step.mark,
            done,
        };
        publish(&mut state, step);
        tracing::info!(
            removed = out.removed,
            moved = out.moved,
            below_id = out.mark.below_id,
            done,
            "quarantine purge step"
        );
        Ok(Some(out))
    }
}

/// The state after a step's commit.
fn publish(state: &mut crate::owner::State, step: Step) {
    let q = &mut state.quarantine;
    let source_bytes: u64 = step.by_source.values().sum();
    q.bytes = q.bytes.saturating_sub(source_bytes);
    for (source, bytes) in &step.by_source {
        q.by_source.add(source, -i128::from(*bytes));
    }
    q.fenced_bytes = q.fenced_bytes.saturating_sub(step.fenced_bytes);
    q.entries = q.entries.saturating_sub(step.removed);
    q.head = step.head;
    q.next_id = step.next_id;
    q.purge_mark = step.mark;
    q.refusals.forget_below(step.mark.below_id, &step.moved);
    for (r, n) in step.by_reason {
        if let Some(c) = state.counters.get_mut(&r) {
            *c = c.saturating_sub(n);
        }
    }
}
