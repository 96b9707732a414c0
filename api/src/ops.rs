//! What operators and orchestrators read: `GET /metrics` (Prometheus text format 0.0.4),
//! `GET /ready` and `GET /health`.
//!
//! `/health` is liveness: the process answers. `/ready` is 200 only when ingest's NATS
//! connection is up, its last ledger commit succeeded (and one did recently, if messages
//! wait), and the API's journals take entries; else 503 with a `Readiness` body naming
//! each failed check. `/metrics` adds the ledger's per-table gauges, read at scrape time,
//! to ingest's counters (`ingest::metrics`, handed in as `IngestSource`) and the API's.
//!
//! Who may read them: `/health` and `/ready` are open on the API's port (they name checks,
//! never data). `/metrics` names tables and their activity, so it is served only on its
//! own listener (`serve --metrics-http`), unauthenticated, meant for the internal
//! monitoring network (THREATS.md).
//!
//! Invariants: every label set is bounded. Tables: the `TABLES_MAX` first by id, the
//! rest counted in `roundledger_metrics_tables_omitted`. Requests: by route template,
//! never by raw path, at most `REQUEST_SERIES_MAX` (route, status) pairs and an `other`
//! per status. Ledger reads run on the blocking pool.

use crate::{serve, Clock, Error, Shared};
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use ledger::Ledger;
use schemas::api::{NotReady, Readiness};
use schemas::metrics::{family, sample, seconds, Kind, CONTENT_TYPE};
use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};

/// Most tables with per-table gauges in one scrape: a sealed day's table bound
/// (`schemas::seal::SEAL_TABLES_MAX`).
pub const TABLES_MAX: usize = schemas::seal::SEAL_TABLES_MAX;

/// Most (route, status) pairs counted apart; later ones count under route `other`, one
/// pair per status.
pub const REQUEST_SERIES_MAX: usize = 512;

/// The route label of a request no route matched.
const UNMATCHED: &str = "unmatched";

/// What ingest shows, without the API depending on ingest (`serve` builds it from
/// `ingest::metrics::IngestMetrics`).
#[derive(Clone)]
pub struct IngestSource {
    /// Writes ingest's metric families.
    pub render: Arc<dyn Fn(&mut String) + Send + Sync>,
    /// Ingest's failed readiness checks.
    pub not_ready: Arc<dyn Fn() -> Vec<NotReady> + Send + Sync>,
}

/// Everything `/metrics` and `/ready` read.
pub struct Ops {
    ledger: Arc<Ledger>,
    /// `None` on a read-only server: no NATS, no commits to check.
    ingest: Option<IngestSource>,
    /// The API's state once it runs (its journals and request counts).
    api: OnceLock<Shared>,
    clock: Clock,
    /// What the full read of sled's index found (`check_store`): `None` until it ends.
    store_failures: OnceLock<Vec<String>>,
    /// Settings no real floor may run with, named by `/ready` (`name_unsafe_settings`).
    unsafe_settings: OnceLock<Vec<String>>,
}

impl Ops {
    /// The ops view of `ledger` and of ingest (`None` on a read-only server); `clock`
    /// dates the gauges.
    pub fn new(ledger: Arc<Ledger>, ingest: Option<IngestSource>, clock: Clock) -> Arc<Ops> {
        Arc::new(Ops {
            ledger,
            ingest,
            api: OnceLock::new(),
            clock,
            store_failures: OnceLock::new(),
            unsafe_settings: OnceLock::new(),
        })
    }

    /// Names settings in force that no real floor may run with; `/ready` lists them
    /// (set once, at start).
    pub fn name_unsafe_settings(&self, settings: Vec<String>) {
        let _ = self.unsafe_settings.set(settings);
    }

