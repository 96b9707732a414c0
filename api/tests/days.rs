//! Sealed gaming days through the API: the list, one day with its seal, refusals of a
//! bad or unsealed day, every reader role, and the OpenAPI document naming both paths.

mod common;

use api::auth::{AccessConfig, TokenConfig};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use ledger::days::DayRule;
use schemas::api::Role;
use schemas::attest::SigningKey;
use schemas::codec::{self, WireFormat};
use schemas::{
    event_hash, Announcement, DeviceId, Event, EventBody, Seq, TableId, GENESIS, WIRE_VERSION,
};
use serde_json::Value;
use std::sync::Arc;
use tower::ServiceExt;

const TOKENS: [(&str, Role); 3] = [
    ("surveillance-token-000000000001", Role::Surveillance),
    ("finance-token-00000000000000001", Role::Finance),
    ("admin-token-000000000000000001", Role::Admin),
];
const DAYS: [&str; 2] = ["2026-11-24", "2026-11-25"];

fn access() -> AccessConfig {
    let tokens = TOKENS
        .iter()
        .map(|(token, role)| TokenConfig {
            name: format!("{role:?}"),
            role: *role,
            token: token.to_string(),
            token_hash: None,
        })
        .collect();
    AccessConfig {
        tokens,
        count_keys: vec![],
    }
}

/// One table with an event every hour over both days, both days sealed.
fn sealed_ledger(dir: &std::path::Path) -> ledger::Ledger {
    let l = ledger::Ledger::open(dir).unwrap();
    let rule = DayRule::new("06:00", "Asia/Singapore").unwrap();
    let from = rule.bounds(DAYS[0]).unwrap().starts_at_ns;
    let table = TableId::new("T-1").unwrap();
    let mut prev = GENESIS;
    for seq in 1..=48u64 {
        let at = from + (seq as i64 - 1) * 3_600_000_000_000;
        let e = Event {
            v: WIRE_VERSION,
            table: table.clone(),
            device: DeviceId::new("ctl-1").unwrap(),
            seq: Seq(seq),
            prev,
            occurred_at_ns: at,
            round: None,
            body: EventBody::Announced {
                announcement: Announcement::PlaceYourBets,
            },
        };
        let bytes = codec::encode(&e, WireFormat::Json);
        prev = event_hash(&prev, &bytes);
        let m = ledger::Incoming {
            bytes,
            subject_table: Some(table.clone()),
            stream_seq: seq,
            received_at_ns: at,
            provenance: Default::default(),
        };
        l.writer().append_batch(&[m]).unwrap();
    }
    let key = SigningKey::derive_for_simulation("house-seal");
    for day in DAYS {
        let end = rule.bounds(day).unwrap().ends_at_ns;
        l.writer().seal_day(&rule, day, &key, end).unwrap();
    }
    l
}

async fn get(app: &axum::Router, path: &str, token: &str) -> (StatusCode, Value) {
    let req = Request::get(path)
        .header("authorization", format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 24)
        .await
        .unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn readers_list_sealed_days_and_read_one_seal() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Arc::new(sealed_ledger(&dir.path().join("ledger")));
    let (_stop, rx) = tokio::sync::watch::channel(false);
    let state = api::AppState::new(
        ledger.clone(),
        &access(),
        &dir.path().join("api"),
        &dir.path().join("readmodel"),
        || 0,
        rx,
        api::FinanceSetup::default(),
    )
    .unwrap();
    let app = api::router(state);
    for (token, role) in TOKENS {
        let (s, page) = get(&app, "/v1/days", token).await;
        assert_eq!(s, StatusCode::OK, "{role:?} {page}");
        let days: Vec<&str> = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["day"].as_str().unwrap())
            .collect();
        assert_eq!(days, [DAYS[1], DAYS[0]], "newest first");
        assert_eq!(page["items"][0]["events"], 24);
    }
    let token = TOKENS[0].0;
    let (_, page) = get(&app, "/v1/days?before=2026-11-25&limit=1", token).await;
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    assert_eq!(page["items"][0]["day"], DAYS[0]);
    let (s, view) = get(&app, "/v1/days/2026-11-25", token).await;
    assert_eq!(s, StatusCode::OK, "{view}");
    let seal: schemas::seal::DaySeal = serde_json::from_value(view["seal"].clone()).unwrap();
    seal.verify(None).unwrap();
    assert_eq!(view["digest"], seal.digest().to_string());
    assert_eq!(seal.tables[0].first_seq, Seq(25));
    let (s, _) = get(&app, "/v1/days/2026-11-26", token).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    for bad in [
        "/v1/days/26-11-2026",
        "/v1/days?limit=0",
        "/v1/days?since=x",
    ] {
        let (s, body) = get(&app, bad, token).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{bad} {body}");
    }
    let doc = common::openapi(&app).await;
    assert!(doc["paths"]["/v1/days"]["get"].is_object());
    assert!(doc["paths"]["/v1/days/{day}"]["get"].is_object());
}
