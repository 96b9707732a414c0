//! Expected values of a decision by exact enumeration of the dealer's unseen cards.
//!
//! The dealer's unseen cards are enumerated as rank multisets, each weighted by how many
//! card sets it stands for. Suits matter only through a flush, so each multiset splits in
//! its flush and non-flush sets; one concrete hand of each is evaluated by the engine. A
//! 5-card dealer hand with one card known costs at most C(16,4) = 1,820 evaluations
//! instead of C(46,4) = 163,185; a 3-card one at most C(15,3) = 455.

use crate::payoff::{Payoffs, UNIT_MINOR};
use rules::Hand;
use schemas::{Card, Rank, RuleSet, Suit};
use std::collections::HashMap;

/// What one player knows: their own cards, other cards known out of the deck (a
/// neighbour's shared hand), and the dealer's cards they can see.
#[derive(Debug, Clone, Copy)]
pub struct Info<'a> {
    /// The box's own cards (a full hand of the rule set).
    pub player: &'a [Card],
    /// Other cards known not to be the dealer's.
    pub removed: &'a [Card],
    /// The dealer's cards known (the up card; a hole card; all of them in hindsight).
    pub dealer_known: &'a [Card],
}

/// The value of a raise against a fold over every dealer hand the information allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ev {
    /// Dealer hands counted (card sets, each once).
    pub hands: u64,
    /// Sum over them of the net of a raise, minor units on `UNIT_MINOR` of Ante.
    pub play_sum_minor: i128,
    /// Dealer hands against which a raise nets more than a fold.
    pub play_better: u64,
    /// The net of a fold, minor units (it does not depend on the dealer's hand).
    pub fold_minor: i64,
    /// The least and the most a raise nets against these hands, minor units.
    pub play_range_minor: (i64, i64),
}

impl Ev {
    /// Expected net of a raise minus that of a fold, per unit of Ante (statistics only).
    pub fn gain(&self) -> f64 {
        assert!(self.hands > 0, "an EV counts at least one dealer hand");
        let play = self.play_sum_minor as f64 / self.hands as f64;
        (play - self.fold_minor as f64) / UNIT_MINOR as f64
    }

    /// `gain` in parts per million of the Ante, rounded toward zero (for display).
    pub fn gain_ppm(&self) -> i64 {
        let n = i128::from(self.hands);
        let diff = self.play_sum_minor - i128::from(self.fold_minor) * n;
        (diff * 1_000_000 / (n * i128::from(UNIT_MINOR))) as i64
    }

    /// The spread of a raise's net, per unit of Ante: what bounds how far any more
    /// knowledge can move `gain` (statistics only).
    pub fn spread(&self) -> f64 {
        let (lo, hi) = self.play_range_minor;
        (hi - lo).max(0) as f64 / UNIT_MINOR as f64
    }

    /// Whether raising is the better play (ties fold: the smaller stake).
    pub fn raise_is_better(&self) -> bool {
        self.play_sum_minor > i128::from(self.fold_minor) * i128::from(self.hands)
    }
}

/// Most dealer hands kept evaluated per rule set (ranks and flush: 13^5 x 2 at most).
const HAND_CACHE_MAX: usize = 1 << 20;

/// One rule set's evaluator of decisions: the engine's nets and a cache of dealer hands.
#[derive(Debug, Clone)]
pub struct Evaluator {
    rule_set: RuleSet,
    payoffs: Payoffs,
    /// A dealer hand's value by its ranks and flush, with whether it qualifies.
    hands: HashMap<u64, (Hand, bool)>,
}

impl Evaluator {
    /// An evaluator of `rule_set` under its seed pay tables.
    pub fn new(rule_set: RuleSet) -> Evaluator {
        Evaluator {
            rule_set,
            payoffs: Payoffs::new(rule_set),
            hands: HashMap::new(),
        }
    }

    /// The rule set.
    pub fn rule_set(&self) -> RuleSet {
        self.rule_set
    }