    /// Reads every page of the ledger's sled index once (`Reader::store_read_failures`),
    /// on a thread of its own so the start does not wait. A page that fails makes
    /// `/ready` fail `store` from then on, and is logged at `error`. Returns the thread.
    pub fn check_store(self: &Arc<Self>) -> std::thread::JoinHandle<()> {
        let ops = self.clone();
        std::thread::spawn(move || {
            let failures = ops.ledger.reader().store_read_failures();
            for f in &failures {
                tracing::error!(failure = %f, "the ledger's store has a page that does not read: /ready fails `store` (RUNBOOK.md)");
            }
            let _ = ops.store_failures.set(failures);
        })
    }

    /// Joins the API's state, once (`run_with_ops`).
    pub(crate) fn attach_api(&self, state: Shared) {
        let _ = self.api.set(state);
    }

    /// The failed readiness checks; empty when ready.
    pub fn not_ready(&self) -> Vec<NotReady> {
        let mut failed = self
            .ingest
            .as_ref()
            .map_or_else(Vec::new, |i| (i.not_ready)());
        if let Some(f) = self.store_failures.get().and_then(|f| f.first()) {
            failed.push(NotReady {
                check: "store".into(),
                detail: format!("{f}; run verify, then RUNBOOK.md"),
            });
        }
        if let Some(st) = self.api.get() {
            if let Some(why) = st.records.stopped() {
                failed.push(NotReady {
                    check: "records".into(),
                    detail: why.to_string(),
                });
            }
            for (name, journal) in [("audit", &st.audit), ("cases", st.cases.journal())] {
                let failing = journal.failing();
                if let Some(detail) = failing.filter(|_| !journal.probe()) {
                    failed.push(NotReady {
                        check: format!("journal:{name}"),
                        detail,
                    });
                }
            }
        }
        failed
    }

    /// The whole scrape (blocking: reads the ledger).
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(16 * 1024);
        if let Some(i) = &self.ingest {
            (i.render)(&mut out);
        }
        render_ledger(&mut out, &self.ledger, (self.clock)());
        if let Some(st) = self.api.get() {
            st.requests.render(&mut out);
            let name = "roundledger_api_journal_append_failures_total";
            family(
                &mut out,
                name,
                Kind::Counter,
                "Journal appends that failed since start.",
            );
            sample(&mut out, name, &[("journal", "audit")], st.audit.failures());
            let cases = st.cases.journal().failures();
            sample(&mut out, name, &[("journal", "cases")], cases);
            let floor = st.floor_audit.failures();
            sample(&mut out, name, &[("journal", "floor_audit")], floor);
            render_records(&mut out, st);
            render_pricer(&mut out, &st.pricer);
        }
        out
    }
}

/// How far this node applied the records stream, and its audit entries not shared.
fn render_records(out: &mut String, st: &crate::AppState) {
    let name = "roundledger_records_applied_seq";
    family(
        out,
        name,
        Kind::Gauge,
        "The records stream's last seq this node applied (cases, counts, access).",
    );
    sample(out, name, &[], st.records.applied_through());
    let name = "roundledger_records_access_unshared_total";
    family(
        out,
        name,
        Kind::Counter,
        "Audit entries of this node not published to the floor's log since start.",
    );
    sample(out, name, &[], st.records.access_unshared());
    let name = "roundledger_records_refused_total";
    family(
        out,
        name,
        Kind::Counter,
        "Records not applied since start: no signature by a node key this node trusts.",
    );
    sample(out, name, &[], st.records.refused());
}

/// What the edge pricer did: configurations priced here, adopted, shared values refused.
fn render_pricer(out: &mut String, p: &crate::pricer::Pricer) {
    let counters = [
        (
            "roundledger_edges_priced_total",
            "Configured pay tables this node priced itself since start.",
            p.priced(),
        ),
        (
            "roundledger_edges_adopted_total",
            "Priced pay tables this node adopted from the pricer lease's holder since start.",
            p.adopted(),
        ),
        (
            "roundledger_edges_refused_total",
            "Shared priced pay tables refused since start (a bad stamp or record), once each.",
            p.refused(),
        ),
    ];
    for (name, help, n) in counters {
        family(out, name, Kind::Counter, help);
        sample(out, name, &[], n);
    }
}

