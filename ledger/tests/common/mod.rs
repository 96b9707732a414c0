//! Shared by the ledger's integration tests: chains of real events built with `schemas`,
//! appended in several calls so each table has several records, and raw access to sled and
//! the value log for tampering after the ledger is closed.
#![allow(dead_code)]

pub mod archived;
pub mod signed;

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
        let out = l.append_batch(&batch).expect("append");
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

/// The raw sled tree and value log of a closed ledger directory: what an attacker with file
/// access, or a bug, could write. A record of `Space::Batch` is read and written whole, as
/// the ledger sees it: sled's pointer and the value log's entry (`ledger::valuelog`).
pub struct Raw {
    pub db: sled::Db,
    pub tree: sled::Tree,
    pub values: ValueLog,
}

impl Raw {
    pub fn open(dir: &Path) -> Raw {
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
        Raw { db, tree, values }
    }
    pub fn key(space: Space, k: &[u8]) -> Vec<u8> {
        let mut v = vec![space.prefix()];
        v.extend_from_slice(k);
        v
    }
    fn whole(&self, space: Space, stored: Vec<u8>) -> Result<Vec<u8>, ledger::Error> {
        ledger::store::whole_value(&self.values, space, stored)
    }
    pub fn get(&self, space: Space, k: &[u8]) -> Option<Vec<u8>> {
        self.tree
            .get(Raw::key(space, k))
            .expect("get")
            .map(|v| self.whole(space, v.to_vec()).expect("value"))
    }
    pub fn put(&self, space: Space, k: &[u8], v: Vec<u8>) {
        let v = match space {
            Space::Batch => {
                let p = self.values.append(&[&v]).expect("value log append")[0];
                // As the store's commit does: the recorded end of the value log moves with
                // the pointer (else the next `Ledger::open` would append the record again).
                self.tree
                    .insert(
                        Raw::key(Space::Meta, ledger::store::VALUES_END_KEY),
                        ledger::store::encode_position(p.end()),
                    )
                    .expect("insert");
                p.encode()
            }
            _ => v,
        };
        self.tree.insert(Raw::key(space, k), v).expect("insert");
    }
    pub fn remove(&self, space: Space, k: &[u8]) {
        self.tree.remove(Raw::key(space, k)).expect("remove");
    }
    /// Keys (without the space prefix) of a space, in order.
    pub fn keys(&self, space: Space) -> Vec<Vec<u8>> {
        self.tree
            .scan_prefix([space.prefix()])
            .map(|kv| kv.expect("scan").0[1..].to_vec())
            .collect()
    }
    pub fn close(self) {
        self.db.flush().expect("flush");
    }
    fn sled_range(&self, space: Space, from: &[u8], to: Option<&[u8]>) -> sled::Iter {
        let start = Raw::key(space, from);
        let end = match to {
            Some(t) => Raw::key(space, t),
            None => vec![space.prefix() + 1],
        };
        self.tree.range(start..end)
    }
}

/// The raw store as a `Store` (unrestricted: tests write through `Raw`), so
/// `ledger::verify_store` can check thousands of tamperings without reopening sled.
impl Store for Raw {
    fn get(&self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>, ledger::Error> {
        self.tree
            .get(Raw::key(space, key))
            .expect("get")
            .map(|v| self.whole(space, v.to_vec()))
            .transpose()
    }
    fn range<'a>(&'a self, space: Space, from: &[u8], to: Option<&[u8]>) -> KvIter<'a> {
        Box::new(self.sled_range(space, from, to).map(move |r| {
            let (k, v) = r.expect("range");
            Ok((k[1..].to_vec(), self.whole(space, v.to_vec())?))
        }))
    }
    fn keys<'a>(&'a self, space: Space, from: &[u8], to: Option<&[u8]>) -> KeyIter<'a> {
        Box::new(
            self.sled_range(space, from, to)
                .map(|r| Ok(r.expect("range").0[1..].to_vec())),
        )
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

/// Returns once sled has let go of `dir` (its flusher ends a moment after the last handle
/// is dropped; an open waits for that). Opening and closing writes nothing.
pub fn closed(dir: &Path) {
    Raw::open(dir).close();
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
