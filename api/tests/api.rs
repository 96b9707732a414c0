//! The API through its router in process (tower `oneshot`) and once through a real socket,
//! over a real sled ledger filled by the simulator's table devices (payout errors and
//! irregularities injected): reads, roles refused what they must not see, the audit log,
//! cases, evidence bundles (round trip and tampering) and the OpenAPI document validated
//! against real responses.

use api::auth::{AccessConfig, TokenConfig};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use proofs::bundle::{AttestationCheck, BundleAttestation, BundleHead, EvidenceBundle};
use schemas::api::Role;
use schemas::attest::{Checkpoint, SigningKey};
use serde_json::{json, Value};
use std::sync::Arc;
use tower::ServiceExt;

const SURV: &str = "surveillance-token-000000000001";
const FIN: &str = "finance-token-00000000000000001";
const ADMIN: &str = "admin-token-000000000000000001";

fn access() -> AccessConfig {
    let t = |name: &str, role, token: &str| TokenConfig {
        name: name.into(),
        role,
        token: token.into(),
        token_hash: None,
    };
    AccessConfig {
        tokens: vec![
            t("sam.surveillance", Role::Surveillance, SURV),
            t("fiona.finance", Role::Finance, FIN),
            t("ada.admin", Role::Admin, ADMIN),
        ],
        count_keys: vec![],
    }
}

/// Plays `rounds` rounds at `tables` simulated tables into the ledger, as ingest would,
/// with each dealer terminal's signed checkpoint after the opening, every round and the
/// closing.
fn seed(ledger: &ledger::Ledger, tables: usize, rounds: u64, seed: u64, close: bool) {
    seed_attested(ledger, tables, rounds, seed, close, rounds)
}

/// As `seed`, but checkpoints stop after the first `attested` rounds: later rounds (and
/// the closing) are not yet attested.
fn seed_attested(
    ledger: &ledger::Ledger,
    tables: usize,
    rounds: u64,
    seed: u64,
    close: bool,
    attested: u64,
) {
    // The simulated floor's device keys are enrolled by the simulator's admin key.
    ledger
        .writer()
        .trust_admin_keys([simulator::admin_key().public()])
        .expect("trust the simulator's admin key");
    let mut plan = simulator::FaultPlan::all(0.03);
    plan.wrong_payout = 0.3;
    let mut floor = simulator::Floor::new(tables, seed, plan).unwrap();
    let mut stream_seq = ledger.reader().stats().events;
    let mut next = || {
        stream_seq += 1;
        stream_seq
    };
    // One step (the opening, one round, the closing) at every table, then the checkpoints.
    let mut step = |f: &mut dyn FnMut(&mut simulator::TableSim) -> Vec<simulator::Published>,
                    sign: bool| {
        let mut all = Vec::new();
        for t in floor.tables.iter_mut() {
            all.extend(f(t));
        }
        for chunk in all.chunks(4096) {
            let batch: Vec<ledger::Incoming> = chunk
                .iter()
                .map(|p| ledger::Incoming {
                    subject_table: Some(p.event.table.clone()),
                    stream_seq: next(),
                    received_at_ns: p.event.occurred_at_ns,
                    bytes: p.bytes.clone(),
                    provenance: Default::default(),
                })
                .collect();
            ledger.writer().append_batch(&batch).unwrap();
        }
        if sign {
            let cps: Vec<ledger::Incoming> = floor
                .tables
                .iter()
                .filter_map(|t| t.checkpoint())
                .map(|c| ledger::Incoming {
                    subject_table: Some(c.table.clone()),
                    stream_seq: next(),
                    received_at_ns: c.signed_at_ns,
                    bytes: c.to_bincode(),
                    provenance: Default::default(),
                })
                .collect();
            let out = ledger.writer().append_checkpoints(&cps).unwrap();
            assert!(
                out.iter()
                    .all(|o| matches!(o, ledger::attest::CheckpointOutcome::Kept { .. })),
                "{out:?}"
            );
        }
    };
    step(&mut |t| t.opening_events().unwrap(), true);
    for r in 0..rounds {
        step(&mut |t| t.play_round().unwrap().events, r < attested);
    }
    if close {
        step(&mut |t| t.closing_events().unwrap(), attested >= rounds);
    }
    ledger.flush().unwrap();
}

struct Fixture {
    dir: tempfile::TempDir,
    ledger: Arc<ledger::Ledger>,
    state: api::Shared,
    app: axum::Router,
    _stop: tokio::sync::watch::Sender<bool>,
}

fn clock() -> i64 {
    1_780_000_000_000_000_000
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Arc::new(ledger::Ledger::open(dir.path().join("ledger")).unwrap());
    seed(&ledger, 3, 30, 7, true);
    let (stop, rx) = tokio::sync::watch::channel(false);
    let state = api::AppState::new(
        ledger.clone(),
        &access(),
        &dir.path().join("api"),
        &dir.path().join("readmodel"),
        clock,
        rx,
        api::FinanceSetup::default(),
    )
    .unwrap();
    state.index_all().unwrap();
    let app = api::router(state.clone());
    Fixture {
        dir,
        ledger,
        state,
        app,
        _stop: stop,
    }
}

async fn call(
    app: &axum::Router,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = Request::builder().method(method).uri(path);
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let req = match body {
        Some(b) => req
            .header("content-type", "application/json")
            .body(Body::from(b.to_string()))
            .unwrap(),
        None => req.body(Body::empty()).unwrap(),
    };
    let res = app.clone().oneshot(req).await.unwrap();
    let status = res.status();
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 28)
        .await
        .unwrap();
    let v = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    (status, v)
}

async fn get(app: &axum::Router, path: &str, token: &str) -> (StatusCode, Value) {
    call(app, "GET", path, Some(token), None).await
}

/// The first disputed round of the demo data: (table, round).
/// Opens a case through the API: `POST /v1/cases` as `token` on `round` of `table`.
async fn open_case(
    app: &axum::Router,
    token: &str,
    table: &str,
    round: impl serde::Serialize,
    title: &str,
) -> (StatusCode, Value) {
    let body = json!({"table": table, "round": round, "title": title});
    call(app, "POST", "/v1/cases", Some(token), Some(body)).await
}

async fn disputed(app: &axum::Router) -> (String, u64) {
    let (s, page) = get(app, "/v1/rounds?verdict=disputed&limit=5", SURV).await;
    assert_eq!(s, StatusCode::OK, "{page}");
    assert!(
        page["total"].as_u64().unwrap() > 0,
        "the seeded floor has disputes: {page}"
    );
    let r = &page["items"][0];
    (
        r["table"].as_str().unwrap().to_string(),
        r["round"].as_u64().unwrap(),
    )
}

