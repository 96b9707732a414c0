//! Each rule set's optimal strategy and the house edge it gives, from the engine.
//!
//! The optimal play raises exactly when the expected net of a raise beats a fold's, over
//! every dealer hand the player cannot see (`ev`). TCP3 is exact over every deal: 1,755
//! hands up to suit, each against its 18,424 dealer hands. The five-card games have 122
//! million (hand, up card) pairs; a seeded sample stratified by the player's hand class
//! draws them, each valued exactly, so the error is that of the sample of pairs alone.

use crate::ev::{Evaluator, Info};
use crate::payoff::UNIT_MINOR;
use rules::edge::SplitMix;
use schemas::{Card, HandClass, RuleSet};
use std::collections::HashMap;

/// TCP3's computed strategy against the published one.
#[derive(Debug, Clone)]
pub struct Tcp3Strategy {
    /// The house edge of the computed strategy, ppm of the Ante, exact (Ante and Play,
    /// Ante Bonus included), rounded toward zero as `rules::edge` rounds.
    pub edge_ppm: i64,
    /// Hands (of 22,100) where the computed play differs from "play Q-6-4 or better".
    pub differs_from_q64: Vec<[Card; 3]>,
    /// Hands the computed strategy plays.
    pub plays: u64,
}

/// TCP3 exactly: every player hand, every dealer hand of the other 49 cards.
pub fn tcp3_exact() -> Tcp3Strategy {
    let mut ev = Evaluator::new(RuleSet::Tcp3);
    let q64 = rules::eval3(&["Qc", "6d", "4h"].map(parse));
    let deck: Vec<Card> = Card::deck().collect();
    let mut by_class: HashMap<[u8; 3], crate::Ev> = HashMap::new();
    let (mut total, mut plays, mut hands) = (0i128, 0u64, 0u64);
    let mut differs = Vec::new();
    for a in 0..52 {
        for b in a + 1..52 {
            for c in b + 1..52 {
                let player = [deck[a], deck[b], deck[c]];
                let key = canonical(&player);
                let e = *by_class.entry(key).or_insert_with(|| {
                    ev.ev(&Info {
                        player: &player,
                        removed: &[],
                        dealer_known: &[],
                    })
                });
                let raise = e.raise_is_better();
                total += match raise {
                    true => e.play_sum_minor,
                    false => i128::from(e.fold_minor) * i128::from(e.hands),
                };
                plays += u64::from(raise);
                hands += e.hands;
                if raise != (rules::eval3(&player) >= q64) {
                    differs.push(player);
                }
            }
        }
    }
    assert_eq!(hands, 22_100 * 18_424, "every deal counted once");
    assert_eq!(by_class.len(), 1_755, "three-card hands up to suit");
    Tcp3Strategy {
        edge_ppm: (-total * 1_000_000 / (i128::from(hands) * i128::from(UNIT_MINOR))) as i64,
        differs_from_q64: differs,
        plays,
    }
}

/// The smallest sorted card codes of `cards` under the 24 suit permutations.
fn canonical(cards: &[Card; 3]) -> [u8; 3] {
    let mut best = [u8::MAX; 3];
    for p in PERMS {
        let mut k = cards.map(|c| c.code() / 4 * 4 + p[usize::from(c.code() % 4)]);
        k.sort_unstable();
        best = best.min(k);
    }
    best
}

const PERMS: [[u8; 4]; 24] = {
    let mut out = [[0u8; 4]; 24];
    let mut n = 0;
    let mut a = 0;
    while a < 4 {
        let mut b = 0;
        while b < 4 {
            let mut c = 0;
            while c < 4 {
                if a != b && a != c && b != c {
                    let d = 6 - a - b - c;
                    out[n] = [a, b, c, d];
                    n += 1;
                }
                c += 1;
            }
            b += 1;
        }
        a += 1;
    }
    out
};

fn parse(s: &str) -> Card {
    Card::parse(s).expect("a card")
}

/// A five-card game's computed strategy against the published basic one (raise a pair
/// or better, or A-K-J-8-3 or better, ignoring the up card).
#[derive(Debug, Clone)]
pub struct StudStrategy {
    /// The rule set.
    pub rule_set: RuleSet,
    /// (hand, up card) pairs valued.
    pub samples: u64,
    /// The computed strategy's edge, ppm of the Ante (sample estimate).
    pub edge_ppm: i64,
    /// The basic strategy's edge on the same sample, ppm of the Ante.
    pub basic_edge_ppm: i64,
    /// What the computed strategy saves the player against the basic one, ppm.
    pub gain_ppm: i64,
    /// Twice the standard error of `edge_ppm` and `basic_edge_ppm` (95%).
    pub edge_error_ppm: u64,
    /// Twice the standard error of `gain_ppm` (95%): the pairing makes it small.
    pub gain_error_ppm: u64,
    /// Sampled pairs where a pair or better folds, or less than A-K raises.
    pub outside_ak_band: u64,
}

/// Samples per class at least, so every stratum has a variance.
const STRATUM_MIN: u64 = 20;

