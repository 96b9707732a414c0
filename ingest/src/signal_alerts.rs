//! Decision signals as operator alerts. The read model's indexer hands each pass's
//! committed signals (`schemas::api::DecisionSignal`) to `SignalSender`; this publisher
//! puts each on `alerts.<table>.<kind>` once, the signal whole in the alert's `signal`.
//!
//! Once across restarts, read-model rebuilds and lease holders: the replica bucket keeps,
//! per table, the highest round whose signals a publisher sent
//! (`published.signals.<table>`). A signal at or below that round is not published
//! again, and not logged again either (`GET /v1/analytics` lists it).
//!
//! Invariants:
//! - A table's signals arrive in round order: the indexer reports a table's rounds in
//!   order, and one pass's signals of one round arrive together. The mark moves once a
//!   round's signals are all sent, so it never passes a signal not yet seen.
//! - One node publishes: without a node id the only one; with it, the alerts lease's
//!   holder, confirmed before each table's signals (`lease::Lease::confirm`).
//! - A mark that does not read publishes nothing: the alert is kept in the log, never
//!   sent twice on a guess. A crash between a send and its mark can send a round's
//!   signals again (OPERATIONS.md).
//! - Bounded: `SIGNAL_QUEUE_LEN_MAX` passes wait; the sender never blocks the indexer.

use crate::alerts::AlertLog;
use async_nats::jetstream::{self, kv};
use schemas::api::{Alert, AlertKind, DecisionSignal};
use schemas::TableId;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Most indexing passes' signals that wait for the publisher; more are logged, not sent.
pub const SIGNAL_QUEUE_LEN_MAX: usize = 256;

/// The replica bucket's key of a table's published-through round.
pub fn mark_key(table: &TableId) -> String {
    format!("published.signals.{table}")
}

/// A sender and the inbox it fills (for `IngestConfig::signals`).
pub fn channel() -> (SignalSender, SignalInbox) {
    let (tx, rx) = mpsc::channel(SIGNAL_QUEUE_LEN_MAX);
    let inbox = SignalInbox(Arc::new(Mutex::new(Some(rx))));
    (SignalSender(tx), inbox)
}

/// The indexer's end: hands over one pass's signals without blocking.
#[derive(Debug, Clone)]
pub struct SignalSender(mpsc::Sender<Vec<DecisionSignal>>);

impl SignalSender {
    /// Queues `rows` for the publisher. A full queue or a stopped ingest is logged: the
    /// signals stay in the read model and `GET /v1/analytics`.
    pub fn send(&self, rows: Vec<DecisionSignal>) {
        let n = rows.len();
        if let Err(e) = self.0.try_send(rows) {
            tracing::warn!(signals = n, error = %e, "signals not alerted: the alert publisher does not take them");
        }
    }
}

/// The publisher's end, taken once by ingest at start; empty by default (no signals).
#[derive(Debug, Clone, Default)]
pub struct SignalInbox(Arc<Mutex<Option<mpsc::Receiver<Vec<DecisionSignal>>>>>);

