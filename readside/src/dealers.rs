//! Dealer quality counters in the read model: one row per dealer, kept up to date as
//! round rows are written, so that `GET /v1/analytics` reads them without a rescan.
//!
//! Invariants:
//! - A dealer's row is the sum over the model's decided round rows (not in progress)
//!   that name the dealer. Writing a round takes back its old row's part first.
//! - A round costs O(1): one row read and written per dealer it touches.
//! - Derived only from the round rows, so a rebuild gives the same counts.
//! - A dealer's dealing time is the sum of their rounds' stint parts (`stints`).
//! - Money is integer minor units; the rates are statistics, computed when served.

use crate::row::Digest;
use crate::signals::SignalRow;
use analytics::pace::rounds_per_hour_milli;
use schemas::findings::{by_code, FindingKind};
use schemas::report::Verdict;
use serde::{Deserialize, Serialize};

/// One dealer's counts over their decided rounds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DealerRow {
    /// The dealer's staff id.
    pub dealer: String,
    /// Decided rounds dealt.
    pub rounds: u64,
    /// Rounds with a recorded payout that differs from the rules.
    pub disputed_rounds: u64,
    /// Lines paid more than the rules say.
    pub overpaid_lines: u64,
    /// The total overpaid, minor units.
    pub overpaid_minor: i64,
    /// Lines paid less than the rules say.
    pub underpaid_lines: u64,
    /// The total underpaid, minor units (positive).
    pub underpaid_minor: i64,
    /// Rounds whose verdict is irregular.
    pub irregular_rounds: u64,
    /// Findings of an exposed card (CSP6 §5.12, §5.16): one per finding, not per card.
    pub exposure_findings: u64,
    /// The earliest opening of a round counted, UTC ns.
    pub first_opened_at_ns: Option<i64>,
    /// The latest close of a round counted, UTC ns.
    pub last_closed_at_ns: Option<i64>,
    /// The dealer's latest disputed rounds, newest first; at most `RECENT_DISPUTED_MAX`.
    #[serde(default)]
    pub recent_disputed: Vec<DisputedRound>,
    /// Where the dealer's `dealer_errors` signal was raised: it is raised once.
    #[serde(default)]
    pub alarmed_at: Option<DisputedRound>,
    /// Dealing time summed over stints, ns (`analytics::pace`).
    #[serde(default)]
    pub dealing_ns: i64,
    /// Stints dealt: runs of a table's rounds with no pause over 20 minutes.
    #[serde(default)]
    pub stints: u64,
}

/// A round of a dealer's, with its payout errors in words.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DisputedRound {
    /// The round's table.
    pub table: String,
    /// The round.
    pub round: u64,
    /// The box of its first payout error.
    pub box_no: u8,
    /// Its payout errors: box, line, recorded and due.
    pub text: String,
}

/// The floor's counts over every dealer's decided rounds: what a dealer is judged against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FloorRow {
    /// Decided rounds with a named dealer.
    pub rounds: u64,
    /// Of which disputed.
    pub disputed_rounds: u64,
}

/// Most disputed rounds a dealer's row keeps to link from its signal.
pub const RECENT_DISPUTED_MAX: usize = 8;

/// The one-sided Poisson tail below which a dealer's disputed rounds raise `dealer_errors`:
/// the bound `analytics::dealer` and its quality test use.
pub const ERRORS_TAIL_MAX: f64 = 0.001;

/// The least disputed-round rate a dealer is judged against: one per 1,000 rounds. A
/// floor with no disputes at all would otherwise make one dispute an alarm.
pub const FLOOR_RATE_MIN: f64 = 0.001;

/// The fewest disputed rounds that may raise a dealer's alarm.
pub const ALARM_DISPUTES_MIN: u64 = 3;

/// The dealer a round row counts for: `None` in progress or without a named dealer.
pub fn counted(d: &Digest) -> Option<&str> {
    if d.row.in_progress {
        return None;
    }
    d.row.dealer.as_deref()
}

