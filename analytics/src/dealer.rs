//! Dealer quality: payout errors by direction and size, irregular rounds and exposed cards
//! per 1,000 rounds, and rounds per hour, per dealer, against the rest of the floor.
//!
//! A dealer is flagged when their count of disputed (or irregular) rounds is improbably
//! high for the rate of the other dealers: the one-sided Poisson tail P(X >= k) with mean
//! rounds x the others' rate is below the setting `p_max`. Money is integer minor units;
//! the rates and tails are floats (statistics only).

use crate::pace::{rounds_per_hour_milli, stint_part, RoundSpan};
use crate::rounds::RoundFacts;
use schemas::report::Verdict;
use schemas::{StaffId, TableId};
use std::collections::BTreeMap;

/// Most dealers tallied; rounds of further dealers are counted in `untracked`.
pub const DEALERS_MAX: usize = 100_000;

/// One dealer's counts, or the floor's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DealerTally {
    /// Rounds dealt.
    pub rounds: u64,
    /// Rounds with a recorded payout that differs from the rules.
    pub disputed_rounds: u64,
    /// Lines overpaid, and by how much in all, minor units.
    pub overpaid_lines: u64,
    /// The total overpaid, minor units.
    pub overpaid_minor: i64,
    /// Lines underpaid.
    pub underpaid_lines: u64,
    /// The total underpaid, minor units (positive).
    pub underpaid_minor: i64,
    /// The largest single payout error, minor units (absolute).
    pub largest_error_minor: i64,
    /// Rounds with a finding (irregular, disputed or void).
    pub irregular_rounds: u64,
    /// Cards recorded exposed.
    pub exposed_cards: u64,
    /// Device time at tables, ns: summed over stints (`pace`).
    pub dealing_ns: i64,
}

impl DealerTally {
    fn add(&mut self, f: &RoundFacts) {
        self.rounds += 1;
        let r = &f.report;
        self.disputed_rounds += u64::from(!r.disputes.is_empty());
        for d in &r.disputes {
            let size = d.difference.0.abs();
            self.largest_error_minor = self.largest_error_minor.max(size);
            if d.difference.0 > 0 {
                self.overpaid_lines += 1;
                self.overpaid_minor = self.overpaid_minor.saturating_add(size);
            } else {
                self.underpaid_lines += 1;
                self.underpaid_minor = self.underpaid_minor.saturating_add(size);
            }
        }
        self.irregular_rounds += u64::from(r.verdict != Verdict::Clean);
        self.exposed_cards += u64::from(f.exposed_cards);
    }

    fn minus(&self, other: &DealerTally) -> DealerTally {
        DealerTally {
            rounds: self.rounds - other.rounds,
            disputed_rounds: self.disputed_rounds - other.disputed_rounds,
            irregular_rounds: self.irregular_rounds - other.irregular_rounds,
            exposed_cards: self.exposed_cards - other.exposed_cards,
            ..DealerTally::default()
        }
    }

    /// Rounds per hour of dealing; `None` below `pace::DEALING_NS_MIN`.
    pub fn rounds_per_hour(&self) -> Option<f64> {
        rounds_per_hour_milli(self.rounds, self.dealing_ns).map(|x| x as f64 / 1000.0)
    }
}

/// A dealer's figures against the rest of the floor.
#[derive(Debug, Clone, PartialEq)]
pub struct DealerAssessment {
    /// The dealer.
    pub dealer: StaffId,
    /// Their counts.
    pub tally: DealerTally,
    /// Disputed rounds per 1,000: theirs and the other dealers'.
    pub disputed_per_1000: (f64, f64),
    /// Irregular rounds per 1,000: theirs and the other dealers'.
    pub irregular_per_1000: (f64, f64),
    /// Exposed cards per 1,000 rounds: theirs and the other dealers'.
    pub exposed_per_1000: (f64, f64),
    /// P(at least their disputed rounds) at the others' rate.
    pub disputed_tail: f64,
    /// P(at least their irregular rounds) at the others' rate.
    pub irregular_tail: f64,
    /// Whether a tail is below the setting.
    pub flagged: bool,
}

