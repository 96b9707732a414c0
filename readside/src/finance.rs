//! Finance reports: the three wins of each table's shift and the variances
//! between them, with their causes, handle and theoretical win, and hold against its
//! confidence interval, grouped by table, pit, game, shift or day over a shift, a
//! gaming day, month-to-date, year-to-date or a range of days.
//!
//! Pure over the read model's shift rows (`shiftrow`) and the count room's results
//! (`CountResult`): no clock, no I/O besides the one range read of the rows.
//!
//! - accounting win (Nevada MICS) = closing count + counted drop + credits - fills -
//!   opening count, per table and gaming day, summed over the tables. A day's opening is
//!   its first opening count and its closing its last, whatever the shift layout; the
//!   shifts' counts are never added up. Over one shift, or grouped by shift, the unit is
//!   the table's shift. `None` while a drop box is not yet counted or a count is missing:
//!   never a zero drop.
//! - an opening count after the unit's first play is no opening of it, and a closing count
//!   before its last play no closing (play went on after it): both are "not yet counted".
//! - recorded win = what the tray took in less what it paid, from the recorded payouts;
//!   rules win = the same from the rules' settlement. Jackpot awards are kept apart.
//! - tray check: expected closing = opening + fills - credits + recorded win - buy-ins -
//!   markers. The next shift's opening count tells a miscounted closer (it equals the
//!   expected) from chips that came without a fill slip (it equals the counted).
//! - theoretical win = handle x the edge of the pay tables it was staked under, looked up
//!   in the edge book (`edges`) as the report is built. A line whose configured pay
//!   tables are not priced yet is "theoretical pending": no edge, no theoretical win.

use crate::edges::{EdgeBook, EdgeLookup};
use crate::model::Model;
use crate::ReadError;
use ledger::days::DayRule;
use schemas::api::FinanceSummary;
use schemas::count::CountResult;
use schemas::finance::{
    Cause, DealerPart, DisputedRound, FinanceReport, Handle, HandleLine, Link, ReportGroup,
    RoundFinance, RoundLine, ShiftRow, Tray, TrayCount, Variance, NOT_KNOWN_MAX, REPORT_GROUPS_MAX,
    REPORT_VARIANCES_MAX,
};
use schemas::report::RoundReport;
use schemas::{Money, PayLine, TableId};
use std::collections::BTreeMap;

/// Most gaming days one report spans.
pub const REPORT_DAYS_MAX: i64 = 366;
/// Standard deviations either side of the theoretical win: about 95%.
pub const INTERVAL_SD: i64 = 2;
/// Longest pit name, bytes.
pub const PIT_NAME_LEN_MAX: usize = 32;
/// Most pits a property configures.
pub const PITS_MAX: usize = 256;

/// A pit: a name and its tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pit {
    /// The pit's name: 1 to `PIT_NAME_LEN_MAX` of A-Z a-z 0-9 - _.
    pub name: String,
    /// The pit's tables.
    pub tables: Vec<TableId>,
}

/// Parses `NAME=T1,T2` (the `--pit` option and the `pits` setting).
pub fn parse_pit(s: &str) -> Result<Pit, String> {
    let (name, tables) = s
        .split_once('=')
        .ok_or_else(|| format!("pit {s:?}: not NAME=TABLE,TABLE"))?;
    let name_ok = !name.is_empty() && name.len() <= PIT_NAME_LEN_MAX;
    if !name_ok
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(format!(
            "pit name {name:?}: 1-{PIT_NAME_LEN_MAX} of A-Z a-z 0-9 - _"
        ));
    }
    let tables = tables
        .split(',')
        .map(|t| TableId::new(t.trim()).map_err(|e| format!("pit {name}: table {t:?}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Pit {
        name: name.to_string(),
        tables,
    })
}

/// What a report covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Span {
    /// One shift, `2026-11-25/2`.
    Shift(String),
    /// One gaming day, `2026-11-25`.
    Day(String),
    /// The day's month, from its first day through the day.
    MonthToDate(String),
    /// The day's year, from 1 January through the day.
    YearToDate(String),
    /// From one day through another, both included.
    Days {
        /// The first day, `2026-11-01`.
        from: String,
        /// The last day, included.
        to: String,
    },
}

/// How a report groups its table shifts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupBy {
    /// One group per table.
    Table,
    /// One group per configured pit.
    Pit,
    /// One group per rule set.
    Game,
    /// One group per shift.
    Shift,
    /// One group per gaming day.
    Day,
    /// The dealer in place when each round began (`dealer_changed`).
    Dealer,
}

impl GroupBy {
    /// The names `parse` reads, in variant order.
    pub const NAMES: [&'static str; 6] = ["table", "pit", "game", "shift", "day", "dealer"];

    /// Reads a name of `NAMES`; another name is an error listing them.
    pub fn parse(s: &str) -> Result<GroupBy, String> {
        match s {
            "table" => Ok(GroupBy::Table),
            "pit" => Ok(GroupBy::Pit),
            "game" => Ok(GroupBy::Game),
            "shift" => Ok(GroupBy::Shift),
            "day" => Ok(GroupBy::Day),
            "dealer" => Ok(GroupBy::Dealer),
            _ => Err(format!(
                "group by {s:?}: one of {}",
                GroupBy::NAMES.join(", ")
            )),
        }
    }

    fn name(self) -> &'static str {
        GroupBy::NAMES[self as usize]
    }
}

