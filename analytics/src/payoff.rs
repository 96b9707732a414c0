//! The main game's net of one box for each outcome kind, settled by `rules::settle` and
//! kept per (player class, dealer qualifies, order of the hands): what a raise or a fold
//! nets is a function of those three only (CSP6 §3.13-3.14, §4.1; TCP3 §3.13, §4.1, §4.3).

use rules::Hand;
use schemas::{BetKind, Card, Choice, RuleSet};
use std::cmp::Ordering;

/// The Ante every net here is relative to, minor units.
pub const UNIT_MINOR: i64 = 100;

use rules::edge::MAIN_LINES;

/// Classes a hand can have: `HandClass` has ten variants.
const CLASSES: usize = 10;

/// Nets of the main game per outcome kind, filled from `rules::settle` on first use.
#[derive(Debug, Clone)]
pub struct Payoffs {
    rule_set: RuleSet,
    fold_minor: Option<i64>,
    /// [class][qualifies][order]: the net of a raise, minor units on `UNIT_MINOR`.
    play_minor: [[[Option<i64>; 3]; 2]; CLASSES],
}

fn order_index(o: Ordering) -> usize {
    match o {
        Ordering::Less => 0,
        Ordering::Equal => 1,
        Ordering::Greater => 2,
    }
}

impl Payoffs {
    /// Empty nets for `rule_set`'s seed pay tables.
    pub fn new(rule_set: RuleSet) -> Payoffs {
        Payoffs {
            rule_set,
            fold_minor: None,
            play_minor: [[[None; 3]; 2]; CLASSES],
        }
    }

    /// The net of a raise with `player` (value `ph`) against `dealer` (value `dh`, and
    /// whether it qualifies), minor units per `UNIT_MINOR` of Ante.
    pub fn play(&mut self, player: &[Card], ph: Hand, dealer: &[Card], dh: Hand, q: bool) -> i64 {
        let slot =
            &mut self.play_minor[ph.class() as usize][usize::from(q)][order_index(ph.cmp(&dh))];
        if let Some(net) = *slot {
            return net;
        }
        let net = settle_main(self.rule_set, player, dealer, Choice::Play);
        *slot = Some(net);
        net
    }

    /// The net of a fold: the Ante is lost (CSP6 §3.12.1, TCP3 §3.12.1).
    pub fn fold(&mut self, player: &[Card]) -> i64 {
        if let Some(net) = self.fold_minor {
            return net;
        }
        let len = self.rule_set.hand_len();
        let dealer: Vec<Card> = Card::deck()
            .filter(|c| !player.contains(c))
            .take(len)
            .collect();
        let net = settle_main(self.rule_set, player, &dealer, Choice::Fold);
        self.fold_minor = Some(net);
        net
    }
}

/// The main game's net of a one-box round with `decision`, through `rules::settle`.
pub fn settle_main(rs: RuleSet, player: &[Card], dealer: &[Card], decision: Choice) -> i64 {
    let table = rules::rule_table(rs);
    let mut bets = vec![(BetKind::Ante, UNIT_MINOR)];
    if decision == Choice::Play {
        bets.push((table.main_kind, UNIT_MINOR * table.main_multiple));
    }
    let input = rules::edge::one_box_round(rs, None, dealer, player, Some(decision), &bets);
    rules::edge::box_net(&input, &MAIN_LINES)
}
