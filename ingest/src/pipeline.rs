//! The async side: stream and consumer setup, the fetch loop, the acker.

use crate::alerts::Raised;
use crate::writer::{writer_loop, Job, WriterSide, Written};
use crate::{Error, IngestConfig, IngestReport, DUPLICATE_WINDOW};
use async_nats::jetstream::{self, consumer, stream};
use futures::{FutureExt, StreamExt};
use ledger::{Incoming, Ledger};
use schemas::api::Alert;
use schemas::subjects;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// The stream's configuration: one subject per table, file storage, nothing discarded
/// silently (DiscardPolicy::New with no limits: were a limit ever set, publishes would be
/// refused and stay in the device's outbox, never old messages deleted), events no larger
/// than the codec accepts with every header a device sends (`subjects::MESSAGE_LEN_MAX`:
/// the server counts headers in `max_message_size`).
pub fn stream_config() -> stream::Config {
    stream::Config {
        name: subjects::STREAM.to_string(),
        subjects: vec![
            subjects::EVENTS_WILDCARD.to_string(),
            subjects::CHECKPOINTS_WILDCARD.to_string(),
            subjects::ADMIN_SUBJECT.to_string(),
        ],
        storage: stream::StorageType::File,
        retention: stream::RetentionPolicy::Limits,
        discard: stream::DiscardPolicy::New,
        duplicate_window: DUPLICATE_WINDOW,
        max_message_size: subjects::MESSAGE_LEN_MAX as i32,
        ..Default::default()
    }
}

/// Creates the stream `schemas::subjects::STREAM` if it does not exist, or brings an
/// existing one to our settings. Refuses a stream whose storage is not file. One replica
/// when it creates the stream (see `ensure_stream_replicated`).
pub async fn ensure_stream(js: &jetstream::Context) -> Result<jetstream::stream::Stream, Error> {
    ensure_stream_replicated(js, 1).await
}

/// `ensure_stream` with at least `replicas` replicas: created with that many, raised to it
/// when it has fewer, left alone when it has more (never lowers redundancy).
pub async fn ensure_stream_replicated(
    js: &jetstream::Context,
    replicas: usize,
) -> Result<jetstream::stream::Stream, Error> {
    ensure_configured(js, stream_config(), replicas).await
}

/// Creates the stream `want` names, or brings an existing one to `want` with at least
/// `replicas` replicas (never fewer than it has). Refuses one whose storage differs.
pub(crate) async fn ensure_configured(
    js: &jetstream::Context,
    mut want: stream::Config,
    replicas: usize,
) -> Result<jetstream::stream::Stream, Error> {
    want.num_replicas = replicas;
    let mut stream = js
        .get_or_create_stream(want.clone())
        .await
        .map_err(|e| Error::nats("get or create stream", e))?;
    let have = stream
        .info()
        .await
        .map_err(|e| Error::nats("stream info", e))?
        .config
        .clone();
    if have.storage != want.storage {
        return Err(Error::StreamMismatch {
            stream: want.name,
            why: format!("storage is {:?}, not file", have.storage),
        });
    }
    // JetStream reports 1 for a stream created with 0 (its default).
    want.num_replicas = want.num_replicas.max(have.num_replicas).max(1);
    let differs = have.subjects != want.subjects
        || have.num_replicas.max(1) != want.num_replicas
        || have.discard != want.discard
        || have.duplicate_window != want.duplicate_window
        || have.max_message_size != want.max_message_size
        || have.retention != want.retention;
    if differs {
        tracing::warn!(stream = %want.name, "stream settings differ from ours; updating");
        js.update_stream(want.clone())
            .await
            .map_err(|e| Error::StreamMismatch {
                stream: want.name.clone(),
                why: e.to_string(),
            })?;
        stream = js
            .get_stream(&want.name)
            .await
            .map_err(|e| Error::nats("get stream", e))?;
    }
    Ok(stream)
}

/// The servers of a NATS url list (`nats://a:4222,nats://b:4222`, a cluster's nodes), in
/// the form `async_nats::connect` takes: it connects to one of them and reconnects to
/// another when that one goes.
pub fn servers(url: &str) -> Vec<&str> {
    url.split(',').map(str::trim).collect()
}

/// The durable pull consumer's configuration.
pub fn consumer_config(name: &str, config: &IngestConfig) -> consumer::pull::Config {
    consumer::pull::Config {
        durable_name: Some(name.to_string()),
        description: Some("roundledger ingest: ack after append and flush".to_string()),
        deliver_policy: consumer::DeliverPolicy::All,
        ack_policy: consumer::AckPolicy::All,
        ack_wait: config.ack_wait,
        // Unlimited redelivery: every message is eventually stored or quarantined, so a
        // message that keeps failing means the ledger is failing, and ingest stops.
        max_deliver: -1,
        // No filter: the stream takes only events and checkpoints (`stream_config`,
        // enforced by `ensure_stream`), so a filter would select everything anyway, and
        // it is not free. With the two subjects as filters nats-server 2.15 takes its
        // multi-filter path (`LoadNextMsgMulti`, a subject-tree intersection per
        // message): perf measured it at half the server's CPU while ingest ran, and
        // ingest 0.5 of the raw rate. Anything else that ever reached the stream is
        // routed as an event of no valid table and quarantined (`route`).
        filter_subjects: Vec::new(),
        max_ack_pending: config.ack_pending_max,
        max_batch: config.batch_len_max as i64,
        ..Default::default()
    }
}

