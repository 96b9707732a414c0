//! The count room's results through the API: a trusted counter's signed count is journaled
//! and listed; a forged, untrusted, malformed or unknown-table count is refused; a recount
//! stands over the first; a restart reads the same book; only finance and admin may use it.

use api::auth::{AccessConfig, CountKeyConfig, TokenConfig};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use schemas::api::Role;
use schemas::attest::SigningKey;
use schemas::codec::{self, WireFormat};
use schemas::count::{CountResult, SignedCount};
use schemas::{DeviceId, Event, EventBody, Money, Seq, TableId, GENESIS};
use serde_json::Value;
use std::sync::Arc;
use tower::ServiceExt;

const FIN: &str = "finance-token-00000000000000001";
const SURV: &str = "surveillance-token-000000000001";

fn counter() -> SigningKey {
    SigningKey::from_secret([5; 32])
}

fn access() -> AccessConfig {
    let t = |name: &str, role, token: &str| TokenConfig {
        name: name.into(),
        role,
        token: token.into(),
        token_hash: None,
    };
    AccessConfig {
        tokens: vec![
            t("fiona.finance", Role::Finance, FIN),
            t("sam.surveillance", Role::Surveillance, SURV),
        ],
        count_keys: vec![CountKeyConfig {
            name: "count team B".into(),
            key: counter().public().to_hex(),
        }],
    }
}

/// A ledger holding one event of table T-1: its box `T-1/2026-11-25/1` removed at 1,000 ns.
fn ledger(dir: &std::path::Path) -> ledger::Ledger {
    let l = ledger::Ledger::open(dir).unwrap();
    append_box_removal(&l, "T-1", 1_000);
    l
}

/// Appends seq 1 of `table`: its box `<table>/2026-11-25/1` removed at `at_ns`.
fn append_box_removal(l: &ledger::Ledger, table: &str, at_ns: i64) {
    let table = TableId::new(table).unwrap();
    let e = Event {
        v: schemas::WIRE_VERSION,
        table: table.clone(),
        device: DeviceId::new("ctl-1").unwrap(),
        seq: Seq(1),
        prev: GENESIS,
        occurred_at_ns: at_ns,
        round: None,
        body: EventBody::Finance {
            entry: schemas::Finance::DropBoxRemoved {
                drop_box_id: format!("{table}/2026-11-25/1"),
            },
        },
    };
    let bytes = codec::encode(&e, WireFormat::Json);
    let m = ledger::Incoming {
        bytes,
        subject_table: Some(table),
        stream_seq: l.reader().stats().events + 1,
        received_at_ns: at_ns,
        provenance: Default::default(),
    };
    l.writer().append_batch(&[m]).unwrap();
}

fn count(table: &str, cash: i64) -> CountResult {
    CountResult {
        table: TableId::new(table).unwrap(),
        drop_box_id: format!("{table}/2026-11-25/1"),
        cash: Money(cash),
        markers: Money(20_000),
        counted_at_ns: 2_000,
        counted_by: "count team B".into(),
    }
}

