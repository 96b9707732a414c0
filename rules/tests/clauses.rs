//! One test per clause of sections 3-5 that decides money, named after the clause, for
//! each rule set where it applies. Rounds are written as `roundledger settle` input.

use schemas::settle::{RoundInput, Settlement};
use schemas::{BoxNo, Money, PayLine};
use serde_json::json;

fn settle(v: serde_json::Value) -> Settlement {
    let round: RoundInput = serde_json::from_value(v).expect("round parses");
    rules::settle(&round).unwrap_or_else(|e| panic!("{e}"))
}

fn net(s: &Settlement, b: u8, line: PayLine) -> i64 {
    s.net()
        .get(&BoxNo(b))
        .and_then(|l| l.get(&line))
        .map(|m| m.0)
        .unwrap_or(0)
}

fn clause(s: &Settlement, b: u8, line: PayLine) -> String {
    s.boxes
        .iter()
        .find(|x| x.box_no == BoxNo(b))
        .unwrap()
        .lines
        .iter()
        .filter(|l| l.line == line)
        .map(|l| l.clause.clone())
        .collect::<Vec<_>>()
        .join(" | ")
}

/// A qualifying dealer (A-K high) and a non-qualifying one (A-Q high), 5 cards.
const QUAL: [&str; 5] = ["Ac", "Kd", "8c", "6s", "3h"];
const NOT_QUAL: [&str; 5] = ["Ah", "Qd", "9c", "6s", "3h"];

fn stud(
    game: &str,
    dealer: [&str; 5],
    cards: [&str; 5],
    decision: &str,
    bets: serde_json::Value,
) -> serde_json::Value {
    json!({"game": game, "dealer": dealer, "credit_value": 100,
           "boxes": [{"box": 1, "cards": cards, "decision": decision, "bets": bets}]})
}

#[test]
fn stud_3_13_dealer_not_qualifying_pays_ante_returns_bet() {
    for (game, main, c) in [
        ("CSP6", "bet", "3.13"),
        ("MLP3", "bet", "3.13"),
        ("SSP4", "bet", "3.12"),
        ("CS51", "play", "How To Play"),
    ] {
        let s = settle(stud(
            game,
            NOT_QUAL,
            ["7c", "7d", "Kh", "5s", "2d"],
            "play",
            json!({"ante": 1000, main: 2000}),
        ));
        assert!(!s.dealer_qualifies);
        assert_eq!(net(&s, 1, PayLine::Ante), 1000, "{game}");
        let main_line = if main == "bet" {
            PayLine::Bet
        } else {
            PayLine::Play
        };
        assert_eq!(net(&s, 1, main_line), 0, "{game}");
        assert!(
            clause(&s, 1, PayLine::Ante).contains(c),
            "{game}: {}",
            clause(&s, 1, PayLine::Ante)
        );
    }
}

#[test]
fn stud_3_14_1_player_wins_ante_1_to_1_bet_per_pay_table() {
    // Two pairs pay 2 to 1 on the BET in every stud rule set (CSP6/MLP3 4.1, SSP4 4.1.2, CS51 RULES-NOTES 13).
    for (game, main) in [
        ("CSP6", PayLine::Bet),
        ("MLP3", PayLine::Bet),
        ("SSP4", PayLine::Bet),
        ("CS51", PayLine::Play),
    ] {
        let key = if main == PayLine::Bet { "bet" } else { "play" };
        let s = settle(stud(
            game,
            QUAL,
            ["7c", "7d", "Kh", "Ks", "2d"],
            "play",
            json!({"ante": 1000, key: 2000}),
        ));
        assert_eq!(net(&s, 1, PayLine::Ante), 1000, "{game}");
        assert_eq!(net(&s, 1, main), 4000, "{game}");
    }
}

#[test]
fn stud_3_14_2_player_loses_ante_and_bet() {
    let s = settle(stud(
        "CSP6",
        ["Ac", "Ad", "8c", "6s", "3h"],
        ["7c", "7d", "Kh", "5s", "2d"],
        "play",
        json!({"ante": 1000, "bet": 2000}),
    ));
    assert_eq!(net(&s, 1, PayLine::Ante), -1000);
    assert_eq!(net(&s, 1, PayLine::Bet), -2000);
    assert!(clause(&s, 1, PayLine::Bet).contains("3.14.2"));
}

