//! One append call's working state: each table's head and pending writes, the
//! quarantine's head and window, and the ops its one commit will write.

use crate::quarantine::Refusal;
use crate::record::StoredEvent;
use crate::store::{Op, Space};
use crate::types::{DeviceKey, Held};
use schemas::{ChainHead, Hash32, TableId};
use std::collections::BTreeMap;

/// One table's working state in a call: one map entry per table, so an event costs one
/// lookup of its table, not one per map.
pub(crate) struct TableCall {
    pub(crate) head: ChainHead,
    /// The receipt at `head` (`proofs::digest::receipt_next` over the stored events).
    /// `None` only for a head written before receipts whose records could not be read to
    /// compute it: the table goes on without one (its head stays in the old form) rather
    /// than stopping every table's ingest; `verify` names the damage.
    pub(crate) receipt: Option<Hash32>,
    /// Held events by seq (the table's whole hold, loaded from `State`).
    pub(crate) pending: BTreeMap<u64, Held>,
    /// Events this call stores, consecutive from the head at the call's start.
    pub(crate) new_events: Vec<StoredEvent>,
    /// Whether the chain ends with `TableClosed`, once known (`is_closed`).
    pub(crate) closed: Option<bool>,
}

/// Working state of one call; committed to `State` only after the store commit succeeds.
pub(crate) struct Call {
    pub(crate) tables: BTreeMap<TableId, TableCall>,
    pub(crate) pending_bytes: usize,
    pub(crate) ops: Vec<Op>,
    pub(crate) counters: BTreeMap<String, u64>,
    pub(crate) quarantined: u64,
    pub(crate) next_quarantine_id: u64,
    pub(crate) quarantine_head: crate::quarantine::QuarantineHead,
    /// The entries this call quarantines, by delivery.
    pub(crate) quarantined_now: std::collections::HashMap<crate::quarantine::DeliveryKey, u64>,
    /// The entries this call quarantines or counts a repeat against, by content.
    pub(crate) refused_now: std::collections::HashMap<crate::quarantine::ContentKey, Refusal>,
    /// This call's new entries per source and minute, and the quarantine's bytes after it.
    pub(crate) window: crate::quarantine::Window,
    pub(crate) quarantine_bytes: u64,
    /// Charged bytes this call adds per source, and to the fenced entries.
    pub(crate) source_bytes_now: std::collections::HashMap<String, u64>,
    pub(crate) fenced_bytes: u64,
    /// Overflow counters this call changed, and the deliveries it counted (by bound).
    pub(crate) overflow_now: BTreeMap<(String, String), crate::quarantine::Overflow>,
    pub(crate) overflowed_now: std::collections::HashMap<crate::quarantine::DeliveryKey, u64>,
    /// `TableOpened` events this call stores: seq -> chain hash, per table (`config`).
    pub(crate) configs: BTreeMap<TableId, BTreeMap<u64, Hash32>>,
    /// Device keys enrolled or revoked by this call's events.
    pub(crate) devices: BTreeMap<(TableId, schemas::DeviceId), DeviceKey>,
    /// Whether events must carry their device's signature (`provenance`): the ledger's
    /// requirement, off for recovery's re-appends of records admitted before.
    pub(crate) checks_signatures: bool,
    /// Whether recovery re-appends this call (`Admission::Recovered`).
    pub(crate) recovering: bool,
    /// The clock skew limit in force at this point of the call (an admin act may set it).
    pub(crate) clock_skew_max_ns: i64,
    /// Admin acts this call took whose effect runs after its commit (`admin`).
    pub(crate) deferred: Vec<crate::types::DeferredAct>,
    /// The purge target a purge act of this call set (`purge`).
    pub(crate) purge_target: Option<u64>,
    /// The quarantine limits an admin act of this call set (`admin`).
    pub(crate) quarantine_limits: Option<crate::quarantine_limits::QuarantineLimits>,
}

impl Call {
    pub(crate) fn begin(state: &crate::owner::State) -> Call {
        Call {
            tables: BTreeMap::new(),
            pending_bytes: state.held.bytes,
            ops: Vec::new(),
            counters: BTreeMap::new(),
            quarantined: 0,
            next_quarantine_id: state.quarantine.next_id,
            quarantine_head: state.quarantine.head,
            quarantined_now: Default::default(),
            refused_now: Default::default(),
            window: crate::quarantine::Window::starting(state.quarantine.window.window()),
            quarantine_bytes: state.quarantine.bytes,
            source_bytes_now: Default::default(),
            fenced_bytes: 0,
            overflow_now: BTreeMap::new(),
            overflowed_now: Default::default(),
            configs: BTreeMap::new(),
            devices: BTreeMap::new(),
            checks_signatures: state.trust.require_signed,
            recovering: false,
            clock_skew_max_ns: state.clock_skew_max_ns,
            deferred: Vec::new(),
            purge_target: None,
            quarantine_limits: None,
        }
    }

    /// The state of a table this call has loaded (`Ledger::one` loads it at the table's
    /// first message). A table not loaded is a bug in this module.
    pub(crate) fn table(&self, table: &TableId) -> &TableCall {
        self.tables
            .get(table)
            .expect("a table's state is loaded before its events are decided")
    }

    pub(crate) fn table_mut(&mut self, table: &TableId) -> &mut TableCall {
        self.tables
            .get_mut(table)
            .expect("a table's state is loaded before its events are decided")
    }

