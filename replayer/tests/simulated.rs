//! Seeded random rounds from the simulator (docs/STYLE.md, determinism is tested): every fault
//! the simulator injects is found with the canonical code of `schemas::findings`, and every
//! round without an injected fault is clean. The seed is printed on failure;
//! `REPLAYER_SEED=<n>` replays one seed, `REPLAYER_SEEDS=<n>` runs more.

use replayer::TableReplayer;
use schemas::findings::{lookup, FindingKind};
use schemas::report::{RoundReport, Verdict};
use schemas::{DealingMode, RoundId, RuleSet, TableId};
use simulator::{default_config, FaultKind, FaultPlan, FinanceFaultKind, InjectedFault, TableSim};
use std::collections::BTreeMap;

/// The canonical finding kind for each fault the simulator injects.
fn kind_for(fault: FaultKind, rs: RuleSet) -> FindingKind {
    match fault {
        FaultKind::WrongPayout => FindingKind::PayoutDiffers,
        FaultKind::LateBet => FindingKind::BetAfterNoMoreBets,
        FaultKind::SkippedBurn => FindingKind::BurnCardMissing,
        FaultKind::DuplicateCard => FindingKind::DuplicateCard,
        FaultKind::ExposedCard if rs == RuleSet::Ssp4 => FindingKind::TwoCardsExposedVoid,
        FaultKind::ExposedCard => FindingKind::CardExposed,
        FaultKind::WrongCardCount => FindingKind::PlayerCardCount,
        FaultKind::SwappedHands => FindingKind::HandsSwapped,
        FaultKind::MissingRoundClose => FindingKind::RoundNeverClosed,
    }
}

struct Run {
    reports: BTreeMap<RoundId, RoundReport>,
    injected: Vec<InjectedFault>,
    rounds: u64,
}

fn run(rs: RuleSet, dealing: Option<DealingMode>, seed: u64, plan: FaultPlan, rounds: u64) -> Run {
    let mut config = default_config(rs);
    if let Some(d) = dealing {
        config.dealing = d;
    }
    let table = TableId::new(format!("SIM-{}", rs.code())).unwrap();
    let mut sim = TableSim::new(table.clone(), config, seed, plan).unwrap();
    let mut rep = TableReplayer::new(table);
    let mut reports = BTreeMap::new();
    let mut injected = Vec::new();
    let mut feed = |events: &[simulator::Published], rep: &mut TableReplayer| {
        for p in events {
            for r in rep.push(p.event.seq, &p.event) {
                assert!(
                    reports.insert(r.round, r).is_none(),
                    "seed {seed}: a round reported twice"
                );
            }
        }
    };
    feed(&sim.opening_events().unwrap(), &mut rep);
    for _ in 0..rounds {
        let played = sim.play_round().unwrap();
        injected.extend(played.injected.clone());
        feed(&played.events, &mut rep);
    }
    feed(&sim.closing_events().unwrap(), &mut rep);
    for r in rep.finish() {
        reports.insert(r.round, r);
    }
    Run {
        reports,
        injected,
        rounds,
    }
}