/// Creates the durable consumer or updates it to `config`'s bounds; refuses one that
/// does not use AckPolicy::All (the batch ack would then ack one message only).
pub async fn ensure_consumer(
    stream: &jetstream::stream::Stream,
    name: &str,
    config: &IngestConfig,
) -> Result<consumer::PullConsumer, Error> {
    let mut consumer: consumer::PullConsumer = stream
        .create_consumer(consumer_config(name, config))
        .await
        .map_err(|e| consumer_error(name, e))?;
    let info = consumer
        .info()
        .await
        .map_err(|e| Error::nats("consumer info", e))?;
    if info.config.ack_policy != consumer::AckPolicy::All {
        return Err(Error::ConsumerMismatch {
            consumer: name.to_string(),
            why: format!("ack policy is {:?}, not All", info.config.ack_policy),
        });
    }
    Ok(consumer)
}

/// A failed consumer create: a timeout, a failed request or a server that cannot answer
/// now (HTTP-like code 408 or 5xx) is a bus error, tried again at start; any other answer
/// of the server is a consumer ingest cannot use.
fn consumer_error(name: &str, e: jetstream::stream::ConsumerError) -> Error {
    use jetstream::stream::ConsumerErrorKind as Kind;
    let transient = match e.kind() {
        Kind::JetStream(j) => j.code() == 408 || j.code() >= 500,
        Kind::InvalidConsumerType | Kind::InvalidName => false,
        Kind::TimedOut | Kind::Request | Kind::Other => true,
    };
    match transient {
        true => Error::nats("consumer create", e),
        false => Error::ConsumerMismatch {
            consumer: name.to_string(),
            why: e.to_string(),
        },
    }
}

/// Puts one delivered message in the batch's events or its checkpoints, by subject.
fn route(
    events: &mut Vec<Incoming>,
    checkpoints: &mut Vec<Incoming>,
    subject: &str,
    payload: &[u8],
    headers: Option<&async_nats::HeaderMap>,
    stream_seq: u64,
    received_at_ns: i64,
) {
    let (list, table) = match subjects::table_of_checkpoint_subject(subject) {
        Some(t) => (checkpoints, Some(t)),
        None => (events, subjects::table_of_subject(subject)),
    };
    list.push(Incoming {
        bytes: payload.to_vec(),
        // A subject token that is not a valid table id gives `None`: the ledger then
        // quarantines the message as arriving on the wrong subject.
        subject_table: table.and_then(|t| schemas::TableId::new(t).ok()),
        stream_seq,
        received_at_ns,
        provenance: provenance(headers),
    });
}

/// The device signature in a message's headers (`schemas::provenance`).
fn provenance(headers: Option<&async_nats::HeaderMap>) -> ledger::Provenance {
    let Some(h) = headers else {
        return ledger::Provenance::Unsigned;
    };
    let get = |name: &str| h.get(name).map(|v| v.as_str());
    match schemas::provenance::EventSignature::from_headers(get) {
        Ok(Some(s)) => ledger::Provenance::Signed(s),
        Ok(None) => ledger::Provenance::Unsigned,
        Err(why) => ledger::Provenance::Malformed(why),
    }
}

/// Runs ingest until `shutdown` completes, then finishes the batch in flight, acks it and
/// returns the report. Connects to `config.nats_url`, ensures the stream and the durable
/// consumer, and writes through one writer thread (see `writer`).
pub async fn run(
    config: IngestConfig,
    ledger: Arc<Ledger>,
    shutdown: impl Future<Output = ()>,
) -> Result<IngestReport, Error> {
    let consumer = config.consumer_name();
    run_with_consumer(config, ledger, &consumer, || {}, shutdown).await
}

/// With a node id: the alerts lease, taken if free before the first fetch, so what this
/// node raises first is judged as the holder's.
async fn open_alerts_lease(
    client: &async_nats::Client,
    config: &IngestConfig,
) -> Result<Option<std::sync::Arc<tokio::sync::Mutex<crate::lease::Lease>>>, Error> {
    Ok(match &config.node_id {
        Some(node) => {
            let js = jetstream::new(client.clone());
            let (ttl, n) = (config.lease_ttl, config.stream_replicas);
            let open = || crate::lease::Lease::open(&js, "alerts", node, ttl, n);
            let mut l = retrying("the alerts lease", open).await?;
            // Taken, if free, before the first fetch: what this node raises first is then
            // judged as the holder's.
            l.tick().await;
            Some(std::sync::Arc::new(tokio::sync::Mutex::new(l)))
        }
        None => None,
    })
}

