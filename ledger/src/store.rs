//! The narrow storage trait the ledger is written against, and its sled implementation.
//!
//! Why a trait: sled 0.34 is unmaintained and has open reports of corruption after abrupt
//! stops. Everything above this module (append, reads, verify, export) sees only ordered
//! key spaces, point reads, ordered range scans and one atomic commit, so another embedded
//! ordered store (redb, fjall, LMDB) can replace sled here without touching ingest, replay or
//! the rest of this crate.
//!
//! Append-only: `Op::Remove` is only allowed in `Space::Pending` (held events leave it when
//! they are appended or quarantined); `Op::Put` over an existing key only happens in the
//! derived spaces (heads, round summaries, meta). Event records and quarantine entries are
//! written once.

use crate::valuelog::{Found, Pointer, ValueLog};
use crate::Error;
use std::path::Path;

/// The key spaces of a ledger. Each is a 1-byte prefix in the one sled tree, so one commit
/// is atomic across all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Space {
    /// One record per table per append call: `table key ++ first seq (BE)` -> events.
    Batch,
    /// Chain heads: `table key` -> `seq (BE) ++ hash`.
    Head,
    /// Round summaries: `table key ++ round (BE)` -> first/last seq and device time.
    Round,
    /// Rounds by start time: `time (ordered BE) ++ table key ++ round (BE)` -> empty.
    RoundTime,
    /// Records by device-time bucket: `bucket (ordered BE) ++ table key ++ first seq` -> empty.
    TimeBucket,
    /// Arrival order: `min stream seq (BE) ++ call id (BE)` -> the records of one append call.
    Arrival,
    /// Held events (beyond a gap): `table key ++ seq (BE)` -> the incoming message.
    Pending,
    /// Quarantine: `id (BE)` -> the entry, bytes verbatim.
    Quarantine,
    /// Counters that are not derivable cheaply at open (call id, total bytes).
    Meta,
    /// The device key register: `table key ++ device id` -> key, enrollment and
    /// revocation seqs. Derived from the chain's enrollment events, written with them.
    DeviceKey,
    /// Kept checkpoints: `table key ++ seq (BE)` -> receive time, stream seq, exact bytes.
    Checkpoint,
}

impl Space {
    /// The key prefix byte. Stable: stored on disk.
    pub fn prefix(self) -> u8 {
        match self {
            Space::Batch => b'b',
            Space::Head => b'h',
            Space::Round => b'r',
            Space::RoundTime => b'R',
            Space::TimeBucket => b't',
            Space::Arrival => b'a',
            Space::Pending => b'p',
            Space::Quarantine => b'q',
            Space::Meta => b'm',
            Space::DeviceKey => b'k',
            Space::Checkpoint => b'c',
        }
    }
}

/// One write of a commit.
#[derive(Debug, Clone)]
pub enum Op {
    Put(Space, Vec<u8>, Vec<u8>),
    /// Only in `Space::Pending`.
    Remove(Space, Vec<u8>),
}

/// One key-value pair (key without the space prefix).
pub type Kv = (Vec<u8>, Vec<u8>);

/// Key-value pairs in key order.
pub type KvIter<'a> = Box<dyn Iterator<Item = Result<(Vec<u8>, Vec<u8>), Error>> + 'a>;

/// Keys in key order.
pub type KeyIter<'a> = Box<dyn Iterator<Item = Result<Vec<u8>, Error>> + 'a>;

/// What a store holds of its records beyond its last commit (`Store::unreferenced`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreferenced {
    /// A whole record of `Space::Batch`, as it was written.
    Record(Vec<u8>),
    /// Bytes that are not a whole record (a write cut short), and where they are.
    Torn(String),
}

/// `Unreferenced` items in write order.
pub type UnreferencedIter<'a> = Box<dyn Iterator<Item = Result<Unreferenced, Error>> + 'a>;

