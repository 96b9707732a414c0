//! The rules engine's input and output: one round as it is settled, and the settlement.
//!
//! The JSON form of `RoundInput` is what `roundledger settle` reads and is a superset of
//! the `round` objects of ../shared/seeds/EXAMPLES.md, so every worked example is a valid
//! input as it stands. `Settlement` is what it prints. The replayer builds a `RoundInput`
//! from a round's events.

use crate::card::Card;
use crate::config::{BetKind, HandClass, PayLine, RuleSet, TableConfig};
use crate::event::Choice;
use crate::ids::{BoxNo, Money};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The largest stake, amount or pool the calculator accepts, in minor units: 10^12 is ten
/// billion in major units (SGD 10,000,000,000), thousands of times any table's maximum or
/// jackpot pool. Times the largest default pay multiple (1,000 for 1) it stays far below
/// i64::MAX (9.2 x 10^18), so no settlement of accepted input saturates.
pub const MONEY_INPUT_MAX: i64 = 1_000_000_000_000;

/// One round to settle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RoundInput {
    /// The rule set ("CSP6", "MLP3", "SSP4", "CS51", "TCP3").
    pub game: RuleSet,
    /// The table's configuration; `None` takes the rule set's defaults (pay tables from the
    /// seed, no limits). Its `rule_set` must equal `game`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<TableConfig>,
    /// The dealer's hand, in the order dealt.
    pub dealer: Vec<Card>,
    /// CS51: the house's face-up card (counts in the 5+1 Bonus). Defaults to the last
    /// card of `dealer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dealer_up: Option<Card>,
    /// The progressive jackpot value shown before the round's payments.
    #[serde(default)]
    pub pool: Money,
    /// The value the pool restarts from after a 100% win.
    #[serde(default)]
    pub reset: Money,
    /// SSP4: the value of one jackpot credit (overrides the configuration's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credit_value: Option<Money>,
    /// SSP4 §4.3: the system-selected Magic Card.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub magic_card: Option<Card>,
    /// SSP4 §4.4: the system-selected Lucky Player box.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lucky_box: Option<BoxNo>,
    /// SSP4 §4.4.1: this table's dealer is the Lucky Dealer.
    #[serde(default)]
    pub lucky_dealer: bool,
    /// The round is void: every bet is returned (CSP6 §5.22, RULES-NOTES 22).
    #[serde(default)]
    pub void: bool,
    /// Boxes in deal order (box 1 first).
    pub boxes: Vec<BoxInput>,
}

/// One betting box of a round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BoxInput {
    /// The betting box, 1-based.
    #[serde(rename = "box")]
    pub box_no: BoxNo,
    /// The box's hand, in the order dealt.
    pub cards: Vec<Card>,
    /// `null` for a box that makes no decision (TCP3 Pair Plus only, §3.14).
    #[serde(default)]
    pub decision: Option<Choice>,
    /// Stakes by bet kind, as they stood at "No more Bets" (and the BET/Play placed with
    /// the decision). Minor units, except `jackpot_player` / `jackpot_dealer`: credits.
    // Read by `bets::deserialize`: an unknown kind is refused at its own key (`bets.antee`).
    #[serde(deserialize_with = "bets::deserialize")]
    pub bets: BTreeMap<BetKind, i64>,
    /// The hand was invalidated and its bets are returned, with the clause (CSP6 §5.15
    /// wrong card count, §5.19 intentional examination, §5.10.3 player's option).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalidated: Option<String>,
}

/// What happened to one line.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Paid (net > 0).
    Win,
    /// Collected (net = -stake) or, for a jackpot stake that won nothing, kept as a
    /// contribution.
    Lose,
    /// Stand off: neither paid nor collected (CSP6 §1.19).
    StandOff,
    /// Returned without a result: dealer not qualifying on the BET (§3.13), void
    /// (§5.22), invalidated hand (§5.15), excess over the maximum (§5.1.1, §5.3.1).
    Returned,
}

