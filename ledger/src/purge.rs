//! Quarantine purge (`schemas::purge`): an admin-signed act, taken in the append path at
//! its point of the stream, that removes the quarantine's entries below an id, so a
//! quarantine full to its limits keeps refusals again.
//!
//! - The act records its target (`TARGET_KEY`) and a log line (`LOG_PREFIX`); the removal
//!   runs after, in steps of at most `PURGE_STEP_ENTRIES` entries, each one atomic commit
//!   (`Ledger::purge_step`; ingest's writer runs them between batches). A crash between
//!   steps resumes at the next.
//! - Each step removes entries in id order and moves the cut (`PurgeMark`): the quarantine
//!   chain's count and hash after the last entry removed. `verify` chains the entries that
//!   stay from the mark, and a digest that counted exactly the mark's entries still checks.
//! - `table_fenced` entries of a table fenced now are kept: moved past the cut under new ids
//!   (the chain extends over them), never removed. Their table's unfence needs them.
//! - A purge that does not check out (malformed, an untrusted key, a bad signature) is
//!   quarantined as `purge_refused`, verbatim: evidence, never applied.
//!
//! Routing: `Ledger::order_purge` takes a checked act's target, whatever path brought it,
//! so an admin-act stream can carry the same act.

use crate::call::Call;
use crate::refuse::quarantine;
use crate::store::{Op, Space};
use crate::types::{reason, Appended, Incoming};
use crate::{Error, Ledger};
use schemas::purge::{PurgeError, QuarantinePurge};
use serde::{Deserialize, Serialize};

pub use crate::purge_mark::{PurgeMark, MARK_KEY, TARGET_KEY};

/// `Space::Meta` key prefix of the purge log: `prefix ++ stream seq (BE)` -> `PurgeLine`.
pub const LOG_PREFIX: &[u8] = b"quarantine_purge_log/";
/// Most entries one purge step removes or moves, in one commit.
pub const PURGE_STEP_ENTRIES: usize = 4_096;
/// Most purge log lines one listing returns.
pub const PURGE_LOG_LIST_MAX: usize = 10_000;
/// The kind an applied purge reports (`Appended::Admin`).
pub const PURGE_KIND: &str = "quarantine_purge";

/// One purge act as the log keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PurgeLine {
    /// The act's stream seq.
    pub stream_seq: u64,
    /// When the stream received it, UTC ns.
    pub received_at_ns: i64,
    /// The id it asked for: entries below it go.
    pub below_id: u64,
    /// The id it set as the target (no higher than the next entry's id then).
    pub target: u64,
    /// The signing admin key, 64 hex.
    pub admin: String,
    /// The admin's note.
    pub note: String,
    /// The act's message as received, hex: its signature can be checked again.
    pub wire_hex: String,
}

/// What one step did (`Ledger::purge_step`).
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

fn log_key(stream_seq: u64) -> Vec<u8> {
    [LOG_PREFIX, &stream_seq.to_be_bytes()].concat()
}

impl Ledger {
    /// Takes or refuses the purge `msg` (the append path's hook).
    pub(crate) fn purge_act(
        &self,
        state: &crate::State,
        call: &mut Call,
        msg: &Incoming,
        parsed: Result<QuarantinePurge, PurgeError>,
    ) -> Result<Appended, Error> {
        let p = match parsed {
            Ok(p) => p,
            Err(e) => return Ok(refuse(state, call, msg, e.to_string())),
        };
        let key = log_key(msg.stream_seq);
        let again = call
            .ops
            .iter()
            .any(|op| matches!(op, Op::Put(Space::Meta, k, _) if *k == key));
        if again || self.store.get(Space::Meta, &key)?.is_some() {
            return Ok(Appended::Admin {
                kind: PURGE_KIND,
                first: false,
            });
        }
        if !state.trust.admin_keys.contains(&p.admin) {
            let why = format!("admin key {} is not trusted", p.admin);
            return Ok(refuse(state, call, msg, why));
        }
        if !p.signature_verifies() {
            let why = "the admin signature does not verify".to_string();
            return Ok(refuse(state, call, msg, why));
        }
        let target = self.order_purge(state, call, p.below_id);
        let line = PurgeLine {
            stream_seq: msg.stream_seq,
            received_at_ns: msg.received_at_ns,
            below_id: p.below_id,
            target,
            admin: p.admin.to_hex(),
            note: p.note.clone(),
            wire_hex: hex::encode(&msg.bytes),
        };
        tracing::warn!(below_id = p.below_id, target, admin = %line.admin, note = %line.note, "admin act: quarantine purge ordered");
        let json = serde_json::to_vec(&line).expect("a purge line serializes");
        call.ops.push(Op::Put(Space::Meta, key, json));
        Ok(Appended::Admin {
            kind: PURGE_KIND,
            first: true,
        })
    }

    /// Orders the removal of the entries below `below_id` (no further than the entries
    /// stored now) in `call`; returns the target in force after it. The act's checks are
    /// the caller's.
    pub(crate) fn order_purge(&self, state: &crate::State, call: &mut Call, below_id: u64) -> u64 {
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

    /// The purge log, oldest first (at most `PURGE_LOG_LIST_MAX` lines).
    pub fn purge_log(&self) -> Result<Vec<PurgeLine>, Error> {
        let mut out = Vec::new();
        for kv in self.store.range(Space::Meta, LOG_PREFIX, None) {
            let (k, v) = kv?;
            if !k.starts_with(LOG_PREFIX) || out.len() == PURGE_LOG_LIST_MAX {
                break;
            }
            let line = serde_json::from_slice(&v)
                .map_err(|e| crate::record::corrupt(&format!("a purge log line: {e}")))?;
            out.push(line);
        }
        Ok(out)
    }
}

fn refuse(state: &crate::State, call: &mut Call, msg: &Incoming, why: String) -> Appended {
    quarantine(state, call, msg, reason::PURGE_REFUSED, why).into()
}
