//! ingest: moves table events from NATS JetStream into the ledger, durable before
//! acknowledged.
//!
//! The path: a durable pull consumer (`schemas::subjects::INGEST_CONSUMER`, AckPolicy::All)
//! on the stream `schemas::subjects::STREAM` fetches bounded batches; one dedicated writer
//! thread appends each batch to the ledger (`Writer::append`, which decodes, checks the
//! subject, the chain and duplicates, checks the signed checkpoints that came with the
//! events, and quarantines what it cannot accept) and flushes once; only then is the batch acknowledged (acking its last message acks the
//! whole batch under AckPolicy::All) and each touched table's durable head published on
//! `ledger.<table>.head`.
//!
//! Invariants:
//! - Durable before acknowledged: a message is acked only after the batch holding it was
//!   appended and `flush`ed. A crash anywhere before the ack means redelivery, and the
//!   ledger recognises a redelivered event for ever (idempotent), so nothing is stored
//!   twice and nothing acknowledged is lost.
//! - Nothing is dropped: every delivered message ends up stored, recognised as a
//!   duplicate, held (sequence gap) or quarantined verbatim with a reason, and is counted.
//! - No stream message is acknowledged unseen. AckPolicy::All acks every message below the
//!   acked one, including messages delivered to an earlier process that died before
//!   storing them; so ingest tracks the next expected stream sequence from the consumer's
//!   ack floor and reads any skipped sequence back from the stream before acking past it.
//! - sled never runs on an async runtime thread (see `writer`).
//! - Everything is bounded: batch length, bytes per message (the stream's
//!   `max_message_size`), pending acks on the server, batches queued for the writer.
//!
//! What it does is counted as it happens (`metrics`: messages by outcome, commit latency,
//! the consumer's pending count) for `/metrics` and `/ready`.
//!
//! It must never: ack before flush, drop a message, re-encode an event, or block a runtime
//! thread on sled.

#![warn(missing_docs)]

pub mod alerts;
pub mod archiver;
#[cfg(feature = "bench")]
mod bench;
pub mod day_store;
pub mod edges;
pub mod health;
pub mod lease;
pub mod metrics;
mod pipeline;
pub mod records;
mod replica_kv;
pub mod replica_seals;
pub mod replica_settings;
pub mod replicas;
pub mod sealer;
pub mod signal_alerts;
pub mod stuck;
mod writer;

#[cfg(feature = "bench")]
pub use bench::{bench_ingest, bench_tables, BenchBus, BenchReport};
pub use pipeline::{
    consumer_config, ensure_consumer, ensure_stream, ensure_stream_replicated, run, servers,
};

use std::time::Duration;

/// The default of `IngestConfig::stuck_after`: five minutes, longer than a device outbox's
/// republish wait at its longest, so a gap it fills raises nothing.
pub const STUCK_AFTER_DEFAULT: Duration = Duration::from_secs(300);

/// JetStream's de-duplication window on `Nats-Msg-Id` (`<table>:<seq>:<hash>`). The ledger
/// recognises duplicates for ever; this only saves the work of storing and re-checking
/// quick republishes.
pub const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);

