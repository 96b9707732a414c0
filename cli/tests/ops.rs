//! What operators see, against real processes: `roundledger serve` (the built binary,
//! configured by a `--settings` TOML file, logging JSON) on a real `nats-server -js`.
//! A fault run (a stored event, a redelivered one, a gap held, an undecodable message
//! sent three times, a clock-skewed event) moves each fault's counter on `/metrics` by
//! exactly its count; API requests are counted by route template and status; `/ready` is
//! 503 naming NATS while nats-server is down, 200 again once it is back; a SIGTERM logs
//! the counters at shutdown.
//!
//! Waits are bounded (`WAIT`) and poll for counts, never for time.

mod common;

use async_nats::jetstream;
use common::serve::{get, listening, scrape, wait_for, Serve};
use ledger::reason;
use schemas::chain::event_hash;
use schemas::codec;
use schemas::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const TOKEN: &str = "ops-admin-token-0000000001";
/// A device clock this far behind the stream's time is past the ledger's 24 h limit.
const SKEWED_NS: i64 = 25 * 3_600_000_000_000;
/// Times the undecodable message is sent: one entry, the rest repeats.
const UNDECODABLE_SENDS: u64 = 3;

fn now_ns() -> i64 {
    ingest::system_clock_ns()
}

/// An unsigned `PlaceYourBets` event at `seq` after `prev`, device time `at_ns`.
fn event_bytes(table: &TableId, seq: u64, prev: Hash32, at_ns: i64) -> Vec<u8> {
    codec::to_bincode(&Event {
        v: WIRE_VERSION,
        table: table.clone(),
        device: DeviceId::new("ctl-1").expect("id"),
        seq: Seq(seq),
        prev,
        occurred_at_ns: at_ns,
        round: None,
        body: EventBody::Announced {
            announcement: Announcement::PlaceYourBets,
        },
    })
}

async fn publish(js: &jetstream::Context, table: &str, msg_id: &str, bytes: Vec<u8>) {
    let mut h = async_nats::HeaderMap::new();
    h.insert("Nats-Msg-Id", msg_id);
    js.publish_with_headers(format!("tables.{table}.events"), h, bytes.into())
        .await
        .expect("publish")
        .await
        .expect("stream ack");
}

fn value(m: &BTreeMap<String, f64>, key: &str) -> f64 {
    m.get(key).copied().unwrap_or(0.0)
}

fn outcome(o: &str) -> String {
    format!("roundledger_ingest_messages_total{{outcome=\"{o}\"}}")
}

/// Starts serve with everything in a settings file.
fn serve(dir: &Path, nats_url: &str) -> (Serve, PathBuf) {
    common::serve::start(dir, nats_url, TOKEN, "")
}

/// Publishes the fault run: per fault, the count it must add.
async fn fault_run(url: &str) {
    let js = jetstream::new(async_nats::connect(url).await.expect("connect"));
    let t = TableId::new("T-OPS").expect("id");
    let first = event_bytes(&t, 1, Hash32::ZERO, now_ns());
    let h1 = event_hash(&Hash32::ZERO, &first);
    let second = event_bytes(&t, 2, h1, now_ns());
    let h2 = event_hash(&h1, &second);
    publish(&js, "T-OPS", "ops-1", first.clone()).await;
    publish(&js, "T-OPS", "ops-1-again", first).await;
    publish(&js, "T-OPS", "ops-3", event_bytes(&t, 3, h2, now_ns())).await;
    for i in 0..UNDECODABLE_SENDS {
        publish(
            &js,
            "T-OPS",
            &format!("junk-{i}"),
            b"\x00not an event".to_vec(),
        )
        .await;
    }
    let s = TableId::new("T-SKEW").expect("id");
    let skewed = event_bytes(&s, 1, Hash32::ZERO, now_ns() - SKEWED_NS);
    publish(&js, "T-SKEW", "skew-1", skewed).await;
}

/// Each fault moved its counter by exactly its count (`fault_run`).
fn assert_fault_counts(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>) {
    let moved = |key: &str| value(after, key) - value(before, key);
    assert_eq!(moved(&outcome("stored")), 1.0);
    assert_eq!(moved(&outcome("duplicate")), 1.0);
    assert_eq!(moved(&outcome("held")), 1.0);
    assert_eq!(
        moved(&outcome("quarantined")),
        2.0,
        "undecodable and clock_skew"
    );
    assert_eq!(moved(&outcome("repeat")), (UNDECODABLE_SENDS - 1) as f64);
    let reason_key = |r: &str| format!("roundledger_ledger_quarantined_total{{reason=\"{r}\"}}");
    assert_eq!(moved(&reason_key(reason::UNDECODABLE)), 1.0);
    assert_eq!(moved(&reason_key(reason::CLOCK_SKEW)), 1.0);
    let table = |family: &str| format!("{family}{{table=\"T-OPS\"}}");
    assert_eq!(value(after, &table("roundledger_table_held_events")), 1.0);
    assert!(after.contains_key(&table("roundledger_table_held_gap_age_seconds")));
    assert!(after.contains_key(&table("roundledger_table_head_age_seconds")));
    assert_eq!(
        value(after, &table("roundledger_table_attestation_lag_events")),
        1.0
    );
    assert!(moved("roundledger_ingest_flush_seconds_count") >= 1.0);
    assert_eq!(value(after, "roundledger_nats_connected"), 1.0);
}

