//! The canonical finding codes: what the replayer can find wrong in a round, and for each
//! rule set the clause it breaks and the stable code string that cites it.
//!
//! A code is `<RULESET>-<clause>-<kebab-description>`, e.g. `CSP6-5.9-burn-card-missing`. Codes
//! are stored and audited for years (docs/STYLE.md, stable codes are ours), so they are written
//! out literally in `TABLE` below, never assembled from Rust names: renaming a variant never
//! changes a code. A test checks every row's format and that no code is used twice.
//!
//! Clause numbers differ per rule set. Where a rule set is silent on a kind, the row cites
//! the closest clause of that rule set or the RULES-NOTES point the project reads it by
//! (`RN<n>`, human form "RULES-NOTES n"). CS51 (the online game) has no numbered clauses:
//! its rows cite the n-th bullet of its "How To Play" list as `HTP<n>` (human form
//! "CS51 How To Play ¶n"). Every such choice is listed in the row's `note`.
//!
//! A kind with no row for a rule set does not apply to it (SSP4 and CS51 have no burnt
//! card; CS51 has no progressive jackpot and no second hand to examine), and the replayer
//! never reports it there.

use crate::config::RuleSet;
use crate::report::Severity;
use serde::{Deserialize, Serialize};

/// What can be wrong in a round (or in a pool), independent of the rule set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// A bet placed or changed after "No more Bets" (CSP6 §5.11, SSP4 §5.6).
    BetAfterNoMoreBets,
    /// A bet withdrawn after "No more Bets" (CSP6 §5.11, SSP4 §5.7).
    BetWithdrawnAfterNoMoreBets,
    /// BET / Play not the required multiple of the Ante (CSP6 §5.3, TCP3 §5.3).
    BetNotRequiredMultiple,
    /// A bet over the table maximum (CSP6 §5.1).
    OverMaximum,
    /// A bet under the table minimum (CSP6 §5.2).
    UnderMinimum,
    /// A jackpot (or CS51 5+1 Bonus) bet without an Ante (CSP6 §5.4).
    JackpotBetWithoutAnte,
    /// Manual shoe: no burnt card before the deal (CSP6 §5.9).
    BurnCardMissing,
    /// The 5.9 reconstruction decision of the House is not recorded.
    ReconstructionRulingMissing,
    /// Manual shoe: not one card at a time clockwise, dealer last (CSP6 §3.10).
    DealOrderShoe,
    /// Shuffler: not one set per box clockwise, dealer's set last (CSP6 §3.11).
    DealOrderShuffler,
    /// Wrong number of cards in the dealer's hand (CSP6 §5.8.7).
    DealerCardCount,
    /// Wrong number of cards in a player's hand (CSP6 §5.15).
    PlayerCardCount,
    /// The same card dealt twice in one round (CSP6 §5.8.1: the copy is not of the set).
    DuplicateCard,
    /// The revealed deck is not the 52 cards once each (CSP6 §5.8.3).
    DeckShortageOrExcess,
    /// A card dealt that is not in the revealed deck (CSP6 §5.8.1).
    ForeignCard,
    /// More cards dealt than the deck holds (CSP6 §5.8.4).
    DeckExhausted,
    /// One card exposed during the deal, or any after players saw their cards (CSP6 §5.12).
    CardExposed,
    /// Two or more cards exposed during the deal before any player saw their cards: void
    /// (CSP6 §5.8.2; SSP4 §5.4 voids on two whatever was seen).
    TwoCardsExposedVoid,
    /// One of the dealer's cards exposed while dealt: it becomes the face-up card (CSP6 §5.16).
    DealerCardExposed,
    /// No shuffle before the round (CSP6 §5.8.5).
    NoShuffle,
    /// The revealed deck order and salt do not match the shuffle's commitment.
    ShuffleCommitmentMismatch,
    /// The cards dealt are not the revealed deck order (CSP6 §5.8.6).
    DealDiffersFromDeckOrder,
    /// Complete hands went to the wrong boxes compared with the revealed deck order: the
    /// deal can be reconstructed by moving complete hands (CSP6 §5.8.6).
    HandsSwapped,
    /// A shuffle committed to a deck order that was never revealed.
    ShuffleCommitmentNotRevealed,
    /// The jackpot system failed before any player saw their cards: void (CSP6 §5.17).
    JackpotFaultBeforeCardsSeen,
    /// The jackpot system failed after players saw their cards: play on (CSP6 §5.18).
    JackpotFaultAfterCardsSeen,
    /// A player examined more than one hand (CSP6 §5.19).
    ExtraHandExamined,
    /// The 5.19 ruling on whether the examination was intentional is not recorded.
    ExaminationRulingMissing,
    /// Technical interruption after an outcome was established: play on (CSP6 §5.7.1).
    TechnicalInterruptionOutcomeEstablished,
    /// Technical interruption before any outcome: void (CSP6 §5.7.2).
    TechnicalInterruptionVoid,
    /// A box with an Ante has no decision recorded: settled as a Fold (CSP6 §5.5).
    DecisionMissing,
    /// The round was declared void by staff or by the dealer's announcement (CSP6 §5.22).
    RoundVoid,
    /// The round never closed (CSP6 §1.16: the round ends when all are settled).
    RoundNeverClosed,
    /// An event of the round arrived after it closed.
    EventAfterRoundClosed,
    /// The rules engine could not settle the round from what the events say.
    SettlementImpossible,
    /// The dealer's recorded payout differs from the recomputed settlement (a dispute).
    PayoutDiffers,
    /// The jackpot controller showed a value that differs from the recomputed pool (RN7).
    JackpotShownDiffers,
    /// The dealer's face-up card is not the last card dealt to the dealer (CSP6 §3.10,
    /// SSP4 §3.7), and no card of the dealer's was exposed (§5.16 makes that one face up).
    DealerUpCardNotLast,
}

