//! Dealer quality counters in the read model: one row per dealer, kept up to date as
//! round rows are written, so that `GET /v1/analytics` reads them without a rescan.
//!
//! Invariants:
//! - A dealer's row is the sum over the model's decided round rows (not in progress)
//!   that name the dealer. Writing a round takes back its old row's part first.
//! - A round costs O(1): one row read and written per dealer it touches.
//! - Derived only from the round rows, so a rebuild gives the same counts.
//! - Money is integer minor units; the rates are statistics, computed when served.

use crate::row::Digest;
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
}

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
fn median(mut xs: Vec<u64>) -> Option<u64> {
    xs.sort_unstable();
    let n = xs.len();
    (n > 0).then(|| xs[(n - 1) / 2])
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
    rows.iter().map(|r| quality_of(r, &medians)).collect()
}

fn quality_of(r: &DealerRow, medians: &[Option<u64>]) -> schemas::api::DealerQuality {
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
