//! The HTTP API and web UI of `roundledger serve` (axum): tables, rounds by table, time and
//! box, one round with its events, reconstruction, settlement (rules vs recorded) and
//! findings, the replay state after each event, disputes and findings with filters, chain
//! verification status, jackpot pools recomputed vs shown, finance summaries, a live feed
//! (server-sent events), cases, evidence bundles, the audit log, the OpenAPI document
//! (`/openapi.json`) and the web UI (`/`).
//!
//! Invariants:
//! - Reads only: never appends to the ledger. What the API adds (case entries, the audit
//!   log) goes to its own append-only journals in `<ledger>/api/` (see `journal`).
//! - No open access: every `/v1/` request needs a bearer token from the config file; the
//!   role policy is one table (`auth::allowed`).
//! - Every `/v1/` request, allowed or refused, is recorded in the audit log (who, role,
//!   what, when, status) and synced to disk before its response is returned; if the log
//!   cannot be written, the response is 503 and carries no data. A request that changes
//!   something (a case: not GET) is also recorded when it arrives, before it runs, and
//!   does not run unless that entry is written: no change without an entry naming who
//!   asked for it.
//! - sled and file I/O run on the blocking pool (`spawn_blocking`), never on an async
//!   runtime thread.
//! - Every list is paged and capped (`LIST_LIMIT_MAX`, `AUDIT_LIMIT_MAX`); every body type is
//!   defined in `schemas::api` (docs/STYLE.md, wire types once).
//! - Every `/v1/` error is a JSON `ApiError`; the query parameters the server accepts are
//!   the ones `/openapi.json` states, with the same limits (`edge`, `openapi`).
//! - Round reports are recomputed from the stored bytes on each request (`rounds`); lists
//!   and lookups read the read model on disk (`readside::model`, `<ledger>/readmodel`),
//!   which the indexer keeps current from its cursors: a start replays no history, and
//!   nothing in memory grows with it. A model of another version, or one whose counts or
//!   cursors fail their seals, is rebuilt at start; a row that fails its seal is a 500.
#![warn(missing_docs)]

pub mod auth;
mod body;
pub mod cases;
pub mod counts;
mod decisions;
mod edge;
mod finance;
pub mod journal;
pub mod limit;
mod lists;
mod narrow;
mod openapi;
pub mod ops;
mod params;
pub mod pricer;
mod read;
pub mod record_keys;
pub mod records;
mod records_origin;
mod routes;
pub mod search;
pub mod tls;
pub use routes::AUDITED_URI_PART_MAX;
pub mod serve;
mod stream;
mod ui;

pub use pricer::run_pricer;
pub use routes::ApiDoc;

use readside::{evidence, index, model, rounds};

use auth::{AccessConfig, Tokens};
use cases::Cases;
use counts::Counts;
use index::Tail;
use journal::Journal;
use model::Model;
use schemas::api::FeedItem;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Messages the live feed buffers per subscriber before a slow one starts missing them
/// (it then gets a `lagged` event saying how many).
pub const FEED_CAPACITY: usize = 4096;
/// Default page of a list.
pub const LIST_LIMIT_DEFAULT: u64 = 50;
/// Largest page of a list.
pub const LIST_LIMIT_MAX: u64 = 500;
/// Largest page of the audit log.
pub const AUDIT_LIMIT_MAX: u64 = 1000;
/// Most events `GET /v1/pools` replays (all tables, arrival order).
pub const POOL_EVENTS_MAX: u64 = 5_000_000;
/// How often the index looks for new events.
pub const INDEX_POLL: Duration = Duration::from_millis(250);
/// How often the pricing worker looks for configured pay tables to price.
pub const PRICE_POLL: Duration = Duration::from_secs(2);

