//! Hand evaluation: 5-card hands (the stud games, CSP6 §3.1.2), 3-card hands (TCP3
//! §3.1.2) and the best 5 of 6 cards (CS51 5+1 Bonus).
//!
//! A `Hand` carries a value that orders hands of the same game (higher is better) and the
//! class the pay tables name. The value packs the category in bits 20.. and up to five
//! ranks, most significant first, four bits each: exactly the tie-break order of CSP6
//! §3.1.3 (a straight by its top card, then groups by size and rank, then kickers).

use schemas::{Card, HandClass, Suit};

/// An evaluated hand. Only hands of the same game compare meaningfully.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Hand {
    value: u32,
    class: HandClass,
}

impl PartialOrd for Hand {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Hand {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.value.cmp(&other.value)
    }
}

impl Hand {
    /// The class the pay tables name (royal flush told apart from other straight flushes;
    /// TCP3's A-K-Q straight flush is `StraightFlush` here, see `tcp3_jackpot_class`).
    pub fn class(&self) -> HandClass {
        self.class
    }
    /// The packed order value (category, then ranks).
    pub fn value(&self) -> u32 {
        self.value
    }
    /// The ranks in tie-break order (2..=14), most significant first.
    pub fn ranks(&self) -> impl Iterator<Item = u8> + '_ {
        (0..5)
            .map(move |i| ((self.value >> (16 - 4 * i)) & 0xF) as u8)
            .filter(|r| *r != 0)
    }
    /// The highest rank that decides the hand (first tie-break rank).
    pub fn top_rank(&self) -> u8 {
        ((self.value >> 16) & 0xF) as u8
    }
    /// The second tie-break rank, 0 if none.
    pub fn second_rank(&self) -> u8 {
        ((self.value >> 12) & 0xF) as u8
    }
}

fn pack(category: u32, ranks: &[u8]) -> u32 {
    let mut v = category << 20;
    for (i, r) in ranks.iter().take(5).enumerate() {
        v |= u32::from(*r) << (16 - 4 * i);
    }
    v
}

/// Ranks grouped by how often they appear, larger groups first, then higher ranks:
/// returns (group sizes, ranks in that order).
fn groups(cards: &[Card]) -> ([u8; 5], [u8; 5], usize) {
    let mut counts = [0u8; 15];
    for c in cards {
        counts[c.rank().value() as usize] += 1;
    }
    let mut sizes = [0u8; 5];
    let mut ranks = [0u8; 5];
    let mut n = 0;
    for size in (1..=4u8).rev() {
        for r in (2..=14u8).rev() {
            if counts[r as usize] == size {
                sizes[n] = size;
                ranks[n] = r;
                n += 1;
            }
        }
    }
    (sizes, ranks, n)
}

/// The top rank of a straight over these distinct ranks, if they form one. `wheel_top` is
/// the top of the ace-low straight: 5 for 5-4-3-2-A (CSP6 §3.1.1), 3 for A-2-3 (TCP3
/// §3.1.1).
fn straight_top(ranks: &[u8], wheel_top: u8) -> Option<u8> {
    let max = *ranks.iter().max()?;
    let min = *ranks.iter().min()?;
    if (max - min) as usize == ranks.len() - 1 {
        return Some(max);
    }
    // Ace low: the ace counts as 1, so the others run 2..=wheel_top.
    let mut low: Vec<u8> = ranks
        .iter()
        .map(|r| if *r == 14 { 1 } else { *r })
        .collect();
    low.sort_unstable();
    (ranks.contains(&14) && low[0] == 1 && low[low.len() - 1] == wheel_top).then_some(wheel_top)
}

fn same_suit(cards: &[Card]) -> Option<Suit> {
    let s = cards[0].suit();
    cards.iter().all(|c| c.suit() == s).then_some(s)
}

/// The 5-4-3-2-A straight's rank mask (CSP6 §3.1.1: the Ace counts as 1 there only).
const WHEEL5: u16 = (1 << 14) | (1 << 5) | (1 << 4) | (1 << 3) | (1 << 2);