/// A report request.
#[derive(Debug, Clone)]
pub struct Query {
    /// What the report covers.
    pub span: Span,
    /// How it groups the table shifts.
    pub group_by: GroupBy,
    /// Only this table.
    pub table: Option<TableId>,
    /// Only this pit's tables.
    pub pit: Option<String>,
}

/// The span's name and bounds, UTC ns.
fn span_bounds(rule: &DayRule, span: &Span) -> Result<(String, i64, i64), ReadError> {
    let bad = |e: ledger::Error| ReadError::BadRequest(e.to_string());
    let days = |from: &str, to: &str| -> Result<(i64, i64), ReadError> {
        let (a, b) = (
            rule.bounds(from).map_err(bad)?,
            rule.bounds(to).map_err(bad)?,
        );
        if b.ends_at_ns <= a.starts_at_ns {
            return Err(ReadError::BadRequest(format!("day {to} is before {from}")));
        }
        // Whole days, DST's hours rounded away.
        let hour_ns = 3_600_000_000_000;
        let span_days = (b.ends_at_ns - a.starts_at_ns + 12 * hour_ns) / (24 * hour_ns);
        if span_days > REPORT_DAYS_MAX {
            return Err(ReadError::BadRequest(format!(
                "{from} to {to}: more than {REPORT_DAYS_MAX} days"
            )));
        }
        Ok((a.starts_at_ns, b.ends_at_ns))
    };
    let prefix = |d: &str, n: usize| d.get(..n).unwrap_or_default().to_string();
    let (name, (from, to)) = match span {
        Span::Shift(s) => {
            let b = rule.shift_named(s).map_err(bad)?;
            (format!("shift {s}"), (b.starts_at_ns, b.ends_at_ns))
        }
        Span::Day(d) => (format!("day {d}"), days(d, d)?),
        Span::MonthToDate(d) => (
            format!("mtd {d}"),
            days(&format!("{}-01", prefix(d, 7)), d)?,
        ),
        Span::YearToDate(d) => (
            format!("ytd {d}"),
            days(&format!("{}-01-01", prefix(d, 4)), d)?,
        ),
        Span::Days { from, to } => (format!("range {from}..{to}"), days(from, to)?),
    };
    Ok((name, from, to))
}

/// The bounds of one shift or one gaming day, UTC ns `[from, to)`: the bounds a
/// report of that span covers, and what list searches by `day` or `shift` use.
pub fn search_bounds(rule: &DayRule, span: &Span) -> Result<(i64, i64), ReadError> {
    span_bounds(rule, span).map(|(_, from_ns, to_ns)| (from_ns, to_ns))
}

/// The report `q` asks for, from the model's shift rows and the count room's results.
/// Blocking: sled.
pub fn report(
    model: &Model,
    pits: &[Pit],
    counts: &[CountResult],
    q: &Query,
) -> Result<FinanceReport, ReadError> {
    let rule = model.rule();
    let (span, from, to) = span_bounds(rule, &q.span)?;
    if let Some(p) = &q.pit {
        if !pits.iter().any(|x| x.name == *p) {
            return Err(ReadError::BadRequest(format!("no pit {p:?} is configured")));
        }
    }
    if let Some(t) = &q.table {
        if model.status(t)?.is_none() {
            return Err(ReadError::NotFound(format!("no table {t} in the ledger")));
        }
    }
    let next_end = rule
        .shift_of(to)
        .map_err(|e| ReadError::BadRequest(e.to_string()))?
        .ends_at_ns;
    let rows = model.shift_rows(from, to)?;
    let next: BTreeMap<(TableId, i64), ShiftRow> = model
        .shift_rows(to, next_end)?
        .into_iter()
        .chain(rows.iter().cloned())
        .filter_map(|r| Some(((r.table.clone()?, r.starts_at_ns), r)))
        .collect();
    let keep = |r: &ShiftRow| {
        let t = r.table.as_ref();
        q.table.as_ref().is_none_or(|x| Some(x) == t)
            && q.pit.as_ref().is_none_or(|p| pit_of(pits, t) == *p)
    };
    let rows: Vec<ShiftRow> = rows.into_iter().filter(keep).collect();
    let one_shift = matches!(q.span, Span::Shift(_));
    let (days, day_shifts) = match one_shift {
        true => (Vec::new(), Vec::new()),
        false => day_rows(rule, &rows)?,
    };
    let ones = vec![1; rows.len()];
    let shifts = match one_shift || q.group_by == GroupBy::Shift {
        true => judge((&rows, &ones), &next, counts),
        false => Vec::new(),
    };
    let mut days = judge((&days, &day_shifts), &next, counts);
    for d in &mut days {
        d.variances.extend(inner_miscounts(d, &rows, &next, counts));
    }
    let units = Units {
        total: if one_shift { &shifts } else { &days },
        groups: if shifts.is_empty() { &days } else { &shifts },
        rows: &rows,
    };
    let book = EdgeBook::load(model)?;
    let mut out = assemble(&units, pits, q.group_by, &book)?;
    out.span = span;
    out.starts_at_ns = from;
    out.ends_at_ns = to;
    out.day_rule = rule.spec();
    out.no_play = rows.is_empty();
    Ok(out)
}

