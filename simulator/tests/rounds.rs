//! The pure layer: determinism, chains, deal order (CSP6 §3.10, §3.11; TCP3 §3.10, §3.11;
//! CS51 How To Play), clean rounds, and every fault kind showing up in the events.
//!
//! These tests settle through `rules::settle`; they fail while the rules engine is a
//! placeholder.

use schemas::chain::{deck_commitment, verify_chain};
use schemas::{
    codec, Announcement, BetKind, BoxNo, Card, CardTarget, DealingMode, Event, EventBody, RoundId,
    RuleSet, Stake, TableId, WireFormat,
};
use simulator::{
    default_config, expected, FaultKind, FaultPlan, Floor, InjectedFault, PlayedRound, Published,
    TableSim,
};
use std::collections::{BTreeMap, BTreeSet};

fn table(rs: RuleSet, dealing: DealingMode, seed: u64, faults: FaultPlan) -> TableSim {
    let mut config = default_config(rs);
    config.dealing = dealing;
    let id = TableId::new(format!("{}-T", rs.code())).unwrap();
    TableSim::new(id, config, seed, faults).unwrap()
}

/// Every (rule set, dealing mode) the floor uses.
fn setups() -> Vec<(RuleSet, DealingMode)> {
    vec![
        (RuleSet::Csp6, DealingMode::ManualShoe),
        (RuleSet::Csp6, DealingMode::Shuffler),
        (RuleSet::Mlp3, DealingMode::ManualShoe),
        (RuleSet::Mlp3, DealingMode::Shuffler),
        (RuleSet::Ssp4, DealingMode::Shuffler),
        (RuleSet::Cs51, DealingMode::Rng),
        (RuleSet::Tcp3, DealingMode::ManualShoe),
        (RuleSet::Tcp3, DealingMode::Shuffler),
    ]
}

fn play(t: &mut TableSim, rounds: usize) -> (Vec<Published>, Vec<PlayedRound>) {
    let mut all = t.opening_events().unwrap();
    let mut played = Vec::new();
    for _ in 0..rounds {
        let r = t
            .play_round()
            .unwrap_or_else(|e| panic!("table {}: {e}", t.table()));
        all.extend(r.events.iter().cloned());
        played.push(r);
    }
    all.extend(t.closing_events().unwrap());
    (all, played)
}

fn round_events(r: &PlayedRound) -> Vec<&Event> {
    r.events
        .iter()
        .map(|p| &p.event)
        .filter(|e| e.round == Some(r.round))
        .collect()
}

fn dealt(r: &PlayedRound) -> Vec<(CardTarget, Card, bool, u16)> {
    round_events(r)
        .into_iter()
        .filter_map(|e| match &e.body {
            EventBody::CardDealt {
                to,
                card,
                face_up,
                position,
            } => Some((*to, *card, *face_up, *position)),
            _ => None,
        })
        .collect()
}

#[test]
fn same_seed_gives_byte_identical_events() {
    for (rs, mode) in setups() {
        let plan = FaultPlan::all(0.3);
        let (a, _) = play(&mut table(rs, mode, 42, plan), 30);
        let (b, _) = play(&mut table(rs, mode, 42, plan), 30);
        let (c, _) = play(&mut table(rs, mode, 43, plan), 30);
        let bytes = |v: &[Published]| v.iter().map(|p| p.bytes.clone()).collect::<Vec<_>>();
        assert_eq!(
            bytes(&a),
            bytes(&b),
            "{rs} {mode:?}: same seed, different bytes"
        );
        assert_ne!(
            bytes(&a),
            bytes(&c),
            "{rs} {mode:?}: different seeds, same bytes"
        );
    }
}