/// One line of one box's settlement, with the clause that produced it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SettlementLine {
    /// The bet line settled.
    pub line: PayLine,
    /// The stake settled on this line (after §5.1.1/§5.3 adjustments), minor units.
    pub stake: Money,
    /// Paid, collected, stand off or returned.
    pub outcome: Outcome,
    /// The player's net result on this line: paid (positive), collected (negative),
    /// returned (0). The sum over lines is what the player gained or lost.
    pub net: Money,
    /// The clause that decides it, e.g. "CSP6 3.13".
    pub clause: String,
    /// Plain words for a surveillance officer: "dealer does not qualify; Ante 1 to 1".
    pub explanation: String,
}

/// One box's settlement.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BoxSettlement {
    /// The betting box.
    #[serde(rename = "box")]
    pub box_no: BoxNo,
    /// The hand's class, when the hand is valid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hand: Option<HandClass>,
    /// One line per bet placed on the box, in pay line order.
    pub lines: Vec<SettlementLine>,
}

/// A progressive jackpot payment, in the order paid (CSP6 §4.5.1).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JackpotPayment {
    /// The box whose hand won the jackpot.
    #[serde(rename = "box")]
    pub box_no: BoxNo,
    /// The winning hand's class.
    pub hand: HandClass,
    /// What was paid, minor units.
    pub amount: Money,
    /// The pool before this payment, minor units.
    pub pool_before: Money,
    /// The pool after it, minor units.
    pub pool_after: Money,
    /// The clause that decides it, e.g. "CSP6 4.5.1".
    pub clause: String,
}

/// The settlement of one round.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Settlement {
    /// The rule set the round was settled under.
    pub game: RuleSet,
    /// The dealer's hand class and whether it qualifies (None when void).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dealer_hand: Option<HandClass>,
    /// Whether the dealer's hand qualifies; false when void.
    pub dealer_qualifies: bool,
    /// One settlement per box that bet, in box order.
    pub boxes: Vec<BoxSettlement>,
    /// Jackpot payments in the order paid.
    pub jackpot_payments: Vec<JackpotPayment>,
    /// Pool value shown before the round's payments.
    pub pool_before: Money,
    /// Pool value after this round's jackpot payments (before new contributions).
    pub pool_after: Money,
    /// What the round holds that settles nothing, each with its clause: a box with no
    /// bet, an SSP4 Lucky Player on an empty betting area (§4.4). Omitted when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<SettlementNote>,
}

/// A fact of the round that moves no money, shown with the settlement.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SettlementNote {
    /// The betting box or area it concerns, if one.
    #[serde(rename = "box", default, skip_serializing_if = "Option::is_none")]
    pub box_no: Option<BoxNo>,
    /// The clause that decides it, e.g. "SSP4 §4.4".
    pub clause: String,
    /// What it means, in words.
    pub explanation: String,
}

impl Settlement {
    /// Net result per box and line, lines of one kind summed: the shape of EXAMPLES.md's
    /// `net` objects and of the dealer's `PaidOut` records.
    pub fn net(&self) -> BTreeMap<BoxNo, BTreeMap<PayLine, Money>> {
        let mut out: BTreeMap<BoxNo, BTreeMap<PayLine, Money>> = BTreeMap::new();
        for b in &self.boxes {
            let lines = out.entry(b.box_no).or_default();
            for l in &b.lines {
                *lines.entry(l.line).or_default() =
                    lines.get(&l.line).copied().unwrap_or_default() + l.net;
            }
        }
        out
    }
}

/// A box whose hand is void: every bet on it is returned (CSP6 §5.15 wrong card count,
/// §5.22 void round, or an `invalidated` clause of the input).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoidHand {
    /// The box whose hand is void.
    #[serde(rename = "box")]
    pub box_no: BoxNo,
    /// The clause that voids it, e.g. "CSP6 5.15".
    pub clause: String,
    /// Why, in plain words.
    pub explanation: String,
}

