//! The one writer thread: append the waiting batches, flush once, read the touched tables'
//! heads, reply per batch.
//!
//! Why a dedicated OS thread and not the async runtime: sled is synchronous, and `flush`
//! waits for fsync (milliseconds). Run on a runtime worker it would stall every task
//! scheduled there (fetches, acks, heartbeats; with 2 cores, half the runtime). One thread
//! also makes the write order the fetch order, which AckPolicy::All needs: batch N is
//! acked only after every batch before it is durable. The channels in and out are bounded,
//! so a slow disk slows fetching instead of growing a queue.

use crate::{Error, IngestReport};
use ledger::attest::CheckpointOutcome;
use ledger::{Appended, Incoming, Ledger};
use schemas::{ChainHead, TableId};
use std::collections::BTreeSet;
use std::sync::Arc;
use tokio::sync::mpsc;

/// A batch for the writer. `ack` is the last delivered message: acking it acks the batch.
pub(crate) struct Job {
    pub batch_no: u64,
    /// Events, in arrival order.
    pub incoming: Vec<Incoming>,
    /// Signed checkpoints, in arrival order; kept after the batch's events are appended.
    pub checkpoints: Vec<Incoming>,
    pub ack: async_nats::jetstream::Message,
}

/// A batch that is durable: ready to be acked, with the heads to publish.
pub(crate) struct Written {
    pub batch_no: u64,
    pub ack: async_nats::jetstream::Message,
    pub tally: IngestReport,
    pub heads: Vec<ChainHead>,
}

/// Most batches one flush makes durable together (group commit).
pub(crate) const GROUP_LEN_MAX: usize = 8;

/// Runs until `jobs` is closed and drained, or the ledger fails (then it replies with the
/// error and stops, so nothing after the failure is acked).
///
/// Group commit: the batches already waiting when one arrives (at most `GROUP_LEN_MAX`)
/// are appended one after the other and made durable by one flush. An fsync costs about
/// as much as appending a whole batch, so under load this halves the writer's time per
/// batch, and never delays a batch: nothing is waited for that is not already queued.
/// Replies still go out one per batch, in order, and only after the flush.
pub(crate) fn writer_loop(
    ledger: Arc<Ledger>,
    mut jobs: mpsc::Receiver<Job>,
    done: mpsc::Sender<Result<Written, Error>>,
) {
    let mut group: Vec<Job> = Vec::with_capacity(GROUP_LEN_MAX);
    while let Some(job) = jobs.blocking_recv() {
        group.push(job);
        while group.len() < GROUP_LEN_MAX {
            match jobs.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        for reply in write_group(&ledger, group.drain(..)) {
            let failed = reply.is_err();
            if done.blocking_send(reply).is_err() || failed {
                // The acker is gone (run is ending) or the ledger failed: stop taking
                // batches.
                return;
            }
        }
    }
}

/// Appends each job, flushes once, then describes each. On the first ledger error the
/// replies end with it: no later batch of the group is appended, none of them is acked.
fn write_group(ledger: &Ledger, jobs: impl Iterator<Item = Job>) -> Vec<Result<Written, Error>> {
    let mut appended = Vec::new();
    for job in jobs {
        match append(ledger, &job) {
            Ok(outcome) => appended.push((job, outcome)),
            Err(e) => return vec![Err(e)],
        }
    }
    let Some((last, _)) = appended.last() else {
        return Vec::new();
    };
    if let Err(source) = ledger.flush() {
        return vec![Err(ledger_error(last, source))];
    }
    appended
        .into_iter()
        .map(|(job, (events, checkpoints))| Ok(describe(ledger, job, &events, &checkpoints)))
        .collect()
}

fn ledger_error(job: &Job, source: ledger::Error) -> Error {
    Error::Ledger {
        batch: job.batch_no,
        first: job.incoming.first().map_or(0, |i| i.stream_seq),
        last: job.incoming.last().map_or(0, |i| i.stream_seq),
        source,
    }
}

type AppendOutcome = (Vec<Appended>, Vec<CheckpointOutcome>);

fn append(ledger: &Ledger, job: &Job) -> Result<AppendOutcome, Error> {
    let appended = ledger
        .append_batch(&job.incoming)
        .map_err(|e| ledger_error(job, e))?;
    let checkpoints = ledger
        .append_checkpoints(&job.checkpoints)
        .map_err(|e| ledger_error(job, e))?;
    assert_eq!(
        appended.len(),
        job.incoming.len(),
        "append_batch answers once per message, in order"
    );
    Ok((appended, checkpoints))
}

/// The reply for a durable batch: its tally, logs, and the touched tables' heads.
fn describe(
    ledger: &Ledger,
    job: Job,
    appended: &[Appended],
    checkpoints: &[CheckpointOutcome],
) -> Written {
    let first = job.incoming.first().map_or(0, |i| i.stream_seq);
    let last = job.incoming.last().map_or(0, |i| i.stream_seq);
    let mut tally = IngestReport {
        batches: 1,
        messages: (job.incoming.len() + job.checkpoints.len()) as u64,
        ..IngestReport::default()
    };
    for c in checkpoints {
        match c {
            CheckpointOutcome::Kept { .. } => tally.checkpoints_kept += 1,
            CheckpointOutcome::Duplicate { .. } => tally.duplicates += 1,
            // Logged as an alert by the ledger, with the reason.
            CheckpointOutcome::Quarantined { .. } => {
                tally.quarantined += 1;
                tally.checkpoints_refused += 1;
            }
        }
    }
    let mut touched = BTreeSet::<TableId>::new();
    for (inc, app) in job.incoming.iter().zip(appended) {
        match app {
            Appended::Stored { table, .. } => {
                tally.stored += 1;
                touched.insert(table.clone());
            }
            Appended::Duplicate { table, seq } => {
                tally.duplicates += 1;
                tracing::debug!(%table, seq = seq.0, stream_seq = inc.stream_seq, "duplicate event acknowledged, not stored again");
                touched.insert(table.clone());
            }
            Appended::Held {
                table,
                seq,
                missing_from,
                missing_to,
                since_ns,
            } => {
                tally.held += 1;
                tracing::warn!(%table, seq = seq.0, missing_from = missing_from.0, missing_to = missing_to.0, since_ns, stream_seq = inc.stream_seq, "event held behind a sequence gap");
            }
            Appended::Quarantined { id, reason } => {
                tally.quarantined += 1;
                let table = inc
                    .subject_table
                    .as_ref()
                    .map(|t| t.as_str())
                    .unwrap_or("?");
                tracing::warn!(
                    table,
                    stream_seq = inc.stream_seq,
                    quarantine_id = id,
                    reason,
                    "event quarantined"
                );
            }
        }
    }
    // The heads after the flush: a gap filled by this batch moves a head past the events
    // it released from hold too.
    let heads: Vec<ChainHead> = touched.iter().filter_map(|t| ledger.head(t)).collect();
    tracing::debug!(
        batch = job.batch_no,
        first,
        last,
        stored = tally.stored,
        duplicates = tally.duplicates,
        held = tally.held,
        quarantined = tally.quarantined,
        "batch durable"
    );
    Written {
        batch_no: job.batch_no,
        ack: job.ack,
        tally,
        heads,
    }
}