/// Shortest and longest pause between two tries of a JetStream call at start.
const SETUP_RETRY_PAUSE_MIN: std::time::Duration = std::time::Duration::from_millis(100);
const SETUP_RETRY_PAUSE_MAX: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs `attempt` until it succeeds or fails for good. A NATS or JetStream error (a
/// request timed out while a server is down or a leader is elected) is tried again,
/// pausing 100 ms doubling to 5 s: a ledger node never stops on a bus that comes back.
/// A setting ingest cannot use (a stream or consumer that differs) fails at once.
pub(crate) async fn retrying<T, F, Fut>(what: &str, mut attempt: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let mut pause = SETUP_RETRY_PAUSE_MIN;
    loop {
        match attempt().await {
            Err(e @ Error::Nats { .. }) => {
                tracing::warn!(error = %e, pause_ms = pause.as_millis() as u64, "{what} failed; trying again");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(SETUP_RETRY_PAUSE_MAX);
            }
            done => return done,
        }
    }
}

/// `run` with another durable consumer name (the benchmark uses a fresh one). `ready` is
/// called once, when the connection, the stream, the consumer and the writer are set up
/// and the first fetch is about to go out: the benchmark times (b) from there, as (a) is
/// timed from its consumer's creation.
pub(crate) async fn run_with_consumer(
    config: IngestConfig,
    ledger: Arc<Ledger>,
    consumer_name: &str,
    ready: impl FnOnce(),
    shutdown: impl Future<Output = ()>,
) -> Result<IngestReport, Error> {
    config.check()?;
    // A stop while NATS cannot be reached yet ends the setup: nothing was fetched.
    let mut shutdown = std::pin::pin!(shutdown);
    let setup = async {
        let client = bus::connect(&config.nats_url, &config.access).await?;
        let js = jetstream::new(client.clone());
        let (stream, consumer, next_stream_seq) = retrying("ingest setup", || async {
            let stream = ensure_stream_replicated(&js, config.stream_replicas).await?;
            let consumer = ensure_consumer(&stream, consumer_name, &config).await?;
            let next_stream_seq = start_position(&stream, &consumer).await?;
            Ok((stream, consumer, next_stream_seq))
        })
        .await?;
        Ok::<_, Error>((client, stream, consumer, next_stream_seq))
    };
    let (client, stream, consumer, next_stream_seq) = tokio::select! {
        set = setup => set?,
        _ = &mut shutdown => {
            tracing::info!("stopped before ingest was set up: nothing fetched");
            return Ok(IngestReport::default());
        }
    };
    tracing::info!(
        consumer = consumer_name,
        next_stream_seq,
        batch_len_max = config.batch_len_max,
        "ingest started"
    );
    let lease = open_alerts_lease(&client, &config).await?;
    let workers = Workers::start(&client, ledger, &config, lease)?;
    config.metrics.attach(&client);
    let _polling = crate::metrics::Polling::start(&consumer, &config.metrics);
    ready();
    let mut reader = Reader {
        stream: &stream,
        next_stream_seq,
        read_back: 0,
        missing: 0,
    };
    let fetched = fetch_loop(
        &client,
        &consumer,
        &config,
        &mut reader,
        &workers.jobs,
        &mut shutdown,
    )
    .await;
    let (read_back, missing) = (reader.read_back, reader.missing);
    let mut report = workers.finish(&client, fetched.err()).await?;
    report.read_back = read_back;
    report.missing_in_stream = missing;
    tracing::info!(?report, "ingest stopped");
    Ok(report)
}

/// The next stream sequence this consumer must see before it may ack past it: one after
/// the ack floor (see the crate invariant on AckPolicy::All), or the stream's first.
async fn start_position(
    stream: &jetstream::stream::Stream,
    consumer: &consumer::PullConsumer,
) -> Result<u64, Error> {
    let mut consumer = consumer.clone();
    let ack_floor = consumer
        .info()
        .await
        .map_err(|e| Error::nats("consumer info", e))?
        .ack_floor
        .stream_sequence;
    let mut stream = stream.clone();
    let first_in_stream = stream
        .info()
        .await
        .map_err(|e| Error::nats("stream info", e))?
        .state
        .first_sequence;
    Ok((ack_floor + 1).max(first_in_stream))
}

/// The tasks and the thread behind the fetch loop: the ledger writer, the acker, the
/// alerter and the stuck-table timer.
struct Workers {
    jobs: mpsc::Sender<Job>,
    writer: std::thread::JoinHandle<()>,
    alerter: tokio::task::JoinHandle<()>,
    acker: tokio::task::JoinHandle<Result<IngestReport, Error>>,
    stuck_watch: crate::stuck::Watcher,
    replica_watch: Option<crate::replicas::Watcher>,
    /// Takes and renews the alerts lease, with several nodes.
    lease_keeper: Option<crate::lease::Keeper>,
    /// The alerts lease, released at a clean stop.
    lease: Option<crate::lease::Shared>,
    /// Publishes the read model's decision signals, when `serve` hands them in.
    signal_alerter: Option<crate::signal_alerts::Task>,
}

impl Workers {
    fn start(
        client: &async_nats::Client,
        ledger: Arc<Ledger>,
        config: &IngestConfig,
        lease: Option<crate::lease::Shared>,
    ) -> Result<Workers, Error> {
        let (jobs, job_rx) = mpsc::channel::<Job>(config.writer_queue_len);
        let (done_tx, done_rx) =
            mpsc::channel::<Result<Written, Error>>(config.writer_queue_len + 1);
        let (alert_tx, alert_rx) = mpsc::channel::<Raised>(crate::health::ALERT_QUEUE_LEN_MAX);
        let lease_keeper = lease.clone().map(crate::lease::keep);
        let alerting = Alerting {
            log: config.alerts.clone(),
            clock: config.clock,
            lease: lease.clone(),
        };
        let stuck_watch = stuck_watcher(client, ledger.clone(), config, alerting.clone());
        let replica_watch = replica_watcher(client, ledger.clone(), config, alerting.clone());
        let side = WriterSide {
            attestation_lag_max: config.attestation_lag_max,
            health: config.health.clone(),
            alerts: alert_tx,
            clock: config.clock,
            metrics: config.metrics.clone(),
        };
        let writer = std::thread::Builder::new()
            .name("ledger-writer".to_string())
            .spawn(move || writer_loop(ledger, job_rx, done_tx, side))
            .map_err(|e| Error::Writer(format!("cannot start the writer thread: {e}")))?;
        let alerter = tokio::spawn(alert_loop(client.clone(), alert_rx, alerting.clone()));
        let signal_alerter = crate::signal_alerts::start(
            &config.signals,
            crate::signal_alerts::Publisher {
                client: client.clone(),
                log: config.alerts.clone(),
                clock: config.clock,
                lease: lease.clone(),
                stream_replicas: config.stream_replicas,
            },
        );
        let acker = tokio::spawn(ack_loop(client.clone(), done_rx, alerting));
        Ok(Workers {
            jobs,
            writer,
            alerter,
            acker,
            stuck_watch,
            replica_watch,
            lease_keeper,
            lease,
            signal_alerter,
        })
    }

    /// Lets the writer drain its queue and stop; the acker ends when the writer does.
    /// Returns the acker's report, or `failed` (the fetch loop's error) first.
    async fn finish(
        self,
        client: &async_nats::Client,
        failed: Option<Error>,
    ) -> Result<IngestReport, Error> {
        drop(self.stuck_watch);
        drop(self.replica_watch);
        drop(self.signal_alerter);
        drop(self.lease_keeper);
        drop(self.jobs);
        let acked = self
            .acker
            .await
            .map_err(|e| Error::Writer(format!("acker task: {e}")))?;
        let writer = self.writer;
        let joined = tokio::task::spawn_blocking(move || writer.join())
            .await
            .map_err(|e| Error::Writer(format!("joining the writer: {e}")))?;
        if joined.is_err() {
            return Err(Error::Writer("the writer thread panicked".to_string()));
        }
        // The writer is gone, so its alert queue is closed: the alerter ends once drained.
        let _ = self.alerter.await;
        if let Some(lease) = &self.lease {
            lease.lock().await.release().await;
        }
        // Acks are fire-and-forget publishes: make sure they left before returning. With
        // NATS down a flush waits for it to come back; a stop does not. An ack that did
        // not leave loses nothing: its batch is stored, NATS delivers it again, and
        // ingest recognises each event as a duplicate.
        match tokio::time::timeout(ACK_FLUSH_WAIT, client.flush()).await {
            Ok(flushed) => flushed.map_err(|e| Error::nats("flush acks", e))?,
            Err(_) => tracing::warn!(
                wait = ?ACK_FLUSH_WAIT,
                "NATS unreachable: the last acks may not have left; those batches are stored and come again as duplicates"
            ),
        }
        match failed {
            Some(e) => Err(e),
            None => acked,
        }
    }
}

/// The timer that raises `table_stuck` (a stuck table sends nothing to wake the loop).
fn stuck_watcher(
    client: &async_nats::Client,
    ledger: Arc<Ledger>,
    config: &IngestConfig,
    alerting: Alerting,
) -> crate::stuck::Watcher {
    let client = client.clone();
    let publish = move |raised| {
        let (client, a) = (client.clone(), alerting.clone());
        async move { publish_alerts(&client, &a, raised).await }
    };
    crate::stuck::Watcher(tokio::spawn(crate::stuck::watch(
        ledger,
        config.clock,
        config.stuck_after,
        publish,
    )))
}

/// The replica check (`replicas`), when this node has a node id.
fn replica_watcher(
    client: &async_nats::Client,
    ledger: Arc<Ledger>,
    config: &IngestConfig,
    alerting: Alerting,
) -> Option<crate::replicas::Watcher> {
    let node = config.node_id.clone()?;
    let publisher = client.clone();
    let publish = move |raised| {
        let (client, a) = (publisher.clone(), alerting.clone());
        async move { publish_alerts(&client, &a, raised).await }
    };
    let check = crate::replicas::Check {
        node,
        ledger,
        client: client.clone(),
        replicas: config.replicas.clone(),
        every: config.replica_check_every,
        stream_replicas: config.stream_replicas,
    };
    Some(crate::replicas::Watcher(tokio::spawn(
        crate::replicas::watch(check, publish),
    )))
}

/// Fetches batches and queues them for the writer until shutdown, the writer's stop, or
/// a read-back failure (returned: nothing at or past it was queued, so nothing is acked).
async fn fetch_loop(
    client: &async_nats::Client,
    consumer: &consumer::PullConsumer,
    config: &IngestConfig,
    reader: &mut Reader<'_>,
    jobs: &mpsc::Sender<Job>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), Error> {
    let mut shutdown = std::pin::pin!(shutdown.fuse());
    let mut fetcher = Fetcher {
        client: client.clone(),
        prefetch: Some(Prefetch::start(consumer, config)),
        backoff: FETCH_BACKOFF_MIN,
        stopping: false,
    };
    let mut batch_no = 0u64;
    loop {
        // Shutdown is checked between fetches, never inside one: a fetch cut short would
        // leave delivered messages unacked until ack_wait. The fetch already in flight is
        // taken and stored before stopping.
        if !fetcher.stopping && (&mut shutdown).now_or_never().is_some() {
            tracing::info!("shutdown requested: finishing the batches in flight");
            fetcher.stopping = true;
        }
        if jobs.is_closed() {
            // The writer stopped on a ledger error; the acker holds it.
            return Ok(());
        }
        let msgs = match fetcher.next(consumer, config, &mut shutdown).await {
            Fetched::Messages(msgs) => msgs,
            Fetched::Retry => continue,
            Fetched::Stop => return Ok(()),
        };
        let Some(last) = msgs.last().cloned() else {
            if fetcher.stopping {
                return Ok(());
            }
            continue;
        };
        let (incoming, checkpoints) = reader.route_all(&msgs).await?;
        batch_no += 1;
        let job = Job {
            batch_no,
            incoming,
            checkpoints,
            ack: last,
        };
        // While the writer is paused on a failed write the queue stays full: a shutdown
        // then leaves this batch unacked (delivered again) rather than wait for the disk.
        let sent = tokio::select! {
            sent = jobs.send(job) => sent.is_ok(),
            _ = &mut shutdown, if !fetcher.stopping => false,
        };
        if !sent || fetcher.stopping {
            return Ok(());
        }
    }
}

/// Longest wait at stop for the last acks to leave; NATS may be down.
const ACK_FLUSH_WAIT: Duration = Duration::from_secs(2);

/// The first pause after a failed fetch; it doubles up to `FETCH_BACKOFF_MAX`.
const FETCH_BACKOFF_MIN: Duration = Duration::from_millis(10);
const FETCH_BACKOFF_MAX: Duration = Duration::from_secs(2);

/// What one turn of the fetch loop got.
enum Fetched {
    Messages(Vec<jetstream::Message>),
    /// A fetch failed; paused, try again.
    Retry,
    Stop,
}

/// The pull requests: one in flight while the last batch is routed.
struct Fetcher {
    /// The connection, to tell at a stop whether the fetch in flight can still deliver.
    client: async_nats::Client,
    prefetch: Option<Prefetch>,
    backoff: Duration,
    stopping: bool,
}

impl Fetcher {
    async fn next(
        &mut self,
        consumer: &consumer::PullConsumer,
        config: &IngestConfig,
        shutdown: &mut (impl Unpin + futures::future::FusedFuture<Output = ()>),
    ) -> Fetched {
        let Some(mut in_flight) = self.prefetch.take() else {
            return Fetched::Stop;
        };
        // A stop while NATS is unreachable does not wait out the fetch in flight: it can
        // deliver nothing, and whatever it held is delivered again after ack_wait.
        let mut noticed = false;
        let fetched = tokio::select! {
            f = &mut in_flight.task => f.map_err(|e| Error::Writer(format!("fetch task: {e}"))).and_then(|r| r),
            _ = unreachable_at_stop(&self.client, shutdown, self.stopping, &mut noticed) => {
                in_flight.task.abort();
                tracing::warn!("stopping with NATS unreachable: the fetch in flight is abandoned");
                return Fetched::Stop;
            }
        };
        self.stopping |= noticed;
        if !self.stopping {
            // The next pull request goes out now, while this batch is routed and queued.
            self.prefetch = Some(Prefetch::start(consumer, config));
        }
        match fetched {
            Ok(msgs) => {
                self.backoff = FETCH_BACKOFF_MIN;
                Fetched::Messages(msgs)
            }
            Err(e) if self.stopping => {
                tracing::warn!(error = %e, "the last fetch failed while stopping");
                Fetched::Stop
            }
            Err(e) => {
                tracing::warn!(error = %e, backoff = ?self.backoff, "fetch failed; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(self.backoff) => {}
                    _ = shutdown => self.stopping = true,
                }
                self.backoff = (self.backoff * 2).min(FETCH_BACKOFF_MAX);
                Fetched::Retry
            }
        }
    }
}

/// Completes once a stop is asked for (now or already, `stopping`) while the connection
/// to NATS is down; sets `noticed` when the stop arrives here.
async fn unreachable_at_stop(
    client: &async_nats::Client,
    shutdown: &mut (impl Unpin + futures::future::FusedFuture<Output = ()>),
    stopping: bool,
    noticed: &mut bool,
) {
    if !stopping {
        shutdown.await;
        *noticed = true;
    }
    while client.connection_state() == async_nats::connection::State::Connected {
        tokio::time::sleep(STOP_POLL).await;
    }
}

/// How often a stop looks whether NATS is still reachable while a fetch is in flight.
const STOP_POLL: Duration = Duration::from_millis(100);

/// Routes delivered messages into a batch, reading back what a consumer skipped.
struct Reader<'a> {
    stream: &'a jetstream::stream::Stream,
    /// The next stream seq the batch must hold before a later one may be acked.
    next_stream_seq: u64,
    read_back: u64,
    missing: u64,
}

