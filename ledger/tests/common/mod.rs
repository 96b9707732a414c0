//! Shared by the ledger's integration tests: chains of real events built with `schemas`,
//! appended in several calls so each table has several records, and raw access to the
//! store (sled and the value log, or redb) for tampering after the ledger is closed.
#![allow(dead_code)]

pub mod archived;
pub mod signed;

use ledger::store::choice::StoreKind;
use ledger::store::{KeyIter, KvIter, Op, Space, Store, SLED_TREE};
use ledger::valuelog::ValueLog;
use ledger::{Incoming, Ledger};
use schemas::codec::{self, WireFormat};
use schemas::*;
use std::path::Path;

/// Device clock of the first event; ingest's clock in these tests is the same instant.
pub const T0_NS: i64 = 1_767_225_600_000_000_000;

pub fn table(name: &str) -> TableId {
    TableId::new(name).expect("valid table id")
}

/// The body of event number `i` of a test chain: a mix of kinds, in and out of rounds.
fn body(i: u64) -> (Option<RoundId>, EventBody) {
    let round = Some(RoundId(i / 10 + 1));
    let b = match i % 5 {
        0 => EventBody::Announced {
            announcement: Announcement::PlaceYourBets,
        },
        1 => EventBody::BetPlaced {
            box_no: BoxNo((i % 7) as u8 + 1),
            kind: BetKind::Ante,
            stake: Stake::Chips(Money(1000 + i as i64)),
        },
        2 => EventBody::CardDealt {
            to: CardTarget::Dealer,
            card: Card::parse("As").expect("card"),
            face_up: true,
            position: (i % 5) as u16,
        },
        3 => EventBody::PaidOut {
            box_no: BoxNo(1),
            line: PayLine::Ante,
            net: Money(i as i64),
        },
        _ => EventBody::RoundClosed,
    };
    (round, b)
}

/// Events with their exact bytes, in seq order.
pub type Chain = Vec<(Event, Vec<u8>)>;

/// The exact bytes of events `1..=n` of `table`'s chain, alternating bincode and JSON.
pub fn chain(t: &TableId, n: u64) -> Vec<(Event, Vec<u8>)> {
    chain_from(t, 1, GENESIS, n)
}

/// Events `first..first+n` of a chain whose event `first - 1` has hash `prev`.
pub fn chain_from(t: &TableId, first: u64, mut prev: Hash32, n: u64) -> Vec<(Event, Vec<u8>)> {
    let mut out = Vec::new();
    for seq in first..first + n {
        let (round, body) = body(seq);
        let e = Event {
            v: WIRE_VERSION,
            table: t.clone(),
            device: DeviceId::new("ctl-1").expect("id"),
            seq: Seq(seq),
            prev,
            occurred_at_ns: T0_NS + seq as i64 * 1_000_000_000,
            round,
            body,
        };
        let format = if seq.is_multiple_of(2) {
            WireFormat::Json
        } else {
            WireFormat::Bincode
        };
        let bytes = codec::encode(&e, format);
        prev = event_hash(&prev, &bytes);
        out.push((e, bytes));
    }
    out
}

pub fn incoming(t: &TableId, bytes: Vec<u8>, stream_seq: u64) -> Incoming {
    Incoming {
        bytes,
        subject_table: Some(t.clone()),
        stream_seq,
        received_at_ns: T0_NS,
        provenance: Default::default(),
    }
}

