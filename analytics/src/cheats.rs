//! How the cheats of the simulated floors decide, for the tests and `roundledger
//! simulate`: each plays the optimal strategy on more than a player may see.

use crate::ev::{Evaluator, Info};
use schemas::{Card, Choice, RuleSet};

/// A hole-carder: sees the first dealer card dealt (a hole card) besides the up card.
/// `None` until the dealer holds a full hand.
pub fn hole_carder(ev: &mut Evaluator, cards: &[Card], dealer: &[Card]) -> Option<Choice> {
    let rs = ev.rule_set();
    if dealer.len() != rs.hand_len() || cards.len() != rs.hand_len() {
        return None;
    }
    let mut known = vec![dealer[0]];
    if rs != RuleSet::Tcp3 {
        known.push(*dealer.last()?);
    }
    let e = ev.ev(&Info {
        player: cards,
        removed: &[],
        dealer_known: &known,
    });
    Some(choice(e.raise_is_better()))
}

/// One of a card-sharing pair: sees the partner's cards besides the up card.
pub fn card_sharer(
    ev: &mut Evaluator,
    cards: &[Card],
    partner: &[Card],
    dealer: &[Card],
) -> Option<Choice> {
    let rs = ev.rule_set();
    if dealer.len() != rs.hand_len() || cards.len() != rs.hand_len() {
        return None;
    }
    let up: Vec<Card> = match rs {
        RuleSet::Tcp3 => Vec::new(),
        _ => vec![*dealer.last()?],
    };
    let e = ev.ev(&Info {
        player: cards,
        removed: partner,
        dealer_known: &up,
    });
    Some(choice(e.raise_is_better()))
}

fn choice(raise: bool) -> Choice {
    if raise {
        Choice::Play
    } else {
        Choice::Fold
    }
}
