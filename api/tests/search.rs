//! Search by gaming day and shift on the lists (`/v1/rounds`, `/v1/disputes`,
//! `/v1/findings`), through the router in process, over a real sled ledger that the
//! simulator's tables fill across a shift change: a shift's search returns exactly the
//! rows opened in that shift, a day's all of its shifts; two windows at once, a bad day
//! and an unknown shift are 400s with an `ApiError`; the OpenAPI document states the
//! server's shifts, and the three lists' shared parameters alike.

mod common;

use axum::http::StatusCode;
use ledger::days::DayRule;
use schemas::api::{ApiError, DisputePage, FindingPage, RoundPage};
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;

const SURV: &str = "surveillance-token-000000000001";
const DAY: &str = "2026-11-25";
/// The second shift of `DAY` starts at 14:00 UTC.
const SHIFTS: &str = "06:00,14:00,22:00";

fn rule() -> DayRule {
    DayRule::new("06:00", "UTC")
        .unwrap()
        .with_shifts(SHIFTS)
        .unwrap()
}

/// Two tables opening 20 minutes before the shift change, playing `rounds` rounds each,
/// appended as ingest would.
fn seed(ledger: &ledger::Ledger, start_ns: i64, rounds: u64) {
    let mut plan = simulator::FaultPlan::all(0.05);
    plan.wrong_payout = 0.3;
    common::play_floor(ledger, plan, start_ns, rounds, 4096);
}

struct Fixture {
    _dir: tempfile::TempDir,
    app: axum::Router,
    _stop: tokio::sync::watch::Sender<bool>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Arc::new(ledger::Ledger::open(dir.path().join("ledger")).unwrap());
    let change = rule()
        .shift_named(&format!("{DAY}/2"))
        .unwrap()
        .starts_at_ns;
    seed(&ledger, change - 20 * 60_000_000_000, 40);
    let access = common::surveillance_access(SURV);
    let (app, stop) = common::indexed_router(ledger, &access, dir.path(), "api", rule());
    Fixture {
        _dir: dir,
        app,
        _stop: stop,
    }
}

async fn get(app: &axum::Router, path: &str) -> (StatusCode, Vec<u8>) {
    common::get_bytes(app, path, SURV).await
}

async fn page<T: serde::de::DeserializeOwned>(app: &axum::Router, path: &str) -> T {
    let (s, body) = get(app, path).await;
    assert_eq!(
        s,
        StatusCode::OK,
        "{path}: {}",
        String::from_utf8_lossy(&body)
    );
    serde_json::from_slice(&body).unwrap()
}

/// (table, round) of every round a search returns (one page: the fixture has fewer).
async fn rounds(app: &axum::Router, query: &str) -> BTreeSet<(String, u64)> {
    let p: RoundPage = page(app, &format!("/v1/rounds?limit=500&{query}")).await;
    assert!(p.total <= 500, "one page holds them all");
    let keys: BTreeSet<_> = p
        .items
        .iter()
        .map(|r| (r.table.to_string(), r.round.0))
        .collect();
    assert_eq!(keys.len(), p.items.len());
    keys
}

#[tokio::test]
async fn a_shift_search_returns_exactly_the_rounds_opened_in_that_shift() {
    let f = fixture();
    let r = rule();
    let (s1, s2) = (
        r.shift_named(&format!("{DAY}/1")).unwrap(),
        r.shift_named(&format!("{DAY}/2")).unwrap(),
    );
    let all: RoundPage = page(&f.app, "/v1/rounds?limit=500").await;
    let opened_in = |from: i64, to: i64| -> BTreeSet<(String, u64)> {
        all.items
            .iter()
            .filter(|x| (from..to).contains(&x.opened_at_ns))
            .map(|x| (x.table.to_string(), x.round.0))
            .collect()
    };
    let before = opened_in(s1.starts_at_ns, s1.ends_at_ns);
    let after = opened_in(s2.starts_at_ns, s2.ends_at_ns);
    // The fixture straddles the shift change, and stays within the day's first two shifts.
    assert!(
        before.len() >= 5 && after.len() >= 5,
        "{before:?} {after:?}"
    );
    assert_eq!(before.len() + after.len(), all.items.len());

    assert_eq!(rounds(&f.app, &format!("shift={DAY}/1")).await, before);
    assert_eq!(rounds(&f.app, &format!("shift={DAY}/2")).await, after);
    assert!(rounds(&f.app, &format!("shift={DAY}/3")).await.is_empty());
    let whole: BTreeSet<_> = before.union(&after).cloned().collect();
    assert_eq!(rounds(&f.app, &format!("day={DAY}")).await, whole);
    assert!(rounds(&f.app, "day=2026-11-24").await.is_empty());
    // With the other filters: one table's rounds of the shift.
    let t = before.iter().next().unwrap().0.clone();
    let mine: BTreeSet<_> = before.iter().filter(|k| k.0 == t).cloned().collect();
    assert_eq!(
        rounds(&f.app, &format!("shift={DAY}/1&table={t}")).await,
        mine
    );
}