#[tokio::test]
async fn surveillance_finds_a_disputed_round_and_sees_the_difference_step_by_step() {
    let f = fixture();
    let (table, round) = disputed(&f.app).await;
    let (s, d) = get(&f.app, &format!("/v1/tables/{table}/rounds/{round}"), SURV).await;
    assert_eq!(s, StatusCode::OK, "{d}");
    assert_eq!(d["row"]["verdict"], "disputed");
    // Each finding carries its clause in the rule book's words.
    let findings = d["findings"].as_array().unwrap();
    assert!(!findings.is_empty(), "{d}");
    for f in findings {
        let code = f["code"].as_str().unwrap();
        let row = schemas::findings::by_code(code).unwrap();
        let wording: Vec<&str> = f["clause_wording"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap())
            .collect();
        assert_eq!(wording, readside::clauses::wording_of_code(code), "{code}");
        assert!(!wording.is_empty(), "{code} has the rule book's words");
        if !row.clause.starts_with("RN") && !row.clause.starts_with("HTP") {
            assert!(
                wording.iter().any(|w| w.starts_with(row.clause)),
                "{code}: {wording:?}"
            );
        }
    }
    // The settlement table shows the same difference as the report's disputes.
    let diffs: Vec<&Value> = d["settlement"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["difference"].as_i64() != Some(0))
        .collect();
    let disputes = d["report"]["disputes"].as_array().unwrap();
    assert_eq!(diffs.len(), disputes.len(), "{d}");
    for x in disputes {
        assert!(diffs.iter().any(|r| r["box"] == x["box"]
            && r["line"] == x["line"]
            && r["difference"] == x["difference"]
            && r["recorded"] == x["recorded"]));
    }
    // One step per timeline event; the last step has the recorded payouts.
    let (s, steps) = get(
        &f.app,
        &format!("/v1/tables/{table}/rounds/{round}/steps"),
        SURV,
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let steps = steps["steps"].as_array().unwrap();
    assert_eq!(steps.len(), d["events"].as_array().unwrap().len());
    assert_eq!(steps[0]["k"], 0);
    assert!(steps.last().unwrap()["paid"]
        .as_object()
        .is_some_and(|p| !p.is_empty()));
    // Replay state after event k, and past the end.
    let (s, step3) = get(
        &f.app,
        &format!("/v1/tables/{table}/rounds/{round}/steps/3"),
        SURV,
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(step3, steps[3]);
    let (s, _) = get(
        &f.app,
        &format!("/v1/tables/{table}/rounds/{round}/steps/100000"),
        SURV,
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    // Lists: disputes of that table, findings by severity, rounds by box and time.
    let (_, dp) = get(&f.app, &format!("/v1/disputes?table={table}"), SURV).await;
    assert!(dp["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x["round"] == round));
    let (_, fp) = get(&f.app, "/v1/findings?severity=critical&limit=500", SURV).await;
    assert!(fp["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|x| x["severity"] == "critical"));
    let (_, all) = get(&f.app, "/v1/findings?limit=500", SURV).await;
    assert!(all["total"].as_u64() >= fp["total"].as_u64());
    let code = all["items"][0]["code"].as_str().unwrap().to_string();
    let (_, by_code) = get(&f.app, &format!("/v1/findings?code={code}&limit=500"), SURV).await;
    assert!(by_code["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|x| x["code"] == code.as_str()));
    assert!(!by_code["items"][0]["clause_text"]
        .as_str()
        .unwrap()
        .is_empty());
    let opened = d["row"]["opened_at_ns"].as_i64().unwrap();
    let bx = d["row"]["boxes"][0].as_u64().unwrap();
    let (_, found) = get(
        &f.app,
        &format!(
            "/v1/rounds?table={table}&from_ns={}&to_ns={}&box={bx}",
            opened - 1,
            opened + 1
        ),
        SURV,
    )
    .await;
    assert_eq!(found["total"], 1, "{found}");
    assert_eq!(found["items"][0]["round"], round);
    // Paging is capped: a larger page is refused, the largest served.
    let (s, _) = get(&f.app, "/v1/rounds?limit=100000", SURV).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (_, big) = get(&f.app, "/v1/rounds?limit=500", SURV).await;
    assert_eq!(big["limit"], api::LIST_LIMIT_MAX);
    assert_eq!(big["total"], 3 * 30);
    // Chain status: every table verified to its head.
    let (_, chain) = get(&f.app, "/v1/chain", SURV).await;
    for c in chain.as_array().unwrap() {
        assert_eq!(c["ok"], true, "{c}");
        assert_eq!(c["verified_through"], c["head_seq"]);
    }
    // Unknown round, bad table id.
    let (s, _) = get(&f.app, &format!("/v1/tables/{table}/rounds/99999"), SURV).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, _) = get(&f.app, "/v1/tables/bad.id/rounds/1", SURV).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn finance_sees_totals_and_pools_but_no_round_data() {
    let f = fixture();
    let (s, fin) = get(&f.app, "/v1/finance", FIN).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(fin.as_array().unwrap().len(), 3);
    let total_rounds: u64 = fin
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["rounds"].as_u64().unwrap())
        .sum();
    assert_eq!(total_rounds, 90);
    // One word, one meaning: the buy-ins are not called drop (that is the counted cash).
    for t in fin.as_array().unwrap() {
        assert!(t["cash_buy_ins"].is_i64() && t.get("drop").is_none(), "{t}");
    }
    // Payout errors make the recorded win differ from the rules' win somewhere.
    assert!(fin
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x["win_recorded"] != x["win_rules"]));
    let (s, pools) = get(&f.app, "/v1/pools", FIN).await;
    assert_eq!(s, StatusCode::OK, "{pools}");
    assert!(!pools.as_array().unwrap().is_empty());
    let (s, _) = get(&f.app, "/v1/tables", FIN).await;
    assert_eq!(s, StatusCode::OK);
}

#[tokio::test]
async fn finance_reports_refuse_what_they_do_not_know_and_open_a_disputed_round() {
    let f = fixture();
    let (table, round) = disputed(&f.app).await;
    let (s, page) = get(&f.app, &format!("/v1/rounds?table={table}&limit=1"), SURV).await;
    assert_eq!(s, StatusCode::OK, "{page}");
    let at = page["items"][0]["opened_at_ns"].as_i64().unwrap();
    let day = ledger::days::DayRule::new("06:00", "UTC")
        .unwrap()
        .day_of(at)
        .unwrap();
    let (s, rep) = get(&f.app, &format!("/v1/reports?day={day}&group_by=game"), FIN).await;
    assert_eq!(s, StatusCode::OK, "{rep}");
    assert!(rep["total"]["rounds"].as_u64().unwrap() > 0, "{rep}");
    assert!(
        rep["total"]["drop"].is_null(),
        "no box counted: no drop, never zero"
    );
    // The simulator's dealers take the tables in turn: each round is one dealer's.
    let (s, by_dealer) = get(
        &f.app,
        &format!("/v1/reports?day={day}&group_by=dealer"),
        FIN,
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{by_dealer}");
    let groups = by_dealer["groups"].as_array().unwrap();
    assert!(!groups.is_empty(), "{by_dealer}");
    assert!(groups
        .iter()
        .all(|g| g["key"].as_str().unwrap().starts_with("D-")));
    let dealt: u64 = groups.iter().map(|g| g["rounds"].as_u64().unwrap()).sum();
    assert_eq!(dealt, rep["total"]["rounds"].as_u64().unwrap());
    // A dealer has no slips or tray counts of their own: null with the reason, never 0.00.
    for g in groups {
        for k in [
            "fills", "credits", "buy_ins", "markers", "opening", "closing", "drop",
        ] {
            assert!(g[k].is_null(), "{k}: {g}");
        }
        assert_eq!(g["not_known"].as_array().unwrap().len(), 1, "{g}");
    }
    // An unknown table is not found, and a day that has not begun is refused.
    let nope = format!("/v1/reports?day={day}&table=NOPE-99");
    let (s, body) = get(&f.app, &nope, FIN).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{body}");
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    let later = ledger::days::DayRule::new("06:00", "UTC")
        .unwrap()
        .day_of(now_ns + 3 * 86_400_000_000_000)
        .unwrap();
    let (s, body) = get(&f.app, &format!("/v1/reports?day={later}"), FIN).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("has not begun"),
        "{body}"
    );
    for bad in [
        format!("/v1/reports?day={day}&colour=red"),
        "/v1/reports".to_string(),
        format!("/v1/reports?day={day}&mtd={day}"),
        format!("/v1/reports?day={day}&group_by=cashier"),
        "/v1/finance?from_ns=1&to_ns=2".to_string(),
    ] {
        let (s, body) = get(&f.app, &bad, FIN).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }
    let (s, _) = get(&f.app, &format!("/v1/reports?day={day}"), SURV).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let path = format!("/v1/finance/rounds/{table}/{round}");
    let (s, summary) = get(&f.app, &path, FIN).await;
    assert_eq!(s, StatusCode::OK, "{summary}");
    let lines = summary["lines"].as_array().unwrap();
    assert!(lines.iter().any(|l| l["recorded"] != l["due"]), "{summary}");
    // Finance reads what explains the variance: the verdict and each finding with its
    // clause; never the events or cards.
    assert!(summary.get("events").is_none() && summary.get("reconstruction").is_none());
    assert_eq!(summary["verdict"], "disputed", "{summary}");
    let findings = summary["findings"].as_array().unwrap();
    assert!(!findings.is_empty(), "{summary}");
    assert!(findings.iter().all(|f| {
        f["clause"].as_str().is_some_and(|c| !c.is_empty())
            && f["clause_text"].as_str().is_some_and(|c| !c.is_empty())
    }));
}

#[tokio::test]
async fn each_role_is_refused_what_it_must_not_see() {
    let f = fixture();
    let (table, round) = disputed(&f.app).await;
    let round_paths = [
        format!("/v1/tables/{table}/rounds/{round}"),
        format!("/v1/tables/{table}/rounds/{round}/steps"),
        format!("/v1/tables/{table}/rounds/{round}/steps/0"),
        "/v1/rounds".to_string(),
        "/v1/disputes".to_string(),
        "/v1/findings".to_string(),
        "/v1/cases".to_string(),
        "/v1/feed".to_string(),
        "/v1/chain".to_string(),
        "/v1/quarantine".to_string(),
        format!("/v1/evidence/{table}/{round}"),
        "/v1/audit".to_string(),
    ];
    for p in &round_paths {
        let (s, body) = get(&f.app, p, FIN).await;
        assert_eq!(s, StatusCode::FORBIDDEN, "finance must not read {p}");
        assert!(body["error"].as_str().unwrap().contains("finance"));
    }
    let (s, _) = open_case(&f.app, FIN, &table, round, "x").await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    for p in ["/v1/audit", "/v1/finance"] {
        let (s, _) = get(&f.app, p, SURV).await;
        assert_eq!(s, StatusCode::FORBIDDEN, "surveillance must not read {p}");
    }
    // No token, a wrong token, a malformed header: 401, for every role-guarded path.
    for p in &round_paths {
        let (s, _) = call(&f.app, "GET", p, None, None).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{p} without a token");
        let (s, _) = get(&f.app, p, "not-a-token-at-all-0000000").await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{p} with a wrong token");
    }
    // A token is taken from the Authorization header only, never from the URL (which the
    // audit log records): the web UI reads the feed with fetch, not EventSource.
    for p in ["/v1/feed", "/v1/rounds"] {
        for q in ["token", "access_token"] {
            let (s, _) = call(&f.app, "GET", &format!("{p}?{q}={SURV}"), None, None).await;
            assert_eq!(s, StatusCode::UNAUTHORIZED, "{p}?{q}=...");
        }
    }
    // The admin reads everything.
    for p in round_paths.iter().filter(|p| !p.ends_with("/feed")) {
        let (s, _) = get(&f.app, p, ADMIN).await;
        assert_eq!(s, StatusCode::OK, "admin reads {p}");
    }
    let (s, _) = get(&f.app, "/v1/finance", ADMIN).await;
    assert_eq!(s, StatusCode::OK);
}

#[tokio::test]
async fn every_read_is_audited_and_only_admins_read_the_log() {
    let f = fixture();
    let (table, round) = disputed(&f.app).await;
    get(&f.app, &format!("/v1/tables/{table}/rounds/{round}"), SURV).await;
    get(&f.app, &format!("/v1/tables/{table}/rounds/{round}"), FIN).await;
    call(&f.app, "GET", "/v1/rounds", None, None).await;
    let (s, log) = get(&f.app, "/v1/audit?limit=1000", ADMIN).await;
    assert_eq!(s, StatusCode::OK);
    let items = log["items"].as_array().unwrap();
    let path = format!("/v1/tables/{table}/rounds/{round}");
    let sam = items
        .iter()
        .find(|e| e["who"] == "sam.surveillance" && e["path"] == path.as_str())
        .expect("the surveillance read is in the log");
    assert_eq!(sam["role"], "surveillance");
    assert_eq!(sam["status"], 200);
    assert_eq!(sam["method"], "GET");
    assert_eq!(sam["at_ns"], clock());
    let refused = items
        .iter()
        .find(|e| e["who"] == "fiona.finance" && e["path"] == path.as_str())
        .expect("the refused finance read is in the log");
    assert_eq!(refused["status"], 403);
    assert!(items
        .iter()
        .any(|e| e["who"] == "anonymous" && e["status"] == 401));
    // Entries are numbered from 1 without gaps; the log survives a restart.
    for (i, e) in items.iter().enumerate() {
        assert_eq!(e["id"], i as u64 + 1);
    }
    let n = log["total"].as_u64().unwrap();
    drop(f.app);
    drop(f.state);
    let (_stop, rx) = tokio::sync::watch::channel(false);
    let again = api::AppState::new(
        f.ledger.clone(),
        &access(),
        &f.dir.path().join("api"),
        &f.dir.path().join("readmodel"),
        clock,
        rx,
        api::FinanceSetup::default(),
    )
    .unwrap();
    assert_eq!(
        again.audit.len(),
        n + 1,
        "the restart sees every entry (and the admin read)"
    );
}

/// `GET /v1/export` of a round range as wide as u64 is every round of the table (its bound is the
/// export's own, `ExportSelection::events_max`, so it holds for round ranges too:
/// `ledger/tests/tamper.rs` shows the refusal); an unknown table is 404, rounds without a
/// table 400.
#[tokio::test]
async fn exports_through_the_api_are_whole_and_bad_selections_named() {
    let f = fixture();
    let table = f.ledger.reader().tables()[0].clone();
    // Every round: from the first round's first event to the last round's last (the
    // table's opening and closing events lie outside).
    let rounds = f.ledger.reader().rounds(&table).unwrap();
    let first = rounds.iter().map(|r| r.first_seq.0).min().unwrap();
    let last = rounds.iter().map(|r| r.last_seq.0).max().unwrap();
    let (s, body) = get(
        &f.app,
        &format!("/v1/export?table={table}&rounds=0..18446744073709551615"),
        SURV,
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let text = body.as_str().expect("JSON lines");
    let summary = proofs::export::verify_export(text.as_bytes()).expect("the export verifies");
    assert_eq!(summary.events, last - first + 1, "every round of the table");
    assert_eq!(
        (summary.tables[0].from_seq, summary.tables[0].to_seq),
        (first, last)
    );
    let (s, body) = get(&f.app, "/v1/export?table=NO-SUCH-TABLE", SURV).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("NO-SUCH-TABLE"),
        "{body}"
    );
    let (s, body) = get(&f.app, "/v1/export?rounds=1..2", SURV).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
}

/// An unknown `/v1/` path is guarded and audited like a known one: 401 without a token,
/// 403 for a role it does not list, 404 for an admin; never the web UI's plain 404. A query of 33,000 backslashes (JSON doubles
/// each) still fits one audit entry: the log keeps at most `AUDITED_URI_PART_MAX` bytes of
/// a path or query, so a case change and its audit entry succeed together.
#[tokio::test]
async fn unknown_paths_and_long_queries_are_guarded_and_audited() {
    let f = fixture();
    let (table, round) = disputed(&f.app).await;
    let before = f.state.audit.len();
    let (s, _) = call(&f.app, "GET", "/v1/nope", None, None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, _) = get(&f.app, "/v1/nope/deeper", ADMIN).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, _) = get(&f.app, "/v1/nope", SURV).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "unlisted paths are the admin's");
    assert_eq!(f.state.audit.len(), before + 3);

    let (s, c) = open_case(&f.app, SURV, &table, round, "long query").await;
    assert_eq!(s, StatusCode::CREATED, "{c}");
    let id = c["id"].as_u64().unwrap();
    let query = format!("x={}", "\\".repeat(33_000));
    let (s, _) = call(
        &f.app,
        "POST",
        &format!("/v1/cases/{id}/close?{query}"),
        Some(SURV),
        Some(json!({"decision": "paid correctly"})),
    )
    .await;
    assert_eq!(
        s,
        StatusCode::OK,
        "the close and its audit entry both written"
    );
    let (_, log) = get(&f.app, "/v1/audit?limit=1000", ADMIN).await;
    let entry = log["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"] == format!("/v1/cases/{id}/close").as_str())
        .expect("the close is audited");
    let recorded = entry["query"].as_str().unwrap();
    assert!(
        recorded.len() < api::AUDITED_URI_PART_MAX + 40,
        "{}",
        recorded.len()
    );
    assert!(
        recorded.ends_with(&format!("... ({} bytes)", query.len())),
        "{recorded:.80}"
    );
}

/// A case names a round that exists (issue 46: a stale page filed one on the wrong
/// round). A table or round the ledger does not have is a 404, a malformed one a 422,
/// each with an error, and nothing is stored.
#[tokio::test]
async fn a_case_on_a_table_or_round_that_does_not_exist_is_refused() {
    let f = fixture();
    let (table, round) = disputed(&f.app).await;
    let refused = [
        ("NOPE-01", json!(round), StatusCode::NOT_FOUND),
        (&table, json!(99_999), StatusCode::NOT_FOUND),
        (&table, json!(round + 100_000), StatusCode::NOT_FOUND),
        ("bad table!", json!(round), StatusCode::UNPROCESSABLE_ENTITY),
        (&table, json!("one"), StatusCode::UNPROCESSABLE_ENTITY),
        (&table, json!(-1), StatusCode::UNPROCESSABLE_ENTITY),
    ];
    for (t, r, want) in refused {
        let (s, body) = open_case(&f.app, SURV, t, &r, "x").await;
        assert_eq!(s, want, "{t} {r}: {body}");
        let msg = body["error"].as_str().unwrap_or_default();
        assert!(!msg.is_empty(), "{t} {r}: an ApiError: {body}");
        if want == StatusCode::NOT_FOUND {
            assert!(msg.contains("has no round"), "{t} {r}: {msg}");
        }
    }
    let (_, all) = get(&f.app, "/v1/cases", SURV).await;
    assert_eq!(all["total"], 0, "no refused case is stored: {all}");
    // The same request on the round that exists is stored on it.
    let (s, c) = open_case(&f.app, SURV, &table, round, "x").await;
    assert_eq!(s, StatusCode::CREATED, "{c}");
    assert_eq!(
        (c["table"].as_str(), c["round"].as_u64()),
        (Some(table.as_str()), Some(round))
    );
}

#[tokio::test]
async fn cases_are_append_only_with_author_and_time() {
    let f = fixture();
    let (table, round) = disputed(&f.app).await;
    let (s, c) = open_case(&f.app, SURV, &table, round, "box 2 disputes the Ante").await;
    assert_eq!(s, StatusCode::CREATED, "{c}");
    let id = c["id"].as_u64().unwrap();
    assert_eq!(c["entries"][0]["author"], "sam.surveillance");
    assert_eq!(c["entries"][0]["role"], "surveillance");
    let (s, c) = call(
        &f.app,
        "POST",
        &format!("/v1/cases/{id}/notes"),
        Some(ADMIN),
        Some(json!({"text": "video confirms the overpayment"})),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(c["entries"][1]["author"], "ada.admin");
    let (s, c) = call(
        &f.app,
        "POST",
        &format!("/v1/cases/{id}/close"),
        Some(SURV),
        Some(json!({"decision": "dealer retrained"})),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(c["open"], false);
    assert_eq!(c["decision"], "dealer retrained");
    // Closed is final; unknown cases and rounds are refused; empty text is refused.
    let (s, _) = call(
        &f.app,
        "POST",
        &format!("/v1/cases/{id}/notes"),
        Some(SURV),
        Some(json!({"text": "late"})),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT);
    let (s, _) = call(
        &f.app,
        "POST",
        "/v1/cases/999/notes",
        Some(SURV),
        Some(json!({"text": "x"})),
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, _) = open_case(&f.app, SURV, &table, 99999, "x").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, _) = open_case(&f.app, SURV, &table, round, "  ").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (_, list) = get(
        &f.app,
        &format!("/v1/cases?table={table}&round={round}"),
        SURV,
    )
    .await;
    assert_eq!(list["total"], 1);
    assert_eq!(list["items"][0]["entries"].as_array().unwrap().len(), 3);
    // The journal on disk rebuilds the same case.
    let cases = api::cases::read_cases(
        &api::cases_path(&f.dir.path().join("api")),
        &schemas::TableId::new(table.clone()).unwrap(),
        schemas::RoundId(round),
    )
    .unwrap();
    assert_eq!(serde_json::to_value(&cases[0]).unwrap(), list["items"][0]);
}

#[tokio::test]
async fn evidence_bundle_round_trip_and_tampering_is_named() {
    let f = fixture();
    let (table, round) = disputed(&f.app).await;
    open_case(&f.app, SURV, &table, round, "evidence test").await;
    let req = Request::get(format!("/v1/evidence/{table}/{round}"))
        .header("authorization", format!("Bearer {SURV}"))
        .body(Body::empty())
        .unwrap();
    let res = f.app.clone().oneshot(req).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .contains("attachment"));
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 28)
        .await
        .unwrap()
        .to_vec();
    let v = readside::evidence::verify_bytes(&bytes, &[]).unwrap();
    assert_eq!(v.round, round);
    assert_eq!(v.verdict, schemas::report::Verdict::Disputed);
    assert_eq!(v.case_entries, 1);
    let b: EvidenceBundle = serde_json::from_slice(&bytes).unwrap();
    // The short form starts at a signed checkpoint before the round; the full form, at
    // the configuration.
    match &b.opening {
        Some(o) => {
            assert_eq!(b.version, proofs::bundle::BUNDLE_VERSION);
            assert_eq!(b.chain.from_seq, o.checkpoint.decoded.head_seq.0);
        }
        None => {
            assert_eq!(b.version, proofs::bundle::BUNDLE_VERSION_FULL);
            assert_eq!(b.chain.from_seq, b.config_seq);
        }
    }
    assert_eq!(b.exported_by, "sam.surveillance");
    // The chain ends at the first kept checkpoint covering the round, carried verbatim,
    // not at the table's head.
    // (The whole replay window is signed here: the fixture signs after every round.)
    let kept = f
        .ledger
        .reader()
        .checkpoint_at_or_after(&b.table, b.replay_to)
        .unwrap()
        .unwrap();
    let BundleAttestation::Attested {
        checkpoint,
        admin_key,
        enrollment_seq: enrolled_at,
        ..
    } = &b.attestation
    else {
        panic!("not attested: {:?}", b.attestation)
    };
    assert_eq!(hex::decode(&checkpoint.bytes).unwrap(), kept.bytes);
    assert_eq!(checkpoint.decoded, kept.checkpoint);
    assert_eq!(*admin_key, simulator::admin_key().public());
    assert_eq!(b.head.seq, kept.checkpoint.head_seq.0);
    assert!(b.head.seq < f.ledger.reader().head(&b.table).unwrap().seq.0);
    match &v.attestation {
        AttestationCheck::Attested {
            checkpoint_seq,
            enrollment_seq,
            admin_pinned,
            unattested,
            ..
        } => {
            assert_eq!(*checkpoint_seq, kept.checkpoint.head_seq.0);
            assert_eq!(enrollment_seq, enrolled_at);
            assert!(!admin_pinned);
            assert_eq!(*unattested, None);
        }
        other => panic!("{other:?}"),
    }
    let said = readside::evidence::describe_attestation(&v).join("\n");
    assert!(
        said.contains("ATTESTED") && said.contains("TRUSTED, NOT CHECKED"),
        "{said}"
    );
    // Pinned to the simulator's admin key: verified; to another: refused, naming both.
    let v = readside::evidence::verify(&b, &[simulator::admin_key().public()]).unwrap();
    assert!(matches!(
        v.attestation,
        AttestationCheck::Attested {
            admin_pinned: true,
            ..
        }
    ));
    let other = SigningKey::derive_for_simulation("another admin").public();
    let err = readside::evidence::verify(&b, &[other])
        .unwrap_err()
        .to_string();
    assert!(err.contains("not one of the pinned admin keys"), "{err}");
    assert!(err.contains(&other.to_hex()), "{err}");
    // The bundle's events are the stored bytes, verbatim.
    let s = &b.round_seqs[0];
    let stored = f
        .ledger
        .reader()
        .stored_event(&b.table, *s)
        .unwrap()
        .unwrap();
    let e = b.chain.events.iter().find(|e| e.seq == *s).unwrap();
    assert_eq!(hex::decode(&e.bytes).unwrap(), stored.bytes);

    // Flip one hex digit of one of the round's events: the hash check names the seq.
    let mut t = b.clone();
    let i = t
        .chain
        .events
        .iter()
        .position(|e| e.seq == b.round_seqs[2])
        .unwrap();
    let mut chars: Vec<char> = t.chain.events[i].bytes.chars().collect();
    let last_char = chars.len() - 1;
    chars[last_char] = if chars[last_char] == '0' { '1' } else { '0' };
    t.chain.events[i].bytes = chars.into_iter().collect();
    let err = readside::evidence::verify(&t, &[]).unwrap_err().to_string();
    assert!(err.contains(&format!("seq {}", b.round_seqs[2])), "{err}");
    // Change the recorded report: the replay disagrees and says where.
    let mut t = b.clone();
    t.report.disputes[0].recorded = schemas::Money(t.report.disputes[0].recorded.0 + 1);
    let err = readside::evidence::verify(&t, &[]).unwrap_err().to_string();
    assert!(err.contains("/disputes/0/recorded"), "{err}");
    // Drop the last event: the segment no longer has its length.
    let mut t = b.clone();
    t.chain.events.pop();
    let err = readside::evidence::verify(&t, &[]).unwrap_err().to_string();
    assert!(err.contains("truncated"), "{err}");
    // A case filed on another round, carried in this round's bundle, is named.
    let mut t = b.clone();
    t.cases[0].round = schemas::RoundId(t.round.0 + 1);
    let err = readside::evidence::verify(&t, &[]).unwrap_err().to_string();
    assert!(err.contains("not on the bundle's round"), "{err}");
    // Claim a different end of the chain.
    let mut t = b.clone();
    t.head.hash = schemas::Hash32([7; 32]);
    let err = readside::evidence::verify(&t, &[]).unwrap_err().to_string();
    assert!(err.starts_with("head"), "{err}");
    // A narrower window with `round_seqs` and a report replayed to match (found in
    // review): every hash, the checkpoint and the enrollment still verify, but the window
    // is not the round's. Ending it early leaves out the round's last events (the
    // payouts); starting it late leaves out its first.
    let verified = proofs::bundle::verify_chain(&b, &[]).unwrap();
    let narrowed = |from: u64, to: u64| {
        let mut t = b.clone();
        (t.replay_from, t.replay_to) = (from, to);
        t.round_seqs.retain(|s| (from..=to).contains(s));
        t.report = readside::rounds::replay_events(&t.table, t.round.0, &verified.replay_input(&t))
            .expect("the round replays");
        t
    };
    let n = b.round_seqs.len();
    for t in [
        narrowed(b.replay_from, b.round_seqs[n - 3]),
        narrowed(b.round_seqs[2], b.replay_to),
    ] {
        assert_ne!(
            t.report, b.report,
            "the narrowed replay tells another story"
        );
        let err = readside::evidence::verify(&t, &[]).unwrap_err().to_string();
        assert!(
            err.contains("replay window") && err.contains("outside the replay window"),
            "{err}"
        );
    }
}

/// Exports `round` of `table` straight from the ledger, as `roundledger evidence` does.
fn bundle_of(ledger: &ledger::Ledger, table: &str, round: u64) -> EvidenceBundle {
    let table = schemas::TableId::new(table).unwrap();
    let located = readside::rounds::locate_in_ledger(ledger, &table, round).unwrap();
    readside::evidence::build(ledger, &table, round, located, vec![], "test", clock()).unwrap()
}

/// The bundle's checkpoint replaced by `c`, bytes and decoded copy alike.
fn with_checkpoint(b: &EvidenceBundle, c: Checkpoint) -> EvidenceBundle {
    let mut t = b.clone();
    let BundleAttestation::Attested { checkpoint, .. } = &mut t.attestation else {
        panic!("not attested")
    };
    checkpoint.bytes = hex::encode(c.to_bincode());
    checkpoint.decoded = c;
    t
}

#[test]
fn a_forged_checkpoint_an_unenrolled_key_and_a_truncated_proof_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger::Ledger::open(dir.path()).unwrap();
    seed(&ledger, 1, 6, 5, true);
    let table = ledger.reader().tables()[0].clone();
    let b = bundle_of(&ledger, table.as_str(), 3);
    readside::evidence::verify(&b, &[simulator::admin_key().public()]).unwrap();
    let BundleAttestation::Attested { checkpoint, .. } = &b.attestation else {
        panic!("not attested")
    };
    let cp = checkpoint.decoded.clone();
    let forger = SigningKey::derive_for_simulation("forger");
    let forged = Checkpoint::sign(
        &forger,
        cp.table.clone(),
        cp.device.clone(),
        cp.head_seq,
        cp.head_hash,
        cp.signed_at_ns,
    );

    // A checkpoint signed by someone else, under the enrolled device key.
    let t = with_checkpoint(&b, forged.clone());
    let err = readside::evidence::verify(&t, &[]).unwrap_err().to_string();
    assert!(
        err.contains("checkpoint signature does not verify") && err.contains("forged"),
        "{err}"
    );
    // One flipped signature bit.
    let mut flipped = cp.clone();
    flipped.signature.0[7] ^= 0x10;
    let err = readside::evidence::verify(&with_checkpoint(&b, flipped), &[])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("checkpoint signature does not verify"),
        "{err}"
    );
    // The decoded copy edited without the bytes.
    let mut t = b.clone();
    if let BundleAttestation::Attested { checkpoint, .. } = &mut t.attestation {
        checkpoint.decoded.head_seq = schemas::Seq(cp.head_seq.0 - 1);
    }
    let err = readside::evidence::verify(&t, &[]).unwrap_err().to_string();
    assert!(err.contains("decoded copy differs"), "{err}");

    // The forger's own key: it verifies the signature, but the chain never enrolled it.
    let mut t = with_checkpoint(&b, forged);
    if let BundleAttestation::Attested { device_key, .. } = &mut t.attestation {
        *device_key = forger.public();
    }
    let err = readside::evidence::verify(&t, &[]).unwrap_err().to_string();
    assert!(
        err.contains(&format!(
            "device key {} is not enrolled",
            forger.public().to_hex()
        )),
        "{err}"
    );
    // Pointing at another event as the enrollment.
    let mut t = b.clone();
    if let BundleAttestation::Attested { enrollment_seq, .. } = &mut t.attestation {
        *enrollment_seq = b.round_seqs[0];
    }
    let err = readside::evidence::verify(&t, &[]).unwrap_err().to_string();
    assert!(
        err.contains("is not enrolled") && err.contains("not a device enrollment"),
        "{err}"
    );

    // A truncated proof: the segment cut before the signed head, its end made consistent.
    let mut t = b.clone();
    while t.chain.to_seq >= cp.head_seq.0 {
        t.chain.events.pop();
        t.chain.to_seq -= 1;
    }
    let end = t.chain.events.last().unwrap();
    t.head = BundleHead {
        seq: end.seq,
        hash: end.hash,
    };
    t.round_seqs.retain(|s| *s <= end.seq);
    t.replay_to = t.replay_to.min(end.seq);
    let err = readside::evidence::verify(&t, &[]).unwrap_err().to_string();
    assert!(
        err.contains(&format!("signs seq {}", cp.head_seq.0)) && err.contains("truncated"),
        "{err}"
    );
    // A checkpoint of an earlier head in the segment, which does not cover the round.
    let before = ledger
        .reader()
        .checkpoint_at_or_after(&table, b.chain.from_seq)
        .unwrap()
        .unwrap();
    assert!(before.checkpoint.head_seq < cp.head_seq);
    let err = readside::evidence::verify(&with_checkpoint(&b, before.checkpoint), &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not cover the round"), "{err}");
}

#[test]
fn a_round_after_the_last_checkpoint_is_exported_and_verified_as_not_yet_attested() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger::Ledger::open(dir.path()).unwrap();
    // Checkpoints after the opening and rounds 1 and 2 only.
    seed_attested(&ledger, 1, 4, 5, false, 2);
    let table = ledger.reader().tables()[0].clone();
    let latest = ledger.reader().attestation(&table).unwrap().seq.0;
    // Round 2 is signed by the checkpoint after it; any event of its window after that
    // (a finance entry before round 3) is chained to it but reported as not signed.
    let attested = bundle_of(&ledger, table.as_str(), 2);
    let BundleAttestation::Attested { checkpoint, .. } = &attested.attestation else {
        panic!("round 2 is attested")
    };
    let signed = checkpoint.decoded.head_seq.0;
    assert_eq!(signed, latest);
    assert_eq!(attested.head.seq, signed.max(attested.replay_to));
    let v = readside::evidence::verify(&attested, &[]).unwrap();
    let AttestationCheck::Attested { unattested, .. } = v.attestation else {
        panic!("{:?}", v.attestation)
    };
    assert_eq!(
        unattested,
        (attested.replay_to > signed).then_some((signed + 1, attested.replay_to))
    );
    for round in [3, 4] {
        let b = bundle_of(&ledger, table.as_str(), round);
        assert_eq!(
            b.attestation,
            BundleAttestation::NotYetAttested {
                latest_checkpoint_seq: Some(latest)
            }
        );
        // The chain runs to the table's head at export.
        assert_eq!(b.head.seq, ledger.reader().head(&table).unwrap().seq.0);
        let v = readside::evidence::verify(&b, &[simulator::admin_key().public()]).unwrap();
        assert_eq!(
            v.attestation,
            AttestationCheck::NotYetAttested {
                latest_checkpoint_seq: Some(latest)
            }
        );
        let said = readside::evidence::describe_attestation(&v).join("\n");
        assert!(said.starts_with("NOT YET ATTESTED"), "{said}");
    }
    // An attested bundle passed off as not attested may not name a checkpoint covering it.
    let mut t = attested.clone();
    t.attestation = BundleAttestation::NotYetAttested {
        latest_checkpoint_seq: Some(latest),
    };
    let err = readside::evidence::verify(&t, &[]).unwrap_err().to_string();
    assert!(err.contains("not yet attested"), "{err}");
}

/// A key rotated between rounds 2 and 3: a round signed by the old key is exported citing the
/// enrollment the ledger verified that checkpoint against (not the key the register holds
/// now), a round signed by the new key cites the rotation, and both verify pinned to the
/// House's admin key.
#[test]
fn rounds_signed_before_and_after_a_key_rotation_cite_their_own_enrollment() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger::Ledger::open(dir.path()).unwrap();
    ledger
        .writer()
        .trust_admin_keys([simulator::admin_key().public()])
        .expect("trust the simulator's admin key");
    let config = simulator::default_config(schemas::RuleSet::Csp6);
    let table = schemas::TableId::new("ROT-01").unwrap();
    let mut t =
        simulator::TableSim::new(table.clone(), config, 11, simulator::FaultPlan::none()).unwrap();
    let checkpoint = |t: &simulator::TableSim| {
        let c = t.checkpoint().unwrap();
        let out = ledger
            .writer()
            .append_checkpoints(&[ledger::Incoming {
                subject_table: Some(table.clone()),
                stream_seq: ledger.reader().stats().events + 1_000,
                received_at_ns: c.signed_at_ns,
                bytes: c.to_bincode(),
                provenance: Default::default(),
            }])
            .unwrap();
        assert!(
            matches!(out[..], [ledger::attest::CheckpointOutcome::Kept { .. }]),
            "{out:?}"
        );
    };
    append(&ledger, &t.opening_events().unwrap());
    for _ in 0..2 {
        append(&ledger, &t.play_round().unwrap().events);
        checkpoint(&t);
    }
    let rotation = t.rotate_key().unwrap();
    let rotated_at = rotation[0].event.seq.0;
    append(&ledger, &rotation);
    append(&ledger, &t.play_round().unwrap().events);
    checkpoint(&t);
    ledger.flush().unwrap();
    let admin = [simulator::admin_key().public()];
    let cited = |round| {
        let b = bundle_of(&ledger, table.as_str(), round);
        let v =
            readside::evidence::verify(&b, &admin).unwrap_or_else(|e| panic!("round {round}: {e}"));
        let AttestationCheck::Attested {
            enrollment_seq,
            device_key,
            admin_pinned: true,
            ..
        } = v.attestation
        else {
            panic!("round {round}: {:?}", v.attestation)
        };
        (enrollment_seq, device_key)
    };
    // Round 1's replay window ends before round 2, so the checkpoint after round 1 (old
    // key) signs it. Round 2's window runs on to round 3 and takes in the rotation, so
    // the checkpoint after round 3 (new key) signs it; round 3 likewise.
    let (first, old_key) = cited(1);
    let (second, key_2) = cited(2);
    let (third, new_key) = cited(3);
    assert_eq!(first, 2, "the opening's enrollment (TableOpened is seq 1)");
    assert_eq!((second, key_2), (rotated_at, new_key));
    assert_eq!(third, rotated_at);
    assert_ne!(old_key, new_key);
    // The register holds only the new key now.
    let dk = ledger
        .reader()
        .device_key(&table, &schemas::DeviceId::new("dealer-terminal").unwrap())
        .unwrap();
    assert_eq!((dk.key, dk.enrolled_seq.0), (new_key, rotated_at));
}

