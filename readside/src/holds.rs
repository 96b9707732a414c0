//! Hold alarms per closed table shift: the `hold_outside` signal, raised once when a
//! shift's recorded win lies outside its theoretical win's interval. The standard
//! deviation is the finance report's (`finance`), the interval wider: 3.291 standard
//! deviations, one honest shift in 1,000 outside (the finance report's 2 flag 1 in 22).
//!
//! - A shift is closed when its table's first round of a later shift is stored. That
//!   round's pass judges it, and the signal names that round: the once-only publisher
//!   (`alerts.<table>.hold_outside`) has sent nothing at or above it yet.
//! - A shift is judged only when whole: every line priced. While a configured pay table
//!   is "theoretical pending" the shift waits (`HoldWatch::awaiting`, at most
//!   `AWAITING_MAX`). It is judged again once the edge book holds more priced
//!   configurations than when it last waited: at the table's next new round, or at the
//!   first pass after the pricing, at the table's newest round (a quiet table waits for
//!   no round). O(1) a round otherwise; O(tables) watch reads a pricing.
//! - The actual win is the recorded win (tray in less tray out): the read model holds no
//!   count room results. The finance report judges the accounting win once counted.
//!
//! - Past `AWAITING_MAX` waiting shifts the oldest is given up. The watch names the newest
//!   `NOT_JUDGED_KEPT` given up and counts them all; `GET /v1/analytics` lists them.
//!
//! Invariant: one judgement per shift. `advance` only moves forward, and a judged shift
//! leaves the watch.

use crate::edges::EdgeBook;
use crate::finance::{self, INTERVAL_SD};
use crate::model::{self, space, Model, ModelError};
use crate::row::Digest;
use crate::signals::{MovedRow, SignalRow};
use schemas::api::{AlertKind, HoldNotJudged, ShiftHold};
use schemas::finance::{ReportGroup, ShiftRow};
use schemas::{Money, TableId};
use serde::{Deserialize, Serialize};

/// Most closed shifts of one table that wait for a price. Past it the oldest is given
/// up, with a warning, and named (`HoldWatch::not_judged`): the finance report still
/// shows its hold.
pub const AWAITING_MAX: usize = 16;
/// Most given-up shifts a table's watch names, the newest; older ones are only counted.
pub const NOT_JUDGED_KEPT: usize = 4;
/// Most payout errors a `hold_outside` signal links to, largest first.
pub const HOLD_ROUNDS_MAX: usize = 8;
/// Half the alert's interval, in thousandths of a standard deviation of the shift's win.
pub const ALERT_SD_MILLI: i64 = 3_291;
/// The chance, in millionths, that an honest shift lies outside `ALERT_SD_MILLI`: 0.1%
/// (a normal approximation of the shift's win), the bound `dealer_errors` uses too.
pub const OUTSIDE_CHANCE_PPM: u64 = 1_000;

/// What the indexer keeps per table to judge its shifts' hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoldWatch {
    /// The start of the shift of the table's newest round, UTC ns: the open shift.
    pub open_starts_at_ns: Option<i64>,
    /// Closed shifts (by start) whose theoretical win was pending, oldest first.
    pub awaiting: Vec<i64>,
    /// Priced configurations in the edge book when a shift last started waiting.
    pub priced_seen: u64,
    /// The newest shifts given up unjudged, oldest first; at most `NOT_JUDGED_KEPT`.
    pub not_judged: Vec<HoldNotJudged>,
    /// Every shift of the table given up unjudged.
    pub not_judged_total: u64,
}

/// A closed shift's judgement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judged {
    /// Its recorded win lies outside the alert's interval: the signal.
    Outside(Box<SignalRow>),
    /// Inside, or no priced handle to judge.
    Inside,
    /// A line's edge is not priced yet: judge again once it is.
    Pending,
}

/// Notes a new round of the table in the shift starting at `starts_at_ns`; the start of
/// the shift it closes, if any. A round of an older shift closes nothing.
pub fn advance(watch: &mut HoldWatch, starts_at_ns: i64) -> Option<i64> {
    let Some(open) = watch.open_starts_at_ns else {
        watch.open_starts_at_ns = Some(starts_at_ns);
        return None;
    };
    if starts_at_ns <= open {
        return None;
    }
    watch.open_starts_at_ns = Some(starts_at_ns);
    assert!(open < starts_at_ns, "a watch moves forward only");
    Some(open)
}

