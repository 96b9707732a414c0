//! `GET /v1/analytics`: the decision signals the read model keeps (`readside::signals`),
//! each with links to its rounds. An empty list is "none" only when every round was judged;
//! otherwise the answer says the signals are not computed, and why. It also gives each
//! dealer's quality counts and rates against the floor (`readside::dealers`), and the
//! closed shifts the hold alarm gave up unjudged, with the reason (`readside::holds`).

use crate::params::table_id;
use crate::read::{blocking, Refusal};
use crate::{ReadError, Shared};
use axum::extract::{Query, State};
use axum::Json;
use schemas::api::{AnalyticsList, AnalyticsSignal, ApiError};
use serde::Deserialize;
use utoipa::IntoParams;

/// Most signals one answer holds.
pub const ANALYTICS_SIGNALS_MAX: usize = 1_000;

/// Most shifts given up unjudged one answer names (`holds_not_judged_total` counts all).
pub const HOLDS_NOT_JUDGED_MAX: usize = 100;

/// Filters of the decision signals.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AnalyticsQuery {
    /// Only this table's signals.
    #[param(pattern = "^[A-Za-z0-9_-]{1,32}$")]
    table: Option<String>,
    /// Only this dealer's statistic and quality row.
    dealer: Option<String>,
    /// Only this kind: `hole_card_play`, `card_sharing`, `dealer_errors` or `hold_outside`.
    #[param(pattern = "^(hole_card_play|card_sharing|dealer_errors|hold_outside)$")]
    kind: Option<String>,
    /// Signals to return (default and most 1,000), by table then round.
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u64>,
}

const KINDS: [&str; 4] = [
    "hole_card_play",
    "card_sharing",
    "dealer_errors",
    "hold_outside",
];

/// The decision signals: hole-card play per box, dealer and table, card sharing per pair of
/// neighbouring boxes; each with its statistic, threshold, false-alarm setting and rounds.
#[utoipa::path(get, path = "/v1/analytics", tag = "rounds", params(AnalyticsQuery),
    responses((status = 200, description = "the decision signals, by table then round", body = AnalyticsList), (status = 400, body = ApiError), (status = 500, body = ApiError)))]
pub async fn analytics(
    State(st): State<Shared>,
    Query(q): Query<AnalyticsQuery>,
) -> Result<Json<AnalyticsList>, Refusal> {
    let table = q.table.as_deref().map(table_id).transpose()?;
    if let Some(k) = q.kind.as_deref().filter(|k| !KINDS.contains(k)) {
        let known = KINDS.join(", ");
        return Err(ReadError::BadRequest(format!("kind {k:?}: one of {known}")).into());
    }
    let limit = match q.limit {
        None => ANALYTICS_SIGNALS_MAX,
        Some(n) if (1..=ANALYTICS_SIGNALS_MAX as u64).contains(&n) => n as usize,
        Some(n) => {
            let max = ANALYTICS_SIGNALS_MAX;
            return Err(ReadError::BadRequest(format!("limit {n}: 1 to {max}")).into());
        }
    };
    let on = st.decision_analytics().is_some();
    let model = st.model.clone();
    let (coverage, rows, (dealer_rows, dealers_total), not_judged) = blocking(move || {
        let rows = model.signals(table.as_ref(), usize::MAX)?;
        let dealers = model.dealers_page(readside::dealers::DEALERS_SERVED_MAX)?;
        let not_judged = readside::holds::not_judged(&model, table.as_ref(), HOLDS_NOT_JUDGED_MAX)?;
        Ok((model.coverage()?, rows, dealers, not_judged))
    })
    .await?;
    let dealers_truncated = dealers_total > dealer_rows.len() as u64;
    let signals: Vec<AnalyticsSignal> = rows
        .into_iter()
        .filter(|s| q.dealer.is_none() || s.dealer == q.dealer)
        .filter(|s| q.kind.as_deref().is_none_or(|k| s.kind == k))
        .take(limit)
        .map(|signal| AnalyticsSignal {
            round_links: signal.round_links(),
            signal,
        })
        .collect();
    let computed = on && coverage.is_some_and(|c| c.complete);
    let not_computed_reason = match (on, coverage) {
        _ if computed => None,
        (false, _) => Some("decision analytics are off (serve --decision-analytics RATE)".into()),
        (true, None) => Some("no round indexed yet".into()),
        (true, Some(_)) => Some(
            "part of the read model was indexed with decision analytics off: stop serve, delete <ledger>/readmodel and start serve with --decision-analytics to rebuild it".into(),
        ),
    };
    Ok(Json(AnalyticsList {
        computed,
        not_computed_reason,
        false_alarms_milli_per_1000_rounds: coverage.map(|c| c.false_alarms_milli_per_1000_rounds),
        signals,
        dealers: readside::dealers::assess(&dealer_rows)
            .into_iter()
            .filter(|d| q.dealer.as_ref().is_none_or(|x| *x == d.dealer))
            .collect(),
        dealers_total,
        dealers_truncated,
        holds_not_judged: not_judged.0,
        holds_not_judged_total: not_judged.1,
    }))
}