/// Resolves an OpenAPI response schema with the document's components, for jsonschema.
fn response_schema(doc: &Value, path: &str, status: &str) -> Value {
    let s = doc["paths"][path]["get"]["responses"][status]["content"]["application/json"]["schema"]
        .clone();
    assert!(!s.is_null(), "no schema for GET {path} {status}");
    let mut schema = s;
    schema["components"] = doc["components"].clone();
    schema
}

#[tokio::test]
async fn the_openapi_document_describes_the_real_responses() {
    let f = fixture();
    let (s, doc) = call(&f.app, "GET", "/openapi.json", None, None).await;
    assert_eq!(s, StatusCode::OK);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
    let (table, round) = disputed(&f.app).await;
    let checks = [
        ("/v1/whoami", "/v1/whoami".to_string(), SURV),
        ("/v1/status", "/v1/status".to_string(), SURV),
        ("/v1/tables", "/v1/tables".to_string(), SURV),
        (
            "/v1/rounds",
            "/v1/rounds?verdict=disputed".to_string(),
            SURV,
        ),
        (
            "/v1/tables/{table}/rounds/{round}",
            format!("/v1/tables/{table}/rounds/{round}"),
            SURV,
        ),
        (
            "/v1/tables/{table}/rounds/{round}/steps",
            format!("/v1/tables/{table}/rounds/{round}/steps"),
            SURV,
        ),
        (
            "/v1/tables/{table}/rounds/{round}/steps/{k}",
            format!("/v1/tables/{table}/rounds/{round}/steps/2"),
            SURV,
        ),
        ("/v1/disputes", "/v1/disputes".to_string(), SURV),
        ("/v1/findings", "/v1/findings".to_string(), SURV),
        ("/v1/chain", "/v1/chain".to_string(), SURV),
        ("/v1/quarantine", "/v1/quarantine".to_string(), SURV),
        ("/v1/pools", "/v1/pools".to_string(), FIN),
        ("/v1/finance", "/v1/finance".to_string(), FIN),
        ("/v1/cases", "/v1/cases".to_string(), SURV),
        (
            "/v1/evidence/{table}/{round}",
            format!("/v1/evidence/{table}/{round}"),
            SURV,
        ),
        ("/v1/audit", "/v1/audit".to_string(), ADMIN),
        ("/v1/analytics", "/v1/analytics".to_string(), SURV),
    ];
    for (template, path, token) in checks {
        let (s, body) = get(&f.app, &path, token).await;
        assert_eq!(s, StatusCode::OK, "{path}: {body}");
        let schema = response_schema(&doc, template, "200");
        let v = jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{template}: {e}"));
        let errors: Vec<String> = v
            .iter_errors(&body)
            .map(|e| format!("{} at {}", e, e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{path}: {errors:?}");
    }
    // Reports, events, configurations and bundles are described field by field (utoipa
    // reading their serde attributes), not as bare objects ...
    for name in [
        "RoundReport",
        "Finding",
        "Dispute",
        "Settlement",
        "Reconstruction",
        "Event",
        "EventBody",
        "TableConfig",
        "EvidenceBundle",
        "GapView",
        "GapBlocker",
        "ResyncNote",
    ] {
        let s = &doc["components"]["schemas"][name];
        assert!(
            s["properties"].is_object() || s["oneOf"].is_array(),
            "{name} is not typed: {s}"
        );
    }
    // ... so a round whose report, event or configuration is wrong in any field is refused.
    let path = format!("/v1/tables/{table}/rounds/{round}");
    let (_, detail) = get(&f.app, &path, SURV).await;
    let v = jsonschema::validator_for(&response_schema(
        &doc,
        "/v1/tables/{table}/rounds/{round}",
        "200",
    ))
    .unwrap();
    assert!(v.is_valid(&detail));
    let broken = |f: &dyn Fn(&mut Value)| {
        let mut d = detail.clone();
        f(&mut d);
        d
    };
    for (what, bad) in [
        (
            "verdict",
            broken(&|d| d["report"]["verdict"] = json!("fine")),
        ),
        (
            "severity",
            broken(&|d| d["report"]["findings"][0]["severity"] = json!("mild")),
        ),
        (
            "dispute money",
            broken(&|d| d["report"]["disputes"][0]["expected"] = json!("10.00")),
        ),
        (
            "event type",
            broken(&|d| d["events"][0]["event"]["body"]["type"] = json!("made_up")),
        ),
        (
            "event prev",
            broken(&|d| d["events"][0]["event"]["prev"] = json!("00")),
        ),
        (
            "rule set",
            broken(&|d| d["config"]["rule_set"] = json!("CSP7")),
        ),
        (
            "settlement line",
            broken(&|d| d["report"]["settlement"]["boxes"][0]["lines"][0]["line"] = json!("x")),
        ),
    ] {
        assert!(!v.is_valid(&bad), "a wrong {what} validates");
    }
    // Error bodies too, and the schema rejects a body of the wrong shape.
    let (s, body) = get(&f.app, "/v1/audit", SURV).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let v = jsonschema::validator_for(&response_schema(&doc, "/v1/audit", "403")).unwrap();
    assert!(v.is_valid(&body));
    let v = jsonschema::validator_for(&response_schema(&doc, "/v1/rounds", "200")).unwrap();
    assert!(!v.is_valid(&json!({"items": "nope"})));
    // The request bodies the UI sends validate against the document, and a wrong one not.
    let body_schema = |path: &str| {
        let mut s = doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]
            ["schema"]
            .clone();
        assert!(!s.is_null(), "no request body schema for POST {path}");
        s["components"] = doc["components"].clone();
        jsonschema::validator_for(&s).unwrap()
    };
    let open = json!({"table": table, "round": round, "title": "patron disputes box 3"});
    assert!(body_schema("/v1/cases").is_valid(&open));
    assert!(!body_schema("/v1/cases").is_valid(&json!({"table": table, "title": 3})));
    assert!(body_schema("/v1/cases/{id}/notes").is_valid(&json!({"text": "seen on video"})));
    assert!(body_schema("/v1/cases/{id}/close").is_valid(&json!({"decision": "paid"})));
    let (s, created) = call(&f.app, "POST", "/v1/cases", Some(SURV), Some(open)).await;
    assert_eq!(s, StatusCode::CREATED);
    let mut created_schema = doc["paths"]["/v1/cases"]["post"]["responses"]["201"]["content"]
        ["application/json"]["schema"]
        .clone();
    created_schema["components"] = doc["components"].clone();
    assert!(jsonschema::validator_for(&created_schema)
        .unwrap()
        .is_valid(&created));
}

/// `/v1/alerts` as documented holds an operational alert and a decision signal's alert,
/// the signal whole; an alert of an unknown kind, or a signal without its rounds, does
/// not validate.
#[tokio::test]
async fn the_openapi_document_describes_a_signal_alert() {
    let doc = openapi(&fixture().app).await;
    let v = jsonschema::validator_for(&response_schema(&doc, "/v1/alerts", "200")).unwrap();
    let mut signal = one_alert();
    signal.kind = schemas::api::AlertKind::HoleCardPlay;
    signal.signal = Some(schemas::api::DecisionSignal {
        table: "CSP6-01".into(),
        round: 512,
        kind: "hole_card_play".into(),
        subject: "box 3".into(),
        box_no: Some(3),
        dealer: None,
        statistic_milli: 9_512,
        threshold_milli: 9_210,
        false_alarms_milli_per_1000_rounds: 1_000,
        run_rounds: 40,
        moved: vec![schemas::api::SignalMove {
            round: 505,
            box_no: 3,
            by_milli: 1_200,
            text: "raised A-Q-4; the dealer did not qualify".into(),
            table: None,
        }],
        hold: None,
    });
    let list = json!({"alerts": [one_alert(), signal.clone()]});
    assert!(v.is_valid(&list), "{list}");
    let mut unknown = json!({"alerts": [signal.clone()]});
    unknown["alerts"][0]["kind"] = json!("hole_carding");
    assert!(!v.is_valid(&unknown));
    let mut no_rounds = json!({"alerts": [signal]});
    no_rounds["alerts"][0]["signal"]
        .as_object_mut()
        .unwrap()
        .remove("moved");
    assert!(!v.is_valid(&no_rounds));
}

fn one_alert() -> schemas::api::Alert {
    schemas::api::Alert {
        table: schemas::TableId::new("CSP6-01").unwrap(),
        kind: schemas::api::AlertKind::RefusedPublisher,
        count: 3,
        last_stream_seq: 41,
        detail: "signature_invalid: quarantine entry 2".into(),
        raised_at_ns: 1,
        last_at_ns: 2,
        signal: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_socket_serves_the_api_ui_and_the_live_feed() {
    use std::io::{BufRead, BufReader, Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let ledger = Arc::new(ledger::Ledger::open(dir.path().join("ledger")).unwrap());
    seed(&ledger, 2, 5, 11, false);
    let config = api::ApiConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        access: access(),
        state_dir: dir.path().join("api"),
        model_dir: dir.path().join("readmodel"),
        alerts: Some(api::AlertSource(Arc::new(|| vec![one_alert()]))),
        finance: api::FinanceSetup::default(),
        tls: None,
        access_file: None,
        time_zone: "Asia/Singapore".into(),
        ingesting: false,
        recorder_offset_ms: Some(-2_500),
        stuck_after_s: Some(42),
        failures_per_minute_max: None,
        decision_analytics: None,
        signal_sink: None,
        records: None,
        edges: None,
    };
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(api::run(
        config,
        ledger.clone(),
        move |a| addr_tx.send(a).unwrap(),
        async move {
            let _ = stop_rx.await;
        },
    ));
    let addr = addr_rx.recv().unwrap();
    let l2 = ledger.clone();
    let result = tokio::task::spawn_blocking(move || {
        let get = |path: &str, token: Option<&str>| -> String {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            let auth = token
                .map(|t| format!("Authorization: Bearer {t}\r\n"))
                .unwrap_or_default();
            write!(
                s,
                "GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n"
            )
            .unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).unwrap();
            out
        };
        let tables = get("/v1/tables", Some(SURV));
        assert!(tables.starts_with("HTTP/1.1 200"), "{tables}");
        // A server without ingest says so: its live feed carries nothing new.
        let who = get("/v1/whoami", Some(SURV));
        assert!(who.contains("\"ingesting\":false"), "{who}");
        // The recorder's clock offset reaches the pages, which show recorder times by it.
        assert!(who.contains("\"recorder_offset_ms\":-2500"), "{who}");
        assert!(who.contains("\"stuck_after_s\":42"), "{who}");
        // Ingest's alerts, for surveillance (not finance).
        let alerts = get("/v1/alerts", Some(SURV));
        assert!(alerts.starts_with("HTTP/1.1 200"), "{alerts}");
        assert!(
            alerts.contains("\"kind\":\"refused_publisher\",\"count\":3"),
            "{alerts}"
        );
        assert!(get("/v1/alerts", Some(FIN)).starts_with("HTTP/1.1 403"));
        assert!(tables.contains("\"table\""));
        assert!(get("/v1/tables", None).starts_with("HTTP/1.1 401"));
        let page = get("/", None);
        assert!(page.starts_with("HTTP/1.1 200") && page.contains("Dispute queue"));
        assert!(get("/ui/app.js", None).contains("sessionStorage"));
        // The live feed: subscribe, then more rounds arrive; the feed announces them.
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        write!(
            s,
            "GET /v1/feed HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {SURV}\r\n\r\n"
        )
        .unwrap();
        let mut r = BufReader::new(s);
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        assert!(line.starts_with("HTTP/1.1 200"), "{line}");
        // Let the subscription settle before new events arrive.
        std::thread::sleep(std::time::Duration::from_millis(300));
        seed_more(&l2);
        let mut saw_round = false;
        for _ in 0..10_000 {
            line.clear();
            if r.read_line(&mut line).unwrap() == 0 {
                break;
            }
            if line.starts_with("event: round") {
                saw_round = true;
                break;
            }
        }
        saw_round
    })
    .await
    .unwrap();
    assert!(result, "the feed announced a new round");
    stop_tx.send(()).unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(10), server)
        .await
        .expect("graceful shutdown ends the feed")
        .unwrap()
        .unwrap();
}

/// A new table plays two rounds and closes: its rounds reach the index and the feed.
fn seed_more(ledger: &ledger::Ledger) {
    let config = simulator::default_config(schemas::RuleSet::Csp6);
    let mut t = simulator::TableSim::new(
        schemas::TableId::new("LATE-01").unwrap(),
        config,
        5,
        simulator::FaultPlan::none(),
    )
    .unwrap();
    let mut all = t.opening_events().unwrap();
    all.extend(t.play_round().unwrap().events);
    all.extend(t.play_round().unwrap().events);
    all.extend(t.closing_events().unwrap());
    let base = ledger.reader().stats().events + 1000;
    let batch: Vec<ledger::Incoming> = all
        .into_iter()
        .enumerate()
        .map(|(i, p)| ledger::Incoming {
            subject_table: Some(p.event.table.clone()),
            stream_seq: base + i as u64,
            received_at_ns: p.event.occurred_at_ns,
            bytes: p.bytes,
            provenance: Default::default(),
        })
        .collect();
    ledger.writer().append_batch(&batch).unwrap();
    ledger.flush().unwrap();
}

/// Appends events as ingest would (arrival order = the order given).
fn append(ledger: &ledger::Ledger, events: &[simulator::Published]) {
    let base = ledger.reader().stats().events + 1;
    let batch: Vec<ledger::Incoming> = events
        .iter()
        .enumerate()
        .map(|(i, p)| ledger::Incoming {
            subject_table: Some(p.event.table.clone()),
            stream_seq: base + i as u64,
            received_at_ns: p.event.occurred_at_ns,
            bytes: p.bytes.clone(),
            provenance: Default::default(),
        })
        .collect();
    ledger.writer().append_batch(&batch).unwrap();
    ledger.flush().unwrap();
}

/// The newest round of a table is listed from its first stored event (in progress, nothing
/// decided), and with its verdict as soon as `RoundClosed` is stored, before the next round
/// begins; the feed announces each once.
#[tokio::test]
async fn the_newest_round_is_listed_from_its_first_event() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Arc::new(ledger::Ledger::open(dir.path().join("ledger")).unwrap());
    let (_stop, rx) = tokio::sync::watch::channel(false);
    let state = api::AppState::new(
        ledger.clone(),
        &access(),
        &dir.path().join("api"),
        &dir.path().join("readmodel"),
        clock,
        rx,
        api::FinanceSetup::default(),
    )
    .unwrap();
    let app = api::router(state.clone());
    let mut feed = state.feed.subscribe();
    // Every round of this table has a wrong payout: a disputed verdict to wait for.
    let mut plan = simulator::FaultPlan::none();
    plan.wrong_payout = 1.0;
    let mut t = simulator::TableSim::new(
        schemas::TableId::new("NEW-01").unwrap(),
        simulator::default_config(schemas::RuleSet::Csp6),
        3,
        plan,
    )
    .unwrap();
    let opening = t.opening_events().unwrap();
    let round1 = t.play_round().unwrap().events;
    let round2 = t.play_round().unwrap().events;
    let rounds = |app: axum::Router, q: String| async move {
        let (s, page) = get(&app, &format!("/v1/rounds?table=NEW-01{q}"), SURV).await;
        assert_eq!(s, StatusCode::OK, "{page}");
        page
    };

    // Round 1's first event (after the cage's events between rounds, if any): listed,
    // in progress, nothing decided.
    let first = round1.iter().position(|p| p.event.round.is_some()).unwrap();
    append(&ledger, &opening);
    append(&ledger, &round1[..=first]);
    state.index_all().unwrap();
    let page = rounds(app.clone(), "".into()).await;
    assert_eq!(
        page["total"], 1,
        "the round is listed from its first event: {page}"
    );
    let row = &page["items"][0];
    assert_eq!(row["round"], 1);
    assert_eq!(row["in_progress"], true);
    assert_eq!(row["closed_at_ns"], Value::Null);
    assert_eq!(row["first_seq"], row["last_seq"]);
    // No verdict yet: a verdict filter does not list it.
    assert_eq!(
        rounds(app.clone(), "&verdict=clean".into()).await["total"],
        0
    );
    let (s, d) = get(&app, "/v1/tables/NEW-01/rounds/1", SURV).await;
    assert_eq!(s, StatusCode::OK, "{d}");
    assert_eq!(d["row"]["in_progress"], true);

    // Through its first bet: a search by that box finds it in progress, by another not.
    let bet = round1
        .iter()
        .position(|e| matches!(e.event.body, schemas::EventBody::BetPlaced { .. }))
        .expect("round 1 has a bet");
    let schemas::EventBody::BetPlaced { box_no, .. } = &round1[bet].event.body else {
        unreachable!()
    };
    append(&ledger, &round1[first + 1..=bet]);
    state.index_all().unwrap();
    let by_box = rounds(app.clone(), format!("&box={}", box_no.0)).await;
    assert_eq!(by_box["total"], 1, "{by_box}");
    assert_eq!(by_box["items"][0]["in_progress"], true);
    assert_eq!(by_box["items"][0]["boxes"], serde_json::json!([box_no.0]));
    let other = (box_no.0 % 7) + 1;
    assert_eq!(
        rounds(app.clone(), format!("&box={other}")).await["total"],
        0
    );
    let (_, d) = get(&app, "/v1/tables/NEW-01/rounds/1", SURV).await;
    assert_eq!(d["row"]["boxes"], serde_json::json!([box_no.0]), "{d}");

    // The rest of round 1, through RoundClosed: its verdict, before round 2 begins.
    append(&ledger, &round1[bet + 1..]);
    state.index_all().unwrap();
    let page = rounds(app.clone(), "".into()).await;
    assert_eq!(page["total"], 1, "{page}");
    let row = &page["items"][0];
    assert_eq!(row["in_progress"], false, "{row}");
    assert_eq!(row["verdict"], "disputed", "{row}");
    assert!(row["closed_at_ns"].is_i64());
    assert_eq!(row["last_seq"], round1.last().unwrap().event.seq.0);
    assert_eq!(
        rounds(app.clone(), "&verdict=disputed".into()).await["total"],
        1
    );
    let (_, dp) = get(&app, "/v1/disputes?table=NEW-01", SURV).await;
    assert!(dp["total"].as_u64().unwrap() > 0, "{dp}");

    // Round 2 begins: round 1 keeps its verdict, round 2 is listed in progress.
    append(&ledger, &round2[..1]);
    state.index_all().unwrap();
    let page = rounds(app.clone(), "".into()).await;
    assert_eq!(page["total"], 2, "{page}");
    assert_eq!(page["items"][0]["round"], 2);
    assert_eq!(page["items"][0]["in_progress"], true);
    assert_eq!(page["items"][1]["verdict"], "disputed");

    // The feed: round 1 in progress, round 1 disputed (once: the replayer's later report of
    // the same outcome is not announced again), round 2 in progress.
    let mut announced = Vec::new();
    while let Ok(item) = feed.try_recv() {
        if let schemas::api::FeedItem::Round { round } = item {
            announced.push((round.round.0, round.in_progress, round.verdict));
        }
    }
    use schemas::report::Verdict;
    assert_eq!(
        announced,
        vec![
            (1, true, Verdict::Clean),
            (1, false, Verdict::Disputed),
            (2, true, Verdict::Clean)
        ]
    );
}

