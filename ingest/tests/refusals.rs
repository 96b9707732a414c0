//! Refusals are idempotent, against a real nats-server and a real ledger opened as `serve`
//! opens it: a publisher resending one refused message under fresh message ids (so fresh
//! stream seqs) makes one quarantine entry with a repeat count, not one entry per send,
//! and the table's device goes on being stored.
//!
//! Waits are bounded (`WAIT`); nothing here asserts on time.

mod common;

use common::{context, floor_near_now, open, publish, publish_as_device, Running};
use ledger::{reason, Ledger};
use schemas::TableId;
use simulator::{FaultPlan, Published};
use std::sync::Arc;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);
/// Times the raw publisher sends its undecodable message.
const SENDS: u64 = 1_000;

/// One table's opening and two rounds, its device's clock 12 h before now (within the
/// ledger's 24 h skew limit of the stream's timestamps).
fn one_table() -> Vec<Published> {
    let floor = floor_near_now(1, 11, FaultPlan::none()).expect("floor");
    let mut table = floor.tables.into_iter().next().expect("a table");
    let mut events = table.opening_events().expect("opening");
    for _ in 0..2 {
        events.extend(table.play_round().expect("round").events);
    }
    events
}

/// Waits until `ledger` holds `table`'s chain to `seq` and `repeats` repeats of its only
/// quarantine entry, and returns that entry's id.
async fn wait_for(ledger: &Arc<Ledger>, table: &TableId, seq: u64, repeats: u64) -> u64 {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (l, t) = (ledger.clone(), table.clone());
        let seen = tokio::task::spawn_blocking(move || {
            let head = l.reader().head(&t).map(|h| h.seq.0);
            let entries = l.reader().quarantine().expect("quarantine");
            let id = entries.first().map(|e| e.id);
            let counted = id.map(|id| l.reader().quarantine_repeats(id).expect("repeats"));
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
    let js = context(&server.url()).await;
    let events = one_table();
    let t = events[0].event.table.clone();
    let half = events.len() / 2;
    publish_as_device(&js, &events[..half]).await;
    for i in 0..SENDS {
        publish(
            &js,
            t.as_str(),
            &format!("resend-{i}"),
            b"\x00not an event",
            None,
        )
        .await;
    }
    publish_as_device(&js, &events[half..]).await;
    let last = events.last().expect("events").event.seq.0;
    let id = wait_for(&ledger, &t, last, SENDS - 1).await;
    let report = ingest.stop().await;

    let entry = ledger
        .reader()
        .quarantine_entry(id)
        .expect("read")
        .expect("kept");
    assert_eq!(entry.reason, reason::UNDECODABLE);
    assert_eq!(entry.repeats, SENDS - 1);
    assert_eq!(report.quarantined, 1, "{report:?}");
    assert_eq!(report.repeats, SENDS - 1, "{report:?}");
    assert_eq!(report.stored, events.len() as u64, "{report:?}");
    assert!(ledger.verifier().verify().expect("verify").is_ok());
}
