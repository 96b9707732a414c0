//! A read model indexed live, with a restart between passes, holds what a rebuild in one
//! pass holds: `verify` compares the two (`Model::differences`). A 3-table floor with shift
//! changes, payout errors and an error-prone dealer on one table is indexed with the
//! decision analytics on, each pass from a fresh tail (as after a restart), every few
//! rounds. Vary: the pass interval, and which table's events reach the ledger first.

#[path = "common/sim.rs"]
mod sim;

use readside::index::{catch_up_with, Tail};
use readside::model::Model;
use simulator::{ErrorProneDealer, FaultPlan, Floor, ShiftClock};

const HOUR_NS: i64 = 3_600_000_000_000;
/// 2026-11-24 06:00 UTC: the gaming day's start under `rule()`.
const DAY_START_NS: i64 = 1_795_500_000 * 1_000_000_000;
const ROUNDS: u64 = 120;

fn rule() -> ledger::days::DayRule {
    ledger::days::DayRule::new("06:00", "UTC")
        .unwrap()
        .with_shifts("06:00,14:00,22:00")
        .unwrap()
}

/// Plays the floor into a fresh ledger, table order `order` each step, calling `pass`
/// after every `every` steps and at the end.
fn play(
    seed: u64,
    every: u64,
    order: &[usize],
    mut pass: impl FnMut(&ledger::Ledger),
) -> (tempfile::TempDir, ledger::Ledger) {
    let (dir, ledger) = sim::ledger();
    let clock = ShiftClock::new(6 * HOUR_NS, 8 * HOUR_NS).unwrap();
    let mut floor = Floor::new(3, seed, FaultPlan::payout_errors(0.02))
        .unwrap()
        .without_event_signatures()
        .with_shifts(clock)
        .starting_at(DAY_START_NS + 5 * HOUR_NS);
    let prone = ErrorProneDealer {
        roster_place: 1,
        wrong_payout: 0.15,
    };
    let first = floor.tables.remove(0);
    floor.tables.insert(0, first.with_error_prone_dealer(prone));
    let mut stream_seq = 0u64;
    for step in 0..=ROUNDS + 1 {
        let mut events = Vec::new();
        for &i in order {
            let t = &mut floor.tables[i];
            let published = match step {
                0 => t.opening_events().unwrap(),
                s if s <= ROUNDS => t.play_round().unwrap().events,
                _ => t.closing_events().unwrap(),
            };
            for p in published {
                stream_seq += 1;
                events.push(ledger::Incoming {
                    subject_table: Some(p.event.table.clone()),
                    stream_seq,
                    received_at_ns: p.event.occurred_at_ns,
                    bytes: p.bytes,
                    provenance: Default::default(),
                });
            }
        }
        ledger.writer().append(&events, &[]).unwrap();
        if step % every == 0 {
            ledger.flush().unwrap();
            pass(&ledger);
        }
    }
    ledger.flush().unwrap();
    pass(&ledger);
    (dir, ledger)
}

/// Indexes with a fresh tail each pass; returns the differences from a one-pass rebuild.
fn restarted_against_rebuild(seed: u64, every: u64, order: &[usize]) -> Vec<String> {
    let model = Model::temporary(&rule()).unwrap();
    let analytics = analytics::TestSetting::default();
    let (_dir, ledger) = play(seed, every, order, |l| {
        catch_up_with(l, &model, &mut Tail::with_analytics(analytics)).unwrap();
    });
    let fresh = Model::temporary(&rule()).unwrap();
    catch_up_with(&ledger, &fresh, &mut Tail::with_analytics(analytics)).unwrap();
    assert!(
        model.meta().unwrap().rounds >= 3 * ROUNDS,
        "every round indexed"
    );
    model.differences(&fresh, 10).unwrap()
}

#[test]
fn a_restart_between_passes_changes_nothing_verify_compares() {
    for (every, order) in [(7, [0, 1, 2]), (41, [2, 0, 1])] {
        assert_eq!(
            restarted_against_rebuild(11, every, &order),
            Vec::<String>::new(),
            "a pass every {every} steps, tables in order {order:?}"
        );
    }
}
