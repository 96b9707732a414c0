//! Decision signals as operator alerts. The read model's indexer hands each pass's
//! committed signals (`schemas::api::DecisionSignal`) to `SignalSender`; this publisher
//! puts each on `alerts.<table>.<kind>` once, the signal whole in the alert's `signal`.
//!
//! Once across restarts, read-model rebuilds and lease holders: the replica bucket keeps,
//! per table, the highest round whose signals a publisher sent
//! (`published.signals.<table>`). A signal at or below that round is not published
//! again, and not logged again either (`GET /v1/analytics` lists it).
//!
//! No signal lost: the queue is a fast path, the read model (`SignalRecord`) the truth.
//! The publisher catches up from the record at start, on taking the alerts lease, after
//! a pass the queue dropped, and after a table's signals were held. A catch-up reads each
//! table's signals above its mark, a bounded page at a time, and sends them in round order.
//!
//! Invariants:
//! - A table's signals go out in round order: the record lists them by round, and the
//!   queue is used only while the publisher is caught up. The mark moves once a round's
//!   signals are all sent, so it never passes a signal not yet sent.
//! - One node publishes: without a node id the only one; with it, the alerts lease's
//!   holder, confirmed before each table's signals (`lease::Lease::confirm`).
//! - A mark that does not read publishes nothing: the alert is kept in the log, never
//!   sent twice on a guess. A crash between a send and its mark can send a round's
//!   signals again (OPERATIONS.md).
//! - Bounded: `SIGNAL_QUEUE_LEN_MAX` passes wait; the sender never blocks the indexer. A
//!   catch-up reads `CATCH_UP_TABLES_MAX` tables and `CATCH_UP_PAGE_LEN` signals at once.

use crate::alerts::AlertLog;
use async_nats::jetstream::{self, kv};
use schemas::api::{Alert, AlertKind, DecisionSignal};
use schemas::TableId;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::mpsc;

/// Most indexing passes' signals that wait for the publisher; more set a catch-up.
pub const SIGNAL_QUEUE_LEN_MAX: usize = 256;
/// Most signals a catch-up reads of one table at once. A round with more than this is
/// sent cut at it, and the cut is logged.
pub const CATCH_UP_PAGE_LEN: usize = 256;
/// Most tables a catch-up lists at once.
pub const CATCH_UP_TABLES_MAX: usize = 512;
/// How often an idle publisher looks whether it must catch up (it took the lease).
pub const CATCH_UP_POLL: Duration = Duration::from_millis(500);

/// The replica bucket's key of a table's published-through round.
pub fn mark_key(table: &TableId) -> String {
    format!("published.signals.{table}")
}

/// The replica bucket's key that a signal sent once per name (`raised_once_per`) went
/// out: its name's BLAKE3, in hex. `None` for a signal the round mark alone covers.
pub fn once_key(signal: &DecisionSignal) -> Option<String> {
    let kind = AlertKind::of_signal(&signal.kind)?;
    let name = kind.raised_once_per(&signal.table, &signal.subject)?;
    Some(format!(
        "published.once.{}",
        blake3::hash(name.as_bytes()).to_hex()
    ))
}

/// The read model's signals, read by the publisher to catch up. Blocking (a store): the
/// publisher calls it on the blocking pool. Errors are the store's, in words.
pub trait SignalRecord: Send + Sync + 'static {
    /// Tables with a signal, in table order, after `after`; at most `max`.
    fn tables(&self, after: Option<&TableId>, max: usize) -> Result<Vec<TableId>, String>;
    /// `table`'s signals above `after_round` (all without one), by round; at most `max`.
    fn signals_after(
        &self,
        table: &TableId,
        after_round: Option<u64>,
        max: usize,
    ) -> Result<Vec<DecisionSignal>, String>;
}

/// What the sender and the publisher share: whether a pass was dropped, and the record.
#[derive(Default)]
struct Shared {
    dropped: AtomicBool,
    record: OnceLock<Arc<dyn SignalRecord>>,
}

/// A sender and the inbox it fills (for `IngestConfig::signals`), queueing
/// `SIGNAL_QUEUE_LEN_MAX` passes.
pub fn channel() -> (SignalSender, SignalInbox) {
    channel_with_len(SIGNAL_QUEUE_LEN_MAX)
}

