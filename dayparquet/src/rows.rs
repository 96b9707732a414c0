//! A round's rows and a finance event's row, in the columns of `schema`. A bet line's
//! nets come from `readside::shiftrow::nets`, the same as finance reports, and the pool's
//! part of them comes from `readside::shiftrow::pool_split`, the report's own rule.

use crate::schema::{BET_LINES, DECISIONS, FINANCE_LINES, FINDINGS, ROUNDS};
use crate::sink::Value;
use readside::shiftrow::{nets, pool_split};
use schemas::report::RoundReport;
use schemas::settle::Settlement;
use schemas::{BetKind, BoxNo, Finance, Money, PayLine};
use std::collections::BTreeMap;

/// What the day's stream knows of a round beside its report.
#[derive(Debug, Clone)]
pub struct RoundCtx {
    /// The sealed day.
    pub day: String,
    /// The shift of the round's first event, by device time.
    pub shift: String,
    /// The currency of the configuration in force when it began.
    pub currency: Option<String>,
    /// When its first event arrived, UTC ns.
    pub received_at_ns: i64,
}

/// One (box, line) of a settled round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineRow {
    /// The betting box.
    pub box_no: BoxNo,
    /// The pay line.
    pub line: PayLine,
    /// Settlement lines of this kind on the box.
    pub settlement_lines: u32,
    /// The first such line's stake; `None` when only a recorded payout names the line.
    pub stake: Option<Money>,
    /// The first such line's outcome, snake_case.
    pub outcome: Option<String>,
    /// The first such line's clause.
    pub clause: Option<String>,
    /// The players' net as the rules settle it.
    pub net_rules: Money,
    /// The players' net as recorded.
    pub net_recorded: Money,
    /// The pool's part of `net_rules`.
    pub pool_rules: Money,
    /// The pool's part of `net_recorded`.
    pub pool_recorded: Money,
}

impl LineRow {
    fn counts_in_handle(&self) -> bool {
        BetKind::ALL.iter().any(|k| k.line() == self.line)
    }
}

/// A value's snake_case name, as its JSON form writes it.
pub fn snake<T: serde::Serialize>(x: &T) -> String {
    match serde_json::to_value(x) {
        Ok(serde_json::Value::String(s)) => s,
        other => format!("{other:?}"),
    }
}

/// The (box, line) rows of a settled round, in (box, line) order.
pub fn line_rows(r: &RoundReport, s: &Settlement) -> Vec<LineRow> {
    let n = nets(r);
    let pool_rules = pool_split(&n.due, s);
    let pool_recorded = pool_split(&n.recorded, s);
    let mut keys: Vec<(BoxNo, PayLine)> = n.due.keys().chain(n.recorded.keys()).copied().collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|(box_no, line)| {
            let lines: Vec<&schemas::settle::SettlementLine> = s
                .boxes
                .iter()
                .filter(|b| b.box_no == box_no)
                .flat_map(|b| b.lines.iter().filter(|l| l.line == line))
                .collect();
            let first = lines.first();
            let get = |m: &BTreeMap<(BoxNo, PayLine), Money>| {
                m.get(&(box_no, line)).copied().unwrap_or(Money::ZERO)
            };
            LineRow {
                box_no,
                line,
                settlement_lines: lines.len() as u32,
                stake: first.map(|l| l.stake),
                outcome: first.map(|l| snake(&l.outcome)),
                clause: first.map(|l| l.clause.clone()),
                net_rules: get(&n.due),
                net_recorded: get(&n.recorded),
                pool_rules: get(&pool_rules),
                pool_recorded: get(&pool_recorded),
            }
        })
        .collect()
}

fn text(s: &str) -> Value {
    Value::Text(Some(s.to_string()))
}

fn minor(m: Money) -> Value {
    Value::Minor(Some(m.0))
}

/// The round's money columns summed over its lines.
struct Sums {
    handle: Money,
    net_rules: Money,
    net_recorded: Money,
    win_rules: Money,
    win_recorded: Money,
    pool_rules: Money,
    pool_recorded: Money,
}

