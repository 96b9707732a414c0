//! `roundledger serve`: the server process. It alone opens the ledger directory (sled
//! locks it) and runs ingest (NATS JetStream -> ledger) and the HTTP API and web UI (crate
//! `api`) until Ctrl-C or SIGTERM, then shuts down cleanly: the batch in flight is
//! appended, flushed and acknowledged first.
//!
//! The API needs `--config FILE` (bearer tokens and roles, see `api::auth`): there is no
//! open access. Without it only ingest and `/health` run. `--no-ingest` serves an existing
//! ledger read-only, without NATS (investigations, the browser test).
//!
//! With `--seal-key FILE` it also seals each gaming day once it has ended and ingest holds
//! what arrived before its end, and publishes the seal on `seals.<day>`
//! (`ingest::sealer`).
//!
//! Operations: `/ready` beside `/health` on the API's port; `--metrics-http ADDR` serves
//! `/metrics` (Prometheus) there too (`api::ops`). `--log-format json` logs one JSON
//! object a line; lifecycle events are at `info`. `--settings FILE` reads every flag from
//! a TOML file, with `ROUNDLEDGER_*` variables over it (`settings`).

use crate::Outcome;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(clap::Args)]
pub struct Args {
    /// The ledger directory (created if missing). No other process may hold it open.
    #[arg(long)]
    ledger: PathBuf,
    /// NATS server URL (`tls://` for a bus with TLS; several comma-separated for a
    /// cluster).
    #[arg(long, default_value = "nats://127.0.0.1:4222")]
    nats: String,
    #[command(flatten)]
    bus: crate::bus::BusArgs,
    /// Most messages appended and flushed as one batch.
    #[arg(long, default_value_t = 512)]
    batch: usize,
    /// Address of the HTTP API and web UI.
    #[arg(long, default_value = "127.0.0.1:8640")]
    http: std::net::SocketAddr,
    /// Access configuration of the API (JSON: tokens with roles; `roundledger tokens`
    /// writes one). Without it the API is off (only /health).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Where the API keeps its audit log and case journal (default: DIR/api).
    #[arg(long)]
    api_dir: Option<PathBuf>,
    /// Serve the API over HTTPS with this certificate chain (PEM); needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Serve the API over plain HTTP on a non-loopback --http address: tokens then cross
    /// the network in clear. Without it such an address needs --tls-cert.
    #[arg(long)]
    insecure_http: bool,
    /// The surveillance recorder's clock less the property's, in milliseconds (negative:
    /// the recorder is behind). Pages show each event's recorder time beside it.
    #[arg(long, value_name = "MS", allow_negative_numbers = true,
          value_parser = clap::value_parser!(i64).range(-86_400_000..=86_400_000))]
    recorder_offset_ms: Option<i64>,
    /// Judge every decision as rounds are indexed (`GET /v1/analytics`), allowing RATE
    /// false alarms per 1,000 rounds of one statistic. Costs tens of ms a round.
    #[arg(long, value_name = "RATE")]
    decision_analytics: Option<f64>,
    /// Indexing passes whose signals wait for the alert publisher (at most 256). Past
    /// it, or with 0, the publisher reads them from the read model instead.
    #[arg(long, value_name = "PASSES", default_value_t = 256,
          value_parser = clap::value_parser!(u16).range(0..=256))]
    signal_queue_len: u16,
    /// Serve the ledger read-only, without ingesting (no NATS needed).
    #[arg(long)]
    no_ingest: bool,
    /// An admin public key (64 hex chars) whose signatures enroll and revoke device keys;
    /// repeat for several. Checkpoints of devices not enrolled by a trusted admin are
    /// quarantined.
    #[arg(long = "admin-key", value_name = "HEX")]
    admin_keys: Vec<String>,
    /// Tests only: also trust the simulator's admin key. It derives from a public label,
    /// so anybody can sign with it and any bus principal could enroll a key. Refused
    /// unless ROUNDLEDGER_TEST_ONLY_SIMULATED_KEYS=1; named in the start line and `/ready`.
    #[arg(long)]
    trust_simulated_admin: bool,
    /// Also store events that carry no device signature: an open floor, where anyone
    /// who may publish on a table's subject extends its chain. A signature that is present
    /// must still verify (else `signature_invalid`). Refused once a ledger requires
    /// signed events.
    #[arg(long)]
    unsigned_events: bool,
    /// Seal each ended gaming day with this key file (`roundledger keygen`) and publish
    /// the seal on `seals.<day>`.
    #[arg(long, value_name = "KEY_FILE")]
    seal_key: Option<PathBuf>,
    /// With --seal-key: seconds to wait at least after a day's end before sealing it.
    #[arg(long, value_name = "SECONDS", default_value_t = ingest::sealer::SEAL_GRACE_DEFAULT.as_secs())]
    seal_grace: u64,
    #[command(flatten)]
    day: crate::args::DayArgs,
    #[command(flatten)]
    pits: crate::args::PitArgs,
    /// Seconds a table may hold events beyond a gap before ingest raises `table_stuck`
    /// (RUNBOOK.md).
    #[arg(long, value_name = "SECONDS", default_value_t = ingest::STUCK_AFTER_DEFAULT.as_secs())]
    stuck_after: u64,
    /// This ledger node's id (A-Z, a-z, 0-9, '_', '-'), when several nodes replicate the
    /// stream: its durable consumer is `ingest-<ID>`, and it publishes its heads to the
    /// KV bucket `roundledger_replicas` and checks every other node's (`replica_diverged`).
    /// Without it: one node, consumer `ingest`, no replica check.
    #[arg(long, value_name = "ID")]
    node_id: Option<String>,
    /// With --node-id: milliseconds between two replica checks (publish heads, compare).
    #[arg(long, value_name = "MS", default_value_t = ingest::replicas::REPLICA_CHECK_EVERY.as_millis() as u64)]
    replica_check_ms: u64,
    /// With --node-id: seconds a lease (the alerts', the edge pricer's, and with
    /// --seal-key the sealer's) lasts without renewal. Only its holder publishes alerts
    /// and seals and prices edges; another node takes over within about this long.
    #[arg(long, value_name = "SECONDS", default_value_t = 15)]
    lease_ttl: u64,
    /// Replicas of the events stream and of the replica and lease buckets (1 to 5): 3 on
    /// a 3-server JetStream cluster, so the loss of one server loses nothing. A stream
    /// with fewer is raised to this many; never lowered.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=5))]
    stream_replicas: u64,
    /// Also serve `/metrics` (Prometheus text), `/ready` and `/health` on this address,
    /// without a token: bind it to the internal monitoring network only.
    #[arg(long, value_name = "ADDR")]
    metrics_http: Option<std::net::SocketAddr>,
    /// Failed authentications (401) one client address may make a minute before its
    /// requests without a valid token get 429 (`api::limit`); a valid token is always served.
    #[arg(long, value_name = "N", default_value_t = api::limit::FAILURES_PER_WINDOW_MAX)]
    failures_per_minute: u32,
    /// Log format on stderr: `text`, or `json` (one JSON object a line).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Days after a sealed day's end before it moves to the archive tier. With ingest,
    /// serve moves such days itself and compacts the value log (`archive move --settings`
    /// reads the same key).
    #[arg(long, value_name = "DAYS")]
    archive_after_days: Option<u32>,
    /// The legal retention in days after a day's end (read by `archive remove
    /// --settings`; checked here). Never shorter than --archive-after-days.
    #[arg(long, value_name = "DAYS")]
    retention_days: Option<u32>,
    /// A TOML file of settings: every flag of serve is a key (`batch = 512`); flags and
    /// `ROUNDLEDGER_*` variables win over it (README, `serve.example.toml`).
    #[arg(long, value_name = "FILE")]
    settings: Option<PathBuf>,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// The sealer's configuration, when `--seal-key` asks for one.
