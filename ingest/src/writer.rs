//! The one writer thread: append the waiting batches, flush once, read the touched tables'
//! heads, reply per batch.
//!
//! Why a dedicated OS thread and not the async runtime: sled is synchronous, and `flush`
//! waits for fsync (milliseconds). Run on a runtime worker it would stall every task
//! scheduled there (fetches, acks, heartbeats; with 2 cores, half the runtime). One thread
//! also makes the write order the fetch order, which AckPolicy::All needs: batch N is
//! acked only after every batch before it is durable. The channels in and out are bounded,
//! so a slow disk slows fetching instead of growing a queue.

use crate::alerts::{kind_of_reason, Raised};
use crate::health::Health;
use crate::{Error, IngestReport};
use ledger::attest::CheckpointOutcome;
use ledger::{Appended, Incoming, Ledger, Refused};
use schemas::api::AlertKind;
use schemas::{ChainHead, TableId};
use std::collections::BTreeSet;
use std::sync::Arc;
use tokio::sync::mpsc;

/// A batch for the writer. `ack` is the last delivered message: acking it acks the batch.
/// (Generic only so that tests can hand the writer batches without a NATS connection.)
pub(crate) struct Job<A = async_nats::jetstream::Message> {
    pub batch_no: u64,
    /// Events, in arrival order.
    pub incoming: Vec<Incoming>,
    /// Signed checkpoints, in arrival order; kept after the batch's events are appended.
    pub checkpoints: Vec<Incoming>,
    pub ack: A,
}

/// A batch that is durable: ready to be acked, with the heads to publish.
pub(crate) struct Written<A = async_nats::jetstream::Message> {
    pub batch_no: u64,
    pub ack: A,
    pub tally: IngestReport,
    /// The heads of the tables its group touched, read after the flush; only on the
    /// group's last batch, empty on the others.
    pub heads: Vec<ChainHead>,
    /// What its messages raise for the operators (`alerts`).
    pub alerts: Vec<Raised>,
}

/// Most batches one flush makes durable together (group commit).
pub(crate) const GROUP_LEN_MAX: usize = 8;

/// What the writer thread needs besides the ledger and its channels.
pub(crate) struct WriterSide {
    pub attestation_lag_max: u64,
    /// Fault counters (`health`), shared with whoever reports them.
    pub health: Arc<Health>,
    /// Alerts raised outside a batch's reply (a pause, a fence), published at once.
    pub alerts: mpsc::Sender<Raised>,
    /// Times pauses (UTC ns).
    pub clock: fn() -> i64,
    /// Commit latency and outcomes (`metrics`).
    pub metrics: crate::metrics::IngestMetrics,
}

