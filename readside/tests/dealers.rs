//! Hold per dealer and the edge of a configured pay table, pending and then priced:
//! hand-written chains through a real ledger and read model, every figure computed here
//! by hand.
//!
//! Each table plays shift 1 of 2026-11-25 (06:00-14:00 UTC) with the replayer's golden
//! TCP3 round `clean_tcp3_fold_and_pair_plus_only`, re-chained: box 1 folds, losing Ante
//! 10.00 and Pair Plus 5.00 (TCP3 §3.12.1); box 2's flush wins Pair Plus 5.00 at 4 to 1
//! (TCP3 §4.2). The tray takes in 15.00 and pays out 20.00 a round.

mod common;

use common::{rule, Chain};
use readside::edges::{Budget, EdgeBook};
use readside::finance::{report, GroupBy, Query, Span};
use readside::model::Model;
use schemas::finance::{FinanceReport, HandleLine, ReportGroup};
use schemas::{
    Event, EventBody, HandClass, Money, PayLine, PayRow, PayTable, PayTableName, Pays, RuleSet,
    StaffId,
};

const MIN_NS: i64 = 60_000_000_000;
/// 2026-11-25 06:00 UTC: the day's and shift 1's start.
const DAY_START_NS: i64 = 1_795_586_400 * 1_000_000_000;
const TCP3: &str = "clean_tcp3_fold_and_pair_plus_only";
/// The golden round's stakes: an Ante of 10.00 and two Pair Plus bets of 5.00.
const ANTE: i64 = 1_000;
const PAIR_PLUS: i64 = 500;
/// What the flush's Pair Plus pays in the rounds the second dealer overpays.
const OVERPAID: i64 = 102_000;

impl Chain {
    fn dealer(&mut self, at_ns: i64, id: &str) {
        let dealer = StaffId::new(id).unwrap();
        self.push(at_ns, None, EventBody::DealerChanged { dealer });
    }

    /// Plays the golden round from `at_ns`, a second per event. The flush's payout is
    /// `flush_paid`; `mid` is a round-less event pushed after the round's fifth event.
    fn round(&mut self, at_ns: i64, flush_paid: i64, mid: Option<EventBody>) {
        self.round += 1;
        let r = self.round;
        let mut mid = mid;
        for (i, mut body) in golden_bodies().into_iter().skip(1).enumerate() {
            if let EventBody::PaidOut { net, .. } = &mut body {
                if net.0 == 2_000 {
                    *net = Money(flush_paid);
                }
            }
            let at = at_ns + i as i64 * 1_000_000_000;
            self.push(at, Some(r), body);
            if i == 4 {
                if let Some(m) = mid.take() {
                    self.push(at, None, m);
                }
            }
        }
    }
}