/// A sender and its inbox queueing at most `passes_max` passes. With 0 no pass is
/// queued: the publisher learns of each from the record (`serve --signal-queue-len 0`).
pub fn channel_with_len(passes_max: usize) -> (SignalSender, SignalInbox) {
    let shared = Arc::new(Shared::default());
    let (tx, rx) = mpsc::channel(passes_max.clamp(1, SIGNAL_QUEUE_LEN_MAX));
    let inbox = SignalInbox(Arc::new(Mutex::new(Some((rx, shared.clone())))));
    let queues = passes_max > 0;
    (SignalSender { tx, queues, shared }, inbox)
}

/// The indexer's end: hands over one pass's signals without blocking.
#[derive(Clone)]
pub struct SignalSender {
    /// Open while the sender lives, so the publisher runs; queues only when `queues`.
    tx: mpsc::Sender<Vec<DecisionSignal>>,
    queues: bool,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for SignalSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SignalSender")
    }
}

impl SignalSender {
    /// Queues `rows` for the publisher. A full queue or none sets a catch-up: the
    /// publisher reads them from the record. A stopped ingest is logged.
    pub fn send(&self, rows: Vec<DecisionSignal>) {
        let n = rows.len();
        if !self.queues {
            self.shared.dropped.store(true, Ordering::SeqCst);
            return;
        }
        if let Err(e) = self.tx.try_send(rows) {
            self.shared.dropped.store(true, Ordering::SeqCst);
            tracing::warn!(signals = n, error = %e, "signals not queued: the alert publisher reads them from the read model");
        }
    }

    /// Hands the publisher the record it catches up from; the first one stays.
    pub fn attach(&self, record: Arc<dyn SignalRecord>) {
        if self.shared.record.set(record).is_err() {
            tracing::warn!("a signal record is attached already: the first stays");
        }
    }
}

type Inbox = (mpsc::Receiver<Vec<DecisionSignal>>, Arc<Shared>);

/// The publisher's end, taken once by ingest at start; empty by default (no signals).
#[derive(Clone, Default)]
pub struct SignalInbox(Arc<Mutex<Option<Inbox>>>);

impl std::fmt::Debug for SignalInbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SignalInbox")
    }
}

impl SignalInbox {
    fn take(&self) -> Option<Inbox> {
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
    let (rx, shared) = inbox.take()?;
    Some(Task(tokio::spawn(p.run(rx, shared))))
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
    // A round of the signal's table by its number; one of another table as "table/round".
    let own = format!("/v1/tables/{}/rounds/", signal.table);
    let rounds: Vec<String> = signal
        .round_links()
        .iter()
        .map(|l| match l.strip_prefix(&own) {
            Some(n) => n.to_owned(),
            None => l.trim_start_matches("/v1/tables/").replace("/rounds/", "/"),
        })
        .collect();
    if let Some(h) = &signal.hold {
        let detail = format!(
            "{} {}: won {} against {} theoretical, outside {} to {}, handle {}, {} rounds; found at round {}; rounds {}",
            signal.kind, signal.subject, h.actual_win, h.theoretical_win, h.win_low,
            h.win_high, h.handle_priced, h.rounds, signal.round, rounds.join(", ")
        );
        return Some(signal_alert(table, kind, detail, signal, now_ns));
    }
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
    Some(signal_alert(table, kind, detail, signal, now_ns))
}

/// The alert carrying `signal` whole.
fn signal_alert(
    table: TableId,
    kind: AlertKind,
    detail: String,
    signal: DecisionSignal,
    now_ns: i64,
) -> Alert {
    Alert {
        table,
        kind,
        count: 1,
        last_stream_seq: 0,
        detail,
        raised_at_ns: now_ns,
        last_at_ns: now_ns,
        signal: Some(signal),
    }
}

/// Runs `f` on the blocking pool (the record reads a store); a panic is an error.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| format!("signal record task: {e}"))?
}

/// `page` without its last round when the page is full and holds an earlier one: that
/// round may go on past the page. A full page of one round is sent cut, and logged.
fn whole_rounds(mut page: Vec<DecisionSignal>, table: &TableId) -> Vec<DecisionSignal> {
    if page.len() < CATCH_UP_PAGE_LEN {
        return page;
    }
    let Some(last) = page.last().map(|r| r.round) else {
        return page;
    };
    if page.iter().any(|r| r.round != last) {
        page.retain(|r| r.round != last);
    } else {
        tracing::error!(table = %table, round = last, max = CATCH_UP_PAGE_LEN, "a round has more signals than a catch-up page: those past it are not alerted");
    }
    page
}

