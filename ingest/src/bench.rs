//! The ingest benchmark: over the same pre-published messages, in the same run,
//! (a) the raw rate of a pull consumer that only fetches and acks (AckPolicy::All, same
//! batch size) and (b) roundledger's end-to-end rate (fetched -> decoded -> chain checked
//! -> stored and flushed -> acked -> head published), their ratio, and then (c) the
//! latency from publish to durable head at a paced publish rate while ingest runs.
//!
//! Signatures are on, as on a real floor: each bench table's chain opens with its
//! controller's key enrolled by an admin the ledger trusts, and the controller publishes a
//! signed checkpoint every `CHECKPOINT_EVERY` events, which (b) verifies and keeps. The
//! benchmark fails unless ingest kept every one of them.
//!
//! It needs a server whose `TABLES` stream is empty or absent (the CLI starts a private
//! one); it refuses anything else rather than mix its events with real ones.

use crate::pipeline::{consumer_config, ensure_stream, run_with_consumer, Prefetch};
use crate::{Error, IngestConfig};
use async_nats::jetstream::{self, consumer};
use futures::StreamExt;
use schemas::attest::{key_event_body, Checkpoint, KeyAction, SigningKey};
use schemas::provenance::EventSignature;
use schemas::{codec, subjects, ChainHead, DeviceId, Event, Hash32, Seq, TableId};
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Tables the benchmark's events are spread over.
const BENCH_TABLES: usize = 16;
/// A table's controller signs a checkpoint of its chain after every this many events: the
/// seeded floor's mean round length (1,079,368 events and 24,032 checkpoints, one at each
/// round close), so (b) checks signatures as often as a real floor makes it.
pub const CHECKPOINT_EVERY: u64 = 45;
/// Publish acks awaited at most at once (async-nats stalls beyond ~5,000 unawaited).
const PUBLISH_WINDOW: usize = 1024;
/// Latency phase: events published, and the pause between two of them (~10k/s).
const LATENCY_EVENTS_MAX: u64 = 20_000;
const LATENCY_PACE: Duration = Duration::from_micros(100);
/// Most rounds of (a) then (b) one run makes.
const ROUNDS_MAX: usize = 100;
/// No phase may take longer than this; a stuck phase is an error, not a hang.
const PHASE_TIMEOUT: Duration = Duration::from_secs(600);

/// (a) and (b) of one round, over the same messages. Rates are messages per second.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RoundFigures {
    /// (a) fetch + ack only.
    pub raw_secs: f64,
    pub raw_rate: f64,
    /// (b) roundledger end to end, into a fresh ledger.
    pub ingest_secs: f64,
    pub ingest_rate: f64,
    /// (b) / (a).
    pub ratio: f64,
    /// CPU each phase spent per message; `None` where `/proc` cannot tell (see `CpuMeter`).
    pub raw_cpu: Option<PhaseCpu>,
    pub ingest_cpu: Option<PhaseCpu>,
    /// The highest (b)/(a) this machine's cores allow at (b)'s CPU per message (client and
    /// server) and this round's (a): `cores / (b)'s CPU per message / (a)'s rate`. Over 1,
    /// the cores are not what holds (b) back; under it, no overlap of fetching and writing
    /// reaches (a) without spending less CPU per message.
    pub ratio_cpu_bound: Option<f64>,
}

/// CPU one phase spent per message it consumed, in microseconds: this process (the client:
/// (a)'s consumer, or ingest with its writer thread) and the nats-server it ran against.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct PhaseCpu {
    pub client_us: f64,
    /// `None` when the server's process could not be read (not started by this process).
    pub server_us: Option<f64>,
}

impl PhaseCpu {
    /// Client and server together, when both are known.
    pub fn total_us(&self) -> Option<f64> {
        self.server_us.map(|s| s + self.client_us)
    }
}

/// Reads the CPU time of this process and of the nats-server (every thread, exited ones
/// included: `utime + stime` of `/proc/<pid>/stat`, in USER_HZ ticks of 10 ms). Why CPU and
/// not only rates: on a 2-core machine the server and ingest share the cores, and a rate
/// varies by tens of percent between rounds while CPU per message varies far less; CPU per
/// message says what (b) costs and bounds what any overlap can reach (`ratio_cpu_bound`).
/// Linux only; elsewhere every reading is `None`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CpuMeter {
    server_pid: Option<u32>,
}

/// Ticks read at one moment: this process's, and the server's when known.
#[derive(Debug, Clone, Copy)]
struct CpuMark {
    client: u64,
    server: Option<u64>,
}

/// `USER_HZ`: the unit of `/proc/<pid>/stat`'s times, 100 on every Linux ABI.
const TICKS_PER_SEC: f64 = 100.0;

