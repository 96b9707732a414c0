//! A sequential test whose false-alarm rate per 1,000 rounds is a setting: a CUSUM of the
//! logarithm of a test martingale.
//!
//! Each round brings scores g_i in [-1, 1] with mean 0 under fair play (`verdict`). The
//! round's factor is the mean of 1 + lambda g_i, lambda in [0, lambda_max] chosen from the
//! scores before the round (GRAPA: the past mean of g over the past mean of g^2). Under
//! fair play the factor has mean 1 given the past, whatever the correlation between a
//! round's boxes, so every product of factors from a start round is a nonnegative
//! martingale of mean 1. The CUSUM S = max(0, S + ln factor) alarms at S >= h = ln(1000 x
//! tests / rate), `tests` the statistics one subject runs side by side (one per place of
//! a hole card): by Ville's inequality a run from any start passes h with probability at
//! most e^-h, which bounds the false alarms to `rate` per 1,000 rounds per subject (a
//! bound; the measured rate is lower, BENCHMARKS.md). After an alarm S restarts at 0.

use schemas::{BoxNo, RoundId};

/// The settings of a sequential test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TestSetting {
    /// False alarms allowed per 1,000 rounds of one stream (a box, a dealer, a table).
    pub false_alarms_per_1000_rounds: f64,
    /// The largest bet of the martingale on a score, in (0, 1).
    pub lambda: f64,
}

impl Default for TestSetting {
    fn default() -> TestSetting {
        TestSetting {
            false_alarms_per_1000_rounds: 1.0,
            lambda: 0.9,
        }
    }
}

impl TestSetting {
    /// The alarm threshold of one of `tests` statistics: h = ln(1000 x tests / rate).
    pub fn threshold(&self, tests: usize) -> f64 {
        assert!(
            self.false_alarms_per_1000_rounds > 0.0 && self.false_alarms_per_1000_rounds < 1000.0,
            "a false-alarm rate in (0, 1000) per 1,000 rounds"
        );
        assert!(self.lambda > 0.0 && self.lambda < 1.0, "lambda in (0, 1)");
        (1000.0 * tests.max(1) as f64 / self.false_alarms_per_1000_rounds).ln()
    }
}

/// One decision that moved a statistic, with the words that explain it.
#[derive(Debug, Clone, PartialEq)]
pub struct Moved {
    /// The round.
    pub round: RoundId,
    /// The box whose decision it was.
    pub box_no: BoxNo,
    /// What it added to ln of the round's factor, its share of the round's move.
    pub by: f64,
    /// What the player saw, what they chose, what the hidden cards were.
    pub text: String,
}

/// The decisions kept per statistic: those that moved it most since it last stood at 0.
pub const MOVED_MAX: usize = 8;

/// The prior of the sum of g^2: lambda starts small and grows with evidence.
const PRIOR_G2: f64 = 1.0;

/// One stream's CUSUM.
#[derive(Debug, Clone)]
pub struct Cusum {
    h: f64,
    tests: usize,
    lambda_max: f64,
    /// Sums of the scores seen and of their squares, for the next lambda.
    sum_g: f64,
    sum_g2: f64,
    s: f64,
    rounds: u64,
    moved: Vec<Moved>,
}

/// A stream's alarm: its statistic passed the threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Alarm {
    /// The round that took it over.
    pub round: RoundId,
    /// The statistic.
    pub statistic: f64,
    /// The threshold it passed.
    pub threshold: f64,
    /// Rounds since the statistic last stood at 0.
    pub run_rounds: u64,
    /// The decisions that moved it most, largest first.
    pub moved: Vec<Moved>,
}

/// A statistic's evidence, kept by the read model so that a restart resumes it
/// (`Cusum::state`, `Cusum::resume`).
#[derive(Debug, Clone, PartialEq)]
pub struct CusumState {
    /// The statistics its subject runs side by side (they set the threshold).
    pub tests: usize,
    /// Sum of the scores seen.
    pub sum_g: f64,
    /// Sum of their squares, with the prior.
    pub sum_g2: f64,
    /// The statistic.
    pub s: f64,
    /// Rounds since it last stood at 0.
    pub rounds: u64,
    /// The decisions that moved it most since then.
    pub moved: Vec<Moved>,
}

/// One box's score in a round, with the words that explain it.
#[derive(Debug, Clone, PartialEq)]
pub struct Score {
    /// The box.
    pub box_no: BoxNo,
    /// g in [-1, 1].
    pub g: f64,
    /// The explanation, shown if the statistic alarms.
    pub text: String,
}

