//! Dealer quality and hold alarms on simulated tables: an error-prone dealer is flagged
//! against the rest of the floor; clean tables hold within their interval; a table whose
//! dealer overpays every round leaves it.

use analytics::dealer::{poisson_tail, DealerQuality};
use analytics::hold::{Hold, HoldKey};
use analytics::{RoundFacts, RoundReader};
use schemas::report::Dispute;
use schemas::{Money, PayLine, RuleSet, TableId};
use simulator::{default_config, table_seed, ErrorProneDealer, FaultPlan, TableSim};

fn rounds(
    rs: RuleSet,
    n: u64,
    seed: u64,
    plan: FaultPlan,
    prone: Option<ErrorProneDealer>,
) -> Vec<RoundFacts> {
    let id = TableId::new(format!("{}-{seed:02}", rs.code())).unwrap();
    let mut sim = TableSim::new(id.clone(), default_config(rs), table_seed(seed, 1), plan)
        .unwrap()
        .without_event_signatures();
    if let Some(p) = prone {
        sim = sim.with_error_prone_dealer(p);
    }
    let mut reader = RoundReader::new(id);
    let mut events = sim.opening_events().unwrap();
    for _ in 0..n {
        events.extend(sim.play_round().unwrap().events);
    }
    events.extend(sim.closing_events().unwrap());
    let mut out = Vec::new();
    for p in &events {
        out.extend(reader.push(p.event.seq, &p.event));
    }
    out.extend(reader.finish());
    out
}

/// Rounds within which the error-prone dealer must be flagged (the table's rounds).
const DEALER_ROUNDS: u64 = 400;

#[test]
fn an_error_prone_dealer_is_flagged_within_400_rounds_and_no_other() {
    for rs in [RuleSet::Csp6, RuleSet::Tcp3] {
        let prone = ErrorProneDealer {
            roster_place: 1,
            wrong_payout: 0.15,
        };
        let facts = rounds(
            rs,
            DEALER_ROUNDS,
            5,
            FaultPlan::payout_errors(0.01),
            Some(prone),
        );
        let mut q = DealerQuality::default();
        facts.iter().for_each(|f| q.push(f));
        let a = q.assess(0.001);
        assert_eq!(a.len(), 4, "{rs}: four dealers on the roster");
        let flagged: Vec<_> = a.iter().filter(|d| d.flagged).collect();
        println!(
            "{rs}: {:?}",
            a.iter()
                .map(|d| (
                    &d.dealer,
                    d.tally.rounds,
                    d.tally.disputed_rounds,
                    d.disputed_tail
                ))
                .collect::<Vec<_>>()
        );
        assert_eq!(flagged.len(), 1, "{rs}: only the error-prone dealer");
        let d = flagged[0];
        assert!(
            d.disputed_per_1000.0 > 5.0 * d.disputed_per_1000.1,
            "{rs}: {d:?}"
        );
        assert_eq!(
            d.tally.overpaid_lines + d.tally.underpaid_lines,
            d.tally.disputed_rounds,
            "one wrong line a round"
        );
        assert!(
            d.tally
                .rounds_per_hour()
                .is_some_and(|r| r > 5.0 && r < 200.0),
            "{rs}: {d:?}"
        );
    }
}

#[test]
fn a_clean_floor_keeps_every_dealer_unflagged() {
    let mut q = DealerQuality::default();
    for (seed, rs) in [(9, RuleSet::Csp6), (10, RuleSet::Ssp4)] {
        rounds(rs, 300, seed, FaultPlan::payout_errors(0.03), None)
            .iter()
            .for_each(|f| q.push(f));
    }
    let a = q.assess(0.001);
    assert_eq!(a.len(), 8);
    assert!(a.iter().all(|d| !d.flagged), "{a:?}");
}

#[test]
fn poisson_tail_matches_known_values() {
    assert_eq!(poisson_tail(0, 3.0), 1.0);
    assert!((poisson_tail(1, 2.0) - (1.0 - (-2.0f64).exp())).abs() < 1e-12);
    // P(X >= 3) at mean 1 = 1 - e^-1 (1 + 1 + 1/2).
    assert!((poisson_tail(3, 1.0) - (1.0 - (-1.0f64).exp() * 2.5)).abs() < 1e-12);
    assert_eq!(poisson_tail(2, 0.0), 0.0);
}

#[test]
fn clean_tables_hold_within_their_interval_and_an_overpaying_table_does_not() {
    let mut clean = Hold::default();
    let mut tables = Vec::new();
    for (i, rs) in [RuleSet::Csp6, RuleSet::Cs51, RuleSet::Tcp3]
        .into_iter()
        .enumerate()
    {
        let facts = rounds(rs, 400, 20 + i as u64, FaultPlan::none(), None);
        facts.iter().for_each(|f| clean.push(f));
        tables.push(facts);
    }
    // 4 standard deviations: over 400 rounds of stakes from 1 to 200 minimums the win's
    // tails are heavier than normal (TCP3, seed 22, lies at z = 3.45).
    let z = 4.0;
    let a = clean.assess(z);
    assert!(a.iter().all(|h| !h.alarm), "{a:?}");
    let t = a
        .iter()
        .find(|h| h.key == HoldKey::Game(RuleSet::Tcp3))
        .unwrap();
    assert!(t.tally.handle_minor > 0 && t.tally.variance > 0.0);
    assert!(
        a.iter().any(|h| h.tally.unpriced_lines > 0),
        "jackpot wagers are not priced"
    );
    // The CSP6 dealer overpays each round's first Ante line by 20 Antes' worth.
    let mut skewed = Hold::default();
    for (i, facts) in tables.iter().enumerate() {
        for f in facts {
            let mut f = f.clone();
            if i == 0 {
                overpay(&mut f);
            }
            skewed.push(&f);
        }
    }
    let a = skewed.assess(z);
    let alarmed: Vec<_> = a
        .iter()
        .filter(|h| h.alarm)
        .map(|h| h.key.clone())
        .collect();
    let csp6 = TableId::new("CSP6-20").unwrap();
    assert!(alarmed.contains(&HoldKey::Table(csp6)), "{a:?}");
    assert!(alarmed.contains(&HoldKey::Game(RuleSet::Csp6)));
    assert!(!alarmed
        .iter()
        .any(|k| matches!(k, HoldKey::Game(RuleSet::Tcp3 | RuleSet::Cs51))));
}

fn overpay(f: &mut RoundFacts) {
    let Some(s) = &f.report.settlement else {
        return;
    };
    let Some(b) = s
        .boxes
        .iter()
        .find(|b| b.lines.iter().any(|l| l.line == PayLine::Ante))
    else {
        return;
    };
    let ante = b.lines.iter().find(|l| l.line == PayLine::Ante).unwrap();
    let over = Money(ante.stake.0 * 20);
    f.report.disputes.push(Dispute {
        box_no: b.box_no,
        line: PayLine::Ante,
        expected: ante.net,
        recorded: ante.net + over,
        difference: over,
    });
}