/// Appends `per_table` events to each of `tables`, `per_call` per append call (so each
/// table gets `per_table / per_call` records), flushes; returns each table's hashes.
pub fn fill(
    l: &Ledger,
    tables: &[TableId],
    per_table: u64,
    per_call: u64,
) -> Vec<(TableId, Vec<Hash32>)> {
    let chains: Vec<(TableId, Chain)> = tables
        .iter()
        .map(|t| (t.clone(), chain(t, per_table)))
        .collect();
    let mut stream = 0;
    let mut start = 0usize;
    while start < per_table as usize {
        let mut batch = Vec::new();
        for (t, c) in &chains {
            for (_, b) in c.iter().skip(start).take(per_call as usize) {
                stream += 1;
                batch.push(incoming(t, b.clone(), stream));
            }
        }
        let out = l.writer().append_batch(&batch).expect("append");
        for o in out {
            assert!(matches!(o, ledger::Appended::Stored { .. }), "{o:?}");
        }
        start += per_call as usize;
    }
    l.flush().expect("flush");
    chains
        .into_iter()
        .map(|(t, c)| {
            let mut prev = GENESIS;
            let hashes = c
                .iter()
                .map(|(_, b)| {
                    prev = event_hash(&prev, b);
                    prev
                })
                .collect();
            (t, hashes)
        })
        .collect()
}

/// The raw store of a closed ledger directory: what an attacker with file access, or a
/// bug, could write, below the `Store` trait's rules. On sled, a record of `Space::Batch` is
/// read and written whole, as the ledger sees it: sled's pointer and the value log's entry
/// (`ledger::valuelog`). On redb (`ROUNDLEDGER_TEST_STORE=redb`), the file's one table.
pub struct Raw {
    inner: RawInner,
}

enum RawInner {
    Sled(SledRaw),
    Redb(redb::Database),
}

/// sled's tree and the value log, for tests of sled itself.
pub struct SledRaw {
    pub db: sled::Db,
    pub tree: sled::Tree,
    pub values: ValueLog,
}

/// redb's table of a ledger (`ledger::store::redb_store`).
const REDB_TABLE: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("ledger");

impl SledRaw {
    fn open(dir: &Path) -> SledRaw {
        // sled's flusher thread holds the directory lock a moment after the ledger that
        // wrote it is dropped: wait for it, as `SledStore::open` does.
        let deadline = std::time::Instant::now() + ledger::store::LOCK_WAIT;
        let db = loop {
            match sled::open(dir) {
                Ok(db) => break db,
                Err(e)
                    if e.to_string().contains("could not acquire lock")
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => panic!("raw sled open: {e}"),
            }
        };
        let tree = db.open_tree(SLED_TREE).expect("tree");
        let values = ValueLog::open(dir).expect("value log");
        SledRaw { db, tree, values }
    }
}

