//! The ledger digest (`proofs::digest`): the chain head and receipt of every table and the
//! quarantine chain's head, a Merkle root over them, the event count and a time, handed to
//! an outside party; and the check that the ledger still extends an earlier digest
//! (`verify --against`). Receipts and the quarantine chain are recomputed from what is
//! stored (`verify_store`), never read from the heads.
//!
//! Both work on a `Store` as well as on an open `Ledger`, so a ledger whose state no longer
//! loads (tampered heads or quarantine) can still be checked. A digest is only taken of a
//! ledger whose every chain verifies: certifying a damaged ledger would launder the damage.

use crate::error::Error;
use crate::faces::Verifier;
use crate::journals::{read_journals, JournalState};
use crate::store::{Space, Store};
use crate::tier::removed::{removed_days, Removed};
use crate::verify::{verify_store, AtSeq, TableVerdict, VerifyReport};
use proofs::digest::{
    anchor_seqs, check_consistency, check_journals, locate_altered, BrokenTable, Consistency,
    Digest, DigestHead, QuarantineAnchor, QuarantineNow, RemovedSpan, TableConsistency, TableNow,
    DIGEST_VERSION_NO_JOURNALS,
};
use schemas::{Hash32, TableId};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Why no digest was taken.
#[derive(Debug, thiserror::Error)]
pub enum DigestRefused {
    /// The ledger does not verify.
    #[error("the ledger does not verify ({}); a digest would certify the damage", report.failures())]
    DoesNotVerify {
        /// Where it does not verify.
        report: Box<VerifyReport>,
    },
    /// An API journal does not chain at `line`.
    #[error("the API journal {name} does not verify at line {line} ({problem}); a digest would certify the damage")]
    JournalDoesNotVerify {
        /// The journal's file name.
        name: String,
        /// The first line, 1-based, that does not chain.
        line: u64,
        /// Why that line does not chain.
        problem: String,
    },
    /// A day removed by retention holds part of a table's chain. A digest names each
    /// table's receipt from seq 1 and hashes at anchors inside that part: both are gone.
    #[error("table {table} seqs {first_seq}..={last_seq} (day {day}) were removed by retention; a digest names the receipt from seq 1 and hashes inside them, which are gone")]
    Removed {
        /// The table.
        table: TableId,
        /// The removed gaming day, `YYYY-MM-DD`.
        day: String,
        /// The day's first seq of the table.
        first_seq: u64,
        /// The day's last seq of the table.
        last_seq: u64,
    },
    /// Reading the ledger failed.
    #[error(transparent)]
    Store(#[from] Error),
}

/// `digest` of `store` naming each table's anchors and the API's journals in `api_dir` too
/// (version 4); refused when a journal does not chain. `digest` must name the quarantine
/// (a store's digest does).
pub fn to_version_4(
    store: &dyn Store,
    digest: Digest,
    api_dir: &Path,
) -> Result<Digest, DigestRefused> {
    let anchors = anchors_of(store, &digest)?;
    let states = read_journals(api_dir, |_| None)?;
    if let Some(s) = states.iter().find(|s| s.problem.is_some()) {
        let (line, problem) = s.problem.clone().expect("found by it");
        return Err(DigestRefused::JournalDoesNotVerify {
            name: s.name.clone(),
            line,
            problem,
        });
    }
    let journals = states.iter().map(JournalState::anchor).collect();
    Ok(digest.with_anchors_and_journals(|h| anchors[&h.table].clone(), journals))
}

/// Each table's hashes at its anchor seqs (`anchor_seqs`), from a store whose chains
/// verified.
fn anchors_of(store: &dyn Store, digest: &Digest) -> Result<BTreeMap<TableId, Vec<Hash32>>, Error> {
    let mut anchors = BTreeMap::new();
    for h in &digest.tables {
        let found = hashes_at(store, &h.table, &anchor_seqs(h.seq))?;
        let hashes: Option<Vec<Hash32>> = found.into_iter().collect();
        let hashes = hashes.ok_or_else(|| {
            crate::record::corrupt(&format!(
                "table {}: an event below its verified head is not stored",
                h.table
            ))
        })?;
        anchors.insert(h.table.clone(), hashes);
    }
    Ok(anchors)
}

/// The stored hashes of `table` at `seqs` (descending), `None` where it holds none. One
/// record read per seq at most: neighbours share a record. A seq of a day removed by
/// retention is `Err(RetentionRemoved)`: its hash is gone.
pub fn hashes_at(
    store: &dyn Store,
    table: &TableId,
    seqs: &[u64],
) -> Result<Vec<Option<Hash32>>, Error> {
    let prefix = crate::record::table_key(table);
    let mut record: Vec<crate::record::StoredEvent> = Vec::new();
    let mut out = Vec::with_capacity(seqs.len());
    for &seq in seqs {
        let held =
            |r: &[crate::record::StoredEvent]| r.iter().find(|e| e.seq.0 == seq).map(|e| e.hash);
        if held(&record).is_none() {
            let at = crate::record::seq_key(table, seq);
            record = match store.last_key_at_or_before(Space::Batch, &prefix, &at)? {
                Some(k) => match store.get(Space::Batch, &k)? {
                    Some(v) => crate::record::decode_record(&v)?,
                    None => Vec::new(),
                },
                None => Vec::new(),
            };
        }
        out.push(held(&record));
    }
    Ok(out)
}

/// `hashes_at`, with `None` at each seq of a day removed by retention: where the first
/// altered event lies is then bounded by the anchors the ledger still holds.
fn hashes_held_at(
    store: &dyn Store,
    table: &TableId,
    seqs: &[u64],
) -> Result<Vec<Option<Hash32>>, Error> {
    match hashes_at(store, table, seqs) {
        Err(Error::RetentionRemoved { .. }) => {}
        other => return other,
    }
    let mut out = Vec::with_capacity(seqs.len());
    for seq in seqs {
        match hashes_at(store, table, &[*seq]) {
            Ok(h) => out.extend(h),
            Err(Error::RetentionRemoved { .. }) => out.push(None),
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// Where each table `c` finds rewritten was first altered, from the digest's anchors
/// (version 4) and the store's hashes at them.
fn locate(store: &dyn Store, digest: &Digest, c: Consistency) -> Result<Consistency, Error> {
    let mut altered = Vec::new();
    for t in &c.tables {
        let TableConsistency::HashDiffers { table, .. } = t else {
            continue;
        };
        let Some(d) = digest.tables.iter().find(|d| &d.table == table) else {
            continue;
        };
        let now = hashes_held_at(store, table, &anchor_seqs(d.seq))?;
        altered.extend(locate_altered(d, &now));
    }
    Ok(c.with_first_altered(altered))
}

/// `c`, the check of a store against `digest`, with the API's journals in `api_dir`
/// checked too: against the digest's heads (version 4), and each for its own chain.
pub fn check_journals_against(
    store: &dyn Store,
    c: Consistency,
    digest: &Digest,
    api_dir: &Path,
) -> Result<Consistency, Error> {
    let named = |name: &str| {
        digest
            .journals
            .iter()
            .find(|j| j.name == name)
            .map(|j| j.entries)
    };
    let states = read_journals(api_dir, named)?;
    let now: Vec<_> = states.iter().map(JournalState::now).collect();
    let mut c = c.with_journals(check_journals(digest, &now));
    let all_chain = states.iter().all(|s| s.problem.is_none());
    if all_chain && c.now.version == DIGEST_VERSION_NO_JOURNALS {
        let anchors = match anchors_of(store, &c.now) {
            Ok(a) => a,
            // An anchor lies in a day removed by retention: the digest of the ledger now
            // stays version 3, which names no anchors. The check itself is unchanged.
            Err(Error::RetentionRemoved { .. }) => return Ok(c),
            Err(e) => return Err(e),
        };
        let journals = states.iter().map(JournalState::anchor).collect();
        c.now = c
            .now
            .with_anchors_and_journals(|h| anchors[&h.table].clone(), journals);
    }
    Ok(c)
}

/// The digest of a store whose chains all verify, stamped `created_at_ns`.
pub fn digest_store(store: &dyn Store, created_at_ns: i64) -> Result<Digest, DigestRefused> {
    let (report, _) = verify_store(store, None, &BTreeMap::new())?;
    digest_of(report, created_at_ns)
}

fn digest_of(report: VerifyReport, created_at_ns: i64) -> Result<Digest, DigestRefused> {
    if !report.is_ok() {
        return Err(DigestRefused::DoesNotVerify {
            report: Box::new(report),
        });
    }
    let removed = report.tables.iter().find_map(|t| match t {
        TableVerdict::Ok { head, .. } => report.removed.ranges(&head.table).first(),
        TableVerdict::Bad { .. } => None,
    });
    if let Some(r) = removed {
        return Err(DigestRefused::Removed {
            table: r.table.clone(),
            day: r.day.clone(),
            first_seq: r.first_seq,
            last_seq: r.last_seq,
        });
    }
    let crate::QuarantineVerdict::Ok { head: q, .. } = report.quarantine else {
        unreachable!("a report that is ok has a quarantine that verifies")
    };
    let heads = report.tables.iter().filter_map(|t| match t {
        TableVerdict::Ok { head, receipt, .. } => Some(DigestHead {
            table: head.table.clone(),
            seq: head.seq.0,
            head: head.hash,
            receipt: Some(*receipt),
            anchors: Vec::new(),
        }),
        TableVerdict::Bad { .. } => None,
    });
    Ok(Digest::new(heads, created_at_ns).with_quarantine(anchor(&q)))
}

fn anchor(q: &crate::quarantine::QuarantineHead) -> QuarantineAnchor {
    QuarantineAnchor {
        entries: q.entries,
        hash: q.hash,
    }
}

/// What the store's quarantine says for the consistency check of `digest` (only a
/// version 3 digest looks at it). A second read of the entries, after `verify_store`'s:
/// the quarantine is small beside the records.
fn quarantine_now(store: &dyn Store, digest: &Digest) -> Result<QuarantineNow, Error> {
    let at = digest.quarantine.map(|q| q.entries);
    let (verdict, hash_at) = crate::quarantine::verify_quarantine_at(store, at)?;
    Ok(match verdict {
        crate::QuarantineVerdict::Ok { head, .. } => QuarantineNow {
            entries: head.entries,
            hash_at_digest_entries: hash_at,
            chain_problem: None,
        },
        crate::QuarantineVerdict::Bad { problem } => QuarantineNow {
            entries: 0,
            hash_at_digest_entries: hash_at,
            chain_problem: Some(problem),
        },
    })
}

/// Checks that the store still extends `digest` (which must have passed `Digest::check`):
/// every table of the digest is present, verifies from genesis to its current head, and
/// holds the digest's hash at the digest's seq. `now_ns` stamps the digest of the ledger
/// now, included in the result.
pub fn check_store_against(
    store: &dyn Store,
    digest: &Digest,
    now_ns: i64,
) -> Result<Consistency, Error> {
    let (report, found) = verify_store(store, None, &digest.seqs())?;
    let q = quarantine_now(store, digest)?;
    let at = Found {
        found,
        removed: removed_days(store)?,
    };
    locate(store, digest, consistency(digest, &report, &at, &q, now_ns))
}

/// What the store holds at each digest seq: the verified hashes and receipts, and the
/// days removed by retention, whose seals give their last hashes.
struct Found {
    found: BTreeMap<TableId, AtSeq>,
    removed: Removed,
}

impl Found {
    /// What the consistency check reads of a verified table at `seq`, the digest's seq.
    fn at(&self, table: &TableId, seq: Option<u64>) -> TableNowAt {
        let at = self.found.get(table);
        let range = seq.and_then(|s| {
            let ranges = self.removed.ranges(table);
            ranges.iter().rev().find(|r| r.first_seq <= s)
        });
        let Some(r) = range else {
            return TableNowAt {
                hash: at.map(|a| a.hash),
                receipt: at.map(|a| a.receipt),
                removed: None,
            };
        };
        // The seal gives the removed range's last hash; the receipt from seq 1 is gone.
        let sealed = (seq == Some(r.last_seq)).then_some(r.head_hash);
        TableNowAt {
            hash: at.map(|a| a.hash).or(sealed),
            receipt: None,
            removed: Some(RemovedSpan {
                day: r.day.clone(),
                first_seq: r.first_seq,
                last_seq: r.last_seq,
            }),
        }
    }
}

/// A table's hash, receipt and removed day at a digest's seq.
struct TableNowAt {
    hash: Option<Hash32>,
    receipt: Option<Hash32>,
    removed: Option<RemovedSpan>,
}

fn consistency(
    digest: &Digest,
    report: &VerifyReport,
    found: &Found,
    quarantine: &QuarantineNow,
    now_ns: i64,
) -> Consistency {
    let (ok_heads, now_tables) = tables_now(report, found, &digest.seqs());
    // The digest of the ledger now lists the tables that verify, and the quarantine if it
    // does.
    let mut now = Digest::new(ok_heads, now_ns);
    if let crate::QuarantineVerdict::Ok { head, .. } = &report.quarantine {
        now = now.with_quarantine(anchor(head));
    }
    let listed: BTreeSet<&TableId> = digest.tables.iter().map(|h| &h.table).collect();
    let broken_new = report
        .tables
        .iter()
        .filter_map(|t| match t {
            TableVerdict::Bad {
                table,
                seq,
                problem,
            } if !listed.contains(table) => Some(BrokenTable {
                table: table.clone(),
                seq: *seq,
                problem: problem.to_string(),
            }),
            _ => None,
        })
        .collect();
    let now_of = |d: &DigestHead| now_tables.get(&d.table).cloned();
    let c = check_consistency(digest, now, now_of, quarantine).with_broken_new_tables(broken_new);
    match &report.arrival {
        crate::ArrivalVerdict::Ok { .. } => c,
        crate::ArrivalVerdict::Bad { call_id, problem } => {
            c.with_arrival_problem(format!("append call {call_id}: {problem}"))
        }
    }
}

/// The heads of the tables that verify, and each table as the check against a digest
/// reads it now.
fn tables_now(
    report: &VerifyReport,
    found: &Found,
    seqs: &BTreeMap<TableId, u64>,
) -> (Vec<DigestHead>, BTreeMap<TableId, TableNow>) {
    let mut now_tables = BTreeMap::new();
    let mut ok_heads = Vec::new();
    for t in &report.tables {
        let (table, now) = match t {
            TableVerdict::Ok { head, receipt, .. } => {
                ok_heads.push(DigestHead {
                    table: head.table.clone(),
                    seq: head.seq.0,
                    head: head.hash,
                    receipt: Some(*receipt),
                    anchors: Vec::new(),
                });
                let at = found.at(&head.table, seqs.get(&head.table).copied());
                let now = TableNow {
                    head_seq: head.seq.0,
                    hash_at_digest_seq: at.hash,
                    receipt_at_digest_seq: at.receipt,
                    chain_problem: None,
                    removed: at.removed,
                };
                (head.table.clone(), now)
            }
            TableVerdict::Bad {
                table,
                seq,
                problem,
            } => {
                let now = TableNow {
                    // Some records exist (the table was listed): never "missing".
                    head_seq: (*seq).max(1),
                    hash_at_digest_seq: found.found.get(table).map(|a| a.hash),
                    receipt_at_digest_seq: found.found.get(table).map(|a| a.receipt),
                    chain_problem: Some((*seq, problem.to_string())),
                    removed: None,
                };
                (table.clone(), now)
            }
        };
        now_tables.insert(table, now);
    }
    (ok_heads, now_tables)
}

impl Verifier<'_> {
    /// The digest of this ledger, stamped `created_at_ns`; refused if a chain does not verify.
    pub fn digest(&self, created_at_ns: i64) -> Result<Digest, DigestRefused> {
        digest_of(self.verify()?, created_at_ns)
    }

    /// Checks that this ledger still extends `digest` (see `check_store_against`).
    pub fn check_against(&self, digest: &Digest, now_ns: i64) -> Result<Consistency, Error> {
        let mem = self.lock().heads.clone();
        let (report, found) = verify_store(self.store.as_ref(), Some(&mem), &digest.seqs())?;
        let q = quarantine_now(self.store.as_ref(), digest)?;
        let at = Found {
            found,
            removed: removed_days(self.store.as_ref())?,
        };
        let c = consistency(digest, &report, &at, &q, now_ns);
        locate(self.store.as_ref(), digest, c)
    }
}