/// Refuses a span that has not begun at `now_ns`: its figures would all be of no play.
pub fn refuse_future(rule: &DayRule, span: &Span, now_ns: i64) -> Result<(), ReadError> {
    let (name, from, _) = span_bounds(rule, span)?;
    if from > now_ns {
        return Err(ReadError::BadRequest(format!(
            "{name} has not begun: it starts {}",
            rule.local_text(from)
        )));
    }
    Ok(())
}

/// The drop boxes removed in the span's shifts, with their tables: whose counts a
/// report needs.
pub fn drop_boxes(model: &Model, q: &Query) -> Result<Vec<(TableId, String)>, ReadError> {
    let (_, from, to) = span_bounds(model.rule(), &q.span)?;
    let rows = model.shift_rows(from, to)?;
    Ok(rows
        .iter()
        .filter_map(|r| Some((r.table.clone()?, &r.drop_boxes)))
        .flat_map(|(t, bs)| bs.iter().map(move |b| (t.clone(), b.drop_box_id.clone())))
        .collect())
}

/// Each unit judged, with the row after it (the next shift's, or the next day's first).
/// `shifts`: how many shift rows each unit holds.
fn judge<'a>(
    (units, shifts): (&'a [ShiftRow], &[u64]),
    next: &BTreeMap<(TableId, i64), ShiftRow>,
    counts: &[CountResult],
) -> Vec<TableShift<'a>> {
    assert_eq!(units.len(), shifts.len(), "a shift count per unit");
    let after = |r: &ShiftRow| r.table.clone().and_then(|t| next.get(&(t, r.ends_at_ns)));
    units
        .iter()
        .zip(shifts)
        .map(|(r, n)| TableShift {
            shifts: *n,
            ..table_shift(r, after(r), counts)
        })
        .collect()
}

/// Each table's gaming day as one row: its shift rows merged (`shiftrow::merge`), so the
/// day opens with its first opening count and closes with its last, spanning the day.
/// Returns the rows and how many shifts each merges.
fn day_rows(rule: &DayRule, rows: &[ShiftRow]) -> Result<(Vec<ShiftRow>, Vec<u64>), ReadError> {
    let mut days: BTreeMap<(TableId, &str), (ShiftRow, u64)> = BTreeMap::new();
    for r in rows {
        let Some(table) = r.table.clone() else {
            continue;
        };
        let day = day_of_shift(&r.shift);
        let bad = |e: ledger::Error| ReadError::Integrity(e.to_string());
        let (d, n) = match days.entry((table, day)) {
            std::collections::btree_map::Entry::Occupied(e) => {
                let (d, n) = e.into_mut();
                (d, n)
            }
            std::collections::btree_map::Entry::Vacant(e) => {
                let b = rule.bounds(day).map_err(bad)?;
                let row = ShiftRow {
                    table: r.table.clone(),
                    shift: day.to_string(),
                    starts_at_ns: b.starts_at_ns,
                    ends_at_ns: b.ends_at_ns,
                    ..ShiftRow::default()
                };
                let (d, n) = e.insert((row, 0));
                (d, n)
            }
        };
        *n += 1;
        let part = ShiftRow {
            starts_at_ns: d.starts_at_ns,
            ..r.clone()
        };
        let boxes = std::mem::take(&mut d.drop_boxes);
        crate::shiftrow::merge(d, &part);
        // Every box of the day counts toward its drop: a shift's bound is not a day's.
        d.drop_boxes = boxes
            .into_iter()
            .chain(r.drop_boxes.iter().cloned())
            .collect();
    }
    Ok(days.into_values().unzip())
}

/// A table day's miscounted closers at its own shift changes: a day opens with its first
/// count and closes with its last, so a closing count the next shift's opener corrects
/// moves no day figure. The shift's own tray check names it, as its shift's report does.
fn inner_miscounts(
    day: &TableShift,
    rows: &[ShiftRow],
    next: &BTreeMap<(TableId, i64), ShiftRow>,
    counts: &[CountResult],
) -> Vec<Variance> {
    if day.shifts < 2 {
        return Vec::new();
    }
    let in_day = |r: &&ShiftRow| {
        r.table.as_ref() == Some(&day.table) && day_of_shift(&r.shift) == day.row.shift
    };
    let mut out = Vec::new();
    for r in rows.iter().filter(in_day) {
        let n = next.get(&(day.table.clone(), r.ends_at_ns));
        if n.is_none_or(|n| day_of_shift(&n.shift) != day.row.shift) {
            continue; // The day's last shift: the day's own check sees its closing.
        }
        let shift = table_shift(r, n, counts);
        let v = tray_variance(&shift, n).filter(|v| v.cause == Cause::MiscountedCloser);
        out.extend(v);
    }
    out
}

/// The gaming day of a shift name, `2026-11-25/2` -> `2026-11-25`.
fn day_of_shift(shift: &str) -> &str {
    shift.split('/').next().unwrap_or_default()
}

fn pit_of(pits: &[Pit], table: Option<&TableId>) -> String {
    table
        .and_then(|t| pits.iter().find(|p| p.tables.contains(t)))
        .map_or_else(|| "(no pit)".to_string(), |p| p.name.clone())
}

