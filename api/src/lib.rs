//! The HTTP API of `roundledger serve` (axum). Small until the surveillance API issue:
//! health and each table's durable chain head, so a monitoring room or a device can see
//! what the ledger holds.
//!
//! Invariants: reads only (never appends to the ledger); every handler that touches sled
//! runs it on the blocking pool, never on an async runtime thread; response bodies are
//! types defined in `schemas`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use schemas::{ChainHead, TableId};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

/// Why the API could not run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("binding {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("serving: {0}")]
    Serve(#[source] std::io::Error),
}

/// The API's routes over an open ledger.
pub fn router(ledger: Arc<ledger::Ledger>) -> Router {
    Router::new()
        .route("/health", get(|| async { "ok" }))
        .route("/v1/tables", get(tables))
        .route("/v1/tables/{table}/head", get(head))
        .with_state(ledger)
}

async fn tables(State(ledger): State<Arc<ledger::Ledger>>) -> Json<Vec<ChainHead>> {
    // Heads are kept in memory by the ledger: no sled read, no blocking.
    Json(ledger.heads())
}

async fn head(
    State(ledger): State<Arc<ledger::Ledger>>,
    Path(table): Path<String>,
) -> Result<Json<ChainHead>, (StatusCode, String)> {
    let table = TableId::new(table).map_err(|e| (StatusCode::BAD_REQUEST, e.to_string()))?;
    ledger.head(&table).map(Json).ok_or((
        StatusCode::NOT_FOUND,
        format!("table {table} is not in the ledger"),
    ))
}

/// Serves the API on `addr` until `shutdown` completes. Returns the bound address through
/// `bound` first (so `127.0.0.1:0` can be used in tests).
pub async fn run(
    addr: SocketAddr,
    ledger: Arc<ledger::Ledger>,
    bound: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Bind { addr, source })?;
    bound(listener.local_addr().map_err(Error::Serve)?);
    axum::serve(listener, router(ledger))
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(Error::Serve)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;

    #[tokio::test]
    async fn heads_of_an_empty_ledger_and_an_unknown_table() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Arc::new(ledger::Ledger::open(dir.path()).unwrap());
        let app = router(ledger);
        let res = app
            .clone()
            .oneshot(Request::get("/v1/tables").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        let body = axum::body::to_bytes(res.into_body(), 1 << 20)
            .await
            .unwrap();
        assert_eq!(&body[..], b"[]");
        let res = app
            .clone()
            .oneshot(
                Request::get("/v1/tables/T1/head")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::NOT_FOUND);
        let res = app
            .oneshot(
                Request::get("/v1/tables/bad.id/head")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    }
}