fn sealer_config(
    args: &Args,
    ingest: &ingest::IngestConfig,
    rule: &ledger::days::DayRule,
) -> Result<Option<ingest::sealer::SealerConfig>> {
    let Some(path) = &args.seal_key else {
        return Ok(None);
    };
    Ok(Some(ingest::sealer::SealerConfig {
        nats_url: args.nats.clone(),
        access: ingest.access.clone(),
        rule: rule.clone(),
        key: Arc::new(crate::keygen::read_signing_key(path)?),
        grace: std::time::Duration::from_secs(args.seal_grace),
        check_every: ingest::sealer::SEAL_CHECK_EVERY,
        clock: ingest::system_clock_ns,
        consumer: ingest.consumer_name(),
        lease: ingest
            .node_id
            .as_ref()
            .map(|node| ingest::sealer::LeaseSetup {
                node: node.clone(),
                ttl: std::time::Duration::from_secs(args.lease_ttl),
                replicas: ingest.stream_replicas,
            }),
    }))
}

/// The archiver's configuration, when `--archive-after-days` asks for one.
fn archiver_config(args: &Args) -> Option<ingest::archiver::ArchiverConfig> {
    Some(ingest::archiver::ArchiverConfig {
        after_days: args.archive_after_days?,
        check_every: ingest::archiver::ARCHIVE_CHECK_EVERY,
        clock: ingest::system_clock_ns,
        after_move: Some(crate::parquet::after_move(&args.ledger)),
    })
}

