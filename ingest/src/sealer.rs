//! The sealer: seals each gaming day with the House's key once it has ended and ingest
//! holds everything that arrived before its end, then publishes the seal on
//! `seals.<day>` (schemas/SEALS.md). `serve --seal-key` runs it beside ingest.
//!
//! When a day may be sealed (`may_seal`): its end plus a grace period has passed, and
//! either ingest's consumer has nothing left (no message pending or unacknowledged) or
//! the message at its ack floor reached the stream at or after the day's end. Ingest acks
//! only what is durable, and stream timestamps follow stream order, so then every message
//! that arrived before the end is in the ledger.
//!
//! Days are sealed in order: the day after the last seal, or, on a ledger with no seal,
//! the last day that has ended. The last seal is published again at start: a crash
//! between storing a seal and publishing it loses no seal.
//!
//! With several ledger nodes (`SealerConfig::lease`), every node seals its own ledger and
//! only the holder of the sealer lease (`crate::lease`) publishes, after renewing it at
//! its revision; the seal carries the revision and the node (`Lease::headers`). A node that
//! does not hold the lease publishes nothing, not even its last seal at start. It keeps
//! the seals it made meanwhile (at most `UNPUBLISHED_MAX`) and publishes them once it
//! takes the lease. Each day is claimed in the replica bucket before it is published
//! (`lease::claim`): a day another node claimed is never published again.
//!
//! The publisher also puts each sealed day's file into the day bucket
//! (`crate::day_store`), at start and after each seal, until every put succeeds.
//!
//! Invariants: sled runs on the blocking pool only; every wait is bounded by the check
//! interval or the shutdown.

use crate::blocking;
use crate::lease::Lease;
use crate::Error;
use async_nats::jetstream;
use ledger::days::{DayRule, Sealed};
use ledger::Ledger;
use schemas::attest::SigningKey;
use schemas::seal::DaySeal;
use schemas::subjects;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// How often the sealer looks whether the next day may be sealed.
pub const SEAL_CHECK_EVERY: Duration = Duration::from_secs(10);
/// How long after a day's end the sealer waits at least (`serve --seal-grace`).
pub const SEAL_GRACE_DEFAULT: Duration = Duration::from_secs(300);

/// How the sealer runs.
#[derive(Clone)]
pub struct SealerConfig {
    /// The bus to publish seals on.
    pub nats_url: String,
    /// Ingest's credentials: ingest's role publishes seals.
    pub access: bus::Access,
    /// When gaming days start and end, in the property's zone.
    pub rule: DayRule,
    /// The House's seal key.
    pub key: Arc<SigningKey>,
    /// How long after a day's end to wait before sealing it.
    pub grace: Duration,
    /// How often to look for a day to seal.
    pub check_every: Duration,
    /// UTC ns now (`crate::system_clock_ns` in production).
    pub clock: fn() -> i64,
    /// This node's ingest consumer (`IngestConfig::consumer_name`): its backlog says
    /// whether this node's ledger holds a day's arrivals.
    pub consumer: String,
    /// With several ledger nodes: the sealer lease (`crate::lease`). Every node seals its
    /// own ledger; only the lease holder publishes, after confirming its revision.
    pub lease: Option<LeaseSetup>,
}

/// The sealer's lease: which node asks, how long a holder keeps it without renewing.
#[derive(Clone, Debug)]
pub struct LeaseSetup {
    /// This node's id.
    pub node: String,
    /// The lease's TTL; the sealer checks every third of it.
    pub ttl: Duration,
    /// Replicas of the lease bucket (the stream's).
    pub replicas: usize,
}

pub use crate::lease::LEASE_REVISION_HEADER;

/// What ingest's consumer has left, as its info shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backlog {
    /// Messages not yet delivered to ingest.
    pub pending: u64,
    /// Messages delivered and not yet acknowledged.
    pub ack_pending: u64,
    /// When the message at the consumer's ack floor reached the stream, UTC ns.
    pub ack_floor_arrived_at_ns: Option<i64>,
}

/// Whether a day ending at `ends_at_ns` may be sealed at `now_ns` (see the module doc).
pub fn may_seal(ends_at_ns: i64, now_ns: i64, grace_ns: i64, backlog: &Backlog) -> bool {
    if now_ns < ends_at_ns.saturating_add(grace_ns) {
        return false;
    }
    let drained = backlog.pending == 0 && backlog.ack_pending == 0;
    let past_end = backlog
        .ack_floor_arrived_at_ns
        .is_some_and(|t| t >= ends_at_ns);
    drained || past_end
}

