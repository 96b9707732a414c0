//! Hold alarms: the house's actual win against its theoretical win, by table, game and
//! dealer, with a confidence interval from the handle and the game's variance.
//!
//! Actual win is what the dealer recorded (the rules' net plus each dispute's difference),
//! so a dealer's payout errors move it. Theoretical win is each line's stake times its
//! house edge (`rules::edge::default_edge`; the main game's edge is per unit of the Ante,
//! BET/Play and Ante Bonus included). Its variance is the sum of stakes squared times the
//! line's variance. Lines with no edge (jackpot wagers) and tables whose configuration
//! reprices the edges are counted apart, never priced as 0. Money sums are integers (the
//! theoretical win in millionths of a minor unit, rounded once when read); the interval
//! is a float (statistics only).

use crate::rounds::RoundFacts;
use schemas::report::Verdict;
use schemas::{PayLine, RuleSet, StaffId, TableId};
use std::collections::BTreeMap;

/// What a hold figure groups.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HoldKey {
    /// One table.
    Table(TableId),
    /// One game (rule set) across the floor.
    Game(RuleSet),
    /// One dealer across tables.
    Dealer(StaffId),
}

/// Sums of one group.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct HoldTally {
    /// Stakes of the priced lines, minor units.
    pub handle_minor: i128,
    /// The house's recorded win on them, minor units.
    pub win_minor: i128,
    /// Theoretical win, billionths of a minor unit.
    pub theoretical_nano: i128,
    /// Variance of the win, minor units squared (statistics only).
    pub variance: f64,
    /// Lines not priced: no edge (jackpot wagers) or a repriced configuration.
    pub unpriced_lines: u64,
}

/// One group's hold against its theoretical value.
#[derive(Debug, Clone, PartialEq)]
pub struct HoldAssessment {
    /// The group.
    pub key: HoldKey,
    /// Its sums.
    pub tally: HoldTally,
    /// Theoretical win, minor units, rounded half away from zero once.
    pub theoretical_minor: i128,
    /// The interval of the win at the setting's z, minor units (statistics).
    pub interval_minor: (f64, f64),
    /// Whether the actual win lies outside the interval.
    pub alarm: bool,
}

/// Most groups kept.
pub const GROUPS_MAX: usize = 100_000;

/// The floor's hold sums, round by round (O(1) per round).
#[derive(Debug, Default)]
pub struct Hold {
    groups: BTreeMap<HoldKey, HoldTally>,
    /// Rounds of groups beyond `GROUPS_MAX`.
    pub untracked: u64,
}

const MAIN: [PayLine; 4] = [
    PayLine::Ante,
    PayLine::Bet,
    PayLine::Play,
    PayLine::AnteBonus,
];

/// One round's priced sums.
fn round_tally(f: &RoundFacts) -> Option<HoldTally> {
    let rs = f.rule_set?;
    let s = f.report.settlement.as_ref()?;
    if f.report.verdict == Verdict::Void {
        return None;
    }
    let mut t = HoldTally::default();
    let diff = |b: schemas::BoxNo, l: PayLine| -> i128 {
        let d = f
            .report
            .disputes
            .iter()
            .filter(|d| d.box_no == b && d.line == l);
        d.map(|d| i128::from(d.difference.0)).sum()
    };
    for b in &s.boxes {
        for l in &b.lines {
            let stake = i128::from(l.stake.0);
            let priced_line = if MAIN.contains(&l.line) {
                PayLine::Ante
            } else {
                l.line
            };
            let edge = rules::edge::default_edge(rs, priced_line).filter(|_| !f.repriced);
            let Some(edge) = edge else {
                t.unpriced_lines += 1;
                continue;
            };
            t.handle_minor += stake;
            t.win_minor -= i128::from(l.net.0) + diff(b.box_no, l.line);
            // The main game's edge and variance are per unit of the Ante line's stake.
            if l.line == priced_line {
                t.theoretical_nano += stake * i128::from(edge.edge_ppb);
                t.variance += (stake * stake) as f64 * edge.variance_ppm as f64 / 1e6;
            }
        }
    }
    Some(t)
}

impl HoldTally {
    fn add(&mut self, o: &HoldTally) {
        self.handle_minor += o.handle_minor;
        self.win_minor += o.win_minor;
        self.theoretical_nano += o.theoretical_nano;
        self.variance += o.variance;
        self.unpriced_lines += o.unpriced_lines;
    }
}

impl Hold {
    /// Adds one round to its table, game and dealer.
    pub fn push(&mut self, f: &RoundFacts) {
        let Some(t) = round_tally(f) else {
            return;
        };
        let mut keys = vec![HoldKey::Table(f.table.clone())];
        keys.extend(f.rule_set.map(HoldKey::Game));
        keys.extend(f.dealer.clone().map(HoldKey::Dealer));
        for k in keys {
            if !self.groups.contains_key(&k) && self.groups.len() >= GROUPS_MAX {
                self.untracked += 1;
                continue;
            }
            self.groups.entry(k).or_default().add(&t);
        }
    }

    /// Every group against its theoretical win at `z` standard deviations.
    pub fn assess(&self, z: f64) -> Vec<HoldAssessment> {
        assert!(z > 0.0, "z > 0");
        self.groups
            .iter()
            .map(|(k, t)| {
                let theo = round_half_away(t.theoretical_nano, 1_000_000_000);
                let half = z * t.variance.sqrt();
                let interval = (theo as f64 - half, theo as f64 + half);
                let win = t.win_minor as f64;
                HoldAssessment {
                    key: k.clone(),
                    tally: *t,
                    theoretical_minor: theo,
                    interval_minor: interval,
                    alarm: t.handle_minor > 0 && (win < interval.0 || win > interval.1),
                }
            })
            .collect()
    }
}

/// `n / d` rounded half away from zero.
fn round_half_away(n: i128, d: i128) -> i128 {
    assert!(d > 0);
    let q = n / d;
    let r = n % d;
    if 2 * r.abs() >= d {
        q + n.signum()
    } else {
        q
    }
}