/// One table's shift judged: its row, its counted drop and its variances.
struct TableShift<'a> {
    row: &'a ShiftRow,
    /// Shift rows in it: one, or a day's.
    shifts: u64,
    table: TableId,
    /// Counted drop; `None` while a box is not counted (or none was removed).
    drop: Option<Money>,
    boxes_counted: u64,
    boxes_not_counted: u64,
    win_accounting: Option<Money>,
    variances: Vec<Variance>,
}

fn table_shift<'a>(
    row: &'a ShiftRow,
    next: Option<&ShiftRow>,
    counts: &[CountResult],
) -> TableShift<'a> {
    let table = row.table.clone().expect("shift rows name their table");
    let mut counted = Money::ZERO;
    let (mut boxes_counted, mut boxes_not_counted) = (0, 0);
    let mut found = Vec::new();
    for b in &row.drop_boxes {
        match counts
            .iter()
            .find(|c| c.table == table && c.drop_box_id == b.drop_box_id)
        {
            Some(c) => {
                boxes_counted += 1;
                counted = counted + c.drop();
                found.push(c);
            }
            None => boxes_not_counted += 1,
        }
    }
    let drop = (boxes_not_counted == 0 && boxes_counted > 0).then_some(counted);
    let win_accounting = match (drop, opening_of(row), closing_of(row)) {
        (Some(d), Some(o), Some(c)) => {
            Some(d + row.credits.total + c.total - o.total - row.fills.total)
        }
        _ => None,
    };
    let mut t = TableShift {
        row,
        shifts: 1,
        table,
        drop,
        boxes_counted,
        boxes_not_counted,
        win_accounting,
        variances: Vec::new(),
    };
    t.variances.extend(payout_variance(&t));
    t.variances.extend(tray_variance(&t, next));
    t.variances.extend(drop_variance(&t, &found));
    t
}

/// The row's opening count, unless play began before it (then it opens nothing).
fn opening_of(row: &ShiftRow) -> Option<&TrayCount> {
    let c = row.opening.as_ref()?;
    (row.first_play_at_ns.is_none_or(|p| c.at_ns <= p)).then_some(c)
}

/// The row's closing count, unless play went on after it (then it closes nothing).
fn closing_of(row: &ShiftRow) -> Option<&TrayCount> {
    let c = row.closing.as_ref()?;
    (row.last_play_at_ns.is_none_or(|p| c.at_ns >= p)).then_some(c)
}

fn variance(
    t: &TableShift,
    cause: Cause,
    amount: Money,
    text: String,
    links: Vec<Link>,
) -> Variance {
    Variance {
        table: t.table.clone(),
        shift: t.row.shift.clone(),
        cause,
        amount,
        text,
        links,
    }
}

fn link(t: &TableShift, kind: &str, seq: Option<schemas::Seq>, text: String) -> Link {
    Link {
        kind: kind.into(),
        table: t.table.clone(),
        seq,
        round: None,
        href: None,
        text,
    }
}

/// Recorded win against rules win: the overpaid and the underpaid rounds each as a
/// variance of their own (an overpayment and an underpayment in one shift must not cancel
/// out of sight). When the shift holds more disputed rounds than its row lists, the net
/// difference stands as one variance.
fn payout_variance(t: &TableShift) -> Vec<Variance> {
    let d = t.row.recorded.win() - t.row.rules.win();
    if t.row.disputed.len() as u64 != t.row.disputed_count {
        return payout_group(t, d, t.row.disputed.iter().collect(), t.row.disputed_count);
    }
    let (over, under): (Vec<&DisputedRound>, Vec<&DisputedRound>) =
        t.row.disputed.iter().partition(|r| r.recorded > r.due);
    let mut out = Vec::new();
    for rounds in [over, under] {
        let amount: Money = rounds.iter().map(|r| r.due - r.recorded).sum();
        let n = rounds.len() as u64;
        out.extend(payout_group(t, amount, rounds, n));
    }
    out
}

/// One payout variance of `amount` (recorded win less rules win) over `rounds`.
fn payout_group(
    t: &TableShift,
    amount: Money,
    rounds: Vec<&DisputedRound>,
    count: u64,
) -> Vec<Variance> {
    if amount == Money::ZERO {
        return Vec::new();
    }
    let links = rounds
        .iter()
        .map(|r| Link {
            round: Some(r.round),
            href: Some(format!("/v1/finance/rounds/{}/{}", t.table, r.round.0)),
            ..link(
                t,
                "round",
                None,
                format!("round {}: paid {}, due {}", r.round.0, r.recorded, r.due),
            )
        })
        .collect();
    let (cause, how) = match amount.0 < 0 {
        true => (Cause::Overpayment, "overpaid"),
        false => (Cause::Underpayment, "underpaid"),
    };
    let text = format!(
        "players {how} by {} in {count} disputed round(s)",
        Money(amount.0.abs())
    );
    vec![variance(t, cause, amount, text, links)]
}

