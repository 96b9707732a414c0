//! The list searches: `/v1/rounds`, `/v1/disputes` and `/v1/findings`. The read model
//! pages a search its indexes answer; one that narrows, sorts or exports beyond them
//! reads the whole result (at most `narrow::SCAN_ROWS_MAX` rows), then filters, sorts
//! and pages it, or writes all of it as CSV.
//!
//! Invariant: a page's `total` counts the whole result under every filter given, and a
//! CSV holds every matching row; neither is ever one page's worth.

use crate::model::{IssueFilter, RoundFilter};
use crate::narrow::{self, check_scan, List, Narrow, RoundSet, SCAN_ROWS_MAX};
use crate::params::{search_query, Listing};
use crate::read::{blocking, Refusal};
use crate::{ReadError, Shared};
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use readside::row::finding_view;
use schemas::api::*;
use schemas::TableId;
use std::collections::BTreeSet;

search_query! {
    /// Round search.
    pub struct RoundQuery {
        /// Only this verdict: clean, irregular, disputed, void (rounds in progress have none yet).
        verdict: Option<String>,
    }
}

search_query! {
    /// Filters of disputes and findings.
    pub struct IssueQuery {}
}

/// The tables of `game`, from each table's status; `None` when no game is asked for.
async fn game_tables(st: &Shared, n: &Narrow) -> Result<Option<BTreeSet<TableId>>, Refusal> {
    let Some(game) = n.game else { return Ok(None) };
    let model = st.model.clone();
    let all = blocking(move || Ok(model.statuses()?)).await?;
    Ok(Some(
        all.into_iter()
            .filter(|(_, s)| s.rule_set == Some(game))
            .map(|(t, _)| t)
            .collect(),
    ))
}

/// The rounds with a finding of `n`'s code and severity; `None` when neither is asked for.
async fn finding_rounds(
    st: &Shared,
    base: &IssueFilter,
    n: &Narrow,
) -> Result<Option<RoundSet>, Refusal> {
    if n.code.is_none() && n.severity.is_none() {
        return Ok(None);
    }
    let f = IssueFilter {
        code: n.code.clone(),
        severity: n.severity,
        ..base.clone()
    };
    let model = st.model.clone();
    let set = blocking(move || {
        let p = model.findings(&f, 0, SCAN_ROWS_MAX + 1)?;
        check_scan(p.total)?;
        Ok(p.items.into_iter().map(|r| (r.table, r.round)).collect())
    })
    .await?;
    Ok(Some(set))
}

/// The rounds `n`'s dealer dealt in `l`'s table and window; `None` when no dealer is
/// asked for.
async fn dealer_rounds(st: &Shared, l: &Listing, n: &Narrow) -> Result<Option<RoundSet>, Refusal> {
    let Some(dealer) = n.dealer.clone() else {
        return Ok(None);
    };
    let filter = RoundFilter {
        table: l.table.clone(),
        from_ns: l.bounds.from_ns,
        to_ns: l.bounds.to_ns,
        box_no: None,
        verdict: None,
    };
    let model = st.model.clone();
    let rows = scan_all(move |max| Ok(model.rounds(&filter, 0, max)?)).await?;
    Ok(Some(
        rows.into_iter()
            .filter(|r| r.dealer.as_deref() == Some(dealer.as_str()))
            .map(|r| (r.table, r.round))
            .collect(),
    ))
}

/// Rounds in both sets; a set not asked for (`None`) does not narrow.
fn both(a: Option<RoundSet>, b: Option<RoundSet>) -> Option<RoundSet> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.intersection(&b).cloned().collect()),
        (a, b) => a.or(b),
    }
}

/// A CSV download of `rows`: `head` then one line per row, CRLF line ends, streamed in
/// bounded chunks (`stream`): the text is never held whole.
async fn csv_response<T: Send + 'static>(
    name: &str,
    head: &'static str,
    rows: Vec<T>,
    line: impl Fn(&T) -> Vec<String> + Send + 'static,
) -> Result<Response, Refusal> {
    let body = crate::stream::body_from_writer(move |w| {
        let io = |e: std::io::Error| ReadError::Internal(format!("csv: {e}"));
        write!(w, "{head}\r\n").map_err(io)?;
        for r in &rows {
            let cells: Vec<String> = line(r).iter().map(|c| narrow::csv_field(c)).collect();
            write!(w, "{}\r\n", cells.join(",")).map_err(io)?;
        }
        Ok(())
    })
    .await?;
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"roundledger-{name}.csv\""),
            ),
        ],
        body,
    )
        .into_response())
}