impl Reader<'_> {
    /// The batch's events and checkpoints, in stream order.
    async fn route_all(
        &mut self,
        msgs: &[jetstream::Message],
    ) -> Result<(Vec<Incoming>, Vec<Incoming>), Error> {
        let mut batch = Vec::with_capacity(msgs.len());
        let mut checkpoints = Vec::new();
        for m in msgs {
            let (stream_seq, received_at_ns) = match m.info() {
                Ok(info) => (info.stream_sequence, utc_ns(info.published)),
                Err(e) => {
                    // Not a JetStream delivery (no ack subject): cannot happen on a pull
                    // consumer; skip it rather than guess a sequence.
                    tracing::error!(subject = %m.subject, error = %e, "delivered message without JetStream info");
                    continue;
                }
            };
            if stream_seq > self.next_stream_seq {
                self.read_back_to(stream_seq, &mut batch, &mut checkpoints)
                    .await?;
            }
            self.next_stream_seq = self.next_stream_seq.max(stream_seq + 1);
            let headers = m.headers.as_ref();
            let (subject, payload) = (&m.subject, &m.payload);
            route(
                &mut batch,
                &mut checkpoints,
                subject,
                payload,
                headers,
                stream_seq,
                received_at_ns,
            );
        }
        Ok((batch, checkpoints))
    }

    /// Messages delivered earlier (to a process that died) and never acked, up to
    /// `stream_seq`: read back, or acking past them would ack them unseen.
    async fn read_back_to(
        &mut self,
        stream_seq: u64,
        batch: &mut Vec<Incoming>,
        checkpoints: &mut Vec<Incoming>,
    ) -> Result<(), Error> {
        for seq in self.next_stream_seq..stream_seq {
            match read_back_one(self.stream, seq).await? {
                Some(raw) => {
                    self.read_back += 1;
                    let at_ns = utc_ns(raw.time);
                    let headers = Some(&raw.headers);
                    route(
                        batch,
                        checkpoints,
                        &raw.subject,
                        &raw.payload,
                        headers,
                        seq,
                        at_ns,
                    );
                }
                None => {
                    self.missing += 1;
                    tracing::error!(stream_seq = seq, "stream sequence skipped by the consumer and no longer in the stream (deleted)");
                }
            }
        }
        Ok(())
    }
}