async fn call(
    app: &axum::Router,
    method: &str,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .body(body.map_or(Body::empty(), |b| Body::from(b.to_string())))
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

fn app(dir: &std::path::Path, ledger: Arc<ledger::Ledger>) -> axum::Router {
    app_indexed(dir, ledger, true)
}

/// The app over `ledger`; its read model indexed first, or not at all.
fn app_indexed(dir: &std::path::Path, ledger: Arc<ledger::Ledger>, index: bool) -> axum::Router {
    app_at(dir, ledger, index, || 7)
}

/// `app_indexed` with its clock at `now`.
fn app_at(
    dir: &std::path::Path,
    ledger: Arc<ledger::Ledger>,
    index: bool,
    now: fn() -> i64,
) -> axum::Router {
    let (_stop, rx) = tokio::sync::watch::channel(false);
    let state = api::AppState::new(
        ledger,
        &access(),
        &dir.join("api"),
        &dir.join("readmodel"),
        now,
        rx,
        api::FinanceSetup::default(),
    )
    .unwrap();
    if index {
        state.index_all().unwrap();
    }
    api::router(state)
}

fn signed(c: CountResult, key: &SigningKey) -> Value {
    serde_json::to_value(SignedCount::sign(key, c, 3_000).unwrap()).unwrap()
}

#[tokio::test]
async fn finance_enters_a_signed_count_and_forged_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let l = Arc::new(ledger(&dir.path().join("ledger")));
    let app = app(dir.path(), l.clone());
    let body = signed(count("T-1", 150_000), &counter());
    let (s, e) = call(&app, "POST", "/v1/counts", FIN, Some(body.clone())).await;
    assert_eq!(s, StatusCode::CREATED, "{e}");
    assert_eq!(
        (e["n"].as_u64(), e["entered_by"].as_str()),
        (Some(1), Some("fiona.finance"))
    );
    let (s, _) = call(&app, "POST", "/v1/counts", SURV, Some(body.clone())).await;
    assert_eq!(
        s,
        StatusCode::FORBIDDEN,
        "surveillance may not enter counts"
    );
    let mut forged = body.clone();
    forged["count"]["cash"] = Value::from(1);
    let (s, e) = call(&app, "POST", "/v1/counts", FIN, Some(forged)).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{e}");
    assert!(e["error"].as_str().unwrap().contains("signature"), "{e}");
    let stranger = signed(count("T-1", 150_000), &SigningKey::from_secret([6; 32]));
    let (s, _) = call(&app, "POST", "/v1/counts", FIN, Some(stranger)).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let unknown = signed(count("T-9", 150_000), &counter());
    let (s, _) = call(&app, "POST", "/v1/counts", FIN, Some(unknown)).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let mut extra = body.clone();
    extra["note"] = Value::from("x");
    let (s, _) = call(&app, "POST", "/v1/counts", FIN, Some(extra)).await;
    assert!(s.is_client_error(), "an unknown field is refused: {s}");
    let recount = signed(count("T-1", 149_000), &counter());
    let (s, _) = call(&app, "POST", "/v1/counts", FIN, Some(recount)).await;
    assert_eq!(s, StatusCode::CREATED);
    let (s, list) = call(&app, "GET", "/v1/counts?table=T-1", FIN, None).await;
    assert_eq!(s, StatusCode::OK, "{list}");
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 1, "one box, its recount stands");
    assert_eq!(list[0]["signed"]["count"]["cash"], 149_000);
    let (s, _) = call(&app, "GET", "/v1/counts?sort=x", FIN, None).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    // Refused, naming the rule, and nothing kept: another table's box, a box never
    // removed, a count before the removal, a count in the future.
    let mut wrong = Vec::new();
    let mut other_box = count("T-1", 1);
    other_box.drop_box_id = "T-9/2026-11-25/1".into();
    wrong.push((other_box, "box-not-on-table"));
    let mut early = count("T-1", 1);
    early.counted_at_ns = 500;
    wrong.push((early, "count-before-removal"));
    let mut future = count("T-1", 1);
    future.counted_at_ns = 1_893_456_000_000_000_000;
    wrong.push((future, "count-in-future"));
    for (c, rule) in wrong {
        let (s, e) = call(&app, "POST", "/v1/counts", FIN, Some(signed(c, &counter()))).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{rule}: {e}");
        assert!(e["error"].as_str().unwrap().starts_with(rule), "{e}");
    }
    let (_, after) = call(&app, "GET", "/v1/counts?table=T-1", FIN, None).await;
    assert_eq!(
        after.as_array().unwrap(),
        list,
        "the standing count unchanged"
    );
    drop(app);
    let book = readside::counts::CountBook::read(&dir.path().join("api")).unwrap();
    assert_eq!(book.len(), 2, "both counts journaled, read back offline");
    let (standing, counts) = book
        .standing(&TableId::new("T-1").unwrap(), "T-1/2026-11-25/1")
        .unwrap();
    assert_eq!((standing.signed.count.cash, counts), (Money(149_000), 2));
    // The recount is kept beside the count it follows, each with its signer.
    let history = book.history(&TableId::new("T-1").unwrap(), "T-1/2026-11-25/1");
    let cash: Vec<i64> = history.iter().map(|e| e.signed.count.cash.0).collect();
    assert_eq!(cash, [150_000, 149_000]);
    assert!(history
        .iter()
        .all(|e| e.signed.signer == counter().public()));
}

#[tokio::test]
async fn an_altered_counts_journal_is_refused_at_read() {
    let dir = tempfile::tempdir().unwrap();
    let l = Arc::new(ledger(&dir.path().join("ledger")));
    let app = app(dir.path(), l);
    let body = signed(count("T-1", 150_000), &counter());
    let (s, _) = call(&app, "POST", "/v1/counts", FIN, Some(body)).await;
    assert_eq!(s, StatusCode::CREATED);
    drop(app);
    let path = dir.path().join("api").join(proofs::journal::COUNTS_FILE);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("150000", "160000")).unwrap();
    let e = readside::counts::CountBook::read(&dir.path().join("api")).unwrap_err();
    assert!(e.to_string().contains("counts.jsonl line 1"), "{e}");
}