/// Keeps a pending shift for a later judgement; `priced` is the book's priced count now.
/// Returns the start of the oldest shift given up to make room, if any.
pub fn await_price(watch: &mut HoldWatch, starts_at_ns: i64, priced: u64) -> Option<i64> {
    watch.priced_seen = priced;
    if watch.awaiting.contains(&starts_at_ns) {
        return None;
    }
    let mut given_up = None;
    if watch.awaiting.len() >= AWAITING_MAX {
        let oldest = watch.awaiting.remove(0);
        tracing::warn!(
            starts_at_ns = oldest,
            "{AWAITING_MAX} shifts of one table wait for a price: the oldest is not judged"
        );
        given_up = Some(oldest);
    }
    watch.awaiting.push(starts_at_ns);
    assert!(watch.awaiting.len() <= AWAITING_MAX);
    given_up
}

/// Why a given-up shift is not judged.
pub fn not_judged_reason() -> String {
    format!("its pay table was not priced within {AWAITING_MAX} shifts")
}

/// Names a shift given up unjudged (`row` is its shift row, if the model holds one), so
/// that a reader sees it: the newest `NOT_JUDGED_KEPT`, and a count of all.
pub fn give_up(watch: &mut HoldWatch, table: &str, starts_at_ns: i64, row: Option<&ShiftRow>) {
    assert!(
        !watch.awaiting.contains(&starts_at_ns),
        "a shift given up waits no more"
    );
    if watch.not_judged.len() >= NOT_JUDGED_KEPT {
        watch.not_judged.remove(0);
    }
    watch.not_judged.push(HoldNotJudged {
        table: table.to_owned(),
        shift: row.map(|r| r.shift.clone()),
        starts_at_ns,
        reason: not_judged_reason(),
    });
    watch.not_judged_total += 1;
    assert!(watch.not_judged.len() as u64 <= watch.not_judged_total);
}

/// Why a closed shift waiting for a price is not judged yet.
pub fn awaiting_reason() -> String {
    "its pay table is not priced yet: judged once it is".into()
}

/// The closed shifts not judged, by table: those waiting for a price, then those given
/// up (`give_up`). At most `max` named, and how many in all. One watch read per table,
/// and one shift row read per waiting shift named.
pub fn not_judged(
    model: &Model,
    table: Option<&TableId>,
    max: usize,
) -> Result<(Vec<HoldNotJudged>, u64), ModelError> {
    let prefix = match table {
        Some(t) => model::table_key(space::HOLD_WATCH, t),
        None => vec![space::HOLD_WATCH],
    };
    let (mut out, mut total) = (Vec::new(), 0u64);
    for kv in model.db.scan_prefix(&prefix).fwd() {
        let (k, v) = kv?;
        if table.is_some() && k[..] != prefix[..] {
            continue; // another table whose key starts with this one's
        }
        let w: HoldWatch = model::decode(&k, &v)?;
        total += w.not_judged_total + w.awaiting.len() as u64;
        let t = crate::keystr::first_str(&k).and_then(|t| TableId::new(t).ok());
        let t =
            t.ok_or_else(|| ModelError::Corrupt(format!("hold watch {}", model::key_text(&k))))?;
        for start in w.awaiting.iter().take(max.saturating_sub(out.len())) {
            let row: Option<ShiftRow> = model.get(&model::shift_key(*start, Some(&t)))?;
            out.push(HoldNotJudged {
                table: t.to_string(),
                shift: row.map(|r| r.shift),
                starts_at_ns: *start,
                reason: awaiting_reason(),
            });
        }
        let room = max.saturating_sub(out.len());
        out.extend(w.not_judged.into_iter().take(room));
    }
    assert!(out.len() as u64 <= total, "a page is part of its whole");
    Ok((out, total))
}

/// How many configurations the book holds priced.
pub fn priced_count(book: &EdgeBook) -> u64 {
    book.records().filter(|r| r.priced.is_some()).count() as u64
}

/// Judges a closed shift's row; `at` is the new round that closed it or found it priced.
pub fn judge(row: &ShiftRow, book: &EdgeBook, at: &Digest) -> Judged {
    let g = finance::shift_group(row, book);
    if g.theoretical_pending {
        return Judged::Pending;
    }
    let sd_minor = (g.win_high - g.theoretical_win).0 / INTERVAL_SD;
    if sd_minor <= 0 {
        return Judged::Inside; // no priced handle: nothing to judge
    }
    let half = Money(clamp_i64(
        i128::from(sd_minor) * i128::from(ALERT_SD_MILLI) / 1000,
    ));
    let (low, high) = (g.theoretical_win - half, g.theoretical_win + half);
    assert!(
        low <= g.win_low && g.win_high <= high,
        "the alert's interval is wider"
    );
    if (low..=high).contains(&g.actual_win) {
        return Judged::Inside;
    }
    Judged::Outside(Box::new(signal_of(row, &g, (low, high), at)))
}