#[test]
fn ssp4_3_16_stand_off_returns_ante_and_bet() {
    let s = settle(stud(
        "SSP4",
        QUAL,
        ["Ah", "Kc", "8d", "6h", "3c"],
        "play",
        json!({"ante": 1000, "bet": 2000}),
    ));
    assert_eq!(net(&s, 1, PayLine::Ante), 0);
    assert_eq!(net(&s, 1, PayLine::Bet), 0);
    assert!(clause(&s, 1, PayLine::Ante).contains("SSP4 3.16"));
}

#[test]
fn mlp3_4_1_1_bet_win_capped_at_sgd_100000_per_box() {
    let s = settle(stud(
        "MLP3",
        QUAL,
        ["9h", "Th", "Jh", "Qh", "Kh"],
        "play",
        json!({"ante": 100000, "bet": 200000}),
    ));
    // Straight flush 50 to 1 on 2,000.00 = 100,000.00 exactly: at the cap, not above.
    assert_eq!(net(&s, 1, PayLine::Bet), 10_000_000);
    let s = settle(stud(
        "MLP3",
        QUAL,
        ["9h", "Th", "Jh", "Qh", "Kh"],
        "play",
        json!({"ante": 150000, "bet": 300000}),
    ));
    assert_eq!(net(&s, 1, PayLine::Bet), 10_000_000);
    assert!(clause(&s, 1, PayLine::Bet).contains("4.1.1"));
    // The Ante win is not capped (RULES-NOTES 5).
    assert_eq!(net(&s, 1, PayLine::Ante), 150_000);
}

#[test]
fn csp6_5_3_2_bet_less_than_twice_the_ante_settles_as_placed() {
    let s = settle(stud(
        "CSP6",
        QUAL,
        ["7c", "7d", "Kh", "5s", "2d"],
        "play",
        json!({"ante": 1000, "bet": 1500}),
    ));
    assert_eq!(net(&s, 1, PayLine::Bet), 1500);
    assert!(clause(&s, 1, PayLine::Bet).contains("5.3.2"));
}

#[test]
fn tcp3_5_3_1_play_more_than_the_ante_settles_on_the_ante() {
    let s = settle(
        json!({"game": "TCP3", "dealer": ["Qc", "8d", "5h"], "boxes": [
        {"box": 1, "cards": ["Kc", "Kd", "2h"], "decision": "play", "bets": {"ante": 1000, "play": 3000}}]}),
    );
    assert_eq!(net(&s, 1, PayLine::Play), 1000);
    assert!(clause(&s, 1, PayLine::Play).contains("TCP3 3.15.1, 5.3.1"));
}

#[test]
fn csp6_5_1_1_bet_over_the_table_maximum_settles_at_the_maximum() {
    let mut round = stud(
        "CSP6",
        QUAL,
        ["7c", "7d", "Kh", "5s", "2d"],
        "play",
        json!({"ante": 80000, "bet": 100000}),
    );
    round["config"] = json!({"rule_set": "CSP6", "rules_version": "Version 6", "currency": "SGD", "boxes": 7,
        "dealing": "manual_shoe", "limits": [{"kind": "ante", "min": 2500, "max": 50000}]});
    let s = settle(round);
    assert_eq!(
        net(&s, 1, PayLine::Ante),
        50000,
        "settled at the maximum, excess returned"
    );
    assert_eq!(
        net(&s, 1, PayLine::Bet),
        100000,
        "BET = twice the settled Ante"
    );
}

#[test]
fn csp6_5_2_1_bet_under_the_minimum_settles_as_placed() {
    let mut round = stud(
        "CSP6",
        QUAL,
        ["7c", "7d", "Kh", "5s", "2d"],
        "play",
        json!({"ante": 1000, "bet": 2000}),
    );
    round["config"] = json!({"rule_set": "CSP6", "rules_version": "Version 6", "currency": "SGD", "boxes": 7,
        "dealing": "manual_shoe", "limits": [{"kind": "ante", "min": 2500, "max": 50000}]});
    let s = settle(round);
    assert_eq!(net(&s, 1, PayLine::Ante), 1000);
    assert_eq!(net(&s, 1, PayLine::Bet), 2000);
}