/// API requests are counted by route template and status.
fn assert_requests_counted(api: &str, ops: &str) {
    assert_eq!(get(api, "/v1/whoami", Some(TOKEN)).0, 200);
    assert_eq!(get(api, "/v1/whoami", None).0, 401);
    assert_eq!(get(api, "/v1/tables/T-OPS/rounds/7", Some(TOKEN)).0, 404);
    let m = scrape(ops);
    let req = |route: &str, status: u16| {
        let key =
            format!("roundledger_api_requests_total{{route=\"{route}\",status=\"{status}\"}}");
        value(&m, &key)
    };
    assert_eq!(req("/v1/whoami", 200), 1.0, "{m:?}");
    assert_eq!(req("/v1/whoami", 401), 1.0);
    assert_eq!(req("/v1/tables/{table}/rounds/{round}", 404), 1.0);
    let audit = "roundledger_api_journal_append_failures_total{journal=\"audit\"}";
    assert_eq!(value(&m, audit), 0.0);
    assert_eq!(
        get(api, "/ready", None).0,
        200,
        "/ready on the API's port too"
    );
}

/// `/ready` is 503 naming `nats` while nats-server is down, 200 once it is back; the
/// pending gauge says unknown (-1) meanwhile, never its last value.
fn assert_ready_follows_nats(nats: &mut natsd::NatsServer, ops: &str) {
    nats.kill9().expect("kill nats-server");
    let down = wait_for("not ready while NATS is down", || {
        let r = get(ops, "/ready", None);
        (r.0 == 503, r)
    });
    let body: serde_json::Value = serde_json::from_str(&down.1).expect("json");
    assert_eq!(body["ready"], false);
    assert_eq!(body["failed"][0]["check"], "nats", "{body}");
    let pending = "roundledger_jetstream_pending_messages";
    wait_for(
        "the pending count unknown (-1) while NATS is down, not its last value",
        || {
            let m = scrape(ops);
            (value(&m, pending) == -1.0, m)
        },
    );
    nats.restart().expect("restart nats-server");
    wait_for("ready again once NATS is back", || {
        let r = get(ops, "/ready", None);
        (r.0 == 200, r)
    });
    wait_for("the pending count known again", || {
        let m = scrape(ops);
        (value(&m, pending) >= 0.0, m)
    });
}

/// SIGTERM: a clean stop, and a JSON `stopped` line with the counters.
fn assert_clean_stop(serve: &mut Serve, log: &Path) {
    assert!(serve.stop(), "a clean stop");
    let text = std::fs::read_to_string(log).expect("log");
    let stopped: serde_json::Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["message"] == "stopped")
        .expect("a JSON `stopped` line");
    // nats-server killed with SIGKILL may redeliver what ingest acked (its consumer
    // state is not yet synced): counted as duplicates or held again, never stored again.
    assert_eq!(stopped["stored"], 1, "{stopped}");
    assert_eq!(stopped["quarantined"], 2, "{stopped}");
    assert_eq!(stopped["level"], "INFO");
}

#[test]
fn metrics_move_by_each_faults_count_and_ready_follows_nats() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut nats = natsd::NatsServer::start().expect("nats-server");
    let (mut serve, log) = serve(tmp.path(), &nats.url());
    let (api, ops) = listening(&log);
    wait_for("ready", || {
        let r = get(&ops, "/ready", None);
        (r.0 == 200, r)
    });
    let before = scrape(&ops);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(fault_run(&nats.url()));
    // stored, duplicate, held, the undecodable entry and its repeats, the skewed event.
    let sent = 3 + UNDECODABLE_SENDS + 1;
    let handled = ["stored", "duplicate", "held", "quarantined", "repeat"];
    let after = wait_for("every message handled", || {
        let m = scrape(&ops);
        let n: f64 = handled
            .iter()
            .map(|o| value(&m, &outcome(o)) - value(&before, &outcome(o)))
            .sum();
        (n == sent as f64, m)
    });
    assert_fault_counts(&before, &after);
    assert_requests_counted(&api, &ops);
    assert_ready_follows_nats(&mut nats, &ops);
    assert_clean_stop(&mut serve, &log);
}
