//! Decision signals in the read model: the indexer hands each reported round's facts to
//! `analytics::Monitor` (hole-card play per box, dealer and table; card sharing per pair of
//! neighbouring boxes). Each statistic that crosses its threshold becomes a signal row,
//! kept by (table, round, kind, subject) with the rounds that moved it.
//!
//! Invariants:
//! - A round costs O(1): the monitor judges that round's decisions only, never a rescan.
//! - Each round is judged once, from the replayer's report (not from early reports).
//! - A model records whether every pass judged its rounds (`Coverage`). A model indexed
//!   with analytics off, even for one pass, says so: an empty list then means "not
//!   computed", never "no signal".
//! - Each pass commits the states of the statistics it pushed (`streams`). A restart
//!   resumes every statistic from the model, as the last committed pass left it; a
//!   rebuild judges every round from the first.

use crate::streams::StreamRow;
use analytics::{DecisionAlarm, Monitor, RoundFacts, Subject, TestSetting};
pub use schemas::api::{DecisionSignal as SignalRow, SignalMove as MovedRow};
use serde::{Deserialize, Serialize};

/// Most decisions a signal row keeps of those that moved its statistic.
pub const SIGNAL_MOVED_MAX: usize = analytics::sequential::MOVED_MAX;

/// The analytics of a tail: on, with its test setting, or off.
pub struct Signals {
    monitor: Monitor,
    setting: TestSetting,
    /// Whether the statistics were read back from the model.
    resumed: bool,
}

impl std::fmt::Debug for Signals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signals")
            .field("setting", &self.setting)
            .field("decisions", &self.monitor.decisions)
            .finish()
    }
}

impl Signals {
    /// Analytics with `setting` (its false alarms per 1,000 rounds).
    pub fn new(setting: TestSetting) -> Signals {
        Signals {
            monitor: Monitor::new(setting),
            setting,
            resumed: false,
        }
    }

    /// Whether the statistics' states were read back (`resume`).
    pub fn resumed(&self) -> bool {
        self.resumed
    }

    /// Puts back the statistics' states the model keeps, before the first round.
    pub fn resume(&mut self, states: Vec<(analytics::StreamKey, analytics::CusumState)>) {
        assert!(
            !self.resumed && self.monitor.decisions == 0,
            "statistics resume once, before any round is judged"
        );
        for (key, state) in states {
            self.monitor.resume(key, state);
        }
        self.resumed = true;
    }

    /// The rows of the statistics pushed since the last take, for the pass's commit.
    pub fn take_changed(&mut self) -> Vec<StreamRow> {
        let changed = self.monitor.take_changed();
        changed.iter().map(|(k, s)| StreamRow::of(k, s)).collect()
    }

    /// Judges one reported round; the signal rows of the statistics it made cross.
    pub fn judge(&mut self, facts: &RoundFacts) -> Vec<SignalRow> {
        let (_, alarms) = self.monitor.push(facts);
        alarms.iter().map(|a| row_of(a, &self.setting)).collect()
    }

    /// The setting in thousandths of a false alarm per 1,000 rounds.
    pub fn setting_milli(&self) -> u64 {
        setting_milli(&self.setting)
    }

    /// Decisions judged since this tail started.
    pub fn decisions(&self) -> u64 {
        self.monitor.decisions
    }
}

/// Whether the model's rounds were all judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// Every pass since the model was built judged its rounds.
    pub complete: bool,
    /// The setting they were judged under, in thousandths of a false alarm per 1,000 rounds.
    pub false_alarms_milli_per_1000_rounds: u64,
}

/// A float statistic in thousandths, finite or clamped.
fn milli(x: f64) -> i64 {
    match x {
        x if x.is_nan() => 0,
        x => (x * 1000.0).round().clamp(i64::MIN as f64, i64::MAX as f64) as i64,
    }
}

/// The setting in thousandths of a false alarm per 1,000 rounds.
pub fn setting_milli(s: &TestSetting) -> u64 {
    milli(s.false_alarms_per_1000_rounds).max(0) as u64
}

/// The signal row of an alarm.
fn row_of(a: &DecisionAlarm, setting: &TestSetting) -> SignalRow {
    let (subject, box_no, dealer) = match &a.subject {
        Subject::Box(_, b) => (format!("box {}", b.0), Some(b.0), None),
        Subject::Pair(_, b) => (format!("boxes {}-{}", b.0, b.0 + 1), Some(b.0), None),
        Subject::Dealer(d) => (format!("dealer {d}"), None, Some(d.to_string())),
        Subject::Table(_) => ("table".to_owned(), None, None),
    };
    let moved = a
        .alarm
        .moved
        .iter()
        .take(SIGNAL_MOVED_MAX)
        .map(|m| MovedRow {
            round: m.round.0,
            box_no: m.box_no.0,
            by_milli: milli(m.by),
            text: m.text.clone(),
            table: None,
        })
        .collect();
    SignalRow {
        table: a.table.to_string(),
        round: a.alarm.round.0,
        kind: a.kind.code().to_owned(),
        subject,
        box_no,
        dealer,
        statistic_milli: milli(a.alarm.statistic),
        threshold_milli: milli(a.alarm.threshold),
        false_alarms_milli_per_1000_rounds: setting_milli(setting),
        run_rounds: a.alarm.run_rounds,
        moved,
        hold: None,
    }
}

#[cfg(test)]
mod tests {
    use analytics::Kind;
    use schemas::api::AlertKind;

    #[test]
    fn every_statistic_has_its_alert_kind() {
        for kind in [Kind::HoleCard, Kind::CardSharing] {
            let alert = AlertKind::of_signal(kind.code());
            assert_eq!(alert.map(AlertKind::as_str), Some(kind.code()));
        }
        assert_eq!(AlertKind::of_signal("fork"), None, "not a signal's kind");
    }
}
