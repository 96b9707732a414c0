//! Publishing simulated tables over NATS JetStream: one task and one connection per
//! table (its device's credentials), each event to `tables.<table>.events` with its
//! signature headers and `Nats-Msg-Id = <table>:<seq>:<hash>` (`subjects::msg_id`), acks
//! awaited through a bounded in-flight window.
//!
//! Why a window: async-nats waits for ever once about 5,000 publish acks are left
//! unawaited on one connection (seen here: 20 tables with 256 each hung), and an
//! unbounded window would also hide a dead server until the end. So there are two bounds:
//! per table, and for all tables together (a semaphore; a table that finds it empty
//! awaits its own oldest ack before waiting for others, so it cannot deadlock). Why
//! in order and stop at the first failed ack: a later event stored before an earlier one
//! would reach ingest as a sequence gap; JetStream de-duplicates by message id, so
//! publishing the same table again from its start is always safe.

use crate::faults::InjectedFault;
use crate::outbox::Outbox;
use crate::table::{FinanceRecord, Published, TableSim};
use crate::Error;
use async_nats::jetstream::{self, context::PublishAckFuture, message::PublishMessage};
use futures::StreamExt;
use schemas::provenance::EventSignature;
use schemas::subjects::{
    checkpoint_msg_id, checkpoints_subject, events_subject, head_subject, msg_id, STREAM,
};
use schemas::{Hash32, Seq, TableId};
use serde::Serialize;
use std::collections::BTreeSet;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};

/// Limits of one publishing run.
#[derive(Debug, Clone)]
pub struct PublishOptions {
    /// Publish acks awaited at most this late, per table.
    pub in_flight_max: usize,
    /// Publish acks left unawaited at once over all tables (one connection): keep it well
    /// below the ~5,000 at which async-nats stalls.
    pub in_flight_total_max: usize,
    /// How long to wait for the stream to exist (ingest creates it) before giving up.
    pub stream_wait: Duration,
    /// Keep every event in an outbox until the ledger's durable head covers it, and
    /// republish what it does not cover in time (`None`: trust JetStream's publish ack,
    /// for runs without a ledger behind the stream).
    pub durable: Option<DurableWait>,
    /// How each table's device connects: its credentials and the bus's CA.
    pub access: DeviceAccess,
}

/// How each table's device connects to the bus (`bus::Access` per table).
#[derive(Debug, Clone, Default)]
pub struct DeviceAccess {
    /// A directory holding each table's device credentials as `<table>.json`
    /// (`bus::Credentials`); `None` on an open bus.
    pub creds_dir: Option<std::path::PathBuf>,
    /// The CA certificate of the bus's TLS, if it has TLS.
    pub ca_file: Option<std::path::PathBuf>,
}

impl DeviceAccess {
    /// Table `table`'s device's access.
    pub fn for_table(&self, table: &TableId) -> bus::Access {
        bus::Access {
            credentials: self
                .creds_dir
                .as_ref()
                .map(|d| d.join(format!("{table}.json"))),
            ca_file: self.ca_file.clone(),
        }
    }
}

impl Default for PublishOptions {
    fn default() -> Self {
        PublishOptions {
            in_flight_max: 256,
            in_flight_total_max: 2_048,
            stream_wait: Duration::from_secs(30),
            durable: None,
            access: DeviceAccess::default(),
        }
    }
}

impl PublishOptions {
    /// The default limits with every table's outbox on: republish after the durable head
    /// stood still for `republish_after`, give up `wait_max` after a table's last event.
    pub fn with_outbox(republish_after: Duration, wait_max: Duration) -> PublishOptions {
        PublishOptions {
            durable: Some(DurableWait {
                republish_after,
                wait_max,
                ..DurableWait::default()
            }),
            ..PublishOptions::default()
        }
    }
}

/// The device outbox's bounds (see `outbox`).
#[derive(Debug, Clone)]
pub struct DurableWait {
    /// Most events per table not yet confirmed durable.
    pub outbox_capacity: usize,
    /// Republish the outbox when the durable head has not moved for this long.
    pub republish_after: Duration,
    /// Give up (error) when a table is still not durable this long after its last event.
    pub wait_max: Duration,
}

impl Default for DurableWait {
    fn default() -> Self {
        DurableWait {
            outbox_capacity: 100_000,
            republish_after: Duration::from_secs(2),
            wait_max: Duration::from_secs(60),
        }
    }
}

/// One published event, to compare with what the ledger holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PublishedRecord {
    /// The table.
    pub table: TableId,
    /// The event's seq in its table's chain.
    pub seq: Seq,
    /// The event's chain hash.
    pub hash: Hash32,
}

