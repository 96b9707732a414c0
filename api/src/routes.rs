//! The handlers, the access guard with its audit record, and the OpenAPI document (utoipa:
//! each handler's `#[utoipa::path]` is the document's source, so it cannot drift).

use crate::auth::{allowed, area_of, bearer, BearerError, Caller};
use crate::edge::{json_error, redact_path, redact_query};
use crate::limit::{Suppressed, Verdict};
use crate::params::{page, table_id, OFFSET_MAX};
use crate::read::{blocking, error, load_round, Refusal};
use crate::stream::body_from_writer;
use crate::{
    rounds, AppState, ReadError, Shared, AUDIT_LIMIT_MAX, LIST_LIMIT_MAX, POOL_EVENTS_MAX,
};
/// Most events one `GET /v1/export` holds, whatever its range.
pub const EXPORT_EVENTS_MAX: u64 = 2_000_000;
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use futures::Stream;
use proofs::bundle::EvidenceBundle;
use schemas::api::*;
use schemas::records::Record;
use schemas::{EventBody, Money, RoundId, Seq, TableId};
use serde::Deserialize;
use std::collections::BTreeMap;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{IntoParams, Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "roundledger API",
        description = "Surveillance, finance and audit API of roundledger serve. Every /v1 path needs `Authorization: Bearer <token>`; every request is recorded in the audit log."
    ),
    modifiers(&Bearer),
    security(("bearer" = []))
)]
/// The OpenAPI document of the API, served at `/openapi.json`.
pub struct ApiDoc;

struct Bearer;
impl Modify for Bearer {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let c = doc.components.get_or_insert_with(Default::default);
        c.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

pub fn router(state: Shared) -> axum::Router {
    let (api, doc) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(whoami))
        .routes(routes!(status))
        .routes(routes!(tables))
        .routes(routes!(crate::lists::list_rounds))
        .routes(routes!(round_detail))
        .routes(routes!(round_steps))
        .routes(routes!(round_step))
        .routes(routes!(crate::lists::disputes))
        .routes(routes!(crate::lists::findings))
        .routes(routes!(crate::decisions::analytics))
        .routes(routes!(chain))
        .routes(routes!(quarantine))
        .routes(routes!(quarantine_entry))
        .routes(routes!(alerts))
        .routes(routes!(pools))
        .routes(routes!(crate::finance::finance))
        .routes(routes!(crate::finance::reports))
        .routes(routes!(crate::finance::jackpots))
        .routes(routes!(crate::finance::round_finance))
        .routes(routes!(list_counts, enter_count))
        .routes(routes!(feed))
        .routes(routes!(list_cases, open_case))
        .routes(routes!(get_case))
        .routes(routes!(add_note))
        .routes(routes!(close_case))
        .routes(routes!(assign_case))
        .routes(routes!(reopen_case))
        .routes(routes!(evidence))
        .routes(routes!(export))
        .routes(routes!(audit))
        .routes(routes!(days))
        .routes(routes!(day))
        .with_state(state.clone())
        .split_for_parts();
    let mut doc = doc;
    crate::openapi::document_errors(&mut doc);
    let shifts_len = state.finance.rule.shifts_text().split(',').count();
    crate::search::document_patterns(&mut doc, shifts_len);
    let doc =
        serde_json::to_string_pretty(&doc).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    // Every other `/v1/` path is answered here, behind the guard. Left to the UI's
    // router below, an unknown `/v1/` path would get the UI's plain 404, with no token
    // asked and no audit entry.
    let api = api
        .route("/v1/{*rest}", axum::routing::any(no_such_endpoint))
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard));
    axum::Router::new()
        .merge(api)
        .route(
            "/openapi.json",
            axum::routing::get(move || async move {
                ([(header::CONTENT_TYPE, "application/json")], doc.clone())
            }),
        )
        .route("/health", axum::routing::get(|| async { "ok" }))
        .merge(crate::ui::router())
        .layer(axum::middleware::from_fn_with_state(
            state.requests.clone(),
            crate::ops::count_requests,
        ))
        .layer(axum::middleware::from_fn(crate::edge::security_headers))
}

/// A `/v1/` path no route serves (for a caller the policy lets that far: unlisted paths
/// are the admin's).
async fn no_such_endpoint() -> Response {
    error(StatusCode::NOT_FOUND, "no such endpoint")
}

/// Most bytes of a request's path and of its query the audit log records. A URI may be
/// up to 64 KiB, and JSON doubles each backslash, so a caller could make the entry too
/// long for the journal, and the request's audit would fail.
pub const AUDITED_URI_PART_MAX: usize = 2_048;

/// `part` as the audit log records it: whole, or its first `AUDITED_URI_PART_MAX` bytes
/// and how long it was.
fn audited(part: &str) -> String {
    if part.len() <= AUDITED_URI_PART_MAX {
        return part.to_string();
    }
    let mut cut = AUDITED_URI_PART_MAX;
    while !part.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}... ({} bytes)", &part[..cut], part.len())
}

/// Whether the server accepts a token: such a value is redacted whatever its shape.
fn known(st: &AppState) -> impl Fn(&str) -> bool + '_ {
    move |t| st.tokens().caller(t).is_some()
}

/// Who a request's `Authorization` header names.
enum Access {
    Caller(Caller),
    /// No token, or one nobody holds.
    Anonymous,
    /// Two `Authorization` headers.
    Ambiguous,
}

fn access(st: &AppState, headers: &axum::http::HeaderMap) -> Access {
    match bearer(headers) {
        Ok(token) => st
            .tokens()
            .caller(token)
            .cloned()
            .map_or(Access::Anonymous, Access::Caller),
        Err(BearerError::Missing) => Access::Anonymous,
        Err(BearerError::Ambiguous) => Access::Ambiguous,
    }
}

