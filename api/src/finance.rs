//! Finance's paths: reports per table, pit, game, shift or day (`/v1/reports`, JSON or
//! CSV), per-table totals (`/v1/finance`), and a disputed round's finance summary
//! (`/v1/finance/rounds/...`): what was paid and what was due, no surveillance detail;
//! each jackpot pool's liability over a gaming day (`/v1/reports/jackpots`).
//!
//! Invariant: a span is exact or refused. An unknown parameter is a 400 (the query types
//! deny unknown fields), never ignored.

use crate::params::table_id;
use crate::read::{blocking, load_round, Refusal};
use crate::{ReadError, Shared};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::Json;
use readside::finance::{GroupBy, Span};
use schemas::api::{ApiError, FinanceSummary};
use schemas::finance::{FinanceReport, PoolLiability, RoundFinance};
use serde::Deserialize;
use utoipa::IntoParams;

/// A report's span (exactly one of `shift`, `day`, `mtd`, `ytd`, or `from_day` with
/// `to_day`), its grouping, filters and format.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ReportQuery {
    /// One shift, `2026-11-25/2`.
    shift: Option<String>,
    /// One gaming day, `2026-11-25`.
    day: Option<String>,
    /// Month to date: the month of this day, through it.
    mtd: Option<String>,
    /// Year to date: the year of this day, through it.
    ytd: Option<String>,
    /// With `to_day`: a range of gaming days, both included.
    from_day: Option<String>,
    to_day: Option<String>,
    /// `table` (default), `pit`, `game`, `shift`, `day` or `dealer` (the dealer in place
    /// when each round began).
    group_by: Option<String>,
    /// Only this table.
    #[param(pattern = "^[A-Za-z0-9_-]{1,32}$")]
    table: Option<String>,
    /// Only this pit's tables.
    pit: Option<String>,
    /// `json` (default) or `csv`; `Accept: text/csv` asks for CSV too.
    format: Option<String>,
}

impl ReportQuery {
    fn to_query(&self) -> Result<readside::finance::Query, ReadError> {
        let bad = |m: String| ReadError::BadRequest(m);
        let spans = [
            self.shift.clone().map(Span::Shift),
            self.day.clone().map(Span::Day),
            self.mtd.clone().map(Span::MonthToDate),
            self.ytd.clone().map(Span::YearToDate),
            match (&self.from_day, &self.to_day) {
                (Some(from), Some(to)) => Some(Span::Days {
                    from: from.clone(),
                    to: to.clone(),
                }),
                (None, None) => None,
                _ => return Err(bad("from_day and to_day go together".into())),
            },
        ];
        let mut given = spans.into_iter().flatten();
        let (Some(span), None) = (given.next(), given.next()) else {
            return Err(bad(
                "give exactly one of shift, day, mtd, ytd, or from_day with to_day".into(),
            ));
        };
        let group_by = GroupBy::parse(self.group_by.as_deref().unwrap_or("table")).map_err(bad)?;
        Ok(readside::finance::Query {
            span,
            group_by,
            table: self.table.as_deref().map(table_id).transpose()?,
            pit: self.pit.clone(),
        })
    }

    /// Whether the answer is CSV: `format=csv`, or `Accept: text/csv` without a format.
    fn csv(&self, headers: &HeaderMap) -> Result<bool, ReadError> {
        match self.format.as_deref() {
            Some("csv") => Ok(true),
            Some("json") => Ok(false),
            Some(f) => Err(ReadError::BadRequest(format!("format {f:?}: json or csv"))),
            None => Ok(headers
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.contains("text/csv"))),
        }
    }
}

#[utoipa::path(get, path = "/v1/reports", tag = "finance", params(ReportQuery),
    responses((status = 200, description = "the three wins per group with their variances and causes, handle, theoretical win and hold against its 95% interval; as CSV with format=csv", body = FinanceReport), (status = 400, body = ApiError), (status = 404, body = ApiError), (status = 410, body = ApiError), (status = 503, body = ApiError)))]
