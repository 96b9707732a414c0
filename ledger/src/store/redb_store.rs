//! The second `Store`: redb 2.x, one file, every space in one table.
//!
//! Why: it proves the store boundary (the test suite runs on it, `choice`), and it is the
//! measured candidate for leaving sled 0.34 (DEPENDENCIES.md). It is not what production
//! opens: `Ledger::open` keeps sled unless the test switch names redb.
//!
//! Layout: the file `ledger.redb` in the ledger directory, one table `ledger`, key = space
//! prefix ++ key, as sled's tree. Every value is kept inline: redb writes a commit whole or
//! not at all, so there is no value log and nothing `unreferenced` to recover.
//!
//! Durability: a commit is atomic and visible at once, durable at the next `flush` (a
//! write transaction with `Durability::Immediate`), as the trait asks.
//!
//! Reads: a range is read in chunks of `RANGE_CHUNK_ENTRIES`, each in its own read
//! transaction, so a scan over a large space holds one chunk in memory.

use super::{free_bytes, KeyIter, Kv, KvIter, Op, Space, Store, LOCK_WAIT, REMOVABLE_SPACES};
use super::{tier_ref, STORE_FREE_BYTES_MIN};
use crate::error::Error;
use redb::{Database, Durability, TableDefinition};
use std::collections::VecDeque;
use std::ops::Bound;
use std::path::{Path, PathBuf};

/// The file a redb ledger keeps everything in, inside the ledger directory.
pub const REDB_FILE: &str = "ledger.redb";

/// The one table: space prefix ++ key -> value.
const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("ledger");

/// Entries read per read transaction while a range is scanned.
pub const RANGE_CHUNK_ENTRIES: usize = 1024;

/// Bytes of keys and values past which a chunk ends early (event records are large).
pub const RANGE_CHUNK_BYTES: usize = 4 << 20;

/// redb's page cache: the same budget as sled's (`SLED_CACHE_BYTES`).
pub const REDB_CACHE_BYTES: usize = super::SLED_CACHE_BYTES as usize;

/// A ledger's spaces in one redb file.
pub struct RedbStore {
    db: Database,
    /// The ledger directory, whose file system's free space `commit` checks.
    dir: PathBuf,
}

fn redb_err<E: std::fmt::Display>(op: &'static str) -> impl Fn(E) -> Error {
    move |e| Error::Store {
        op,
        detail: format!("redb: {e}"),
    }
}

fn full_key(space: Space, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.push(space.prefix());
    k.extend_from_slice(key);
    k
}