/// The access guard: resolves the token, applies the role policy, runs the handler, and
/// records the request in the audit log before the response leaves. A request that
/// changes something (a case: not GET) is recorded before it runs too, and does not run
/// unless that entry is written: a change is never made without an audit entry naming
/// who asked for it. Every error leaves as a JSON `ApiError` (`edge::json_error`).
async fn guard(State(st): State<Shared>, req: Request, next: Next) -> Response {
    let ip = req
        .extensions()
        .get::<crate::serve::ClientAddr>()
        .map(|c| c.0.ip());
    let now_ns = (st.clock)();
    for s in st.limiter.ended(now_ns) {
        if let Err(refused) = record(&st, move |id| rate_limited_entry(id, now_ns, s)).await {
            return refused;
        }
    }
    // A token the server accepts is never refused for others' failures: the limit is on
    // guessing, and one address may be a whole desk behind a proxy.
    let valid = matches!(access(&st, req.headers()), Access::Caller(_));
    let verdict = match valid {
        true => Verdict::Pass,
        false => st.limiter.check(ip, now_ns),
    };
    let (retry_after_s, audit) = match verdict {
        Verdict::Pass => {
            let response = guarded(st.clone(), req, next, ip).await;
            // Only a failed authentication counts: a 403 (a role's limit) or a 400 (a
            // bad parameter) comes from a caller the server knows.
            if response.status() == StatusCode::UNAUTHORIZED {
                st.limiter.failed(ip, now_ns);
            }
            return response;
        }
        Verdict::LimitedAudited { retry_after_s } => (retry_after_s, true),
        Verdict::LimitedCounted { retry_after_s } => (retry_after_s, false),
    };
    let mut response = error(
        StatusCode::TOO_MANY_REQUESTS,
        format!("too many failed authentications from this address; try again in {retry_after_s} s (a valid token is still served)"),
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_s));
    if !audit {
        return response;
    }
    let entry = AuditEntry {
        method: req.method().as_str().to_string(),
        path: audited(&redact_path(req.uri().path(), &known(&st))),
        query: audited(&redact_query(req.uri().query().unwrap_or(""), &known(&st))),
        ..rate_limited_entry(
            0,
            now_ns,
            Suppressed {
                client: ip.map(|i| i.to_string()).unwrap_or_default(),
                window_start_ns: now_ns,
                refused: 1,
            },
        )
    };
    match record(&st, move |id| AuditEntry { id, ..entry }).await {
        Ok(_) => response,
        Err(refused) => refused,
    }
}

/// The audit entry of a client's 429s counted in one window.
fn rate_limited_entry(id: u64, at_ns: i64, s: Suppressed) -> AuditEntry {
    AuditEntry {
        id,
        at_ns,
        who: "anonymous".into(),
        role: None,
        method: "*".into(),
        path: "(rate limited)".into(),
        query: format!(
            "{} requests answered 429 in the minute from {} ns",
            s.refused, s.window_start_ns
        ),
        status: Some(StatusCode::TOO_MANY_REQUESTS.as_u16()),
        received: None,
        client: Some(s.client),
        node: None,
        stream_seq: None,
    }
}

/// What the audit log records of one request, whatever its answer.
#[derive(Clone)]
struct Asked {
    method: String,
    path: String,
    query: String,
    caller: Option<Caller>,
    client: Option<String>,
    clock: crate::Clock,
}

impl Asked {
    /// The request's entry with `status` and `received`, made once its id is known.
    fn entry(
        &self,
        status: Option<u16>,
        received: Option<u64>,
    ) -> impl FnOnce(u64) -> AuditEntry + Send + 'static {
        let a = self.clone();
        move |id| AuditEntry {
            id,
            at_ns: (a.clock)(),
            who: a
                .caller
                .as_ref()
                .map_or_else(|| "anonymous".to_string(), |c| c.name.clone()),
            role: a.caller.as_ref().map(|c| c.role),
            method: a.method,
            path: a.path,
            query: a.query,
            status,
            received,
            client: a.client,
            node: None,
            stream_seq: None,
        }
    }
}

/// The guard for a request the rate limit lets through.
async fn guarded(
    st: Shared,
    mut req: Request,
    next: Next,
    ip: Option<std::net::IpAddr>,
) -> Response {
    let client = ip.map(|i| i.to_string());
    let method = req.method().as_str().to_string();
    let path = audited(&redact_path(req.uri().path(), &known(&st)));
    let query = audited(&redact_query(req.uri().query().unwrap_or(""), &known(&st)));
    let access = access(&st, req.headers());
    let caller = match &access {
        Access::Caller(c) => Some(c.clone()),
        _ => None,
    };
    let asked = Asked {
        method: method.clone(),
        path: path.clone(),
        query,
        caller,
        client,
        clock: st.clock,
    };
    let entry = |status, received| asked.entry(status, received);
    let mut received = None;
    let response = match access {
        Access::Ambiguous => error(
            StatusCode::BAD_REQUEST,
            "more than one Authorization header: send exactly one",
        ),
        Access::Anonymous => error(
            StatusCode::UNAUTHORIZED,
            "a bearer token is required (Authorization: Bearer <token>)",
        ),
        Access::Caller(c) if !allowed(c.role, area_of(&method, &path)) => error(
            StatusCode::FORBIDDEN,
            format!("role {} may not use {method} {path}", c.role.name()),
        ),
        Access::Caller(c) => {
            if !matches!(req.method(), &Method::GET | &Method::HEAD) {
                match record(&st, entry(None, None)).await {
                    Ok(id) => received = Some(id),
                    Err(refused) => return refused,
                }
            }
            req.extensions_mut().insert(c);
            json_error(next.run(req).await).await
        }
    };
    let status = response.status().as_u16();
    match record(&st, entry(Some(status), received)).await {
        Ok(_) => response,
        Err(refused) => refused,
    }
}

/// Appends one audit entry (on a blocking thread: the journal syncs); its id, or the 503
/// to answer instead.
async fn record(
    st: &Shared,
    make: impl FnOnce(u64) -> AuditEntry + Send + 'static,
) -> Result<u64, Response> {
    let s = st.clone();
    let written = tokio::task::spawn_blocking(move || s.audit.append(make)).await;
    let failure = match written {
        Ok(Ok(entry)) => {
            let id = entry.id;
            crate::records::share_access(st, entry);
            return Ok(id);
        }
        Ok(Err(e)) => e.to_string(),
        Err(e) => format!("task: {e}"),
    };
    tracing::error!("audit log: {failure}");
    Err(error(
        StatusCode::SERVICE_UNAVAILABLE,
        "the audit log cannot be written; no data is served",
    ))
}