/// What the ledger needs from an embedded ordered store.
pub trait Store: Send + Sync {
    fn get(&self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>, Error>;
    /// Entries with `from <= key` and `key < to` (`None`: to the end of the space), in key order.
    fn range<'a>(&'a self, space: Space, from: &[u8], to: Option<&[u8]>) -> KvIter<'a>;
    /// Keys only, as `range` gives them (no value is read).
    fn keys<'a>(&'a self, space: Space, from: &[u8], to: Option<&[u8]>) -> KeyIter<'a>;
    /// The key of the last entry whose key starts with `prefix` and is `<= at`.
    fn last_key_at_or_before(
        &self,
        space: Space,
        prefix: &[u8],
        at: &[u8],
    ) -> Result<Option<Vec<u8>>, Error>;
    /// Applies all ops atomically (all or none survive a crash), in order (last write to a
    /// key wins). Not durable until `flush`.
    fn commit(&self, ops: Vec<Op>) -> Result<(), Error>;
    /// Makes every committed op durable.
    fn flush(&self) -> Result<(), Error>;
    /// Records the store wrote durably but whose commit it does not hold, in write order: a
    /// crash between writing them and the commit leaves one commit's, and a store that
    /// lost commits after a flush leaves theirs (`Ledger::open` appends them again). A
    /// store that writes records inside its commits never has any.
    ///
    /// Reads only. Appending them again moves the store's end past them, so a crash part
    /// way through would hide the rest: between `recovery_started` and `recovery_done`,
    /// this gives the same records again, from the same start, whatever was appended.
    fn unreferenced(&self) -> Result<UnreferencedIter<'_>, Error> {
        Ok(Box::new(std::iter::empty()))
    }
    /// Called, and durable, before the first record `unreferenced` gave is appended again.
    fn recovery_started(&self) -> Result<(), Error> {
        Ok(())
    }
    /// Every record `unreferenced` gave is appended again and flushed.
    fn recovery_done(&self) -> Result<(), Error> {
        Ok(())
    }
}

/// `Space::Meta` key of where the value log ended at the last commit that wrote to it:
/// `segment (u32 BE) ++ offset (u64 BE)`.
pub const VALUES_END_KEY: &[u8] = b"values_end";

/// `Space::Meta` key of where a recovery in progress scans from (the same encoding), or
/// empty when none is.
pub const RECOVER_FROM_KEY: &[u8] = b"recover_from";

/// A value-log position as `VALUES_END_KEY` and `RECOVER_FROM_KEY` hold it (read back by
/// `SledStore::position`).
pub fn encode_position((segment, offset): (u32, u64)) -> Vec<u8> {
    let mut v = segment.to_be_bytes().to_vec();
    v.extend_from_slice(&offset.to_be_bytes());
    v
}

/// How long `SledStore::open` waits for a directory lock before reporting `Locked`.
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// The sled name of the one tree holding every space.
pub const SLED_TREE: &str = "ledger";

/// sled 0.34.7: one tree, key = space prefix ++ key; the values of `Space::Batch` (event
/// records, nearly all the bytes) in the value log (`valuelog`), sled holding pointers.
pub struct SledStore {
    db: sled::Db,
    tree: sled::Tree,
    values: ValueLog,
}

impl SledStore {
    /// Opens (or creates) the directory. sled locks it exclusively: a second opener gets
    /// `Error::Locked`.
    pub fn open(path: &Path) -> Result<SledStore, Error> {
        // sled releases its directory lock when its background flusher thread ends, a
        // moment after the last handle is dropped; reopening at once in the same process
        // (a restart, a tool after the ledger closed) can find it still held. So a lock
        // is waited for briefly before it is reported as another owner's.
        let deadline = std::time::Instant::now() + LOCK_WAIT;
        loop {
            match Self::open_once(path) {
                Err(Error::Locked { .. }) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => return other,
            }
        }
    }

