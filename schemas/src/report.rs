//! What the replayer reports about a round: findings citing clauses, the settlement it
//! recomputed against what the dealer recorded, and a verdict. These cross process
//! boundaries (CLI `--json`, API bodies, evidence bundles) and so live here.

use crate::config::{PayLine, RuleSet};
use crate::ids::{BoxNo, Money, RoundId, Seq, TableId};
use crate::settle::Settlement;
use serde::{Deserialize, Serialize};

/// How serious a finding is.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Worth knowing; no money or integrity at stake.
    Info,
    /// A rule was broken; the round may still stand.
    Warning,
    /// Money is wrong, the round is void, or the record cannot be trusted.
    Critical,
}

/// One deviation from the rules, found by replaying a round. `code` is stable for ever
/// (stored and audited): it names the rule set and clause, e.g. `CSP6-5.9-burn-card-missing`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The stable finding code, e.g. `CSP6-5.9-burn-card-missing`.
    pub code: String,
    /// Human form of the clause: "CSP6 §5.9".
    pub clause: String,
    /// How much the finding weighs.
    pub severity: Severity,
    /// The events involved, by sequence number.
    pub seqs: Vec<Seq>,
    /// The box concerned, when the finding concerns one.
    #[serde(rename = "box", default, skip_serializing_if = "Option::is_none")]
    pub box_no: Option<BoxNo>,
    /// What happened and what the clause asks, in words.
    pub explanation: String,
}

/// Recomputed settlement vs the dealer's record, for one box and line.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dispute {
    /// The betting box.
    #[serde(rename = "box")]
    pub box_no: BoxNo,
    /// The bet line: ante, play, pair plus and so on.
    pub line: PayLine,
    /// What the rules say the player's net result is.
    pub expected: Money,
    /// What the dealer recorded (0 when nothing was recorded for the line).
    pub recorded: Money,
    /// `recorded - expected`: positive = overpaid, negative = underpaid.
    pub difference: Money,
}

/// The round's verdict, worst first.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Settled as the rules say, no findings.
    Clean,
    /// Findings, but every payout matches the rules.
    Irregular,
    /// Recorded payouts differ from the rules.
    Disputed,
    /// The round is void: every bet returned.
    Void,
}

/// The replay of one round.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundReport {
    /// The table the round was played at.
    pub table: TableId,
    /// The round's id.
    pub round: RoundId,
    /// The rule set in force; `None` when no table config precedes the round.
    pub rule_set: Option<RuleSet>,
    /// The seq of the round's first event.
    pub first_seq: Seq,
    /// The seq of the round's last event.
    pub last_seq: Seq,
    /// Device time of the round's first event, UTC ns.
    pub opened_at_ns: i64,
    /// Device time of its `RoundClosed`, UTC ns; `None` when it never closed.
    pub closed_at_ns: Option<i64>,
    /// The round's verdict, worst case first.
    pub verdict: Verdict,
    /// The recomputed settlement; `None` when the round could not be settled (e.g. never
    /// dealt), which is itself a finding.
    pub settlement: Option<Settlement>,
    /// Boxes and lines where the recorded payout differs from the rules.
    pub disputes: Vec<Dispute>,
    /// Deviations from the rules, in seq order.
    pub findings: Vec<Finding>,
    /// When the deck order is known (a revealed, committed shuffle) and the deal went
    /// wrong: the hands as they should have been dealt and what would follow (§5.8.6,
    /// §5.9). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconstruction: Option<Reconstruction>,
}

/// A reconstruction proposal: the intended deal, computed from the revealed deck order,
/// for the House to decide on (CSP6 §5.8.6, §5.9, §5.10).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reconstruction {
    /// The clause it rests on, e.g. "CSP6 §5.8.6".
    pub clause: String,
    /// The `DeckRevealed` event the deck order comes from.
    pub deck_seq: Seq,
    /// Each place dealt to, with the cards the deck order gives it.
    pub intended: Vec<IntendedHand>,
    /// Complete hands that sit in the wrong place: move each `from` to `to`.
    pub moves: Vec<HandMove>,
    /// Whether the deal is put right by moving complete hands only (§5.8.6).
    pub by_moving_complete_hands: bool,
    /// Whether any player had seen their cards (then §5.9 voids, §5.10 options apply).
    pub players_had_seen: bool,
    /// What the rules let the House do, in words.
    pub proposal: String,
    /// The settlement with the intended hands and the decisions as recorded; `None` when
    /// the rules engine cannot settle it.
    pub settlement: Option<Settlement>,
}

/// One place of the deal and the cards it should have received.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntendedHand {
    /// "burn", "box 3" or "dealer".
    pub place: String,
    /// The cards in deal order.
    pub cards: Vec<crate::Card>,
}

/// A complete hand dealt to `from` that belongs at `to`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandMove {
    /// Where the hand was dealt.
    pub from: String,
    /// Where it belongs.
    pub to: String,
}