/// The 5-card category order (CSP6 §3.1.2), lowest first; a royal flush is the straight
/// flush with an Ace on top.
const CLASSES5: [HandClass; 9] = [
    HandClass::HighCard,
    HandClass::OnePair,
    HandClass::TwoPairs,
    HandClass::ThreeOfAKind,
    HandClass::Straight,
    HandClass::Flush,
    HandClass::FullHouse,
    HandClass::FourOfAKind,
    HandClass::StraightFlush,
];

#[inline]
fn hand5(value: u32) -> Hand {
    let category = (value >> 20) as usize;
    let class = if category == 8 && (value >> 16) & 0xF == 14 {
        HandClass::RoyalFlush
    } else {
        CLASSES5[category]
    };
    Hand { value, class }
}

/// Pushes the ranks of `mask`, highest first, into `ranks` from position `n`.
fn push_ranks(mut mask: u16, ranks: &mut [u8; 5], n: &mut usize) {
    while mask != 0 && *n < 5 {
        let r = (15 - mask.leading_zeros()) as u8;
        ranks[*n] = r;
        *n += 1;
        mask &= !(1 << r);
    }
}

/// The value of five distinct ranks given by their rank mask, with or without a flush.
fn distinct_value(mask: u16, flush: bool) -> u32 {
    let top = (15 - mask.leading_zeros()) as u8;
    let straight = if mask >> (top - 4) == 0b11111 {
        Some(top)
    } else if mask == WHEEL5 {
        Some(5)
    } else {
        None
    };
    let mut ranks = [0u8; 5];
    let mut n = 0;
    push_ranks(mask, &mut ranks, &mut n);
    match (straight, flush) {
        (Some(top), false) => pack(4, &[top]),
        (Some(top), true) => pack(8, &[top]),
        (None, false) => pack(0, &ranks),
        (None, true) => pack(5, &ranks),
    }
}

/// The reference 5-card evaluator, straight from the rule text: rank groups as bit masks,
/// then category and tie-break ranks. It fills the lookup table of `eval5` once, and the
/// tests check the table against it over every hand.
fn eval5_by_groups(cards: &[Card; 5]) -> u32 {
    // seen[k]: ranks present at least k+1 times.
    let mut seen = [0u16; 4];
    let mut suits: u8 = 0;
    for c in cards {
        let bit = 1u16 << c.rank().value();
        if seen[2] & bit != 0 {
            seen[3] |= bit;
        } else if seen[1] & bit != 0 {
            seen[2] |= bit;
        } else if seen[0] & bit != 0 {
            seen[1] |= bit;
        } else {
            seen[0] |= bit;
        }
        suits |= 1 << (c.code() & 3);
    }
    if seen[1] == 0 {
        return distinct_value(seen[0], suits.count_ones() == 1);
    }
    let quads = seen[3];
    let trips = seen[2] & !seen[3];
    let pairs = seen[1] & !seen[2];
    let singles = seen[0] & !seen[1];
    let category = if quads != 0 {
        7
    } else if trips != 0 && pairs != 0 {
        6
    } else if trips != 0 {
        3
    } else if pairs.count_ones() == 2 {
        2
    } else {
        1
    };
    // Groups, larger first, then higher rank: the §3.1.3 tie-break order.
    let mut ranks = [0u8; 5];
    let mut n = 0;
    for group in [quads, trips, pairs, singles] {
        push_ranks(group, &mut ranks, &mut n);
    }
    pack(category, &ranks[..n])
}

/// A weight per rank (2..=A) such that the sums of the weights of any five ranks, each
/// used at most four times, are all different: the sum names the rank multiset of a hand
/// and indexes `rank_table` directly. Found greedily (each weight the smallest that keeps
/// all 6,175 sums distinct), so the largest sum, and the table, stay small; `rank_table`
/// asserts the distinctness when it is built.
const RANK_WEIGHTS: [u32; 13] = [
    0, 1, 5, 22, 94, 312, 992, 2_422, 5_624, 12_522, 19_998, 43_258, 79_415,
];