#[test]
fn jackpot_bet_without_ante_is_returned_csp6_5_4_tcp3_5_4_ssp4_3_5() {
    for (game, kind, c) in [
        ("CSP6", "progressive", "CSP6 5.4"),
        ("MLP3", "progressive", "MLP3 5.4"),
        ("SSP4", "jackpot_player", "SSP4 3.5"),
    ] {
        let s = settle(stud(
            game,
            QUAL,
            ["Ah", "Kh", "Qh", "Jh", "Th"],
            "play",
            json!({kind: 1}),
        ));
        let line = if kind == "progressive" {
            PayLine::Progressive
        } else {
            PayLine::JackpotPlayer
        };
        assert_eq!(net(&s, 1, line), 0, "{game}");
        assert!(clause(&s, 1, line).contains(c), "{game}");
        assert_eq!(s.pool_after, s.pool_before);
    }
    let s = settle(
        json!({"game": "TCP3", "dealer": ["Qc", "8d", "5h"], "pool": 100000, "boxes": [
        {"box": 1, "cards": ["As", "Ks", "Qs"], "decision": null, "bets": {"pair_plus": 500, "progressive": 100}}]}),
    );
    assert_eq!(net(&s, 1, PayLine::Progressive), 0);
    assert!(clause(&s, 1, PayLine::Progressive).contains("TCP3 5.4"));
    assert_eq!(
        net(&s, 1, PayLine::PairPlus),
        20000,
        "straight flush 40 to 1"
    );
}

#[test]
fn csp6_5_5_walking_away_is_a_fold() {
    let s = settle(stud(
        "CSP6",
        QUAL,
        ["Ah", "Kh", "Qh", "Jh", "Th"],
        "walk_away",
        json!({"ante": 1000, "progressive": 100}),
    ));
    assert_eq!(net(&s, 1, PayLine::Ante), -1000);
    assert_eq!(
        net(&s, 1, PayLine::Progressive),
        -100,
        "a folded royal flush is not eligible (3.12.1)"
    );
    assert!(clause(&s, 1, PayLine::Ante).contains("CSP6 5.5"));
}

#[test]
fn mlp3_4_3_refusing_to_reveal_is_a_fold_but_keeps_the_jackpot() {
    let s = settle(
        json!({"game": "MLP3", "dealer": QUAL, "pool": 1000000, "reset": 500000, "boxes": [
        {"box": 1, "cards": ["4h", "4d", "4c", "4s", "Kh"], "decision": "refuse_to_reveal", "bets": {"ante": 1000, "progressive": 100}}]}),
    );
    assert_eq!(net(&s, 1, PayLine::Ante), -1000);
    assert_eq!(net(&s, 1, PayLine::Progressive), 39900, "400 for 1");
    assert!(clause(&s, 1, PayLine::Ante).contains("MLP3 4.3"));
}

#[test]
fn csp6_4_5_1_two_major_winners_paid_in_deal_order() {
    let s = settle(
        json!({"game": "CSP6", "dealer": ["2s", "7d", "8c", "Js", "3h"], "pool": 1000000, "reset": 100000, "boxes": [
        {"box": 2, "cards": ["Ah", "Kh", "Qh", "Jh", "Th"], "decision": "play", "bets": {"ante": 1000, "bet": 2000, "progressive": 100}},
        {"box": 1, "cards": ["9d", "Td", "Jd", "Qd", "Kd"], "decision": "play", "bets": {"ante": 1000, "bet": 2000, "progressive": 100}}]}),
    );
    // Box 1 is dealt first: 10% of 10,000.00; then box 2 takes 100% of what is left.
    assert_eq!(s.jackpot_payments[0].box_no, BoxNo(1));
    assert_eq!(s.jackpot_payments[0].amount, Money(100000));
    assert_eq!(s.jackpot_payments[1].amount, Money(900000));
    assert_eq!(net(&s, 1, PayLine::Progressive), 99900);
    assert_eq!(net(&s, 2, PayLine::Progressive), 899900);
    assert_eq!(s.pool_after, Money(100000));
}