#[test]
fn every_game_produces_a_valid_chain_in_both_wire_forms() {
    for (rs, mode) in setups() {
        for wire in [WireFormat::Bincode, WireFormat::Json] {
            let mut t = table(rs, mode, 7, FaultPlan::all(0.2)).with_wire_format(wire);
            let (all, _) = play(&mut t, 40);
            let head = verify_chain(t.table(), all.iter().map(|p| p.bytes.as_slice()))
                .unwrap_or_else(|e| panic!("{rs} {mode:?} {wire:?}: {e}"));
            assert_eq!(head.seq.0, all.len() as u64);
            assert_eq!(head.hash, all.last().unwrap().hash());
            let mut last_ns = 0;
            for (i, p) in all.iter().enumerate() {
                assert_eq!(p.event.seq.0, i as u64 + 1);
                let (decoded, format) = codec::decode(&p.bytes).unwrap();
                assert_eq!(decoded, p.event);
                assert_eq!(format, wire);
                assert!(
                    p.event.occurred_at_ns > last_ns,
                    "device clock goes forward"
                );
                last_ns = p.event.occurred_at_ns;
            }
            assert!(matches!(all[0].event.body, EventBody::TableOpened { .. }));
            assert!(matches!(
                all.last().unwrap().event.body,
                EventBody::TableClosed
            ));
        }
    }
}

#[test]
fn manual_shoe_deals_burn_then_one_card_at_a_time_box_order_then_dealer() {
    // CSP6 §3.10, TCP3 §3.10.
    for rs in [RuleSet::Csp6, RuleSet::Mlp3, RuleSet::Tcp3] {
        let mut t = table(rs, DealingMode::ManualShoe, 11, FaultPlan::none());
        let (_, rounds) = play(&mut t, 30);
        let n = rs.hand_len();
        for r in &rounds {
            let d = dealt(r);
            assert_eq!(d[0].0, CardTarget::Burn, "{rs}: burnt card first");
            assert!(!d[0].2);
            let boxes: BTreeSet<BoxNo> = d
                .iter()
                .filter_map(|x| match x.0 {
                    CardTarget::Box(b) => Some(b),
                    _ => None,
                })
                .collect();
            let mut want = vec![CardTarget::Burn];
            for _ in 0..n {
                want.extend(boxes.iter().map(|&b| CardTarget::Box(b)));
                want.push(CardTarget::Dealer);
            }
            let got: Vec<CardTarget> = d.iter().map(|x| x.0).collect();
            assert_eq!(got, want, "{rs} round {}", r.round.0);
            for (i, x) in d.iter().enumerate() {
                assert_eq!(
                    x.3 as usize,
                    i + 1,
                    "positions count from 1, burnt card first"
                );
                let last = i + 1 == d.len();
                // Stud: the dealer's last card face up; 3 Card Poker: everything face down.
                assert_eq!(x.2, last && rs != RuleSet::Tcp3, "{rs} face up at {i}");
            }
        }
    }
}

#[test]
fn shuffler_and_rng_deal_complete_sets_box_by_box_then_the_dealer() {
    // CSP6 §3.11, TCP3 §3.11, SSP4 §3.6, CS51 How To Play (no burnt card).
    for (rs, mode) in setups()
        .into_iter()
        .filter(|(_, m)| *m != DealingMode::ManualShoe)
    {
        let mut t = table(rs, mode, 12, FaultPlan::none());
        let (_, rounds) = play(&mut t, 30);
        let n = rs.hand_len();
        for r in &rounds {
            let d = dealt(r);
            let got: Vec<CardTarget> = d.iter().map(|x| x.0).collect();
            let mut boxes: Vec<BoxNo> = Vec::new();
            for x in &d {
                if let CardTarget::Box(b) = x.0 {
                    if boxes.last() != Some(&b) {
                        boxes.push(b);
                    }
                }
            }
            assert!(
                boxes.windows(2).all(|w| w[0] < w[1]),
                "{rs}: boxes in order"
            );
            let mut want = Vec::new();
            for &b in &boxes {
                want.extend(std::iter::repeat_n(CardTarget::Box(b), n));
            }
            want.extend(std::iter::repeat_n(CardTarget::Dealer, n));
            assert_eq!(got, want, "{rs} {mode:?} round {}", r.round.0);
            for (i, x) in d.iter().enumerate() {
                let face_up = match x.0 {
                    CardTarget::Box(_) => rs == RuleSet::Cs51,
                    _ => i + 1 == d.len() && rs != RuleSet::Tcp3,
                };
                assert_eq!(x.2, face_up, "{rs} face up at {i}");
            }
            // Shuffler: the deal follows the committed order, revealed after settlement.
            if mode == DealingMode::Shuffler {
                let ev = round_events(r);
                let commitment = ev.iter().find_map(|e| match &e.body {
                    EventBody::ShuffleCompleted { deck_commitment } => *deck_commitment,
                    _ => None,
                });
                let (order, salt) = ev
                    .iter()
                    .find_map(|e| match &e.body {
                        EventBody::DeckRevealed { order, salt } => Some((order.clone(), *salt)),
                        _ => None,
                    })
                    .expect("deck revealed");
                assert_eq!(commitment, Some(deck_commitment(&salt, &order)));
                let cards: Vec<Card> = d.iter().map(|x| x.1).collect();
                assert_eq!(cards[..], order[..cards.len()]);
            }
        }
    }
}