/// Why the API could not start or run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The listening address could not be bound.
    #[error("binding {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The I/O failure.
        #[source]
        source: std::io::Error,
    },
    /// The listener's local address could not be read.
    #[error("serving: {0}")]
    Serve(#[source] std::io::Error),
    /// A configuration value is out of range; the text names it.
    #[error("configuration: {0}")]
    Config(String),
    /// The access file is unusable.
    #[error("access configuration: {0}")]
    Access(#[from] auth::ConfigError),
    /// The API directory could not be created, or a stale read model removed.
    #[error("creating the API directory {path}: {source}")]
    StateDir {
        /// The directory's path.
        path: PathBuf,
        /// The I/O failure.
        #[source]
        source: std::io::Error,
    },
    /// A journal in the API directory failed: the audit log, cases or counts.
    #[error(transparent)]
    Journal(#[from] journal::JournalError),
    /// The read model could not be opened.
    #[error(transparent)]
    Model(#[from] model::ModelError),
    /// The TLS certificate or key is unusable.
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
}

pub use readside::ReadError;

/// Everything the server needs besides the ledger.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// The address the server listens on.
    pub addr: SocketAddr,
    /// The tokens and count keys in force at start.
    pub access: AccessConfig,
    /// Where the audit log and the case journal live (`<ledger>/api` by default).
    pub state_dir: PathBuf,
    /// Where the read model lives (`<ledger>/readmodel` by default, `model::default_dir`).
    pub model_dir: PathBuf,
    /// The operator alerts of the ingest beside this API (`GET /v1/alerts`); `None`
    /// serves an empty list (a read-only server ingests nothing).
    pub alerts: Option<AlertSource>,
    /// HTTPS (`tls::server_config`); `None` serves plain HTTP (loopback, or behind a proxy).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The property's IANA time zone, for people's clocks (`WhoAmI::time_zone`).
    pub time_zone: String,
    /// Whether ingest runs beside this API (`WhoAmI::ingesting`).
    pub ingesting: bool,
    /// The surveillance recorder's clock less the property's, milliseconds
    /// (`WhoAmI::recorder_offset_ms`); `None` when not set.
    pub recorder_offset_ms: Option<i64>,
    /// Ingest's stuck-table limit, seconds (`WhoAmI::stuck_after_s`); `None` without ingest.
    pub stuck_after_s: Option<u64>,
    /// The access file `access` came from: reloaded when it changes (`ACCESS_POLL`), so a
    /// token added or revoked by `roundledger tokens` takes effect without a restart.
    pub access_file: Option<PathBuf>,
    /// Shifts and pits for `GET /v1/reports`.
    pub finance: FinanceSetup,
    /// Failing requests a client may make a minute (`limit`); `None`: the default.
    pub failures_per_minute_max: Option<u32>,
    /// The decision analytics' false alarms per 1,000 rounds of one statistic
    /// (`GET /v1/analytics`); `None` leaves them off.
    pub decision_analytics: Option<f64>,
    /// Where the indexer hands each pass's committed signals, to be alerted
    /// (`alerts.<table>.<kind>`); `None` alerts on none (a read-only server).
    pub signal_sink: Option<SignalSink>,
    /// The records stream that cases and counts go through (`records`); `None` records
    /// them here at once (a server without the bus).
    pub records: Option<records::RecordLink>,
    /// The shared bucket of priced edges under the pricer lease (`pricer`); `None`
    /// prices here every configuration (one node).
    pub edges: Option<pricer::EdgeLink>,
}

/// Largest recorder clock offset, either way: a day, in milliseconds.
pub const RECORDER_OFFSET_MS_MAX: u64 = 86_400_000;

/// How often the server looks at its access file for changes.
pub const ACCESS_POLL: std::time::Duration = std::time::Duration::from_secs(2);

/// Reloads the access file whenever its length or modification time changes, until
/// `stop`. A file that does not load is logged and the tokens in force stay.
pub async fn watch_access(
    state: Shared,
    path: PathBuf,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let stamp = |p: &Path| {
        std::fs::metadata(p)
            .ok()
            .map(|m| (m.len(), m.modified().ok()))
    };
    let mut seen = stamp(&path);
    loop {
        tokio::select! {
            _ = tokio::time::sleep(ACCESS_POLL) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        let now = stamp(&path);
        if now == seen {
            continue;
        }
        seen = now;
        let loaded = AccessConfig::load(&path)
            .map_err(Error::from)
            .and_then(|a| state.reload_access(&a));
        match loaded {
            Ok(()) => tracing::info!("access file {} reloaded", path.display()),
            Err(e) => tracing::error!(
                "access file {}: {e}; the tokens in force stay",
                path.display()
            ),
        }
    }
}

/// What finance reports need besides the read model and the count journal: the
/// property's day rule with its shifts (the model's rows are cut by it) and its pits.
#[derive(Clone)]
pub struct FinanceSetup {
    /// The property's gaming-day rule: day start, time zone and shifts.
    pub rule: ledger::days::DayRule,
    /// The property's pits, each a name and its tables.
    pub pits: Vec<readside::finance::Pit>,
}

impl Default for FinanceSetup {
    /// The defaults `--help` states (06:00 UTC, one shift), no pits.
    fn default() -> FinanceSetup {
        let rule = ledger::days::DayRule::new(
            ledger::days::DAY_START_DEFAULT,
            ledger::days::TIME_ZONE_DEFAULT,
        )
        .expect("the default day rule is valid");
        FinanceSetup {
            rule,
            pits: Vec::new(),
        }
    }
}

impl std::fmt::Debug for FinanceSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "FinanceSetup({}, {} pits)",
            self.rule.spec(),
            self.pits.len()
        )
    }
}

