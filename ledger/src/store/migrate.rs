//! Copies every space of one `Store` into another, through the trait: the way a ledger
//! leaves sled for another store (DEPENDENCIES.md), and how that move is measured
//! (`examples/migrate_store.rs`).
//!
//! What is copied: every entry of every space, values as the source reads them (a record
//! of `Space::Batch` whole, not sled's pointer). The source's value-log positions
//! (`VALUES_END_KEY`, `RECOVER_FROM_KEY`) are its own and are left out.
//!
//! Invariants: the destination is empty at the start (else refused); entries go over in
//! key order, at most `COPY_BATCH_OPS` (or `COPY_BATCH_BYTES`) per commit, and one flush ends the copy. A copy cut
//! short is not a ledger: delete it and copy again.

use super::{Op, Space, Store, RECOVER_FROM_KEY, VALUES_END_KEY};
use crate::error::Error;

/// Entries per commit of the destination.
pub const COPY_BATCH_OPS: usize = 4096;

/// Bytes of keys and values past which a commit of the destination is made early.
pub const COPY_BATCH_BYTES: usize = 16 << 20;

/// What a copy moved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyReport {
    /// Entries copied, per space with any, in `Space::ALL` order.
    pub entries: Vec<(Space, u64)>,
    /// Bytes of keys and values copied.
    pub bytes: u64,
}

/// Copies every space of `from` into the empty store `to`, then flushes `to`.
pub fn copy_spaces(from: &dyn Store, to: &dyn Store) -> Result<CopyReport, Error> {
    if let Some(space) = Space::ALL
        .into_iter()
        .find(|s| to.keys(*s, &[], None).next().is_some())
    {
        return Err(Error::Store {
            op: "copy",
            detail: format!("the destination is not empty: it holds keys of {space:?}"),
        });
    }
    let mut report = CopyReport::default();
    for space in Space::ALL {
        let n = copy_space(from, to, space, &mut report.bytes)?;
        if n > 0 {
            report.entries.push((space, n));
        }
    }
    to.flush()?;
    Ok(report)
}

fn copy_space(
    from: &dyn Store,
    to: &dyn Store,
    space: Space,
    bytes: &mut u64,
) -> Result<u64, Error> {
    let mut ops = Vec::with_capacity(COPY_BATCH_OPS);
    let (mut n, mut batch_bytes) = (0u64, 0usize);
    for kv in from.range(space, &[], None) {
        let (k, v) = kv?;
        if space == Space::Meta && (k == VALUES_END_KEY || k == RECOVER_FROM_KEY) {
            continue;
        }
        *bytes += (k.len() + v.len()) as u64;
        batch_bytes += k.len() + v.len();
        n += 1;
        ops.push(Op::Put(space, k, v));
        if ops.len() == COPY_BATCH_OPS || batch_bytes >= COPY_BATCH_BYTES {
            to.commit(std::mem::take(&mut ops))?;
            batch_bytes = 0;
        }
    }
    if !ops.is_empty() {
        to.commit(ops)?;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::redb_store::RedbStore;
    use crate::store::SledStore;

    #[test]
    fn a_copy_holds_every_entry_as_read_and_refuses_a_full_destination() {
        let src_dir = tempfile::tempdir().expect("tempdir");
        let dst_dir = tempfile::tempdir().expect("tempdir");
        let src = SledStore::open(src_dir.path()).expect("sled");
        let record = vec![7u8; 5000];
        src.commit(vec![
            Op::Put(Space::Batch, b"rec".to_vec(), record.clone()),
            Op::Put(Space::Checkpoint, b"cp".to_vec(), b"kept".to_vec()),
            Op::Put(Space::Head, b"t".to_vec(), b"head".to_vec()),
        ])
        .expect("commit");
        let dst = RedbStore::open(dst_dir.path()).expect("redb");
        let report = copy_spaces(&src, &dst).expect("copy");
        assert_eq!(
            report.entries,
            [(Space::Batch, 1), (Space::Head, 1), (Space::Checkpoint, 1)]
        );
        // The record whole, not sled's pointer into the value log.
        assert_eq!(dst.get(Space::Batch, b"rec").expect("get"), Some(record));
        assert_eq!(dst.get(Space::Meta, VALUES_END_KEY).expect("get"), None);
        let err = copy_spaces(&src, &dst).expect_err("not empty");
        assert!(err.to_string().contains("not empty"), "{err}");
    }
}
