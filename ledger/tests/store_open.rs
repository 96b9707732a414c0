//! An open of a sled store writes the same few bytes however much dead space its file
//! holds (issue 40). sled fills each free segment of its file with zero bytes at every
//! open; the vendored copy punches those segments out of the file instead
//! (vendor/README.md). Before that, a read model rebuilt over 3,651 days held 495 free
//! segments, and every `report --day` wrote 260 MB to open it.
//!
//! Counted, not timed: the process's written bytes (`wchar` in `/proc/self/io`) across
//! the open, and the file's allocated bytes after it. One test in this file, so no other
//! test's writes are counted.

use ledger::store::{choice, Op, Space};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// sled's segment: the unit of its file's free space.
const SEGMENT_BYTES: u64 = 512 * 1024;
/// Keys written or removed by each commit of the churn.
const KEYS_PER_COMMIT: usize = 256;
/// Every this many keys, one is kept; the rest are removed.
const KEPT_EVERY: u32 = 64;
/// Bytes of each value.
const VALUE_BYTES: usize = 1024;

#[test]
fn an_open_writes_no_more_with_more_dead_space() {
    if cfg!(not(target_os = "linux")) || choice::skip_unless_sled("sled's free segments") {
        return;
    }
    // Two amounts of dead space: 8 MiB and 32 MiB of keys written, then all but a few removed.
    for mib in [8u32, 32] {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("db");
        let keys = churn(dir.path(), mib);
        let len_bytes = std::fs::metadata(&db).expect("db").len();
        assert!(
            len_bytes >= u64::from(mib) << 20,
            "{mib} MiB written leave a file of {len_bytes} B"
        );
        let before = written_bytes();
        let store = choice::open_store(dir.path()).expect("reopen");
        let open_wrote = written_bytes() - before;
        assert!(
            open_wrote < SEGMENT_BYTES,
            "{mib} MiB: the open wrote {open_wrote} B, a file of {len_bytes} B"
        );
        // Free segments are holes: at least one segment of the file takes no disk. How
        // many are free depends on sled's flushes, so no finer share is asserted.
        let allocated = std::fs::metadata(&db).expect("db").blocks() * 512;
        assert!(
            allocated + SEGMENT_BYTES <= len_bytes,
            "{mib} MiB: {allocated} B allocated of a {len_bytes} B file"
        );
        // Nothing is lost: the kept keys read back, the removed ones stay removed.
        for k in [0, KEPT_EVERY, keys - KEPT_EVERY] {
            let v = store.get(Space::Model, &k.to_be_bytes()).expect("get");
            assert_eq!(v, Some(value(k)), "{mib} MiB: key {k}");
        }
        let gone = store.get(Space::Model, &1u32.to_be_bytes()).expect("get");
        assert_eq!(gone, None, "{mib} MiB: key 1 was removed");
    }
}

/// Writes `mib` MiB of values under distinct keys, then removes all but every
/// `KEPT_EVERY`th, so their segments fall free. Closes the store; returns the key count.
fn churn(dir: &Path, mib: u32) -> u32 {
    let store = choice::open_store(dir).expect("open");
    let keys = (mib << 20) / VALUE_BYTES as u32;
    for chunk in (0..keys).collect::<Vec<u32>>().chunks(KEYS_PER_COMMIT) {
        let ops = chunk
            .iter()
            .map(|k| Op::Put(Space::Model, k.to_be_bytes().to_vec(), value(*k)))
            .collect();
        store.commit(ops).expect("commit");
    }
    store.flush().expect("flush");
    let removed: Vec<u32> = (0..keys).filter(|k| k % KEPT_EVERY != 0).collect();
    for chunk in removed.chunks(KEYS_PER_COMMIT) {
        let ops = chunk
            .iter()
            .map(|k| Op::Remove(Space::Model, k.to_be_bytes().to_vec()))
            .collect();
        store.commit(ops).expect("commit");
    }
    store.flush().expect("flush");
    keys
}

/// A value that names its key.
fn value(key: u32) -> Vec<u8> {
    let mut v = vec![(key % 251) as u8; VALUE_BYTES];
    v[..4].copy_from_slice(&key.to_be_bytes());
    v
}

/// Bytes this process has passed to write calls so far (`wchar`).
fn written_bytes() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").expect("/proc/self/io");
    io.lines()
        .find_map(|l| l.strip_prefix("wchar: "))
        .and_then(|n| n.trim().parse().ok())
        .expect("wchar in /proc/self/io")
}