/// The alerts to list, newest first: a view of ingest's alert log (`ingest::alerts`),
/// handed in by `serve` so the API does not depend on ingest.
#[derive(Clone)]
pub struct AlertSource(pub Arc<dyn Fn() -> Vec<schemas::api::Alert> + Send + Sync>);

impl std::fmt::Debug for AlertSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AlertSource")
    }
}

/// Ingest's alert publisher (`ingest::signal_alerts`), handed in by `serve`: `send` takes
/// the signals an indexing pass committed, oldest first, and must not block (the indexer
/// runs it). `attach` takes the read model once the state opens it: the publisher catches
/// up from it (`readside::model::Model::signals_after`).
#[derive(Clone)]
pub struct SignalSink {
    /// Takes one pass's committed signals.
    pub send: Arc<dyn Fn(Vec<schemas::api::DecisionSignal>) + Send + Sync>,
    /// Takes the read model, once.
    pub attach: Arc<dyn Fn(Arc<Model>) + Send + Sync>,
}

impl std::fmt::Debug for SignalSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SignalSink")
    }
}

/// The API directory of a ledger directory: `<ledger>/api`. sled ignores files it does
/// not own; the journals stay beside the events they annotate.
pub fn default_state_dir(ledger_dir: &Path) -> PathBuf {
    ledger_dir.join("api")
}

/// The case journal's path in an API directory.
pub fn cases_path(state_dir: &Path) -> PathBuf {
    state_dir.join(proofs::journal::CASES_FILE)
}

/// The count room's journal's path in an API directory.
pub fn counts_path(state_dir: &Path) -> PathBuf {
    state_dir.join(proofs::journal::COUNTS_FILE)
}

/// The audit log's path in an API directory.
pub fn audit_path(state_dir: &Path) -> PathBuf {
    state_dir.join(proofs::journal::AUDIT_FILE)
}

/// The floor's access log's path in an API directory: every node's audit entries.
pub fn floor_audit_path(state_dir: &Path) -> PathBuf {
    state_dir.join("floor-audit.jsonl")
}

/// The server's one clock (audit and case times, bundle export time): UTC nanoseconds.
pub type Clock = fn() -> i64;

/// The system clock.
pub fn system_clock() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// Shared state of the handlers.
pub struct AppState {
    /// The ledger the API reads; the API never appends to it.
    pub ledger: Arc<ledger::Ledger>,
    /// The read model that lists and lookups read (`<ledger>/readmodel`).
    pub model: Arc<Model>,
    /// Who may call: replaced whole when the access file changes (`reload_access`).
    tokens: std::sync::RwLock<Tokens>,
    /// The audit log: every `/v1/` request, synced before its response.
    pub audit: Journal,
    /// The floor's access log: every node's audit entries, from the records stream.
    pub floor_audit: Journal,
    /// The cases and their journal.
    pub cases: Cases,
    /// The count room's results (`POST /v1/counts`).
    pub counts: Counts,
    /// Where case entries and counts are recorded: the records stream, or here at once.
    pub records: records::Records,
    /// New rounds and findings for the live feed; each subscriber buffers at most `FEED_CAPACITY`.
    pub feed: tokio::sync::broadcast::Sender<FeedItem>,
    /// The server's clock for audit and case times, UTC nanoseconds.
    pub clock: Clock,
    /// Ends the live feed's streams at shutdown (so graceful shutdown can finish).
    pub stopping: tokio::sync::watch::Receiver<bool>,
    /// Ingest's alerts (`ApiConfig::alerts`), set once at start.
    pub alerts: std::sync::OnceLock<AlertSource>,
    /// (events stored when computed, pools): `GET /v1/pools` recomputes only when the
    /// ledger has grown.
    pools_cache: Mutex<Option<(u64, Vec<schemas::api::PoolView>)>>,
    tail: Mutex<Tail>,
    /// Requests by route and status (`ops`, `/metrics`).
    pub requests: Arc<ops::Requests>,
    /// The day rule and pits for finance reports (`ApiConfig::finance`).
    pub finance: FinanceSetup,
    /// Failing requests per client address (`limit`).
    pub limiter: limit::Limiter,
    /// The property's time zone (`ApiConfig::time_zone`); UTC until set.
    pub time_zone: std::sync::OnceLock<String>,
    /// Whether ingest runs beside this API (`ApiConfig::ingesting`); false until set.
    pub ingesting: std::sync::OnceLock<bool>,
    /// The recorder's clock offset (`ApiConfig::recorder_offset_ms`); none until set.
    pub recorder_offset_ms: std::sync::OnceLock<i64>,
    /// Ingest's stuck-table limit, seconds (`ApiConfig::stuck_after_s`).
    pub stuck_after_s: std::sync::OnceLock<u64>,
    /// The decision analytics' setting (`ApiConfig::decision_analytics`); off until set.
    analytics: std::sync::OnceLock<analytics::TestSetting>,
    /// Where committed signals go to be alerted (`ApiConfig::signal_sink`); none until set.
    pub signal_sink: std::sync::OnceLock<SignalSink>,
    /// The edge pricer's share and counts (`ApiConfig::edges`).
    pub pricer: pricer::Pricer,
}