/// The largest weight sum: four aces and a king.
const RANK_KEY_MAX: usize = 4 * RANK_WEIGHTS[12] as usize + RANK_WEIGHTS[11] as usize;

/// Per card code: its rank weight in the low 32 bits and a one in the byte of its suit in
/// the high 32 bits. Summing five entries gives the rank key and the count of each suit
/// at once; a suit byte never overflows into the next (at most six cards are summed).
const CARD_KEYS: [u64; 52] = {
    let mut t = [0u64; 52];
    let mut code = 0;
    while code < 52 {
        t[code] = RANK_WEIGHTS[code / 4] as u64 | 1 << (32 + 8 * (code % 4));
        code += 1;
    }
    t
};

/// Whether a sum of `CARD_KEYS` holds five cards of one suit: some suit byte is at least 5
/// (adding 3 to each byte sets its bit 3 exactly then; no byte carries, 6 + 3 < 256).
fn is_flush(key: u64) -> bool {
    ((key >> 32) + 0x0303_0303) & 0x0808_0808 != 0
}

/// The non-flush value of every rank multiset, indexed by its weight sum (1.4 MiB, of
/// which the 6,175 used entries touch a few hundred KiB), built once on first use from
/// the reference evaluator.
fn rank_table() -> &'static [u32] {
    static TABLE: std::sync::OnceLock<Box<[u32]>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = vec![0u32; RANK_KEY_MAX + 1].into_boxed_slice();
        let mut filled = 0usize;
        // Every multiset as non-decreasing rank indices; suits 0,1,2,3,0 by position
        // never make a flush and never repeat a card (copies of a rank are adjacent).
        let mut r = [0usize; 5];
        loop {
            let five_alike = r[0] == r[4];
            if !five_alike {
                let cards = std::array::from_fn(|i| {
                    let code = (r[i] * 4 + i % 4) as u8;
                    Card::from_code(code).expect("rank index 0..13 and suit 0..4 make a card")
                });
                let key = r.iter().map(|&i| RANK_WEIGHTS[i] as usize).sum::<usize>();
                assert_eq!(t[key], 0, "two rank multisets share the key {key}");
                // Every value is non-zero: the top rank is at least 7.
                t[key] = eval5_by_groups(&cards);
                filled += 1;
            }
            // Next multiset: bump the last index below 12, reset those after it to it.
            let Some(i) = (0..5).rev().find(|&i| r[i] < 12) else {
                break;
            };
            r[i] += 1;
            let v = r[i];
            r[i..].fill(v);
        }
        assert_eq!(filled, 6_175);
        t
    })
}

/// The value of the five cards whose `CARD_KEYS` sum to `key`. In a flush the ranks are
/// distinct, so the table gives a straight or a high card; the flush lifts them to a
/// straight flush (category 4 to 8) or a flush (0 to 5) with the same ranks.
#[inline]
fn value5(table: &[u32], key: u64) -> u32 {
    let v = table[(key as u32) as usize];
    if is_flush(key) {
        v + if v >> 20 == 4 { 4 << 20 } else { 5 << 20 }
    } else {
        v
    }
}

/// Evaluates a 5-card hand (CSP6/MLP3 §3.1.2, SSP4 §3.14, CS51 Hand Rankings). No
/// allocation, no branch on the cards but a flush: the sum of a per-card key names the
/// rank multiset, which is one lookup in a table built once. It runs in the exhaustive
/// tests and on every replay.
#[inline]
pub fn eval5(cards: &[Card; 5]) -> Hand {
    let key = cards.iter().map(|c| CARD_KEYS[c.code() as usize]).sum();
    hand5(value5(rank_table(), key))
}