/// Paging of the audit log.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct Paging {
    /// Items to skip (default 0).
    #[param(maximum = 9007199254740991_u64)]
    offset: Option<u64>,
    /// Items to return (default 50, at most 1000).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u64>,
    /// `node` (default): this node's log. `floor`: every node's entries, from the
    /// records stream, each naming its node.
    #[param(pattern = "^(node|floor)$")]
    scope: Option<String>,
}

#[utoipa::path(get, path = "/v1/whoami", tag = "access",
    responses((status = 200, description = "the caller's name and role", body = WhoAmI)))]
async fn whoami(State(st): State<Shared>, Extension(c): Extension<Caller>) -> Json<WhoAmI> {
    let time_zone = st.time_zone.get().cloned().unwrap_or_else(|| "UTC".into());
    Json(WhoAmI {
        name: c.name,
        role: c.role,
        time_zone,
        ingesting: st.ingesting.get().copied().unwrap_or(false),
        recorder_offset_ms: st.recorder_offset_ms.get().copied(),
        stuck_after_s: st.stuck_after_s.get().copied(),
        gaming_day: st.finance.rule.day_of((st.clock)()).ok(),
    })
}

#[utoipa::path(get, path = "/v1/status", tag = "access",
    responses((status = 200, description = "tables, events stored and indexed, rounds indexed", body = ServerStatus)))]
async fn status(State(st): State<Shared>) -> Result<Json<ServerStatus>, Refusal> {
    // Heads and counts are in memory; the model is read once a table.
    let stats = st.ledger.reader().stats();
    let (model, ledger) = (st.model.clone(), st.ledger.clone());
    let (meta, behind) = blocking(move || {
        let behind = readside::retained::tables_behind(&ledger, &model)?;
        Ok((model.meta()?, behind.len() as u64))
    })
    .await?;
    Ok(Json(ServerStatus {
        tables: stats.tables as u64,
        events_stored: stats.events,
        events_indexed: meta.events_indexed,
        rounds_indexed: meta.rounds,
        tables_indexing: behind,
    }))
}

#[utoipa::path(get, path = "/v1/tables", tag = "tables",
    responses((status = 200, description = "every table with its chain head and round counts", body = Vec<TableInfo>)))]
async fn tables(State(st): State<Shared>) -> Result<Json<Vec<TableInfo>>, Refusal> {
    let heads = st.ledger.reader().heads();
    let fenced = fenced_views(&st.ledger);
    let model = st.model.clone();
    let statuses: BTreeMap<TableId, _> = blocking(move || Ok(model.statuses()?))
        .await?
        .into_iter()
        .collect();
    Ok(Json(
        heads
            .into_iter()
            .map(|h| {
                let t = statuses.get(&h.table);
                TableInfo {
                    fenced: fenced.get(&h.table).cloned(),
                    rule_set: t.and_then(|t| t.rule_set),
                    head_seq: h.seq,
                    head_hash: h.hash,
                    rounds: t.map_or(0, |t| t.rounds),
                    disputed: t.map_or(0, |t| t.disputed),
                    irregular: t.map_or(0, |t| t.irregular),
                    void: t.map_or(0, |t| t.void),
                    table: h.table,
                }
            })
            .collect(),
    ))
}

#[utoipa::path(get, path = "/v1/tables/{table}/rounds/{round}", tag = "rounds",
    params(("table" = String, Path, pattern = "^[A-Za-z0-9_-]{1,32}$"), ("round" = u64, Path)),
    responses((status = 200, description = "the round: events, reconstruction, settlement and findings, recomputed from the stored bytes", body = RoundDetail), (status = 404, body = ApiError), (status = 410, body = ApiError), (status = 500, body = ApiError)))]
async fn round_detail(
    State(st): State<Shared>,
    Path((table, round)): Path<(String, u64)>,
) -> Result<Json<RoundDetail>, Refusal> {
    Ok(Json(load_round(&st, &table, round).await?.detail()))
}

#[utoipa::path(get, path = "/v1/tables/{table}/rounds/{round}/steps", tag = "rounds",
    params(("table" = String, Path, pattern = "^[A-Za-z0-9_-]{1,32}$"), ("round" = u64, Path)),
    responses((status = 200, description = "the replay state after each event of the round", body = StepList), (status = 404, body = ApiError), (status = 410, body = ApiError), (status = 500, body = ApiError)))]
async fn round_steps(
    State(st): State<Shared>,
    Path((table, round)): Path<(String, u64)>,
) -> Result<Json<StepList>, Refusal> {
    Ok(Json(load_round(&st, &table, round).await?.steps()))
}

#[utoipa::path(get, path = "/v1/tables/{table}/rounds/{round}/steps/{k}", tag = "rounds",
    params(("table" = String, Path, pattern = "^[A-Za-z0-9_-]{1,32}$"), ("round" = u64, Path), ("k" = u64, Path, description = "event index in the round's timeline, from 0")),
    responses((status = 200, description = "the replay state after event k", body = StepState), (status = 404, body = ApiError), (status = 410, body = ApiError), (status = 500, body = ApiError)))]
async fn round_step(
    State(st): State<Shared>,
    Path((table, round, k)): Path<(String, u64, u64)>,
) -> Result<Json<StepState>, Refusal> {
    let steps = load_round(&st, &table, round).await?.steps();
    let n = steps.steps.len();
    steps
        .steps
        .into_iter()
        .nth(k as usize)
        .map(Json)
        .ok_or_else(|| ReadError::NotFound(format!("step {k}: the round has {n} events")).into())
}

#[utoipa::path(get, path = "/v1/chain", tag = "tables",
    responses((status = 200, description = "each table's chain: verified, attested and gaps", body = Vec<ChainStatus>)))]