/// The handlers' state, shared by every request and task.
pub type Shared = Arc<AppState>;

impl AppState {
    /// Opens the journals and the read model and builds the state. A model of another
    /// version, or one that fails its checks at open, is cleared: the indexer rebuilds it.
    pub fn new(
        ledger: Arc<ledger::Ledger>,
        access: &AccessConfig,
        state_dir: &Path,
        model_dir: &Path,
        clock: Clock,
        stopping: tokio::sync::watch::Receiver<bool>,
        finance: FinanceSetup,
    ) -> Result<Shared, Error> {
        let tokens = Tokens::new(access)?;
        std::fs::create_dir_all(state_dir).map_err(|source| Error::StateDir {
            path: state_dir.to_path_buf(),
            source,
        })?;
        let audit = Journal::open(&audit_path(state_dir), |_, _| Ok(()))?;
        let cases = Cases::open(&cases_path(state_dir))?;
        let counts = Counts::open(&counts_path(state_dir), access.count_keys()?)?;
        let mut floor_seq = 0;
        let floor_audit = Journal::open(&floor_audit_path(state_dir), |_, json| {
            floor_seq = floor_seq.max(journal::stream_seq_of(json)?);
            Ok(())
        })?;
        let applied = cases
            .last_stream_seq()
            .max(counts.last_stream_seq())
            .max(floor_seq);
        let records = records::Records::new(applied, clock(), state_dir);
        let model = open_model(model_dir, &finance.rule)?;
        let (feed, _) = tokio::sync::broadcast::channel(FEED_CAPACITY);
        Ok(Arc::new(AppState {
            ledger,
            model: Arc::new(model),
            tokens: std::sync::RwLock::new(tokens),
            audit,
            floor_audit,
            cases,
            counts,
            records,
            feed,
            clock,
            stopping,
            alerts: std::sync::OnceLock::new(),
            pools_cache: Mutex::new(None),
            tail: Mutex::new(Tail::default()),
            requests: Arc::default(),
            finance,
            limiter: limit::Limiter::default(),
            time_zone: std::sync::OnceLock::new(),
            ingesting: std::sync::OnceLock::new(),
            recorder_offset_ms: std::sync::OnceLock::new(),
            stuck_after_s: std::sync::OnceLock::new(),
            analytics: std::sync::OnceLock::new(),
            signal_sink: std::sync::OnceLock::new(),
            pricer: pricer::Pricer::default(),
        }))
    }

    /// The tokens in force.
    pub fn tokens(&self) -> std::sync::RwLockReadGuard<'_, Tokens> {
        self.tokens.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Puts a changed access file in force: its tokens and count keys, both checked
    /// before either is replaced. A token removed from the file is refused from now on.
    pub fn reload_access(&self, access: &AccessConfig) -> Result<(), Error> {
        let tokens = Tokens::new(access)?;
        let count_keys = access.count_keys()?;
        *self.tokens.write().unwrap_or_else(|p| p.into_inner()) = tokens;
        self.counts.trust(count_keys);
        Ok(())
    }

