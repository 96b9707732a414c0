//! The append path: decode, check subject, duplicates, forks, clock, gaps and the chain,
//! then write one record per table and one atomic commit. Synchronous, no NATS.

use crate::quarantine::{Bound, ContentKey, Refusal, Repeat, OVERFLOW_COUNTERS_MAX};
use crate::record::{self, ord_i64, seq_key, table_key, W};
use crate::store::{Op, Space};
use crate::{
    Error, Ledger, StoredEvent, APPEND_BATCH_LEN_MAX, GAP_LEN_MAX, PENDING_BYTES_MAX,
    PENDING_PER_TABLE_MAX, RECORD_EVENTS_MAX,
};
use schemas::{
    chain::event_hash, codec, ChainError, ChainHead, Event, Hash32, RoundId, Seq, TableId,
};
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

/// One message as it arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    /// The message body exactly as received.
    pub bytes: Vec<u8>,
    /// The `<table>` token of the subject it arrived on; `None` if the subject did not name
    /// a valid table (then the event is quarantined as `wrong_subject`).
    pub subject_table: Option<TableId>,
    /// JetStream stream sequence: the House's arrival order.
    pub stream_seq: u64,
    pub received_at_ns: i64,
    /// The device signature that came with it (NATS headers), if any.
    pub provenance: crate::provenance::Provenance,
}

/// What happened to one message. `append_batch` returns one per input, in input order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Appended {
    Stored {
        table: TableId,
        seq: Seq,
        hash: Hash32,
    },
    /// The same (table, seq, hash) is already stored: nothing written.
    Duplicate {
        table: TableId,
        seq: Seq,
    },
    /// Beyond a gap: kept durably and appended when `missing_from..=missing_to` arrive.
    /// `since_ns` is the receive time of the table's oldest held event.
    Held {
        table: TableId,
        seq: Seq,
        missing_from: Seq,
        missing_to: Seq,
        since_ns: i64,
    },
    Quarantined {
        id: u64,
        reason: &'static str,
    },
    /// The same delivery (stream seq and bytes) is already in quarantine under `id` (NATS
    /// delivered it again), or was counted as a repeat of it: nothing written.
    QuarantinedBefore {
        id: u64,
    },
    /// The same bytes refused for the same reason as entry `id`, under a later stream seq
    /// (a device sending a refused message again): counted against `id`, not stored again.
    Repeated {
        id: u64,
        reason: &'static str,
    },
    /// Refused past a quarantine bound (`quarantine::Bound`): not stored, counted by its
    /// source and reason (`Ledger::quarantine_overflows`). Its bytes stay in the stream.
    Overflowed {
        reason: &'static str,
        bound: Bound,
    },
}

/// What one `Ledger::append` call did: one outcome per message, in input order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcomes {
    pub events: Vec<Appended>,
    pub checkpoints: Vec<crate::attest::CheckpointOutcome>,
}

/// Whose signatures a call checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// As the ledger requires (`Ledger::require_signed_events`).
    Check,
    /// None: recovery re-appends records admitted before they were written.
    Recovered,
}

/// A held event (in memory and in `Space::Pending`).
#[derive(Debug, Clone)]
pub(crate) struct Held {
    /// `event_hash(event.prev, bytes)`: what its hash will be if its prev is right.
    pub hash: Hash32,
    pub stream_seq: u64,
    pub received_at_ns: i64,
    pub bytes: Vec<u8>,
}

/// Stable quarantine reason codes (stored; never rename).
pub mod reason {
    pub const UNDECODABLE: &str = "undecodable";
    pub const WRONG_SUBJECT: &str = "wrong_subject";
    pub const PREV_MISMATCH: &str = "prev_mismatch";
    /// A different event at a stored seq with the same prev: two branches of one chain.
    pub const FORK: &str = "fork";
    /// A different event at a stored seq with a different prev too: the device rewound.
    pub const SEQ_BACKWARDS: &str = "seq_backwards";
    pub const CLOCK_SKEW: &str = "clock_skew";
    pub const SEQ_TOO_FAR_AHEAD: &str = "seq_too_far_ahead";
    pub const PENDING_FULL: &str = "pending_full";
    /// Seq at or below the head but no stored event there: the ledger is damaged (verify).
    pub const MISSING_BELOW_HEAD: &str = "missing_below_head";
    /// Longer than `schemas::codec::EVENT_LEN_MAX`: refused before decoding.
    pub const OVERSIZED: &str = "oversized";
    /// An event kind this build does not know (a bincode variant index beyond the catalogue,
    /// a JSON body `type` not in it): perhaps a newer device. Kept verbatim.
    pub const UNKNOWN_KIND: &str = "unknown_kind";
    /// An event after its table's `TableClosed` (only a `TableOpened` reopens a table).
    pub const TABLE_CLOSED: &str = "table_closed";
    /// No device signature, or signature headers that do not read, on a ledger that
    /// requires signed events (`Ledger::require_signed_events`).
    pub const UNSIGNED: &str = "unsigned";
    /// Signed by a device the chain has no current key for (never enrolled, revoked, or
    /// an enrollment header no trusted admin signed).
    pub const SIGNER_UNKNOWN: &str = "signer_unknown";
    /// The signature does not verify under the signer's key: not the table's device.
    pub const SIGNATURE_INVALID: &str = "signature_invalid";
    /// Its table is fenced as damaged (`fence`): kept verbatim until it is unfenced.
    pub const TABLE_FENCED: &str = "table_fenced";
    /// A re-sync (`schemas::resync`) that is not applied: malformed, not signed by a
    /// trusted admin, stale (the head moved), or naming an entry that is not the next event.
    pub const RESYNC_REFUSED: &str = "resync_refused";
}