    fn hand_len(&self) -> usize {
        self.rule_set.hand_len()
    }

    /// The dealer hand's value and whether it qualifies, by the engine.
    fn dealer(&mut self, cards: &[Card]) -> (Hand, bool) {
        let mut ranks: Vec<u8> = cards.iter().map(|c| c.rank().value()).collect();
        ranks.sort_unstable();
        let flush = cards.iter().all(|c| c.suit() == cards[0].suit());
        let key = ranks
            .iter()
            .fold(u64::from(flush), |k, r| k * 16 + u64::from(*r));
        if let Some(v) = self.hands.get(&key) {
            return *v;
        }
        let h = rules::evaluate(self.rule_set, cards).expect("a full dealer hand");
        let v = (h, rules::dealer_qualifies(self.rule_set, cards));
        if self.hands.len() < HAND_CACHE_MAX {
            self.hands.insert(key, v);
        }
        v
    }

    /// The net of a raise and of a fold with `player` against the whole `dealer` hand.
    pub fn nets(&mut self, player: &[Card], dealer: &[Card]) -> (i64, i64) {
        let ph = rules::evaluate(self.rule_set, player).expect("a full player hand");
        let (dh, q) = self.dealer(dealer);
        let play = self.payoffs.play(player, ph, dealer, dh, q);
        (play, self.payoffs.fold(player))
    }

    /// Every multiset of `left` ranks from rank index `r` up, weighted by its card sets.
    fn walk(&mut self, w: &mut Walk, r: usize, left: usize, weight: u64) {
        if left == 0 {
            self.score(w, weight);
            return;
        }
        if r == 13 {
            return;
        }
        let avail = w.out.avail[r];
        for k in 0..=avail.min(left) {
            let ways = binomial(avail as u64, k as u64) as u64;
            w.ranks.extend(std::iter::repeat_n(r as u8 + 2, k));
            self.walk(w, r + 1, left - k, weight * ways);
            w.ranks.truncate(w.ranks.len() - k);
        }
    }

    /// Counts the flush and non-flush hands of one rank multiset.
    fn score(&mut self, w: &mut Walk, weight: u64) {
        let flushes = w.flush_suits();
        let mut flush_count = 0u64;
        for s in flushes.iter().flatten() {
            let cards = w.with_suit(*s);
            flush_count += 1;
            self.add(w, &cards, 1);
        }
        let plain = weight - flush_count;
        if plain > 0 {
            let cards = w.not_flush().expect("a non-flush set exists when counted");
            self.add(w, &cards, plain);
        }
    }

    fn add(&mut self, w: &mut Walk, dealer: &[Card], count: u64) {
        let (dh, q) = self.dealer(dealer);
        let play = self.payoffs.play(w.player, w.ph, dealer, dh, q);
        let fold = w.acc.fold_minor;
        let (lo, hi) = w.acc.play_range_minor;
        w.acc.play_range_minor = (lo.min(play), hi.max(play));
        w.acc.hands += count;
        w.acc.play_sum_minor += i128::from(play) * i128::from(count);
        if play > fold {
            w.acc.play_better += count;
        }
    }

    /// The value of a raise against a fold, exactly, over every dealer hand `info` allows.
    pub fn ev(&mut self, info: &Info) -> Ev {
        let len = self.hand_len();
        assert_eq!(info.player.len(), len, "a full player hand");
        assert!(info.dealer_known.len() <= len, "at most a full dealer hand");
        let ph = rules::evaluate(self.rule_set, info.player).expect("a full player hand");
        let out = Out::new(info);
        let mut acc = Ev {
            hands: 0,
            play_sum_minor: 0,
            play_better: 0,
            fold_minor: self.payoffs.fold(info.player),
            play_range_minor: (i64::MAX, i64::MIN),
        };
        let hidden = len - info.dealer_known.len();
        let mut walk = Walk {
            known: info.dealer_known,
            player: info.player,
            out: &out,
            ph,
            ranks: Vec::with_capacity(len),
            acc: &mut acc,
        };
        self.walk(&mut walk, 0, hidden, 1);
        let unseen = 52 - out.count;
        assert_eq!(
            u128::from(acc.hands),
            binomial(unseen as u64, hidden as u64),
            "every unseen dealer hand counted once"
        );
        acc
    }
}

