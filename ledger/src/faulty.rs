//! A `Store` around a real one that fails writes on demand: the disk-full and failed-fsync
//! faults of tests and drills, without filling a disk. It also fails reads of chosen keys as
//! a corrupt sled page does (`FaultSwitch::corrupt_reads`).
//!
//! A failed commit writes nothing (it fails before the inner store sees it), as a value-log
//! write refused for space does. A failed flush fails after the commit it follows was
//! applied, so the ledger's state is ahead of what is durable until a flush succeeds.

use crate::error::Error;
use crate::store::{KeyIter, KvIter, Op, Space, Store, UnreferencedIter};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Which writes fail now, and how many have failed. Shared with the test that drives it.
#[derive(Debug, Default)]
pub struct FaultSwitch {
    /// Commits fail (nothing written).
    pub fail_commits: AtomicBool,
    /// Flushes fail (what was committed is not yet durable).
    pub fail_flushes: AtomicBool,
    /// Writes failed so far.
    pub failed: AtomicU64,
    /// Commits that went through.
    pub commits: AtomicU64,
    /// Entries handed out by range scans: what a read costs, for tests of bounded work.
    pub entries_read: AtomicU64,
    /// Reads of keys of this space that start with this prefix fail, as sled's do on a
    /// corrupt page ("Read corrupted data at file offset").
    pub corrupt_reads: std::sync::Mutex<Option<(Space, Vec<u8>)>>,
}

impl FaultSwitch {
    /// Makes commits and flushes fail (`on`) or succeed again.
    pub fn set_full(&self, on: bool) {
        self.fail_commits.store(on, Ordering::SeqCst);
        self.fail_flushes.store(on, Ordering::SeqCst);
    }

    /// Makes reads of `space`'s keys starting with `prefix` fail (`None`: none fail).
    pub fn corrupt(&self, at: Option<(Space, Vec<u8>)>) {
        *self.corrupt_reads.lock().unwrap_or_else(|p| p.into_inner()) = at;
    }

    /// The injected read failure for `key` of `space`, if its reads fail.
    fn read(&self, space: Space, key: &[u8]) -> Result<(), Error> {
        let corrupt = self.corrupt_reads.lock().unwrap_or_else(|p| p.into_inner());
        match corrupt.as_ref() {
            Some((s, prefix)) if *s == space && key.starts_with(prefix) => Err(Error::Store {
                op: "read",
                detail: "injected fault: Read corrupted data at file offset 4096".to_string(),
            }),
            _ => Ok(()),
        }
    }

    fn fail(&self, flag: &AtomicBool, op: &'static str) -> Result<(), Error> {
        if !flag.load(Ordering::SeqCst) {
            return Ok(());
        }
        self.failed.fetch_add(1, Ordering::SeqCst);
        Err(Error::Store {
            op,
            detail: "injected fault: No space left on device (os error 28)".to_string(),
        })
    }
}

/// A store whose writes fail while its `FaultSwitch` says so.
pub struct FaultyStore {
    inner: Box<dyn Store>,
    switch: Arc<FaultSwitch>,
}

impl FaultyStore {
    /// Wraps the store `Ledger::open` would open in `path` (`store::choice`).
    pub fn open(path: &Path) -> Result<(FaultyStore, Arc<FaultSwitch>), Error> {
        let switch = Arc::new(FaultSwitch::default());
        let inner = crate::store::choice::open_store(path)?;
        let store = FaultyStore {
            inner,
            switch: switch.clone(),
        };
        Ok((store, switch))
    }
}

impl Store for FaultyStore {
    fn get(&self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        self.switch.read(space, key)?;
        self.inner.get(space, key)
    }
    fn range<'a>(&'a self, space: Space, from: &[u8], to: Option<&[u8]>) -> KvIter<'a> {
        let switch = &self.switch;
        Box::new(self.inner.range(space, from, to).map(move |kv| {
            switch.entries_read.fetch_add(1, Ordering::SeqCst);
            let kv = kv?;
            switch.read(space, &kv.0)?;
            Ok(kv)
        }))
    }
    fn range_rev<'a>(&'a self, space: Space, from: &[u8], to: Option<&[u8]>) -> KvIter<'a> {
        let switch = &self.switch;
        Box::new(self.inner.range_rev(space, from, to).map(move |kv| {
            let (k, v) = kv?;
            switch.read(space, &k)?;
            switch.entries_read.fetch_add(1, Ordering::SeqCst);
            Ok((k, v))
        }))
    }
    fn keys<'a>(&'a self, space: Space, from: &[u8], to: Option<&[u8]>) -> KeyIter<'a> {
        let switch = &self.switch;
        Box::new(self.inner.keys(space, from, to).map(move |k| {
            let k = k?;
            switch.read(space, &k)?;
            Ok(k)
        }))
    }
    fn last_key_at_or_before(
        &self,
        space: Space,
        prefix: &[u8],
        at: &[u8],
    ) -> Result<Option<Vec<u8>>, Error> {
        self.inner.last_key_at_or_before(space, prefix, at)
    }
    fn commit(&self, ops: Vec<Op>) -> Result<(), Error> {
        self.switch.fail(&self.switch.fail_commits, "commit")?;
        self.inner.commit(ops)?;
        self.switch.commits.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn flush(&self) -> Result<(), Error> {
        self.switch.fail(&self.switch.fail_flushes, "flush")?;
        self.inner.flush()
    }
    fn unreferenced(&self) -> Result<UnreferencedIter<'_>, Error> {
        self.inner.unreferenced()
    }
    fn recovery_started(&self) -> Result<(), Error> {
        self.inner.recovery_started()
    }
    fn recovery_done(&self) -> Result<(), Error> {
        self.inner.recovery_done()
    }
    fn tier_dir(&self) -> Option<std::path::PathBuf> {
        self.inner.tier_dir()
    }
    fn reads(&self) -> Option<crate::store::reads::StoreReads> {
        self.inner.reads()
    }
    fn archived_day_of(&self, key: &[u8]) -> Result<Option<String>, Error> {
        self.inner.archived_day_of(key)
    }
    fn commit_forgetting_tier(&self, ops: Vec<Op>) -> Result<(), Error> {
        self.switch.fail(&self.switch.fail_commits, "commit")?;
        self.inner.commit_forgetting_tier(ops)?;
        self.switch.commits.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn arrival_facts(&self, key: &[u8]) -> Result<Option<Vec<crate::store::ArrivalFact>>, Error> {
        self.switch.read(Space::Batch, key)?;
        self.inner.arrival_facts(key)
    }
    fn value_segments(&self) -> Result<Vec<crate::store::segments::SegmentUse>, Error> {
        self.inner.value_segments()
    }
    fn segment_records(&self, segment: u32) -> Result<Vec<Vec<u8>>, Error> {
        self.inner.segment_records(segment)
    }
    fn segment_copies(&self, segment: u32) -> Result<Vec<crate::store::Unreferenced>, Error> {
        self.inner.segment_copies(segment)
    }
    fn remove_segment(&self, segment: u32) -> Result<u64, Error> {
        self.inner.remove_segment(segment)
    }
}
