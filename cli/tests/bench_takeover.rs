//! Benchmark, not a test (`#[ignore]`): takeover time of each singleton duty (issue 43).
//! Three `serve --node-id` on one nats-server; n1 starts first and takes the sealer and
//! alerts leases, then n1 is killed (SIGKILL: nothing released). Measured by polling the
//! logs every `LOOK`:
//!
//! - lease taken: the first `lease taken` line of each duty on n2 or n3;
//! - first act: a fork is published once the new holder has the alerts lease (an alert
//!   raised while no node holds it is kept, not published); its alert, seen on `alerts.>`,
//!   is timed from the fork. The sealer's first act waits for a day's end, so only its
//!   lease is timed.
//!
//! Each run is compared with the lease TTL (`lease-ttl`); the takeover bound is the TTL plus
//! the server's expiry sweep plus one try (`ttl / 3`), `ingest::lease`.
//!
//! `cargo test --release -p roundledger --test bench_takeover -- --ignored --nocapture`

mod common;

use async_nats::jetstream;
use common::serve::{listening, start, wait_for, Serve};
use futures::StreamExt;
use schemas::chain::event_hash;
use schemas::codec;
use schemas::*;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TOKEN: &str = "bench-takeover-token-0000001";
/// How often the logs are read.
const LOOK: Duration = Duration::from_millis(20);
/// The longest a takeover is waited for.
const TAKEOVER_WAIT_MAX: Duration = Duration::from_secs(120);

/// Whether a JSON log line has `message` (top level or under `fields`) for `duty`.
fn has(line: &serde_json::Value, message: &str, duty: &str) -> bool {
    let m = |v: &serde_json::Value| v["message"] == message && v["duty"] == duty;
    m(line) || m(&line["fields"])
}

fn logged(log: &Path, message: &str, duty: &str) -> bool {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .any(|v| has(&v, message, duty))
}

/// Two different unsigned events at seq 1 of `table`: a fork, so an alert.
fn fork(rt: &tokio::runtime::Runtime, url: &str, table: &str) {
    let t = TableId::new(table).expect("id");
    rt.block_on(async {
        let js = jetstream::new(async_nats::connect(url).await.expect("connect"));
        ingest::ensure_stream(&js).await.expect("stream");
        for i in 0..2u64 {
            let bytes = codec::to_bincode(&Event {
                v: WIRE_VERSION,
                table: t.clone(),
                device: DeviceId::new("ctl-1").expect("id"),
                seq: Seq(1),
                prev: Hash32::ZERO,
                occurred_at_ns: ingest::system_clock_ns() + i as i64,
                round: None,
                body: EventBody::Announced {
                    announcement: Announcement::PlaceYourBets,
                },
            });
            let _ = event_hash(&Hash32::ZERO, &bytes);
            js.publish(subjects::events_subject(&t), bytes.into())
                .await
                .expect("publish")
                .await
                .expect("stream ack");
        }
    });
}

/// When each alert arrived, and the node its lease header names.
type Arrivals = Arc<Mutex<Vec<(Instant, Option<String>)>>>;

fn watch_alerts(rt: &tokio::runtime::Runtime, url: &str) -> Arrivals {
    let seen: Arrivals = Arc::new(Mutex::new(Vec::new()));
    let into = seen.clone();
    let mut sub = rt.block_on(async {
        let c = async_nats::connect(url).await.expect("connect");
        let s = c.subscribe(subjects::ALERTS_WILDCARD).await.expect("sub");
        c.flush().await.expect("flush");
        // The client lives as long as the subscription's task.
        std::mem::forget(c);
        s
    });
    rt.spawn(async move {
        while let Some(m) = sub.next().await {
            let node = m.headers.as_ref().and_then(|h| {
                h.get(ingest::lease::LEASE_NODE_HEADER)
                    .map(|v| v.to_string())
            });
            into.lock().expect("lock").push((Instant::now(), node));
        }
    });
    seen
}

/// Starts node `name`; it seals with `root/seal.key`, so it runs the sealer duty.
fn node(root: &Path, url: &str, name: &str, ttl_s: u64) -> (Serve, PathBuf) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).expect("dir");
    let key = root.join("seal.key");
    if !key.exists() {
        let out = common::roundledger(&["keygen", "--out", key.to_str().expect("utf-8")]);
        assert!(out.status.success());
    }
    let seal = format!("seal-key = {key:?}\nseal-grace = 0\n");
    let extra = format!("node-id = {name:?}\nlease-ttl = {ttl_s}\n{seal}");
    let (serve, log) = start(&dir, url, TOKEN, &extra);
    listening(&log);
    (serve, log)
}

/// Polls the conditions together until each has held once: when each first held.
fn first_times(mut conds: Vec<Box<dyn FnMut() -> bool + '_>>) -> Vec<Instant> {
    let t0 = Instant::now();
    let mut at: Vec<Option<Instant>> = vec![None; conds.len()];
    while at.iter().any(Option::is_none) {
        for (c, t) in conds.iter_mut().zip(at.iter_mut()) {
            if t.is_none() && c() {
                *t = Some(Instant::now());
            }
        }
        assert!(t0.elapsed() < TAKEOVER_WAIT_MAX, "no takeover: {at:?}");
        std::thread::sleep(LOOK);
    }
    at.into_iter().flatten().collect()
}

/// One run: (sealer lease taken, alerts lease taken) seconds after the kill, and the
/// new holder's first alert, seconds after its fork.
fn run(ttl_s: u64) -> (f64, f64, f64) {
    let nats = natsd::NatsServer::start().expect("nats-server");
    let url = nats.url();
    let root = tempfile::tempdir().expect("tempdir");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let alerts = watch_alerts(&rt, &url);
    let (mut n1, log1) = node(root.path(), &url, "n1", ttl_s);
    for duty in ["sealer", "alerts"] {
        wait_for("n1 takes the lease", || {
            (logged(&log1, "lease taken", duty), duty)
        });
    }
    let others = [
        node(root.path(), &url, "n2", ttl_s),
        node(root.path(), &url, "n3", ttl_s),
    ];
    n1.0.kill().expect("SIGKILL n1");
    let killed = Instant::now();
    n1.0.wait().expect("reap");
    let taken = |duty: &'static str| {
        let others = &others;
        Box::new(move || {
            others
                .iter()
                .any(|(_, log)| logged(log, "lease taken", duty))
        }) as Box<dyn FnMut() -> bool>
    };
    let at = first_times(vec![taken("sealer"), taken("alerts")]);
    // An alert raised while no node holds the lease is kept, not published
    // (OPERATIONS.md): the fork goes out once the new holder has the lease.
    let forked = Instant::now();
    fork(&rt, &url, "T-TK");
    let alerted = Box::new(|| {
        let a = alerts.lock().expect("lock");
        a.iter()
            .any(|(_, n)| n.as_deref().is_some_and(|n| n != "n1"))
    });
    let first = first_times(vec![alerted])[0].duration_since(forked);
    let after = |t: Instant| t.duration_since(killed).as_secs_f64();
    (after(at[0]), after(at[1]), first.as_secs_f64())
}

#[test]
#[ignore = "a benchmark: run by hand with --release (module doc)"]
fn takeover_of_each_singleton_duty() {
    for ttl_s in [3, 3, 15] {
        let (sealer, alerts, first) = run(ttl_s);
        println!(
            "lease ttl {ttl_s} s: sealer lease taken {sealer:.2} s after the kill, alerts lease {alerts:.2} s, the new holder's first alert {first:.2} s after its fork"
        );
        assert!(sealer > 0.0 && alerts > 0.0 && first > 0.0);
    }
}
