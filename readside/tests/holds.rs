//! Hold alarms per closed table shift (`hold_outside`) through a real ledger and read
//! model, on hand-written TCP3 chains (`common::golden`): a shift with one round overpaid
//! by 1,000.00 lies far outside its interval (3.291 standard deviations) and raises one signal when its table's next
//! shift begins. An ordinary shift, a still-open shift and a shift whose pay table is not
//! priced raise none; the last raises one once priced. Indexed in slices from fresh tails
//! and in one pass, with the pricing before and after the close.

mod common;

use analytics::TestSetting;
use common::golden::{self, FLUSH_PAID};
use common::{rule, Chain};
use readside::edges::Budget;
use readside::finance::{report, GroupBy, Query, Span};
use readside::index::{catch_up_with, Tail};
use readside::model::Model;
use readside::signals::SignalRow;
use schemas::{EventBody, Money, StaffId};

const MIN_NS: i64 = 60_000_000_000;
const HOUR_NS: i64 = 60 * MIN_NS;
/// 2026-11-25 06:00 UTC: the day's and shift 1's start (shifts at 06:00, 14:00, 22:00).
const DAY_START_NS: i64 = 1_795_586_400 * 1_000_000_000;
/// The flush's Pair Plus paid 1,020.00 where 20.00 is due.
const OVERPAID: i64 = 102_000;

/// A TCP3 table opened before shift 1 under `pay_tables`, with a dealer.
fn table(name: &str, pay_tables: Vec<schemas::PayTable>) -> Chain {
    let mut c = Chain::new(name);
    c.push(DAY_START_NS - 10 * MIN_NS, None, golden::opened(pay_tables));
    let dealer = StaffId::new("D-HOLD").unwrap();
    c.push(
        DAY_START_NS - 9 * MIN_NS,
        None,
        EventBody::DealerChanged { dealer },
    );
    c
}

/// Plays `flush_paid` rounds, one each 20 minutes from `from_ns`.
fn rounds(c: &mut Chain, from_ns: i64, flush_paid: &[i64]) {
    for (i, paid) in flush_paid.iter().enumerate() {
        golden::play(c, from_ns + i as i64 * 20 * MIN_NS, *paid);
    }
}

/// Shift 1 rigged (round 2 overpaid), shift 2 ordinary, shift 3 rigged and still open.
fn rigged() -> Chain {
    let mut c = table("T-HOLD", Vec::new());
    rounds(
        &mut c,
        DAY_START_NS + 10 * MIN_NS,
        &[FLUSH_PAID, OVERPAID, FLUSH_PAID],
    );
    rounds(
        &mut c,
        DAY_START_NS + 8 * HOUR_NS + 10 * MIN_NS,
        &[FLUSH_PAID; 3],
    );
    rounds(
        &mut c,
        DAY_START_NS + 16 * HOUR_NS + 10 * MIN_NS,
        &[OVERPAID],
    );
    c
}

struct Store {
    _dir: tempfile::TempDir,
    ledger: ledger::Ledger,
    stream_seq: u64,
}

impl Store {
    fn new() -> Store {
        let dir = tempfile::tempdir().unwrap();
        let ledger = ledger::Ledger::open(dir.path().join("ledger")).unwrap();
        Store {
            _dir: dir,
            ledger,
            stream_seq: 0,
        }
    }

    /// Appends `batch` to the ledger.
    fn append(&mut self, mut batch: Vec<ledger::Incoming>) {
        for m in &mut batch {
            self.stream_seq += 1;
            m.stream_seq = self.stream_seq;
        }
        let out = self.ledger.writer().append(&batch, &[]).unwrap();
        assert!(out
            .events
            .iter()
            .all(|a| matches!(a, ledger::Appended::Stored { .. })));
        self.ledger.flush().unwrap();
    }
}

fn holds(model: &Model) -> Vec<SignalRow> {
    let all = model.signals(None, usize::MAX).unwrap();
    all.into_iter()
        .filter(|s| s.kind == "hold_outside")
        .collect()
}

