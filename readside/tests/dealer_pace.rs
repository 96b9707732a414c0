//! Rounds per hour per dealer in the read model: two simulated tables whose rosters
//! overlap play a day apart, so three dealers deal at both tables in two shifts. Each
//! dealer's dealing time is the sum of their stints, the same after passes between rounds
//! and a rebuild, and far above what their first and last round would make of it.

#[path = "common/sim.rs"]
mod sim;

use analytics::pace::{DEALING_NS_MIN, STINT_GAP_MAX_NS};
use readside::dealers::DealerRow;
use readside::index::{catch_up_with, Tail};
use readside::model::Model;
use schemas::{RuleSet, TableId};
use simulator::{default_config, FaultPlan, TableSim};
use std::collections::BTreeMap;

const DAY_NS: i64 = 86_400_000_000_000;
const HOUR_NS: i64 = 3_600_000_000_000;
/// 2026-03-02T09:00:00Z: the first table's opening.
const START_NS: i64 = 1_772_442_000_000_000_000;
const ROUNDS: u64 = 300;

/// Table `id` on roster seed `seed` playing `ROUNDS` rounds from `start_ns` into
/// `ledger` (stream seqs after `stream_seq`), a pass of a new tail after each 97 steps.
fn play(
    ledger: &ledger::Ledger,
    (id, seed, start_ns): (&str, u64, i64),
    stream_seq: &mut u64,
    pass: &mut impl FnMut(),
) {
    let id = TableId::new(id).unwrap();
    let config = default_config(RuleSet::Csp6);
    let mut t = TableSim::new(id, config, seed, FaultPlan::payout_errors(0.01))
        .unwrap()
        .without_event_signatures()
        .with_clock_start(start_ns);
    for step in 0..=ROUNDS + 1 {
        let published = match step {
            0 => t.opening_events().unwrap(),
            s if s <= ROUNDS => t.play_round().unwrap().events,
            _ => t.closing_events().unwrap(),
        };
        let events: Vec<_> = published
            .into_iter()
            .map(|p| {
                *stream_seq += 1;
                ledger::Incoming {
                    subject_table: Some(p.event.table.clone()),
                    stream_seq: *stream_seq,
                    received_at_ns: p.event.occurred_at_ns,
                    bytes: p.bytes,
                    provenance: Default::default(),
                }
            })
            .collect();
        ledger.writer().append(&events, &[]).unwrap();
        if step % 97 == 0 {
            ledger.flush().unwrap();
            pass();
        }
    }
    ledger.flush().unwrap();
    pass();
}

fn rule() -> ledger::days::DayRule {
    ledger::days::DayRule::new("06:00", "UTC").unwrap()
}

/// Each dealer's (dealing ns, stints) recounted from the model's round rows: a stint is
/// a table's consecutive closed rounds of one dealer with no pause over the bound, from
/// its first opening to its last close.
fn recount(model: &Model, tables: &[&str]) -> BTreeMap<String, (i64, u64)> {
    let mut out: BTreeMap<String, (i64, u64)> = BTreeMap::new();
    for t in tables {
        let t = TableId::new(*t).unwrap();
        let mut run: Option<(String, i64, i64)> = None;
        for r in 1..=ROUNDS + 1 {
            let d = model.digest(&t, r).unwrap();
            let d = d.filter(|d| !d.row.in_progress && d.row.closed_at_ns.is_some());
            let key = d.as_ref().and_then(|d| {
                let closed = d.row.closed_at_ns?;
                Some((d.row.dealer.clone()?, d.row.opened_at_ns, closed))
            });
            match (&mut run, key) {
                (Some((dealer, _, last)), Some((k, opened, closed)))
                    if *dealer == k && opened - *last <= STINT_GAP_MAX_NS =>
                {
                    *last = closed;
                }
                (run, key) => {
                    if let Some((dealer, first, last)) = run.take() {
                        let e = out.entry(dealer).or_default();
                        e.0 += last - first;
                        e.1 += 1;
                    }
                    *run = key;
                }
            }
        }
    }
    out
}

fn by_dealer(rows: Vec<DealerRow>) -> BTreeMap<String, DealerRow> {
    rows.into_iter().map(|r| (r.dealer.clone(), r)).collect()
}