/// How ingest runs. `IngestConfig::new(url)` gives the defaults.
#[derive(Debug, Clone)]
pub struct IngestConfig {
    /// NATS server URL, e.g. `nats://127.0.0.1:4222`, or the urls of a cluster's nodes
    /// separated by commas: the client connects to one and, when it goes, reconnects to
    /// another.
    pub nats_url: String,
    /// Ingest's credentials on the bus and the CA of its TLS (`bus::Access`); the
    /// default connects with neither, to an open bus.
    pub access: bus::Access,
    /// Replicas of the stream (1 to 5): 1 on a single server, 3 on a 3-node cluster. A
    /// stream with fewer is raised to this; one with more is left alone (ingest never
    /// lowers the stream's redundancy).
    pub stream_replicas: usize,
    /// Most messages fetched, appended and flushed as one batch.
    pub batch_len_max: usize,
    /// How long one fetch waits for messages before returning what it has. Also bounds
    /// how long shutdown waits for the fetch in progress.
    pub fetch_expiry: Duration,
    /// Most messages delivered and not yet acknowledged (server side bound).
    pub ack_pending_max: i64,
    /// Redelivery delay of an unacknowledged message.
    pub ack_wait: Duration,
    /// Batches queued for the writer thread while it writes one (bounded channel).
    pub writer_queue_len: usize,
    /// Times alerts (`alerts`: their windows and `raised_at_ns`), UTC ns;
    /// `system_clock_ns` in production. Not arrival: an event's `received_at_ns` is its
    /// JetStream stream timestamp, which an ingest outage does not move.
    pub clock: fn() -> i64,
    /// Events a table may store past its newest device-signed checkpoint before
    /// `AttestationStalled` is raised (a floor signs one every round, ~45 events).
    pub attestation_lag_max: u64,
    /// Where alerts are kept for the API (`alerts`); shared, so `serve` hands a clone to
    /// the API.
    pub alerts: alerts::AlertLog,
    /// Fault counters and state (`health`); shared, so `serve` hands a clone to the API
    /// and metrics.
    pub health: std::sync::Arc<health::Health>,
    /// Ingest's counters for `/metrics` and `/ready` (`metrics`); shared, like `alerts`.
    pub metrics: metrics::IngestMetrics,
    /// How long a table may hold events beyond a gap before `TableStuck` is raised
    /// (`stuck`).
    pub stuck_after: Duration,
    /// This ledger node's id, when several nodes replicate the stream: it names the
    /// node's durable consumer (`subjects::ingest_consumer`) and turns on the replica
    /// check (`replicas`). `None` keeps the single node's consumer `ingest`.
    pub node_id: Option<String>,
    /// What the replica check found, shared with `/metrics` and `/ready`.
    pub replicas: replicas::Replicas,
    /// How often the replica check publishes this node's heads and compares its peers'.
    pub replica_check_every: Duration,
    /// With `node_id`: how long the alerts lease (`lease`) lasts without renewal.
    pub lease_ttl: Duration,
    /// The read model's decision signals to alert on (`signal_alerts`); `serve` fills
    /// it with `--decision-analytics`. Empty by default: no signals.
    pub signals: signal_alerts::SignalInbox,
}

/// The system clock in UTC nanoseconds. Ingest is an edge: its clock stamps arrival. A
/// clock before 1970 gives 0 (the ledger's skew check then quarantines, visibly) rather
/// than a panic.
pub fn system_clock_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

impl IngestConfig {
    /// The defaults, for the bus at `nats_url`.
    pub fn new(nats_url: impl Into<String>) -> IngestConfig {
        IngestConfig {
            nats_url: nats_url.into(),
            access: bus::Access::default(),
            stream_replicas: 1,
            batch_len_max: 512,
            fetch_expiry: Duration::from_millis(100),
            ack_pending_max: 512 * 8,
            ack_wait: Duration::from_secs(30),
            writer_queue_len: 2,
            clock: system_clock_ns,
            attestation_lag_max: 1_000,
            alerts: alerts::AlertLog::default(),
            health: Default::default(),
            metrics: metrics::IngestMetrics::default(),
            stuck_after: STUCK_AFTER_DEFAULT,
            node_id: None,
            replicas: replicas::Replicas::default(),
            replica_check_every: replicas::REPLICA_CHECK_EVERY,
            lease_ttl: lease::LEASE_TTL_DEFAULT,
            signals: signal_alerts::SignalInbox::default(),
        }
    }

    /// The name of this node's durable consumer (`subjects::ingest_consumer`).
    pub fn consumer_name(&self) -> String {
        schemas::subjects::ingest_consumer(self.node_id.as_deref())
    }

