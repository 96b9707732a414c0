//! Reads: heads, events by seq, rounds, device time and arrival order, quarantine, stats,
//! and export. Loading the in-memory state at open is here too.

use crate::faces::Reader;
pub use crate::quarantine::QuarantineEntry;
use crate::record::{self, be_u64, corrupt, ord_i64, seq_key, split_table_key, table_key, R, W};
use crate::store::{KvIter, Space};
use crate::types::RemovedRange;
use crate::{error::Error, owner::Ledger, record::StoredEvent};
use proofs::export::{ExportHeader, ExportSummary, ExportTable, EXPORT_FORMAT, EXPORT_VERSION};
use schemas::{ChainHead, Hash32, RoundId, Seq, TableId, GENESIS};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::io::Write;
use std::ops::RangeInclusive;

/// A round of play as indexed: its seq span and device-time span (of its first and last
/// event by seq).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundSummary {
    /// The round's id.
    pub round: RoundId,
    /// The seq of the round's first event.
    pub first_seq: Seq,
    /// The seq of the round's last event.
    pub last_seq: Seq,
    /// Device time of the first event by seq, UTC ns.
    pub first_occurred_at_ns: i64,
    /// Device time of the last event by seq, UTC ns.
    pub last_occurred_at_ns: i64,
}

impl RoundSummary {
    /// The stored form in the round index (`Space::Round`).
    pub fn encode(&self) -> Vec<u8> {
        let mut w = W::default();
        w.u64(self.first_seq.0)
            .u64(self.last_seq.0)
            .i64(self.first_occurred_at_ns)
            .i64(self.last_occurred_at_ns);
        w.0
    }
    pub(crate) fn decode(round: RoundId, v: &[u8]) -> Result<RoundSummary, Error> {
        let mut r = R::new(v);
        Ok(RoundSummary {
            round,
            first_seq: Seq(r.u64()?),
            last_seq: Seq(r.u64()?),
            first_occurred_at_ns: r.i64()?,
            last_occurred_at_ns: r.i64()?,
        })
    }
}

/// A table's first gap: what is missing, how many events wait behind it, since when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gap {
    /// The table whose chain has the gap.
    pub table: TableId,
    /// The first missing seq.
    pub missing_from: Seq,
    /// The last missing seq: the held events start after it.
    pub missing_to: Seq,
    /// How many events the table holds beyond the gap.
    pub held: usize,
    /// Receive time of the oldest held event of the table.
    pub since_ns: i64,
    /// The highest held seq (the lowest is `missing_to` + 1).
    pub held_last: Seq,
    /// Message bytes of the table's held events.
    pub held_bytes: u64,
}

/// Totals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stats {
    /// Tables with at least one stored event.
    pub tables: usize,
    /// Stored events across all tables.
    pub events: u64,
    /// Bytes of stored event bodies.
    pub bytes: u64,
    /// Quarantine entries stored.
    pub quarantined: u64,
    /// Events held beyond gaps across all tables.
    pub held: usize,
}

/// What to export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportSelection {
    /// `None`: every table.
    pub table: Option<TableId>,
    /// Which part of the chain to export.
    pub range: ExportRange,
    /// Most events the export may hold, whatever the range resolves to (`None`: no
    /// bound). Checked once the range is resolved, before a byte is written: a caller
    /// that holds the export in memory (the API) bounds it here, since a round range
    /// can cover a whole table.
    pub events_max: Option<u64>,
}

/// A range of one table's chain, or every event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExportRange {
    /// Every stored event.
    All,
    /// Clamped to what is stored.
    Seqs(RangeInclusive<u64>),
    /// From the first event of the first round to the last event of the last round present,
    /// including the non-round events between them (an export is a contiguous chain range).
    Rounds(RangeInclusive<u64>),
    /// Every stored event after the table's last day removed by retention; its anchor is
    /// that day's sealed head. `All` when no day was removed.
    AfterRemoved,
}

/// A table's `Space::Head` value: `seq (u64 BE) ++ hash ++ receipt` (`crate::arrival`), or
/// without the receipt (the form before receipts) when none could be computed.
pub(crate) fn encode_head(h: &ChainHead, receipt: Option<&Hash32>) -> Vec<u8> {
    let mut v = h.seq.0.to_be_bytes().to_vec();
    v.extend_from_slice(&h.hash.0);
    if let Some(r) = receipt {
        v.extend_from_slice(&r.0);
    }
    v
}

