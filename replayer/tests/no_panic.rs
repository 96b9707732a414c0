//! Issue 47: the replay of generated rounds never panics and never reports an internal
//! error, for the five rule sets and jackpot resets of 0, 1, 9 (below the smallest award:
//! 10% of 9 is 0) and huge. The simulator's SSP4 jackpot system picks Magic Cards, Lucky
//! Players on any of the table's areas (empty ones too) and Lucky Dealers. Fixed seeds,
//! a bounded count; `REPLAYER_ROUNDS=<n>` plays more.

use replayer::{TableReplayer, INTERNAL_ERROR};
use schemas::report::Verdict;
use schemas::{Money, RuleSet, TableId};
use simulator::{default_config, FaultPlan, TableSim};

const RESETS: [i64; 4] = [0, 1, 9, 1_000_000_000_000];

fn rounds() -> u64 {
    std::env::var("REPLAYER_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60)
}

/// Plays `n` clean rounds at a table with this reset and replays them as they arrive.
fn replay_generated(rs: RuleSet, reset: i64, seed: u64, n: u64) {
    let mut config = default_config(rs);
    if let Some(j) = config.jackpot.as_mut() {
        j.reset = Money(reset);
    }
    let table = TableId::new(format!("GEN-{}", rs.code())).unwrap();
    let mut sim = TableSim::new(table.clone(), config, seed, FaultPlan::none()).unwrap();
    let mut rep = TableReplayer::new(table);
    let mut reports = Vec::new();
    let mut events = sim.opening_events().unwrap();
    for _ in 0..n {
        events.extend(sim.play_round().unwrap().events);
    }
    events.extend(sim.closing_events().unwrap());
    for p in &events {
        reports.extend(rep.push(p.event.seq, &p.event));
    }
    reports.extend(rep.finish());
    let at = format!("{rs} reset {reset} seed {seed}");
    assert_eq!(reports.len() as u64, n, "{at}: every round reported");
    for r in &reports {
        assert!(
            r.findings.iter().all(|f| f.code != INTERNAL_ERROR),
            "{at} round {}: {:?}",
            r.round.0,
            r.findings
        );
        assert_eq!(r.verdict, Verdict::Clean, "{at} round {}: {r:?}", r.round.0);
        assert!(r.settlement.is_some(), "{at} round {}", r.round.0);
    }
}

#[test]
fn replaying_generated_rounds_never_fails_for_any_rule_set_or_reset() {
    let n = rounds();
    for (i, rs) in RuleSet::ALL.into_iter().enumerate() {
        for (j, reset) in RESETS.into_iter().enumerate() {
            replay_generated(rs, reset, 4700 + (i * 10 + j) as u64, n);
        }
    }
}
