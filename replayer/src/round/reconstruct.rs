//! Reconstruction proposals (CSP6 §5.8.6, §5.9, §5.10 and their counterparts): when the
//! deck order is known, because the shuffle committed to it and `DeckRevealed` published
//! it, and the deal went wrong, this computes the hands as they should have been dealt,
//! says whether moving complete hands puts the deal right, and settles the round as it
//! would stand with the intended hands and the decisions as recorded.
//!
//! The intended deal keeps the places the dealer dealt to, in the order dealt (§3.10 /
//! §3.11 order problems are their own findings), puts a burnt card first where the rules
//! require one, and gives each place the next card of the deck order. It is a proposal:
//! §5.9 leaves to the House whether the cards can be reconstructed, so nothing here
//! changes the round's verdict or its settlement.

use super::{burns, RoundState, Tk};
use schemas::chain::deck_commitment;
use schemas::report::{HandMove, IntendedHand, Reconstruction};
use schemas::settle::{RoundInput, Settlement};
use schemas::{Card, CardTarget, RuleSet, Seq, TableConfig};
use std::collections::{BTreeMap, BTreeSet};

/// Cards by place of the deal.
type Hands = BTreeMap<Tk, Vec<Card>>;

impl RoundState {
    /// The proposal for this round, if the deck order is known and trusted and the deal
    /// differs from it. `input` is the settlement input built from the deal as recorded.
    pub(super) fn reconstruction(
        &self,
        config: &TableConfig,
        input: &RoundInput,
    ) -> Option<Reconstruction> {
        let (reveal_seq, order) = self.trusted_order()?;
        let needs_burn = burns(config.rule_set, config.dealing);
        let (intended, actual) = self.intended_hands(order, needs_burn)?;
        let (moves, by_moving) = hand_moves(&intended, &actual);
        let seen = self.players_seen;
        let burn_missing = needs_burn && !self.deal.iter().any(|d| d.to == CardTarget::Burn);
        let (clause, proposal) = proposal(config.rule_set, by_moving, burn_missing, seen);
        let settlement = intended_settlement(input, &intended);
        Some(Reconstruction {
            clause,
            deck_seq: reveal_seq,
            intended: intended
                .iter()
                .map(|(t, cards)| IntendedHand {
                    place: place(*t),
                    cards: cards.clone(),
                })
                .collect(),
            moves,
            by_moving_complete_hands: by_moving,
            players_had_seen: seen,
            proposal,
            settlement,
        })
    }

    /// The revealed deck order and its seq, if a matching commitment makes it trusted and
    /// it is one whole deck.
    fn trusted_order(&self) -> Option<(Seq, &[Card])> {
        let (reveal_seq, order, salt) = self.reveal.as_ref()?;
        // Only a committed order can be trusted: an order revealed without a matching
        // commitment could have been written after the fact.
        let (_, Some(commitment)) = self.shuffle? else {
            return None;
        };
        if deck_commitment(salt, order) != commitment {
            return None;
        }
        // A short, long or duplicated deck voids the round (§5.8.1, §5.8.4): nothing to
        // reconstruct from.
        let distinct: BTreeSet<Card> = order.iter().copied().collect();
        if order.len() != 52 || distinct.len() != 52 {
            return None;
        }
        Some((*reveal_seq, order))
    }

    /// The intended and the actual hands per place, if they differ and the deck holds
    /// enough cards.
    fn intended_hands(&self, order: &[Card], needs_burn: bool) -> Option<(Hands, Hands)> {
        let dealt: Vec<(CardTarget, Card)> = self.deal.iter().map(|d| (d.to, d.card)).collect();
        let mut places: Vec<CardTarget> = Vec::with_capacity(dealt.len() + 1);
        if needs_burn {
            places.push(CardTarget::Burn);
        }
        places.extend(
            dealt
                .iter()
                .map(|(t, _)| *t)
                .filter(|t| *t != CardTarget::Burn),
        );
        if places.len() > order.len() {
            // More cards than the deck holds is its own (void) finding.
            return None;
        }
        let mut intended: Hands = BTreeMap::new();
        for (t, c) in places.iter().zip(order) {
            intended.entry(Tk::of(*t)).or_default().push(*c);
        }
        let mut actual: Hands = BTreeMap::new();
        for (t, c) in &dealt {
            actual.entry(Tk::of(*t)).or_default().push(*c);
        }
        (intended != actual).then_some((intended, actual))
    }
}

/// The moves of complete hands that put the deal right, and whether they do.
fn hand_moves(intended: &Hands, actual: &Hands) -> (Vec<HandMove>, bool) {
    let as_set = |v: &Vec<Card>| v.iter().copied().collect::<BTreeSet<Card>>();
    let hand_places: Vec<Tk> = actual.keys().copied().filter(|t| t.0 != 0).collect();
    let mut moves = Vec::new();
    let mut by_moving = true;
    for t in &hand_places {
        let have = as_set(&actual[t]);
        if intended.get(t).map(as_set).as_ref() == Some(&have) {
            continue;
        }
        match hand_places
            .iter()
            .find(|u| *u != t && intended.get(u).map(as_set).as_ref() == Some(&have))
        {
            Some(u) => moves.push(HandMove {
                from: place(*t),
                to: place(*u),
            }),
            None => by_moving = false,
        }
    }
    by_moving = by_moving && !moves.is_empty();
    (moves, by_moving)
}

/// The clause and the proposal's words: moving hands (§5.8.6), burnt card (§5.9), or
/// reconstruction (§5.10).
fn proposal(rs: RuleSet, by_moving: bool, burn_missing: bool, seen: bool) -> (String, String) {
    if by_moving {
        (
            format!("{rs} §5.8.6"),
            if seen {
                "the deal is put right by moving complete hands; players had seen their cards, so each affected player has the §5.10 options (continue, continue with the reconstructed hand, or bets returned)".to_string()
            } else {
                "the deal is put right by moving complete hands (§5.8.6): the round need not be void".to_string()
            },
        )
    } else if burn_missing {
        (
            format!("{rs} §5.9"),
            if seen {
                "the burnt card was not discarded and players had seen their cards: the round is void (§5.9); the intended hands are shown for the record".to_string()
            } else {
                "the burnt card was not discarded: the deck order allows the round to be reconstructed with these hands, at the House's discretion, with the §5.10 options for every player (§5.9)".to_string()
            },
        )
    } else {
        (
            format!("{rs} §5.10"),
            "the cards dealt differ from the committed deck order in ways that moving complete hands cannot put right; the intended hands are what §5.10.2 reconstruction would give".to_string(),
        )
    }
}

/// The settlement with the intended hands: same bets and decisions, not void.
fn intended_settlement(input: &RoundInput, intended: &Hands) -> Option<Settlement> {
    let mut alt = input.clone();
    alt.void = false;
    alt.dealer = intended
        .get(&Tk::of(CardTarget::Dealer))
        .cloned()
        .unwrap_or_default();
    if alt.dealer_up.is_some() {
        alt.dealer_up = alt.dealer.first().copied();
    }
    for b in &mut alt.boxes {
        if let Some(cards) = intended.get(&Tk::of(CardTarget::Box(b.box_no))) {
            b.cards = cards.clone();
        }
    }
    rules::settle(&alt).ok()
}

/// "burn", "box 3", "dealer": how a place of the deal is named in a proposal.
fn place(t: Tk) -> String {
    match t.0 {
        0 => "burn".to_string(),
        1 => format!("box {}", t.1),
        _ => "dealer".to_string(),
    }
}
