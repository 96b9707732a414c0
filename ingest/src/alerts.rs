//! Operator alerts: what ingest sees that someone must look at now (a fork, a publisher
//! that is not the table's device, attestation that stalls), published on
//! `alerts.<table>.<kind>` and kept in a bounded log the API lists.
//!
//! Repeats of one kind on one table within `ALERT_WINDOW_NS` count into the alert that
//! opened the window: a flood of refusals is one alert with a count, not a flood of
//! alerts. Only a window's opening is published; the log's entry keeps counting.

use schemas::api::{Alert, AlertKind};
use schemas::TableId;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

/// How long repeats count into one alert (ns).
pub const ALERT_WINDOW_NS: i64 = 60 * 1_000_000_000;
/// Most alerts the log keeps; the oldest go first.
pub const ALERT_LOG_LEN_MAX: usize = 1024;

/// One occurrence, as the writer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Raised {
    pub table: TableId,
    pub kind: AlertKind,
    pub stream_seq: u64,
    pub detail: String,
}

/// The alerts of this process, newest last; cheap to clone (shared).
#[derive(Debug, Clone, Default)]
pub struct AlertLog(Arc<Mutex<Log>>);

#[derive(Debug, Default)]
struct Log {
    alerts: VecDeque<Alert>,
    /// Each (table, kind)'s open window: the id of its alert in `alerts`.
    open: BTreeMap<(TableId, AlertKind), u64>,
    /// Id of `alerts[0]`: alerts are numbered as they open.
    first_id: u64,
}

impl AlertLog {
    /// The alerts kept, newest first.
    pub fn recent(&self) -> Vec<Alert> {
        let log = self.0.lock().unwrap_or_else(|p| p.into_inner());
        log.alerts.iter().rev().cloned().collect()
    }

    /// Counts `r` at `now_ns`. Returns the alert to publish when `r` opens a window.
    pub(crate) fn raise(&self, r: Raised, now_ns: i64) -> Option<Alert> {
        let mut log = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let key = (r.table.clone(), r.kind);
        if let Some(a) = log.open_alert(&key) {
            if now_ns.saturating_sub(a.raised_at_ns) < ALERT_WINDOW_NS {
                a.count += 1;
                a.last_stream_seq = r.stream_seq;
                a.last_at_ns = now_ns;
                a.detail = r.detail;
                return None;
            }
        }
        let alert = Alert {
            table: r.table,
            kind: r.kind,
            count: 1,
            last_stream_seq: r.stream_seq,
            detail: r.detail,
            raised_at_ns: now_ns,
            last_at_ns: now_ns,
            signal: None,
        };
        log.push(key, alert.clone());
        Some(alert)
    }

    /// Keeps `alert` whole, outside any window: a decision signal is its own alert
    /// (`signal_alerts`), never counted into another.
    pub(crate) fn keep(&self, alert: Alert) {
        let mut log = self.0.lock().unwrap_or_else(|p| p.into_inner());
        log.push_whole(alert);
    }
}

impl Log {
    fn open_alert(&mut self, key: &(TableId, AlertKind)) -> Option<&mut Alert> {
        let id = *self.open.get(key)?;
        let at = usize::try_from(id.checked_sub(self.first_id)?).ok()?;
        self.alerts.get_mut(at)
    }

    fn push(&mut self, key: (TableId, AlertKind), alert: Alert) {
        self.push_whole(alert);
        let id = self.first_id + self.alerts.len() as u64 - 1;
        self.open.insert(key, id);
        assert!(
            self.open.len() <= ALERT_LOG_LEN_MAX,
            "one open window per kept alert at most"
        );
    }

    /// Appends `alert`, the oldest going first when full; opens no window.
    fn push_whole(&mut self, alert: Alert) {
        if self.alerts.len() == ALERT_LOG_LEN_MAX {
            if let Some(old) = self.alerts.pop_front() {
                let old_key = (old.table, old.kind);
                if self.open.get(&old_key) == Some(&self.first_id) {
                    self.open.remove(&old_key);
                }
            }
            self.first_id += 1;
        }
        self.alerts.push_back(alert);
        assert!(self.alerts.len() <= ALERT_LOG_LEN_MAX);
    }
}

