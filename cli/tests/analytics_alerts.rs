//! Decision signals as bus alerts, end to end with real processes: `seed --hole-carder`
//! writes a table with a hole-carding box, `serve --decision-analytics` with ingest on a
//! real nats-server indexes it, and a subscriber on `alerts.>` gets each signal once, with
//! its rounds. A rebuilt read model judges the same rounds again and sends nothing; an
//! honest table sends nothing at all. `verify` passes on such a node, and a rebuild by
//! hand keeps its analytics setting. No signal is lost: signals indexed while no
//! publisher ran, or with no queue to the publisher, go out once from the read model.
//!
//! An error-prone dealer (`seed --error-prone-dealer`) goes out once as `dealer_errors`,
//! and not again after a rebuild. A rigged shift's `hold_outside` (`seed --hold-skew`) is
//! in `hold_alerts.rs`.
//!
//! Waits are bounded (`WAIT`); nothing here asserts on time.

mod common;

use common::alerts::{drain, each_once_in_round_order, matches_signal, said_published_before};
use common::roundledger;
use common::serve::{get, listening, start, wait_for};
use std::path::Path;

const ROUNDS: u64 = 600;
const TOKEN: &str = "signal-alerts-admin-token-0123456789ab";

/// Seeds `dir/ledger` with one CSP6 table of `ROUNDS` rounds, seed 7, and `extra` flags.
fn seed(dir: &Path, extra: &[&str]) {
    let ledger = dir.join("ledger");
    let rounds = ROUNDS.to_string();
    let mut args = vec!["seed", "--ledger", ledger.to_str().unwrap()];
    args.extend_from_slice(&[
        "--tables", "1", "--rounds", &rounds, "--seed", "7", "--close",
    ]);
    args.extend_from_slice(extra);
    assert!(roundledger(&args).status.success());
}

/// The signals `GET /v1/analytics` lists once every round is indexed.
fn signals_when_indexed(api: &str) -> Vec<serde_json::Value> {
    wait_for("every round indexed", || {
        let (_, body) = get(api, "/v1/rounds?limit=1", Some(TOKEN));
        let total = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["total"].as_u64());
        (total == Some(ROUNDS), body)
    });
    let (status, body) = get(api, "/v1/analytics", Some(TOKEN));
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["computed"], true, "{v}");
    v["signals"].as_array().unwrap().clone()
}

#[test]
fn each_signal_is_alerted_once_and_a_rebuild_sends_none_again() {
    let nats = natsd::NatsServer::start().expect("nats-server");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let client = rt
        .block_on(async_nats::connect(nats.url()))
        .expect("connect");
    let mut sub = rt
        .block_on(client.subscribe("alerts.>"))
        .expect("subscribe");
    rt.block_on(client.flush()).expect("flush");

    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &["--hole-carder", "1:3"]);
    let settings = "decision-analytics = 1.0\n";
    let (mut serve, log) = start(dir.path(), &nats.url(), TOKEN, settings);
    let (api, _) = listening(&log);
    let signals = signals_when_indexed(&api);
    assert!(
        signals.iter().any(|s| s["subject"] == "box 3"),
        "{signals:?}"
    );
    let mut alerts = Vec::new();
    wait_for("an alert for every signal", || {
        alerts.extend(rt.block_on(drain(&mut sub)));
        (alerts.len() >= signals.len(), alerts.len())
    });
    assert!(serve.stop(), "serve stops cleanly");
    alerts.extend(rt.block_on(drain(&mut sub)));
    assert_eq!(alerts.len(), signals.len(), "each signal once: {alerts:?}");
    for (subject, a) in &alerts {
        matches_signal(subject, a, &signals);
    }
    let hole = alerts
        .iter()
        .find(|(_, a)| a["signal"]["subject"] == "box 3");
    let (subject, hole) = hole.expect("box 3's alert");
    assert!(subject.ends_with(".hole_card_play"), "{subject}");
    assert_eq!(hole["signal"]["box_no"], 3);
    assert!(
        hole["signal"]["moved"].as_array().unwrap().len() > 1,
        "{hole}"
    );

    // The read model deleted: the restart judges every round again, and sends nothing.
    std::fs::remove_dir_all(dir.path().join("ledger").join("readmodel")).unwrap();
    let (mut serve, log) = start(dir.path(), &nats.url(), TOKEN, settings);
    let (api, _) = listening(&log);
    assert_eq!(
        signals_when_indexed(&api),
        signals,
        "the rebuild finds them again"
    );
    wait_for("the publisher sees them published before", || {
        (said_published_before(&log), ())
    });
    assert!(serve.stop(), "serve stops cleanly");
    let again = rt.block_on(drain(&mut sub));
    assert!(again.is_empty(), "sent again: {again:?}");
    rebuilt_by_hand_with_its_analytics(&dir.path().join("ledger"));
}