/// The next day to seal: the day after the last seal, or the last ended day.
pub fn next_day(ledger: &Ledger, rule: &DayRule, now_ns: i64) -> Result<String, ledger::Error> {
    match ledger.reader().day_seals(None, 1)?.first() {
        Some(last) => rule.day_of(last.ends_at_ns),
        None => rule.previous_day(&rule.day_of(now_ns)?),
    }
}

/// Runs until `shutdown` completes; returns how many seals it made.
pub async fn run(
    config: SealerConfig,
    ledger: Arc<Ledger>,
    shutdown: impl Future<Output = ()>,
) -> Result<u64, Error> {
    let client = bus::connect(&config.nats_url, &config.access).await?;
    let js = jetstream::new(client.clone());
    let mut lease = match &config.lease {
        Some(l) => Some(Lease::open(&js, "sealer", &l.node, l.ttl, l.replicas).await?),
        None => None,
    };
    let check_every = lease.as_ref().map_or(config.check_every, |l| {
        config.check_every.min(l.tick_every())
    });
    let replicas = config.lease.as_ref().map_or(1, |l| l.replicas);
    let l = ledger.clone();
    let last = blocking(move || l.reader().day_seals(None, 1)).await?;
    let mut due = Due::default();
    if let Some(seal) = last.first() {
        let settled = publish_once(&client, lease.as_mut(), seal).await?;
        due.after(settled, seal.clone());
    }
    let mut made = 0u64;
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => {
                if let Some(l) = lease.as_mut() {
                    l.release().await;
                }
                return Ok(made);
            }
            _ = tokio::time::sleep(check_every) => {}
        }
        if let Some(l) = lease.as_mut() {
            l.tick().await;
            if l.holds() && !due.unpublished.is_empty() {
                publish_kept(&client, l, &mut due).await?;
            }
        }
        match seal_if_due(&config, &ledger, &js).await {
            Ok(Some(seal)) => {
                made += 1;
                tracing::info!(day = %seal.day, digest = %seal.digest(), "day sealed");
                let settled = publish_once(&client, lease.as_mut(), &seal).await?;
                due.after(settled, seal);
            }
            Ok(None) => {}
            // The consumer may not exist yet, or the bus is briefly away: try again later.
            Err(e) => tracing::warn!(error = %e, "day not sealed yet"),
        }
        if due.files {
            due.files = !store_day_files(&js, &ledger, replicas).await;
        }
    }
}

/// What the sealer still owes the bus: seals kept while another node held the lease
/// (oldest first, at most `UNPUBLISHED_MAX`), and whether the day bucket lacks files.
#[derive(Default)]
struct Due {
    unpublished: Vec<DaySeal>,
    files: bool,
}

impl Due {
    /// After `seal` was offered for publication: settled (this node publishes, so it
    /// also stores the day files), or kept for when this node takes the lease.
    fn after(&mut self, settled: bool, seal: DaySeal) {
        if settled {
            self.files = true;
            return;
        }
        self.unpublished.push(seal);
        let over = self.unpublished.len().saturating_sub(UNPUBLISHED_MAX);
        self.unpublished.drain(..over);
    }
}

/// Puts the sealed days' files the day bucket lacks (`crate::day_store`): whether done.
async fn store_day_files(js: &jetstream::Context, ledger: &Arc<Ledger>, replicas: usize) -> bool {
    match crate::day_store::put_sealed_days(js, ledger, replicas).await {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!(error = %e, "day files not stored in the day bucket yet");
            false
        }
    }
}

/// How many kept seals a node that does not hold the lease remembers to publish: a
/// month of days. Older ones stay in its ledger (`roundledger day show`).
const UNPUBLISHED_MAX: usize = 31;

/// Publishes the seals this node kept while another held the lease, oldest first, now
/// that it holds it. Each is settled once published or found published by a holder.
async fn publish_kept(
    client: &async_nats::Client,
    lease: &mut Lease,
    due: &mut Due,
) -> Result<(), Error> {
    while let Some(seal) = due.unpublished.first() {
        if !publish_once(client, Some(&mut *lease), seal).await? {
            return Ok(());
        }
        due.unpublished.remove(0);
        due.files = true;
    }
    Ok(())
}

