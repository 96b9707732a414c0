//! The event catalogue: everything a table's devices announce, deal, bet, decide and pay,
//! plus jackpot, pit and finance events. One `Event` is one NATS message and one ledger
//! record.
//!
//! Wire stability: the bincode form encodes enum variants and fields by position, so new
//! variants are only ever appended, existing variants never change their fields, and a
//! change of meaning takes a new wire version (`Event::v`). See schemas/README.md.

use crate::card::Card;
use crate::config::{BetKind, PayLine, TableConfig};
use crate::ids::{BoxNo, DeviceId, Hash32, Money, PoolId, RoundId, Seq, StaffId, TableId};
use crate::keys::{PublicKey, Signature};
use bincode::{Decode, Encode};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The wire version this crate writes and reads.
pub const WIRE_VERSION: u8 = 1;

/// One event as a device publishes it. Field order is the bincode order.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Encode, Decode, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Event {
    /// Wire version, always `WIRE_VERSION` (1). First, so a reader can tell versions apart.
    pub v: u8,
    /// The chain this event belongs to (normally the table).
    pub table: TableId,
    /// The device that produced it.
    pub device: DeviceId,
    /// Position in the table's chain, from 1, no gaps.
    pub seq: Seq,
    /// Hash of the previous event of this chain (`Hash32::ZERO` for seq 1).
    pub prev: Hash32,
    /// Device clock, UTC nanoseconds since the Unix epoch. Never used to order events
    /// across tables: the House's order is the order of arrival at the central log.
    pub occurred_at_ns: i64,
    /// The round of play the event belongs to; `None` for table and finance events.
    #[serde(default)]
    pub round: Option<RoundId>,
    /// What happened: one of the catalogue's event kinds.
    pub body: EventBody,
}

impl Event {
    /// A synthetic announcement of about 150 bytes (bincode) at `seq` of `table`'s chain:
    /// the one event shape of the storage and transport benchmarks (the ledger's append
    /// bench, `roundledger bench-ingest`), which measure bytes and chains, not rounds.
    /// Rounds of 90 events.
    pub fn filler(
        table: TableId,
        device: DeviceId,
        seq: Seq,
        prev: Hash32,
        occurred_at_ns: i64,
    ) -> Event {
        Event {
            v: WIRE_VERSION,
            table,
            device,
            seq,
            prev,
            occurred_at_ns,
            round: Some(RoundId(seq.0 / 90 + 1)),
            body: EventBody::Announced {
                announcement: Announcement::Result {
                    text: format!(
                        "Dealer has a pair of Kings; box 3 wins with Two Pair; event {:>12}; padding",
                        seq.0
                    ),
                },
            },
        }
    }
}

/// Where a dealt card went.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Encode, Decode, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum CardTarget {
    /// The burnt card, discarded before the deal (CSP6 §1.4, §3.10).
    Burn,
    /// A betting box.
    Box(BoxNo),
    /// The dealer's hand.
    Dealer,
}

/// The dealer's announcements (CSP6 §1.16, §3.2, §3.9; SSP4 §3.12 "No hand").
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Encode, Decode, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Announcement {
    /// "Place your Bets, please": the round of play begins.
    PlaceYourBets,
    /// "No more Bets": bets are closed; they settle as they stand now (§5.21).
    NoMoreBets,
    /// The dealer does not qualify (SSP4 §3.12).
    NoHand,
    /// The result as announced, free text ("Dealer has a pair of Kings").
    Result {
        /// The announcement's words.
        text: String,
    },
    /// The round is declared void.
    Void,
}

/// A stake: chips (money) for every bet except SSP4 jackpot wagers, which are credits.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Encode, Decode, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stake {
    /// Chips, minor units of the table's currency.
    Chips(Money),
    /// SSP4 jackpot credits, each worth the pool's `credit_value`.
    Credits(u32),
}

/// What a player decided for a box after seeing (or not seeing) the cards.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Encode, Decode, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Choice {
    /// Places the BET (CSP6/MLP3/SSP4) or Play (CS51/TCP3) and stays in.
    Play,
    /// Folds: gives up the hand and the Ante.
    Fold,
    /// Walked away with a decision pending: a Fold (CSP6 §5.5).
    WalkAway,
    /// Refused to reveal the hand: a Fold in MLP3 §4.3.
    RefuseToReveal,
}

/// A player's option after a dealing error (CSP6 §5.10).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Encode, Decode, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PlayerOption {
    /// §5.10.1 continue with the hand as dealt.
    Continue,
    /// §5.10.2 continue with the reconstructed hand.
    ContinueReconstructed,
    /// §5.10.3 bets returned, hand invalidated.
    ReturnBets,
}