impl Raw {
    pub fn open(dir: &Path) -> Raw {
        let inner = match StoreKind::from_env().expect("store kind") {
            StoreKind::Sled => RawInner::Sled(SledRaw::open(dir)),
            StoreKind::Redb => {
                let path = dir.join(ledger::store::redb_store::REDB_FILE);
                RawInner::Redb(redb::Database::open(path).expect("raw redb open"))
            }
        };
        Raw { inner }
    }
    /// sled's tree and value log; only tests that skip on other stores call it.
    pub fn sled(&self) -> &SledRaw {
        match &self.inner {
            RawInner::Sled(s) => s,
            RawInner::Redb(_) => panic!("a sled-only test must skip on redb first"),
        }
    }
    pub fn key(space: Space, k: &[u8]) -> Vec<u8> {
        let mut v = vec![space.prefix()];
        v.extend_from_slice(k);
        v
    }
    fn raw_get(&self, space: Space, k: &[u8]) -> Result<Option<Vec<u8>>, ledger::Error> {
        match &self.inner {
            RawInner::Sled(s) => s
                .tree
                .get(Raw::key(space, k))
                .expect("get")
                .map(|v| ledger::store::whole_value(&s.values, space, v.to_vec()))
                .transpose(),
            RawInner::Redb(db) => {
                let tx = db.begin_read().expect("read");
                let table = tx.open_table(REDB_TABLE).expect("table");
                let v = table.get(Raw::key(space, k).as_slice()).expect("get");
                Ok(v.map(|v| v.value().to_vec()))
            }
        }
    }
    pub fn get(&self, space: Space, k: &[u8]) -> Option<Vec<u8>> {
        self.raw_get(space, k).expect("value")
    }
    pub fn put(&self, space: Space, k: &[u8], v: Vec<u8>) {
        let s = match &self.inner {
            RawInner::Sled(s) => s,
            RawInner::Redb(_) => return self.redb_write(Raw::key(space, k), Some(v)),
        };
        let v = match space {
            Space::Batch => {
                let p = s.values.append(&[&v]).expect("value log append")[0];
                // As the store's commit does: the recorded end of the value log moves with
                // the pointer (else the next `Ledger::open` would append the record again).
                s.tree
                    .insert(
                        Raw::key(Space::Meta, ledger::store::VALUES_END_KEY),
                        ledger::store::encode_position(p.end()),
                    )
                    .expect("insert");
                p.encode()
            }
            _ => v,
        };
        s.tree.insert(Raw::key(space, k), v).expect("insert");
    }
    fn redb_write(&self, key: Vec<u8>, value: Option<Vec<u8>>) {
        let RawInner::Redb(db) = &self.inner else {
            unreachable!("redb only")
        };
        let tx = db.begin_write().expect("write");
        {
            let mut table = tx.open_table(REDB_TABLE).expect("table");
            match value {
                Some(v) => drop(table.insert(key.as_slice(), v.as_slice()).expect("insert")),
                None => drop(table.remove(key.as_slice()).expect("remove")),
            }
        }
        tx.commit().expect("commit");
    }
    pub fn remove(&self, space: Space, k: &[u8]) {
        match &self.inner {
            RawInner::Sled(s) => drop(s.tree.remove(Raw::key(space, k)).expect("remove")),
            RawInner::Redb(_) => self.redb_write(Raw::key(space, k), None),
        }
    }
    /// Keys (without the space prefix) of a space, in order.
    pub fn keys(&self, space: Space) -> Vec<Vec<u8>> {
        self.raw_range(space, &[], None)
            .into_iter()
            .map(|(k, _)| k)
            .collect()
    }
    pub fn close(self) {
        if let RawInner::Sled(s) = &self.inner {
            s.db.flush().expect("flush");
        }
    }
    /// Entries of a space from `from` to `to` (exclusive), values as stored (pointers on
    /// sled), keys without the prefix.
    fn raw_range(&self, space: Space, from: &[u8], to: Option<&[u8]>) -> Vec<(Vec<u8>, Vec<u8>)> {
        let start = Raw::key(space, from);
        let end = match to {
            Some(t) => Raw::key(space, t),
            None => vec![space.prefix() + 1],
        };
        if start >= end {
            return Vec::new();
        }
        match &self.inner {
            RawInner::Sled(s) => s
                .tree
                .range(start..end)
                .map(|kv| {
                    let (k, v) = kv.expect("range");
                    (k[1..].to_vec(), v.to_vec())
                })
                .collect(),
            RawInner::Redb(db) => {
                let tx = db.begin_read().expect("read");
                let table = tx.open_table(REDB_TABLE).expect("table");
                let range = table
                    .range::<&[u8]>(start.as_slice()..end.as_slice())
                    .expect("range");
                range
                    .map(|kv| {
                        let (k, v) = kv.expect("range");
                        (k.value()[1..].to_vec(), v.value().to_vec())
                    })
                    .collect()
            }
        }
    }
    fn whole(&self, space: Space, stored: Vec<u8>) -> Result<Vec<u8>, ledger::Error> {
        match &self.inner {
            RawInner::Sled(s) => ledger::store::whole_value(&s.values, space, stored),
            RawInner::Redb(_) => Ok(stored),
        }
    }
}