/// The property's zone for CSV times.
fn zone(st: &Shared) -> Result<jiff::tz::TimeZone, ReadError> {
    let name = st.finance.rule.time_zone();
    jiff::tz::TimeZone::get(name).map_err(|e| ReadError::Internal(format!("time zone {name}: {e}")))
}

/// A JSON enum's name (`disputed`, `ante`), for CSV.
fn name_of<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// A page of `rows`, which hold the whole result.
fn page_of<T>(rows: Vec<T>, offset: u64, limit: u64) -> (Vec<T>, u64) {
    let total = rows.len() as u64;
    let items: Vec<T> = rows
        .into_iter()
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(usize::try_from(limit).unwrap_or(usize::MAX))
        .collect();
    assert!(
        items.len() as u64 <= limit,
        "a page holds at most its limit"
    );
    (items, total)
}

/// Every row a search matches, read once: at most `SCAN_ROWS_MAX`, else a 400.
async fn scan_all<T: Send + 'static>(
    read: impl FnOnce(u64) -> Result<readside::model::Page<T>, ReadError> + Send + 'static,
) -> Result<Vec<T>, Refusal> {
    blocking(move || {
        let p = read(SCAN_ROWS_MAX + 1)?;
        check_scan(p.total)?;
        Ok(p.items)
    })
    .await
}

/// The whole result as CSV: `head`, then `cells` of each row after its opening time's
/// ISO 8601, gaming day and shift.
async fn csv_of<T: Send + 'static>(
    st: &Shared,
    name: &str,
    head: &'static str,
    rows: Vec<T>,
    opened_at_ns: fn(&T) -> i64,
    cells: fn(&T, [String; 3]) -> Vec<String>,
) -> Result<Response, Refusal> {
    let (rule, zone) = (st.finance.rule.clone(), zone(st)?);
    let line = move |r: &T| cells(r, narrow::time_cells(&rule, &zone, opened_at_ns(r)));
    csv_response(name, head, rows, line).await
}

/// `verdict=` of a round search, checked.
fn parse_verdict(v: Option<&str>) -> Result<Option<schemas::report::Verdict>, ReadError> {
    match v {
        None | Some("") => Ok(None),
        Some(v) => serde_json::from_value(v.into()).map(Some).map_err(|_| {
            ReadError::BadRequest(format!("verdict {v:?}: clean, irregular, disputed or void"))
        }),
    }
}

/// The disputes and findings filter of a search, code and severity included when `n`
/// asks the index for them.
fn issue_filter(l: &Listing, n: Option<&Narrow>) -> IssueFilter {
    IssueFilter {
        table: l.table.clone(),
        from_ns: l.bounds.from_ns,
        to_ns: l.bounds.to_ns,
        code: n.and_then(|n| n.code.clone()),
        severity: n.and_then(|n| n.severity),
    }
}

/// Whether a row of `table` and `round` passes the game and finding filters.
fn in_sets(
    games: &Option<BTreeSet<TableId>>,
    with: &Option<RoundSet>,
    table: &TableId,
    round: schemas::RoundId,
) -> bool {
    games.as_ref().is_none_or(|g| g.contains(table))
        && with
            .as_ref()
            .is_none_or(|w| w.contains(&(table.clone(), round)))
}

const ROUNDS_HEAD: &str = "table,round,opened_at,gaming_day,shift,rule_set,dealer,verdict,in_progress,boxes,disputes,findings,worst_severity,difference";
const DISPUTES_HEAD: &str =
    "table,round,opened_at,gaming_day,shift,verdict,box,line,due,paid,difference";
const FINDINGS_HEAD: &str =
    "table,round,opened_at,gaming_day,shift,severity,code,clause,box,events,explanation";

fn round_cells(r: &RoundRow, [at, day, shift]: [String; 3]) -> Vec<String> {
    let boxes: Vec<String> = r.boxes.iter().map(|b| b.0.to_string()).collect();
    vec![
        r.table.to_string(),
        r.round.0.to_string(),
        at,
        day,
        shift,
        r.rule_set.as_ref().map(name_of).unwrap_or_default(),
        r.dealer.clone().unwrap_or_default(),
        name_of(&r.verdict),
        r.in_progress.to_string(),
        boxes.join(" "),
        r.disputes.to_string(),
        r.findings.to_string(),
        r.worst_severity.as_ref().map(name_of).unwrap_or_default(),
        narrow::decimal(r.difference.0),
    ]
}