/// The admin keys `serve` trusts, from `--admin-key` and `--trust-simulated-admin`.
fn admin_keys(args: &Args) -> Result<Vec<schemas::attest::PublicKey>> {
    trusted_admin_keys(&args.admin_keys, args.trust_simulated_admin)
}

/// The admin keys `--admin-key` (hex, repeatable) and `--trust-simulated-admin` name.
pub(crate) fn trusted_admin_keys(
    hex_keys: &[String],
    simulated: bool,
) -> Result<Vec<schemas::attest::PublicKey>> {
    let mut keys = hex_keys
        .iter()
        .map(|h| {
            schemas::attest::PublicKey::from_hex(h)
                .with_context(|| format!("--admin-key {h:?}: not 32 bytes of hex"))
        })
        .collect::<Result<Vec<_>>>()?;
    if simulated {
        crate::keygen::simulated_keys_allowed("--trust-simulated-admin")?;
        tracing::warn!("UNSAFE: --trust-simulated-admin: anybody can sign with the simulated admin key and enroll a device key (tests only)");
        keys.push(simulator::admin_key().public());
    }
    Ok(keys)
}

/// The settings in force that no real floor may run with, for the start line and `/ready`.
fn unsafe_settings(args: &Args) -> Vec<String> {
    let mut out = Vec::new();
    if args.trust_simulated_admin && !args.no_ingest {
        out.push(
            "--trust-simulated-admin: the simulated admin key, which anybody can sign with, \
             enrolls device keys (tests only)"
                .to_string(),
        );
    }
    if args.unsigned_events && !args.no_ingest {
        out.push("--unsigned-events: events without a device signature are stored".to_string());
    }
    if args.node_id.is_some() && args.seal_key.is_none() && !args.no_ingest {
        out.push(
            "--node-id without --seal-key: records (cases, counts) are not signed; any holder \
             of the nodes' NATS credential can write one as any node"
                .to_string(),
        );
    }
    out
}

/// Makes the ledger store only device-signed events, unless `unsigned` asks for an open
/// floor on a ledger that never required them.
fn require_signed_events(ledger: &ledger::Ledger, unsigned: bool) -> Result<()> {
    match (unsigned, ledger.reader().requires_signed_events()) {
        (false, _) => ledger
            .writer()
            .require_signed_events()
            .context("requiring signed events"),
        (true, true) => anyhow::bail!(
            "--unsigned-events: this ledger already requires signed events, and never goes back"
        ),
        (true, false) => {
            tracing::warn!(
                "--unsigned-events: any publisher on a table's subject can extend its chain"
            );
            Ok(())
        }
    }
}

/// The API's view of ingest's alert log.
pub fn alert_source(log: &ingest::alerts::AlertLog) -> api::AlertSource {
    let log = log.clone();
    api::AlertSource(Arc::new(move || log.recent()))
}

