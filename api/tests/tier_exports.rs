//! `GET /v1/export` over an archived and a removed gaming day, in process, over a real sled
//! ledger the simulator's tables fill. An archived day exports byte for byte as it did hot.
//! An export that covers a removed day answers 410 Gone with an `ApiError`, never a body
//! with a gap. A round range after the day exports from the head its seal proves.

mod common;

use ledger::tier::retention::Removal;
use schemas::api::ApiError;
use std::sync::Arc;

const SURV: &str = "surveillance-token-000000000001";
use common::{tier_rule as rule, TIER_DAYS as DAYS};
const DAY_NS: i64 = 86_400 * 1_000_000_000;

/// Two tables, both days sealed (`common::seed_two_days`).
fn seed(ledger: &ledger::Ledger, rounds: u64) {
    common::seed_two_days(ledger, rounds, simulator::FaultPlan::none());
}

/// `GET path` with the surveillance token: status and body.
async fn get(app: &axum::Router, path: &str) -> (axum::http::StatusCode, Vec<u8>) {
    common::get_bytes(app, path, SURV).await
}

/// The body of a 200, which must verify as an export: its summary.
fn verified(
    path: &str,
    status: axum::http::StatusCode,
    body: &[u8],
) -> proofs::export::ExportSummary {
    assert_eq!(
        status,
        axum::http::StatusCode::OK,
        "{path}: {}",
        String::from_utf8_lossy(body)
    );
    proofs::export::verify_export(body).unwrap()
}

/// Two rounds of `table` that begin after `day`'s sealed head: `A..B`, and the head's seq.
fn rounds_after(ledger: &ledger::Ledger, table: &schemas::TableId, day: &str) -> (String, u64) {
    let (last, _) = ledger.reader().sealed_head_at(day, table).unwrap().unwrap();
    let rounds = ledger.reader().rounds(table).unwrap();
    let after: Vec<_> = rounds.iter().filter(|r| r.first_seq.0 > last).collect();
    assert!(after.len() >= 2, "{} rounds after the day", after.len());
    (format!("{}..{}", after[0].round.0, after[1].round.0), last)
}

#[tokio::test]
async fn an_export_over_a_removed_day_is_gone_and_one_after_it_verifies() {
    if ledger::store::choice::skip_unless_sled("the archive tier is SledStore's (redb has no tier)")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ledger = Arc::new(ledger::Ledger::open(dir.path().join("ledger")).unwrap());
    seed(&ledger, 30);
    let access = common::surveillance_access(SURV);
    let (app, _stop) = common::indexed_router(ledger.clone(), &access, dir.path(), "api", rule());
    let id = ledger.reader().tables()[0].clone();
    let table = id.to_string();
    let whole = "/v1/export".to_string();
    let of_table = format!("/v1/export?table={table}");
    let (s, hot) = get(&app, &whole).await;
    verified(&whole, s, &hot);
    let (_, hot_table) = get(&app, &of_table).await;

    let (entry, _) = ledger.tier().archive_move(DAYS[0]).unwrap();
    assert!(entry.events > 20, "{entry:?}");
    assert!(
        get(&app, &whole).await.1 == hot,
        "the export differs after the move"
    );
    assert!(
        get(&app, &of_table).await.1 == hot_table,
        "the table's export differs"
    );

    let (later, last) = rounds_after(&ledger, &id, DAYS[0]);
    let now = rule().bounds(DAYS[0]).unwrap().ends_at_ns + 2 * DAY_NS;
    let act = Removal::sign(&entry, 1, &simulator::admin_key(), now);
    ledger.tier().retention_remove(&act, now).unwrap();
    for path in [&whole, &of_table, &format!("{of_table}&rounds=1..30")] {
        let (s, body) = get(&app, path).await;
        let text = String::from_utf8_lossy(&body);
        assert_eq!(s, axum::http::StatusCode::GONE, "{path}: {text}");
        let e: ApiError = serde_json::from_slice(&body).unwrap();
        assert!(
            e.error.contains("removed by retention"),
            "{path}: {}",
            e.error
        );
        assert!(e.error.contains(DAYS[0]), "{path}: {}", e.error);
    }
    let path = format!("{of_table}&rounds={later}");
    let (s, body) = get(&app, &path).await;
    let summary = verified(&path, s, &body);
    assert!(summary.tables[0].from_seq > last, "{summary:?}");
    // A range from just after the day: its anchor is the seal's head.
    let sel = ledger::ExportSelection {
        table: Some(id.clone()),
        range: ledger::ExportRange::Seqs(last + 1..=u64::MAX),
        events_max: None,
    };
    let mut out = Vec::new();
    ledger.reader().export(&sel, &mut out).unwrap();
    let summary = proofs::export::verify_export(&out[..]).unwrap();
    let (_, sealed) = ledger
        .reader()
        .sealed_head_at(DAYS[0], &id)
        .unwrap()
        .unwrap();
    assert_eq!(summary.tables[0].from_seq, last + 1, "{summary:?}");
    assert_eq!(summary.tables[0].anchor, sealed, "{summary:?}");
    let sel = ledger::ExportSelection {
        range: ledger::ExportRange::Seqs(last..=u64::MAX),
        ..sel
    };
    let refused = ledger.reader().export(&sel, &mut Vec::new());
    assert!(
        matches!(refused, Err(ledger::Error::ExportRemoved { .. })),
        "{refused:?}"
    );
}