/// Runs until `jobs` is closed and drained, or a write keeps failing while ingest stops
/// (then it replies with the error, so nothing after the failure is acked).
///
/// Group commit: the batches already waiting when one arrives (at most `GROUP_LEN_MAX`)
/// are appended together and made durable by one flush (`write_group`). An fsync costs
/// about as much as appending a whole batch, so under load this halves the writer's time
/// per batch, and never delays a batch: nothing is waited for that is not already queued.
/// Replies still go out one per batch, in order, and only after the flush.
///
/// A failed append or flush pauses ingest (`write_until_durable`): the group is written
/// again after a bounded pause until it succeeds; nothing is acked meanwhile.
pub(crate) fn writer_loop<A>(
    ledger: Arc<Ledger>,
    mut jobs: mpsc::Receiver<Job<A>>,
    done: mpsc::Sender<Result<Written<A>, Error>>,
    side: WriterSide,
) {
    let mut fenced = BTreeSet::new();
    alert_fences(&ledger, &side, &mut fenced);
    let mut group: Vec<Job<A>> = Vec::with_capacity(GROUP_LEN_MAX);
    while let Some(job) = jobs.blocking_recv() {
        group.push(job);
        while group.len() < GROUP_LEN_MAX {
            match jobs.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let started = std::time::Instant::now();
        let replies = write_until_durable(&ledger, std::mem::take(&mut group), &jobs, &side);
        let tallies = replies.iter().map(|r| r.as_ref().map(|w| &w.tally));
        side.metrics.committed(started.elapsed(), tallies);
        alert_fences(&ledger, &side, &mut fenced);
        purge_steps(&ledger, &jobs);
        for mut reply in replies {
            if let Ok(w) = &mut reply {
                attestation_stalls(&ledger, w, side.attestation_lag_max);
                side.health
                    .fenced_messages_total
                    .fetch_add(w.tally.fenced, std::sync::atomic::Ordering::SeqCst);
            }
            let failed = reply.is_err();
            if done.blocking_send(reply).is_err() || failed {
                // The acker is gone (run is ending) or ingest stopped during a pause:
                // stop taking batches.
                return;
            }
        }
    }
}

/// Runs steps of a pending quarantine purge (`ledger::purge`): one after each group, more
/// while no batch waits, so a purge holds a batch back by one step at most (at most
/// `ledger::purge::PURGE_STEP_ENTRIES` entries). A failed step is logged and tried again
/// after the next group; it stops no batch.
fn purge_steps<A>(ledger: &Ledger, jobs: &mpsc::Receiver<Job<A>>) {
    loop {
        match ledger.writer().purge_step() {
            Ok(Some(step)) if !step.done && jobs.is_empty() => continue,
            Ok(_) => return,
            Err(e) => {
                tracing::error!(error = %e, "a quarantine purge step failed; tried again after the next batch");
                return;
            }
        }
    }
}

/// Writes `group` until it is durable. A failure pauses ingest: an `IngestPaused` alert,
/// then retries after a doubling pause of at most `WRITE_RETRY_PAUSE_MAX_MS`, each a
/// fresh append whose messages the ledger recognises (idempotent) where an earlier try
/// got as far as a commit. The first success raises `IngestResumed`. Stops retrying only
/// when ingest is stopping (`jobs` closed): then the error is the reply.
fn write_until_durable<A>(
    ledger: &Ledger,
    mut group: Vec<Job<A>>,
    jobs: &mpsc::Receiver<Job<A>>,
    side: &WriterSide,
) -> Vec<Result<Written<A>, Error>> {
    let mut attempt = 0u32;
    loop {
        let error = match write_group(ledger, group) {
            Ok(replies) => {
                if let Some(since_ns) = side.health.write_succeeded() {
                    let paused_ms = ((side.clock)() - since_ns).max(0) / 1_000_000;
                    tracing::warn!(
                        attempts = attempt,
                        paused_ms,
                        "ingest resumed: writes succeed again"
                    );
                    let detail = format!("writes succeed again after {attempt} failed attempts, {paused_ms} ms paused");
                    ingest_alert(side, AlertKind::IngestResumed, detail);
                }
                return replies.into_iter().map(Ok).collect();
            }
            Err((back, error)) => {
                group = back;
                error
            }
        };
        attempt = attempt.saturating_add(1);
        if side.health.write_failed((side.clock)()) {
            let detail = format!("paused, nothing acked, retrying by itself: {error}");
            ingest_alert(side, AlertKind::IngestPaused, detail);
        }
        if jobs.is_closed() {
            tracing::error!(error = %error, "ingest stopping while paused: the batches in flight stay unacked and are delivered again");
            return vec![Err(error)];
        }
        let pause_ms = crate::health::retry_pause_ms(attempt);
        tracing::error!(attempt, pause_ms, error = %error, "write failed: ingest paused, retrying");
        std::thread::sleep(std::time::Duration::from_millis(pause_ms));
    }
}

/// Raises an ingest-wide alert (`health::INGEST_ALERT_TABLE`). Never blocks the writer: a
/// full alert queue is logged, and the state stays in `health`.
fn ingest_alert(side: &WriterSide, kind: AlertKind, detail: String) {
    let table = TableId::new(crate::health::INGEST_ALERT_TABLE).expect("a valid table id");
    let raised = Raised {
        table,
        kind,
        stream_seq: 0,
        detail,
    };
    if let Err(e) = side.alerts.try_send(raised) {
        tracing::error!(error = %e, "alert queue full or closed; alert not published");
    }
}

/// Raises `TableFenced` for each table fenced since the last call (`seen`), and keeps the
/// count of fenced tables in `health`.
fn alert_fences(ledger: &Ledger, side: &WriterSide, seen: &mut BTreeSet<TableId>) {
    let fenced = ledger.reader().fenced();
    side.health
        .fenced_tables
        .store(fenced.len() as u64, std::sync::atomic::Ordering::SeqCst);
    for (table, fence) in fenced {
        if seen.contains(&table) {
            continue;
        }
        let detail = format!(
            "{}: {}; new events kept as table_fenced quarantine entries",
            fence.check, fence.detail
        );
        let raised = Raised {
            table: table.clone(),
            kind: AlertKind::TableFenced,
            stream_seq: 0,
            detail,
        };
        if let Err(e) = side.alerts.try_send(raised) {
            tracing::error!(%table, error = %e, "alert queue full or closed; alert not published");
        }
        seen.insert(table);
    }
}

/// The alert a refusal of `inc` raises, if its reason is one operators must see now.
fn raised(inc: &Incoming, reason: &str, id: u64, what: &str) -> Option<Raised> {
    // A refused admin act names no table: it is raised as ingest-wide.
    let ingest_wide = || {
        (reason == ledger::reason::ADMIN_REFUSED)
            .then(|| TableId::new(crate::health::INGEST_ALERT_TABLE).ok())
            .flatten()
    };
    Some(Raised {
        table: inc.subject_table.clone().or_else(ingest_wide)?,
        kind: kind_of_reason(reason)?,
        stream_seq: inc.stream_seq,
        detail: format!("{reason}: {what}, quarantine entry {id}"),
    })
}

/// The alert of a refusal past a quarantine bound (none without a subject table).
fn past_bound(inc: &Incoming, reason: &str, bound: ledger::quarantine::Bound) -> Option<Raised> {
    Some(Raised {
        table: inc.subject_table.clone()?,
        kind: AlertKind::QuarantineBound,
        stream_seq: inc.stream_seq,
        detail: format!(
            "{reason}: past the {} bound; counted, not stored; the stream keeps the bytes",
            bound.as_str()
        ),
    })
}

/// Raises `AttestationStalled` for each head of `w` more than `lag_max` events past its
/// table's newest kept checkpoint (or past seq 0 when it has none).
fn attestation_stalls<A>(ledger: &Ledger, w: &mut Written<A>, lag_max: u64) {
    for head in &w.heads {
        let attested = ledger
            .reader()
            .attestation(&head.table)
            .map_or(0, |a| a.seq.0);
        let lag = head.seq.0.saturating_sub(attested);
        if lag > lag_max {
            w.alerts.push(Raised {
                table: head.table.clone(),
                kind: AlertKind::AttestationStalled,
                stream_seq: 0,
                detail: format!(
                    "{lag} events stored past the newest device-signed checkpoint (seq {attested}, head {}; bound {lag_max})",
                    head.seq.0
                ),
            });
        }
    }
}

/// A group that failed to write: its jobs, whole, and why.
type Failed<A> = (Vec<Job<A>>, Error);

/// Appends the jobs' events and then their checkpoints as one ledger call (one commit),
/// flushes once, then describes each job. One call, not one per job: the ledger writes one record, one head,
/// one round summary per table per call, so a group of n batches costs the store about
/// what one batch of n times the size does. A ledger error fails the whole group: nothing
/// of it is acked, and the jobs come back whole with the error, to be written again.
fn write_group<A>(ledger: &Ledger, mut jobs: Vec<Job<A>>) -> Result<Vec<Written<A>>, Failed<A>> {
    let Some(last_batch) = jobs.last().map(|j| j.batch_no) else {
        return Ok(Vec::new());
    };
    assert!(
        jobs.windows(2).all(|w| w[0].batch_no < w[1].batch_no),
        "a group's batches are in delivery order: acking the last acks them all"
    );
    // Moved into one call and back afterwards, not copied.
    let lens: Vec<(usize, usize)> = jobs
        .iter()
        .map(|j| (j.incoming.len(), j.checkpoints.len()))
        .collect();
    let mut incoming = Vec::with_capacity(lens.iter().map(|l| l.0).sum());
    let mut checkpoints = Vec::new();
    for job in &mut jobs {
        incoming.append(&mut job.incoming);
        checkpoints.append(&mut job.checkpoints);
    }
    let (events, kept) = match append_and_flush(ledger, &incoming, &checkpoints) {
        Ok(outcome) => outcome,
        Err(source) => {
            let error = Error::Ledger {
                batch: last_batch,
                first: incoming.first().map_or(0, |i: &Incoming| i.stream_seq),
                last: incoming.last().map_or(0, |i: &Incoming| i.stream_seq),
                source,
            };
            give_back(&mut jobs, &lens, incoming, checkpoints);
            return Err((jobs, error));
        }
    };
    // Each job gets back its messages and their outcomes, in order.
    let mut incoming = incoming.into_iter();
    let mut checkpoints = checkpoints.into_iter();
    let mut events = events.into_iter();
    let mut kept = kept.into_iter();
    let mut touched = BTreeSet::<TableId>::new();
    let mut replies: Vec<Written<A>> = jobs
        .into_iter()
        .zip(lens)
        .map(|(mut job, (n_events, n_checkpoints))| {
            job.incoming = incoming.by_ref().take(n_events).collect();
            job.checkpoints = checkpoints.by_ref().take(n_checkpoints).collect();
            let events: Vec<Appended> = events.by_ref().take(n_events).collect();
            let kept: Vec<CheckpointOutcome> = kept.by_ref().take(n_checkpoints).collect();
            describe(job, &events, &kept, &mut touched)
        })
        .collect();
    // The heads after the flush, once per group, with its last batch (acked last): they
    // are the same for every batch of the group, so publishing them per batch only sent
    // copies. A gap filled by the group moves a head past the events it released from
    // hold too.
    if let Some(last) = replies.last_mut() {
        last.heads = touched
            .iter()
            .filter_map(|t| ledger.reader().head(t))
            .collect();
    }
    assert_eq!(
        replies.last().map(|w| w.batch_no),
        Some(last_batch),
        "the group's last reply carries the last batch's ack"
    );
    Ok(replies)
}

/// Puts each job's messages back after a failed write, in order (`lens` as taken).
fn give_back<A>(
    jobs: &mut [Job<A>],
    lens: &[(usize, usize)],
    incoming: Vec<Incoming>,
    checkpoints: Vec<Incoming>,
) {
    let (mut incoming, mut checkpoints) = (incoming.into_iter(), checkpoints.into_iter());
    for (job, &(n_events, n_checkpoints)) in jobs.iter_mut().zip(lens) {
        assert!(job.incoming.is_empty() && job.checkpoints.is_empty());
        job.incoming = incoming.by_ref().take(n_events).collect();
        job.checkpoints = checkpoints.by_ref().take(n_checkpoints).collect();
    }
}

/// Appends the messages in calls of at most the ledger's bound (a batch with many messages
/// read back, or a group of them, can exceed it), all before the one flush that makes
/// them durable. Usually one call: events, then the checkpoints that sign them, in one
/// commit.
fn append_and_flush(
    ledger: &Ledger,
    incoming: &[Incoming],
    checkpoints: &[Incoming],
) -> Result<(Vec<Appended>, Vec<CheckpointOutcome>), ledger::Error> {
    let mut events = Vec::with_capacity(incoming.len());
    let mut kept = Vec::with_capacity(checkpoints.len());
    for (e, c) in call_bounds(incoming, checkpoints, ledger::APPEND_BATCH_LEN_MAX) {
        let out = ledger.writer().append(&incoming[e], &checkpoints[c])?;
        events.extend(out.events);
        kept.extend(out.checkpoints);
    }
    assert_eq!(
        (events.len(), kept.len()),
        (incoming.len(), checkpoints.len()),
        "the ledger answers once per message, in order"
    );
    ledger.flush()?;
    Ok((events, kept))
}

/// Splits a group's event and checkpoint messages (each in delivery order) into calls of
/// at most `max` messages, cut in the order the ledger judges them
/// (`ledger::checkpoint_first`): each call's range of events and of checkpoints. A
/// checkpoint lands in the call of the events before it in the stream, never later, so
/// a replica's grouping does not change what it keeps.
fn call_bounds(
    events: &[Incoming],
    checkpoints: &[Incoming],
    max: usize,
) -> Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> {
    assert!(max > 0, "a call holds at least one message");
    let mut calls = Vec::new();
    let (mut e, mut c, mut e0, mut c0) = (0, 0, 0, 0);
    while e < events.len() || c < checkpoints.len() {
        let cp_next = c < checkpoints.len()
            && events
                .get(e)
                .is_none_or(|ev| ledger::checkpoint_first(&checkpoints[c], ev));
        match cp_next {
            true => c += 1,
            false => e += 1,
        }
        if (e - e0) + (c - c0) == max {
            calls.push((e0..e, c0..c));
            (e0, c0) = (e, c);
        }
    }
    if e > e0 || c > c0 {
        calls.push((e0..e, c0..c));
    }
    calls
}

/// The reply for a durable batch: its tally and logs, without heads (`write_group` gives
/// the group's to its last batch). Adds the tables the batch touched to `touched`.
fn describe<A>(
    job: Job<A>,
    appended: &[Appended],
    checkpoints: &[CheckpointOutcome],
    touched: &mut BTreeSet<TableId>,
) -> Written<A> {
    assert_eq!(
        (job.incoming.len(), job.checkpoints.len()),
        (appended.len(), checkpoints.len()),
        "every message of a batch has its durable outcome before the batch is acked"
    );
    let first = job.incoming.first().map_or(0, |i| i.stream_seq);
    let last = job.incoming.last().map_or(0, |i| i.stream_seq);
    let mut alerts = Vec::new();
    let mut tally = IngestReport {
        batches: 1,
        messages: (job.incoming.len() + job.checkpoints.len()) as u64,
        ..IngestReport::default()
    };
    for c in checkpoints {
        count_checkpoint(&mut tally, c);
    }
    for (inc, app) in job.incoming.iter().zip(appended) {
        if let Appended::Stored { table, .. } | Appended::Duplicate { table, .. } = app {
            if !touched.contains(table) {
                touched.insert(table.clone());
            }
        }
        count_event(&mut tally, &mut alerts, inc, app);
    }
    tracing::debug!(
        batch = job.batch_no,
        first,
        last,
        stored = tally.stored,
        duplicates = tally.duplicates,
        held = tally.held,
        quarantined = tally.quarantined,
        repeats = tally.repeats,
        "batch durable"
    );
    Written {
        batch_no: job.batch_no,
        ack: job.ack,
        tally,
        heads: Vec::new(),
        alerts,
    }
}

/// Counts one checkpoint's outcome; a refused one is logged as an alert by the ledger.
fn count_checkpoint(tally: &mut IngestReport, c: &CheckpointOutcome) {
    match c {
        CheckpointOutcome::Kept { .. } => tally.checkpoints_kept += 1,
        CheckpointOutcome::Duplicate { .. }
        | CheckpointOutcome::Refused(Refused::QuarantinedBefore { .. }) => tally.duplicates += 1,
        CheckpointOutcome::Refused(Refused::Repeated { .. }) => tally.repeats += 1,
        CheckpointOutcome::Refused(Refused::Overflowed { .. }) => tally.overflowed += 1,
        CheckpointOutcome::Refused(Refused::Quarantined { .. }) => {
            tally.quarantined += 1;
            tally.checkpoints_refused += 1;
        }
    }
}

/// Counts one event's outcome, logs it, and raises the alerts a refusal calls for.
fn count_event(tally: &mut IngestReport, alerts: &mut Vec<Raised>, inc: &Incoming, app: &Appended) {
    match app {
        Appended::Stored { .. } => tally.stored += 1,
        Appended::Duplicate { table, seq } => {
            tally.duplicates += 1;
            tracing::debug!(%table, seq = seq.0, stream_seq = inc.stream_seq, "duplicate event acknowledged, not stored again");
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
        Appended::Admin { kind, first: true } => {
            tally.admin_acts += 1;
            tracing::warn!(kind, stream_seq = inc.stream_seq, "admin act taken");
        }
        Appended::Admin { first: false, .. } => tally.duplicates += 1,
        Appended::Refused(Refused::QuarantinedBefore { id }) => {
            tally.duplicates += 1;
            tracing::debug!(
                stream_seq = inc.stream_seq,
                quarantine_id = id,
                "delivered again; already quarantined, acknowledged"
            );
        }
        // Logged by the ledger (once per power of two of an entry's repeats).
        Appended::Refused(Refused::Repeated { id, reason }) => {
            tally.repeats += 1;
            tally.fenced += u64::from(*reason == ledger::reason::TABLE_FENCED);
            // A refused publisher trying again: counted into the open alert.
            alerts.extend(raised(inc, reason, *id, "sent again"));
        }
        // Logged by the ledger (once per power of two of a counter).
        Appended::Refused(Refused::Overflowed { reason, bound }) => {
            tally.overflowed += 1;
            alerts.extend(past_bound(inc, reason, *bound));
        }
        Appended::Refused(Refused::Quarantined { id, reason }) => {
            tally.quarantined += 1;
            tally.fenced += u64::from(*reason == ledger::reason::TABLE_FENCED);
            let table = inc.subject_table.as_ref().map_or("?", |t| t.as_str());
            tracing::warn!(
                table,
                stream_seq = inc.stream_seq,
                quarantine_id = id,
                reason,
                "event quarantined"
            );
            alerts.extend(raised(inc, reason, *id, "quarantined"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Chains, CHECKPOINT_EVERY};

    /// Three batches: plain events; a duplicate, a malformed message and a gap; then the
    /// gap's event and enough events that the group exceeds the ledger's call bound. Each
    /// table's controller signs a checkpoint every `CHECKPOINT_EVERY` events, sent with
    /// the batch of the event after it.
    fn jobs() -> Vec<Job<u64>> {
        let mut chains = Chains::new("wg").expect("chains");
        let now = crate::system_clock_ns();
        let mut stream_seq = 0;
        let mut checkpoints = Vec::new();
        let mut incoming = |chains: &mut Chains, checkpoints: &mut Vec<Incoming>, i: usize| {
            let table = chains.tables[i % chains.tables.len()].0.clone();
            let (checkpoint, event) = chains.next_event(i % chains.tables.len());
            let mut message = |bytes| {
                stream_seq += 1;
                Incoming {
                    bytes,
                    subject_table: Some(table.clone()),
                    stream_seq,
                    received_at_ns: now,
                    provenance: Default::default(),
                }
            };
            if let Some(c) = checkpoint {
                checkpoints.push(message(c));
            }
            message(event)
        };
        let mut batch = |n: usize| {
            let events: Vec<Incoming> = (0..n)
                .map(|i| incoming(&mut chains, &mut checkpoints, i))
                .collect();
            (events, std::mem::take(&mut checkpoints))
        };
        let first = batch(300);
        let mut second = batch(300);
        let late = second.0.remove(5);
        second.0.push(first.0[7].clone());
        second.0.push(Incoming {
            bytes: b"not an event".to_vec(),
            ..first.0[0].clone()
        });
        let mut third = batch(9_000);
        third.0.insert(0, late);
        [first, second, third]
            .into_iter()
            .enumerate()
            .map(|(n, (incoming, checkpoints))| Job {
                batch_no: n as u64 + 1,
                incoming,
                checkpoints,
                ack: 100 + n as u64,
            })
            .collect()
    }

    #[test]
    fn calls_are_cut_in_stream_order_within_the_bound() {
        let at = |seqs: &[u64]| -> Vec<Incoming> {
            seqs.iter()
                .map(|s| Incoming {
                    bytes: Vec::new(),
                    subject_table: None,
                    stream_seq: *s,
                    received_at_ns: 0,
                    provenance: Default::default(),
                })
                .collect()
        };
        // Stream: e1 e2 c3 e4 e5 c6 e7 e8 e9 c10 c11; at most 4 a call.
        let (events, cps) = (at(&[1, 2, 4, 5, 7, 8, 9]), at(&[3, 6, 10, 11]));
        let calls = call_bounds(&events, &cps, 4);
        assert_eq!(calls, vec![(0..3, 0..1), (3..6, 1..2), (6..7, 2..4)]);
        // A checkpoint that came before the events is not moved after them.
        assert_eq!(
            call_bounds(&at(&[5, 6]), &at(&[1]), 2),
            vec![(0..1, 0..1), (1..2, 1..1)]
        );
        // Library calls set no stream seqs: events first, then checkpoints.
        let calls = call_bounds(&at(&[0; 7]), &at(&[0; 4]), 4);
        assert_eq!(calls, vec![(0..4, 0..0), (4..7, 0..1), (7..7, 1..4)]);
        assert_eq!(call_bounds(&at(&[0; 2]), &[], 2), vec![(0..2, 0..0)]);
        assert!(call_bounds(&[], &[], 4).is_empty());
    }

    fn copy(jobs: &[Job<u64>]) -> Vec<Job<u64>> {
        jobs.iter()
            .map(|j| Job {
                batch_no: j.batch_no,
                incoming: j.incoming.clone(),
                checkpoints: j.checkpoints.clone(),
                ack: j.ack,
            })
            .collect()
    }

    fn open(dir: &tempfile::TempDir, name: &str) -> Ledger {
        Ledger::open(dir.path().join(name)).expect("open ledger")
    }

    #[test]
    fn a_group_is_written_as_its_batches_one_by_one_would_be() {
        let dir = tempfile::tempdir().expect("temp dir");
        let grouped = open(&dir, "grouped");
        let one_by_one = open(&dir, "one-by-one");
        let admin = Chains::new("wg").expect("chains").admin();
        for l in [&grouped, &one_by_one] {
            l.writer()
                .trust_admin_keys([admin])
                .expect("trust the bench admin");
        }

        let jobs = jobs();
        let together: Vec<Written<u64>> = write_group(&grouped, copy(&jobs))
            .map_err(|(_, e)| e)
            .expect("grouped write");
        let apart: Vec<Written<u64>> = copy(&jobs)
            .into_iter()
            .flat_map(|job| {
                write_group(&one_by_one, vec![job])
                    .map_err(|(_, e)| e)
                    .expect("single write")
            })
            .collect();

        // One reply per batch, in order, each with its own ack and its own outcomes.
        let order = |w: &[Written<u64>]| w.iter().map(|w| (w.batch_no, w.ack)).collect::<Vec<_>>();
        assert_eq!(order(&together), vec![(1, 100), (2, 101), (3, 102)]);
        assert_eq!(order(&together), order(&apart));
        for (t, a) in together.iter().zip(&apart) {
            assert_eq!(t.tally, a.tally, "batch {}", t.batch_no);
        }
        let second = &together[1].tally;
        assert_eq!(
            (second.messages, second.stored, second.duplicates, second.quarantined),
            (301, 281, 1, 1),
            "batch 2: 299 new events, 18 of them held behind the gap, a duplicate and a malformed message"
        );
        assert_eq!(second.held, 18);
        // The third batch releases the held events along with its own (the ledger counts
        // what it stored per message: the late event, then 9,000 new ones).
        assert_eq!(together[2].tally.stored, 9_001);
        assert_eq!(together[2].tally.held, 0);
        // Every checkpoint is kept, in whichever call of the group it lands. The chains
        // reach their first checkpoint (seq 45) in the third batch: 9,001 events and 208
        // checkpoints, more than one call holds (grouped or alone), so the checkpoints go
        // in the second call, with the events beyond the first 8,192, and sign events of
        // both calls.
        let checkpoints: Vec<u64> = together.iter().map(|w| w.tally.checkpoints_kept).collect();
        assert_eq!(checkpoints, vec![0, 0, 16 * (600 / CHECKPOINT_EVERY)]);
        let refused: Vec<(u64, u64)> = together
            .iter()
            .map(|w| (w.tally.checkpoints_refused, w.tally.quarantined))
            .collect();
        assert_eq!(
            refused,
            vec![(0, 0), (0, 1), (0, 0)],
            "only the malformed event"
        );
        for t in grouped.reader().heads() {
            let a = grouped.reader().attestation(&t.table).expect("attested");
            assert_eq!(
                a,
                one_by_one.reader().attestation(&t.table).expect("attested")
            );
            assert_eq!(a.seq.0, t.seq.0 / CHECKPOINT_EVERY * CHECKPOINT_EVERY);
        }

        // Same chains in both ledgers, and every event of every table is in them.
        let stats = grouped.reader().stats();
        assert_eq!(stats.events, 300 + 299 + 9_001);
        assert_eq!(grouped.reader().heads(), one_by_one.reader().heads());
        assert_eq!(
            grouped
                .reader()
                .heads()
                .iter()
                .map(|h| h.seq.0)
                .sum::<u64>(),
            300 + 300 + 9_000
        );
        // The group's heads go once, with its last batch, and say where every chain is.
        assert!(together[..2].iter().all(|w| w.heads.is_empty()));
        assert_eq!(together[2].heads, grouped.reader().heads());
        assert!(apart.iter().all(|w| !w.heads.is_empty()));
    }
}