/// Everything a run published and every fault it injected, tables in the order given,
/// each table's events in sequence order.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PublishReport {
    /// Every published event.
    pub events: Vec<PublishedRecord>,
    /// Every injected round fault, with its table.
    pub faults: Vec<(TableId, InjectedFault)>,
    /// Rounds played, all tables together.
    pub rounds: u64,
    /// Messages JetStream reported as duplicates of an earlier publish (a re-run).
    pub duplicates: u64,
    /// Checkpoints JetStream called duplicates on their first publish: another publisher
    /// (or an earlier run) used their id first. Each was sent again under a fresh id
    /// only the device can compute (`subjects::resend_msg_id`).
    pub checkpoints_claimed: Vec<(TableId, Seq)>,
    /// Signed checkpoints published (one after the opening, each round and the closing).
    pub checkpoints: u64,
    /// Events published again from the outbox because the ledger had not confirmed them.
    pub republished: u64,
    /// Publishes that failed or got no ack (a server going away, a stream electing a new
    /// leader) while the outbox held the message: not errors, the outbox republishes them.
    pub publish_failures: u64,
    /// Events whose first publish (under their own message id) was not acknowledged:
    /// whatever the stream holds of them came from a republish or an ack that was lost.
    pub unacknowledged: Vec<(TableId, Seq)>,
    /// The count room's results for the drop boxes removed, and the injected finance
    /// errors as a report must show them (`TableSim::take_finance`).
    pub finance: FinanceRecord,
}

struct TableReport {
    events: Vec<PublishedRecord>,
    faults: Vec<(TableId, InjectedFault)>,
    rounds: u64,
    duplicates: u64,
    checkpoints_claimed: Vec<(TableId, Seq)>,
    checkpoints: u64,
    republished: u64,
    publish_failures: u64,
    unacknowledged: Vec<(TableId, Seq)>,
    finance: FinanceRecord,
}

/// Connects to `url` (one server, or a cluster's nodes separated by commas), waits for
/// the events stream, then publishes every table (opening events, `rounds_per_table`
/// rounds, closing events) concurrently, one task per table.
/// `rate` limits each table to that many rounds per second.
pub async fn publish_floor(
    url: &str,
    tables: Vec<TableSim>,
    rounds_per_table: u64,
    rate: Option<f64>,
    options: PublishOptions,
) -> Result<PublishReport, Error> {
    if options.in_flight_max == 0 || options.in_flight_total_max == 0 {
        return Err(Error::Config(
            "in_flight_max and in_flight_total_max must be at least 1".into(),
        ));
    }
    if let Some(r) = rate {
        if !(r.is_finite() && r > 0.0) {
            return Err(Error::Config(format!(
                "rate {r} is not a positive number of rounds per second"
            )));
        }
    }
    let permits = Arc::new(Semaphore::new(options.in_flight_total_max));
    let mut handles = Vec::with_capacity(tables.len());
    // Every device connects before any publishes: a table that cannot connect stops the
    // run before it starts, not half way through the others'.
    let mut connected = Vec::with_capacity(tables.len());
    for table in tables {
        let (js, watches) = connect_device(url, &options, table.table()).await?;
        connected.push((table, js, watches));
    }
    for (table, js, watches) in connected {
        let out = Publisher::new(&options, permits.clone(), table.table(), js, watches);
        handles.push(tokio::spawn(publish_table(
            out,
            table,
            rounds_per_table,
            rate,
        )));
    }
    let mut report = PublishReport::default();
    for h in handles {
        let t = h.await.map_err(|e| Error::Task(e.to_string()))??;
        report.events.extend(t.events);
        report.faults.extend(t.faults);
        report.rounds += t.rounds;
        report.duplicates += t.duplicates;
        report.checkpoints_claimed.extend(t.checkpoints_claimed);
        report.checkpoints += t.checkpoints;
        report.republished += t.republished;
        report.publish_failures += t.publish_failures;
        report.unacknowledged.extend(t.unacknowledged);
        report.finance.extend(t.finance);
    }
    Ok(report)
}

/// What a device watches beside its publishes: the ledger's durable head, and the bus
/// refusing its credential.
struct Watches {
    durable: watch::Receiver<Option<(Seq, Hash32)>>,
    refused: watch::Receiver<Option<String>>,
}

