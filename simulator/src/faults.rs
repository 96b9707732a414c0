//! What the simulator may do wrong on purpose, and the record of what it did, so a test
//! can check that the audit finds exactly the injected faults.

use crate::expected::{FaultKind, FinanceFaultKind};
use schemas::{BetKind, BoxNo, Card, CardTarget, Money, PayLine, RoundId, Seq};
use serde::Serialize;

/// Probability per round (0.0 to 1.0) of each fault. Draws come from the table's seeded
/// generator, so a plan and a seed always give the same faults. A fault that cannot apply
/// to a round (no burnt card in shuffler mode, one box only for swapped hands, ...) is
/// skipped for that round.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct FaultPlan {
    /// Per round: a `PaidOut` records the wrong amount.
    pub wrong_payout: f64,
    /// Per round: a bet is placed or raised after "No more Bets".
    pub late_bet: f64,
    /// Per round: the manual-shoe deal starts without the burnt card.
    pub skipped_burn: f64,
    /// Per round: a card is dealt a second time.
    pub duplicate_card: f64,
    /// Per round: a card is exposed.
    pub exposed_card: f64,
    /// Per round: a box receives the wrong number of cards.
    pub wrong_card_count: f64,
    /// Per round: two boxes receive each other's cards (shuffler mode).
    pub swapped_hands: f64,
    /// Per round: the round ends without `RoundClosed`.
    pub missing_round_close: f64,
    /// Per fill: the chips arrive without a `Fill` event.
    pub missing_fill_slip: f64,
    /// Per closing count: the closer miscounts one denomination.
    pub miscounted_closer: f64,
    /// Per drop box: the count room finds less cash than went in.
    pub short_drop: f64,
    /// Per round: a Progressive bet is dealt a straight flush (`FinanceFaultKind::JackpotHit`).
    pub jackpot_hit: f64,
}

impl FaultPlan {
    /// Perfectly clean rounds.
    pub fn none() -> FaultPlan {
        FaultPlan::default()
    }

    /// Only dealer payout errors, at `rate` per round (the end-to-end test: every injected
    /// payout error is reported by the audit and nothing else is).
    pub fn payout_errors(rate: f64) -> FaultPlan {
        FaultPlan {
            wrong_payout: rate,
            ..FaultPlan::default()
        }
    }

    /// Only `kind`, at `rate` per round.
    pub fn only(kind: FaultKind, rate: f64) -> FaultPlan {
        FaultPlan::none().with(kind, rate)
    }

    /// This plan with the finance error `kind` at `rate` (per fill, count, box or round).
    pub fn with_finance(mut self, kind: FinanceFaultKind, rate: f64) -> FaultPlan {
        *self.finance_rate_mut(kind) = rate.clamp(0.0, 1.0);
        self
    }

    /// The rate of the finance error `kind` (per fill, count, box or round).
    pub fn finance_rate(&self, kind: FinanceFaultKind) -> f64 {
        let mut p = *self;
        *p.finance_rate_mut(kind)
    }

    fn finance_rate_mut(&mut self, kind: FinanceFaultKind) -> &mut f64 {
        match kind {
            FinanceFaultKind::MissingFillSlip => &mut self.missing_fill_slip,
            FinanceFaultKind::MiscountedCloser => &mut self.miscounted_closer,
            FinanceFaultKind::ShortDrop => &mut self.short_drop,
            FinanceFaultKind::JackpotHit => &mut self.jackpot_hit,
        }
    }

    /// Every kind of round fault at `rate` per round, and no finance errors.
    pub fn all(rate: f64) -> FaultPlan {
        FaultKind::ALL
            .into_iter()
            .fold(FaultPlan::none(), |p, k| p.with(k, rate))
    }

    /// This plan with `kind` at `rate`.
    pub fn with(mut self, kind: FaultKind, rate: f64) -> FaultPlan {
        *self.rate_mut(kind) = rate.clamp(0.0, 1.0);
        self
    }

    /// The per-round rate of the round fault `kind`.
    pub fn rate(&self, kind: FaultKind) -> f64 {
        let mut p = *self;
        *p.rate_mut(kind)
    }

    fn rate_mut(&mut self, kind: FaultKind) -> &mut f64 {
        match kind {
            FaultKind::WrongPayout => &mut self.wrong_payout,
            FaultKind::LateBet => &mut self.late_bet,
            FaultKind::SkippedBurn => &mut self.skipped_burn,
            FaultKind::DuplicateCard => &mut self.duplicate_card,
            FaultKind::ExposedCard => &mut self.exposed_card,
            FaultKind::WrongCardCount => &mut self.wrong_card_count,
            FaultKind::SwappedHands => &mut self.swapped_hands,
            FaultKind::MissingRoundClose => &mut self.missing_round_close,
        }
    }
}