/// Per-table gauges and the ledger's refusal counters.
fn render_ledger(out: &mut String, ledger: &Ledger, now_ns: i64) {
    let heads = ledger.reader().heads();
    let shown = &heads[..heads.len().min(TABLES_MAX)];
    let age = |at_ns: i64| seconds(now_ns.saturating_sub(at_ns).max(0) as u64);
    let name = "roundledger_table_head_age_seconds";
    family(
        out,
        name,
        Kind::Gauge,
        "Seconds since the table's head event reached the stream.",
    );
    for h in shown {
        match ledger.reader().stored_event(&h.table, h.seq.0) {
            Ok(Some(e)) => sample(
                out,
                name,
                &[("table", h.table.as_str())],
                age(e.received_at_ns),
            ),
            Ok(None) => {}
            Err(e) => tracing::warn!(table = %h.table, "metrics: reading the head event: {e}"),
        }
    }
    let name = "roundledger_table_attestation_lag_events";
    family(
        out,
        name,
        Kind::Gauge,
        "Events stored past the table's newest kept device-signed checkpoint.",
    );
    for h in shown {
        let attested = ledger.reader().attestation(&h.table).map_or(0, |a| a.seq.0);
        sample(
            out,
            name,
            &[("table", h.table.as_str())],
            h.seq.0.saturating_sub(attested),
        );
    }
    render_gaps(out, ledger, now_ns);
    let name = "roundledger_metrics_tables_omitted";
    family(
        out,
        name,
        Kind::Gauge,
        "Tables past the per-scrape bound, without per-table gauges.",
    );
    sample(out, name, &[], heads.len() - shown.len());
    let name = "roundledger_ledger_quarantined_total";
    family(
        out,
        name,
        Kind::Counter,
        "Refusals the ledger counts, by reason code, since it began.",
    );
    for (reason, n) in ledger.reader().quarantine_counts() {
        sample(out, name, &[("reason", &reason)], n);
    }
    let stats = ledger.reader().stats();
    let name = "roundledger_ledger_events";
    family(out, name, Kind::Gauge, "Events stored in the ledger.");
    sample(out, name, &[], stats.events);
    render_tier(out, ledger);
}

/// The archive tier's days and the value log's retired segments.
fn render_tier(out: &mut String, ledger: &Ledger) {
    let days = ledger.tier().tier_day_count();
    let retired = ledger.tier().retired_segments();
    let (Ok(days), Ok(retired)) = (days, retired) else {
        tracing::warn!("metrics: the archive tier's catalog does not read");
        return;
    };
    let name = "roundledger_archive_days";
    let help = "Gaming days out of the hot tier: archived, or removed by retention.";
    family(out, name, Kind::Gauge, help);
    sample(out, name, &[], days);
    let name = "roundledger_value_log_segments_retired";
    let help = "Value-log segments compaction has retired and removed.";
    family(out, name, Kind::Gauge, help);
    sample(out, name, &[], retired.len() as u64);
    let name = "roundledger_value_log_retired_bytes";
    let help = "Bytes of the value-log segments compaction has removed.";
    family(out, name, Kind::Gauge, help);
    let bytes: u64 = retired.iter().map(|r| r.file_bytes).sum();
    sample(out, name, &[], bytes);
}

