//! The five Parquet tables of a sealed day, as data: each column's name, type, whether it
//! may be null, and what it means. The Arrow schemas and docs/PARQUET.md follow from it.

use arrow_schema::{DataType, Field, Schema, TimeUnit};
use std::collections::HashMap;
use std::sync::Arc;

/// The version of these schemas, in every file's key-value metadata. A column's meaning
/// never changes within a version; new columns go at the end.
pub const SCHEMA_VERSION: &str = "1";

/// A column's type. Money is `MinorUnits`: Int64 minor units of the row's `currency`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// UTF-8 text.
    Text,
    /// UInt64: seqs, round numbers.
    U64,
    /// UInt32: boxes and counts.
    U32,
    /// Int64 minor units of the row's currency (cents).
    MinorUnits,
    /// Timestamp(Nanosecond, "UTC").
    Time,
    /// Boolean.
    Bool,
    /// List of UInt64 (event seqs).
    Seqs,
    /// Int64 parts per million of the box's Ante (expected values).
    Ppm,
}

impl Kind {
    /// The Arrow type the column is written with.
    pub fn data_type(self) -> DataType {
        match self {
            Kind::Text => DataType::Utf8,
            Kind::U64 => DataType::UInt64,
            Kind::U32 => DataType::UInt32,
            Kind::MinorUnits => DataType::Int64,
            Kind::Time => DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            Kind::Bool => DataType::Boolean,
            Kind::Seqs => DataType::List(Arc::new(seq_item())),
            Kind::Ppm => DataType::Int64,
        }
    }

    /// The unit a reader states with a figure of this column.
    pub fn unit(self) -> &'static str {
        match self {
            Kind::MinorUnits => "minor units of `currency`",
            Kind::Time => "UTC ns",
            Kind::Seqs => "event seqs",
            Kind::Ppm => "ppm of the Ante",
            _ => "",
        }
    }
}

/// The item field of a `Seqs` column.
pub fn seq_item() -> Field {
    Field::new("item", DataType::UInt64, false)
}

/// One column of a table.
#[derive(Debug)]
pub struct Column {
    /// Its name, snake_case (no SQL reserved word).
    pub name: &'static str,
    /// Its type.
    pub kind: Kind,
    /// Whether it may be null; the meaning says when it is.
    pub nullable: bool,
    /// What it holds, for docs/PARQUET.md.
    pub meaning: &'static str,
}

/// One Parquet table of a day: `<day>.<name>.parquet`.
#[derive(Debug)]
pub struct TableSpec {
    /// The file name's middle part and the table's name.
    pub name: &'static str,
    /// Its columns, in file order.
    pub columns: &'static [Column],
}

impl TableSpec {
    /// The Arrow schema, with the day's metadata (`metadata`) attached.
    pub fn schema(&self, metadata: HashMap<String, String>) -> Arc<Schema> {
        let fields: Vec<Field> = self
            .columns
            .iter()
            .map(|c| Field::new(c.name, c.kind.data_type(), c.nullable))
            .collect();
        Arc::new(Schema::new_with_metadata(fields, metadata))
    }
}

const fn col(name: &'static str, kind: Kind, nullable: bool, meaning: &'static str) -> Column {
    Column {
        name,
        kind,
        nullable,
        meaning,
    }
}

const GAMING_DAY: Column = col(
    "gaming_day",
    Kind::Text,
    false,
    "The sealed gaming day that holds the row's first event by arrival, YYYY-MM-DD.",
);
const TABLE_ID: Column = col("table_id", Kind::Text, false, "The table, e.g. CSP-01.");
const ROUND_NO: Column = col(
    "round_no",
    Kind::U64,
    false,
    "The round's number at its table.",
);
const ROUND_SHIFT: Column = col(
    "shift",
    Kind::Text,
    false,
    "The shift `<day>/<n>` of the round's first event by device time: where finance reports count it.",
);
const CURRENCY: Column = col(
    "currency",
    Kind::Text,
    true,
    "ISO 4217 code of the money columns, from the table's configuration in force; null when none precedes.",
);

