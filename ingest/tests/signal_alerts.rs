//! The read model's decision signals as alerts (`ingest::signal_alerts`), against a real
//! nats-server and ledger: each signal goes out once on `alerts.<table>.<kind>`; the same
//! signals handed over again, by the same ingest or after a restart, go out never again;
//! with several nodes only the alerts lease's holder sends, and the others keep them.
//! A node that takes the lease sends what its record holds past each mark, once. An
//! alarm named once for the floor (a dealer's, a shift's) goes out once, whatever its round
//! and whichever node holds the lease.
//!
//! Each check of "nothing sent" is closed by a later signal that must come next, so no
//! wait decides a result. Waits are bounded (`WAIT`); nothing asserts on time.

mod common;

use common::{open, Running};
use futures::StreamExt;
use ingest::signal_alerts::{channel, mark_key, SignalRecord, SignalSender};
use ingest::IngestConfig;
use schemas::api::{Alert, AlertKind, DecisionSignal, SignalMove};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

fn signal(table: &str, kind: &str, round: u64, subject: &str) -> DecisionSignal {
    DecisionSignal {
        table: table.into(),
        round,
        kind: kind.into(),
        subject: subject.into(),
        box_no: Some(3),
        dealer: None,
        statistic_milli: 9_600,
        threshold_milli: 9_210,
        false_alarms_milli_per_1000_rounds: 1_000,
        run_rounds: 31,
        moved: vec![SignalMove {
            round: round.saturating_sub(4),
            box_no: 3,
            by_milli: 2_100,
            text: "raised K-J-5; the dealer did not qualify".into(),
            table: None,
        }],
        hold: None,
    }
}

/// The next alert on `sub`, within `WAIT`: (subject, lease node header, alert).
async fn next(sub: &mut async_nats::Subscriber) -> (String, Option<String>, Alert) {
    let m = tokio::time::timeout(WAIT, sub.next()).await;
    let m = m
        .expect("an alert within the wait")
        .expect("subscription open");
    let node = m
        .headers
        .as_ref()
        .and_then(|h| h.get(ingest::lease::LEASE_NODE_HEADER))
        .map(|v| v.as_str().to_string());
    let alert = serde_json::from_slice(&m.payload).expect("alert JSON");
    (m.subject.to_string(), node, alert)
}

/// The (table, round, subject) of the next `n` alerts, in arrival order.
async fn rounds(sub: &mut async_nats::Subscriber, n: usize) -> Vec<(String, u64, String)> {
    let mut out = Vec::new();
    for _ in 0..n {
        let (subject, _, a) = next(sub).await;
        let s = a.signal.expect("a signal's alert carries it");
        assert_eq!(subject, format!("alerts.{}.{}", s.table, s.kind));
        assert_eq!(a.kind.as_str(), s.kind);
        out.push((s.table, s.round, s.subject));
    }
    out
}