async fn chain(State(st): State<Shared>) -> Result<Json<Vec<ChainStatus>>, Refusal> {
    // Heads, attestations and gaps are the ledger's in-memory state; a gap's blocker is
    // read from the newest quarantine entries. How far each chain is verified is the read
    // model's.
    let ledger = st.ledger.clone();
    let mut gaps = blocking(move || Ok(ledger.reader().gap_views()?)).await?;
    let mut heads = st.ledger.reader().heads();
    // A table holding events before its first stored one has no head yet: seq 0.
    for table in gaps.keys() {
        if !heads.iter().any(|h| &h.table == table) {
            heads.push(schemas::ChainHead::empty(table.clone()));
        }
    }
    let fenced = fenced_views(&st.ledger);
    let ledger = st.ledger.clone();
    let mut disputed: BTreeMap<TableId, Vec<schemas::api::DisputedSeq>> = BTreeMap::new();
    for d in blocking(move || readside::forks::disputed(&ledger)).await? {
        disputed.entry(d.table.clone()).or_default().push(d);
    }
    let model = st.model.clone();
    let statuses: BTreeMap<TableId, _> = blocking(move || Ok(model.statuses()?))
        .await?
        .into_iter()
        .collect();
    Ok(Json(
        heads
            .into_iter()
            .map(|h| {
                let t = statuses.get(&h.table);
                let through = t.map_or(0, |t| t.verified_through);
                let problem = t.and_then(|t| t.problem.clone());
                let fenced = fenced.get(&h.table).cloned();
                let mine = disputed.remove(&h.table).unwrap_or_default();
                ChainStatus {
                    ok: problem.is_none()
                        && fenced.is_none()
                        && mine.is_empty()
                        && through == h.seq.0,
                    disputed: mine,
                    fenced,
                    verified_through: Seq(through),
                    problem,
                    attested_through: st.ledger.reader().attestation(&h.table).map(|a| a.seq),
                    gap: gaps.remove(&h.table),
                    table: h.table,
                    head_seq: h.seq,
                    head_hash: h.hash,
                }
            })
            .collect(),
    ))
}

/// Filters of the quarantine list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct QuarantineQuery {
    /// Only this reason code.
    reason: Option<String>,
    /// Only messages whose subject named this table.
    #[param(pattern = "^[A-Za-z0-9_-]{1,32}$")]
    table: Option<String>,
    /// Items to skip (default 0).
    #[param(maximum = 9007199254740991_u64)]
    offset: Option<u64>,
    /// Items to return (default 50, at most 500).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u64>,
}

#[utoipa::path(get, path = "/v1/quarantine", tag = "tables", params(QuarantineQuery),
    responses((status = 200, description = "a page of quarantined messages, newest first", body = QuarantinePage), (status = 500, body = ApiError)))]
async fn quarantine(
    State(st): State<Shared>,
    Query(q): Query<QuarantineQuery>,
) -> Result<Json<QuarantinePage>, Refusal> {
    let table = q.table.as_deref().map(table_id).transpose()?;
    let (offset, limit) = page(q.offset, q.limit, LIST_LIMIT_MAX)?;
    let s = st.clone();
    blocking(move || {
        Ok(s.ledger
            .reader()
            .quarantine_view(q.reason.as_deref(), table.as_ref(), offset, limit)?)
    })
    .await
    .map(Json)
}

/// The operator alerts of this server's ingest, newest first (`ingest::alerts`): forks,
/// refused publishers, stalled attestation. Also on NATS as `alerts.<table>.<kind>`.
#[utoipa::path(get, path = "/v1/alerts", tag = "tables",
    responses((status = 200, description = "ingest's operator alerts, newest first", body = AlertList)))]
async fn alerts(State(st): State<Shared>) -> Json<AlertList> {
    let alerts = st.alerts.get().map_or_else(Vec::new, |source| (source.0)());
    Json(AlertList { alerts })
}

#[utoipa::path(get, path = "/v1/quarantine/{id}", tag = "tables",
    params(("id" = u64, Path, description = "Quarantine entry id")),
    responses((status = 200, description = "one quarantined message with its bytes", body = QuarantineRow), (status = 404, body = ApiError), (status = 500, body = ApiError)))]
async fn quarantine_entry(
    State(st): State<Shared>,
    Path(id): Path<u64>,
) -> Result<Json<QuarantineRow>, Refusal> {
    let s = st.clone();
    blocking(move || {
        s.ledger
            .reader()
            .quarantine_entry(id)?
            .map(|e| e.row(usize::MAX))
            .ok_or_else(|| ReadError::NotFound(format!("quarantine entry {id}")))
    })
    .await
    .map(Json)
}

#[utoipa::path(get, path = "/v1/pools", tag = "finance",
    responses((status = 200, description = "each jackpot pool recomputed from the events, beside the values shown", body = Vec<PoolView>), (status = 413, body = ApiError), (status = 500, body = ApiError)))]
async fn pools(State(st): State<Shared>) -> Result<Json<Vec<PoolView>>, Refusal> {
    let s = st.clone();
    blocking(move || compute_pools(&s)).await.map(Json)
}

fn compute_pools(st: &AppState) -> Result<Vec<PoolView>, ReadError> {
    let stored = st.ledger.reader().stats().events;
    if let Some((n, v)) = st
        .pools_cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
    {
        if *n == stored {
            return Ok(v.clone());
        }
    }
    if stored > POOL_EVENTS_MAX {
        return Err(ReadError::TooLarge(format!(
            "{stored} events stored; pools are replayed over at most {POOL_EVENTS_MAX} (use roundledger audit)"
        )));
    }
    let mut events = Vec::new();
    let mut last_shown: BTreeMap<String, Money> = BTreeMap::new();
    for item in st.ledger.reader().events_in_arrival_order() {
        let (_, e) = item?;
        if let Ok((ev, _)) = schemas::codec::decode(&e.bytes) {
            if let EventBody::JackpotShown { pool, value } = &ev.body {
                last_shown.insert(pool.as_str().to_string(), *value);
            }
            events.push(ev);
        }
    }
    let report = replayer::replay_pool(&events);
    let views: Vec<PoolView> = report
        .pools
        .into_values()
        .map(|p| PoolView {
            last_shown: last_shown.get(p.pool.as_str()).copied(),
            wins: p.wins.len() as u64,
            paid: p.wins.iter().map(|w| w.amount).sum(),
            pool: p.pool,
            tables: p.tables,
            start: p.start,
            contributions: p.contributions,
            contributing_stakes: p.contributing_stakes,
            resets: p.resets,
            displays_checked: p.displays_checked,
            recomputed: p.end,
            mismatches: p
                .mismatches
                .into_iter()
                .map(|m| PoolMismatchRow {
                    code: m.code,
                    table: m.table,
                    seq: m.seq,
                    shown: m.shown,
                    recomputed: m.recomputed,
                    difference: m.difference,
                })
                .collect(),
        })
        .collect();
    *st.pools_cache.lock().unwrap_or_else(|p| p.into_inner()) = Some((stored, views.clone()));
    Ok(views)
}