/// Whether alerts of `kind` tell one node's own state (its ingest paused, its table
/// fenced): every node publishes its own. Every other kind follows from the stream, is
/// raised alike by every node, and goes out only from the alerts lease's holder.
pub fn node_local(kind: AlertKind) -> bool {
    matches!(
        kind,
        AlertKind::IngestPaused | AlertKind::IngestResumed | AlertKind::TableFenced
    )
}

/// The alert kind a quarantine reason of an event raises, if any.
pub(crate) fn kind_of_reason(reason: &str) -> Option<AlertKind> {
    use ledger::reason as r;
    match reason {
        r::FORK | r::SEQ_BACKWARDS => Some(AlertKind::Fork),
        r::UNSIGNED
        | r::SIGNER_UNKNOWN
        | r::SIGNATURE_INVALID
        | r::RESYNC_REFUSED
        | r::ADMIN_REFUSED => Some(AlertKind::RefusedPublisher),
        r::TABLE_FENCED => Some(AlertKind::TableFenced),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raised(table: &str, kind: AlertKind, seq: u64) -> Raised {
        Raised {
            table: TableId::new(table).unwrap(),
            kind,
            stream_seq: seq,
            detail: format!("at {seq}"),
        }
    }

    #[test]
    fn repeats_within_a_window_count_into_one_alert() {
        let log = AlertLog::default();
        let t0 = 1_000;
        let first = log.raise(raised("T-1", AlertKind::Fork, 1), t0);
        assert_eq!(first.map(|a| a.count), Some(1));
        for i in 2..=10_000 {
            assert_eq!(
                log.raise(raised("T-1", AlertKind::Fork, i), t0 + i as i64),
                None
            );
        }
        // Another kind, another table: their own alerts.
        assert!(log
            .raise(raised("T-1", AlertKind::RefusedPublisher, 7), t0)
            .is_some());
        assert!(log.raise(raised("T-2", AlertKind::Fork, 8), t0).is_some());
        let recent = log.recent();
        assert_eq!(recent.len(), 3);
        let fork = recent
            .iter()
            .find(|a| a.table.as_str() == "T-1" && a.kind == AlertKind::Fork);
        let fork = fork.expect("the fork alert");
        assert_eq!((fork.count, fork.last_stream_seq), (10_000, 10_000));
        // The window closes: the next repeat opens a new alert.
        let later = log.raise(raised("T-1", AlertKind::Fork, 10_001), t0 + ALERT_WINDOW_NS);
        assert_eq!(later.map(|a| a.count), Some(1));
        assert_eq!(log.recent().len(), 4);
    }

    #[test]
    fn a_kept_alert_opens_no_window_and_joins_none() {
        let log = AlertLog::default();
        let first = log.raise(raised("T-1", AlertKind::Fork, 1), 0);
        assert!(first.is_some());
        let mut whole = first.unwrap();
        whole.kind = AlertKind::HoleCardPlay;
        log.keep(whole.clone());
        log.keep(whole.clone());
        // Two signals of one kind and table are two alerts; the fork's window still counts.
        assert!(log.raise(raised("T-1", AlertKind::Fork, 2), 1).is_none());
        let recent = log.recent();
        assert_eq!(recent.len(), 3);
        assert_eq!(
            (recent[0].kind, recent[1].kind),
            (AlertKind::HoleCardPlay, AlertKind::HoleCardPlay)
        );
        assert_eq!(recent[2].count, 2, "the fork counted its repeat");
        // A signal's kind raised with a window still counts into the opened alert, not a kept one.
        assert!(log
            .raise(raised("T-1", AlertKind::HoleCardPlay, 3), 2)
            .is_some());
    }

    #[test]
    fn the_log_is_bounded() {
        let log = AlertLog::default();
        let n = ALERT_LOG_LEN_MAX as u64 + 10;
        for i in 0..n {
            let t = format!("T-{i}");
            assert!(log.raise(raised(&t, AlertKind::Fork, i), 0).is_some());
        }
        let recent = log.recent();
        assert_eq!(recent.len(), ALERT_LOG_LEN_MAX);
        assert_eq!(recent[0].table.as_str(), format!("T-{}", n - 1));
        // The oldest table's window was dropped with it: a repeat opens a new alert.
        assert!(log.raise(raised("T-0", AlertKind::Fork, 0), 1).is_some());
        // A kept table's window still counts.
        assert!(log
            .raise(raised(&format!("T-{}", n - 1), AlertKind::Fork, 0), 1)
            .is_none());
    }
}