/// Surveillance sees the quarantine (newest first, filtered by reason and by table, counted
/// by reason, with the chain head `verify` checks; one entry with all its bytes) and, per
/// table, how far device-signed checkpoints attest the chain and which events are missing
/// behind a gap, since when. Finance sees none of it.
#[tokio::test]
async fn the_quarantine_attestation_and_gaps_are_served() {
    let f = fixture();
    let seeded = f.ledger.reader().heads()[0].clone();
    // A table whose 6th event never arrives: the events after it are held.
    let mut t = simulator::TableSim::new(
        schemas::TableId::new("GAP-01").unwrap(),
        simulator::default_config(schemas::RuleSet::Csp6),
        5,
        simulator::FaultPlan::none(),
    )
    .unwrap();
    let mut events = t.opening_events().unwrap();
    events.extend(t.play_round().unwrap().events);
    let withheld = events.remove(5);
    append(&f.ledger, &events);
    // Four messages that do not decode (three on the seeded table's subject, one on
    // GAP-01's), then GAP-01's first event on the seeded table's subject.
    let stream_base = 1_000_000;
    let junk = |n: u64, table: &schemas::TableId| ledger::Incoming {
        bytes: format!("not an event #{n}").into_bytes(),
        subject_table: Some(table.clone()),
        stream_seq: stream_base + n,
        received_at_ns: clock(),
        provenance: Default::default(),
    };
    let gap_table = schemas::TableId::new("GAP-01").unwrap();
    let misrouted = ledger::Incoming {
        bytes: events[0].bytes.clone(),
        subject_table: Some(seeded.table.clone()),
        stream_seq: stream_base + 9,
        received_at_ns: clock(),
        provenance: Default::default(),
    };
    let batch = [
        junk(0, &seeded.table),
        junk(1, &seeded.table),
        junk(2, &gap_table),
        junk(3, &seeded.table),
        misrouted,
    ];
    for o in f.ledger.writer().append_batch(&batch).unwrap() {
        assert!(
            matches!(
                o,
                ledger::Appended::Refused(ledger::Refused::Quarantined { .. })
            ),
            "{o:?}"
        );
    }
    f.ledger.flush().unwrap();

    let (s, q) = get(&f.app, "/v1/quarantine", SURV).await;
    assert_eq!(s, StatusCode::OK, "{q}");
    assert_eq!(q["total"], 5);
    let ids: Vec<u64> = q["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, [4, 3, 2, 1, 0], "newest first");
    assert_eq!(
        q["by_reason"],
        json!({"undecodable": 4, "wrong_subject": 1})
    );
    let head = f.ledger.reader().quarantine_head();
    assert_eq!(q["head"]["entries"], 5);
    assert_eq!(q["head"]["hash"], head.hash.to_string());
    assert_eq!(q["items"][1]["bytes_hex"], hex::encode(b"not an event #3"));
    assert_eq!(q["items"][1]["stream_seq"], stream_base + 3);

    let (_, q) = get(&f.app, "/v1/quarantine?reason=wrong_subject", SURV).await;
    assert_eq!(q["total"], 1);
    let row = &q["items"][0];
    assert_eq!(row["subject_table"], seeded.table.as_str());
    let bytes = &events[0].bytes;
    assert_eq!(row["bytes_len"], bytes.len());
    assert_eq!(
        row["bytes_hex"],
        hex::encode(&bytes[..schemas::api::QUARANTINE_PREVIEW_BYTES])
    );
    let (s, whole) = get(&f.app, &format!("/v1/quarantine/{}", row["id"]), SURV).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        whole["bytes_hex"],
        hex::encode(bytes),
        "all the bytes, verbatim"
    );
    let (_, q) = get(&f.app, "/v1/quarantine?table=GAP-01", SURV).await;
    assert_eq!(q["total"], 1);
    assert_eq!(q["items"][0]["id"], 2);
    let (_, q) = get(&f.app, "/v1/quarantine?limit=2&offset=1", SURV).await;
    assert_eq!(
        (q["total"].clone(), q["items"][0]["id"].clone()),
        (json!(5), json!(3))
    );
    assert_eq!(q["items"][1]["id"], 2);
    let (s, _) = get(&f.app, "/v1/quarantine/99", SURV).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, _) = get(&f.app, "/v1/quarantine?table=bad.id", SURV).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    for p in ["/v1/quarantine", "/v1/quarantine/0"] {
        let (s, _) = get(&f.app, p, FIN).await;
        assert_eq!(s, StatusCode::FORBIDDEN, "finance must not read {p}");
    }

    // The seeded tables are attested to their heads; GAP-01 by nothing yet, with seq 6
    // missing since its first held event arrived.
    let chain_of = |chain: &Value, t: &str| {
        chain
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["table"] == t)
            .cloned()
            .unwrap_or_else(|| panic!("{t} in {chain}"))
    };
    let (_, chain) = get(&f.app, "/v1/chain", SURV).await;
    let c = chain_of(&chain, seeded.table.as_str());
    assert_eq!(c["attested_through"], c["head_seq"], "{c}");
    assert_eq!(c["gap"], Value::Null);
    let c = chain_of(&chain, "GAP-01");
    assert_eq!(c["head_seq"], 5);
    assert_eq!(c["attested_through"], Value::Null);
    assert_eq!(
        c["gap"],
        json!({
            "missing_from": 6,
            "missing_to": 6,
            "held": events.len() - 5,
            "since_ns": events[5].event.occurred_at_ns,
            "held_last": events.len() + 1,
            "held_bytes": events[5..].iter().map(|p| p.bytes.len()).sum::<usize>(),
            // Nothing of the gap was received: no refusal to blame.
            "blocked_by": null,
        })
    );
    // The missing event arrives: the gap closes.
    append(&f.ledger, &[withheld]);
    let (_, chain) = get(&f.app, "/v1/chain", SURV).await;
    let c = chain_of(&chain, "GAP-01");
    assert_eq!(c["gap"], Value::Null);
    assert_eq!(c["head_seq"], events.len() + 1);
    assert!(f.ledger.verifier().verify().unwrap().is_ok());
}

