//! A simulated floor with no injected error, its tables changing shift every 8 hours from
//! 06:00 UTC: each whole gaming day reports no variance, and the same figures under one
//! shift a day as under three (the day's first opening and last closing count).

#[path = "common/sim.rs"]
mod sim;

use readside::finance::{report, GroupBy, Query, Span};
use readside::model::Model;
use schemas::count::CountResult;
use schemas::finance::FinanceReport;
use simulator::{FaultPlan, Floor, ShiftClock};

const HOUR_NS: i64 = 3_600_000_000_000;
/// 2026-11-24 06:00 UTC.
const DAY_START_NS: i64 = 1_795_500_000 * 1_000_000_000;

/// Plays `rounds` rounds a table of a 3-table floor from 09:00 on 2026-11-24, closing
/// them after; returns the ledger's directory and the count room's results.
fn floor(rounds: u64, seed: u64) -> (tempfile::TempDir, ledger::Ledger, Vec<CountResult>) {
    let (dir, ledger) = sim::ledger();
    let clock = ShiftClock::new(6 * HOUR_NS, 8 * HOUR_NS).unwrap();
    let mut floor = Floor::new(3, seed, FaultPlan::none())
        .unwrap()
        .without_event_signatures()
        .with_shifts(clock)
        .starting_at(DAY_START_NS + 3 * HOUR_NS);
    let mut stream_seq = 0u64;
    for step in 0..=rounds + 1 {
        let (mut events, mut checkpoints) = (Vec::new(), Vec::new());
        for t in floor.tables.iter_mut() {
            let published = match step {
                0 => t.opening_events().unwrap(),
                s if s <= rounds => t.play_round().unwrap().events,
                _ => t.closing_events().unwrap(),
            };
            let mut incoming = |bytes: Vec<u8>, table: &schemas::TableId, at_ns: i64| {
                stream_seq += 1;
                ledger::Incoming {
                    subject_table: Some(table.clone()),
                    stream_seq,
                    received_at_ns: at_ns,
                    bytes,
                    provenance: Default::default(),
                }
            };
            for p in published {
                events.push(incoming(p.bytes, &p.event.table, p.event.occurred_at_ns));
            }
            let c = t.checkpoint().unwrap();
            checkpoints.push(incoming(c.to_bincode(), &c.table, c.signed_at_ns));
        }
        ledger.writer().append(&events, &checkpoints).unwrap();
    }
    ledger.flush().unwrap();
    let counts = floor.take_finance().counts;
    (dir, ledger, counts)
}

fn day_report(
    ledger: &ledger::Ledger,
    shifts: &str,
    counts: &[CountResult],
    day: &str,
) -> FinanceReport {
    let rule = ledger::days::DayRule::new("06:00", "UTC")
        .unwrap()
        .with_shifts(shifts)
        .unwrap();
    let m = Model::temporary(&rule).unwrap();
    readside::index::catch_up(ledger, &m).unwrap();
    let q = Query {
        span: Span::Day(day.into()),
        group_by: GroupBy::Table,
        table: None,
        pit: None,
    };
    report(&m, &[], counts, &q).unwrap()
}

#[test]
fn a_floor_without_errors_shows_no_variance_under_either_shift_layout() {
    let (_dir, ledger, counts) = floor(900, 11);
    // 900 rounds a table from 09:00 on the 24th end on the 25th.
    for day in ["2026-11-24", "2026-11-25"] {
        let one = day_report(&ledger, "06:00", &counts, day);
        let three = day_report(&ledger, "06:00,14:00,22:00", &counts, day);
        for r in [&one, &three] {
            let v: Vec<String> = r
                .variances
                .iter()
                .map(|v| format!("{} {:?} {}: {}", v.shift, v.cause, v.amount, v.text))
                .collect();
            assert_eq!(r.variances_total, 0, "{day} {}: {v:#?}", r.day_rule);
            assert_eq!(r.groups.len(), 3, "{day}: every table played");
            // No error: the counts agree with the rounds to the cent.
            let win = r.total.win_accounting;
            assert_eq!(win, Some(r.total.win_recorded), "{day} {}", r.day_rule);
        }
        for (a, b) in one.groups.iter().zip(&three.groups) {
            assert_eq!(
                (a.opening, a.closing),
                (b.opening, b.closing),
                "{day} {}",
                a.key
            );
            assert_eq!(a.win_accounting, b.win_accounting, "{day} {}", a.key);
        }
    }
}
