//! What ingest shows operators while it runs: messages by outcome, the time each commit
//! takes, JetStream's pending count and the bus connection, for `GET /metrics` and
//! `GET /ready` (served by `api::ops`).
//!
//! Invariants: counting never blocks the writer (relaxed atomics, one short lock for the
//! last failure); every label set is fixed here, so a scrape's size does not depend on
//! the input; counters only rise, from zero at process start.

use crate::IngestReport;
use schemas::api::NotReady;
use schemas::metrics::{family, sample, Histogram, Kind};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Upper bounds of the commit latency histogram: 0.5 ms to 10 s.
pub const COMMIT_BUCKETS_NS: [u64; 14] = [
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// How often the consumer's pending count is read from JetStream.
pub const PENDING_POLL: Duration = Duration::from_secs(5);

/// Longest time without a successful commit while messages wait before `/ready` fails.
pub const READY_COMMIT_AGE_MAX: Duration = Duration::from_secs(30);

/// Most bytes of a failure kept for `/ready`.
const FAILURE_LEN_MAX: usize = 512;

/// Message outcomes, in the order of `Inner::outcomes`; the `outcome` label's values.
pub const OUTCOMES: [&str; 8] = [
    "stored",
    "duplicate",
    "held",
    "quarantined",
    "repeat",
    "overflowed",
    "checkpoint_kept",
    "checkpoint_refused",
];

/// Ingest's metrics; clones share one set (`IngestConfig::metrics`).
#[derive(Clone)]
pub struct IngestMetrics(Arc<Inner>);

struct Inner {
    outcomes: [AtomicU64; OUTCOMES.len()],
    batches: AtomicU64,
    commits: Histogram,
    commit_failures: AtomicU64,
    /// When the last commit succeeded, and the last failure if it came after it.
    last_commit: Mutex<(Option<Instant>, Option<String>)>,
    /// The consumer's pending and unacknowledged messages when last polled; -1 before.
    pending: AtomicI64,
    ack_pending: AtomicI64,
    pending_polls_failed: AtomicU64,
    /// The bus connection and when ingest attached to its consumer.
    client: OnceLock<(async_nats::Client, Instant)>,
}

impl Default for IngestMetrics {
    fn default() -> IngestMetrics {
        IngestMetrics(Arc::new(Inner {
            outcomes: Default::default(),
            batches: AtomicU64::new(0),
            commits: Histogram::new(&COMMIT_BUCKETS_NS),
            commit_failures: AtomicU64::new(0),
            last_commit: Mutex::new((None, None)),
            pending: AtomicI64::new(-1),
            ack_pending: AtomicI64::new(-1),
            pending_polls_failed: AtomicU64::new(0),
            client: OnceLock::new(),
        }))
    }
}

impl std::fmt::Debug for IngestMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IngestMetrics")
    }
}

