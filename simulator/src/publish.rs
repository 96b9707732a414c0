//! Publishing simulated tables over NATS JetStream: one task per table, each event to
//! `tables.<table>.events` with `Nats-Msg-Id = <table>:<seq>`, acks awaited through a
//! bounded in-flight window.
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
use crate::table::{Published, TableSim};
use crate::Error;
use async_nats::jetstream::{self, context::PublishAckFuture, message::PublishMessage};
use schemas::subjects::{checkpoints_subject, events_subject, msg_id, STREAM};
use schemas::{Hash32, Seq, TableId};
use serde::Serialize;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
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
}

impl Default for PublishOptions {
    fn default() -> Self {
        PublishOptions {
            in_flight_max: 256,
            in_flight_total_max: 2_048,
            stream_wait: Duration::from_secs(30),
        }
    }
}

/// One published event, to compare with what the ledger holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PublishedRecord {
    pub table: TableId,
    pub seq: Seq,
    pub hash: Hash32,
}

/// Everything a run published and every fault it injected, tables in the order given,
/// each table's events in sequence order.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PublishReport {
    pub events: Vec<PublishedRecord>,
    pub faults: Vec<(TableId, InjectedFault)>,
    pub rounds: u64,
    /// Messages JetStream reported as duplicates of an earlier publish (a re-run).
    pub duplicates: u64,
    /// Signed checkpoints published (one after the opening, each round and the closing).
    pub checkpoints: u64,
}

struct TableReport {
    events: Vec<PublishedRecord>,
    faults: Vec<(TableId, InjectedFault)>,
    rounds: u64,
    duplicates: u64,
    checkpoints: u64,
}

/// Connects to `url`, waits for the events stream, then publishes every table (opening
/// events, `rounds_per_table` rounds, closing events) concurrently, one task per table.
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
    let client = async_nats::connect(url).await.map_err(|e| Error::Nats {
        context: format!("connecting to {url}"),
        message: e.to_string(),
    })?;
    let js = jetstream::new(client);
    wait_for_stream(&js, options.stream_wait).await?;

    let permits = Arc::new(Semaphore::new(options.in_flight_total_max));
    let mut handles = Vec::with_capacity(tables.len());
    for table in tables {
        let out = Publisher {
            js: js.clone(),
            subject: events_subject(table.table()),
            table: table.table().clone(),
            window: VecDeque::new(),
            window_max: options.in_flight_max,
            permits: permits.clone(),
            report: TableReport {
                events: Vec::new(),
                faults: Vec::new(),
                rounds: 0,
                duplicates: 0,
                checkpoints: 0,
            },
        };
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
        report.checkpoints += t.checkpoints;
    }
    Ok(report)
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
    }
    for p in table.closing_events()? {
        out.send(p).await?;
    }
    out.send_checkpoint(&table).await?;
    out.drain().await?;
    tracing::info!(table = %out.table, events = out.report.events.len(), "table published");
    Ok(out.report)
}

struct Publisher {
    js: jetstream::Context,
    subject: String,
    table: TableId,
    window: VecDeque<(Seq, PublishAckFuture, OwnedSemaphorePermit)>,
    window_max: usize,
    permits: Arc<Semaphore>,
    report: TableReport,
}

impl Publisher {
    async fn send(&mut self, p: Published) -> Result<(), Error> {
        let seq = p.event.seq;
        let hash = p.hash();
        let permit = self.permit().await?;
        let msg = PublishMessage::build()
            .payload(p.bytes.into())
            .message_id(msg_id(&self.table, seq));
        let ack = self
            .js
            .send_publish(self.subject.clone(), msg)
            .await
            .map_err(|e| Error::Publish {
                table: self.table.clone(),
                seq,
                message: e.to_string(),
            })?;
        self.window.push_back((seq, ack, permit));
        self.report.events.push(PublishedRecord {
            table: self.table.clone(),
            seq,
            hash,
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
        let seq = c.head_seq;
        let permit = self.permit().await?;
        let msg = PublishMessage::build()
            .payload(c.to_bincode().into())
            .message_id(format!("{}:checkpoint:{}", self.table, seq.0));
        let ack = self
            .js
            .send_publish(checkpoints_subject(&self.table), msg)
            .await
            .map_err(|e| Error::Publish {
                table: self.table.clone(),
                seq,
                message: format!("checkpoint: {e}"),
            })?;
        self.window.push_back((seq, ack, permit));
        self.report.checkpoints += 1;
        while self.window.len() >= self.window_max {
            self.await_oldest().await?;
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
        if let Some((seq, ack, _permit)) = self.window.pop_front() {
            let ack = ack.await.map_err(|e| Error::Publish {
                table: self.table.clone(),
                seq,
                message: format!("no publish ack: {e}"),
            })?;
            if ack.duplicate {
                self.report.duplicates += 1;
            }
        }
        Ok(())
    }

    async fn drain(&mut self) -> Result<(), Error> {
        while !self.window.is_empty() {
            self.await_oldest().await?;
        }
        Ok(())
    }
}