fn sums(lines: &[LineRow]) -> Sums {
    let mut s = Sums {
        handle: Money::ZERO,
        net_rules: Money::ZERO,
        net_recorded: Money::ZERO,
        win_rules: Money::ZERO,
        win_recorded: Money::ZERO,
        pool_rules: Money::ZERO,
        pool_recorded: Money::ZERO,
    };
    for l in lines {
        if l.counts_in_handle() {
            s.handle = s.handle + l.stake.unwrap_or(Money::ZERO);
        }
        s.net_rules = s.net_rules + l.net_rules;
        s.net_recorded = s.net_recorded + l.net_recorded;
        s.win_rules = s.win_rules + (l.pool_rules - l.net_rules);
        s.win_recorded = s.win_recorded + (l.pool_recorded - l.net_recorded);
        s.pool_rules = s.pool_rules + l.pool_rules;
        s.pool_recorded = s.pool_recorded + l.pool_recorded;
    }
    s
}

/// The round's row of `rounds`, given its line rows (empty when unsettled).
pub fn round_row(r: &RoundReport, ctx: &RoundCtx, lines: &[LineRow]) -> Vec<Value> {
    let s = r.settlement.as_ref();
    let sum = s.map(|_| sums(lines));
    let money = |f: fn(&Sums) -> Money| Value::Minor(sum.as_ref().map(|x| f(x).0));
    let row = vec![
        text(&ctx.day),
        text(&ctx.shift),
        text(r.table.as_str()),
        Value::U64(r.round.0),
        Value::Text(r.rule_set.map(|g| g.code().to_string())),
        Value::Text(ctx.currency.clone()),
        Value::U64(r.first_seq.0),
        Value::U64(r.last_seq.0),
        Value::Time(Some(r.opened_at_ns)),
        Value::Time(r.closed_at_ns),
        Value::Time(Some(ctx.received_at_ns)),
        text(&snake(&r.verdict)),
        Value::Bool(Some(s.is_some())),
        Value::Text(s.and_then(|s| s.dealer_hand).map(|h| snake(&h))),
        Value::Bool(s.map(|s| s.dealer_qualifies)),
        Value::U32(s.map(|s| s.boxes.len() as u32)),
        Value::U32(Some(r.findings.len() as u32)),
        Value::U32(Some(r.disputes.len() as u32)),
        money(|x| x.handle),
        money(|x| x.net_rules),
        money(|x| x.net_recorded),
        money(|x| x.win_rules),
        money(|x| x.win_recorded),
        money(|x| x.pool_rules),
        money(|x| x.pool_recorded),
    ];
    debug_assert_eq!(row.len(), ROUNDS.columns.len());
    row
}

/// A line's row of `bet_lines`.
pub fn bet_line_row(r: &RoundReport, s: &Settlement, ctx: &RoundCtx, l: &LineRow) -> Vec<Value> {
    let row = vec![
        text(&ctx.day),
        text(&ctx.shift),
        text(r.table.as_str()),
        Value::U64(r.round.0),
        text(s.game.code()),
        Value::Text(ctx.currency.clone()),
        Value::U32(Some(u32::from(l.box_no.0))),
        text(l.line.name()),
        Value::U32(Some(l.settlement_lines)),
        Value::Bool(Some(l.counts_in_handle())),
        Value::Minor(l.stake.map(|m| m.0)),
        Value::Text(l.outcome.clone()),
        Value::Text(l.clause.clone()),
        minor(l.net_rules),
        minor(l.net_recorded),
        minor(l.net_recorded - l.net_rules),
        minor(l.pool_rules),
        minor(l.pool_recorded),
        minor(l.pool_rules - l.net_rules),
        minor(l.pool_recorded - l.net_recorded),
    ];
    debug_assert_eq!(row.len(), BET_LINES.columns.len());
    row
}

/// The rows of `findings` for a round.
pub fn finding_rows(r: &RoundReport, ctx: &RoundCtx) -> Vec<Vec<Value>> {
    r.findings
        .iter()
        .map(|f| {
            let row = vec![
                text(&ctx.day),
                text(&ctx.shift),
                text(r.table.as_str()),
                Value::U64(r.round.0),
                Value::Text(r.rule_set.map(|g| g.code().to_string())),
                Value::Time(Some(r.opened_at_ns)),
                text(&f.code),
                text(&f.clause),
                text(&snake(&f.severity)),
                Value::U32(f.box_no.map(|b| u32::from(b.0))),
                Value::Seqs(f.seqs.iter().map(|s| s.0).collect()),
                text(&f.explanation),
            ];
            debug_assert_eq!(row.len(), FINDINGS.columns.len());
            row
        })
        .collect()
}