fn check(
    rs: RuleSet,
    dealing: Option<DealingMode>,
    seed: u64,
    plan: FaultPlan,
    rounds: u64,
) -> Vec<String> {
    let run = run(rs, dealing, seed, plan, rounds);
    let mut errors = Vec::new();
    let ctx = format!("{rs} {dealing:?} seed {seed}");
    if run.reports.len() as u64 != run.rounds {
        errors.push(format!(
            "{ctx}: {} reports for {} rounds",
            run.reports.len(),
            run.rounds
        ));
    }
    let mut faulty: BTreeMap<RoundId, Vec<&InjectedFault>> = BTreeMap::new();
    for f in &run.injected {
        faulty.entry(f.round()).or_default().push(f);
    }
    for (round, report) in &run.reports {
        match faulty.get(round) {
            None => {
                if report.verdict != Verdict::Clean
                    || !report.findings.is_empty()
                    || !report.disputes.is_empty()
                {
                    errors.push(format!(
                        "{ctx}: round {} has no injected fault but verdict {:?}, findings {:?}, disputes {:?}",
                        round.0, report.verdict, report.findings, report.disputes
                    ));
                }
            }
            Some(faults) => {
                for f in faults {
                    let want = lookup(rs, kind_for(f.kind(), rs)).map(|r| r.code);
                    let Some(want) = want else {
                        errors.push(format!(
                            "{ctx}: no canonical code for {:?} under {rs}",
                            f.kind()
                        ));
                        continue;
                    };
                    if !report.findings.iter().any(|x| x.code == want) {
                        errors.push(format!(
                            "{ctx}: round {}: injected {f:?} but no {want}; found {:?}",
                            round.0,
                            report.findings.iter().map(|x| &x.code).collect::<Vec<_>>()
                        ));
                    }
                    if let InjectedFault::WrongPayout {
                        box_no,
                        line,
                        expected,
                        recorded,
                        ..
                    } = f
                    {
                        let d = report
                            .disputes
                            .iter()
                            .find(|d| d.box_no == *box_no && d.line == *line);
                        match d {
                            Some(d) if d.expected == *expected && d.recorded == *recorded => {}
                            other => errors.push(format!(
                                "{ctx}: round {}: wrong payout {f:?} gave dispute {other:?}",
                                round.0
                            )),
                        }
                    }
                }
            }
        }
    }
    errors
}

fn seeds() -> Vec<u64> {
    if let Some(s) = std::env::var("REPLAYER_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        return vec![s];
    }
    let n: u64 = std::env::var("REPLAYER_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    (1..=n).map(|i| 0x5EED_0000 + i).collect()
}

#[test]
fn clean_rounds_are_clean_for_every_rule_set() {
    let mut errors = Vec::new();
    for seed in seeds() {
        for rs in RuleSet::ALL {
            errors.extend(check(rs, None, seed, FaultPlan::none(), 60));
        }
        errors.extend(check(
            RuleSet::Csp6,
            Some(DealingMode::Shuffler),
            seed,
            FaultPlan::none(),
            30,
        ));
        errors.extend(check(
            RuleSet::Tcp3,
            Some(DealingMode::Shuffler),
            seed,
            FaultPlan::none(),
            30,
        ));
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn every_injected_fault_is_found_with_its_code() {
    let mut errors = Vec::new();
    for seed in seeds() {
        for rs in RuleSet::ALL {
            errors.extend(check(rs, None, seed, FaultPlan::all(0.08), 150));
        }
        // Swapped hands and commitments need the shuffler; skipped burns the manual shoe.
        errors.extend(check(
            RuleSet::Csp6,
            Some(DealingMode::Shuffler),
            seed,
            FaultPlan::only(FaultKind::SwappedHands, 0.3),
            60,
        ));
        errors.extend(check(
            RuleSet::Tcp3,
            Some(DealingMode::Shuffler),
            seed,
            FaultPlan::all(0.1),
            80,
        ));
        errors.extend(check(
            RuleSet::Mlp3,
            Some(DealingMode::ManualShoe),
            seed,
            FaultPlan::only(FaultKind::SkippedBurn, 0.3),
            60,
        ));
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn finance_errors_leave_every_round_clean() {
    // Forced jackpot hits, mid-round fills, shift changes and miscounts happen at the
    // cage, not in the rules: the replayer must find nothing in any round.
    let plan = FinanceFaultKind::ALL
        .into_iter()
        .fold(FaultPlan::none(), |p, k| p.with_finance(k, 0.3));
    let mut errors = Vec::new();
    for seed in seeds() {
        for rs in RuleSet::ALL {
            errors.extend(check(rs, None, seed, plan, 80));
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}