/// The tray check: the counted closing against the expected one, its cause read from
/// the next shift's opening count.
fn tray_variance(t: &TableShift, next: Option<&ShiftRow>) -> Option<Variance> {
    let r = t.row;
    let (Some(open), Some(close)) = (opening_of(r), closing_of(r)) else {
        let text = match opening_of(r).is_none() {
            true => "no opening tray count before play: no tray check".to_string(),
            false => "no closing tray count after play: no tray check".to_string(),
        };
        return Some(variance(
            t,
            Cause::TrayCountMissing,
            Money::ZERO,
            text,
            Vec::new(),
        ));
    };
    let expected = open.total + r.fills.total - r.credits.total + r.recorded.win()
        - r.buy_ins.total
        - r.markers.total;
    let v = close.total - expected;
    if v == Money::ZERO {
        return None;
    }
    let next_open = next.and_then(opening_of);
    let cause = match next_open {
        Some(n) if n.total == expected => Cause::MiscountedCloser,
        Some(n) if n.total == close.total && v.0 > 0 => Cause::MissingFillSlip,
        _ => Cause::UnexplainedInventory,
    };
    let mut links = vec![
        link(
            t,
            "tray_count",
            Some(open.seq),
            format!("opening count {} by {}", open.total, open.counted_by),
        ),
        link(
            t,
            "tray_count",
            Some(close.seq),
            format!("closing count {} by {}", close.total, close.counted_by),
        ),
    ];
    if let Some(n) = next_open {
        links.push(link(
            t,
            "tray_count",
            Some(n.seq),
            format!("next opening count {} by {}", n.total, n.counted_by),
        ));
    }
    if cause == Cause::MissingFillSlip {
        for f in &r.fills.items {
            links.push(link(
                t,
                "slip",
                Some(f.seq),
                format!("fill slip {}: {}", f.no, f.amount),
            ));
        }
    }
    let text = format!("closing count {} against {expected} expected", close.total);
    Some(variance(t, cause, v, text, links))
}

/// The counted drop against the recorded buy-ins and markers; a box not yet counted.
fn drop_variance(t: &TableShift, counts: &[&CountResult]) -> Option<Variance> {
    let r = t.row;
    let boxes: Vec<Link> = r
        .drop_boxes
        .iter()
        .map(|b| {
            link(
                t,
                "drop_box",
                Some(b.seq),
                format!("drop box {}", b.drop_box_id),
            )
        })
        .collect();
    let Some(drop) = t.drop else {
        let text = match r.drop_boxes.is_empty() {
            true => "no drop box removed yet: no accounting win".to_string(),
            false => format!(
                "{} drop box(es) not yet counted: no accounting win",
                t.boxes_not_counted
            ),
        };
        return Some(variance(t, Cause::NotYetCounted, Money::ZERO, text, boxes));
    };
    let recorded = r.buy_ins.total + r.markers.total;
    let d = drop - recorded;
    if d == Money::ZERO {
        return None;
    }
    let mut links = boxes;
    for c in counts {
        let text = format!(
            "counted by {}: cash {}, markers {}",
            c.counted_by, c.cash, c.markers
        );
        links.push(link(t, "count", None, text));
    }
    for s in r.buy_ins.items.iter().chain(&r.markers.items) {
        links.push(link(
            t,
            "slip",
            Some(s.seq),
            format!("buy-in {} {}", s.no, s.amount),
        ));
    }
    let cause = if d.0 < 0 {
        Cause::ShortDrop
    } else {
        Cause::OverDrop
    };
    let text = format!("drop counted {drop} against {recorded} bought in and issued on markers");
    Some(variance(t, cause, d, text, links))
}

/// The group key of a table shift (every grouping but by dealer).
fn group_key(t: &TableShift, pits: &[Pit], by: GroupBy) -> String {
    match by {
        GroupBy::Table => t.table.to_string(),
        GroupBy::Pit => pit_of(pits, Some(&t.table)),
        GroupBy::Game => t
            .row
            .rule_set
            .map_or("(no rounds)", |r| r.code())
            .to_string(),
        GroupBy::Shift => t.row.shift.clone(),
        GroupBy::Day => day_of_shift(&t.row.shift).to_string(),
        GroupBy::Dealer => unreachable!("a table shift splits into its dealers' parts"),
    }
}

/// What a report adds up: the table days (or shifts) of its total and of its groups, and
/// the shift rows whose dealers' parts a grouping by dealer takes.
struct Units<'a> {
    total: &'a [TableShift<'a>],
    groups: &'a [TableShift<'a>],
    rows: &'a [ShiftRow],
}

/// Groups the units (or, by dealer, the dealers' parts) and adds each group's figures.
/// The total is the table days' (a table shift's over one shift), so it is the same under
/// any shift layout; the variances are the groups' units'.
fn assemble(
    u: &Units,
    pits: &[Pit],
    by: GroupBy,
    book: &EdgeBook,
) -> Result<FinanceReport, ReadError> {
    let mut groups: BTreeMap<String, Acc> = BTreeMap::new();
    let mut total = Acc::default();
    for t in u.total {
        total.add(t, book);
    }
    match by {
        GroupBy::Dealer => {
            for d in u.rows.iter().flat_map(|r| &r.dealers) {
                group(&mut groups, &d.dealer)?.add_dealer(d, book);
            }
        }
        _ => {
            for t in u.groups {
                group(&mut groups, &group_key(t, pits, by))?.add(t, book);
            }
        }
    }
    let mut variances = Vec::new();
    let mut variances_total = 0u64;
    for t in u.groups {
        variances_total += t.variances.len() as u64;
        let room = REPORT_VARIANCES_MAX.saturating_sub(variances.len());
        variances.extend(t.variances.iter().take(room).cloned());
    }
    let mut total = total.finish("total".into());
    total.variances = variances_total;
    Ok(FinanceReport {
        span: String::new(),
        starts_at_ns: 0,
        ends_at_ns: 0,
        day_rule: String::new(),
        group_by: by.name().to_string(),
        groups: groups.into_iter().map(|(k, a)| a.finish(k)).collect(),
        total,
        variances,
        variances_total,
        no_play: false,
    })
}

