//! The narrow storage trait the ledger is written against, and its sled implementation.
//!
//! Why a trait: sled 0.34 is unmaintained and has open reports of corruption after abrupt
//! stops. Everything above this module (append, reads, verify, export) sees only ordered
//! key spaces, point reads, ordered range scans and one atomic commit, so another embedded
//! ordered store (redb, fjall, LMDB) can replace sled here without touching ingest, replay or
//! the rest of this crate.
//!
//! Append-only: `Op::Remove` is only allowed in `REMOVABLE_SPACES`: held events leave
//! `Space::Pending` when they are appended or quarantined, and a signed purge removes old
//! quarantine entries and their counters (`crate::purge`). `Op::Put` over an existing key
//! only happens in the derived spaces (heads, round summaries, meta). Event records and
//! quarantine entries are written once.
//!
//! What a store must give back after losing commits (`Store::unreferenced`): the event
//! records of `Space::Batch`, and every put of the spaces in `RECOVERED_SPACES`, the
//! ledger's other first-hand data (quarantine entries, held events, kept checkpoints). The
//! rest is derived from those and is rebuilt when they are appended again.

pub mod choice;
pub mod migrate;
pub mod reads;
pub mod redb_store;
pub mod segments;
pub(crate) mod tier_read;
pub mod tier_ref;

use crate::error::Error;
use crate::valuelog::{Found, Pointer, ValueLog};
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
    /// Day seals (`days`): `day (YYYY-MM-DD)` -> the seal's JSON, written once.
    Seal,
    /// The config index: `table key ++ seq (BE)` -> chain hash of each `TableOpened`.
    /// Derived from the events, written with them (`config`).
    Config,
    /// Applied re-syncs (`resync`): `table key ++ seq (BE)` -> stream seq, receive time
    /// and the exact message.
    Resync,
    /// The archive tier's catalog (`tier`): `day (YYYY-MM-DD)` -> where the day's records
    /// are (a day file, or removed by retention), as JSON.
    Tier,
    /// The read model's keys (`readside::model`), in a store of its own: the model's
    /// directory holds nothing else. A ledger's store never holds this space.
    Model,
}

/// sled's page cache. Its default (1 GiB) fills as history grows; event records live in
/// the value log, so sled holds only small index values.
pub const SLED_CACHE_BYTES: u64 = 64 << 20;

/// The spaces besides `Space::Batch` whose puts are first-hand: not derivable from the event
/// records, so a store that can lose commits must be able to give them back
/// (`Unreferenced::Put`).
pub const RECOVERED_SPACES: [Space; 5] = [
    Space::Quarantine,
    Space::Pending,
    Space::Checkpoint,
    Space::Seal,
    Space::Resync,
];

impl Space {
    /// Every space, in prefix-table order.
    pub const ALL: [Space; 15] = [
        Space::Batch,
        Space::Head,
        Space::Round,
        Space::RoundTime,
        Space::Arrival,
        Space::Pending,
        Space::Quarantine,
        Space::Meta,
        Space::DeviceKey,
        Space::Checkpoint,
        Space::Seal,
        Space::Config,
        Space::Resync,
        Space::Tier,
        Space::Model,
    ];

    /// The space whose `prefix` is `b`.
    pub fn from_prefix(b: u8) -> Option<Space> {
        Space::ALL.into_iter().find(|s| s.prefix() == b)
    }

    /// The key prefix byte. Stable: stored on disk. `b't'` was an index of records by
    /// device-time bucket, written for every record and read by nothing; removed
    /// (2026-11-24), its prefix is never reused (older ledgers may still hold its keys).
    pub fn prefix(self) -> u8 {
        match self {
            Space::Batch => b'b',
            Space::Head => b'h',
            Space::Round => b'r',
            Space::RoundTime => b'R',
            Space::Arrival => b'a',
            Space::Pending => b'p',
            Space::Quarantine => b'q',
            Space::Meta => b'm',
            Space::DeviceKey => b'k',
            Space::Checkpoint => b'c',
            Space::Seal => b's',
            Space::Config => b'o',
            Space::Resync => b'x',
            Space::Tier => b'T',
            Space::Model => b'M',
        }
    }
}