/// Connects table `table`'s device with its own credentials, subscribes to its durable
/// head when the outbox is on, and waits for the stream.
async fn connect_device(
    url: &str,
    options: &PublishOptions,
    table: &TableId,
) -> Result<(jetstream::Context, Watches), Error> {
    let (refused_tx, refused) = watch::channel(None);
    // A revoked credential makes the client reconnect for ever, each attempt refused:
    // the first authorization error stops the device instead (`Error::CredentialRefused`).
    let events = async_nats::ConnectOptions::new().event_callback(move |e| {
        let text = e.to_string();
        if text.to_lowercase().contains("authorization") {
            refused_tx.send_if_modified(|v| v.is_none() && v.replace(text).is_none());
        }
        async {}
    });
    let client = bus::connect_with(url, &options.access.for_table(table), events)
        .await
        .map_err(|e| Error::Nats {
            context: format!("connecting table {table}'s device to {url}"),
            message: e.to_string(),
        })?;
    let durable = match options.durable {
        Some(_) => watch_head(&client, table).await?,
        None => watch::channel(None).1,
    };
    let js = jetstream::new(client);
    wait_for_stream(&js, options.stream_wait).await?;
    Ok((js, Watches { durable, refused }))
}

impl Publisher {
    /// A table's publisher, before its first event.
    fn new(
        options: &PublishOptions,
        permits: Arc<Semaphore>,
        table: &TableId,
        js: jetstream::Context,
        watches: Watches,
    ) -> Publisher {
        Publisher {
            outbox: options
                .durable
                .as_ref()
                .map(|d| (Outbox::new(table.clone(), d.outbox_capacity), d.clone())),
            durable: watches.durable,
            refused: watches.refused,
            js,
            subject: events_subject(table),
            table: table.clone(),
            window: VecDeque::new(),
            window_max: options.in_flight_max,
            permits,
            report: TableReport {
                events: Vec::new(),
                faults: Vec::new(),
                rounds: 0,
                duplicates: 0,
                checkpoints_claimed: Vec::new(),
                checkpoints: 0,
                republished: 0,
                publish_failures: 0,
                unacknowledged: Vec::new(),
                finance: FinanceRecord::default(),
            },
            failed: BTreeSet::new(),
            checkpoint_skipped: false,
            checkpoint_ids: BTreeSet::new(),
            claimed: Vec::new(),
            republish_rounds: 0,
            lost_since: None,
            head_moved_at: tokio::time::Instant::now(),
            backoff: RepublishBackoff::for_table(
                options
                    .durable
                    .as_ref()
                    .map_or(Duration::ZERO, |d| d.republish_after),
                table,
            ),
            stall_backoff: RepublishBackoff::for_table(
                options
                    .durable
                    .as_ref()
                    .map_or(Duration::ZERO, |d| d.republish_after),
                table,
            ),
        }
    }
}

/// The latest durable head the ledger published for `table`, as the outbox sees it: the
/// latest received, not the highest (the outbox judges each by its hash; a forged head
/// must not hide the genuine ones after it). Core NATS: a lost head only delays trimming;
/// the next flush that touches the table sends it again.
async fn watch_head(
    client: &async_nats::Client,
    table: &TableId,
) -> Result<watch::Receiver<Option<(Seq, Hash32)>>, Error> {
    let subject = head_subject(table);
    let mut sub = client
        .subscribe(subject.clone())
        .await
        .map_err(|e| Error::Nats {
            context: format!("subscribing to {subject}"),
            message: e.to_string(),
        })?;
    let (tx, rx) = watch::channel(None);
    let table = table.clone();
    tokio::spawn(async move {
        while let Some(m) = sub.next().await {
            let Ok(h) = serde_json::from_slice::<schemas::ChainHead>(&m.payload) else {
                tracing::warn!(subject = %m.subject, "unreadable durable head");
                continue;
            };
            if h.table != table {
                continue;
            }
            let head = Some((h.seq, h.hash));
            tx.send_if_modified(|v| {
                let moved = *v != head;
                *v = head;
                moved
            });
        }
    });
    Ok(rx)
}