/// Whether `code` records an exposed card.
fn is_exposure(code: &str) -> bool {
    matches!(
        by_code(code).map(|c| c.kind),
        Some(
            FindingKind::CardExposed
                | FindingKind::DealerCardExposed
                | FindingKind::TwoCardsExposedVoid
        )
    )
}

/// The part one round adds to its dealer's row.
#[derive(Debug, Default)]
struct Part {
    disputed: u64,
    over: (u64, i64),
    under: (u64, i64),
    irregular: u64,
    exposures: u64,
}

fn part_of(d: &Digest) -> Part {
    let mut p = Part {
        disputed: u64::from(!d.disputes.is_empty()),
        irregular: u64::from(d.row.verdict == Verdict::Irregular),
        ..Part::default()
    };
    for x in &d.disputes {
        let size_minor = x.difference.0.saturating_abs();
        let side = if x.difference.0 > 0 {
            &mut p.over
        } else {
            &mut p.under
        };
        side.0 += 1;
        side.1 = side.1.saturating_add(size_minor);
    }
    p.exposures = d.findings.iter().filter(|f| is_exposure(&f.code)).count() as u64;
    p
}

/// A disputed round's payout errors in words.
fn disputed_text(d: &Digest) -> String {
    let parts: Vec<String> = d
        .disputes
        .iter()
        .map(|x| {
            format!(
                "box {} {}: paid {} where {} is due",
                x.box_no.0,
                serde_json::to_value(x.line).map_or_else(
                    |_| String::new(),
                    |v| v.as_str().unwrap_or_default().to_owned()
                ),
                x.recorded,
                x.expected
            )
        })
        .collect();
    parts.join("; ")
}

/// Adds a counted round to the floor's counts.
pub fn floor_add(floor: &mut FloorRow, d: &Digest) {
    assert!(counted(d).is_some(), "the floor counts dealers' rounds");
    floor.rounds += 1;
    floor.disputed_rounds += u64::from(!d.disputes.is_empty());
}

/// Takes a counted round back from the floor's counts.
pub fn floor_take(floor: &mut FloorRow, d: &Digest) {
    assert!(counted(d).is_some(), "the floor counts dealers' rounds");
    let disputed = u64::from(!d.disputes.is_empty());
    assert!(
        floor.rounds > 0 && floor.disputed_rounds >= disputed,
        "taken back was counted"
    );
    floor.rounds -= 1;
    floor.disputed_rounds -= disputed;
}

/// Adds a counted round to its dealer's row.
pub fn add(row: &mut DealerRow, d: &Digest) {
    assert_eq!(counted(d), Some(row.dealer.as_str()), "the row's dealer");
    let p = part_of(d);
    row.rounds += 1;
    row.disputed_rounds += p.disputed;
    row.overpaid_lines += p.over.0;
    row.overpaid_minor = row.overpaid_minor.saturating_add(p.over.1);
    row.underpaid_lines += p.under.0;
    row.underpaid_minor = row.underpaid_minor.saturating_add(p.under.1);
    row.irregular_rounds += p.irregular;
    row.exposure_findings += p.exposures;
    let opened = d.row.opened_at_ns;
    row.first_opened_at_ns = Some(row.first_opened_at_ns.map_or(opened, |t| t.min(opened)));
    if let Some(closed) = d.row.closed_at_ns {
        row.last_closed_at_ns = Some(row.last_closed_at_ns.map_or(closed, |t| t.max(closed)));
    }
    if p.disputed > 0 {
        let at = DisputedRound {
            table: d.row.table.to_string(),
            round: d.row.round.0,
            box_no: d.disputes.first().map_or(0, |x| x.box_no.0),
            text: disputed_text(d),
        };
        row.recent_disputed
            .retain(|r| (&r.table, r.round) != (&at.table, at.round));
        row.recent_disputed.insert(0, at);
        row.recent_disputed.truncate(RECENT_DISPUTED_MAX);
    }
}