/// A stream timestamp in UTC ns: when the message reached the stream, the arrival time
/// the ledger judges device clocks against. It does not move while ingest is stopped, so
/// an outage adds nothing to a queued event's skew. Saturates outside i64 (year 2262).
pub(crate) fn utc_ns(t: async_nats::datetime::DateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos()).unwrap_or(if t.unix_timestamp() < 0 {
        i64::MIN
    } else {
        i64::MAX
    })
}

/// Attempts at reading back one stream sequence before ingest stops, and the pause before
/// the first retry (doubled each time).
pub(crate) const READ_BACK_ATTEMPTS: u32 = 5;
const READ_BACK_PAUSE: Duration = Duration::from_millis(100);

/// Reads back a sequence the consumer skipped (delivered to a process that died and never
/// acked). `Ok(None)` only when the stream says it no longer holds it (deleted): that is
/// counted as missing and acked past. Any other failure (a timeout, no stream leader, a
/// JetStream error) is retried, then is an error: acking past a message the stream still
/// holds would lose it unseen.
async fn read_back_one(
    stream: &jetstream::stream::Stream,
    seq: u64,
) -> Result<Option<jetstream::message::StreamMessage>, Error> {
    use jetstream::stream::RawMessageErrorKind;
    let mut pause = READ_BACK_PAUSE;
    let mut attempt = 1;
    loop {
        match stream.get_raw_message(seq).await {
            Ok(raw) => return Ok(Some(raw)),
            Err(e) if e.kind() == RawMessageErrorKind::NoMessageFound => return Ok(None),
            Err(e) if attempt < READ_BACK_ATTEMPTS => {
                tracing::warn!(stream_seq = seq, attempt, error = %e, "reading back a skipped stream sequence failed; retrying");
                tokio::time::sleep(pause).await;
                pause *= 2;
                attempt += 1;
            }
            Err(e) => return Err(Error::nats("read back a skipped stream sequence", e)),
        }
    }
}

