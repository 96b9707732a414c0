//! Golden finance shifts: hand-written events through a real ledger and read model, each
//! table one case of the finance checks, its figures computed here by hand from the rules.
//!
//! Every table plays shift 1 of 2026-11-25 (06:00-14:00 UTC): an opening count, a cash
//! buy-in, rounds, a fill, a closing count, its drop box removed, and the next shift's
//! opening count. The rounds are the replayer's golden rounds, re-chained:
//! - TCP3 `clean_tcp3_fold_and_pair_plus_only`: box 1 folds, losing Ante 10.00 and Pair
//!   Plus 5.00 (TCP3 §3.12.1); box 2's flush wins Pair Plus 5.00 at 4 to 1 (TCP3 §3.16,
//!   §4.2). The tray takes in 15.00 and pays out 20.00: the house wins -5.00.
//! - CSP6 `clean_csp6_full_house_loses_wins_jackpot`: Ante 10.00 and BET 20.00 lost
//!   (CSP6 §3.14.2); the progressive pays a fixed 200.00 less the 1.00 stake (CSP6 §4.2).

mod common;

use common::{rule, Chain};
use readside::finance::{report, GroupBy, Query, Span};
use readside::model::Model;
use schemas::count::CountResult;
use schemas::finance::{Cause, FinanceReport, ReportGroup};
use schemas::{Event, EventBody, Finance, Money, RoundId, TableId};

const HOUR_NS: i64 = 3_600_000_000_000;
const MIN_NS: i64 = 60_000_000_000;
/// 2026-11-25 06:00 UTC: the day's and shift 1's start.
const DAY_START_NS: i64 = 1_795_586_400 * 1_000_000_000;
const OPENING: i64 = 100_000;
const BUY_IN: i64 = 5_000;
const FILL: i64 = 10_000;
/// The TCP3 round's house win: 15.00 taken in, 20.00 paid out.
const TCP3_ROUND_WIN: i64 = 1_500 - 2_000;

impl Chain {
    fn finance(&mut self, at_ns: i64, entry: Finance) {
        self.push(at_ns, None, EventBody::Finance { entry });
    }

    fn count(&mut self, at_ns: i64, total: i64, closing: bool) {
        let counts = vec![schemas::ChipCount {
            denomination: Money(100),
            chips: (total / 100) as u32,
        }];
        let (total, counted_by) = (Money(total), "closer".to_string());
        self.finance(
            at_ns,
            match closing {
                true => Finance::ClosingInventory {
                    counts,
                    total,
                    counted_by,
                },
                false => Finance::OpeningInventory {
                    counts,
                    total,
                    counted_by,
                },
            },
        );
    }

    /// Plays a golden round from `at_ns`, a second per event, with `pay` changing the
    /// dealer's recorded payouts.
    fn round(&mut self, golden: &str, at_ns: i64, pay: impl Fn(&mut EventBody)) {
        self.round += 1;
        let r = self.round;
        for (i, mut body) in golden_bodies(golden).into_iter().enumerate() {
            match body {
                EventBody::TableOpened { .. } => continue,
                _ => pay(&mut body),
            }
            self.push(at_ns + i as i64 * 1_000_000_000, Some(r), body);
        }
    }
}

