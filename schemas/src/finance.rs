//! Finance per table and shift, and the reports built on it: the read model's
//! shift row, and the bodies `GET /v1/reports` and `roundledger report` return.
//!
//! A shift row holds what the rounds and finance events of one table's shift say: handle
//! per bet line, what the tray took in and paid out (as recorded and as the rules say),
//! jackpot payments apart, buy-ins, markers, fills and credits with their slips, the
//! opening and closing tray counts and the drop boxes removed. Money is integer minor
//! units. Every list is bounded (`SLIPS_MAX`, `DISPUTED_ROUNDS_MAX`); its count and
//! total are kept whole.

use crate::config::{PayLine, RuleSet};
use crate::event::ChipCount;
use crate::ids::{Money, RoundId, Seq, TableId};
use serde::{Deserialize, Serialize};
#[cfg(feature = "openapi")]
use utoipa::ToSchema;

/// Most slips of one kind a shift row lists (the count and total stay whole).
pub const SLIPS_MAX: usize = 64;
/// Most disputed rounds a shift row lists.
pub const DISPUTED_ROUNDS_MAX: usize = 64;
/// Most drop boxes a shift row lists.
pub const DROP_BOXES_MAX: usize = 8;
/// Most dealers a shift row keeps apart; later ones share `MORE_DEALERS`'s part.
pub const DEALERS_PER_SHIFT_MAX: usize = 32;
/// The dealer part of rounds with no dealer named (no `dealer_changed` before them).
pub const NO_DEALER: &str = "(no dealer)";
/// The dealer part of the dealers past `DEALERS_PER_SHIFT_MAX` in one table's shift.
pub const MORE_DEALERS: &str = "(more dealers)";
/// Most groups one report holds.
pub const REPORT_GROUPS_MAX: usize = 10_000;
/// Most variances one report lists (its groups' sums stay whole).
pub const REPORT_VARIANCES_MAX: usize = 1_000;

/// One slip, marker or buy-in: its number ("" for a cash buy-in) and the event behind it.
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slip {
    /// The slip or marker number; "" for a cash buy-in.
    pub no: String,
    /// The amount, minor units.
    pub amount: Money,
    /// The seq of the finance event behind it.
    pub seq: Seq,
    /// The event's device time, UTC ns.
    pub at_ns: i64,
}

/// Slips of one kind in a shift: the first `SLIPS_MAX`, and the count and total of all.
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slips {
    /// The total of every slip, minor units.
    pub total: Money,
    /// How many slips in all.
    pub count: u64,
    /// The first `SLIPS_MAX` slips, in event order.
    pub items: Vec<Slip>,
}

impl Slips {
    /// Adds one slip; lists it while the list has room.
    pub fn add(&mut self, slip: Slip) {
        self.total = self.total + slip.amount;
        self.count += 1;
        if self.items.len() < SLIPS_MAX {
            self.items.push(slip);
        }
    }

    /// Adds every slip of `other` (a later part of the same shift).
    pub fn merge(&mut self, other: &Slips) {
        self.total = self.total + other.total;
        self.count += other.count;
        let room = SLIPS_MAX.saturating_sub(self.items.len());
        self.items.extend(other.items.iter().take(room).cloned());
    }
}

/// A tray count: its total, by denomination, who counted, and the event.
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrayCount {
    /// The tray's value, minor units.
    pub total: Money,
    /// Chips per denomination.
    pub counts: Vec<ChipCount>,
    /// Who counted, as the count sheet names them.
    pub counted_by: String,
    /// The seq of the count's event.
    pub seq: Seq,
    /// The event's device time, UTC ns.
    pub at_ns: i64,
}

/// A drop box taken from the table: its id and the event.
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DropBoxRef {
    /// The drop box's id.
    pub drop_box_id: String,
    /// The seq of its `DropBoxRemoved` event.
    pub seq: Seq,
    /// The event's device time, UTC ns.
    pub at_ns: i64,
}

/// A round whose recorded payouts differ from the rules: the players' net both ways.
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DisputedRound {
    /// The round.
    pub round: RoundId,
    /// What the dealer paid the players, net (collected stakes negative).
    pub recorded: Money,
    /// What the rules say was due, net.
    pub due: Money,
}

/// What a tray took in (lost bets) and paid out (won bets), and jackpots paid apart.
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tray {
    /// Stakes collected from losing bets, minor units.
    pub taken_in: Money,
    /// Winnings paid to winning bets, minor units.
    pub paid_out: Money,
    /// Jackpot awards: the jackpot system pays them, not the tray.
    pub jackpot_paid: Money,
}

impl Tray {
    /// The tray's win: taken in less paid out.
    pub fn win(&self) -> Money {
        self.taken_in - self.paid_out
    }