/// Publishes `seal`: at once without a lease; with one, only after `Lease::confirm`
/// renewed it at its revision, which the publication carries. A node that does not hold
/// the lease publishes nothing (its ledger keeps the seal). Whether the seal is settled:
/// published now, or by a holder before; false when this node does not hold the lease.
async fn publish_once(
    client: &async_nats::Client,
    lease: Option<&mut Lease>,
    seal: &DaySeal,
) -> Result<bool, Error> {
    let Some(lease) = lease else {
        publish(client, seal, None).await?;
        return Ok(true);
    };
    let Some(revision) = lease.confirm().await else {
        tracing::info!(day = %seal.day, "seal kept, not published: another node holds the sealer lease");
        return Ok(false);
    };
    // One claim per day: a restarted holder, or one taking over, never publishes a day
    // another node claimed; an unanswered claim is tried again at the next tick.
    let js = jetstream::new(client.clone());
    match crate::lease::claim(&js, lease, &seal.day).await {
        Ok(true) => {}
        Ok(false) => {
            tracing::info!(day = %seal.day, "seal kept, not published: a holder published that day");
            return Ok(true);
        }
        Err(e) => {
            tracing::warn!(day = %seal.day, error = %e, "seal not published yet: its claim is unanswered");
            return Ok(false);
        }
    }
    publish(client, seal, Some(lease.headers(revision))).await?;
    tracing::info!(day = %seal.day, revision, "seal published");
    Ok(true)
}

/// Seals the next day if it may be sealed now: the new seal, if one was made.
async fn seal_if_due(
    config: &SealerConfig,
    ledger: &Arc<Ledger>,
    js: &jetstream::Context,
) -> Result<Option<DaySeal>, Error> {
    let now_ns = (config.clock)();
    let (l, rule) = (ledger.clone(), config.rule.clone());
    let day = blocking(move || next_day(&l, &rule, now_ns)).await?;
    let bounds = config.rule.bounds(&day).map_err(Error::LedgerOther)?;
    let grace_ns = i64::try_from(config.grace.as_nanos()).unwrap_or(i64::MAX);
    if now_ns < bounds.ends_at_ns.saturating_add(grace_ns) {
        return Ok(None);
    }
    if !may_seal(
        bounds.ends_at_ns,
        now_ns,
        grace_ns,
        &backlog(js, &config.consumer).await?,
    ) {
        return Ok(None);
    }
    let (l, rule, key) = (ledger.clone(), config.rule.clone(), config.key.clone());
    let sealed = blocking(move || l.writer().seal_day(&rule, &day, &key, now_ns)).await?;
    Ok(match sealed {
        Sealed::Made(seal) => Some(seal),
        Sealed::Existing(_) => None,
    })
}

/// Ingest's consumer's backlog, with its ack floor's arrival time.
async fn backlog(js: &jetstream::Context, consumer: &str) -> Result<Backlog, Error> {
    let stream = js
        .get_stream(subjects::STREAM)
        .await
        .map_err(|e| Error::nats("stream info", e))?;
    let info = stream
        .consumer_info(consumer)
        .await
        .map_err(|e| Error::nats("consumer info", e))?;
    let floor = info.ack_floor.stream_sequence;
    let ack_floor_arrived_at_ns = if floor == 0 {
        None
    } else {
        let m = stream
            .get_raw_message(floor)
            .await
            .map_err(|e| Error::nats("ack floor message", e))?;
        Some(crate::pipeline::utc_ns(m.time))
    };
    Ok(Backlog {
        pending: info.num_pending,
        ack_pending: info.num_ack_pending as u64,
        ack_floor_arrived_at_ns,
    })
}

/// Publishes a seal's JSON on `seals.<day>`, with the lease headers it was confirmed
/// under if any (`Lease::headers`), and waits until the server has it.
async fn publish(
    client: &async_nats::Client,
    seal: &DaySeal,
    headers: Option<async_nats::HeaderMap>,
) -> Result<(), Error> {
    let headers = headers.unwrap_or_default();
    client
        .publish_with_headers(
            subjects::seal_subject(&seal.day),
            headers,
            seal.to_json().into(),
        )
        .await
        .map_err(|e| Error::nats("publish seal", e))?;
    client
        .flush()
        .await
        .map_err(|e| Error::nats("flush seal", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_day_is_sealed_after_its_grace_once_ingest_holds_its_arrivals() {
        let drained = Backlog {
            pending: 0,
            ack_pending: 0,
            ack_floor_arrived_at_ns: Some(5),
        };
        let busy_before_end = Backlog {
            pending: 40,
            ack_pending: 8,
            ack_floor_arrived_at_ns: Some(99),
        };
        let busy_after_end = Backlog {
            ack_floor_arrived_at_ns: Some(100),
            ..busy_before_end
        };
        assert!(!may_seal(100, 109, 10, &drained), "within the grace");
        assert!(may_seal(100, 110, 10, &drained));
        assert!(!may_seal(100, 500, 10, &busy_before_end));
        assert!(may_seal(100, 500, 10, &busy_after_end));
    }
}