/// The bodies of a replayer golden scenario's events.
fn golden_bodies(name: &str) -> Vec<EventBody> {
    let path = format!(
        "{}/../replayer/tests/golden/{name}.events.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Event>(l).unwrap().body)
        .collect()
}

fn table_opened(golden: &str) -> EventBody {
    golden_bodies(golden).into_iter().next().unwrap()
}

const TCP3: &str = "clean_tcp3_fold_and_pair_plus_only";
const CSP6: &str = "clean_csp6_full_house_loses_wins_jackpot";

/// How a table's shift goes wrong.
#[derive(Clone, Copy, PartialEq)]
enum Case {
    Clean,
    Overpayment,
    MissingFillSlip,
    MiscountedCloser,
    ShortDrop,
}

/// A TCP3 table's shift 1 with `case` injected; returns its chain and the count result.
fn tcp3_shift(name: &str, case: Case) -> (Chain, CountResult) {
    let mut c = Chain::new(name);
    let t0 = DAY_START_NS;
    c.push(t0 - 10 * MIN_NS, None, table_opened(TCP3));
    c.count(t0 - 5 * MIN_NS, OPENING, false);
    c.finance(
        t0 + 10 * MIN_NS,
        Finance::CashBuyIn {
            amount: Money(BUY_IN),
        },
    );
    c.round(TCP3, t0 + 20 * MIN_NS, |_| {});
    // The second round's flush: paid 25.00 where the rules give 20.00 when overpaid.
    let over = case == Case::Overpayment;
    c.round(TCP3, t0 + 40 * MIN_NS, |b| {
        if let EventBody::PaidOut { net, .. } = b {
            if over && net.0 == 2_000 {
                *net = Money(2_500);
            }
        }
    });
    c.finance(
        t0 + 4 * HOUR_NS,
        Finance::Fill {
            amount: Money(FILL),
            slip_no: "F-1".into(),
        },
    );
    // The tray as the rounds and slips leave it, then what each case does to it.
    let mut tray = OPENING - BUY_IN + 2 * TCP3_ROUND_WIN + FILL;
    if over {
        tray -= 500;
    }
    let (closing, next_opening) = match case {
        Case::MissingFillSlip => (tray + 10_000, tray + 10_000),
        Case::MiscountedCloser => (tray - 1_000, tray),
        _ => (tray, tray),
    };
    c.count(t0 + 8 * HOUR_NS - 5 * MIN_NS, closing, true);
    let drop_box_id = format!("{name}/2026-11-25/1");
    c.finance(
        t0 + 8 * HOUR_NS,
        Finance::DropBoxRemoved {
            drop_box_id: drop_box_id.clone(),
        },
    );
    c.count(t0 + 8 * HOUR_NS + 5 * MIN_NS, next_opening, false);
    // Rounds are reported when the next begins or the table closes (nothing after it).
    c.push(t0 + 8 * HOUR_NS + 10 * MIN_NS, None, EventBody::TableClosed);
    let cash = if case == Case::ShortDrop {
        BUY_IN - 1_000
    } else {
        BUY_IN
    };
    (c, counted(name, &drop_box_id, cash))
}

fn counted(table: &str, drop_box_id: &str, cash: i64) -> CountResult {
    CountResult {
        table: TableId::new(table).unwrap(),
        drop_box_id: drop_box_id.into(),
        cash: Money(cash),
        markers: Money::ZERO,
        counted_at_ns: DAY_START_NS + 9 * HOUR_NS,
        counted_by: "count team".into(),
    }
}

/// A CSP6 table whose one round wins a fixed Progressive award (CSP6 §4.2): the dealer
/// pays it from the tray; only a share of the pool is the jackpot system's to pay.
fn jackpot_shift() -> (Chain, CountResult) {
    let mut c = Chain::new("T-JP");
    let t0 = DAY_START_NS;
    c.push(t0 - 10 * MIN_NS, None, table_opened(CSP6));
    c.count(t0 - 5 * MIN_NS, OPENING, false);
    c.finance(
        t0 + 10 * MIN_NS,
        Finance::CashBuyIn {
            amount: Money(BUY_IN),
        },
    );
    c.round(CSP6, t0 + 20 * MIN_NS, |_| {});
    // Ante 10.00 and BET 20.00 lost into the tray; the 199.00 net award leaves it.
    c.count(
        t0 + 8 * HOUR_NS - 5 * MIN_NS,
        OPENING - BUY_IN + 3_000 - 19_900,
        true,
    );
    c.finance(
        t0 + 8 * HOUR_NS,
        Finance::DropBoxRemoved {
            drop_box_id: "T-JP/2026-11-25/1".into(),
        },
    );
    c.push(t0 + 8 * HOUR_NS + 10 * MIN_NS, None, EventBody::TableClosed);
    (c, counted("T-JP", "T-JP/2026-11-25/1", BUY_IN))
}

/// A ledger holding every case, fed in two halves with the model brought up to date
/// after each, so the shift rows merge across passes.
struct Floor {
    _dir: tempfile::TempDir,
    ledger: ledger::Ledger,
    model: Model,
    counts: Vec<CountResult>,
}

fn floor() -> Floor {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger::Ledger::open(dir.path().join("ledger")).unwrap();
    let model = Model::open(&dir.path().join("readmodel"), &rule()).unwrap();
    let mut chains = Vec::new();
    let mut counts = Vec::new();
    for (name, case) in [
        ("T-CLEAN", Case::Clean),
        ("T-OVER", Case::Overpayment),
        ("T-FILL", Case::MissingFillSlip),
        ("T-CLOSER", Case::MiscountedCloser),
        ("T-SHORT", Case::ShortDrop),
    ] {
        let (c, r) = tcp3_shift(name, case);
        chains.push(c);
        counts.push(r);
    }
    let (c, r) = jackpot_shift();
    chains.push(c);
    counts.push(r);
    let mut stream_seq = 0;
    for half in 0..2 {
        let mut batch = Vec::new();
        for c in &mut chains {
            let n = c.out.len() / 2;
            let part: Vec<_> = if half == 0 {
                c.out.drain(..n).collect()
            } else {
                c.out.drain(..).collect()
            };
            batch.extend(part);
        }
        for m in &mut batch {
            stream_seq += 1;
            m.stream_seq = stream_seq;
        }
        let out = ledger.writer().append(&batch, &[]).unwrap();
        let stored = out
            .events
            .iter()
            .filter(|a| matches!(a, ledger::Appended::Stored { .. }))
            .count();
        let refused: Vec<_> = out
            .events
            .iter()
            .filter(|a| !matches!(a, ledger::Appended::Stored { .. }))
            .collect();
        assert_eq!(stored, batch.len(), "{refused:?}");
        readside::index::catch_up(&ledger, &model).unwrap();
    }
    Floor {
        _dir: dir,
        ledger,
        model,
        counts,
    }
}

fn shift_report(f: &Floor, counts: &[CountResult]) -> FinanceReport {
    let q = Query {
        span: Span::Shift("2026-11-25/1".into()),
        group_by: GroupBy::Table,
        table: None,
        pit: None,
    };
    report(&f.model, &[], counts, &q).unwrap()
}

fn group<'a>(r: &'a FinanceReport, table: &str) -> &'a ReportGroup {
    r.groups.iter().find(|g| g.key == table).unwrap()
}

fn causes(r: &FinanceReport, table: &str) -> Vec<(Cause, i64)> {
    r.variances
        .iter()
        .filter(|v| v.table.as_str() == table)
        .map(|v| (v.cause, v.amount.0))
        .collect()
}