impl IngestMetrics {
    /// Counts one group commit: its duration, and each batch's outcomes or its failure.
    /// The first failure is the one `/ready` shows.
    pub(crate) fn committed<'a>(
        &self,
        took: Duration,
        replies: impl IntoIterator<Item = Result<&'a IngestReport, &'a crate::Error>>,
    ) {
        let m = &self.0;
        m.commits
            .observe_ns(took.as_nanos().min(u64::MAX as u128) as u64);
        let mut failure = None;
        for reply in replies {
            match reply {
                Ok(tally) => self.count(tally),
                Err(e) => {
                    failure.get_or_insert(e);
                }
            }
        }
        let mut last = m.last_commit.lock().unwrap_or_else(|p| p.into_inner());
        match failure {
            None => *last = (Some(Instant::now()), None),
            Some(e) => {
                m.commit_failures.fetch_add(1, Ordering::Relaxed);
                let mut why = e.to_string();
                why.truncate(why.floor_char_boundary_compat(FAILURE_LEN_MAX));
                last.1 = Some(why);
            }
        }
    }

    fn count(&self, t: &IngestReport) {
        let each = [
            t.stored,
            t.duplicates,
            t.held,
            t.quarantined,
            t.repeats,
            t.overflowed,
            t.checkpoints_kept,
            t.checkpoints_refused,
        ];
        for (counter, n) in self.0.outcomes.iter().zip(each) {
            counter.fetch_add(n, Ordering::Relaxed);
        }
        self.0.batches.fetch_add(t.batches, Ordering::Relaxed);
    }

    /// Keeps the bus connection for `/ready`, once ingest has its consumer.
    pub(crate) fn attach(&self, client: &async_nats::Client) {
        let _ = self.0.client.set((client.clone(), Instant::now()));
    }

    /// Messages counted with `outcome` (one of `OUTCOMES`) since start.
    pub fn outcome(&self, outcome: &str) -> u64 {
        OUTCOMES
            .iter()
            .position(|o| *o == outcome)
            .map_or(0, |i| self.0.outcomes[i].load(Ordering::Relaxed))
    }

    /// Writes ingest's families in the Prometheus text format.
    pub fn render(&self, out: &mut String) {
        let m = &self.0;
        let name = "roundledger_ingest_messages_total";
        family(
            out,
            name,
            Kind::Counter,
            "Messages ingest handled since start, by outcome.",
        );
        for (outcome, n) in OUTCOMES.iter().zip(&m.outcomes) {
            sample(
                out,
                name,
                &[("outcome", outcome)],
                n.load(Ordering::Relaxed),
            );
        }
        let name = "roundledger_ingest_batches_total";
        family(
            out,
            name,
            Kind::Counter,
            "Batches appended, flushed and acknowledged.",
        );
        sample(out, name, &[], m.batches.load(Ordering::Relaxed));
        m.commits.render(
            out,
            "roundledger_ingest_flush_seconds",
            "Time to append and flush one group of batches (one durable ledger commit).",
        );
        let name = "roundledger_ingest_flush_failures_total";
        family(
            out,
            name,
            Kind::Counter,
            "Ledger commits that failed (nothing of them acked).",
        );
        sample(out, name, &[], m.commit_failures.load(Ordering::Relaxed));
        self.render_bus(out);
    }

    fn render_bus(&self, out: &mut String) {
        let m = &self.0;
        let name = "roundledger_jetstream_pending_messages";
        family(
            out,
            name,
            Kind::Gauge,
            "The ingest consumer's messages not yet delivered (num_pending), polled; -1 before the first poll.",
        );
        sample(out, name, &[], m.pending.load(Ordering::Relaxed));
        let name = "roundledger_jetstream_ack_pending_messages";
        family(
            out,
            name,
            Kind::Gauge,
            "Messages delivered to ingest and not yet acknowledged, polled.",
        );
        sample(out, name, &[], m.ack_pending.load(Ordering::Relaxed));
        let name = "roundledger_jetstream_pending_polls_failed_total";
        family(
            out,
            name,
            Kind::Counter,
            "Polls of the consumer's pending count that failed.",
        );
        sample(
            out,
            name,
            &[],
            m.pending_polls_failed.load(Ordering::Relaxed),
        );
        let name = "roundledger_nats_connected";
        family(
            out,
            name,
            Kind::Gauge,
            "1 while ingest's NATS connection is up.",
        );
        sample(out, name, &[], u8::from(self.nats_problem().is_none()));
    }

    fn nats_problem(&self) -> Option<String> {
        let Some((client, _)) = self.0.client.get() else {
            return Some("ingest has not attached to its consumer yet".into());
        };
        match client.connection_state() {
            async_nats::connection::State::Connected => None,
            s => Some(format!("connection {s}")),
        }
    }

    /// The checks `/ready` fails on for ingest: the bus connection and the last commit.
    pub fn not_ready(&self) -> Vec<NotReady> {
        let mut failed = Vec::new();
        if let Some(detail) = self.nats_problem() {
            failed.push(NotReady {
                check: "nats".into(),
                detail,
            });
        }
        if let Some(detail) = self.commit_problem() {
            failed.push(NotReady {
                check: "flush".into(),
                detail,
            });
        }
        failed
    }

    /// Why commits look stuck: the last one failed, or messages wait and none succeeded
    /// for `READY_COMMIT_AGE_MAX` (since attaching, when none has yet).
    fn commit_problem(&self) -> Option<String> {
        let m = &self.0;
        let (ok_at, failed) = m
            .last_commit
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(why) = failed {
            return Some(format!("the last ledger commit failed: {why}"));
        }
        let waiting =
            m.pending.load(Ordering::Relaxed).max(0) + m.ack_pending.load(Ordering::Relaxed).max(0);
        let since = ok_at.or_else(|| m.client.get().map(|c| c.1))?;
        let idle = since.elapsed();
        (waiting > 0 && idle > READY_COMMIT_AGE_MAX).then(|| {
            format!(
                "{waiting} messages wait and no commit succeeded for {} s",
                idle.as_secs()
            )
        })
    }
}