impl FindingKind {
    /// Every kind, in declaration order.
    pub const ALL: [FindingKind; 38] = [
        FindingKind::BetAfterNoMoreBets,
        FindingKind::BetWithdrawnAfterNoMoreBets,
        FindingKind::BetNotRequiredMultiple,
        FindingKind::OverMaximum,
        FindingKind::UnderMinimum,
        FindingKind::JackpotBetWithoutAnte,
        FindingKind::BurnCardMissing,
        FindingKind::ReconstructionRulingMissing,
        FindingKind::DealOrderShoe,
        FindingKind::DealOrderShuffler,
        FindingKind::DealerCardCount,
        FindingKind::PlayerCardCount,
        FindingKind::DuplicateCard,
        FindingKind::DeckShortageOrExcess,
        FindingKind::ForeignCard,
        FindingKind::DeckExhausted,
        FindingKind::CardExposed,
        FindingKind::TwoCardsExposedVoid,
        FindingKind::DealerCardExposed,
        FindingKind::NoShuffle,
        FindingKind::ShuffleCommitmentMismatch,
        FindingKind::DealDiffersFromDeckOrder,
        FindingKind::HandsSwapped,
        FindingKind::ShuffleCommitmentNotRevealed,
        FindingKind::JackpotFaultBeforeCardsSeen,
        FindingKind::JackpotFaultAfterCardsSeen,
        FindingKind::ExtraHandExamined,
        FindingKind::ExaminationRulingMissing,
        FindingKind::TechnicalInterruptionOutcomeEstablished,
        FindingKind::TechnicalInterruptionVoid,
        FindingKind::DecisionMissing,
        FindingKind::RoundVoid,
        FindingKind::RoundNeverClosed,
        FindingKind::EventAfterRoundClosed,
        FindingKind::SettlementImpossible,
        FindingKind::PayoutDiffers,
        FindingKind::JackpotShownDiffers,
        FindingKind::DealerUpCardNotLast,
    ];

    /// How serious the kind is: Critical when money or the record is wrong or the round is
    /// void, Warning when a rule was broken but the round stands, Info otherwise.
    pub fn severity(self) -> Severity {
        use FindingKind::*;
        match self {
            BurnCardMissing
            | DealerCardCount
            | DuplicateCard
            | DeckShortageOrExcess
            | ForeignCard
            | DeckExhausted
            | TwoCardsExposedVoid
            | NoShuffle
            | ShuffleCommitmentMismatch
            | DealDiffersFromDeckOrder
            | HandsSwapped
            | JackpotFaultBeforeCardsSeen
            | TechnicalInterruptionVoid
            | SettlementImpossible
            | PayoutDiffers
            | JackpotShownDiffers => Severity::Critical,
            BetAfterNoMoreBets
            | BetWithdrawnAfterNoMoreBets
            | BetNotRequiredMultiple
            | OverMaximum
            | UnderMinimum
            | JackpotBetWithoutAnte
            | ReconstructionRulingMissing
            | DealOrderShoe
            | DealOrderShuffler
            | PlayerCardCount
            | CardExposed
            | JackpotFaultAfterCardsSeen
            | ExtraHandExamined
            | ExaminationRulingMissing
            | RoundVoid
            | RoundNeverClosed
            | EventAfterRoundClosed
            | DealerUpCardNotLast => Severity::Warning,
            DealerCardExposed
            | ShuffleCommitmentNotRevealed
            | TechnicalInterruptionOutcomeEstablished
            | DecisionMissing => Severity::Info,
        }
    }
}