#[test]
fn a_dealer_on_two_tables_a_day_apart_is_paced_by_their_stints() {
    let (_dir, ledger) = sim::ledger();
    let model = Model::temporary(&rule()).unwrap();
    let mut pass = || {
        let mut tail = Tail::with_analytics(analytics::TestSetting::default());
        catch_up_with(&ledger, &model, &mut tail).unwrap();
    };
    // Roster seeds 4000 and 4001: dealers D-5000..D-5003 and D-5001..D-5004.
    let mut seq = 0;
    play(&ledger, ("CSP6-01", 4_000, START_NS), &mut seq, &mut pass);
    play(
        &ledger,
        ("CSP6-02", 4_001, START_NS + DAY_NS),
        &mut seq,
        &mut pass,
    );
    let rows = by_dealer(model.dealers(10).unwrap());
    assert_eq!(rows.len(), 5, "{rows:?}");
    let want = recount(&model, &["CSP6-01", "CSP6-02"]);
    for (dealer, row) in &rows {
        assert_eq!((row.dealing_ns, row.stints), want[dealer], "{dealer}");
    }
    let both = &rows["D-5002"];
    let span_ns = both.last_closed_at_ns.unwrap() - both.first_opened_at_ns.unwrap();
    assert!(span_ns > DAY_NS, "two shifts a day apart: {both:?}");
    assert!(both.stints >= 2, "a stint at each table at least: {both:?}");
    assert!(
        both.dealing_ns >= DEALING_NS_MIN && both.dealing_ns < 8 * HOUR_NS,
        "a quarter of each table's time: {both:?}"
    );
    // The stints cover each table's time once, less the pauses at dealer changes.
    let open_ns: i64 = ["CSP6-01", "CSP6-02"]
        .iter()
        .map(|t| {
            let t = TableId::new(*t).unwrap();
            let first = model.digest(&t, 1).unwrap().unwrap().row.opened_at_ns;
            let last = model.digest(&t, ROUNDS).unwrap().unwrap().row.closed_at_ns;
            last.unwrap() - first
        })
        .sum();
    let dealt_ns: i64 = rows.values().map(|r| r.dealing_ns).sum();
    assert!(
        dealt_ns <= open_ns && dealt_ns > open_ns / 10 * 9,
        "{dealt_ns} ns dealt in {open_ns} ns open"
    );
    // Served: rounds per hour from the stints, against the floor's quartiles.
    let served = readside::dealers::assess(&model.dealers(10).unwrap());
    let q = served.iter().find(|q| q.dealer == "D-5002").unwrap();
    let per_hour_milli = q.pace.rounds_per_hour_milli.expect("enough dealing time");
    let naive_milli = u128::from(both.rounds) * 3_600_000 * 1_000_000_000 / span_ns as u128;
    assert!(
        (20_000..200_000).contains(&per_hour_milli),
        "{per_hour_milli}"
    );
    // The first-to-last span holds a day and the other dealers' turns: 5 times too slow.
    assert!(
        u128::from(per_hour_milli) > 5 * naive_milli,
        "{per_hour_milli} against {naive_milli} from the first and last round"
    );
    let (p25, p50, p75) = (
        q.pace.floor_p25_milli.unwrap(),
        q.pace.floor_median_milli.unwrap(),
        q.pace.floor_p75_milli.unwrap(),
    );
    assert!(p25 <= p50 && p50 <= p75, "{:?}", q.pace);
    assert!(served
        .iter()
        .all(|s| s.pace.floor_median_milli == Some(p50)));
    // A rebuild in one pass, analytics off, gives the same dealing time and stints.
    let fresh = Model::temporary(&rule()).unwrap();
    catch_up_with(&ledger, &fresh, &mut Tail::default()).unwrap();
    let pace = |rows: &BTreeMap<String, DealerRow>| -> Vec<(String, u64, i64, u64)> {
        rows.values()
            .map(|r| (r.dealer.clone(), r.rounds, r.dealing_ns, r.stints))
            .collect()
    };
    assert_eq!(pace(&by_dealer(fresh.dealers(10).unwrap())), pace(&rows));
}

#[test]
fn too_little_dealing_gives_no_rate_and_says_why() {
    let (_dir, ledger) = sim::ledger();
    // Six rounds: well under half an hour for anyone.
    let mut t = TableSim::new(
        TableId::new("TCP3-01").unwrap(),
        default_config(RuleSet::Tcp3),
        77,
        FaultPlan::none(),
    )
    .unwrap()
    .without_event_signatures();
    let mut events = t.opening_events().unwrap();
    for _ in 0..6 {
        events.extend(t.play_round().unwrap().events);
    }
    let incoming: Vec<_> = events
        .into_iter()
        .enumerate()
        .map(|(i, p)| ledger::Incoming {
            subject_table: Some(p.event.table.clone()),
            stream_seq: i as u64 + 1,
            received_at_ns: p.event.occurred_at_ns,
            bytes: p.bytes,
            provenance: Default::default(),
        })
        .collect();
    ledger.writer().append(&incoming, &[]).unwrap();
    ledger.flush().unwrap();
    let model = Model::temporary(&rule()).unwrap();
    catch_up_with(&ledger, &model, &mut Tail::default()).unwrap();
    let served = readside::dealers::assess(&model.dealers(10).unwrap());
    assert_eq!(served.len(), 1, "{served:?}");
    let p = &served[0].pace;
    assert!(
        served[0].dealing_ns > 0 && served[0].stints == 1,
        "{served:?}"
    );
    assert_eq!(p.rounds_per_hour_milli, None, "never 0");
    assert!(
        p.null_reason.as_deref().is_some_and(|r| r.contains("30")),
        "{p:?}"
    );
    assert_eq!(p.floor_median_milli, None, "no dealer is rated");
}