/// Sends `req` to the router: status, headers and body bytes.
async fn raw(
    app: &axum::Router,
    req: Request<Body>,
) -> (StatusCode, axum::http::HeaderMap, axum::body::Bytes) {
    let res = app.clone().oneshot(req).await.unwrap();
    let (parts, body) = res.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 28).await.unwrap();
    (parts.status, parts.headers, bytes)
}

/// A GET with the given `Authorization` headers.
fn get_with(path: &str, authorization: &[&str]) -> Request<Body> {
    let mut req = Request::builder().uri(path);
    for a in authorization {
        req = req.header("authorization", *a);
    }
    req.body(Body::empty()).unwrap()
}

/// The error body of a response: JSON `ApiError` with a message, or a panic naming `what`.
fn api_error(what: &str, headers: &axum::http::HeaderMap, body: &[u8]) -> schemas::api::ApiError {
    let ct = headers.get("content-type").map(|v| v.to_str().unwrap());
    assert_eq!(ct, Some("application/json"), "{what}");
    let e: schemas::api::ApiError = serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("{what}: {e}: {}", String::from_utf8_lossy(body)));
    assert!(!e.error.is_empty(), "{what}");
    e
}

/// The operations whose parameters are a query.
const QUERY_OPERATIONS: [&str; 8] = [
    "/v1/audit",
    "/v1/cases",
    "/v1/disputes",
    "/v1/export",
    "/v1/finance",
    "/v1/findings",
    "/v1/quarantine",
    "/v1/rounds",
];