#[tokio::test]
async fn disputes_and_findings_are_searched_by_shift_too() {
    let f = fixture();
    let s2 = rule().shift_named(&format!("{DAY}/2")).unwrap();
    let in_s2 = |at: i64| (s2.starts_at_ns..s2.ends_at_ns).contains(&at);

    let all: DisputePage = page(&f.app, "/v1/disputes?limit=500").await;
    let got: DisputePage = page(&f.app, &format!("/v1/disputes?limit=500&shift={DAY}/2")).await;
    let want: Vec<_> = all.items.iter().filter(|d| in_s2(d.opened_at_ns)).collect();
    assert!(!want.is_empty() && want.len() < all.items.len(), "{all:?}");
    assert_eq!(got.items.iter().collect::<Vec<_>>(), want);
    assert_eq!(got.total, want.len() as u64);

    let all: FindingPage = page(&f.app, "/v1/findings?limit=500").await;
    let got: FindingPage = page(&f.app, &format!("/v1/findings?limit=500&shift={DAY}/2")).await;
    let want: Vec<_> = all
        .items
        .iter()
        .filter(|x| in_s2(x.opened_at_ns))
        .map(|x| {
            (
                x.table.to_string(),
                x.round.0,
                x.finding.finding.code.clone(),
            )
        })
        .collect();
    let got: Vec<_> = got
        .items
        .iter()
        .map(|x| {
            (
                x.table.to_string(),
                x.round.0,
                x.finding.finding.code.clone(),
            )
        })
        .collect();
    assert!(
        !want.is_empty(),
        "the faults give findings in the second shift"
    );
    assert_eq!(got, want);
}

#[tokio::test]
async fn two_windows_a_bad_day_and_an_unknown_shift_are_400s() {
    let f = fixture();
    for (query, says) in [
        (format!("day={DAY}&shift={DAY}/1"), "not both"),
        (format!("day={DAY}&from_ns=0"), "one or the other"),
        (format!("shift={DAY}/1&to_ns=0"), "one or the other"),
        (format!("shift={DAY}/4"), "has 3 shifts"),
        (format!("shift={DAY}/0"), "not YYYY-MM-DD/N"),
        (format!("shift={DAY}"), "not YYYY-MM-DD/N"),
        ("day=2026-02-30".into(), "2026-02-30"),
        ("day=1969-12-31".into(), "years 1970"),
        ("day=".into(), "not YYYY-MM-DD"),
    ] {
        for list in ["rounds", "disputes", "findings"] {
            let path = format!("/v1/{list}?{query}");
            let (s, body) = get(&f.app, &path).await;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{path}");
            let e: ApiError = serde_json::from_slice(&body)
                .unwrap_or_else(|e| panic!("{path}: not an ApiError ({e})"));
            assert!(e.error.contains(says), "{path}: {}", e.error);
        }
    }
}

#[tokio::test]
async fn the_openapi_document_states_the_servers_shifts() {
    let f = fixture();
    let (s, body) = get(&f.app, "/openapi.json").await;
    assert_eq!(s, StatusCode::OK);
    let doc: Value = serde_json::from_slice(&body).unwrap();
    for list in ["rounds", "disputes", "findings"] {
        let params = doc["paths"][format!("/v1/{list}")]["get"]["parameters"]
            .as_array()
            .unwrap();
        let pattern = |name: &str| {
            let p = params.iter().find(|p| p["name"] == name).unwrap();
            assert_eq!(p["in"], "query");
            p["schema"]["pattern"].as_str().unwrap().to_string()
        };
        let (shift, day) = (pattern("shift"), pattern("day"));
        assert!(shift.ends_with("/[1-3]$"), "{list}: {shift}");
        assert!(day.starts_with('^') && day.ends_with('$'), "{list}: {day}");
        assert!(day.contains("-02-29"), "{list}: leap days are stated");
    }
}

