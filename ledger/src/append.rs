//! The append path: decode, check subject, duplicates, forks, clock, gaps and the chain,
//! then write one record per table and one atomic commit. Synchronous, no NATS.

use crate::call::{Call, TableCall};
use crate::faces::Writer;
use crate::quarantine::{ContentKey, Refusal, Repeat};
use crate::record::{self, ord_i64, seq_key, table_key};
use crate::refuse::quarantine;
use crate::store::{Op, Space};
use crate::types::{encode_held, reason, Admission, Appended, Held, Incoming, Outcomes};
use crate::{
    error::Error, limits::APPEND_BATCH_LEN_MAX, limits::GAP_LEN_MAX, limits::PENDING_BYTES_MAX,
    limits::PENDING_PER_TABLE_MAX, limits::RECORD_EVENTS_MAX, owner::Ledger, record::StoredEvent,
};
use schemas::{
    chain::event_hash, codec, ChainError, ChainHead, Event, Hash32, RoundId, Seq, TableId,
};
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

impl Ledger {
    /// `append_batch` for recovery: no signature checks (`Admission::Recovered`).
    pub(crate) fn append_recovered(&self, batch: &[Incoming]) -> Result<Vec<Appended>, Error> {
        Ok(self.append_as(batch, &[], Admission::Recovered)?.events)
    }