/// The ledger, with the admin keys and the signed-events rule of this server in force.
fn open_ledger(args: &Args) -> Result<Arc<ledger::Ledger>> {
    let ledger = Arc::new(
        ledger::Ledger::open(&args.ledger)
            .with_context(|| format!("opening the ledger at {}", args.ledger.display()))?,
    );
    let trusted = admin_keys(args)?;
    if trusted.is_empty() && !args.no_ingest {
        tracing::warn!(
            "no --admin-key: no device key can be enrolled, every checkpoint will be quarantined"
        );
    }
    // Kept in the ledger (recovery at the next open judges enrollments with them); a
    // read-only server appends nothing and leaves the kept keys as they are.
    if !args.no_ingest {
        ledger
            .writer()
            .trust_admin_keys(trusted)
            .context("keeping the trusted admin keys")?;
        require_signed_events(&ledger, args.unsigned_events)?;
    }
    let stats = ledger.reader().stats();
    tracing::info!(
        ledger = %args.ledger.display(),
        heads = ledger.reader().heads().len(),
        events = stats.events,
        quarantined = stats.quarantined,
        held = stats.held,
        "ledger opened"
    );
    warn_fenced(&ledger);
    Ok(ledger)
}

/// The API's configuration, or none without `--config` (then only /health runs).
fn api_config(
    args: &Args,
    alerts: &ingest::alerts::AlertLog,
    rule: &ledger::days::DayRule,
    signal_sink: Option<api::SignalSink>,
) -> Result<Option<api::ApiConfig>> {
    let Some(path) = &args.config else {
        tracing::warn!(
            "no --config: the HTTP API is off (only /health and /ready); see `roundledger tokens`"
        );
        return Ok(None);
    };
    plain_http_allowed(args.http, args.tls_cert.is_some(), args.insecure_http)?;
    Ok(Some(api::ApiConfig {
        addr: args.http,
        access: api::auth::AccessConfig::load(path)
            .with_context(|| format!("--config {}", path.display()))?,
        state_dir: args
            .api_dir
            .clone()
            .unwrap_or_else(|| api::default_state_dir(&args.ledger)),
        model_dir: readside::model::default_dir(&args.ledger),
        alerts: Some(alert_source(alerts)),
        finance: api::FinanceSetup {
            rule: rule.clone(),
            pits: args.pits.pits()?,
        },
        tls: match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => Some(api::tls::server_config(cert, key)?),
            _ => None,
        },
        access_file: Some(path.clone()),
        time_zone: rule.time_zone().to_string(),
        ingesting: !args.no_ingest,
        recorder_offset_ms: args.recorder_offset_ms,
        stuck_after_s: (!args.no_ingest).then_some(args.stuck_after),
        failures_per_minute_max: Some(args.failures_per_minute),
        decision_analytics: args.decision_analytics,
        signal_sink,
        // Set once connected (`connect_records`), when ingest runs.
        records: None,
        // Set once connected (`connect_records`), with --node-id and ingest.
        edges: None,
    }))
}

/// With `--decision-analytics` and ingest: the read model's signals go to ingest's alert
/// publisher (`ingest::signal_alerts`). The sink the API's indexer calls, if any.
fn signal_alerts(args: &Args, config: &mut ingest::IngestConfig) -> Option<api::SignalSink> {
    if args.decision_analytics.is_none() || args.no_ingest {
        return None;
    }
    let (tx, inbox) = ingest::signal_alerts::channel_with_len(usize::from(args.signal_queue_len));
    config.signals = inbox;
    let attach_to = tx.clone();
    Some(api::SignalSink {
        send: Arc::new(move |rows| tx.send(rows)),
        attach: Arc::new(move |model| attach_to.attach(Arc::new(ModelSignals(model)))),
    })
}

/// The read model as the alert publisher's record of signals (`SignalRecord`).
struct ModelSignals(Arc<readside::model::Model>);

impl ingest::signal_alerts::SignalRecord for ModelSignals {
    fn tables(
        &self,
        after: Option<&schemas::TableId>,
        max: usize,
    ) -> Result<Vec<schemas::TableId>, String> {
        self.0.signal_tables(after, max).map_err(|e| e.to_string())
    }