    /// Adds another tray's figures to this one.
    pub fn merge(&mut self, o: &Tray) {
        self.taken_in = self.taken_in + o.taken_in;
        self.paid_out = self.paid_out + o.paid_out;
        self.jackpot_paid = self.jackpot_paid + o.jackpot_paid;
    }
}

/// Handle on one bet line of one rule set under one set of pay tables: stakes, their
/// squares (for the hold's confidence interval, minor units squared) and the bets. The
/// stakes are those the round's settlement holds: bets in place at "no more bets"; a bet
/// placed after it is a finding, not handle. A report prices it: theoretical win = stake
/// x the edge of its pay tables, in ppb, rounded once over the lines.
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handle {
    /// The rule set.
    pub rule_set: RuleSet,
    /// The bet line.
    pub line: PayLine,
    /// The pay tables in force: BLAKE3 of the configured ones in hex, where they reprice a
    /// line (`rules::edge::pricing_key`); `None` for the seed's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pay_tables: Option<String>,
    /// The sum of the stakes, minor units.
    pub stake: Money,
    /// The sum of the squared stakes, minor units squared; a decimal string in JSON.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    #[serde(with = "u128_text")]
    pub stake_squared: u128,
    /// How many bets.
    pub bets: u64,
}

/// One dealer's part of a table's shift: the rounds that began while the dealer was in
/// place, their handle and their tray.
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DealerPart {
    /// The dealer's id, `NO_DEALER` or `MORE_DEALERS`.
    pub dealer: String,
    /// Rounds the dealer began.
    pub rounds: u64,
    /// By (rule set, line), in that order.
    pub handle: Vec<Handle>,
    /// The tray as the dealer recorded it.
    pub recorded: Tray,
    /// The tray as the rules say it should be.
    pub rules: Tray,
    /// The dealer's rounds whose recorded payouts differ from the rules.
    pub disputed_count: u64,
}

/// A table's shift as the read model keeps it.
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShiftRow {
    /// The table; `None` only in a default row.
    pub table: Option<TableId>,
    /// `2026-11-25/2`.
    pub shift: String,
    /// The shift's start, UTC ns (inclusive).
    pub starts_at_ns: i64,
    /// The shift's end, UTC ns (exclusive).
    pub ends_at_ns: i64,
    /// The rule set of its last round.
    pub rule_set: Option<RuleSet>,
    /// Some round was played under pay tables its configuration set.
    pub pay_tables_configured: bool,
    /// Rounds that began in the shift.
    pub rounds: u64,
    /// By (rule set, line), in that order.
    pub handle: Vec<Handle>,
    /// The tray as the dealers recorded it.
    pub recorded: Tray,
    /// The tray as the rules say it should be.
    pub rules: Tray,
    /// Cash buy-ins.
    pub buy_ins: Slips,
    /// Markers issued.
    pub markers: Slips,
    /// Fills from the cage.
    pub fills: Slips,
    /// Credits to the cage.
    pub credits: Slips,
    /// The shift's opening count (nearest its start; the last one if several).
    pub opening: Option<TrayCount>,
    /// The shift's closing count (nearest its end; the last one if several).
    pub closing: Option<TrayCount>,
    /// The first `DROP_BOXES_MAX` drop boxes removed.
    pub drop_boxes: Vec<DropBoxRef>,
    /// The first `DISPUTED_ROUNDS_MAX` disputed rounds.
    pub disputed: Vec<DisputedRound>,
    /// How many rounds were disputed in all.
    pub disputed_count: u64,
    /// Per dealer, in the order they first dealt in the shift (`DEALERS_PER_SHIFT_MAX`).
    pub dealers: Vec<DealerPart>,
    /// Device time of its first event besides tray counts and drop boxes (a round by its
    /// start): an opening count after it is not the shift's opening.
    #[serde(default)]
    pub first_play_at_ns: Option<i64>,
    /// Device time of its last such event or opening count: a closing count before it is
    /// not the shift's closing (play went on after it).
    #[serde(default)]
    pub last_play_at_ns: Option<i64>,
}

/// A link from a figure to what it is computed from.
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    /// `round`, `slip`, `tray_count`, `drop_box`, `count`.
    pub kind: String,
    /// The table it belongs to.
    pub table: TableId,
    /// The event's seq, when it is one event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<Seq>,
    /// The round, when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<RoundId>,
    /// The API path that shows it (a round's finance summary), when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub href: Option<String>,
    /// What the link shows, in words.
    pub text: String,
}

