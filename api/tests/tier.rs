//! Rounds of an archived and of a removed gaming day through the API, in process, over a
//! real sled ledger the simulator's tables fill. An archived day answers exactly as it did
//! hot: the round, its steps, its evidence bundle (which verifies) and the day's search.
//! A day removed by retention answers 410 Gone with an `ApiError`, never a 500.

mod common;

use axum::http::StatusCode;
use ledger::tier::retention::Removal;
use schemas::api::ApiError;
use serde_json::Value;
use std::sync::Arc;

const SURV: &str = "surveillance-token-000000000001";
use common::{tier_rule as rule, TIER_DAYS as DAYS};
const DAY_NS: i64 = 86_400 * 1_000_000_000;

/// Two tables, both days sealed (`common::seed_two_days`).
fn seed(ledger: &ledger::Ledger, rounds: u64) {
    common::seed_two_days(ledger, rounds, simulator::FaultPlan::all(0.05));
}

/// What a reader sees of round `round` of `table` and of the day's search, each 200.
async fn get(app: &axum::Router, path: &str) -> (StatusCode, Vec<u8>) {
    common::get_bytes(app, path, SURV).await
}

async fn readings(app: &axum::Router, table: &str, round: u64) -> Vec<Vec<u8>> {
    let paths = [
        format!("/v1/tables/{table}/rounds/{round}"),
        format!("/v1/tables/{table}/rounds/{round}/steps"),
        format!("/v1/tables/{table}/rounds/{round}/steps/2"),
        format!("/v1/evidence/{table}/{round}"),
        format!("/v1/rounds?day={}&limit=500", DAYS[0]),
    ];
    let mut out = Vec::new();
    for path in &paths {
        let (s, body) = get(app, path).await;
        assert_eq!(
            s,
            StatusCode::OK,
            "{path}: {}",
            String::from_utf8_lossy(&body)
        );
        out.push(body);
    }
    let bundle: proofs::bundle::EvidenceBundle = serde_json::from_slice(&out[3]).unwrap();
    proofs::bundle::verify_chain(&bundle, &[simulator::admin_key().public()]).unwrap();
    readside::evidence::verify(&bundle, &[]).unwrap();
    let mut v: Value = serde_json::from_slice(&out[3]).unwrap();
    v["exported_at_ns"] = Value::Null;
    out[3] = v.to_string().into_bytes();
    let page: Value = serde_json::from_slice(&out[4]).unwrap();
    assert!(page["total"].as_u64().unwrap() >= 2, "{page}");
    out
}

#[tokio::test]
async fn archived_rounds_read_as_before_and_removed_ones_are_gone() {
    if ledger::store::choice::skip_unless_sled("the archive tier is SledStore's (redb has no tier)")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ledger = Arc::new(ledger::Ledger::open(dir.path().join("ledger")).unwrap());
    seed(&ledger, 30);
    let access = common::surveillance_access(SURV);
    let (app, _stop) = common::indexed_router(ledger.clone(), &access, dir.path(), "api", rule());
    let table = ledger.reader().tables()[0].to_string();
    let before = readings(&app, &table, 2).await;
    // A round of the next day, whose table opened in the removed one.
    let later = format!("/v1/tables/{table}/rounds/28");
    let (_, later_before) = get(&app, &later).await;
    let row: Value = serde_json::from_slice(&later_before).unwrap();
    assert!(!row["row"]["rule_set"].is_null(), "{row}");
    let later_bundle = format!("/v1/evidence/{table}/28");
    let (_, bundle_before) = get(&app, &later_bundle).await;

    let (entry, plan) = ledger.tier().archive_move(DAYS[0]).unwrap();
    assert!(
        entry.events > 20 && plan.straddling > 0,
        "{entry:?} {plan:?}"
    );
    let after = readings(&app, &table, 2).await;
    for (n, (a, b)) in after.iter().zip(&before).enumerate() {
        assert!(a == b, "reading {n} differs after the move");
    }

    let now = rule().bounds(DAYS[0]).unwrap().ends_at_ns + 2 * DAY_NS;
    let act = Removal::sign(&entry, 1, &simulator::admin_key(), now);
    ledger.tier().retention_remove(&act, now).unwrap();
    for path in [
        format!("/v1/tables/{table}/rounds/2"),
        format!("/v1/tables/{table}/rounds/2/steps"),
        format!("/v1/evidence/{table}/2"),
    ] {
        let (s, body) = get(&app, &path).await;
        let text = String::from_utf8_lossy(&body);
        assert_eq!(s, StatusCode::GONE, "{path}: {text}");
        let e: ApiError = serde_json::from_slice(&body).unwrap();
        assert!(
            e.error.contains("removed by retention"),
            "{path}: {}",
            e.error
        );
    }
    assert!(
        ledger.reader().fenced().is_empty(),
        "{:?}",
        ledger.reader().fenced()
    );
    // The removal kept the config in force: the later round reads as before.
    let (s, body) = get(&app, &later).await;
    assert_eq!(s, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert!(body == later_before, "round 28 differs after the removal");
    // No checkpoint signs this table: its bundle chains from seq 1, which is gone.
    let (s, body) = get(&app, &later_bundle).await;
    assert_eq!(s, StatusCode::GONE, "{}", String::from_utf8_lossy(&body));
    assert!(!bundle_before.is_empty());
    // A read model built after the removal goes on from the sealed heads.
    let (fresh, _stop2) =
        common::indexed_router(ledger.clone(), &access, dir.path(), "api2", rule());
    assert!(
        ledger.reader().fenced().is_empty(),
        "{:?}",
        ledger.reader().fenced()
    );
    let (s, body) = get(&fresh, &format!("/v1/rounds?day={}&limit=500", DAYS[1])).await;
    assert_eq!(s, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let (s, body) = get(&fresh, &later).await;
    assert_eq!(s, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let (a, b): (Value, Value) = (
        serde_json::from_slice(&body).unwrap(),
        serde_json::from_slice(&later_before).unwrap(),
    );
    assert_eq!(a, b, "round 28 from a model built after the removal");
    let (s, body) = get(&fresh, &format!("/v1/tables/{table}/rounds/2")).await;
    assert_eq!(s, StatusCode::GONE, "{}", String::from_utf8_lossy(&body));
    let doc = common::openapi(&app).await;
    let detail = &doc["paths"]["/v1/tables/{table}/rounds/{round}"]["get"]["responses"];
    let gone = detail["410"]["description"].as_str().unwrap_or_default();
    assert!(gone.contains("removed by retention"), "{detail}");
}