/// One row of the table: a kind's clause and code under one rule set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FindingCode {
    /// The rule set the row belongs to.
    pub rule_set: RuleSet,
    /// The finding kind it codes.
    pub kind: FindingKind,
    /// The clause as it appears in the code: "5.9", "5.8.2", "RN24", "HTP4".
    pub clause: &'static str,
    /// The stable code: "CSP6-5.9-burn-card-missing".
    pub code: &'static str,
    /// Why this clause, where the rule set is silent or numbered differently; "" otherwise.
    pub note: &'static str,
}

impl FindingCode {
    /// The clause in human form: "CSP6 §5.9", "RULES-NOTES 24", "CS51 How To Play ¶4".
    pub fn clause_text(&self) -> String {
        if let Some(n) = self.clause.strip_prefix("RN") {
            format!("RULES-NOTES {n}")
        } else if let Some(n) = self.clause.strip_prefix("HTP") {
            format!("{} How To Play ¶{n}", self.rule_set.code())
        } else {
            format!("{} §{}", self.rule_set.code(), self.clause)
        }
    }
}

/// The row for a kind under a rule set; `None` where the kind does not apply there.
pub fn lookup(rule_set: RuleSet, kind: FindingKind) -> Option<&'static FindingCode> {
    TABLE
        .iter()
        .find(|r| r.rule_set == rule_set && r.kind == kind)
}

/// The row with this code, for readers of stored reports.
pub fn by_code(code: &str) -> Option<&'static FindingCode> {
    TABLE.iter().find(|r| r.code == code)
}

macro_rules! rows {
    ($( $rs:ident $kind:ident $clause:literal $code:literal $note:literal ;)*) => {
        &[ $( FindingCode {
            rule_set: RuleSet::$rs,
            kind: FindingKind::$kind,
            clause: $clause,
            code: $code,
            note: $note,
        }, )* ]
    };
}