/// Why a figure differs from another, as the shared cause rules name it.
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Recorded payouts above the rules' (rules win > recorded win).
    Overpayment,
    /// Recorded payouts below the rules'.
    Underpayment,
    /// The next opening count equals the expected closing, not the counted one.
    MiscountedCloser,
    /// The next opening equals the counted closing, above the expected: chips came
    /// without a fill slip.
    MissingFillSlip,
    /// A tray variance the next opening does not explain.
    UnexplainedInventory,
    /// The counted drop is below the recorded buy-ins and markers.
    ShortDrop,
    /// The counted drop is above them.
    OverDrop,
    /// A drop box removed but not yet counted: no accounting win.
    NotYetCounted,
    /// No opening or no closing count: no tray check.
    TrayCountMissing,
}

/// One variance of one table's shift, with its cause and the links behind it.
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Variance {
    /// The table.
    pub table: TableId,
    /// The shift, e.g. `2026-11-25/2`.
    pub shift: String,
    /// The cause the shared rules name.
    pub cause: Cause,
    /// The difference, minor units: counted less expected, recorded less rules, or
    /// counted drop less recorded buy-ins and markers.
    pub amount: Money,
    /// The variance explained, in words.
    pub text: String,
    /// What the figures are computed from.
    pub links: Vec<Link>,
}

/// Handle and theoretical win on one bet line of one rule set.
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandleLine {
    /// The rule set.
    pub rule_set: RuleSet,
    /// The bet line.
    pub line: PayLine,
    /// The sum of the stakes, minor units.
    pub stake: Money,
    /// How many bets.
    pub bets: u64,
    /// The house edge in ppm (`rules::edge`); `None`: not known for this line, or pending.
    pub edge_ppm: Option<i64>,
    /// Handle times edge; `None` with the edge.
    pub theoretical_win: Option<Money>,
    /// A configured pay table decides this line and its edge is not priced yet: no
    /// theoretical win until it is ("theoretical pending").
    #[serde(default)]
    pub theoretical_pending: bool,
}

/// One group of a report: a table, pit, game, shift, day or dealer. A dealer group has no
/// drop, counts or accounting win (they are the table's): its actual win is the recorded.
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportGroup {
    /// The group's key: a table id, pit, game, shift, day or dealer.
    pub key: String,
    /// Table shifts summed in it.
    pub table_shifts: u64,
    /// Rounds played in it.
    pub rounds: u64,
    /// Counted drop (cash and markers); `None` while a box of it is not yet counted.
    pub drop: Option<Money>,
    /// Drop boxes counted.
    pub boxes_counted: u64,
    /// Drop boxes removed but not yet counted.
    pub boxes_not_counted: u64,
    /// Cash buy-ins, minor units; `None` for a dealer group (the slips are the table's).
    pub buy_ins: Option<Money>,
    /// Markers issued, minor units; `None` for a dealer group.
    pub markers: Option<Money>,
    /// Fills from the cage, minor units; `None` for a dealer group.
    pub fills: Option<Money>,
    /// Credits to the cage, minor units; `None` for a dealer group.
    pub credits: Option<Money>,
    /// Each table day's first opening tray count, summed, minor units; `None` while one
    /// is not yet counted (`not_known` says which).
    pub opening: Option<Money>,
    /// Each table day's last closing tray count, summed; `None` while one is not yet counted.
    pub closing: Option<Money>,
    /// Drop + credits + closing - opening - fills; `None` until every box is counted.
    pub win_accounting: Option<Money>,
    /// The win as the dealers recorded it: taken in less paid out.
    pub win_recorded: Money,
    /// The win as the rules say it should be.
    pub win_rules: Money,
    /// Jackpots paid as recorded, minor units.
    pub jackpot_paid_recorded: Money,
    /// Jackpots due under the rules, minor units.
    pub jackpot_paid_rules: Money,
    /// Accounting win / drop, basis points.
    pub hold_bp: Option<i64>,
    /// Theoretical win / drop, basis points.
    pub hold_theoretical_bp: Option<i64>,
    /// Handle and theoretical win per (rule set, line).
    pub handle: Vec<HandleLine>,
    /// Handle times edge over the lines with a known edge. While `theoretical_pending`,
    /// it leaves out the pending lines: the theoretical holds are `None` and no alarm.
    pub theoretical_win: Money,
    /// Some line's edge is not priced yet (`HandleLine::theoretical_pending`).
    #[serde(default)]
    pub theoretical_pending: bool,
    /// Handle on the lines whose edge is pending.
    #[serde(default)]
    pub handle_pending: Money,
    /// The win's 95% interval: theoretical win minus and plus two standard deviations.
    pub win_low: Money,
    /// Theoretical win plus two standard deviations.
    pub win_high: Money,
    /// The win judged against the interval: accounting if counted, else recorded.
    pub actual_win: Money,
    /// The actual win lies outside the interval.
    pub hold_alarm: bool,
    /// Handle on lines with no known edge (jackpot bets).
    pub handle_without_edge: Money,
    /// Handle on lines with a known edge: the units the edges are per (the Ante of a
    /// main game, with its BET/Play priced in; the side bets).
    pub handle_priced: Money,
    /// Actual win / priced handle, basis points: the hold a dealer group shows, whose
    /// drop is the table's, not the dealer's.
    pub hold_handle_bp: Option<i64>,
    /// Theoretical win / priced handle, basis points: the edge the group's bets carry.
    pub hold_handle_theoretical_bp: Option<i64>,
    /// Variances found in its table shifts; a dealer's group: the disputed rounds they
    /// dealt (their payout errors), as a dealer has no counts or slips of their own.
    pub variances: u64,
    /// Why a figure of the group is `None`: what is not yet counted, where (at most
    /// `NOT_KNOWN_MAX` lines, the last saying how many more).
    #[serde(default)]
    pub not_known: Vec<String>,
}

