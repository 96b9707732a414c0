//! Ledger replicas against real processes: three `roundledger serve --node-id` on one
//! real `nats-server -js`, each with its own ledger directory and durable consumer.
//!
//! They store the same floor and end with equal digests. Then one replica's stored head
//! is rewritten while it is stopped (what a storage fault or an attacker with file access
//! does); once it runs again, the others raise `replica_diverged` within 10 s (issue 43),
//! naming the table, the seq and the nodes, on the alert subject, `/metrics` and `/ready`.
//!
//! Waits are bounded (`common::serve::WAIT`); the only timed assertion is the 10 s.

mod common;

use async_nats::jetstream;
use common::serve::{get, listening, scrape, wait_for, Serve};
use futures::StreamExt;
use ledger::store::{Space, SLED_TREE};
use schemas::api::{Alert, AlertKind};
use schemas::chain::event_hash;
use schemas::codec;
use schemas::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const TOKEN: &str = "ops-admin-token-0000000001";
const NODES: [&str; 3] = ["n1", "n2", "n3"];
const TABLES: [&str; 2] = ["T-A", "T-B"];
const EVENTS: u64 = 25;
/// The bound on seeing a divergence.
const DIVERGENCE_SEEN_WITHIN: Duration = Duration::from_secs(10);

/// An unsigned `PlaceYourBets` event at `seq` after `prev`.
fn event_bytes(table: &TableId, seq: u64, prev: Hash32) -> Vec<u8> {
    codec::to_bincode(&Event {
        v: WIRE_VERSION,
        table: table.clone(),
        device: DeviceId::new("ctl-1").expect("id"),
        seq: Seq(seq),
        prev,
        occurred_at_ns: ingest::system_clock_ns(),
        round: None,
        body: EventBody::Announced {
            announcement: Announcement::PlaceYourBets,
        },
    })
}

/// Publishes `EVENTS` chained events on each table, each acked by the stream.
async fn publish_floor(url: &str) {
    let js = jetstream::new(async_nats::connect(url).await.expect("connect"));
    for name in TABLES {
        let t = TableId::new(name).expect("id");
        let mut prev = Hash32::ZERO;
        for seq in 1..=EVENTS {
            let bytes = event_bytes(&t, seq, prev);
            prev = event_hash(&prev, &bytes);
            js.publish(subjects::events_subject(&t), bytes.into())
                .await
                .expect("publish")
                .await
                .expect("stream ack");
        }
    }
}

/// A node's directory under `root`.
fn node_dir(root: &Path, node: &str) -> PathBuf {
    let d = root.join(node);
    std::fs::create_dir_all(&d).expect("node dir");
    d
}

/// Starts serve as ledger node `node`: (process, log path).
fn start_node(root: &Path, node: &str, url: &str) -> (Serve, PathBuf) {
    let extra = format!("node-id = {node:?}\nreplica-check-ms = 200\n");
    common::serve::start(&node_dir(root, node), url, TOKEN, &extra)
}

/// A metric's value, 0 when absent.
fn value(ops: &str, key: &str) -> f64 {
    scrape(ops).get(key).copied().unwrap_or(0.0)
}

/// Waits until `ops`'s node stored every event and sees both other nodes.
fn wait_caught_up(ops: &str, node: &str) {
    let stored = "roundledger_ingest_messages_total{outcome=\"stored\"}";
    let peers = format!("roundledger_replica_peers{{node=\"{node}\"}}");
    wait_for(
        &format!("{node} stores the floor and sees its peers"),
        || {
            let (s, p) = (value(ops, stored), value(ops, &peers));
            (
                s == (EVENTS * TABLES.len() as u64) as f64 && p == 2.0,
                (s, p),
            )
        },
    );
}

/// The digest of a stopped node's ledger, at a fixed time.
fn digest_of(root: &Path, node: &str) -> proofs::digest::Digest {
    let l = ledger::Ledger::open(root.join(node).join("ledger")).expect("open");
    l.verifier().digest(1).expect("digest")
}

/// Rewrites table `t`'s stored head hash in a closed ledger (its records stay).
fn forge_head(ledger_dir: &Path, t: &TableId) -> Hash32 {
    let db = sled::open(ledger_dir).expect("raw sled open");
    let tree = db.open_tree(SLED_TREE).expect("tree");
    let mut key = vec![Space::Head.prefix()];
    key.extend_from_slice(&ledger::record::table_key(t));
    let mut head = tree.get(&key).expect("get").expect("head").to_vec();
    head[8..40].copy_from_slice(&[0xAB; 32]);
    tree.insert(key, head).expect("insert");
    db.flush().expect("flush");
    Hash32([0xAB; 32])
}

