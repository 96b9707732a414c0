//! Tables that stop advancing, against a real nats-server and a real ledger: a gap never
//! filled (a device that lost its outbox), a refused event the rest of the chain depends
//! on, and a replaced device that restarted its chain. Each shows in the ledger's status
//! (`Reader::gap_views`: held range, count, bytes, since when, the blocking refusal) and
//! raises `table_stuck` on NATS with the same facts. What a way out needs is then done,
//! and the table advances: for a refused event no device can send again, an admin's
//! re-sync (`schemas::resync`).
//!
//! Waits are bounded (`WAIT`); nothing here asserts on time. The stuck bound is short
//! (`STUCK_AFTER`) so a test takes seconds.

mod common;

use common::{context, floor_near_now, open, publish, publish_as_device, Running};
use futures::StreamExt;
use ingest::IngestConfig;
use ledger::Ledger;
use schemas::api::{Alert, AlertKind, GapView};
use schemas::attest::SigningKey;
use schemas::resync::{Resync, ResyncTerms};
use schemas::{subjects, Seq, TableId};
use simulator::{FaultPlan, Published};
use std::sync::Arc;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);
const STUCK_AFTER: Duration = Duration::from_millis(500);

/// One table's opening and three rounds, as its device would publish them.
fn one_table(seed: u64) -> Vec<Published> {
    let floor = floor_near_now(1, seed, FaultPlan::none()).expect("floor");
    let mut table = floor.tables.into_iter().next().expect("a table");
    let mut events = table.opening_events().expect("opening");
    for _ in 0..3 {
        events.extend(table.play_round().expect("round").events);
    }
    events
}

/// A nats-server, a ledger as `serve` opens it, ingest with the short stuck bound, and a
/// subscription to the table's `table_stuck` alerts.
struct Scene {
    server: natsd::NatsServer,
    _dir: tempfile::TempDir,
    ledger: Arc<Ledger>,
    ingest: Running,
    js: async_nats::jetstream::Context,
    alerts: async_nats::Subscriber,
}

async fn scene(table: &TableId) -> Scene {
    let server = natsd::NatsServer::start().expect("nats-server");
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = open(dir.path());
    let observer = async_nats::connect(server.url()).await.expect("observer");
    let alerts = observer
        .subscribe(subjects::alerts_subject(table, AlertKind::TableStuck))
        .await
        .expect("sub");
    observer.flush().await.expect("flush");
    let mut config = IngestConfig::new(server.url());
    config.stuck_after = STUCK_AFTER;
    let ingest = Running::start_with(config, ledger.clone());
    let js = context(&server.url()).await;
    Scene {
        server,
        _dir: dir,
        ledger,
        ingest,
        js,
        alerts,
    }
}

/// The next `table_stuck` alert published on NATS, within `WAIT`.
async fn next_stuck(alerts: &mut async_nats::Subscriber) -> Alert {
    let m = tokio::time::timeout(WAIT, alerts.next())
        .await
        .expect("a table_stuck alert within the wait")
        .expect("subscription open");
    serde_json::from_slice(&m.payload).expect("an Alert")
}

