//! The unfair players and dealers the analytics are tested against: a decider replaces
//! the table's strategy where it answers; an error-prone dealer pays wrongly only while
//! dealing; a rigged shift settles every line off the pay table, and only that shift.

use schemas::{BoxNo, Choice, EventBody, RuleSet, StaffId, TableId};
use simulator::{
    default_config, Decider, DecisionView, ErrorProneDealer, FaultPlan, HoldSkew, InjectedFault,
    ShiftClock, TableSim,
};

/// Box 2 plays every hand; it records what it was shown.
struct AlwaysPlay {
    seen_dealer_cards: usize,
}

impl Decider for AlwaysPlay {
    fn decide(&mut self, v: &DecisionView) -> Option<Choice> {
        self.seen_dealer_cards = v.dealer.len();
        assert_eq!(v.hands.get(&v.box_no).map(Vec::as_slice), Some(v.cards));
        (v.box_no == BoxNo(2)).then_some(Choice::Play)
    }
}

fn table(rs: RuleSet) -> TableSim {
    let id = TableId::new(format!("{}-01", rs.code())).unwrap();
    TableSim::new(id, default_config(rs), 3, FaultPlan::none())
        .unwrap()
        .without_event_signatures()
}

#[test]
fn a_decider_replaces_the_strategy_of_the_boxes_it_answers_for() {
    for rs in [RuleSet::Csp6, RuleSet::Tcp3] {
        let mut sim = table(rs).with_decider(Box::new(AlwaysPlay {
            seen_dealer_cards: 0,
        }));
        sim.opening_events().unwrap();
        let (mut box2, mut others_fold) = (0, 0);
        for _ in 0..200 {
            for p in sim.play_round().unwrap().events {
                if let EventBody::Decided { box_no, choice, .. } = p.event.body {
                    match box_no {
                        BoxNo(2) => {
                            assert_eq!(choice, Choice::Play, "{rs}: the decider's choice");
                            box2 += 1;
                        }
                        _ => others_fold += u32::from(choice != Choice::Play),
                    }
                }
            }
        }
        assert!(box2 > 20, "{rs}: box 2 decided {box2} times");
        assert!(
            others_fold > 20,
            "{rs}: other boxes keep the table's strategy and fold some"
        );
    }
}

#[test]
fn an_error_prone_dealer_pays_wrongly_only_while_dealing() {
    let prone = ErrorProneDealer {
        roster_place: 2,
        wrong_payout: 0.5,
    };
    let mut sim = table(RuleSet::Csp6).with_error_prone_dealer(prone);
    let mut dealer: Option<StaffId> = None;
    let mut wrong_by_dealer = std::collections::BTreeMap::<StaffId, u32>::new();
    for p in sim.opening_events().unwrap() {
        if let EventBody::DealerChanged { dealer: d } = p.event.body {
            dealer = Some(d);
        }
    }
    for _ in 0..300 {
        let played = sim.play_round().unwrap();
        for p in &played.events {
            if let EventBody::DealerChanged { dealer: d } = &p.event.body {
                dealer = Some(d.clone());
            }
        }
        let wrong = played
            .injected
            .iter()
            .filter(|f| matches!(f, InjectedFault::WrongPayout { .. }))
            .count();
        *wrong_by_dealer.entry(dealer.clone().unwrap()).or_default() += wrong as u32;
    }
    let counts: Vec<u32> = wrong_by_dealer.values().copied().collect();
    assert_eq!(counts.len(), 4, "{wrong_by_dealer:?}");
    assert_eq!(
        counts.iter().filter(|c| **c > 0).count(),
        1,
        "{wrong_by_dealer:?}"
    );
    assert!(
        counts[2] > 10,
        "the third dealer of the roster: {wrong_by_dealer:?}"
    );
}

/// One round of `shifted_run`: its shift index, the injected wrong payouts (expected,
/// recorded) and every `PaidOut` net.
type ShiftedRound = (i64, Vec<(i64, i64)>, Vec<i64>);

/// One CSP6 table changing shift every hour, 200 rounds.
fn shifted_run(skew: Option<HoldSkew>) -> Vec<ShiftedRound> {
    let hour_ns = 3_600_000_000_000;
    let mut sim = table(RuleSet::Csp6).with_shifts(ShiftClock::new(0, hour_ns).unwrap());
    if let Some(k) = skew {
        sim = sim.with_hold_skew(k);
    }
    sim.opening_events().unwrap();
    (0..200)
        .map(|_| {
            let played = sim.play_round().unwrap();
            let wrong = played.injected.iter().filter_map(|f| match f {
                InjectedFault::WrongPayout {
                    expected, recorded, ..
                } => Some((expected.0, recorded.0)),
                _ => None,
            });
            let paid = played.events.iter().filter_map(|p| match p.event.body {
                EventBody::PaidOut { net, .. } => Some(net.0),
                _ => None,
            });
            (sim.shift().index, wrong.collect(), paid.collect())
        })
        .collect()
}

#[test]
fn a_hold_skew_settles_every_line_of_one_shift_off_the_pay_table() {
    let skew = HoldSkew {
        shift_no: 2,
        pct: 60,
    };
    let honest = shifted_run(None);
    let rigged = shifted_run(Some(skew));
    let shifts: Vec<i64> = rigged.iter().map(|r| r.0).collect();
    let mut distinct = shifts.clone();
    distinct.dedup();
    assert!(distinct.len() >= 3, "three shifts at least: {distinct:?}");
    let (first, second) = (distinct[0], distinct[1]);
    // The first shift: the same rounds and payouts as with no skew.
    let n1 = shifts.iter().filter(|s| **s == first).count();
    assert!(n1 > 5, "{n1} rounds");
    assert_eq!(
        honest[..n1],
        rigged[..n1],
        "nothing drawn differs before it"
    );
    let mut skewed_lines = 0;
    for (shift, wrong, paid) in &rigged {
        assert!(honest.iter().all(|h| h.1.is_empty()), "no fault planned");
        if *shift != second {
            assert!(wrong.is_empty(), "shift {shift} pays by the pay table");
            continue;
        }
        assert!(!paid.is_empty());
        for (due, recorded) in wrong {
            assert_eq!(*recorded, skew.recorded_minor(*due), "due {due}");
            assert!(recorded > due, "in the players' favour");
            assert!(paid.contains(recorded), "the PaidOut records it");
            skewed_lines += 1;
        }
    }
    let rigged_rounds = shifts.iter().filter(|s| **s == second).count();
    assert!(
        skewed_lines > rigged_rounds,
        "most of the second shift's lines: {skewed_lines} in {rigged_rounds} rounds"
    );
}