/// Evaluates a 3-card hand in 3 Card Poker order (TCP3 §3.1.2): straight flush, three of
/// a kind, straight, flush, pair, high card; A-2-3 is the lowest straight and A-K-Q the
/// highest (§3.1.1, RULES-NOTES 15).
pub fn eval3(cards: &[Card; 3]) -> Hand {
    let (sizes, ranks, n) = groups(cards);
    let flush = same_suit(cards).is_some();
    if n == 3 {
        let straight = straight_top(&ranks[..3], 3);
        let (category, class, packed): (u32, HandClass, &[u8]) = match (straight, flush) {
            (Some(_), true) => (5, HandClass::StraightFlush, &[]),
            (Some(_), false) => (3, HandClass::Straight, &[]),
            (None, true) => (2, HandClass::Flush, &ranks[..3]),
            (None, false) => (0, HandClass::HighCard, &ranks[..3]),
        };
        let value = match straight {
            Some(top) => pack(category, &[top]),
            None => pack(category, packed),
        };
        return Hand { value, class };
    }
    let (category, class) = if sizes[0] == 3 {
        (4, HandClass::ThreeOfAKind)
    } else {
        (1, HandClass::OnePair)
    };
    Hand {
        value: pack(category, &ranks[..n]),
        class,
    }
}

/// TCP3 §3.17: the jackpot class of a 3-card hand: A-K-Q of spades and A-K-Q of another
/// suit are classes of their own above the other straight flushes.
pub fn tcp3_jackpot_class(cards: &[Card; 3]) -> HandClass {
    let hand = eval3(cards);
    if hand.class() == HandClass::StraightFlush && hand.top_rank() == 14 {
        if cards[0].suit() == Suit::Spades {
            HandClass::MiniRoyalSpades
        } else {
            HandClass::MiniRoyal
        }
    } else {
        hand.class()
    }
}