/// Reads a head value: the chain head, and its receipt unless the head was written before
/// receipts (40 bytes, no receipt).
pub(crate) fn decode_head(table: TableId, v: &[u8]) -> Result<(ChainHead, Option<Hash32>), Error> {
    if v.len() != 40 && v.len() != 72 {
        return Err(corrupt("head value length"));
    }
    let mut r = crate::record::R::new(&v[8..]);
    let head = ChainHead {
        table,
        seq: Seq(be_u64(&v[..8])?),
        hash: r.hash()?,
    };
    let receipt = if r.is_empty() { None } else { Some(r.hash()?) };
    Ok((head, receipt))
}

/// A round's summary with those of the rounds before and after it (`round_neighbours`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundNeighbours {
    /// The round before, by first seq; `None` for the table's first round.
    pub prev: Option<RoundSummary>,
    /// The round asked for.
    pub this: RoundSummary,
    /// The round after, by first seq; `None` for the table's last round.
    pub next: Option<RoundSummary>,
}

/// Events of one table in seq order, read record by record.
pub struct Events<'a> {
    inner: KvIter<'a>,
    /// The ledger's count of events decoded from records (`Reader::events_decoded`).
    decoded: &'a std::sync::atomic::AtomicU64,
    buf: VecDeque<StoredEvent>,
    range: RangeInclusive<u64>,
    done: bool,
}

impl Iterator for Events<'_> {
    type Item = Result<StoredEvent, Error>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            if let Some(e) = self.buf.pop_front() {
                if e.seq.0 < *self.range.start() {
                    continue;
                }
                if e.seq.0 > *self.range.end() {
                    self.done = true;
                    return None;
                }
                return Some(Ok(e));
            }
            match self.inner.next()? {
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Ok((_, v)) => match record::decode_record(&v) {
                    Ok(evs) => {
                        let n = evs.len() as u64;
                        self.decoded
                            .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
                        self.buf.extend(evs)
                    }
                    Err(e) => {
                        self.done = true;
                        return Some(Err(e));
                    }
                },
            }
        }
    }
}

/// Events of all tables in arrival order (JetStream stream sequence).
pub struct ArrivalOrder<'a> {
    ledger: &'a Ledger,
    entries: std::iter::Peekable<KvIter<'a>>,
    heap: BinaryHeap<Reverse<HeapItem>>,
    failed: bool,
}

/// (stream seq, table, seq, event): heap order is arrival order.
type HeapItem = (u64, TableId, u64, Box<StoredEventOrd>);

/// Wrapper so a `StoredEvent` can sit in the heap (ordered by the tuple before it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEventOrd(pub StoredEvent);
impl PartialOrd for StoredEventOrd {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for StoredEventOrd {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.0.stream_seq, self.0.seq).cmp(&(o.0.stream_seq, o.0.seq))
    }
}

impl Iterator for ArrivalOrder<'_> {
    type Item = Result<(TableId, StoredEvent), Error>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        loop {
            // Entries are keyed by their smallest stream seq: once the heap's smallest is
            // below the next entry's smallest, nothing later can precede it.
            let next_min = match self.entries.peek() {
                None => None,
                Some(Ok((k, _))) => Some(be_u64(k.get(..8).unwrap_or(&[])).unwrap_or(0)),
                Some(Err(_)) => Some(0),
            };
            let ready = match (self.heap.peek(), next_min) {
                (Some(Reverse((s, ..))), Some(m)) => *s < m,
                (Some(_), None) => true,
                (None, None) => return None,
                (None, Some(_)) => false,
            };
            if ready {
                let Reverse((_, table, _, e)) = self.heap.pop()?;
                return Some(Ok((table, e.0)));
            }
            match self.entries.next()? {
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
                Ok((_, v)) => {
                    if let Err(e) = self.load_entry(&v) {
                        self.failed = true;
                        return Some(Err(e));
                    }
                }
            }
        }
    }
}