/// `verify` on a node that judged decisions passes: its check rebuilds with the same
/// setting. `readmodel rebuild` keeps the setting, and `verify` passes again.
fn rebuilt_by_hand_with_its_analytics(ledger: &Path) {
    let l = ledger.to_str().unwrap();
    let verified = |when: &str| {
        let v = roundledger(&["verify", "--ledger", l]);
        let out = String::from_utf8_lossy(&v.stdout).into_owned();
        let err = String::from_utf8_lossy(&v.stderr);
        assert!(v.status.success(), "{when}: {out}{err}");
        assert!(
            out.contains("read model: matches a fresh rebuild"),
            "{when}: {out}"
        );
    };
    verified("as serve left it");
    let r = roundledger(&["readmodel", "rebuild", "--ledger", l]);
    let out = String::from_utf8_lossy(&r.stdout).into_owned();
    assert!(r.status.success(), "{out}");
    assert!(
        out.contains("decision analytics on at 1 false alarms per 1,000 rounds"),
        "{out}"
    );
    verified("after readmodel rebuild");
}

#[test]
fn an_honest_table_sends_no_signal_alert() {
    let nats = natsd::NatsServer::start().expect("nats-server");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let client = rt
        .block_on(async_nats::connect(nats.url()))
        .expect("connect");
    let mut sub = rt
        .block_on(client.subscribe("alerts.>"))
        .expect("subscribe");
    rt.block_on(client.flush()).expect("flush");
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &[]);
    let (mut serve, log) = start(dir.path(), &nats.url(), TOKEN, "decision-analytics = 1.0\n");
    let (api, _) = listening(&log);
    assert_eq!(signals_when_indexed(&api), Vec::<serde_json::Value>::new());
    assert!(serve.stop(), "serve stops cleanly");
    let alerts = rt.block_on(drain(&mut sub));
    assert!(alerts.is_empty(), "{alerts:?}");
}

#[test]
fn signals_indexed_while_no_publisher_runs_go_out_once_it_starts() {
    let nats = natsd::NatsServer::start().expect("nats-server");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let client = rt
        .block_on(async_nats::connect(nats.url()))
        .expect("connect");
    let mut sub = rt
        .block_on(client.subscribe("alerts.>"))
        .expect("subscribe");
    rt.block_on(client.flush()).expect("flush");
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &["--hole-carder", "1:3"]);
    // Read-only: the rounds are indexed and their signals kept, with no publisher.
    let settings = "decision-analytics = 1.0\nno-ingest = true\n";
    let (mut serve, log) = start(dir.path(), &nats.url(), TOKEN, settings);
    let (api, _) = listening(&log);
    let signals = signals_when_indexed(&api);
    assert!(!signals.is_empty(), "the hole-carder is flagged");
    assert!(serve.stop(), "serve stops cleanly");
    assert!(rt.block_on(drain(&mut sub)).is_empty(), "no publisher ran");

    // With ingest: no pass has new signals, so only the catch-up can send them.
    let (mut serve, log) = start(dir.path(), &nats.url(), TOKEN, "decision-analytics = 1.0\n");
    let (api, _) = listening(&log);
    assert_eq!(signals_when_indexed(&api), signals);
    let mut alerts = Vec::new();
    wait_for("an alert for every signal", || {
        alerts.extend(rt.block_on(drain(&mut sub)));
        (alerts.len() >= signals.len(), alerts.len())
    });
    assert!(serve.stop(), "serve stops cleanly");
    alerts.extend(rt.block_on(drain(&mut sub)));
    each_once_in_round_order(&alerts, &signals);
}

