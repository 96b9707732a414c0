//! The read model's keys and values through the ledger's `Store` trait: a store of its own
//! in `<model dir>/store`, every key in `Space::Model`.
//!
//! Why: every persistent byte goes through `Store`, so the model runs on whichever store
//! the ledger does (sled in production, redb under `ROUNDLEDGER_TEST_STORE=redb`).
//!
//! Invariants:
//! - One pass is one `Store::commit`, so a crash loses or double-counts nothing.
//! - `insert_if_absent` holds a lock across its read and write: of two writers of one
//!   key, the second sees the first's value.
//! - Blocking (the store): call from `spawn_blocking`.

use ledger::store::{choice, Op, Space, Store};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The subdirectory of the model's directory that holds its store.
pub const STORE_DIR: &str = "store";

/// A key and its value, as the model sees them (the model's own prefix byte first).
pub type Entry = (Vec<u8>, Vec<u8>);

/// An entry or the store's error.
pub type EntryResult = Result<Entry, ledger::Error>;

/// The model's store, and the temporary directory it lives in, if any.
pub struct ModelKv {
    /// Declared before `_temporary`: the store closes before its directory goes.
    store: Box<dyn Store>,
    /// Serializes `insert_if_absent`.
    write: Mutex<()>,
    _temporary: Option<tempfile::TempDir>,
}

/// One pass's writes, applied in one commit.
#[derive(Default)]
pub struct Batch {
    ops: Vec<Op>,
}

impl Batch {
    /// Writes `v` at `k`.
    pub fn insert(&mut self, k: Vec<u8>, v: Vec<u8>) {
        self.ops.push(Op::Put(Space::Model, k, v));
    }

    /// Removes `k`.
    pub fn remove(&mut self, k: Vec<u8>) {
        self.ops.push(Op::Remove(Space::Model, k));
    }
}

/// The store directory of a model directory.
pub fn store_dir(model_dir: &Path) -> PathBuf {
    model_dir.join(STORE_DIR)
}

impl ModelKv {
    /// Opens (or creates) the store of the model at `model_dir`, the kind the ledger
    /// opens (`ledger::store::choice`).
    pub fn open(model_dir: &Path) -> Result<ModelKv, ledger::Error> {
        let dir = store_dir(model_dir);
        std::fs::create_dir_all(&dir).map_err(|e| ledger::Error::Store {
            op: "open",
            detail: format!("{}: {e}", dir.display()),
        })?;
        Ok(ModelKv::new(choice::open_store(&dir)?, None))
    }

    /// A store in a temporary directory, removed when dropped.
    pub fn temporary() -> Result<ModelKv, ledger::Error> {
        let tmp = tempfile::tempdir().map_err(|e| ledger::Error::Store {
            op: "open",
            detail: format!("a temporary read model: {e}"),
        })?;
        let store = choice::open_store(&store_dir(tmp.path()))?;
        Ok(ModelKv::new(store, Some(tmp)))
    }

    fn new(store: Box<dyn Store>, tmp: Option<tempfile::TempDir>) -> ModelKv {
        ModelKv {
            store,
            write: Mutex::new(()),
            _temporary: tmp,
        }
    }

    /// The value at `k`.
    pub fn get(&self, k: &[u8]) -> Result<Option<Vec<u8>>, ledger::Error> {
        self.store.get(Space::Model, k)
    }

    /// Writes `v` at `k` (one commit).
    pub fn insert(&self, k: &[u8], v: Vec<u8>) -> Result<(), ledger::Error> {
        self.store
            .commit(vec![Op::Put(Space::Model, k.to_vec(), v)])
    }

    /// Writes `v` at `k` unless a value is there; returns whether it wrote.
    pub fn insert_if_absent(&self, k: &[u8], v: Vec<u8>) -> Result<bool, ledger::Error> {
        let _held = self.write.lock().unwrap_or_else(|p| p.into_inner());
        if self.get(k)?.is_some() {
            return Ok(false);
        }
        self.insert(k, v)?;
        Ok(true)
    }

    /// Applies a pass's writes in one atomic commit.
    pub fn apply(&self, batch: Batch) -> Result<(), ledger::Error> {
        self.store.commit(batch.ops)
    }

    /// Makes every commit durable.
    pub fn flush(&self) -> Result<(), ledger::Error> {
        self.store.flush()
    }

    /// Whether the model holds no key.
    pub fn is_empty(&self) -> Result<bool, ledger::Error> {
        Ok(self.keys_from(&[]).next().transpose()?.is_none())
    }