#[utoipa::path(get, path = "/v1/feed", tag = "rounds",
    responses((status = 200, description = "server-sent events: `round` and `finding` events whose data is a FeedItem; `lagged` when the client fell behind", content_type = "text/event-stream", body = FeedItem)))]
async fn feed(
    State(st): State<Shared>,
) -> Sse<impl Stream<Item = Result<SseEvent, std::convert::Infallible>>> {
    use futures::StreamExt;
    let rx = st.feed.subscribe();
    let mut stop = st.stopping.clone();
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        use tokio::sync::broadcast::error::RecvError;
        match rx.recv().await {
            Ok(item) => {
                let kind = match &item {
                    FeedItem::Round { .. } => "round",
                    FeedItem::Finding { .. } => "finding",
                };
                let ev = SseEvent::default()
                    .event(kind)
                    .json_data(&item)
                    .unwrap_or_else(|_| SseEvent::default().event("error"));
                Some((Ok(ev), rx))
            }
            Err(RecvError::Lagged(n)) => Some((
                Ok(SseEvent::default().event("lagged").data(n.to_string())),
                rx,
            )),
            Err(RecvError::Closed) => None,
        }
    })
    .take_until(Box::pin(async move {
        let _ = stop.wait_for(|s| *s).await;
    }));
    Sse::new(stream).keep_alive(KeepAlive::default())
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CaseQuery {
    /// Only cases on this table.
    #[param(pattern = "^[A-Za-z0-9_-]{1,32}$")]
    table: Option<String>,
    /// Only cases on this round.
    #[param(maximum = 9007199254740991_u64)]
    round: Option<u64>,
    /// Only open or only closed cases.
    #[param(pattern = "^(open|closed)$")]
    status: Option<String>,
    /// Only cases assigned to this person.
    assignee: Option<String>,
    /// Items to skip (default 0).
    #[param(maximum = 9007199254740991_u64)]
    offset: Option<u64>,
    /// Items to return (default 50, at most 500).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u64>,
}

#[utoipa::path(get, path = "/v1/cases", tag = "cases", params(CaseQuery),
    responses((status = 200, description = "a page of cases", body = CasePage)))]
async fn list_cases(
    State(st): State<Shared>,
    Query(q): Query<CaseQuery>,
) -> Result<Json<CasePage>, Refusal> {
    let table = q.table.as_deref().map(table_id).transpose()?;
    let (offset, limit) = page(q.offset, q.limit, LIST_LIMIT_MAX)?;
    if let Some(r) = q.round.filter(|r| *r > OFFSET_MAX) {
        return Err(ReadError::BadRequest(format!("round {r}: at most {OFFSET_MAX}")).into());
    }
    let open = match q.status.as_deref() {
        None => None,
        Some("open") => Some(true),
        Some("closed") => Some(false),
        Some(s) => {
            return Err(ReadError::BadRequest(format!("status {s:?}: open or closed")).into())
        }
    };
    let wanted = |c: &CaseView| {
        table.as_ref().is_none_or(|t| &c.table == t)
            && q.round.is_none_or(|r| c.round.0 == r)
            && open.is_none_or(|o| c.open == o)
            && q.assignee
                .as_ref()
                .is_none_or(|a| c.assignee.as_ref() == Some(a))
    };
    let (total, items) = st.cases.page(wanted, offset, limit);
    Ok(Json(CasePage {
        total,
        items,
        offset,
        limit,
    }))
}

fn case_error(e: crate::cases::CaseError) -> Response {
    use crate::cases::CaseError::*;
    let status = match &e {
        Unknown(_) => StatusCode::NOT_FOUND,
        Closed(_) | Open(_) | Full { .. } => StatusCode::CONFLICT,
        Invalid(_) => StatusCode::BAD_REQUEST,
        Journal(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    error(status, e.to_string())
}

/// The answer to a record that was not answered with its outcome: 503, naming why.
fn submit_error(e: crate::records::SubmitError) -> Response {
    error(StatusCode::SERVICE_UNAVAILABLE, e.to_string())
}

/// A case change: checked on this node's views once it holds every record the stream
/// had, then recorded (`records::submit`); stream order decides a race with another node.
async fn act(st: Shared, caller: Caller, id: Option<u64>, action: CaseAction) -> Response {
    use crate::records::{submit, Applied};
    if let Err(e) = crate::records::catch_up(&st).await {
        return submit_error(e);
    }
    if let Err(e) = st.cases.precheck(id, &action) {
        return case_error(e);
    }
    let record = Record::Case {
        case_id: id,
        at_ns: (st.clock)(),
        author: caller.name,
        role: caller.role,
        action,
    };
    match submit(&st, record).await {
        Ok(Applied::Case(Ok(v))) => {
            let status = if id.is_none() {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            (status, Json(v)).into_response()
        }
        Ok(Applied::Case(Err(e))) => case_error(e),
        Ok(_) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "a case record was applied as another kind",
        ),
        Err(e) => submit_error(e),
    }
}

#[utoipa::path(post, path = "/v1/cases", tag = "cases", request_body = OpenCase,
    responses((status = 201, description = "the case, opened", body = CaseView), (status = 400, body = ApiError), (status = 404, description = "no such table or round", body = ApiError), (status = 500, body = ApiError)))]
async fn open_case(
    State(st): State<Shared>,
    Extension(c): Extension<Caller>,
    crate::body::Body(b): crate::body::Body<OpenCase>,
) -> Response {
    // A case is opened on a round that exists: a late or stale page must not file it on
    // a round nobody reviewed. A store that cannot answer is a 500, never "no round".
    match round_exists(&st, &b.table, b.round).await {
        Ok(true) => {}
        Ok(false) => {
            return error(
                StatusCode::NOT_FOUND,
                format!("table {} has no round {}", b.table, b.round.0),
            )
        }
        Err(refusal) => return refusal.into_response(),
    }
    act(
        st,
        c,
        None,
        CaseAction::Opened {
            table: b.table,
            round: b.round,
            title: b.title,
        },
    )
    .await
}

