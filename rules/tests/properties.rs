//! Properties of settlement over random legal rounds of every rule set: a function of its
//! input only, money accounted for line by line, and a fold never wins the main bets.

use proptest::prelude::*;
use schemas::settle::{BoxInput, Outcome, RoundInput};
use schemas::{BetKind, BoxNo, Card, Choice, Money, PayLine, RuleSet};
use std::collections::BTreeMap;

fn round_strategy() -> impl Strategy<Value = RoundInput> {
    (
        0usize..5,
        Just(()).prop_perturb(|_, mut rng| {
            let mut deck: Vec<Card> = Card::deck().collect();
            for i in (1..deck.len()).rev() {
                let j = (rng.next_u32() as usize) % (i + 1);
                deck.swap(i, j);
            }
            deck
        }),
        1usize..7,
        prop::collection::vec((1i64..50, 0u8..4, any::<bool>(), any::<bool>(), 0u8..3), 7),
        0i64..10_000_000,
    )
        .prop_map(|(g, deck, n_boxes, boxes, pool)| {
            let game = RuleSet::ALL[g];
            let len = game.hand_len();
            let mut cards = deck.into_iter();
            let dealer: Vec<Card> = cards.by_ref().take(len).collect();
            let main = if matches!(game, RuleSet::Cs51 | RuleSet::Tcp3) {
                BetKind::Play
            } else {
                BetKind::Bet
            };
            let multiple = if game == RuleSet::Tcp3 { 1 } else { 2 };
            let boxes = boxes
                .into_iter()
                .take(n_boxes)
                .enumerate()
                .map(|(i, (units, decision, side, jackpot, bet_shape))| {
                    let ante = units * 500;
                    let mut bets = BTreeMap::new();
                    bets.insert(BetKind::Ante, ante);
                    let decision = match decision {
                        0 => Choice::Fold,
                        1 => Choice::WalkAway,
                        _ => Choice::Play,
                    };
                    if decision == Choice::Play {
                        // Mostly the required multiple, sometimes more or less (§5.3).
                        let m = ante * multiple;
                        bets.insert(main, [m, m + 500, m / 2][bet_shape as usize]);
                    }
                    if side {
                        match game {
                            RuleSet::Tcp3 => bets.insert(BetKind::PairPlus, 500),
                            RuleSet::Cs51 => bets.insert(BetKind::Bonus, 500),
                            _ => None,
                        };
                    }
                    if jackpot {
                        match game {
                            RuleSet::Ssp4 => {
                                bets.insert(BetKind::JackpotPlayer, 2);
                                bets.insert(BetKind::JackpotDealer, 1)
                            }
                            RuleSet::Cs51 => None,
                            _ => bets.insert(BetKind::Progressive, 100),
                        };
                    }
                    BoxInput {
                        box_no: BoxNo(i as u8 + 1),
                        cards: cards.by_ref().take(len).collect(),
                        decision: Some(decision),
                        bets,
                        invalidated: None,
                    }
                })
                .collect();
            RoundInput {
                game,
                config: None,
                dealer,
                dealer_up: None,
                pool: Money(pool),
                reset: Money(100_000),
                credit_value: Some(Money(100)),
                magic_card: None,
                lucky_box: None,
                lucky_dealer: false,
                void: false,
                boxes,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn settlement_is_a_function_of_its_input(round in round_strategy()) {
        let a = rules::settle(&round).unwrap();
        let b = rules::settle(&round.clone()).unwrap();
        prop_assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
    }

    #[test]
    fn money_is_accounted_line_by_line(round in round_strategy()) {
        let s = rules::settle(&round).unwrap();
        for b in &s.boxes {
            let input = round.boxes.iter().find(|x| x.box_no == b.box_no).unwrap();
            for l in &b.lines {
                match l.outcome {
                    Outcome::Returned | Outcome::StandOff => prop_assert_eq!(l.net, Money::ZERO),
                    Outcome::Lose => prop_assert!(l.net.0 <= 0 && l.net.0 >= -l.stake.0),
                    Outcome::Win => prop_assert!(l.net.0 > 0),
                }
                // A line never settles more stake than was placed on its bet.
                if let Some(kind) = BetKind::ALL.iter().find(|k| k.line() == l.line) {
                    let placed = input.bets.get(kind).copied().unwrap_or(0);
                    let placed = if kind.in_credits() { placed * 100 } else { placed };
                    prop_assert!(l.stake.0 <= placed, "{:?}", l);
                }
            }
            // Every bet placed is settled on some line (nothing silently dropped).
            for (kind, amount) in &input.bets {
                if *amount > 0 {
                    prop_assert!(b.lines.iter().any(|l| l.line == kind.line()), "{:?} not settled", kind);
                }
            }
        }
        // The pool only falls by what was paid from it, and a 100% win resets it.
        let paid: i64 = s.jackpot_payments.iter().map(|p| p.amount.0).sum();
        if s.jackpot_payments.iter().all(|p| p.pool_after != Money(100_000)) {
            prop_assert_eq!(s.pool_after.0, s.pool_before.0 - paid);
        }
    }

    #[test]
    fn a_fold_never_wins_the_main_bets(round in round_strategy()) {
        let s = rules::settle(&round).unwrap();
        let net = s.net();
        for b in &round.boxes {
            if b.decision != Some(Choice::Play) {
                let lines = &net[&b.box_no];
                prop_assert!(lines.get(&PayLine::Ante).copied().unwrap_or_default().0 < 0);
                for main in [PayLine::Bet, PayLine::Play] {
                    prop_assert!(lines.get(&main).copied().unwrap_or_default().0 <= 0);
                }
            }
        }
    }
}
