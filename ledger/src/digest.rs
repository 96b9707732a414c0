//! The ledger digest (`schemas::digest`): the chain head and receipt of every table, a
//! Merkle root over them, the event count and a time, handed to an outside party; and the
//! check that the ledger still extends an earlier digest (`verify --against`). Receipts are
//! recomputed from the records by `verify_store`, never read from the heads.
//!
//! Both work on a `Store` as well as on an open `Ledger`, so a ledger whose state no longer
//! loads (tampered heads or quarantine) can still be checked. A digest is only taken of a
//! ledger whose every chain verifies: certifying a damaged ledger would launder the damage.

use crate::store::Store;
use crate::verify::{verify_store, AtSeq, TableVerdict, VerifyReport};
use crate::{Error, Ledger};
use schemas::digest::{check_consistency, Consistency, Digest, DigestHead, TableNow};
use schemas::TableId;
use std::collections::BTreeMap;

/// Why no digest was taken.
#[derive(Debug, thiserror::Error)]
pub enum DigestRefused {
    #[error("the ledger does not verify ({}); a digest would certify the damage", report.failures())]
    DoesNotVerify { report: Box<VerifyReport> },
    #[error(transparent)]
    Store(#[from] Error),
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
    let heads = report.tables.iter().filter_map(|t| match t {
        TableVerdict::Ok { head, receipt, .. } => Some(DigestHead {
            table: head.table.clone(),
            seq: head.seq.0,
            head: head.hash,
            receipt: Some(*receipt),
        }),
        TableVerdict::Bad { .. } => None,
    });
    Ok(Digest::new(heads, created_at_ns))
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
    Ok(consistency(digest, &report, &found, now_ns))
}

fn consistency(
    digest: &Digest,
    report: &VerifyReport,
    found: &BTreeMap<TableId, AtSeq>,
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
    // The digest of the ledger now lists the tables that verify.
    let now = Digest::new(ok_heads, now_ns);
    check_consistency(digest, now, |d| now_tables.get(&d.table).cloned())
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
        Ok(consistency(digest, &report, &found, now_ns))
    }
}