    fn signals_after(
        &self,
        table: &schemas::TableId,
        after_round: Option<u64>,
        max: usize,
    ) -> Result<Vec<schemas::api::DecisionSignal>, String> {
        self.0
            .signals_after(table, after_round, max)
            .map_err(|e| e.to_string())
    }
}

/// Refuses the API on a non-loopback address without TLS unless `--insecure-http` says
/// so; with it, warns that tokens cross the network in clear.
fn plain_http_allowed(addr: std::net::SocketAddr, tls: bool, insecure: bool) -> Result<()> {
    if tls || addr.ip().is_loopback() {
        return Ok(());
    }
    anyhow::ensure!(
        insecure,
        "--http {addr} is not a loopback address and the API has no --tls-cert: its bearer \
         tokens would cross the network in clear. Give --tls-cert and --tls-key, or \
         --insecure-http to serve plain HTTP all the same"
    );
    tracing::warn!(%addr, "INSECURE: --insecure-http serves the API over plain HTTP on a non-loopback address; bearer tokens cross the network in clear");
    Ok(())
}

/// What `/metrics` and `/ready` read of ingest (`ingest::metrics`, `ingest::health`).
fn ingest_source(config: &ingest::IngestConfig) -> api::ops::IngestSource {
    let (m, n) = (config.metrics.clone(), config.metrics.clone());
    let (h, k) = (config.health.clone(), config.health.clone());
    let (r, s) = (config.replicas.clone(), config.replicas.clone());
    api::ops::IngestSource {
        render: Arc::new(move |out| {
            m.render(out);
            ingest::metrics::render_health(&h, out);
            r.render(out);
        }),
        not_ready: Arc::new(move || {
            let mut failed = n.not_ready();
            failed.extend(ingest::metrics::paused(&k));
            failed.extend(s.not_ready());
            failed
        }),
    }
}

/// The HTTP tasks: the API (or `/health` and `/ready` alone without `--config`) and, with
/// `--metrics-http`, the operations listener.
fn spawn_http<F>(
    args: &Args,
    api_config: Option<api::ApiConfig>,
    ops: Arc<api::ops::Ops>,
    ledger: Arc<ledger::Ledger>,
    stopped: impl Fn() -> F,
) -> Vec<tokio::task::JoinHandle<Result<(), api::Error>>>
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let listening = |what: &'static str, scheme: &'static str| {
        // The address ends the message: scripts read it from `... on http://ADDR/`.
        move |a: std::net::SocketAddr| tracing::info!("{what} on {scheme}://{a}/")
    };
    let mut tasks = vec![match api_config {
        Some(c) => {
            let scheme = if c.tls.is_some() { "https" } else { "http" };
            tokio::spawn(api::run_with_ops(
                c,
                ledger,
                Some(ops.clone()),
                listening("HTTP API and web UI", scheme),
                stopped(),
            ))
        }
        None => tokio::spawn(api::ops::run_listener(
            args.http,
            api::ops::health_router(ops.clone()),
            listening("health and readiness", "http"),
            stopped(),
        )),
    }];
    if let Some(addr) = args.metrics_http {
        tasks.push(tokio::spawn(api::ops::run_listener(
            addr,
            api::ops::router(ops),
            listening("metrics", "http"),
            stopped(),
        )));
    }
    tasks
}

/// Waits for every HTTP task.
async fn join_http(tasks: Vec<tokio::task::JoinHandle<Result<(), api::Error>>>) -> Result<()> {
    for t in tasks {
        t.await.context("HTTP task")?.context("HTTP API")?;
    }
    Ok(())
}