/// The best 5-card hand of six cards (CS51 5+1 Bonus: the player's five and the house's
/// up card): the highest of the six hands that leave one card out, each the key of all six
/// less the key of the card left out.
pub fn best5of6(cards: &[Card; 6]) -> Hand {
    let table = rank_table();
    let keys = cards.map(|c| CARD_KEYS[c.code() as usize]);
    let all: u64 = keys.iter().sum();
    let best = keys
        .iter()
        .map(|k| value5(table, all - k))
        .fold(0, u32::max);
    hand5(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h5(s: &str) -> Hand {
        let v: Vec<Card> = s
            .split_whitespace()
            .map(|c| Card::parse(c).unwrap())
            .collect();
        eval5(&[v[0], v[1], v[2], v[3], v[4]])
    }
    fn h3(s: &str) -> Hand {
        let v: Vec<Card> = s
            .split_whitespace()
            .map(|c| Card::parse(c).unwrap())
            .collect();
        eval3(&[v[0], v[1], v[2]])
    }

    #[test]
    fn csp6_3_1_3_tie_break_examples() {
        // a. K-Q-J-10-9 beats J-10-9-8-7 (straights)
        assert!(h5("Kc Qd Jh Ts 9c") > h5("Jc Td 9h 8s 7c"));
        // b. 5-5-K-10-2 beats 5-5-Q-J-10
        assert!(h5("5c 5d Kh Ts 2c") > h5("5h 5s Qh Js Tc"));
        // c. A-K-J-5-2 beats A-K-10-6-4
        assert!(h5("Ac Kd Jh 5s 2c") > h5("Ah Ks Td 6s 4c"));
    }

    #[test]
    fn ssp4_3_15_tie_break_examples() {
        assert!(h5("Qc Jd Th 9s 8c") > h5("Tc 9d 8h 7s 6c"));
        assert!(h5("8c 8d Qh Ts 2c") > h5("8h 8s Jh 9s 7c"));
        assert!(h5("Ac Kd Jh 4s 2c") > h5("Ah Ks Td 6s 3c"));
    }

    #[test]
    fn tcp3_3_1_3_tie_break_examples() {
        assert!(h3("Kc Qd Jh") > h3("Jc Td 9h"));
        assert!(h3("5c 5d Kh") > h3("5h 5s Qh"));
        assert!(h3("Ac Kd Jh") > h3("Ah Ks Td"));
    }

    #[test]
    fn ace_is_low_only_in_the_wheel() {
        assert_eq!(h5("5c 4d 3h 2s Ac").class(), HandClass::Straight);
        assert!(h5("6c 5d 4h 3s 2c") > h5("5c 4d 3h 2s Ac"));
        assert_eq!(h5("Ac Kd Qh Js 9c").class(), HandClass::HighCard);
        assert_eq!(
            h5("Qc Kd Ah 2s 3c").class(),
            HandClass::HighCard,
            "no wrap-around straight"
        );
        assert_eq!(h5("Ah Kh Qh Jh Th").class(), HandClass::RoyalFlush);
        assert_eq!(h5("5h 4h 3h 2h Ah").class(), HandClass::StraightFlush);
    }

    #[test]
    fn tcp3_3_1_1_a23_is_the_lowest_straight() {
        assert_eq!(h3("As 2d 3c").class(), HandClass::Straight);
        assert!(h3("2s 3d 4c") > h3("As 2d 3c"));
        assert!(h3("Ks Qd Jc") > h3("As 2d 3c"));
        assert!(h3("As Kd Qc") > h3("Ks Qd Jc"));
        // Straight beats flush in 3 Card Poker (§3.1.2).
        assert!(h3("4s 5d 6c") > h3("Ah Jh 9h"));
        let c = |s: &str| Card::parse(s).unwrap();
        assert_eq!(
            tcp3_jackpot_class(&[c("As"), c("Ks"), c("Qs")]),
            HandClass::MiniRoyalSpades
        );
        assert_eq!(
            tcp3_jackpot_class(&[c("Ah"), c("Kh"), c("Qh")]),
            HandClass::MiniRoyal
        );
        assert_eq!(
            tcp3_jackpot_class(&[c("Jh"), c("Kh"), c("Qh")]),
            HandClass::StraightFlush
        );
    }

    /// The table lookup gives exactly the reference evaluator's value (and so the same
    /// order and the same stored reports) for every one of the 2,598,960 hands.
    #[test]
    fn eval5_equals_the_reference_over_all_hands() {
        let d: Vec<Card> = Card::deck().collect();
        let mut n = 0u32;
        for a in 0..52 {
            for b in a + 1..52 {
                for c in b + 1..52 {
                    for e in c + 1..52 {
                        for f in e + 1..52 {
                            let cards = [d[a], d[b], d[c], d[e], d[f]];
                            assert_eq!(eval5(&cards).value(), eval5_by_groups(&cards), "{cards:?}");
                            n += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(n, 2_598_960);
    }

    /// best5of6 is the best of the six 5-card hands that leave one card out, over a
    /// stride through the 20 million sets of six.
    #[test]
    fn best_of_six_is_the_best_of_the_six_fives() {
        let d: Vec<Card> = Card::deck().collect();
        let mut i = 0u64;
        for a in 0..52 {
            for b in a + 1..52 {
                for c in b + 1..52 {
                    for e in c + 1..52 {
                        for f in e + 1..52 {
                            for g in f + 1..52 {
                                i += 1;
                                if !i.is_multiple_of(101) {
                                    continue;
                                }
                                let six = [d[a], d[b], d[c], d[e], d[f], d[g]];
                                let want = (0..6)
                                    .map(|skip| {
                                        let mut five = [six[0]; 5];
                                        let rest =
                                            six.iter().enumerate().filter(|(j, _)| *j != skip);
                                        for (slot, (_, card)) in five.iter_mut().zip(rest) {
                                            *slot = *card;
                                        }
                                        eval5(&five)
                                    })
                                    .max()
                                    .unwrap();
                                assert_eq!(best5of6(&six), want, "{six:?}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn best_of_six_uses_the_up_card() {
        let v: Vec<Card> = "7c 7d Kh 5s 2d 7h"
            .split_whitespace()
            .map(|c| Card::parse(c).unwrap())
            .collect();
        let best = best5of6(&[v[0], v[1], v[2], v[3], v[4], v[5]]);
        assert_eq!(best.class(), HandClass::ThreeOfAKind);
    }
}