fn dispute_cells(d: &DisputeRow, [at, day, shift]: [String; 3]) -> Vec<String> {
    vec![
        d.table.to_string(),
        d.round.0.to_string(),
        at,
        day,
        shift,
        name_of(&d.verdict),
        d.box_no.0.to_string(),
        name_of(&d.line),
        narrow::decimal(d.expected.0),
        narrow::decimal(d.recorded.0),
        narrow::decimal(d.difference.0),
    ]
}

fn finding_cells(r: &readside::model::FindingRec, [at, day, shift]: [String; 3]) -> Vec<String> {
    let f = &r.finding;
    let seqs: Vec<String> = f.seqs.iter().map(|s| s.0.to_string()).collect();
    vec![
        r.table.to_string(),
        r.round.0.to_string(),
        at,
        day,
        shift,
        name_of(&f.severity),
        f.code.clone(),
        f.clause.clone(),
        f.box_no.map(|b| b.0.to_string()).unwrap_or_default(),
        seqs.join(" "),
        f.explanation.clone(),
    ]
}

#[utoipa::path(get, path = "/v1/rounds", tag = "rounds", params(RoundQuery),
    responses((status = 200, description = "a page of rounds, newest first; with format=csv every matching round",
        content((RoundPage = "application/json"), (String = "text/csv"))), (status = 400, body = ApiError)))]
pub(crate) async fn list_rounds(
    State(st): State<Shared>,
    Query(q): Query<RoundQuery>,
) -> Result<Response, Refusal> {
    let l = q.search().parse(&st.finance.rule)?;
    let n = q.narrow().parse(List::Rounds)?;
    let filter = RoundFilter {
        table: l.table.clone(),
        from_ns: l.bounds.from_ns,
        to_ns: l.bounds.to_ns,
        box_no: n.box_no,
        verdict: parse_verdict(q.verdict.as_deref())?,
    };
    let (model, offset, limit) = (st.model.clone(), l.offset, l.limit);
    if n.is_plain(List::Rounds) {
        let p = blocking(move || Ok(model.rounds(&filter, offset, limit)?)).await?;
        return Ok(Json(RoundPage {
            items: p.items,
            total: p.total,
            offset,
            limit,
        })
        .into_response());
    }
    let games = game_tables(&st, &n).await?;
    let with = finding_rounds(&st, &issue_filter(&l, None), &n).await?;
    let mut rows = scan_all(move |max| Ok(model.rounds(&filter, 0, max)?)).await?;
    rows.retain(|r| {
        in_sets(&games, &with, &r.table, r.round)
            && n.dealer
                .as_ref()
                .is_none_or(|d| r.dealer.as_ref() == Some(d))
            && (n.difference_minor == (None, None) || n.difference_in(r.difference.0))
    });
    narrow::sort(
        &mut rows,
        &n,
        |a, b| narrow::round_order(n.sort, a, b),
        |a, b| (a.opened_at_ns, &a.table, a.round).cmp(&(b.opened_at_ns, &b.table, b.round)),
    );
    if n.csv {
        return csv_of(
            &st,
            "rounds",
            ROUNDS_HEAD,
            rows,
            |r| r.opened_at_ns,
            round_cells,
        )
        .await;
    }
    let (items, total) = page_of(rows, offset, limit);
    Ok(Json(RoundPage {
        items,
        total,
        offset,
        limit,
    })
    .into_response())
}

#[utoipa::path(get, path = "/v1/disputes", tag = "rounds", params(IssueQuery),
    responses((status = 200, description = "a page of disputed settlement lines, newest round first; with format=csv every matching line",
        content((DisputePage = "application/json"), (String = "text/csv"))), (status = 400, body = ApiError)))]