#[test]
fn replicas_agree_and_a_tampered_one_is_named_within_ten_seconds() {
    let nats = natsd::NatsServer::start().expect("nats-server");
    let url = nats.url();
    let root = tempfile::tempdir().expect("tempdir");
    let mut nodes: Vec<(Serve, String)> = NODES
        .iter()
        .map(|n| {
            let (s, log) = start_node(root.path(), n, &url);
            (s, listening(&log).1)
        })
        .collect();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(publish_floor(&url));
    for ((_, ops), node) in nodes.iter().zip(NODES) {
        wait_caught_up(ops, node);
        let (status, body) = get(ops, "/ready", None);
        assert_eq!(status, 200, "{node} agrees with its peers: {body}");
    }
    assert_consumers(&rt, &url);
    let out = common::roundledger(&["cluster", "status", "--nats", &url]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("nodes: n1 n2 n3"), "{text}");
    assert!(
        text.contains("tables: 2 agree, 0 behind, 0 diverged"),
        "{text}"
    );
    assert!(
        text.contains("node n2: consumer ingest-n2, lag 0 pending"),
        "{text}"
    );
    for (s, _) in &mut nodes {
        assert!(s.stop(), "clean stop");
    }
    let digests: Vec<_> = NODES.iter().map(|n| digest_of(root.path(), n)).collect();
    assert_eq!(digests[0].events, EVENTS * TABLES.len() as u64);
    assert!(digests.iter().all(|d| d == &digests[0]), "{digests:?}");
    drop(nodes);
    tampered_replica_is_named(&rt, root.path(), &url);
}

/// Each node consumed through its own durable consumer; the single node's `ingest` is
/// not there.
fn assert_consumers(rt: &tokio::runtime::Runtime, url: &str) {
    rt.block_on(async {
        let js = jetstream::new(async_nats::connect(url).await.expect("connect"));
        let stream = js.get_stream(subjects::STREAM).await.expect("stream");
        for n in NODES {
            let name = subjects::ingest_consumer(Some(n));
            let info = stream.consumer_info(&name).await.expect("node consumer");
            assert_eq!(info.num_pending, 0, "{name} consumed everything");
        }
        assert!(stream
            .consumer_info(subjects::INGEST_CONSUMER)
            .await
            .is_err());
    });
}

/// n2's head of T-A is forged; with n1 and n3 running, n2 comes back: n1 raises
/// `replica_diverged` naming T-A, its head seq and both nodes, within 10 s.
fn tampered_replica_is_named(rt: &tokio::runtime::Runtime, root: &Path, url: &str) {
    let t = TableId::new(TABLES[0]).expect("id");
    let forged = forge_head(&root.join("n2").join("ledger"), &t);
    let client = rt.block_on(async { async_nats::connect(url).await.expect("connect") });
    let mut alerts = rt.block_on(async {
        let s = subjects::alerts_subject(&t, AlertKind::ReplicaDiverged);
        client.subscribe(s).await.expect("subscribe")
    });
    let (_n1, n1_log) = start_node(root, "n1", url);
    let (_n3, n3_log) = start_node(root, "n3", url);
    let n1_ops = listening(&n1_log).1;
    let n3_ops = listening(&n3_log).1;
    let (_n2, n2_log) = start_node(root, "n2", url);
    let n2_ops = listening(&n2_log).1;
    let up = Instant::now();
    let detail = wait_for("n1 names the diverged table", || {
        let (status, body) = get(&n1_ops, "/ready", None);
        (status == 503 && body.contains("replica_diverged"), body)
    });
    // n3 checks on its own timer: wait for it too, then hold both to the bound.
    wait_for("n3 names the diverged table", || {
        let n = value(&n3_ops, "roundledger_replica_diverged_tables");
        (n == 1.0, n)
    });
    let seen_after = up.elapsed();
    assert!(
        seen_after <= DIVERGENCE_SEEN_WITHIN,
        "seen after {seen_after:?}"
    );
    let named = format!("T-A seq {EVENTS} (n1, n2)");
    assert!(detail.contains(&named), "{detail}");
    assert!(!detail.contains("T-B"), "T-B agrees: {detail}");
    let metric =
        format!("roundledger_replica_diverged{{table=\"T-A\",seq=\"{EVENTS}\",nodes=\"n1,n2\"}}");
    assert_eq!(value(&n1_ops, &metric), 1.0);
    // n2 sees it too: its own head differs from both peers'.
    wait_for("n2 degrades itself", || {
        let (status, body) = get(&n2_ops, "/ready", None);
        (status == 503 && body.contains("T-A seq"), body)
    });
    let out = common::roundledger(&["cluster", "status", "--nats", url]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a divergence is a finding: {text}"
    );
    assert!(
        text.contains(&format!("table T-A: DIVERGED at seq {EVENTS}")),
        "{text}"
    );
    assert!(text.contains(&format!("n2 {forged}")), "{text}");
    let alert = rt.block_on(async {
        let m = tokio::time::timeout(Duration::from_secs(10), alerts.next())
            .await
            .expect("an alert within 10 s")
            .expect("subscription open");
        serde_json::from_slice::<Alert>(&m.payload).expect("alert JSON")
    });
    assert_eq!(alert.table, t);
    assert_eq!(alert.kind, AlertKind::ReplicaDiverged);
    assert!(alert.detail.contains(&format!("seq {EVENTS}")), "{alert:?}");
    assert!(alert.detail.contains(&forged.to_string()), "{alert:?}");
}