    /// One indexing pass (blocking: sled); publishes new rounds and findings to the feed.
    /// Returns whether more events wait.
    /// A model that fails a check while it is read (a row's seal, a cursor this ledger
    /// does not bear out) is cleared and rebuilt from the ledger, never served on.
    pub fn index_pass(&self) -> Result<bool, ReadError> {
        let mut tail = self.tail.lock().unwrap_or_else(|p| p.into_inner());
        let (items, more) = match index::pass(&self.ledger, &mut tail, &self.model) {
            Ok(done) => done,
            Err(ReadError::Integrity(e)) => {
                tracing::warn!("{e}: rebuilding the read model from the ledger");
                self.model.clear()?;
                *tail = self.fresh_tail();
                return Ok(true);
            }
            Err(e) => return Err(e),
        };
        for item in items {
            // No subscriber is not an error: nobody is watching the feed.
            let _ = self.feed.send(item);
        }
        let (raised, dropped) = tail.take_raised();
        if dropped > 0 {
            tracing::warn!(dropped, "signals not alerted: more than a pass keeps");
        }
        match self.signal_sink.get() {
            Some(sink) if !raised.is_empty() => (sink.send)(raised),
            _ => {}
        }
        Ok(more)
    }

    /// Turns the decision analytics on under `rate` false alarms per 1,000 rounds. Only
    /// before the first indexing pass: a tail part-way through would judge some rounds only.
    pub fn start_decision_analytics(&self, rate: f64) -> Result<(), Error> {
        let bad = || {
            Error::Config(format!(
                "decision analytics: {rate} false alarms per 1,000 rounds is outside (0, 1000)"
            ))
        };
        if !(rate > 0.0 && rate < 1000.0) {
            return Err(bad());
        }
        let setting = analytics::TestSetting {
            false_alarms_per_1000_rounds: rate,
            ..analytics::TestSetting::default()
        };
        let mut tail = self.tail.lock().unwrap_or_else(|p| p.into_inner());
        if tail.events_read() > 0 || self.analytics.set(setting).is_err() {
            return Err(Error::Config(
                "decision analytics start before the first indexing pass".into(),
            ));
        }
        *tail = self.fresh_tail();
        Ok(())
    }

    /// A tail with no table loaded, analytics on if they are set.
    fn fresh_tail(&self) -> Tail {
        match self.analytics.get() {
            Some(s) => Tail::with_analytics(*s),
            None => Tail::default(),
        }
    }

    /// Whether the decision analytics are on, and their setting.
    pub fn decision_analytics(&self) -> Option<analytics::TestSetting> {
        self.analytics.get().copied()
    }

    /// Indexes until nothing is left to read (blocking; tests and start-up).
    pub fn index_all(&self) -> Result<(), ReadError> {
        while self.index_pass()? {}
        Ok(())
    }

    /// Events the indexer has read from the ledger since start, resumes included.
    pub fn index_events_read(&self) -> u64 {
        self.tail
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .events_read()
    }
}

/// Opens the read model; clears one of another version or day rule, or that fails its
/// checks at open (the indexer then rebuilds it from the ledger): never served wrong.
fn open_model(dir: &Path, rule: &ledger::days::DayRule) -> Result<Model, Error> {
    match Model::open(dir, rule) {
        Ok(m) => Ok(m),
        Err(e @ (model::ModelError::Version { .. } | model::ModelError::Corrupt(_))) => {
            tracing::warn!("{e}: rebuilding the read model from the ledger");
            std::fs::remove_dir_all(dir).map_err(|source| Error::StateDir {
                path: dir.to_path_buf(),
                source,
            })?;
            Ok(Model::open(dir, rule)?)
        }
        Err(e) => Err(e.into()),
    }
}

/// The router: `/v1/...` behind the access guard and the audit log, `/openapi.json`,
/// `/health` and the web UI.
pub fn router(state: Shared) -> axum::Router {
    routes::router(state)
}

/// Keeps the index up to date until `stop` is set: a pass on the blocking pool every
/// `INDEX_POLL` (immediately again while a pass stops at its limit).
pub async fn run_indexer(state: Shared, mut stop: tokio::sync::watch::Receiver<bool>) {
    loop {
        let s = state.clone();
        let more = match tokio::task::spawn_blocking(move || s.index_pass()).await {
            Ok(Ok(more)) => more,
            Ok(Err(e)) => {
                tracing::error!("indexing the ledger: {e}");
                false
            }
            Err(e) => {
                tracing::error!("indexing task: {e}");
                false
            }
        };
        if *stop.borrow() {
            return;
        }
        if !more {
            tokio::select! {
                _ = tokio::time::sleep(INDEX_POLL) => {}
                _ = stop.wait_for(|s| *s) => return,
            }
        }
    }
}

