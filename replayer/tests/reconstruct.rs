//! Reconstruction proposals (§5.8.6) against ground truth: the simulator records which two
//! boxes' complete hands it swapped, so the intended hands are the hands dealt with those
//! two exchanged. Every such round must get a proposal with exactly those hands, the two
//! moves, and a settlement; every other round gets none.

use replayer::TableReplayer;
use schemas::report::RoundReport;
use schemas::{CardTarget, DealingMode, EventBody, RoundId, RuleSet, TableId};
use simulator::{default_config, FaultKind, FaultPlan, InjectedFault, Published, TableSim};
use std::collections::BTreeMap;

type Hands = BTreeMap<String, Vec<schemas::Card>>;

struct Run {
    reports: BTreeMap<RoundId, RoundReport>,
    hands: BTreeMap<RoundId, Hands>,
    /// Rounds with swapped hands, and the two boxes.
    swapped: BTreeMap<RoundId, (u8, u8)>,
}

fn place(t: CardTarget) -> Option<String> {
    match t {
        CardTarget::Box(b) => Some(format!("box {}", b.0)),
        CardTarget::Dealer => Some("dealer".into()),
        CardTarget::Burn => None,
    }
}

fn run(rs: RuleSet, seed: u64, plan: FaultPlan, rounds: u64) -> Run {
    let mut config = default_config(rs);
    config.dealing = DealingMode::Shuffler;
    let table = TableId::new("RECON-1").unwrap();
    let mut sim = TableSim::new(table.clone(), config, seed, plan).unwrap();
    let mut rep = TableReplayer::new(table);
    let mut out = Run {
        reports: BTreeMap::new(),
        hands: BTreeMap::new(),
        swapped: BTreeMap::new(),
    };
    let feed = |events: &[Published], out: &mut Run, rep: &mut TableReplayer| {
        for p in events {
            if let (Some(r), EventBody::CardDealt { to, card, .. }) = (p.event.round, &p.event.body)
            {
                if let Some(name) = place(*to) {
                    out.hands
                        .entry(r)
                        .or_default()
                        .entry(name)
                        .or_default()
                        .push(*card);
                }
            }
            for r in rep.push(p.event.seq, &p.event) {
                out.reports.insert(r.round, r);
            }
        }
    };
    feed(&sim.opening_events().unwrap(), &mut out, &mut rep);
    for _ in 0..rounds {
        let played = sim.play_round().unwrap();
        for f in &played.injected {
            if let InjectedFault::SwappedHands { round, a, b, .. } = f {
                out.swapped.insert(*round, (a.0, b.0));
            }
        }
        feed(&played.events, &mut out, &mut rep);
    }
    feed(&sim.closing_events().unwrap(), &mut out, &mut rep);
    for r in rep.finish() {
        out.reports.insert(r.round, r);
    }
    out
}

#[test]
fn swapped_hands_get_a_proposal_with_the_intended_hands() {
    let seed: u64 = std::env::var("REPLAYER_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_261_122);
    let mut proposals = 0;
    for rs in [RuleSet::Csp6, RuleSet::Mlp3, RuleSet::Ssp4, RuleSet::Tcp3] {
        let faulty = run(rs, seed, FaultPlan::only(FaultKind::SwappedHands, 0.3), 60);
        assert!(
            !faulty.swapped.is_empty(),
            "{rs} seed {seed}: no round with swapped hands was injected"
        );
        for (round, report) in &faulty.reports {
            let ctx = format!("{rs} seed {seed} round {}", round.0);
            let Some(&(a, b)) = faulty.swapped.get(round) else {
                assert!(
                    report.reconstruction.is_none(),
                    "{ctx}: unexpected proposal"
                );
                continue;
            };
            let p = report
                .reconstruction
                .as_ref()
                .unwrap_or_else(|| panic!("{ctx}: swapped hands but no proposal"));
            proposals += 1;
            assert!(p.by_moving_complete_hands, "{ctx}: {p:?}");
            assert_eq!(p.clause, format!("{rs} §5.8.6"), "{ctx}");
            let (ba, bb) = (format!("box {a}"), format!("box {b}"));
            let mut moves: Vec<(String, String)> = p
                .moves
                .iter()
                .map(|m| (m.from.clone(), m.to.clone()))
                .collect();
            moves.sort();
            let mut want = vec![(ba.clone(), bb.clone()), (bb.clone(), ba.clone())];
            want.sort();
            assert_eq!(moves, want, "{ctx}");
            let mut expected = faulty.hands[round].clone();
            let (ha, hb) = (expected[&ba].clone(), expected[&bb].clone());
            assert_ne!(ha, hb, "{ctx}: the fault changed nothing");
            expected.insert(ba, hb);
            expected.insert(bb, ha);
            let intended: Hands = p
                .intended
                .iter()
                .map(|h| (h.place.clone(), h.cards.clone()))
                .collect();
            assert_eq!(intended, expected, "{ctx}: intended hands");
            assert!(
                p.settlement.is_some(),
                "{ctx}: the proposal was not settled"
            );
        }
    }
    assert!(proposals >= 8, "only {proposals} proposals checked");
}