impl ArrivalOrder<'_> {
    fn load_entry(&mut self, v: &[u8]) -> Result<(), Error> {
        let mut r = R::new(v);
        let n = r.u32()?;
        for _ in 0..n {
            let key = r.bytes()?;
            let rec = self
                .ledger
                .store
                .get(Space::Batch, key)?
                .ok_or_else(|| corrupt("arrival index points to a missing record"))?;
            let (table, _) = split_table_key(key)?;
            for e in record::decode_record(&rec)? {
                self.heap.push(Reverse((
                    e.stream_seq,
                    table.clone(),
                    e.seq.0,
                    Box::new(StoredEventOrd(e)),
                )));
            }
        }
        Ok(())
    }
}

impl<'a> Reader<'a> {
    /// The table's events with seq in `range`, in seq order.
    pub fn events(self, table: &TableId, range: RangeInclusive<u64>) -> Events<'a> {
        self.ledger().events(table, range)
    }

    /// Every stored event of every table in arrival order (JetStream stream sequence): the
    /// House's order. Streams record by record; memory holds only overlapping append calls.
    pub fn events_in_arrival_order(self) -> ArrivalOrder<'a> {
        self.ledger().events_in_arrival_order()
    }
}

impl Ledger {
    /// The table's events with seq in `range`, in seq order.
    pub(crate) fn events(&self, table: &TableId, range: RangeInclusive<u64>) -> Events<'_> {
        let tk = table_key(table);
        let start = *range.start();
        // Start at the record containing `start` (the last record key <= start).
        let from = match self
            .store
            .last_key_at_or_before(Space::Batch, &tk, &seq_key(table, start))
        {
            Ok(Some(k)) => k,
            _ => seq_key(table, start),
        };
        let mut to = tk.clone();
        to.extend_from_slice(&range.end().saturating_add(1).to_be_bytes());
        let inner: KvIter<'_> = if range.end() == &u64::MAX {
            // Table key + 1 in its last byte: the end of this table's keys.
            let mut end = tk.clone();
            end.extend_from_slice(&[0xff; 9]);
            self.store.range(Space::Batch, &from, Some(&end))
        } else {
            self.store.range(Space::Batch, &from, Some(&to))
        };
        Events {
            inner,
            decoded: &self.events_decoded,
            buf: VecDeque::new(),
            // An empty range reads no record: the one before it may be a removed day's.
            done: range.is_empty(),
            range,
        }
    }

    /// Every stored event of every table in arrival order (JetStream stream sequence): the
    /// House's order. Streams record by record; memory holds only overlapping append calls.
    pub(crate) fn events_in_arrival_order(&self) -> ArrivalOrder<'_> {
        ArrivalOrder {
            ledger: self,
            entries: self.store.range(Space::Arrival, &[], None).peekable(),
            heap: BinaryHeap::new(),
            failed: false,
        }
    }

    /// The entry with its repeat count read from beside it.
    fn with_repeats(&self, mut e: QuarantineEntry) -> Result<QuarantineEntry, Error> {
        e.repeats = self.reader().quarantine_repeats(e.id)?;
        Ok(e)
    }

    fn quarantine_entries(&self) -> impl Iterator<Item = Result<QuarantineEntry, Error>> + '_ {
        self.store
            .range(Space::Quarantine, &[], None)
            .map(|kv| kv.and_then(|(k, v)| QuarantineEntry::decode(be_u64(&k)?, &v)))
    }

    /// Quarantine entries per reason code: `quarantine_counts` without the counters kept
    /// beside them (`attest::reason::PERSISTED_COUNTERS`), which count no entry.
    fn quarantine_by_reason(&self) -> BTreeMap<String, u64> {
        let mut by_reason = self.reader().quarantine_counts();
        for name in crate::attest::reason::PERSISTED_COUNTERS {
            by_reason.remove(*name);
        }
        by_reason
    }

    /// The seq range of `table` that `range` selects, with its anchor and head; `None`
    /// when it selects nothing. Refused when it covers a range `removed` by retention.
    fn export_range(
        &self,
        table: &TableId,
        range: &ExportRange,
        removed: &[RemovedRange],
    ) -> Result<Option<ExportTable>, Error> {
        let head = self.reader().head(table).map(|h| h.seq.0).unwrap_or(0);
        let (from, to) = match range {
            ExportRange::All => (1, head),
            ExportRange::AfterRemoved => (removed.last().map_or(1, |r| r.last_seq + 1), head),
            ExportRange::Seqs(r) => ((*r.start()).max(1), (*r.end()).min(head)),
            ExportRange::Rounds(r) => {
                let rs: Vec<_> = self.reader().rounds(table)?;
                let rs = rs.iter().filter(|s| r.contains(&s.round.0));
                let (first, last) = rs.fold((u64::MAX, 0), |(a, b), s| {
                    (a.min(s.first_seq.0), b.max(s.last_seq.0))
                });
                if first == u64::MAX {
                    (1, 0)
                } else {
                    (first, last)
                }
            }
        };
        if to < from {
            return Ok(None);
        }
        if let Some(r) = removed
            .iter()
            .find(|r| r.first_seq <= to && from <= r.last_seq)
        {
            return Err(Error::ExportRemoved {
                table: table.clone(),
                day: r.day.clone(),
                first_seq: r.first_seq,
                last_seq: r.last_seq,
            });
        }
        let missing = |seq: u64| Error::Export(format!("table {table}: no event at seq {seq}"));
        let sealed = removed.iter().find(|r| r.last_seq + 1 == from);
        let anchor = match (from, sealed) {
            (1, _) => GENESIS,
            // The event before is a removed day's last: its seal gives the hash.
            (_, Some(r)) => r.head_hash,
            _ => {
                self.reader()
                    .stored_event(table, from - 1)?
                    .ok_or_else(|| missing(from - 1))?
                    .hash
            }
        };
        let last = self
            .reader()
            .stored_event(table, to)?
            .ok_or_else(|| missing(to))?;
        Ok(Some(ExportTable {
            table: table.clone(),
            from_seq: from,
            to_seq: to,
            anchor,
            head: last.hash,
            events: to - from + 1,
        }))
    }

    /// Writes one table's event lines; their count, and the receipt of a range from seq 1
    /// (as `verify_export` recomputes it).
    fn export_table(
        &self,
        t: &ExportTable,
        w: &mut impl Write,
    ) -> Result<(u64, Option<Hash32>), Error> {
        let mut expected = t.from_seq;
        let mut receipt = (t.from_seq == 1).then_some(Hash32::ZERO);
        for e in self.events(&t.table, t.from_seq..=t.to_seq) {
            let e = e?;
            if e.seq.0 != expected {
                return Err(Error::Export(format!(
                    "table {}: stored seq {} where {expected} was expected (run verify)",
                    t.table, e.seq.0
                )));
            }
            expected += 1;
            if let Some(r) = &mut receipt {
                *r = proofs::digest::receipt_next(r, e.stream_seq, e.received_at_ns);
            }
            let line = crate::store::tier_ref::export_line(&t.table, &e);
            let line = serde_json::to_string(&line).map_err(|e| Error::Export(e.to_string()))?;
            writeln!(w, "{line}")?;
        }
        if expected != t.to_seq + 1 {
            return Err(Error::Export(format!(
                "table {}: stored events end at seq {}, expected {} (run verify)",
                t.table,
                expected - 1,
                t.to_seq
            )));
        }
        Ok((t.to_seq + 1 - t.from_seq, receipt))
    }
}