pub(crate) async fn disputes(
    State(st): State<Shared>,
    Query(q): Query<IssueQuery>,
) -> Result<Response, Refusal> {
    let l = q.search().parse(&st.finance.rule)?;
    let n = q.narrow().parse(List::Disputes)?;
    let base = issue_filter(&l, None);
    let (model, offset, limit) = (st.model.clone(), l.offset, l.limit);
    if n.is_plain(List::Disputes) {
        let p = blocking(move || Ok(model.disputes(&base, offset, limit)?)).await?;
        return Ok(Json(DisputePage {
            items: p.items,
            total: p.total,
            offset,
            limit,
        })
        .into_response());
    }
    let games = game_tables(&st, &n).await?;
    let with = both(
        finding_rounds(&st, &base, &n).await?,
        dealer_rounds(&st, &l, &n).await?,
    );
    let mut rows = scan_all(move |max| Ok(model.disputes(&base, 0, max)?)).await?;
    rows.retain(|d| {
        in_sets(&games, &with, &d.table, d.round)
            && n.box_no.is_none_or(|b| b == d.box_no)
            && n.difference_in(d.difference.0)
            && n.amount_in(d.expected.0)
    });
    narrow::sort(
        &mut rows,
        &n,
        |a, b| narrow::dispute_order(n.sort, a, b),
        |a, b| {
            let key = |d: &DisputeRow| (d.opened_at_ns, d.table.clone(), d.round, d.box_no);
            key(a).cmp(&key(b))
        },
    );
    if n.csv {
        return csv_of(
            &st,
            "disputes",
            DISPUTES_HEAD,
            rows,
            |d| d.opened_at_ns,
            dispute_cells,
        )
        .await;
    }
    let (items, total) = page_of(rows, offset, limit);
    Ok(Json(DisputePage {
        items,
        total,
        offset,
        limit,
    })
    .into_response())
}

/// Findings' own order for a sort key; `Equal` for keys a finding has not.
fn finding_order(
    key: narrow::SortKey,
    a: &readside::model::FindingRec,
    b: &readside::model::FindingRec,
) -> std::cmp::Ordering {
    match key {
        narrow::SortKey::Table => a.table.cmp(&b.table),
        narrow::SortKey::Box => a.finding.box_no.cmp(&b.finding.box_no),
        narrow::SortKey::Severity => a.finding.severity.cmp(&b.finding.severity),
        narrow::SortKey::Code => a.finding.code.cmp(&b.finding.code),
        _ => std::cmp::Ordering::Equal,
    }
}

#[utoipa::path(get, path = "/v1/findings", tag = "rounds", params(IssueQuery),
    responses((status = 200, description = "a page of findings, newest round first; with format=csv every matching finding",
        content((FindingPage = "application/json"), (String = "text/csv"))), (status = 400, body = ApiError)))]
pub(crate) async fn findings(
    State(st): State<Shared>,
    Query(q): Query<IssueQuery>,
) -> Result<Response, Refusal> {
    let l = q.search().parse(&st.finance.rule)?;
    let n = q.narrow().parse(List::Findings)?;
    let filter = issue_filter(&l, Some(&n));
    let (model, offset, limit) = (st.model.clone(), l.offset, l.limit);
    if n.is_plain(List::Findings) {
        let p = blocking(move || Ok(model.findings(&filter, offset, limit)?)).await?;
        return Ok(Json(finding_page(p.items, p.total, offset, limit)).into_response());
    }
    let mut rows = scan_all(move |max| Ok(model.findings(&filter, 0, max)?)).await?;
    let games = game_tables(&st, &n).await?;
    let with = dealer_rounds(&st, &l, &n).await?;
    rows.retain(|r| {
        in_sets(&games, &with, &r.table, r.round)
            && n.box_no.is_none_or(|b| r.finding.box_no == Some(b))
    });
    narrow::sort(
        &mut rows,
        &n,
        |a, b| finding_order(n.sort, a, b),
        |a, b| (a.opened_at_ns, &a.table, a.round).cmp(&(b.opened_at_ns, &b.table, b.round)),
    );
    if n.csv {
        return csv_of(
            &st,
            "findings",
            FINDINGS_HEAD,
            rows,
            |r| r.opened_at_ns,
            finding_cells,
        )
        .await;
    }
    let (items, total) = page_of(rows, offset, limit);
    Ok(Json(finding_page(items, total, offset, limit)).into_response())
}

fn finding_page(
    items: Vec<readside::model::FindingRec>,
    total: u64,
    offset: u64,
    limit: u64,
) -> FindingPage {
    FindingPage {
        items: items
            .into_iter()
            .map(|r| FindingRow {
                finding: finding_view(&r.finding),
                table: r.table,
                round: r.round,
                opened_at_ns: r.opened_at_ns,
            })
            .collect(),
        total,
        offset,
        limit,
    }
}
