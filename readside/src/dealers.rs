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