#[test]
fn a_clean_shift_has_three_equal_wins_and_the_theoretical_win_of_its_handle() {
    let f = floor();
    let r = shift_report(&f, &f.counts);
    let g = group(&r, "T-CLEAN");
    // Accounting: drop 50.00 + credits 0 + closing 1,040.00 - opening 1,000.00 - fills
    // 100.00 = -10.00, the two rounds' -5.00 each.
    assert_eq!(g.drop, Some(Money(BUY_IN)));
    assert_eq!(g.win_accounting, Some(Money(2 * TCP3_ROUND_WIN)));
    assert_eq!(
        (g.win_recorded, g.win_rules),
        (Money(-1_000), Money(-1_000))
    );
    assert_eq!(g.rounds, 2);
    assert!(
        causes(&r, "T-CLEAN").is_empty(),
        "{:?}",
        causes(&r, "T-CLEAN")
    );
    assert_eq!(g.hold_bp, Some(-1_000 * 10_000 / BUY_IN));
    // Handle: Ante 10.00 x 2 rounds; Pair Plus 5.00 x 2 boxes x 2 rounds.
    let edge = |l| rules::edge::default_edge(schemas::RuleSet::Tcp3, l).unwrap();
    let ante = edge(schemas::PayLine::Ante);
    let pp = edge(schemas::PayLine::PairPlus);
    // Priced in ppb, summed over the lines and rounded once, half away from zero.
    let theo_ppb = 2_000 * i128::from(ante.edge_ppb) + 2_000 * i128::from(pp.edge_ppb);
    let theo = ((theo_ppb + theo_ppb.signum() * 500_000_000) / 1_000_000_000) as i64;
    assert_eq!(g.theoretical_win, Money(theo));
    // sd = sqrt(sum stake^2 x variance): 2 x 1000^2 x Ante's + 4 x 500^2 x Pair Plus's.
    let var = (2 * 1_000_000 * ante.variance_ppm as u128 + 4 * 250_000 * pp.variance_ppm as u128)
        / 1_000_000;
    let sd = var.isqrt() as i64;
    assert_eq!(
        (g.win_low, g.win_high),
        (Money(theo - 2 * sd), Money(theo + 2 * sd))
    );
    assert!(!g.hold_alarm, "-10.00 lies inside {theo} +- {}", 2 * sd);
}

#[test]
fn an_overpayment_is_the_disputed_round_behind_it() {
    let f = floor();
    let r = shift_report(&f, &f.counts);
    let g = group(&r, "T-OVER");
    assert_eq!(
        (g.win_recorded, g.win_rules),
        (Money(-1_500), Money(-1_000))
    );
    assert_eq!(g.win_accounting, Some(Money(-1_500)), "the tray paid it");
    assert_eq!(causes(&r, "T-OVER"), [(Cause::Overpayment, -500)]);
    let v = r
        .variances
        .iter()
        .find(|v| v.table.as_str() == "T-OVER")
        .unwrap();
    assert_eq!(v.links.len(), 1);
    assert_eq!(v.links[0].round, Some(RoundId(2)));
    assert_eq!(
        v.links[0].href.as_deref(),
        Some("/v1/finance/rounds/T-OVER/2")
    );
}

#[test]
fn chips_without_a_slip_and_a_miscounted_closer_are_told_apart() {
    let f = floor();
    let r = shift_report(&f, &f.counts);
    assert_eq!(causes(&r, "T-FILL"), [(Cause::MissingFillSlip, 10_000)]);
    assert_eq!(
        group(&r, "T-FILL").win_accounting,
        Some(Money(-1_000 + 10_000))
    );
    assert_eq!(causes(&r, "T-CLOSER"), [(Cause::MiscountedCloser, -1_000)]);
    let v = r
        .variances
        .iter()
        .find(|v| v.table.as_str() == "T-CLOSER")
        .unwrap();
    let kinds: Vec<&str> = v.links.iter().map(|l| l.kind.as_str()).collect();
    assert_eq!(
        kinds, ["tray_count"; 3],
        "opening, closing and the next opening"
    );
}

#[test]
fn a_short_drop_and_a_box_not_yet_counted() {
    let f = floor();
    let r = shift_report(&f, &f.counts);
    assert_eq!(causes(&r, "T-SHORT"), [(Cause::ShortDrop, -1_000)]);
    assert_eq!(group(&r, "T-SHORT").drop, Some(Money(BUY_IN - 1_000)));
    let none = shift_report(&f, &[]);
    let g = group(&none, "T-CLEAN");
    assert_eq!(
        (g.drop, g.win_accounting),
        (None, None),
        "never a zero drop"
    );
    assert_eq!(causes(&none, "T-CLEAN"), [(Cause::NotYetCounted, 0)]);
    assert_eq!(none.total.drop, None);
}

#[test]
fn a_fixed_jackpot_award_is_paid_from_the_tray() {
    let f = floor();
    let r = shift_report(&f, &f.counts);
    let g = group(&r, "T-JP");
    assert_eq!(
        g.jackpot_paid_recorded,
        Money::ZERO,
        "no share of the pool was won"
    );
    assert_eq!(
        (g.win_recorded, g.win_accounting),
        (Money(3_000 - 19_900), Some(Money(3_000 - 19_900)))
    );
    assert!(causes(&r, "T-JP").is_empty(), "{:?}", causes(&r, "T-JP"));
}

