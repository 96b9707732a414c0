//! `GET /v1/analytics` end to end: `seed --hole-carder` writes a simulated table with a
//! hole-carding box into a real ledger, `serve --decision-analytics` indexes it, and the API
//! lists the box's signal with links to its rounds. The same table played honestly lists
//! none; a server with the analytics off says they are not computed.

mod common;

use common::roundledger;
use common::serve::{get, listening, start, wait_for};
use std::path::Path;

const ROUNDS: u64 = 600;
const TOKEN: &str = "analytics-admin-token-0123456789abcdef";

/// Seeds `dir/ledger` with one CSP6 table of `ROUNDS` rounds, seed 7, and `extra` flags.
fn seed(dir: &Path, extra: &[&str]) {
    let ledger = dir.join("ledger");
    let rounds = ROUNDS.to_string();
    let mut args = vec![
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
    ];
    args.extend_from_slice(extra);
    assert!(roundledger(&args).status.success());
}

/// Serves `dir/ledger` read-only with `extra` settings; the analytics once every round is
/// indexed.
fn analytics_when_indexed(dir: &Path, extra: &str) -> serde_json::Value {
    let settings = format!("no-ingest = true\n{extra}");
    let (mut serve, log) = start(dir, "nats://127.0.0.1:1", TOKEN, &settings);
    let (api, _) = listening(&log);
    wait_for("every round indexed", || {
        let (_, body) = get(&api, "/v1/rounds?limit=1", Some(TOKEN));
        let total = serde_json::from_str::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v["total"].as_u64());
        (total == Some(ROUNDS), body)
    });
    let (status, body) = get(&api, "/v1/analytics", Some(TOKEN));
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    filters_narrow(&api, &v);
    assert!(serve.stop(), "serve stops cleanly");
    v
}

/// The filters narrow the list the server gave (`all`); an unknown kind is a 400.
fn filters_narrow(api: &str, all: &serde_json::Value) {
    let list = |q: &str| {
        let (status, body) = get(api, &format!("/v1/analytics?{q}"), Some(TOKEN));
        (
            status,
            serde_json::from_str::<serde_json::Value>(&body).unwrap(),
        )
    };
    let (status, v) = list("kind=hole_carding");
    assert_eq!(status, 400, "{v}");
    let (_, v) = list("kind=card_sharing");
    let all_signals = all["signals"].as_array().unwrap();
    let sharing = all_signals.iter().filter(|s| s["kind"] == "card_sharing");
    assert_eq!(
        v["signals"].as_array().unwrap().len(),
        sharing.count(),
        "{v}"
    );
    let (_, v) = list("kind=dealer_errors");
    let dealer = all_signals.iter().filter(|s| s["kind"] == "dealer_errors");
    let listed = v["signals"].as_array().unwrap();
    assert_eq!(listed.len(), dealer.count(), "{v}");
    assert!(listed.iter().all(|s| s["kind"] == "dealer_errors"), "{v}");
    let (_, v) = list("table=TCP3-09");
    assert_eq!(v["signals"], serde_json::json!([]), "another table: {v}");
}

#[test]
fn a_hole_carder_is_listed_with_its_rounds_and_an_honest_table_is_not() {
    let cheat = tempfile::tempdir().unwrap();
    seed(cheat.path(), &["--hole-carder", "1:3"]);
    let v = analytics_when_indexed(cheat.path(), "decision-analytics = 1.0\n");
    assert_eq!(v["computed"], true, "{v}");
    assert_eq!(v["false_alarms_milli_per_1000_rounds"], 1000, "{v}");
    let signals = v["signals"].as_array().unwrap();
    let boxed: Vec<_> = signals
        .iter()
        .filter(|s| s["kind"] == "hole_card_play" && s["subject"] == "box 3")
        .collect();
    assert!(!boxed.is_empty(), "no box 3 signal: {v}");
    let s = boxed[0];
    assert!(s["statistic_milli"].as_i64() >= s["threshold_milli"].as_i64());
    let table = s["table"].as_str().unwrap();
    let links = s["round_links"].as_array().unwrap();
    assert_eq!(
        links[0],
        format!("/v1/tables/{table}/rounds/{}", s["round"]),
        "{s}"
    );
    assert!(links.len() > 1, "the rounds that moved it: {s}");
    // No other box is flagged.
    assert!(signals
        .iter()
        .filter(|s| s["subject"].as_str().unwrap().starts_with("box "))
        .all(|s| s["subject"] == "box 3"));

    let clean = tempfile::tempdir().unwrap();
    seed(clean.path(), &[]);
    let v = analytics_when_indexed(clean.path(), "decision-analytics = 1.0\n");
    assert_eq!(v["computed"], true, "{v}");
    assert_eq!(v["signals"], serde_json::json!([]), "{v}");
    // The same model served with the analytics off: not computed, not "none".
    let v = analytics_when_indexed(clean.path(), "");
    assert_eq!(v["computed"], false, "{v}");
    assert!(v["not_computed_reason"].as_str().unwrap().contains("off"));
}

/// The dealers of an answer by id: (rounds, payout error lines, rate, floor median).
fn dealer_rates(v: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
    let mut out: Vec<_> = v["dealers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["dealer"].as_str().unwrap().to_owned(), d.clone()))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn an_error_prone_dealer_pays_wrongly_above_the_floor_median_after_a_rebuild_too() {
    let dir = tempfile::tempdir().unwrap();
    // Roster place 0 (the first to deal) pays wrongly in a quarter of its rounds.
    seed(dir.path(), &["--error-prone-dealer", "1:0:0.25"]);
    let v = analytics_when_indexed(dir.path(), "");
    let dealers = dealer_rates(&v);
    assert!(dealers.len() >= 2, "a roster of dealers: {v}");
    assert_eq!(v["dealers_total"], dealers.len(), "{v}");
    assert_eq!(v["dealers_truncated"], false, "{v}");
    let first = dealers
        .iter()
        .min_by_key(|(_, d)| d["first_opened_at_ns"].as_i64().unwrap())
        .unwrap();
    let rate = &first.1["payout_errors"];
    let (own, median) = (
        rate["milli_per_1000_rounds"].as_u64(),
        rate["floor_median_milli_per_1000_rounds"].as_u64(),
    );
    assert!(
        own.is_some() && median.is_some(),
        "enough rounds: {}",
        first.1
    );
    assert!(own > median, "{} above the floor: {v}", first.0);
    let rounds: u64 = dealers
        .iter()
        .map(|(_, d)| d["rounds"].as_u64().unwrap())
        .sum();
    assert_eq!(rounds, ROUNDS, "each round counted once, for its dealer");
    // Rounds per hour from each dealer's stints: 20-minute turns in a roster of four.
    let medians: Vec<_> = dealers
        .iter()
        .map(|(_, d)| &d["pace"]["floor_median_milli"])
        .collect();
    assert!(medians.windows(2).all(|m| m[0] == m[1]), "{v}");
    for (name, d) in &dealers {
        let pace = &d["pace"];
        assert!(d["stints"].as_u64().unwrap() >= 1, "{name}: {d}");
        match pace["rounds_per_hour_milli"].as_u64() {
            Some(r) => assert!((10_000..300_000).contains(&r), "{name}: {d}"),
            None => assert!(pace["null_reason"].as_str().unwrap().contains("minutes")),
        }
    }
    // The model rebuilt from the ledger gives the same dealer rows.
    let ledger = dir.path().join("ledger");
    let out = roundledger(&["readmodel", "rebuild", "--ledger", ledger.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let again = analytics_when_indexed(dir.path(), "");
    assert_eq!(dealer_rates(&again), dealers);
}