impl RedbStore {
    /// Opens (or creates) `dir/ledger.redb`. redb locks the file: a second opener waits up
    /// to `LOCK_WAIT`, then gets `Error::Locked`.
    pub fn open(dir: &Path) -> Result<RedbStore, Error> {
        std::fs::create_dir_all(dir).map_err(|e| Error::Store {
            op: "open",
            detail: format!("{}: {e}", dir.display()),
        })?;
        let path = dir.join(REDB_FILE);
        let deadline = std::time::Instant::now() + LOCK_WAIT;
        let db = loop {
            match redb::Builder::new()
                .set_cache_size(REDB_CACHE_BYTES)
                .create(&path)
            {
                Ok(db) => break db,
                Err(redb::DatabaseError::DatabaseAlreadyOpen) => {
                    if std::time::Instant::now() >= deadline {
                        return Err(Error::Locked {
                            path: dir.to_path_buf(),
                            detail: "redb: the database file is open elsewhere".to_string(),
                        });
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => return Err(redb_err("open")(format!("{}: {e}", path.display()))),
            }
        };
        let store = RedbStore {
            db,
            dir: dir.to_path_buf(),
        };
        store.ensure_table()?;
        Ok(store)
    }

    /// Creates the table, so that reads of an empty ledger find it.
    fn ensure_table(&self) -> Result<(), Error> {
        let tx = self.db.begin_write().map_err(redb_err("open"))?;
        tx.open_table(TABLE).map_err(redb_err("open table"))?;
        tx.commit().map_err(redb_err("open"))
    }

    /// Up to `RANGE_CHUNK_ENTRIES` entries between `lo` and `hi` (full keys), in key
    /// order, or from the end when `back`.
    /// Whether entries are left past it: the second value.
    fn chunk(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        back: bool,
    ) -> Result<(Vec<Kv>, bool), Error> {
        let tx = self.db.begin_read().map_err(redb_err("range"))?;
        let table = tx.open_table(TABLE).map_err(redb_err("range"))?;
        let range = table.range::<&[u8]>((lo, hi)).map_err(redb_err("range"))?;
        let entries: Box<dyn Iterator<Item = _>> = match back {
            false => Box::new(range),
            true => Box::new(range.rev()),
        };
        let (mut out, mut bytes) = (Vec::new(), 0);
        for kv in entries {
            if out.len() == RANGE_CHUNK_ENTRIES || bytes >= RANGE_CHUNK_BYTES {
                return Ok((out, true));
            }
            let (k, v) = kv.map_err(redb_err("range"))?;
            bytes += k.value().len() + v.value().len();
            out.push((k.value().to_vec(), v.value().to_vec()));
        }
        Ok((out, false))
    }

    /// The entries of a space from `from` to `to` (exclusive), read in chunks, forwards
    /// or backwards.
    fn chunks(&self, space: Space, from: &[u8], to: Option<&[u8]>, back: bool) -> Chunks<'_> {
        let start = full_key(space, from);
        let end = match to {
            Some(t) => full_key(space, t),
            None => vec![space.prefix() + 1],
        };
        // An empty or reversed range reads nothing.
        let done = start >= end;
        Chunks {
            store: self,
            lo: Bound::Included(start),
            hi: Bound::Excluded(end),
            back,
            done,
            buf: VecDeque::new(),
        }
    }

    fn free_space_check(&self) -> Result<(), Error> {
        match free_bytes(&self.dir).filter(|f| *f < STORE_FREE_BYTES_MIN) {
            None => Ok(()),
            Some(free) => Err(Error::Store {
                op: "commit",
                detail: format!(
                    "No space left on device: {} has {free} bytes free, below the {STORE_FREE_BYTES_MIN} kept in reserve",
                    self.dir.display()
                ),
            }),
        }
    }
}

/// A range read chunk by chunk (`RedbStore::chunk`): each chunk narrows the range past
/// the entries it read.
struct Chunks<'a> {
    store: &'a RedbStore,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    back: bool,
    /// The range holds nothing more.
    done: bool,
    buf: VecDeque<Kv>,
}

fn as_slice(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl Iterator for Chunks<'_> {
    type Item = Result<Kv, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() && !self.done {
            match self
                .store
                .chunk(as_slice(&self.lo), as_slice(&self.hi), self.back)
            {
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Ok((chunk, more)) => {
                    self.done = !more;
                    if let Some((last, _)) = chunk.last() {
                        let past = Bound::Excluded(last.clone());
                        match self.back {
                            false => self.lo = past,
                            true => self.hi = past,
                        }
                    }
                    self.buf = chunk.into();
                }
            }
        }
        let (k, v) = self.buf.pop_front()?;
        Some(Ok((k[1..].to_vec(), v)))
    }
}

impl Store for RedbStore {
    fn get(&self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        let tx = self.db.begin_read().map_err(redb_err("get"))?;
        let table = tx.open_table(TABLE).map_err(redb_err("get"))?;
        let found = table
            .get(full_key(space, key).as_slice())
            .map_err(redb_err("get"))?;
        Ok(found.map(|v| v.value().to_vec()))
    }

