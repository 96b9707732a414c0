//! The computed strategies against the engine and against the published edges
//! (rules/RULES.md, "House edges").

use analytics::payoff::settle_main;
use analytics::strategy::{stud_sampled, tcp3_exact};
use analytics::{Evaluator, Info};
use schemas::{Card, Choice, PayLine, RuleSet};

fn cards(s: &str) -> Vec<Card> {
    s.split_whitespace()
        .map(|c| Card::parse(c).unwrap())
        .collect()
}

/// Settles every dealer hand the information allows, one by one, through the engine.
fn brute_force(rs: RuleSet, player: &[Card], known: &[Card], removed: &[Card]) -> (u64, i128, u64) {
    let rest: Vec<Card> = Card::deck()
        .filter(|c| !player.contains(c) && !known.contains(c) && !removed.contains(c))
        .collect();
    let hidden = rs.hand_len() - known.len();
    let fold = settle_main(rs, player, &rest[..rs.hand_len()], Choice::Fold);
    let (mut n, mut sum, mut better) = (0u64, 0i128, 0u64);
    let mut idx: Vec<usize> = (0..hidden).collect();
    loop {
        let mut dealer: Vec<Card> = idx.iter().map(|i| rest[*i]).collect();
        dealer.extend_from_slice(known);
        let play = settle_main(rs, player, &dealer, Choice::Play);
        n += 1;
        sum += i128::from(play);
        better += u64::from(play > fold);
        // Next combination of `hidden` indices out of rest.len().
        let mut i = hidden;
        loop {
            if i == 0 {
                return (n, sum, better);
            }
            i -= 1;
            if idx[i] < rest.len() - hidden + i {
                break;
            }
        }
        idx[i] += 1;
        for j in i + 1..hidden {
            idx[j] = idx[j - 1] + 1;
        }
    }
}

fn check(rs: RuleSet, player: &str, known: &str, removed: &str) {
    let (player, known, removed) = (cards(player), cards(known), cards(removed));
    let e = Evaluator::new(rs).ev(&Info {
        player: &player,
        removed: &removed,
        dealer_known: &known,
    });
    let (n, sum, better) = brute_force(rs, &player, &known, &removed);
    assert_eq!(
        (e.hands, e.play_sum_minor, e.play_better),
        (n, sum, better),
        "{rs} {player:?}"
    );
}

#[test]
fn rank_enumeration_equals_settling_every_dealer_hand() {
    // TCP3: nothing of the dealer seen; then one hole card seen; then a neighbour's hand.
    check(RuleSet::Tcp3, "Qh 6s 4d", "", "");
    check(RuleSet::Tcp3, "Kh Qh Jh", "Qd", "");
    check(RuleSet::Tcp3, "Ah 5s 2c", "", "Kd Kc 9h");
    // A five-card hand and the up card of the same suit (the flush count matters).
    check(RuleSet::Csp6, "Ah Kh 9h 5c 2h", "7h Qs", "");
    check(RuleSet::Cs51, "As Kd Qc 7h 3s", "Js 8s 2s", "");
    check(RuleSet::Ssp4, "9c 9d Ks 4h 2c", "Ac Td Th", "");
}

#[test]
fn one_known_up_card_counts_every_dealer_hand_once() {
    let mut ev = Evaluator::new(RuleSet::Csp6);
    let (player, up) = (cards("Ah Kd Jc 8s 3d"), cards("Qh"));
    let e = ev.ev(&Info {
        player: &player,
        removed: &[],
        dealer_known: &up,
    });
    assert_eq!(e.hands, 163_185, "C(46, 4)");
}

#[test]
fn tcp3_computed_strategy_is_q64_and_gives_the_published_edge() {
    let s = tcp3_exact();
    assert!(s.differs_from_q64.is_empty(), "{:?}", s.differs_from_q64);
    let published = rules::edge::default_edge(RuleSet::Tcp3, PayLine::Ante).unwrap();
    assert_eq!(
        s.edge_ppm,
        published.edge_ppm(),
        "TCP3 Ante/Play 3.373% (RULES.md)"
    );
}

fn stud_against_published(samples: u64) {
    for rs in [RuleSet::Csp6, RuleSet::Mlp3, RuleSet::Ssp4, RuleSet::Cs51] {
        let s = stud_sampled(rs, samples, 2026);
        let published = rules::edge::default_edge(rs, PayLine::Ante).unwrap();
        let bound = s.edge_error_ppm + published.error_ppm;
        let off = (s.basic_edge_ppm - published.edge_ppm()).unsigned_abs();
        println!(
            "{rs}: {s:?}; published {} +-{}",
            published.edge_ppm(),
            published.error_ppm
        );
        assert!(
            off <= bound,
            "{rs}: basic {} vs {} (bound {bound})",
            s.basic_edge_ppm,
            published.edge_ppm()
        );
        // The computed strategy is never worse than the basic one on the same pairs.
        assert!(s.gain_ppm >= 0, "{rs}: {s:?}");
        assert_eq!(
            s.edge_ppm,
            s.basic_edge_ppm - s.gain_ppm,
            "{rs}: paired estimates"
        );
        assert_eq!(
            s.outside_ak_band, 0,
            "{rs}: pairs raise, less than A-K folds"
        );
    }
}

#[test]
fn stud_computed_strategies_agree_with_the_published_edges_short() {
    stud_against_published(4_000);
}

/// The figure in BENCHMARKS.md: `cargo test -p analytics --release --test strategy --
/// --ignored --nocapture`.
#[test]
#[ignore]
fn stud_computed_strategies_agree_with_the_published_edges_long() {
    stud_against_published(400_000);
}
