//! A table's configuration as the table announces it when it opens: the rule set and version in
//! force, limits, pay tables, jackpot pool. A round is judged by the configuration in force
//! when it was played (docs/DESIGN.md, replay is a pure fold), so this travels in the
//! `TableOpened` event, never in code or a config file of the replayer.

use crate::ids::{Money, PoolId};
use bincode::{Decode, Encode};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The five rule sets of ../shared/seeds.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    Encode,
    Decode,
    JsonSchema,
)]
pub enum RuleSet {
    /// Casino Stud Poker (RWS), Version 6.
    #[serde(rename = "CSP6")]
    Csp6,
    /// Multi-Link Progressive Casino Stud Poker (RWS), Version 3.
    #[serde(rename = "MLP3")]
    Mlp3,
    /// Singapore Stud Poker (MBS), Version 4.
    #[serde(rename = "SSP4")]
    Ssp4,
    /// Casino Stud (online, RNG) with 5+1 Bonus.
    #[serde(rename = "CS51")]
    Cs51,
    /// 3 Card Poker (RWS), Version 3.
    #[serde(rename = "TCP3")]
    Tcp3,
}

impl RuleSet {
    /// Every rule set, in declaration order.
    pub const ALL: [RuleSet; 5] = [
        RuleSet::Csp6,
        RuleSet::Mlp3,
        RuleSet::Ssp4,
        RuleSet::Cs51,
        RuleSet::Tcp3,
    ];
    /// The short name used in clause citations: "CSP6 §5.9" and finding codes "CSP6-5.9-...".
    pub fn code(self) -> &'static str {
        match self {
            RuleSet::Csp6 => "CSP6",
            RuleSet::Mlp3 => "MLP3",
            RuleSet::Ssp4 => "SSP4",
            RuleSet::Cs51 => "CS51",
            RuleSet::Tcp3 => "TCP3",
        }
    }
    /// The rule set of a code such as `CSP6`; `None` for an unknown code.
    pub fn from_code(s: &str) -> Option<RuleSet> {
        RuleSet::ALL.into_iter().find(|r| r.code() == s)
    }
    /// Cards in a hand: 3 for 3 Card Poker, 5 for the stud games.
    pub fn hand_len(self) -> usize {
        match self {
            RuleSet::Tcp3 => 3,
            _ => 5,
        }
    }
}

impl fmt::Display for RuleSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// How cards reach the boxes (CSP6 §3.10 manual shoe, one card at a time, burnt card
/// first; §3.11 electronic shuffler, a set of cards per box; CS51 RNG, a fresh deck per
/// round and no burnt card).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Encode, Decode, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum DealingMode {
    /// A dealer deals from a shoe, one card at a time, burnt card first (CSP6 §3.10).
    ManualShoe,
    /// An electronic shuffler gives a set of cards per box (CSP6 §3.11).
    Shuffler,
    /// A random number generator deals a fresh deck each round, no burnt card (CS51).
    Rng,
}

/// Every kind of bet a player can place, across the five rule sets.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    Encode,
    Decode,
    JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum BetKind {
    /// The bet that enters a box in the round (all five rule sets).
    Ante,
    /// CSP6/MLP3/SSP4 "BET": twice the Ante, placed to stay in the round.
    Bet,
    /// CS51 PLAY (twice the Ante) and TCP3 Play (equal to the Ante).
    Play,
    /// TCP3 Pair Plus.
    PairPlus,
    /// Progressive jackpot bet on the player's hand (CSP6, MLP3, TCP3).
    Progressive,
    /// SSP4 jackpot wager on the player's hand, in credits.
    JackpotPlayer,
    /// SSP4 jackpot wager on the dealer's hand, in credits.
    JackpotDealer,
    /// CS51 5+1 Bonus.
    Bonus,
}

impl BetKind {
    /// Every bet kind, in declaration order.
    pub const ALL: [BetKind; 8] = [
        BetKind::Ante,
        BetKind::Bet,
        BetKind::Play,
        BetKind::PairPlus,
        BetKind::Progressive,
        BetKind::JackpotPlayer,
        BetKind::JackpotDealer,
        BetKind::Bonus,
    ];
    /// The line this bet is settled on.
    pub fn line(self) -> PayLine {
        match self {
            BetKind::Ante => PayLine::Ante,
            BetKind::Bet => PayLine::Bet,
            BetKind::Play => PayLine::Play,
            BetKind::PairPlus => PayLine::PairPlus,
            BetKind::Progressive => PayLine::Progressive,
            BetKind::JackpotPlayer => PayLine::JackpotPlayer,
            BetKind::JackpotDealer => PayLine::JackpotDealer,
            BetKind::Bonus => PayLine::Bonus,
        }
    }
    /// Jackpot stakes are counted in credits (SSP4 §3.5); every other bet is in chips.
    pub fn in_credits(self) -> bool {
        matches!(self, BetKind::JackpotPlayer | BetKind::JackpotDealer)
    }
}