/// The three lists state their shared parameters (table, window, page) identically: one
/// declaration serves them all.
#[tokio::test]
async fn the_lists_state_their_shared_parameters_alike() {
    let f = fixture();
    let (s, body) = get(&f.app, "/openapi.json").await;
    assert_eq!(s, StatusCode::OK);
    let doc: Value = serde_json::from_slice(&body).unwrap();
    let shared = [
        "table", "from_ns", "to_ns", "day", "shift", "offset", "limit",
    ];
    let stated = |list: &str| -> Vec<Value> {
        let params = doc["paths"][format!("/v1/{list}")]["get"]["parameters"]
            .as_array()
            .unwrap();
        shared
            .iter()
            .map(|name| params.iter().find(|p| p["name"] == *name).unwrap().clone())
            .collect()
    };
    let rounds = stated("rounds");
    assert_eq!(rounds.len(), shared.len());
    assert_eq!(stated("disputes"), rounds);
    assert_eq!(stated("findings"), rounds);
}

/// Every disputed line of the fixture, newest first (one page holds them all).
async fn all_disputes(app: &axum::Router) -> Vec<schemas::api::DisputeRow> {
    let p: DisputePage = page(app, "/v1/disputes?limit=500").await;
    assert!(
        p.total <= 500 && p.total > 3,
        "the fixture has a few disputes: {}",
        p.total
    );
    p.items
}

/// Issue 46: "difference at least", box, code and sort cover the whole result, with
/// its true total, not the page loaded. Each filter is checked against the whole list.
#[tokio::test]
async fn disputes_are_filtered_and_sorted_over_the_whole_result() {
    let f = fixture();
    let all = all_disputes(&f.app).await;
    let mut abs: Vec<u64> = all.iter().map(|d| d.difference.0.unsigned_abs()).collect();
    abs.sort();
    let min = abs[abs.len() / 2];
    let want = all
        .iter()
        .filter(|d| d.difference.0.unsigned_abs() >= min)
        .count() as u64;
    let p: DisputePage = page(
        &f.app,
        &format!("/v1/disputes?limit=1&min_difference_minor={min}"),
    )
    .await;
    assert_eq!(
        (p.total, p.items.len()),
        (want, 1),
        "the true total at least {min}"
    );
    assert!(
        want < all.len() as u64 || abs[0] == min,
        "the filter drops some lines"
    );
    let b = all[0].box_no;
    let p: DisputePage = page(&f.app, &format!("/v1/disputes?limit=500&box={}", b.0)).await;
    assert_eq!(p.total, all.iter().filter(|d| d.box_no == b).count() as u64);
    assert!(p.items.iter().all(|d| d.box_no == b));
    // No finding has code zzz: no disputed line is of a round with one (was: all).
    let p: DisputePage = page(&f.app, "/v1/disputes?code=zzz").await;
    assert_eq!(p.total, 0);
    // Sorted by difference, ascending, across pages: the first page holds the smallest.
    let p: DisputePage = page(&f.app, "/v1/disputes?limit=3&sort=difference&order=asc").await;
    let mut by_diff: Vec<i64> = all.iter().map(|d| d.difference.0).collect();
    by_diff.sort();
    let got: Vec<i64> = p.items.iter().map(|d| d.difference.0).collect();
    assert_eq!((got.as_slice(), p.total), (&by_diff[..3], all.len() as u64));
}