#[test]
fn two_hundred_clean_rounds_per_game_are_valid() {
    for (rs, mode) in setups() {
        let mut t = table(rs, mode, 2026, FaultPlan::none());
        let config = t.config().clone();
        let (_, rounds) = play(&mut t, 200);
        let mut folds = 0;
        let mut plays = 0;
        let mut side_bets = 0;
        for r in &rounds {
            assert!(
                r.injected.is_empty(),
                "{rs}: no faults with FaultPlan::none()"
            );
            let ev = round_events(r);
            // Cards unique, counts right.
            let d = dealt(r);
            let cards: BTreeSet<Card> = d.iter().map(|x| x.1).collect();
            assert_eq!(
                cards.len(),
                d.len(),
                "{rs} round {}: a card dealt twice",
                r.round.0
            );
            // CardTarget is not Ord: count per target by linear search.
            let mut per: Vec<(CardTarget, usize)> = Vec::new();
            for x in &d {
                match per.iter_mut().find(|(t, _)| *t == x.0) {
                    Some((_, n)) => *n += 1,
                    None => per.push((x.0, 1)),
                }
            }
            for (target, count) in &per {
                let want = if *target == CardTarget::Burn {
                    1
                } else {
                    rs.hand_len()
                };
                assert_eq!(*count, want, "{rs} round {}: {target:?}", r.round.0);
            }
            // Bets only between "Place your Bets" and "No more Bets", within limits.
            let pos = |a: Announcement| {
                ev.iter()
                    .position(|e| matches!(&e.body, EventBody::Announced { announcement } if *announcement == a))
                    .unwrap()
            };
            let (open, close) = (
                pos(Announcement::PlaceYourBets),
                pos(Announcement::NoMoreBets),
            );
            let mut boxes_bet: BTreeMap<BoxNo, BTreeSet<BetKind>> = BTreeMap::new();
            for (i, e) in ev.iter().enumerate() {
                match &e.body {
                    EventBody::BetPlaced {
                        box_no,
                        kind,
                        stake,
                    } => {
                        assert!(
                            open < i && i < close,
                            "{rs}: bet outside the betting window"
                        );
                        let limit = config.limit(*kind).expect("a limit for every kind bet");
                        let amount = match stake {
                            Stake::Chips(m) => m.0,
                            Stake::Credits(c) => i64::from(*c),
                        };
                        assert_eq!(matches!(stake, Stake::Credits(_)), kind.in_credits());
                        assert!(
                            limit.min.0 <= amount && amount <= limit.max.0,
                            "{rs}: {kind:?} {amount}"
                        );
                        boxes_bet.entry(*box_no).or_default().insert(*kind);
                        if *kind != BetKind::Ante {
                            side_bets += 1;
                        }
                    }
                    EventBody::BetChanged { .. }
                    | EventBody::BetWithdrawn { .. }
                    | EventBody::CardExposed { .. } => {
                        panic!("{rs}: {} in a clean round", e.body.type_name())
                    }
                    EventBody::Decided {
                        box_no,
                        choice,
                        stake,
                    } => {
                        let kinds = &boxes_bet[box_no];
                        assert!(
                            kinds.contains(&BetKind::Ante),
                            "only Ante boxes decide (TCP3 §3.14)"
                        );
                        match choice {
                            schemas::Choice::Play => {
                                plays += 1;
                                assert!(stake.is_some());
                            }
                            _ => {
                                folds += 1;
                                assert!(stake.is_none());
                            }
                        }
                    }
                    _ => {}
                }
            }
            // Dealt boxes are exactly the boxes with bets; jackpot bets only with an Ante.
            let dealt_boxes: BTreeSet<BoxNo> = per
                .iter()
                .filter_map(|(t, _)| match t {
                    CardTarget::Box(b) => Some(*b),
                    _ => None,
                })
                .collect();
            assert_eq!(dealt_boxes, boxes_bet.keys().copied().collect());
            for kinds in boxes_bet.values() {
                if kinds.iter().any(|k| {
                    matches!(
                        k,
                        BetKind::Progressive
                            | BetKind::JackpotPlayer
                            | BetKind::JackpotDealer
                            | BetKind::Bonus
                    )
                }) {
                    assert!(kinds.contains(&BetKind::Ante));
                }
            }
            assert!(matches!(ev.last().unwrap().body, EventBody::RoundClosed));
            assert!(ev
                .iter()
                .any(|e| matches!(e.body, EventBody::PaidOut { .. })));
        }
        assert!(
            plays > 0 && folds > 0,
            "{rs}: the strategy both plays and folds"
        );
        assert!(side_bets > 0, "{rs}: side bets appear");
    }
}

