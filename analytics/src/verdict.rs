//! The verdict on one recorded decision: the optimal play on what the player could see,
//! the best play given the dealer's hidden cards, and the scores the sequential tests add.
//!
//! A score compares the legitimate view V with a fuller view W (V and one hole card; V and
//! a neighbour's hand): g = w x s x (gain_W - gain_V) / B, where gain is the expected net
//! of a raise over a fold per Ante, s is +1 for a raise and -1 for a fold, B bounds
//! |gain_W - gain_V| and w is 1 when one hole card could change the optimal play (|gain_V|
//! <= B), else 0. w and B depend on V only. A fair player decides on V alone, and gain_W
//! has mean gain_V given V, so g has mean 0 given everything before the decision, whatever
//! the player's strategy. A player who sees W raises when gain_W is high: g drifts up.

use crate::ev::{Evaluator, Info};
use crate::payoff::UNIT_MINOR;
use crate::rounds::{BoxFacts, RoundFacts};
use schemas::{BoxNo, Card, Choice, RuleSet};

/// The verdict on one box's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionVerdict {
    /// The box.
    pub box_no: BoxNo,
    /// Its cards.
    pub cards: Vec<Card>,
    /// The dealer's cards it could see (the up card; an exposed card).
    pub dealer_seen: Vec<Card>,
    /// The decision recorded (a walk-away is a fold).
    pub choice: Choice,
    /// Whether it raised (Play).
    pub raised: bool,
    /// Expected net of a raise over a fold on what the player could see, ppm of the Ante.
    pub gain_ppm: i64,
    /// The optimal play on that view: raise or not.
    pub optimal_raise: bool,
    /// Net of a raise over a fold against the dealer's actual hand, ppm of the Ante.
    pub hindsight_gain_ppm: i64,
    /// The best play had the player known the dealer's hand.
    pub hindsight_raise: bool,
    /// The hole-card score g in [-1, 1] per unseen dealer card, in deal order (module
    /// doc): a cheat sees the same place each round. Statistics only.
    pub hole_scores: Vec<f64>,
    /// The dealer's unseen cards, in deal order (the places of `hole_scores`).
    pub hole_cards: Vec<Card>,
    /// The optimal play's gain with each unseen card known, ppm of the Ante.
    pub hole_gain_ppm: Vec<i64>,
    /// The legitimate view's evaluation, kept for the card-sharing test.
    legit: crate::Ev,
}

impl DecisionVerdict {
    /// Whether the decision differs from the optimal play on the legitimate view.
    pub fn off_strategy(&self) -> bool {
        self.raised != self.optimal_raise
    }

    /// One sentence an officer can read; `place` names the unseen card a cheat would see.
    pub fn explain(&self, dealer: &[Card], place: Option<usize>) -> String {
        let play = |r: bool| if r { "raise" } else { "fold" };
        let hole = place
            .and_then(|j| Some((self.hole_cards.get(j)?, self.hole_gain_ppm.get(j)?)))
            .map(|(c, g)| {
                let best = play(*g > 0);
                format!(
                    "; with the hole card {c} known: {best} ({:+.3} Ante)",
                    *g as f64 / 1e6
                )
            })
            .unwrap_or_default();
        format!(
            "box {}: held {}, saw {}; optimal on that: {} ({:+.3} Ante){hole}; dealer held {}: \
             {} was best ({:+.3} Ante); the player chose {}",
            self.box_no.0,
            cards_text(&self.cards),
            if self.dealer_seen.is_empty() {
                "no dealer card".into()
            } else {
                cards_text(&self.dealer_seen)
            },
            play(self.optimal_raise),
            self.gain_ppm as f64 / 1e6,
            cards_text(dealer),
            play(self.hindsight_raise),
            self.hindsight_gain_ppm as f64 / 1e6,
            play(self.raised),
        )
    }
}

