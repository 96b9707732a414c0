//! The owner of an open ledger: its store, its state under one mutex, and the few
//! methods every part of the crate shares.

use crate::error::Error;
use crate::store::Store;
use crate::types::Recovery;
use schemas::{ChainHead, Hash32, TableId};
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

/// Mutable state, guarded by one mutex: only one append runs at a time.
pub(crate) struct State {
    pub(crate) heads: BTreeMap<TableId, ChainHead>,
    /// Each table's receipt at its head (`arrival::receipt_of_table`). A table whose head
    /// was written before receipts has none here until its next append computes it.
    pub(crate) receipts: BTreeMap<TableId, Hash32>,
    /// Tables with such a head whose receipt could not be computed (their records do not
    /// read): not tried again until the next open, so a damaged table costs one scan.
    pub(crate) receiptless: std::collections::BTreeSet<TableId>,
    /// Events held beyond a gap, until it fills.
    pub(crate) held: crate::types::HeldEvents,
    pub(crate) counters: BTreeMap<String, u64>,
    /// The quarantine: its chain, counts and bounds.
    pub(crate) quarantine: crate::quarantine::QuarantineState,
    pub(crate) next_call_id: u64,
    pub(crate) bytes_total: u64,
    /// The last call's arrival hash (`arrival`); zeros before the first.
    pub(crate) arrival_head: Hash32,
    /// Who may speak for a table: admin keys, device keys, kept checkpoints.
    pub(crate) trust: crate::types::Trust,
    /// The clock skew limit in force (`settings`).
    pub(crate) clock_skew_max_ns: i64,
    /// Whether a table's chain ends with `TableClosed`, for the tables an append has
    /// looked at since open. A cache of the head event's kind: reading the head record
    /// back from the store for every table of every batch was 13% of the writer's time.
    pub(crate) closed: BTreeMap<TableId, bool>,
    /// Tables fenced as damaged (`fence`): their new messages are quarantined.
    pub(crate) fenced: BTreeMap<TableId, crate::types::Fence>,
    /// Admin acts the last call took whose effect runs after its commit (`admin`).
    pub(crate) admin_deferred: Vec<crate::types::DeferredAct>,
}

/// An open ledger.
pub struct Ledger {
    pub(crate) store: Box<dyn Store>,
    pub(crate) state: Mutex<State>,
    /// Device keys decompressed for checkpoint signatures (`attest`); taken only by the
    /// append that holds `state`.
    pub(crate) verifying_keys: Mutex<schemas::attest::KeyCache>,
    /// What this open found beyond the store's last commit (`recover`).
    pub(crate) recovered: Recovery,
    /// Events decoded from stored records since open (`Reader::events_decoded`).
    pub(crate) events_decoded: std::sync::atomic::AtomicU64,
}

impl Ledger {
    /// What this open found beyond the store's last commit, and appended again.
    pub fn recovered(&self) -> &Recovery {
        &self.recovered
    }

    /// Makes every append so far durable. Acknowledge only after this returns.
    pub fn flush(&self) -> Result<(), Error> {
        self.store.flush()
    }

    /// The device keys decompressed so far; taken only by the append that holds `state`.
    pub(crate) fn key_cache(&self) -> MutexGuard<'_, schemas::attest::KeyCache> {
        self.verifying_keys
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock can only come from a broken invariant of our own;
        // the state is only replaced after a successful commit, so it is still consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}