/// Every (rule set, kind) -> clause and code. Append rows; never edit a published code.
pub const TABLE: &[FindingCode] = rows! {
    // ---- CSP6: Casino Stud Poker (RWS) v6 -------------------------------------------
    Csp6 BetAfterNoMoreBets "5.11" "CSP6-5.11-bet-after-no-more-bets" "";
    Csp6 BetWithdrawnAfterNoMoreBets "5.11" "CSP6-5.11-bet-withdrawn-after-no-more-bets" "";
    Csp6 BetNotRequiredMultiple "5.3" "CSP6-5.3-bet-not-required-multiple" "";
    Csp6 OverMaximum "5.1" "CSP6-5.1-over-maximum" "";
    Csp6 UnderMinimum "5.2" "CSP6-5.2-under-minimum" "";
    Csp6 JackpotBetWithoutAnte "5.4" "CSP6-5.4-jackpot-bet-without-ante" "";
    Csp6 BurnCardMissing "5.9" "CSP6-5.9-burn-card-missing" "";
    Csp6 ReconstructionRulingMissing "5.9" "CSP6-5.9-reconstruction-ruling-missing" "5.9 leaves reconstruction to the House; RN24";
    Csp6 DealOrderShoe "3.10" "CSP6-3.10-deal-order-wrong" "";
    Csp6 DealOrderShuffler "3.11" "CSP6-3.11-deal-order-wrong" "";
    Csp6 DealerCardCount "5.8.7" "CSP6-5.8.7-dealer-card-count-wrong" "";
    Csp6 PlayerCardCount "5.15" "CSP6-5.15-player-card-count-wrong" "";
    Csp6 DuplicateCard "5.8.1" "CSP6-5.8.1-duplicate-card" "the second copy is a card not of the set";
    Csp6 DeckShortageOrExcess "5.8.3" "CSP6-5.8.3-deck-shortage-or-excess" "";
    Csp6 ForeignCard "5.8.1" "CSP6-5.8.1-foreign-card" "";
    Csp6 DeckExhausted "5.8.4" "CSP6-5.8.4-deck-exhausted" "";
    Csp6 CardExposed "5.12" "CSP6-5.12-card-exposed" "one card before players saw theirs is a 5.10 dealing error; cited as 5.12";
    Csp6 TwoCardsExposedVoid "5.8.2" "CSP6-5.8.2-two-cards-exposed-void" "";
    Csp6 DealerCardExposed "5.16" "CSP6-5.16-dealer-card-exposed" "";
    Csp6 NoShuffle "5.8.5" "CSP6-5.8.5-no-shuffle" "";
    Csp6 ShuffleCommitmentMismatch "5.8.5" "CSP6-5.8.5-shuffle-commitment-mismatch" "the committed shuffle is not the deck used: cited as not shuffled";
    Csp6 DealDiffersFromDeckOrder "5.8.6" "CSP6-5.8.6-deal-differs-from-deck-order" "";
    Csp6 HandsSwapped "5.8.6" "CSP6-5.8.6-hands-swapped" "reconstructable by moving complete hands";
    Csp6 ShuffleCommitmentNotRevealed "5.8.5" "CSP6-5.8.5-shuffle-commitment-not-revealed" "the shuffle cannot be checked";
    Csp6 JackpotFaultBeforeCardsSeen "5.17" "CSP6-5.17-jackpot-fault-before-cards-seen" "";
    Csp6 JackpotFaultAfterCardsSeen "5.18" "CSP6-5.18-jackpot-fault-after-cards-seen" "";
    Csp6 ExtraHandExamined "5.19" "CSP6-5.19-extra-hand-examined" "";
    Csp6 ExaminationRulingMissing "5.19" "CSP6-5.19-examination-ruling-missing" "RN24";
    Csp6 TechnicalInterruptionOutcomeEstablished "5.7.1" "CSP6-5.7.1-technical-interruption-outcome-established" "";
    Csp6 TechnicalInterruptionVoid "5.7.2" "CSP6-5.7.2-technical-interruption-void" "";
    Csp6 DecisionMissing "5.5" "CSP6-5.5-decision-missing" "no decision is read as walking away: a Fold (RN23)";
    Csp6 RoundVoid "5.22" "CSP6-5.22-round-void" "";
    Csp6 RoundNeverClosed "1.16" "CSP6-1.16-round-never-closed" "";
    Csp6 EventAfterRoundClosed "1.16" "CSP6-1.16-event-after-round-closed" "";
    Csp6 SettlementImpossible "5.24" "CSP6-5.24-settlement-impossible" "a case the rules do not resolve";
    Csp6 PayoutDiffers "4.1" "CSP6-4.1-payout-differs" "";
    Csp6 JackpotShownDiffers "RN7" "CSP6-RN7-jackpot-shown-differs" "";
    // ---- MLP3: Multi-Link Progressive Casino Stud Poker (RWS) v3: numbered as CSP6 ------
    Mlp3 BetAfterNoMoreBets "5.11" "MLP3-5.11-bet-after-no-more-bets" "";
    Mlp3 BetWithdrawnAfterNoMoreBets "5.11" "MLP3-5.11-bet-withdrawn-after-no-more-bets" "";
    Mlp3 BetNotRequiredMultiple "5.3" "MLP3-5.3-bet-not-required-multiple" "";
    Mlp3 OverMaximum "5.1" "MLP3-5.1-over-maximum" "";
    Mlp3 UnderMinimum "5.2" "MLP3-5.2-under-minimum" "";
    Mlp3 JackpotBetWithoutAnte "5.4" "MLP3-5.4-jackpot-bet-without-ante" "";
    Mlp3 BurnCardMissing "5.9" "MLP3-5.9-burn-card-missing" "";
    Mlp3 ReconstructionRulingMissing "5.9" "MLP3-5.9-reconstruction-ruling-missing" "RN24";
    Mlp3 DealOrderShoe "3.10" "MLP3-3.10-deal-order-wrong" "";
    Mlp3 DealOrderShuffler "3.11" "MLP3-3.11-deal-order-wrong" "";
    Mlp3 DealerCardCount "5.8.7" "MLP3-5.8.7-dealer-card-count-wrong" "";
    Mlp3 PlayerCardCount "5.15" "MLP3-5.15-player-card-count-wrong" "";
    Mlp3 DuplicateCard "5.8.1" "MLP3-5.8.1-duplicate-card" "the second copy is a card not of the set";
    Mlp3 DeckShortageOrExcess "5.8.3" "MLP3-5.8.3-deck-shortage-or-excess" "";
    Mlp3 ForeignCard "5.8.1" "MLP3-5.8.1-foreign-card" "";
    Mlp3 DeckExhausted "5.8.4" "MLP3-5.8.4-deck-exhausted" "";
    Mlp3 CardExposed "5.12" "MLP3-5.12-card-exposed" "MLP3 5.12 covers both seen and not seen";
    Mlp3 TwoCardsExposedVoid "5.8.2" "MLP3-5.8.2-two-cards-exposed-void" "";
    Mlp3 DealerCardExposed "5.16" "MLP3-5.16-dealer-card-exposed" "";
    Mlp3 NoShuffle "5.8.5" "MLP3-5.8.5-no-shuffle" "";
    Mlp3 ShuffleCommitmentMismatch "5.8.5" "MLP3-5.8.5-shuffle-commitment-mismatch" "as CSP6";
    Mlp3 DealDiffersFromDeckOrder "5.8.6" "MLP3-5.8.6-deal-differs-from-deck-order" "";
    Mlp3 HandsSwapped "5.8.6" "MLP3-5.8.6-hands-swapped" "reconstructable by moving complete hands";
    Mlp3 ShuffleCommitmentNotRevealed "5.8.5" "MLP3-5.8.5-shuffle-commitment-not-revealed" "as CSP6";
    Mlp3 JackpotFaultBeforeCardsSeen "5.17" "MLP3-5.17-jackpot-fault-before-cards-seen" "";
    Mlp3 JackpotFaultAfterCardsSeen "5.18" "MLP3-5.18-jackpot-fault-after-cards-seen" "";
    Mlp3 ExtraHandExamined "5.19" "MLP3-5.19-extra-hand-examined" "";
    Mlp3 ExaminationRulingMissing "5.19" "MLP3-5.19-examination-ruling-missing" "RN24";
    Mlp3 TechnicalInterruptionOutcomeEstablished "5.7.1" "MLP3-5.7.1-technical-interruption-outcome-established" "";
    Mlp3 TechnicalInterruptionVoid "5.7.2" "MLP3-5.7.2-technical-interruption-void" "";
    Mlp3 DecisionMissing "5.5" "MLP3-5.5-decision-missing" "RN23";
    Mlp3 RoundVoid "5.22" "MLP3-5.22-round-void" "";
    Mlp3 RoundNeverClosed "1.16" "MLP3-1.16-round-never-closed" "";
    Mlp3 EventAfterRoundClosed "1.16" "MLP3-1.16-event-after-round-closed" "";
    Mlp3 SettlementImpossible "5.24" "MLP3-5.24-settlement-impossible" "";
    Mlp3 PayoutDiffers "4.1" "MLP3-4.1-payout-differs" "";
    Mlp3 JackpotShownDiffers "4.5.2" "MLP3-4.5.2-jackpot-shown-differs" "winners are paid the displayed value, in the House's order; RN7, RN9";
    // ---- SSP4: Singapore Stud Poker (MBS) v4: section 5 is short (5.1-5.7) -----------
    Ssp4 BetAfterNoMoreBets "5.6" "SSP4-5.6-bet-after-no-more-bets" "";
    Ssp4 BetWithdrawnAfterNoMoreBets "5.7" "SSP4-5.7-bet-withdrawn-after-no-more-bets" "the withdrawn wager is won or lost on the result";
    Ssp4 BetNotRequiredMultiple "1.1.2" "SSP4-1.1.2-bet-not-required-multiple" "silent on a wrong Bet; 1.1.2 defines it as twice the Ante; settled per RN20";
    Ssp4 OverMaximum "RN21" "SSP4-RN21-over-maximum" "SSP4 is silent on limits";
    Ssp4 UnderMinimum "RN21" "SSP4-RN21-under-minimum" "SSP4 is silent on limits";
    Ssp4 JackpotBetWithoutAnte "3.5" "SSP4-3.5-jackpot-bet-without-ante" "3.5: a jackpot wager only after an Ante";
    Ssp4 DealOrderShoe "3.6" "SSP4-3.6-deal-order-wrong" "3.6 for every dealing mode";
    Ssp4 DealOrderShuffler "3.6" "SSP4-3.6-deal-order-wrong-shuffler" "3.6 for every dealing mode";
    Ssp4 DealerCardCount "5.3" "SSP4-5.3-dealer-card-count-wrong" "";
    Ssp4 PlayerCardCount "5.2" "SSP4-5.2-player-card-count-wrong" "silent on a player's count; 5.2 dealt incorrectly";
    Ssp4 DuplicateCard "5.1" "SSP4-5.1-duplicate-card" "the second copy is a foreign card";
    Ssp4 DeckShortageOrExcess "5.5" "SSP4-5.5-deck-shortage-or-excess" "";
    Ssp4 ForeignCard "5.1" "SSP4-5.1-foreign-card" "";
    Ssp4 DeckExhausted "5.5" "SSP4-5.5-deck-exhausted" "silent; closest is shortage of cards";
    Ssp4 CardExposed "5.4" "SSP4-5.4-card-exposed" "5.4 voids on two; one exposed card lets the round stand";
    Ssp4 TwoCardsExposedVoid "5.4" "SSP4-5.4-two-cards-exposed-void" "void whether or not players saw their cards";
    Ssp4 DealerCardExposed "5.4" "SSP4-5.4-dealer-card-exposed" "silent; one card, 5.4 read as for CardExposed";
    Ssp4 NoShuffle "2.1" "SSP4-2.1-no-shuffle" "silent; 2.1 one deck of 52 cards";
    Ssp4 ShuffleCommitmentMismatch "5.2" "SSP4-5.2-shuffle-commitment-mismatch" "silent; 5.2 dealt incorrectly";
    Ssp4 DealDiffersFromDeckOrder "5.2" "SSP4-5.2-deal-differs-from-deck-order" "";
    Ssp4 HandsSwapped "5.2" "SSP4-5.2-hands-swapped" "reconstructable by moving complete hands";
    Ssp4 ShuffleCommitmentNotRevealed "5.2" "SSP4-5.2-shuffle-commitment-not-revealed" "silent; 5.2";
    Ssp4 JackpotFaultBeforeCardsSeen "RN24" "SSP4-RN24-jackpot-fault-before-cards-seen" "SSP4 is silent on jackpot faults; read as CSP6 5.17";
    Ssp4 JackpotFaultAfterCardsSeen "RN24" "SSP4-RN24-jackpot-fault-after-cards-seen" "SSP4 is silent on jackpot faults; read as CSP6 5.18";
    Ssp4 ExtraHandExamined "RN24" "SSP4-RN24-extra-hand-examined" "SSP4 is silent; read as CSP6 5.19";
    Ssp4 ExaminationRulingMissing "RN24" "SSP4-RN24-examination-ruling-missing" "";
    Ssp4 TechnicalInterruptionOutcomeEstablished "RN24" "SSP4-RN24-technical-interruption-outcome-established" "SSP4 is silent; read as CSP6 5.7.1";
    Ssp4 TechnicalInterruptionVoid "RN24" "SSP4-RN24-technical-interruption-void" "SSP4 is silent; read as CSP6 5.7.2";
    Ssp4 DecisionMissing "3.8" "SSP4-3.8-decision-missing" "3.8 players declare fold or continue; RN23";
    Ssp4 RoundVoid "RN22" "SSP4-RN22-round-void" "SSP4 has no clause on a void round's bets";
    Ssp4 RoundNeverClosed "1.1.6" "SSP4-1.1.6-round-never-closed" "";
    Ssp4 EventAfterRoundClosed "1.1.6" "SSP4-1.1.6-event-after-round-closed" "";
    Ssp4 SettlementImpossible "RN24" "SSP4-RN24-settlement-impossible" "";
    Ssp4 PayoutDiffers "4.1" "SSP4-4.1-payout-differs" "";
    Ssp4 JackpotShownDiffers "RN7" "SSP4-RN7-jackpot-shown-differs" "";
    // ---- CS51: online Casino Stud with 5+1 Bonus: no numbered clauses (HTP = bullet) ---
    Cs51 BetAfterNoMoreBets "RN19" "CS51-RN19-bet-after-no-more-bets" "";
    Cs51 BetWithdrawnAfterNoMoreBets "RN19" "CS51-RN19-bet-withdrawn-after-no-more-bets" "";
    Cs51 BetNotRequiredMultiple "HTP7" "CS51-HTP7-bet-not-required-multiple" "PLAY = 2 x ANTE";
    Cs51 OverMaximum "RN21" "CS51-RN21-over-maximum" "";
    Cs51 UnderMinimum "RN21" "CS51-RN21-under-minimum" "";
    Cs51 JackpotBetWithoutAnte "HTP3" "CS51-HTP3-bonus-bet-without-ante" "CS51 has no jackpot; the 5+1 Bonus needs an ANTE";
    Cs51 DealOrderShoe "HTP4" "CS51-HTP4-deal-order-wrong" "";
    Cs51 DealOrderShuffler "HTP4" "CS51-HTP4-deal-order-wrong-shuffler" "";
    Cs51 DealerCardCount "HTP4" "CS51-HTP4-dealer-card-count-wrong" "";
    Cs51 PlayerCardCount "HTP4" "CS51-HTP4-player-card-count-wrong" "";
    Cs51 DuplicateCard "HTP1" "CS51-HTP1-duplicate-card" "a standard deck of 52";
    Cs51 DeckShortageOrExcess "HTP1" "CS51-HTP1-deck-shortage-or-excess" "";
    Cs51 ForeignCard "HTP1" "CS51-HTP1-foreign-card" "";
    Cs51 DeckExhausted "HTP1" "CS51-HTP1-deck-exhausted" "";
    Cs51 CardExposed "HTP4" "CS51-HTP4-card-exposed" "the house's four cards are face down";
    Cs51 TwoCardsExposedVoid "HTP4" "CS51-HTP4-two-cards-exposed-void" "silent; read as CSP6 5.8.2";
    Cs51 DealerCardExposed "HTP4" "CS51-HTP4-dealer-card-exposed" "";
    Cs51 NoShuffle "HTP1" "CS51-HTP1-no-shuffle" "re-shuffled between each hand";
    Cs51 ShuffleCommitmentMismatch "HTP1" "CS51-HTP1-shuffle-commitment-mismatch" "";
    Cs51 DealDiffersFromDeckOrder "HTP4" "CS51-HTP4-deal-differs-from-deck-order" "";
    Cs51 HandsSwapped "HTP4" "CS51-HTP4-hands-swapped" "reconstructable by moving complete hands";
    Cs51 ShuffleCommitmentNotRevealed "HTP1" "CS51-HTP1-shuffle-commitment-not-revealed" "";
    Cs51 TechnicalInterruptionOutcomeEstablished "RN24" "CS51-RN24-technical-interruption-outcome-established" "silent; read as CSP6 5.7.1";
    Cs51 TechnicalInterruptionVoid "RN24" "CS51-RN24-technical-interruption-void" "silent; read as CSP6 5.7.2";
    Cs51 DecisionMissing "HTP5" "CS51-HTP5-decision-missing" "RN23";
    Cs51 RoundVoid "RN22" "CS51-RN22-round-void" "";
    Cs51 RoundNeverClosed "HTP17" "CS51-HTP17-round-never-closed" "pays are evaluated at the end of the game round";
    Cs51 EventAfterRoundClosed "HTP17" "CS51-HTP17-event-after-round-closed" "";
    Cs51 SettlementImpossible "RN24" "CS51-RN24-settlement-impossible" "";
    Cs51 PayoutDiffers "RN13" "CS51-RN13-payout-differs" "the seed has no pay tables; RN13";
    // ---- TCP3: 3 Card Poker (RWS) v3: 5.16 onwards numbered one lower than CSP6 ------
    Tcp3 BetAfterNoMoreBets "5.11" "TCP3-5.11-bet-after-no-more-bets" "";
    Tcp3 BetWithdrawnAfterNoMoreBets "5.11" "TCP3-5.11-bet-withdrawn-after-no-more-bets" "";
    Tcp3 BetNotRequiredMultiple "5.3" "TCP3-5.3-bet-not-required-multiple" "Play = Ante";
    Tcp3 OverMaximum "5.1" "TCP3-5.1-over-maximum" "";
    Tcp3 UnderMinimum "5.2" "TCP3-5.2-under-minimum" "";
    Tcp3 JackpotBetWithoutAnte "5.4" "TCP3-5.4-jackpot-bet-without-ante" "";
    Tcp3 BurnCardMissing "5.9" "TCP3-5.9-burn-card-missing" "";
    Tcp3 ReconstructionRulingMissing "5.9" "TCP3-5.9-reconstruction-ruling-missing" "RN24";
    Tcp3 DealOrderShoe "3.10" "TCP3-3.10-deal-order-wrong" "";
    Tcp3 DealOrderShuffler "3.11" "TCP3-3.11-deal-order-wrong" "";
    Tcp3 DealerCardCount "5.8.7" "TCP3-5.8.7-dealer-card-count-wrong" "";
    Tcp3 PlayerCardCount "5.15" "TCP3-5.15-player-card-count-wrong" "";
    Tcp3 DuplicateCard "5.8.1" "TCP3-5.8.1-duplicate-card" "the second copy is a card not of the set";
    Tcp3 DeckShortageOrExcess "5.8.3" "TCP3-5.8.3-deck-shortage-or-excess" "";
    Tcp3 ForeignCard "5.8.1" "TCP3-5.8.1-foreign-card" "";
    Tcp3 DeckExhausted "5.8.4" "TCP3-5.8.4-deck-exhausted" "";
    Tcp3 CardExposed "5.12" "TCP3-5.12-card-exposed" "";
    Tcp3 TwoCardsExposedVoid "5.8.2" "TCP3-5.8.2-two-cards-exposed-void" "";
    Tcp3 DealerCardExposed "5.12" "TCP3-5.12-dealer-card-exposed" "TCP3 has no dealer face-up card and no 5.16 of CSP6's kind";
    Tcp3 NoShuffle "5.8.5" "TCP3-5.8.5-no-shuffle" "";
    Tcp3 ShuffleCommitmentMismatch "5.8.5" "TCP3-5.8.5-shuffle-commitment-mismatch" "";
    Tcp3 DealDiffersFromDeckOrder "5.8.6" "TCP3-5.8.6-deal-differs-from-deck-order" "";
    Tcp3 HandsSwapped "5.8.6" "TCP3-5.8.6-hands-swapped" "reconstructable by moving complete hands";
    Tcp3 ShuffleCommitmentNotRevealed "5.8.5" "TCP3-5.8.5-shuffle-commitment-not-revealed" "";
    Tcp3 JackpotFaultBeforeCardsSeen "5.16" "TCP3-5.16-jackpot-fault-before-cards-seen" "";
    Tcp3 JackpotFaultAfterCardsSeen "5.17" "TCP3-5.17-jackpot-fault-after-cards-seen" "";
    Tcp3 ExtraHandExamined "5.18" "TCP3-5.18-extra-hand-examined" "";
    Tcp3 ExaminationRulingMissing "5.18" "TCP3-5.18-examination-ruling-missing" "RN24";
    Tcp3 TechnicalInterruptionOutcomeEstablished "5.7.1" "TCP3-5.7.1-technical-interruption-outcome-established" "";
    Tcp3 TechnicalInterruptionVoid "5.7.2" "TCP3-5.7.2-technical-interruption-void" "";
    Tcp3 DecisionMissing "5.5" "TCP3-5.5-decision-missing" "RN23";
    Tcp3 RoundVoid "5.21" "TCP3-5.21-round-void" "";
    Tcp3 RoundNeverClosed "1.18" "TCP3-1.18-round-never-closed" "";
    Tcp3 EventAfterRoundClosed "1.18" "TCP3-1.18-event-after-round-closed" "";
    Tcp3 SettlementImpossible "5.23" "TCP3-5.23-settlement-impossible" "";
    Tcp3 PayoutDiffers "4.1" "TCP3-4.1-payout-differs" "";
    Tcp3 JackpotShownDiffers "4.9.1" "TCP3-4.9.1-jackpot-shown-differs" "RN7, RN9";
    // ---- Appended ----------------------------------------------------------------------
    Csp6 DealerUpCardNotLast "3.10" "CSP6-3.10-dealer-up-card-not-last" "manual shoe; a shuffler's set may have any card up (3.11.2)";
    Mlp3 DealerUpCardNotLast "3.10" "MLP3-3.10-dealer-up-card-not-last" "manual shoe; a shuffler's set may have any card up (3.11.2)";
    Ssp4 DealerUpCardNotLast "3.7" "SSP4-3.7-dealer-up-card-not-last" "every dealing mode";
};

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn codes_are_unique_and_well_formed() {
        let mut seen = BTreeSet::new();
        for r in TABLE {
            assert!(seen.insert(r.code), "code used twice: {}", r.code);
            let prefix = format!("{}-{}-", r.rule_set.code(), r.clause);
            assert!(
                r.code.starts_with(&prefix),
                "{} does not start with {prefix}",
                r.code
            );
            let desc = &r.code[prefix.len()..];
            assert!(
                !desc.is_empty()
                    && desc
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{} description is not kebab-case",
                r.code
            );
        }
        let pairs: BTreeSet<_> = TABLE.iter().map(|r| (r.rule_set, r.kind)).collect();
        assert_eq!(
            pairs.len(),
            TABLE.len(),
            "a (rule set, kind) pair has two rows"
        );
    }

    #[test]
    fn clauses_differ_per_rule_set_where_the_seeds_do() {
        let code = |rs, k| lookup(rs, k).map(|r| r.code);
        assert_eq!(
            code(RuleSet::Csp6, FindingKind::BurnCardMissing),
            Some("CSP6-5.9-burn-card-missing")
        );
        assert_eq!(code(RuleSet::Ssp4, FindingKind::BurnCardMissing), None);
        assert_eq!(code(RuleSet::Cs51, FindingKind::BurnCardMissing), None);
        assert_eq!(
            code(RuleSet::Ssp4, FindingKind::TwoCardsExposedVoid),
            Some("SSP4-5.4-two-cards-exposed-void")
        );
        assert_eq!(
            code(RuleSet::Tcp3, FindingKind::JackpotFaultBeforeCardsSeen),
            Some("TCP3-5.16-jackpot-fault-before-cards-seen")
        );
        assert_eq!(
            code(RuleSet::Csp6, FindingKind::PayoutDiffers),
            Some("CSP6-4.1-payout-differs")
        );
        assert_eq!(
            lookup(RuleSet::Cs51, FindingKind::NoShuffle).map(|r| r.clause_text()),
            Some("CS51 How To Play ¶1".to_string())
        );
        assert_eq!(
            lookup(RuleSet::Ssp4, FindingKind::OverMaximum).map(|r| r.clause_text()),
            Some("RULES-NOTES 21".to_string())
        );
        assert_eq!(
            by_code("CSP6-5.11-bet-after-no-more-bets").map(|r| r.kind),
            Some(FindingKind::BetAfterNoMoreBets)
        );
    }

    #[test]
    fn every_kind_applies_to_csp6() {
        for k in FindingKind::ALL {
            assert!(lookup(RuleSet::Csp6, k).is_some(), "{k:?}");
        }
    }
}