fn golden_bodies() -> Vec<EventBody> {
    let path = format!(
        "{}/../replayer/tests/golden/{TCP3}.events.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Event>(l).unwrap().body)
        .collect()
}

/// The golden table's configuration, with `pay_tables` in place of the seed's.
fn opened(pay_tables: Vec<PayTable>) -> EventBody {
    let Some(EventBody::TableOpened { mut config }) = golden_bodies().into_iter().next() else {
        panic!("the golden round opens its table");
    };
    config.pay_tables = pay_tables;
    EventBody::TableOpened { config }
}

/// Dealer D-ANNA opens the table and deals rounds 1 and 2; D-BEN takes over in the middle
/// of round 2 (so round 2 stays Anna's) and deals rounds 3 and 4, overpaying round 3.
fn two_dealers() -> Chain {
    let mut c = Chain::new("T-DEAL");
    let t0 = DAY_START_NS;
    c.push(t0 - 10 * MIN_NS, None, opened(Vec::new()));
    c.dealer(t0 - 9 * MIN_NS, "D-ANNA");
    c.round(t0 + 10 * MIN_NS, 2_000, None);
    let ben = StaffId::new("D-BEN").unwrap();
    let change = EventBody::DealerChanged { dealer: ben };
    c.round(t0 + 30 * MIN_NS, 2_000, Some(change));
    c.round(t0 + 50 * MIN_NS, OVERPAID, None);
    c.round(t0 + 70 * MIN_NS, 2_000, None);
    c.push(t0 + 90 * MIN_NS, None, EventBody::TableClosed);
    c
}

/// Pair Plus paying a straight 6 to 1 where the seed pays 5 to 1 (TCP3 §4.2).
fn generous_pair_plus() -> PayTable {
    let row = |hand, x| PayRow {
        hand,
        pays: Pays::ToOne(x),
        envy: None,
    };
    PayTable {
        name: PayTableName::PairPlus,
        rows: vec![
            row(HandClass::StraightFlush, 40),
            row(HandClass::ThreeOfAKind, 30),
            row(HandClass::Straight, 6),
            row(HandClass::Flush, 4),
            row(HandClass::OnePair, 1),
        ],
    }
}

/// A TCP3 table under the generous Pair Plus table, two rounds by one dealer.
fn configured() -> Chain {
    let mut c = Chain::new("T-PAY");
    let t0 = DAY_START_NS;
    c.push(t0 - 10 * MIN_NS, None, opened(vec![generous_pair_plus()]));
    c.dealer(t0 - 9 * MIN_NS, "D-CARA");
    c.round(t0 + 10 * MIN_NS, 2_000, None);
    c.round(t0 + 30 * MIN_NS, 2_000, None);
    c.push(t0 + 90 * MIN_NS, None, EventBody::TableClosed);
    c
}

struct Floor {
    dir: tempfile::TempDir,
    ledger: ledger::Ledger,
    model: Model,
}

/// The chains stored in two halves, the model brought up to date after each, so that
/// the dealers' parts merge across passes.
fn floor(mut chains: Vec<Chain>) -> Floor {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger::Ledger::open(dir.path().join("ledger")).unwrap();
    let model = Model::open(&dir.path().join("readmodel"), &rule()).unwrap();
    let mut stream_seq = 0;
    for half in 0..2 {
        let mut batch = Vec::new();
        for c in &mut chains {
            let n = c.out.len() / 2;
            match half {
                0 => batch.extend(c.out.drain(..n)),
                _ => batch.append(&mut c.out),
            }
        }
        for m in &mut batch {
            stream_seq += 1;
            m.stream_seq = stream_seq;
        }
        let out = ledger.writer().append(&batch, &[]).unwrap();
        let refused: Vec<_> = out
            .events
            .iter()
            .filter(|a| !matches!(a, ledger::Appended::Stored { .. }))
            .collect();
        assert!(refused.is_empty(), "{refused:?}");
        readside::index::catch_up(&ledger, &model).unwrap();
    }
    Floor { dir, ledger, model }
}

fn shift_report(f: &Floor, group_by: GroupBy) -> FinanceReport {
    let q = Query {
        span: Span::Shift("2026-11-25/1".into()),
        group_by,
        table: None,
        pit: None,
    };
    report(&f.model, &[], &[], &q).unwrap()
}

fn group<'a>(r: &'a FinanceReport, key: &str) -> &'a ReportGroup {
    r.groups
        .iter()
        .find(|g| g.key == key)
        .unwrap_or_else(|| panic!("no group {key}"))
}

/// The seed's TCP3 edges (ppb) and variances (ppm), from `rules::edge`.
fn seed_edge(line: PayLine) -> (i64, u64) {
    let e = rules::edge::default_edge(RuleSet::Tcp3, line).unwrap();
    (e.edge_ppb, e.variance_ppm)
}

/// Minor units x 10^9 rounded half away from zero to minor units, as reports round
/// theoretical win once.
fn round_ppb(x: i128) -> i64 {
    ((x + x.signum() * 500_000_000) / 1_000_000_000) as i64
}

/// Theoretical win and the 95% half-width of `rounds` golden rounds at the given edges.
fn theoretical(rounds: i64, ante: (i64, u64), pair_plus: (i64, u64)) -> (i64, i64) {
    let (ante_stake, pp_stake) = (rounds * ANTE, rounds * 2 * PAIR_PLUS);
    let theo = round_ppb(
        i128::from(ante_stake) * i128::from(ante.0)
            + i128::from(pp_stake) * i128::from(pair_plus.0),
    );
    let var = (rounds as u128 * (ANTE as u128).pow(2) * ante.1 as u128
        + 2 * rounds as u128 * (PAIR_PLUS as u128).pow(2) * pair_plus.1 as u128)
        / 1_000_000;
    (theo, 2 * var.isqrt() as i64)
}

/// A page of dealer rows cut at its cap says how many there are: never a whole list.
#[test]
fn a_dealer_page_cut_at_its_cap_counts_every_dealer() {
    let f = floor(vec![two_dealers()]);
    let (rows, total) = f.model.dealers_page(1).unwrap();
    assert_eq!((rows.len(), total), (1, 2));
    assert_eq!(rows[0].dealer, "D-BEN", "keys go by id length, then id");
    let (rows, total) = f.model.dealers_page(10).unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r.dealer.as_str()).collect();
    assert_eq!((names, total), (vec!["D-BEN", "D-ANNA"], 2));
}