/// A settlement line of one box: one per bet kind, plus the awards that have no stake of
/// their own (TCP3 Ante Bonus §4.3 and Envy Bonus §4.7). SSP4 Magic Card and Lucky
/// Player/Dealer are paid on the jackpot wager that qualifies for them and so settle on
/// `JackpotPlayer` / `JackpotDealer` lines (RULES-NOTES 12). Dealers record payouts per
/// box and line, and disputes compare per box and line.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    Encode,
    Decode,
    JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PayLine {
    /// The Ante's result (all five rule sets).
    Ante,
    /// The BET's result (CSP6, MLP3, SSP4).
    Bet,
    /// The PLAY's result (CS51, TCP3).
    Play,
    /// TCP3 Pair Plus.
    PairPlus,
    /// Progressive jackpot bet on the player's hand.
    Progressive,
    /// SSP4 jackpot wager on the player's hand.
    JackpotPlayer,
    /// SSP4 jackpot wager on the dealer's hand.
    JackpotDealer,
    /// CS51 5+1 Bonus.
    Bonus,
    /// TCP3 Ante Bonus, paid on the Ante whatever the dealer holds (§4.3).
    AnteBonus,
    /// TCP3 Envy Bonus, paid to a box for another box's jackpot hand (§4.4, §4.7).
    Envy,
}

impl PayLine {
    /// The line's stable snake_case name, as JSON writes it.
    pub fn name(self) -> &'static str {
        match self {
            PayLine::Ante => "ante",
            PayLine::Bet => "bet",
            PayLine::Play => "play",
            PayLine::PairPlus => "pair_plus",
            PayLine::Progressive => "progressive",
            PayLine::JackpotPlayer => "jackpot_player",
            PayLine::JackpotDealer => "jackpot_dealer",
            PayLine::Bonus => "bonus",
            PayLine::AnteBonus => "ante_bonus",
            PayLine::Envy => "envy",
        }
    }
}

/// A class of hand as the pay tables name it. The stud games use the ten 5-card
/// categories; 3 Card Poker uses its own six (TCP3 §3.1.2) and, in its jackpot table
/// (§3.17), splits the A-K-Q straight flush by suit.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    Encode,
    Decode,
    JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum HandClass {
    /// No pair or better.
    HighCard,
    /// One pair.
    OnePair,
    /// Two pairs.
    TwoPairs,
    /// Three cards of one rank.
    ThreeOfAKind,
    /// Consecutive ranks, mixed suits.
    Straight,
    /// One suit, not consecutive.
    Flush,
    /// Three of a kind and a pair.
    FullHouse,
    /// Four cards of one rank.
    FourOfAKind,
    /// Consecutive ranks of one suit.
    StraightFlush,
    /// A-K-Q-J-10 of one suit.
    RoyalFlush,
    /// TCP3 §3.17: A-K-Q of hearts, diamonds or clubs.
    MiniRoyal,
    /// TCP3 §3.17: A-K-Q of spades, the top jackpot hand.
    MiniRoyalSpades,
}

impl HandClass {
    /// The hand's name as a dealer says it: "three of a kind", "a flush".
    pub fn words(self) -> &'static str {
        match self {
            HandClass::HighCard => "a high card",
            HandClass::OnePair => "a pair",
            HandClass::TwoPairs => "two pairs",
            HandClass::ThreeOfAKind => "three of a kind",
            HandClass::Straight => "a straight",
            HandClass::Flush => "a flush",
            HandClass::FullHouse => "a full house",
            HandClass::FourOfAKind => "four of a kind",
            HandClass::StraightFlush => "a straight flush",
            HandClass::RoyalFlush => "a royal flush",
            HandClass::MiniRoyal => "a mini royal (A-K-Q suited)",
            HandClass::MiniRoyalSpades => "a mini royal of spades",
        }
    }
}