/// `rounds`: one row per round that began in the day.
pub const ROUNDS: TableSpec = TableSpec {
    name: "rounds",
    columns: &[
        GAMING_DAY,
        ROUND_SHIFT,
        TABLE_ID,
        ROUND_NO,
        col("rule_set", Kind::Text, true, "CSP6, MLP3, SSP4, CS51 or TCP3; null when no configuration precedes the round."),
        CURRENCY,
        col("first_seq", Kind::U64, false, "Seq of the round's first event in its table's chain."),
        col("last_seq", Kind::U64, false, "Seq of the round's last event."),
        col("opened_at", Kind::Time, false, "Device time of the round's first event."),
        col("closed_at", Kind::Time, true, "Device time of its RoundClosed; null when it never closed."),
        col("received_at", Kind::Time, false, "When the House received the round's first event (its stream timestamp)."),
        col("verdict", Kind::Text, false, "clean, irregular, disputed or void."),
        col("settled", Kind::Bool, false, "Whether the rules engine settled the round; when false the money columns are null and a finding says why."),
        col("dealer_hand", Kind::Text, true, "The dealer's hand class (snake_case); null when unsettled or void."),
        col("dealer_qualifies", Kind::Bool, true, "Whether the dealer's hand qualifies; null when unsettled."),
        col("boxes", Kind::U32, true, "Boxes settled; null when unsettled."),
        col("findings", Kind::U32, false, "Findings of the round (rows of `findings`)."),
        col("disputes", Kind::U32, false, "Bet lines whose recorded payout differs from the rules."),
        col("handle_minor", Kind::MinorUnits, true, "Stakes on the bet lines (`bet_lines.counts_in_handle`); null when unsettled."),
        col("net_rules_minor", Kind::MinorUnits, true, "The players' net result as the rules settle it; null when unsettled."),
        col("net_recorded_minor", Kind::MinorUnits, true, "The players' net result as the dealer recorded it; null when unsettled."),
        col("win_rules_minor", Kind::MinorUnits, true, "The tray's win as the rules say: taken in less paid out, pool awards apart; null when unsettled."),
        col("win_recorded_minor", Kind::MinorUnits, true, "The tray's win as recorded; null when unsettled."),
        col("jackpot_paid_rules_minor", Kind::MinorUnits, true, "Jackpot awards the pool pays under the rules; null when unsettled."),
        col("jackpot_paid_recorded_minor", Kind::MinorUnits, true, "Jackpot awards the pool paid as recorded; null when unsettled."),
    ],
};

/// `bet_lines`: one row per (round, box, pay line) of a settled round.
pub const BET_LINES: TableSpec = TableSpec {
    name: "bet_lines",
    columns: &[
        GAMING_DAY,
        ROUND_SHIFT,
        TABLE_ID,
        ROUND_NO,
        col("rule_set", Kind::Text, false, "The rule set the round was settled under."),
        CURRENCY,
        col("box_no", Kind::U32, false, "The betting box, 1-based."),
        col("line", Kind::Text, false, "The pay line: ante, bet, play, pair_plus, progressive, jackpot_player, jackpot_dealer, bonus, ante_bonus, envy."),
        col("settlement_lines", Kind::U32, false, "Settlement lines of this kind on the box; 0 when only a recorded payout names the line."),
        col("counts_in_handle", Kind::Bool, false, "The line is a bet placed (ante, BET, play, side bets), so its stake is handle; false for pay-only lines (ante_bonus, envy)."),
        col("stake_minor", Kind::MinorUnits, true, "The stake settled on the line; null when no settlement line has it."),
        col("outcome", Kind::Text, true, "win, lose, stand_off or returned; null when no settlement line has it."),
        col("clause", Kind::Text, true, "The rule-book clause that decided it, e.g. `CSP6 3.13`."),
        col("net_rules_minor", Kind::MinorUnits, false, "The player's net on the line as the rules settle it: paid positive, collected negative."),
        col("net_recorded_minor", Kind::MinorUnits, false, "The player's net as the dealer recorded it."),
        col("difference_minor", Kind::MinorUnits, false, "net_recorded_minor - net_rules_minor: positive overpaid, negative underpaid."),
        col("pool_paid_rules_minor", Kind::MinorUnits, false, "The part of the rules' net the jackpot pool pays, not the tray."),
        col("pool_paid_recorded_minor", Kind::MinorUnits, false, "The part of the recorded net the jackpot pool paid."),
        col("win_rules_minor", Kind::MinorUnits, false, "The tray's win on the line under the rules: pool_paid_rules_minor - net_rules_minor."),
        col("win_recorded_minor", Kind::MinorUnits, false, "The tray's win on the line as recorded: pool_paid_recorded_minor - net_recorded_minor."),
    ],
};

