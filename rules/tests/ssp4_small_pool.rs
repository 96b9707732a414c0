//! Issue 47: SSP4 jackpot wagers that win while the pool is small or empty, a Lucky Player
//! on an empty betting area, and an empty box. Every payout below is computed by hand
//! from SSP4 §4.1-4.5 and RULES-NOTES 2, 3, 8 (rules/RULES.md, reading 14).

use schemas::settle::{Outcome, RoundInput, Settlement};
use schemas::{BoxNo, Money, PayLine};

fn settle(v: serde_json::Value) -> Settlement {
    let input: RoundInput = serde_json::from_value(v).unwrap();
    rules::check_bounds(&input).unwrap();
    rules::settle(&input).unwrap()
}

fn net(s: &Settlement, b: u8, line: PayLine) -> i64 {
    s.net()[&BoxNo(b)].get(&line).copied().unwrap_or_default().0
}

fn lines(s: &Settlement, b: u8, line: PayLine) -> Vec<(Outcome, i64, i64)> {
    let bx = s.boxes.iter().find(|x| x.box_no == BoxNo(b)).unwrap();
    bx.lines
        .iter()
        .filter(|l| l.line == line)
        .map(|l| (l.outcome, l.stake.0, l.net.0))
        .collect()
}

/// Issue 47, first input: a Straight Flush with the Magic Card, pool 0.
fn magic_card_round(pool: i64) -> serde_json::Value {
    serde_json::json!({"game":"SSP4","dealer":["2c","2h","2s","3c","3d"],
        "boxes":[{"box":1,"cards":["8h","6h","5h","4h","7h"],
            "bets":{"ante":1000,"bet":2000,"jackpot_player":1},"decision":"play"}],
        "pool":pool,"reset":0,"credit_value":100,"magic_card":"4h","lucky_box":null,
        "lucky_dealer":false})
}

#[test]
fn ssp4_4_2_straight_flush_from_an_empty_pool_with_the_magic_card() {
    let s = settle(magic_card_round(0));
    // §4.1.1: the Ante pays 1 to 1 against the dealer's Full House.
    assert_eq!(net(&s, 1, PayLine::Ante), 1_000);
    // §4.1.2: a Straight Flush pays 50 to 1 on the Bet of 2,000.
    assert_eq!(net(&s, 1, PayLine::Bet), 100_000);
    // §4.2: 10% of a pool of 0 is 0 (RN3); §4.3, §4.5: the Magic Card pays 5 to 1 on the
    // stake of 1 credit at 1.00, which comes back once (RN2).
    assert_eq!(
        lines(&s, 1, PayLine::JackpotPlayer),
        vec![(Outcome::StandOff, 100, 0), (Outcome::Win, 0, 500)]
    );
    assert_eq!(net(&s, 1, PayLine::JackpotPlayer), 500);
    assert_eq!((s.pool_before.0, s.pool_after.0), (0, 0));
    assert_eq!(s.jackpot_payments[0].amount, Money(0));
}

#[test]
fn ssp4_4_2_a_pool_of_10_pays_one_cent_and_the_magic_card() {
    let s = settle(magic_card_round(10));
    assert_eq!(
        lines(&s, 1, PayLine::JackpotPlayer),
        vec![(Outcome::Win, 100, 1), (Outcome::Win, 0, 500)]
    );
    assert_eq!(s.pool_after, Money(9));
}

#[test]
fn ssp4_4_4_1_lucky_dealer_on_a_dealer_straight_flush_from_a_pool_of_9() {
    let s = settle(
        serde_json::json!({"game":"SSP4","dealer":["9c","Tc","Jc","Qc","Kc"],
        "boxes":[{"box":1,"cards":["2d","5h","8s","Jd","Ah"],
            "bets":{"ante":1000,"jackpot_dealer":1},"decision":"fold"}],
        "pool":9,"reset":0,"credit_value":100,"magic_card":null,"lucky_box":null,
        "lucky_dealer":true}),
    );
    // §3.9: the fold loses the Ante; RN10: the jackpot wager stays eligible.
    assert_eq!(net(&s, 1, PayLine::Ante), -1_000);
    // §4.2: 10% of 9 rounds down to 0 (RN3); §4.4.1: Lucky Dealer pays 5 to 1 on 1.00.
    assert_eq!(
        lines(&s, 1, PayLine::JackpotDealer),
        vec![(Outcome::StandOff, 100, 0), (Outcome::Win, 0, 500)]
    );
    assert_eq!(s.pool_after, Money(9));
}

