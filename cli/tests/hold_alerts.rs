//! A rigged shift's hold alarm as a bus alert, end to end with real processes. `seed
//! --hold-skew 1:2:100` has the dealer of the table's second shift pay every winning line
//! double and collect no losing line. `serve --decision-analytics`, with ingest on a real
//! nats-server, judges a closed shift when its table's next shift's first round is indexed.
//! A subscriber on `alerts.>` gets one `hold_outside`, naming the rigged shift with its
//! recorded win, theoretical win and interval; the honest shifts send none. A restart
//! sends nothing, nor does a `readmodel rebuild --decision-analytics`, which judges every
//! shift again.
//!
//! The seeded table plays the rule book's pay tables, priced without the pricer: the
//! alert's figures are the finance report's, none pending. Waits are bounded (`WAIT`);
//! nothing here asserts on time.

mod common;

use common::alerts::{caught_up, each_once_in_round_order, AlertBus};
use common::roundledger;
use common::serve::{get, listening, start, wait_for};
use serde_json::Value;
use std::path::Path;

/// Rounds enough for two whole 4-hour shifts (105 and 98 rounds under seed 7) and the
/// third's first rounds.
const ROUNDS: u64 = 210;
const TOKEN: &str = "hold-alerts-admin-token-0123456789abcdef";
const SETTINGS: &str = "decision-analytics = 1.0\n";

/// A shift boundary 10 to 11 minutes after the seeded clocks start (a day ago), UTC
/// `HH:MM`: a table opening within 20 minutes of a change waits for it, so its first
/// shift is whole and the shifts' rounds are the same on every run.
fn shift_start() -> String {
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let minute = ((now_s + 600) / 60 + 1) % 1_440;
    format!("{:02}:{:02}", minute / 60, minute % 60)
}

/// Seeds `dir/ledger`: one CSP6 table, 4-hour shifts, its second shift rigged, no other
/// payout error.
fn seed(dir: &Path) {
    let ledger = dir.join("ledger");
    let (rounds, start) = (ROUNDS.to_string(), shift_start());
    let args = [
        "seed",
        "--ledger",
        ledger.to_str().unwrap(),
        "--tables",
        "1",
        "--rounds",
        &rounds,
        "--seed",
        "7",
        "--close",
        "--payout-errors",
        "0",
        "--days-ago",
        "1",
        "--shift-every",
        "14400",
        "--shift-start",
        &start,
        "--hold-skew",
        "1:2:100",
    ];
    assert!(roundledger(&args).status.success());
}

/// `GET path` as JSON, 200 asserted.
fn json(api: &str, path: &str) -> Value {
    let (status, body) = get(api, path, Some(TOKEN));
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap()
}

/// `GET /v1/analytics` once every round is indexed.
fn analytics_when_indexed(api: &str) -> Value {
    wait_for("every round indexed", || {
        let (_, body) = get(api, "/v1/rounds?limit=1", Some(TOKEN));
        let total = serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|v| v["total"].as_u64());
        (total == Some(ROUNDS), body)
    });
    let v = json(api, "/v1/analytics");
    assert_eq!(v["computed"], true, "{v}");
    assert_eq!(v["holds_not_judged"], serde_json::json!([]), "{v}");
    assert_eq!(v["holds_not_judged_total"], 0, "{v}");
    v
}