async fn openapi(app: &axum::Router) -> Value {
    let (s, doc) = call(app, "GET", "/openapi.json", None, None).await;
    assert_eq!(s, StatusCode::OK);
    doc
}

/// Every operation of the document, as (path, method, operation).
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            ops.push((path.clone(), method.clone(), op.clone()));
        }
    }
    ops
}

#[tokio::test]
async fn the_openapi_document_puts_each_parameter_where_the_server_reads_it() {
    let f = fixture();
    let doc = openapi(&f.app).await;
    let mut queries = 0;
    for (path, method, op) in operations(&doc) {
        let template: Vec<&str> = path
            .split('/')
            .filter_map(|p| p.strip_prefix('{')?.strip_suffix('}'))
            .collect();
        let params = op["parameters"].as_array().cloned().unwrap_or_default();
        let in_path: Vec<&str> = params
            .iter()
            .filter(|p| p["in"] == "path")
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        for name in &in_path {
            assert!(
                template.contains(name),
                "{method} {path}: {name} is not in the path"
            );
        }
        for name in &template {
            assert!(
                in_path.contains(name),
                "{method} {path}: {name} is not declared"
            );
        }
        if !QUERY_OPERATIONS.contains(&path.as_str()) || method != "get" {
            continue;
        }
        assert!(!params.is_empty(), "{path} declares its query");
        for p in &params {
            let what = format!("{path} {}", p["name"]);
            assert_eq!(p["in"], "query", "{what}");
            assert_ne!(
                p["required"], true,
                "{what}: every query parameter is optional"
            );
            let schema = &p["schema"];
            match p["name"].as_str().unwrap() {
                "table" => assert_eq!(schema["pattern"], "^[A-Za-z0-9_-]{1,32}$", "{what}"),
                "limit" => {
                    assert_eq!(schema["minimum"], 1, "{what}");
                    assert!(schema["maximum"].as_u64().unwrap() >= 500, "{what}");
                }
                "offset" => assert_eq!(schema["maximum"], 9007199254740991u64, "{what}"),
                _ => {}
            }
            queries += 1;
        }
    }
    // Rounds, disputes and findings each take `day` and `shift` too (tests/search.rs),
    // and the 12 narrowing, sorting and format parameters of `narrow` (dealer included).
    assert_eq!(queries, 76, "the 8 operations' query parameters");
    // The table id grammar the pattern states is the server's.
    assert_eq!(schemas::ids::ID_LEN_MAX, 32);
    let round_table = &doc["paths"]["/v1/tables/{table}/rounds/{round}"]["get"]["parameters"][0];
    assert_eq!(round_table["schema"]["pattern"], "^[A-Za-z0-9_-]{1,32}$");
}