/// The spaces an `Op::Remove` may touch: held events (appended or quarantined), the
/// quarantine entries and counters a signed purge removes (`crate::purge`), and the read
/// model's keys (derived, rewritten as rounds change).
pub const REMOVABLE_SPACES: [Space; 4] =
    [Space::Pending, Space::Quarantine, Space::Meta, Space::Model];

/// One write of a commit.
#[derive(Debug, Clone)]
pub enum Op {
    /// Writes `value` at `key` in the space (key without the prefix).
    Put(Space, Vec<u8>, Vec<u8>),
    /// Only in `Space::Pending`.
    Remove(Space, Vec<u8>),
    /// Points a record of `Space::Batch` (key) into a day file of the archive tier
    /// (`tier::encode_pointer`). Only for records the day file holds, checked byte for byte.
    Repoint(Vec<u8>, Vec<u8>),
    /// Writes a record of `Space::Batch` (key) again, the same bytes, where new records
    /// go; its old copy is no longer referenced. Only compaction (`tier::compact`) does it.
    Relocate(Vec<u8>, Vec<u8>),
}

/// What the arrival chain hashes of one stored event (`arrival`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrivalFact {
    /// The event's chain hash.
    pub hash: schemas::Hash32,
    /// Its JetStream stream sequence.
    pub stream_seq: u64,
    /// When the House received it, UTC ns.
    pub received_at_ns: i64,
}

impl ArrivalFact {
    /// The facts of a stored event.
    pub fn of(e: &crate::record::StoredEvent) -> ArrivalFact {
        ArrivalFact {
            hash: e.hash,
            stream_seq: e.stream_seq,
            received_at_ns: e.received_at_ns,
        }
    }
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
    /// A put of one of `RECOVERED_SPACES`, as it was committed (key without the prefix).
    Put {
        /// The space it belongs to.
        space: Space,
        /// Its key, without the space prefix.
        key: Vec<u8>,
        /// Its value as committed.
        value: Vec<u8>,
    },
    /// Bytes that are not a whole record (a write cut short), and where they are.
    Torn(String),
    /// An entry that fails its checks with whole entries after it, or whole in length:
    /// damage, whose records are lost unless sled still holds them. Where it is, and where
    /// the scan resumed.
    Damaged(String),
}

/// `Unreferenced` items in write order.
pub type UnreferencedIter<'a> = Box<dyn Iterator<Item = Result<Unreferenced, Error>> + 'a>;