fn clamp_i64(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// `x` minor units in thousandths of the standard deviation of the shift's win.
fn sd_milli(x: i64, g: &ReportGroup) -> i64 {
    let sd = i128::from((g.win_high - g.theoretical_win).0) / i128::from(INTERVAL_SD);
    assert!(sd > 0, "an alarm has a spread");
    clamp_i64(i128::from(x) * 1000 / sd)
}

fn signal_of(
    row: &ShiftRow,
    g: &ReportGroup,
    (low, high): (Money, Money),
    at: &Digest,
) -> SignalRow {
    let table = at.row.table.to_string();
    assert_eq!(row.table.as_ref(), Some(&at.row.table), "the shift's table");
    let mut errors: Vec<_> = row.disputed.iter().collect();
    errors.sort_by_key(|r| std::cmp::Reverse((r.recorded - r.due).0.unsigned_abs()));
    let moved = errors
        .into_iter()
        .take(HOLD_ROUNDS_MAX)
        .map(|r| MovedRow {
            round: r.round.0,
            box_no: 0,
            by_milli: sd_milli((r.due - r.recorded).0, g),
            text: format!("paid {} where {} is due", r.recorded, r.due),
            table: None,
        })
        .collect();
    SignalRow {
        table: table.clone(),
        round: at.row.round.0,
        kind: AlertKind::HoldOutside.as_str().to_owned(),
        subject: format!("shift {}", row.shift),
        box_no: None,
        dealer: None,
        statistic_milli: sd_milli((g.actual_win - g.theoretical_win).0, g),
        threshold_milli: ALERT_SD_MILLI,
        false_alarms_milli_per_1000_rounds: OUTSIDE_CHANCE_PPM,
        run_rounds: row.rounds,
        moved,
        hold: Some(ShiftHold {
            shift: row.shift.clone(),
            starts_at_ns: row.starts_at_ns,
            ends_at_ns: row.ends_at_ns,
            rounds: row.rounds,
            actual_win: g.actual_win,
            theoretical_win: g.theoretical_win,
            win_low: low,
            win_high: high,
            handle_priced: g.handle_priced,
            finance_link: format!("/v1/reports?shift={}&table={table}", row.shift),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_closes_each_shift_once_and_never_goes_back() {
        let mut w = HoldWatch::default();
        assert_eq!(advance(&mut w, 100), None, "the first round opens a shift");
        assert_eq!(advance(&mut w, 100), None);
        assert_eq!(advance(&mut w, 50), None, "an older shift closes nothing");
        assert_eq!(advance(&mut w, 200), Some(100));
        assert_eq!(advance(&mut w, 200), None);
        assert_eq!(
            advance(&mut w, 400),
            Some(200),
            "a shift without rounds skipped"
        );
        assert_eq!(w.open_starts_at_ns, Some(400));
    }

    #[test]
    fn awaiting_shifts_are_bounded_and_kept_once() {
        let mut w = HoldWatch::default();
        let mut given_up = Vec::new();
        for s in 0..(AWAITING_MAX as i64 + 3) {
            given_up.extend(await_price(&mut w, s, 2));
            assert_eq!(await_price(&mut w, s, 2), None, "kept once");
        }
        assert_eq!(given_up, [0, 1, 2]);
        assert_eq!(w.awaiting.len(), AWAITING_MAX);
        for s in &given_up {
            give_up(&mut w, "T-1", *s, None);
        }
        for s in 100..(100 + NOT_JUDGED_KEPT as i64) {
            give_up(&mut w, "T-1", s, None);
        }
        assert_eq!(
            w.not_judged_total,
            3 + NOT_JUDGED_KEPT as u64,
            "all counted"
        );
        assert_eq!(w.not_judged.len(), NOT_JUDGED_KEPT, "the newest named");
        assert_eq!(w.not_judged[0].starts_at_ns, 100);
        assert_eq!(w.not_judged[0].shift, None, "no row: null, with the reason");
        assert!(w.not_judged[0].reason.contains("16 shifts"));
        assert_eq!(w.awaiting[0], 3, "the oldest are given up first");
        assert_eq!(w.priced_seen, 2);
    }
}
