//! Which finding each fault the simulator injects must raise: the link between the
//! simulator, the replayer and the tests that join them ("every injected fault is found
//! with the right code").
//!
//! The codes themselves are the canonical ones of `schemas::findings` (one table for the
//! whole project, `<RULESET>-<clause>-<kebab-description>`, stored and audited for ever);
//! this module only says which `FindingKind` each `FaultKind` is, and for which rule sets
//! the simulator injects it:
//!
//! | fault | finding kind | rule sets |
//! |---|---|---|
//! | wrong payout (a `PaidOut` differs from the rules) | `PayoutDiffers` | all five |
//! | bet placed/increased after "No more Bets" | `BetAfterNoMoreBets` | all five |
//! | burnt card missing (manual shoe only) | `BurnCardMissing` | CSP6, MLP3, TCP3 |
//! | the same card dealt twice | `DuplicateCard` | all five |
//! | one box card exposed, players had seen their cards | `CardExposed` | CSP6, MLP3, TCP3 |
//! | two box cards exposed (the round is void) | `TwoCardsExposedVoid` | SSP4 |
//! | wrong number of cards to a box | `PlayerCardCount` | all five |
//! | two boxes' hands swapped vs the committed deck (shuffler) | `HandsSwapped` | CSP6, MLP3, SSP4, TCP3 |
//! | round never closed | `RoundNeverClosed` | all five |
//!
//! SSP4 and CS51 have no burnt card; CS51 shows the player's cards face up and deals from
//! an RNG without a deck commitment, so no exposed cards or swapped hands there.
//!
//! A wrong payout is reported by the replayer as a `Dispute` for the box and line; the
//! code is for a finding the replayer may add beside it and for audit summaries.
//!
//! What else the replayer will see in a faulty round (so it can tell consequences from
//! extra faults):
//! - duplicate card, and SSP4's two exposed cards: the pit voids the round (a
//!   `StaffDecision::VoidRound` citing the clause, then `Announced::Void`); no decisions,
//!   no reveal, every `PaidOut` is 0 (§5.22);
//! - wrong card count: the box makes no decision and its hand is settled as invalidated
//!   (bets returned, §5.15);
//! - swapped hands: unnoticed at the table, settled on the hands as dealt;
//! - in shuffler mode, a duplicate card or a short box also makes the deal differ from the
//!   committed deck order from that card on;
//! - a late bet is ignored by the settlement (bets stand as at "No more Bets", §5.21).
//!
//! Finance errors raise no finding; a finance report shows them as variances of a shift
//! (`FinanceVariance`):
//!
//! | error | variance | links to |
//! |---|---|---|
//! | fill without its slip | inventory, + the fill | the round during or before it |
//! | miscounted closer | inventory, ± the chips miscounted | the `ClosingInventory` |
//! | short drop | drop, − the cash missing | the drop box (`<table>/<shift index>`) |
//! | wrong payout (over or under) | recorded − rules win | the round and its `PaidOut` |
//! | jackpot hit (forced or dealt) | none: jackpot paid | the round and its `JackpotHit` |

pub use crate::shift::ShiftSpan;
use schemas::findings::{lookup, FindingKind};
use schemas::{Money, RoundId, RuleSet, Seq, TableId};

/// The kinds of fault `FaultPlan` can inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// A `PaidOut` records the wrong amount (`InjectedFault::WrongPayout`).
    WrongPayout,
    /// A bet is placed or raised after "No more Bets" (`InjectedFault::LateBet`).
    LateBet,
    /// The manual-shoe deal starts without the burnt card.
    SkippedBurn,
    /// A card is dealt a second time in one round.
    DuplicateCard,
    /// A card is exposed during the deal.
    ExposedCard,
    /// A box receives the wrong number of cards.
    WrongCardCount,
    /// Two boxes receive each other's cards (shuffler mode).
    SwappedHands,
    /// The round has no `RoundClosed`.
    MissingRoundClose,
}

impl FaultKind {
    /// Every round fault kind.
    pub const ALL: [FaultKind; 8] = [
        FaultKind::WrongPayout,
        FaultKind::LateBet,
        FaultKind::SkippedBurn,
        FaultKind::DuplicateCard,
        FaultKind::ExposedCard,
        FaultKind::WrongCardCount,
        FaultKind::SwappedHands,
        FaultKind::MissingRoundClose,
    ];
}

