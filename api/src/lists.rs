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

/// A CSV download: `head` then one line per row, CRLF line ends.
fn csv_response(name: &str, head: &str, lines: impl Iterator<Item = Vec<String>>) -> Response {
    let mut out = String::from(head);
    out.push_str("\r\n");
    for cells in lines {
        let cells: Vec<String> = cells.iter().map(|c| narrow::csv_field(c)).collect();
        out.push_str(&cells.join(","));
        out.push_str("\r\n");
    }
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"roundledger-{name}.csv\""),
            ),
        ],
        out,
    )
        .into_response()
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

#[utoipa::path(get, path = "/v1/rounds", tag = "rounds", params(RoundQuery),
    responses((status = 200, description = "a page of rounds, newest first; with format=csv every matching round",
        content((RoundPage = "application/json"), (String = "text/csv"))), (status = 400, body = ApiError)))]
pub(crate) async fn list_rounds(
    State(st): State<Shared>,
    Query(q): Query<RoundQuery>,
) -> Result<Response, Refusal> {
    let Listing {
        table,
        bounds,
        offset,
        limit,
    } = q.search().parse(&st.finance.rule)?;
    let n = q.narrow().parse(List::Rounds)?;
    let verdict = match q.verdict.as_deref() {
        None | Some("") => None,
        Some(v) => Some(
            serde_json::from_value::<schemas::report::Verdict>(v.into()).map_err(|_| {
                ReadError::BadRequest(format!("verdict {v:?}: clean, irregular, disputed or void"))
            })?,
        ),
    };
    let filter = RoundFilter {
        table: table.clone(),
        from_ns: bounds.from_ns,
        to_ns: bounds.to_ns,
        box_no: n.box_no,
        verdict,
    };
    let model = st.model.clone();
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
    let base = IssueFilter {
        table,
        from_ns: bounds.from_ns,
        to_ns: bounds.to_ns,
        code: None,
        severity: None,
    };
    let games = game_tables(&st, &n).await?;
    let with = finding_rounds(&st, &base, &n).await?;
    let mut rows = blocking(move || {
        let p = model.rounds(&filter, 0, SCAN_ROWS_MAX + 1)?;
        check_scan(p.total)?;
        Ok(p.items)
    })
    .await?;
    rows.retain(|r| {
        games.as_ref().is_none_or(|g| g.contains(&r.table))
            && with
                .as_ref()
                .is_none_or(|w| w.contains(&(r.table.clone(), r.round)))
            && (n.difference_minor == (None, None) || n.difference_in(r.difference.0))
    });
    narrow::sort(
        &mut rows,
        &n,
        |a, b| narrow::round_order(n.sort, a, b),
        |a, b| (a.opened_at_ns, &a.table, a.round).cmp(&(b.opened_at_ns, &b.table, b.round)),
    );
    if n.csv {
        let (rule, zone) = (&st.finance.rule, zone(&st)?);
        let head = "table,round,opened_at,gaming_day,shift,rule_set,verdict,in_progress,boxes,disputes,findings,worst_severity,difference";
        return Ok(csv_response(
            "rounds",
            head,
            rows.iter().map(|r| {
                let [at, day, shift] = narrow::time_cells(rule, &zone, r.opened_at_ns);
                let boxes: Vec<String> = r.boxes.iter().map(|b| b.0.to_string()).collect();
                vec![
                    r.table.to_string(),
                    r.round.0.to_string(),
                    at,
                    day,
                    shift,
                    r.rule_set.as_ref().map(name_of).unwrap_or_default(),
                    name_of(&r.verdict),
                    r.in_progress.to_string(),
                    boxes.join(" "),
                    r.disputes.to_string(),
                    r.findings.to_string(),
                    r.worst_severity.as_ref().map(name_of).unwrap_or_default(),
                    narrow::decimal(r.difference.0),
                ]
            }),
        ));
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
    let Listing {
        table,
        bounds,
        offset,
        limit,
    } = q.search().parse(&st.finance.rule)?;
    let n = q.narrow().parse(List::Disputes)?;
    let base = IssueFilter {
        table,
        from_ns: bounds.from_ns,
        to_ns: bounds.to_ns,
        code: None,
        severity: None,
    };
    let model = st.model.clone();
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
    let with = finding_rounds(&st, &base, &n).await?;
    let mut rows = blocking(move || {
        let p = model.disputes(&base, 0, SCAN_ROWS_MAX + 1)?;
        check_scan(p.total)?;
        Ok(p.items)
    })
    .await?;
    rows.retain(|d| {
        games.as_ref().is_none_or(|g| g.contains(&d.table))
            && with
                .as_ref()
                .is_none_or(|w| w.contains(&(d.table.clone(), d.round)))
            && n.box_no.is_none_or(|b| b == d.box_no)
            && n.difference_in(d.difference.0)
            && n.amount_in(d.expected.0)
    });
    narrow::sort(
        &mut rows,
        &n,
        |a, b| narrow::dispute_order(n.sort, a, b),
        |a, b| {
            (a.opened_at_ns, &a.table, a.round, a.box_no).cmp(&(
                b.opened_at_ns,
                &b.table,
                b.round,
                b.box_no,
            ))
        },
    );
    if n.csv {
        let (rule, zone) = (&st.finance.rule, zone(&st)?);
        let head = "table,round,opened_at,gaming_day,shift,verdict,box,line,due,paid,difference";
        return Ok(csv_response(
            "disputes",
            head,
            rows.iter().map(|d| {
                let [at, day, shift] = narrow::time_cells(rule, &zone, d.opened_at_ns);
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
            }),
        ));
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

#[utoipa::path(get, path = "/v1/findings", tag = "rounds", params(IssueQuery),
    responses((status = 200, description = "a page of findings, newest round first; with format=csv every matching finding",
        content((FindingPage = "application/json"), (String = "text/csv"))), (status = 400, body = ApiError)))]
pub(crate) async fn findings(
    State(st): State<Shared>,
    Query(q): Query<IssueQuery>,
) -> Result<Response, Refusal> {
    let Listing {
        table,
        bounds,
        offset,
        limit,
    } = q.search().parse(&st.finance.rule)?;
    let n = q.narrow().parse(List::Findings)?;
    let filter = IssueFilter {
        table,
        from_ns: bounds.from_ns,
        to_ns: bounds.to_ns,
        code: n.code.clone(),
        severity: n.severity,
    };
    let model = st.model.clone();
    let mut rows = if n.is_plain(List::Findings) {
        let p = blocking(move || Ok(model.findings(&filter, offset, limit)?)).await?;
        return Ok(Json(finding_page(p.items, p.total, offset, limit)).into_response());
    } else {
        blocking(move || {
            let p = model.findings(&filter, 0, SCAN_ROWS_MAX + 1)?;
            check_scan(p.total)?;
            Ok(p.items)
        })
        .await?
    };
    let games = game_tables(&st, &n).await?;
    rows.retain(|r| {
        games.as_ref().is_none_or(|g| g.contains(&r.table))
            && n.box_no.is_none_or(|b| r.finding.box_no == Some(b))
    });
    narrow::sort(
        &mut rows,
        &n,
        |a, b| match n.sort {
            narrow::SortKey::Table => a.table.cmp(&b.table),
            narrow::SortKey::Box => a.finding.box_no.cmp(&b.finding.box_no),
            narrow::SortKey::Severity => a.finding.severity.cmp(&b.finding.severity),
            narrow::SortKey::Code => a.finding.code.cmp(&b.finding.code),
            _ => std::cmp::Ordering::Equal,
        },
        |a, b| (a.opened_at_ns, &a.table, a.round).cmp(&(b.opened_at_ns, &b.table, b.round)),
    );
    if n.csv {
        let (rule, zone) = (&st.finance.rule, zone(&st)?);
        let head =
            "table,round,opened_at,gaming_day,shift,severity,code,clause,box,events,explanation";
        return Ok(csv_response(
            "findings",
            head,
            rows.iter().map(|r| {
                let [at, day, shift] = narrow::time_cells(rule, &zone, r.opened_at_ns);
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
            }),
        ));
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