impl Cusum {
    /// A statistic at 0 under `setting`, one of `tests` its subject runs.
    pub fn new(setting: TestSetting, tests: usize) -> Cusum {
        Cusum {
            h: setting.threshold(tests),
            tests,
            lambda_max: setting.lambda,
            sum_g: 0.0,
            sum_g2: PRIOR_G2,
            s: 0.0,
            rounds: 0,
            moved: Vec::new(),
        }
    }

    /// The statistic now.
    pub fn statistic(&self) -> f64 {
        self.s
    }

    /// What a resume needs: the evidence so far, without the setting.
    pub fn state(&self) -> CusumState {
        CusumState {
            tests: self.tests,
            sum_g: self.sum_g,
            sum_g2: self.sum_g2,
            s: self.s,
            rounds: self.rounds,
            moved: self.moved.clone(),
        }
    }

    /// A statistic that goes on from `state` under `setting`: the same rounds pushed
    /// into a fresh one give the same statistic, threshold and alarms.
    pub fn resume(setting: TestSetting, state: CusumState) -> Cusum {
        let mut c = Cusum::new(setting, state.tests);
        assert!(
            state.s >= 0.0 && state.sum_g2 >= PRIOR_G2,
            "a CUSUM state is nonnegative and holds its prior"
        );
        c.sum_g = state.sum_g;
        c.sum_g2 = state.sum_g2;
        c.s = state.s;
        c.rounds = state.rounds;
        c.moved = state.moved;
        c.moved.truncate(MOVED_MAX);
        c
    }

    /// Adds one round's scores; an alarm when the statistic passes the threshold.
    pub fn push(&mut self, round: RoundId, scores: &[Score]) -> Option<Alarm> {
        if scores.is_empty() {
            return None;
        }
        let n = scores.len() as f64;
        let lambda = (self.sum_g / self.sum_g2).clamp(0.0, self.lambda_max);
        for x in scores {
            self.sum_g += x.g;
            self.sum_g2 += x.g * x.g;
        }
        let factor = scores.iter().map(|x| 1.0 + lambda * x.g).sum::<f64>() / n;
        assert!(
            factor > 0.0,
            "a factor of scores in [-1, 1] with lambda < 1 is positive"
        );
        let step = factor.ln();
        self.s = (self.s + step).max(0.0);
        if self.s == 0.0 {
            self.rounds = 0;
            self.moved.clear();
            return None;
        }
        self.rounds += 1;
        for x in scores.iter().filter(|x| x.g > 0.0) {
            let by = (1.0 + lambda * x.g).ln() / n;
            self.keep(Moved {
                round,
                box_no: x.box_no,
                by,
                text: x.text.clone(),
            });
        }
        if self.s < self.h {
            return None;
        }
        let alarm = Alarm {
            round,
            statistic: self.s,
            threshold: self.h,
            run_rounds: self.rounds,
            moved: std::mem::take(&mut self.moved),
        };
        self.s = 0.0;
        self.rounds = 0;
        Some(alarm)
    }

    fn keep(&mut self, m: Moved) {
        self.moved.push(m);
        self.moved.sort_by(|a, b| b.by.total_cmp(&a.by));
        self.moved.truncate(MOVED_MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Round `r`'s scores: a box that mostly gains, so the statistic alarms.
    fn scores(r: u64) -> Vec<Score> {
        let g = if r.is_multiple_of(5) { -0.4 } else { 0.6 };
        vec![Score {
            box_no: BoxNo(3),
            g,
            text: format!("round {r}"),
        }]
    }

    #[test]
    fn a_resumed_statistic_goes_on_as_if_never_stopped() {
        let setting = TestSetting::default();
        let mut whole = Cusum::new(setting, 3);
        let mut cut = Cusum::new(setting, 3);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for r in 1..=200u64 {
            a.extend(whole.push(RoundId(r), &scores(r)));
            b.extend(cut.push(RoundId(r), &scores(r)));
            if r.is_multiple_of(37) {
                cut = Cusum::resume(setting, cut.state());
            }
            assert_eq!(whole.statistic().to_bits(), cut.statistic().to_bits());
        }
        assert!(!a.is_empty(), "the test alarms");
        assert_eq!(a, b);
        // A fresh statistic at a cut (a restart at 0) does not: the evidence matters.
        let mut fresh = Cusum::new(setting, 3);
        for r in 1..=200u64 {
            fresh.push(RoundId(r), &scores(r));
            if r.is_multiple_of(37) {
                fresh = Cusum::new(setting, 3);
            }
        }
        assert_ne!(fresh.statistic().to_bits(), whole.statistic().to_bits());
    }
}