fn at_seq(r: &PlayedRound, seq: schemas::Seq) -> &Event {
    &r.events.iter().find(|p| p.event.seq == seq).unwrap().event
}

/// Checks that `f` is visible in the round's events.
fn check_fault_in_events(rs: RuleSet, r: &PlayedRound, f: &InjectedFault) {
    let ev = round_events(r);
    assert_eq!(Some(f.code()), expected::code(f.kind(), rs));
    match f {
        InjectedFault::WrongPayout {
            box_no,
            line,
            recorded,
            expected,
            seq,
            ..
        } => {
            assert_ne!(recorded, expected);
            assert!(matches!(at_seq(r, *seq).body,
                EventBody::PaidOut { box_no: b, line: l, net } if b == *box_no && l == *line && net == *recorded));
        }
        InjectedFault::LateBet { seq, box_no, .. } => {
            let close = ev
                .iter()
                .position(|e| {
                    matches!(
                        &e.body,
                        EventBody::Announced {
                            announcement: Announcement::NoMoreBets
                        }
                    )
                })
                .unwrap();
            let i = ev.iter().position(|e| e.seq == *seq).unwrap();
            assert!(i > close);
            assert!(matches!(&ev[i].body,
                EventBody::BetPlaced { box_no: b, .. } | EventBody::BetChanged { box_no: b, .. } if b == box_no));
        }
        InjectedFault::SkippedBurn { .. } => {
            assert!(dealt(r).iter().all(|x| x.0 != CardTarget::Burn));
        }
        InjectedFault::DuplicateCard { card, seq, .. } => {
            let d = dealt(r);
            assert_eq!(d.iter().filter(|x| x.1 == *card).count(), 2);
            assert!(
                matches!(at_seq(r, *seq).body, EventBody::CardDealt { card: c, .. } if c == *card)
            );
            assert!(ev.iter().any(|e| matches!(
                &e.body,
                EventBody::Announced {
                    announcement: Announcement::Void
                }
            )));
        }
        InjectedFault::ExposedCard { seq, card, at, .. } => {
            assert!(
                matches!(at_seq(r, *seq).body, EventBody::CardExposed { card: c, at: a, .. } if c == *card && a == *at)
            );
            let exposed = ev
                .iter()
                .filter(|e| matches!(e.body, EventBody::CardExposed { .. }))
                .count();
            assert_eq!(exposed, if rs == RuleSet::Ssp4 { 2 } else { 1 });
        }
        InjectedFault::WrongCardCount {
            box_no,
            dealt: n,
            required,
            ..
        } => {
            assert_eq!(usize::from(*required), rs.hand_len());
            let count = dealt(r)
                .iter()
                .filter(|x| x.0 == CardTarget::Box(*box_no))
                .count();
            assert_eq!(count, usize::from(*n));
        }
        InjectedFault::SwappedHands { a, b, .. } => {
            let order = ev
                .iter()
                .find_map(|e| match &e.body {
                    EventBody::DeckRevealed { order, .. } => Some(order.clone()),
                    _ => None,
                })
                .unwrap();
            let d = dealt(r);
            let hand = |bx: BoxNo| {
                d.iter()
                    .filter(|x| x.0 == CardTarget::Box(bx))
                    .map(|x| x.1)
                    .collect::<Vec<_>>()
            };
            let start = |bx: BoxNo| d.iter().position(|x| x.0 == CardTarget::Box(bx)).unwrap();
            let n = rs.hand_len();
            // Box a holds the set the committed order meant for b, and vice versa.
            assert_eq!(hand(*a), order[start(*b)..start(*b) + n].to_vec());
            assert_eq!(hand(*b), order[start(*a)..start(*a) + n].to_vec());
        }
        InjectedFault::MissingRoundClose { .. } => {
            assert!(!ev.iter().any(|e| matches!(e.body, EventBody::RoundClosed)));
        }
    }
}