/// Whether `table` has `round`: the read model, else the ledger's round index for a
/// round the model has not reached yet.
async fn round_exists(st: &Shared, table: &TableId, round: RoundId) -> Result<bool, Refusal> {
    let (m, t) = (st.model.clone(), table.clone());
    if blocking(move || Ok(m.digest(&t, round.0)?.is_some())).await? {
        return Ok(true);
    }
    let (l, t) = (st.ledger.clone(), table.clone());
    blocking(move || Ok(l.reader().rounds(&t)?.iter().any(|x| x.round == round))).await
}

#[utoipa::path(get, path = "/v1/cases/{id}", tag = "cases", params(("id" = u64, Path)),
    responses((status = 200, description = "the case with all its entries", body = CaseView), (status = 404, body = ApiError)))]
async fn get_case(State(st): State<Shared>, Path(id): Path<u64>) -> Response {
    match st.cases.get(id) {
        Some(v) => Json(v).into_response(),
        None => error(StatusCode::NOT_FOUND, format!("case {id} does not exist")),
    }
}

#[utoipa::path(post, path = "/v1/cases/{id}/notes", tag = "cases", params(("id" = u64, Path)), request_body = AddNote,
    responses((status = 200, description = "the case with the note added", body = CaseView), (status = 404, body = ApiError), (status = 409, body = ApiError), (status = 500, body = ApiError)))]
async fn add_note(
    State(st): State<Shared>,
    Extension(c): Extension<Caller>,
    Path(id): Path<u64>,
    crate::body::Body(b): crate::body::Body<AddNote>,
) -> Response {
    act(st, c, Some(id), CaseAction::Note { text: b.text }).await
}

#[utoipa::path(post, path = "/v1/cases/{id}/close", tag = "cases", params(("id" = u64, Path)), request_body = CloseCase,
    responses((status = 200, description = "the case, closed", body = CaseView), (status = 404, body = ApiError), (status = 409, body = ApiError), (status = 500, body = ApiError)))]
async fn close_case(
    State(st): State<Shared>,
    Extension(c): Extension<Caller>,
    Path(id): Path<u64>,
    crate::body::Body(b): crate::body::Body<CloseCase>,
) -> Response {
    act(
        st,
        c,
        Some(id),
        CaseAction::Closed {
            decision: b.decision,
        },
    )
    .await
}

#[utoipa::path(post, path = "/v1/cases/{id}/assign", tag = "cases", params(("id" = u64, Path)), request_body = AssignCase,
    responses((status = 200, description = "the case with its new assignee", body = CaseView), (status = 404, body = ApiError), (status = 409, body = ApiError), (status = 500, body = ApiError)))]
async fn assign_case(
    State(st): State<Shared>,
    Extension(c): Extension<Caller>,
    Path(id): Path<u64>,
    crate::body::Body(b): crate::body::Body<AssignCase>,
) -> Response {
    act(st, c, Some(id), CaseAction::Assigned { to: b.to }).await
}

#[utoipa::path(post, path = "/v1/cases/{id}/reopen", tag = "cases", params(("id" = u64, Path)), request_body = ReopenCase,
    responses((status = 200, description = "the case, open again", body = CaseView), (status = 404, body = ApiError), (status = 409, body = ApiError), (status = 500, body = ApiError)))]
async fn reopen_case(
    State(st): State<Shared>,
    Extension(c): Extension<Caller>,
    Path(id): Path<u64>,
    crate::body::Body(b): crate::body::Body<ReopenCase>,
) -> Response {
    act(st, c, Some(id), CaseAction::Reopened { reason: b.reason }).await
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CountQuery {
    /// Only counts of this table.
    #[param(pattern = "^[A-Za-z0-9_-]{1,32}$")]
    table: Option<String>,
    /// Items to return, newest first (default 50, at most 500).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u64>,
}

#[utoipa::path(get, path = "/v1/counts", tag = "finance", params(CountQuery),
    responses((status = 200, description = "the standing count of each drop box, newest first", body = Vec<schemas::count::CountEntry>), (status = 400, body = ApiError)))]
async fn list_counts(
    State(st): State<Shared>,
    Query(q): Query<CountQuery>,
) -> Result<Json<Vec<schemas::count::CountEntry>>, Refusal> {
    let table = q.table.as_deref().map(table_id).transpose()?;
    let (_, limit) = page(None, q.limit, LIST_LIMIT_MAX)?;
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    Ok(Json(st.counts.book().list(table.as_ref(), limit)))
}

#[utoipa::path(post, path = "/v1/counts", tag = "finance", request_body = schemas::count::SignedCount,
    responses((status = 201, description = "the count, journaled", body = schemas::count::CountEntry), (status = 400, body = ApiError), (status = 403, body = ApiError), (status = 404, body = ApiError), (status = 500, body = ApiError), (status = 503, description = "the read model has not yet indexed the table's stored events, or the records stream did not answer; `Retry-After`", body = ApiError)))]
async fn enter_count(
    State(st): State<Shared>,
    Extension(c): Extension<Caller>,
    crate::body::Body(b): crate::body::Body<schemas::count::SignedCount>,
) -> Response {
    use crate::counts::CountRefused;
    if st.ledger.reader().head(&b.count.table).is_none() {
        let msg = format!("no table {} in the ledger", b.count.table);
        return error(StatusCode::NOT_FOUND, msg);
    }
    if let Err(e) = crate::records::catch_up(&st).await {
        return submit_error(e);
    }
    let at_ns = (st.clock)();
    let s = st.clone();
    let checked = tokio::task::spawn_blocking(move || {
        // Bound to its table's box, after its removal, not in the future; else nothing kept.
        let now = (at_ns, s.ledger.reader().clock_skew_max_ns());
        readside::counts::check_bound(&s.model, &b.count, now).map_err(|e| match e {
            readside::counts::BoundError::Refused(why) => {
                refused_or_indexing(&s, &b.count.table, why)
            }
            e => CountRefused::Bound(e.to_string()),
        })?;
        s.counts.check(&b)?;
        Ok(b)
    })
    .await;
    let signed = match checked {
        Ok(Ok(signed)) => signed,
        Ok(Err(e)) => return count_refused(e),
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    let record = Record::Count {
        signed,
        entered_by: c.name,
        entered_at_ns: at_ns,
    };
    match crate::records::submit(&st, record).await {
        Ok(crate::records::Applied::Count(Ok(entry))) => {
            (StatusCode::CREATED, Json(entry)).into_response()
        }
        Ok(crate::records::Applied::Count(Err(e))) => count_refused(e),
        Ok(_) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "a count record was applied as another kind",
        ),
        Err(e) => submit_error(e),
    }
}