/// The state of one enumeration.
struct Walk<'a> {
    known: &'a [Card],
    player: &'a [Card],
    out: &'a Out,
    ph: Hand,
    /// The unseen dealer cards' ranks (2..=14) of the multiset in hand.
    ranks: Vec<u8>,
    acc: &'a mut Ev,
}

impl Walk<'_> {
    /// The suits in which the multiset makes a flush with the known cards, card by card
    /// available: none unless its ranks are distinct.
    fn flush_suits(&self) -> [Option<Suit>; 4] {
        let mut out = [None; 4];
        let distinct = self.ranks.windows(2).all(|p| p[0] != p[1]);
        if !distinct {
            return out;
        }
        for (i, s) in Suit::ALL.into_iter().enumerate() {
            let known_ok = self.known.iter().all(|c| c.suit() == s);
            let free = self.ranks.iter().all(|r| !self.out.has(card(*r, s)));
            if known_ok && free {
                out[i] = Some(s);
            }
        }
        out
    }

    fn with_suit(&self, s: Suit) -> Vec<Card> {
        let mut cards = self.known.to_vec();
        cards.extend(self.ranks.iter().map(|r| card(*r, s)));
        cards
    }

    /// Available cards of the multiset's ranks that are no flush with the known cards.
    fn not_flush(&self) -> Option<Vec<Card>> {
        let mut cards = self.known.to_vec();
        let first_hidden = cards.len();
        for &r in &self.ranks {
            let s = Suit::ALL
                .into_iter()
                .find(|s| !self.out.has(card(r, *s)) && !cards.contains(&card(r, *s)))?;
            cards.push(card(r, s));
        }
        if !is_flush(&cards) {
            return Some(cards);
        }
        // Move one unseen card to another free suit of its rank.
        for i in first_hidden..cards.len() {
            let r = cards[i].rank().value();
            let other = Suit::ALL.into_iter().find(|s| {
                *s != cards[i].suit() && !self.out.has(card(r, *s)) && !cards.contains(&card(r, *s))
            });
            if let Some(s) = other {
                cards[i] = card(r, s);
                return Some(cards);
            }
        }
        None
    }
}

fn is_flush(cards: &[Card]) -> bool {
    cards.iter().all(|c| c.suit() == cards[0].suit())
}

fn card(rank: u8, suit: Suit) -> Card {
    Card::new(Rank::new(rank).expect("rank 2..=14"), suit)
}

/// The cards out of the dealer's reach, as a mask, and the free cards per rank.
struct Out {
    mask: u64,
    count: usize,
    /// Free suits per rank index (rank 2 at 0).
    avail: [usize; 13],
}

impl Out {
    fn new(info: &Info) -> Out {
        let mut mask = 0u64;
        let all = info
            .player
            .iter()
            .chain(info.removed)
            .chain(info.dealer_known);
        for c in all {
            assert_eq!(mask & (1 << c.code()), 0, "a card is known once: {c}");
            mask |= 1 << c.code();
        }
        let mut avail = [0usize; 13];
        for c in Card::deck().filter(|c| mask & (1 << c.code()) == 0) {
            avail[usize::from(c.rank().value() - 2)] += 1;
        }
        Out {
            mask,
            count: mask.count_ones() as usize,
            avail,
        }
    }

    fn has(&self, c: Card) -> bool {
        self.mask & (1 << c.code()) != 0
    }
}

/// C(n, k), exact.
pub fn binomial(n: u64, k: u64) -> u128 {
    if k > n {
        return 0;
    }
    let k = k.min(n - k);
    (0..k).fold(1u128, |acc, i| acc * u128::from(n - i) / u128::from(i + 1))
}