/// How a pay table row pays (RULES-NOTES 2).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Encode, Decode, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Pays {
    /// "X to 1": X times the stake is won and the stake returned.
    ToOne(u32),
    /// "X for 1": X times the stake is returned in total (net X - 1 times the stake).
    ForOne(u32),
    /// "wins $N": a fixed amount; the (jackpot) stake is kept as a contribution.
    Fixed(Money),
    /// "N% of Progressive Jackpot", in basis points (10000 = 100%) of the pool as it stands
    /// at the moment of payment, rounded down; the stake is kept as a contribution.
    PoolBasisPoints(u32),
}

/// One row of a pay table: the hand and what it pays. `envy` is TCP3's Envy Bonus (§4.4,
/// §4.7) for that hand, paid to every other box with a jackpot bet.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Encode, Decode, JsonSchema)]
pub struct PayRow {
    /// The hand class the row pays for.
    pub hand: HandClass,
    /// What it pays.
    pub pays: Pays,
    /// TCP3 Envy Bonus for this hand, paid to each other box with a jackpot bet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envy: Option<Money>,
}

/// Which pay table of a rule set a `PayTable` replaces.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    Encode,
    Decode,
    JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PayTableName {
    /// BET (CSP6/MLP3/SSP4 §4.1) or PLAY (CS51) when the dealer qualifies and loses.
    Main,
    /// Progressive jackpot on the player's hand (CSP6/MLP3 §4.2, TCP3 §4.4, SSP4 §4.2
    /// for both the player's and the dealer's hand).
    Jackpot,
    /// TCP3 §4.2.
    PairPlus,
    /// TCP3 §4.3.
    AnteBonus,
    /// CS51 5+1 Bonus (RULES-NOTES 13).
    Bonus,
    /// SSP4 §4.5 Magic Card / Lucky Player / Lucky Dealer (one row, any hand class).
    Selection,
}

/// A pay table that replaces the rule set's default, as the table displays it. Rows not
/// listed do not pay.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Encode, Decode, JsonSchema)]
pub struct PayTable {
    /// Which of the rule set's pay tables it replaces.
    pub name: PayTableName,
    /// The rows that pay, as the table displays them.
    pub rows: Vec<PayRow>,
}

/// Minimum and maximum for one bet kind at this table (CSP6 §3.3, §5.1, §5.2). For
/// jackpot bets `min == max` is the prescribed amount; for SSP4 jackpot wagers the values
/// count credits.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Encode, Decode, JsonSchema)]
pub struct BetLimit {
    /// The bet kind limited.
    pub kind: BetKind,
    /// The least stake, minor units (credits for SSP4 jackpot wagers).
    pub min: Money,
    /// The most stake, minor units (credits for SSP4 jackpot wagers).
    pub max: Money,
}

/// The table's progressive jackpot pool (RULES-NOTES 6, 7, 11).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Encode, Decode, JsonSchema)]
pub struct JackpotConfig {
    /// The pool's id, shared by linked tables.
    pub pool: PoolId,
    /// Several tables share the pool (MLP3, and TCP3 where linked).
    pub linked: bool,
    /// Value the pool restarts from after a 100% win.
    pub reset: Money,
    /// Part of each jackpot stake added to the pool, in basis points.
    pub contribution_bp: u32,
    /// SSP4: value of one jackpot credit. 0 where the game has no credits.
    pub credit_value: Money,
}

/// Everything a table announces when it opens. Fields left empty take the rule set's
/// defaults from the seeds (and RULES-NOTES 13 for CS51).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Encode, Decode, JsonSchema)]
pub struct TableConfig {
    /// The rules the table plays.
    pub rule_set: RuleSet,
    /// The version string of the rule document in force, e.g. "Version 6".
    pub rules_version: String,
    /// ISO 4217 code of the table's currency, e.g. "SGD".
    pub currency: String,
    /// Number of betting boxes on the layout.
    pub boxes: u8,
    /// How cards reach the boxes.
    pub dealing: DealingMode,
    /// Minimum and maximum per bet kind; empty takes the rule set's defaults.
    #[serde(default)]
    pub limits: Vec<BetLimit>,
    /// Pay tables that replace the defaults; empty = the seed's tables.
    #[serde(default)]
    pub pay_tables: Vec<PayTable>,
    /// Cap on the win of the BET of one box (CSP6/MLP3 §4.1.1: SGD 100,000). `None` takes
    /// the rule set's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bet_win_cap: Option<Money>,
    /// The progressive jackpot pool, if the table has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jackpot: Option<JackpotConfig>,
}

impl TableConfig {
    /// The limit for one bet kind, if the table displays one.
    pub fn limit(&self, kind: BetKind) -> Option<&BetLimit> {
        self.limits.iter().find(|l| l.kind == kind)
    }
}