    fn open_once(path: &Path) -> Result<SledStore, Error> {
        let db = sled::Config::new().path(path).open().map_err(|e| {
            let text = e.to_string();
            if text.contains("could not acquire lock") {
                Error::Locked {
                    path: path.to_path_buf(),
                    detail: text,
                }
            } else {
                Error::Store {
                    op: "open",
                    detail: format!("{}: {text}", path.display()),
                }
            }
        })?;
        let tree = db.open_tree(SLED_TREE).map_err(store_err("open tree"))?;
        // After sled, whose lock makes this process the directory's one owner.
        let values = ValueLog::open(path)?;
        Ok(SledStore { db, tree, values })
    }

    fn value(&self, space: Space, stored: Vec<u8>) -> Result<Vec<u8>, Error> {
        whole_value(&self.values, space, stored)
    }
}

/// A value as sled holds it, made whole: records of `Space::Batch` are read from the value
/// log (`ValueLog::resolve`), every other space's values are sled's own. Also what tests
/// that read sled directly use.
pub fn whole_value(values: &ValueLog, space: Space, stored: Vec<u8>) -> Result<Vec<u8>, Error> {
    match space {
        Space::Batch => values.resolve(stored),
        _ => Ok(stored),
    }
}

fn store_err(op: &'static str) -> impl Fn(sled::Error) -> Error {
    move |e| Error::Store {
        op,
        detail: e.to_string(),
    }
}

fn full_key(space: Space, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.push(space.prefix());
    k.extend_from_slice(key);
    k
}

impl Store for SledStore {
    fn get(&self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        self.tree
            .get(full_key(space, key))
            .map_err(store_err("get"))?
            .map(|v| self.value(space, v.to_vec()))
            .transpose()
    }

    fn range<'a>(&'a self, space: Space, from: &[u8], to: Option<&[u8]>) -> KvIter<'a> {
        Box::new(self.sled_range(space, from, to).map(move |r| {
            let (k, v) = r.map_err(store_err("range"))?;
            Ok((k[1..].to_vec(), self.value(space, v.to_vec())?))
        }))
    }

    fn keys<'a>(&'a self, space: Space, from: &[u8], to: Option<&[u8]>) -> KeyIter<'a> {
        Box::new(
            self.sled_range(space, from, to)
                .map(|r| r.map(|(k, _)| k[1..].to_vec()).map_err(store_err("keys"))),
        )
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
        match self.tree.range(lo..=hi).next_back() {
            None => Ok(None),
            Some(r) => {
                let (k, _) = r.map_err(store_err("last_key_at_or_before"))?;
                Ok(Some(k[1..].to_vec()))
            }
        }
    }

    fn commit(&self, ops: Vec<Op>) -> Result<(), Error> {
        // Records first, durably, into the value log; sled then takes their pointers.
        let records: Vec<&[u8]> = ops
            .iter()
            .filter_map(|op| match op {
                Op::Put(Space::Batch, _, v) => Some(v.as_slice()),
                _ => None,
            })
            .collect();
        let pointers = self.values.append(&records)?;
        let mut batch = sled::Batch::default();
        // With the pointers, in the same atomic commit: where the value log ended, so that
        // an open can tell the entries no commit references (`unreferenced`).
        if let Some(last) = pointers.last() {
            batch.insert(
                full_key(Space::Meta, VALUES_END_KEY),
                encode_position(last.end()),
            );
        }
        let mut pointers = pointers.into_iter();
        for op in ops {
            match op {
                Op::Put(Space::Batch, k, _) => {
                    let p = pointers.next().expect("one pointer per record");
                    batch.insert(full_key(Space::Batch, &k), p.encode())
                }
                Op::Put(space, k, v) => batch.insert(full_key(space, &k), v),
                Op::Remove(space, k) => {
                    assert!(
                        space == Space::Pending,
                        "append-only: removal attempted in {space:?}"
                    );
                    batch.remove(full_key(space, &k))
                }
            }
        }
        self.tree.apply_batch(batch).map_err(store_err("commit"))
    }

    fn flush(&self) -> Result<(), Error> {
        self.db.flush().map_err(store_err("flush"))?;
        Ok(())
    }

    fn unreferenced(&self) -> Result<UnreferencedIter<'_>, Error> {
        let (segment, offset) = self.scan_start()?;
        Ok(Box::new(self.values.entries_after(segment, offset)?.map(
            |found| {
                found.map(|f| match f {
                    Found::Entry(_, value) => Unreferenced::Record(value),
                    Found::Torn { detail } => Unreferenced::Torn(detail),
                })
            },
        )))
    }

    fn recovery_started(&self) -> Result<(), Error> {
        if self.position(RECOVER_FROM_KEY)?.is_some() {
            return Ok(());
        }
        // Nothing is appended yet, so this is where `unreferenced` scanned from.
        let start = encode_position(self.referenced_end()?);
        self.tree
            .insert(full_key(Space::Meta, RECOVER_FROM_KEY), start)
            .map_err(store_err("mark recovery"))?;
        self.flush()
    }

    fn recovery_done(&self) -> Result<(), Error> {
        self.tree
            .insert(full_key(Space::Meta, RECOVER_FROM_KEY), Vec::new())
            .map_err(store_err("end recovery"))?;
        self.flush()
    }
}