    /// One call of `append`, then the effects of the admin acts it took.
    fn append_call(
        &self,
        events: &[Incoming],
        checkpoints: &[Incoming],
    ) -> Result<Outcomes, Error> {
        let out = match self.append_as(events, checkpoints, Admission::Check) {
            Err(e) if self.fence_after_failure(&[events, checkpoints], &e) => {
                self.append_as(events, checkpoints, Admission::Check)
            }
            other => other,
        };
        let out = out.inspect_err(|_| self.lock().admin_deferred.clear())?;
        self.run_deferred(&out)?;
        Ok(out)
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
        let (out, cps) =
            self.decide_in_stream_order(&state, &mut call, events, checkpoints, &pre)?;
        let call_id = state.next_call_id;
        let (added_bytes, arrival) = self.write_records(&mut call, call_id, &state.arrival_head)?;
        let (kept, attested) = cps.finish();
        let bytes_total = state.bytes_total + added_bytes;
        persist_counters(&state, &mut call);
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
            if state
                .trust
                .attested
                .get(&t)
                .is_none_or(|old| old.seq < a.seq)
            {
                state.trust.attested.insert(t, a);
            }
        }
        Ok(Outcomes {
            events: out,
            checkpoints: kept,
        })
    }

    /// Decides a call's messages, each checkpoint at its place in the stream, never by
    /// how deliveries were grouped into calls: every replica judges it alike.
    fn decide_in_stream_order(
        &self,
        state: &crate::owner::State,
        call: &mut Call,
        events: &[Incoming],
        checkpoints: &[Incoming],
        pre: &crate::provenance::Prechecked,
    ) -> Result<(Vec<Appended>, crate::attest::CallCheckpoints), Error> {
        let mut out = Vec::with_capacity(events.len());
        let mut cps = crate::attest::CallCheckpoints::new(checkpoints.len());
        for (i, msg) in events.iter().enumerate() {
            let from = cps.decided();
            let to = from + checkpoints_before(&checkpoints[from..], msg);
            for c in &checkpoints[from..to] {
                self.decide_checkpoint(state, call, &mut cps, c)?;
            }
            out.push(self.one(state, call, msg, pre.get(i))?);
        }
        for c in &checkpoints[cps.decided()..] {
            self.decide_checkpoint(state, call, &mut cps, c)?;
        }
        assert_eq!(
            (out.len(), cps.decided()),
            (events.len(), checkpoints.len()),
            "append: one outcome per message"
        );
        Ok((out, cps))
    }

    /// Starts a write of `len` messages: refuses a batch over `APPEND_BATCH_LEN_MAX`, then
    /// takes the writer's lock (held until the call publishes its state).
    pub(crate) fn begin_call(
        &self,
        len: usize,
    ) -> Result<(std::sync::MutexGuard<'_, crate::owner::State>, Call), Error> {
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
        state: &crate::owner::State,
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
        if let Some(text) = skew_refusal(call, msg, &event) {
            return Ok(quarantine(state, call, msg, reason::CLOCK_SKEW, text).into());
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
        state: &crate::owner::State,
        call: &mut Call,
        msg: &Incoming,
        pre: Option<(schemas::attest::PublicKey, bool)>,
    ) -> Result<Result<schemas::Event, Appended>, Error> {
        if let Some(parsed) = schemas::resync::Resync::from_wire(&msg.bytes) {
            return self.resync(state, call, msg, parsed).map(Err);
        }
        if schemas::admin::is_admin_act(&msg.bytes) {
            let parsed = schemas::admin::AdminAct::from_wire(&msg.bytes);
            return self.admin_act(state, call, msg, parsed).map(Err);
        }
        let event = match codec::decode(&msg.bytes) {
            Ok((e, _)) => e,
            Err(e) => {
                let code = crate::classify::decode_reason(&e);
                return Ok(Err(quarantine(state, call, msg, code, e.to_string()).into()));
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
            )
            .into()));
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
            )
            .into()));
        }
        Ok(Ok(event))
    }

    /// The event at head + 1: appended if the table is open and it names the head.
    fn append_next(
        &self,
        state: &crate::owner::State,
        call: &mut Call,
        msg: &Incoming,
        event: &schemas::Event,
        hash: Hash32,
        head_seq: u64,
    ) -> Result<Appended, Error> {
        let (table, seq) = (&event.table, event.seq.0);
        assert_eq!(
            seq,
            head_seq + 1,
            "append: only the event at head + 1 extends a chain"
        );
        let reopens = matches!(event.body, schemas::EventBody::TableOpened { .. });
        if !reopens && self.is_closed(state, call, table, head_seq)? {
            let text = format!("seq {seq}: table {table} was closed at seq {head_seq}");
            return Ok(quarantine(state, call, msg, reason::TABLE_CLOSED, text).into());
        }
        let new_head = match call.table(table).head.next_hashed(event, hash) {
            Ok(h) => h,
            Err(e) => {
                let text = e.to_string();
                return Ok(quarantine(state, call, msg, reason::PREV_MISMATCH, text).into());
            }
        };
        let stored = Appended::Stored {
            table: table.clone(),
            seq: event.seq,
            hash: new_head.hash,
        };
        push_event(state, call, event, new_head, msg);
        assert_eq!(
            call.table(table).head.seq.0,
            seq,
            "append: the stored event is the table's head"
        );
        if !call.table(table).pending.is_empty() {
            release_held(state, call, table);
        }
        Ok(stored)
    }

    /// Loads `table`'s state into `call` at its first message, and returns its head seq.
    pub(crate) fn load_table(
        &self,
        state: &crate::owner::State,
        call: &mut Call,
        table: &TableId,
    ) -> u64 {
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
                    pending: state.held.by_table.get(table).cloned().unwrap_or_default(),
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
        state: &crate::owner::State,
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
            _ => self
                .reader()
                .stored_event(table, head_seq)?
                .is_some_and(|e| {
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
        state: &crate::owner::State,
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
            None => self.reader().stored_event(table, seq)?,
        };
        let Some(stored) = stored else {
            let text = format!("seq {seq} is at or below the head but no event is stored there");
            return Ok(quarantine(state, call, msg, reason::MISSING_BELOW_HEAD, text).into());
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
        Ok(quarantine(state, call, msg, code, text).into())
    }

    /// Builds the records and index writes of this call's new events. Returns bytes added
    /// and, when it stores events, the call's arrival hash (chained on `prev_arrival`).
    fn write_records(
        &self,
        call: &mut Call,
        call_id: u64,
        prev_arrival: &Hash32,
    ) -> Result<(u64, Option<Hash32>), Error> {
        let mut written = Written {
            refs: Vec::new(),
            arrival: crate::arrival::ArrivalHasher::new(prev_arrival, call_id),
            min_stream: u64::MAX,
            added_bytes: 0,
        };
        for (table, tc) in &call.tables {
            if !tc.new_events.is_empty() {
                self.table_records(&mut call.ops, &mut written, table, tc)?;
            }
        }
        if written.refs.is_empty() {
            return Ok((written.added_bytes, None));
        }
        let arrival = written.arrival.finish();
        let mut k = written.min_stream.to_be_bytes().to_vec();
        k.extend_from_slice(&call_id.to_be_bytes());
        let entry = crate::arrival::encode_entry(&written.refs, &arrival);
        call.ops.push(Op::Put(Space::Arrival, k, entry));
        call.ops.push(Op::Put(
            Space::Meta,
            crate::arrival::HEAD_KEY.to_vec(),
            crate::arrival::encode_head(call_id, &arrival),
        ));
        Ok((written.added_bytes, Some(arrival)))
    }

    /// One table's new events as records of at most `RECORD_EVENTS_MAX`, the summaries of
    /// the rounds they touch, and its head.
    fn table_records(
        &self,
        ops: &mut Vec<Op>,
        written: &mut Written,
        table: &TableId,
        tc: &TableCall,
    ) -> Result<(), Error> {
        // This table's rounds touched by the call, summarised once each at the end.
        let mut rounds: BTreeMap<RoundId, RoundSummary> = BTreeMap::new();
        assert!(
            tc.new_events
                .windows(2)
                .all(|w| w[1].seq.0 == w[0].seq.0 + 1),
            "append: a call's events of a table are consecutive"
        );
        assert_eq!(
            tc.new_events.last().map(|e| e.seq),
            Some(tc.head.seq),
            "append: the head written is the last event stored"
        );
        for chunk in tc.new_events.chunks(RECORD_EVENTS_MAX) {
            let key = seq_key(table, chunk[0].seq.0);
            for e in chunk {
                written
                    .arrival
                    .event(&e.hash, e.stream_seq, e.received_at_ns);
                written.min_stream = written.min_stream.min(e.stream_seq);
                written.added_bytes += e.bytes.len() as u64;
                if let Some(r) = e.round {
                    let s = self.round_summary(ops, &mut rounds, table, r, e)?;
                    s.last_seq = e.seq;
                    s.last_occurred_at_ns = e.occurred_at_ns;
                }
            }
            ops.push(Op::Put(
                Space::Batch,
                key.clone(),
                record::encode_record(chunk),
            ));
            written.refs.push(key);
        }
        for (r, s) in rounds {
            ops.push(Op::Put(Space::Round, seq_key(table, r.0), s.encode()));
        }
        let head = crate::read::encode_head(&tc.head, tc.receipt.as_ref());
        ops.push(Op::Put(Space::Head, table_key(table), head));
        Ok(())
    }

    /// The summary of round `r` as this call extends it: the stored one, or a new round
    /// starting at `e` (its start time indexed).
    fn round_summary<'r>(
        &self,
        ops: &mut Vec<Op>,
        rounds: &'r mut BTreeMap<RoundId, RoundSummary>,
        table: &TableId,
        r: RoundId,
        e: &StoredEvent,
    ) -> Result<&'r mut RoundSummary, Error> {
        let v = match rounds.entry(r) {
            Entry::Occupied(o) => return Ok(o.into_mut()),
            Entry::Vacant(v) => v,
        };
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
            ops.push(Op::Put(Space::RoundTime, tk, Vec::new()));
        }
        Ok(v.insert(s))
    }
}