/// The held-gap gauges: each table holding events behind a gap.
fn render_gaps(out: &mut String, ledger: &Ledger, now_ns: i64) {
    let gaps = ledger.reader().gaps();
    let shown = &gaps[..gaps.len().min(TABLES_MAX)];
    let name = "roundledger_table_held_gap_age_seconds";
    family(
        out,
        name,
        Kind::Gauge,
        "Seconds since the oldest event held behind the table's gap reached the stream.",
    );
    for g in shown {
        let age = seconds(now_ns.saturating_sub(g.since_ns).max(0) as u64);
        sample(out, name, &[("table", g.table.as_str())], age);
    }
    let name = "roundledger_table_held_events";
    family(
        out,
        name,
        Kind::Gauge,
        "Events the table holds behind a sequence gap.",
    );
    for g in shown {
        sample(out, name, &[("table", g.table.as_str())], g.held);
    }
}

/// API requests by route template and status.
#[derive(Default)]
pub struct Requests {
    counts: Mutex<BTreeMap<(String, u16), u64>>,
}

impl Requests {
    fn count(&self, route: &str, status: u16) {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let key = (route.to_string(), status);
        let key = if counts.contains_key(&key) || counts.len() < REQUEST_SERIES_MAX {
            key
        } else {
            ("other".to_string(), status)
        };
        *counts.entry(key).or_insert(0) += 1;
    }

    fn render(&self, out: &mut String) {
        let name = "roundledger_api_requests_total";
        family(
            out,
            name,
            Kind::Counter,
            "HTTP requests answered, by route template and status.",
        );
        let counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        for ((route, status), n) in counts.iter() {
            let status = status.to_string();
            sample(out, name, &[("route", route), ("status", &status)], n);
        }
    }
}

/// Middleware: counts each answered request under its route template.
pub(crate) async fn count_requests(
    State(requests): State<Arc<Requests>>,
    req: Request,
    next: Next,
) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or(UNMATCHED.to_string(), |m| m.as_str().to_string());
    let response = next.run(req).await;
    requests.count(&route, response.status().as_u16());
    response
}

/// `/ready` alone, for the API's own port.
pub fn ready_router(ops: Arc<Ops>) -> axum::Router {
    axum::Router::new()
        .route("/ready", axum::routing::get(ready))
        .with_state(ops)
}

/// `/ready` and `/health`: the API's port when the API is off.
pub fn health_router(ops: Arc<Ops>) -> axum::Router {
    ready_router(ops).route("/health", axum::routing::get(|| async { "ok" }))
}

/// `/metrics`, `/ready` and `/health`: the operations listener.
pub fn router(ops: Arc<Ops>) -> axum::Router {
    health_router(ops.clone()).merge(
        axum::Router::new()
            .route("/metrics", axum::routing::get(metrics))
            .with_state(ops),
    )
}

async fn ready(State(ops): State<Arc<Ops>>) -> Response {
    // A failing journal is probed with a synced write: off the async workers.
    let checked = ops.clone();
    let failed = match tokio::task::spawn_blocking(move || checked.not_ready()).await {
        Ok(f) => f,
        Err(e) => vec![NotReady {
            check: "ready".into(),
            detail: format!("the checks did not finish: {e}"),
        }],
    };
    let status = if failed.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = Readiness {
        ready: failed.is_empty(),
        failed,
        unsafe_settings: ops.unsafe_settings.get().cloned().unwrap_or_default(),
    };
    (status, Json(body)).into_response()
}