/// What the ledger needs from an embedded ordered store.
pub trait Store: Send + Sync {
    /// The value at `key` in the space, if any.
    fn get(&self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>, Error>;
    /// Entries with `from <= key` and `key < to` (`None`: to the end of the space), in key order.
    fn range<'a>(&'a self, space: Space, from: &[u8], to: Option<&[u8]>) -> KvIter<'a>;
    /// Every entry of a space in descending key order (newest first for ids), for pages
    /// read from the end. The default reads the whole space and reverses it; a store that
    /// iterates backwards (sled) gives it without holding the space in memory.
    fn range_back<'a>(&'a self, space: Space) -> KvIter<'a> {
        self.range_back_before(space, None)
    }
    /// `range_back` of the keys below `before` only (`None`: every key), through
    /// `range_rev`: a store that iterates backwards starts at `before`, so the entries above
    /// it cost nothing.
    fn range_back_before<'a>(&'a self, space: Space, before: Option<&[u8]>) -> KvIter<'a> {
        self.range_rev(space, &[], before)
    }
    /// Entries as `range` gives them, in descending key order. The default reads the
    /// range whole and reverses it; sled and redb read it backwards.
    fn range_rev<'a>(&'a self, space: Space, from: &[u8], to: Option<&[u8]>) -> KvIter<'a> {
        let all: Vec<_> = self.range(space, from, to).collect();
        Box::new(all.into_iter().rev())
    }
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
    /// Records, and puts of `RECOVERED_SPACES`, the store wrote durably but whose commit it
    /// does not hold, in write order (a commit's records before its puts): a crash between
    /// writing them and the commit leaves one commit's, and a store that lost commits after
    /// a flush leaves theirs (`Ledger::open` appends them again). A store that writes
    /// everything inside its commits never has any.
    ///
    /// Reads only. Appending them again moves the store's end past them, so a crash part
    /// way through would hide the rest: between `recovery_started` and `recovery_done`,
    /// this gives the same records again, from the same start, whatever was appended.
    fn unreferenced(&self) -> Result<UnreferencedIter<'_>, Error> {
        Ok(Box::new(std::iter::empty()))
    }
    /// Where day files of the archive tier live (`tier`); `None`: this store has no tier.
    fn tier_dir(&self) -> Option<std::path::PathBuf> {
        None
    }
    /// Commits `ops`, which remove a day by retention, and drops what the store caches
    /// of day files in the same step: no read after the commit is served a removed day.
    fn commit_forgetting_tier(&self, ops: Vec<Op>) -> Result<(), Error> {
        self.commit(ops)
    }
    /// The arrival facts of a record of `Space::Batch`, in seq order; `None`: no such
    /// record. A store may answer without rebuilding the record (`SledStore` does for
    /// archived days, which the arrival walk visits table after table).
    fn arrival_facts(&self, key: &[u8]) -> Result<Option<Vec<ArrivalFact>>, Error> {
        let Some(rec) = self.get(Space::Batch, key)? else {
            return Ok(None);
        };
        let events = crate::record::decode_record(&rec)?;
        Ok(Some(events.iter().map(ArrivalFact::of).collect()))
    }
    /// The closed segments of the store's value log and what still points into each
    /// (`segments`); a store without a value log has none.
    fn value_segments(&self) -> Result<Vec<segments::SegmentUse>, Error> {
        Ok(Vec::new())
    }
    /// The keys of `Space::Batch` whose records are in a closed segment.
    fn segment_records(&self, segment: u32) -> Result<Vec<Vec<u8>>, Error> {
        Err(segments::no_value_log(segment))
    }
    /// The recovery copies (`Unreferenced::Put`) a closed segment holds, in write order.
    /// Damage that may hide some is an error.
    fn segment_copies(&self, segment: u32) -> Result<Vec<Unreferenced>, Error> {
        Err(segments::no_value_log(segment))
    }
    /// Deletes a closed segment whose retirement is durable; returns the bytes freed.
    fn remove_segment(&self, segment: u32) -> Result<u64, Error> {
        Err(segments::no_value_log(segment))
    }
    /// Called, and durable, before the first record `unreferenced` gave is appended again.
    fn recovery_started(&self) -> Result<(), Error> {
        Ok(())
    }
    /// Every record `unreferenced` gave is appended again and flushed.
    fn recovery_done(&self) -> Result<(), Error> {
        Ok(())
    }
    /// What the store has read since it opened; `None`: this store does not count.
    fn reads(&self) -> Option<reads::StoreReads> {
        None
    }
    /// The archived day whose file holds the record `key` of `Space::Batch`, read from its
    /// pointer alone (not the file); `None` when the record is not in the archive tier.
    fn archived_day_of(&self, _key: &[u8]) -> Result<Option<String>, Error> {
        Ok(None)
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

pub use crate::valuelog::PUT_COPY_TAG;

/// A put of `RECOVERED_SPACES` as the value log keeps it:
/// `PUT_COPY_TAG ++ space prefix ++ key length (u32 LE) ++ key ++ value`.
pub fn encode_put_copy(space: Space, key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(6 + key.len() + value.len());
    v.push(PUT_COPY_TAG);
    v.push(space.prefix());
    v.extend_from_slice(
        &u32::try_from(key.len())
            .expect("keys are short")
            .to_le_bytes(),
    );
    v.extend_from_slice(key);
    v.extend_from_slice(value);
    v
}

/// The inverse of `encode_put_copy`; refuses a space outside `RECOVERED_SPACES`.
pub fn decode_put_copy(v: &[u8]) -> Result<Unreferenced, Error> {
    let corrupt = |what: &str| crate::record::corrupt(&format!("copied put: {what}"));
    let [tag, prefix, l0, l1, l2, l3, rest @ ..] = v else {
        return Err(corrupt("shorter than its header"));
    };
    if *tag != PUT_COPY_TAG {
        return Err(corrupt("not a copied put"));
    }
    let space = Space::from_prefix(*prefix)
        .filter(|s| RECOVERED_SPACES.contains(s))
        .ok_or_else(|| corrupt(&format!("space prefix {prefix:#04x}")))?;
    let key_len = u32::from_le_bytes([*l0, *l1, *l2, *l3]) as usize;
    if rest.len() < key_len {
        return Err(corrupt("key longer than the entry"));
    }
    let (key, value) = rest.split_at(key_len);
    Ok(Unreferenced::Put {
        space,
        key: key.to_vec(),
        value: value.to_vec(),
    })
}

/// How long `SledStore::open` waits for a directory lock before reporting `Locked`.
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// The sled name of the one tree holding every space.
pub const SLED_TREE: &str = "ledger";

/// sled 0.34.7: one tree, key = space prefix ++ key; the values of `Space::Batch` (event
/// records, nearly all the bytes) in the value log (`valuelog`), sled holding pointers.
/// Puts of `RECOVERED_SPACES` are copied into the value log, in the same fsynced write as
/// the commit's records (`encode_put_copy`), so that commits sled loses give them back too.
/// Sled keeps their values too, except quarantine entries': it keeps a pointer to the
/// copy (`sled_value_of_copy`), so a flood's bytes are written once.
pub struct SledStore {
    db: sled::Db,
    tree: sled::Tree,
    values: ValueLog,
    /// The ledger directory, whose file system's free space `commit` checks.
    dir: std::path::PathBuf,
    /// Reads records the archive tier holds (`tier`), one table's day cached.
    tier: tier_read::TierReader,
    /// What this store has read, shared with `tier`.
    reads: std::sync::Arc<reads::ReadCounter>,
}

/// Free bytes the ledger's file system keeps in reserve: a commit is refused below it.
/// Why: sled 0.34 fails every later flush once one hit a full disk, until it is reopened.
/// Refused here, before any write, a full disk is a pause that ends when space returns.
pub const STORE_FREE_BYTES_MIN: u64 = 64 * 1024 * 1024;

/// Free bytes on the file system holding `dir`, for an unprivileged writer; `None` when
/// the system cannot say.
pub fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c` is a NUL-terminated path and `st` a valid out-pointer for one statvfs.
    let rc = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it filled `st`.
    let st = unsafe { st.assume_init() };
    // u64 on 64-bit Linux, narrower on some other targets.
    #[allow(clippy::unnecessary_cast)]
    let (blocks, block_bytes) = (st.f_bavail as u64, st.f_frsize as u64);
    Some(blocks.saturating_mul(block_bytes))
}

impl SledStore {
    /// Opens (or creates) the directory. sled locks it exclusively: a second opener gets
    /// `Error::Locked`.
    pub fn open(path: &Path) -> Result<SledStore, Error> {
        SledStore::open_sized(path, crate::valuelog::SEGMENT_BYTES_MAX)
    }

    /// `open` with value-log segments of at most `segment_bytes_max` bytes, so that tests
    /// of compaction have several. Production opens use `valuelog::SEGMENT_BYTES_MAX`.
    pub fn open_sized(path: &Path, segment_bytes_max: u64) -> Result<SledStore, Error> {
        // sled releases its directory lock when its background flusher thread ends, a
        // moment after the last handle is dropped; reopening at once in the same process
        // (a restart, a tool after the ledger closed) can find it still held. So a lock
        // is waited for briefly before it is reported as another owner's.
        let deadline = std::time::Instant::now() + LOCK_WAIT;
        loop {
            match Self::open_once(path, segment_bytes_max) {
                Err(Error::Locked { .. }) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                other => return other,
            }
        }
    }

    fn open_once(path: &Path, segment_bytes_max: u64) -> Result<SledStore, Error> {
        let db = sled::Config::new()
            .path(path)
            .cache_capacity(SLED_CACHE_BYTES)
            .open()
            .map_err(|e| {
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
        let values = ValueLog::open_sized(path, segment_bytes_max)?;
        let reads = std::sync::Arc::new(reads::ReadCounter::default());
        let store = SledStore {
            db,
            tree,
            values,
            dir: path.to_path_buf(),
            tier: tier_read::TierReader::new(path, reads.clone()),
            reads,
        };
        // A log that goes on past the last commit's end holds what a crash left (entries
        // no commit references, which recovery appends again, or bytes of a write cut
        // short): appending starts a new segment rather than go on after them.
        let referenced = store.referenced_end()?;
        match store.values.end()? {
            Some(end) if end < referenced => {
                // Damage: segments or bytes the commits name are gone. The tables they
                // held fail their open check and are fenced (`fence`).
                tracing::warn!(
                    log_end = ?end,
                    referenced_end = ?referenced,
                    "the value log ends before the last commit's end: records are missing (run verify)"
                );
                store.values.start_new_segment_after(referenced.0);
            }
            None if referenced > (0, 0) => {
                tracing::warn!(referenced_end = ?referenced, "the value log is empty but commits name records in it (run verify)");
                store.values.start_new_segment_after(referenced.0);
            }
            Some(end) if end != referenced => store.values.start_new_segment(),
            _ => {}
        }
        Ok(store)
    }

    fn value(&self, space: Space, key: &[u8], stored: Vec<u8>) -> Result<Vec<u8>, Error> {
        if space == Space::Quarantine {
            return self.quarantine_value(key, stored);
        }
        if space != Space::Batch {
            return Ok(stored);
        }
        match self.record(key, &stored) {
            // Compaction may have moved the record and removed its segment since sled
            // gave this pointer: read where sled points now, once.
            Err(Error::CorruptRecord { .. }) if self.repointed(key, &stored)? => {
                let now = self
                    .tree
                    .get(full_key(space, key))
                    .map_err(store_err("get"))?;
                let now = now.ok_or_else(|| crate::record::corrupt("a record vanished"))?;
                self.record(key, &now)
            }
            other => other,
        }
    }

    /// A quarantine entry from sled's value: the entry itself (written before entries
    /// moved to the value log), or a pointer to its recovery copy there.
    fn quarantine_value(&self, key: &[u8], stored: Vec<u8>) -> Result<Vec<u8>, Error> {
        let Some(p) = Pointer::decode(&stored) else {
            return Ok(stored);
        };
        match decode_put_copy(&self.values.read(&p)?)? {
            Unreferenced::Put {
                space: Space::Quarantine,
                key: k,
                value,
            } if k == key => Ok(value),
            _ => Err(crate::record::corrupt(&format!(
                "quarantine entry {}: its pointer names another entry's copy",
                hex::encode(key)
            ))),
        }
    }

    /// A record of `Space::Batch` from its stored value: in a day file or the value log.
    fn record(&self, key: &[u8], stored: &[u8]) -> Result<Vec<u8>, Error> {
        if tier_ref::is_pointer(stored) {
            return self.tier.record(&self.tree, key, stored);
        }
        self.values.resolve(stored.to_vec())
    }

    /// Whether sled now holds another value for the record than `stored`.
    fn repointed(&self, key: &[u8], stored: &[u8]) -> Result<bool, Error> {
        let now = self
            .tree
            .get(full_key(Space::Batch, key))
            .map_err(store_err("get"))?;
        Ok(now.as_deref() != Some(stored))
    }

    /// Tables' days decoded from day files since open (`tier_read::FRAMES_CACHED`).
    pub fn tier_frames_loaded(&self) -> u64 {
        self.tier.frames_loaded()
    }

    /// The value log, for the check of its recovery copies (`crate::copies`).
    pub(crate) fn value_log(&self) -> &ValueLog {
        &self.values
    }

    /// What sled holds for a record of `Space::Batch`, unresolved: a value-log pointer, a
    /// day-file pointer or a legacy inline record.
    pub(crate) fn batch_pointer(&self, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        let v = self
            .tree
            .get(full_key(Space::Batch, key))
            .map_err(store_err("get"))?;
        Ok(v.map(|v| v.to_vec()))
    }

    /// Where the value log ended at sled's last commit that wrote to it.
    pub(crate) fn committed_values_end(&self) -> Result<(u32, u64), Error> {
        self.referenced_end()
    }
}

/// A value as sled holds it, made whole: records of `Space::Batch` are read from the value
/// log (`ValueLog::resolve`), quarantine entries from their copies there, every other
/// space's values are sled's own. Also what tests that read sled directly use.
pub fn whole_value(values: &ValueLog, space: Space, stored: Vec<u8>) -> Result<Vec<u8>, Error> {
    match space {
        Space::Batch => values.resolve(stored),
        Space::Quarantine => match Pointer::decode(&stored) {
            Some(p) => match decode_put_copy(&values.read(&p)?)? {
                Unreferenced::Put { value, .. } => Ok(value),
                _ => Err(crate::record::corrupt("a quarantine pointer names no copy")),
            },
            None => Ok(stored),
        },
        _ => Ok(stored),
    }
}

/// What sled keeps for a put of `RECOVERED_SPACES` whose copy is at `p`: for a quarantine
/// entry, the pointer (its bytes are on disk once, in the value log: a refusal costs about
/// its own size, and sled never rewrites large values); for the others, the value itself.
fn sled_value_of_copy(space: Space, value: Vec<u8>, p: &Pointer) -> Vec<u8> {
    match space {
        Space::Quarantine => p.encode(),
        _ => value,
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
        let v = self
            .tree
            .get(full_key(space, key))
            .map_err(store_err("get"))?;
        if v.is_some() {
            self.reads.entry(space);
        }
        v.map(|v| self.value(space, key, v.to_vec())).transpose()
    }

    fn range<'a>(&'a self, space: Space, from: &[u8], to: Option<&[u8]>) -> KvIter<'a> {
        Box::new(self.sled_range(space, from, to).map(move |r| {
            let (k, v) = r.map_err(store_err("range"))?;
            self.reads.entry(space);
            Ok((k[1..].to_vec(), self.value(space, &k[1..], v.to_vec())?))
        }))
    }

    fn range_rev<'a>(&'a self, space: Space, from: &[u8], to: Option<&[u8]>) -> KvIter<'a> {
        Box::new(self.sled_range(space, from, to).rev().map(move |r| {
            let (k, v) = r.map_err(store_err("range_rev"))?;
            self.reads.entry(space);
            Ok((k[1..].to_vec(), self.value(space, &k[1..], v.to_vec())?))
        }))
    }

    fn keys<'a>(&'a self, space: Space, from: &[u8], to: Option<&[u8]>) -> KeyIter<'a> {
        Box::new(self.sled_range(space, from, to).map(move |r| {
            let k = r.map(|(k, _)| k[1..].to_vec()).map_err(store_err("keys"))?;
            self.reads.entry(space);
            Ok(k)
        }))
    }

    fn reads(&self) -> Option<reads::StoreReads> {
        Some(self.reads.snapshot(self.tier.frames_loaded()))
    }

    fn archived_day_of(&self, key: &[u8]) -> Result<Option<String>, Error> {
        let pointer = self.batch_pointer(key)?;
        Ok(pointer
            .and_then(|p| tier_ref::decode_pointer(&p))
            .map(|(day, _)| day))
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
        if let Some(free) = free_bytes(&self.dir).filter(|f| *f < STORE_FREE_BYTES_MIN) {
            return Err(Error::Store {
                op: "commit",
                detail: format!(
                    "No space left on device: {} has {free} bytes free, below the {STORE_FREE_BYTES_MIN} kept in reserve",
                    self.dir.display()
                ),
            });
        }
        // Records first, durably, into the value log, then copies of the first-hand puts;
        // sled then takes the records' pointers.
        let mut values: Vec<&[u8]> = ops
            .iter()
            .filter_map(|op| match op {
                Op::Put(Space::Batch, _, v) | Op::Relocate(_, v) => Some(v.as_slice()),
                _ => None,
            })
            .collect();
        let records = values.len();
        let copies: Vec<Vec<u8>> = ops
            .iter()
            .filter_map(|op| match op {
                Op::Put(space, k, v) if RECOVERED_SPACES.contains(space) => {
                    Some(encode_put_copy(*space, k, v))
                }
                _ => None,
            })
            .collect();
        values.extend(copies.iter().map(Vec::as_slice));
        let mut pointers = self.values.append(&values)?;
        let mut batch = sled::Batch::default();
        // With the pointers, in the same atomic commit: where the value log ended, so that
        // an open can tell the entries no commit references (`unreferenced`).
        if let Some(last) = pointers.last() {
            batch.insert(
                full_key(Space::Meta, VALUES_END_KEY),
                encode_position(last.end()),
            );
        }
        let mut copy_pointers = pointers.split_off(records).into_iter();
        let mut pointers = pointers.into_iter();
        for op in ops {
            match op {
                Op::Put(Space::Batch, k, _) | Op::Relocate(k, _) => {
                    let p = pointers.next().expect("one pointer per record");
                    batch.insert(full_key(Space::Batch, &k), p.encode())
                }
                Op::Put(space, k, v) if RECOVERED_SPACES.contains(&space) => {
                    let p = copy_pointers.next().expect("one pointer per copy");
                    batch.insert(full_key(space, &k), sled_value_of_copy(space, v, &p))
                }
                Op::Put(space, k, v) => batch.insert(full_key(space, &k), v),
                Op::Remove(space, k) => {
                    assert!(
                        REMOVABLE_SPACES.contains(&space),
                        "append-only: removal attempted in {space:?}"
                    );
                    batch.remove(full_key(space, &k))
                }
                Op::Repoint(k, pointer) => {
                    assert!(tier_ref::is_pointer(&pointer), "a repoint names a day file");
                    batch.insert(full_key(Space::Batch, &k), pointer)
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
                    Found::Entry(p, value) => match value.first() {
                        Some(&PUT_COPY_TAG) => decode_put_copy(&value).unwrap_or_else(|e| {
                            // Its checksum matched, so it was written so: handed on as a
                            // record, which does not decode and is reported, not lost.
                            tracing::error!(error = %e, segment = p.segment, offset = p.offset,
                                "a copied put in the value log does not decode");
                            Unreferenced::Record(value)
                        }),
                        _ => Unreferenced::Record(value),
                    },
                    Found::Torn { detail, cut: true } => Unreferenced::Torn(detail),
                    Found::Torn { detail, cut: false } => Unreferenced::Damaged(detail),
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

    fn tier_dir(&self) -> Option<std::path::PathBuf> {
        Some(self.tier.dir().to_path_buf())
    }

    fn commit_forgetting_tier(&self, ops: Vec<Op>) -> Result<(), Error> {
        self.tier.forgetting(|| self.commit(ops))
    }

    fn arrival_facts(&self, key: &[u8]) -> Result<Option<Vec<ArrivalFact>>, Error> {
        let raw = self
            .tree
            .get(full_key(Space::Batch, key))
            .map_err(store_err("get"))?;
        match raw {
            None => Ok(None),
            Some(p) if tier_ref::is_pointer(&p) => {
                self.tier.arrival_facts(&self.tree, key, &p).map(Some)
            }
            Some(v) => {
                let rec = self.value(Space::Batch, key, v.to_vec())?;
                let events = crate::record::decode_record(&rec)?;
                Ok(Some(events.iter().map(ArrivalFact::of).collect()))
            }
        }
    }

    fn value_segments(&self) -> Result<Vec<segments::SegmentUse>, Error> {
        segments::value_segments(self)
    }

    fn segment_records(&self, segment: u32) -> Result<Vec<Vec<u8>>, Error> {
        segments::segment_records(self, segment)
    }

    fn segment_copies(&self, segment: u32) -> Result<Vec<Unreferenced>, Error> {
        segments::segment_copies(self, segment)
    }

    fn remove_segment(&self, segment: u32) -> Result<u64, Error> {
        segments::remove_segment(self, segment)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader holding a pointer into a segment that compaction has since retired and
    /// removed reads the record where sled points now.
    #[test]
    fn a_pointer_into_a_removed_segment_reads_the_moved_record() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SledStore::open_sized(dir.path(), 4096).expect("open");
        let put = |key: &[u8], value: Vec<u8>| Op::Put(Space::Batch, key.to_vec(), value);
        store.commit(vec![put(b"a", vec![1; 3000])]).expect("a");
        store.commit(vec![put(b"b", vec![2; 3000])]).expect("b");
        store.commit(vec![put(b"c", vec![3; 3000])]).expect("c");
        let raw = |key: &[u8]| {
            let v = store.tree.get(full_key(Space::Batch, key)).expect("get");
            v.expect("stored").to_vec()
        };
        let stale = raw(b"a");
        assert_eq!(Pointer::decode(&stale).map(|p| p.segment), Some(0));
        store
            .commit(vec![
                Op::Relocate(b"a".to_vec(), vec![1; 3000]),
                Op::Put(Space::Meta, segments::retired_key(0), b"{}".to_vec()),
            ])
            .expect("relocate");
        assert_eq!(store.remove_segment(0).expect("remove"), 3008);
        assert_ne!(raw(b"a"), stale);
        let read = store.value(Space::Batch, b"a", stale).expect("read");
        assert_eq!(read, vec![1; 3000]);
        // A pointer sled still holds, into a removed segment, is damage: named.
        let b = raw(b"b");
        store.values.remove_segment(1).expect("remove b's segment");
        let err = store.value(Space::Batch, b"b", b).expect_err("gone");
        assert!(err.to_string().contains("cannot be opened"), "{err}");
    }

    #[test]
    fn a_copied_put_reads_back_and_a_damaged_one_is_refused() {
        let v = encode_put_copy(Space::Checkpoint, b"key", b"value");
        assert_eq!(
            decode_put_copy(&v).expect("decode"),
            Unreferenced::Put {
                space: Space::Checkpoint,
                key: b"key".to_vec(),
                value: b"value".to_vec(),
            }
        );
        // An empty value and key are whole puts too.
        assert!(decode_put_copy(&encode_put_copy(Space::Pending, b"", b"")).is_ok());
        let refused = |v: &[u8]| decode_put_copy(v).expect_err("refused").to_string();
        assert!(refused(&v[..5]).contains("shorter than its header"));
        let mut long_key = v.clone();
        long_key[2] = 200;
        assert!(refused(&long_key).contains("key longer"));
        // Only the spaces recovery takes: a derived space's put is not first-hand.
        let head = encode_put_copy(Space::Head, b"k", b"v");
        assert!(refused(&head).contains("space prefix"));
        let mut untagged = v.clone();
        untagged[0] = crate::record::RECORD_VERSION;
        assert!(refused(&untagged).contains("not a copied put"));
        // Every prefix names its own space, and only it.
        for s in Space::ALL {
            assert_eq!(Space::from_prefix(s.prefix()), Some(s));
        }
        assert_eq!(Space::from_prefix(b'z'), None);
    }
}