pub(crate) fn encode_held(h: &Held) -> Vec<u8> {
    let mut w = W::default();
    w.raw(&h.hash.0)
        .u64(h.stream_seq)
        .i64(h.received_at_ns)
        .bytes(&h.bytes);
    w.0
}

pub(crate) fn decode_held(v: &[u8]) -> Result<Held, Error> {
    let mut r = record::R::new(v);
    Ok(Held {
        hash: r.hash()?,
        stream_seq: r.u64()?,
        received_at_ns: r.i64()?,
        bytes: r.bytes()?.to_vec(),
    })
}

/// One table's working state in a call: one map entry per table, so an event costs one
/// lookup of its table, not one per map (callgrind: per-table maps were a tenth of the
/// writer's instructions, in string comparisons).
struct TableCall {
    head: ChainHead,
    /// The receipt at `head` (`schemas::digest::receipt_next` over the stored events).
    /// `None` only for a head written before receipts whose records could not be read to
    /// compute it: the table goes on without one (its head stays in the old form) rather
    /// than stopping every table's ingest; `verify` names the damage.
    receipt: Option<Hash32>,
    /// Held events by seq (the table's whole hold, loaded from `State`).
    pending: BTreeMap<u64, Held>,
    /// Events this call stores, consecutive from the head at the call's start.
    new_events: Vec<StoredEvent>,
    /// Whether the chain ends with `TableClosed`, once known (`is_closed`).
    closed: Option<bool>,
}

/// Working state of one call; committed to `State` only after the store commit succeeds.
pub(crate) struct Call {
    tables: BTreeMap<TableId, TableCall>,
    pending_bytes: usize,
    pub(crate) ops: Vec<Op>,
    pub(crate) counters: BTreeMap<String, u64>,
    quarantined: u64,
    next_quarantine_id: u64,
    quarantine_head: crate::quarantine::QuarantineHead,
    /// The entries this call quarantines, by delivery.
    pub(crate) quarantined_now: std::collections::HashMap<crate::quarantine::DeliveryKey, u64>,
    /// The entries this call quarantines or counts a repeat against, by content.
    refused_now: std::collections::HashMap<crate::quarantine::ContentKey, Refusal>,
    /// This call's new entries per source and minute, and the quarantine's bytes after it.
    window: crate::quarantine::Window,
    quarantine_bytes: u64,
    /// Overflow counters this call changed, and the deliveries it counted (by bound).
    overflow_now: BTreeMap<(String, String), crate::quarantine::Overflow>,
    overflowed_now: std::collections::HashMap<crate::quarantine::DeliveryKey, u64>,
    /// `TableOpened` events this call stores: seq -> chain hash, per table (`config`).
    pub(crate) configs: BTreeMap<TableId, BTreeMap<u64, Hash32>>,
    /// Device keys enrolled or revoked by this call's events.
    pub(crate) devices: BTreeMap<(TableId, schemas::DeviceId), crate::attest::DeviceKey>,
    /// Whether events must carry their device's signature (`provenance`): the ledger's
    /// requirement, off for recovery's re-appends of records admitted before.
    checks_signatures: bool,
    /// Whether recovery re-appends this call (`Admission::Recovered`).
    pub(crate) recovering: bool,
}

impl Call {
    pub(crate) fn begin(state: &crate::State) -> Call {
        Call {
            tables: BTreeMap::new(),
            pending_bytes: state.pending_bytes,
            ops: Vec::new(),
            counters: BTreeMap::new(),
            quarantined: 0,
            next_quarantine_id: state.next_quarantine_id,
            quarantine_head: state.quarantine_head,
            quarantined_now: Default::default(),
            refused_now: Default::default(),
            window: crate::quarantine::Window::starting(state.quarantine_window.minute()),
            quarantine_bytes: state.quarantine_bytes,
            overflow_now: BTreeMap::new(),
            overflowed_now: Default::default(),
            configs: BTreeMap::new(),
            devices: BTreeMap::new(),
            checks_signatures: state.require_signed,
            recovering: false,
        }
    }

    /// The state of a table this call has loaded (`Ledger::one` loads it at the table's
    /// first message). A table not loaded is a bug in this module.
    fn table(&self, table: &TableId) -> &TableCall {
        self.tables
            .get(table)
            .expect("a table's state is loaded before its events are decided")
    }

    fn table_mut(&mut self, table: &TableId) -> &mut TableCall {
        self.tables
            .get_mut(table)
            .expect("a table's state is loaded before its events are decided")
    }