impl Reader<'_> {
    /// Tables with at least one stored event.
    pub fn tables(&self) -> Vec<TableId> {
        self.lock().heads.keys().cloned().collect()
    }

    /// The table's chain head (last stored event), if it has any.
    pub fn head(&self, table: &TableId) -> Option<ChainHead> {
        self.lock().heads.get(table).cloned()
    }

    /// Every table's chain head.
    pub fn heads(&self) -> Vec<ChainHead> {
        self.lock().heads.values().cloned().collect()
    }

    /// Events decoded from stored records since open, by every read: what reads cost, for
    /// tests that count work instead of timing it.
    pub fn events_decoded(&self) -> u64 {
        self.events_decoded
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The stored event at `seq`, if any.
    pub fn stored_event(&self, table: &TableId, seq: u64) -> Result<Option<StoredEvent>, Error> {
        match self.events(table, seq..=seq).next().transpose() {
            // A day removed by retention keeps the events later days stand on.
            Err(Error::RetentionRemoved { day, table: t }) => {
                match self.kept_event(&day, &t, seq)? {
                    Some(e) => Ok(Some(e)),
                    None => Err(Error::RetentionRemoved { day, table: t }),
                }
            }
            other => other,
        }
    }

    /// The round index's entry for `round` of `table`, if any: one lookup.
    pub fn round_index_entry(
        &self,
        table: &TableId,
        round: RoundId,
    ) -> Result<Option<RoundSummary>, Error> {
        self.store
            .get(Space::Round, &seq_key(table, round.0))?
            .map(|v| RoundSummary::decode(round, &v))
            .transpose()
    }

    /// The events of one round, in seq order.
    pub fn round_events(&self, table: &TableId, round: RoundId) -> Result<Vec<StoredEvent>, Error> {
        let v = self
            .store
            .get(Space::Round, &seq_key(table, round.0))?
            .ok_or_else(|| Error::UnknownRound {
                table: table.clone(),
                round: round.0,
            })?;
        let s = RoundSummary::decode(round, &v)?;
        let mut out = Vec::new();
        for e in self.events(table, s.first_seq.0..=s.last_seq.0) {
            let e = e?;
            if e.round == Some(round) {
                out.push(e);
            }
        }
        Ok(out)
    }

    /// Round `round` of `table` with the rounds before and after it, read by key: the cost
    /// does not grow with the table's history. `None` when the table has no such round.
    pub fn round_neighbours(
        &self,
        table: &TableId,
        round: RoundId,
    ) -> Result<Option<RoundNeighbours>, Error> {
        let Some(v) = self.store.get(Space::Round, &seq_key(table, round.0))? else {
            return Ok(None);
        };
        let this = RoundSummary::decode(round, &v)?;
        let tk = table_key(table);
        let summary = |k: Vec<u8>, v: Vec<u8>| -> Result<RoundSummary, Error> {
            let (_, rest) = split_table_key(&k)?;
            RoundSummary::decode(RoundId(be_u64(rest)?), &v)
        };
        let prev = match round.0.checked_sub(1) {
            None => None,
            Some(p) => {
                match self
                    .store
                    .last_key_at_or_before(Space::Round, &tk, &seq_key(table, p))?
                {
                    None => None,
                    Some(k) => {
                        let v = self.store.get(Space::Round, &k)?;
                        let v =
                            v.ok_or_else(|| record::corrupt("round index: key without value"))?;
                        Some(summary(k, v)?)
                    }
                }
            }
        };
        let mut end = tk.clone();
        end.extend_from_slice(&[0xff; 9]);
        let next = match round.0.checked_add(1) {
            None => None,
            Some(n) => {
                let from = seq_key(table, n);
                match self.store.range(Space::Round, &from, Some(&end)).next() {
                    None => None,
                    Some(kv) => {
                        let (k, v) = kv?;
                        Some(summary(k, v)?)
                    }
                }
            }
        };
        Ok(Some(RoundNeighbours { prev, this, next }))
    }

    /// The table's rounds in round order.
    pub fn rounds(&self, table: &TableId) -> Result<Vec<RoundSummary>, Error> {
        let tk = table_key(table);
        let mut end = tk.clone();
        end.extend_from_slice(&[0xff; 9]);
        let mut out = Vec::new();
        for kv in self.store.range(Space::Round, &tk, Some(&end)) {
            let (k, v) = kv?;
            let (_, rest) = split_table_key(&k)?;
            out.push(RoundSummary::decode(RoundId(be_u64(rest)?), &v)?);
        }
        Ok(out)
    }

    /// Rounds (of all tables) whose first event's device time is in `from_ns..to_ns`,
    /// ordered by that time.
    pub fn rounds_in_time_range(
        &self,
        from_ns: i64,
        to_ns: i64,
    ) -> Result<Vec<(TableId, RoundSummary)>, Error> {
        let mut out = Vec::new();
        for kv in self
            .store
            .range(Space::RoundTime, &ord_i64(from_ns), Some(&ord_i64(to_ns)))
        {
            let (k, _) = kv?;
            let (table, rest) = split_table_key(k.get(8..).unwrap_or(&[]))?;
            let round = RoundId(be_u64(rest)?);
            let v = self
                .store
                .get(Space::Round, &seq_key(&table, round.0))?
                .ok_or_else(|| corrupt("round time index points to a missing round"))?;
            out.push((table, RoundSummary::decode(round, &v)?));
        }
        Ok(out)
    }

    /// Every quarantined message, oldest first.
    pub fn quarantine(&self) -> Result<Vec<QuarantineEntry>, Error> {
        self.quarantine_entries().collect()
    }

    /// One page of the quarantined messages of `reason` and subject `table` (each when
    /// given), newest first: `limit` of them after skipping `offset`, and how many match in
    /// all. The page is read backwards from the newest entry (`Store::range_back`) and
    /// stops when full or when every match is seen, so after a flood of refused messages
    /// the newest page costs a page of reads, not a scan; the total comes from the counts
    /// kept in memory, except with `table`, which counts in one pass.
    pub fn quarantine_page(
        &self,
        reason: Option<&str>,
        table: Option<&TableId>,
        offset: u64,
        limit: u64,
    ) -> Result<(u64, Vec<QuarantineEntry>), Error> {
        let matches = |e: &QuarantineEntry| {
            reason.is_none_or(|r| r == e.reason)
                && table.is_none_or(|t| e.subject_table.as_ref() == Some(t))
        };
        let total = match (reason, table) {
            (_, Some(_)) => {
                let mut n = 0u64;
                for e in self.quarantine_entries() {
                    if matches(&e?) {
                        n += 1;
                    }
                }
                n
            }
            (Some(r), None) => self.quarantine_by_reason().get(r).copied().unwrap_or(0),
            (None, None) => self.lock().quarantine.entries,
        };
        let mut page = Vec::new();
        let mut skipped = 0u64;
        for kv in self.store.range_back(Space::Quarantine) {
            // Every match seen, or the page full: the older entries cannot change it.
            if page.len() as u64 == limit || skipped + page.len() as u64 == total {
                break;
            }
            let (k, v) = kv?;
            let e = QuarantineEntry::decode(be_u64(&k)?, &v)?;
            if matches(&e) {
                if skipped < offset {
                    skipped += 1;
                } else {
                    page.push(self.with_repeats(e)?);
                }
            }
        }
        Ok((total, page))
    }

    /// A page of the quarantine as the API serves it (`GET /v1/quarantine`) and the CLI
    /// prints it: newest first, only `reason` and `table` when given, with the counts per
    /// reason and the committed chain head.
    pub fn quarantine_view(
        &self,
        reason: Option<&str>,
        table: Option<&TableId>,
        offset: u64,
        limit: u64,
    ) -> Result<schemas::api::QuarantinePage, Error> {
        let (total, entries) = self.quarantine_page(reason, table, offset, limit)?;
        let head = self.quarantine_head();
        let by_reason = self.quarantine_by_reason();
        Ok(schemas::api::QuarantinePage {
            items: entries
                .into_iter()
                .map(|e| e.row(schemas::api::QUARANTINE_PREVIEW_BYTES))
                .collect(),
            total,
            offset,
            limit,
            by_reason,
            head: schemas::api::QuarantineHeadView {
                entries: head.entries,
                hash: head.hash,
            },
            overflow: self
                .quarantine_overflows()
                .into_iter()
                .map(|((source, reason), o)| schemas::api::OverflowRow {
                    source,
                    reason,
                    count: o.count,
                    bytes: o.bytes,
                    first_stream_seq: o.first_stream_seq,
                    last_stream_seq: o.last_stream_seq,
                    digest: o.digest,
                })
                .collect(),
        })
    }

    /// One quarantined message by id.
    pub fn quarantine_entry(&self, id: u64) -> Result<Option<QuarantineEntry>, Error> {
        self.store
            .get(Space::Quarantine, &id.to_be_bytes())?
            .map(|v| self.with_repeats(QuarantineEntry::decode(id, &v)?))
            .transpose()
    }

    /// How often entry `id`'s message was refused again after it (`quarantine::Repeat`).
    pub fn quarantine_repeats(&self, id: u64) -> Result<u64, Error> {
        Ok(self
            .store
            .get(Space::Meta, &crate::quarantine::repeat_key(id))?
            .map(|v| crate::quarantine::Repeat::decode(&v))
            .transpose()?
            .map_or(0, |r| r.count))
    }

    /// Refusals past a quarantine bound, counted by (source, reason): how many, their
    /// bytes, the stream seqs where the stream keeps them, and a digest of them.
    pub fn quarantine_overflows(&self) -> BTreeMap<(String, String), crate::quarantine::Overflow> {
        self.lock().quarantine.overflows.clone()
    }

    /// The quarantine chain's head as committed (`crate::quarantine`).
    pub fn quarantine_head(&self) -> crate::quarantine::QuarantineHead {
        self.lock().quarantine.head
    }

    /// Quarantined messages per reason code.
    pub fn quarantine_counts(&self) -> BTreeMap<String, u64> {
        self.lock().counters.clone()
    }

    /// Each table's first gap, for tables that hold events beyond a gap.
    pub fn gaps(&self) -> Vec<Gap> {
        let st = self.lock();
        st.held
            .by_table
            .iter()
            .filter_map(|(table, p)| {
                let first = *p.keys().next()?;
                let head = st.heads.get(table).map(|h| h.seq.0).unwrap_or(0);
                Some(Gap {
                    table: table.clone(),
                    missing_from: Seq(head + 1),
                    missing_to: Seq(first.saturating_sub(1)),
                    held: p.len(),
                    since_ns: p.values().map(|h| h.received_at_ns).min().unwrap_or(0),
                    held_last: Seq(*p.keys().next_back()?),
                    held_bytes: p.values().map(|h| h.bytes.len() as u64).sum(),
                })
            })
            .collect()
    }

    /// What the store has read since it opened, per space and day file; `None` when the
    /// store does not count. Tests and benchmarks use it to show what a cost reads.
    pub fn store_reads(&self) -> Option<crate::store::reads::StoreReads> {
        self.store.reads()
    }

    /// Totals across the ledger, from its in-memory state.
    pub fn stats(&self) -> Stats {
        let st = self.lock();
        Stats {
            tables: st.heads.len(),
            events: st.heads.values().map(|h| h.seq.0).sum(),
            bytes: st.bytes_total,
            quarantined: st.quarantine.entries,
            held: st.held.by_table.values().map(|p| p.len()).sum(),
        }
    }

    /// Writes an export (format: `proofs::export`) and returns its summary. Verify it with
    /// `proofs::export::verify_export`, without sled.
    pub fn export(&self, sel: &ExportSelection, mut w: impl Write) -> Result<ExportSummary, Error> {
        let tables = match &sel.table {
            Some(t) if self.head(t).is_none() => return Err(Error::UnknownTable(t.clone())),
            Some(t) => vec![t.clone()],
            None => self.tables(),
        };
        let mut header = ExportHeader {
            format: EXPORT_FORMAT.to_string(),
            version: EXPORT_VERSION,
            tables: Vec::new(),
        };
        let removed = self.removed_days()?;
        if let Some(d) = removed.days.iter().find(|d| d.problem.is_some()) {
            let why = d.problem.as_deref().unwrap_or_default();
            let why = format!(
                "day {} is removed but its removal does not hold: {why} (run verify)",
                d.day
            );
            return Err(Error::Export(why));
        }
        for table in tables {
            if let Some(t) = self.export_range(&table, &sel.range, removed.ranges(&table))? {
                header.tables.push(t);
            }
        }
        if let Some(max) = sel.events_max {
            let events = header.tables.iter().map(|t| t.events).sum::<u64>();
            if events > max {
                return Err(Error::ExportTooLarge { events, max });
            }
        }
        let line = serde_json::to_string(&header).map_err(|e| Error::Export(e.to_string()))?;
        writeln!(w, "{line}")?;
        let (mut total, mut receipts) = (0, BTreeMap::new());
        for t in &header.tables {
            let (events, receipt) = self.export_table(t, &mut w)?;
            total += events;
            if let Some(r) = receipt {
                receipts.insert(t.table.clone(), r);
            }
        }
        w.flush()?;
        Ok(ExportSummary {
            version: EXPORT_VERSION,
            tables: header.tables,
            events: total,
            receipts,
        })
    }
}