/// Whether `log` has a JSON line whose message is `message`.
fn logged(log: &Path, message: &str) -> bool {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .any(|v| v["message"].as_str() == Some(message))
}

fn signal(serve: &Serve, sig: i32) {
    // SAFETY: signals a child this test started and still owns.
    assert_eq!(unsafe { libc::kill(serve.0.id() as i32, sig) }, 0);
}

/// What a subscriber to seals and alerts saw: per message its subject, the node its
/// lease headers name, and whether `lease::accepts` took it on arrival.
#[derive(Debug, Clone)]
struct Seen {
    subject: String,
    node: Option<String>,
    accepted: Result<(), String>,
}

/// Collects every seal and alert published on `url`, each checked as it arrives.
fn collect(rt: &tokio::runtime::Runtime, url: &str) -> std::sync::Arc<std::sync::Mutex<Vec<Seen>>> {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let into = seen.clone();
    let (client, mut subs) = rt.block_on(async {
        let c = async_nats::connect(url).await.expect("connect");
        let seals = c.subscribe(subjects::SEALS_WILDCARD).await.expect("sub");
        let alerts = c.subscribe(subjects::ALERTS_WILDCARD).await.expect("sub");
        c.flush().await.expect("flush");
        (c, futures::stream::select(seals, alerts))
    });
    rt.spawn(async move {
        let js = jetstream::new(client);
        while let Some(m) = subs.next().await {
            let duty = match m.subject.starts_with("seals.") {
                true => "sealer",
                false => "alerts",
            };
            let accepted = ingest::lease::accepts(&js, duty, m.headers.as_ref()).await;
            let node = m.headers.as_ref().and_then(|h| {
                h.get(ingest::lease::LEASE_NODE_HEADER)
                    .map(|v| v.to_string())
            });
            let subject = m.subject.to_string();
            into.lock().expect("lock").push(Seen {
                subject,
                node,
                accepted,
            });
        }
    });
    seen
}

/// Publishes two different events at seq 1 of `table`: the second is a fork, an alert.
fn fork(rt: &tokio::runtime::Runtime, url: &str, table: &str) {
    let t = TableId::new(table).expect("id");
    rt.block_on(async {
        let js = jetstream::new(async_nats::connect(url).await.expect("connect"));
        ingest::ensure_stream(&js).await.expect("stream");
        for _ in 0..2 {
            let bytes = event_bytes(&t, 1, Hash32::ZERO);
            js.publish(subjects::events_subject(&t), bytes.into())
                .await
                .expect("publish")
                .await
                .expect("stream ack");
            std::thread::sleep(Duration::from_millis(2));
        }
    });
}

/// How many JSON lines of `log` have `message` for one of `duties`.
fn count_logged(log: &Path, message: &str, duties: &[&str]) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["message"].as_str() == Some(message))
        .filter(|v| duties.iter().any(|d| v["duty"].as_str() == Some(d)))
        .count()
}

