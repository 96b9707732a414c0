//! A NATS host's power loss, emulated: JetStream acknowledges a publish before it fsyncs
//! (`sync_interval`, two minutes by default), so a power cut loses the stream's newest
//! writes. The test kills `nats-server` with SIGKILL, cuts the tail of its newest message
//! block (the writes the disk had not taken), and restarts it on the same store. The
//! stream comes back shorter than it was acknowledged; its next messages reuse the lost
//! stream seqs.
//!
//! The device outbox closes that window: a device keeps each event until the ledger's
//! durable head covers it, and republishes what the head does not cover. Two cases: the
//! lost messages were already stored by ingest (the ledger keeps them; nothing to redo),
//! and they were not (ingest stopped; the outbox republishes them). Either way every event
//! is stored once and every chain verifies. Every wait is bounded; nothing asserts on time.

mod common;

use common::{floor_near_now, open, Running};
use ledger::Ledger;
use schemas::{subjects, Hash32, TableId};
use simulator::{FaultPlan, PublishOptions, PublishReport};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(90);
const TABLES: usize = 3;
const ROUNDS: u64 = 40;
const RATE: f64 = 4.0;
const SEED: u64 = 7_707;
/// Messages in the stream before the power cut.
const BEFORE_CUT_MIN: u64 = 300;
/// Bytes cut from the newest message block: tens of ~1 KB events.
const CUT_BYTES: u64 = 40_000;

/// Publishes the floor once with outboxes on (republish after 1 s).
async fn publish_once(url: String) -> PublishReport {
    let options = PublishOptions {
        stream_wait: Duration::from_secs(60),
        ..PublishOptions::with_outbox(Duration::from_secs(1), Duration::from_secs(60))
    };
    let floor = floor_near_now(TABLES, SEED, FaultPlan::payout_errors(0.05)).expect("floor");
    simulator::publish_floor(&url, floor.tables, ROUNDS, Some(RATE), options)
        .await
        .unwrap_or_else(|e| panic!("the device gave up instead of using its outbox: {e}"))
}

/// The stream's last sequence (0 before it exists).
async fn stream_last_seq(url: &str) -> u64 {
    let js = async_nats::jetstream::new(async_nats::connect(url).await.expect("connect"));
    match js.get_stream(subjects::STREAM).await {
        Ok(mut s) => s.info().await.expect("stream info").state.last_sequence,
        Err(_) => 0,
    }
}

/// The newest (largest-numbered) message block of the events stream.
fn newest_block(store: &Path) -> PathBuf {
    let msgs = store
        .join("jetstream")
        .join("$G")
        .join("streams")
        .join(subjects::STREAM)
        .join("msgs");
    let block_number = |p: &PathBuf| -> u64 {
        let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        stem.parse().unwrap_or(0)
    };
    std::fs::read_dir(&msgs)
        .unwrap_or_else(|e| panic!("reading {}: {e}", msgs.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "blk"))
        .max_by_key(block_number)
        .expect("a message block")
}

/// SIGKILL, the newest block's tail cut (its index removed, so the server rebuilds it
/// from the blocks), restart. Returns the stream's last seq before and after.
fn power_cut(nats: &mut natsd::NatsServer, rt: &tokio::runtime::Runtime) -> (u64, u64) {
    let url = nats.url();
    let before = rt.block_on(stream_last_seq(&url));
    nats.kill9().expect("kill9");
    let block = newest_block(&nats.store_dir());
    let len = std::fs::metadata(&block).expect("block").len();
    let cut = CUT_BYTES.min(len / 2);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&block)
        .expect("open block");
    f.set_len(len - cut).expect("cut the block's tail");
    let index = block.with_file_name("index.db");
    if index.exists() {
        std::fs::remove_file(index).expect("remove the stream's index");
    }
    nats.restart().expect("restart");
    let after = rt.block_on(stream_last_seq(&url));
    eprintln!(
        "power loss: cut {cut} of {len} bytes of {}; stream last seq {before} -> {after}",
        block.display()
    );
    (before, after)
}