/// Takes a counted round back from its dealer's row. The time span stays: it bounds the
/// rounds ever counted, and a round's opening does not change.
pub fn take(row: &mut DealerRow, d: &Digest) {
    assert_eq!(counted(d), Some(row.dealer.as_str()), "the row's dealer");
    let p = part_of(d);
    assert!(row.rounds > 0, "a round taken back was counted");
    assert!(row.disputed_rounds >= p.disputed && row.irregular_rounds >= p.irregular);
    assert!(row.overpaid_lines >= p.over.0 && row.underpaid_lines >= p.under.0);
    assert!(
        row.exposure_findings >= p.exposures,
        "exposures taken back were counted"
    );
    row.rounds -= 1;
    row.disputed_rounds -= p.disputed;
    row.overpaid_lines -= p.over.0;
    row.overpaid_minor = row.overpaid_minor.saturating_sub(p.over.1);
    row.underpaid_lines -= p.under.0;
    row.underpaid_minor = row.underpaid_minor.saturating_sub(p.under.1);
    row.irregular_rounds -= p.irregular;
    row.exposure_findings -= p.exposures;
    assert!(
        row.overpaid_minor >= 0 && row.underpaid_minor >= 0,
        "sizes stay positive"
    );
}

/// The dealer's disputed-round tail against the rest of the floor, judged as a round is
/// added; the `dealer_errors` signal when it first falls below `ERRORS_TAIL_MAX`.
///
/// Both the dealer and the rest of the floor need `RATE_ROUNDS_MIN` rounds. A count
/// within two standard deviations of its mean is not judged: its tail is far above the
/// bound, and a clean dealer costs O(1) a round.
pub fn judge(row: &mut DealerRow, floor: &FloorRow, at: &Digest) -> Option<SignalRow> {
    assert_eq!(counted(at), Some(row.dealer.as_str()), "the row's dealer");
    assert!(
        floor.rounds >= row.rounds,
        "the floor holds the dealer's rounds"
    );
    let others = floor.rounds - row.rounds;
    let others_disputed = floor.disputed_rounds.checked_sub(row.disputed_rounds)?;
    if row.alarmed_at.is_some() || row.rounds < RATE_ROUNDS_MIN || others < RATE_ROUNDS_MIN {
        return None;
    }
    let k_min = alarm_threshold(row.disputed_rounds, row.rounds, (others, others_disputed))?;
    row.alarmed_at = Some(DisputedRound {
        table: at.row.table.to_string(),
        round: at.row.round.0,
        ..DisputedRound::default()
    });
    Some(signal_of(row, k_min, at))
}

/// The smallest disputed count whose tail is below `ERRORS_TAIL_MAX`, when `k` disputes
/// in `rounds` reach it against the rest of the floor's `(rounds, disputed)`; else `None`.
/// A floor with no disputes gives no rate to judge against: `FLOOR_RATE_MIN` is the least
/// assumed, and fewer than `ALARM_DISPUTES_MIN` disputes never alarm.
fn alarm_threshold(k: u64, rounds: u64, (others, others_disputed): (u64, u64)) -> Option<u64> {
    assert!(others > 0, "judged only against a floor with rounds");
    let floor_rate = (others_disputed as f64 / others as f64).max(FLOOR_RATE_MIN);
    let mean = rounds as f64 * floor_rate;
    if k < ALARM_DISPUTES_MIN || (k as f64) <= mean + 2.0 * mean.sqrt() {
        return None;
    }
    if analytics::dealer::poisson_tail(k, mean) >= ERRORS_TAIL_MAX {
        return None;
    }
    let first = (mean + 2.0 * mean.sqrt()).floor() as u64;
    let k_min = (first..=k)
        .find(|&j| analytics::dealer::poisson_tail(j, mean) < ERRORS_TAIL_MAX)
        .unwrap_or(k);
    Some(k_min.max(ALARM_DISPUTES_MIN))
}