#[test]
fn csp6_5_15_wrong_card_count_invalidates_the_hand_and_returns_its_bets() {
    let s = settle(json!({"game": "CSP6", "dealer": QUAL, "boxes": [
        {"box": 1, "cards": ["7c", "7d", "Kh", "5s"], "decision": "play", "bets": {"ante": 1000, "bet": 2000, "progressive": 100}},
        {"box": 2, "cards": ["9c", "9d", "Qh", "5h", "2c"], "decision": "play", "bets": {"ante": 1000, "bet": 2000}}]}));
    assert_eq!(net(&s, 1, PayLine::Ante), 0);
    assert_eq!(net(&s, 1, PayLine::Bet), 0);
    assert!(clause(&s, 1, PayLine::Ante).contains("CSP6 5.15"));
    assert_eq!(net(&s, 2, PayLine::Ante), 1000, "the other box plays on");
}

#[test]
fn void_returns_every_bet_csp6_5_22_tcp3_5_21() {
    for (game, c) in [
        ("CSP6", "CSP6 5.22"),
        ("MLP3", "MLP3 5.22"),
        ("SSP4", "SSP4 RULES-NOTES 22"),
    ] {
        let mut r = stud(
            game,
            QUAL,
            ["Ah", "Kh", "Qh", "Jh", "Th"],
            "play",
            json!({"ante": 1000, "bet": 2000}),
        );
        r["void"] = json!(true);
        let s = settle(r);
        assert!(
            s.boxes[0]
                .lines
                .iter()
                .all(|l| l.net.0 == 0 && l.clause == c),
            "{game}"
        );
    }
    let s = settle(
        json!({"game": "TCP3", "dealer": ["Qc"], "void": true, "boxes": [
        {"box": 1, "cards": ["As", "Ks", "Qs"], "decision": "play", "bets": {"ante": 1000, "play": 1000, "progressive": 100}}]}),
    );
    assert!(s.boxes[0]
        .lines
        .iter()
        .all(|l| l.net.0 == 0 && l.clause == "TCP3 5.21"));
    assert_eq!(s.boxes[0].lines.len(), 3);
}

#[test]
fn ssp4_4_2_dealer_hand_jackpot_and_4_4_lucky_player_and_4_4_1_lucky_dealer() {
    let s = settle(
        json!({"game": "SSP4", "dealer": ["5d", "5c", "5s", "Jd", "Jh"], "pool": 1000000, "credit_value": 100,
        "lucky_box": 1, "lucky_dealer": true, "boxes": [
        {"box": 1, "cards": ["8s", "8h", "2d", "Kc", "Qd"], "decision": "fold", "bets": {"ante": 1000, "jackpot_player": 1, "jackpot_dealer": 2}}]}),
    );
    // Lucky Player 5 to 1 on 1 credit; the dealer's full house 100 to 1 plus Lucky Dealer 5 to 1 on 2 credits.
    assert_eq!(net(&s, 1, PayLine::JackpotPlayer), 500);
    assert_eq!(net(&s, 1, PayLine::JackpotDealer), 100 * 200 + 5 * 200);
    assert!(clause(&s, 1, PayLine::JackpotPlayer).contains("SSP4 4.4"));
    assert!(clause(&s, 1, PayLine::JackpotDealer).contains("SSP4 4.4.1"));
}

#[test]
fn cs51_bonus_pays_when_the_house_does_not_qualify_and_loses_below_trips() {
    let s = settle(
        json!({"game": "CS51", "dealer": ["2c", "9d", "Tc", "4s", "8h"], "boxes": [
        {"box": 1, "cards": ["7c", "7d", "7s", "5s", "2d"], "decision": "play", "bets": {"ante": 1000, "play": 2000, "bonus": 500}},
        {"box": 2, "cards": ["Ac", "Jd", "9s", "5h", "3d"], "decision": "fold", "bets": {"ante": 1000, "bonus": 500}}]}),
    );
    assert_eq!(net(&s, 1, PayLine::Bonus), 3500, "three of a kind 7 to 1");
    assert_eq!(net(&s, 1, PayLine::Ante), 1000, "house does not qualify");
    assert_eq!(net(&s, 2, PayLine::Bonus), -500);
}