/// Waits, with bounded exponential backoff, until stream `STREAM` exists: ingest creates
/// it, and publishing before that gets "no responders".
pub async fn wait_for_stream(js: &jetstream::Context, wait: Duration) -> Result<(), Error> {
    let deadline = tokio::time::Instant::now() + wait;
    let mut backoff = Duration::from_millis(50);
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        match js.get_stream(STREAM).await {
            Ok(_) => return Ok(()),
            Err(e) => {
                if tokio::time::Instant::now() + backoff > deadline {
                    return Err(Error::StreamMissing {
                        stream: STREAM,
                        waited: wait,
                        attempts,
                        last_error: e.to_string(),
                    });
                }
                tracing::debug!(stream = STREAM, error = %e, "stream not there yet; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
        }
    }
}

async fn publish_table(
    mut out: Publisher,
    mut table: TableSim,
    rounds: u64,
    rate: Option<f64>,
) -> Result<TableReport, Error> {
    let start = tokio::time::Instant::now();
    for p in table.opening_events()? {
        out.send(p).await?;
    }
    out.send_checkpoint(&table).await?;
    for r in 0..rounds {
        if let Some(rate) = rate {
            tokio::time::sleep_until(start + Duration::from_secs_f64(r as f64 / rate)).await;
        }
        let played = table.play_round()?;
        for p in played.events {
            out.send(p).await?;
        }
        // At every round's end the controller vouches for the chain so far.
        out.send_checkpoint(&table).await?;
        let id = table.table().clone();
        out.report
            .faults
            .extend(played.injected.into_iter().map(|f| (id.clone(), f)));
        out.report.rounds += 1;
        out.report.finance.extend(table.take_finance());
    }
    for p in table.closing_events()? {
        out.send(p).await?;
    }
    out.report.finance.extend(table.take_finance());
    out.send_checkpoint(&table).await?;
    out.drain().await?;
    out.until_durable().await?;
    // Everything is durable now: no publish is outstanding, whatever `failed` says (an
    // event whose ack was lost may have been stored all the same).
    out.failed.clear();
    if out.republish_rounds > 0 || out.checkpoint_skipped {
        // Checkpoints skipped while publishes had failed, or sent while the ledger had a
        // gap (refused as beyond its head): vouch again now that everything is durable.
        out.send_checkpoint(&table).await?;
        out.drain().await?;
    }
    tracing::info!(table = %out.table, events = out.report.events.len(), "table published");
    Ok(out.report)
}

struct Publisher {
    /// The device outbox and its bounds, when publishing waits for the ledger.
    outbox: Option<(Outbox, DurableWait)>,
    /// The latest durable head of this table the ledger published.
    durable: watch::Receiver<Option<(Seq, Hash32)>>,
    /// The bus's words when it refused this device's credential (revoked).
    refused: watch::Receiver<Option<String>>,
    js: jetstream::Context,
    subject: String,
    table: TableId,
    window: VecDeque<InFlight>,
    window_max: usize,
    permits: Arc<Semaphore>,
    report: TableReport,
    /// Republish rounds so far: each gives its messages fresh ids (`<table>:<seq>:<hash>:r<n>`).
    republish_rounds: u32,
    /// When a publish first failed since the failed events were last republished.
    lost_since: Option<tokio::time::Instant>,
    /// When the durable head last trimmed the outbox (or the outbox was last empty, or last
    /// republished): a head standing still this long with events pending means the ledger
    /// holds them behind a gap, or never got them.
    head_moved_at: tokio::time::Instant,
    /// How long the head may stand still before that republish: `republish_after`,
    /// doubled after each (within the same bound), back to it when the head moves. Apart
    /// from `backoff`, which every publish ack resets.
    stall_backoff: RepublishBackoff,
    /// Events whose last publish failed: republished `backoff.wait()` after the first.
    failed: BTreeSet<Seq>,
    /// A checkpoint was not sent because publishes had failed: the end of the run vouches.
    checkpoint_skipped: bool,
    /// The checkpoint ids this device has sent: a second checkpoint with the same bytes
    /// (vouching again for the same head) needs a fresh id.
    checkpoint_ids: BTreeSet<String>,
    /// Checkpoints the stream called duplicates on their first publish, to send again.
    claimed: Vec<Resend>,
    /// How long after a failure, or after the durable head stood still, to republish.
    backoff: RepublishBackoff,
}

/// The longest republish wait, as a multiple of `DurableWait::republish_after`.
const REPUBLISH_BACKOFF_MAX: u32 = 8;

/// The wait before a republish: `base` (`DurableWait::republish_after`), doubled after
/// each republish up to `REPUBLISH_BACKOFF_MAX` times it while nothing is acknowledged,
/// back to `base` at the first ack. During an outage every republish fails too; without
/// the backoff a device resent its whole failed set every `base` (the cluster test counted
/// 12,206 republishes for 4,376 events).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RepublishBackoff {
    base: Duration,
    wait: Duration,
    /// Spreads the waits of many devices (`jittered`): from the table id, so a run stays
    /// deterministic for a seed.
    jitter_seed: u64,
    /// Republishes so far: each draws its own jitter.
    republishes: u64,
}