/// Waits until `table`'s head is `seq` and nothing is held.
async fn wait_advanced(ledger: &Arc<Ledger>, table: &TableId, seq: u64) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let l = ledger.clone();
        let (head, gaps) = tokio::task::spawn_blocking({
            let t = table.clone();
            move || {
                (
                    l.reader().head(&t).map(|h| h.seq.0),
                    l.reader().gaps().len(),
                )
            }
        })
        .await
        .expect("read");
        if head == Some(seq) && gaps == 0 {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "head {head:?} never reached {seq} with nothing held ({gaps} gaps)"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// `table`'s gap as the API and the CLI show it, once its held events number `held`.
async fn wait_gap(ledger: &Arc<Ledger>, table: &TableId, held: u64) -> GapView {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let l = ledger.clone();
        let views = tokio::task::spawn_blocking(move || l.reader().gap_views())
            .await
            .expect("read")
            .expect("gap views");
        if let Some(g) = views.get(table).filter(|g| g.held == held) {
            return g.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{table} never held {held}: {views:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn bytes_of(events: &[Published]) -> u64 {
    events.iter().map(|p| p.bytes.len() as u64).sum()
}

/// A device that lost events k+1..=k+3 from its outbox and went on: the table holds what
/// follows, is shown with the missing and held ranges and no refused event to blame, and
/// `table_stuck` says so on NATS. The events found again (a backup of the outbox) fill it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gap_never_filled_is_shown_and_alerted() {
    let events = one_table(5);
    let t = events[0].event.table.clone();
    let mut s = scene(&t).await;
    let k = 20usize;
    publish_as_device(&s.js, &events[..k]).await;
    publish_as_device(&s.js, &events[k + 3..k + 8]).await;
    let gap = wait_gap(&s.ledger, &t, 5).await;
    assert_eq!(
        (gap.missing_from, gap.missing_to, gap.held_last),
        (Seq(k as u64 + 1), Seq(k as u64 + 3), Seq(k as u64 + 8))
    );
    assert_eq!(gap.held_bytes, bytes_of(&events[k + 3..k + 8]));
    assert_eq!(gap.blocked_by, None, "nothing of the gap was received");

    let alert = next_stuck(&mut s.alerts).await;
    assert_eq!(
        (alert.table.clone(), alert.kind),
        (t.clone(), AlertKind::TableStuck)
    );
    let want = format!(
        "missing seq {}..={}; held seq {}..={} (5 events, {} bytes)",
        k + 1,
        k + 3,
        k + 4,
        k + 8,
        gap.held_bytes
    );
    assert!(alert.detail.starts_with(&want), "{}", alert.detail);
    assert!(s
        .ingest
        .alerts
        .recent()
        .iter()
        .any(|a| a.kind == AlertKind::TableStuck));

    publish_as_device(&s.js, &events[k..k + 3]).await;
    wait_advanced(&s.ledger, &t, k as u64 + 8).await;
    s.ingest.stop().await;
    drop(s.server);
}

/// An event refused (sent without its signature to a ledger that requires one) that the
/// rest of the chain depends on: the table is shown blocked by that seq and its reason,
/// in the status and in the alert. The same event sent again, signed, unblocks it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_event_blocking_the_chain_is_named() {
    let events = one_table(5);
    let t = events[0].event.table.clone();
    let mut s = scene(&t).await;
    let k = 20usize;
    publish_as_device(&s.js, &events[..k]).await;
    let refused = &events[k];
    let id = format!(
        "{}-unsigned",
        subjects::msg_id(&t, refused.event.seq, &refused.bytes)
    );
    publish(&s.js, t.as_str(), &id, &refused.bytes, None).await;
    publish_as_device(&s.js, &events[k + 1..k + 4]).await;

    let gap = wait_gap(&s.ledger, &t, 3).await;
    let blocker = gap.blocked_by.clone().expect("the refused event is named");
    assert_eq!(
        (blocker.seq, blocker.reason.as_str()),
        (Seq(k as u64 + 1), ledger::reason::UNSIGNED)
    );
    let alert = next_stuck(&mut s.alerts).await;
    let want = format!(
        "seq {} refused as unsigned (quarantine entry {})",
        k + 1,
        blocker.quarantine_id
    );
    assert!(alert.detail.ends_with(&want), "{}", alert.detail);

    publish_as_device(&s.js, &events[k..k + 1]).await;
    wait_advanced(&s.ledger, &t, k as u64 + 4).await;
    s.ingest.stop().await;
}

/// A replaced device that restarted the table's chain from seq 1 (another chain, another
/// key): nothing of it joins the chain, and what it sends beyond the head is held behind a
/// refusal, shown and alerted. Its way out is a device that continues from the ledger's
/// head (RUNBOOK.md); here the original device's events do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_device_restarting_its_chain_is_shown() {
    let events = one_table(5);
    let restarted = one_table(6);
    let t = events[0].event.table.clone();
    assert_eq!(restarted[0].event.table, t, "the same table");
    let mut s = scene(&t).await;
    let k = 20usize;
    publish_as_device(&s.js, &events[..k]).await;
    wait_advanced(&s.ledger, &t, k as u64).await;
    publish_as_device(&s.js, &restarted[..k + 4]).await;

    let gap = wait_gap(&s.ledger, &t, 3).await;
    assert_eq!(
        (gap.missing_from, gap.missing_to),
        (Seq(k as u64 + 1), Seq(k as u64 + 1))
    );
    let blocker = gap
        .blocked_by
        .clone()
        .expect("the restarted chain's event is named");
    assert_eq!(
        (blocker.seq, blocker.reason.as_str()),
        (Seq(k as u64 + 1), ledger::reason::PREV_MISMATCH)
    );
    let alert = next_stuck(&mut s.alerts).await;
    assert!(alert.detail.contains(&blocker.reason), "{}", alert.detail);

    publish_as_device(&s.js, &events[k..k + 6]).await;
    wait_advanced(&s.ledger, &t, k as u64 + 6).await;
    s.ingest.stop().await;
}

/// Publishes a re-sync on `t`'s events subject, as `roundledger table resync` does.
async fn publish_resync(js: &async_nats::jetstream::Context, r: &Resync) {
    publish(js, r.table.as_str(), &r.msg_id(), &r.to_wire(), None).await;
}

/// Waits until the ledger counts `n` quarantine entries of `reason`.
async fn wait_reason(ledger: &Arc<Ledger>, reason: &str, n: u64) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while ledger
        .reader()
        .quarantine_counts()
        .get(reason)
        .copied()
        .unwrap_or(0)
        < n
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{reason} stayed below {n}: {:?}",
            ledger.reader().quarantine_counts()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Re-syncs of `terms` signed by an untrusted key, altered after signing, or naming a
/// stale head: each quarantined `resync_refused` with a `refused_publisher` alert, the
/// head unmoved.
async fn refused_resyncs_change_nothing(s: &Scene, terms: &ResyncTerms) {
    let rogue = Resync::sign(&SigningKey::from_secret([66; 32]), terms.clone()).expect("sign");
    let mut altered = Resync::sign(&simulator::admin_key(), terms.clone()).expect("sign");
    altered.note = "case 8".into();
    let stale_terms = ResyncTerms {
        head_seq: Seq(terms.head_seq.0 - 1),
        ..terms.clone()
    };
    let stale = Resync::sign(&simulator::admin_key(), stale_terms).expect("sign");
    for r in [&rogue, &altered, &stale] {
        publish_resync(&s.js, r).await;
    }
    wait_reason(&s.ledger, ledger::reason::RESYNC_REFUSED, 3).await;
    assert_eq!(
        s.ledger.reader().head(&terms.table).map(|h| h.seq),
        Some(terms.head_seq),
        "nothing applied"
    );
    // A refused re-sync is a refused publisher: someone tried to speak for the table.
    let deadline = tokio::time::Instant::now() + WAIT;
    while !s
        .ingest
        .alerts
        .recent()
        .iter()
        .any(|a| a.kind == AlertKind::RefusedPublisher && a.detail.starts_with("resync_refused"))
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no refused_publisher alert"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// A table held behind a refused event, for good (the device cannot send it again: say
/// its key was lost with it). Re-syncs signed by an untrusted key, altered after signing,
/// or naming a stale head are quarantined and change nothing. The admin's re-sync admits
/// the quarantined event: it and the held events behind it are stored, the entry stays,
/// the re-sync is kept, and verify checks it and passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_resync_unsticks_a_table_held_behind_a_refused_event() {
    let events = one_table(5);
    let t = events[0].event.table.clone();
    let s = scene(&t).await;
    let k = 20usize;
    publish_as_device(&s.js, &events[..k]).await;
    let refused = &events[k];
    publish(&s.js, t.as_str(), "unsigned", &refused.bytes, None).await;
    publish_as_device(&s.js, &events[k + 1..k + 4]).await;
    let gap = wait_gap(&s.ledger, &t, 3).await;
    let blocker = gap.blocked_by.expect("blocked by the refused event");

    let head = s.ledger.reader().head(&t).expect("a head");
    let terms = ResyncTerms {
        table: t.clone(),
        head_seq: head.seq,
        head_hash: head.hash,
        event_hash: refused.hash(),
        quarantine_id: blocker.quarantine_id,
        note: "case 7: the shoe's key was lost".into(),
        signed_at_ns: ingest::system_clock_ns(),
    };
    refused_resyncs_change_nothing(&s, &terms).await;

    let good = Resync::sign(&simulator::admin_key(), terms).expect("sign");
    publish_resync(&s.js, &good).await;
    wait_advanced(&s.ledger, &t, k as u64 + 4).await;
    s.ingest.stop().await;

    let l = s.ledger;
    let stored: Vec<_> = l
        .reader()
        .events(&t, 1..=u64::MAX)
        .map(|e| e.expect("readable").hash)
        .collect();
    let sent: Vec<_> = events[..k + 4].iter().map(|p| p.hash()).collect();
    assert_eq!(stored, sent, "the device's own chain, whole");
    let kept = l.reader().resyncs(Some(&t)).expect("re-syncs");
    assert_eq!(
        kept.iter().map(|k| &k.resync).collect::<Vec<_>>(),
        vec![&good]
    );
    assert!(
        l.reader()
            .quarantine_entry(blocker.quarantine_id)
            .expect("read")
            .is_some(),
        "the entry stays"
    );
    assert_eq!(
        l.verifier().check_resyncs().expect("check"),
        Vec::<String>::new()
    );
    assert!(l.verifier().verify().expect("verify").is_ok());
}