/// Indexes with the analytics on, from a fresh tail (a restarted server); the signals
/// the tail hands the publisher.
fn index(store: &Store, model: &Model) -> Vec<SignalRow> {
    let mut tail = Tail::with_analytics(TestSetting::default());
    catch_up_with(&store.ledger, model, &mut tail).unwrap();
    let (raised, dropped) = tail.take_raised();
    assert_eq!(dropped, 0);
    raised
        .into_iter()
        .filter(|s| s.kind == "hold_outside")
        .collect()
}

/// The finance report of shift 1 for `table`.
fn shift_1(model: &Model, table: &str) -> schemas::finance::ReportGroup {
    let q = Query {
        span: Span::Shift("2026-11-25/1".into()),
        group_by: GroupBy::Table,
        table: Some(schemas::TableId::new(table).unwrap()),
        pit: None,
    };
    report(model, &[], &[], &q).unwrap().total
}

/// The one signal: shift 1, found at round 4 (shift 2's first), with the figures the
/// finance report gives and a link to the overpaid round.
fn check_rigged(model: &Model, s: &SignalRow) {
    assert_eq!((s.table.as_str(), s.round), ("T-HOLD", 4), "{s:?}");
    assert_eq!(s.subject, "shift 2026-11-25/1");
    let h = s.hold.as_ref().expect("a hold signal carries its figures");
    let g = shift_1(model, "T-HOLD");
    assert!(g.hold_alarm, "the finance report agrees: {g:?}");
    // Three rounds: the tray takes in 45.00 and pays out 40.00 + 1,020.00.
    assert_eq!(h.actual_win, Money(4_500 - 4_000 - OVERPAID));
    assert_eq!(h.actual_win, g.actual_win);
    assert_eq!(
        (h.theoretical_win, h.handle_priced),
        (g.theoretical_win, g.handle_priced)
    );
    // The alert's interval: 3.291 of the report's standard deviations either side.
    let sd = (g.win_high - g.theoretical_win).0 / 2;
    let half = Money(sd * 3_291 / 1_000);
    assert_eq!(
        (h.win_low, h.win_high),
        (g.theoretical_win - half, g.theoretical_win + half)
    );
    assert!(h.actual_win < h.win_low, "{h:?}");
    assert_eq!(s.threshold_milli, 3_291);
    assert_eq!(s.false_alarms_milli_per_1000_rounds, 1_000, "0.1% a shift");
    assert_eq!(h.rounds, 3);
    assert_eq!(h.shift, "2026-11-25/1");
    assert_eq!(
        h.finance_link,
        "/v1/reports?shift=2026-11-25/1&table=T-HOLD"
    );
    assert!(s.statistic_milli < -s.threshold_milli, "{s:?}");
    assert_eq!(s.moved.len(), 1, "one payout error: {:?}", s.moved);
    assert_eq!(s.moved[0].round, 2);
    assert!(s.moved[0].text.contains("where"), "{}", s.moved[0].text);
    assert_eq!(
        s.round_links(),
        ["/v1/tables/T-HOLD/rounds/4", "/v1/tables/T-HOLD/rounds/2"]
    );
}

#[test]
fn a_rigged_shift_raises_one_signal_an_ordinary_or_open_shift_none() {
    // In slices: a fresh tail after every 7 events.
    let all = rigged().out;
    let mut store = Store::new();
    let sliced = Model::temporary(&rule()).unwrap();
    let mut handed = Vec::new();
    for part in all.chunks(7) {
        store.append(part.to_vec());
        handed.extend(index(&store, &sliced));
    }
    let signals = holds(&sliced);
    assert_eq!(signals.len(), 1, "{signals:?}");
    check_rigged(&sliced, &signals[0]);
    assert_eq!(handed, signals, "the publisher is handed it once");
    // In one pass: the same signal.
    let whole = Model::temporary(&rule()).unwrap();
    assert_eq!(index(&store, &whole), signals);
    assert_eq!(holds(&whole), signals);
    // Indexed again: nothing new.
    assert_eq!(index(&store, &whole), Vec::new());
    // With the analytics off nothing is judged.
    let off = Model::temporary(&rule()).unwrap();
    catch_up_with(&store.ledger, &off, &mut Tail::default()).unwrap();
    assert_eq!(holds(&off), Vec::new());
    assert!(
        shift_1(&off, "T-HOLD").hold_alarm,
        "the report still says so"
    );
}