#[test]
fn hold_per_dealer_goes_to_the_dealer_in_place_when_the_round_began() {
    let f = floor(vec![two_dealers()]);
    let r = shift_report(&f, GroupBy::Dealer);
    assert_eq!(r.group_by, "dealer");
    let keys: Vec<&str> = r.groups.iter().map(|g| g.key.as_str()).collect();
    assert_eq!(keys, ["D-ANNA", "D-BEN"]);
    let (ante, pp) = (seed_edge(PayLine::Ante), seed_edge(PayLine::PairPlus));
    let (theo, half) = theoretical(2, ante, pp);
    // Anna: rounds 1 and 2 (Ben came in during round 2), -5.00 each.
    let anna = group(&r, "D-ANNA");
    assert_eq!(anna.rounds, 2);
    assert_eq!(
        (anna.win_recorded, anna.win_rules),
        (Money(-1_000), Money(-1_000))
    );
    assert_eq!(
        (anna.drop, anna.win_accounting),
        (None, None),
        "the table's"
    );
    assert_eq!(anna.actual_win, Money(-1_000));
    assert_eq!(anna.theoretical_win, Money(theo));
    assert_eq!(
        (anna.win_low, anna.win_high),
        (Money(theo - half), Money(theo + half))
    );
    assert!(!anna.hold_alarm, "-10.00 lies inside {theo} +- {half}");
    // Priced handle: 2 Antes of 10.00 and 4 Pair Plus bets of 5.00 = 40.00.
    let priced = 2 * ANTE + 4 * PAIR_PLUS;
    assert_eq!(anna.handle_priced, Money(priced));
    assert_eq!(anna.hold_handle_bp, Some(-1_000 * 10_000 / priced));
    assert_eq!(
        anna.hold_handle_theoretical_bp,
        Some(theo * 10_000 / priced)
    );
    // Ben: round 3 pays the flush 1,020.00 (due 20.00), round 4 as the rules say.
    let ben = group(&r, "D-BEN");
    assert_eq!(ben.rounds, 2);
    let overpaid_win = 1_500 - OVERPAID;
    assert_eq!(ben.win_recorded, Money(overpaid_win - 500));
    assert_eq!(ben.win_rules, Money(-1_000));
    // A dealer's variances are their payout errors: Ben's overpaid round, none of Anna's.
    assert_eq!((anna.variances, ben.variances), (0, 1));
    assert_eq!(ben.theoretical_win, Money(theo));
    assert!(
        ben.hold_alarm,
        "{} lies below {}",
        ben.actual_win,
        theo - half
    );
    // The total is the table's shift: both dealers.
    assert_eq!(r.total.rounds, 4);
    assert_eq!(r.total.win_recorded, anna.win_recorded + ben.win_recorded);
    let fresh = Model::temporary(&rule()).unwrap();
    readside::index::catch_up(&f.ledger, &fresh).unwrap();
    assert_eq!(
        f.model.differences(&fresh, 10).unwrap(),
        Vec::<String>::new()
    );
}

#[test]
fn rounds_before_any_dealer_change_have_no_dealer() {
    let mut c = Chain::new("T-NONE");
    c.push(DAY_START_NS, None, opened(Vec::new()));
    c.round(DAY_START_NS + 10 * MIN_NS, 2_000, None);
    c.push(DAY_START_NS + 30 * MIN_NS, None, EventBody::TableClosed);
    let f = floor(vec![c]);
    let r = shift_report(&f, GroupBy::Dealer);
    let keys: Vec<&str> = r.groups.iter().map(|g| g.key.as_str()).collect();
    assert_eq!(keys, [schemas::finance::NO_DEALER]);
}

/// The generous table's Pair Plus edge by an exhaustive count of the 22,100 hands of
/// three cards: 48 straight flushes, 52 threes of a kind, 720 straights, 1,096 flushes,
/// 3,744 pairs and 16,440 others. Returns (edge, variance of a unit's net), both ppm.
fn generous_pair_plus_by_hand() -> (i64, u64) {
    let classes: [(i128, i128); 6] = [
        (48, 40),
        (52, 30),
        (720, 6),
        (1_096, 4),
        (3_744, 1),
        (16_440, -1),
    ];
    let n: i128 = classes.iter().map(|c| c.0).sum();
    assert_eq!(n, 22_100);
    let sum: i128 = classes.iter().map(|(k, x)| k * x).sum();
    let sum_sq: i128 = classes.iter().map(|(k, x)| k * x * x).sum();
    assert_eq!(sum, -512, "the player loses 512 units over all hands");
    let edge = -sum * 1_000_000_000 / n;
    let variance = (n * sum_sq - sum * sum) * 1_000_000 / (n * n);
    (edge as i64, variance as u64)
}