/// The raw store as a `Store` (unrestricted: tests write through `Raw`), so
/// `ledger::verify_store` can check thousands of tamperings without reopening the store.
impl Store for Raw {
    fn get(&self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>, ledger::Error> {
        self.raw_get(space, key)
    }
    fn range<'a>(&'a self, space: Space, from: &[u8], to: Option<&[u8]>) -> KvIter<'a> {
        let all = self.raw_range(space, from, to);
        Box::new(
            all.into_iter()
                .map(move |(k, v)| Ok((k, self.whole(space, v)?))),
        )
    }
    fn keys<'a>(&'a self, space: Space, from: &[u8], to: Option<&[u8]>) -> KeyIter<'a> {
        let all = self.raw_range(space, from, to);
        Box::new(all.into_iter().map(|(k, _)| Ok(k)))
    }
    fn last_key_at_or_before(
        &self,
        _: Space,
        _: &[u8],
        _: &[u8],
    ) -> Result<Option<Vec<u8>>, ledger::Error> {
        unimplemented!("not used by verify")
    }
    fn commit(&self, _: Vec<Op>) -> Result<(), ledger::Error> {
        unimplemented!("tests write through Raw")
    }
    fn flush(&self) -> Result<(), ledger::Error> {
        Ok(())
    }
}

/// Opens the store `Ledger::open` opens in `dir` (sled, or redb under the test switch).
pub fn open_store(dir: &Path) -> Box<dyn Store> {
    ledger::store::choice::open_store(dir).expect("store open")
}

/// Whether this test skips: it is about sled or the value log themselves, and the tests run
/// on another store. Says so on stderr.
pub fn skip_unless_sled(what: &str) -> bool {
    ledger::store::choice::skip_unless_sled(what)
}

/// Returns once sled has let go of `dir` (its flusher ends a moment after the last handle
/// is dropped; an open waits for that). Opening and closing writes nothing. redb lets go
/// when the store is dropped.
pub fn closed(dir: &Path) {
    if StoreKind::from_env().expect("store kind") == StoreKind::Sled {
        Raw::open(dir).close();
    }
}

/// Puts sled's own files (everything but the value log) of `from` in place of `to`'s: a
/// silent sled rollback to `from`'s state, the value log kept.
pub fn put_back_sled_files(from: &Path, to: &Path) {
    for e in std::fs::read_dir(to).expect("read_dir") {
        let p = e.expect("entry").path();
        if p.file_name() == Some(std::ffi::OsStr::new(ledger::valuelog::DIR)) {
            continue;
        }
        if p.is_dir() {
            std::fs::remove_dir_all(&p).expect("remove");
        } else {
            std::fs::remove_file(&p).expect("remove");
        }
    }
    copy_dir(from, to, true);
}

/// Copies the directory tree `from` into `to`; with `sled_only`, leaves out the value log
/// (`valuelog::DIR`), to copy only sled's own files.
pub fn copy_dir(from: &Path, to: &Path, sled_only: bool) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let p = e.expect("entry").path();
        let name = p.file_name().expect("name").to_owned();
        if sled_only && name == std::ffi::OsStr::new(ledger::valuelog::DIR) {
            continue;
        }
        if p.is_dir() {
            copy_dir(&p, &to.join(&name), sled_only);
        } else {
            std::fs::copy(&p, to.join(&name)).expect("copy");
        }
    }
}