#[test]
fn each_fault_kind_appears_in_the_events_at_rate_one() {
    for kind in FaultKind::ALL {
        let mut covered = 0;
        for (rs, mode) in setups() {
            if expected::code(kind, rs).is_none()
                || (kind == FaultKind::SkippedBurn && mode != DealingMode::ManualShoe)
                || (kind == FaultKind::SwappedHands && mode != DealingMode::Shuffler)
            {
                continue;
            }
            covered += 1;
            let mut t = table(rs, mode, 99, FaultPlan::only(kind, 1.0));
            let (all, rounds) = play(&mut t, 40);
            verify_chain(t.table(), all.iter().map(|p| p.bytes.as_slice())).unwrap();
            let mut hits = 0;
            for r in &rounds {
                for f in &r.injected {
                    assert_eq!(f.kind(), kind, "{rs}: only the planned kind");
                    assert_eq!(f.round(), r.round);
                    check_fault_in_events(rs, r, f);
                    hits += 1;
                }
            }
            // A fault needs something to act on (two boxes to swap, an Ante box for a late
            // bet); most rounds have it.
            assert!(
                hits >= 20,
                "{kind:?} {rs} {mode:?}: only {hits} in 40 rounds"
            );
        }
        assert!(covered > 0, "{kind:?} applies to some game");
    }
}

#[test]
fn payout_errors_plan_changes_only_payouts() {
    // The same seed with and without payout errors: the same cards, bets and decisions.
    // The cage's events differ: a wrong payout really moves the tray's chips, so fills
    // and credits come at other times and the counts differ.
    let mut a = table(RuleSet::Csp6, DealingMode::ManualShoe, 5, FaultPlan::none());
    let mut b = table(
        RuleSet::Csp6,
        DealingMode::ManualShoe,
        5,
        FaultPlan::payout_errors(0.5),
    );
    let (_, ra) = play(&mut a, 50);
    let (_, rb) = play(&mut b, 50);
    let mut wrong = 0;
    let of_round = |r: &PlayedRound| -> Vec<Published> {
        let cage = |p: &&Published| matches!(p.event.body, EventBody::Finance { .. });
        r.events.iter().filter(|p| !cage(p)).cloned().collect()
    };
    for (x, y) in ra.iter().zip(&rb) {
        let (xe, ye) = (of_round(x), of_round(y));
        assert_eq!(xe.len(), ye.len());
        for (p, q) in xe.iter().zip(&ye) {
            match (&p.event.body, &q.event.body) {
                (EventBody::PaidOut { net: n1, .. }, EventBody::PaidOut { net: n2, .. }) => {
                    if n1 != n2 {
                        wrong += 1;
                    }
                }
                (p, q) => assert_eq!(p, q),
            }
        }
        assert!(y
            .injected
            .iter()
            .all(|f| f.kind() == FaultKind::WrongPayout));
        assert_eq!(
            y.injected.len(),
            ye.iter()
                .zip(&xe)
                .filter(|(q, p)| q.event.body != p.event.body)
                .count()
        );
    }
    assert!(
        wrong > 10,
        "about half of 50 rounds carry a payout error, got {wrong}"
    );
}