    /// Messages delivered and not yet acked, at most: the writer's queue plus the batch
    /// being written, the one being routed and the one being fetched
    /// (`pipeline::Prefetch`). `ack_pending_max` must be at least this, or fetches return
    /// short batches.
    pub fn in_flight_max(&self) -> usize {
        (self.writer_queue_len + 3) * self.batch_len_max
    }

    /// This configuration fetching `batch_len_max` messages at a time, its pending-ack bound
    /// raised to fit (`in_flight_max`) when it is below.
    pub fn with_batch_len(mut self, batch_len_max: usize) -> IngestConfig {
        self.batch_len_max = batch_len_max;
        self.ack_pending_max = self.ack_pending_max.max(self.in_flight_max() as i64);
        self
    }

    /// Refuses settings that would break the pipeline's bounds.
    pub fn check(&self) -> Result<(), Error> {
        let bad = |why: &str| Err(Error::Config(why.to_string()));
        if self.batch_len_max == 0 {
            return bad("batch_len_max must be at least 1");
        }
        if !(1..=5).contains(&self.stream_replicas) {
            return bad("stream_replicas must be 1 to 5 (JetStream's limit)");
        }
        if self.writer_queue_len == 0 {
            return bad("writer_queue_len must be at least 1");
        }
        if self.stuck_after.is_zero() {
            return bad("stuck_after must be above zero");
        }
        if let Some(id) = &self.node_id {
            if let Err(e) = bus::validate_name(id) {
                return bad(&format!("node id: {e}"));
            }
        }
        if self.lease_ttl < lease::LEASE_TTL_MIN {
            return bad("lease_ttl must be at least 1 s");
        }
        if self.replica_check_every < Duration::from_millis(100) {
            return bad("replica_check_every must be at least 100 ms");
        }
        // A redelivered message was delivered at most this many messages ago, and the
        // ledger recognises an already quarantined one only among that many entries.
        let recent = ledger::quarantine::QUARANTINE_RECENT_MAX;
        if self.ack_pending_max > recent as i64 {
            return bad(&format!(
                "ack_pending_max {} is above the {recent} newest quarantine entries the ledger recognises a redelivery against",
                self.ack_pending_max
            ));
        }
        let in_flight = self.in_flight_max();
        if self.ack_pending_max < in_flight as i64 {
            return bad(&format!(
                "ack_pending_max {} is below (writer_queue_len + 3) * batch_len_max = {in_flight}",
                self.ack_pending_max
            ));
        }
        if self.fetch_expiry < Duration::from_millis(1) || self.ack_wait < Duration::from_secs(1) {
            return bad("fetch_expiry must be >= 1 ms and ack_wait >= 1 s");
        }
        Ok(())
    }
}

/// What one run of ingest did, returned at clean shutdown.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct IngestReport {
    /// Batches appended, flushed and acknowledged.
    pub batches: u64,
    /// Messages handed to the ledger (delivered plus read back from the stream).
    pub messages: u64,
    /// Events stored for the first time.
    pub stored: u64,
    /// Events the ledger already held (redelivered or republished).
    pub duplicates: u64,
    /// Events held back behind a sequence gap of their table.
    pub held: u64,
    /// Messages quarantined with a reason (undecodable, broken chain, fork, ...).
    pub quarantined: u64,
    /// Messages refused again with the bytes and reason of a quarantine entry, under a
    /// later stream seq (a device resending a refused message): counted against the entry,
    /// not stored again. Not in `quarantined`.
    pub repeats: u64,
    /// Messages refused past a quarantine bound: counted by source and reason, not stored
    /// (`ledger::quarantine::Overflow`); their bytes stay in the stream. Not in
    /// `quarantined`.
    pub overflowed: u64,
    /// Messages read back from the stream because an earlier delivery was never acked.
    pub read_back: u64,
    /// Stream sequences that could not be read back (deleted from the stream).
    pub missing_in_stream: u64,
    /// Device-signed checkpoints verified and kept.
    pub checkpoints_kept: u64,
    /// Checkpoints refused (bad signature, unknown or revoked device, not matching the
    /// chain): quarantined, also counted in `quarantined`.
    pub checkpoints_refused: u64,
    /// Admin acts (`schemas::admin`) taken at their point of the stream.
    pub admin_acts: u64,
    /// Messages of fenced tables (`ledger::fence`), kept as `table_fenced` quarantine
    /// entries or counted as their repeats; also in `quarantined` or `repeats`.
    pub fenced: u64,
}