#[test]
fn reports_group_and_span_and_the_model_equals_a_fresh_rebuild() {
    let f = floor();
    let fresh = Model::temporary(&rule()).unwrap();
    readside::index::catch_up(&f.ledger, &fresh).unwrap();
    assert_eq!(
        f.model.differences(&fresh, 10).unwrap(),
        Vec::<String>::new()
    );
    let q = |span, group_by| Query {
        span,
        group_by,
        table: None,
        pit: None,
    };
    let day = report(
        &f.model,
        &[],
        &f.counts,
        &q(Span::Day("2026-11-25".into()), GroupBy::Game),
    )
    .unwrap();
    let keys: Vec<&str> = day.groups.iter().map(|g| g.key.as_str()).collect();
    assert_eq!(keys, ["CSP6", "TCP3"]);
    assert_eq!(day.total.rounds, 5 * 2 + 1);
    let mtd = report(
        &f.model,
        &[],
        &f.counts,
        &q(Span::MonthToDate("2026-11-30".into()), GroupBy::Day),
    )
    .unwrap();
    assert_eq!(mtd.groups.len(), 1);
    assert_eq!(mtd.total, day.total.clone_with_key(&mtd.total.key));
    let pits = [readside::finance::parse_pit("main=T-CLEAN,T-OVER").unwrap()];
    let by_pit = report(
        &f.model,
        &pits,
        &f.counts,
        &q(Span::Day("2026-11-25".into()), GroupBy::Pit),
    )
    .unwrap();
    let keys: Vec<&str> = by_pit.groups.iter().map(|g| g.key.as_str()).collect();
    assert_eq!(keys, ["(no pit)", "main"]);
    let ytd = q(Span::YearToDate("2026-12-31".into()), GroupBy::Table);
    assert!(
        report(&f.model, &[], &f.counts, &ytd).is_ok(),
        "a leap-free year fits"
    );
    let long = q(
        Span::Days {
            from: "2026-01-01".into(),
            to: "2027-01-02".into(),
        },
        GroupBy::Table,
    );
    assert!(matches!(
        report(&f.model, &[], &f.counts, &long),
        Err(readside::ReadError::BadRequest(_))
    ));
    let csv = readside::finance::to_csv(&by_pit);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], readside::finance::CSV_HEADER);
    assert_eq!(lines.len(), 1 + 2 + 1, "a line per group and the total");
    // Both boxes are counted, but shift 2 opened at 14:05 and no one closed it: the day's
    // closing and so its accounting win are not known.
    assert!(
        lines[2].starts_with("main,4,4,100.00,100.00,"),
        "{}",
        lines[2]
    );
    let cells: Vec<&str> = lines[2].split(',').collect();
    assert_eq!(cells[10], "", "win_accounting");
}

trait WithKey {
    fn clone_with_key(&self, key: &str) -> Self;
}

impl WithKey for ReportGroup {
    fn clone_with_key(&self, key: &str) -> ReportGroup {
        ReportGroup {
            key: key.into(),
            ..self.clone()
        }
    }
}

#[test]
fn a_pools_liability_over_the_day_is_recomputed_against_its_display() {
    let f = floor();
    let pools = readside::jackpot::liability(&f.ledger, &rule(), "2026-11-25").unwrap();
    let p = pools.iter().find(|p| p.pool.as_str() == "CSP6-PJ").unwrap();
    // First shown at 50,000.00 this day, which it opens at; the 1.00 progressive stake
    // contributes 25% (contribution_bp 2500); the full house's fixed 200.00 is no payment
    // from the pool. Opening + contributions - paid = closing.
    assert_eq!(
        (p.opening, p.contributions, p.hits),
        (Money(5_000_000), Money(25), 0)
    );
    assert_eq!(p.closing, Money(5_000_000 + 25));
    assert_eq!(p.displayed, Some(Money(5_000_000)));
    // The display showed the pool as it stood then; the 0.25 contributed after it is no
    // difference.
    assert_eq!(p.difference, Some(Money::ZERO));
    assert_eq!(p.closing - p.displayed.unwrap(), Money(25));
    let next = readside::jackpot::liability(&f.ledger, &rule(), "2026-11-26").unwrap();
    let n = next.iter().find(|p| p.pool.as_str() == "CSP6-PJ").unwrap();
    assert_eq!(
        (n.opening, n.contributions, n.closing),
        (p.closing, Money(0), p.closing)
    );
}

/// BENCHMARKS.md: a month of 50 tables, 3 shifts a day, each shift's row full (64 buy-ins,
/// a round, a fill, both counts, its drop box); times the day and month-to-date reports
/// from the read model. Run: `cargo test --release -p readside --test finance
/// month_of_reports -- --ignored --nocapture`. Prints; asserts no time.
#[test]
#[ignore]
fn month_of_reports() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger::Ledger::open(dir.path().join("ledger")).unwrap();
    let model = Model::open(&dir.path().join("readmodel"), &rule()).unwrap();
    let mut stream_seq = 0;
    for t in 0..50 {
        let mut c = Chain::new(&format!("M-{t:02}"));
        c.push(
            DAY_START_NS - 24 * 30 * HOUR_NS - HOUR_NS,
            None,
            table_opened(TCP3),
        );
        for shift in 0..(30 * 3) {
            let t0 = DAY_START_NS - 24 * 30 * HOUR_NS + 6 * HOUR_NS + shift * 8 * HOUR_NS;
            c.count(t0, OPENING, false);
            for i in 0..64 {
                c.finance(
                    t0 + (i + 1) * MIN_NS,
                    Finance::CashBuyIn {
                        amount: Money(BUY_IN),
                    },
                );
            }
            c.round(TCP3, t0 + 2 * HOUR_NS, |_| {});
            c.finance(
                t0 + 3 * HOUR_NS,
                Finance::Fill {
                    amount: Money(FILL),
                    slip_no: format!("F-{shift}"),
                },
            );
            c.count(t0 + 8 * HOUR_NS - MIN_NS, OPENING, true);
            let id = format!("M-{t:02}/{shift}");
            c.finance(
                t0 + 8 * HOUR_NS,
                Finance::DropBoxRemoved { drop_box_id: id },
            );
        }
        for m in &mut c.out {
            stream_seq += 1;
            m.stream_seq = stream_seq;
        }
        for part in c.out.chunks(4_096) {
            ledger.writer().append(part, &[]).unwrap();
        }
    }
    let t0 = std::time::Instant::now();
    readside::index::catch_up(&ledger, &model).unwrap();
    eprintln!("{stream_seq} events indexed in {:.1?}", t0.elapsed());
    for span in [
        Span::Day("2026-11-20".into()),
        Span::MonthToDate("2026-11-24".into()),
    ] {
        let q = Query {
            span: span.clone(),
            group_by: GroupBy::Table,
            table: None,
            pit: None,
        };
        for _ in 0..3 {
            let t0 = std::time::Instant::now();
            let r = report(&model, &[], &[], &q).unwrap();
            eprintln!(
                "{span:?}: {} table shifts in {:.1?}",
                r.total.table_shifts,
                t0.elapsed()
            );
        }
    }
}