/// A refused count's answer: 400 for what the count breaks, 403 for an untrusted key.
/// A count's refusal, unless the read model lags the ledger on its table: then what the
/// model lacks may be the very event the count needs, and the answer is "not yet".
fn refused_or_indexing(
    s: &Shared,
    table: &schemas::TableId,
    why: String,
) -> crate::counts::CountRefused {
    use crate::counts::CountRefused;
    let Some(head_seq) = s.ledger.reader().head(table).map(|h| h.seq.0) else {
        return CountRefused::Invalid(why);
    };
    let status = match s.model.status(table) {
        Ok(status) => status,
        Err(e) => return CountRefused::Bound(e.to_string()),
    };
    let (indexed_seq, problem) = status.map_or((0, None), |t| (t.verified_through, t.problem));
    if indexed_seq >= head_seq {
        return CountRefused::Invalid(why);
    }
    match problem {
        Some(p) => CountRefused::Invalid(format!(
            "{why} (the read model holds table {table} through seq {indexed_seq} of {head_seq}: {p})"
        )),
        None => CountRefused::Indexing(format!(
            "the read model is indexing table {table} (seq {indexed_seq} of {head_seq}); \
             the count cannot be checked against its box yet: send it again shortly"
        )),
    }
}

fn count_refused(e: crate::counts::CountRefused) -> Response {
    use crate::counts::CountRefused;
    match e {
        e @ CountRefused::Invalid(_) => error(StatusCode::BAD_REQUEST, e.to_string()),
        e @ CountRefused::Indexing(_) => {
            let mut r = error(StatusCode::SERVICE_UNAVAILABLE, e.to_string());
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(1u64));
            r
        }
        e @ CountRefused::Untrusted(_) => error(StatusCode::FORBIDDEN, e.to_string()),
        e => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

#[utoipa::path(get, path = "/v1/evidence/{table}/{round}", tag = "evidence",
    params(("table" = String, Path, pattern = "^[A-Za-z0-9_-]{1,32}$"), ("round" = u64, Path)),
    responses((status = 200, description = "the evidence bundle (schemas/BUNDLE.md), as an attachment", content_type = "application/json", body = EvidenceBundle), (status = 404, body = ApiError), (status = 410, body = ApiError), (status = 413, body = ApiError), (status = 500, body = ApiError)))]
async fn evidence(
    State(st): State<Shared>,
    Extension(c): Extension<Caller>,
    Path((table, round)): Path<(String, u64)>,
) -> Result<Response, Refusal> {
    let table = table_id(&table)?;
    let cases = st.cases.list(Some((&table, RoundId(round))));
    let at_ns = (st.clock)();
    let (ledger, model) = (st.ledger.clone(), st.model.clone());
    let t = table.clone();
    let bundle: EvidenceBundle = blocking(move || {
        let located = match model.locate(&t, round)? {
            Some(l) => l,
            None => rounds::locate_in_ledger(&ledger, &t, round)?,
        };
        crate::evidence::build(&ledger, &t, round, located, cases, &c.name, at_ns)
    })
    .await?;
    let body = serde_json::to_vec(&bundle).map_err(|e| ReadError::Internal(e.to_string()))?;
    let name = format!("attachment; filename=\"evidence-{table}-round-{round}.json\"");
    let mut r = ([(header::CONTENT_TYPE, "application/json")], body).into_response();
    if let Ok(v) = HeaderValue::from_str(&name) {
        r.headers_mut().insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(r)
}

/// What to export.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ExportQuery {
    /// Only this table (every table when absent).
    #[param(pattern = "^[A-Za-z0-9_-]{1,32}$")]
    table: Option<String>,
    /// Only these rounds of the table, `A..B` inclusive; needs `table`.
    #[param(pattern = "^[0-9]{1,20}[.][.][0-9]{1,20}$")]
    rounds: Option<String>,
}

#[utoipa::path(get, path = "/v1/export", tag = "evidence", params(ExportQuery),
    responses((status = 200, description = "a ledger export (proofs/src/export.rs: JSON lines), as an attachment", content_type = "application/x-ndjson", body = String), (status = 404, body = ApiError), (status = 410, body = ApiError), (status = 413, body = ApiError), (status = 500, body = ApiError)))]
async fn export(
    State(st): State<Shared>,
    Query(q): Query<ExportQuery>,
) -> Result<Response, Refusal> {
    let table = q.table.as_deref().map(table_id).transpose()?;
    let range = match q.rounds.as_deref() {
        None => ledger::ExportRange::All,
        Some(r) => {
            if table.is_none() {
                return Err(ReadError::BadRequest("rounds needs table".into()).into());
            }
            // Exactly the document's pattern: 1 to 20 digits, `..`, 1 to 20 digits (a u64).
            let bad = || ReadError::BadRequest(format!("rounds {r:?}: expected A..B"));
            let (a, b) = r.split_once("..").ok_or_else(bad)?;
            let number = |x: &str| -> Result<u64, ReadError> {
                let digits = (1..=20).contains(&x.len()) && x.bytes().all(|c| c.is_ascii_digit());
                digits.then(|| x.parse().ok()).flatten().ok_or_else(bad)
            };
            let (a, b) = (number(a)?, number(b)?);
            if a > b {
                return Err(bad().into());
            }
            ledger::ExportRange::Rounds(a..=b)
        }
    };
    let ledger = st.ledger.clone();
    let sel = ledger::ExportSelection {
        table,
        range,
        events_max: Some(EXPORT_EVENTS_MAX),
    };
    // Streamed in bounded memory (`stream`); every refusal comes before the first byte.
    let body = body_from_writer(move |out| match ledger.reader().export(&sel, out) {
        Err(e @ ledger::Error::ExportTooLarge { .. }) => Err(ReadError::TooLarge(e.to_string())),
        Err(ledger::Error::UnknownTable(t)) => Err(ReadError::NotFound(format!(
            "table {t} is not in the ledger"
        ))),
        other => other.map(|_| ()).map_err(ReadError::from),
    })
    .await?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/x-ndjson"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"export.jsonl\"",
            ),
        ],
        body,
    )
        .into_response())
}