/// The one `hold_outside` signal: the rigged shift, holding every disputed round, with
/// the finance report's figures, nothing pending.
fn check_hold(api: &str, signals: &[Value]) -> Value {
    let holds: Vec<&Value> = signals
        .iter()
        .filter(|s| s["kind"] == "hold_outside")
        .collect();
    assert_eq!(
        holds.len(),
        1,
        "one rigged shift, no honest one: {signals:?}"
    );
    let (s, h) = (holds[0], &holds[0]["hold"]);
    let shift = h["shift"].as_str().unwrap();
    assert_eq!(s["subject"], format!("shift {shift}"));
    let (starts, ends) = (h["starts_at_ns"].as_i64(), h["ends_at_ns"].as_i64());
    // Every payout error lies in the rigged shift, in the players' favour.
    let all = json(api, "/v1/disputes?limit=1")["total"].as_u64().unwrap();
    let disputes = json(api, &format!("/v1/disputes?shift={shift}&limit=500"));
    assert_eq!(disputes["total"].as_u64(), Some(all), "all in {shift}");
    assert!(all > 100, "the rigged shift's lines: {all}");
    for d in disputes["items"].as_array().unwrap() {
        let at = d["opened_at_ns"].as_i64();
        assert!(starts <= at && at < ends, "a payout error outside it: {d}");
        assert!(d["recorded"].as_i64() > d["expected"].as_i64(), "{d}");
    }
    let table = s["table"].as_str().unwrap();
    let first = json(api, &format!("/v1/tables/{table}/rounds/1"));
    let first_at = first["row"]["opened_at_ns"].as_i64();
    assert!(first_at < starts, "the table's second shift, not its first");
    // The finance report of that shift agrees, every line priced.
    let report = json(api, &format!("/v1/reports?shift={shift}&table={table}"));
    let g = &report["total"];
    assert_eq!(g["theoretical_pending"], false, "{g}");
    assert_eq!(g["hold_alarm"], true, "{g}");
    for k in ["actual_win", "theoretical_win", "handle_priced"] {
        assert_eq!(h[k], g[k], "{k}");
    }
    let (low, high) = (
        h["win_low"].as_i64().unwrap(),
        h["win_high"].as_i64().unwrap(),
    );
    let actual = h["actual_win"].as_i64().unwrap();
    let theoretical = h["theoretical_win"].as_i64().unwrap();
    assert!(low < theoretical && theoretical < high, "{h}");
    assert!(actual < low, "paid in the players' favour: {h}");
    assert_eq!(s["threshold_milli"], 3_291);
    (*s).clone()
}

#[test]
fn a_rigged_shift_is_alerted_once_and_not_after_a_restart_or_rebuild() {
    let mut bus = AlertBus::start();
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path());
    let (mut serve, log) = start(dir.path(), &bus.nats.url(), TOKEN, SETTINGS);
    let (api, _) = listening(&log);
    let listed = analytics_when_indexed(&api);
    let signals = listed["signals"].as_array().unwrap().clone();
    let hold = check_hold(&api, &signals);
    let mut alerts = Vec::new();
    wait_for("an alert for every signal", || {
        alerts.extend(bus.drain());
        (alerts.len() >= signals.len(), alerts.len())
    });
    assert!(serve.stop(), "serve stops cleanly");
    alerts.extend(bus.drain());
    each_once_in_round_order(&alerts, &signals);
    let held: Vec<_> = alerts
        .iter()
        .filter(|(s, _)| s.ends_with(".hold_outside"))
        .collect();
    assert_eq!(held.len(), 1, "{alerts:?}");
    let (subject, a) = held[0];
    assert_eq!(
        *subject,
        format!("alerts.{}.hold_outside", hold["table"].as_str().unwrap())
    );
    assert_eq!(a["signal"]["hold"], hold["hold"], "the shift's figures");

    // Restarted on the same read model: nothing new is judged, nothing sent.
    restarted_sends_nothing(dir.path(), &mut bus, &listed, "a restart");

    // Rebuilt offline: every shift judged again, the same signal, nothing sent.
    let ledger = dir.path().join("ledger");
    let rebuild = ["readmodel", "rebuild", "--ledger", ledger.to_str().unwrap()];
    for bad in ["0", "1000", "NaN"] {
        let out = roundledger(&[&rebuild[..], &["--decision-analytics", bad]].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("between 0 and 1000"),
            "{bad}: {err}"
        );
    }
    let out = roundledger(&[&rebuild[..], &["--decision-analytics", "1.0"]].concat());
    assert!(out.status.success(), "{out:?}");
    restarted_sends_nothing(dir.path(), &mut bus, &listed, "a rebuild");
}

/// Serve started again lists the same signals as `listed` and, once its publisher has
/// caught up, has sent nothing.
fn restarted_sends_nothing(dir: &Path, bus: &mut AlertBus, listed: &Value, after: &str) {
    let (mut serve, log) = start(dir, &bus.nats.url(), TOKEN, SETTINGS);
    let (api, _) = listening(&log);
    assert_eq!(analytics_when_indexed(&api)["signals"], listed["signals"]);
    wait_for("the publisher's catch-up", || (caught_up(&log), ()));
    assert!(serve.stop(), "serve stops cleanly");
    let again = bus.drain();
    assert!(again.is_empty(), "sent again after {after}: {again:?}");
}