async fn metrics(State(ops): State<Arc<Ops>>) -> Response {
    match tokio::task::spawn_blocking(move || ops.render()).await {
        Ok(text) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response(),
        Err(e) => {
            tracing::error!("metrics task: {e}");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// Serves `app` on `addr` until `shutdown`, calling `bound` with the address first.
pub async fn run_listener(
    addr: SocketAddr,
    app: axum::Router,
    bound: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    let listener = serve::bind(addr).map_err(|source| Error::Bind { addr, source })?;
    bound(listener.local_addr().map_err(Error::Serve)?);
    serve::serve(listener, app, serve::Timeouts::default(), shutdown).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{AccessConfig, TokenConfig};

    fn state(dir: &std::path::Path) -> (Shared, Arc<Ledger>) {
        let ledger = Arc::new(Ledger::open(dir.join("ledger")).expect("ledger"));
        let access = AccessConfig {
            tokens: vec![TokenConfig {
                name: "a".into(),
                role: schemas::api::Role::Admin,
                token: "0123456789abcdef".into(),
                token_hash: None,
            }],
            count_keys: vec![],
        };
        let (_, stop) = tokio::sync::watch::channel(false);
        let st = crate::AppState::new(
            ledger.clone(),
            &access,
            &dir.join("api"),
            &dir.join("model"),
            crate::system_clock,
            stop,
            crate::FinanceSetup::default(),
        )
        .expect("state");
        (st, ledger)
    }

    /// A read-only server is ready while its journals take entries; an audit append that
    /// fails makes `/ready` name `journal:audit` while its probe fails too, and
    /// `/metrics` counts it; once the disk takes writes, `/ready` is ready by itself.
    #[test]
    fn ready_names_a_failing_journal_and_metrics_count_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (st, ledger) = state(dir.path());
        let ops = Ops::new(ledger, None, crate::system_clock);
        ops.attach_api(st.clone());
        assert!(ops.not_ready().is_empty());
        st.audit.tear_next_write(5);
        assert!(st.audit.append(|n| n).is_err());
        // `/ready` probes a failing journal: this probe's write fails too.
        st.audit.tear_next_write(5);
        let failed = ops.not_ready();
        assert_eq!(failed.len(), 1, "{failed:?}");
        assert_eq!(failed[0].check, "journal:audit");
        let text = ops.render();
        assert!(
            text.contains("roundledger_api_journal_append_failures_total{journal=\"audit\"} 1\n"),
            "{text}"
        );
        // The disk takes writes again but no request comes: the next `/ready` probes the
        // journal and is ready, with no entry added.
        let entries = st.audit.len();
        assert!(ops.not_ready().is_empty(), "the probe wrote and cut back");
        assert_eq!(st.audit.len(), entries, "no entry added");
        assert_eq!(st.audit.append(|n| n).expect("writable"), entries + 1);
    }

    /// The full read of sled's index, over the real store with one space's reads failing
    /// as a corrupt page makes them: `/ready` fails `store`, naming the space. A store
    /// that reads leaves it ready.
    #[test]
    fn ready_fails_store_when_a_page_of_the_index_does_not_read() {
        use ledger::faulty::FaultyStore;
        let dir = tempfile::tempdir().expect("tempdir");
        let (store, switch) = FaultyStore::open(dir.path()).expect("store");
        let ledger = Arc::new(Ledger::with_store(Box::new(store)).expect("ledger"));
        let ops = Ops::new(ledger.clone(), None, crate::system_clock);
        ops.check_store().join().expect("check");
        assert!(ops.not_ready().is_empty());
        switch.corrupt(Some((ledger::store::Space::Meta, Vec::new())));
        let ops = Ops::new(ledger, None, crate::system_clock);
        ops.check_store().join().expect("check");
        let failed = ops.not_ready();
        assert_eq!(failed.len(), 1, "{failed:?}");
        assert_eq!(failed[0].check, "store");
        assert!(failed[0].detail.contains("Meta space"), "{failed:?}");
    }

    /// Request counts stop growing new series at `REQUEST_SERIES_MAX`: the rest count
    /// under route `other`, none is lost.
    #[test]
    fn request_series_are_bounded() {
        let r = Requests::default();
        for i in 0..REQUEST_SERIES_MAX + 100 {
            r.count(&format!("/r{i}"), 200);
        }
        let counts = r.counts.lock().expect("lock");
        assert_eq!(counts.len(), REQUEST_SERIES_MAX + 1);
        assert_eq!(counts[&("other".to_string(), 200)], 100);
        assert_eq!(
            counts.values().sum::<u64>(),
            (REQUEST_SERIES_MAX + 100) as u64
        );
    }
}
