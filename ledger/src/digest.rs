//! The ledger digest (`schemas::digest`): the chain head and receipt of every table and the
//! quarantine chain's head, a Merkle root over them, the event count and a time, handed to
//! an outside party; and the check that the ledger still extends an earlier digest
//! (`verify --against`). Receipts and the quarantine chain are recomputed from what is
//! stored (`verify_store`), never read from the heads.
//!
//! Both work on a `Store` as well as on an open `Ledger`, so a ledger whose state no longer
//! loads (tampered heads or quarantine) can still be checked. A digest is only taken of a
//! ledger whose every chain verifies: certifying a damaged ledger would launder the damage.

use crate::journals::{read_journals, JournalState};
use crate::store::Store;
use crate::verify::{verify_store, AtSeq, TableVerdict, VerifyReport};
use crate::{Error, Ledger};
use schemas::digest::{
    check_consistency, check_journals, BrokenTable, Consistency, Digest, DigestHead,
    QuarantineAnchor, QuarantineNow, TableNow, DIGEST_VERSION_NO_JOURNALS,
};
use schemas::TableId;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Why no digest was taken.
#[derive(Debug, thiserror::Error)]
pub enum DigestRefused {
    #[error("the ledger does not verify ({}); a digest would certify the damage", report.failures())]
    DoesNotVerify { report: Box<VerifyReport> },
    #[error("the API journal {name} does not verify at line {line} ({problem}); a digest would certify the damage")]
    JournalDoesNotVerify {
        name: String,
        line: u64,
        problem: String,
    },
    #[error(transparent)]
    Store(#[from] Error),
}

/// `digest` naming the API's journals in `api_dir` too (version 4); refused when one
/// does not chain. `digest` must name the quarantine (a store's digest does).
pub fn with_journals(digest: Digest, api_dir: &Path) -> Result<Digest, DigestRefused> {
    let states = read_journals(api_dir, |_| None)?;
    if let Some(s) = states.iter().find(|s| s.problem.is_some()) {
        let (line, problem) = s.problem.clone().expect("found by it");
        return Err(DigestRefused::JournalDoesNotVerify {
            name: s.name.clone(),
            line,
            problem,
        });
    }
    Ok(digest.with_journals(states.iter().map(JournalState::anchor).collect()))
}

/// `c`, the check of a store against `digest`, with the API's journals in `api_dir`
/// checked too: against the digest's heads (version 4), and each for its own chain.
pub fn check_journals_against(
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
        c.now = c
            .now
            .with_journals(states.iter().map(JournalState::anchor).collect());
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
    let crate::QuarantineVerdict::Ok { head: q, .. } = report.quarantine else {
        unreachable!("a report that is ok has a quarantine that verifies")
    };
    let heads = report.tables.iter().filter_map(|t| match t {
        TableVerdict::Ok { head, receipt, .. } => Some(DigestHead {
            table: head.table.clone(),
            seq: head.seq.0,
            head: head.hash,
            receipt: Some(*receipt),
        }),
        TableVerdict::Bad { .. } => None,
    });
    Ok(Digest::new(heads, created_at_ns).with_quarantine(anchor(&q)))
}

fn anchor(q: &crate::QuarantineHead) -> QuarantineAnchor {
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
    Ok(consistency(digest, &report, &found, &q, now_ns))
}

fn consistency(
    digest: &Digest,
    report: &VerifyReport,
    found: &BTreeMap<TableId, AtSeq>,
    quarantine: &QuarantineNow,
    now_ns: i64,
) -> Consistency {
    let mut now_tables: BTreeMap<TableId, TableNow> = BTreeMap::new();
    let mut ok_heads = Vec::new();
    for t in &report.tables {
        match t {
            TableVerdict::Ok { head, receipt, .. } => {
                ok_heads.push(DigestHead {
                    table: head.table.clone(),
                    seq: head.seq.0,
                    head: head.hash,
                    receipt: Some(*receipt),
                });
                let at = found.get(&head.table);
                now_tables.insert(
                    head.table.clone(),
                    TableNow {
                        head_seq: head.seq.0,
                        hash_at_digest_seq: at.map(|a| a.hash),
                        receipt_at_digest_seq: at.map(|a| a.receipt),
                        chain_problem: None,
                    },
                );
            }
            TableVerdict::Bad {
                table,
                seq,
                problem,
            } => {
                now_tables.insert(
                    table.clone(),
                    TableNow {
                        // Some records exist (the table was listed): never "missing".
                        head_seq: (*seq).max(1),
                        hash_at_digest_seq: found.get(table).map(|a| a.hash),
                        receipt_at_digest_seq: found.get(table).map(|a| a.receipt),
                        chain_problem: Some((*seq, problem.to_string())),
                    },
                );
            }
        }
    }
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
    let c = check_consistency(
        digest,
        now,
        |d| now_tables.get(&d.table).cloned(),
        quarantine,
    )
    .with_broken_new_tables(broken_new);
    match &report.arrival {
        crate::ArrivalVerdict::Ok { .. } => c,
        crate::ArrivalVerdict::Bad { call_id, problem } => {
            c.with_arrival_problem(format!("append call {call_id}: {problem}"))
        }
    }
}

impl Ledger {
    /// The digest of this ledger, stamped `created_at_ns`; refused if a chain does not verify.
    pub fn digest(&self, created_at_ns: i64) -> Result<Digest, DigestRefused> {
        digest_of(self.verify()?, created_at_ns)
    }

    /// Checks that this ledger still extends `digest` (see `check_store_against`).
    pub fn check_against(&self, digest: &Digest, now_ns: i64) -> Result<Consistency, Error> {
        let mem = self.lock().heads.clone();
        let (report, found) = verify_store(self.store.as_ref(), Some(&mem), &digest.seqs())?;
        let q = quarantine_now(self.store.as_ref(), digest)?;
        Ok(consistency(digest, &report, &found, &q, now_ns))
    }
}