/// `str::floor_char_boundary`, which is not stable on the crate's minimum Rust.
trait FloorCharBoundary {
    fn floor_char_boundary_compat(&self, at: usize) -> usize;
}

impl FloorCharBoundary for String {
    fn floor_char_boundary_compat(&self, at: usize) -> usize {
        let mut at = at.min(self.len());
        while !self.is_char_boundary(at) {
            at -= 1;
        }
        at
    }
}

/// The task polling the consumer's pending counts; it stops when this is dropped (when
/// `run` returns, however it returns).
pub(crate) struct Polling(tokio::task::JoinHandle<()>);

impl Polling {
    pub(crate) fn start(
        consumer: &async_nats::jetstream::consumer::PullConsumer,
        metrics: &IngestMetrics,
    ) -> Polling {
        Polling(tokio::spawn(poll_pending(
            consumer.clone(),
            metrics.clone(),
        )))
    }
}

impl Drop for Polling {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Reads the consumer's pending counts every `PENDING_POLL`. A failed poll is counted
/// and leaves the last values.
async fn poll_pending(
    consumer: async_nats::jetstream::consumer::PullConsumer,
    metrics: IngestMetrics,
) {
    loop {
        match consumer.get_info().await {
            Ok(info) => {
                let pending = i64::try_from(info.num_pending).unwrap_or(i64::MAX);
                metrics.0.pending.store(pending, Ordering::Relaxed);
                let ack = i64::try_from(info.num_ack_pending).unwrap_or(i64::MAX);
                metrics.0.ack_pending.store(ack, Ordering::Relaxed);
            }
            Err(e) => {
                metrics
                    .0
                    .pending_polls_failed
                    .fetch_add(1, Ordering::Relaxed);
                tracing::debug!(error = %e, "polling the consumer's pending count failed");
            }
        }
        tokio::time::sleep(PENDING_POLL).await;
    }
}

/// Writes the fault state of `health` (pauses, write errors, fenced tables).
pub fn render_health(health: &crate::health::Health, out: &mut String) {
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let name = "roundledger_ingest_paused";
    family(
        out,
        name,
        Kind::Gauge,
        "1 while ingest is paused on a failed write (nothing acked).",
    );
    sample(out, name, &[], u8::from(health.is_paused()));
    let name = "roundledger_ingest_pauses_total";
    family(
        out,
        name,
        Kind::Counter,
        "Pauses on failed writes, each until a write succeeded.",
    );
    sample(out, name, &[], load(&health.pauses_total));
    let name = "roundledger_ingest_write_errors_total";
    family(
        out,
        name,
        Kind::Counter,
        "Failed attempts to append or flush a group of batches.",
    );
    sample(out, name, &[], load(&health.write_errors_total));
    let name = "roundledger_ingest_fenced_tables";
    family(
        out,
        name,
        Kind::Gauge,
        "Tables fenced now (damaged; their messages kept, not appended).",
    );
    sample(out, name, &[], load(&health.fenced_tables));
    let name = "roundledger_ingest_fenced_messages_total";
    family(
        out,
        name,
        Kind::Counter,
        "Messages of fenced tables kept as table_fenced entries or repeats.",
    );
    sample(out, name, &[], load(&health.fenced_messages_total));
}

/// The `flush` check of `/ready` while ingest is paused on a failed write.
pub fn paused(health: &crate::health::Health) -> Option<NotReady> {
    health.is_paused().then(|| NotReady {
        check: "flush".into(),
        detail: "ingest is paused: a write failed and is retried; nothing is acked".into(),
    })
}