/// The group `key`, added if new, within `REPORT_GROUPS_MAX`.
fn group<'a>(groups: &'a mut BTreeMap<String, Acc>, key: &str) -> Result<&'a mut Acc, ReadError> {
    if !groups.contains_key(key) && groups.len() >= REPORT_GROUPS_MAX {
        return Err(ReadError::TooLarge(format!(
            "more than {REPORT_GROUPS_MAX} groups"
        )));
    }
    Ok(groups.entry(key.to_string()).or_default())
}

/// A group's sums while it is built.
#[derive(Default)]
struct Acc {
    g: ReportGroup,
    uncounted: bool,
    no_accounting: bool,
    no_opening: bool,
    no_closing: bool,
    /// A dealer's group: no drop, counts or slips of its own.
    dealer: bool,
    /// Lines of `not_known` in all, kept or not.
    unknown: u64,
    /// (rule set code, line) -> the line's sums.
    handle: BTreeMap<(&'static str, PayLine), LineAcc>,
}

/// One handle line's sums: the report's line, and what prices it.
struct LineAcc {
    line: HandleLine,
    /// Stake x edge summed, minor units x 10^9 (unrounded).
    theoretical_win_ppb: i128,
    win_variance_ppm: u128,
    stake_without_edge: Money,
    /// Stakes whose edge is pending: their pay tables are not priced yet.
    stake_pending: Money,
}

impl LineAcc {
    fn new(h: &Handle) -> LineAcc {
        LineAcc {
            line: HandleLine {
                rule_set: h.rule_set,
                line: h.line,
                stake: Money::ZERO,
                bets: 0,
                edge_ppm: None,
                theoretical_win: None,
                theoretical_pending: false,
            },
            theoretical_win_ppb: 0,
            win_variance_ppm: 0,
            stake_without_edge: Money::ZERO,
            stake_pending: Money::ZERO,
        }
    }
}

impl Acc {
    fn add(&mut self, t: &TableShift, book: &EdgeBook) {
        let (g, r) = (&mut self.g, t.row);
        g.table_shifts += t.shifts;
        g.boxes_counted += t.boxes_counted;
        g.boxes_not_counted += t.boxes_not_counted;
        let add = |x: &mut Option<Money>, m: Money| *x = Some(x.unwrap_or(Money::ZERO) + m);
        add(&mut g.buy_ins, r.buy_ins.total);
        add(&mut g.markers, r.markers.total);
        add(&mut g.fills, r.fills.total);
        add(&mut g.credits, r.credits.total);
        match opening_of(r) {
            Some(c) => add(&mut g.opening, c.total),
            None => self.no_opening = true,
        }
        match closing_of(r) {
            Some(c) => add(&mut g.closing, c.total),
            None => self.no_closing = true,
        }
        g.variances += t.variances.len() as u64;
        match t.drop {
            Some(d) => g.drop = Some(g.drop.unwrap_or(Money::ZERO) + d),
            None => self.uncounted = true,
        }
        match t.win_accounting {
            Some(w) => g.win_accounting = Some(g.win_accounting.unwrap_or(Money::ZERO) + w),
            None => self.no_accounting = true,
        }
        self.add_play(r.rounds, &r.recorded, &r.rules, &r.handle, book);
        self.note_unknown(t);
    }

    /// Notes what of a unit is not yet counted, within `NOT_KNOWN_MAX` lines.
    fn note_unknown(&mut self, t: &TableShift) {
        let r = t.row;
        let at = format!("{} {}", t.table, r.shift);
        let mut lines = Vec::new();
        if opening_of(r).is_none() {
            lines.push(format!("{at}: opening tray count not yet counted"));
        }
        if closing_of(r).is_none() {
            lines.push(format!("{at}: closing tray count not yet counted"));
        }
        if t.boxes_not_counted > 0 {
            let n = t.boxes_not_counted;
            lines.push(format!("{at}: {n} drop box(es) not yet counted"));
        } else if r.drop_boxes.is_empty() {
            lines.push(format!("{at}: no drop box removed yet"));
        }
        for l in lines {
            self.unknown += 1;
            if self.g.not_known.len() < NOT_KNOWN_MAX - 1 {
                self.g.not_known.push(l);
            }
        }
    }

    /// A dealer's part of a table shift: its rounds, trays and handle. The drop, the
    /// counts, the slips and the accounting win are the table's: a dealer group has none.
    fn add_dealer(&mut self, d: &DealerPart, book: &EdgeBook) {
        self.g.table_shifts += 1;
        self.uncounted = true;
        self.no_accounting = true;
        self.dealer = true;
        // A dealer's variances are their payout errors: each disputed round they dealt.
        self.g.variances += d.disputed_count;
        self.add_play(d.rounds, &d.recorded, &d.rules, &d.handle, book);
    }

