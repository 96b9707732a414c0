//! Refusals are idempotent, against a real nats-server and a real ledger opened as `serve`
//! opens it: a publisher resending one refused message under fresh message ids (so fresh
//! stream seqs) makes one quarantine entry with a repeat count, not one entry per send,
//! and the table's device goes on being stored.
//!
//! Waits are bounded (`WAIT`); nothing here asserts on time.

use async_nats::jetstream;
use ingest::{IngestConfig, IngestReport};
use ledger::{reason, Ledger};
use schemas::{subjects, TableId};
use simulator::{FaultPlan, Floor, Published};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

const WAIT: Duration = Duration::from_secs(60);
/// Times the raw publisher sends its undecodable message.
const SENDS: u64 = 1_000;

struct Running {
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<IngestReport, ingest::Error>>,
}

impl Running {
    fn start(url: &str, ledger: Arc<Ledger>) -> Running {
        let (stop, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(ingest::run(IngestConfig::new(url), ledger, async {
            let _ = rx.await;
        }));
        Running { stop, task }
    }

    async fn stop(self) -> IngestReport {
        self.stop.send(()).expect("ingest still running");
        self.task
            .await
            .expect("task")
            .expect("ingest ended cleanly")
    }
}

/// A ledger as `serve` opens it: the simulator's admin trusted, signed events required.
fn open(dir: &std::path::Path) -> Arc<Ledger> {
    let ledger = Ledger::open(dir).expect("open ledger");
    ledger
        .trust_admin_keys([simulator::admin_key().public()])
        .expect("trust");
    ledger.require_signed_events().expect("require");
    Arc::new(ledger)
}

/// One table's opening and two rounds, its device's clock 12 h before now (within the
/// ledger's 24 h skew limit of the stream's timestamps).
fn one_table() -> Vec<Published> {
    let start_ns = ingest::system_clock_ns() - 12 * 3_600_000_000_000;
    let floor = Floor::new(1, 11, FaultPlan::none())
        .expect("floor")
        .starting_at(start_ns);
    let mut table = floor.tables.into_iter().next().expect("a table");
    let mut events = table.opening_events().expect("opening");
    for _ in 0..2 {
        events.extend(table.play_round().expect("round").events);
    }
    events
}

/// Publishes `bytes` on `table`'s event subject under message id `id`, unsigned.
async fn publish(js: &jetstream::Context, table: &TableId, id: &str, bytes: &[u8]) {
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Nats-Msg-Id", id);
    js.publish_with_headers(
        subjects::events_subject(table),
        headers,
        bytes.to_vec().into(),
    )
    .await
    .expect("publish")
    .await
    .expect("ack");
}

/// Publishes as the device does: its message id and its signature headers.
async fn publish_as_device(js: &jetstream::Context, events: &[Published]) {
    for p in events {
        let mut headers = async_nats::HeaderMap::new();
        let id = subjects::msg_id(&p.event.table, p.event.seq, &p.bytes);
        headers.insert("Nats-Msg-Id", id.as_str());
        for (name, value) in p.signature.iter().flat_map(|s| s.to_headers()) {
            headers.insert(name, value.as_str());
        }
        let subject = subjects::events_subject(&p.event.table);
        js.publish_with_headers(subject, headers, p.bytes.clone().into())
            .await
            .expect("publish")
            .await
            .expect("ack");
    }
}

/// Waits until `ledger` holds `table`'s chain to `seq` and `repeats` repeats of its only
/// quarantine entry, and returns that entry's id.
async fn wait_for(ledger: &Arc<Ledger>, table: &TableId, seq: u64, repeats: u64) -> u64 {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (l, t) = (ledger.clone(), table.clone());
        let seen = tokio::task::spawn_blocking(move || {
            let head = l.head(&t).map(|h| h.seq.0);
            let entries = l.quarantine().expect("quarantine");
            let id = entries.first().map(|e| e.id);
            let counted = id.map(|id| l.quarantine_repeats(id).expect("repeats"));
            (head, entries.len(), id, counted)
        })
        .await
        .expect("read");
        if let (Some(h), _, Some(id), Some(n)) = seen {
            if h == seq && n == repeats {
                assert_eq!(seen.1, 1, "one entry");
                return id;
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never reached head {seq} and {repeats} repeats: (head, entries, id, repeats) {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// A raw publisher resends one undecodable message 1,000 times with different
/// `Nats-Msg-Id`s, between the device's events: one quarantine entry with 999 repeats,
/// ingest's report counts them, and the device's events are all stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_resent_1000_times_is_one_entry_with_999_repeats() {
    let server = natsd::NatsServer::start().expect("nats-server");
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = open(dir.path());
    let ingest = Running::start(&server.url(), ledger.clone());
    let js = jetstream::new(async_nats::connect(server.url()).await.expect("connect"));
    ingest::ensure_stream(&js).await.expect("stream");
    let events = one_table();
    let t = events[0].event.table.clone();
    let half = events.len() / 2;
    publish_as_device(&js, &events[..half]).await;
    for i in 0..SENDS {
        publish(&js, &t, &format!("resend-{i}"), b"\x00not an event").await;
    }
    publish_as_device(&js, &events[half..]).await;
    let last = events.last().expect("events").event.seq.0;
    let id = wait_for(&ledger, &t, last, SENDS - 1).await;
    let report = ingest.stop().await;

    let entry = ledger.quarantine_entry(id).expect("read").expect("kept");
    assert_eq!(entry.reason, reason::UNDECODABLE);
    assert_eq!(entry.repeats, SENDS - 1);
    assert_eq!(report.quarantined, 1, "{report:?}");
    assert_eq!(report.repeats, SENDS - 1, "{report:?}");
    assert_eq!(report.stored, events.len() as u64, "{report:?}");
    assert!(ledger.verify().expect("verify").is_ok());
}