/// Shift 1 of a table under the generous Pair Plus table, rigged (round 2 overpaid); and
/// apart, shift 2's first round.
fn configured() -> (Vec<ledger::Incoming>, Chain) {
    let mut c = table("T-PAY", vec![golden::generous_pair_plus()]);
    rounds(&mut c, DAY_START_NS + 10 * MIN_NS, &[FLUSH_PAID, OVERPAID]);
    let n = c.out.len();
    rounds(
        &mut c,
        DAY_START_NS + 8 * HOUR_NS + 10 * MIN_NS,
        &[FLUSH_PAID],
    );
    (c.out.drain(..n).collect(), c)
}

#[test]
fn an_unpriced_shift_raises_none_until_priced_then_one() {
    // Priced after the close, on a table that plays no more: the shift waits, and the
    // first pass after the pricing judges it at the table's newest round.
    let (shift1, mut rest) = configured();
    let mut store = Store::new();
    let model = Model::temporary(&rule()).unwrap();
    store.append(shift1);
    store.append(rest.out.drain(..).collect());
    assert_eq!(index(&store, &model), Vec::new(), "theoretical pending");
    assert!(!shift_1(&model, "T-PAY").hold_alarm);
    // A reader sees the shift is not judged, and why.
    let (named, total) = readside::holds::not_judged(&model, None, 100).unwrap();
    assert_eq!(total, 1, "{named:?}");
    assert_eq!(named[0].shift.as_deref(), Some("2026-11-25/1"));
    assert_eq!(named[0].reason, readside::holds::awaiting_reason());
    assert_eq!(
        index(&store, &model),
        Vec::new(),
        "not priced: still waiting"
    );
    assert_eq!(
        readside::edges::price_all(&model, &Budget::CONFIGURED).unwrap(),
        1
    );
    assert!(
        shift_1(&model, "T-PAY").hold_alarm,
        "priced, the report alarms"
    );
    let raised = index(&store, &model);
    assert_eq!(raised.len(), 1, "{raised:?}");
    assert_eq!(
        (raised[0].round, raised[0].subject.as_str()),
        (3, "shift 2026-11-25/1"),
        "at the newest round, with no new round"
    );
    assert_eq!(holds(&model), raised);
    assert_eq!(
        readside::holds::not_judged(&model, None, 100).unwrap(),
        (Vec::new(), 0),
        "judged: no longer waiting"
    );
    let h = raised[0].hold.as_ref().unwrap();
    assert_eq!(h.actual_win, shift_1(&model, "T-PAY").actual_win);
    // Later passes and rounds judge it no more.
    assert_eq!(index(&store, &model), Vec::new());
    golden::play(
        &mut rest,
        DAY_START_NS + 8 * HOUR_NS + 30 * MIN_NS,
        FLUSH_PAID,
    );
    store.append(rest.out.drain(..).collect());
    assert_eq!(index(&store, &model), Vec::new());
    assert_eq!(holds(&model).len(), 1);
}

#[test]
fn a_shift_priced_before_its_close_is_judged_at_the_close() {
    let (shift1, mut rest) = configured();
    let mut store = Store::new();
    let model = Model::temporary(&rule()).unwrap();
    store.append(shift1);
    assert_eq!(index(&store, &model), Vec::new(), "shift 1 is open");
    assert_eq!(
        readside::edges::price_all(&model, &Budget::CONFIGURED).unwrap(),
        1
    );
    assert_eq!(index(&store, &model), Vec::new(), "still open");
    store.append(rest.out.drain(..).collect());
    let raised = index(&store, &model);
    assert_eq!(raised.len(), 1, "{raised:?}");
    assert_eq!(raised[0].round, 3, "shift 2's first round closes shift 1");
    assert_eq!(holds(&model), raised);
    // A rebuild with the edge priced raises the same signal at the same round.
    model.clear().unwrap();
    assert_eq!(index(&store, &model), raised);
}