#[test]
fn ssp4_rn8_two_royal_flushes_the_second_from_the_reset_pool_with_lucky_player() {
    let s = settle(
        serde_json::json!({"game":"SSP4","dealer":["2c","3d","5h","7s","9c"],
        "boxes":[
            {"box":1,"cards":["As","Ks","Qs","Js","Ts"],
             "bets":{"ante":1000,"bet":2000,"jackpot_player":1},"decision":"play"},
            {"box":2,"cards":["Ah","Kh","Qh","Jh","Th"],
             "bets":{"ante":1000,"bet":2000,"jackpot_player":1},"decision":"play"}],
        "pool":5000000,"reset":0,"credit_value":100,"magic_card":null,"lucky_box":2,
        "lucky_dealer":false}),
    );
    // §3.12: the dealer has no Ace and King: Antes pay 1 to 1, Bets are returned.
    for b in [1, 2] {
        assert_eq!(net(&s, b, PayLine::Ante), 1_000);
        assert_eq!(net(&s, b, PayLine::Bet), 0);
    }
    // Box 1 is paid first (RN8): the whole pool, its stake a contribution (RN2).
    assert_eq!(
        lines(&s, 1, PayLine::JackpotPlayer),
        vec![(Outcome::Win, 100, 4_999_900)]
    );
    // Box 2: 100% of the reset pool of 0, and the Lucky Player's 5 to 1 (§4.4).
    assert_eq!(
        lines(&s, 2, PayLine::JackpotPlayer),
        vec![(Outcome::StandOff, 100, 0), (Outcome::Win, 0, 500)]
    );
    let paid: Vec<(i64, i64, i64)> = s
        .jackpot_payments
        .iter()
        .map(|p| (p.pool_before.0, p.amount.0, p.pool_after.0))
        .collect();
    assert_eq!(paid, vec![(5_000_000, 5_000_000, 0), (0, 0, 0)]);
}

#[test]
fn rn2_a_pool_award_of_nothing_alone_keeps_the_stake_as_a_contribution() {
    for pool in [0, 1, 9] {
        let mut round = magic_card_round(pool);
        round["magic_card"] = serde_json::Value::Null;
        let s = settle(round);
        // 10% of a pool under 10 cents is 0: the stake stays in the pool (RN2, RN3).
        assert_eq!(
            lines(&s, 1, PayLine::JackpotPlayer),
            vec![(Outcome::Lose, 100, -100)]
        );
    }
}

#[test]
fn ssp4_4_4_a_lucky_player_on_an_empty_area_pays_nobody_with_a_note() {
    let mut round = magic_card_round(1_000);
    round["magic_card"] = serde_json::Value::Null;
    round["lucky_box"] = serde_json::json!(6);
    let s = settle(round);
    // Box 1 has no Lucky Player award: 10% of 10.00 only, the stake a contribution.
    assert_eq!(
        lines(&s, 1, PayLine::JackpotPlayer),
        vec![(Outcome::Win, 100, 0)]
    );
    assert_eq!(s.notes.len(), 1);
    assert_eq!(s.notes[0].box_no, Some(BoxNo(6)));
    assert_eq!(s.notes[0].clause, "SSP4 4.4");
    assert!(s.notes[0].explanation.contains("is empty"), "{:?}", s.notes);
}

#[test]
fn ssp4_4_4_a_lucky_player_on_a_box_without_a_player_wager_is_noted() {
    let mut round = magic_card_round(1_000);
    round["boxes"][0]["bets"] = serde_json::json!({"ante":1000,"bet":2000});
    round["lucky_box"] = serde_json::json!(1);
    let s = settle(round);
    assert!(lines(&s, 1, PayLine::JackpotPlayer).is_empty());
    assert!(s.notes[0].explanation.contains("no Player jackpot wager"));
}

#[test]
fn the_lucky_area_must_be_one_of_the_table() {
    let mut round = magic_card_round(0);
    round["lucky_box"] = serde_json::json!(0);
    let input: RoundInput = serde_json::from_value(round.clone()).unwrap();
    assert_eq!(rules::check_bounds(&input).unwrap_err().field, "lucky_box");
    // Only SSP4 has a Lucky Player (§4.4).
    round["lucky_box"] = serde_json::json!(1);
    round["game"] = serde_json::json!("CSP6");
    round["boxes"][0]["bets"] = serde_json::json!({"ante":1000,"bet":2000});
    let input: RoundInput = serde_json::from_value(round).unwrap();
    let e = rules::check_bounds(&input).unwrap_err();
    assert_eq!(
        (e.field.as_str(), e.message.as_str()),
        ("lucky_box", "CSP6 has no Lucky Player")
    );
}

#[test]
fn an_empty_box_settles_with_a_note() {
    for (game, cards) in [
        ("SSP4", vec!["9d", "9s", "3h", "4c", "Kd"]),
        ("CSP6", vec!["9d", "9s", "3h", "4c", "Kd"]),
        ("TCP3", vec!["9d", "9s", "3h"]),
    ] {
        let dealer: Vec<&str> = ["Ac", "Kc", "7d", "5s", "2h"][..cards.len()].to_vec();
        let s = settle(serde_json::json!({"game":game,"dealer":dealer,
            "boxes":[{"box":3,"cards":cards,"bets":{},"decision":null}]}));
        assert!(s.boxes[0].lines.is_empty());
        let clause = if game == "SSP4" {
            "SSP4 3.4"
        } else {
            &*format!("{game} 3.6")
        };
        assert_eq!(s.notes.len(), 1, "{game}");
        assert_eq!(s.notes[0].clause, clause);
        assert_eq!(
            s.notes[0].explanation,
            "box 3 has no bet: nothing to settle"
        );
    }
}

#[test]
fn ten_and_lower_case_ranks_are_read_and_printed_upper_case() {
    let card: schemas::Card = serde_json::from_str("\"10h\"").unwrap();
    assert_eq!(card.to_string(), "Th");
    let card: schemas::Card = serde_json::from_str("\"kh\"").unwrap();
    assert_eq!(card.to_string(), "Kh");
    assert!(serde_json::from_str::<schemas::Card>("\"1h\"").is_err());
    assert!(serde_json::from_str::<schemas::Card>("\"KH\"").is_err());
}