pub fn run(args: Args) -> Result<Outcome> {
    let ages = crate::tier::TierAges {
        archive_after_days: args.archive_after_days,
        retention_days: args.retention_days,
    };
    ages.check().context("the archive tier's ages")?;
    let ledger = open_ledger(&args)?;
    // One day rule for the ledger: every report, seal and list splits days by it.
    let (rule, replaced) = args.day.settle(&ledger)?;
    if let Some(old) = replaced {
        tracing::warn!(was = %old.spec(), now = %rule.spec(), "the day rule changed: the read model is rebuilt under it");
    }
    let (config, signal_sink) = ingest_config(&args)?;
    let sealer = sealer_config(&args, &config, &rule)?;
    anyhow::ensure!(
        sealer.is_none() || !args.no_ingest,
        "--seal-key needs ingest: a read-only server seals nothing"
    );
    let rt = crate::runtime::runtime()?;
    let unsafe_settings = unsafe_settings(&args);
    tracing::info!(ledger = %args.ledger.display(), nats = %args.nats, ingest = !args.no_ingest, "roundledger serve starting (Ctrl-C stops cleanly){}", unsafe_settings.iter().map(|s| format!("; UNSAFE: {s}")).collect::<String>());
    let mut api_config = api_config(&args, &config.alerts, &rule, signal_sink)?;
    let ingesting = (!args.no_ingest).then(|| ingest_source(&config));
    let ops = api::ops::Ops::new(ledger.clone(), ingesting, api::system_clock);
    ops.name_unsafe_settings(unsafe_settings);
    // A corrupt sled page fails only the reads that reach it: read the whole index once,
    // beside the start, and fail /ready if a page does not read.
    ops.check_store();
    let report = rt.block_on(async {
        // One signal stops every task: ingest finishes its batch in flight first.
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let stopped = move || {
            let mut rx = stop_rx.clone();
            async move {
                let _ = rx.wait_for(|s| *s).await;
            }
        };
        connect_records(&args, &config, api_config.as_mut()).await?;
        let http = spawn_http(&args, api_config, ops, ledger.clone(), &stopped);
        if args.no_ingest {
            serve_read_only(http, stop_tx).await?;
            return Ok::<_, anyhow::Error>(None);
        }
        let sealing =
            sealer.map(|c| tokio::spawn(ingest::sealer::run(c, ledger.clone(), stopped())));
        let archiving = archiver_config(&args)
            .map(|c| tokio::spawn(ingest::archiver::run(c, ledger.clone(), stopped())));
        let mut ingest = tokio::spawn(ingest::run(config, ledger.clone(), stopped()));
        let early = tokio::select! {
            _ = shutdown_signal() => None,
            r = &mut ingest => Some(r),
        };
        tracing::info!("stopping: finishing the batch in flight");
        let _ = stop_tx.send(true);
        let report = match early {
            Some(r) => r,
            None => ingest.await,
        }
        .context("ingest task")?
        .context("ingest stopped")?;
        join_http(http).await?;
        join_duties(sealing, archiving).await?;
        Ok::<_, anyhow::Error>(Some(report))
    })?;
    ledger.flush().context("final flush")?;
    if let Some(r) = report {
        log_stopped(&r);
    }
    Ok(Outcome::Clean)
}

/// With the API and ingest: cases and counts go through the records stream, the one
/// path every node applies (`api::records`). A read-only server records them itself.
/// With `--seal-key`, records are signed with that key and checked against it
/// (`api::record_keys`). With `--node-id` too, the pricer lease's holder alone prices
/// edges (`api::pricer`).
async fn connect_records(
    args: &Args,
    ingest: &ingest::IngestConfig,
    api: Option<&mut api::ApiConfig>,
) -> Result<()> {
    let Some(api) = api else {
        return Ok(());
    };
    if args.no_ingest {
        return Ok(());
    }
    let keys = match &args.seal_key {
        Some(path) => api::record_keys::RecordKeys::of_node_key(Arc::new(
            crate::keygen::read_signing_key(path)?,
        )),
        None => api::record_keys::RecordKeys::default(),
    };
    let connecting = crate::records_link::connect(
        &args.nats,
        &ingest.access,
        ingest.stream_replicas,
        args.node_id.clone(),
        keys,
    );
    // It waits for a bus that is down at start; a stop signal meanwhile ends serve.
    let link = tokio::select! {
        link = connecting => link.context("the records stream (cases and counts)")?,
        _ = shutdown_signal() => anyhow::bail!("stopped before the records stream was set up"),
    };
    api.records = Some(link);
    if let Some(node) = &args.node_id {
        let connecting = crate::edges_link::connect(
            &args.nats,
            &ingest.access,
            node,
            ingest.lease_ttl,
            ingest.stream_replicas,
        );
        let link = tokio::select! {
            link = connecting => link.context("the edges bucket and the pricer lease")?,
            _ = shutdown_signal() => anyhow::bail!("stopped before the edges bucket was set up"),
        };
        api.edges = Some(link);
    }
    Ok(())
}