#[tokio::test]
async fn a_count_the_read_model_cannot_check_yet_is_not_refused_as_bad() {
    let dir = tempfile::tempdir().unwrap();
    let l = Arc::new(ledger(&dir.path().join("ledger")));
    let body = signed(count("T-1", 150_000), &counter());
    // The ledger holds the box's removal; the model has not indexed it.
    let app = app_indexed(dir.path(), l.clone(), false);
    let (s, e) = call(&app, "POST", "/v1/counts", FIN, Some(body.clone())).await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{e}");
    let text = e["error"].as_str().unwrap();
    assert!(text.contains("indexing table T-1 (seq 0 of 1)"), "{e}");
    let (_, list) = call(&app, "GET", "/v1/counts?table=T-1", FIN, None).await;
    assert_eq!(
        list.as_array().map(Vec::len),
        Some(0),
        "nothing kept: {list}"
    );
    drop(app);
    // Once indexed, the same count stands.
    let app = self::app(dir.path(), l);
    let (s, e) = call(&app, "POST", "/v1/counts", FIN, Some(body)).await;
    assert_eq!(s, StatusCode::CREATED, "{e}");
}

/// A finance report over a span the read model has not indexed to its end is 503 with
/// `Retry-After`, naming the table, never a total that leaves events out; once indexed,
/// the same report stands. A span that ends before the unindexed event is answered, and
/// so is a span still open whose unindexed event is seconds old (live lag). `/v1/status`
/// counts the table as indexing until it is indexed.
#[tokio::test]
async fn a_report_the_read_model_has_not_indexed_yet_says_so() {
    const DAY_NS: i64 = 86_400_000_000_000;
    let dir = tempfile::tempdir().unwrap();
    let l = Arc::new(ledger(&dir.path().join("ledger")));
    // T-1's one event, at 1,000 ns, falls in gaming day 1969-12-31 (06:00 UTC days).
    let day = "/v1/reports?day=1969-12-31";
    let app = app_at(dir.path(), l.clone(), false, || 2 * DAY_NS);
    let (s, e) = call(&app, "GET", day, FIN, None).await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{e}");
    let text = e["error"].as_str().unwrap();
    assert!(text.contains("indexing table T-1 (seq 0 of 1)"), "{e}");
    let (s, e) = call(&app, "GET", "/v1/reports?day=1969-12-30", FIN, None).await;
    assert_eq!(s, StatusCode::OK, "a day that ends before the event: {e}");
    let (_, status) = call(&app, "GET", "/v1/status", FIN, None).await;
    assert_eq!(status["tables_indexing"], 1, "{status}");
    drop(app);
    let app = app_at(dir.path(), l.clone(), false, || 2_000);
    let (s, e) = call(&app, "GET", day, FIN, None).await;
    assert_eq!(
        s,
        StatusCode::OK,
        "the day is open, the event 1 us old: {e}"
    );
    drop(app);
    let app = app_at(dir.path(), l, true, || 2 * DAY_NS);
    let (s, e) = call(&app, "GET", day, FIN, None).await;
    assert_eq!(s, StatusCode::OK, "{e}");
    assert_eq!(e["no_play"], false, "the indexed event counts: {e}");
    let (_, status) = call(&app, "GET", "/v1/status", FIN, None).await;
    assert_eq!(status["tables_indexing"], 0, "{status}");
}

/// With several tables, the report waits only for a table whose unindexed events reach
/// into the span, and names that one: T-1 indexed, T-2's event two days later, T-3's in
/// the day. Once all are indexed, a new table T-4 whose event is after the day holds
/// nothing up, though `/v1/status` counts it as indexing.
#[tokio::test]
async fn a_report_waits_for_the_table_that_reaches_into_its_span() {
    const DAY_NS: i64 = 86_400_000_000_000;
    let dir = tempfile::tempdir().unwrap();
    let l = Arc::new(ledger(&dir.path().join("ledger")));
    let day = "/v1/reports?day=1969-12-31";
    drop(app_at(dir.path(), l.clone(), true, || 3 * DAY_NS));
    append_box_removal(&l, "T-2", 2 * DAY_NS);
    let app = app_at(dir.path(), l.clone(), false, || 3 * DAY_NS);
    let (s, e) = call(&app, "GET", day, FIN, None).await;
    assert_eq!(s, StatusCode::OK, "T-2's event is after the day: {e}");
    append_box_removal(&l, "T-3", 2_000);
    let (s, e) = call(&app, "GET", day, FIN, None).await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{e}");
    let text = e["error"].as_str().unwrap();
    assert!(text.contains("indexing table T-3 (seq 0 of 1)"), "{e}");
    let (_, status) = call(&app, "GET", "/v1/status", FIN, None).await;
    assert_eq!(status["tables_indexing"], 2, "T-2 and T-3: {status}");
    drop(app);
    // Index everything, then add T-4 after the day: the day is whole again.
    drop(app_at(dir.path(), l.clone(), true, || 3 * DAY_NS));
    append_box_removal(&l, "T-4", 2 * DAY_NS);
    let app = app_at(dir.path(), l, false, || 3 * DAY_NS);
    let (s, e) = call(&app, "GET", day, FIN, None).await;
    assert_eq!(s, StatusCode::OK, "{e}");
    let (_, status) = call(&app, "GET", "/v1/status", FIN, None).await;
    assert_eq!(status["tables_indexing"], 1, "T-4: {status}");
}