/// A decision by a pit employee, recorded with who made it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Encode, Decode, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Ruling {
    /// An irregularity noticed on the floor, citing the clause (e.g. "CSP6 5.9").
    IrregularityDeclared {
        /// The clause, e.g. "CSP6 5.9".
        clause: String,
        /// What was seen, in words.
        note: String,
    },
    /// The round is void (CSP6 §5.8, §5.9, §5.17, §5.7.2; SSP4 §5.1-5.5).
    VoidRound {
        /// The clause that voids it.
        clause: String,
        /// Why, in words.
        reason: String,
    },
    /// A player's choice of option after a dealing error (§5.10).
    PlayerOption {
        /// The box whose player chooses.
        box_no: BoxNo,
        /// The option chosen.
        option: PlayerOption,
    },
    /// Simultaneously drawn cards: which is received first (CSP6 §5.14).
    CardOrder {
        /// The cards in the order received.
        cards: Vec<Card>,
    },
    /// Whether a player examined an additional hand intentionally (CSP6 §5.19).
    ExaminationIntent {
        /// The box of the player who looked.
        player_box: BoxNo,
        /// The box whose hand was looked at.
        hand_box: BoxNo,
        /// Whether the examination was intentional.
        intentional: bool,
    },
    /// Reconstruction allowed or refused (§5.8.6, §5.9: the House's discretion).
    Reconstruction {
        /// Whether the House allows it.
        allowed: bool,
        /// Why, in words.
        note: String,
    },
    /// Shift manager's resolution of a case the rules do not cover (CSP6 §5.24).
    ShiftManager {
        /// The decision, in words.
        decision: String,
    },
}

/// Finance events for the table's drop, fills and credits, per shift.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Encode, Decode, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Finance {
    /// Cash exchanged for chips at the table (goes to the drop box).
    CashBuyIn {
        /// The cash, minor units.
        amount: Money,
    },
    /// Chips issued against a marker (credit instrument), with its number.
    Marker {
        /// The chips issued, minor units.
        amount: Money,
        /// The marker's number.
        marker_no: String,
    },
    /// Chips brought from the cage to the table.
    Fill {
        /// The chips brought, minor units.
        amount: Money,
        /// The fill slip's number.
        slip_no: String,
    },
    /// Chips returned from the table to the cage.
    Credit {
        /// The chips returned, minor units.
        amount: Money,
        /// The credit slip's number.
        slip_no: String,
    },
    /// A count of the chip tray: (denomination, chips) pairs and their total.
    ChipInventory {
        /// Chips per denomination.
        counts: Vec<ChipCount>,
        /// The tray's value, minor units.
        total: Money,
    },
    /// The tray counted as a shift begins: the opener's count, witnessed.
    OpeningInventory {
        /// Chips per denomination.
        counts: Vec<ChipCount>,
        /// The tray's value, minor units.
        total: Money,
        /// Who counted, as the count sheet names them.
        counted_by: String,
    },
    /// The tray counted as a shift ends: the closer's count, witnessed.
    ClosingInventory {
        /// Chips per denomination.
        counts: Vec<ChipCount>,
        /// The tray's value, minor units.
        total: Money,
        /// Who counted, as the count sheet names them.
        counted_by: String,
    },
    /// The drop box is taken from the table to the count room.
    DropBoxRemoved {
        /// The drop box's id, as the count names it.
        drop_box_id: String,
    },
}

/// One denomination in a chip count.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Encode, Decode, JsonSchema)]
pub struct ChipCount {
    /// The chip's value, minor units.
    pub denomination: Money,
    /// How many chips of it.
    pub chips: u32,
}