impl Writer<'_> {
    /// Appends a batch of event messages (in arrival order) and returns one outcome per
    /// message. Nothing is durable until `flush`. An `Err` means nothing of this call was
    /// written.
    pub fn append_batch(&self, batch: &[Incoming]) -> Result<Vec<Appended>, Error> {
        Ok(self.append(batch, &[])?.events)
    }

    /// Appends event messages and keeps the signed checkpoints that arrived with them, in
    /// one commit: a checkpoint may sign an event of this same call. Both slices are in
    /// delivery order, which is stream order but for redeliveries. Each checkpoint is
    /// judged after the events before it in the stream and before the ones after it
    /// (events first on equal stream seqs), so how deliveries are grouped into calls never
    /// changes an outcome. One outcome per message. Nothing is durable until `flush`; an
    /// `Err` means nothing of this call was written.
    ///
    /// An admin act (`admin`) ends a call: the messages after it are appended by the
    /// next, once the act took effect and was flushed. An `Err` then means nothing after
    /// the last admin act taken was written.
    ///
    /// Why one commit and not events then checkpoints: each commit is a value-log fsync
    /// and a sled batch, and a floor signs a checkpoint every round, so a second commit per
    /// ingest group cost about as much again as the events' own (BENCHMARKS.md).
    ///
    /// A failure that a damaged table causes fences that table (`fence`) and the call is
    /// tried once more, so the other tables go on.
    pub fn append(&self, events: &[Incoming], checkpoints: &[Incoming]) -> Result<Outcomes, Error> {
        let mut out = Outcomes {
            events: Vec::with_capacity(events.len()),
            checkpoints: Vec::new(),
        };
        let (mut rest, mut cps) = (events, checkpoints);
        while let Some(at) = crate::admin::cut(rest) {
            let (now, later) = rest.split_at(at);
            let (cps_now, cps_later) = cps.split_at(checkpoints_before(cps, &later[0]));
            let part = self.append_call(now, cps_now)?;
            out.events.extend(part.events);
            out.checkpoints.extend(part.checkpoints);
            (rest, cps) = (later, cps_later);
        }
        let last = self.append_call(rest, cps)?;
        out.events.extend(last.events);
        out.checkpoints.extend(last.checkpoints);
        assert_eq!(
            (out.events.len(), out.checkpoints.len()),
            (events.len(), checkpoints.len()),
            "append: one outcome per message"
        );
        Ok(out)
    }
}