    /// The table's chain head as this call leaves it so far (its stored events included);
    /// `None` for a table with no event.
    pub(crate) fn head<'a>(
        &'a self,
        state: &'a crate::State,
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
        state: &crate::State,
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
        state: &'a crate::State,
        table: &TableId,
        device: &schemas::DeviceId,
    ) -> Option<&'a crate::attest::DeviceKey> {
        let k = (table.clone(), device.clone());
        self.devices.get(&k).or_else(|| state.devices.get(&k))
    }

    /// Whether this call checks its events' signatures (`provenance`).
    pub(crate) fn checks_signatures(&self) -> bool {
        self.checks_signatures
    }

    /// Whether this call stores any event.
    fn stores_events(&self) -> bool {
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
    pub(crate) fn publish(self, state: &mut crate::State) {
        for (t, tc) in self.tables {
            if let Some(closed) = tc.closed {
                state.closed.insert(t.clone(), closed);
            }
            if tc.pending.is_empty() {
                state.pending.remove(&t);
            } else {
                state.pending.insert(t.clone(), tc.pending);
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
        state.pending_bytes = self.pending_bytes;
        for (r, n) in self.counters {
            *state.counters.entry(r).or_insert(0) += n;
        }
        state.quarantined += self.quarantined;
        state.quarantine_window.merge(&self.window);
        state.quarantine_bytes = self.quarantine_bytes;
        state.overflows.extend(self.overflow_now);
        for (delivery, bound) in self.overflowed_now {
            state.recent_overflowed.insert(delivery, bound);
        }
        state.next_quarantine_id = self.next_quarantine_id;
        state.quarantine_head = self.quarantine_head;
        let mut now: Vec<_> = self.quarantined_now.into_iter().collect();
        now.sort_unstable_by_key(|(_, id)| *id);
        for (key, id) in now {
            state.recent_quarantine.insert(key, id);
        }
        let mut refused: Vec<_> = self.refused_now.into_iter().collect();
        refused.sort_unstable_by_key(|(_, r)| r.id);
        for (key, r) in refused {
            state.recent_refusals.insert(key, r);
        }
        for (k, d) in self.devices {
            state.devices.insert(k, d);
        }
    }
}

impl Ledger {
    /// Appends a batch of event messages (in arrival order) and returns one outcome per
    /// message. Nothing is durable until `flush`. An `Err` means nothing of this call was
    /// written.
    pub fn append_batch(&self, batch: &[Incoming]) -> Result<Vec<Appended>, Error> {
        Ok(self.append(batch, &[])?.events)
    }

    /// `append_batch` for recovery: no signature checks (`Admission::Recovered`).
    pub(crate) fn append_recovered(&self, batch: &[Incoming]) -> Result<Vec<Appended>, Error> {
        Ok(self.append_as(batch, &[], Admission::Recovered)?.events)
    }

    /// Appends event messages, then keeps the signed checkpoints that arrived with them
    /// (each in arrival order), in one commit: a checkpoint may sign an event of this same
    /// call. One outcome per message. Nothing is durable until `flush`; an `Err` means
    /// nothing of this call was written.
    ///
    /// Why one commit and not events then checkpoints: each commit is a value-log fsync
    /// and a sled batch, and a floor signs a checkpoint every round, so a second commit per
    /// ingest group cost about as much again as the events' own (BENCHMARKS.md).
    ///
    /// A failure that a damaged table causes fences that table (`fence`) and the call is
    /// tried once more, so the other tables go on.
    pub fn append(&self, events: &[Incoming], checkpoints: &[Incoming]) -> Result<Outcomes, Error> {
        match self.append_as(events, checkpoints, Admission::Check) {
            Err(e) if self.fence_after_failure(&[events, checkpoints], &e) => {
                self.append_as(events, checkpoints, Admission::Check)
            }
            other => other,
        }
    }

    /// `append`, for recovery too: `Admission::Recovered` re-appends records of the
    /// ledger's own value log, whose signatures were checked before they were written.
    pub(crate) fn append_as(
        &self,
        events: &[Incoming],
        checkpoints: &[Incoming],
        admission: Admission,
    ) -> Result<Outcomes, Error> {
        let (mut state, mut call) = self.begin_call(events.len() + checkpoints.len())?;
        call.checks_signatures &= admission == Admission::Check;
        call.recovering = admission == Admission::Recovered;
        let pre = match call.checks_signatures {
            true => crate::provenance::precheck(&state, &mut self.key_cache(), events),
            false => crate::provenance::Prechecked::none(events.len()),
        };
        let mut out = Vec::with_capacity(events.len());
        for (i, msg) in events.iter().enumerate() {
            out.push(self.one(&state, &mut call, msg, pre.get(i))?);
        }
        let call_id = state.next_call_id;
        let (added_bytes, arrival) = self.write_records(&mut call, call_id, &state.arrival_head)?;
        let (kept, attested) = self.decide_checkpoints(&state, &mut call, checkpoints)?;
        let bytes_total = state.bytes_total + added_bytes;
        for name in crate::attest::reason::PERSISTED_COUNTERS {
            if let Some(n) = call.counters.get(*name) {
                let total = state.counters.get(*name).copied().unwrap_or(0) + n;
                call.ops.push(Op::Put(
                    Space::Meta,
                    crate::attest::reason::counter_key(name),
                    total.to_be_bytes().to_vec(),
                ));
            }
        }
        if call.stores_events() {
            call.ops.push(Op::Put(
                Space::Meta,
                b"call_id".to_vec(),
                (call_id + 1).to_be_bytes().to_vec(),
            ));
            call.ops.push(Op::Put(
                Space::Meta,
                b"bytes_total".to_vec(),
                bytes_total.to_be_bytes().to_vec(),
            ));
        }
        self.store.commit(call.take_ops())?;

        // Committed: publish the new state.
        if call.stores_events() {
            state.next_call_id = call_id + 1;
            state.bytes_total = bytes_total;
        }
        if let Some(a) = arrival {
            state.arrival_head = a;
        }
        call.publish(&mut state);
        for (t, a) in attested {
            if state.attested.get(&t).is_none_or(|old| old.seq < a.seq) {
                state.attested.insert(t, a);
            }
        }
        Ok(Outcomes {
            events: out,
            checkpoints: kept,
        })
    }

    /// Starts a write of `len` messages: refuses a batch over `APPEND_BATCH_LEN_MAX`, then
    /// takes the writer's lock (held until the call publishes its state).
    pub(crate) fn begin_call(
        &self,
        len: usize,
    ) -> Result<(std::sync::MutexGuard<'_, crate::State>, Call), Error> {
        if len > APPEND_BATCH_LEN_MAX {
            return Err(Error::BatchTooLarge {
                len,
                max: APPEND_BATCH_LEN_MAX,
            });
        }
        let state = self.lock();
        let call = Call::begin(&state);
        Ok((state, call))
    }

    /// Decides one message (`pre`: its signature's precheck).
    fn one(
        &self,
        state: &crate::State,
        call: &mut Call,
        msg: &Incoming,
        pre: Option<(schemas::attest::PublicKey, bool)>,
    ) -> Result<Appended, Error> {
        let event = match self.before_chain(state, call, msg, pre)? {
            Ok(event) => event,
            Err(decided) => return Ok(decided),
        };
        // Borrowed, not cloned: per event, table id clones and map lookups were a fifth of
        // the writer's own instructions (callgrind).
        let table = &event.table;
        let head_seq = self.load_table(state, call, table);
        let seq = event.seq.0;
        let hash = event_hash(&event.prev, &msg.bytes);
        if seq <= head_seq {
            return self.at_stored_seq(state, call, msg, &event, hash);
        }
        // The same event already held, delivered again (maybe much later): recognised
        // before its times are judged again, as a duplicate of a stored event is.
        let pending = &call.table(table).pending;
        if pending.get(&seq).is_some_and(|h| h.hash == hash) {
            return Ok(held_outcome(call, table, seq));
        }
        if let Some(text) = skew_refusal(state, msg, &event) {
            return Ok(quarantine(state, call, msg, reason::CLOCK_SKEW, text));
        }
        if seq == head_seq + 1 {
            return self.append_next(state, call, msg, &event, hash, head_seq);
        }
        Ok(hold(state, call, msg, &event, hash, head_seq))
    }

    /// The checks before the chain: a re-sync, the decode, the subject, the signature and
    /// the fence. `Err` holds the message's outcome when one of them decides it.
    fn before_chain(
        &self,
        state: &crate::State,
        call: &mut Call,
        msg: &Incoming,
        pre: Option<(schemas::attest::PublicKey, bool)>,
    ) -> Result<Result<schemas::Event, Appended>, Error> {
        if let Some(parsed) = schemas::resync::Resync::from_wire(&msg.bytes) {
            return self.resync(state, call, msg, parsed).map(Err);
        }
        let event = match codec::decode(&msg.bytes) {
            Ok((e, _)) => e,
            Err(e) => {
                let code = crate::classify::decode_reason(&e);
                return Ok(Err(quarantine(state, call, msg, code, e.to_string())));
            }
        };
        if msg.subject_table.as_ref() != Some(&event.table) {
            let on = msg.subject_table.as_ref().map(|t| t.to_string());
            let text = format!(
                "event of table {} arrived on the subject of {}",
                event.table,
                on.unwrap_or_else(|| "no valid table".into())
            );
            return Ok(Err(quarantine(
                state,
                call,
                msg,
                reason::WRONG_SUBJECT,
                text,
            )));
        }
        if let Some(refused) = crate::provenance::refused(state, call, msg, &event, pre) {
            return Ok(Err(refused));
        }
        if let Some(f) = state.fenced.get(&event.table) {
            let text = crate::fence::fenced_text(&event.table, f, Some(event.seq), false);
            return Ok(Err(quarantine(
                state,
                call,
                msg,
                reason::TABLE_FENCED,
                text,
            )));
        }
        Ok(Ok(event))
    }

    /// The event at head + 1: appended if the table is open and it names the head.
    fn append_next(
        &self,
        state: &crate::State,
        call: &mut Call,
        msg: &Incoming,
        event: &schemas::Event,
        hash: Hash32,
        head_seq: u64,
    ) -> Result<Appended, Error> {
        let (table, seq) = (&event.table, event.seq.0);
        debug_assert_eq!(seq, head_seq + 1);
        let reopens = matches!(event.body, schemas::EventBody::TableOpened { .. });
        if !reopens && self.is_closed(state, call, table, head_seq)? {
            let text = format!("seq {seq}: table {table} was closed at seq {head_seq}");
            return Ok(quarantine(state, call, msg, reason::TABLE_CLOSED, text));
        }
        let new_head = match call.table(table).head.next_hashed(event, hash) {
            Ok(h) => h,
            Err(e) => {
                let text = e.to_string();
                return Ok(quarantine(state, call, msg, reason::PREV_MISMATCH, text));
            }
        };
        let stored = Appended::Stored {
            table: table.clone(),
            seq: event.seq,
            hash: new_head.hash,
        };
        push_event(state, call, event, new_head, msg);
        if !call.table(table).pending.is_empty() {
            release_held(state, call, table);
        }
        Ok(stored)
    }

    /// Loads `table`'s state into `call` at its first message, and returns its head seq.
    pub(crate) fn load_table(&self, state: &crate::State, call: &mut Call, table: &TableId) -> u64 {
        match call.tables.get(table) {
            Some(tc) => tc.head.seq.0,
            None => {
                let head = state
                    .heads
                    .get(table)
                    .cloned()
                    .unwrap_or_else(|| ChainHead::empty(table.clone()));
                let seq = head.seq.0;
                let receipt = match state.receipts.get(table) {
                    Some(r) => Some(*r),
                    None if seq == 0 => Some(Hash32::ZERO),
                    None if state.receiptless.contains(table) => None,
                    // Written before receipts: computed once from the records.
                    None => {
                        match crate::arrival::receipt_of_table(self.store.as_ref(), table, seq) {
                            Ok(r) => Some(r),
                            Err(e) => {
                                tracing::error!(%table, error = %e, "no receipt for a head written before receipts: its records do not read (run verify); the table's head stays without one");
                                None
                            }
                        }
                    }
                };
                let tc = TableCall {
                    head,
                    receipt,
                    pending: state.pending.get(table).cloned().unwrap_or_default(),
                    new_events: Vec::new(),
                    closed: None,
                };
                call.tables.insert(table.clone(), tc);
                seq
            }
        }
    }

    /// Whether `table`'s chain (head at `head_seq`) ends with `TableClosed`: known from this
    /// call's events or an earlier call's, else read once from the stored head event.
    fn is_closed(
        &self,
        state: &crate::State,
        call: &mut Call,
        table: &TableId,
        head_seq: u64,
    ) -> Result<bool, Error> {
        if let Some(c) = call
            .table(table)
            .closed
            .or_else(|| state.closed.get(table).copied())
        {
            return Ok(c);
        }
        let closed = match head_seq {
            0 => false,
            _ => self.stored_event(table, head_seq)?.is_some_and(|e| {
                codec::decode(&e.bytes)
                    .is_ok_and(|(ev, _)| matches!(ev.body, schemas::EventBody::TableClosed))
            }),
        };
        call.table_mut(table).closed = Some(closed);
        Ok(closed)
    }

    /// A seq at or below the head: a duplicate, a fork or a rewound device.
    fn at_stored_seq(
        &self,
        state: &crate::State,
        call: &mut Call,
        msg: &Incoming,
        event: &Event,
        hash: Hash32,
    ) -> Result<Appended, Error> {
        let table = &event.table;
        let seq = event.seq.0;
        let in_call = call
            .tables
            .get(table)
            .and_then(|tc| tc.new_events.iter().find(|e| e.seq.0 == seq).cloned());
        let stored = match in_call {
            Some(e) => Some(e),
            None => self.stored_event(table, seq)?,
        };
        let Some(stored) = stored else {
            let text = format!("seq {seq} is at or below the head but no event is stored there");
            return Ok(quarantine(
                state,
                call,
                msg,
                reason::MISSING_BELOW_HEAD,
                text,
            ));
        };
        if stored.hash == hash {
            return Ok(Appended::Duplicate {
                table: table.clone(),
                seq: event.seq,
            });
        }
        let stored_prev = codec::decode(&stored.bytes).ok().map(|(e, _)| e.prev);
        let text = format!(
            "seq {seq}: stored event {} differs from this one {hash}",
            stored.hash
        );
        let code = if stored_prev == Some(event.prev) {
            reason::FORK
        } else {
            reason::SEQ_BACKWARDS
        };
        tracing::error!(%table, seq, code, "different event at a stored seq");
        Ok(quarantine(state, call, msg, code, text))
    }

    /// Builds the records and index writes of this call's new events. Returns bytes added
    /// and, when it stores events, the call's arrival hash (chained on `prev_arrival`).
    fn write_records(
        &self,
        call: &mut Call,
        call_id: u64,
        prev_arrival: &Hash32,
    ) -> Result<(u64, Option<Hash32>), Error> {
        let mut refs: Vec<Vec<u8>> = Vec::new();
        let mut arrival = crate::arrival::ArrivalHasher::new(prev_arrival, call_id);
        let mut min_stream = u64::MAX;
        let mut added = 0u64;
        for (table, tc) in &call.tables {
            if tc.new_events.is_empty() {
                continue;
            }
            // This table's rounds touched by the call, summarised once each at the end.
            let mut rounds: BTreeMap<RoundId, RoundSummary> = BTreeMap::new();
            for chunk in tc.new_events.chunks(RECORD_EVENTS_MAX) {
                let first = chunk[0].seq.0;
                let key = seq_key(table, first);
                for e in chunk {
                    arrival.event(&e.hash, e.stream_seq, e.received_at_ns);
                    min_stream = min_stream.min(e.stream_seq);
                    added += e.bytes.len() as u64;
                    let Some(r) = e.round else { continue };
                    let s = match rounds.entry(r) {
                        Entry::Occupied(o) => o.into_mut(),
                        Entry::Vacant(v) => {
                            let existing = self
                                .store
                                .get(Space::Round, &seq_key(table, r.0))?
                                .map(|v| RoundSummary::decode(r, &v))
                                .transpose()?;
                            let s = existing.unwrap_or(RoundSummary {
                                round: r,
                                first_seq: e.seq,
                                last_seq: e.seq,
                                first_occurred_at_ns: e.occurred_at_ns,
                                last_occurred_at_ns: e.occurred_at_ns,
                            });
                            if s.first_seq == e.seq {
                                // A new round: index its start time.
                                let mut tk = ord_i64(e.occurred_at_ns).to_vec();
                                tk.extend_from_slice(&seq_key(table, r.0));
                                call.ops.push(Op::Put(Space::RoundTime, tk, Vec::new()));
                            }
                            v.insert(s)
                        }
                    };
                    s.last_seq = e.seq;
                    s.last_occurred_at_ns = e.occurred_at_ns;
                }
                call.ops.push(Op::Put(
                    Space::Batch,
                    key.clone(),
                    record::encode_record(chunk),
                ));
                refs.push(key);
            }
            for (r, s) in rounds {
                call.ops
                    .push(Op::Put(Space::Round, seq_key(table, r.0), s.encode()));
            }
            call.ops.push(Op::Put(
                Space::Head,
                table_key(table),
                crate::read::encode_head(&tc.head, tc.receipt.as_ref()),
            ));
        }
        if refs.is_empty() {
            return Ok((added, None));
        }
        let arrival = arrival.finish();
        let mut k = min_stream.to_be_bytes().to_vec();
        k.extend_from_slice(&call_id.to_be_bytes());
        call.ops.push(Op::Put(
            Space::Arrival,
            k,
            crate::arrival::encode_entry(&refs, &arrival),
        ));
        call.ops.push(Op::Put(
            Space::Meta,
            crate::arrival::HEAD_KEY.to_vec(),
            crate::arrival::encode_head(call_id, &arrival),
        ));
        Ok((added, Some(arrival)))
    }
}

use crate::RoundSummary;

pub(crate) fn push_event(
    state: &crate::State,
    call: &mut Call,
    event: &Event,
    new_head: ChainHead,
    msg_like: &Incoming,
) {
    let table = &event.table;
    let hash = new_head.hash;
    let stored = StoredEvent {
        seq: event.seq,
        hash,
        stream_seq: msg_like.stream_seq,
        received_at_ns: msg_like.received_at_ns,
        occurred_at_ns: event.occurred_at_ns,
        round: event.round,
        bytes: msg_like.bytes.clone(),
    };
    let tc = call.table_mut(table);
    // Our own invariant: a table's events in a call are consecutive, from its head.
    assert_eq!(
        tc.head.seq.0 + 1,
        event.seq.0,
        "appended events are consecutive"
    );
    if let Some(r) = &mut tc.receipt {
        *r = schemas::digest::receipt_next(r, stored.stream_seq, stored.received_at_ns);
    }
    tc.new_events.push(stored);
    tc.closed = Some(matches!(event.body, schemas::EventBody::TableClosed));
    tc.head = new_head;
    crate::config::on_stored(call, event, &hash);
    crate::attest::on_stored(state, call, event);
}

/// Appends held events that now follow the head, until the next gap or a bad one.
pub(crate) fn release_held(state: &crate::State, call: &mut Call, table: &TableId) {
    loop {
        let tc = call.table_mut(table);
        let next = tc.head.seq.0 + 1;
        let Some(held) = tc.pending.remove(&next) else {
            return;
        };
        call.pending_bytes -= held.bytes.len();
        call.ops
            .push(Op::Remove(Space::Pending, seq_key(table, next)));
        let msg = Incoming {
            bytes: held.bytes,
            subject_table: Some(table.clone()),
            stream_seq: held.stream_seq,
            received_at_ns: held.received_at_ns,
            provenance: Default::default(),
        };
        let checked = codec::decode(&msg.bytes)
            .map_err(|e| ChainError::Undecodable {
                seq: next,
                source: e,
            })
            .and_then(|(event, _)| {
                let head = &call.table(table).head;
                head.next(&event, &msg.bytes).map(|h| (event, h))
            });
        match checked {
            // As in order (`Ledger::one`): nothing but a reopening follows a close.
            Ok((event, _))
                if call.table(table).closed == Some(true)
                    && !matches!(event.body, schemas::EventBody::TableOpened { .. }) =>
            {
                let text = format!(
                    "held seq {next}: table {table} was closed at seq {}",
                    next - 1
                );
                quarantine(state, call, &msg, reason::TABLE_CLOSED, text);
                return;
            }
            Ok((event, new_head)) => {
                tracing::info!(%table, seq = next, "held event appended: gap filled");
                push_event(state, call, &event, new_head, &msg);
            }
            Err(e) => {
                quarantine(
                    state,
                    call,
                    &msg,
                    reason::PREV_MISMATCH,
                    format!("held event: {e}"),
                );
                return;
            }
        }
    }
}

fn held_outcome(call: &Call, table: &TableId, seq: u64) -> Appended {
    let tc = call.table(table);
    let head = tc.head.seq.0;
    let pending = &tc.pending;
    let first_held = pending.keys().next().copied().unwrap_or(seq);
    let since_ns = pending
        .values()
        .map(|h| h.received_at_ns)
        .min()
        .unwrap_or(0);
    Appended::Held {
        table: table.clone(),
        seq: Seq(seq),
        missing_from: Seq(head + 1),
        missing_to: Seq(first_held.saturating_sub(1).max(head + 1)),
        since_ns,
    }
}

impl Ledger {
    /// Puts back a quarantine entry (its stored value, verbatim) that a commit the store
    /// lost had written (`recover`): under its own id, so alerts that named it still find
    /// it, unless that id now holds another entry or is below a stored one (ids are the
    /// quarantine chain's order), when it takes the next one. `None` when
    /// the same entry is already there (a recovery run again after a crash).
    pub(crate) fn restore_quarantined(&self, id: u64, value: &[u8]) -> Result<Option<u64>, Error> {
        let entry = crate::QuarantineEntry::decode(id, value)?;
        // A copy read back from the value log is checked like any stored bytes: an id at
        // the end of the id space has no next one.
        let Some(after) = id.checked_add(1) else {
            return Err(crate::record::corrupt(
                "a quarantine entry's copy names the last possible id",
            ));
        };
        let (mut state, mut call) = self.begin_call(1)?;
        let own = self.store.get(Space::Quarantine, &id.to_be_bytes())?;
        if own.as_deref() == Some(value) {
            return Ok(None);
        }
        // Put back under a later id by a recovery cut short? Only the entries after `id`
        // are looked at: what the lost commits wrote, and what came since. Equal values
        // are the same message: its stream seq and receive time are in it.
        for kv in self
            .store
            .range(Space::Quarantine, &after.to_be_bytes(), None)
        {
            if kv?.1 == value {
                return Ok(None);
            }
        }
        // Only above every stored id: ids follow the quarantine chain's order.
        let id = if own.is_none() && id >= call.next_quarantine_id {
            id
        } else {
            call.next_quarantine_id
        };
        call.next_quarantine_id = id + 1;
        call.quarantine_head = call.quarantine_head.next(id, value);
        call.ops.push(Op::Put(
            Space::Quarantine,
            id.to_be_bytes().to_vec(),
            value.to_vec(),
        ));
        let delivery = crate::quarantine::delivery_key(entry.stream_seq, &entry.bytes);
        call.quarantined_now.insert(delivery, id);
        // Put back, not new: it counts in the total, not against its source's minute.
        call.quarantine_bytes += entry.bytes.len() as u64;
        // Repeats count against the first entry of a content: one put back is the first
        // unless a recent entry has its content.
        let content: ContentKey = (entry.reason.clone(), delivery.1);
        if state.recent_refusals.get(&content).is_none() {
            let repeat = Repeat {
                count: 0,
                last_stream_seq: entry.stream_seq,
            };
            call.refused_now.insert(content, Refusal { id, repeat });
        }
        *call.counters.entry(entry.reason).or_insert(0) += 1;
        call.quarantined += 1;
        self.store.commit(call.take_ops())?;
        call.publish(&mut state);
        Ok(Some(id))
    }
}

pub(crate) fn quarantine(
    state: &crate::State,
    call: &mut Call,
    msg: &Incoming,
    code: &'static str,
    text: String,
) -> Appended {
    let delivery = crate::quarantine::delivery_key(msg.stream_seq, &msg.bytes);
    let before = call
        .quarantined_now
        .get(&delivery)
        .copied()
        .or_else(|| state.recent_quarantine.get(&delivery));
    if let Some(id) = before {
        tracing::info!(
            id,
            stream_seq = msg.stream_seq,
            reason = code,
            "delivered again; already quarantined, not again"
        );
        return Appended::QuarantinedBefore { id };
    }
    if let Some(bound) = overflowed_before(state, call, &delivery) {
        return Appended::Overflowed {
            reason: code,
            bound,
        };
    }
    let content: ContentKey = (code.to_string(), delivery.1);
    if let Some(seen) = repeat_of(state, call, msg, code, &content) {
        return seen;
    }
    if let Some(bound) = past_bound(state, call, msg) {
        return overflow(state, call, msg, code, bound);
    }
    let id = call.next_quarantine_id;
    call.next_quarantine_id += 1;
    let entry = crate::QuarantineEntry {
        id,
        reason: code.to_string(),
        text,
        subject_table: msg.subject_table.clone(),
        stream_seq: msg.stream_seq,
        received_at_ns: msg.received_at_ns,
        bytes: msg.bytes.clone(),
        repeats: 0,
    };
    tracing::warn!(id, reason = code, text = %entry.text, stream_seq = msg.stream_seq, "quarantined");
    let value = entry.encode();
    call.quarantine_head = call.quarantine_head.next(id, &value);
    call.ops
        .push(Op::Put(Space::Quarantine, id.to_be_bytes().to_vec(), value));
    *call.counters.entry(code.to_string()).or_insert(0) += 1;
    call.quarantined += 1;
    call.quarantined_now.insert(delivery, id);
    count_entry(call, msg);
    let repeat = Repeat {
        count: 0,
        last_stream_seq: msg.stream_seq,
    };
    call.refused_now.insert(content, Refusal { id, repeat });
    Appended::Quarantined { id, reason: code }
}

/// The bound a recent delivery of the same message went past (NATS delivered it again).
fn overflowed_before(
    state: &crate::State,
    call: &Call,
    delivery: &crate::quarantine::DeliveryKey,
) -> Option<Bound> {
    let code = call
        .overflowed_now
        .get(delivery)
        .copied()
        .or_else(|| state.recent_overflowed.get(delivery))?;
    Some(if code == Bound::Total as u64 {
        Bound::Total
    } else {
        Bound::SourceRate
    })
}

/// Counts a new entry against its source's minute and the quarantine's bytes.
fn count_entry(call: &mut Call, msg: &Incoming) {
    let len = msg.bytes.len() as u64;
    let source = crate::quarantine::source_of(msg.subject_table.as_ref());
    let minute = crate::quarantine::minute_of(msg.received_at_ns);
    call.window.add(minute, &source, 1, len);
    call.quarantine_bytes += len;
}

/// The bound a new entry for `msg` would go past, if any.
fn past_bound(state: &crate::State, call: &Call, msg: &Incoming) -> Option<Bound> {
    use crate::quarantine::{
        QUARANTINE_BYTES_MAX, SOURCE_BYTES_PER_MINUTE_MAX, SOURCE_ENTRIES_PER_MINUTE_MAX,
    };
    let len = msg.bytes.len() as u64;
    if call.quarantine_bytes + len > QUARANTINE_BYTES_MAX {
        return Some(Bound::Total);
    }
    let source = crate::quarantine::source_of(msg.subject_table.as_ref());
    let minute = crate::quarantine::minute_of(msg.received_at_ns);
    let (e0, b0) = state.quarantine_window.used(minute, &source);
    let (e1, b1) = call.window.used(minute, &source);
    let over =
        e0 + e1 + 1 > SOURCE_ENTRIES_PER_MINUTE_MAX || b0 + b1 + len > SOURCE_BYTES_PER_MINUTE_MAX;
    over.then_some(Bound::SourceRate)
}

/// A refusal past a bound: counted against its (source, reason), bytes left in the
/// stream. A redelivery of one counted already is not counted again.
fn overflow(
    state: &crate::State,
    call: &mut Call,
    msg: &Incoming,
    code: &'static str,
    bound: Bound,
) -> Appended {
    let mut key = (
        crate::quarantine::source_of(msg.subject_table.as_ref()),
        code.to_string(),
    );
    // Counters are bounded too: past the limit, new sources share one per reason.
    let known = call.overflow_now.contains_key(&key) || state.overflows.contains_key(&key);
    if !known && state.overflows.len() + call.overflow_now.len() >= OVERFLOW_COUNTERS_MAX {
        key.0 = "*".to_string();
    }
    let before = call
        .overflow_now
        .get(&key)
        .or_else(|| state.overflows.get(&key))
        .copied()
        .unwrap_or_default();
    let delivery = crate::quarantine::delivery_key(msg.stream_seq, &msg.bytes);
    call.overflowed_now.insert(delivery, bound as u64);
    let after = before.add(msg.stream_seq, &msg.bytes);
    if after.count.is_power_of_two() {
        tracing::warn!(source = %key.0, reason = code, bound = bound.as_str(), count = after.count, stream_seq = msg.stream_seq, "refused past a quarantine bound: counted, bytes left in the stream");
    }
    let stored = crate::quarantine::overflow_key(&key.0, &key.1);
    call.ops.push(Op::Put(Space::Meta, stored, after.encode()));
    call.overflow_now.insert(key, after);
    Appended::Overflowed {
        reason: code,
        bound,
    }
}

/// A refusal whose reason and bytes equal a recent entry's: a repeat, counted against that
/// entry, or, at or below the stream seq last counted, a redelivery of a counted one.
/// `None` when no recent entry has that content.
fn repeat_of(
    state: &crate::State,
    call: &mut Call,
    msg: &Incoming,
    code: &'static str,
    content: &ContentKey,
) -> Option<Appended> {
    let mut r = call
        .refused_now
        .get(content)
        .copied()
        .or_else(|| state.recent_refusals.get(content))?;
    if msg.stream_seq <= r.repeat.last_stream_seq {
        tracing::info!(
            id = r.id,
            stream_seq = msg.stream_seq,
            "repeat delivered again; counted before"
        );
        return Some(Appended::QuarantinedBefore { id: r.id });
    }
    r.repeat.count += 1;
    r.repeat.last_stream_seq = msg.stream_seq;
    // Logged once per power of two: a flood must not flood the log too.
    if r.repeat.count.is_power_of_two() {
        tracing::warn!(
            id = r.id,
            reason = code,
            repeats = r.repeat.count,
            stream_seq = msg.stream_seq,
            "refused again; counted against its entry"
        );
    }
    call.refused_now.insert(content.clone(), r);
    Some(Appended::Repeated {
        id: r.id,
        reason: code,
    })
}

/// Why an event's device time is refused: too far from its receive time.
fn skew_refusal(state: &crate::State, msg: &Incoming, event: &schemas::Event) -> Option<String> {
    let skew = event.occurred_at_ns.abs_diff(msg.received_at_ns);
    let skew_max_ns = state.clock_skew_max_ns;
    assert!(
        skew_max_ns > 0,
        "the skew limit is checked when set and loaded"
    );
    (skew > skew_max_ns as u64).then(|| {
        format!(
            "device time {} is {} ms from receive time {} (limit {} ms)",
            event.occurred_at_ns,
            skew / 1_000_000,
            msg.received_at_ns,
            skew_max_ns / 1_000_000
        )
    })
}

/// An event beyond head + 1: held until the gap before it fills, within the bounds.
fn hold(
    state: &crate::State,
    call: &mut Call,
    msg: &Incoming,
    event: &schemas::Event,
    hash: Hash32,
    head_seq: u64,
) -> Appended {
    let (table, seq) = (&event.table, event.seq.0);
    debug_assert!(seq > head_seq + 1);
    if seq - head_seq > GAP_LEN_MAX {
        let text = format!("seq {seq} is more than {GAP_LEN_MAX} beyond the head {head_seq}");
        return quarantine(state, call, msg, reason::SEQ_TOO_FAR_AHEAD, text);
    }
    let pending = &call.table(table).pending;
    if let Some(h) = pending.get(&seq) {
        // A different event (the same one was recognised before).
        let text = format!(
            "seq {seq}: held event {} differs from this one {hash}",
            h.hash
        );
        return quarantine(state, call, msg, reason::FORK, text);
    }
    if pending.len() >= PENDING_PER_TABLE_MAX
        || call.pending_bytes + msg.bytes.len() > PENDING_BYTES_MAX
    {
        let text = format!(
            "cannot hold seq {seq}: {} held for this table (max {PENDING_PER_TABLE_MAX}), {} bytes held (max {PENDING_BYTES_MAX})",
            pending.len(),
            call.pending_bytes
        );
        return quarantine(state, call, msg, reason::PENDING_FULL, text);
    }
    let held = Held {
        hash,
        stream_seq: msg.stream_seq,
        received_at_ns: msg.received_at_ns,
        bytes: msg.bytes.clone(),
    };
    call.ops.push(Op::Put(
        Space::Pending,
        seq_key(table, seq),
        encode_held(&held),
    ));
    call.pending_bytes += held.bytes.len();
    call.table_mut(table).pending.insert(seq, held);
    tracing::warn!(%table, seq, head = head_seq, "gap: event held");
    held_outcome(call, table, seq)
}