/// `findings`: one row per finding of a round that began in the day.
pub const FINDINGS: TableSpec = TableSpec {
    name: "findings",
    columns: &[
        GAMING_DAY,
        ROUND_SHIFT,
        TABLE_ID,
        ROUND_NO,
        col(
            "rule_set",
            Kind::Text,
            true,
            "The round's rule set; null when no configuration preceded it.",
        ),
        col(
            "opened_at",
            Kind::Time,
            false,
            "Device time of the round's first event.",
        ),
        col(
            "code",
            Kind::Text,
            false,
            "The stable finding code, e.g. CSP6-5.9-burn-card-missing.",
        ),
        col(
            "clause",
            Kind::Text,
            false,
            "The clause in the rule book's words, e.g. `CSP6 §5.9`.",
        ),
        col("severity", Kind::Text, false, "info, warning or critical."),
        col(
            "box_no",
            Kind::U32,
            true,
            "The box concerned; null when the finding concerns the round.",
        ),
        col("seqs", Kind::Seqs, false, "The events involved, by seq."),
        col(
            "explanation",
            Kind::Text,
            false,
            "What happened and what the clause asks, in words.",
        ),
    ],
};

/// `finance_lines`: one row per finance event of the day.
pub const FINANCE_LINES: TableSpec = TableSpec {
    name: "finance_lines",
    columns: &[
        GAMING_DAY,
        col("shift", Kind::Text, false, "The shift `<day>/<n>` finance reports count the event in: by device time; a tray count or drop box removal near a shift change goes across it."),
        TABLE_ID,
        col("seq", Kind::U64, false, "The event's seq in its table's chain."),
        col("stream_seq", Kind::U64, false, "Its JetStream stream seq: the House's arrival order across tables."),
        col("kind", Kind::Text, false, "cash_buy_in, marker, fill, credit, chip_inventory, opening_inventory, closing_inventory or drop_box_removed."),
        col("amount_minor", Kind::MinorUnits, true, "The amount or counted tray total; null for drop_box_removed, which carries none."),
        CURRENCY,
        col("reference", Kind::Text, true, "The marker, fill or credit slip number, or the drop box id; null when the kind has none."),
        col("counted_by", Kind::Text, true, "Who counted an opening or closing tray; null for other kinds."),
        col("occurred_at", Kind::Time, false, "Device time of the event."),
        col("received_at", Kind::Time, false, "When the House received it (its stream timestamp)."),
    ],
};

/// `decisions`: one row per recorded decision (Play, Fold, walk-away, refusal) of a round
/// that began in the day, with the strategy verdict of `analytics::verdict`.
pub const DECISIONS: TableSpec = TableSpec {
    name: "decisions",
    columns: &[
        GAMING_DAY,
        ROUND_SHIFT,
        TABLE_ID,
        ROUND_NO,
        col("rule_set", Kind::Text, true, "The round's rule set; null when no configuration preceded it."),
        col("box_no", Kind::U32, false, "The betting box, 1-based."),
        col("decision", Kind::Text, false, "play, fold, walk_away or refuse_to_reveal, as recorded."),
        col("player_cards", Kind::Text, false, "The box's cards in deal order, e.g. `Ah Kd 9c`."),
        col("dealer_seen", Kind::Text, false, "The dealer's cards the player could see when deciding: the up card, an exposed card."),
        col("dealer_cards", Kind::Text, false, "The dealer's whole hand, in deal order."),
        col("optimal_play", Kind::Text, true, "raise or fold: the optimal strategy on what the player could see (computed by the rules engine); null when not judged."),
        col("optimal_gain_ppm", Kind::Ppm, true, "Expected net of a raise over a fold on that view; null when not judged."),
        col("best_given_dealer", Kind::Text, true, "raise or fold: the best play given the dealer's whole hand; null when not judged."),
        col("best_given_dealer_gain_ppm", Kind::Ppm, true, "Net of a raise over a fold against the dealer's hand; null when not judged."),
        col("verdict", Kind::Text, false, "optimal, off_strategy, or not_judged (a refusal, a void round, an incomplete hand or a repeated card)."),
    ],
};

/// Every table a day's Parquet holds, in the order they are written.
pub const TABLES: [&TableSpec; 5] = [&ROUNDS, &BET_LINES, &FINDINGS, &FINANCE_LINES, &DECISIONS];

/// The column tables of docs/PARQUET.md: one section per table, one line per column.
pub fn markdown() -> String {
    let mut o = String::new();
    for t in TABLES {
        o.push_str(&format!(
            "### `{}` (`<day>.{}.parquet`)\n\n| column | type | null | unit | meaning |\n|---|---|---|---|---|\n",
            t.name, t.name
        ));
        for c in t.columns {
            let null = if c.nullable { "yes" } else { "no" };
            o.push_str(&format!(
                "| `{}` | {} | {null} | {} | {} |\n",
                c.name,
                c.kind.data_type(),
                c.kind.unit(),
                c.meaning.replace('|', "\\|")
            ));
        }
        o.push('\n');
    }
    o
}