/// Cards as the rule books write them: "Ah Kd 9c".
pub fn cards_text(cards: &[Card]) -> String {
    cards
        .iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Why a box's decision is not judged.
fn judgeable_box(rs: RuleSet, b: &BoxFacts, dealer: &[Card]) -> Option<bool> {
    let raised = match b.decision? {
        Choice::Play => true,
        Choice::Fold | Choice::WalkAway => false,
        Choice::RefuseToReveal => return None,
    };
    let len = rs.hand_len();
    let full = b.cards.len() == len && dealer.len() == len;
    let mut all: Vec<Card> = b.cards.iter().chain(dealer).copied().collect();
    all.sort_unstable();
    all.dedup();
    (full && all.len() == 2 * len).then_some(raised)
}

/// The verdict on every judgeable decision of `facts`, in box order. A box is judged when
/// it decided Play, Fold or walked away, holds a full hand, and no card repeats.
pub fn judge(ev: &mut Evaluator, facts: &RoundFacts) -> Vec<DecisionVerdict> {
    let Some(rs) = facts.rule_set.filter(|_| facts.judgeable()) else {
        return Vec::new();
    };
    assert_eq!(ev.rule_set(), rs, "an evaluator of the round's rule set");
    let dealer = &facts.dealer_cards;
    let mut out = Vec::new();
    for b in &facts.boxes {
        let Some(raised) = judgeable_box(rs, b, dealer) else {
            continue;
        };
        // Cards dealt face up to other boxes are seen by everyone (CS51).
        let removed: Vec<Card> = facts
            .boxes
            .iter()
            .filter(|o| o.box_no != b.box_no && o.face_up)
            .flat_map(|o| o.cards.iter().copied())
            .filter(|c| !b.cards.contains(c) && !facts.dealer_seen.contains(c))
            .collect();
        let seen: Vec<Card> = facts
            .dealer_seen
            .iter()
            .filter(|c| !b.cards.contains(c))
            .copied()
            .collect();
        let legit = ev.ev(&Info {
            player: &b.cards,
            removed: &removed,
            dealer_known: &seen,
        });
        let (play, fold) = ev.nets(&b.cards, dealer);
        let hole = hole_scores(
            ev,
            HoleView {
                cards: &b.cards,
                removed: &removed,
                seen: &seen,
                dealer,
            },
            &legit,
            raised,
        );
        out.push(DecisionVerdict {
            box_no: b.box_no,
            cards: b.cards.clone(),
            dealer_seen: seen,
            choice: b.decision.unwrap_or(Choice::Fold),
            raised,
            gain_ppm: legit.gain_ppm(),
            optimal_raise: legit.raise_is_better(),
            hindsight_gain_ppm: (play - fold) * 1_000_000 / UNIT_MINOR,
            hindsight_raise: play > fold,
            hole_scores: hole.scores,
            hole_cards: hole.cards,
            hole_gain_ppm: hole.gain_ppm,
            legit,
        });
    }
    out
}

/// g = s x (fuller gain - legitimate gain) / bound, clamped against rounding only.
fn score(raised: bool, moved: f64, bound: f64) -> f64 {
    if bound <= 0.0 {
        return 0.0;
    }
    let s = if raised { 1.0 } else { -1.0 };
    (s * moved / bound).clamp(-1.0, 1.0)
}

/// The cards that give the same value once known: with the seen cards of two suits no
/// flush is possible, so the rank decides; with one suit seen, the rank and whether the
/// card is of that suit; with none seen, the card itself.
fn card_class(seen: &[Card], x: Card) -> (u8, Option<u8>) {
    let rank = x.rank().value();
    match seen.first() {
        None => (rank, Some(x.suit() as u8)),
        Some(s) if seen.iter().all(|c| c.suit() == s.suit()) => {
            (rank, Some(u8::from(x.suit() == s.suit())))
        }
        Some(_) => (rank, None),
    }
}

/// A box's view and the dealer's hand, for the hole-card scores.
struct HoleView<'a> {
    cards: &'a [Card],
    removed: &'a [Card],
    seen: &'a [Card],
    dealer: &'a [Card],
}

struct HoleScores {
    scores: Vec<f64>,
    cards: Vec<Card>,
    gain_ppm: Vec<i64>,
}

/// Each unseen dealer card's score: the gain with that card known against the gain on the
/// legitimate view, over the bound B = the largest such move over every card the dealer
/// could hold (V-measurable). The moves average to 0 over those cards: asserted exactly.
fn hole_scores(ev: &mut Evaluator, v: HoleView, legit: &crate::Ev, raised: bool) -> HoleScores {
    let hidden: Vec<Card> = v
        .dealer
        .iter()
        .filter(|c| !v.seen.contains(c))
        .copied()
        .collect();
    let unseen: Vec<Card> = Card::deck()
        .filter(|c| !v.cards.contains(c) && !v.removed.contains(c) && !v.seen.contains(c))
        .collect();
    let (mut sum_play, mut sum_hands) = (0i128, 0u64);
    let mut gains = std::collections::BTreeMap::new();
    let mut by_class: std::collections::BTreeMap<(u8, Option<u8>), crate::Ev> = Default::default();
    for x in &unseen {
        let mut known = v.seen.to_vec();
        known.push(*x);
        let e = *by_class.entry(card_class(v.seen, *x)).or_insert_with(|| {
            ev.ev(&Info {
                player: v.cards,
                removed: v.removed,
                dealer_known: &known,
            })
        });
        sum_play += e.play_sum_minor;
        sum_hands += e.hands;
        gains.insert(*x, e.gain());
    }
    let k = hidden.len() as u64;
    assert_eq!(
        sum_hands,
        k * legit.hands,
        "each dealer hand once per unseen card of it"
    );
    assert_eq!(
        sum_play,
        i128::from(k as i64) * legit.play_sum_minor,
        "the moves average to 0"
    );
    let base = legit.gain();
    let bound = gains.values().map(|g| (g - base).abs()).fold(0.0, f64::max);
    let marginal = base.abs() <= bound;
    let scores = hidden
        .iter()
        .map(|c| match marginal {
            true => score(raised, gains[c] - base, bound),
            false => 0.0,
        })
        .collect();
    let gain_ppm = hidden
        .iter()
        .map(|c| (gains[c] * 1e6).round() as i64)
        .collect();
    HoleScores {
        scores,
        cards: hidden,
        gain_ppm,
    }
}

/// The card-sharing score of `v` had it seen `neighbour`'s
/// cards: g with the view widened by the neighbour's hand instead of the dealer's.
pub fn sharing_score(ev: &mut Evaluator, v: &DecisionVerdict, neighbour: &[Card]) -> f64 {
    let shared = ev.ev(&Info {
        player: &v.cards,
        removed: neighbour,
        dealer_known: &v.dealer_seen,
    });
    let base = v.legit.gain();
    let bound = v.legit.spread();
    match base.abs() <= bound {
        true => score(v.raised, shared.gain() - base, bound),
        false => 0.0,
    }
}