/// Ingest's settings from serve's flags, checked, and the sink of the read model's
/// signals when ingest publishes them (`signal_alerts`).
fn ingest_config(args: &Args) -> Result<(ingest::IngestConfig, Option<api::SignalSink>)> {
    let mut config = ingest::IngestConfig::new(&args.nats).with_batch_len(args.batch);
    config.access = args.bus.access();
    config.stuck_after = std::time::Duration::from_secs(args.stuck_after);
    config.node_id = args.node_id.clone();
    config.replica_check_every = std::time::Duration::from_millis(args.replica_check_ms);
    config.lease_ttl = std::time::Duration::from_secs(args.lease_ttl);
    config.stream_replicas = usize::try_from(args.stream_replicas)?;
    config.check().context("ingest settings")?;
    let sink = signal_alerts(args, &mut config);
    Ok((config, sink))
}

type Duty = tokio::task::JoinHandle<Result<u64, ingest::Error>>;

/// Waits for the sealer and the archiver, once told to stop, and logs what each did.
async fn join_duties(sealing: Option<Duty>, archiving: Option<Duty>) -> Result<()> {
    if let Some(s) = sealing {
        let made = s.await.context("sealer task")?.context("sealer")?;
        tracing::info!(days = made, "sealer stopped");
    }
    if let Some(a) = archiving {
        let moved = a.await.context("archiver task")?.context("archiver")?;
        tracing::info!(days = moved, "archiver stopped");
    }
    Ok(())
}

/// Names the tables fenced as damaged. The ledger logged each fence at open (`warn`);
/// the API shows them.
fn warn_fenced(ledger: &ledger::Ledger) {
    let fenced = ledger.reader().fenced();
    if !fenced.is_empty() {
        let names: Vec<&str> = fenced.keys().map(|t| t.as_str()).collect();
        eprintln!(
            "warning: {} tables fenced as damaged ({}); see `roundledger table status`",
            fenced.len(),
            names.join(", ")
        );
    }
}

/// What ingest did, logged when it stops.
fn log_stopped(r: &ingest::IngestReport) {
    tracing::info!(
        batches = r.batches,
        stored = r.stored,
        duplicates = r.duplicates,
        held = r.held,
        quarantined = r.quarantined,
        repeats = r.repeats,
        overflowed = r.overflowed,
        fenced = r.fenced,
        "stopped"
    );
}

/// `--no-ingest`: the HTTP tasks until a signal, or until the first of them fails.
async fn serve_read_only(
    mut http: Vec<tokio::task::JoinHandle<Result<(), api::Error>>>,
    stop: tokio::sync::watch::Sender<bool>,
) -> Result<()> {
    tracing::info!("--no-ingest: serving the ledger read-only (Ctrl-C stops)");
    let early = tokio::select! {
        _ = shutdown_signal() => None,
        r = &mut http[0] => Some(r),
    };
    let _ = stop.send(true);
    if let Some(r) = early {
        http.remove(0);
        r.context("HTTP task")?.context("HTTP API")?;
    }
    join_http(http).await
}

/// Completes on Ctrl-C or SIGTERM.
pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_off_loopback_needs_insecure_http() {
        let addr = |a: &str| a.parse::<std::net::SocketAddr>().unwrap();
        assert!(plain_http_allowed(addr("127.0.0.1:8640"), false, false).is_ok());
        assert!(plain_http_allowed(addr("[::1]:8640"), false, false).is_ok());
        assert!(plain_http_allowed(addr("0.0.0.0:8640"), true, false).is_ok());
        let err = plain_http_allowed(addr("0.0.0.0:8640"), false, false).unwrap_err();
        assert!(err.to_string().contains("--insecure-http"), "{err}");
        assert!(plain_http_allowed(addr("10.0.0.5:8640"), false, false).is_err());
        assert!(plain_http_allowed(addr("10.0.0.5:8640"), false, true).is_ok());
    }
}