/// A day's chain for `T-A`: counts at each change of a three-shift day, the 13:59 closer
/// 10.00 short (the 14:01 opener right), two rounds of -5.00. And `T-B`, open 09:00 to
/// 12:00 with one round: an opening and a closing count inside one shift.
fn day_of_two_tables() -> (Vec<Chain>, Vec<CountResult>) {
    let t0 = DAY_START_NS;
    let buy = |c: &mut Chain, at: i64, amount: i64| {
        c.finance(
            at,
            Finance::CashBuyIn {
                amount: Money(amount),
            },
        )
    };
    let change = |c: &mut Chain, at: i64, closing: i64, opening: i64, n: u32| {
        c.count(at - MIN_NS, closing, true);
        let drop_box_id = format!("T-A/{n}");
        c.finance(at, Finance::DropBoxRemoved { drop_box_id });
        c.count(at + MIN_NS, opening, false);
    };
    let mut a = Chain::new("T-A");
    a.push(t0 - 10 * MIN_NS, None, table_opened(TCP3));
    a.count(t0 - 5 * MIN_NS, 100_000, false);
    buy(&mut a, t0 + 10 * MIN_NS, 5_000);
    a.round(TCP3, t0 + 20 * MIN_NS, |_| {});
    let fill = Finance::Fill {
        amount: Money(10_000),
        slip_no: "F-1".into(),
    };
    a.finance(t0 + 4 * HOUR_NS, fill);
    change(&mut a, t0 + 8 * HOUR_NS, 103_500, 104_500, 1);
    buy(&mut a, t0 + 9 * HOUR_NS, 2_000);
    let credit = Finance::Credit {
        amount: Money(3_000),
        slip_no: "C-1".into(),
    };
    a.finance(t0 + 10 * HOUR_NS, credit);
    change(&mut a, t0 + 16 * HOUR_NS, 99_500, 99_500, 2);
    a.round(TCP3, t0 + 17 * HOUR_NS, |_| {});
    change(&mut a, t0 + 24 * HOUR_NS, 99_000, 99_000, 3);
    a.push(t0 + 24 * HOUR_NS + 5 * MIN_NS, None, EventBody::TableClosed);
    let mut b = Chain::new("T-B");
    b.push(t0 + 3 * HOUR_NS - MIN_NS, None, table_opened(TCP3));
    b.count(t0 + 3 * HOUR_NS, 200_000, false);
    buy(&mut b, t0 + 3 * HOUR_NS + 10 * MIN_NS, 10_000);
    b.round(TCP3, t0 + 4 * HOUR_NS, |_| {});
    b.count(t0 + 6 * HOUR_NS, 189_500, true);
    let drop_box_id = "T-B/1".to_string();
    b.finance(
        t0 + 6 * HOUR_NS + MIN_NS,
        Finance::DropBoxRemoved { drop_box_id },
    );
    b.push(t0 + 6 * HOUR_NS + 2 * MIN_NS, None, EventBody::TableClosed);
    let counts = vec![
        counted("T-A", "T-A/1", 5_000),
        counted("T-A", "T-A/2", 2_000),
        counted("T-A", "T-A/3", 0),
        counted("T-B", "T-B/1", 10_000),
    ];
    (vec![a, b], counts)
}

#[test]
fn a_days_win_is_its_first_opening_and_last_closing_under_any_shift_layout() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger::Ledger::open(dir.path().join("ledger")).unwrap();
    let (chains, counts) = day_of_two_tables();
    let mut batch: Vec<_> = chains.into_iter().flat_map(|c| c.out).collect();
    for (i, m) in batch.iter_mut().enumerate() {
        m.stream_seq = i as u64 + 1;
    }
    ledger.writer().append(&batch, &[]).unwrap();
    let day = |by| Query {
        span: Span::Day("2026-11-25".into()),
        group_by: by,
        table: None,
        pit: None,
    };
    for shifts in ["06:00", "06:00,18:00", "06:00,14:00,22:00"] {
        let rule = ledger::days::DayRule::new("06:00", "UTC")
            .unwrap()
            .with_shifts(shifts)
            .unwrap();
        let m = Model::temporary(&rule).unwrap();
        readside::index::catch_up(&ledger, &m).unwrap();
        for by in [GroupBy::Table, GroupBy::Shift, GroupBy::Day] {
            let r = report(&m, &[], &counts, &day(by)).unwrap();
            // T-A: 990.00 + drop 70.00 + credits 30.00 - fills 100.00 - 1,000.00 = -10.00.
            // T-B: 1,895.00 + drop 100.00 - 2,000.00 = -5.00. The three rounds' -15.00.
            assert_eq!(r.total.win_accounting, Some(Money(-1_500)), "{shifts}");
            assert_eq!(
                r.total.opening,
                Some(Money(300_000)),
                "{shifts}: first counts"
            );
            assert_eq!(
                r.total.closing,
                Some(Money(288_500)),
                "{shifts}: last counts"
            );
            assert_eq!(r.total.not_known, Vec::<String>::new(), "{shifts}");
            assert_eq!(r.total.drop, Some(Money(17_000)), "{shifts}");
            assert_eq!(r.total.win_recorded, Money(-1_500), "{shifts}");
        }
        let by_table = report(&m, &[], &counts, &day(GroupBy::Table)).unwrap();
        let a = group(&by_table, "T-A");
        assert_eq!(
            (a.opening, a.closing),
            (Some(Money(100_000)), Some(Money(99_000)))
        );
        assert_eq!(a.win_accounting, Some(Money(-1_000)), "{shifts}");
        assert_eq!(group(&by_table, "T-B").win_accounting, Some(Money(-500)));
        // The 14:00 miscount moves no day figure (the 14:01 opener counts right), but
        // where 14:00 is a shift change the day report names it, as the shift's does.
        let want = match shifts {
            "06:00,14:00,22:00" => vec![(Cause::MiscountedCloser, -1_000)],
            _ => vec![],
        };
        assert_eq!(causes(&by_table, "T-A"), want, "{shifts}");
        assert_eq!(by_table.variances_total, want.len() as u64, "{shifts}");
    }
    // By shift, each table's shift is checked: the three-shift layout has a change at
    // 14:00 to see the closer's miscount, told apart by the 14:01 opener's count.
    let rule = common::rule();
    let m = Model::temporary(&rule).unwrap();
    readside::index::catch_up(&ledger, &m).unwrap();
    let by_shift = report(&m, &[], &counts, &day(GroupBy::Shift)).unwrap();
    let want = vec![(Cause::MiscountedCloser, -1_000)];
    assert_eq!(causes(&by_shift, "T-A"), want);
    assert_eq!(by_shift.total.variances, 1);
    let first = group(&by_shift, "2026-11-25/1");
    // Shift 1: T-A 1,035.00 + 50.00 - 100.00 - 1,000.00 and T-B -5.00.
    assert_eq!(first.win_accounting, Some(Money(-1_500 - 500)));
    assert_eq!(first.opening, Some(Money(300_000)));
}