fn signal_of(row: &DealerRow, k_min: u64, at: &Digest) -> SignalRow {
    let table = at.row.table.to_string();
    let moved = row
        .recent_disputed
        .iter()
        .map(|r| crate::signals::MovedRow {
            round: r.round,
            box_no: r.box_no,
            by_milli: 1000,
            text: r.text.clone(),
            table: (r.table != table).then(|| r.table.clone()),
        })
        .collect();
    let milli = |k: u64| i64::try_from(milli_per_1000(k, row.rounds)).unwrap_or(i64::MAX);
    SignalRow {
        table,
        round: at.row.round.0,
        kind: schemas::api::AlertKind::DealerErrors.as_str().to_owned(),
        subject: format!("dealer {}", row.dealer),
        box_no: None,
        dealer: Some(row.dealer.clone()),
        statistic_milli: milli(row.disputed_rounds),
        threshold_milli: milli(k_min),
        false_alarms_milli_per_1000_rounds: (ERRORS_TAIL_MAX * 1_000_000.0) as u64,
        run_rounds: row.rounds,
        moved,
        hold: None,
    }
}

/// Most dealer rows one answer assesses.
pub const DEALERS_SERVED_MAX: usize = 10_000;

/// Fewest decided rounds for which a dealer's rates are given (else null with a reason).
pub const RATE_ROUNDS_MIN: u64 = 100;

/// Thousandths of `k` per 1,000 of `n` (`n` > 0), rounded down.
fn milli_per_1000(k: u64, n: u64) -> u64 {
    assert!(n > 0, "a rate of no rounds");
    let x = u128::from(k) * 1_000_000 / u128::from(n);
    u64::try_from(x).unwrap_or(u64::MAX)
}

/// The median of `xs` (the lower middle of an even count); `None` when empty.
fn median(xs: Vec<u64>) -> Option<u64> {
    percentiles(xs, [50]).map(|[m]| m)
}

/// The `ps` percentiles of `xs` by the lower nearest rank, index (n - 1) p / 100;
/// `None` when empty.
fn percentiles<const N: usize>(mut xs: Vec<u64>, ps: [usize; N]) -> Option<[u64; N]> {
    xs.sort_unstable();
    let n = xs.len();
    assert!(ps.iter().all(|&p| p <= 100), "percentiles of 0 to 100");
    (n > 0).then(|| ps.map(|p| xs[(n - 1) * p / 100]))
}

/// Every dealer's rounds per hour of dealing against the floor's quartiles, in order.
fn paces(rows: &[DealerRow]) -> Vec<schemas::api::DealerPace> {
    let rate = |r: &DealerRow| rounds_per_hour_milli(r.rounds, r.dealing_ns);
    let quartiles = percentiles(rows.iter().filter_map(rate).collect(), [25, 50, 75]);
    rows.iter()
        .map(|r| {
            let mine = rate(r);
            let null_reason = mine.is_none().then(|| {
                const MINUTE_NS: i64 = 60_000_000_000;
                format!(
                    "{} minutes of dealing: rounds per hour need at least {}",
                    r.dealing_ns / MINUTE_NS,
                    analytics::pace::DEALING_NS_MIN / MINUTE_NS
                )
            });
            schemas::api::DealerPace {
                rounds_per_hour_milli: mine,
                null_reason,
                floor_p25_milli: quartiles.map(|q| q[0]),
                floor_median_milli: quartiles.map(|q| q[1]),
                floor_p75_milli: quartiles.map(|q| q[2]),
            }
        })
        .collect()
}

/// The counts a rate is of: payout error lines, disputed, irregular, exposures.
fn rate_counts(r: &DealerRow) -> [u64; 4] {
    [
        r.overpaid_lines + r.underpaid_lines,
        r.disputed_rounds,
        r.irregular_rounds,
        r.exposure_findings,
    ]
}

/// Every dealer's counts, their rates per 1,000 rounds and the floor's medians. A dealer
/// with fewer than `RATE_ROUNDS_MIN` rounds has null rates, and is left out of the medians.
/// Rounds per hour are null, and left out of the quartiles, under
/// `analytics::pace::DEALING_NS_MIN`.
pub fn assess(rows: &[DealerRow]) -> Vec<schemas::api::DealerQuality> {
    let rated: Vec<&DealerRow> = rows
        .iter()
        .filter(|r| r.rounds >= RATE_ROUNDS_MIN)
        .collect();
    let medians: Vec<Option<u64>> = (0..4)
        .map(|i| {
            median(
                rated
                    .iter()
                    .map(|r| milli_per_1000(rate_counts(r)[i], r.rounds))
                    .collect(),
            )
        })
        .collect();
    rows.iter()
        .zip(paces(rows))
        .map(|(r, pace)| quality_of(r, &medians, pace))
        .collect()
}