/// The most jitter added to a republish wait, in percent of the wait.
const REPUBLISH_JITTER_PERCENT_MAX: u64 = 25;

impl RepublishBackoff {
    fn new(base: Duration) -> RepublishBackoff {
        RepublishBackoff {
            base,
            wait: base,
            jitter_seed: 0,
            republishes: 0,
        }
    }

    /// `new`, with the jitter of `table`: devices that lost the same ledger do not all
    /// republish at the same moment when it comes back.
    fn for_table(base: Duration, table: &TableId) -> RepublishBackoff {
        // FNV-1a over the id, spread by `splitmix64` when drawn.
        let seed = table
            .as_str()
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
        RepublishBackoff {
            jitter_seed: seed,
            ..RepublishBackoff::new(base)
        }
    }

    #[cfg(test)]
    fn wait(&self) -> Duration {
        self.wait
    }

    /// `wait` plus up to `REPUBLISH_JITTER_PERCENT_MAX` percent, the same until the next
    /// republish.
    fn jittered(&self) -> Duration {
        let draw = splitmix64(self.jitter_seed ^ self.republishes) % 1_000;
        let percent_milli = draw * REPUBLISH_JITTER_PERCENT_MAX;
        self.wait + self.wait.mul_f64(percent_milli as f64 / 100_000.0)
    }

    /// A republish went out: the next waits twice as long, within the bound.
    fn republished(&mut self) {
        self.wait = (self.wait * 2).min(self.base * REPUBLISH_BACKOFF_MAX);
        self.republishes = self.republishes.wrapping_add(1);
    }

    /// The stream acknowledged a publish: it takes messages again.
    fn acked(&mut self) {
        self.wait = self.base;
    }
}

/// One step of splitmix64: a well-spread 64-bit value from `x`.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What a publish was of: an event the outbox keeps, or a signed checkpoint (not kept:
/// the next checkpoint vouches for everything before it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Message {
    /// The event's first publish, under its own message id.
    Event(Seq),
    Republish(Seq),
    Checkpoint(Seq),
}

impl Message {
    fn seq(self) -> Seq {
        match self {
            Message::Event(s) | Message::Republish(s) | Message::Checkpoint(s) => s,
        }
    }
}

/// How long after sending a publish its ack may take (async-nats's own default). Counted
/// from the send, not from when the ack is awaited: acks are awaited one after another,
/// and when a connection dies with a full window each would otherwise wait this long in
/// turn (a nats-server kill test waited 414 s for about 80 of them).
const PUBLISH_ACK_WAIT: Duration = Duration::from_secs(5);

/// A checkpoint to send again under a fresh id (`subjects::resend_msg_id`).
struct Resend {
    seq: Seq,
    bytes: Vec<u8>,
    id: String,
}

struct InFlight {
    message: Message,
    /// A checkpoint's first publish: what to send if the stream calls it a duplicate.
    resend: Option<Resend>,
    ack: PublishAckFuture,
    /// `PUBLISH_ACK_WAIT` after the send.
    deadline: tokio::time::Instant,
    /// Released when the ack arrived (or failed): frees a place in the all-tables window.
    _permit: OwnedSemaphorePermit,
}

impl Publisher {
    async fn send(&mut self, p: Published) -> Result<(), Error> {
        let seq = p.event.seq;
        let hash = p.hash();
        if self.outbox.is_some() {
            self.keep(p.clone()).await?;
        }
        let id = msg_id(&self.table, seq, &p.bytes);
        let subject = self.subject.clone();
        self.put(subject, p.bytes, p.signature, id, Message::Event(seq), None)
            .await?;
        self.report.events.push(PublishedRecord {
            table: self.table.clone(),
            seq,
            hash,
        });
        // A publish failed a while ago: the ledger holds what followed it behind a gap
        // until the outbox fills it, so republish now rather than at the end of the run.
        let overdue = match (&self.outbox, self.lost_since) {
            (Some(_), Some(t)) => t.elapsed() >= self.backoff.jittered(),
            _ => false,
        };
        if overdue {
            self.lost_since = None;
            self.backoff.republished();
            let failed = std::mem::take(&mut self.failed);
            self.republish(|seq| failed.contains(&seq)).await?;
        }
        // Every publish was acknowledged, yet the ledger's head has stood still with
        // events pending: JetStream lost what it acknowledged (or ingest is down), and the
        // ledger holds what followed behind the gap, at most `PENDING_PER_TABLE_MAX` per
        // table. Republish what is pending now, not at the end of the run (found in
        // review: a device running for hours left the gap open until then).
        if self.outbox.is_some() && self.head_moved_at.elapsed() >= self.stall_backoff.jittered() {
            self.head_moved_at = tokio::time::Instant::now();
            self.stall_backoff.republished();
            self.republish(|_| true).await?;
        }
        Ok(())
    }