fn line(g: &ReportGroup, line: PayLine) -> &HandleLine {
    g.handle.iter().find(|h| h.line == line).unwrap()
}

/// Before its pay tables are priced, a configured line says "theoretical pending": no
/// edge, no theoretical win, no alarm; the Ante, which they do not decide, keeps its edge.
#[test]
fn a_configured_pay_table_is_pending_until_priced() {
    let f = floor(vec![configured()]);
    for by in [GroupBy::Table, GroupBy::Dealer] {
        let r = shift_report(&f, by);
        let g = &r.groups[0];
        let pp = line(g, PayLine::PairPlus);
        assert!(pp.theoretical_pending, "{by:?}");
        assert_eq!((pp.edge_ppm, pp.theoretical_win), (None, None));
        assert!(g.theoretical_pending);
        assert_eq!(g.handle_pending, Money(4 * PAIR_PLUS));
        assert_eq!(g.handle_priced, Money(2 * ANTE));
        assert_eq!(
            (
                g.hold_theoretical_bp,
                g.hold_handle_theoretical_bp,
                g.hold_alarm
            ),
            (None, None, false)
        );
        let ante = line(g, PayLine::Ante);
        assert!(!ante.theoretical_pending);
        assert_eq!(ante.edge_ppm, Some(seed_edge(PayLine::Ante).0 / 1_000));
        let csv = readside::finance::to_csv(&r);
        assert!(csv.lines().nth(1).unwrap().contains(",pending,"), "{csv}");
    }
    // The indexer recorded the configuration for pricing, and priced nothing.
    let book = EdgeBook::load(&f.model).unwrap();
    let records: Vec<_> = book.records().collect();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].priced, None);
}

#[test]
fn a_configured_pay_table_is_priced_at_its_own_edge() {
    let (edge, variance) = generous_pair_plus_by_hand();
    assert_eq!(edge, 23_167_420, "2.317% against the seed's 5.575%, in ppb");
    let f = floor(vec![configured()]);
    let n = readside::edges::price_all(&f.model, &Budget::CONFIGURED).unwrap();
    assert_eq!(n, 1, "one configuration");
    check_priced(&f, edge, variance);
    // The priced edge is on disk: a reopened model reports it and prices nothing again.
    let f = reopen(f);
    check_priced(&f, edge, variance);
    assert_eq!(
        readside::edges::price_next(&f.model, &Budget::CONFIGURED).unwrap(),
        None
    );
    // A fresh rebuild has not priced it: `verify` leaves the edge book out.
    let fresh = Model::temporary(&rule()).unwrap();
    readside::index::catch_up(&f.ledger, &fresh).unwrap();
    assert_eq!(
        f.model.differences(&fresh, 10).unwrap(),
        Vec::<String>::new()
    );
    // A rebuild in place keeps the priced edge.
    f.model.clear().unwrap();
    readside::index::catch_up(&f.ledger, &f.model).unwrap();
    check_priced(&f, edge, variance);
    // The rules engine prices it the same way, exactly.
    let config = match opened(vec![generous_pair_plus()]) {
        EventBody::TableOpened { config } => config,
        _ => unreachable!(),
    };
    let edges = rules::edge::price_configured(&config, &Budget::CONFIGURED);
    let e = edges.iter().find(|e| e.line == PayLine::PairPlus).unwrap();
    assert_eq!(
        (e.edge_ppb, e.variance_ppm, e.error_ppm),
        (edge, variance, 0)
    );
}

/// The model closed and opened again from its directory.
fn reopen(f: Floor) -> Floor {
    let Floor { dir, ledger, model } = f;
    drop(model);
    let model = Model::open(&dir.path().join("readmodel"), &rule()).unwrap();
    Floor { dir, ledger, model }
}