/// Two sealing nodes under the sealer and alerts leases (TTL 3 s): n1 holds both and
/// publishes the ended day's seal and a fork's alert; n2 seals its own ledger and raises
/// the alert, publishing neither. n1 is paused past the TTL: n2 takes both leases and
/// publishes the next fork's alert. n1, continued, steps down by itself and publishes
/// nothing. Each publication passes the lease check as it arrives: one seal, each alert
/// once.
#[test]
fn a_paused_holder_loses_its_leases_and_nothing_is_published_twice() {
    let nats = natsd::NatsServer::start().expect("nats-server");
    let url = nats.url();
    let root = tempfile::tempdir().expect("tempdir");
    let key = root.path().join("seal.key");
    let out = common::roundledger(&["keygen", "--out", key.to_str().expect("utf-8")]);
    assert!(out.status.success());
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let seen = collect(&rt, &url);
    let got = |prefix: &str| -> Vec<Seen> {
        let all = seen.lock().expect("lock").clone();
        all.into_iter()
            .filter(|s| s.subject.starts_with(prefix))
            .collect()
    };
    let extra = format!("seal-key = {key:?}\nseal-grace = 0\nlease-ttl = 3\n");
    let start = |node: &str| {
        let extra = format!("node-id = {node:?}\n{extra}");
        common::serve::start(&node_dir(root.path(), node), &url, TOKEN, &extra)
    };
    let (n1, n1_log) = start("n1");
    wait_for("n1 publishes the ended day's seal", || {
        let s = got("seals.");
        (s.len() == 1, s)
    });
    let (_n2, n2_log) = start("n2");
    wait_for("n2 seals its own ledger, publishes nothing", || {
        let m = "seal kept, not published: another node holds the sealer lease";
        (logged(&n2_log, m), ())
    });
    fork(&rt, &url, "T-F1");
    wait_for("n1 publishes the first fork's alert", || {
        let a = got("alerts.");
        (a.len() == 1, a)
    });
    wait_for("n2 raises it too, and keeps it", || {
        let m = "alert kept, not published: another node holds the alerts lease";
        (logged(&n2_log, m), ())
    });
    signal(&n1, libc::SIGSTOP);
    let paused = Instant::now();
    wait_for("n2 takes both leases", || {
        let n = count_logged(&n2_log, "lease taken", &["sealer", "alerts"]);
        (n == 2, n)
    });
    eprintln!("takeover {:?} after the pause (ttl 3 s)", paused.elapsed());
    fork(&rt, &url, "T-F2");
    wait_for("n2 publishes the second fork's alert", || {
        let a = got("alerts.");
        (a.len() == 2, a)
    });
    signal(&n1, libc::SIGCONT);
    wait_for("n1 steps down by itself", || {
        (logged(&n1_log, "lease lost: stepping down"), ())
    });
    wait_for("n1 raises the second alert and keeps it", || {
        let m = "alert kept, not published: another node holds the alerts lease";
        (logged(&n1_log, m), ())
    });
    let out = common::roundledger(&["cluster", "status", "--nats", &url]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("lease sealer: held by n2"), "{text}");
    assert!(text.contains("lease alerts: held by n2"), "{text}");
    // Both nodes run on a while (two ticks): nothing more reaches the bus.
    std::thread::sleep(Duration::from_secs(2));
    each_once(&got("seals."), &got("alerts."));
    drop(n1);
}

/// One seal from n1; the first fork's alert from n1, the second's from n2; each
/// accepted by the lease check as it arrived.
fn each_once(seals: &[Seen], alerts: &[Seen]) {
    assert_eq!(seals.len(), 1, "one seal published: {seals:?}");
    assert_eq!(alerts.len(), 2, "each alert once: {alerts:?}");
    assert_eq!(alerts[0].subject, "alerts.T-F1.fork");
    assert_eq!(alerts[1].subject, "alerts.T-F2.fork");
    let nodes: Vec<_> = [&seals[0], &alerts[0], &alerts[1]]
        .iter()
        .map(|s| s.node.clone())
        .collect();
    assert_eq!(
        nodes,
        [Some("n1".into()), Some("n1".into()), Some("n2".into())]
    );
    for s in seals.iter().chain(alerts) {
        assert_eq!(s.accepted, Ok(()), "{s:?}");
    }
}

