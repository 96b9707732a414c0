//! What ingest's integration tests share: a running ingest, a ledger opened as `serve`
//! opens it, and publishing as a table's device does. Each test binary uses a part.
#![allow(dead_code)]

use async_nats::jetstream;
use ingest::{IngestConfig, IngestReport};
use ledger::Ledger;
use schemas::provenance::EventSignature;
use schemas::subjects;
use simulator::{FaultPlan, Floor, Published};
use std::path::Path;
use std::sync::Arc;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Where the simulated devices' clocks start, the same for the whole test process (a
/// floor built twice plays the same events): 12 h before now. Ingest judges device time
/// against the stream's timestamps (real time), within the ledger's 24 h skew limit,
/// and these floors play a few hours of device time.
pub fn clock_start_ns() -> i64 {
    static START: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *START.get_or_init(|| ingest::system_clock_ns() - 12 * 3_600_000_000_000)
}

/// `Floor::new` with its clocks starting at `clock_start_ns`.
pub fn floor_near_now(
    tables: usize,
    seed: u64,
    faults: FaultPlan,
) -> Result<Floor, simulator::Error> {
    Ok(Floor::new(tables, seed, faults)?.starting_at(clock_start_ns()))
}

/// A running ingest and the means to stop it.
pub struct Running {
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<IngestReport, ingest::Error>>,
    /// Its alert log (`ingest::alerts`).
    pub alerts: ingest::alerts::AlertLog,
}

impl Running {
    /// Ingest with the default configuration for `url`.
    pub fn start(url: &str, ledger: Arc<Ledger>) -> Running {
        Running::start_with(IngestConfig::new(url), ledger)
    }

    /// Ingest with `config` (credentials, bounds).
    pub fn start_with(config: IngestConfig, ledger: Arc<Ledger>) -> Running {
        let (stop, rx) = oneshot::channel::<()>();
        let alerts = config.alerts.clone();
        let task = tokio::spawn(ingest::run(config, ledger, async {
            let _ = rx.await;
        }));
        Running { stop, task, alerts }
    }

    pub async fn stop(self) -> IngestReport {
        self.stop.send(()).expect("ingest still running");
        self.task
            .await
            .expect("ingest task")
            .expect("ingest ended cleanly")
    }
}

/// A ledger as `serve` opens it for simulated tables: the simulator's admin key trusted
/// (`serve --trust-simulated-admin`), only device-signed events stored.
pub fn open(dir: &Path) -> Arc<Ledger> {
    let ledger = Ledger::open(dir).expect("open ledger");
    ledger
        .writer()
        .trust_admin_keys([simulator::admin_key().public()])
        .expect("trust the simulator's admin key");
    ledger
        .writer()
        .require_signed_events()
        .expect("require signed events");
    Arc::new(ledger)
}

/// A JetStream context on `url`, the stream ensured as ingest ensures it at start.
pub async fn context(url: &str) -> jetstream::Context {
    let js = jetstream::new(async_nats::connect(url).await.expect("connect"));
    // A fresh server may time out its first stream request on loaded cores: ingest's own
    // start tries again (`pipeline::retrying`), and so does this.
    for attempt in 1..=5 {
        match ingest::ensure_stream(&js).await {
            Ok(_) => return js,
            Err(e) if attempt < 5 => eprintln!("stream, attempt {attempt}: {e}; again"),
            Err(e) => panic!("stream: {e}"),
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
    unreachable!("the loop returns or panics")
}

/// Publishes `bytes` on `table`'s events subject with `id` and `signature`'s headers,
/// and waits for the ack.
pub async fn publish(
    js: &jetstream::Context,
    table: &str,
    id: &str,
    bytes: &[u8],
    signature: Option<&EventSignature>,
) {
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Nats-Msg-Id", id);
    for (name, value) in signature.iter().flat_map(|s| s.to_headers()) {
        headers.insert(name, value.as_str());
    }
    let subject = format!("tables.{table}.events");
    js.publish_with_headers(subject, headers, bytes.to_vec().into())
        .await
        .expect("publish")
        .await
        .expect("publish ack");
}

/// Publishes as the table's device does: each event with its message id and signature.
pub async fn publish_as_device(js: &jetstream::Context, events: &[Published]) {
    for p in events {
        let id = subjects::msg_id(&p.event.table, p.event.seq, &p.bytes);
        let table = p.event.table.as_str();
        publish(js, table, &id, &p.bytes, p.signature.as_ref()).await;
    }
}