#[tokio::test]
async fn every_operation_documents_401_and_every_response_a_description() {
    let f = fixture();
    let doc = openapi(&f.app).await;
    let ops = operations(&doc);
    assert!(ops.len() >= 24, "{}", ops.len());
    for (path, method, op) in ops {
        let responses = op["responses"].as_object().unwrap();
        for (status, r) in responses {
            let d = r["description"].as_str().unwrap_or("");
            assert!(
                !d.trim().is_empty(),
                "{method} {path} {status} has no description"
            );
            if status.starts_with('4') || status.starts_with('5') {
                assert_eq!(
                    r["content"]["application/json"]["schema"]["$ref"],
                    "#/components/schemas/ApiError",
                    "{method} {path} {status}"
                );
            }
        }
        if path.starts_with("/v1/") {
            for s in ["400", "401", "503"] {
                assert!(responses.contains_key(s), "{method} {path} lacks {s}");
            }
        }
        if method == "post" {
            for s in ["415", "422"] {
                assert!(responses.contains_key(s), "{method} {path} lacks {s}");
            }
        }
    }
    let audit = &doc["paths"]["/v1/audit"]["get"]["responses"];
    assert!(
        audit["403"].is_object(),
        "an area some role may not use documents 403"
    );
    let whoami = &doc["paths"]["/v1/whoami"]["get"]["responses"];
    assert!(whoami["403"].is_null(), "every role may ask who it is");
}