#[test]
fn floor_covers_the_five_games_and_both_wire_forms() {
    let floor = Floor::new(10, 1, FaultPlan::none()).unwrap();
    let games: BTreeSet<RuleSet> = floor.tables.iter().map(|t| t.config().rule_set).collect();
    assert_eq!(games.len(), 5);
    let wires: BTreeSet<String> = floor
        .tables
        .iter()
        .map(|t| format!("{:?}", t.wire_format()))
        .collect();
    assert_eq!(wires.len(), 2);
    let ids: BTreeSet<&TableId> = floor.tables.iter().map(|t| t.table()).collect();
    assert_eq!(ids.len(), 10);
    // MLP3 tables share one linked pool; the other pools are one per table.
    let mut pools: BTreeMap<String, usize> = BTreeMap::new();
    for t in &floor.tables {
        if let Some(j) = &t.config().jackpot {
            *pools.entry(j.pool.to_string()).or_default() += 1;
            assert_eq!(j.linked, t.config().rule_set == RuleSet::Mlp3);
        }
    }
    assert_eq!(pools[simulator::MLP3_LINKED_POOL], 2);
    assert!(pools
        .iter()
        .all(|(p, n)| p == simulator::MLP3_LINKED_POOL || *n == 1));
    let modes: BTreeSet<String> = floor
        .tables
        .iter()
        .filter(|t| t.config().rule_set == RuleSet::Csp6)
        .map(|t| format!("{:?}", t.config().dealing))
        .collect();
    assert_eq!(modes.len(), 2, "CSP6 tables use both shoe and shuffler");
}

#[test]
fn strategy_plays_pair_or_ak_and_tcp3_q64() {
    let h = |s: &str| {
        s.split(' ')
            .map(|c| Card::parse(c).unwrap())
            .collect::<Vec<_>>()
    };
    assert!(simulator::stud_plays(&h("7c 7d Kh 5s 2d")));
    assert!(simulator::stud_plays(&h("Ac Kd 8c 6s 3h")));
    assert!(
        simulator::stud_plays(&h("As 2d 3c 4h 5s")),
        "wheel straight"
    );
    assert!(simulator::stud_plays(&h("2h 6h 9h Jh Kh")), "flush");
    assert!(!simulator::stud_plays(&h("Ac Qd 8c 6s 3h")));
    assert!(simulator::tcp3_plays(&h("Qc 6d 4h")));
    assert!(
        simulator::tcp3_plays(&h("As 2d 3c")),
        "A-2-3 straight (TCP3 §3.1.1)"
    );
    assert!(!simulator::tcp3_plays(&h("Qc 6d 3h")));
    assert!(!simulator::tcp3_plays(&h("Jc Td 8h")));
}

#[test]
fn a_table_must_open_before_playing_and_not_play_after_closing() {
    let mut t = table(RuleSet::Csp6, DealingMode::ManualShoe, 1, FaultPlan::none());
    assert!(t.play_round().is_err());
    t.opening_events().unwrap();
    assert!(t.opening_events().is_err());
    t.closing_events().unwrap();
    assert!(t.play_round().is_err());
    let _ = RoundId(0);
}

/// The dealer terminal names a dealer when the table opens, and the next dealer of the
/// roster every `DEALER_ROTATION_NS` of device time, between rounds; the same seed names
/// the same dealers at the same seqs.
#[test]
fn dealers_take_the_table_at_opening_and_rotate_every_twenty_minutes() {
    let changes = |seed| {
        let mut t = table(
            RuleSet::Tcp3,
            DealingMode::Shuffler,
            seed,
            FaultPlan::none(),
        );
        let (all, _) = play(&mut t, 300);
        all.iter()
            .filter_map(|p| match &p.event.body {
                EventBody::DealerChanged { dealer } => {
                    assert_eq!(p.event.round, None, "round-less");
                    Some((p.event.seq, p.event.occurred_at_ns, dealer.to_string()))
                }
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    let a = changes(7);
    assert_eq!(a, changes(7), "a function of the seed");
    assert_eq!(
        a[0].0,
        schemas::Seq(3),
        "after the opening and the key enrollment"
    );
    assert!(a.len() >= 3, "300 rounds outlast two rotations: {a:?}");
    for w in a.windows(2) {
        assert!(w[1].1 - w[0].1 >= simulator::table::DEALER_ROTATION_NS);
        assert_ne!(w[0].2, w[1].2, "the next dealer takes over");
    }
    let roster: BTreeSet<&str> = a.iter().map(|c| c.2.as_str()).collect();
    assert!(roster.len() as u64 <= simulator::table::DEALER_ROSTER_LEN);
}