fn quality_of(
    r: &DealerRow,
    medians: &[Option<u64>],
    pace: schemas::api::DealerPace,
) -> schemas::api::DealerQuality {
    use schemas::api::DealerRate;
    let enough = r.rounds >= RATE_ROUNDS_MIN;
    let counts = rate_counts(r);
    let rate = |i: usize| DealerRate {
        milli_per_1000_rounds: enough.then(|| milli_per_1000(counts[i], r.rounds)),
        floor_median_milli_per_1000_rounds: medians[i],
    };
    let reason = (!enough).then(|| {
        format!(
            "{} decided rounds: rates need at least {RATE_ROUNDS_MIN}",
            r.rounds
        )
    });
    schemas::api::DealerQuality {
        dealer: r.dealer.clone(),
        rounds: r.rounds,
        disputed_rounds: r.disputed_rounds,
        overpaid_lines: r.overpaid_lines,
        overpaid_minor: r.overpaid_minor,
        underpaid_lines: r.underpaid_lines,
        underpaid_minor: r.underpaid_minor,
        irregular_rounds: r.irregular_rounds,
        exposure_findings: r.exposure_findings,
        first_opened_at_ns: r.first_opened_at_ns,
        last_closed_at_ns: r.last_closed_at_ns,
        payout_errors: rate(0),
        disputed: rate(1),
        irregular: rate(2),
        exposures: rate(3),
        rates_null_reason: reason,
        dealing_ns: r.dealing_ns,
        stints: r.stints,
        pace,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, rounds: u64, over_lines: u64) -> DealerRow {
        DealerRow {
            dealer: name.into(),
            rounds,
            overpaid_lines: over_lines,
            first_opened_at_ns: Some(0),
            last_closed_at_ns: Some(3_600_000_000_000),
            ..DealerRow::default()
        }
    }

    #[test]
    fn a_floor_with_no_disputes_does_not_make_one_dispute_an_alarm() {
        // 100 rounds each; the rest of the floor disputed none.
        assert_eq!(alarm_threshold(1, 100, (1_000, 0)), None);
        assert_eq!(alarm_threshold(2, 100, (1_000, 0)), None);
        // Three disputes in 100 rounds against the least rate (0.1 expected) alarm.
        assert_eq!(alarm_threshold(3, 100, (1_000, 0)), Some(3));
        // Against a floor of 50 per 1,000 rounds (5 expected), 8 is within chance, 20 not.
        assert_eq!(alarm_threshold(8, 100, (1_000, 50)), None);
        let at = alarm_threshold(20, 100, (1_000, 50)).expect("an alarm");
        assert!((12..=20).contains(&at), "threshold {at}");
    }

    #[test]
    fn rates_against_the_floor_median_and_null_below_the_minimum() {
        let rows = [
            row("A", 1_000, 2),
            row("B", 1_000, 4),
            row("C", 500, 20),
            row("D", 99, 50),
        ];
        let q = assess(&rows);
        // Rated: A 2.000, B 4.000, C 40.000 per 1,000; the median is B's.
        assert_eq!(q[2].payout_errors.milli_per_1000_rounds, Some(40_000));
        assert_eq!(
            q[2].payout_errors.floor_median_milli_per_1000_rounds,
            Some(4_000)
        );
        // D has 99 rounds: null rates with a reason, never 0, and out of the median.
        assert_eq!(q[3].payout_errors.milli_per_1000_rounds, None);
        assert!(q[3]
            .rates_null_reason
            .as_deref()
            .is_some_and(|s| s.contains("99")));
        assert_eq!(q[0].rates_null_reason, None);
        // With no dealer rated, the medians are unknown too.
        let few = assess(&[row("D", 99, 50)]);
        assert_eq!(few[0].disputed.floor_median_milli_per_1000_rounds, None);
    }
}
