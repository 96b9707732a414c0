//! The API's own records (case entries and counts) kept alike on every node: a write is
//! published on the records stream (`schemas::records`), answered once JetStream stored
//! it and this node applied it, and applied by every node from the stream in its order.
//! The stream itself is reached through `RecordStream`, which `serve` wires to
//! `ingest::records`, so the API does not depend on NATS.
//!
//! Invariants: every record is applied by `apply`, whether it came from the stream or,
//! on a server without one (`--no-ingest`), straight from the request; records apply one
//! at a time in stream order; a stream seq at or below the applied one is skipped, so a
//! redelivery changes nothing; where a node resumes is the highest seq its journals hold;
//! a record the stream refuses is answered with that error and kept nowhere.

use crate::cases::{CaseError, CaseRecord};
use crate::counts::{CountRecord, CountRefused};
use crate::Shared;
use futures::future::BoxFuture;
use schemas::api::{AuditEntry, CaseView};
use schemas::count::CountEntry;
use schemas::records::{Record, RecordMsg, RECORD_VERSION};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Longest wait for this node to apply a record it published, or to reach the stream's
/// end before judging a change: past it the answer is 503, naming the stream seq.
pub const APPLY_WAIT: Duration = Duration::from_secs(30);
/// Pause before the applier asks again for a stream that did not answer at start.
pub const STATE_RETRY: Duration = Duration::from_secs(1);
/// Records in flight from the stream to the applier.
pub const DELIVERIES_MAX: usize = 64;
/// Access entries waiting to be published; past it one is counted as not shared.
pub const ACCESS_QUEUE_MAX: usize = 4096;

/// One record as the stream delivered it: its stream sequence and bytes.
pub struct Delivery {
    /// The stream sequence, from 1.
    pub stream_seq: u64,
    /// The record's JSON (`RecordMsg`).
    pub bytes: Vec<u8>,
    /// Its node signature header (`RECORD_SIGNATURE_HEADER`), if any.
    pub signature: Option<String>,
}

/// The records stream as the API uses it (`ingest::records` behind `serve`).
pub trait RecordStream: Send + Sync {
    /// Publishes `bytes` on `subject` with de-duplication id `id` and the node's
    /// `signature` header; the stream sequence once stored, or why the stream refused it.
    fn publish(
        &self,
        subject: String,
        id: String,
        bytes: Vec<u8>,
        signature: Option<String>,
    ) -> BoxFuture<'_, Result<u64, String>>;
    /// The stream's last sequence and creation time.
    fn state(&self) -> BoxFuture<'_, Result<StreamState, String>>;
    /// Every record from `from_seq` on, in stream order, of the stream created at
    /// `created_ns`, until the receiver is dropped. It ends (the receiver sees `None`)
    /// when it finds a stream of another creation time.
    fn follow(&self, from_seq: u64, created_ns: i64) -> tokio::sync::mpsc::Receiver<Delivery>;
}

/// The records stream's state as stream info gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamState {
    /// The last seq (0 when empty).
    pub last_seq: u64,
    /// When the stream was made, UTC ns (`records_origin`).
    pub created_ns: i64,
}

/// The records stream and this node's id, handed in by `serve`.
#[derive(Clone)]
pub struct RecordLink {
    /// The stream.
    pub stream: Arc<dyn RecordStream>,
    /// This ledger node's id (`serve --node-id`), if several share the stream.
    pub node: Option<String>,
    /// The key this node signs its records with, and the node keys it trusts.
    pub keys: crate::record_keys::RecordKeys,
}

impl std::fmt::Debug for RecordLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RecordLink({:?})", self.node)
    }
}

/// What applying one record did.
#[derive(Debug)]
pub enum Applied {
    /// A case entry: the case after it, or why stream order refused it.
    Case(Result<CaseView, CaseError>),
    /// A count: its journal entry, or why it was refused.
    Count(Result<CountEntry, CountRefused>),
    /// An access entry kept in the floor's log, or why it could not be.
    Access(Result<(), crate::journal::JournalError>),
}

