//! Test setup shared by the API's integration tests. Each test binary uses part of it.
#![allow(dead_code)]

/// Two simulated tables from `start_ns`, `rounds` rounds each under `plan`, appended to
/// `ledger` as ingest would (`chunk` messages a call) and flushed. The simulator's admin
/// key is trusted first, so its enrollments take effect.
pub fn play_floor(
    ledger: &ledger::Ledger,
    plan: simulator::FaultPlan,
    start_ns: i64,
    rounds: u64,
    chunk: usize,
) {
    ledger
        .writer()
        .trust_admin_keys([simulator::admin_key().public()])
        .unwrap();
    let mut floor = simulator::Floor::new(2, 30, plan)
        .unwrap()
        .starting_at(start_ns);
    let mut events = Vec::new();
    for t in floor.tables.iter_mut() {
        events.extend(t.opening_events().unwrap());
        for _ in 0..rounds {
            events.extend(t.play_round().unwrap().events);
        }
        events.extend(t.closing_events().unwrap());
    }
    let batch: Vec<ledger::Incoming> = events
        .iter()
        .enumerate()
        .map(|(i, p)| ledger::Incoming {
            subject_table: Some(p.event.table.clone()),
            stream_seq: i as u64 + 1,
            received_at_ns: p.event.occurred_at_ns,
            bytes: p.bytes.clone(),
            provenance: Default::default(),
        })
        .collect();
    for part in batch.chunks(chunk) {
        ledger.writer().append_batch(part).unwrap();
    }
    ledger.flush().unwrap();
}

/// An access file with one surveillance token.
pub fn surveillance_access(token: &str) -> api::auth::AccessConfig {
    api::auth::AccessConfig {
        tokens: vec![api::auth::TokenConfig {
            name: "sam.surveillance".into(),
            role: schemas::api::Role::Surveillance,
            token: token.into(),
            token_hash: None,
        }],
        count_keys: vec![],
    }
}

/// The API's router over `ledger`, its journals and read model in `dir/<name>` and
/// `dir/<name>-model`, every table indexed. Keep the sender: dropping it stops the tasks.
pub fn indexed_router(
    ledger: std::sync::Arc<ledger::Ledger>,
    access: &api::auth::AccessConfig,
    dir: &std::path::Path,
    name: &str,
    rule: ledger::days::DayRule,
) -> (axum::Router, tokio::sync::watch::Sender<bool>) {
    let (stop, rx) = tokio::sync::watch::channel(false);
    let state = api::AppState::new(
        ledger,
        access,
        &dir.join(name),
        &dir.join(format!("{name}-model")),
        || 1_780_000_000_000_000_000,
        rx,
        api::FinanceSetup {
            rule,
            pits: Vec::new(),
        },
    )
    .unwrap();
    state.index_all().unwrap();
    (api::router(state), stop)
}

/// GET `path` with `token`: the status and the body's bytes.
pub async fn get_bytes(
    app: &axum::Router,
    path: &str,
    token: &str,
) -> (axum::http::StatusCode, Vec<u8>) {
    use tower::ServiceExt;
    let req = axum::http::Request::get(path)
        .header("authorization", format!("Bearer {token}"))
        .body(axum::body::Body::empty())
        .unwrap();
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let body = axum::body::to_bytes(res.into_body(), 1 << 26)
        .await
        .unwrap();
    (status, body.to_vec())
}

/// The two gaming days the archive tests seal: 06:00 to 06:00 UTC.
pub const TIER_DAYS: [&str; 2] = ["2026-11-24", "2026-11-25"];

/// The archive tests' gaming day rule.
pub fn tier_rule() -> ledger::days::DayRule {
    ledger::days::DayRule::new("06:00", "UTC").unwrap()
}

/// Two tables playing `rounds` rounds each from ten minutes before the first day's end,
/// appended as ingest would, with `faults`; both `TIER_DAYS` sealed.
pub fn seed_two_days(ledger: &ledger::Ledger, rounds: u64, faults: simulator::FaultPlan) {
    let rule = tier_rule();
    let start = rule.bounds(TIER_DAYS[0]).unwrap().ends_at_ns - 600_000_000_000;
    play_floor(ledger, faults, start, rounds, 64);
    let key = schemas::attest::SigningKey::derive_for_simulation("house-seal");
    for day in TIER_DAYS {
        let end = rule.bounds(day).unwrap().ends_at_ns;
        ledger.writer().seal_day(&rule, day, &key, end).unwrap();
    }
}

/// The server's OpenAPI document (open to all), parsed.
pub async fn openapi(app: &axum::Router) -> serde_json::Value {
    let (status, body) = get_bytes(app, "/openapi.json", "").await;
    assert_eq!(status, axum::http::StatusCode::OK);
    serde_json::from_slice(&body).unwrap()
}
