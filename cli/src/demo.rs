//! `roundledger demo`: the whole path once, on this machine. Starts a local
//! `nats-server -js` on a free loopback port with a temporary store, secured as a floor
//! runs it: TLS, and bus credentials for ingest and for each table's device, which signs
//! its events (the ledger stores only signed events). Runs the server
//! (ingest into a fresh ledger) and a floor of simulated tables of all five games with
//! injected dealer payout errors and irregularities, waits until every published event is
//! durable, verifies every chain and prints the audit. Cleans up its processes and
//! temporary files (unless `--keep DIR`).
//!
//! While it runs, the web UI and API serve the demo's ledger (`--http`, a free port when
//! that one is taken): the demo writes an access configuration with one fresh token per
//! role to `<ledger>/tokens.json` and prints the URL and the tokens, so the UI can be
//! opened at once (the Live page shows the rounds as they are stored). `--serve` keeps
//! the UI up after the audit until Ctrl-C; with `--keep DIR` the ledger and its tokens
//! stay for `roundledger serve --ledger DIR --no-ingest --config DIR/tokens.json`.

use crate::audit::{self, render};
use crate::demo_finance;
use crate::simulate::FloorArgs;
use crate::source::Source;
use crate::summary::Filter;
use crate::Outcome;
use anyhow::{Context, Result};
use schemas::{Seq, TableId};
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest wait for ingest to make every published event durable.
const DRAIN_WAIT: Duration = Duration::from_secs(300);

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    floor: FloorArgs,
    /// Keep the ledger in this directory (it must not exist yet) instead of a temporary one,
    /// to replay or audit it afterwards.
    #[arg(long)]
    keep: Option<PathBuf>,
    /// Address of the web UI and API while the demo runs (a free port on the same
    /// interface when this one is taken).
    #[arg(long, default_value = "127.0.0.1:8640")]
    http: SocketAddr,
    /// After the audit, keep serving the web UI on the demo's ledger until Ctrl-C or
    /// SIGTERM (scripts/demo.sh does when run from a terminal).
    #[arg(long)]
    serve: bool,
}

/// The web UI and API on the demo's ledger (`api::run`, no ingest: the demo's own ingest
/// task writes the ledger).
struct Web {
    addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), api::Error>>,
}

/// What the demo's web UI serves beside the ledger.
struct WebSetup {
    alerts: Option<api::AlertSource>,
    finance: api::FinanceSetup,
    /// Whether ingest is running (the demo's floor), or the UI serves a finished ledger.
    ingesting: bool,
}