/// Most `ReportGroup::not_known` lines.
pub const NOT_KNOWN_MAX: usize = 16;

/// A finance report: its span, groups, their total and the variances behind them.
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinanceReport {
    /// `shift 2026-11-25/2`, `day 2026-11-25`, `mtd 2026-11-25`, `ytd ...`, `range A..B`.
    pub span: String,
    /// The span's start, UTC ns (inclusive).
    pub starts_at_ns: i64,
    /// The span's end, UTC ns (exclusive).
    pub ends_at_ns: i64,
    /// The property's day rule, `06:00 Asia/Singapore 06:00,14:00,22:00`.
    pub day_rule: String,
    /// `table`, `pit`, `game`, `shift`, `day` or `dealer`.
    pub group_by: String,
    /// One group per key, in key order (at most `REPORT_GROUPS_MAX`).
    pub groups: Vec<ReportGroup>,
    /// Every group summed.
    pub total: ReportGroup,
    /// The first `REPORT_VARIANCES_MAX` variances, by shift and table.
    pub variances: Vec<Variance>,
    /// How many variances in all.
    pub variances_total: u64,
    /// No table played in the span: every figure is of no play, not a zero result.
    #[serde(default)]
    pub no_play: bool,
}

/// One line of a round as finance sees it: what was paid and what was due.
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundLine {
    /// The betting box.
    pub box_no: crate::ids::BoxNo,
    /// The bet line.
    pub line: PayLine,
    /// The dealer's recorded net, minor units.
    pub recorded: Money,
    /// The net the rules say was due, minor units.
    pub due: Money,
}

/// A round's finance summary: no cards, no surveillance detail.
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundFinance {
    /// The table.
    pub table: TableId,
    /// The round.
    pub round: RoundId,
    /// The rule set; `None` when no table config precedes it.
    pub rule_set: Option<RuleSet>,
    /// Device time of the round's first event, UTC ns.
    pub opened_at_ns: i64,
    /// The seq of the round's first event.
    pub first_seq: Seq,
    /// The seq of the round's last event.
    pub last_seq: Seq,
    /// What was paid and due, per box and line.
    pub lines: Vec<RoundLine>,
    /// The lines' recorded nets summed, minor units.
    pub recorded: Money,
    /// The lines' due nets summed, minor units.
    pub due: Money,
    /// The replay's verdict.
    pub verdict: crate::report::Verdict,
    /// The round's findings with their clauses: what explains a payout variance. Finance
    /// reads these; the cards and the step-by-step replay stay surveillance's.
    pub findings: Vec<crate::api::FindingView>,
}

/// `u128` as a decimal string: JSON numbers lose precision past 2^53 in many readers.
mod u128_text {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &u128, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u128, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// One jackpot pool's liability over one gaming day (by arrival, the House's order).
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolLiability {
    /// The jackpot pool.
    pub pool: crate::ids::PoolId,
    /// The gaming day, `YYYY-MM-DD`.
    pub day: String,
    /// Tables that contributed to, displayed or hit the pool by the day's end, sorted.
    pub tables: Vec<TableId>,
    /// The recomputed pool at the day's start (0 before the pool was first shown).
    pub opening: Money,
    /// Contributions of the day's accepted jackpot stakes.
    pub contributions: Money,
    /// Jackpot hits registered.
    pub hits: u64,
    /// Jackpots paid, minor units.
    pub paid: Money,
    /// Pool resets.
    pub resets: u64,
    /// The recomputed pool at the day's end.
    pub closing: Money,
    /// The last value the controller displayed before the day's end.
    pub displayed: Option<Money>,
    /// `displayed` less the pool recomputed at the moment it was displayed (not the
    /// closing: rounds after the display move the pool on).
    pub difference: Option<Money>,
    /// Displays of the day that differed from the recomputed pool.
    pub mismatches: u64,
}