#[test]
fn tcp3_queen_high_qualifies_and_3_14_pair_plus_only_box_makes_no_decision() {
    let s = settle(
        json!({"game": "TCP3", "dealer": ["Qc", "8d", "5h"], "boxes": [
        {"box": 1, "cards": ["Kc", "Jd", "2h"], "decision": "play", "bets": {"ante": 1000, "play": 1000}},
        {"box": 2, "cards": ["9c", "9d", "2c"], "decision": null, "bets": {"pair_plus": 500}}]}),
    );
    assert!(s.dealer_qualifies);
    assert_eq!(net(&s, 1, PayLine::Ante), 1000);
    assert_eq!(net(&s, 1, PayLine::Play), 1000);
    assert_eq!(net(&s, 2, PayLine::PairPlus), 500);
    let s = settle(
        json!({"game": "TCP3", "dealer": ["Jc", "8d", "5h"], "boxes": [
        {"box": 1, "cards": ["Kc", "Jd", "2h"], "decision": "play", "bets": {"ante": 1000, "play": 1000}}]}),
    );
    assert!(!s.dealer_qualifies);
    assert_eq!(net(&s, 1, PayLine::Play), 0);
}

/// A fixed jackpot award below the stake (a $100 flush on a $200 progressive stake, CSP6
/// §4.2): the award is paid and the stake kept as a contribution, net -$100, not a panic.
#[test]
fn csp6_4_2_a_fixed_award_below_the_stake_is_a_win_with_a_negative_net() {
    let s = settle(
        json!({"game": "CSP6", "dealer": ["Ac", "Kd", "8c", "6s", "3h"], "boxes": [
        {"box": 1, "cards": ["2h", "6h", "9h", "Jh", "Kh"], "decision": "play",
         "bets": {"ante": 1000, "bet": 2000, "progressive": 20000}}]}),
    );
    assert_eq!(net(&s, 1, PayLine::Progressive), -10_000);
    let line = s.boxes[0]
        .lines
        .iter()
        .find(|l| l.line == PayLine::Progressive)
        .expect("a progressive line");
    assert_eq!(line.outcome, schemas::settle::Outcome::Win);
}

/// TCP3 §3.12 gives the fold to a player with an Ante; §3.14 has the dealer reveal a
/// Pair Plus only box. A fold recorded on one is not applied (RN17).
#[test]
fn tcp3_3_14_a_fold_on_a_pair_plus_only_box_does_not_apply() {
    let s = settle(
        json!({"game": "TCP3", "dealer": ["Qc", "8d", "5h"], "boxes": [
        {"box": 1, "cards": ["9c", "9d", "2c"], "decision": "fold", "bets": {"pair_plus": 500}}]}),
    );
    assert_eq!(
        net(&s, 1, PayLine::PairPlus),
        500,
        "a pair pays 1 to 1 (§4.2)"
    );
    let line = &s.boxes[0].lines[0];
    assert!(
        line.explanation
            .contains("the recorded fold does not apply, TCP3 3.14"),
        "{}",
        line.explanation
    );
    // With an Ante the fold stands and loses the Pair Plus too (§3.12.1).
    let s = settle(
        json!({"game": "TCP3", "dealer": ["Qc", "8d", "5h"], "boxes": [
        {"box": 1, "cards": ["9c", "9d", "2c"], "decision": "fold", "bets": {"ante": 1000, "pair_plus": 500}}]}),
    );
    assert_eq!(net(&s, 1, PayLine::PairPlus), -500);
    assert_eq!(net(&s, 1, PayLine::Ante), -1000);
}

/// TCP3 4.9.1 orders winners across tables; one table's winners are paid in deal order
/// (RN8), and a single table's jackpot line cites that, not 4.9.1.
#[test]
fn tcp3_one_tables_jackpot_cites_deal_order_not_4_9_1() {
    let s = settle(
        json!({"game": "TCP3", "dealer": ["Jc", "8d", "5h"], "pool": 2000000, "reset": 500000, "boxes": [
        {"box": 1, "cards": ["As", "Ks", "Qs"], "decision": "play", "bets": {"ante": 1000, "play": 1000, "progressive": 100}}]}),
    );
    let c = clause(&s, 1, PayLine::Progressive);
    assert!(!c.contains("4.9.1"), "{c}");
    assert!(c.contains("4.4"), "{c}");
}