#[test]
fn what_is_not_counted_is_null_with_its_reason_never_zero() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger::Ledger::open(dir.path().join("ledger")).unwrap();
    let (chains, mut counts) = day_of_two_tables();
    let mut batch: Vec<_> = chains.into_iter().flat_map(|c| c.out).collect();
    for (i, m) in batch.iter_mut().enumerate() {
        m.stream_seq = i as u64 + 1;
    }
    ledger.writer().append(&batch, &[]).unwrap();
    // T-A's last box is not counted yet.
    counts.retain(|c| c.drop_box_id != "T-A/3");
    let m = Model::temporary(&common::rule()).unwrap();
    readside::index::catch_up(&ledger, &m).unwrap();
    let q = |day: &str, by, table: Option<&str>| Query {
        span: Span::Day(day.into()),
        group_by: by,
        table: table.map(|t| TableId::new(t).unwrap()),
        pit: None,
    };
    let r = report(&m, &[], &counts, &q("2026-11-25", GroupBy::Table, None)).unwrap();
    let a = group(&r, "T-A");
    assert_eq!((a.drop, a.win_accounting), (None, None));
    assert_eq!(
        a.not_known,
        ["T-A 2026-11-25: 1 drop box(es) not yet counted"]
    );
    assert_eq!(
        r.total.win_accounting, None,
        "a total that needs it is not known"
    );
    assert_eq!(r.total.not_known, a.not_known);
    let csv = readside::finance::to_csv(&r);
    let total = csv.lines().last().unwrap();
    assert!(
        total.ends_with(",T-A 2026-11-25: 1 drop box(es) not yet counted"),
        "{total}"
    );
    // On the 26th T-A opened at 06:01 and closed at 06:05 without a count or a box.
    let next = report(&m, &[], &counts, &q("2026-11-26", GroupBy::Table, None)).unwrap();
    assert!(!next.no_play);
    assert_eq!(next.total.closing, None);
    assert_eq!(next.total.opening, Some(Money(99_000)));
    let why = &next.total.not_known;
    assert!(why.contains(&"T-A 2026-11-26: closing tray count not yet counted".into()));
    assert!(why.contains(&"T-A 2026-11-26: no drop box removed yet".into()));
    let empty = report(&m, &[], &counts, &q("2026-11-27", GroupBy::Table, None)).unwrap();
    assert!(empty.no_play && empty.groups.is_empty());
    assert_eq!((empty.total.drop, empty.total.opening), (None, None));
    // Dealers have no drop, counts or slips of their own: none, with the reason.
    let by_dealer = report(&m, &[], &counts, &q("2026-11-25", GroupBy::Dealer, None)).unwrap();
    for g in &by_dealer.groups {
        assert_eq!(
            (g.fills, g.credits, g.buy_ins, g.markers),
            (None, None, None, None)
        );
        assert_eq!((g.opening, g.closing, g.drop), (None, None, None));
        assert_eq!(g.not_known.len(), 1, "{:?}", g.not_known);
    }
    assert_eq!(
        by_dealer.total.fills,
        Some(Money(10_000)),
        "the total is the tables'"
    );
    let nope = report(
        &m,
        &[],
        &counts,
        &q("2026-11-25", GroupBy::Table, Some("NOPE-99")),
    );
    assert!(
        matches!(nope, Err(readside::ReadError::NotFound(_))),
        "{nope:?}"
    );
    let rule = common::rule();
    let day26 = Span::Day("2026-11-26".into());
    let future = readside::finance::refuse_future(&rule, &day26, DAY_START_NS + HOUR_NS);
    assert!(matches!(future, Err(readside::ReadError::BadRequest(_))));
    assert!(readside::finance::refuse_future(&rule, &day26, DAY_START_NS + 24 * HOUR_NS).is_ok());
}

