//! `verify`: recomputes every hash from genesis per table over the stored bytes and reports,
//! per table, either the verified head or the FIRST bad position and why. Detects modified,
//! deleted, inserted and reordered records (seq continuity, key/record agreement, hashes,
//! prev links, the persisted and in-memory heads).
//!
//! It cannot detect the removal of a table's newest records together with a matching
//! rewrite of its head, nor a whole table removed: that needs a digest handed to an
//! outside party earlier (`digest`, `schemas::digest`), which `verify --against` checks.

use crate::read::decode_head;
use crate::record::{self, be_u64, split_table_key, table_key};
use crate::store::{Space, Store};
use crate::{Error, Ledger};
use schemas::{chain::event_hash, codec, ChainHead, Hash32, TableId, GENESIS};
use std::collections::BTreeMap;

/// The verdict on the whole ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    pub tables: Vec<TableVerdict>,
}

impl VerifyReport {
    pub fn is_ok(&self) -> bool {
        self.tables
            .iter()
            .all(|t| matches!(t, TableVerdict::Ok { .. }))
    }
}

/// One table's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableVerdict {
    Ok {
        head: ChainHead,
        events: u64,
    },
    /// `seq` is the first position that does not verify.
    Bad {
        table: TableId,
        seq: u64,
        problem: VerifyProblem,
    },
}

/// Why a position does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyProblem {
    #[error("record unreadable: {0}")]
    Unreadable(String),
    #[error("record key says first seq {key_seq}, the record starts at {record_seq}")]
    KeyMismatch { key_seq: u64, record_seq: u64 },
    #[error("expected seq {expected}, found {found}")]
    SeqDiscontinuity { expected: u64, found: u64 },
    #[error("stored bytes do not decode: {0}")]
    Undecodable(String),
    #[error("stored bytes are an event of table {table} seq {seq}")]
    WrongEvent { table: TableId, seq: u64 },
    #[error("prev {found} does not match the previous event's hash {expected}")]
    PrevMismatch { expected: Hash32, found: Hash32 },
    #[error("stored hash {stored} differs from the recomputed {computed}")]
    HashMismatch { stored: Hash32, computed: Hash32 },
    #[error("stored {field} differs from the event's bytes")]
    FieldMismatch { field: &'static str },
    #[error(
        "chain ends at seq {records_seq} but the {which} head says seq {head_seq} ({head_hash})"
    )]
    HeadMismatch {
        which: &'static str,
        records_seq: u64,
        head_seq: u64,
        head_hash: Hash32,
    },
}

impl Ledger {
    /// Verifies every table's chain. `Err` only for store failures; damage is in the report.
    pub fn verify(&self) -> Result<VerifyReport, Error> {
        let mem = self.lock().heads.clone();
        Ok(verify_store(self.store.as_ref(), Some(&mem), &BTreeMap::new())?.0)
    }
}

/// Verifies every table's chain in a store, without loading the ledger's state (so a
/// ledger whose heads or quarantine no longer parse can still be verified): the persisted
/// heads, and `mem` (the in-memory heads of an open ledger) when given, must agree with the
/// records. Also returns the hash the store holds at each `(table, seq)` of `hashes_at`
/// whose table verifies up to that seq (for the digest consistency check).
pub fn verify_store(
    store: &dyn Store,
    mem: Option<&BTreeMap<TableId, ChainHead>>,
    hashes_at: &BTreeMap<TableId, u64>,
) -> Result<(VerifyReport, BTreeMap<TableId, Hash32>), Error> {
    // Tables = those with a persisted head, those in memory, and those with records.
    let mut tables: BTreeMap<TableId, (Option<ChainHead>, Option<ChainHead>)> = BTreeMap::new();
    for (t, h) in mem.into_iter().flatten() {
        tables.entry(t.clone()).or_default().0 = Some(h.clone());
    }
    let mut bad_keys: Vec<TableVerdict> = Vec::new();
    for kv in store.range(Space::Head, &[], None) {
        let (k, v) = kv?;
        match split_table_key(&k) {
            Ok((t, [])) => {
                // An unreadable persisted head reads as "no head": reported as a mismatch.
                let h = decode_head(t.clone(), &v).unwrap_or_else(|_| ChainHead::empty(t.clone()));
                tables.entry(t).or_default().1 = Some(h);
            }
            Ok(_) => bad_keys.push(bad_key(crate::record::corrupt(
                "head key has trailing bytes",
            ))),
            Err(e) => bad_keys.push(bad_key(e)),
        }
    }
    let mut last_table: Option<TableId> = None;
    for k in store.keys(Space::Batch, &[], None) {
        let k = k?;
        match split_table_key(&k) {
            Ok((t, _)) => {
                if last_table.as_ref() != Some(&t) {
                    tables.entry(t.clone()).or_default();
                    last_table = Some(t);
                }
            }
            Err(e) => bad_keys.push(bad_key(e)),
        }
    }
    let mut out = Vec::new();
    let mut found = BTreeMap::new();
    for (table, (m, persisted)) in tables {
        let want = hashes_at.get(&table).copied();
        let (verdict, at) = verify_table(store, &table, m, mem.is_some(), persisted, want)?;
        if let Some(h) = at {
            found.insert(table, h);
        }
        out.push(verdict);
    }
    out.extend(bad_keys);
    Ok((VerifyReport { tables: out }, found))
}