/// What a call's records add up to: their keys, the arrival hash over their events, the
/// lowest stream seq and the bytes added.
struct Written {
    refs: Vec<Vec<u8>>,
    arrival: crate::arrival::ArrivalHasher,
    min_stream: u64,
    added_bytes: u64,
}

use crate::read::RoundSummary;

/// Writes the new totals of the counters kept across reopens that this call moved.
fn persist_counters(state: &crate::owner::State, call: &mut Call) {
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
}

pub(crate) fn push_event(
    state: &crate::owner::State,
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
        *r = proofs::digest::receipt_next(r, stored.stream_seq, stored.received_at_ns);
    }
    tc.new_events.push(stored);
    tc.closed = Some(matches!(event.body, schemas::EventBody::TableClosed));
    tc.head = new_head;
    crate::config::on_stored(call, event, &hash);
    crate::attest::on_stored(state, call, event);
}

/// How many of `checkpoints`, from the first, came before `event` in the stream: the
/// step of a merge by stream seq. A tie (stream seqs not set, as in library calls) puts
/// the event first. A redelivery out of stream order stops the run where it stands.
pub(crate) fn checkpoints_before(checkpoints: &[Incoming], event: &Incoming) -> usize {
    checkpoints
        .iter()
        .take_while(|c| checkpoint_first(c, event))
        .count()
}

/// Whether checkpoint `c` is judged before `event`: it came first in the stream. The one
/// rule that orders a call's messages; a caller that splits a group into calls uses it too.
pub fn checkpoint_first(c: &Incoming, event: &Incoming) -> bool {
    c.stream_seq < event.stream_seq
}

/// Appends held events that now follow the head, until the next gap or a bad one.
pub(crate) fn release_held(state: &crate::owner::State, call: &mut Call, table: &TableId) {
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
        if state.quarantine.refusals.get(&content).is_none() {
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
/// Why an event's device time is refused: too far from its receive time.
fn skew_refusal(call: &Call, msg: &Incoming, event: &schemas::Event) -> Option<String> {
    let skew = event.occurred_at_ns.abs_diff(msg.received_at_ns);
    let skew_max_ns = call.clock_skew_max_ns;
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
    state: &crate::owner::State,
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
        return quarantine(state, call, msg, reason::SEQ_TOO_FAR_AHEAD, text).into();
    }
    let pending = &call.table(table).pending;
    if let Some(h) = pending.get(&seq) {
        // A different event (the same one was recognised before).
        let text = format!(
            "seq {seq}: held event {} differs from this one {hash}",
            h.hash
        );
        return quarantine(state, call, msg, reason::FORK, text).into();
    }
    if pending.len() >= PENDING_PER_TABLE_MAX
        || call.pending_bytes + msg.bytes.len() > PENDING_BYTES_MAX
    {
        let text = format!(
            "cannot hold seq {seq}: {} held for this table (max {PENDING_PER_TABLE_MAX}), {} bytes held (max {PENDING_BYTES_MAX})",
            pending.len(),
            call.pending_bytes
        );
        return quarantine(state, call, msg, reason::PENDING_FULL, text).into();
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