/// The floor's dealers, round by round (O(1) per round).
#[derive(Debug, Default)]
pub struct DealerQuality {
    dealers: BTreeMap<StaffId, DealerTally>,
    floor: DealerTally,
    /// Per table: the dealer of its last round, and that round's span.
    stints: BTreeMap<TableId, (StaffId, RoundSpan)>,
    /// Rounds with no dealer recorded, or beyond `DEALERS_MAX`.
    pub untracked: u64,
}

impl DealerQuality {
    /// Adds one round.
    pub fn push(&mut self, f: &RoundFacts) {
        let Some(d) = &f.dealer else {
            self.untracked += 1;
            return;
        };
        if !self.dealers.contains_key(d) && self.dealers.len() >= DEALERS_MAX {
            self.untracked += 1;
            return;
        }
        let dealt_ns = self.stint_growth(f, d);
        let t = self.dealers.entry(d.clone()).or_default();
        t.add(f);
        t.dealing_ns = t.dealing_ns.saturating_add(dealt_ns);
        self.floor.add(f);
        self.floor.dealing_ns = self.floor.dealing_ns.saturating_add(dealt_ns);
    }

    /// The time this round adds to its dealer's dealing (`pace::stint_part`): the table's
    /// previous round counts when it was the same dealer's.
    fn stint_growth(&mut self, f: &RoundFacts, d: &StaffId) -> i64 {
        let Some(closed) = f.report.closed_at_ns else {
            self.stints.remove(&f.table);
            return 0;
        };
        let this = RoundSpan {
            opened_at_ns: f.report.opened_at_ns,
            closed_at_ns: closed,
        };
        let before = self.stints.get(&f.table).filter(|(sd, _)| sd == d);
        let part = stint_part(before.map(|(_, span)| *span), this);
        self.stints.insert(f.table.clone(), (d.clone(), this));
        part.dealing_ns
    }

    /// Every dealer against the other dealers; flagged when a tail is below `p_max`.
    pub fn assess(&self, p_max: f64) -> Vec<DealerAssessment> {
        assert!(p_max > 0.0 && p_max < 1.0, "a tail probability in (0, 1)");
        let per_1000 = |k: u64, n: u64| {
            if n == 0 {
                0.0
            } else {
                k as f64 * 1000.0 / n as f64
            }
        };
        self.dealers
            .iter()
            .map(|(d, t)| {
                let o = self.floor.minus(t);
                let rate = |k: u64| {
                    if o.rounds == 0 {
                        0.0
                    } else {
                        k as f64 / o.rounds as f64
                    }
                };
                let disputed_tail =
                    poisson_tail(t.disputed_rounds, t.rounds as f64 * rate(o.disputed_rounds));
                let irregular_tail = poisson_tail(
                    t.irregular_rounds,
                    t.rounds as f64 * rate(o.irregular_rounds),
                );
                DealerAssessment {
                    dealer: d.clone(),
                    tally: *t,
                    disputed_per_1000: (
                        per_1000(t.disputed_rounds, t.rounds),
                        per_1000(o.disputed_rounds, o.rounds),
                    ),
                    irregular_per_1000: (
                        per_1000(t.irregular_rounds, t.rounds),
                        per_1000(o.irregular_rounds, o.rounds),
                    ),
                    exposed_per_1000: (
                        per_1000(t.exposed_cards, t.rounds),
                        per_1000(o.exposed_cards, o.rounds),
                    ),
                    disputed_tail,
                    irregular_tail,
                    flagged: o.rounds > 0 && (disputed_tail < p_max || irregular_tail < p_max),
                }
            })
            .collect()
    }
}

/// P(X >= k) for X Poisson of `mean` (1 when k is 0; 0 when the mean is 0 and k > 0).
pub fn poisson_tail(k: u64, mean: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if mean <= 0.0 {
        return 0.0;
    }
    // 1 - P(X < k), the terms in logs so a large mean does not underflow.
    let mut below = 0.0;
    let mut log_term = -mean;
    for i in 0..k {
        if i > 0 {
            log_term += mean.ln() - (i as f64).ln();
        }
        below += log_term.exp();
    }
    (1.0 - below).max(0.0)
}