/// The next fetch, running while the one before it is routed and queued for the writer
/// (where it waits whenever the writer is busy): its pull request goes out as soon as the
/// previous fetch ends, not after that wait. Fetches still follow one another, so messages
/// arrive in stream order (the ack-floor bookkeeping of `run_with_consumer` relies on
/// it). At most one: with the writer's queue, the batch being written and the batch being
/// routed, `IngestConfig::check` bounds what is delivered and not yet acked.
pub(crate) struct Prefetch {
    task: tokio::task::JoinHandle<Result<Vec<jetstream::Message>, Error>>,
}

impl Prefetch {
    pub(crate) fn start(consumer: &consumer::PullConsumer, config: &IngestConfig) -> Prefetch {
        let (consumer, batch_len_max, expiry) =
            (consumer.clone(), config.batch_len_max, config.fetch_expiry);
        Prefetch {
            task: tokio::spawn(async move { fetch(&consumer, batch_len_max, expiry).await }),
        }
    }

    /// The fetch's messages (an empty batch when it expired with none). The bench waits
    /// on it; ingest races it against its stop.
    #[cfg(feature = "bench")]
    pub(crate) async fn take(self) -> Result<Vec<jetstream::Message>, Error> {
        self.task
            .await
            .map_err(|e| Error::Writer(format!("fetch task: {e}")))?
    }
}