impl SledStore {
    /// Where the value log ended at sled's last commit that wrote to it. A ledger written
    /// before that was recorded (or whose record is unreadable) gives the end of the
    /// furthest entry any pointer names.
    /// Where `unreferenced` scans from: a recovery's start while one is in progress, else
    /// the referenced end.
    fn scan_start(&self) -> Result<(u32, u64), Error> {
        match self.position(RECOVER_FROM_KEY)? {
            Some(start) => Ok(start),
            None => self.referenced_end(),
        }
    }

    fn referenced_end(&self) -> Result<(u32, u64), Error> {
        if let Some(end) = self.position(VALUES_END_KEY)? {
            return Ok(end);
        }
        let mut end = (0, 0);
        for kv in self.sled_range(Space::Batch, &[], None) {
            let (_, v) = kv.map_err(store_err("range"))?;
            if let Some(p) = Pointer::decode(&v) {
                end = end.max(p.end());
            }
        }
        Ok(end)
    }

    /// A value-log position kept in `Space::Meta` under `key`: `None` when absent or empty,
    /// and, with a warning, when malformed (the caller then falls back).
    fn position(&self, key: &[u8]) -> Result<Option<(u32, u64)>, Error> {
        let Some(v) = self
            .tree
            .get(full_key(Space::Meta, key))
            .map_err(store_err("get"))?
        else {
            return Ok(None);
        };
        if v.is_empty() {
            return Ok(None);
        }
        let Ok(v) = <[u8; 12]>::try_from(v.as_ref()) else {
            tracing::warn!(
                key = %String::from_utf8_lossy(key),
                len = v.len(),
                "a recorded value-log position is malformed; ignored"
            );
            return Ok(None);
        };
        let segment = u32::from_be_bytes([v[0], v[1], v[2], v[3]]);
        let mut offset = [0u8; 8];
        offset.copy_from_slice(&v[4..]);
        Ok(Some((segment, u64::from_be_bytes(offset))))
    }

    /// sled's entries of `space` from `from` to `to` (exclusive; `None`: to the space's end).
    fn sled_range(&self, space: Space, from: &[u8], to: Option<&[u8]>) -> sled::Iter {
        let start = full_key(space, from);
        let end = match to {
            Some(t) => full_key(space, t),
            None => vec![space.prefix() + 1],
        };
        if start >= end {
            // An empty range (sled panics on a reversed one).
            return self.tree.range(start.clone()..start);
        }
        self.tree.range(start..end)
    }
}