impl Web {
    /// Starts serving on `addr`, or on a free port of its interface when `addr` is taken;
    /// returns once the socket is bound.
    fn start(
        rt: &tokio::runtime::Runtime,
        addr: SocketAddr,
        access: api::auth::AccessConfig,
        ledger_dir: &Path,
        ledger: Arc<ledger::Ledger>,
        setup: WebSetup,
    ) -> Result<Web> {
        let WebSetup {
            alerts,
            finance,
            ingesting,
        } = setup;
        let addr = if std::net::TcpListener::bind(addr).is_ok() {
            addr
        } else {
            SocketAddr::new(addr.ip(), 0)
        };
        let config = api::ApiConfig {
            addr,
            access,
            state_dir: api::default_state_dir(ledger_dir),
            model_dir: readside::model::default_dir(ledger_dir),
            alerts,
            finance,
            tls: None,
            access_file: None,
            time_zone: ledger::days::TIME_ZONE_DEFAULT.into(),
            ingesting,
            recorder_offset_ms: None,
            stuck_after_s: ingesting.then_some(ingest::STUCK_AFTER_DEFAULT.as_secs()),
            failures_per_minute_max: None,
            decision_analytics: None,
            signal_sink: None,
            records: None,
            edges: None,
        };
        let (bound_tx, bound_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = rt.spawn(api::run(
            config,
            ledger,
            move |a| {
                let _ = bound_tx.send(a);
            },
            async move {
                let _ = stopped.await;
            },
        ));
        match bound_rx.recv_timeout(Duration::from_secs(30)) {
            Ok(addr) => Ok(Web { addr, stop, task }),
            Err(_) => {
                let _ = stop.send(());
                rt.block_on(task).context("web UI task")??;
                anyhow::bail!("the web UI did not start on {addr}")
            }
        }
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Stops serving: open pages lose the connection (the live feed ends).
    fn stop(self, rt: &tokio::runtime::Runtime) -> Result<()> {
        let _ = self.stop.send(());
        rt.block_on(self.task)
            .context("web UI task")?
            .context("web UI")?;
        Ok(())
    }
}

pub fn run(mut args: Args) -> Result<Outcome> {
    // The demo's own defaults: a few thousand rounds, some irregularities to find.
    args.floor.irregularities.get_or_insert(0.004);
    args.floor.finance_errors.get_or_insert(0.1);
    let started = Instant::now();
    let mut nats = natsd::NatsServer::start_secured()
        .context("starting nats-server (scripts/setup.sh installs it)")?;
    let tmp = tempfile::tempdir().context("creating a temporary directory")?;
    let dir = ledger_dir(args.keep.as_deref(), tmp.path())?;
    let (floor, admin) = floor_keys(tmp.path(), args.floor.floor()?)?;
    let ledger = open_ledger(&dir, admin)?;
    let access = Access::write(&dir)?;
    let (ingest_config, devices) = secured_floor(&mut nats, &floor)?;
    print_floor(&floor, &args);
    let rt = crate::runtime::runtime()?;
    let alert_log = ingest::alerts::AlertLog::default();
    let source = crate::serve::alert_source(&alert_log);
    let (rule, finance) = kept_rule(&args, &ledger)?;
    let web = Web::start(
        &rt,
        args.http,
        access.config.clone(),
        &dir,
        ledger.clone(),
        WebSetup {
            alerts: Some(source),
            finance: finance.clone(),
            ingesting: true,
        },
    )?;
    print_web(&web, &access, &args);
    let ingest_config = ingest::IngestConfig {
        alerts: alert_log.clone(),
        ..ingest_config
    };
    let run = Played {
        nats_url: nats.url(),
        floor,
        rounds: args.floor.rounds,
        rate: args.floor.rate(),
        devices,
    };
    let (published, ingest_report) = rt.block_on(play(run, ingest_config, ledger.clone()))?;
    check_stored(&ledger, &published, &ingest_report, started)?;
    close_the_books(&web, &access, &ledger, &rule, &published)?;
    verify_chains(&ledger)?;
    // The audit reads the ledger alone: the web UI lets it go (and comes back with --serve).
    let web_addr = web.addr;
    web.stop(&rt)?;
    let ledger = release(ledger)?;
    let source = Source::Ledger(Box::new(ledger));
    let outcome = audit_and_compare(&source, &published)?;
    if let Some(k) = &args.keep {
        print_kept(k, &access.path);
    }
    println!("demo finished in {:.1?}", started.elapsed());
    drop(nats);
    if args.serve {
        let Source::Ledger(ledger) = source else {
            anyhow::bail!("the demo audits its own ledger")
        };
        let setup = WebSetup {
            alerts: Some(crate::serve::alert_source(&alert_log)),
            finance,
            ingesting: false,
        };
        serve_again(&rt, web_addr, access.config, &dir, Arc::new(*ledger), setup)?;
    }
    Ok(outcome)
}

/// `--serve`: the web UI again on the audited ledger, read-only, until Ctrl-C.
fn serve_again(
    rt: &tokio::runtime::Runtime,
    addr: std::net::SocketAddr,
    config: api::auth::AccessConfig,
    dir: &Path,
    ledger: Arc<ledger::Ledger>,
    setup: WebSetup,
) -> Result<()> {
    let web = Web::start(rt, addr, config, dir, ledger, setup)?;
    serve_until_stopped(rt, web)
}

/// The floor's day rule, kept with the ledger so that a report on it later (`--keep`)
/// splits days where the floor did, and finance's setup under it.
fn kept_rule(
    args: &Args,
    ledger: &ledger::Ledger,
) -> Result<(ledger::days::DayRule, api::FinanceSetup)> {
    let rule = demo_finance::day_rule(&args.floor.shift_start, args.floor.shift_every)?;
    ledger
        .writer()
        .set_day_rule(&rule)
        .context("keeping the day rule in the ledger")?;
    let finance = api::FinanceSetup {
        rule: rule.clone(),
        pits: Vec::new(),
    };
    Ok((rule, finance))
}

/// Where the demo's ledger goes: `--keep`'s directory (which must not exist) or a
/// temporary one.
fn ledger_dir(keep: Option<&Path>, tmp: &Path) -> Result<PathBuf> {
    match keep {
        Some(d) => {
            anyhow::ensure!(!d.exists(), "--keep {}: already exists", d.display());
            Ok(d.to_path_buf())
        }
        None => Ok(tmp.join("ledger")),
    }
}

fn print_floor(floor: &simulator::Floor, args: &Args) {
    println!(
        "floor: {} tables ({}), {} rounds each, seed {}",
        floor.tables.len(),
        games(floor),
        args.floor.rounds,
        args.floor.seed
    );
}

/// Recomputes every table's chain from genesis; an error if any breaks.
fn verify_chains(ledger: &ledger::Ledger) -> Result<()> {
    let verify = ledger.verifier().verify().context("verifying the ledger")?;
    anyhow::ensure!(verify.is_ok(), "chain verification failed: {verify:?}");
    println!(
        "chains verified: {} tables, every hash recomputed from genesis",
        verify.tables.len()
    );
    Ok(())
}

fn print_kept(dir: &Path, access: &Path) {
    let (d, a) = (dir.display(), access.display());
    println!(
        "ledger kept in {d} (try: roundledger audit --ledger {d}; the web UI: roundledger serve --ledger {d} --no-ingest --config {a})"
    );
}

/// The demo's access file: a token per role and a trusted count key.
struct Access {
    path: PathBuf,
    tokens: Vec<crate::tokens::RoleToken>,
    config: api::auth::AccessConfig,
    count_key: schemas::attest::SigningKey,
}

impl Access {
    fn write(dir: &Path) -> Result<Access> {
        let path = dir.join("tokens.json");
        let tokens = crate::tokens::write_config(&path)?;
        let mut config = api::auth::AccessConfig::load(&path)
            .with_context(|| format!("reading back {}", path.display()))?;
        let count_key = demo_finance::trust_count_key(&path, &mut config)?;
        Ok(Access {
            path,
            tokens,
            config,
            count_key,
        })
    }

    /// The token of `role`.
    fn token(&self, role: &str) -> Result<String> {
        let found = self.tokens.iter().find(|(r, _)| *r == role);
        found
            .map(|(_, t)| t.clone())
            .context("the demo's tokens name every role")
    }
}

fn print_web(web: &Web, access: &Access, args: &Args) {
    println!(
        "web UI and API on {} while the demo runs; sign in with a token (the Live page shows the rounds as they are stored):\n{}access configuration: {}{}",
        web.url(),
        crate::tokens::render(&access.tokens),
        access.path.display(),
        match (&args.keep, args.serve) {
            (_, true) => " (the web UI stays up after the audit until Ctrl-C)",
            (Some(_), false) => " (kept with the ledger; the web UI stops with the demo)",
            (None, false) => " (removed with the demo; --serve keeps the web UI up after the audit)",
        }
    );
}

/// What the floor plays and publishes.
struct Played {
    nats_url: String,
    floor: simulator::Floor,
    rounds: u64,
    rate: Option<f64>,
    devices: simulator::DeviceAccess,
}

/// Publishes the floor while ingest stores it, until every event is durable.
async fn play(
    run: Played,
    config: ingest::IngestConfig,
    ledger: Arc<ledger::Ledger>,
) -> Result<(simulator::PublishReport, ingest::IngestReport)> {
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let ingest = tokio::spawn(ingest::run(config, ledger.clone(), async move {
        let _ = stop_rx.await;
    }));
    let options = simulator::PublishOptions {
        durable: Some(simulator::DurableWait::default()),
        access: run.devices,
        ..simulator::PublishOptions::default()
    };
    let published = simulator::publish_floor(
        &run.nats_url,
        run.floor.tables,
        run.rounds,
        run.rate,
        options,
    )
    .await
    .context("publishing the simulated floor");
    let published = match published {
        Ok(p) => p,
        Err(e) => {
            let _ = stop_tx.send(());
            let _ = ingest.await;
            return Err(e);
        }
    };
    let drained = wait_until_durable(&ledger, &published).await;
    let _ = stop_tx.send(());
    let report = ingest.await.context("ingest task")?.context("ingest")?;
    drained?;
    Ok((published, report))
}

/// Exactly the published events are stored, each once, with the published hashes.
fn check_stored(
    ledger: &ledger::Ledger,
    published: &simulator::PublishReport,
    ingest_report: &ingest::IngestReport,
    started: Instant,
) -> Result<()> {
    println!(
        "published {} events of {} rounds; ingest stored {} in {} batches ({} duplicates, {} quarantined) in {:.1?}",
        published.events.len(),
        published.rounds,
        ingest_report.stored,
        ingest_report.batches,
        ingest_report.duplicates,
        ingest_report.quarantined,
        started.elapsed()
    );
    let mut missing = 0u64;
    for p in &published.events {
        match ledger.reader().events(&p.table, p.seq.0..=p.seq.0).next() {
            Some(Ok(s)) if s.hash == p.hash => {}
            _ => missing += 1,
        }
    }
    anyhow::ensure!(
        missing == 0,
        "{missing} published events are not in the ledger as published"
    );
    println!(
        "checkpoints: {} published, {} verified and kept, {} refused; every table attested up to its last event",
        published.checkpoints, ingest_report.checkpoints_kept, ingest_report.checkpoints_refused
    );
    Ok(())
}

/// The ledger, once the stopped web UI has let it go.
fn release(ledger: Arc<ledger::Ledger>) -> Result<ledger::Ledger> {
    let released = Instant::now() + Duration::from_secs(5);
    while Arc::strong_count(&ledger) > 1 && Instant::now() < released {
        std::thread::sleep(Duration::from_millis(20));
    }
    Arc::try_unwrap(ledger).map_err(|_| anyhow::anyhow!("ledger still shared"))
}

/// The audit, and whether it flagged exactly the rounds the simulator injected faults into.
fn audit_and_compare(source: &Source, published: &simulator::PublishReport) -> Result<Outcome> {
    let summary = audit::audit(source, &Filter::default(), &|_| {})?;
    println!();
    print!("{}", render(&summary));
    let injected: BTreeSet<(TableId, u64)> = published
        .faults
        .iter()
        .map(|(t, f)| (t.clone(), f.round().0))
        .collect();
    let disputed = summary
        .disputed_rounds
        .iter()
        .map(|d| (d.table.clone(), d.round.0));
    let irregular = summary
        .irregular_rounds
        .iter()
        .map(|(t, r, _)| (t.clone(), r.0));
    let flagged: BTreeSet<(TableId, u64)> = disputed.chain(irregular).collect();
    let not_flagged = injected.difference(&flagged).count();
    let unexpected = flagged.difference(&injected).count();
    println!(
        "\ninjected faults: {} in {} rounds; rounds flagged by the audit: {}; injected but not flagged: {}; flagged but not injected: {}",
        published.faults.len(),
        injected.len(),
        flagged.len(),
        not_flagged,
        unexpected
    );
    Ok(if not_flagged == 0 && unexpected == 0 {
        Outcome::Clean
    } else {
        Outcome::Findings
    })
}

/// Finance closes the floor's books: the count room enters each box's count, and the
/// report of its gaming days is printed with the injected finance errors looked up in it.
/// The comparison is printed, not judged: the demo's exit code is the audit's.
fn close_the_books(
    web: &Web,
    access: &Access,
    ledger: &ledger::Ledger,
    rule: &ledger::days::DayRule,
    published: &simulator::PublishReport,
) -> Result<()> {
    let fin = demo_finance::client(&web.url(), &access.token("finance")?)?;
    // The server binds each count to its box's removal: it must have read them first.
    wait_indexed(&fin, ledger)?;
    let counted = demo_finance::enter_counts(&fin, &access.count_key, &published.finance.counts)?;
    println!("count room: {counted} drop boxes counted, signed and entered (POST /v1/counts)");
    let days = demo_finance::days_of(ledger, rule)?;
    let expected = &published.finance.variances;
    if !demo_finance::summary(&fin, (&days.0, &days.1), expected)? {
        println!(
            "  (another tray variance in the same shift can hide one: RELIABILITY.md, read model)"
        );
    }
    Ok(())
}

/// `--serve`: the web UI on the demo's ledger until Ctrl-C.
fn serve_until_stopped(rt: &tokio::runtime::Runtime, web: Web) -> Result<()> {
    println!(
        "\nserving the web UI on {} until Ctrl-C; sign in with a token above",
        web.url()
    );
    rt.block_on(crate::serve::shutdown_signal());
    web.stop(rt)?;
    println!("web UI stopped");
    Ok(())
}

/// Waits until the server's read model has indexed every stored event (bounded).
fn wait_indexed(client: &crate::client::Client, ledger: &ledger::Ledger) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    let stored = ledger.reader().stats().events;
    loop {
        let s: schemas::api::ServerStatus = client.get("/v1/status")?;
        if s.events_indexed >= stored {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "the read model did not catch up: {s:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn games(floor: &simulator::Floor) -> String {
    let mut n: BTreeMap<&str, usize> = BTreeMap::new();
    for t in &floor.tables {
        *n.entry(t.config().rule_set.code()).or_default() += 1;
    }
    n.iter()
        .map(|(g, c)| format!("{c} {g}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Waits until the ledger's head of every published table reaches its last published seq,
/// and the table's closing checkpoint attests it.
async fn wait_until_durable(
    ledger: &ledger::Ledger,
    published: &simulator::PublishReport,
) -> Result<()> {
    let mut last: BTreeMap<TableId, Seq> = BTreeMap::new();
    for p in &published.events {
        let e = last.entry(p.table.clone()).or_insert(p.seq);
        *e = (*e).max(p.seq);
    }
    let deadline = Instant::now() + DRAIN_WAIT;
    loop {
        let behind: Vec<&TableId> = last
            .iter()
            .filter(|(t, s)| {
                ledger.reader().head(t).is_none_or(|h| h.seq < **s)
                    || ledger.reader().attestation(t).is_none_or(|a| a.seq < **s)
            })
            .map(|(t, _)| t)
            .collect();
        if behind.is_empty() {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "ingest did not catch up within {DRAIN_WAIT:?}; behind: {behind:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Bus credentials for ingest and for each table's device, issued on the demo's own
/// secured nats-server (one reload): ingest's configuration and the devices' access.
fn secured_floor(
    nats: &mut natsd::NatsServer,
    floor: &simulator::Floor,
) -> Result<(ingest::IngestConfig, simulator::DeviceAccess)> {
    let tables: Vec<TableId> = floor.tables.iter().map(|t| t.table().clone()).collect();
    let issued = nats
        .issue_floor(&tables)
        .context("issuing bus credentials")?;
    let devices = simulator::DeviceAccess {
        creds_dir: Some(issued.creds_dir),
        ca_file: Some(issued.ca_file),
    };
    let mut config = ingest::IngestConfig::new(nats.url());
    config.access = issued.ingest;
    println!(
        "nats-server with JetStream on {} (TLS; ingest and each table's device with its own credentials)",
        nats.url()
    );
    Ok((config, devices))
}

/// Real keys, made as an operator makes them: a fresh admin key (`keygen`), and per table
/// a device key with the admin's enrollment of it (`keygen`, `enroll`), in `tmp`. Returns
/// the floor signing with them and the admin's public key, which the ledger trusts.
fn floor_keys(
    tmp: &Path,
    floor: simulator::Floor,
) -> Result<(simulator::Floor, schemas::attest::PublicKey)> {
    let dir = tmp.join("device-keys");
    std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let admin = crate::keygen::write_new_key(&tmp.join("admin.key"))?;
    for t in &floor.tables {
        crate::devicekeys::make(&dir, &admin, t.table())?;
    }
    let floor = crate::devicekeys::attach(floor, &dir)?;
    println!(
        "keys: admin {} (trusted by the ledger) enrolled a fresh device key per table",
        admin.public()
    );
    Ok((floor, admin.public()))
}

/// The demo's ledger, as `serve --admin-key` keeps one: the demo's admin key trusted (it
/// enrolls the tables' keys), only the tables' own devices' signed events stored.
fn open_ledger(dir: &Path, admin: schemas::attest::PublicKey) -> Result<Arc<ledger::Ledger>> {
    let ledger = ledger::Ledger::open(dir)
        .with_context(|| format!("opening the ledger at {}", dir.display()))?;
    ledger
        .writer()
        .trust_admin_keys([admin])
        .context("keeping the trusted admin key")?;
    ledger
        .writer()
        .require_signed_events()
        .context("requiring signed events")?;
    Ok(Arc::new(ledger))
}