/// What `roundledger settle` prints: the settlement, and `void_hands` when a hand is void.
#[derive(Debug, Clone, Serialize)]
pub struct SettleOutput<'a> {
    /// The settlement, its fields at the top level.
    #[serde(flatten)]
    pub settlement: &'a Settlement,
    /// Void hands; omitted when none.
    #[serde(skip_serializing_if = "<[VoidHand]>::is_empty")]
    pub void_hands: &'a [VoidHand],
}

/// What `roundledger settle --net` prints: net per box and line (EXAMPLES.md's shape), and
/// `void_hands` when a hand is void. Box keys are numbers, so the two cannot collide.
#[derive(Debug, Clone, Serialize)]
pub struct NetOutput<'a> {
    /// Net per box and line, the boxes at the top level.
    #[serde(flatten)]
    pub net: &'a BTreeMap<BoxNo, BTreeMap<PayLine, Money>>,
    /// Void hands; omitted when none.
    #[serde(skip_serializing_if = "<[VoidHand]>::is_empty")]
    pub void_hands: &'a [VoidHand],
}

/// Why one input line of `settle --ndjson` was refused, located in the user's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputError {
    /// The path of the field at fault (`boxes[2].bets.ante`); empty for the line itself.
    pub field: String,
    /// What is wrong, in words.
    pub message: String,
    /// The 1-based column in the line where the parser stopped, for JSON errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u64>,
}

/// One output line of `settle --ndjson`: the 1-based input line and exactly one of
/// `settlement`, `net` or `error`.
#[derive(Debug, Clone, Serialize)]
pub struct BatchLine<'a> {
    /// The 1-based input line.
    pub line: u64,
    /// The settlement, unless `--net` was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settlement: Option<&'a Settlement>,
    /// Net per box and line, under `--net`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub net: Option<&'a BTreeMap<BoxNo, BTreeMap<PayLine, Money>>>,
    /// Void hands; omitted when none.
    #[serde(skip_serializing_if = "<[VoidHand]>::is_empty")]
    pub void_hands: &'a [VoidHand],
    /// Why the line was refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a InputError>,
}

/// `bets` read key by key, so that an unknown bet kind is an error at its own key: the
/// value's deserializer reports it, which puts the key in the error's path.
mod bets {
    use super::BetKind;
    use serde::de::{Deserialize, DeserializeSeed, Deserializer, Error, MapAccess, Visitor};
    use std::collections::BTreeMap;
    use std::fmt;

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<BetKind, i64>, D::Error> {
        d.deserialize_map(BetsVisitor)
    }

    struct BetsVisitor;

    impl<'de> Visitor<'de> for BetsVisitor {
        type Value = BTreeMap<BetKind, i64>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object of stakes by bet kind")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some(key) = map.next_key::<Key>()? {
                let amount = map.next_value_seed(Stake(key.0))?;
                out.insert(amount.0, amount.1);
            }
            Ok(out)
        }
    }

    /// A key: the bet kind, or the unknown name.
    struct Key(Result<BetKind, String>);

    impl<'de> serde::Deserialize<'de> for Key {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_str(KeyVisitor)
        }
    }

    struct KeyVisitor;

    impl Visitor<'_> for KeyVisitor {
        type Value = Key;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a bet kind")
        }
        fn visit_str<E: Error>(self, name: &str) -> Result<Key, E> {
            let de = serde::de::value::StrDeserializer::<serde::de::value::Error>::new(name);
            Ok(Key(BetKind::deserialize(de).map_err(|_| name.to_string())))
        }
    }

    /// The stake of one key; refuses an unknown key here, inside the key's path.
    struct Stake(Result<BetKind, String>);

    impl<'de> DeserializeSeed<'de> for Stake {
        type Value = (BetKind, i64);
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            match self.0 {
                Ok(kind) => Ok((kind, i64::deserialize(d)?)),
                Err(name) => Err(D::Error::custom(format!(
                    "unknown bet kind `{name}`, expected one of {}",
                    BetKind::ALL.map(|k| k.line().name()).join(", ")
                ))),
            }
        }
    }
}