/// One bounded fetch: at most `batch_len_max` messages, waiting at most `expiry`.
async fn fetch(
    consumer: &consumer::PullConsumer,
    batch_len_max: usize,
    expiry: Duration,
) -> Result<Vec<jetstream::Message>, Error> {
    let mut batch = consumer
        .fetch()
        .max_messages(batch_len_max)
        .expires(expiry)
        .messages()
        .await
        .map_err(|e| Error::nats("fetch", e))?;
    let mut msgs = Vec::with_capacity(batch_len_max);
    while let Some(m) = batch.next().await {
        match m {
            Ok(m) => msgs.push(m),
            Err(e) => {
                // A status error ends the fetch; what arrived before it is kept and
                // processed, the rest will be delivered again.
                tracing::warn!(error = %e, received = msgs.len(), "fetch ended with an error");
                break;
            }
        }
    }
    Ok(msgs)
}

/// Where the ack loop counts alerts, its clock, and with several nodes the alerts lease.
#[derive(Clone)]
struct Alerting {
    log: crate::alerts::AlertLog,
    clock: fn() -> i64,
    lease: Option<crate::lease::Shared>,
}

/// Whether this node publishes an alert, and with which headers.
enum Publish {
    /// Publish it with these headers.
    With(async_nats::HeaderMap),
    /// Another node holds the alerts lease.
    NotHolder,
    /// An earlier holder published for this stream seq or a later one.
    PublishedBefore(u64),
}

impl Alerting {
    /// How an alert goes out. One node: without headers. Several: a node's own state
    /// (`node_local`) with the node's name; any other alert only from the holder of the
    /// alerts lease, confirmed at its revision (`lease::Lease::confirm`), and only past
    /// the stream seq an earlier holder published for (`lease::published_through`).
    async fn publish_how(&self, client: &async_nats::Client, alert: &Alert) -> Publish {
        let Some(lease) = &self.lease else {
            return Publish::With(async_nats::HeaderMap::new());
        };
        let mut lease = lease.lock().await;
        if crate::alerts::node_local(alert.kind) {
            let mut h = async_nats::HeaderMap::new();
            h.insert(crate::lease::LEASE_NODE_HEADER, lease.node());
            return Publish::With(h);
        }
        let Some(revision) = lease.confirm().await else {
            return Publish::NotHolder;
        };
        let seq = alert.last_stream_seq;
        let js = jetstream::new(client.clone());
        match crate::lease::published_through(&js, "alerts").await {
            Some(through) if seq > 0 && seq <= through => Publish::PublishedBefore(through),
            _ => Publish::With(lease.headers(revision)),
        }
    }
}

/// Counts `raised` into the log and publishes each alert that opens a window. Advisory,
/// like heads: a failed publish is logged, the alert stays in the log. With several
/// nodes, only the alerts lease's holder publishes what every node raises alike.
async fn publish_alerts(client: &async_nats::Client, a: &Alerting, raised: Vec<Raised>) {
    for r in raised {
        let Some(alert) = a.log.raise(r, (a.clock)()) else {
            continue;
        };
        tracing::error!(table = %alert.table, kind = alert.kind.as_str(), detail = %alert.detail, "ALERT");
        let headers = match a.publish_how(client, &alert).await {
            Publish::With(h) => h,
            Publish::NotHolder => {
                tracing::info!(table = %alert.table, kind = alert.kind.as_str(), "alert kept, not published: another node holds the alerts lease");
                continue;
            }
            Publish::PublishedBefore(through) => {
                tracing::info!(table = %alert.table, kind = alert.kind.as_str(), stream_seq = alert.last_stream_seq, through, "alert kept, not published: an earlier lease holder published past it");
                continue;
            }
        };
        let leased = headers.get(crate::lease::LEASE_REVISION_HEADER).is_some();
        let subject = subjects::alerts_subject(&alert.table, alert.kind);
        let json = match serde_json::to_vec(&alert) {
            Ok(j) => j,
            Err(e) => {
                tracing::error!(error = %e, "alert not serialisable");
                continue;
            }
        };
        if let Err(e) = client
            .publish_with_headers(subject, headers, json.into())
            .await
        {
            tracing::warn!(table = %alert.table, error = %e, "alert not published");
        } else if leased && alert.last_stream_seq > 0 {
            let js = jetstream::new(client.clone());
            crate::lease::mark_published(&js, "alerts", alert.last_stream_seq).await;
        }
    }
}