    /// What the rounds say: the trays as recorded and as due, and the handle priced at
    /// the edges `book` gives.
    fn add_play(
        &mut self,
        rounds: u64,
        recorded: &Tray,
        rules: &Tray,
        handle: &[Handle],
        book: &EdgeBook,
    ) {
        let g = &mut self.g;
        g.rounds += rounds;
        g.win_recorded = g.win_recorded + recorded.win();
        g.win_rules = g.win_rules + rules.win();
        g.jackpot_paid_recorded = g.jackpot_paid_recorded + recorded.jackpot_paid;
        g.jackpot_paid_rules = g.jackpot_paid_rules + rules.jackpot_paid;
        for h in handle {
            let e = self
                .handle
                .entry((h.rule_set.code(), h.line))
                .or_insert_with(|| LineAcc::new(h));
            e.line.stake = e.line.stake + h.stake;
            e.line.bets += h.bets;
            match book.lookup(h.rule_set, h.pay_tables.as_deref(), h.line) {
                EdgeLookup::Known {
                    edge_ppb,
                    variance_ppm,
                } => {
                    let theo = i128::from(h.stake.0) * i128::from(edge_ppb);
                    let var = h.stake_squared.saturating_mul(u128::from(variance_ppm));
                    e.theoretical_win_ppb = e.theoretical_win_ppb.saturating_add(theo);
                    e.win_variance_ppm = e.win_variance_ppm.saturating_add(var);
                }
                // The BET/Play of a main game is priced in its Ante's edge.
                EdgeLookup::NoEdge if matches!(h.line, PayLine::Bet | PayLine::Play) => {}
                EdgeLookup::NoEdge => e.stake_without_edge = e.stake_without_edge + h.stake,
                EdgeLookup::Pending => e.stake_pending = e.stake_pending + h.stake,
            }
        }
    }