impl CpuMeter {
    /// `server_pid`: the nats-server's process, if this process started it. It is read
    /// only while `/proc/<pid>/comm` names `nats-server` (a wrapper script that forked
    /// would otherwise be timed in its place).
    pub(crate) fn new(server_pid: Option<u32>) -> CpuMeter {
        let server_pid = server_pid.filter(|pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            let ok = comm.trim() == "nats-server";
            if !ok {
                tracing::warn!(
                    pid,
                    comm = comm.trim(),
                    "bench: the server's CPU is not read: its process is not nats-server"
                );
            }
            ok
        });
        CpuMeter { server_pid }
    }

    fn mark(&self) -> Option<CpuMark> {
        Some(CpuMark {
            client: proc_cpu_ticks("self")?,
            server: self
                .server_pid
                .and_then(|pid| proc_cpu_ticks(&pid.to_string())),
        })
    }

    /// CPU per message since `start`, over `messages` messages.
    fn since(&self, start: Option<CpuMark>, messages: u64) -> Option<PhaseCpu> {
        let (start, now) = (start?, self.mark()?);
        let per_msg = |ticks: u64| ticks as f64 / TICKS_PER_SEC * 1e6 / messages.max(1) as f64;
        Some(PhaseCpu {
            client_us: per_msg(now.client.saturating_sub(start.client)),
            server_us: match (start.server, now.server) {
                (Some(a), Some(b)) => Some(per_msg(b.saturating_sub(a))),
                _ => None,
            },
        })
    }
}