    /// The table's chain head as this call leaves it so far (its stored events included);
    /// `None` for a table with no event.
    pub(crate) fn head<'a>(
        &'a self,
        state: &'a crate::owner::State,
        table: &TableId,
    ) -> Option<&'a ChainHead> {
        match self.tables.get(table) {
            Some(tc) => Some(&tc.head),
            None => state.heads.get(table),
        }
    }

    /// The hash of `table`'s event at `seq` when it is known without reading the store:
    /// the head, or an event this call stores. (Checkpoints sign the head a device has
    /// just sent, so this is nearly always the case; reading it back was a value-log
    /// read and a record decode per checkpoint.)
    pub(crate) fn known_hash(
        &self,
        state: &crate::owner::State,
        table: &TableId,
        seq: u64,
    ) -> Option<Hash32> {
        let head = self.head(state, table)?;
        if head.seq.0 == seq {
            return Some(head.hash);
        }
        let new_events = &self.tables.get(table)?.new_events;
        let first = new_events.first()?.seq.0;
        let e = new_events.get(usize::try_from(seq.checked_sub(first)?).ok()?)?;
        assert_eq!(e.seq.0, seq, "a call's new events are consecutive");
        Some(e.hash)
    }

    /// `device`'s key register entry on `table` as this call leaves it (its enrollment
    /// and revocation events included).
    pub(crate) fn device_key<'a>(
        &'a self,
        state: &'a crate::owner::State,
        table: &TableId,
        device: &schemas::DeviceId,
    ) -> Option<&'a DeviceKey> {
        let k = (table.clone(), device.clone());
        self.devices.get(&k).or_else(|| state.trust.devices.get(&k))
    }

    /// Whether this call checks its events' signatures (`provenance`).
    pub(crate) fn checks_signatures(&self) -> bool {
        self.checks_signatures
    }

    /// Whether this call stores any event.
    pub(crate) fn stores_events(&self) -> bool {
        self.tables.values().any(|tc| !tc.new_events.is_empty())
    }

    /// The call's ops, for its one commit: with the quarantine head when the call
    /// quarantined, so the entries and the head that chains them commit together.
    pub(crate) fn take_ops(&mut self) -> Vec<Op> {
        for r in self.refused_now.values().filter(|r| r.repeat.count > 0) {
            self.ops.push(Op::Put(
                Space::Meta,
                crate::quarantine::repeat_key(r.id),
                r.repeat.encode(),
            ));
        }
        for ((source, reason), o) in &self.overflow_now {
            self.ops.push(Op::Put(
                Space::Meta,
                crate::quarantine::overflow_key(source, reason),
                o.encode(),
            ));
        }
        if self.quarantined > 0 {
            self.ops.push(Op::Put(
                Space::Meta,
                crate::quarantine::HEAD_KEY.to_vec(),
                self.quarantine_head.encode(),
            ));
        }
        std::mem::take(&mut self.ops)
    }

    /// After a successful commit: makes this call's effects the ledger's state.
    pub(crate) fn publish(self, state: &mut crate::owner::State) {
        for (t, tc) in self.tables {
            if let Some(closed) = tc.closed {
                state.closed.insert(t.clone(), closed);
            }
            if tc.pending.is_empty() {
                state.held.by_table.remove(&t);
            } else {
                state.held.by_table.insert(t.clone(), tc.pending);
            }
            match tc.receipt {
                Some(r) => {
                    state.receipts.insert(t.clone(), r);
                }
                None => {
                    state.receiptless.insert(t.clone());
                }
            }
            state.heads.insert(t, tc.head);
        }
        state.held.bytes = self.pending_bytes;
        for (r, n) in self.counters {
            *state.counters.entry(r).or_insert(0) += n;
        }
        state.quarantine.entries += self.quarantined;
        state.quarantine.window.merge(&self.window);
        state.quarantine.bytes = self.quarantine_bytes;
        state.quarantine.fenced_bytes += self.fenced_bytes;
        if let Some(target) = self.purge_target {
            state.quarantine.purge_target = target;
        }
        if let Some(limits) = self.quarantine_limits {
            state.quarantine.set_limits(limits);
        }
        for (source, bytes) in self.source_bytes_now {
            state.quarantine.by_source.add(&source, i128::from(bytes));
        }
        state.quarantine.overflows.extend(self.overflow_now);
        for (delivery, bound) in self.overflowed_now {
            state.quarantine.recent_overflowed.insert(delivery, bound);
        }
        state.quarantine.next_id = self.next_quarantine_id;
        state.quarantine.head = self.quarantine_head;
        let mut now: Vec<_> = self.quarantined_now.into_iter().collect();
        now.sort_unstable_by_key(|(_, id)| *id);
        for (key, id) in now {
            state.quarantine.recent.insert(key, id);
        }
        let mut refused: Vec<_> = self.refused_now.into_iter().collect();
        refused.sort_unstable_by_key(|(_, r)| r.id);
        for (key, r) in refused {
            state.quarantine.refusals.insert(key, r);
        }
        for (k, d) in self.devices {
            state.trust.devices.insert(k, d);
        }
        state.clock_skew_max_ns = self.clock_skew_max_ns;
        state.admin_deferred.extend(self.deferred);
    }
}