impl Publisher {
    /// Publishes queued passes while caught up with the record, and catches up when
    /// not: at start, after a dropped pass, a held table or a lease taken.
    async fn run(self, mut rx: mpsc::Receiver<Vec<DecisionSignal>>, shared: Arc<Shared>) {
        let mut caught_up = false;
        let mut poll = tokio::time::interval(CATCH_UP_POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let rows = tokio::select! {
                r = rx.recv() => match r {
                    Some(rows) => rows,
                    None => return,
                },
                _ = poll.tick() => Vec::new(),
            };
            if shared.dropped.swap(false, Ordering::SeqCst) {
                caught_up = false;
            }
            let record = shared.record.get().cloned();
            let holds = self.holds().await;
            match &record {
                Some(r) if holds && !caught_up => caught_up = self.catch_up(r).await,
                _ => caught_up &= holds,
            }
            if record.is_some() && holds && !caught_up {
                continue; // the record keeps them: the next catch-up sends them
            }
            for (table, rows) in by_table(rows) {
                if self.publish_table(&table, rows).await.is_err() {
                    caught_up = false;
                }
            }
        }
    }

    /// Whether this node may publish now: the only node, or the lease's holder.
    async fn holds(&self) -> bool {
        match &self.lease {
            None => true,
            Some(l) => l.lock().await.holds(),
        }
    }

    /// Sends every table's signals above its mark from `record`; whether all went out.
    async fn catch_up(&self, record: &Arc<dyn SignalRecord>) -> bool {
        let mut after: Option<TableId> = None;
        let mut tables_seen = 0usize;
        loop {
            let (r, a) = (record.clone(), after.clone());
            let tables = match blocking(move || r.tables(a.as_ref(), CATCH_UP_TABLES_MAX)).await {
                Ok(t) => t,
                Err(e) => {
                    tracing::warn!(error = %e, "signal catch-up: the record's tables do not read");
                    return false;
                }
            };
            for t in &tables {
                if !self.catch_up_table(record, t).await {
                    return false;
                }
            }
            tables_seen += tables.len();
            if tables.len() < CATCH_UP_TABLES_MAX {
                tracing::info!(
                    tables = tables_seen,
                    "signal catch-up done: every kept signal is published"
                );
                return true;
            }
            after = tables.last().cloned();
        }
    }

    /// Sends `table`'s signals above its mark from `record`, a page at a time, in round
    /// order; whether all went out.
    async fn catch_up_table(&self, record: &Arc<dyn SignalRecord>, table: &TableId) -> bool {
        loop {
            let through = match self.mark(table).await {
                Ok(t) => t,
                Err(e) => {
                    let _unsent = self.held(table, &Hold::MarkUnread(e));
                    return false;
                }
            };
            let (r, t) = (record.clone(), table.clone());
            let page = blocking(move || r.signals_after(&t, through, CATCH_UP_PAGE_LEN)).await;
            let page = match page {
                Ok(p) => p,
                Err(e) => {
                    tracing::warn!(table = %table, error = %e, "signal catch-up: the record does not read");
                    return false;
                }
            };
            let full = page.len() >= CATCH_UP_PAGE_LEN;
            let page = whole_rounds(page, table);
            if page.is_empty() {
                return true;
            }
            if self.publish_table(table, page).await.is_err() {
                return false;
            }
            if !full {
                return true;
            }
        }
    }

    /// The round through which `table`'s signals were published, from the bucket.
    async fn mark(&self, table: &TableId) -> Result<Option<u64>, String> {
        let js = jetstream::new(self.client.clone());
        let store = crate::replicas::bucket(&js, self.stream_replicas).await?;
        read_mark(&store, table).await
    }
}

/// Why a table's signals are not sent.
enum Hold {
    /// Their rounds are at or below the mark: sent before.
    Sent,
    /// The mark does not read.
    MarkUnread(String),
    /// Another node holds the alerts lease.
    NotHolder,
    /// A send or the mark's put failed; the mark stays before the round it names.
    Failed(String),
}