/// Serves only `/health` on `addr` (the server without an access configuration: no data
/// is served without tokens).
pub async fn run_health(
    addr: SocketAddr,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    let listener = serve::bind(addr).map_err(|source| Error::Bind { addr, source })?;
    let app = axum::Router::new().route("/health", axum::routing::get(|| async { "ok" }));
    serve::serve(listener, app, serve::Timeouts::default(), shutdown).await;
    Ok(())
}

/// Serves the API on `config.addr` until `shutdown` completes, indexing the ledger as it
/// grows. Calls `bound` with the bound address first (so `127.0.0.1:0` works in tests).
pub async fn run(
    config: ApiConfig,
    ledger: Arc<ledger::Ledger>,
    bound: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    run_with_ops(config, ledger, None, bound, shutdown).await
}

/// Puts the settings of `config` into a fresh state, once.
fn apply_settings(state: &Shared, config: &ApiConfig) -> Result<(), Error> {
    if let Some(a) = config.alerts.clone() {
        // A fresh state: nothing has set it before.
        let _ = state.alerts.set(a);
    }
    let _ = state.time_zone.set(config.time_zone.clone());
    let _ = state.ingesting.set(config.ingesting);
    if let Some(ms) = config.recorder_offset_ms {
        assert!(
            ms.unsigned_abs() <= RECORDER_OFFSET_MS_MAX,
            "serve checks the recorder offset's bound"
        );
        let _ = state.recorder_offset_ms.set(ms);
    }
    if let Some(s) = config.stuck_after_s {
        let _ = state.stuck_after_s.set(s);
    }
    if let Some(rate) = config.decision_analytics {
        state.start_decision_analytics(rate)?;
    }
    if let Some(sink) = config.signal_sink.clone() {
        (sink.attach)(state.model.clone());
        let _ = state.signal_sink.set(sink);
    }
    if let Some(link) = config.records.clone() {
        state.records.link(link);
    }
    if let Some(link) = config.edges.clone() {
        state.pricer.link(link.0);
    }
    if let Some(n) = config.failures_per_minute_max {
        state.limiter.set_failures_max(n).map_err(Error::Config)?;
    }
    Ok(())
}

/// `run`, with `/ready` on the API's port and the API's journals and request counts
/// joined to `ops` (`/metrics`, `ops::router`).
pub async fn run_with_ops(
    config: ApiConfig,
    ledger: Arc<ledger::Ledger>,
    ops: Option<Arc<ops::Ops>>,
    bound: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let state = AppState::new(
        ledger,
        &config.access,
        &config.state_dir,
        &config.model_dir,
        system_clock,
        stop_rx.clone(),
        config.finance.clone(),
    )?;
    apply_settings(&state, &config)?;
    let listener = serve::bind(config.addr).map_err(|source| Error::Bind {
        addr: config.addr,
        source,
    })?;
    bound(listener.local_addr().map_err(Error::Serve)?);
    if let Some(path) = config.access_file.clone() {
        tokio::spawn(watch_access(state.clone(), path, stop_rx.clone()));
    }
    let pricer = tokio::spawn(run_pricer(state.clone(), stop_rx.clone()));
    let applier = tokio::spawn(records::run_applier(state.clone(), stop_rx.clone()));
    let indexer = tokio::spawn(run_indexer(state.clone(), stop_rx));
    let stopping = async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    };
    let mut app = router(state.clone());
    if let Some(ops) = ops {
        ops.attach_api(state.clone());
        app = app.merge(ops::ready_router(ops));
    }
    let timeouts = serve::Timeouts::default();
    serve::serve_tls(listener, app, timeouts, config.tls, stopping).await;
    let _ = indexer.await;
    let _ = applier.await;
    // At most one configuration's pricing (seconds) still running.
    let _ = pricer.await;
    // sled flushes on its own too; a clean stop leaves nothing for the next start to redo.
    let model = state.model.clone();
    match tokio::task::spawn_blocking(move || model.flush()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!("flushing the read model: {e}"),
        Err(e) => tracing::warn!("flushing the read model: {e}"),
    }
    Ok(())
}