/// One table: its verdict, and its hash at seq `want` if the chain verified up to it.
fn verify_table(
    store: &dyn Store,
    table: &TableId,
    mem: Option<ChainHead>,
    check_mem: bool,
    persisted: Option<ChainHead>,
    want: Option<u64>,
) -> Result<(TableVerdict, Option<Hash32>), Error> {
    let mut at = None;
    let bad = |seq: u64, problem: VerifyProblem| TableVerdict::Bad {
        table: table.clone(),
        seq,
        problem,
    };
    let tk = table_key(table);
    let mut end = tk.clone();
    end.extend_from_slice(&[0xff; 9]);
    let mut prev = GENESIS;
    let mut next = 1u64;
    for kv in store.range(Space::Batch, &tk, Some(&end)) {
        let (k, v) = match kv {
            Ok(kv) => kv,
            // A record whose bytes in the value log are damaged or gone: the chain is
            // unreadable from the first seq not yet verified.
            Err(Error::CorruptRecord { detail }) => {
                return Ok((bad(next, VerifyProblem::Unreadable(detail)), at))
            }
            Err(e) => return Err(e),
        };
        let key_seq = match k.get(tk.len()..).map(be_u64) {
            Some(Ok(s)) => s,
            _ => {
                return Ok((
                    bad(next, VerifyProblem::Unreadable("record key".into())),
                    at,
                ))
            }
        };
        let events = match record::decode_record(&v) {
            Ok(e) => e,
            Err(e) => {
                return Ok((
                    bad(key_seq.min(next), VerifyProblem::Unreadable(e.to_string())),
                    at,
                ))
            }
        };
        let record_seq = events.first().map(|e| e.seq.0).unwrap_or(0);
        if key_seq != record_seq {
            return Ok((
                bad(
                    key_seq.min(next),
                    VerifyProblem::KeyMismatch {
                        key_seq,
                        record_seq,
                    },
                ),
                at,
            ));
        }
        for e in events {
            // The first bad position is the first seq the stored chain fails to continue
            // with, even when the record holds a lower seq there (a repeat).
            if let Some(p) = check_event(table, next, &prev, &e) {
                return Ok((bad(next, p), at));
            }
            prev = e.hash;
            if want == Some(next) {
                at = Some(prev);
            }
            next += 1;
        }
    }
    let last = next - 1;
    let heads = [
        ("in-memory", mem, check_mem),
        ("persisted", persisted, true),
    ];
    for (which, h, check) in heads {
        if !check {
            continue;
        }
        let (head_seq, head_hash) = h.map(|h| (h.seq.0, h.hash)).unwrap_or((0, GENESIS));
        if head_seq != last || head_hash != prev {
            return Ok((
                bad(
                    last.min(head_seq) + 1,
                    VerifyProblem::HeadMismatch {
                        which,
                        records_seq: last,
                        head_seq,
                        head_hash,
                    },
                ),
                at,
            ));
        }
    }
    let verdict = TableVerdict::Ok {
        head: ChainHead {
            table: table.clone(),
            seq: schemas::Seq(last),
            hash: prev,
        },
        events: last,
    };
    Ok((verdict, at))
}

/// The problem of the stored event expected at seq `next` after `prev`, if any.
fn check_event(
    table: &TableId,
    next: u64,
    prev: &Hash32,
    e: &crate::StoredEvent,
) -> Option<VerifyProblem> {
    if e.seq.0 != next {
        return Some(VerifyProblem::SeqDiscontinuity {
            expected: next,
            found: e.seq.0,
        });
    }
    let event = match codec::decode(&e.bytes) {
        Ok((ev, _)) => ev,
        Err(err) => return Some(VerifyProblem::Undecodable(err.to_string())),
    };
    if event.table != *table || event.seq.0 != next {
        return Some(VerifyProblem::WrongEvent {
            table: event.table,
            seq: event.seq.0,
        });
    }
    if event.prev != *prev {
        return Some(VerifyProblem::PrevMismatch {
            expected: *prev,
            found: event.prev,
        });
    }
    let computed = event_hash(prev, &e.bytes);
    if computed != e.hash {
        return Some(VerifyProblem::HashMismatch {
            stored: e.hash,
            computed,
        });
    }
    if event.occurred_at_ns != e.occurred_at_ns {
        return Some(VerifyProblem::FieldMismatch {
            field: "occurred_at_ns",
        });
    }
    if event.round != e.round {
        return Some(VerifyProblem::FieldMismatch { field: "round" });
    }
    None
}

fn bad_key(e: Error) -> TableVerdict {
    // A key whose table part does not parse: reported under a placeholder table name.
    TableVerdict::Bad {
        table: TableId::new("unreadable-key").expect("a valid id literal"),
        seq: 0,
        problem: VerifyProblem::Unreadable(e.to_string()),
    }
}
