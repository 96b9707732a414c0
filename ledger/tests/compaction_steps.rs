//! Compaction in steps: the writer lock is released between steps, so appends go on in
//! the middle of a segment's move; and a compaction stopped between any two steps leaves
//! every event readable, `verify` passing, and the next run finishing the move.

mod common;

use common::archived::{Builder, TABLES};
use ledger::store::SledStore;
use ledger::tier::compact::StepBounds;
use ledger::{Error, Ledger};
use schemas::{Hash32, TableId};
use std::path::Path;

/// Events a table a day: enough that records, not seal copies, fill the segments.
const EVENTS_PER_DAY: u64 = 40;
/// Value-log segments this small give a few days several closed segments.
const SEGMENT_BYTES: u64 = 16 * 1024;
/// Steps this small move a segment in several steps.
const SMALL_STEPS: StepBounds = StepBounds {
    entries_max: 2,
    bytes_max: 1024,
};

fn open_small(dir: &Path) -> Ledger {
    let store = SledStore::open_sized(dir, SEGMENT_BYTES).unwrap();
    Ledger::with_store(Box::new(store)).unwrap()
}

/// Every table's events, by hash, in seq order.
fn view(l: &Ledger) -> Vec<(TableId, Vec<Hash32>)> {
    TABLES
        .iter()
        .map(|t| {
            let t = TableId::new(*t).unwrap();
            let hashes = l
                .reader()
                .events(&t, 1..=u64::MAX)
                .map(|e| e.unwrap().hash)
                .collect();
            (t, hashes)
        })
        .collect()
}

fn assert_verifies(l: &Ledger) {
    let v = l.verifier().verify().unwrap();
    assert!(v.is_ok(), "{v:?}");
}

/// Eight hot days over small segments, two records a day: closed segments with live
/// records, which a relocation moves one record a step. The builder goes on after it.
fn hot_small(dir: &Path) -> (Ledger, Builder) {
    let l = open_small(dir);
    let mut b = Builder::new().events_per_day(EVENTS_PER_DAY);
    b.build(&l, 0);
    for _ in 0..7 {
        b.append_day(&l);
        b.seal_day(&l);
    }
    (l, b)
}

#[test]
fn appends_go_on_between_the_steps_of_a_segment() {
    let dir = tempfile::tempdir().unwrap();
    let (l, mut b) = hot_small(dir.path());
    let mut appended = 0;
    let r = l
        .tier()
        .relocate_segment_in_steps(0, SMALL_STEPS, &mut |_| {
            // The writer lock is free here: an append that needed it would never return.
            b.append_day(&l);
            appended += 1;
            Ok(())
        })
        .unwrap();
    assert!(r.records_moved >= 2, "{r:?}");
    assert!(appended >= 3, "appends between steps: {appended}");
    let per_table = view(&l)[0].1.len();
    let expected = EVENTS_PER_DAY as usize * (8 + appended);
    assert_eq!(per_table, expected, "every event appended is stored");
    assert_verifies(&l);
    let c = l.tier().compact_values().unwrap();
    assert_eq!(c.leftovers_removed, 1, "{c:?}");
    let before = view(&l);
    drop(l);
    let l = open_small(dir.path());
    assert_eq!(view(&l), before, "after a restart");
    assert_verifies(&l);
}

/// Stops segment 0's relocation after step `stop_at`, closes the ledger and reopens it.
fn stopped_after(stop_at: u64) {
    let dir = tempfile::tempdir().unwrap();
    let (l, _) = hot_small(dir.path());
    let before = view(&l);
    let stopped = l
        .tier()
        .relocate_segment_in_steps(0, SMALL_STEPS, &mut |step| {
            if step == stop_at {
                return Err(Error::Tier(format!("stopped after step {step}")));
            }
            Ok(())
        });
    assert!(matches!(stopped, Err(Error::Tier(_))), "{stopped:?}");
    drop(l);
    let l = open_small(dir.path());
    assert_eq!(view(&l), before, "stopped after step {stop_at}");
    assert_verifies(&l);
    assert!(
        l.tier().retired_segments().unwrap().is_empty(),
        "not retired"
    );
    // Segment 0 holds day one's two records (one a table) and its seal's copy.
    let r = l.tier().relocate_segment(0).unwrap();
    let left = 2u64.saturating_sub(stop_at);
    assert_eq!(r.records_moved, left, "the next run moves the rest: {r:?}");
    let c = l.tier().compact_values().unwrap();
    assert_eq!(c.leftovers_removed, 1, "{c:?}");
    assert_eq!(view(&l), before, "moved after a stop at step {stop_at}");
    assert_verifies(&l);
    drop(l);
    let l = open_small(dir.path());
    assert_eq!(view(&l), before);
    assert_verifies(&l);
}

#[test]
fn a_relocation_stopped_after_its_first_step_loses_nothing() {
    stopped_after(1);
}

#[test]
fn a_relocation_stopped_after_its_second_step_loses_nothing() {
    stopped_after(2);
}

#[test]
fn a_relocation_stopped_before_its_retiring_commit_loses_nothing() {
    stopped_after(3);
}