/// The name of shift `k` (from 0) after shift 1 of 2026-11-25: three shifts a day.
fn shift_name(k: i64) -> String {
    format!("2026-11-{}/{}", 25 + k / 3, k % 3 + 1)
}

#[test]
fn a_shift_given_up_unpriced_is_named_with_its_reason_and_never_judged() {
    // Shifts 1 and 2 rigged, then ordinary ones, one round each, under a pay table that
    // is not priced until every one of them has closed.
    let mut c = table("T-PAY", vec![golden::generous_pair_plus()]);
    let at = |k: i64, min: i64| DAY_START_NS + k * 8 * HOUR_NS + min * MIN_NS;
    let mut store = Store::new();
    let model = Model::temporary(&rule()).unwrap();
    for k in 0..=(holds_awaiting_max() as i64) {
        let paid = if k < 2 { OVERPAID } else { FLUSH_PAID };
        golden::play(&mut c, at(k, 10), paid);
        store.append(c.out.drain(..).collect());
        assert_eq!(index(&store, &model), Vec::new(), "theoretical pending");
    }
    // 16 closed shifts wait, each named with its reason; none given up yet.
    let (named, total) = readside::holds::not_judged(&model, None, 100).unwrap();
    assert_eq!((named.len(), total), (16, 16));
    let waiting = readside::holds::awaiting_reason();
    assert!(named.iter().all(|n| n.reason == waiting), "{named:?}");
    assert_eq!(named[0].shift.as_deref(), Some(shift_name(0).as_str()));
    let k17 = holds_awaiting_max() as i64 + 1;
    golden::play(&mut c, at(k17, 10), FLUSH_PAID);
    store.append(c.out.drain(..).collect());
    assert_eq!(index(&store, &model), Vec::new());
    // The 17th closed shift gives the oldest up: named, with the reason, not silent.
    let (named, total) = readside::holds::not_judged(&model, None, 100).unwrap();
    assert_eq!(total, 17, "16 waiting and 1 given up");
    let named: Vec<_> = named.into_iter().filter(|n| n.reason != waiting).collect();
    assert_eq!(named.len(), 1, "{named:?}");
    assert_eq!(
        (named[0].table.as_str(), named[0].shift.as_deref()),
        ("T-PAY", Some(shift_name(0).as_str()))
    );
    assert_eq!(named[0].starts_at_ns, at(0, 0));
    assert_eq!(
        named[0].reason,
        "its pay table was not priced within 16 shifts"
    );
    let other = schemas::TableId::new("T-HOLD").unwrap();
    assert_eq!(
        readside::holds::not_judged(&model, Some(&other), 100)
            .unwrap()
            .1,
        0
    );
    let t = schemas::TableId::new("T-PAY").unwrap();
    assert_eq!(
        readside::holds::not_judged(&model, Some(&t), 100)
            .unwrap()
            .1,
        17
    );

    // Priced, the next round judges the 16 waiting: rigged shift 2 alarms, shift 1 never.
    assert_eq!(
        readside::edges::price_all(&model, &Budget::CONFIGURED).unwrap(),
        1
    );
    golden::play(&mut c, at(k17, 30), FLUSH_PAID);
    store.append(c.out.drain(..).collect());
    let raised = index(&store, &model);
    let subjects: Vec<&str> = raised.iter().map(|s| s.subject.as_str()).collect();
    assert_eq!(subjects, [format!("shift {}", shift_name(1))], "{raised:?}");
    assert_eq!(
        readside::holds::not_judged(&model, None, 100).unwrap().1,
        1,
        "the given-up shift kept; none waits"
    );
}

fn holds_awaiting_max() -> usize {
    readside::holds::AWAITING_MAX
}