/// Why ingest stopped or could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration is inconsistent or out of bounds.
    #[error("bad configuration: {0}")]
    Config(String),
    /// Connecting to the bus failed.
    #[error("connecting to the bus: {0}")]
    Bus(#[from] bus::Error),
    /// A NATS or JetStream operation failed.
    #[error("NATS {op}: {source}")]
    Nats {
        /// The operation.
        op: &'static str,
        /// The client's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The stream exists with settings ingest cannot use.
    #[error("stream {stream} exists with an incompatible configuration: {why}")]
    StreamMismatch {
        /// The stream's name.
        stream: String,
        /// The setting that differs.
        why: String,
    },
    /// The durable consumer exists with settings ingest cannot use.
    #[error("consumer {consumer} exists with an incompatible configuration: {why}")]
    ConsumerMismatch {
        /// The consumer's name.
        consumer: String,
        /// The setting that differs.
        why: String,
    },
    /// Storing a batch in the ledger failed; the batch stays unacknowledged.
    #[error("ledger write failed at batch {batch} (stream sequences {first}..={last}): {source}")]
    Ledger {
        /// The batch's number in this run.
        batch: u64,
        /// The batch's first stream sequence.
        first: u64,
        /// The batch's last stream sequence.
        last: u64,
        /// The ledger's error.
        #[source]
        source: ledger::Error,
    },
    /// Any other ledger operation failed.
    #[error("ledger: {0}")]
    LedgerOther(#[source] ledger::Error),
    /// The writer thread stopped or panicked.
    #[error("writer thread: {0}")]
    Writer(String),
    /// A benchmark could not run.
    #[error("benchmark: {0}")]
    Bench(String),
}

/// Runs ledger work on the blocking pool (the sealer's, the archiver's, the day store's).
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ledger::Error> + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Writer(format!("ledger task: {e}")))?
        .map_err(Error::LedgerOther)
}

impl Error {
    fn nats(op: &'static str, e: impl std::error::Error + Send + Sync + 'static) -> Error {
        Error::Nats {
            op,
            source: Box::new(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every batch size `serve --batch` can be given passes the pipeline's own check once
    /// fitted (`with_batch_len`): the pending-ack bound must fit (queue + 3) batches, or
    /// `serve --batch 820` and more would refuse to start.
    #[test]
    fn a_config_fitted_to_any_batch_size_passes_the_check() {
        for batch in (1..=ledger::APPEND_BATCH_LEN_MAX)
            .step_by(7)
            .chain([4096, 8192])
        {
            let config = IngestConfig::new("nats://127.0.0.1:4222").with_batch_len(batch);
            assert_eq!(config.batch_len_max, batch);
            assert!(
                config.check().is_ok(),
                "batch {batch}: {:?}",
                config.check()
            );
        }
        let mut short = IngestConfig::new("nats://127.0.0.1:4222").with_batch_len(1024);
        short.ack_pending_max = short.in_flight_max() as i64 - 1;
        assert!(short.check().is_err(), "below the bound is refused");
        let mut long = IngestConfig::new("nats://127.0.0.1:4222");
        long.ack_pending_max = ledger::quarantine::QUARANTINE_RECENT_MAX as i64 + 1;
        assert!(
            long.check().is_err(),
            "beyond the quarantine's memory is refused"
        );
    }
}