#[utoipa::path(get, path = "/v1/audit", tag = "access", params(Paging),
    responses((status = 200, description = "a page of the audit log", body = AuditPage), (status = 500, body = ApiError)))]
async fn audit(
    State(st): State<Shared>,
    Query(p): Query<Paging>,
) -> Result<Json<AuditPage>, Refusal> {
    let (offset, limit) = page(p.offset, p.limit, AUDIT_LIMIT_MAX)?;
    let floor = match p.scope.as_deref() {
        None | Some("node") => false,
        Some("floor") => true,
        Some(other) => {
            let why = format!("scope {other:?}: node or floor");
            return Err(Refusal(ReadError::BadRequest(why)));
        }
    };
    let s = st.clone();
    let (items, total) = blocking(move || {
        let log = crate::records::audit_log(&s, floor);
        let total = log.len();
        let items = log
            .read::<AuditEntry>(offset, limit)
            .map_err(|e| ReadError::Internal(e.to_string()))?;
        Ok((items, total))
    })
    .await?;
    Ok(Json(AuditPage {
        items,
        total,
        offset,
        limit,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{AccessConfig, TokenConfig};
    use axum::body::Body;
    use tower::ServiceExt;

    const SURV: &str = "surveillance-token-0123456789abcdef";

    async fn post(app: &axum::Router, path: &str, body: serde_json::Value) -> StatusCode {
        let req = axum::http::Request::builder()
            .method("POST")
            .uri(path)
            .header("authorization", format!("Bearer {SURV}"))
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .unwrap();
        app.clone().oneshot(req).await.unwrap().status()
    }

    /// A change is made only when its audit entry is written first: with the audit log
    /// failing, a note is refused (503) and not saved, so no change goes unnamed in the
    /// log.
    #[tokio::test]
    async fn a_change_is_not_made_unless_its_audit_entry_is_written_first() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = std::sync::Arc::new(ledger::Ledger::open(dir.path().join("ledger")).unwrap());
        let access = AccessConfig {
            tokens: vec![TokenConfig {
                name: "sam.surveillance".into(),
                role: Role::Surveillance,
                token: SURV.into(),
                token_hash: None,
            }],
            count_keys: vec![],
        };
        let (_stop, rx) = tokio::sync::watch::channel(false);
        let st = crate::AppState::new(
            ledger,
            &access,
            &dir.path().join("api"),
            &dir.path().join("readmodel"),
            || 7,
            rx,
            crate::FinanceSetup::default(),
        )
        .unwrap();
        crate::cases::testing::open_on(&st.cases, 1, "short pay");
        let app = crate::router(st.clone());

        st.audit.tear_next_write(10);
        let s = post(
            &app,
            "/v1/cases/1/notes",
            serde_json::json!({"text": "lost?"}),
        )
        .await;
        assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(st.cases.get(1).unwrap().entries.len(), 1, "no note saved");
        assert_eq!(st.audit.len(), 0, "the torn entry is cut back");

        let s = post(
            &app,
            "/v1/cases/1/notes",
            serde_json::json!({"text": "seen"}),
        )
        .await;
        assert_eq!(s, StatusCode::OK);
        assert_eq!(st.cases.get(1).unwrap().entries.len(), 2);
        let log: Vec<AuditEntry> = st.audit.read(0, 10).unwrap();
        let got: Vec<_> = log.iter().map(|e| (e.id, e.status, e.received)).collect();
        assert_eq!(got, [(1, None, None), (2, Some(200), Some(1))]);
        assert!(log
            .iter()
            .all(|e| e.who == "sam.surveillance" && e.path == "/v1/cases/1/notes"));
    }
}

/// Most sealed days one `GET /v1/days` page holds.
pub const DAYS_LIMIT_MAX: u64 = ledger::days::SEALS_LIST_MAX as u64;

/// The page of `GET /v1/days`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DaysQuery {
    /// Only days before this one (`YYYY-MM-DD`).
    #[param(pattern = "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$")]
    before: Option<String>,
    /// Days to return (default 50, at most 366).
    #[param(minimum = 1, maximum = 366)]
    limit: Option<u64>,
}

fn day_name(s: &str) -> Result<String, ReadError> {
    schemas::seal::check_day_name(s).map_err(ReadError::BadRequest)?;
    Ok(s.to_string())
}

#[utoipa::path(get, path = "/v1/days", tag = "days", params(DaysQuery),
    responses((status = 200, description = "sealed gaming days, newest first", body = DayPage), (status = 500, body = ApiError)))]
async fn days(
    State(st): State<Shared>,
    Query(q): Query<DaysQuery>,
) -> Result<Json<DayPage>, Refusal> {
    let before = q.before.as_deref().map(day_name).transpose()?;
    let (_, limit) = page(None, q.limit, DAYS_LIMIT_MAX)?;
    let s = st.clone();
    blocking(move || {
        let seals = s
            .ledger
            .reader()
            .day_seals(before.as_deref(), limit as usize)?;
        Ok(DayPage {
            items: seals.iter().map(DayRow::of).collect(),
            limit,
        })
    })
    .await
    .map(Json)
}

#[utoipa::path(get, path = "/v1/days/{day}", tag = "days",
    params(("day" = String, Path, pattern = "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$", description = "The gaming day, YYYY-MM-DD")),
    responses((status = 200, description = "one sealed day: its seal and digest", body = DayView), (status = 404, body = ApiError), (status = 500, body = ApiError)))]
async fn day(State(st): State<Shared>, Path(day): Path<String>) -> Result<Json<DayView>, Refusal> {
    let day = day_name(&day)?;
    let s = st.clone();
    blocking(move || {
        let seal = s
            .ledger
            .reader()
            .day_seal(&day)?
            .ok_or_else(|| ReadError::NotFound(format!("day {day} is not sealed")))?;
        Ok(DayView {
            digest: seal.digest(),
            seal,
        })
    })
    .await
    .map(Json)
}

/// Each fenced table's fence as the API shows it: `check: detail`.
fn fenced_views(ledger: &ledger::Ledger) -> BTreeMap<TableId, String> {
    ledger
        .reader()
        .fenced()
        .into_iter()
        .map(|(t, f)| (t, format!("{}: {}", f.check, f.detail)))
        .collect()
}