impl Publisher {
    /// Sends `rows` of `table` that are past its mark, in round order, then moves the
    /// mark. `Err` when any stays unsent (the caller then catches up from the record).
    async fn publish_table(&self, table: &TableId, rows: Vec<DecisionSignal>) -> Result<(), ()> {
        let js = jetstream::new(self.client.clone());
        let store = crate::replicas::bucket(&js, self.stream_replicas).await;
        let through = match &store {
            Ok(s) => read_mark(s, table).await,
            Err(e) => Err(e.clone()),
        };
        let mut fresh: Vec<DecisionSignal> = match &through {
            Ok(t) => rows
                .into_iter()
                .filter(|r| t.is_none_or(|t| r.round > t))
                .collect(),
            Err(_) => rows,
        };
        if let Ok(s) = &store {
            fresh = not_sent_once(s, fresh).await;
        }
        if fresh.is_empty() {
            return self.held(table, &Hold::Sent);
        }
        fresh.sort_by_key(|r| r.round); // stable: a round's signals keep their order
        let now_ns = (self.clock)();
        let alerts: Vec<Outgoing> = fresh
            .into_iter()
            .map(|r| (r.round, once_key(&r), alert_of(r, now_ns)))
            .collect();
        for (_, a) in alerts.iter().filter_map(|(r, _, a)| Some((r, a.as_ref()?))) {
            tracing::error!(table = %a.table, kind = a.kind.as_str(), detail = %a.detail, "ALERT");
            self.log.keep(a.clone());
        }
        let store = match (store, through) {
            (Ok(s), Ok(_)) => s,
            (Err(e), _) | (_, Err(e)) => return self.held(table, &Hold::MarkUnread(e)),
        };
        let Some(headers) = self.headers().await else {
            return self.held(table, &Hold::NotHolder);
        };
        let (sent_through, failed) = self.send_in_order(alerts, &headers, &store).await;
        if let Some(round) = sent_through {
            if let Err(e) = store.put(mark_key(table), round.to_string().into()).await {
                let why = format!("mark of round {round} not recorded: {e}");
                return self.held(table, &Hold::Failed(why));
            }
        }
        match failed {
            Some(why) => self.held(table, &Hold::Failed(why)),
            None => Ok(()),
        }
    }

    /// Sends `alerts` (by round) until one fails. The last round all of whose alerts
    /// went out, and what failed.
    async fn send_in_order(
        &self,
        alerts: Vec<Outgoing>,
        headers: &async_nats::HeaderMap,
        store: &kv::Store,
    ) -> (Option<u64>, Option<String>) {
        let mut sent_through: Option<u64> = None;
        let mut previous: Option<u64> = None;
        for (round, once, a) in alerts {
            assert!(
                previous.is_none_or(|p| p <= round),
                "signals go out in round order"
            );
            if previous.is_some_and(|p| p < round) {
                sent_through = previous;
            }
            previous = Some(round);
            let Some(a) = a else {
                continue; // a kind no alert names: nothing to send
            };
            if let Err(e) = self.send(a, headers.clone()).await {
                return (sent_through, Some(format!("round {round}: {e}")));
            }
            if let Some(key) = once {
                if let Err(e) = store.put(key, round.to_string().into()).await {
                    return (sent_through, Some(format!("round {round}: once mark: {e}")));
                }
            }
        }
        (previous.or(sent_through), None)
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

    async fn send(&self, alert: Alert, headers: async_nats::HeaderMap) -> Result<(), String> {
        let subject = schemas::subjects::alerts_subject(&alert.table, alert.kind);
        let json = match serde_json::to_vec(&alert) {
            Ok(j) => j,
            Err(e) => {
                // Never for these types; sending it again would fail again.
                tracing::error!(error = %e, "alert not serialisable");
                return Ok(());
            }
        };
        self.client
            .publish_with_headers(subject, headers, json.into())
            .await
            .map_err(|e| e.to_string())
    }

    /// Logs why `table`'s signals are not sent: `Ok` when they were sent before.
    fn held(&self, table: &TableId, why: &Hold) -> Result<(), ()> {
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
            Hold::Failed(e) => {
                tracing::warn!(table = %table, error = %e, "signals not all published: the publisher catches up from the read model")
            }
        }
        match why {
            Hold::Sent => Ok(()),
            _ => Err(()),
        }
    }
}

/// A signal to send: its round, its once key (`once_key`) and its alert, if any.
type Outgoing = (u64, Option<String>, Option<Alert>);

