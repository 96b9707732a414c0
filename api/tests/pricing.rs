//! The pricing worker (`api::run_pricer`) through the API: a TCP3 table whose Pair Plus
//! table is configured reports "theoretical pending" after indexing, then its own edge
//! once the worker has priced it in the background. Real ledger and read model.

use api::auth::{AccessConfig, TokenConfig};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use schemas::api::Role;
use schemas::codec::{self, WireFormat};
use schemas::{
    Event, EventBody, HandClass, Hash32, PayRow, PayTable, PayTableName, Pays, Seq, GENESIS,
};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tower::ServiceExt;

const FIN: &str = "finance-token-00000000000000001";
/// The golden round's gaming day (06:00 UTC days): it opens at 2026-05-28 20:26 UTC.
const REPORT: &str = "/v1/reports?day=2026-05-28&group_by=table";
/// Longest the test waits for the worker (an exact count of 22,100 hands).
const PRICED_WITHIN: Duration = Duration::from_secs(120);

fn access() -> AccessConfig {
    AccessConfig {
        tokens: vec![TokenConfig {
            name: "fiona.finance".into(),
            role: Role::Finance,
            token: FIN.into(),
            token_hash: None,
        }],
        count_keys: Vec::new(),
    }
}

/// Pair Plus paying a straight 6 to 1 where the seed pays 5 to 1 (TCP3 §4.2).
fn generous_pair_plus() -> PayTable {
    use HandClass::*;
    let rows = [
        (StraightFlush, 40),
        (ThreeOfAKind, 30),
        (Straight, 6),
        (Flush, 4),
        (OnePair, 1),
    ];
    PayTable {
        name: PayTableName::PairPlus,
        rows: rows
            .iter()
            .map(|&(hand, x)| PayRow {
                hand,
                pays: Pays::ToOne(x),
                envy: None,
            })
            .collect(),
    }
}

/// The replayer's golden TCP3 round, its table opened under the generous Pair Plus
/// table, re-chained and closed.
fn ledger(dir: &std::path::Path) -> ledger::Ledger {
    let path = format!(
        "{}/../replayer/tests/golden/clean_tcp3_fold_and_pair_plus_only.events.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut events: Vec<Event> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    if let EventBody::TableOpened { config } = &mut events[0].body {
        config.pay_tables = vec![generous_pair_plus()];
    }
    let mut closed = events.last().unwrap().clone();
    closed.round = None;
    closed.occurred_at_ns += 1_000_000_000;
    closed.body = EventBody::TableClosed;
    events.push(closed);
    let l = ledger::Ledger::open(dir).unwrap();
    let mut prev: Hash32 = GENESIS;
    let mut batch = Vec::new();
    for (i, mut e) in events.into_iter().enumerate() {
        e.seq = Seq(i as u64 + 1);
        e.prev = prev;
        let bytes = codec::encode(&e, WireFormat::Bincode);
        prev = schemas::chain::event_hash(&prev, &bytes);
        batch.push(ledger::Incoming {
            bytes,
            subject_table: Some(e.table.clone()),
            stream_seq: i as u64 + 1,
            received_at_ns: e.occurred_at_ns,
            provenance: Default::default(),
        });
    }
    l.writer().append_batch(&batch).unwrap();
    l
}

async fn report(app: &axum::Router) -> Value {
    let req = Request::builder()
        .uri(REPORT)
        .header("authorization", format!("Bearer {FIN}"))
        .body(Body::empty())
        .unwrap();
    let res = app.clone().oneshot(req).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 24)
        .await
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn pair_plus(r: &Value) -> &Value {
    let lines = r["groups"][0]["handle"].as_array().unwrap();
    lines.iter().find(|l| l["line"] == "pair_plus").unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_prices_a_configured_pay_table_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Arc::new(ledger(&dir.path().join("ledger")));
    let (stop, rx) = tokio::sync::watch::channel(false);
    let state = api::AppState::new(
        ledger,
        &access(),
        &dir.path().join("api"),
        &dir.path().join("readmodel"),
        // 2026-05-28 20:26 UTC: the reported day has begun (a future day is refused).
        || 1_780_000_000_000_000_000,
        rx.clone(),
        api::FinanceSetup::default(),
    )
    .unwrap();
    let s = state.clone();
    tokio::task::spawn_blocking(move || s.index_all())
        .await
        .unwrap()
        .unwrap();
    let app = api::router(state.clone());
    let before = report(&app).await;
    assert_eq!(before["groups"][0]["key"], "T-34");
    assert_eq!(pair_plus(&before)["theoretical_pending"], true);
    assert_eq!(pair_plus(&before)["edge_ppm"], Value::Null);
    assert_eq!(before["total"]["theoretical_pending"], true);
    assert_eq!(before["total"]["hold_alarm"], false);
    let worker = tokio::spawn(api::run_pricer(state.clone(), rx));
    let started = Instant::now();
    let after = loop {
        let r = report(&app).await;
        if r["total"]["theoretical_pending"] == false {
            break r;
        }
        assert!(started.elapsed() < PRICED_WITHIN, "not priced: {r}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // 2.317%: the exact count of readside's dealers.rs.
    assert_eq!(pair_plus(&after)["edge_ppm"], 23_167);
    assert_eq!(pair_plus(&after)["theoretical_pending"], false);
    stop.send(true).unwrap();
    worker.await.unwrap();
}