/// `utime + stime` of `/proc/<pid>/stat`, or `None` if it cannot be read.
fn proc_cpu_ticks(pid: &str) -> Option<u64> {
    cpu_ticks_of_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// `utime + stime` of a `/proc/<pid>/stat` line: fields 14 and 15, counted after the
/// parenthesised command name (which may hold spaces and parentheses).
fn cpu_ticks_of_stat(stat: &str) -> Option<u64> {
    let after_comm = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_comm.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// The cores this process may run on (1 if unknown).
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// How the benchmark reaches the bus, and whether events are signed.
#[derive(Debug, Clone, Default)]
pub struct BenchBus {
    /// The bench's own connection (stream, raw consumer) and ingest's.
    pub ingest: bus::Access,
    /// The connection that reads durable heads.
    pub observer: bus::Access,
    /// Each bench table's device credentials as `<table>.json` (`bench_tables`), with
    /// `ingest`'s CA; `None` publishes through the bench's own connection (an open bus).
    pub device_creds_dir: Option<PathBuf>,
    /// Events carry their controller's signature, and the ledgers require it.
    pub signed_events: bool,
}

impl BenchBus {
    /// One publishing context per bench table.
    async fn devices(
        &self,
        url: &str,
        own: &jetstream::Context,
        tables: &[(TableId, Seq, Hash32)],
    ) -> Result<Vec<jetstream::Context>, Error> {
        let Some(dir) = &self.device_creds_dir else {
            return Ok(vec![own.clone(); tables.len()]);
        };
        let mut out = Vec::with_capacity(tables.len());
        for (t, _, _) in tables {
            let access = bus::Access {
                credentials: Some(dir.join(format!("{t}.json"))),
                ca_file: self.ingest.ca_file.clone(),
            };
            out.push(jetstream::new(bus::connect(url, &access).await?));
        }
        Ok(out)
    }
}

/// Figures of one benchmark run. Rates are messages per second.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BenchReport {
    /// Whether the bus had TLS and credentials.
    pub secured_bus: bool,
    /// Whether events were signed and their signatures checked.
    pub signed_events: bool,
    /// Messages each of (a) and (b) consumed: `events` and `checkpoints`.
    pub messages: u64,
    /// Table events among the messages.
    pub events: u64,
    /// Signed checkpoints among the messages; (b) verified and kept every one.
    pub checkpoints: u64,
    /// Most messages (b) takes in one batch.
    pub batch_len_max: usize,
    /// Tables the events came from.
    pub tables: usize,
    /// Mean length of one message on the wire.
    pub event_len_mean_bytes: u64,
    /// Rate at which the benchmark published its messages.
    pub publish_rate: f64,
    /// Each round: (a) then (b), each with a fresh consumer (and (b) a fresh ledger).
    pub rounds: Vec<RoundFigures>,
    /// Medians over the rounds. The raw rate alone varies by up to 40% between rounds on
    /// a 2-core machine, so one round's ratio says little.
    pub raw_rate: f64,
    /// Median rate of (b), ingest verifying and storing.
    pub ingest_rate: f64,
    /// Median of the rounds' ratios (BENCHMARKS.md tracks it).
    pub ratio: f64,
    /// Cores this process may use (`ratio_cpu_bound`'s numerator).
    pub cores: usize,
    /// Medians over the rounds of `RoundFigures::raw_cpu`, `ingest_cpu` and
    /// `ratio_cpu_bound` (each field's own median); `None` where `/proc` cannot tell.
    pub raw_cpu: Option<PhaseCpu>,
    /// Median CPU of (b) per message.
    pub ingest_cpu: Option<PhaseCpu>,
    /// Median bound on the ratio that CPU alone sets.
    pub ratio_cpu_bound: Option<f64>,
    /// (c) events timed from publish to the durable head that covers them.
    pub latency_events: u64,
    /// Rate at which (c) published.
    pub latency_publish_rate: f64,
    /// Median publish-to-durable-head time of (c), microseconds.
    pub latency_p50_us: u64,
    /// 99th percentile of the same, microseconds.
    pub latency_p99_us: u64,
    /// Longest of the same, microseconds.
    pub latency_max_us: u64,
}

/// One message the benchmark publishes.
pub(crate) struct Outgoing {
    subject: String,
    /// `Nats-Msg-Id`.
    id: String,
    bytes: Vec<u8>,
    /// The event's (table index, seq); `None` for a checkpoint.
    event: Option<(usize, u64)>,
    /// The controller's signature headers (`schemas::provenance`), when it signs events.
    headers: Vec<(&'static str, String)>,
}

/// Chains of `BENCH_TABLES` tables, continued across phases.
pub(crate) struct Chains {
    pub(crate) tables: Vec<(TableId, Seq, Hash32)>,
    /// Each table's controller key, enrolled by `admin` in the table's first event.
    signers: Vec<SigningKey>,
    admin: SigningKey,
    device: DeviceId,
    bytes_total: u64,
    events: u64,
    checkpoints: u64,
    /// Whether each event carries its controller's signature.
    sign_events: bool,
}

/// The bench tables' ids in this process (`bench_ingest` plays these), so that a
/// secured bus can issue their devices' credentials first.
pub fn bench_tables() -> Vec<TableId> {
    let tag = std::process::id() % 10_000;
    (0..BENCH_TABLES)
        .filter_map(|i| TableId::new(format!("BENCH{tag}-{i:02}")).ok())
        .collect()
}

impl Chains {
    pub(crate) fn new(run_tag: &str) -> Result<Chains, Error> {
        let bad = |e: schemas::ids::IdError| Error::Bench(format!("bench ids: {e}"));
        let tables = (0..BENCH_TABLES)
            .map(|i| {
                Ok((
                    TableId::new(format!("BENCH{run_tag}-{i:02}")).map_err(bad)?,
                    Seq(0),
                    Hash32::ZERO,
                ))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let signers = tables
            .iter()
            .map(|(t, _, _)| SigningKey::derive_for_simulation(&format!("bench controller {t}")))
            .collect();
        Ok(Chains {
            tables,
            signers,
            admin: SigningKey::derive_for_simulation("roundledger bench admin"),
            device: DeviceId::new("bench-ctl").map_err(bad)?,
            bytes_total: 0,
            events: 0,
            checkpoints: 0,
            sign_events: false,
        })
    }

    /// Each event signed by its table's controller (`signed`), or none.
    pub(crate) fn signing(mut self, signed: bool) -> Chains {
        self.sign_events = signed;
        self
    }

    /// The admin key the bench ledgers must trust for the enrollments to hold.
    pub(crate) fn admin(&self) -> schemas::attest::PublicKey {
        self.admin.public()
    }

    /// Table `i`'s next messages: the controller's signed checkpoint of the chain so far
    /// when it has just reached a multiple of `CHECKPOINT_EVERY` (sent before the next
    /// event, so a table's last message is always an event and its durable head covers
    /// every checkpoint), then the next event, about 200 bytes. The first event enrolls
    /// the controller's key.
    pub(crate) fn next(&mut self, i: usize) -> Vec<Outgoing> {
        let (table, seq, prev) = &mut self.tables[i];
        let mut out = Vec::with_capacity(2);
        let now = crate::system_clock_ns();
        if seq.0 > 0 && seq.0 % CHECKPOINT_EVERY == 0 {
            let c = Checkpoint::sign(
                &self.signers[i],
                table.clone(),
                self.device.clone(),
                *seq,
                *prev,
                now,
            );
            let bytes = c.to_bincode();
            out.push(Outgoing {
                subject: subjects::checkpoints_subject(table),
                id: subjects::checkpoint_msg_id(table, *seq, &bytes),
                bytes,
                event: None,
                headers: Vec::new(),
            });
            self.checkpoints += 1;
        }
        *seq = Seq(seq.0 + 1);
        let mut event = Event::filler(table.clone(), self.device.clone(), *seq, *prev, now);
        if seq.0 == 1 {
            event.round = None;
            event.body = key_event_body(
                &self.admin,
                table,
                self.device.clone(),
                self.signers[i].public(),
                KeyAction::Enroll,
            );
        }
        let bytes = codec::to_bincode(&event);
        *prev = schemas::event_hash(prev, &bytes);
        self.bytes_total += bytes.len() as u64;
        self.events += 1;
        // The first event enrolls the key that signs it: no enrollment header needed.
        let headers = match self.sign_events {
            true => {
                EventSignature::sign(&self.signers[i], table, &self.device, &bytes).to_headers()
            }
            false => Vec::new(),
        };
        out.push(Outgoing {
            subject: subjects::events_subject(table),
            id: subjects::msg_id(table, *seq, &bytes),
            bytes,
            event: Some((i, seq.0)),
            headers,
        });
        out
    }

    /// Table `i`'s next event, and before it the checkpoint that is due, if one is.
    #[cfg(test)]
    pub(crate) fn next_event(&mut self, i: usize) -> (Option<Vec<u8>>, Vec<u8>) {
        let mut out = self.next(i);
        let event = out.pop().expect("next always ends with the event");
        assert!(event.event.is_some());
        let checkpoint = out.pop().map(|c| {
            assert!(c.event.is_none());
            c.bytes
        });
        (checkpoint, event.bytes)
    }

    /// Every message published so far.
    fn messages(&self) -> u64 {
        self.events + self.checkpoints
    }
}

/// Publishes one message with its `Nats-Msg-Id`, keeping at most `PUBLISH_WINDOW` acks
/// unawaited.
async fn publish(
    js: &jetstream::Context,
    window: &mut VecDeque<jetstream::context::PublishAckFuture>,
    m: Outgoing,
) -> Result<(), Error> {
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Nats-Msg-Id", m.id.as_str());
    for (name, value) in &m.headers {
        headers.insert(*name, value.as_str());
    }
    let ack = js
        .publish_with_headers(m.subject, headers, m.bytes.into())
        .await
        .map_err(|e| Error::nats("bench publish", e))?;
    window.push_back(ack);
    if window.len() >= PUBLISH_WINDOW {
        if let Some(a) = window.pop_front() {
            a.await.map_err(|e| Error::nats("bench publish ack", e))?;
        }
    }
    Ok(())
}

/// Whether ingest kept every checkpoint published so far and refused none: a bench whose
/// signatures were not checked would measure something else.
fn check_checkpoints(report: &crate::IngestReport, chains: &Chains) -> Result<(), Error> {
    if report.checkpoints_kept != chains.checkpoints || report.checkpoints_refused != 0 {
        return Err(Error::Bench(format!(
            "ingest kept {} of {} signed checkpoints and refused {}",
            report.checkpoints_kept, chains.checkpoints, report.checkpoints_refused
        )));
    }
    Ok(())
}

/// Publishes `n` events (and the checkpoints among them) round-robin over the tables,
/// each through its table's device connection (`devices[i]`).
async fn publish_all(
    devices: &[jetstream::Context],
    chains: &mut Chains,
    n: u64,
) -> Result<(), Error> {
    let mut window = VecDeque::with_capacity(PUBLISH_WINDOW);
    for k in 0..n {
        let i = k as usize % BENCH_TABLES;
        for m in chains.next(i) {
            publish(&devices[i], &mut window, m).await?;
        }
    }
    for a in window {
        a.await.map_err(|e| Error::nats("bench publish ack", e))?;
    }
    Ok(())
}

/// (a): a fresh pull consumer configured as ingest's (AckPolicy::All) that fetches
/// `config.batch_len_max` at a time, with the next fetch in flight while it acks (as
/// ingest's `Prefetch`), and acks the last message of each fetch, until `messages` were
/// delivered. Returns seconds, and the CPU it took per message.
async fn raw_consume(
    js: &jetstream::Context,
    stream: &jetstream::stream::Stream,
    messages: u64,
    config: &IngestConfig,
    round: usize,
    meter: &CpuMeter,
) -> Result<(f64, Option<PhaseCpu>), Error> {
    let name = &format!("bench-raw-{round}");
    // Ingest's own consumer configuration (same ack policy, filters, bounds and batch
    // size) and its way of fetching, so that the two differ only in what the client does
    // with a message.
    let consumer: consumer::PullConsumer = stream
        .create_consumer(consumer_config(name, config))
        .await
        .map_err(|e| Error::nats("bench raw consumer", e))?;
    let start = Instant::now();
    let cpu_start = meter.mark();
    let mut seen = 0u64;
    let mut prefetch = Prefetch::start(&consumer, config);
    while seen < messages {
        if start.elapsed() > PHASE_TIMEOUT {
            return Err(Error::Bench(format!(
                "raw consumer stuck at {seen}/{messages}"
            )));
        }
        let fetched = prefetch.take().await?;
        prefetch = Prefetch::start(&consumer, config);
        seen += fetched.len() as u64;
        if let Some(m) = fetched.last() {
            m.ack().await.map_err(|e| Error::Nats {
                op: "bench raw ack",
                source: e,
            })?;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let cpu = meter.since(cpu_start, messages);
    // The fetch still in flight finds nothing (nothing more is published) and expires;
    // awaited, untimed, before the consumer is deleted.
    let _ = prefetch.take().await;
    js.delete_consumer_from_stream(name, subjects::STREAM)
        .await
        .map_err(|e| Error::nats("bench delete raw consumer", e))?;
    Ok((secs, cpu))
}

/// Heads seen so far: the highest published head per table.
type Reached = BTreeMap<TableId, u64>;

fn note_head(reached: &mut Reached, head: &ChainHead) {
    let r = reached.entry(head.table.clone()).or_insert(0);
    *r = (*r).max(head.seq.0);
}

/// Waits until every table's published head reached `target[table]`, counting the heads
/// already seen in `reached` (a head that arrived before the wait began is not sent
/// again: forgetting it hung the latency phase whenever ingest caught up with a table
/// before the last publish). `on_head` sees every head message (the latency phase
/// times events with it).
async fn wait_heads(
    heads: &mut async_nats::Subscriber,
    target: &BTreeMap<TableId, u64>,
    reached: &mut Reached,
    mut on_head: impl FnMut(&ChainHead),
) -> Result<(), Error> {
    let deadline = tokio::time::Instant::now() + PHASE_TIMEOUT;
    while target
        .iter()
        .any(|(t, s)| reached.get(t).copied().unwrap_or(0) < *s)
    {
        let msg = tokio::time::timeout_at(deadline, heads.next())
            .await
            .map_err(|_| Error::Bench(format!("heads did not reach {target:?}: {reached:?}")))?
            .ok_or_else(|| Error::Bench("head subscription ended".to_string()))?;
        let head: ChainHead = serde_json::from_slice(&msg.payload)
            .map_err(|e| Error::Bench(format!("bad head JSON: {e}")))?;
        on_head(&head);
        note_head(reached, &head);
    }
    Ok(())
}

/// Why the benchmark stops when its ingest ended while heads were awaited: ingest's own
/// error (a configuration it refuses, a ledger failure), not the phase timeout ten
/// minutes later.
fn stopped_early(
    ended: Result<Result<crate::IngestReport, Error>, tokio::task::JoinError>,
) -> Error {
    match ended {
        Ok(Err(e)) => e,
        Ok(Ok(report)) => Error::Bench(format!(
            "ingest stopped before its heads reached the published events: {report:?}"
        )),
        Err(e) => Error::Bench(format!("ingest task: {e}")),
    }
}

fn target_of(chains: &Chains) -> BTreeMap<TableId, u64> {
    chains
        .tables
        .iter()
        .map(|(t, s, _)| (t.clone(), s.0))
        .collect()
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// What (a) and (b) consume: the messages published before the rounds.
#[derive(Debug)]
struct Published {
    events: u64,
    messages: u64,
    checkpoints: u64,
    /// Messages per second.
    rate: f64,
}

/// The latency phase's figures: each event's publish-to-durable-head time.
struct Latency {
    /// Sorted, microseconds.
    latencies_us: Vec<u64>,
    publish_rate: f64,
}

/// The last round's ingest, left running for the latency phase (c).
struct Running {
    ingest: tokio::task::JoinHandle<Result<crate::IngestReport, Error>>,
    stop_tx: tokio::sync::oneshot::Sender<()>,
    heads: async_nats::Subscriber,
    reached: Reached,
}

/// What every phase shares: the connections, the published chains and ingest's config.
struct Bench<'a> {
    js: jetstream::Context,
    client: async_nats::Client,
    stream: jetstream::stream::Stream,
    devices: Vec<jetstream::Context>,
    chains: Chains,
    config: IngestConfig,
    meter: CpuMeter,
    ledger_dir: &'a Path,
    secured_bus: bool,
    signed_events: bool,
}

/// Runs the benchmark against the server at `url` (its `TABLES` stream must be empty or
/// absent) with new ledgers under `ledger_dir`: publishes `events` events (and a signed
/// checkpoint after every `CHECKPOINT_EVERY` of a table's), measures (a)
/// and then (b) over them `rounds` times, then (c) latency over up to 20,000 more events
/// paced at ~10k/s. `server_pid`: the server's process, when this process started it, so
/// that each phase's CPU is reported for the server too (`CpuMeter`).
pub async fn bench_ingest(
    url: &str,
    ledger_dir: &Path,
    events: u64,
    batch: usize,
    rounds: usize,
    server_pid: Option<u32>,
    bb: &BenchBus,
) -> Result<BenchReport, Error> {
    if events == 0 || batch == 0 || !(1..=ROUNDS_MAX).contains(&rounds) {
        return Err(Error::Bench(format!(
            "events and batch must be at least 1, rounds 1 to {ROUNDS_MAX}"
        )));
    }
    let mut b = Bench::connect(url, ledger_dir, batch, server_pid, bb).await?;
    let start = Instant::now();
    publish_all(&b.devices, &mut b.chains, events).await?;
    let published = Published {
        events,
        messages: b.chains.messages(),
        checkpoints: b.chains.checkpoints,
        rate: b.chains.messages() as f64 / start.elapsed().as_secs_f64(),
    };
    tracing::info!(?published, "bench: published");
    let messages = published.messages;

    let mut figures = Vec::with_capacity(rounds);
    let mut running = None;
    for round in 1..=rounds {
        let (raw_secs, raw_cpu) =
            raw_consume(&b.js, &b.stream, messages, &b.config, round, &b.meter).await?;
        tracing::info!(round, raw_secs, "bench: raw consume done");
        let (figure, left) = b
            .ingest_round(round, raw_secs, raw_cpu, round == rounds)
            .await?;
        figures.push(figure);
        running = left;
    }
    let Some(running) = running else {
        return Err(Error::Bench("no round ran".to_string()));
    };
    let latency = b.latency(running, LATENCY_EVENTS_MAX.min(events)).await?;
    Ok(b.summarize(&published, figures, latency))
}

impl<'a> Bench<'a> {
    /// Connects, checks that the stream is empty and makes the chains and devices.
    async fn connect(
        url: &str,
        ledger_dir: &'a Path,
        batch: usize,
        server_pid: Option<u32>,
        bb: &BenchBus,
    ) -> Result<Bench<'a>, Error> {
        let js = jetstream::new(bus::connect(url, &bb.ingest).await?);
        let client = bus::connect(url, &bb.observer).await?;
        let mut stream = ensure_stream(&js).await?;
        let already = stream
            .info()
            .await
            .map_err(|e| Error::nats("bench stream info", e))?
            .state
            .messages;
        if already != 0 {
            return Err(Error::Bench(format!(
                "stream {} already holds {already} messages; run the benchmark on a private server",
                subjects::STREAM
            )));
        }
        let tag = format!("{}", std::process::id() % 10_000);
        let chains = Chains::new(&tag)?.signing(bb.signed_events);
        let devices = bb.devices(url, &js, &chains.tables).await?;
        let mut config = IngestConfig::new(url);
        config.access = bb.ingest.clone();
        config.batch_len_max = batch;
        config.ack_pending_max = (batch * 8) as i64;
        Ok(Bench {
            js,
            client,
            stream,
            devices,
            chains,
            config,
            meter: CpuMeter::new(server_pid),
            ledger_dir,
            secured_bus: bb.device_creds_dir.is_some(),
            signed_events: bb.signed_events,
        })
    }

    /// A fresh ledger for one round of (b), trusting the bench's admin key.
    fn ledger(&self, dir: &Path) -> Result<Arc<ledger::Ledger>, Error> {
        let ledger = Arc::new(ledger::Ledger::open(dir).map_err(Error::LedgerOther)?);
        ledger
            .writer()
            .trust_admin_keys([self.chains.admin()])
            .map_err(Error::LedgerOther)?;
        if self.signed_events {
            ledger
                .writer()
                .require_signed_events()
                .map_err(Error::LedgerOther)?;
        }
        Ok(ledger)
    }

    /// (b): ingest with its own consumer over the published messages, into a fresh ledger.
    /// The last round's ingest keeps running for (c) and is returned.
    async fn ingest_round(
        &self,
        round: usize,
        raw_secs: f64,
        raw_cpu: Option<PhaseCpu>,
        last: bool,
    ) -> Result<(RoundFigures, Option<Running>), Error> {
        let messages = self.chains.messages();
        let dir = self.ledger_dir.join(format!("round-{round}"));
        let ledger = self.ledger(&dir)?;
        let mut heads = self
            .client
            .subscribe(subjects::HEADS_WILDCARD)
            .await
            .map_err(|e| Error::nats("bench subscribe heads", e))?;
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let consumer = format!("bench-ingest-{round}");
        // (b) is timed from the moment ingest is set up (connected, stream and consumer
        // ensured, writer started) to the last durable head, as (a) is from its
        // consumer's creation to its last fetch: the one-off setup is in neither.
        let started = Arc::new(OnceLock::new());
        let mut ingest = self.spawn_ingest(ledger, &consumer, stop_rx, started.clone());
        let mut reached = Reached::new();
        let target = target_of(&self.chains);
        let waited = tokio::select! {
            waited = wait_heads(&mut heads, &target, &mut reached, |_| {}) => waited,
            ended = &mut ingest => return Err(stopped_early(ended)),
        };
        let Some((started, cpu_start)) = started.get() else {
            return Err(Error::Bench(
                "ingest caught up before it was set up".to_string(),
            ));
        };
        let ingest_secs = started.elapsed().as_secs_f64();
        let ingest_cpu = self.meter.since(*cpu_start, messages);
        if let Err(e) = waited {
            let _ = stop_tx.send(());
            let _ = ingest.await;
            return Err(e);
        }
        tracing::info!(round, ingest_secs, "bench: ingest caught up");
        let figure = round_figures(messages, raw_secs, raw_cpu, ingest_secs, ingest_cpu);
        if last {
            return Ok((
                figure,
                Some(Running {
                    ingest,
                    stop_tx,
                    heads,
                    reached,
                }),
            ));
        }
        self.end_round(ingest, stop_tx, &consumer, &dir).await?;
        // Heads of this round still in flight must not count in the next one.
        drop(heads);
        Ok((figure, None))
    }

    /// Starts ingest on `consumer`; `started` takes the time and CPU when it is set up.
    fn spawn_ingest(
        &self,
        ledger: Arc<ledger::Ledger>,
        consumer: &str,
        stop_rx: tokio::sync::oneshot::Receiver<()>,
        started: Arc<OnceLock<(Instant, Option<CpuMark>)>>,
    ) -> tokio::task::JoinHandle<Result<crate::IngestReport, Error>> {
        let (config, consumer, meter) = (self.config.clone(), consumer.to_string(), self.meter);
        tokio::spawn(async move {
            let ready = move || {
                let _ = started.set((Instant::now(), meter.mark()));
            };
            run_with_consumer(config, ledger, &consumer, ready, async {
                let _ = stop_rx.await;
            })
            .await
        })
    }

    /// Stops a round's ingest, checks its checkpoints, and removes its consumer and ledger.
    async fn end_round(
        &self,
        ingest: tokio::task::JoinHandle<Result<crate::IngestReport, Error>>,
        stop_tx: tokio::sync::oneshot::Sender<()>,
        consumer: &str,
        dir: &Path,
    ) -> Result<(), Error> {
        let _ = stop_tx.send(());
        let report = ingest
            .await
            .map_err(|e| Error::Bench(format!("ingest task: {e}")))??;
        check_checkpoints(&report, &self.chains)?;
        self.js
            .delete_consumer_from_stream(consumer, subjects::STREAM)
            .await
            .map_err(|e| Error::nats("bench delete ingest consumer", e))?;
        let _ = std::fs::remove_dir_all(dir);
        Ok(())
    }

    /// (c): paced publishes while ingest runs; each event's latency ends when a head at or
    /// past its sequence arrives. Stops ingest at the end and checks its checkpoints.
    async fn latency(&mut self, running: Running, lat_n: u64) -> Result<Latency, Error> {
        let Running {
            mut ingest,
            stop_tx,
            mut heads,
            mut reached,
        } = running;
        let mut sent: BTreeMap<(TableId, u64), Instant> = BTreeMap::new();
        let mut latencies_us = Vec::with_capacity(lat_n as usize);
        let lat_start = Instant::now();
        let mut window = VecDeque::with_capacity(PUBLISH_WINDOW);
        let mut tick = tokio::time::interval(LATENCY_PACE);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        let mut k = 0u64;
        while k < lat_n {
            tokio::select! {
                _ = tick.tick() => {
                    self.publish_timed(k, &mut window, &mut sent).await?;
                    k += 1;
                }
                Some(msg) = heads.next() => {
                    if let Ok(head) = serde_json::from_slice::<ChainHead>(&msg.payload) {
                        time_head(&head, &mut sent, &mut latencies_us);
                        note_head(&mut reached, &head);
                    }
                }
                ended = &mut ingest => return Err(stopped_early(ended)),
            }
        }
        let publish_rate = lat_n as f64 / lat_start.elapsed().as_secs_f64();
        for a in window {
            a.await.map_err(|e| Error::nats("bench publish ack", e))?;
        }
        let target = target_of(&self.chains);
        let on_head = |h: &ChainHead| time_head(h, &mut sent, &mut latencies_us);
        let waited = tokio::select! {
            waited = wait_heads(&mut heads, &target, &mut reached, on_head) => waited,
            ended = &mut ingest => return Err(stopped_early(ended)),
        };
        let _ = stop_tx.send(());
        let report = ingest
            .await
            .map_err(|e| Error::Bench(format!("ingest task: {e}")))??;
        waited?;
        tracing::info!(?report, "bench: ingest stopped");
        check_checkpoints(&report, &self.chains)?;
        latencies_us.sort_unstable();
        Ok(Latency {
            latencies_us,
            publish_rate,
        })
    }

    /// Publishes the `k`th latency event (and any checkpoint after it), noting when.
    async fn publish_timed(
        &mut self,
        k: u64,
        window: &mut VecDeque<jetstream::context::PublishAckFuture>,
        sent: &mut BTreeMap<(TableId, u64), Instant>,
    ) -> Result<(), Error> {
        let i = k as usize % BENCH_TABLES;
        for m in self.chains.next(i) {
            if let Some((i, seq)) = m.event {
                sent.insert((self.chains.tables[i].0.clone(), seq), Instant::now());
            }
            publish(&self.devices[i], window, m).await?;
        }
        Ok(())
    }

    /// The report: medians over the rounds, and the latency phase's percentiles.
    fn summarize(
        &self,
        published: &Published,
        figures: Vec<RoundFigures>,
        latency: Latency,
    ) -> BenchReport {
        assert!(!figures.is_empty(), "at least one round ran");
        // The median of the rounds that have the figure (`None` if none has it).
        let median_of = |f: &dyn Fn(&RoundFigures) -> Option<f64>| {
            let mut v: Vec<f64> = figures.iter().filter_map(f).collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied()
        };
        let median = |f: fn(&RoundFigures) -> f64| median_of(&|r| Some(f(r))).unwrap_or(0.0);
        let cpu_median = |phase: fn(&RoundFigures) -> Option<PhaseCpu>| {
            Some(PhaseCpu {
                client_us: median_of(&|r| phase(r).map(|c| c.client_us))?,
                server_us: median_of(&|r| phase(r).and_then(|c| c.server_us)),
            })
        };
        let lat = &latency.latencies_us;
        BenchReport {
            secured_bus: self.secured_bus,
            signed_events: self.signed_events,
            messages: published.messages,
            events: published.events,
            checkpoints: published.checkpoints,
            batch_len_max: self.config.batch_len_max,
            tables: BENCH_TABLES,
            event_len_mean_bytes: self.chains.bytes_total / self.chains.events.max(1),
            publish_rate: published.rate,
            raw_rate: median(|r| r.raw_rate),
            ingest_rate: median(|r| r.ingest_rate),
            ratio: median(|r| r.ratio),
            cores: cores(),
            raw_cpu: cpu_median(|r| r.raw_cpu),
            ingest_cpu: cpu_median(|r| r.ingest_cpu),
            ratio_cpu_bound: median_of(&|r| r.ratio_cpu_bound),
            rounds: figures,
            latency_events: lat.len() as u64,
            latency_publish_rate: latency.publish_rate,
            latency_p50_us: percentile(lat, 0.50),
            latency_p99_us: percentile(lat, 0.99),
            latency_max_us: lat.last().copied().unwrap_or(0),
        }
    }
}

/// One round's figures from its two timings.
fn round_figures(
    messages: u64,
    raw_secs: f64,
    raw_cpu: Option<PhaseCpu>,
    ingest_secs: f64,
    ingest_cpu: Option<PhaseCpu>,
) -> RoundFigures {
    let raw_rate = messages as f64 / raw_secs;
    RoundFigures {
        raw_secs,
        raw_rate,
        ingest_secs,
        ingest_rate: messages as f64 / ingest_secs,
        ratio: raw_secs / ingest_secs,
        raw_cpu,
        ingest_cpu,
        ratio_cpu_bound: ingest_cpu
            .and_then(|c| c.total_us())
            .filter(|us| *us > 0.0)
            .map(|us| cores() as f64 * 1e6 / us / raw_rate),
    }
}

/// Ends the latency of every sent event the head covers.
fn time_head(
    head: &ChainHead,
    sent: &mut BTreeMap<(TableId, u64), Instant>,
    latencies_us: &mut Vec<u64>,
) {
    let now = Instant::now();
    let covered: Vec<(TableId, u64)> = sent
        .range((head.table.clone(), 0)..=(head.table.clone(), head.seq.0))
        .map(|(key, _)| key.clone())
        .collect();
    for key in covered {
        if let Some(t0) = sent.remove(&key) {
            latencies_us.push(now.duration_since(t0).as_micros() as u64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CPU fields are read past the command name, which may itself hold spaces and a
    /// closing parenthesis (a process may name itself anything).
    #[test]
    fn cpu_ticks_are_read_after_the_command_name() {
        let line = "3093 (nats-server) S 3091 3093 1 0 -1 4194560 9 0 0 0 171 29 0 0 20 0 9 0";
        assert_eq!(cpu_ticks_of_stat(line), Some(171 + 29));
        let odd = "77 (a) b (c) R 1 77 1 0 -1 0 0 0 0 0 5 7 0 0 20 0 1 0";
        assert_eq!(cpu_ticks_of_stat(odd), Some(5 + 7));
        assert_eq!(cpu_ticks_of_stat("77 (cut) R 1 77"), None);
        assert_eq!(cpu_ticks_of_stat("no parenthesis"), None);
    }

    /// On Linux this process's own CPU is readable and grows with work done.
    #[test]
    #[cfg(target_os = "linux")]
    fn this_process_cpu_is_read_and_grows() {
        let meter = CpuMeter::new(None);
        let start = meter.mark();
        let (mut x, t0) = (0u64, Instant::now());
        // Spin until two 10 ms ticks are counted (a busy machine may take longer than
        // 20 ms of wall time to give them); never counting them in 10 s is the failure.
        let cpu = loop {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            let cpu = meter.since(start, 1).expect("/proc/self/stat is readable");
            if cpu.client_us >= 20_000.0 || t0.elapsed() > Duration::from_secs(10) {
                break cpu;
            }
        };
        assert!(
            cpu.client_us >= 20_000.0,
            "{cpu:?} after {:?}",
            t0.elapsed()
        );
        assert_eq!(cpu.server_us, None);
        assert_eq!(cpu.total_us(), None);
    }
}