    fn range<'a>(&'a self, space: Space, from: &[u8], to: Option<&[u8]>) -> KvIter<'a> {
        Box::new(self.chunks(space, from, to, false))
    }

    fn range_rev<'a>(&'a self, space: Space, from: &[u8], to: Option<&[u8]>) -> KvIter<'a> {
        Box::new(self.chunks(space, from, to, true))
    }

    fn range_back<'a>(&'a self, space: Space) -> KvIter<'a> {
        Box::new(self.chunks(space, &[], None, true))
    }

    fn keys<'a>(&'a self, space: Space, from: &[u8], to: Option<&[u8]>) -> KeyIter<'a> {
        Box::new(self.range(space, from, to).map(|kv| kv.map(|(k, _)| k)))
    }

    fn last_key_at_or_before(
        &self,
        space: Space,
        prefix: &[u8],
        at: &[u8],
    ) -> Result<Option<Vec<u8>>, Error> {
        let lo = full_key(space, prefix);
        let hi = full_key(space, at);
        if hi < lo {
            return Ok(None);
        }
        let tx = self.db.begin_read().map_err(redb_err("last_key"))?;
        let table = tx.open_table(TABLE).map_err(redb_err("last_key"))?;
        let mut range = table
            .range::<&[u8]>(lo.as_slice()..=hi.as_slice())
            .map_err(redb_err("last_key"))?;
        match range.next_back() {
            None => Ok(None),
            Some(kv) => {
                let (k, _) = kv.map_err(redb_err("last_key"))?;
                Ok(Some(k.value()[1..].to_vec()))
            }
        }
    }

    fn commit(&self, ops: Vec<Op>) -> Result<(), Error> {
        self.free_space_check()?;
        let mut tx = self.db.begin_write().map_err(redb_err("commit"))?;
        tx.set_durability(Durability::None);
        {
            let mut table = tx.open_table(TABLE).map_err(redb_err("commit"))?;
            for op in ops {
                let (key, value) = match op {
                    Op::Put(space, k, v) => (full_key(space, &k), Some(v)),
                    // No value log: a relocated record is the same bytes at the same key.
                    Op::Relocate(k, v) => (full_key(Space::Batch, &k), Some(v)),
                    Op::Remove(space, k) => {
                        assert!(
                            REMOVABLE_SPACES.contains(&space),
                            "append-only: removal attempted in {space:?}"
                        );
                        (full_key(space, &k), None)
                    }
                    Op::Repoint(_, pointer) => {
                        debug_assert!(tier_ref::is_pointer(&pointer));
                        return Err(Error::Store {
                            op: "commit",
                            detail: "redb: this store has no archive tier to point into"
                                .to_string(),
                        });
                    }
                };
                match value {
                    Some(v) => table.insert(key.as_slice(), v.as_slice()).map(|_| ()),
                    None => table.remove(key.as_slice()).map(|_| ()),
                }
                .map_err(redb_err("commit"))?;
            }
        }
        tx.commit().map_err(redb_err("commit"))
    }

    fn flush(&self) -> Result<(), Error> {
        // An empty write transaction with immediate durability makes every earlier
        // non-durable commit durable too.
        let tx = self.db.begin_write().map_err(redb_err("flush"))?;
        tx.commit().map_err(redb_err("flush"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_longer_than_a_chunk_reads_whole_and_in_order_after_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let n = RANGE_CHUNK_ENTRIES * 2 + 7;
        {
            let store = RedbStore::open(dir.path()).expect("open");
            let ops = (0..n as u32)
                .map(|i| Op::Put(Space::Round, i.to_be_bytes().to_vec(), vec![1; 3]))
                .collect();
            store.commit(ops).expect("commit");
            // Another space's keys on either side stay out of the range.
            let around = vec![
                Op::Put(Space::Head, b"x".to_vec(), b"h".to_vec()),
                Op::Put(Space::RoundTime, b"y".to_vec(), b"t".to_vec()),
            ];
            store.commit(around).expect("commit");
            store.flush().expect("flush");
        }
        let store = RedbStore::open(dir.path()).expect("reopen");
        let keys: Vec<Vec<u8>> = store
            .keys(Space::Round, &[], None)
            .collect::<Result<_, _>>()
            .expect("keys");
        assert_eq!(keys.len(), n);
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "in key order");
        let part = store.range(Space::Round, &5u32.to_be_bytes(), Some(&9u32.to_be_bytes()));
        assert_eq!(part.count(), 4);
        let rev: Vec<Vec<u8>> = store
            .range_rev(Space::Round, &[], None)
            .map(|kv| kv.map(|(k, _)| k))
            .collect::<Result<_, _>>()
            .expect("rev");
        assert_eq!(rev.len(), n);
        assert!(
            rev.windows(2).all(|w| w[0] > w[1]),
            "in descending key order"
        );
        let part_rev =
            store.range_rev(Space::Round, &5u32.to_be_bytes(), Some(&9u32.to_be_bytes()));
        let part_rev: Vec<_> = part_rev.map(|kv| kv.expect("read").0).collect();
        assert_eq!(part_rev, [8u32, 7, 6, 5].map(|i| i.to_be_bytes().to_vec()));
        let back: Vec<_> = store.range_back(Space::Round).take(1).collect();
        let last = (n as u32 - 1).to_be_bytes().to_vec();
        assert_eq!(back[0].as_ref().expect("read").0, last);
        let at = store.last_key_at_or_before(Space::Round, &[], &[0, 0, 3, 0]);
        assert_eq!(at.expect("read"), Some(768u32.to_be_bytes().to_vec()));
        assert!(store.range(Space::Round, &[9], Some(&[1])).next().is_none());
    }

    #[test]
    fn large_values_end_chunks_early_and_every_one_is_read_both_ways() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = RedbStore::open(dir.path()).expect("open");
        let value_bytes = RANGE_CHUNK_BYTES / 3 + 1;
        let ops = (0..10u8)
            .map(|i| Op::Put(Space::Batch, vec![i], vec![i; value_bytes]))
            .collect();
        store.commit(ops).expect("commit");
        let fwd: Vec<Kv> = store
            .range(Space::Batch, &[], None)
            .collect::<Result<_, _>>()
            .expect("fwd");
        assert_eq!(fwd.len(), 10);
        assert!(fwd
            .iter()
            .enumerate()
            .all(|(i, (k, v))| k[0] as usize == i && v.len() == value_bytes));
        let rev: Vec<Kv> = store
            .range_rev(Space::Batch, &[2], Some(&[8]))
            .collect::<Result<_, _>>()
            .expect("rev");
        let keys: Vec<u8> = rev.iter().map(|(k, _)| k[0]).collect();
        assert_eq!(keys, [7, 6, 5, 4, 3, 2]);
    }

    #[test]
    fn a_removal_outside_the_removable_spaces_panics_and_a_repoint_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = RedbStore::open(dir.path()).expect("open");
        store
            .commit(vec![Op::Put(Space::Pending, b"k".to_vec(), b"v".to_vec())])
            .expect("put");
        store
            .commit(vec![Op::Remove(Space::Pending, b"k".to_vec())])
            .expect("remove");
        assert_eq!(store.get(Space::Pending, b"k").expect("get"), None);
        let pointer = tier_ref::encode_pointer("2026-11-01", 0);
        let err = store
            .commit(vec![Op::Repoint(b"k".to_vec(), pointer)])
            .expect_err("no tier");
        assert!(err.to_string().contains("no archive tier"), "{err}");
        let removal = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            store.commit(vec![Op::Remove(Space::Batch, b"k".to_vec())])
        }));
        assert!(removal.is_err(), "a record's removal is refused");
    }

    #[test]
    fn a_second_open_of_the_same_file_is_locked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let _first = RedbStore::open(dir.path()).expect("open");
        match RedbStore::open(dir.path()) {
            Err(Error::Locked { .. }) => {}
            Err(other) => panic!("expected Locked, got {other}"),
            Ok(_) => panic!("expected Locked, got a second store"),
        }
    }
}