/// Everything that can happen at a table. JSON: `{"type": "card_dealt", ...fields}`.
/// Only ever append variants (their position is their bincode tag).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Encode, Decode, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventBody {
    /// The table opens with its configuration (rule set, limits, pay tables, jackpot).
    TableOpened {
        /// The rule set, limits, pay tables and jackpot in force from here.
        config: TableConfig,
    },
    /// The table closes: only a `TableOpened` reopens its chain.
    TableClosed,
    /// A shuffle finished. `deck_commitment` = blake3 commitment to the deck order (see
    /// `chain::deck_commitment`), revealed later by `DeckRevealed`.
    ShuffleCompleted {
        /// The commitment; `None` when the shuffle is not committed.
        #[serde(default)]
        deck_commitment: Option<Hash32>,
    },
    /// The deck order and salt behind an earlier commitment (after the round).
    DeckRevealed {
        /// The deck order, first card first.
        order: Vec<Card>,
        /// The salt of the commitment.
        salt: Hash32,
    },
    /// The dealer or the table system announced something to the players.
    Announced {
        /// What was announced.
        announcement: Announcement,
    },
    /// A card left the shoe or shuffler. `position` counts cards in this round's deal
    /// from 1 (the burnt card is 1 when there is one).
    CardDealt {
        /// Where the card went: a box, the dealer, or the burn.
        to: CardTarget,
        /// The card.
        card: Card,
        /// Whether it was dealt face up.
        face_up: bool,
        /// Its place in this round's deal, from 1.
        position: u16,
    },
    /// A card was seen face up when it should not have been (CSP6 §5.8.2, §5.12, §5.16).
    CardExposed {
        /// Whose card it was.
        at: CardTarget,
        /// The card seen.
        card: Card,
        /// Whether a player had already seen the cards dealt to them (§5.12 vs §5.8.2).
        players_had_seen: bool,
    },
    /// The player at `player_box` looked at the hand of `hand_box` (CSP6 §3.7, §5.19).
    HandExamined {
        /// The box of the player who looked.
        player_box: BoxNo,
        /// The box whose hand was looked at.
        hand_box: BoxNo,
    },
    /// A player placed a bet on a box.
    BetPlaced {
        /// The betting box.
        box_no: BoxNo,
        /// The kind of bet.
        kind: BetKind,
        /// The stake placed.
        stake: Stake,
    },
    /// The dealer refused a bet (§5.1, §5.11).
    BetRejected {
        /// The betting box.
        box_no: BoxNo,
        /// The kind of bet.
        kind: BetKind,
        /// The stake refused.
        stake: Stake,
        /// Why, in words.
        reason: String,
    },
    /// A bet's stake changed from `from` to `to`.
    BetChanged {
        /// The betting box.
        box_no: BoxNo,
        /// The kind of bet.
        kind: BetKind,
        /// The stake before.
        from: Stake,
        /// The stake after.
        to: Stake,
    },
    /// A bet was taken off the layout.
    BetWithdrawn {
        /// The betting box.
        box_no: BoxNo,
        /// The kind of bet.
        kind: BetKind,
        /// The stake taken back.
        stake: Stake,
    },
    /// A player's decision for a box. For `Play` the BET/Play stake placed with it.
    Decided {
        /// The betting box.
        box_no: BoxNo,
        /// Play, fold or another choice.
        choice: Choice,
        /// The BET or Play stake placed with a `Play`, minor units.
        #[serde(default)]
        stake: Option<Money>,
    },
    /// The player's hand turned face up at settlement.
    HandRevealed {
        /// The betting box.
        box_no: BoxNo,
        /// The hand's cards.
        cards: Vec<Card>,
    },
    /// The dealer's hand turned face up (CSP6 §3.13).
    DealerRevealed {
        /// The dealer's cards.
        cards: Vec<Card>,
    },
    /// What the dealer actually paid (positive), collected (negative) or returned (0) on
    /// one line of one box: the player's net result, as EXAMPLES.md counts it.
    PaidOut {
        /// The betting box.
        box_no: BoxNo,
        /// The bet line.
        line: PayLine,
        /// Paid (positive), collected (negative) or returned (0), minor units.
        net: Money,
    },
    /// The jackpot display's value (the amount a winner is paid, RULES-NOTES 7).
    JackpotShown {
        /// The jackpot pool.
        pool: PoolId,
        /// The value shown, minor units.
        value: Money,
    },
    /// The jackpot controller registered a hit for a box.
    JackpotHit {
        /// The jackpot pool.
        pool: PoolId,
        /// The box whose hand hit.
        box_no: BoxNo,
        /// The amount the controller registered, minor units.
        amount: Money,
    },
    /// The pool restarted from `value` after a 100% win.
    JackpotReset {
        /// The jackpot pool.
        pool: PoolId,
        /// The value it restarts from, minor units.
        value: Money,
    },
    /// The jackpot system or a betting device stopped working (CSP6 §5.17, §5.18).
    JackpotFault {
        /// The jackpot pool.
        pool: PoolId,
        /// What stopped working, in words.
        description: String,
    },
    /// The jackpot system works again.
    JackpotRestored {
        /// The jackpot pool.
        pool: PoolId,
    },
    /// SSP4 §4.3: the system-selected Magic Card of the round.
    MagicCardSelected {
        /// The Magic Card.
        card: Card,
    },
    /// SSP4 §4.4: the system-selected Lucky Player box.
    LuckyPlayerSelected {
        /// The Lucky Player box.
        box_no: BoxNo,
    },
    /// SSP4 §4.4.1: this table's dealer is the Lucky Dealer.
    LuckyDealerSelected,
    /// A pit employee's decision.
    StaffDecision {
        /// Who decided.
        staff: StaffId,
        /// What was decided.
        ruling: Ruling,
    },
    /// A technical interruption (CSP6 §5.7), e.g. a power failure.
    TechnicalInterruption {
        /// What happened, in words.
        description: String,
    },
    /// Settlement is complete: the round of play ends (CSP6 §1.16).
    RoundClosed,
    /// A finance movement at the table.
    Finance {
        /// The movement.
        entry: Finance,
    },
    /// `key` becomes `device`'s checkpoint key on this chain (a later enrollment of the same
    /// device replaces its key: rotation). `signature` is `admin`'s over
    /// `attest::enrollment_message(table, device, key, Enroll)`; the ledger honours it only
    /// if `admin` is one of its trusted admin keys.
    DeviceEnrolled {
        /// The device enrolled.
        device: DeviceId,
        /// Its new checkpoint key.
        key: PublicKey,
        /// The admin key that signs the enrollment.
        admin: PublicKey,
        /// The admin's signature over `attest::enrollment_message`.
        signature: Signature,
    },
    /// `device`'s `key` is revoked on this chain: checkpoints it signs are refused from here
    /// on. Signed like an enrollment, with action `Revoke`.
    DeviceRevoked {
        /// The device concerned.
        device: DeviceId,
        /// The key revoked.
        key: PublicKey,
        /// The admin key that signs the revocation.
        admin: PublicKey,
        /// The admin's signature over `attest::enrollment_message`.
        signature: Signature,
    },
    /// The dealer `dealer` takes the table; the dealer before leaves it. Sent round-less by
    /// the dealer terminal at the table's opening and at each rotation. A round belongs to
    /// the dealer in place when it begins (hold per dealer). `table_closed` ends a
    /// dealer's time too. No name field: the ledger cannot erase personal data, so the
    /// House's staff system maps ids to names.
    DealerChanged {
        /// The dealer now at the table.
        dealer: StaffId,
    },
}