    /// Removes every key, in commits of at most `CLEAR_OPS_MAX` removals.
    pub fn clear(&self) -> Result<(), ledger::Error> {
        loop {
            let keys: Vec<Vec<u8>> = self
                .keys_from(&[])
                .take(CLEAR_OPS_MAX)
                .collect::<Result<_, _>>()?;
            if keys.is_empty() {
                return Ok(());
            }
            let ops = keys
                .into_iter()
                .map(|k| Op::Remove(Space::Model, k))
                .collect();
            self.store.commit(ops)?;
        }
    }

    fn keys_from(&self, from: &[u8]) -> impl Iterator<Item = Result<Vec<u8>, ledger::Error>> + '_ {
        self.store.keys(Space::Model, from, None)
    }

    /// Every entry whose key starts with `prefix`, in key order.
    pub fn scan_prefix(&self, prefix: &[u8]) -> Range<'_> {
        let hi = prefix_end(prefix).map_or(Bound::Unbounded, Bound::Excluded);
        self.range(Bound::Included(prefix.to_vec()), hi)
    }

    /// The entries between two bounds.
    pub fn range(&self, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> Range<'_> {
        Range {
            store: self.store.as_ref(),
            from: match lo {
                Bound::Included(k) => k,
                Bound::Excluded(mut k) => {
                    // The least key after `k`.
                    k.push(0);
                    k
                }
                Bound::Unbounded => Vec::new(),
            },
            to: match hi {
                Bound::Excluded(k) => Some(k),
                Bound::Included(mut k) => {
                    k.push(0);
                    Some(k)
                }
                Bound::Unbounded => None,
            },
        }
    }

    /// Every entry, in key order.
    pub fn iter(&self) -> Range<'_> {
        self.range(Bound::Unbounded, Bound::Unbounded)
    }
}

/// Removals per commit while the model is cleared.
pub const CLEAR_OPS_MAX: usize = 4096;

/// The least key greater than every key starting with `prefix` (`None`: no such key).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// A range of the model's keys, read forwards (`iter`) or backwards (`rev`).
pub struct Range<'a> {
    store: &'a dyn Store,
    from: Vec<u8>,
    to: Option<Vec<u8>>,
}

impl<'a> Range<'a> {
    /// The entries in key order.
    pub fn fwd(self) -> Box<dyn Iterator<Item = EntryResult> + 'a> {
        self.store
            .range(Space::Model, &self.from, self.to.as_deref())
    }

    /// The entries in descending key order.
    pub fn rev(self) -> Box<dyn Iterator<Item = EntryResult> + 'a> {
        self.store
            .range_rev(Space::Model, &self.from, self.to.as_deref())
    }

    /// The first entry.
    pub fn first(self) -> Option<EntryResult> {
        self.fwd().next()
    }

    /// The last entry.
    pub fn last(self) -> Option<EntryResult> {
        self.rev().next()
    }
}

impl<'a> IntoIterator for Range<'a> {
    type Item = EntryResult;
    type IntoIter = Box<dyn Iterator<Item = EntryResult> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.fwd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_read_both_ways_and_a_clear_leaves_nothing_after_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let kv = ModelKv::open(dir.path()).expect("open");
            let mut b = Batch::default();
            for k in [b"a1".as_slice(), b"a2", b"a\xff", b"b1", b"c"] {
                b.insert(k.to_vec(), k.to_vec());
            }
            kv.apply(b).expect("apply");
            kv.flush().expect("flush");
        }
        let kv = ModelKv::open(dir.path()).expect("reopen");
        let keys = |r: Range<'_>, back: bool| -> Vec<Vec<u8>> {
            let it = if back { r.rev() } else { r.fwd() };
            it.map(|e| e.expect("read").0).collect()
        };
        assert_eq!(
            keys(kv.scan_prefix(b"a"), false),
            [b"a1".to_vec(), b"a2".to_vec(), b"a\xff".to_vec()]
        );
        assert_eq!(keys(kv.scan_prefix(b"a"), true)[0], b"a\xff".to_vec());
        let incl = kv.range(
            Bound::Included(b"a2".to_vec()),
            Bound::Included(b"b1".to_vec()),
        );
        assert_eq!(keys(incl, false).len(), 3);
        let excl = kv.range(
            Bound::Excluded(b"a2".to_vec()),
            Bound::Excluded(b"b1".to_vec()),
        );
        assert_eq!(keys(excl, false), [b"a\xff".to_vec()]);
        assert!(!kv.insert_if_absent(b"c", b"other".to_vec()).expect("cas"));
        assert_eq!(kv.get(b"c").expect("get"), Some(b"c".to_vec()));
        assert!(kv.insert_if_absent(b"d", b"d".to_vec()).expect("cas"));
        kv.clear().expect("clear");
        assert!(kv.is_empty().expect("empty"));
        assert_eq!(prefix_end(&[1, 0xff]), Some(vec![2]));
        assert_eq!(prefix_end(&[0xff]), None);
    }
}