fn start(url: &str, dir: &std::path::Path, node: Option<&str>) -> (Running, SignalSender) {
    let (tx, inbox) = channel();
    let mut config = IngestConfig::new(url);
    config.signals = inbox;
    config.node_id = node.map(str::to_string);
    (Running::start_with(config, open(dir)), tx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_signal_goes_out_once_across_a_restart() {
    let server = natsd::NatsServer::start().expect("nats-server");
    let dir = tempfile::tempdir().expect("tempdir");
    let observer = async_nats::connect(server.url()).await.expect("observer");
    let mut sub = observer.subscribe("alerts.>").await.expect("sub");
    observer.flush().await.expect("flush");
    let (ingest, tx) = start(&server.url(), dir.path(), None);

    // One pass: two signals of one round of T-1, one of T-2.
    let pass = vec![
        signal("T-1", "hole_card_play", 100, "box 3"),
        signal("T-1", "card_sharing", 100, "boxes 3-4"),
        signal("T-2", "hole_card_play", 50, "dealer D-9"),
    ];
    tx.send(pass.clone());
    let mut got = rounds(&mut sub, 3).await;
    got.sort();
    assert_eq!(
        got,
        vec![
            ("T-1".into(), 100, "box 3".into()),
            ("T-1".into(), 100, "boxes 3-4".into()),
            ("T-2".into(), 50, "dealer D-9".into()),
        ]
    );
    // The same pass again (a rebuilt read model), then a new round: only the new one.
    tx.send(pass.clone());
    tx.send(vec![signal("T-1", "hole_card_play", 101, "table")]);
    assert_eq!(
        rounds(&mut sub, 1).await,
        vec![("T-1".into(), 101, "table".into())]
    );
    let kept = ingest.alerts.recent();
    assert_eq!(kept.len(), 4, "each kept once: {kept:?}");
    assert!(kept.iter().all(|a| a.count == 1 && a.signal.is_some()));
    assert_eq!(kept[0].kind, AlertKind::HoleCardPlay);
    ingest.stop().await;

    // The mark is in the replica bucket.
    let js = async_nats::jetstream::new(observer.clone());
    let bucket = js
        .get_key_value(schemas::subjects::REPLICA_BUCKET)
        .await
        .expect("the replica bucket");
    let t1 = schemas::TableId::new("T-1").unwrap();
    let mark = bucket
        .get(mark_key(&t1))
        .await
        .expect("read")
        .expect("mark");
    assert_eq!(&mark[..], b"101");

    // A restart with every signal handed over again, and one new: only the new one.
    let (ingest, tx) = start(&server.url(), dir.path(), None);
    tx.send(pass);
    tx.send(vec![
        signal("T-1", "hole_card_play", 101, "table"),
        signal("T-2", "card_sharing", 51, "boxes 1-2"),
    ]);
    assert_eq!(
        rounds(&mut sub, 1).await,
        vec![("T-2".into(), 51, "boxes 1-2".into())]
    );
    assert_eq!(
        ingest.alerts.recent().len(),
        1,
        "old signals are not logged again"
    );
    ingest.stop().await;
}

/// A dealer alarm raised again at another table and round (a rebuilt read model judges
/// the floor in another order), and a hold alarm judged again at a later round (its price
/// landed later), go out once: their once keys hold, whatever the round marks say.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alarm_named_once_goes_out_once_whatever_its_round() {
    let server = natsd::NatsServer::start().expect("nats-server");
    let dir = tempfile::tempdir().expect("tempdir");
    let observer = async_nats::connect(server.url()).await.expect("observer");
    let mut sub = observer.subscribe("alerts.>").await.expect("sub");
    observer.flush().await.expect("flush");
    let (ingest, tx) = start(&server.url(), dir.path(), None);
    let dealer = signal("T-1", "dealer_errors", 10, "dealer D-7");
    let hold = signal("T-1", "hold_outside", 30, "shift 2026-11-25/1");
    tx.send(vec![dealer.clone(), hold.clone()]);
    let first = rounds(&mut sub, 2).await;
    assert_eq!(first[0], ("T-1".into(), 10, "dealer D-7".into()));
    assert_eq!(first[1], ("T-1".into(), 30, "shift 2026-11-25/1".into()));
    ingest.stop().await;

    // After a restart: the same alarms at rounds past every mark, then a new signal.
    let (ingest, tx) = start(&server.url(), dir.path(), None);
    tx.send(vec![
        signal("T-2", "dealer_errors", 20, "dealer D-7"),
        signal("T-1", "hold_outside", 40, "shift 2026-11-25/1"),
    ]);
    tx.send(vec![
        signal("T-2", "hole_card_play", 21, "box 1"),
        signal("T-2", "dealer_errors", 22, "dealer D-8"),
    ]);
    assert_eq!(
        rounds(&mut sub, 2).await,
        vec![
            ("T-2".into(), 21, "box 1".into()),
            ("T-2".into(), 22, "dealer D-8".into()),
        ],
        "D-7's and the shift's alarms went out before; D-8's is new"
    );
    let once = ingest::signal_alerts::once_key(&dealer).expect("a dealer alarm has a once key");
    let js = async_nats::jetstream::new(observer.clone());
    let bucket = js
        .get_key_value(schemas::subjects::REPLICA_BUCKET)
        .await
        .expect("the replica bucket");
    let kept = bucket.get(once).await.expect("read").expect("once key");
    assert_eq!(&kept[..], b"10", "the round it first went out at");
    assert_eq!(
        ingest::signal_alerts::once_key(&signal("T-1", "hole_card_play", 1, "box 1")),
        None
    );
    ingest.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_alerts_lease_holder_sends_a_signal() {
    let server = natsd::NatsServer::start().expect("nats-server");
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let observer = async_nats::connect(server.url()).await.expect("observer");
    let mut sub = observer
        .subscribe("alerts.*.hole_card_play")
        .await
        .expect("sub");
    observer.flush().await.expect("flush");
    let (n1, tx1) = start(&server.url(), d1.path(), Some("n1"));
    // n1 takes the free lease before its first fetch; n2 starts once it holds it.
    let js = async_nats::jetstream::new(observer.clone());
    let holder = wait_holder(&js).await;
    assert_eq!(holder, "n1");
    let (n2, tx2) = start(&server.url(), d2.path(), Some("n2"));

    // Both read models raise the same signal; n2 first.
    let s = signal("T-1", "hole_card_play", 40, "box 3");
    tx2.send(vec![s.clone()]);
    let deadline = tokio::time::Instant::now() + WAIT;
    while n2.alerts.recent().is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "n2 never kept it");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tx1.send(vec![s]);
    let (_, node, alert) = next(&mut sub).await;
    assert_eq!(node.as_deref(), Some("n1"), "the holder sent it");
    assert_eq!(alert.signal.map(|s| s.round), Some(40));
    // n2 kept it and sent nothing: n1's next signal is the next message.
    tx2.send(vec![signal("T-1", "hole_card_play", 41, "table")]);
    tx1.send(vec![signal("T-1", "hole_card_play", 41, "table")]);
    let (_, node, alert) = next(&mut sub).await;
    assert_eq!(
        (node.as_deref(), alert.signal.map(|s| s.round)),
        (Some("n1"), Some(41))
    );
    n2.stop().await;
    n1.stop().await;
    let quiet = tokio::time::timeout(Duration::from_millis(300), sub.next()).await;
    assert!(quiet.is_err(), "no other alert: {quiet:?}");
}

/// The node that holds the alerts lease, once one does (within `WAIT`).
async fn wait_holder(js: &async_nats::jetstream::Context) -> String {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let bucket = js.get_key_value(ingest::lease::bucket_name("alerts")).await;
        if let Ok(b) = bucket {
            if let Ok(Some(v)) = b.get("alerts").await {
                return String::from_utf8_lossy(&v).into_owned();
            }
        }
        assert!(tokio::time::Instant::now() < deadline, "no holder");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A node's record of signals, as its read model would list them: by table, then round.
#[derive(Default)]
struct Record(Mutex<Vec<DecisionSignal>>);

impl SignalRecord for Record {
    fn tables(
        &self,
        after: Option<&schemas::TableId>,
        max: usize,
    ) -> Result<Vec<schemas::TableId>, String> {
        let rows = self.0.lock().unwrap();
        let mut t: Vec<schemas::TableId> = rows
            .iter()
            .map(|r| schemas::TableId::new(r.table.clone()).unwrap())
            .filter(|t| after.is_none_or(|a| t > a))
            .collect();
        t.sort();
        t.dedup();
        t.truncate(max);
        Ok(t)
    }

    fn signals_after(
        &self,
        table: &schemas::TableId,
        after_round: Option<u64>,
        max: usize,
    ) -> Result<Vec<DecisionSignal>, String> {
        let rows = self.0.lock().unwrap();
        let mut out: Vec<DecisionSignal> = rows
            .iter()
            .filter(|r| r.table == table.as_str() && after_round.is_none_or(|a| r.round > a))
            .cloned()
            .collect();
        out.sort_by_key(|r| r.round);
        out.truncate(max);
        Ok(out)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_takes_the_lease_sends_what_its_record_holds_once() {
    let server = natsd::NatsServer::start().expect("nats-server");
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let observer = async_nats::connect(server.url()).await.expect("observer");
    let mut sub = observer.subscribe("alerts.>").await.expect("sub");
    observer.flush().await.expect("flush");
    let (n1, tx1) = start(&server.url(), d1.path(), Some("n1"));
    tx1.attach(Arc::new(Record::default()));
    let js = async_nats::jetstream::new(observer.clone());
    assert_eq!(wait_holder(&js).await, "n1");
    // n1 sends dealer D-7's alarm and round 7 of T-1; n2's record holds them and rounds
    // 8 and 9 of T-1 and 3 of T-2, which n1 never indexed. n2's model judged D-7 at T-2
    // round 2 (another order): its once key holds across the takeover. n2 sends nothing
    // while n1 holds the lease.
    let dealer = signal("T-1", "dealer_errors", 6, "dealer D-7");
    tx1.send(vec![dealer, signal("T-1", "hole_card_play", 7, "box 3")]);
    assert_eq!(
        rounds(&mut sub, 2).await,
        vec![
            ("T-1".into(), 6, "dealer D-7".into()),
            ("T-1".into(), 7, "box 3".into())
        ]
    );
    let record = Arc::new(Record::default());
    *record.0.lock().unwrap() = vec![
        signal("T-1", "hole_card_play", 7, "box 3"),
        signal("T-1", "card_sharing", 8, "boxes 3-4"),
        signal("T-1", "hole_card_play", 9, "table"),
        signal("T-2", "dealer_errors", 2, "dealer D-7"),
        signal("T-2", "hole_card_play", 3, "dealer D-2"),
    ];
    let (n2, tx2) = start(&server.url(), d2.path(), Some("n2"));
    tx2.attach(record.clone());
    // An empty pass wakes n2's publisher; it holds no lease, so it sends nothing.
    tx2.send(Vec::new());
    n1.stop().await; // a clean stop releases the lease
    let mut got = rounds(&mut sub, 3).await;
    let t1: Vec<u64> = got.iter().filter(|g| g.0 == "T-1").map(|g| g.1).collect();
    assert_eq!(t1, vec![8, 9], "T-1 past its mark, in round order");
    got.sort();
    assert_eq!(
        got,
        vec![
            ("T-1".into(), 8, "boxes 3-4".into()),
            ("T-1".into(), 9, "table".into()),
            ("T-2".into(), 3, "dealer D-2".into()),
        ]
    );
    // A later signal goes out next: nothing was sent twice.
    record
        .0
        .lock()
        .unwrap()
        .push(signal("T-2", "card_sharing", 4, "boxes 1-2"));
    tx2.send(vec![signal("T-2", "card_sharing", 4, "boxes 1-2")]);
    assert_eq!(
        rounds(&mut sub, 1).await,
        vec![("T-2".into(), 4, "boxes 1-2".into())]
    );
    n2.stop().await;
    let quiet = tokio::time::timeout(Duration::from_millis(300), sub.next()).await;
    assert!(quiet.is_err(), "no other alert: {quiet:?}");
}