/// The computed strategy of a five-card game, by `samples` (hand, up card) pairs drawn
/// from `seed`, stratified by the player's hand class; each pair is valued exactly.
pub fn stud_sampled(rs: RuleSet, samples: u64, seed: u64) -> StudStrategy {
    assert!(rs != RuleSet::Tcp3, "TCP3 is exact: tcp3_exact");
    assert!((200..=10_000_000).contains(&samples), "samples {samples}");
    let strata = Strata::build();
    let basic = rules::eval5(&["Ad", "Kc", "Jh", "8s", "3d"].map(parse));
    let ak = rules::eval5(&["Ad", "Kc", "4h", "3s", "2d"].map(parse));
    let mut ev = Evaluator::new(rs);
    let mut rng = SplitMix(seed);
    let mut sums = [Moments::default(); 3];
    let (mut mean, mut var) = ([0f64; 3], [0f64; 3]);
    let mut outside = 0u64;
    for (class, share) in strata.shares() {
        let n = ((samples as f64 * share).round() as u64).max(STRATUM_MIN);
        let mut m = [Moments::default(); 3];
        for _ in 0..n {
            let (hand, up) = strata.draw(&mut rng, class);
            let e = ev.ev(&Info {
                player: &hand,
                removed: &[],
                dealer_known: &[up],
            });
            let play = e.play_sum_minor as f64 / e.hands as f64 / UNIT_MINOR as f64;
            let fold = e.fold_minor as f64 / UNIT_MINOR as f64;
            let ph = rules::eval5(&hand);
            let optimal = play.max(fold);
            let basic_v = if ph >= basic { play } else { fold };
            let raises = e.raise_is_better();
            let pair_or_better = ph.class() != HandClass::HighCard;
            outside += u64::from((pair_or_better && !raises) || (ph < ak && raises));
            m[0].add(optimal);
            m[1].add(basic_v);
            m[2].add(optimal - basic_v);
        }
        for i in 0..3 {
            mean[i] += share * m[i].mean();
            var[i] += share * share * m[i].variance() / m[i].n as f64;
            sums[i].n += m[i].n;
        }
    }
    let ppm = |x: f64| (-x * 1e6).round() as i64;
    let err = |v: f64| (2.0 * v.sqrt() * 1e6).round() as u64;
    StudStrategy {
        rule_set: rs,
        samples: sums[0].n,
        edge_ppm: ppm(mean[0]),
        basic_edge_ppm: ppm(mean[1]),
        gain_ppm: -ppm(mean[2]),
        edge_error_ppm: err(var[0].max(var[1])),
        gain_error_ppm: err(var[2]),
        outside_ak_band: outside,
    }
}

/// Running sums of one stratum (statistics only).
#[derive(Debug, Clone, Copy, Default)]
struct Moments {
    n: u64,
    sum: f64,
    sum_sq: f64,
}

impl Moments {
    fn add(&mut self, x: f64) {
        self.n += 1;
        self.sum += x;
        self.sum_sq += x * x;
    }
    fn mean(&self) -> f64 {
        self.sum / self.n as f64
    }
    fn variance(&self) -> f64 {
        let n = self.n as f64;
        ((self.sum_sq - self.sum * self.sum / n) / (n - 1.0)).max(0.0)
    }
}

/// The 2,598,960 five-card hands by class: counted, and listed for the rare classes.
struct Strata {
    counts: [u64; 10],
    /// Hands of each class rarer than 1 in 20, listed; the common ones are drawn.
    listed: Vec<Vec<[Card; 5]>>,
}

const HANDS_5: u64 = 2_598_960;

impl Strata {
    fn build() -> Strata {
        let d: Vec<Card> = Card::deck().collect();
        let mut counts = [0u64; 10];
        let mut listed = vec![Vec::new(); 10];
        for a in 0..52 {
            for b in a + 1..52 {
                for c in b + 1..52 {
                    for e in c + 1..52 {
                        for f in e + 1..52 {
                            let h = [d[a], d[b], d[c], d[e], d[f]];
                            let class = rules::eval5(&h).class() as usize;
                            counts[class] += 1;
                            if !Self::common(class) {
                                listed[class].push(h);
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(counts.iter().sum::<u64>(), HANDS_5, "every hand once");
        Strata { counts, listed }
    }

    /// High card, one pair and two pairs: drawn by rejection (each at least 1 in 22).
    fn common(class: usize) -> bool {
        class <= HandClass::TwoPairs as usize
    }

    fn shares(&self) -> Vec<(usize, f64)> {
        (0..10)
            .filter(|c| self.counts[*c] > 0)
            .map(|c| (c, self.counts[c] as f64 / HANDS_5 as f64))
            .collect()
    }

    /// A hand of `class`, uniform within it, and an up card from the other 47.
    fn draw(&self, rng: &mut SplitMix, class: usize) -> ([Card; 5], Card) {
        let hand = if Self::common(class) {
            loop {
                let h = hand(rng);
                if rules::eval5(&h).class() as usize == class {
                    break h;
                }
            }
        } else {
            let list = &self.listed[class];
            list[(rng.next_u64() % list.len() as u64) as usize]
        };
        let up = loop {
            let c = Card::from_code((rng.next_u64() % 52) as u8).expect("0..52");
            if !hand.contains(&c) {
                break c;
            }
        };
        (hand, up)
    }
}

/// Five cards from a fresh shuffled deck.
fn hand(rng: &mut SplitMix) -> [Card; 5] {
    let mut deck: [Card; 52] = std::array::from_fn(|i| Card::from_code(i as u8).expect("<52"));
    rng.deal(&mut deck, 5);
    std::array::from_fn(|i| deck[i])
}
