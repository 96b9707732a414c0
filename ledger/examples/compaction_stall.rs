//! How long an append waits while compaction moves a value-log segment (issue 40): the
//! append call's wall time before, during a move in steps (`STEP_BOUNDS`), and during a
//! move in one step (the lock held for the whole segment), each on a full segment of
//! live records (the worst case: every entry is written again). Prints p50, p99 and max.
//!
//! `cargo run --release -p ledger --example compaction_stall -- [segment MiB, default 64]`
//!
//! Figures go to BENCHMARKS.md; nothing here asserts a target.

use ledger::store::SledStore;
use ledger::tier::compact::{StepBounds, STEP_BOUNDS};
use ledger::Ledger;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[path = "../tests/common/mod.rs"]
mod common;
use common::archived::Builder;

/// One step for the whole segment: what compaction did before it moved in steps.
const ONE_STEP: StepBounds = StepBounds {
    entries_max: usize::MAX,
    bytes_max: u64::MAX,
};

fn main() {
    let mib: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("segment MiB: a number"))
        .unwrap_or(64);
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let store = SledStore::open_sized(dir, mib << 20).expect("open");
    let l = Ledger::with_store(Box::new(store)).expect("ledger");
    let mut b = Builder::new().events_per_day(1_000);
    let t0 = Instant::now();
    // Segments 0 and 1 full and closed.
    while !ledger::valuelog::segment_path(dir, 2).exists() {
        b.append_day(&l);
    }
    println!("filled two {mib} MiB segments in {:.1?}", t0.elapsed());
    let mut b = b.events_per_day(5);
    let idle: Vec<Duration> = (0..300).map(|_| timed_append(&mut b, &l)).collect();
    report("no compaction", idle);
    for (name, segment, bounds) in [("in steps", 0, STEP_BOUNDS), ("in one step", 1, ONE_STEP)] {
        let (waits, took, steps) = during(&l, &mut b, segment, bounds);
        println!("move {name}: segment {segment} in {took:.1?}, {steps} steps");
        report(&format!("during a move {name}"), waits);
    }
}

/// One append call of a few events a table, flushed; its wall time.
fn timed_append(b: &mut Builder, l: &Ledger) -> Duration {
    let t0 = Instant::now();
    b.append_day(l);
    t0.elapsed()
}

/// Appends while `segment` moves in `bounds` steps on another thread: the appends' wall
/// times, the move's, and its steps.
fn during(
    l: &Ledger,
    b: &mut Builder,
    segment: u32,
    bounds: StepBounds,
) -> (Vec<Duration>, Duration, u64) {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let mover = s.spawn(|| {
            let t0 = Instant::now();
            let mut steps = 0;
            let r = l
                .tier()
                .relocate_segment_in_steps(segment, bounds, &mut |n| {
                    steps = n;
                    Ok(())
                });
            done.store(true, Ordering::SeqCst);
            r.expect("relocate");
            (t0.elapsed(), steps + 1)
        });
        let mut waits = Vec::new();
        while !done.load(Ordering::SeqCst) {
            waits.push(timed_append(b, l));
        }
        let (took, steps) = mover.join().expect("mover");
        (waits, took, steps)
    })
}

fn report(name: &str, mut v: Vec<Duration>) {
    v.sort();
    let at = |q: f64| v[((v.len() - 1) as f64 * q) as usize];
    println!(
        "{name}: {} appends, p50 {:.2?}, p99 {:.2?}, max {:.2?}",
        v.len(),
        at(0.5),
        at(0.99),
        v[v.len() - 1]
    );
}