#[test]
fn tcp3_4_8_a_pair_plus_only_box_gives_no_envy_bonus() {
    let s = settle(
        json!({"game": "TCP3", "dealer": ["Jc", "8d", "5h"], "pool": 2000000, "reset": 500000, "boxes": [
        {"box": 1, "cards": ["As", "Ks", "Qs"], "decision": null, "bets": {"pair_plus": 100}},
        {"box": 2, "cards": ["9c", "9d", "2h"], "decision": "play", "bets": {"ante": 1000, "play": 1000, "progressive": 100}}]}),
    );
    assert_eq!(net(&s, 2, PayLine::Envy), 0);
    assert_eq!(
        s.pool_after,
        Money(2000000),
        "no jackpot bet on box 1: the pool is untouched"
    );
}

#[test]
fn tcp3_4_7_envy_for_each_other_top_hand_never_for_ones_own() {
    let s = settle(
        json!({"game": "TCP3", "dealer": ["Jc", "8d", "5h"], "pool": 2000000, "reset": 500000, "boxes": [
        {"box": 1, "cards": ["Ah", "Kh", "Qh"], "decision": "play", "bets": {"ante": 1000, "play": 1000, "progressive": 100}},
        {"box": 2, "cards": ["Ad", "Kd", "Qd"], "decision": "play", "bets": {"ante": 1000, "play": 1000, "progressive": 100}}]}),
    );
    // Each A-K-Q suited (not spades) wins $1,250 and gives the other box a $50 Envy Bonus.
    assert_eq!(net(&s, 1, PayLine::Progressive), 125000 - 100);
    assert_eq!(net(&s, 1, PayLine::Envy), 5000);
    assert_eq!(net(&s, 2, PayLine::Envy), 5000);
}

#[test]
fn configured_pay_table_replaces_the_seeds() {
    let mut r = stud(
        "CSP6",
        QUAL,
        ["7c", "7d", "7h", "5s", "2d"],
        "play",
        json!({"ante": 1000, "bet": 2000}),
    );
    r["config"] = json!({"rule_set": "CSP6", "rules_version": "Version 6", "currency": "SGD", "boxes": 7, "dealing": "shuffler",
        "pay_tables": [{"name": "main", "rows": [{"hand": "three_of_a_kind", "pays": {"to_one": 4}}]}]});
    assert_eq!(net(&settle(r), 1, PayLine::Bet), 8000);
}

#[test]
fn bad_input_names_the_field() {
    let bad = |v: serde_json::Value| {
        let round: RoundInput = serde_json::from_value(v).unwrap();
        rules::settle(&round).unwrap_err().field
    };
    assert_eq!(
        bad(stud(
            "CSP6",
            QUAL,
            ["Ac", "7d", "Kh", "5s", "2d"],
            "play",
            json!({"ante": 1000})
        )),
        "boxes[0].cards[0]"
    );
    assert_eq!(
        bad(stud(
            "CSP6",
            QUAL,
            ["7c", "7d", "Kh", "5s", "2d"],
            "play",
            json!({"ante": -5})
        )),
        "boxes[0].bets.ante"
    );
    assert_eq!(
        bad(stud(
            "CSP6",
            QUAL,
            ["7c", "7d", "Kh", "5s", "2d"],
            "play",
            json!({"ante": 5, "pair_plus": 5})
        )),
        "boxes[0].bets.pair_plus"
    );
    assert_eq!(
        bad(json!({"game": "CSP6", "dealer": ["Ac"], "boxes": []})),
        "dealer"
    );
    assert_eq!(
        bad(json!({"game": "SSP4", "dealer": QUAL, "boxes": [
        {"box": 1, "cards": ["7c", "7d", "Kh", "5s", "2d"], "decision": "play", "bets": {"ante": 5, "jackpot_player": 1}}]})),
        "credit_value"
    );
}