impl SignalInbox {
    fn take(&self) -> Option<mpsc::Receiver<Vec<DecisionSignal>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// What the publisher needs of ingest.
pub(crate) struct Publisher {
    pub client: async_nats::Client,
    pub log: AlertLog,
    pub clock: fn() -> i64,
    pub lease: Option<crate::lease::Shared>,
    pub stream_replicas: usize,
}

/// The publisher's task, aborted when dropped.
pub(crate) struct Task(tokio::task::JoinHandle<()>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Starts the publisher on `inbox`'s receiver, if it has one not yet taken.
pub(crate) fn start(inbox: &SignalInbox, p: Publisher) -> Option<Task> {
    let mut rx = inbox.take()?;
    Some(Task(tokio::spawn(async move {
        while let Some(rows) = rx.recv().await {
            for (table, rows) in by_table(rows) {
                p.publish_table(&table, rows).await;
            }
        }
    })))
}

/// `rows` grouped by table, each group in arrival order. A row naming no valid table
/// is logged and left out (the read model names only tables the ledger holds).
fn by_table(rows: Vec<DecisionSignal>) -> BTreeMap<TableId, Vec<DecisionSignal>> {
    let mut out: BTreeMap<TableId, Vec<DecisionSignal>> = BTreeMap::new();
    for r in rows {
        match TableId::new(r.table.clone()) {
            Ok(t) => out.entry(t).or_default().push(r),
            Err(e) => tracing::error!(table = %r.table, error = %e, "signal of no table"),
        }
    }
    out
}

/// The alert of a signal raised at `now_ns`; `None` for a kind no alert names.
pub fn alert_of(signal: DecisionSignal, now_ns: i64) -> Option<Alert> {
    let kind = AlertKind::of_signal(&signal.kind)?;
    let table = TableId::new(signal.table.clone()).ok()?;
    let rounds: Vec<String> = signal.rounds().iter().map(u64::to_string).collect();
    let detail = format!(
        "{} {}: statistic {:.3} over threshold {:.3} at round {} after {} rounds; rounds {}",
        signal.kind,
        signal.subject,
        signal.statistic_milli as f64 / 1000.0,
        signal.threshold_milli as f64 / 1000.0,
        signal.round,
        signal.run_rounds,
        rounds.join(", ")
    );
    Some(Alert {
        table,
        kind,
        count: 1,
        last_stream_seq: 0,
        detail,
        raised_at_ns: now_ns,
        last_at_ns: now_ns,
        signal: Some(signal),
    })
}

/// Why a table's signals are not sent.
enum Hold {
    /// Their rounds are at or below the mark: sent before.
    Sent,
    /// The mark does not read.
    MarkUnread(String),
    /// Another node holds the alerts lease.
    NotHolder,
}

impl Publisher {
    /// Sends `rows` of `table` that are past its mark, then moves the mark.
    async fn publish_table(&self, table: &TableId, rows: Vec<DecisionSignal>) {
        let js = jetstream::new(self.client.clone());
        let store = crate::replicas::bucket(&js, self.stream_replicas).await;
        let through = match &store {
            Ok(s) => read_mark(s, table).await,
            Err(e) => Err(e.clone()),
        };
        let fresh: Vec<DecisionSignal> = match &through {
            Ok(t) => rows
                .into_iter()
                .filter(|r| t.is_none_or(|t| r.round > t))
                .collect(),
            Err(_) => rows,
        };
        let Some(last_round) = fresh.iter().map(|r| r.round).max() else {
            return self.held(table, Hold::Sent);
        };
        let now_ns = (self.clock)();
        let alerts: Vec<Alert> = fresh
            .into_iter()
            .filter_map(|r| alert_of(r, now_ns))
            .collect();
        for a in &alerts {
            tracing::error!(table = %a.table, kind = a.kind.as_str(), detail = %a.detail, "ALERT");
            self.log.keep(a.clone());
        }
        let store = match (store, through) {
            (Ok(s), Ok(_)) => s,
            (Err(e), _) | (_, Err(e)) => return self.held(table, Hold::MarkUnread(e)),
        };
        let Some(headers) = self.headers().await else {
            return self.held(table, Hold::NotHolder);
        };
        for a in alerts {
            self.send(a, headers.clone()).await;
        }
        if let Err(e) = store
            .put(mark_key(table), last_round.to_string().into())
            .await
        {
            tracing::warn!(table = %table, round = last_round, error = %e, "signal mark not recorded");
        }
    }

    /// The headers a send carries: none for one node, the lease's for its holder; `None`
    /// when another node holds it.
    async fn headers(&self) -> Option<async_nats::HeaderMap> {
        let Some(lease) = &self.lease else {
            return Some(async_nats::HeaderMap::new());
        };
        let mut lease = lease.lock().await;
        let revision = lease.confirm().await?;
        Some(lease.headers(revision))
    }

    async fn send(&self, alert: Alert, headers: async_nats::HeaderMap) {
        let subject = schemas::subjects::alerts_subject(&alert.table, alert.kind);
        let json = match serde_json::to_vec(&alert) {
            Ok(j) => j,
            Err(e) => {
                tracing::error!(error = %e, "alert not serialisable");
                return;
            }
        };
        let sent = self
            .client
            .publish_with_headers(subject, headers, json.into())
            .await;
        if let Err(e) = sent {
            tracing::warn!(table = %alert.table, error = %e, "alert not published");
        }
    }

    fn held(&self, table: &TableId, why: Hold) {
        match why {
            Hold::Sent => {
                tracing::info!(table = %table, "signals published before: not sent again")
            }
            Hold::MarkUnread(e) => {
                tracing::warn!(table = %table, error = %e, "signals kept, not published: their mark does not read")
            }
            Hold::NotHolder => {
                tracing::info!(table = %table, "signals kept, not published: another node holds the alerts lease")
            }
        }
    }
}

/// The round through which `table`'s signals were published; `None` when none were.
async fn read_mark(store: &kv::Store, table: &TableId) -> Result<Option<u64>, String> {
    let Some(v) = store
        .get(mark_key(table))
        .await
        .map_err(|e| e.to_string())?
    else {
        return Ok(None);
    };
    let text = std::str::from_utf8(&v).map_err(|e| e.to_string())?;
    text.parse()
        .map(Some)
        .map_err(|e| format!("mark {text:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemas::api::SignalMove;

    fn signal(table: &str, kind: &str, round: u64) -> DecisionSignal {
        DecisionSignal {
            table: table.into(),
            round,
            kind: kind.into(),
            subject: "box 3".into(),
            box_no: Some(3),
            dealer: None,
            statistic_milli: 9_512,
            threshold_milli: 9_210,
            false_alarms_milli_per_1000_rounds: 1_000,
            run_rounds: 40,
            moved: vec![SignalMove {
                round: round - 7,
                box_no: 3,
                by_milli: 1_200,
                text: "raised A-Q-4".into(),
            }],
        }
    }

    #[test]
    fn an_alert_carries_its_signal_and_rounds() {
        let a = alert_of(signal("CSP6-01", "hole_card_play", 512), 5).expect("alert");
        assert_eq!(a.kind, AlertKind::HoleCardPlay);
        assert_eq!(a.table.as_str(), "CSP6-01");
        assert!(a.detail.contains("box 3"), "{}", a.detail);
        assert!(a.detail.contains("statistic 9.512 over threshold 9.210"));
        assert!(a.detail.ends_with("rounds 512, 505"), "{}", a.detail);
        assert_eq!(a.signal.as_ref().map(|s| s.round), Some(512));
        let json = serde_json::to_value(&a).expect("json");
        assert_eq!(json["signal"]["moved"][0]["round"], 505);
        let card = alert_of(signal("CSP6-01", "card_sharing", 9), 5).expect("alert");
        assert_eq!(card.kind, AlertKind::CardSharing);
        // A kind no alert names, or a table that is no id: no alert.
        assert_eq!(alert_of(signal("CSP6-01", "fork", 9), 5), None);
        assert_eq!(alert_of(signal("no table", "card_sharing", 9), 5), None);
    }

    #[test]
    fn rows_group_by_table_in_arrival_order() {
        let rows = vec![
            signal("T-2", "card_sharing", 9),
            signal("T-1", "hole_card_play", 12),
            signal("T-2", "hole_card_play", 10),
            signal("bad table", "hole_card_play", 10),
        ];
        let g = by_table(rows);
        assert_eq!(g.len(), 2);
        let t2: Vec<u64> = g[&TableId::new("T-2").unwrap()]
            .iter()
            .map(|r| r.round)
            .collect();
        assert_eq!(t2, vec![9, 10]);
    }

    #[test]
    fn a_full_queue_drops_and_logs_never_blocks() {
        let (tx, inbox) = channel();
        for i in 0..SIGNAL_QUEUE_LEN_MAX + 5 {
            tx.send(vec![signal("T-1", "card_sharing", i as u64 + 10)]);
        }
        let mut rx = inbox.take().expect("the receiver, once");
        assert!(inbox.take().is_none(), "taken once");
        let mut n = 0;
        while rx.try_recv().is_ok() {
            n += 1;
        }
        assert_eq!(n, SIGNAL_QUEUE_LEN_MAX);
    }
}