/// The CSV of a filtered queue is every matching row (not a page): numbers as plain
/// numbers, times in ISO 8601 with the offset, and the gaming day and shift as columns.
#[tokio::test]
async fn the_csv_of_a_filtered_queue_is_the_apis_rows() {
    let f = fixture();
    let all = all_disputes(&f.app).await;
    let b = all[0].box_no;
    let want: Vec<_> = all.iter().filter(|d| d.box_no == b).collect();
    let (s, body) = get(
        &f.app,
        &format!("/v1/disputes?box={}&format=csv&limit=1", b.0),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let text = String::from_utf8(body).unwrap();
    let lines: Vec<&str> = text.trim_end().split("\r\n").collect();
    assert_eq!(
        lines[0],
        "table,round,opened_at,gaming_day,shift,verdict,box,line,due,paid,difference"
    );
    assert_eq!(
        lines.len() - 1,
        want.len(),
        "every matching line, whatever the limit"
    );
    for (line, d) in lines[1..].iter().zip(&want) {
        let c: Vec<&str> = line.split(',').collect();
        assert_eq!(
            (c[0], c[1].parse::<u64>().unwrap()),
            (d.table.as_str(), d.round.0)
        );
        assert!(
            c[2].ends_with("+00:00") && c[2].len() == 29,
            "ISO 8601 with offset: {}",
            c[2]
        );
        let day = rule().day_of(d.opened_at_ns).unwrap();
        assert_eq!(c[3], day);
        assert_eq!(c[4], rule().shift_of(d.opened_at_ns).unwrap().name());
        let diff: f64 = c[10].parse().expect("a number");
        assert_eq!((diff * 100.0).round() as i64, d.difference.0);
    }
}

/// A filter a list cannot apply, an unknown value or an unknown parameter is a 400
/// with an `ApiError`, never ignored.
#[tokio::test]
async fn filters_a_list_cannot_apply_and_unknown_values_are_400s() {
    let f = fixture();
    for path in [
        "/v1/findings?min_difference_minor=1",
        "/v1/rounds?min_amount_minor=1",
        "/v1/disputes?sort=code",
        "/v1/disputes?box=0",
        "/v1/rounds?game=XYZ",
        "/v1/findings?severity=high",
        "/v1/disputes?min_difference_minor=5&max_difference_minor=1",
        "/v1/disputes?format=xls",
        "/v1/disputes?dealer=bad*dealer",
        "/v1/rounds?dealer=a-dealer-id-longer-than-32-bytes-x",
    ] {
        let (s, body) = get(&f.app, path).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{path}");
        let e: ApiError = serde_json::from_slice(&body).expect("an ApiError");
        assert!(!e.error.is_empty(), "{path}");
    }
    // A game filter keeps only that game's tables; a round's game is its rule set.
    let p: RoundPage = page(&f.app, "/v1/rounds?limit=500").await;
    let game = p.items.iter().find_map(|r| r.rule_set).expect("a rule set");
    let name = serde_json::to_value(game).unwrap();
    let g: RoundPage = page(
        &f.app,
        &format!("/v1/rounds?limit=500&game={}", name.as_str().unwrap()),
    )
    .await;
    let want = p.items.iter().filter(|r| r.rule_set == Some(game)).count() as u64;
    assert_eq!(g.total, want);
    assert!(g.total > 0 && g.items.iter().all(|r| r.rule_set == Some(game)));
}

/// A dealer filter keeps exactly that dealer's rounds, and the disputes and findings of
/// them, over the whole result; every game, TCP3 included, is a filter value.
#[tokio::test]
async fn the_dealer_filter_keeps_that_dealers_rounds_and_their_issues() {
    let f = fixture();
    let all: RoundPage = page(&f.app, "/v1/rounds?limit=500").await;
    assert_eq!(
        all.total as usize,
        all.items.len(),
        "one page holds them all"
    );
    let dealer = all
        .items
        .iter()
        .find_map(|r| r.dealer.clone())
        .expect("the simulator's dealers are named");
    let theirs: BTreeSet<(String, u64)> = all
        .items
        .iter()
        .filter(|r| r.dealer.as_deref() == Some(dealer.as_str()))
        .map(|r| (r.table.to_string(), r.round.0))
        .collect();
    assert!(theirs.len() < all.items.len(), "the dealers take turns");
    let got = rounds(&f.app, &format!("dealer={dealer}")).await;
    assert_eq!(got, theirs);
    let disputes = all_disputes(&f.app).await;
    let want: Vec<_> = disputes
        .iter()
        .filter(|d| theirs.contains(&(d.table.to_string(), d.round.0)))
        .collect();
    let p: DisputePage = page(&f.app, &format!("/v1/disputes?dealer={dealer}&limit=500")).await;
    assert_eq!(p.total as usize, want.len());
    assert!(p
        .items
        .iter()
        .all(|d| theirs.contains(&(d.table.to_string(), d.round.0))));
    let fp: FindingPage = page(&f.app, &format!("/v1/findings?dealer={dealer}&limit=500")).await;
    assert!(fp
        .items
        .iter()
        .all(|r| theirs.contains(&(r.table.to_string(), r.round.0))));
    for game in ["CSP6", "MLP3", "SSP4", "CS51", "TCP3"] {
        let (s, _) = get(&f.app, &format!("/v1/rounds?game={game}")).await;
        assert_eq!(s, StatusCode::OK, "{game}");
    }
}