    /// A publish that failed or got no ack. With an outbox the message is still held
    /// there and will be republished: logged and counted, the device goes on. Without
    /// one it is lost, so it is an error.
    fn publish_failed(&mut self, message: Message, error: Error) -> Result<(), Error> {
        if self.outbox.is_none() {
            return Err(error);
        }
        tracing::warn!(table = %self.table, %error, "publish failed; the outbox keeps the message for republishing");
        self.report.publish_failures += 1;
        match message {
            Message::Event(seq) => {
                self.report.unacknowledged.push((self.table.clone(), seq));
                self.failed.insert(seq);
            }
            Message::Republish(seq) => {
                self.failed.insert(seq);
            }
            Message::Checkpoint(_) => return Ok(()),
        }
        self.lost_since
            .get_or_insert_with(tokio::time::Instant::now);
        Ok(())
    }

    /// Publishes again, under fresh message ids, what the outbox holds (not yet confirmed
    /// durable) and `wanted` picks.
    async fn republish(&mut self, wanted: impl Fn(Seq) -> bool) -> Result<(), Error> {
        let head = self.confirm()?;
        let pending: Vec<Published> = match self.outbox.as_mut() {
            Some((o, _)) => o
                .pending()
                .filter(|p| wanted(p.event.seq))
                .cloned()
                .collect(),
            None => return Ok(()),
        };
        if pending.is_empty() {
            return Ok(());
        }
        self.republish_rounds += 1;
        let round = self.republish_rounds;
        tracing::warn!(table = %self.table, durable = head.0, pending = pending.len(), round, "ledger has not confirmed the outbox; republishing");
        for p in pending {
            let seq = p.event.seq;
            let id = format!("{}:r{round}", msg_id(&self.table, seq, &p.bytes));
            let subject = self.subject.clone();
            self.put(
                subject,
                p.bytes,
                p.signature,
                id,
                Message::Republish(seq),
                None,
            )
            .await?;
            self.report.republished += 1;
        }
        Ok(())
    }

    /// Puts an event in the outbox; when full, waits (bounded) for the ledger to confirm
    /// what it holds.
    async fn keep(&mut self, p: Published) -> Result<(), Error> {
        self.confirm()?;
        let Some((outbox, bounds)) = self.outbox.as_mut() else {
            return Ok(());
        };
        if outbox.len() >= bounds.outbox_capacity {
            // Full: settle the acks in flight and wait for the ledger to confirm what the
            // outbox holds, republishing it if the ledger stalls (a lost message leaves a
            // gap nothing else fills); an error after `wait_max`.
            self.drain().await?;
            self.until_durable().await?;
        }
        match self.outbox.as_mut() {
            Some((outbox, _)) => outbox.push(p).map_err(Error::OutboxFull),
            None => Ok(()),
        }
    }