/// The configured table's report once priced: Pair Plus at `edge`, the Ante at the seed's.
fn check_priced(f: &Floor, edge: i64, variance: u64) {
    let r = shift_report(f, GroupBy::Table);
    let g = group(&r, "T-PAY");
    assert_eq!(g.handle_without_edge, Money::ZERO, "every line is priced");
    assert!(!g.theoretical_pending);
    let pp = line(g, PayLine::PairPlus);
    assert_eq!(pp.edge_ppm, Some(edge / 1_000));
    assert_eq!(
        pp.theoretical_win,
        Some(Money(round_ppb(
            i128::from(4 * PAIR_PLUS) * i128::from(edge)
        )))
    );
    // The Ante keeps the seed's edge: its pay tables are not configured.
    let (theo, half) = theoretical(2, seed_edge(PayLine::Ante), (edge, variance));
    assert_eq!(g.theoretical_win, Money(theo));
    assert_eq!(
        (g.win_low, g.win_high),
        (Money(theo - half), Money(theo + half))
    );
    let seed = theoretical(2, seed_edge(PayLine::Ante), seed_edge(PayLine::PairPlus));
    assert!(
        theo < seed.0,
        "a straight paying more lowers the theoretical win"
    );
}

/// A TCP3 table with its own Ante Bonus (TCP3 §4.3: 4/3/1). Pricing its Ante settles
/// every one of 407,170,400 deals; indexing it must not, and does not.
#[test]
fn indexing_a_configured_ante_table_prices_nothing() {
    use HandClass::*;
    let row = |hand, x| PayRow {
        hand,
        pays: Pays::ToOne(x),
        envy: None,
    };
    let bonus = PayTable {
        name: PayTableName::AnteBonus,
        rows: vec![
            row(StraightFlush, 4),
            row(ThreeOfAKind, 3),
            row(Straight, 1),
        ],
    };
    let mut c = Chain::new("T-ANTE");
    let t0 = DAY_START_NS;
    c.push(t0 - 10 * MIN_NS, None, opened(vec![bonus]));
    c.round(t0 + 10 * MIN_NS, 2_000, None);
    c.push(t0 + 90 * MIN_NS, None, EventBody::TableClosed);
    let started = std::time::Instant::now();
    let f = floor(vec![c]);
    eprintln!("indexed in {:.1?}", started.elapsed());
    let r = shift_report(&f, GroupBy::Table);
    let g = group(&r, "T-ANTE");
    assert!(line(g, PayLine::Ante).theoretical_pending);
    assert_eq!(g.handle_pending, Money(ANTE));
    // Pair Plus is not decided by the Ante Bonus table: the seed's edge, at once.
    let pp = line(g, PayLine::PairPlus);
    assert_eq!(pp.edge_ppm, Some(seed_edge(PayLine::PairPlus).0 / 1_000));
    let book = EdgeBook::load(&f.model).unwrap();
    assert!(book.records().all(|r| r.priced.is_none()), "nothing priced");
}

#[test]
fn dealer_quality_counts_each_decided_round_once_and_survive_a_rebuild() {
    let f = floor(vec![two_dealers(), configured()]);
    let rows = f.model.dealers(10).unwrap();
    let mut names: Vec<&str> = rows.iter().map(|r| r.dealer.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["D-ANNA", "D-BEN", "D-CARA"]);
    let by = |name: &str| rows.iter().find(|r| r.dealer == name).unwrap();
    let (anna, ben) = (by("D-ANNA"), by("D-BEN"));
    assert_eq!((anna.rounds, anna.disputed_rounds), (2, 0));
    assert_eq!((anna.overpaid_lines, anna.overpaid_minor), (0, 0));
    // Ben pays the flush 1,020.00 where 20.00 is due: one line overpaid by 1,000.00.
    assert_eq!((ben.rounds, ben.disputed_rounds), (2, 1));
    assert_eq!(
        (ben.overpaid_lines, ben.overpaid_minor),
        (1, OVERPAID - 2_000)
    );
    assert_eq!((ben.underpaid_lines, ben.underpaid_minor), (0, 0));
    assert_eq!((ben.irregular_rounds, ben.exposure_findings), (0, 0));
    let t0 = DAY_START_NS;
    assert_eq!(anna.first_opened_at_ns, Some(t0 + 10 * MIN_NS));
    assert!(ben.last_closed_at_ns > Some(t0 + 70 * MIN_NS));
    assert_eq!(by("D-CARA").rounds, 2, "Cara's table is another chain");
    assert_eq!(f.model.dealer("D-NOBODY").unwrap(), None);
    // A rebuild from the ledger gives the same rows, and so does a reopened model.
    let fresh = Model::temporary(&rule()).unwrap();
    readside::index::catch_up(&f.ledger, &fresh).unwrap();
    assert_eq!(fresh.dealers(10).unwrap(), rows);
    let f = reopen(f);
    readside::index::catch_up(&f.ledger, &f.model).unwrap();
    assert_eq!(
        f.model.dealers(10).unwrap(),
        rows,
        "indexing nothing new adds nothing"
    );
}