#[tokio::test]
async fn rejections_before_a_handler_runs_are_json_api_errors() {
    let f = fixture();
    let bearer = format!("Bearer {SURV}");
    let cases = [
        (
            "/v1/findings?to_ns=9223372036854775808",
            StatusCode::BAD_REQUEST,
        ),
        ("/v1/cases/-1", StatusCode::BAD_REQUEST),
        ("/v1/rounds?limit=false", StatusCode::BAD_REQUEST),
        ("/v1/rounds?tabel=X", StatusCode::BAD_REQUEST),
        ("/v1/rounds?limit=0", StatusCode::BAD_REQUEST),
        ("/v1/rounds?limit=501", StatusCode::BAD_REQUEST),
        (
            "/v1/rounds?offset=9007199254740992",
            StatusCode::BAD_REQUEST,
        ),
        (
            "/v1/rounds?offset=18446744073709551616",
            StatusCode::BAD_REQUEST,
        ),
        ("/v1/rounds?table=", StatusCode::BAD_REQUEST),
    ];
    for (path, status) in cases {
        let (s, h, body) = raw(&f.app, get_with(path, &[&bearer])).await;
        assert_eq!(s, status, "{path}");
        let e = api_error(path, &h, &body);
        if path.contains("tabel") {
            assert!(
                e.error.contains("tabel"),
                "the parameter is named: {}",
                e.error
            );
        }
    }
    // A POST without a Content-Type: 415, as JSON.
    let req = Request::builder()
        .method("POST")
        .uri("/v1/cases")
        .header("authorization", &bearer)
        .body(Body::from(r#"{"table":"T","round":1,"title":"x"}"#))
        .unwrap();
    let (s, h, body) = raw(&f.app, req).await;
    assert_eq!(s, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    api_error("POST without Content-Type", &h, &body);
    // A body of the wrong shape: 422, as JSON.
    let (s, e) = call(
        &f.app,
        "POST",
        "/v1/cases",
        Some(SURV),
        Some(json!({"table": 3})),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(e["error"].is_string(), "{e}");
    // The boundaries themselves are served.
    for path in [
        "/v1/rounds?limit=1",
        "/v1/rounds?offset=9007199254740991&limit=500",
    ] {
        let (s, page) = get(&f.app, path, SURV).await;
        assert_eq!(s, StatusCode::OK, "{path}: {page}");
    }
}

#[tokio::test]
async fn the_bearer_scheme_is_case_insensitive_and_two_tokens_are_refused() {
    let f = fixture();
    for scheme in ["bearer", "BEARER", "Bearer"] {
        let a = format!("{scheme} {SURV}");
        let (s, _, _) = raw(&f.app, get_with("/v1/whoami", &[&a])).await;
        assert_eq!(s, StatusCode::OK, "{scheme}");
    }
    let (sam, ada) = (format!("Bearer {SURV}"), format!("Bearer {ADMIN}"));
    let before = f.state.audit.len();
    let (s, h, body) = raw(&f.app, get_with("/v1/audit", &[&sam, &ada])).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "neither header is picked");
    assert!(api_error("two headers", &h, &body)
        .error
        .contains("Authorization"));
    let (s, _, _) = raw(&f.app, get_with("/v1/audit", &[&ada, &sam])).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(f.state.audit.len(), before + 2, "both refusals are audited");
}

#[tokio::test]
async fn a_token_in_a_query_never_reaches_the_audit_log() {
    let f = fixture();
    let bearer = format!("Bearer {SURV}");
    for path in [
        format!("/v1/rounds?token={ADMIN}"),
        format!("/v1/tables?access_token={ADMIN}&x=1"),
        format!("/v1/chain?Authorization=Bearer%20{ADMIN}"),
        format!("/v1/status?%74oken={ADMIN}"),
    ] {
        let (s, _, _) = raw(&f.app, get_with(&path, &[])).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "a query token is no token");
        let (s, _, _) = raw(&f.app, get_with(&path, &[&bearer])).await;
        assert!(s.is_client_error() || s.is_success(), "{path}: {s}");
    }
    let log = std::fs::read_to_string(api::audit_path(&f.dir.path().join("api"))).unwrap();
    assert_eq!(log.lines().count(), 8);
    assert!(!log.contains(ADMIN), "{log}");
    assert!(!log.contains("000000000001"), "not even part of it");
    let fingerprint = &blake3::hash(ADMIN.as_bytes()).to_hex()[..16];
    assert!(
        log.contains(&format!("token=blake3:{fingerprint}")),
        "{log}"
    );
}

/// Issue 41: a token is redacted by its shape or because the server accepts it, under
/// any parameter name (the issue's `bearer`, `auth`, `api_key`, `key`, and any other),
/// as a bare key, or as a path segment: neither the journal nor `GET /v1/audit` holds it.
#[tokio::test]
async fn a_token_under_any_parameter_name_never_reaches_the_audit_log() {
    let f = fixture();
    let bearer = format!("Bearer {SURV}");
    // The shape `roundledger tokens` makes (64 hex digits), known to no server here.
    let made = "5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592";
    let mut paths = Vec::new();
    for name in ["bearer", "auth", "api_key", "key", "Session_Thing"] {
        for secret in [ADMIN, made] {
            paths.push(format!("/v1/rounds?limit=1&{name}={secret}"));
        }
    }
    paths.push(format!("/v1/rounds?auth=Bearer%20{ADMIN}"));
    paths.push(format!("/v1/rounds?{made}"));
    paths.push(format!("/v1/tables/{ADMIN}/rounds"));
    for path in &paths {
        let (s, _, _) = raw(&f.app, get_with(path, &[])).await;
        assert_eq!(
            s,
            StatusCode::UNAUTHORIZED,
            "{path}: a query token is no token"
        );
        let (s, _, _) = raw(&f.app, get_with(path, &[&bearer])).await;
        assert!(s.is_client_error(), "{path}: an unknown parameter: {s}");
    }
    let log = std::fs::read_to_string(api::audit_path(&f.dir.path().join("api"))).unwrap();
    assert_eq!(log.lines().count(), 2 * paths.len());
    let fingerprint = |t: &str| format!("blake3:{}", &blake3::hash(t.as_bytes()).to_hex()[..16]);
    for secret in [ADMIN, made] {
        assert!(!log.contains(secret), "{log}");
        assert!(
            !log.contains(&secret[secret.len() - 12..]),
            "not even part of it"
        );
        assert!(log.contains(&fingerprint(secret)), "{log}");
    }
    for name in ["bearer", "auth", "api_key", "key", "Session_Thing"] {
        assert!(
            log.contains(&format!("{name}={}", fingerprint(made))),
            "{name}"
        );
    }
    // What the API serves is the journal: redacted there too.
    let (s, audit) = get(&f.app, "/v1/audit?limit=500", ADMIN).await;
    assert_eq!(s, StatusCode::OK, "{audit}");
    let served = audit.to_string();
    assert!(served.contains(&fingerprint(made)), "{served}");
    for secret in [ADMIN, made] {
        assert!(!served.contains(secret), "{served}");
    }
}

/// A GET from client address `addr`, as the connection loop marks it.
fn get_from(addr: &str, path: &str, authorization: &[&str]) -> Request<Body> {
    let mut req = get_with(path, authorization);
    let addr = api::serve::ClientAddr(addr.parse().unwrap());
    req.extensions_mut().insert(addr);
    req
}

/// Issue 41: a desk behind one address. A finance user's 403s (cards of pages its role
/// may not read) and a surveillance user's 400s are not failures. A guesser's 401s lock
/// out requests without a valid token from that address, never a valid token.
#[tokio::test]
async fn failures_lock_out_no_valid_token_and_403s_do_not_count() {
    let f = fixture();
    let desk = "10.1.1.1:40000";
    let max = api::limit::FAILURES_PER_WINDOW_MAX as usize;
    let status = |req| {
        let app = f.app.clone();
        async move { raw(&app, req).await.0 }
    };
    let (surv, fin) = (format!("Bearer {SURV}"), format!("Bearer {FIN}"));
    for _ in 0..2 * max {
        let s = status(get_from(desk, "/v1/chain", &[&fin])).await;
        assert_eq!(s, StatusCode::FORBIDDEN);
        let s = status(get_from(desk, "/v1/rounds?tabel=X", &[&surv])).await;
        assert_eq!(s, StatusCode::BAD_REQUEST);
    }
    let wrong = "Bearer wrong-token-00000000000001";
    for n in 0..max {
        let s = status(get_from(desk, "/v1/whoami", &[wrong])).await;
        assert_eq!(
            s,
            StatusCode::UNAUTHORIZED,
            "failure {n}: 403s and 400s were not counted"
        );
    }
    // Past the limit: requests without a valid token meet 429, another wrong one too.
    let other_wrong = "Bearer wrong-token-00000000000002";
    for auth in [vec![wrong], vec![other_wrong], vec![]] {
        let s = status(get_from(desk, "/v1/whoami", &auth)).await;
        assert_eq!(s, StatusCode::TOO_MANY_REQUESTS, "{auth:?}");
    }
    // Every valid token at that address is served, on every page its role may read.
    for (token, path) in [
        (SURV, "/v1/chain"),
        (FIN, "/v1/whoami"),
        (ADMIN, "/v1/audit"),
    ] {
        let bearer = format!("Bearer {token}");
        let s = status(get_from(desk, path, &[&bearer])).await;
        assert_eq!(s, StatusCode::OK, "{token} {path}");
    }
    // A valid token's 403 is still a 403, not a 429.
    let s = status(get_from(desk, "/v1/chain", &[&fin])).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    // Another address is not limited.
    let s = status(get_from("10.1.1.2:40000", "/v1/whoami", &[wrong])).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn every_response_carries_the_security_headers() {
    let f = fixture();
    let bearer = format!("Bearer {SURV}");
    for (path, auth, api) in [
        ("/", None, false),
        ("/ui/app.js", None, false),
        ("/ui/style.css", None, false),
        ("/openapi.json", None, false),
        ("/health", None, false),
        ("/v1/tables", Some(bearer.as_str()), true),
        ("/v1/tables", None, true),
        ("/v1/rounds?tabel=X", Some(bearer.as_str()), true),
        ("/v1/nope", Some(bearer.as_str()), true),
    ] {
        let auth: Vec<&str> = auth.into_iter().collect();
        let (_, h, _) = raw(&f.app, get_with(path, &auth)).await;
        let header = |n: &str| h.get(n).map(|v| v.to_str().unwrap().to_string());
        let csp = header("content-security-policy").unwrap_or_default();
        assert!(csp.contains("default-src 'self'"), "{path}: {csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
        assert_eq!(
            header("x-content-type-options").as_deref(),
            Some("nosniff"),
            "{path}"
        );
        assert_eq!(
            header("referrer-policy").as_deref(),
            Some("no-referrer"),
            "{path}"
        );
        if api {
            assert_eq!(
                header("cache-control").as_deref(),
                Some("no-store"),
                "{path}"
            );
        }
    }
}

/// Under `default-src 'self'` the page works only without inline code: no inline script or
/// style element, no style or event handler attribute, in the page or in what app.js writes.
#[test]
fn the_ui_has_no_inline_script_or_style() {
    let html = include_str!("../ui/index.html");
    let js = include_str!("../ui/app.js");
    for (name, text) in [("index.html", html), ("app.js", js)] {
        assert!(!text.contains("style=\""), "{name} has a style attribute");
        assert!(!text.contains("<style"), "{name} has a style element");
        assert!(
            !text.contains("javascript:"),
            "{name} has a javascript: URL"
        );
        for handler in [
            " onclick=",
            " onload=",
            " onsubmit=",
            " onchange=",
            " oninput=",
        ] {
            assert!(!text.contains(handler), "{name} has an inline {handler}");
        }
    }
    let scripts: Vec<&str> = html.split("<script").skip(1).collect();
    assert!(!scripts.is_empty());
    for s in scripts {
        assert!(
            s.trim_start().starts_with("src="),
            "inline script: <script{s:.40}"
        );
    }
}

/// A connection that sends no request head, or stays idle after one, is closed after the
/// header read timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_or_idle_connection_is_closed() {
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};
    let f = fixture();
    let listener = api::serve::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let timeouts = api::serve::Timeouts {
        header_read: Duration::from_millis(300),
        write_stall: Duration::from_secs(5),
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(api::serve::serve(
        listener,
        f.app.clone(),
        timeouts,
        async move {
            let _ = stop_rx.await;
        },
    ));
    let waited = tokio::task::spawn_blocking(move || {
        let read_all = |s: &mut std::net::TcpStream| {
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut out = Vec::new();
            let _ = s.read_to_end(&mut out);
            String::from_utf8_lossy(&out).into_owned()
        };
        let start = Instant::now();
        let mut silent = std::net::TcpStream::connect(addr).unwrap();
        read_all(&mut silent);
        let silent_for = start.elapsed();
        let start = Instant::now();
        let mut idle = std::net::TcpStream::connect(addr).unwrap();
        write!(idle, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let answer = read_all(&mut idle);
        (silent_for, start.elapsed(), answer)
    })
    .await
    .unwrap();
    let (silent_for, idle_for, answer) = waited;
    assert!(silent_for < Duration::from_secs(5), "{silent_for:?}");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(idle_for < Duration::from_secs(5), "{idle_for:?}");
    stop_tx.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("shutdown")
        .unwrap();
}

// ---- The read model

/// A state on the fixture's ledger and read model, as a restarted server has it.
fn restart(dir: &std::path::Path, ledger: &Arc<ledger::Ledger>) -> api::Shared {
    let (_stop, rx) = tokio::sync::watch::channel(false);
    api::AppState::new(
        ledger.clone(),
        &access(),
        &dir.join("api"),
        &dir.join("readmodel"),
        clock,
        rx,
        api::FinanceSetup::default(),
    )
    .unwrap()
}

/// What the lists say: every list and summary the read model serves.
async fn lists(app: &axum::Router) -> Vec<Value> {
    let (_, tables) = get(app, "/v1/tables", ADMIN).await;
    let name = |i: usize| tables[i]["table"].as_str().unwrap().to_string();
    let (t1, t2) = (name(0), name(1));
    let mut out = Vec::new();
    for path in [
        "/v1/rounds?limit=500".to_string(),
        format!("/v1/rounds?table={t1}&limit=500"),
        format!("/v1/rounds?table={t1}&from_ns=0&limit=7&offset=3"),
        "/v1/rounds?box=2&limit=500".into(),
        format!("/v1/rounds?table={t2}&box=1&limit=500"),
        "/v1/rounds?verdict=disputed&limit=500".into(),
        "/v1/findings?limit=500".into(),
        "/v1/findings?severity=warning&limit=500".into(),
        format!("/v1/findings?table={t2}&limit=500"),
        "/v1/disputes?limit=500".into(),
        format!("/v1/disputes?table={t1}&limit=500"),
        "/v1/tables".into(),
        "/v1/chain".into(),
        "/v1/finance".into(),
        "/v1/status".into(),
    ] {
        let (s, v) = get(app, &path, ADMIN).await;
        assert_eq!(s, StatusCode::OK, "{path}: {v}");
        out.push(v);
    }
    out
}

/// The model a restarted server resumes, also mid-round, equals a fresh rebuild from
/// the ledger, key for key, and serves the same lists.
#[tokio::test]
async fn the_read_model_resumes_after_a_restart_and_equals_a_fresh_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Arc::new(ledger::Ledger::open(dir.path().join("ledger")).unwrap());
    let mut plan = simulator::FaultPlan::all(0.05);
    plan.wrong_payout = 0.3;
    let mut floor = simulator::Floor::new(3, 21, plan).unwrap();
    for t in floor.tables.iter_mut() {
        append(&ledger, &t.opening_events().unwrap());
    }
    for step in 0..12 {
        let state = restart(dir.path(), &ledger);
        for t in floor.tables.iter_mut() {
            let events = t.play_round().unwrap().events;
            // Stop mid-round: the rest of it arrives after the restart.
            let cut = events.len() * (step % 3 + 1) / 4;
            append(&ledger, &events[..cut]);
            state.index_all().unwrap();
            append(&ledger, &events[cut..]);
        }
        if step % 2 == 0 {
            state.index_all().unwrap();
        }
        state.model.flush().unwrap();
    }
    for t in floor.tables.iter_mut() {
        append(&ledger, &t.closing_events().unwrap());
    }
    let state = restart(dir.path(), &ledger);
    state.index_all().unwrap();
    let fresh = readside::model::Model::temporary(state.model.rule()).unwrap();
    readside::index::catch_up(&ledger, &fresh).unwrap();
    let diffs = state.model.differences(&fresh, 20).unwrap();
    assert!(diffs.is_empty(), "{diffs:#?}");
    let resumed = lists(&api::router(state.clone())).await;
    state.model.flush().unwrap();
    drop(state);
    std::fs::remove_dir_all(dir.path().join("readmodel")).unwrap();
    let rebuilt = restart(dir.path(), &ledger);
    rebuilt.index_all().unwrap();
    assert_eq!(resumed, lists(&api::router(rebuilt.clone())).await);
    let rounds = resumed[0]["total"].as_u64().unwrap();
    assert_eq!(rounds, 36, "every round is listed once");
}

/// The model's store opened directly (`readside::kv`), below the model's seals, as a hand
/// or a disk fault would change it.
fn raw_model(dir: &std::path::Path) -> readside::kv::ModelKv {
    readside::kv::ModelKv::open(dir).unwrap()
}

/// A changed byte in a row is refused (500 naming the check), never served; a model of
/// another version is rebuilt at start and serves what it served before.
#[tokio::test]
async fn a_corrupted_or_wrong_version_model_is_refused_or_rebuilt() {
    let f = fixture();
    let before = lists(&f.app).await;
    f.state.model.flush().unwrap();
    let (dir, ledger) = (f.dir, f.ledger);
    drop((f.app, f.state, f._stop));
    let db = raw_model(&dir.path().join("readmodel"));
    let (k, v) = db.scan_prefix(b"r").first().unwrap().unwrap();
    let mut changed = v.to_vec();
    let last = changed.len() - 2;
    changed[last] ^= 0x01;
    db.insert(&k, changed).unwrap();
    db.flush().unwrap();
    drop(db);
    let state = restart(dir.path(), &ledger);
    let app = api::router(state.clone());
    let (s, body) = get(&app, "/v1/rounds?limit=500", SURV).await;
    assert_eq!(s, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert!(body.to_string().contains("fails its check"), "{body}");
    drop((app, state));

    let db = raw_model(&dir.path().join("readmodel"));
    db.insert(b"v", 99u32.to_be_bytes().to_vec()).unwrap();
    db.flush().unwrap();
    drop(db);
    let state = restart(dir.path(), &ledger);
    assert_eq!(state.model.meta().unwrap().rounds, 0, "cleared at start");
    state.index_all().unwrap();
    assert_eq!(before, lists(&api::router(state)).await);
}

/// A model left by another ledger (here: one with fewer rounds, a model ahead of it) is
/// rebuilt from the ledger at hand, never served.
#[tokio::test]
async fn a_model_of_another_ledger_is_rebuilt() {
    let f = fixture();
    f.state.model.flush().unwrap();
    let model_dir = f.dir.path().join("readmodel");
    drop((f.app, f.state, f._stop));
    let other = tempfile::tempdir().unwrap();
    let ledger = Arc::new(ledger::Ledger::open(other.path().join("ledger")).unwrap());
    seed(&ledger, 3, 10, 5, false);
    std::fs::rename(&model_dir, other.path().join("readmodel")).unwrap();
    let moved = restart(other.path(), &ledger);
    moved.index_all().unwrap();
    let served = lists(&api::router(moved.clone())).await;
    moved.model.flush().unwrap();
    drop(moved);
    std::fs::remove_dir_all(other.path().join("readmodel")).unwrap();
    let fresh = restart(other.path(), &ledger);
    fresh.index_all().unwrap();
    assert_eq!(served, lists(&api::router(fresh)).await);
}

/// Events a server reads at start once its model is current: about one round per table,
/// whatever the history (a start resumes from cursors, it does not replay). With the
/// tables closed, the very same count at 10 and 100 rounds a table.
#[test]
fn a_start_reads_the_same_events_whatever_the_history() {
    for close in [true, false] {
        let mut read = Vec::new();
        for rounds in [10, 100] {
            let dir = tempfile::tempdir().unwrap();
            let ledger = Arc::new(ledger::Ledger::open(dir.path().join("ledger")).unwrap());
            seed(&ledger, 3, rounds, 7, close);
            let first = restart(dir.path(), &ledger);
            first.index_all().unwrap();
            let stored = ledger.reader().stats().events;
            assert_eq!(first.index_events_read(), stored);
            first.model.flush().unwrap();
            drop(first);
            let again = restart(dir.path(), &ledger);
            again.index_all().unwrap();
            assert_eq!(again.model.meta().unwrap().events_indexed, stored);
            read.push((stored, again.index_events_read()));
        }
        println!("close {close}: (events stored, events read at start): {read:?}");
        let (small, large) = (read[0], read[1]);
        assert!(large.0 >= 9 * small.0, "{read:?}");
        // A round of the simulated games is under 100 events, its window with it.
        assert!(small.1 < 3 * 100 && large.1 < 3 * 100, "{read:?}");
        if close {
            assert_eq!(small.1, large.1, "{read:?}");
        }
    }
}

/// A fenced table is shown as damaged: `/v1/tables` and `/v1/chain` carry its fence, its
/// chain status is not ok, the other tables carry none, and indexing goes on without it.
#[tokio::test]
async fn a_fenced_table_is_shown_as_damaged() {
    let f = fixture();
    let heads = f.ledger.reader().heads();
    let fenced = heads[0].table.clone();
    let error = ledger::Error::CorruptRecord {
        detail: "a record of the test".into(),
    };
    let _ = f.ledger.writer().fence_after_read_error(&fenced, error);
    let (s, tables) = get(&f.app, "/v1/tables", SURV).await;
    assert_eq!(s, StatusCode::OK, "{tables}");
    let (s, chain) = get(&f.app, "/v1/chain", SURV).await;
    assert_eq!(s, StatusCode::OK, "{chain}");
    for list in [&tables, &chain] {
        for t in list.as_array().expect("a list") {
            let fence = t.get("fenced").and_then(Value::as_str);
            match t["table"].as_str() == Some(fenced.as_str()) {
                true => assert!(
                    fence.is_some_and(|d| d.starts_with("record_unreadable: ")),
                    "{t}"
                ),
                false => assert!(fence.is_none(), "{t}"),
            }
        }
    }
    let row = chain
        .as_array()
        .expect("a list")
        .iter()
        .find(|c| c["table"].as_str() == Some(fenced.as_str()))
        .expect("the fenced table's chain");
    assert_eq!(row["ok"], json!(false));
    f.state
        .index_all()
        .expect("indexing goes on without the fenced table");
}