/// What an attacker who knows the formats does after editing records: rebuilds the arrival
/// chain (`ledger::arrival`) over the records that are left, numbering the calls again from
/// 0, with a matching head and next call id, so that `verify` alone sees nothing.
pub fn rechain_arrival(raw: &Raw) {
    use ledger::arrival::{
        call_id_of_key, decode_entry, encode_entry, encode_head, ArrivalHasher, HEAD_KEY,
    };
    let mut entries: Vec<(u64, Vec<u8>, Vec<Vec<u8>>)> = raw
        .keys(Space::Arrival)
        .into_iter()
        .map(|k| {
            let v = Store::get(raw, Space::Arrival, &k)
                .expect("get")
                .expect("entry");
            let records = decode_entry(&v).expect("entry").records;
            (call_id_of_key(&k).expect("call id"), k, records)
        })
        .collect();
    entries.sort_by_key(|e| e.0);
    for (_, k, _) in &entries {
        raw.remove(Space::Arrival, k);
    }
    let (mut prev, mut next, mut last) = (Hash32::ZERO, 0u64, None);
    for (_, k, records) in entries {
        let records: Vec<(Vec<u8>, Vec<u8>)> = records
            .into_iter()
            .filter_map(|r| {
                Store::get(raw, Space::Batch, &r)
                    .expect("get")
                    .map(|v| (r, v))
            })
            .collect();
        if records.is_empty() {
            continue;
        }
        let mut h = ArrivalHasher::new(&prev, next);
        for (_, rec) in &records {
            for e in ledger::record::decode_record(rec).expect("record") {
                h.event(&e.hash, e.stream_seq, e.received_at_ns);
            }
        }
        let hash = h.finish();
        let keys: Vec<Vec<u8>> = records.into_iter().map(|(key, _)| key).collect();
        let mut key = k[..8].to_vec();
        key.extend_from_slice(&next.to_be_bytes());
        raw.put(Space::Arrival, &key, encode_entry(&keys, &hash));
        (prev, last) = (hash, Some((next, hash)));
        next += 1;
    }
    match last {
        Some((id, h)) => raw.put(Space::Meta, HEAD_KEY, encode_head(id, &h)),
        None => raw.remove(Space::Meta, HEAD_KEY),
    }
    raw.put(Space::Meta, b"call_id", next.to_be_bytes().to_vec());
}

/// What the same attacker writes as the round index after editing records: every table's
/// round summaries and rounds-by-start-time entries rebuilt from the records, as the
/// append path writes them, so that `verify`'s index check agrees.
pub fn reindex_rounds(raw: &Raw) {
    use ledger::record::{ord_i64, seq_key, split_table_key};
    use std::collections::BTreeMap;
    for space in [Space::Round, Space::RoundTime] {
        for k in raw.keys(space) {
            raw.remove(space, &k);
        }
    }
    let mut spans: BTreeMap<(TableId, u64), ledger::RoundSummary> = BTreeMap::new();
    for k in raw.keys(Space::Batch) {
        let (table, _) = split_table_key(&k).expect("record key");
        let v = Store::get(raw, Space::Batch, &k)
            .expect("get")
            .expect("record");
        for e in ledger::record::decode_record(&v).expect("record") {
            let Some(r) = e.round else { continue };
            spans
                .entry((table.clone(), r.0))
                .and_modify(|s| {
                    s.last_seq = e.seq;
                    s.last_occurred_at_ns = e.occurred_at_ns;
                })
                .or_insert(ledger::RoundSummary {
                    round: r,
                    first_seq: e.seq,
                    last_seq: e.seq,
                    first_occurred_at_ns: e.occurred_at_ns,
                    last_occurred_at_ns: e.occurred_at_ns,
                });
        }
    }
    for ((table, r), s) in spans {
        raw.put(Space::Round, &seq_key(&table, r), s.encode());
        let mut by_time = ord_i64(s.first_occurred_at_ns).to_vec();
        by_time.extend_from_slice(&seq_key(&table, r));
        raw.put(Space::RoundTime, &by_time, Vec::new());
    }
}

/// What the same attacker writes as a table's head after editing its records: `seq` and
/// `hash`, and the receipt (`ledger::arrival`) recomputed over the records of seqs 1..=seq,
/// so that the head agrees with the records.
pub fn forge_head(raw: &Raw, t: &TableId, seq: u64, hash: Hash32) {
    let prefix = ledger::record::table_key(t);
    let mut receipt = Hash32::ZERO;
    for k in raw.keys(Space::Batch) {
        if !k.starts_with(&prefix) || k.len() != prefix.len() + 8 {
            continue;
        }
        let v = Store::get(raw, Space::Batch, &k)
            .expect("get")
            .expect("record");
        for e in ledger::record::decode_record(&v).expect("record") {
            if e.seq.0 <= seq {
                receipt = proofs::digest::receipt_next(&receipt, e.stream_seq, e.received_at_ns);
            }
        }
    }
    let mut head = seq.to_be_bytes().to_vec();
    head.extend_from_slice(&hash.0);
    head.extend_from_slice(&receipt.0);
    raw.put(Space::Head, &prefix, head);
}