/// Waits until `f` holds, bounded by `WAIT`.
fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every published event is stored once, in order, and nothing is held or quarantined.
fn assert_stored_once(ledger: &Ledger, published: &PublishReport) {
    let mut want: BTreeMap<TableId, Vec<(u64, Hash32)>> = BTreeMap::new();
    for r in &published.events {
        want.entry(r.table.clone())
            .or_default()
            .push((r.seq.0, r.hash));
    }
    for (table, events) in &want {
        let got: Vec<(u64, Hash32)> = ledger
            .reader()
            .events(table, 1..=u64::MAX)
            .map(|e| e.map(|e| (e.seq.0, e.hash)).expect("readable event"))
            .collect();
        assert_eq!(
            &got, events,
            "table {table}: stored exactly what was published"
        );
    }
    assert_eq!(
        ledger.reader().tables().len(),
        want.len(),
        "no table beyond ours"
    );
    assert!(
        ledger.reader().gaps().is_empty(),
        "nothing held: {:?}",
        ledger.reader().gaps()
    );
    // Only checkpoints may be refused: one that survived the cut while events before it
    // were lost names a seq beyond the head until the outbox republishes them.
    let quarantined = ledger.reader().quarantine_counts();
    let checkpoint_reasons = [
        ledger::attest::reason::CHECKPOINT_BEYOND_HEAD,
        ledger::attest::reason::UNKNOWN_DEVICE,
    ];
    assert!(
        quarantined
            .keys()
            .all(|r| checkpoint_reasons.contains(&r.as_str())),
        "{quarantined:?}"
    );
    let verified = ledger.verifier().verify().expect("verify");
    assert!(verified.is_ok(), "chains verify: {verified:?}");
    eprintln!(
        "power loss: {} events published, each stored once; outbox republished {}; quarantined {:?}",
        published.events.len(),
        published.republished,
        ledger.reader().quarantine_counts()
    );
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn messages_lost_after_ingest_stored_them_change_nothing() {
    let mut nats = natsd::NatsServer::start().expect("nats-server");
    let url = nats.url();
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = open(dir.path());
    let rt = runtime();
    let ingest = rt.block_on(async { Running::start(&url, ledger.clone()) });
    let publisher = rt.spawn(publish_once(url.clone()));
    wait_until("the ledger fills", || {
        ledger.reader().stats().events >= BEFORE_CUT_MIN
    });
    let (before, after) = power_cut(&mut nats, &rt);
    assert!(
        after < before,
        "the cut lost acknowledged messages ({before} -> {after})"
    );
    let published = rt.block_on(publisher).expect("publisher task");
    rt.block_on(ingest.stop());
    assert_stored_once(&ledger, &published);
}

#[test]
fn messages_lost_before_ingest_stored_them_come_back_from_the_outbox() {
    let mut nats = natsd::NatsServer::start().expect("nats-server");
    let url = nats.url();
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = open(dir.path());
    let rt = runtime();
    // The stream exists before the devices publish, as ingest creates it at start.
    rt.block_on(common::context(&url));
    let publisher = rt.spawn(publish_once(url.clone()));
    wait_until("the stream fills", || {
        rt.block_on(stream_last_seq(&url)) >= BEFORE_CUT_MIN
    });
    let (before, after) = power_cut(&mut nats, &rt);
    assert!(
        after < before,
        "the cut lost acknowledged messages ({before} -> {after})"
    );
    assert_eq!(
        ledger.reader().stats().events,
        0,
        "ingest had stored none of them"
    );
    let ingest = rt.block_on(async { Running::start(&url, ledger.clone()) });
    let published = rt.block_on(publisher).expect("publisher task");
    rt.block_on(ingest.stop());
    assert_stored_once(&ledger, &published);
}