/// `rows` less the signals sent once per name before. A key that does not read keeps
/// its signal: a repeat beats a lost alarm.
async fn not_sent_once(store: &kv::Store, rows: Vec<DecisionSignal>) -> Vec<DecisionSignal> {
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let sent = match once_key(&r) {
            Some(k) => matches!(store.get(k).await, Ok(Some(_))),
            None => false,
        };
        match sent {
            true => {
                tracing::info!(table = %r.table, kind = %r.kind, subject = %r.subject, "sent once before under its name: not sent again")
            }
            false => out.push(r),
        }
    }
    out
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
                table: None,
            }],
            hold: None,
        }
    }

    /// A hold alert's detail states the shift's figures, each as its money reads.
    #[test]
    fn a_hold_alert_names_its_shift_and_figures() {
        use schemas::{api::ShiftHold, Money};
        let mut s = signal("TCP3-01", "hold_outside", 40);
        s.subject = "shift 2026-11-25/1".into();
        let h = ShiftHold {
            shift: "2026-11-25/1".into(),
            starts_at_ns: 0,
            ends_at_ns: 1,
            rounds: 39,
            actual_win: Money(-101_500),
            theoretical_win: Money(270),
            win_low: Money(-18_000),
            win_high: Money(18_540),
            handle_priced: Money(6_000),
            finance_link: "/v1/reports?shift=2026-11-25/1&table=TCP3-01".into(),
        };
        s.hold = Some(h.clone());
        let a = alert_of(s.clone(), 5).expect("alert");
        assert_eq!(a.kind, AlertKind::HoldOutside);
        assert_eq!(a.signal.as_ref(), Some(&s), "the signal whole");
        for m in [h.actual_win, h.theoretical_win, h.win_low, h.win_high] {
            assert!(a.detail.contains(&m.to_string()), "{m}: {}", a.detail);
        }
        assert!(a.detail.contains("shift 2026-11-25/1"), "{}", a.detail);
        assert!(a.detail.contains("39 rounds"), "{}", a.detail);
        let subject = schemas::subjects::alerts_subject(&a.table, a.kind);
        assert_eq!(subject, "alerts.TCP3-01.hold_outside");
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
        let (mut rx, shared) = inbox.take().expect("the receiver, once");
        assert!(
            shared.dropped.load(Ordering::SeqCst),
            "a drop sets a catch-up"
        );
        assert!(inbox.take().is_none(), "taken once");
        let mut n = 0;
        while rx.try_recv().is_ok() {
            n += 1;
        }
        assert_eq!(n, SIGNAL_QUEUE_LEN_MAX);
    }

    #[test]
    fn no_queue_queues_nothing_and_sets_a_catch_up() {
        let (tx, inbox) = channel_with_len(0);
        let (mut rx, shared) = inbox.take().expect("the receiver");
        assert!(!shared.dropped.load(Ordering::SeqCst));
        tx.send(vec![signal("T-1", "card_sharing", 10)]);
        assert!(rx.try_recv().is_err(), "nothing queued");
        assert!(shared.dropped.load(Ordering::SeqCst), "a catch-up is due");
    }

    #[test]
    fn a_full_page_keeps_whole_rounds() {
        let t = TableId::new("T-1").unwrap();
        let mut page: Vec<DecisionSignal> = (0..CATCH_UP_PAGE_LEN - 2)
            .map(|i| signal("T-1", "card_sharing", 10 + i as u64))
            .collect();
        let last = 10 + CATCH_UP_PAGE_LEN as u64;
        page.push(signal("T-1", "card_sharing", last));
        page.push(signal("T-1", "hole_card_play", last));
        let kept = whole_rounds(page.clone(), &t);
        assert_eq!(kept.len(), CATCH_UP_PAGE_LEN - 2, "the last round waits");
        assert!(kept.iter().all(|r| r.round < last));
        // A page not full is whole; a full page of one round is sent as it is.
        page.pop();
        assert_eq!(whole_rounds(page, &t).len(), CATCH_UP_PAGE_LEN - 1);
        let one: Vec<DecisionSignal> = (0..CATCH_UP_PAGE_LEN)
            .map(|_| signal("T-1", "card_sharing", 12))
            .collect();
        assert_eq!(whole_rounds(one, &t).len(), CATCH_UP_PAGE_LEN);
    }
}