#[test]
fn theoretical_win_is_rounded_once_over_its_lines() {
    let f = floor();
    // Every group's theoretical win is its lines' exact sum (stake x edge in ppb), rounded
    // once, half away from zero.
    for by in [GroupBy::Table, GroupBy::Game, GroupBy::Dealer] {
        let q = Query {
            span: Span::Day("2026-11-25".into()),
            group_by: by,
            table: None,
            pit: None,
        };
        let r = report(&f.model, &[], &f.counts, &q).unwrap();
        for g in r.groups.iter().chain([&r.total]) {
            let edge_ppb = |l: &schemas::finance::HandleLine| {
                rules::edge::default_edge(l.rule_set, l.line).map(|e| i128::from(e.edge_ppb))
            };
            let exact_ppb: i128 = g
                .handle
                .iter()
                .filter_map(|l| Some(i128::from(l.stake.0) * edge_ppb(l)?))
                .sum();
            assert!(exact_ppb != 0, "{}: a priced handle", g.key);
            assert_eq!(
                i128::from(g.theoretical_win.0),
                (exact_ppb + exact_ppb.signum() * 500_000_000) / 1_000_000_000,
                "{}",
                g.key
            );
        }
    }
}

/// A count entry as the API journals it, signed by the count team's key.
fn entry(n: u64, c: CountResult) -> schemas::count::CountEntry {
    let key = schemas::attest::SigningKey::from_secret([3; 32]);
    schemas::count::CountEntry {
        n,
        signed: schemas::count::SignedCount::sign(&key, c, DAY_START_NS).unwrap(),
        entered_by: "fiona".into(),
        entered_at_ns: DAY_START_NS,
        stream_seq: None,
    }
}

/// The golden floor: `day_of_two_tables` on 2026-11-25, then on the 26th T-A plays on
/// (its closer counts 10 minutes late, after the 14:00 change) and T-C opens and closes
/// without a closing count. T-B's box is counted twice (a recount), and a count labelled
/// T-A names T-B's box.
#[test]
fn golden_two_days_three_tables_every_figure_by_hand() {
    let d2 = DAY_START_NS + 24 * HOUR_NS;
    let (mut chains, counts) = day_of_two_tables();
    let a = &mut chains[0];
    // T-A closed at 06:05 after its 06:01 count (the day's first) and reopens at 06:30.
    a.push(d2 + 30 * MIN_NS, None, table_opened(TCP3));
    a.finance(
        d2 + HOUR_NS,
        Finance::CashBuyIn {
            amount: Money(3_000),
        },
    );
    a.round(TCP3, d2 + 2 * HOUR_NS, |_| {});
    a.count(d2 + 8 * HOUR_NS + 10 * MIN_NS, 95_500, true);
    let drop_box_id = "T-A/4".to_string();
    a.finance(
        d2 + 8 * HOUR_NS + 11 * MIN_NS,
        Finance::DropBoxRemoved { drop_box_id },
    );
    a.push(d2 + 8 * HOUR_NS + 12 * MIN_NS, None, EventBody::TableClosed);
    let mut c = Chain::new("T-C");
    c.push(d2 + 3 * HOUR_NS - MIN_NS, None, table_opened(TCP3));
    c.count(d2 + 3 * HOUR_NS, 50_000, false);
    c.finance(
        d2 + 3 * HOUR_NS + MIN_NS,
        Finance::CashBuyIn {
            amount: Money(1_000),
        },
    );
    c.round(TCP3, d2 + 4 * HOUR_NS, |_| {});
    let drop_box_id = "T-C/1".to_string();
    c.finance(d2 + 5 * HOUR_NS, Finance::DropBoxRemoved { drop_box_id });
    c.push(d2 + 5 * HOUR_NS + MIN_NS, None, EventBody::TableClosed);
    chains.push(c);
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger::Ledger::open(dir.path().join("ledger")).unwrap();
    let mut batch: Vec<_> = chains.into_iter().flat_map(|c| c.out).collect();
    for (i, m) in batch.iter_mut().enumerate() {
        m.stream_seq = i as u64 + 1;
    }
    ledger.writer().append(&batch, &[]).unwrap();
    // The book: T-B's box first miscounted at 90.00 then recounted at 100.00; a count
    // labelled T-A of T-B's box; T-A's boxes; T-C's box.
    let mut book = readside::counts::CountBook::default();
    let mut all: Vec<CountResult> = counts
        .into_iter()
        .filter(|c| c.drop_box_id != "T-B/1")
        .collect();
    all.push(counted("T-B", "T-B/1", 9_000));
    all.push(counted("T-B", "T-B/1", 10_000));
    all.push(counted("T-A", "T-B/1", 77_700));
    all.push(counted("T-A", "T-A/4", 3_000));
    all.push(counted("T-C", "T-C/1", 1_000));
    for (n, c) in all.into_iter().enumerate() {
        book.take(entry(n as u64 + 1, c)).unwrap();
    }
    let tb = TableId::new("T-B").unwrap();
    let cash: Vec<i64> = book
        .history(&tb, "T-B/1")
        .iter()
        .map(|e| e.signed.count.cash.0)
        .collect();
    assert_eq!(cash, [9_000, 10_000], "the recount kept beside the count");
    for shifts in ["06:00", "06:00,18:00", "06:00,14:00,22:00"] {
        let rule = ledger::days::DayRule::new("06:00", "UTC")
            .unwrap()
            .with_shifts(shifts)
            .unwrap();
        let m = Model::temporary(&rule).unwrap();
        readside::index::catch_up(&ledger, &m).unwrap();
        let day = |d: &str| {
            let q = Query {
                span: Span::Day(d.into()),
                group_by: GroupBy::Table,
                table: None,
                pit: None,
            };
            let boxes = readside::finance::drop_boxes(&m, &q).unwrap();
            report(&m, &[], &book.results(boxes.iter()), &q).unwrap()
        };
        // Day 1 as before: T-B's recount of 100.00 stands, not the 90.00, not T-A's 777.00.
        let one = day("2026-11-25");
        assert_eq!(group(&one, "T-B").drop, Some(Money(10_000)), "{shifts}");
        assert_eq!(one.total.win_accounting, Some(Money(-1_500)), "{shifts}");
        // T-A's 14:00 miscount is named where 14:00 is a shift change; no day figure moves.
        let inner = u64::from(shifts == "06:00,14:00,22:00");
        assert_eq!(one.variances_total, inner, "{shifts}: {:?}", one.variances);
        // Day 2. T-A: opening 990.00 (06:01), a late closing 955.00 (14:10) still the
        // day's last; drop 30.00 + 955.00 - 990.00 = -5.00, its one round.
        let two = day("2026-11-26");
        let a = group(&two, "T-A");
        assert_eq!(
            (a.opening, a.closing),
            (Some(Money(99_000)), Some(Money(95_500)))
        );
        assert_eq!(
            (a.drop, a.win_accounting),
            (Some(Money(3_000)), Some(Money(-500))),
            "{shifts}"
        );
        // T-C: no closing count: its win and the day's total are not known, and say why.
        let c = group(&two, "T-C");
        assert_eq!((c.opening, c.closing), (Some(Money(50_000)), None));
        assert_eq!((c.drop, c.win_accounting), (Some(Money(1_000)), None));
        assert_eq!(
            c.not_known,
            ["T-C 2026-11-26: closing tray count not yet counted"]
        );
        assert_eq!(two.total.win_accounting, None, "{shifts}");
        assert_eq!(two.total.closing, None, "{shifts}");
        assert_eq!(
            two.total.win_recorded,
            Money(-1_000),
            "{shifts}: T-A's and T-C's rounds"
        );
        let causes: Vec<Cause> = two.variances.iter().map(|v| v.cause).collect();
        assert_eq!(
            causes,
            [Cause::TrayCountMissing],
            "{shifts}: T-C's closing only"
        );
    }
}