/// Why a record was not answered with its outcome.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    /// The stream refused the record or could not be reached: nothing was kept.
    #[error("the records stream did not store it, nothing was kept: {0}")]
    Refused(String),
    /// The stream stored it, and this node has not applied it within `APPLY_WAIT`.
    #[error("the records stream stored it at seq {0}; this node has not applied it yet (RUNBOOK: a node's records lag)")]
    NotApplied(u64),
    /// This node has not reached the stream's end within `APPLY_WAIT`.
    #[error("this node's records lag the stream (applied {applied}, stream at {last}); try again (RUNBOOK: a node's records lag)")]
    Lagging {
        /// The seq this node applied through.
        applied: u64,
        /// The stream's last seq.
        last: u64,
    },
}

/// This node's side of the records stream: the link, how far it applied, and the
/// requests that wait for their record.
pub struct Records {
    link: OnceLock<RecordLink>,
    applied: tokio::sync::watch::Sender<u64>,
    waiting: Mutex<HashMap<String, tokio::sync::oneshot::Sender<Applied>>>,
    next_id: AtomicU64,
    /// Where this node's audit entries go to be published (`share_access`).
    access_out: OnceLock<tokio::sync::mpsc::Sender<AuditEntry>>,
    /// Audit entries not shared with the floor: the queue was full or the publish failed.
    access_unshared: AtomicU64,
    /// Process start, UTC ns: record ids of this run differ from an earlier run's.
    started_ns: i64,
    /// Why this node stopped applying the stream, once it did (`/ready` names it).
    stopped: OnceLock<String>,
    /// Records not applied since start: no signature by a node key this node trusts.
    refused: AtomicU64,
    /// The creation time of the stream this node applies (`records_origin`).
    origin: crate::records_origin::Origin,
}

impl Records {
    /// No link yet; applied through `applied_through` (the journals' highest seq), the
    /// stream's creation time kept in `state_dir`.
    pub fn new(applied_through: u64, started_ns: i64, state_dir: &std::path::Path) -> Records {
        Records {
            link: OnceLock::new(),
            applied: tokio::sync::watch::channel(applied_through).0,
            waiting: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            access_out: OnceLock::new(),
            access_unshared: AtomicU64::new(0),
            started_ns,
            stopped: OnceLock::new(),
            refused: AtomicU64::new(0),
            origin: crate::records_origin::Origin::new(state_dir),
        }
    }

    /// Why this node no longer applies the records stream; `None` while it does.
    pub fn stopped(&self) -> Option<&str> {
        self.stopped.get().map(String::as_str)
    }

    fn stop_applying(&self, why: String) {
        if self.stopped.set(why.clone()).is_ok() {
            tracing::error!(
                "applying the records stream stopped: {why} (RUNBOOK: a node's records lag)"
            );
        }
    }

    /// Sets the link once; false if one was set before.
    pub fn link(&self, link: RecordLink) -> bool {
        self.link.set(link).is_ok()
    }

    /// Records not applied since start for want of a trusted node signature.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// This node's audit entries not shared with the floor since start.
    pub fn access_unshared(&self) -> u64 {
        self.access_unshared.load(Ordering::Relaxed)
    }

    /// The highest stream seq this node applied.
    pub fn applied_through(&self) -> u64 {
        *self.applied.borrow()
    }