/// The finding the replayer must raise for `kind` at a table of `rule_set`; `None` where
/// the simulator never injects that fault for that rule set (see the table above).
pub fn finding_kind(kind: FaultKind, rule_set: RuleSet) -> Option<FindingKind> {
    use FaultKind as K;
    use RuleSet as R;
    Some(match (kind, rule_set) {
        (K::WrongPayout, _) => FindingKind::PayoutDiffers,
        (K::LateBet, _) => FindingKind::BetAfterNoMoreBets,
        (K::SkippedBurn, R::Csp6 | R::Mlp3 | R::Tcp3) => FindingKind::BurnCardMissing,
        (K::SkippedBurn, R::Ssp4 | R::Cs51) => return None,
        (K::DuplicateCard, _) => FindingKind::DuplicateCard,
        (K::ExposedCard, R::Csp6 | R::Mlp3 | R::Tcp3) => FindingKind::CardExposed,
        (K::ExposedCard, R::Ssp4) => FindingKind::TwoCardsExposedVoid,
        (K::ExposedCard, R::Cs51) => return None,
        (K::WrongCardCount, _) => FindingKind::PlayerCardCount,
        (K::SwappedHands, R::Cs51) => return None,
        (K::SwappedHands, _) => FindingKind::HandsSwapped,
        (K::MissingRoundClose, _) => FindingKind::RoundNeverClosed,
    })
}

/// The canonical code (`schemas::findings`) the replayer must raise for `kind` at a table
/// of `rule_set`; `None` where the simulator never injects that fault for that rule set.
pub fn code(kind: FaultKind, rule_set: RuleSet) -> Option<&'static str> {
    lookup(rule_set, finding_kind(kind, rule_set)?).map(|row| row.code)
}

/// The finance errors `FaultPlan` can inject. An overpayment is a wrong payout
/// (`FaultKind::WrongPayout`) whose recorded payment exceeds the rules'.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinanceFaultKind {
    /// Chips arrive at the tray with no `Fill` event (per fill).
    MissingFillSlip,
    /// The closer's count is off by some chips of one denomination (per closing count).
    MiscountedCloser,
    /// The count room finds less cash than went into the drop box (per box).
    ShortDrop,
    /// A Progressive bet is dealt a straight flush, so the pool pays (per round; CSP6 and
    /// MLP3 tables dealing from a manual shoe).
    JackpotHit,
}

impl FinanceFaultKind {
    /// Every finance error kind.
    pub const ALL: [FinanceFaultKind; 4] = [
        FinanceFaultKind::MissingFillSlip,
        FinanceFaultKind::MiscountedCloser,
        FinanceFaultKind::ShortDrop,
        FinanceFaultKind::JackpotHit,
    ];
}

/// What a finance report must show for one injected error (or a jackpot paid).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VarianceKind {
    /// Inventory variance (counted closing − expected closing) of `+amount`: chips came
    /// without a slip; the next opening count equals the counted closing.
    MissingFillSlip,
    /// Inventory variance of `amount` (either sign); the next opening count equals the
    /// expected closing.
    MiscountedCloser,
    /// Drop variance (counted drop − recorded buy-ins and markers) of `amount` (< 0).
    ShortDrop,
    /// Recorded win − rules win of `amount` (< 0): the dealer paid more than due.
    Overpayment,
    /// Recorded win − rules win of `amount` (> 0): the dealer paid less than due.
    Underpayment,
    /// Jackpot paid `amount` by the jackpot system; no tray variance.
    JackpotPaid,
}

/// What a variance links to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "to", rename_all = "snake_case")]
pub enum FinanceLink {
    /// A round, and the event in it (a `PaidOut`, a `JackpotHit`), or the round during or
    /// before which unslipped chips arrived (`seq` then the last event before them).
    Round {
        /// The round.
        round: RoundId,
        /// The event linked to, or the last event before the unslipped chips.
        seq: Seq,
    },
    /// The closer's count (`ClosingInventory`).
    Closing {
        /// The `ClosingInventory` event.
        seq: Seq,
    },
    /// A drop box and its count result.
    DropBox {
        /// The drop box's id.
        drop_box_id: String,
    },
}

/// One injected finance error as a report must show it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FinanceVariance {
    /// The table where the error was injected.
    pub table: TableId,
    /// The shift the error falls in.
    pub shift: ShiftSpan,
    /// What the report must show.
    pub kind: VarianceKind,
    /// Signed as the `VarianceKind` says, minor units.
    pub amount: Money,
    /// What the variance links to.
    pub link: FinanceLink,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_injectable_fault_has_a_canonical_code_of_its_rule_set() {
        let mut injectable = 0;
        for kind in FaultKind::ALL {
            for rs in RuleSet::ALL {
                if let Some(fk) = finding_kind(kind, rs) {
                    injectable += 1;
                    let c = code(kind, rs).unwrap_or_else(|| {
                        panic!("{kind:?} {rs}: no row for {fk:?} in schemas::findings")
                    });
                    assert!(c.starts_with(&format!("{}-", rs.code())), "{c}");
                }
            }
        }
        // 8 kinds x 5 rule sets, minus burn (SSP4, CS51), exposed and swapped (CS51).
        assert_eq!(injectable, 40 - 4);
        assert_eq!(
            code(FaultKind::SkippedBurn, RuleSet::Csp6),
            Some("CSP6-5.9-burn-card-missing")
        );
        assert_eq!(
            code(FaultKind::LateBet, RuleSet::Ssp4),
            Some("SSP4-5.6-bet-after-no-more-bets")
        );
        assert_eq!(code(FaultKind::SkippedBurn, RuleSet::Cs51), None);
    }
}