    /// Waits until the ledger's durable head covers every event sent, republishing what
    /// the outbox still holds whenever the head stands still for `backoff.wait()`. A
    /// republished message gets a fresh `Nats-Msg-Id` (`<table>:<seq>:<hash>:r<n>`): the stream
    /// remembers ids of messages it lost, and would drop a republish under the old one as
    /// a duplicate; the ledger recognises the event itself by (table, seq, hash).
    /// Returns how many republish rounds it took (0: the ledger confirmed everything as
    /// first sent).
    async fn until_durable(&mut self) -> Result<u32, Error> {
        let Some((_, bounds)) = self.outbox.as_ref() else {
            return Ok(0);
        };
        let bounds = bounds.clone();
        let deadline = tokio::time::Instant::now() + bounds.wait_max;
        let mut attempt = 0u32;
        loop {
            self.still_authorized()?;
            let head = self.confirm()?;
            // Only the last seq is needed here; `republish` copies what it resends.
            let last = match self.outbox.as_ref() {
                Some((o, _)) => o.pending().last().map(|p| p.event.seq),
                None => None,
            };
            let Some(last) = last else {
                return Ok(attempt);
            };
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::NotDurable {
                    table: self.table.clone(),
                    durable: head,
                    last,
                    waited: bounds.wait_max,
                });
            }
            // The stall backoff, which only the ledger's head resets: the stream acks
            // every republish, so a wait reset by acks resent the whole outbox every
            // `republish_after` while the ledger took none of it (a fenced table, a
            // paused ingest).
            let wait = self.stall_backoff.jittered();
            let moved = tokio::time::timeout(wait, self.durable.changed()).await;
            match moved {
                Ok(Ok(())) => continue,
                Ok(Err(_)) => {
                    return Err(Error::Task("durable head subscription ended".into()));
                }
                Err(_) => {
                    attempt += 1;
                    self.lost_since = None;
                    self.failed.clear();
                    self.stall_backoff.republished();
                    self.republish(|_| true).await?;
                    self.drain().await?;
                }
            }
        }
    }

    /// Trims the outbox to the latest durable head the ledger published, when that head
    /// names this device's own event (`Outbox::confirm`); a head naming another event at
    /// one of the device's seqs is a fork, an error. Returns the seq confirmed durable.
    fn confirm(&mut self) -> Result<Seq, Error> {
        let head = *self.durable.borrow_and_update();
        let Some((outbox, _)) = self.outbox.as_mut() else {
            return Ok(Seq(0));
        };
        if let Some((seq, hash)) = head {
            if outbox.confirm(seq, hash)? > 0 {
                self.head_moved_at = tokio::time::Instant::now();
                self.stall_backoff.acked();
            }
        }
        if outbox.is_empty() {
            self.head_moved_at = tokio::time::Instant::now();
        }
        Ok(outbox.durable())
    }

    /// An error once the bus has refused this device's credential: reconnecting cannot
    /// succeed, so the device stops and says why.
    fn still_authorized(&self) -> Result<(), Error> {
        match self.refused.borrow().as_ref() {
            Some(detail) => Err(Error::CredentialRefused {
                table: self.table.clone(),
                detail: detail.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Publishes one message in the in-flight window.
    async fn put(
        &mut self,
        subject: String,
        payload: Vec<u8>,
        signature: Option<EventSignature>,
        id: String,
        message: Message,
        resend: Option<Resend>,
    ) -> Result<(), Error> {
        self.still_authorized()?;
        let seq = message.seq();
        let permit = self.permit().await?;
        let mut msg = PublishMessage::build()
            .payload(payload.into())
            .message_id(id);
        for (name, value) in signature.iter().flat_map(EventSignature::to_headers) {
            msg = msg.header(name, value.as_str());
        }
        let ack = match self.js.send_publish(subject, msg).await {
            Ok(ack) => ack,
            Err(e) => {
                return self.publish_failed(
                    message,
                    Error::Publish {
                        table: self.table.clone(),
                        seq,
                        message: e.to_string(),
                    },
                )
            }
        };
        self.window.push_back(InFlight {
            message,
            resend,
            ack,
            deadline: tokio::time::Instant::now() + PUBLISH_ACK_WAIT,
            _permit: permit,
        });
        while self.window.len() >= self.window_max {
            self.await_oldest().await?;
        }
        Ok(())
    }

    /// Publishes the table's signed checkpoint of what was sent so far, in the same
    /// in-flight window as events.
    async fn send_checkpoint(&mut self, table: &TableSim) -> Result<(), Error> {
        let Some(c) = table.checkpoint() else {
            return Ok(());
        };
        // A failed event the ledger has since confirmed (its ack was lost, not the event)
        // no longer holds checkpoints back.
        let durable = self.confirm()?;
        self.failed.retain(|s| *s > durable);
        if !self.failed.is_empty() {
            // Events of the chain it would vouch for are not in the stream: the ledger
            // would refuse it as beyond its head. The next one, after the republish, or
            // the one after recovery at the end of the run, vouches instead.
            self.checkpoint_skipped = true;
            return Ok(());
        }
        self.resend_claimed().await?;
        let seq = c.head_seq;
        let bytes = c.to_bincode();
        let first = checkpoint_msg_id(&self.table, seq, &bytes);
        let n = self.report.checkpoints;
        let fresh = table.resend_msg_id(&first, n);
        let (id, resend) = if self.checkpoint_ids.insert(first.clone()) {
            let resend = Resend {
                seq,
                bytes: bytes.clone(),
                id: fresh,
            };
            (first, Some(resend))
        } else {
            // The same bytes again (vouching again for the same head after a recovery):
            // under the first id the stream would drop them as a repeat.
            (fresh, None)
        };
        let subject = checkpoints_subject(&self.table);
        let message = Message::Checkpoint(seq);
        self.put(subject, bytes, None, id, message, resend).await?;
        self.report.checkpoints += 1;
        Ok(())
    }

    /// Sends again, each under its fresh id, the checkpoints the stream called duplicates
    /// on their first publish: another principal sent a message under the id first.
    async fn resend_claimed(&mut self) -> Result<(), Error> {
        while !self.claimed.is_empty() {
            for r in std::mem::take(&mut self.claimed) {
                tracing::warn!(
                    table = %self.table,
                    seq = r.seq.0,
                    id = %r.id,
                    "the stream called this checkpoint a duplicate on its first publish: \
                     another publisher used its message id first; sending it again under a fresh id"
                );
                self.report
                    .checkpoints_claimed
                    .push((self.table.clone(), r.seq));
                let subject = checkpoints_subject(&self.table);
                let message = Message::Checkpoint(r.seq);
                self.put(subject, r.bytes, None, r.id, message, None)
                    .await?;
            }
        }
        Ok(())
    }

    /// A place in the all-tables window: when there is none, first settle this table's
    /// own oldest ack (which frees one), and only wait for other tables when this table
    /// holds none.
    async fn permit(&mut self) -> Result<OwnedSemaphorePermit, Error> {
        loop {
            match self.permits.clone().try_acquire_owned() {
                Ok(p) => return Ok(p),
                Err(TryAcquireError::NoPermits) if !self.window.is_empty() => {
                    self.await_oldest().await?;
                }
                Err(TryAcquireError::NoPermits) => {
                    return self
                        .permits
                        .clone()
                        .acquire_owned()
                        .await
                        .map_err(|e| Error::Task(format!("in-flight window closed: {e}")));
                }
                Err(TryAcquireError::Closed) => {
                    return Err(Error::Task("in-flight window closed".into()));
                }
            }
        }
    }

    async fn await_oldest(&mut self) -> Result<(), Error> {
        // The permit is released when this entry is dropped, after its ack arrived.
        if let Some(InFlight {
            message,
            resend,
            ack,
            deadline,
            ..
        }) = self.window.pop_front()
        {
            let ack = match tokio::time::timeout_at(deadline, ack).await {
                Ok(ack) => ack.map_err(|e| e.to_string()),
                Err(_) => Err(format!("none within {PUBLISH_ACK_WAIT:?} of sending")),
            };
            match ack {
                Ok(ack) => {
                    if ack.duplicate {
                        self.report.duplicates += 1;
                        self.claimed.extend(resend);
                    }
                    // The stream takes messages again: republish failures promptly.
                    self.backoff.acked();
                }
                Err(e) => self.publish_failed(
                    message,
                    Error::Publish {
                        table: self.table.clone(),
                        seq: message.seq(),
                        message: format!("no publish ack: {e}"),
                    },
                )?,
            }
        }
        Ok(())
    }

    /// Settles every ack in flight, sending again the checkpoints they show claimed.
    async fn drain(&mut self) -> Result<(), Error> {
        loop {
            while !self.window.is_empty() {
                self.await_oldest().await?;
            }
            if self.claimed.is_empty() {
                return Ok(());
            }
            self.resend_claimed().await?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_republish_wait_doubles_to_its_bound_and_resets_at_an_ack() {
        let base = Duration::from_millis(250);
        let mut b = RepublishBackoff::new(base);
        assert_eq!(b.wait(), base);
        let mut seen = Vec::new();
        for _ in 0..6 {
            b.republished();
            seen.push(b.wait().as_millis());
        }
        // 2x, 4x, 8x, then held at REPUBLISH_BACKOFF_MAX (8) times the base.
        assert_eq!(seen, [500, 1000, 2000, 2000, 2000, 2000]);
        b.acked();
        assert_eq!(b.wait(), base);
        b.republished();
        assert_eq!(b.wait(), base * 2);
    }

    #[test]
    fn the_jitter_is_bounded_spread_and_the_same_for_a_table() {
        let base = Duration::from_millis(1_000);
        let table = |t: &str| TableId::new(t).expect("id");
        let mut waits = BTreeSet::new();
        for t in ["T-1", "T-2", "T-3", "T-4", "T-5", "T-6"] {
            let b = RepublishBackoff::for_table(base, &table(t));
            let w = b.jittered();
            assert!(w >= base && w <= base + base / 4, "{w:?}");
            assert_eq!(w, RepublishBackoff::for_table(base, &table(t)).jittered());
            waits.insert(w);
        }
        assert!(waits.len() > 1, "devices spread: {waits:?}");
        let mut b = RepublishBackoff::for_table(base, &table("T-1"));
        for _ in 0..10 {
            b.republished();
            assert!(b.jittered() <= base * REPUBLISH_BACKOFF_MAX * 5 / 4);
        }
    }
}
