//! Players and dealers who do not play fair, for testing the decision analytics: a hook
//! that decides a box's play from anything on the table (a hole card, a neighbour's
//! hand), and a dealer of the roster more error-prone than the rest.

use schemas::{BoxNo, Card, Choice, RuleSet};
use std::collections::BTreeMap;

/// Everything on the table when a box decides, legitimately seen or not.
#[derive(Debug, Clone, Copy)]
pub struct DecisionView<'a> {
    /// The rule set.
    pub rule_set: RuleSet,
    /// The box deciding.
    pub box_no: BoxNo,
    /// Its cards.
    pub cards: &'a [Card],
    /// The dealer's cards in deal order; the up card is the last (not in TCP3).
    pub dealer: &'a [Card],
    /// Every box's cards.
    pub hands: &'a BTreeMap<BoxNo, Vec<Card>>,
}

/// Decides a box's play. `None` leaves it to the table's own strategy.
pub trait Decider: Send + Sync {
    /// The choice of `view.box_no`, or `None`.
    fn decide(&mut self, view: &DecisionView) -> Option<Choice>;
}

/// One dealer of the table's roster who pays wrongly more often than the fault plan says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ErrorProneDealer {
    /// Which dealer of the roster (0 to `DEALER_ROSTER_LEN - 1`, in the order they take
    /// the table).
    pub roster_place: u64,
    /// Probability per round of a wrong payout while this dealer deals (0.0 to 1.0).
    pub wrong_payout: f64,
}