/// One fault the simulator injected: what, in which round, where, and the finding code the
/// replayer must raise (`crate::expected`). `seq` is the event that carries the fault
/// where there is one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "fault", rename_all = "snake_case")]
pub enum InjectedFault {
    /// A `PaidOut` records `recorded` where the rules give `expected` (both the player's
    /// net result on the line).
    WrongPayout {
        /// The round.
        round: RoundId,
        /// The box paid.
        box_no: BoxNo,
        /// The pay line paid wrongly.
        line: PayLine,
        /// The player's net result the rules give, minor units.
        expected: Money,
        /// The player's net result the `PaidOut` records, minor units.
        recorded: Money,
        /// The `PaidOut` event.
        seq: Seq,
        /// The finding code the replayer must raise.
        code: &'static str,
    },
    /// A `BetPlaced` (a side bet the box did not have) or `BetChanged` (the Ante
    /// increased) after "No more Bets". Settlement ignores it (bets stand as they were
    /// when the bets closed, CSP6 §5.21).
    LateBet {
        /// The round.
        round: RoundId,
        /// The box the bet is on.
        box_no: BoxNo,
        /// The bet placed or changed late.
        kind: BetKind,
        /// The late `BetPlaced` or `BetChanged` event.
        seq: Seq,
        /// The finding code the replayer must raise.
        code: &'static str,
    },
    /// The manual-shoe deal started without the burnt card.
    SkippedBurn {
        /// The round.
        round: RoundId,
        /// The finding code the replayer must raise.
        code: &'static str,
    },
    /// `card` was dealt a second time, to `to`, at event `seq`. The pit voids the round
    /// (CSP6 §5.8.1): a void is announced and every bet is returned.
    DuplicateCard {
        /// The round.
        round: RoundId,
        /// Where the second copy of the card went.
        to: CardTarget,
        /// The card dealt twice.
        card: Card,
        /// The event that deals it the second time.
        seq: Seq,
        /// The finding code the replayer must raise.
        code: &'static str,
    },
    /// A `CardExposed` for a card of `at`. CSP6/MLP3/TCP3: one card, players had seen
    /// their cards, the round continues (§5.12). SSP4: two cards (`seq` is the first), the
    /// round is void (§5.4).
    ExposedCard {
        /// The round.
        round: RoundId,
        /// Whose card was exposed.
        at: CardTarget,
        /// The exposed card.
        card: Card,
        /// The `CardExposed` event; in SSP4 the first of the two.
        seq: Seq,
        /// The finding code the replayer must raise.
        code: &'static str,
    },
    /// `box_no` received `dealt` cards instead of `required`; its hand is invalidated and
    /// its bets returned (CSP6 §5.15), it makes no decision.
    WrongCardCount {
        /// The round.
        round: RoundId,
        /// The box dealt the wrong number of cards.
        box_no: BoxNo,
        /// Cards the box received.
        dealt: u8,
        /// Cards the game deals a box.
        required: u8,
        /// The finding code the replayer must raise.
        code: &'static str,
    },
    /// In shuffler mode, boxes `a` and `b` received each other's sets of cards compared
    /// with the committed deck order (revealed by `DeckRevealed`). Unnoticed at the table:
    /// the round is settled on the hands as dealt.
    SwappedHands {
        /// The round.
        round: RoundId,
        /// One box of the swap.
        a: BoxNo,
        /// The other box of the swap.
        b: BoxNo,
        /// The finding code the replayer must raise.
        code: &'static str,
    },
    /// The round has no `RoundClosed`.
    MissingRoundClose {
        /// The round.
        round: RoundId,
        /// The finding code the replayer must raise.
        code: &'static str,
    },
}

impl InjectedFault {
    /// The kind of this fault.
    pub fn kind(&self) -> FaultKind {
        match self {
            InjectedFault::WrongPayout { .. } => FaultKind::WrongPayout,
            InjectedFault::LateBet { .. } => FaultKind::LateBet,
            InjectedFault::SkippedBurn { .. } => FaultKind::SkippedBurn,
            InjectedFault::DuplicateCard { .. } => FaultKind::DuplicateCard,
            InjectedFault::ExposedCard { .. } => FaultKind::ExposedCard,
            InjectedFault::WrongCardCount { .. } => FaultKind::WrongCardCount,
            InjectedFault::SwappedHands { .. } => FaultKind::SwappedHands,
            InjectedFault::MissingRoundClose { .. } => FaultKind::MissingRoundClose,
        }
    }

    /// The round this fault is in.
    pub fn round(&self) -> RoundId {
        match self {
            InjectedFault::WrongPayout { round, .. }
            | InjectedFault::LateBet { round, .. }
            | InjectedFault::SkippedBurn { round, .. }
            | InjectedFault::DuplicateCard { round, .. }
            | InjectedFault::ExposedCard { round, .. }
            | InjectedFault::WrongCardCount { round, .. }
            | InjectedFault::SwappedHands { round, .. }
            | InjectedFault::MissingRoundClose { round, .. } => *round,
        }
    }

    /// The finding code the replayer must raise (`crate::expected`).
    pub fn code(&self) -> &'static str {
        match self {
            InjectedFault::WrongPayout { code, .. }
            | InjectedFault::LateBet { code, .. }
            | InjectedFault::SkippedBurn { code, .. }
            | InjectedFault::DuplicateCard { code, .. }
            | InjectedFault::ExposedCard { code, .. }
            | InjectedFault::WrongCardCount { code, .. }
            | InjectedFault::SwappedHands { code, .. }
            | InjectedFault::MissingRoundClose { code, .. } => code,
        }
    }

    /// The box the fault concerns, where it concerns one.
    pub fn box_no(&self) -> Option<BoxNo> {
        match self {
            InjectedFault::WrongPayout { box_no, .. }
            | InjectedFault::LateBet { box_no, .. }
            | InjectedFault::WrongCardCount { box_no, .. } => Some(*box_no),
            InjectedFault::DuplicateCard {
                to: CardTarget::Box(b),
                ..
            }
            | InjectedFault::ExposedCard {
                at: CardTarget::Box(b),
                ..
            } => Some(*b),
            InjectedFault::SwappedHands { a, .. } => Some(*a),
            _ => None,
        }
    }
}