    fn waiting(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, tokio::sync::oneshot::Sender<Applied>>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Applies one record (blocking: the journals sync). `stream_seq` is `None` on a server
/// without the stream.
fn apply_record(st: &Shared, record: Record, stream_seq: Option<u64>) -> Applied {
    match record {
        Record::Case {
            case_id,
            at_ns,
            author,
            role,
            action,
        } => Applied::Case(st.cases.record(CaseRecord {
            case_id,
            action,
            author,
            role,
            at_ns,
            stream_seq,
        })),
        Record::Count {
            signed,
            entered_by,
            entered_at_ns,
        } => Applied::Count(st.counts.record(CountRecord {
            signed,
            entered_by,
            entered_at_ns,
            stream_seq,
        })),
        Record::Access { entry } => Applied::Access(
            st.floor_audit
                .append(|_| AuditEntry {
                    stream_seq,
                    ..entry
                })
                .map(|_| ()),
        ),
    }
}

/// Whether an outcome is this node's own failure to write (a journal error), which the
/// stream's order did not decide: then the record is not passed.
fn failed_here(outcome: &Applied) -> Option<String> {
    match outcome {
        Applied::Case(Err(e @ CaseError::Journal(_))) => Some(e.to_string()),
        Applied::Count(Err(e @ CountRefused::Journal(_))) => Some(e.to_string()),
        Applied::Access(Err(e)) => Some(e.to_string()),
        _ => None,
    }
}

/// Applies one delivery in stream order (blocking). A seq at or below the applied one is
/// skipped; an unreadable record is logged and passed (only API nodes publish here). A
/// journal that fails is an error and the seq is not passed: the node stops applying,
/// and a restart resumes at that record.
pub fn apply(st: &Shared, d: Delivery) -> Result<(), String> {
    let r = &st.records;
    if d.stream_seq <= r.applied_through() {
        return Ok(());
    }
    let signed = match r.link.get() {
        Some(link) => link.keys.check(&d.bytes, d.signature.as_deref()),
        None => Ok(()),
    };
    let decoded = signed.map(|()| serde_json::from_slice::<RecordMsg>(&d.bytes));
    match decoded {
        Err(why) => refuse_unsigned(r, &d, &why),
        Ok(Ok(m)) if m.v == RECORD_VERSION => {
            let outcome = apply_record(st, m.record, Some(d.stream_seq));
            let failed = failed_here(&outcome);
            match (&outcome, &failed) {
                (_, Some(_)) => {}
                (Applied::Case(Err(e)), _) => tracing::info!(
                    seq = d.stream_seq,
                    "case record refused in stream order: {e}"
                ),
                (Applied::Count(Err(e)), _) => tracing::info!(
                    seq = d.stream_seq,
                    "count record refused in stream order: {e}"
                ),
                _ => {}
            }
            if let Some(tx) = r.waiting().remove(&m.id) {
                // The request may have given up waiting: nobody to tell.
                let _ = tx.send(outcome);
            }
            if let Some(why) = failed {
                return Err(format!("record at seq {}: {why}", d.stream_seq));
            }
        }
        Ok(Ok(m)) => tracing::error!(
            seq = d.stream_seq,
            v = m.v,
            "a record of an unknown version: skipped"
        ),
        Ok(Err(e)) => tracing::error!(seq = d.stream_seq, "an unreadable record: skipped: {e}"),
    }
    assert!(
        d.stream_seq > r.applied_through(),
        "records apply in stream order"
    );
    r.applied.send_replace(d.stream_seq);
    Ok(())
}

/// Logs and counts a record passed unapplied for want of a trusted node signature,
/// naming its stream seq and the node it claims (unproven).
fn refuse_unsigned(r: &Records, d: &Delivery, why: &str) {
    let claimed = serde_json::from_slice::<serde_json::Value>(&d.bytes)
        .ok()
        .and_then(|v| v.get("node").and_then(|n| n.as_str()).map(str::to_string))
        .unwrap_or_else(|| "none".into());
    r.refused.fetch_add(1, Ordering::Relaxed);
    tracing::error!(
        seq = d.stream_seq,
        claimed_node = %claimed,
        "a record not applied: {why} (THREATS.md: who can write a record)"
    );
}

/// Waits until this node applied through `seq`; false after `APPLY_WAIT`.
async fn applied_through(st: &Shared, seq: u64) -> bool {
    let mut rx = st.records.applied.subscribe();
    let reached = async move { rx.wait_for(|a| *a >= seq).await.is_ok() };
    matches!(tokio::time::timeout(APPLY_WAIT, reached).await, Ok(true))
}

/// Why a stream whose last seq is `last` cannot be this node's when it applied through
/// `applied`: the stream was deleted or made again, and its seqs start over. Following it
/// would skip records, so nothing is applied or written until an operator acts.
fn stream_behind(last: u64, applied: u64) -> Option<String> {
    (last < applied).then(|| {
        format!(
            "the records stream ends at seq {last} but this node applied through seq {applied}: \
             the stream was lost or made again (RUNBOOK: the records stream lost)"
        )
    })
}

/// Waits until this node applied every record the stream held when asked, so a change
/// is judged on the floor's records, not on a lagging node's. Nothing without a stream.
pub async fn catch_up(st: &Shared) -> Result<(), SubmitError> {
    let Some(link) = st.records.link.get() else {
        return Ok(());
    };
    if let Some(why) = st.records.stopped() {
        return Err(SubmitError::Refused(format!(
            "this node stopped applying records: {why}"
        )));
    }
    // Read before the state: a record applied meanwhile is within the state's last seq.
    let applied = st.records.applied_through();
    let state = link.stream.state().await.map_err(SubmitError::Refused)?;
    if let Err(why) = judge_stream(st, state, applied).await {
        st.records.stop_applying(why.clone());
        return Err(SubmitError::Refused(why));
    }
    let last = state.last_seq;
    match applied_through(st, last).await {
        true => Ok(()),
        false => Err(SubmitError::Lagging {
            applied: st.records.applied_through(),
            last,
        }),
    }
}

/// Records `record`: through the stream when there is one (answered once this node
/// applied it), else applied here at once.
pub async fn submit(st: &Shared, record: Record) -> Result<Applied, SubmitError> {
    let Some(link) = st.records.link.get().cloned() else {
        let s = st.clone();
        return tokio::task::spawn_blocking(move || apply_record(&s, record, None))
            .await
            .map_err(|e| SubmitError::Refused(e.to_string()));
    };
    let r = &st.records;
    let n = r.next_id.fetch_add(1, Ordering::Relaxed);
    let node = link.node.clone();
    let id = format!("{}:{}:{n}", node.as_deref().unwrap_or("-"), r.started_ns);
    let msg = RecordMsg {
        v: RECORD_VERSION,
        node,
        id: id.clone(),
        record,
    };
    let bytes = serde_json::to_vec(&msg).map_err(|e| SubmitError::Refused(e.to_string()))?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    r.waiting().insert(id.clone(), tx);
    let sig = link.keys.sign(&bytes);
    let seq = match link
        .stream
        .publish(msg.subject(), id.clone(), bytes, sig)
        .await
    {
        Ok(seq) => seq,
        Err(e) => {
            r.waiting().remove(&id);
            return Err(SubmitError::Refused(e));
        }
    };
    match tokio::time::timeout(APPLY_WAIT, rx).await {
        Ok(Ok(outcome)) => Ok(outcome),
        // Applied by an earlier run (a retried id) or not yet: either way not answered.
        _ => {
            r.waiting().remove(&id);
            Err(SubmitError::NotApplied(seq))
        }
    }
}

/// Why the stream in `state` is not the one this node applied: it ends below the
/// applied seq, or it was created at another time (`records_origin`).
/// `applied` is this node's applied seq read before `state` was asked for: a record
/// applied after the state answered would look like a stream that went back.
async fn judge_stream(st: &Shared, state: StreamState, applied: u64) -> Result<(), String> {
    if let Some(why) = stream_behind(state.last_seq, applied) {
        return Err(why);
    }
    let s = st.clone();
    let judged = tokio::task::spawn_blocking(move || s.records.origin.judge(state.created_ns));
    judged.await.map_err(|e| e.to_string())?
}

/// The stream's creation time once it answers and is the one this node applied; why
/// not otherwise. `None` when `stop` came first.
async fn applier_start_check(
    st: &Shared,
    link: &RecordLink,
    stop: &mut tokio::sync::watch::Receiver<bool>,
) -> Option<Result<i64, String>> {
    loop {
        let applied = st.records.applied_through();
        match link.stream.state().await {
            Ok(state) => {
                let judged = judge_stream(st, state, applied).await;
                return Some(judged.map(|()| state.created_ns));
            }
            Err(e) => tracing::warn!("the records stream did not answer at start: {e}"),
        }
        tokio::select! {
            _ = tokio::time::sleep(STATE_RETRY) => {}
            _ = stop.wait_for(|s| *s) => return None,
        }
    }
}

/// Applies the records stream to this node until `stop`: from the seq after the highest
/// its journals hold, one record at a time on the blocking pool. Nothing without a link.
pub async fn run_applier(st: Shared, mut stop: tokio::sync::watch::Receiver<bool>) {
    let Some(link) = st.records.link.get().cloned() else {
        return;
    };
    let (tx, rx) = tokio::sync::mpsc::channel(ACCESS_QUEUE_MAX);
    if st.records.access_out.set(tx).is_ok() {
        tokio::spawn(publish_access(st.clone(), link.clone(), rx));
    }
    let created_ns = match applier_start_check(&st, &link, &mut stop).await {
        None => return,
        Some(Err(why)) => return st.records.stop_applying(why),
        Some(Ok(c)) => c,
    };
    let from = st.records.applied_through() + 1;
    tracing::info!(from_seq = from, "applying the records stream");
    let mut deliveries = link.stream.follow(from, created_ns);
    loop {
        let d = tokio::select! {
            d = deliveries.recv() => d,
            _ = stop.wait_for(|s| *s) => return,
        };
        let Some(d) = d else {
            let applied = st.records.applied_through();
            let why = match link.stream.state().await {
                Ok(state) => judge_stream(&st, state, applied).await.err(),
                Err(e) => Some(e),
            };
            let why = why.unwrap_or_else(|| "its follower ended".into());
            return st
                .records
                .stop_applying(format!("the records stream: {why}"));
        };
        let s = st.clone();
        let failed = match tokio::task::spawn_blocking(move || apply(&s, d)).await {
            Ok(applied) => applied.err(),
            Err(e) => Some(e.to_string()),
        };
        if let Some(e) = failed {
            st.records.stop_applying(e);
            return;
        }
    }
}

/// The audit log a page reads: this node's, or the floor's. Without a records stream the
/// node's log is the floor's (one node).
pub fn audit_log(st: &Shared, floor: bool) -> &crate::journal::Journal {
    match floor && st.records.link.get().is_some() {
        true => &st.floor_audit,
        false => &st.audit,
    }
}

/// Queues a copy of this node's audit entry for the floor's log; never blocks. A full
/// queue counts it as not shared (`access_unshared`). Nothing without a stream.
pub fn share_access(st: &Shared, entry: AuditEntry) {
    let Some(out) = st.records.access_out.get() else {
        return;
    };
    let node = st.records.link.get().and_then(|l| l.node.clone());
    if out.try_send(AuditEntry { node, ..entry }).is_err() {
        st.records.access_unshared.fetch_add(1, Ordering::Relaxed);
    }
}

/// Publishes this node's audit entries on the records stream, one at a time, in order.
/// A refused publish is logged and counted (`access_unshared`); the node's log keeps it.
async fn publish_access(
    st: Shared,
    link: RecordLink,
    mut entries: tokio::sync::mpsc::Receiver<AuditEntry>,
) {
    while let Some(entry) = entries.recv().await {
        let id = format!(
            "{}:audit:{}:{}",
            link.node.as_deref().unwrap_or("-"),
            entry.id,
            st.records.started_ns
        );
        let msg = RecordMsg {
            v: RECORD_VERSION,
            node: link.node.clone(),
            id: id.clone(),
            record: Record::Access { entry },
        };
        let published = match serde_json::to_vec(&msg) {
            Ok(bytes) => {
                let sig = link.keys.sign(&bytes);
                link.stream.publish(msg.subject(), id, bytes, sig).await
            }
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = published {
            st.records.access_unshared.fetch_add(1, Ordering::Relaxed);
            tracing::warn!("an audit entry not shared with the floor: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemas::api::{CaseAction, Role};
    use schemas::{RoundId, TableId};

    /// A node's state in `dir`, with no link: records arrive only through `apply`.
    fn node(dir: &std::path::Path) -> Shared {
        let ledger = Arc::new(ledger::Ledger::open(dir.join("ledger")).unwrap());
        let access = crate::auth::AccessConfig {
            tokens: vec![crate::auth::TokenConfig {
                name: "sam".into(),
                role: Role::Surveillance,
                token: "surveillance-token-000000000001".into(),
                token_hash: None,
            }],
            count_keys: vec![],
        };
        let (_stop, rx) = tokio::sync::watch::channel(false);
        crate::AppState::new(
            ledger,
            &access,
            &dir.join("api"),
            &dir.join("readmodel"),
            || 7,
            rx,
            crate::FinanceSetup::default(),
        )
        .unwrap()
    }

    fn case(id: Option<u64>, node: &str, n: u64, action: CaseAction) -> Vec<u8> {
        let m = RecordMsg {
            v: RECORD_VERSION,
            node: Some(node.into()),
            id: format!("{node}:0:{n}"),
            record: Record::Case {
                case_id: id,
                at_ns: n as i64,
                author: "sam".into(),
                role: Role::Surveillance,
                action,
            },
        };
        serde_json::to_vec(&m).unwrap()
    }

    /// The stream of a race: A opens, A and B both open (ids from stream order), A and B
    /// both close case 1 (the second is refused), then a delivery repeated.
    fn stream() -> Vec<Delivery> {
        let opened = |title: &str| CaseAction::Opened {
            table: TableId::new("T-1").unwrap(),
            round: RoundId(1),
            title: title.into(),
        };
        let close = |d: &str| CaseAction::Closed { decision: d.into() };
        let bytes = [
            case(None, "a", 1, opened("first")),
            case(None, "b", 1, opened("from b")),
            case(None, "a", 2, opened("from a")),
            case(Some(1), "b", 2, close("paid by B")),
            case(Some(1), "a", 3, close("paid by A")),
        ];
        bytes
            .into_iter()
            .enumerate()
            .map(|(i, bytes)| Delivery {
                stream_seq: i as u64 + 1,
                bytes,
                signature: None,
            })
            .collect()
    }

    /// Two nodes applying one stream hold the same cases; a redelivery and a restart
    /// change nothing; the later close of a race is refused on both.
    #[test]
    fn every_node_applies_the_stream_alike_and_once() {
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let nodes: Vec<Shared> = dirs.iter().map(|d| node(d.path())).collect();
        for n in &nodes {
            for d in stream() {
                apply(n, d).unwrap();
            }
            let again = stream().remove(2);
            apply(n, again).unwrap();
            assert_eq!(n.records.applied_through(), 5);
        }
        let views = |n: &Shared| n.cases.list(None);
        assert_eq!(views(&nodes[0]), views(&nodes[1]));
        let v = views(&nodes[0]);
        let titles: Vec<&str> = v.iter().map(|c| c.title.as_str()).collect();
        assert_eq!(
            titles,
            ["from a", "from b", "first"],
            "ids 3, 2, 1 by stream order"
        );
        let first = nodes[0].cases.get(1).unwrap();
        assert_eq!(first.decision.as_deref(), Some("paid by B"));
        assert_eq!(first.entries.len(), 2, "the later close is refused");
        drop(nodes);
        let reopened = node(dirs[1].path());
        assert_eq!(
            reopened.records.applied_through(),
            4,
            "resumes after the last kept seq"
        );
        for d in stream() {
            apply(&reopened, d).unwrap();
        }
        assert_eq!(reopened.cases.get(1).unwrap().entries.len(), 2);
        assert_eq!(reopened.cases.list(None).len(), 3);
    }

    /// A journal that fails does not pass its record: the seq stays unapplied, and the
    /// same delivery applies once the journal writes again.
    #[test]
    fn a_failed_journal_write_keeps_the_record_unapplied() {
        let dir = tempfile::tempdir().unwrap();
        let n = node(dir.path());
        n.cases.journal().tear_next_write(10);
        let err = apply(&n, stream().remove(0)).unwrap_err();
        assert!(err.contains("seq 1"), "{err}");
        assert_eq!(
            (n.records.applied_through(), n.cases.list(None).len()),
            (0, 0)
        );
        apply(&n, stream().remove(0)).unwrap();
        assert_eq!(
            (n.records.applied_through(), n.cases.list(None).len()),
            (1, 1)
        );
    }
}