/// Every event kind's `type` name, in catalogue order: a kind's position is its bincode
/// variant index. Grows only by appending; `schemas/tests/codec.rs` ties it to the enum.
pub const EVENT_KINDS: [&str; 31] = [
    "table_opened",
    "table_closed",
    "shuffle_completed",
    "deck_revealed",
    "announced",
    "card_dealt",
    "card_exposed",
    "hand_examined",
    "bet_placed",
    "bet_rejected",
    "bet_changed",
    "bet_withdrawn",
    "decided",
    "hand_revealed",
    "dealer_revealed",
    "paid_out",
    "jackpot_shown",
    "jackpot_hit",
    "jackpot_reset",
    "jackpot_fault",
    "jackpot_restored",
    "magic_card_selected",
    "lucky_player_selected",
    "lucky_dealer_selected",
    "staff_decision",
    "technical_interruption",
    "round_closed",
    "finance",
    "device_enrolled",
    "device_revoked",
    "dealer_changed",
];

impl EventBody {
    /// The `type` tag of the JSON form, also used in logs and reports.
    pub fn type_name(&self) -> &'static str {
        match self {
            EventBody::TableOpened { .. } => "table_opened",
            EventBody::TableClosed => "table_closed",
            EventBody::ShuffleCompleted { .. } => "shuffle_completed",
            EventBody::DeckRevealed { .. } => "deck_revealed",
            EventBody::Announced { .. } => "announced",
            EventBody::CardDealt { .. } => "card_dealt",
            EventBody::CardExposed { .. } => "card_exposed",
            EventBody::HandExamined { .. } => "hand_examined",
            EventBody::BetPlaced { .. } => "bet_placed",
            EventBody::BetRejected { .. } => "bet_rejected",
            EventBody::BetChanged { .. } => "bet_changed",
            EventBody::BetWithdrawn { .. } => "bet_withdrawn",
            EventBody::Decided { .. } => "decided",
            EventBody::HandRevealed { .. } => "hand_revealed",
            EventBody::DealerRevealed { .. } => "dealer_revealed",
            EventBody::PaidOut { .. } => "paid_out",
            EventBody::JackpotShown { .. } => "jackpot_shown",
            EventBody::JackpotHit { .. } => "jackpot_hit",
            EventBody::JackpotReset { .. } => "jackpot_reset",
            EventBody::JackpotFault { .. } => "jackpot_fault",
            EventBody::JackpotRestored { .. } => "jackpot_restored",
            EventBody::MagicCardSelected { .. } => "magic_card_selected",
            EventBody::LuckyPlayerSelected { .. } => "lucky_player_selected",
            EventBody::LuckyDealerSelected => "lucky_dealer_selected",
            EventBody::StaffDecision { .. } => "staff_decision",
            EventBody::TechnicalInterruption { .. } => "technical_interruption",
            EventBody::RoundClosed => "round_closed",
            EventBody::Finance { .. } => "finance",
            EventBody::DeviceEnrolled { .. } => "device_enrolled",
            EventBody::DeviceRevoked { .. } => "device_revoked",
            EventBody::DealerChanged { .. } => "dealer_changed",
        }
    }
}