pub async fn reports(
    State(st): State<Shared>,
    headers: HeaderMap,
    Query(q): Query<ReportQuery>,
) -> Result<Response, Refusal> {
    let query = q.to_query()?;
    let csv = q.csv(&headers)?;
    readside::finance::refuse_future(&st.finance.rule, &query.span, (st.clock)())?;
    let state = st.clone();
    let now_ns = (st.clock)();
    let report = blocking(move || {
        readside::retained::refuse_removed(&state.ledger, &query.span)?;
        readside::retained::refuse_unindexed(&state.ledger, &state.model, &query.span, now_ns)?;
        // The standing counts of the span's boxes, from the count journal.
        let boxes = readside::finance::drop_boxes(&state.model, &query)?;
        let counts = state.counts.book().results(boxes.iter());
        readside::finance::report(&state.model, &state.finance.pits, &counts, &query)
    })
    .await?;
    Ok(match csv {
        true => (
            [(header::CONTENT_TYPE, "text/csv; charset=utf-8")],
            readside::finance::to_csv(&report),
        )
            .into_response(),
        false => Json(report).into_response(),
    })
}

/// Per-table totals: of all time, or of whole shifts.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct FinanceQuery {
    /// Only this table.
    #[param(pattern = "^[A-Za-z0-9_-]{1,32}$")]
    table: Option<String>,
    /// With `to_ns`: from this shift start (UTC ns).
    from_ns: Option<i64>,
    /// With `from_ns`: to this shift end (UTC ns).
    to_ns: Option<i64>,
}

#[utoipa::path(get, path = "/v1/finance", tag = "finance", params(FinanceQuery),
    responses((status = 200, description = "finance totals per table, of all time or of whole shifts (rounds by their first event, finance events by their device time); a span not on shift bounds is refused", body = Vec<FinanceSummary>), (status = 400, body = ApiError)))]
pub async fn finance(
    State(st): State<Shared>,
    Query(q): Query<FinanceQuery>,
) -> Result<Json<Vec<FinanceSummary>>, Refusal> {
    let table = q.table.as_deref().map(table_id).transpose()?;
    let rule = &st.finance.rule;
    let on_bounds = |from: i64, to: i64| {
        let start = rule.shift_of(from).is_ok_and(|s| s.starts_at_ns == from);
        let end = rule.shift_of(to).is_ok_and(|s| s.starts_at_ns == to);
        start && end && from <= to
    };
    let (from, to) = match (q.from_ns, q.to_ns) {
        (None, None) => (i64::MIN, i64::MAX),
        (Some(f), Some(t)) if on_bounds(f, t) => (f, t),
        _ => {
            return Err(ReadError::BadRequest(format!(
                "from_ns and to_ns: both, each a shift's start or end (UTC ns) under {}, from_ns <= to_ns",
                rule.spec()
            ))
            .into())
        }
    };
    let model = st.model.clone();
    let rows = blocking(move || Ok(model.shift_rows(from, to)?)).await?;
    let mut out = readside::finance::totals(&rows);
    out.retain(|f| table.as_ref().is_none_or(|t| f.table.as_ref() == Some(t)));
    Ok(Json(out))
}

#[utoipa::path(get, path = "/v1/finance/rounds/{table}/{round}", tag = "finance",
    params(("table" = String, Path, pattern = "^[A-Za-z0-9_-]{1,32}$"), ("round" = u64, Path)),
    responses((status = 200, description = "a round's finance summary: per box and line what was paid and what was due, the verdict and the findings with their clauses; no cards", body = RoundFinance), (status = 404, body = ApiError)))]
pub async fn round_finance(
    State(st): State<Shared>,
    Path((table, round)): Path<(String, u64)>,
) -> Result<Json<RoundFinance>, Refusal> {
    let loaded = load_round(&st, &table, round).await?;
    Ok(Json(readside::finance::round_finance(&loaded.report)))
}

/// The gaming day of a jackpot liability report.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct JackpotQuery {
    /// The gaming day, YYYY-MM-DD (cut by arrival time, the House's order).
    day: String,
}

#[utoipa::path(get, path = "/v1/reports/jackpots", tag = "finance", params(JackpotQuery),
    responses((status = 200, description = "each pool's liability over the day: opening, contributions, hits, payments, resets, closing, against the controller's last display", body = Vec<PoolLiability>), (status = 400, body = ApiError), (status = 413, body = ApiError)))]
pub async fn jackpots(
    State(st): State<Shared>,
    Query(q): Query<JackpotQuery>,
) -> Result<Json<Vec<PoolLiability>>, Refusal> {
    crate::search::check_day(&q.day)?;
    let (ledger, rule) = (st.ledger.clone(), st.finance.rule.clone());
    let pools = blocking(move || readside::jackpot::liability(&ledger, &rule, &q.day)).await?;
    Ok(Json(pools))
}