/// The alerts lease's holder killed (SIGKILL: nothing released) after publishing a
/// fork's alert. n2 starts once the lease has expired, takes it before its first fetch,
/// then reaches the same fork in the stream: it raises the alert and does not publish it,
/// since the old holder published past it. A later fork's alert it publishes.
#[test]
fn a_late_holder_does_not_publish_again_what_the_old_one_did() {
    let nats = natsd::NatsServer::start().expect("nats-server");
    let url = nats.url();
    let root = tempfile::tempdir().expect("tempdir");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let seen = collect(&rt, &url);
    let alerts = || seen.lock().expect("lock").clone();
    let start = |node: &str| {
        let extra = format!("node-id = {node:?}\nlease-ttl = 2\n");
        common::serve::start(&node_dir(root.path(), node), &url, TOKEN, &extra)
    };
    let (mut n1, _) = start("n1");
    fork(&rt, &url, "T-F1");
    wait_for("n1 publishes the fork's alert", || {
        let a = alerts();
        (a.len() == 1, a)
    });
    n1.0.kill().expect("SIGKILL n1");
    n1.0.wait().expect("reap");
    wait_for("the alerts lease expires", || {
        let out = common::roundledger(&["cluster", "status", "--nats", &url]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (text.contains("lease alerts: free"), text)
    });
    let (_n2, n2_log) = start("n2");
    wait_for("n2 reaches the fork and keeps its alert", || {
        let m = "alert kept, not published: an earlier lease holder published past it";
        (logged(&n2_log, m), ())
    });
    fork(&rt, &url, "T-F2");
    wait_for("n2 publishes the next fork's alert", || {
        let a = alerts();
        (a.len() == 2, a)
    });
    let a = alerts();
    let subjects: Vec<&str> = a.iter().map(|s| s.subject.as_str()).collect();
    assert_eq!(
        subjects,
        ["alerts.T-F1.fork", "alerts.T-F2.fork"],
        "each once"
    );
    assert_eq!(a[1].node.as_deref(), Some("n2"));
    assert!(a.iter().all(|s| s.accepted.is_ok()), "{a:?}");
}

/// Day starts for two nodes, an hour apart, whose last ended gaming days carry the same
/// date: both seal that date, over different bounds.
fn day_starts_an_hour_apart() -> (String, String) {
    let hour = |ns: i64| (ns.div_euclid(3_600_000_000_000)).rem_euclid(24);
    let s1 = (hour(ingest::system_clock_ns()) + 22) % 24;
    let s2 = if s1 >= 1 { s1 - 1 } else { s1 + 1 };
    (format!("{s1:02}:00"), format!("{s2:02}:00"))
}

/// Two nodes that seal the same date over different bounds (a day start set apart, as a
/// misconfigured node would) each raise `replica_diverged` for that day: `/ready` 503
/// naming it, the metric, and an alert on the node's own subject. Their chains agree.
/// Each also names the setting that differs: the day rule.
#[test]
fn nodes_that_seal_a_day_differently_are_named() {
    let nats = natsd::NatsServer::start().expect("nats-server");
    let url = nats.url();
    let root = tempfile::tempdir().expect("tempdir");
    let key = root.path().join("seal.key");
    let out = common::roundledger(&["keygen", "--out", key.to_str().expect("utf-8")]);
    assert!(out.status.success());
    let (s1, s2) = day_starts_an_hour_apart();
    let start = |node: &str, day_start: &str| {
        let extra = format!(
            "node-id = {node:?}\nreplica-check-ms = 200\nseal-key = {key:?}\nseal-grace = 0\nday-start = {day_start:?}\n"
        );
        common::serve::start(&node_dir(root.path(), node), &url, TOKEN, &extra)
    };
    let (_n1, n1_log) = start("n1", &s1);
    let (_n2, n2_log) = start("n2", &s2);
    for (node, log) in [("n1", &n1_log), ("n2", &n2_log)] {
        let (api, ops) = listening(log);
        let ready = wait_for(&format!("{node} names the day sealed differently"), || {
            let r = get(&ops, "/ready", None);
            (r.0 == 503 && r.1.contains("sealed differently"), r)
        });
        assert!(
            ready.1.contains("(n1, n2)") || ready.1.contains("(n2, n1)"),
            "{ready:?}"
        );
        wait_for(&format!("{node} names the setting that differs"), || {
            let r = get(&ops, "/ready", None);
            (
                r.1.contains("settings differ from n") && r.1.contains("day rule"),
                r,
            )
        });
        let m = scrape(&ops);
        let seal_metric = m
            .keys()
            .any(|k| k.starts_with("roundledger_replica_seal_diverged{"));
        assert!(seal_metric, "{m:?}");
        assert_eq!(
            value(&ops, "roundledger_replica_diverged_tables"),
            0.0,
            "chains agree"
        );
        let alerts: schemas::api::AlertList =
            serde_json::from_str(&get(&api, "/v1/alerts", Some(TOKEN)).1).expect("alerts");
        let named = alerts.alerts.iter().any(|a| {
            a.kind == AlertKind::ReplicaDiverged && a.detail.contains("sealed differently")
        });
        assert!(named, "{node}: {alerts:?}");
    }
}