#[test]
fn with_no_signal_queue_every_signal_goes_out_once_from_the_read_model() {
    let nats = natsd::NatsServer::start().expect("nats-server");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let client = rt
        .block_on(async_nats::connect(nats.url()))
        .expect("connect");
    let mut sub = rt
        .block_on(client.subscribe("alerts.>"))
        .expect("subscribe");
    rt.block_on(client.flush()).expect("flush");
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), &["--hole-carder", "1:3"]);
    // Every pass overflows a queue of none: each signal must come from the read model.
    let settings = "decision-analytics = 1.0\nsignal-queue-len = 0\n";
    let (mut serve, log) = start(dir.path(), &nats.url(), TOKEN, settings);
    let (api, _) = listening(&log);
    let signals = signals_when_indexed(&api);
    assert!(!signals.is_empty(), "the hole-carder is flagged");
    let mut alerts = Vec::new();
    wait_for("an alert for every signal", || {
        alerts.extend(rt.block_on(drain(&mut sub)));
        (alerts.len() >= signals.len(), alerts.len())
    });
    assert!(serve.stop(), "serve stops cleanly");
    alerts.extend(rt.block_on(drain(&mut sub)));
    each_once_in_round_order(&alerts, &signals);
}

#[test]
fn an_error_prone_dealer_is_alerted_once_and_not_after_a_rebuild() {
    let nats = natsd::NatsServer::start().expect("nats-server");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let client = rt
        .block_on(async_nats::connect(nats.url()))
        .expect("connect");
    let mut sub = rt
        .block_on(client.subscribe("alerts.>"))
        .expect("subscribe");
    rt.block_on(client.flush()).expect("flush");
    let dir = tempfile::tempdir().unwrap();
    let prone = [
        "--error-prone-dealer",
        "1:1:0.15",
        "--payout-errors",
        "0.01",
    ];
    seed(dir.path(), &prone);
    let settings = "decision-analytics = 1.0\n";
    let (mut serve, log) = start(dir.path(), &nats.url(), TOKEN, settings);
    let (api, _) = listening(&log);
    let signals = signals_when_indexed(&api);
    let dealer: Vec<_> = signals
        .iter()
        .filter(|s| s["kind"] == "dealer_errors")
        .collect();
    assert_eq!(dealer.len(), 1, "{signals:?}");
    let links = dealer[0]["round_links"].as_array().unwrap();
    assert!(links.len() > 1, "the crossing round and disputed rounds");
    let mut alerts = Vec::new();
    wait_for("an alert for every signal", || {
        alerts.extend(rt.block_on(drain(&mut sub)));
        (alerts.len() >= signals.len(), alerts.len())
    });
    assert!(serve.stop(), "serve stops cleanly");
    alerts.extend(rt.block_on(drain(&mut sub)));
    each_once_in_round_order(&alerts, &signals);
    let (subject, a) = alerts
        .iter()
        .find(|(_, a)| a["kind"] == "dealer_errors")
        .expect("the dealer's alert");
    assert!(subject.ends_with(".dealer_errors"), "{subject}");
    assert_eq!(a["signal"]["dealer"], dealer[0]["dealer"]);

    // A rebuilt read model raises it again and sends nothing.
    std::fs::remove_dir_all(dir.path().join("ledger").join("readmodel")).unwrap();
    let (mut serve, log) = start(dir.path(), &nats.url(), TOKEN, settings);
    let (api, _) = listening(&log);
    assert_eq!(
        signals_when_indexed(&api),
        signals,
        "the rebuild finds it again"
    );
    wait_for("the publisher sees them published before", || {
        (said_published_before(&log), ())
    });
    assert!(serve.stop(), "serve stops cleanly");
    let again = rt.block_on(drain(&mut sub));
    assert!(again.is_empty(), "sent again: {again:?}");
    rebuilt_by_hand_with_its_analytics(&dir.path().join("ledger"));
}