/// Appends `msgs` to the ledger (all stored) and brings the model up to date.
fn feed(f: &Floor, msgs: Vec<ledger::Incoming>, stream_seq: &mut u64) {
    let mut batch = msgs;
    for m in &mut batch {
        *stream_seq += 1;
        m.stream_seq = *stream_seq;
    }
    let out = f.ledger.writer().append(&batch, &[]).unwrap();
    assert!(out
        .events
        .iter()
        .all(|a| matches!(a, ledger::Appended::Stored { .. })));
    readside::index::catch_up(&f.ledger, &f.model).unwrap();
}

#[test]
fn a_tables_last_closed_round_counts_at_once_and_once() {
    let dir = tempfile::tempdir().unwrap();
    let f = Floor {
        ledger: ledger::Ledger::open(dir.path().join("ledger")).unwrap(),
        model: Model::open(&dir.path().join("readmodel"), &rule()).unwrap(),
        counts: Vec::new(),
        _dir: dir,
    };
    let mut c = Chain::new("T-LAST");
    let t0 = DAY_START_NS;
    c.push(t0 - 10 * MIN_NS, None, table_opened(TCP3));
    c.round(TCP3, t0 + 20 * MIN_NS, |_| {});
    // The last round is overpaid: its flush paid 25.00 where the rules give 20.00.
    c.round(TCP3, t0 + 40 * MIN_NS, |b| {
        if let EventBody::PaidOut { net, .. } = b {
            if net.0 == 2_000 {
                *net = Money(2_500);
            }
        }
    });
    let mut stream_seq = 0;
    // Nothing follows its `RoundClosed`: the replayer has not reported it.
    feed(&f, c.out.drain(..).collect(), &mut stream_seq);
    let table = TableId::new("T-LAST").unwrap();
    let check = |when: &str| {
        let r = shift_report(&f, &[]);
        let g = group(&r, "T-LAST");
        assert_eq!(g.rounds, 2, "{when}: both rounds count");
        assert_eq!(g.win_rules, Money(2 * TCP3_ROUND_WIN), "{when}");
        assert_eq!(g.win_recorded, Money(2 * TCP3_ROUND_WIN - 500), "{when}");
        let status = f.model.status(&table).unwrap().unwrap();
        assert_eq!(status.disputed, 1, "{when}: the overpaid round, once");
    };
    check("after its RoundClosed");
    // Another pass with nothing new changes nothing.
    readside::index::catch_up(&f.ledger, &f.model).unwrap();
    check("after an empty pass");
    // A late event of the closed round changes its early report (a finding): the early
    // count is taken back and counted again, still once.
    let last = c.round;
    c.push(t0 + 50 * MIN_NS, Some(last), EventBody::RoundClosed);
    feed(&f, c.out.drain(..).collect(), &mut stream_seq);
    check("after a late event of the closed round");
    // The table closes: the replayer's report replaces the early count, not adds to it.
    c.push(t0 + 2 * HOUR_NS, None, EventBody::TableClosed);
    feed(&f, c.out.drain(..).collect(), &mut stream_seq);
    check("after TableClosed");
    // The model rebuilt from the ledger says the same.
    let fresh = Model::open(&f._dir.path().join("fresh"), &rule()).unwrap();
    readside::index::catch_up(&f.ledger, &fresh).unwrap();
    let q = Query {
        span: Span::Shift("2026-11-25/1".into()),
        group_by: GroupBy::Table,
        table: None,
        pit: None,
    };
    assert_eq!(
        report(&fresh, &[], &[], &q).unwrap().total,
        shift_report(&f, &[]).total
    );
}
