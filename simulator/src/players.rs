//! Players and dealers who do not play fair, for testing the decision analytics: a hook
//! that decides a box's play from anything on the table (a hole card, a neighbour's
//! hand), a dealer of the roster more error-prone than the rest, and a shift whose
//! dealer settles every line off the pay table (a rigged hold).

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

/// One shift of a table whose dealer settles every line `pct` percent of its due amount
/// in the players' favour: winning bets paid more, losing bets collected short. A
/// negative `pct` favours the house. Each line off the pay table is a payout error the
/// replayer finds, and the shift's recorded win leaves its theoretical interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HoldSkew {
    /// Which shift of the table, counting the shifts it opens from 1.
    pub shift_no: u64,
    /// Percent of each line's due amount moved to the players (-100 to 100, not 0).
    pub pct: i64,
}

impl HoldSkew {
    /// Most a skew moves, in percent of a line's due amount either way.
    pub const PCT_MAX: i64 = 100;

    /// What the dealer records for a line whose rules net (player's side) is `due_minor`:
    /// `pct` percent of its size more, rounded toward zero to whole smallest chips.
    pub fn recorded_minor(&self, due_minor: i64) -> i64 {
        assert!(
            self.pct != 0 && self.pct.abs() <= Self::PCT_MAX,
            "a skew's size"
        );
        let chip = crate::tray::DENOMINATIONS[0];
        let delta = i128::from(due_minor).abs() * i128::from(self.pct) / 100;
        let delta = i64::try_from(delta / i128::from(chip)).unwrap_or(0) * chip;
        let out = due_minor.saturating_add(delta);
        assert_eq!((out - due_minor) % chip, 0, "a whole number of chips");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skew_moves_each_line_toward_the_players_in_whole_chips() {
        let up = HoldSkew {
            shift_no: 2,
            pct: 50,
        };
        assert_eq!(up.recorded_minor(3_000), 4_500, "a win paid more");
        assert_eq!(up.recorded_minor(-2_000), -1_000, "a loss collected short");
        assert_eq!(up.recorded_minor(0), 0, "a push stays a push");
        assert_eq!(up.recorded_minor(-250), -150, "whole chips, toward zero");
        let down = HoldSkew {
            shift_no: 2,
            pct: -100,
        };
        assert_eq!(down.recorded_minor(3_000), 0, "a win not paid");
        assert_eq!(down.recorded_minor(-2_000), -4_000);
    }
}