/// Publishes the alerts the writer raises outside a batch's reply (a pause, a fence).
async fn alert_loop(client: async_nats::Client, mut raised: mpsc::Receiver<Raised>, a: Alerting) {
    while let Some(r) = raised.recv().await {
        publish_alerts(&client, &a, vec![r]).await;
    }
}

/// Acks each durable batch (its last message) in write order and publishes the heads and
/// alerts.
async fn ack_loop(
    client: async_nats::Client,
    mut done: mpsc::Receiver<Result<Written, Error>>,
    alerting: Alerting,
) -> Result<IngestReport, Error> {
    let mut report = IngestReport::default();
    while let Some(written) = done.recv().await {
        let w = written?;
        w.ack.ack().await.map_err(|e| Error::Nats {
            op: "ack",
            source: e,
        })?;
        for head in &w.heads {
            match serde_json::to_vec(head) {
                Ok(json) => {
                    if let Err(e) = client
                        .publish(subjects::head_subject(&head.table), json.into())
                        .await
                    {
                        // The head is advisory (devices trim outboxes with it); the next
                        // flush publishes it again. Not a reason to stop ingesting.
                        tracing::warn!(table = %head.table, error = %e, "head not published");
                    }
                }
                Err(e) => tracing::error!(table = %head.table, error = %e, "head not serialisable"),
            }
        }
        publish_alerts(&client, &alerting, w.alerts).await;
        report.batches += w.tally.batches;
        report.messages += w.tally.messages;
        report.stored += w.tally.stored;
        report.duplicates += w.tally.duplicates;
        report.held += w.tally.held;
        report.quarantined += w.tally.quarantined;
        report.repeats += w.tally.repeats;
        report.overflowed += w.tally.overflowed;
        report.fenced += w.tally.fenced;
        report.checkpoints_kept += w.tally.checkpoints_kept;
        report.checkpoints_refused += w.tally.checkpoints_refused;
        tracing::debug!(batch = w.batch_no, "batch acked");
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Read-back tells a sequence the stream no longer holds (counted missing, acked past)
    /// from a read that failed (an error: ingest stops, nothing past it is acked). Found in
    /// review: every failure counted as missing, so a timeout during a leader election
    /// acked a message the stream still held, unseen. Against a real nats-server: a stored
    /// message, a deleted one, and a stream that is gone (a JetStream error, not "no
    /// message").
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn read_back_counts_only_a_deleted_sequence_as_missing() {
        let server = natsd::NatsServer::start().expect("nats-server");
        let client = async_nats::connect(server.url()).await.expect("connect");
        let js = jetstream::new(client);
        let stream = ensure_stream(&js).await.expect("stream");
        for i in 0..3u8 {
            js.publish("tables.T-RB.events", vec![i].into())
                .await
                .expect("publish")
                .await
                .expect("ack");
        }
        stream.delete_message(2).await.expect("delete");

        let one = read_back_one(&stream, 1).await.expect("read back");
        assert_eq!(one.map(|m| m.payload.to_vec()), Some(vec![0]));
        assert!(read_back_one(&stream, 2)
            .await
            .expect("a deleted sequence is not an error")
            .is_none());

        js.delete_stream(subjects::STREAM)
            .await
            .expect("delete stream");
        let started = std::time::Instant::now();
        let failed = read_back_one(&stream, 3).await;
        assert!(
            matches!(&failed, Err(Error::Nats { op, .. }) if op.contains("read back")),
            "{failed:?}"
        );
        // Retried before giving up: pauses of 100, 200, 400 and 800 ms.
        assert!(started.elapsed() >= Duration::from_millis(1_500));
    }

    #[test]
    fn a_url_list_names_each_server() {
        assert_eq!(servers("nats://127.0.0.1:4222"), ["nats://127.0.0.1:4222"]);
        assert_eq!(
            servers("nats://127.0.0.1:1, nats://127.0.0.1:2,nats://127.0.0.1:3"),
            [
                "nats://127.0.0.1:1",
                "nats://127.0.0.1:2",
                "nats://127.0.0.1:3"
            ]
        );
    }

    #[test]
    fn stream_replicas_are_bounded() {
        let mut c = IngestConfig::new("nats://127.0.0.1:4222");
        assert_eq!(c.stream_replicas, 1);
        assert!(c.check().is_ok());
        c.stream_replicas = 3;
        assert!(c.check().is_ok());
        for bad in [0, 6] {
            c.stream_replicas = bad;
            assert!(c.check().is_err(), "{bad} replicas accepted");
        }
    }
}