/// A finance event as it was stored, with where the day's stream put it.
pub struct FinanceCtx<'a> {
    /// The sealed day.
    pub day: &'a str,
    /// The shift finance reports count it in.
    pub shift: String,
    /// The table.
    pub table: &'a str,
    /// The currency of the configuration in force.
    pub currency: Option<String>,
    /// The stored event.
    pub stored: &'a ledger::StoredEvent,
}

/// A finance event's row of `finance_lines`.
pub fn finance_row(entry: &Finance, c: FinanceCtx) -> Vec<Value> {
    let (amount, reference, counted_by): (Option<Money>, Option<&str>, Option<&str>) = match entry {
        Finance::CashBuyIn { amount } => (Some(*amount), None, None),
        Finance::Marker { amount, marker_no } => (Some(*amount), Some(marker_no), None),
        Finance::Fill { amount, slip_no } | Finance::Credit { amount, slip_no } => {
            (Some(*amount), Some(slip_no), None)
        }
        Finance::ChipInventory { total, .. } => (Some(*total), None, None),
        Finance::OpeningInventory {
            total, counted_by, ..
        }
        | Finance::ClosingInventory {
            total, counted_by, ..
        } => (Some(*total), None, Some(counted_by)),
        Finance::DropBoxRemoved { drop_box_id } => (None, Some(drop_box_id), None),
    };
    let row = vec![
        text(c.day),
        Value::Text(Some(c.shift)),
        text(c.table),
        Value::U64(c.stored.seq.0),
        Value::U64(c.stored.stream_seq),
        text(finance_kind(entry)),
        Value::Minor(amount.map(|m| m.0)),
        Value::Text(c.currency),
        Value::Text(reference.map(str::to_string)),
        Value::Text(counted_by.map(str::to_string)),
        Value::Time(Some(c.stored.occurred_at_ns)),
        Value::Time(Some(c.stored.received_at_ns)),
    ];
    debug_assert_eq!(row.len(), FINANCE_LINES.columns.len());
    row
}

/// The kind of a finance event, as its JSON form names it.
fn finance_kind(entry: &Finance) -> &'static str {
    match entry {
        Finance::CashBuyIn { .. } => "cash_buy_in",
        Finance::Marker { .. } => "marker",
        Finance::Fill { .. } => "fill",
        Finance::Credit { .. } => "credit",
        Finance::ChipInventory { .. } => "chip_inventory",
        Finance::OpeningInventory { .. } => "opening_inventory",
        Finance::ClosingInventory { .. } => "closing_inventory",
        Finance::DropBoxRemoved { .. } => "drop_box_removed",
    }
}

/// A round's decision rows: every box with a recorded decision, in box order, with the
/// verdict of the box's judged decision when it has one.
pub fn decision_rows(
    f: &analytics::RoundFacts,
    verdicts: &[analytics::DecisionVerdict],
    ctx: &RoundCtx,
) -> Vec<Vec<Value>> {
    use analytics::verdict::cards_text;
    let play = |raise: bool| text(if raise { "raise" } else { "fold" });
    let r = &f.report;
    f.boxes
        .iter()
        .filter_map(|b| Some((b, b.decision?)))
        .map(|(b, choice)| {
            let v = verdicts.iter().find(|v| v.box_no == b.box_no);
            let verdict = match v {
                None => "not_judged",
                Some(v) if v.off_strategy() => "off_strategy",
                Some(_) => "optimal",
            };
            let row = vec![
                text(&ctx.day),
                text(&ctx.shift),
                text(r.table.as_str()),
                Value::U64(r.round.0),
                Value::Text(r.rule_set.map(|g| g.code().to_string())),
                Value::U32(Some(u32::from(b.box_no.0))),
                text(&snake(&choice)),
                text(&cards_text(&b.cards)),
                text(&cards_text(&f.dealer_seen)),
                text(&cards_text(&f.dealer_cards)),
                v.map_or(Value::Text(None), |v| play(v.optimal_raise)),
                Value::Minor(v.map(|v| v.gain_ppm)),
                v.map_or(Value::Text(None), |v| play(v.hindsight_raise)),
                Value::Minor(v.map(|v| v.hindsight_gain_ppm)),
                text(verdict),
            ];
            debug_assert_eq!(row.len(), DECISIONS.columns.len());
            row
        })
        .collect()
}
