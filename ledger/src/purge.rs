//! Quarantine purge: the admin act `quarantine_purge` (`schemas::admin`), taken in the
//! append path at its point of the stream like every admin act (`admin`), removes the
//! quarantine's entries below an id, so a quarantine full to its limits keeps refusals again.
//!
//! - The act records its target (`TARGET_KEY`) and its admin log line; the removal runs
//!   after, in steps of at most `PURGE_STEP_ENTRIES` entries, each one atomic commit
//!   (`Writer::purge_step`; ingest's writer runs them between batches). A crash between
//!   steps resumes at the next.
//! - Each step removes entries in id order and moves the cut (`PurgeMark`): the quarantine
//!   chain's count and hash after the last entry removed. `verify` chains the entries that
//!   stay from the mark, and a digest that counted exactly the mark's entries still checks.
//! - `table_fenced` entries of a table fenced now are kept: moved past the cut under new ids
//!   (the chain extends over them), never removed. Their table's unfence needs them.
//! - An act that does not check out is quarantined as `admin_refused`, never applied.

use crate::call::Call;
use crate::faces::Reader;
use crate::owner::Ledger;
use crate::store::{Op, Space};

pub use crate::purge_mark::{PurgeMark, MARK_KEY, TARGET_KEY};

/// Most entries one purge step removes or moves, in one commit.
pub const PURGE_STEP_ENTRIES: usize = 4_096;

/// What one step did (`Writer::purge_step`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PurgeStep {
    /// Entries removed.
    pub removed: u64,
    /// `table_fenced` entries of fenced tables moved past the cut.
    pub moved: u64,
    /// The cut after the step.
    pub mark: PurgeMark,
    /// Whether the target is reached.
    pub done: bool,
}

impl Ledger {
    /// Orders the removal of the entries below `below_id` (no further than the entries
    /// stored now) in `call`; returns the target in force after it. The act's checks are
    /// the caller's.
    pub(crate) fn order_purge(
        &self,
        state: &crate::owner::State,
        call: &mut Call,
        below_id: u64,
    ) -> u64 {
        let before = call.purge_target.unwrap_or(state.quarantine.purge_target);
        let target = before.max(below_id.min(call.next_quarantine_id));
        call.purge_target = Some(target);
        call.ops.push(Op::Put(
            Space::Meta,
            TARGET_KEY.to_vec(),
            target.to_be_bytes().to_vec(),
        ));
        target
    }
}

impl Reader<'_> {
    /// Whether a purge has entries left to remove.
    pub fn purge_pending(&self) -> bool {
        let state = self.lock();
        state.quarantine.purge_mark.below_id < state.quarantine.purge_target
    }

    /// The purge's cut and the target asked for.
    pub fn purge_progress(&self) -> (PurgeMark, u64) {
        let state = self.lock();
        (state.quarantine.purge_mark, state.quarantine.purge_target)
    }
}
