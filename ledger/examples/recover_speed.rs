//! How fast `Ledger::open` recovers after sled lost its commits (RELIABILITY.md "Found":
//! a corrupt byte in sled's log rolls it back silently) while the value log kept the
//! records: sled's files are put back to a copy taken after the first call, the value log
//! is kept, and the open that follows appends every later record again through
//! `append_batch`. Prints the open's wall time and events per second, and checks that every
//! event came back (same heads as before the rollback).
//!
//! `cargo run --release -p ledger --example recover_speed -- [batches, default 2000]`
//! (batches of 512 events over 16 tables, as `append_cpu`)

use ledger::Ledger;
use std::time::Instant;

#[path = "../benches/support/batches.rs"]
mod batches;
use batches::{now_ns, Chains, BATCH};
/// The ledger tests' helpers: putting sled's files back is what `tests/recover.rs` does.
#[path = "../tests/common/mod.rs"]
mod common;
use common::{closed, copy_dir, put_back_sled_files};

fn main() {
    let batches: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("batches: a number"))
        .unwrap_or(2000);
    assert!(
        batches >= 2,
        "at least two batches: one kept by sled, one recovered"
    );
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("ledger");
    let snapshot = tmp.path().join("sled-after-first-call");
    let mut chains = Chains::new();
    let now = now_ns();

    let ledger = Ledger::open(&dir).expect("open");
    ledger
        .writer()
        .append_batch(&chains.batch(now).0)
        .expect("append");
    ledger.flush().expect("flush");
    drop(ledger);
    closed(&dir);
    // sled's files as they were after the first call.
    copy_dir(&dir, &snapshot, true);
    let ledger = Ledger::open(&dir).expect("reopen");
    for _ in 1..batches {
        ledger
            .writer()
            .append_batch(&chains.batch(now).0)
            .expect("append");
        ledger.flush().expect("flush");
    }
    let heads = ledger.reader().heads();
    drop(ledger);
    closed(&dir);

    put_back_sled_files(&snapshot, &dir);
    let start = Instant::now();
    let ledger = Ledger::open(&dir).expect("open after the rollback");
    let secs = start.elapsed().as_secs_f64();
    let r = ledger.recovered().clone();
    assert_eq!(ledger.reader().heads(), heads, "every event recovered");
    assert_eq!(r.stored as usize, (batches - 1) * BATCH);
    let bytes: u64 = std::fs::read_dir(dir.join(ledger::valuelog::DIR))
        .expect("value log")
        .map(|e| e.expect("entry").metadata().expect("meta").len())
        .sum();
    println!(
        "recovered {} records, {} events ({} duplicates, {} quarantined) in {secs:.2} s at open: {:.0} events/s; value log now {:.1} MB",
        r.records,
        r.stored,
        r.duplicates,
        r.quarantined,
        r.stored as f64 / secs,
        bytes as f64 / 1e6
    );
}
