//! What every read handler shares: `Refusal`, a failed read as its HTTP response;
//! `blocking`, which keeps sled and file reads off the async threads; and `load_round`.
//!
//! Invariant: every refusal leaves as a JSON `ApiError` with the status its `ReadError`
//! names; a read never runs on an async runtime thread.

use crate::params::table_id;
use crate::{rounds, ReadError, Shared};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use schemas::api::ApiError;

/// A failed read as an HTTP response: `ReadError` with its status and a JSON `ApiError`.
#[derive(Debug)]
pub struct Refusal(pub ReadError);

impl From<ReadError> for Refusal {
    fn from(e: ReadError) -> Refusal {
        Refusal(e)
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let Refusal(e) = self;
        let status = match &e {
            // The round's gaming day was removed by retention: its seal still proves the
            // day's heads, but its events are gone for good.
            ReadError::Ledger(ledger::Error::RetentionRemoved { .. }) => StatusCode::GONE,
            // An export that would cover such a day: refused, never sent with a gap.
            ReadError::Ledger(ledger::Error::ExportRemoved { .. }) => StatusCode::GONE,
            ReadError::Gone(_) => StatusCode::GONE,
            ReadError::NotFound(_) => StatusCode::NOT_FOUND,
            ReadError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ReadError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ReadError::Indexing(_) => {
                let mut r = error(StatusCode::SERVICE_UNAVAILABLE, e.to_string());
                let again = axum::http::HeaderValue::from(1u64);
                r.headers_mut()
                    .insert(axum::http::header::RETRY_AFTER, again);
                return r;
            }
            ReadError::Integrity(_) | ReadError::Ledger(_) | ReadError::Internal(_) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        };
        error(status, e.to_string())
    }
}

/// A response of `status` with `msg` in a JSON `ApiError`.
pub(crate) fn error(status: StatusCode, msg: impl Into<String>) -> Response {
    (status, Json(ApiError { error: msg.into() })).into_response()
}

/// Runs `f` on the blocking pool (sled, files).
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ReadError> + Send + 'static,
) -> Result<T, Refusal> {
    let done = tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ReadError::Internal(format!("blocking task: {e}")))?;
    Ok(done?)
}

/// One round recomputed from its stored events. The read model locates it, or the
/// ledger's own indexes when the model has not reached it yet.
pub(crate) async fn load_round(
    st: &Shared,
    table: &str,
    round: u64,
) -> Result<rounds::LoadedRound, Refusal> {
    let table = table_id(table)?;
    let (ledger, model) = (st.ledger.clone(), st.model.clone());
    blocking(move || {
        let located = match model.locate(&table, round)? {
            Some(l) => l,
            None => rounds::locate_in_ledger(&ledger, &table, round)?,
        };
        rounds::load(&ledger, &table, round, located)
    })
    .await
}
