//! `verify`: recomputes every hash from genesis per table over the stored bytes and reports,
//! per table, either the verified head or the FIRST bad position and why. Detects modified,
//! deleted, inserted and reordered records (seq continuity, key/record agreement, hashes,
//! prev links, the persisted and in-memory heads).
//!
//! It cannot detect the removal of a table's newest records together with a matching
//! rewrite of its head: that needs a digest handed to an outside party (issue 5 item 3).

use crate::read::decode_head;
use crate::record::{self, be_u64, split_table_key, table_key};
use crate::store::Space;
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
        // Tables = those with a persisted head, those in memory, and those with records.
        let mut tables: BTreeMap<TableId, (Option<ChainHead>, Option<ChainHead>)> = BTreeMap::new();
        for (t, h) in self.lock().heads.iter() {
            tables.entry(t.clone()).or_default().0 = Some(h.clone());
        }
        let mut bad_keys: Vec<TableVerdict> = Vec::new();
        for kv in self.store.range(Space::Head, &[], None) {
            let (k, v) = kv?;
            match split_table_key(&k) {
                Ok((t, _)) => {
                    let h = decode_head(t.clone(), &v).ok();
                    tables.entry(t).or_default().1 = h;
                }
                Err(e) => bad_keys.push(bad_key(e)),
            }
        }
        let mut last_table: Option<TableId> = None;
        for kv in self.store.range(Space::Batch, &[], None) {
            let (k, _) = kv?;
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
        for (table, (mem, persisted)) in tables {
            out.push(self.verify_table(&table, mem, persisted)?);
        }
        out.extend(bad_keys);
        Ok(VerifyReport { tables: out })
    }

    fn verify_table(
        &self,
        table: &TableId,
        mem: Option<ChainHead>,
        persisted: Option<ChainHead>,
    ) -> Result<TableVerdict, Error> {
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
        for kv in self.store.range(Space::Batch, &tk, Some(&end)) {
            let (k, v) = kv?;
            let key_seq = match k.get(tk.len()..).map(be_u64) {
                Some(Ok(s)) => s,
                _ => return Ok(bad(next, VerifyProblem::Unreadable("record key".into()))),
            };
            let events = match record::decode_record(&v) {
                Ok(e) => e,
                Err(e) => {
                    return Ok(bad(
                        key_seq.min(next),
                        VerifyProblem::Unreadable(e.to_string()),
                    ))
                }
            };
            let record_seq = events.first().map(|e| e.seq.0).unwrap_or(0);
            if key_seq != record_seq {
                return Ok(bad(
                    key_seq.min(next),
                    VerifyProblem::KeyMismatch {
                        key_seq,
                        record_seq,
                    },
                ));
            }
            for e in events {
                if e.seq.0 != next {
                    return Ok(bad(
                        next.min(e.seq.0),
                        VerifyProblem::SeqDiscontinuity {
                            expected: next,
                            found: e.seq.0,
                        },
                    ));
                }
                let event = match codec::decode(&e.bytes) {
                    Ok((ev, _)) => ev,
                    Err(err) => return Ok(bad(next, VerifyProblem::Undecodable(err.to_string()))),
                };
                if event.table != *table || event.seq.0 != next {
                    return Ok(bad(
                        next,
                        VerifyProblem::WrongEvent {
                            table: event.table,
                            seq: event.seq.0,
                        },
                    ));
                }
                if event.prev != prev {
                    return Ok(bad(
                        next,
                        VerifyProblem::PrevMismatch {
                            expected: prev,
                            found: event.prev,
                        },
                    ));
                }
                let computed = event_hash(&prev, &e.bytes);
                if computed != e.hash {
                    return Ok(bad(
                        next,
                        VerifyProblem::HashMismatch {
                            stored: e.hash,
                            computed,
                        },
                    ));
                }
                if event.occurred_at_ns != e.occurred_at_ns {
                    return Ok(bad(
                        next,
                        VerifyProblem::FieldMismatch {
                            field: "occurred_at_ns",
                        },
                    ));
                }
                if event.round != e.round {
                    return Ok(bad(next, VerifyProblem::FieldMismatch { field: "round" }));
                }
                prev = computed;
                next += 1;
            }
        }
        let last = next - 1;
        for (which, h) in [("in-memory", mem), ("persisted", persisted)] {
            let (head_seq, head_hash) = h.map(|h| (h.seq.0, h.hash)).unwrap_or((0, GENESIS));
            if head_seq != last || head_hash != prev {
                return Ok(bad(
                    last.min(head_seq) + 1,
                    VerifyProblem::HeadMismatch {
                        which,
                        records_seq: last,
                        head_seq,
                        head_hash,
                    },
                ));
            }
        }
        Ok(TableVerdict::Ok {
            head: ChainHead {
                table: table.clone(),
                seq: schemas::Seq(last),
                hash: prev,
            },
            events: last,
        })
    }
}

fn bad_key(e: Error) -> TableVerdict {
    // A key whose table part does not parse: reported under a placeholder table name.
    TableVerdict::Bad {
        table: TableId::new("unreadable-key").expect("a valid id literal"),
        seq: 0,
        problem: VerifyProblem::Unreadable(e.to_string()),
    }
}