    /// The group's figures: drop and accounting win only when whole, hold, theoretical
    /// win and its interval.
    fn finish(mut self, key: String) -> ReportGroup {
        let mut g = std::mem::take(&mut self.g);
        g.key = key;
        if self.uncounted {
            g.drop = None;
        }
        if self.no_accounting || self.uncounted {
            g.win_accounting = None;
        }
        if self.no_opening {
            g.opening = None;
        }
        if self.no_closing {
            g.closing = None;
        }
        let kept = g.not_known.len() as u64;
        if self.unknown > kept {
            g.not_known
                .push(format!("and {} more", self.unknown - kept));
        }
        if self.dealer {
            g.not_known = vec!["a dealer has no drop, tray counts or slips: the table's".into()];
        }
        let mut variance_ppm: u128 = 0;
        // Theoretical win summed unrounded over the lines, rounded once at the end.
        let mut theoretical_ppb: i128 = 0;
        for (_, mut a) in std::mem::take(&mut self.handle) {
            g.handle_without_edge = g.handle_without_edge + a.stake_without_edge;
            g.handle_pending = g.handle_pending + a.stake_pending;
            a.line.theoretical_pending = a.stake_pending.0 > 0;
            g.theoretical_pending |= a.line.theoretical_pending;
            // The BET/Play of a main game is priced in the Ante's edge: no edge of its own.
            let priced = a.line.stake - a.stake_without_edge - a.stake_pending;
            let main_raise = matches!(a.line.line, PayLine::Bet | PayLine::Play);
            if priced.0 > 0 && !main_raise {
                let theo = minor_of_ppb(a.theoretical_win_ppb);
                if !a.line.theoretical_pending {
                    let per_unit_ppb = a.theoretical_win_ppb / i128::from(priced.0);
                    a.line.edge_ppm = Some((per_unit_ppb / 1_000) as i64);
                    a.line.theoretical_win = Some(theo);
                }
                theoretical_ppb = theoretical_ppb.saturating_add(a.theoretical_win_ppb);
                g.handle_priced = g.handle_priced + priced;
                variance_ppm = variance_ppm.saturating_add(a.win_variance_ppm);
            }
            g.handle.push(a.line);
        }
        g.theoretical_win = minor_of_ppb(theoretical_ppb);
        let sd = Money((variance_ppm / 1_000_000).isqrt().min(i64::MAX as u128) as i64);
        let spread = Money(sd.0.saturating_mul(INTERVAL_SD));
        g.win_low = g.theoretical_win - spread;
        g.win_high = g.theoretical_win + spread;
        g.actual_win = g.win_accounting.unwrap_or(g.win_recorded);
        let outside = g.actual_win < g.win_low || g.actual_win > g.win_high;
        // While an edge is pending the interval covers only part of the bets: no alarm.
        g.hold_alarm = !g.theoretical_pending && sd.0 > 0 && outside;
        let per_drop = |w: Money| g.drop.filter(|d| d.0 > 0).map(|d| bp(w, d));
        g.hold_bp = g.win_accounting.and_then(per_drop);
        let whole = !g.theoretical_pending;
        g.hold_theoretical_bp = per_drop(g.theoretical_win).filter(|_| whole);
        let units = g.handle_priced + g.handle_pending;
        let per_handle = |w: Money, h: Money| Some(h).filter(|h| h.0 > 0).map(|h| bp(w, h));
        g.hold_handle_bp = per_handle(g.actual_win, units);
        g.hold_handle_theoretical_bp =
            per_handle(g.theoretical_win, g.handle_priced).filter(|_| whole);
        g
    }
}

/// One table shift's figures as a report group of its own, from its row alone: no count
/// room results, so no drop and the actual win is the recorded win. What `holds` judges.
pub fn shift_group(row: &ShiftRow, book: &EdgeBook) -> ReportGroup {
    let t = table_shift(row, None, &[]);
    let key = t.table.to_string();
    let mut acc = Acc::default();
    acc.add(&t, book);
    let g = acc.finish(key);
    assert!(g.win_accounting.is_none(), "no count, no accounting win");
    g
}

/// Minor units x 10^9 as minor units, rounded half away from zero: the one rounding
/// theoretical win takes.
fn minor_of_ppb(ppb: i128) -> Money {
    const BILLION: i128 = 1_000_000_000;
    let rounded = (ppb + ppb.signum() * (BILLION / 2)) / BILLION;
    let m = i64::try_from(rounded).unwrap_or(if ppb < 0 { i64::MIN } else { i64::MAX });
    assert!((i128::from(m) * BILLION - ppb).abs() <= BILLION / 2 || m == i64::MIN || m == i64::MAX);
    Money(m)
}

/// `part` / `whole` in basis points, toward zero.
fn bp(part: Money, whole: Money) -> i64 {
    (i128::from(part.0) * 10_000 / i128::from(whole.0)) as i64
}

/// A round as finance may see it: per box and line what was paid and what was due, no
/// cards and no findings.
pub fn round_finance(r: &RoundReport) -> RoundFinance {
    let n = crate::shiftrow::nets(r);
    let lines: Vec<RoundLine> = n
        .due
        .keys()
        .chain(n.recorded.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|k| RoundLine {
            box_no: k.0,
            line: k.1,
            recorded: n.recorded.get(k).copied().unwrap_or_default(),
            due: n.due.get(k).copied().unwrap_or_default(),
        })
        .collect();
    RoundFinance {
        table: r.table.clone(),
        round: r.round,
        rule_set: r.rule_set,
        opened_at_ns: r.opened_at_ns,
        first_seq: r.first_seq,
        last_seq: r.last_seq,
        recorded: lines.iter().map(|l| l.recorded).sum(),
        due: lines.iter().map(|l| l.due).sum(),
        lines,
        verdict: r.verdict,
        findings: r.findings.iter().map(crate::row::finding_view).collect(),
    }
}

/// Each table's totals over `rows` (`GET /v1/finance`): cash buy-ins (never called drop),
/// the slips, and the recorded and rules wins, jackpots apart.
pub fn totals(rows: &[ShiftRow]) -> Vec<FinanceSummary> {
    let mut out: BTreeMap<TableId, FinanceSummary> = BTreeMap::new();
    for r in rows {
        let Some(t) = &r.table else { continue };
        let f = out.entry(t.clone()).or_insert_with(|| FinanceSummary {
            table: Some(t.clone()),
            ..FinanceSummary::default()
        });
        f.cash_buy_ins = f.cash_buy_ins + r.buy_ins.total;
        f.markers = f.markers + r.markers.total;
        f.fills = f.fills + r.fills.total;
        f.credits = f.credits + r.credits.total;
        f.win_recorded = f.win_recorded + r.recorded.win();
        f.win_rules = f.win_rules + r.rules.win();
        f.rounds += r.rounds;
    }
    out.into_values().collect()
}

/// The CSV columns of a report, one line per group and a total line.
pub const CSV_HEADER: &str = "group,table_shifts,rounds,drop,buy_ins,markers,fills,credits,opening,closing,win_accounting,win_recorded,win_rules,jackpot_paid_recorded,hold_bp,theoretical_win,win_low,win_high,hold_alarm,variances,handle_priced,hold_handle_bp,hold_handle_theoretical_bp,not_known";

/// A report as CSV for the accounting system: amounts in currency units (`12.34`), an
/// empty cell where a figure is not known yet, and the last cell saying why.
pub fn to_csv(r: &FinanceReport) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    for g in r.groups.iter().chain(std::iter::once(&r.total)) {
        let opt = |m: Option<Money>| m.map(|m| m.to_string()).unwrap_or_default();
        // Pending: the pay tables of some bets are not priced yet (`edges`).
        let theo = |m: Money| match g.theoretical_pending {
            true => "pending".to_string(),
            false => m.to_string(),
        };
        let cells = [
            csv_text(&g.key),
            g.table_shifts.to_string(),
            g.rounds.to_string(),
            opt(g.drop),
            opt(g.buy_ins),
            opt(g.markers),
            opt(g.fills),
            opt(g.credits),
            opt(g.opening),
            opt(g.closing),
            opt(g.win_accounting),
            g.win_recorded.to_string(),
            g.win_rules.to_string(),
            g.jackpot_paid_recorded.to_string(),
            bp_cell(g.hold_bp),
            theo(g.theoretical_win),
            theo(g.win_low),
            theo(g.win_high),
            g.hold_alarm.to_string(),
            g.variances.to_string(),
            g.handle_priced.to_string(),
            bp_cell(g.hold_handle_bp),
            bp_cell(g.hold_handle_theoretical_bp),
            csv_text(&g.not_known.join("; ")),
        ];
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

/// Basis points as a CSV cell: empty when not known.
fn bp_cell(bp: Option<i64>) -> String {
    bp.map(|b| b.to_string()).unwrap_or_default()
}

/// A CSV cell: quoted when it holds a comma, quote or line break; a leading formula
/// character is neutralised so a spreadsheet never runs it.
fn csv_text(s: &str) -> String {
    let s = match s.starts_with(['=', '+', '-', '@']) {
        true => format!("'{s}"),
        false => s.to_string(),
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}
