//! `serve` stops on SIGTERM within a few seconds whatever NATS does (issue 46: with
//! nats-server down it ran on for 90 s and more, until NATS came back), and loses
//! nothing: every event it stored before the signal is in the ledger after it.
//!
//! Real processes: the built binary, a real `nats-server -js`, a simulated table.

mod common;

use common::serve::{get, listening, wait_for, Serve, POLL};
use std::time::{Duration, Instant};

const TOKEN: &str = "ops-admin-token-0000000001";
/// How long a stop may take: "a few seconds", with room for a loaded machine. The bug
/// being guarded ran for as long as NATS stayed down.
const STOP_WITHIN: Duration = Duration::from_secs(20);

/// Waits for the process to exit, at most `within`: its success, or `None` if it runs on.
fn exited_within(serve: &mut Serve, within: Duration) -> Option<bool> {
    let start = Instant::now();
    while start.elapsed() < within {
        if let Some(status) = serve.0.try_wait().expect("try_wait") {
            eprintln!("serve exited {:?} after SIGTERM", start.elapsed());
            return Some(status.success());
        }
        std::thread::sleep(POLL);
    }
    None
}

/// Sends SIGTERM to serve.
fn sigterm(serve: &Serve) {
    let pid = serve.0.id() as i32;
    // SAFETY: signals a child this test started and still owns.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
}

fn stored(api: &str) -> u64 {
    let (s, body) = get(api, "/v1/status", Some(TOKEN));
    assert_eq!(s, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("status JSON");
    v["events_stored"].as_u64().expect("events_stored")
}

#[test]
fn serve_stops_on_sigterm_with_nats_down_and_keeps_what_it_stored() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut nats = natsd::NatsServer::start().expect("nats-server");
    let (admin, keys) = common::device_keys(tmp.path(), &["CSP6-01"]);
    let (mut serve, log) = common::serve::start(
        tmp.path(),
        &nats.url(),
        TOKEN,
        &format!("admin-key = [{admin:?}]\n"),
    );
    let (api, ops) = listening(&log);
    wait_for("ready", || {
        let r = get(&ops, "/ready", None);
        (r.0 == 200, r)
    });
    // A server with ingest says so (the UI's Live page shows "live" only then).
    let who = get(&api, "/v1/whoami", Some(TOKEN));
    assert!(who.1.contains("\"ingesting\":true"), "{who:?}");
    let sim = common::roundledger(&[
        "simulate",
        "--nats",
        &nats.url(),
        "--tables",
        "1",
        "--rounds",
        "2",
        "--seed",
        "46",
        "--device-keys",
        keys.to_str().unwrap(),
    ]);
    assert!(sim.status.success());
    // Everything published is stored, then NATS goes away.
    let before = wait_for("the rounds stored", || {
        let n = stored(&api);
        (n > 20 && n == stored(&api), n)
    });
    nats.kill9().expect("kill nats-server");
    wait_for("not ready without NATS", || {
        let r = get(&ops, "/ready", None);
        (r.0 == 503, r)
    });
    sigterm(&serve);
    let stopped = exited_within(&mut serve, STOP_WITHIN);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        stopped,
        Some(true),
        "a clean stop with NATS down; log:\n{text}"
    );
    let ledger = ledger::Ledger::open(tmp.path().join("ledger")).expect("ledger");
    let after: u64 = ledger
        .reader()
        .tables()
        .iter()
        .map(|t| ledger.reader().head(t).map_or(0, |h| h.seq.0))
        .sum();
    assert_eq!(
        after, before,
        "every event stored before the signal is kept"
    );
}
