//! A flood of distinct refused messages from one source, against a real nats-server and a
//! ledger opened as `serve` opens it, compressed in time: windows of 1 ms of bus time
//! stand for minutes, so the flood's 10,080 windows are a week of them, sent as fast as
//! one publisher gets acks from the bus. The limits are small, so a week's flood reaches
//! every one of them. What it must show:
//!
//! - the ledger grows by at most the quarantine's total limit, beside what the other
//!   tables store;
//! - another table's events, published during the flood, all arrive (their
//!   publish-to-durable times are printed for BENCHMARKS.md, asserted only against a
//!   generous bound);
//! - a fenced table's events, published during the flood, are all kept, none counted past
//!   a limit;
//! - the stream keeps every flood message (nothing is pushed out);
//! - after a signed purge, the flooding source's refusals are kept again.

mod common;

use common::{context, floor_near_now, open, publish_as_device, Running};
use futures::StreamExt;
use ledger::quarantine_limits::{charge, QuarantineLimits};
use ledger::{reason, Ledger};
use schemas::TableId;
use simulator::{FaultPlan, Published};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A week of one-minute windows, one window per millisecond.
const WINDOWS: u64 = 7 * 24 * 60;
const WINDOW_NS: i64 = 1_000_000;
/// Each flood message's length.
const FLOOD_LEN: usize = 512;
/// Flood publishes awaiting their ack at once.
const IN_FLIGHT: usize = 256;
/// How long any wait may take: a behaviour bound, not a speed goal.
const WAIT: Duration = Duration::from_secs(60);

fn limits() -> QuarantineLimits {
    QuarantineLimits {
        window_ns: WINDOW_NS,
        source_entries_per_window: 2,
        source_bytes_per_window: 2 * charge(FLOOD_LEN),
        all_entries_per_window: 8,
        all_bytes_per_window: 8 * charge(FLOOD_LEN),
        source_bytes_max: 4 << 20,
        total_bytes_max: 6 << 20,
    }
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut n = 0;
    for e in std::fs::read_dir(dir).expect("read dir") {
        let e = e.expect("entry");
        let m = e.metadata().expect("metadata");
        n += if m.is_dir() {
            dir_bytes(&e.path())
        } else {
            m.blocks() * 512
        };
    }
    n
}

/// Distinct garbage number `i`: no decoder reads it.
fn garbage(i: u64) -> Vec<u8> {
    let mut b = format!("\u{0}flood #{i} ").into_bytes();
    b.resize(FLOOD_LEN, b'x');
    b
}

/// Publishes distinct garbage on `table`'s subject for `windows` ms, as fast as the bus
/// acks it; returns how many.
async fn flood(js: async_nats::jetstream::Context, table: String, from: u64, windows: u64) -> u64 {
    let subject = format!("tables.{table}.events");
    let end = Instant::now() + Duration::from_millis(windows);
    let mut acks = futures::stream::FuturesUnordered::new();
    let mut sent = from;
    while Instant::now() < end {
        while acks.len() < IN_FLIGHT {
            let mut headers = async_nats::HeaderMap::new();
            headers.insert("Nats-Msg-Id", format!("flood-{sent}").as_str());
            let ack = js
                .publish_with_headers(subject.clone(), headers, garbage(sent).into())
                .await
                .expect("publish");
            acks.push(std::future::IntoFuture::into_future(ack));
            sent += 1;
        }
        acks.next()
            .await
            .expect("an ack")
            .expect("the stream's ack");
    }
    while let Some(ack) = acks.next().await {
        ack.expect("the stream's ack");
    }
    sent - from
}

/// Publishes `events` one every `gap`, each after the last one's ack; returns each seq's
/// publish instant.
async fn trickle(
    js: async_nats::jetstream::Context,
    events: Vec<Published>,
    gap: Duration,
) -> Vec<(u64, Instant)> {
    let mut out = Vec::new();
    for p in events {
        out.push((p.event.seq.0, Instant::now()));
        publish_as_device(&js, std::slice::from_ref(&p)).await;
        tokio::time::sleep(gap).await;
    }
    out
}

/// When each durable head of `table` arrived (`ledger.<table>.head`, published after the
/// flush), until `last` is durable.
async fn heads(client: async_nats::Client, table: TableId, last: u64) -> Vec<(u64, Instant)> {
    let mut sub = client
        .subscribe(schemas::subjects::head_subject(&table))
        .await
        .expect("subscribe");
    let mut out = Vec::new();
    while let Ok(Some(m)) = tokio::time::timeout(WAIT, sub.next()).await {
        let v: serde_json::Value = serde_json::from_slice(&m.payload).expect("head JSON");
        let seq = v["seq"].as_u64().expect("head seq");
        out.push((seq, Instant::now()));
        if seq >= last {
            break;
        }
    }
    out
}

/// Each published event's publish-to-durable time, from the first head at or past it.
fn latencies(published: &[(u64, Instant)], durable: &[(u64, Instant)]) -> Vec<Duration> {
    let mut out: Vec<Duration> = published
        .iter()
        .map(|(seq, at)| {
            let (_, seen) = durable
                .iter()
                .find(|(s, _)| s >= seq)
                .unwrap_or_else(|| panic!("seq {seq} never durable"));
            seen.saturating_duration_since(*at)
        })
        .collect();
    out.sort();
    out
}

async fn until(
    ledger: &Arc<Ledger>,
    what: &str,
    f: impl Fn(&Ledger) -> bool + Send + Sync + Clone + 'static,
) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (l, f2) = (ledger.clone(), f.clone());
        if tokio::task::spawn_blocking(move || f2(&l))
            .await
            .expect("read")
        {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A table's opening and `rounds` rounds; the rest of its rounds after.
fn table_events(
    floor: &mut simulator::Floor,
    i: usize,
    rounds: usize,
) -> (Vec<Published>, Vec<Published>) {
    let t = &mut floor.tables[i];
    let opening = t.opening_events().expect("opening");
    let mut rest = Vec::new();
    for _ in 0..rounds {
        rest.extend(t.play_round().expect("round").events);
    }
    (opening, rest)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_weeks_flood_fills_only_its_limits_and_other_tables_go_on() {
    let server = natsd::NatsServer::start().expect("nats-server");
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = open(dir.path());
    ledger
        .writer()
        .set_quarantine_limits(&limits())
        .expect("limits");
    let ingest = Running::start(&server.url(), ledger.clone());
    let js = context(&server.url()).await;
    let mut floor = floor_near_now(2, 17, FaultPlan::none()).expect("floor");
    let (calm_open, calm) = table_events(&mut floor, 0, 3);
    let (fenced_open, fenced) = table_events(&mut floor, 1, 2);
    let (calm_t, fenced_t) = (
        calm_open[0].event.table.clone(),
        fenced_open[0].event.table.clone(),
    );
    publish_as_device(&js, &calm_open).await;
    publish_as_device(&js, &fenced_open).await;
    let (c_last, f_last) = (
        calm_open.last().unwrap().event.seq.0,
        fenced_open.last().unwrap().event.seq.0,
    );
    let (ct, ft) = (calm_t.clone(), fenced_t.clone());
    until(&ledger, "the openings stored", move |l| {
        l.reader().head(&ct).map(|h| h.seq.0) == Some(c_last)
            && l.reader().head(&ft).map(|h| h.seq.0) == Some(f_last)
    })
    .await;
    ledger.writer().fence_after_read_error(
        &fenced_t,
        ledger::Error::BadSetting("fenced by the test".into()),
    );
    let before = dir_bytes(dir.path());

    // The flood, with the calm table's and the fenced table's rounds trickled through it.
    let client = async_nats::connect(server.url()).await.expect("connect");
    let calm_last = calm.last().unwrap().event.seq.0;
    let watch = tokio::spawn(heads(client, calm_t.clone(), calm_last));
    let gap = Duration::from_millis(WINDOWS) / calm.len().max(fenced.len()) as u32;
    let started = Instant::now();
    let flooding = tokio::spawn(flood(js.clone(), "FLOOD-1".into(), 0, WINDOWS));
    let calm_pub = tokio::spawn(trickle(js.clone(), calm.clone(), gap));
    let fenced_pub = tokio::spawn(trickle(js.clone(), fenced.clone(), gap));
    let sent = flooding.await.expect("flood");
    let flood_secs = started.elapsed().as_secs_f64();
    let published = calm_pub.await.expect("calm");
    fenced_pub.await.expect("fenced");
    let durable = watch.await.expect("heads");
    let caught_up = started.elapsed().as_secs_f64();

    // Every calm event arrived; every fenced one is kept; the stream kept the flood.
    assert_eq!(
        ledger.reader().head(&calm_t).map(|h| h.seq.0),
        Some(calm_last)
    );
    let times = latencies(&published, &durable);
    let p = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    assert!(p(1.0) < WAIT, "a calm event waited {:?}", p(1.0));
    let n_fenced = fenced.len() as u64;
    let ft = fenced_t.clone();
    until(&ledger, "every fenced event kept", move |l| {
        l.reader()
            .quarantine_page(Some(reason::TABLE_FENCED), Some(&ft), 0, 1)
            .expect("page")
            .0
            == n_fenced
    })
    .await;
    let mut stream = js
        .get_stream(schemas::subjects::STREAM)
        .await
        .expect("stream");
    let info = stream.info().await.expect("info").state.clone();
    assert!(
        info.messages >= sent,
        "the stream keeps every flood message"
    );
    until(&ledger, "the flood ingested", {
        move |l| {
            let o = l.reader().quarantine_overflows();
            let kept = l
                .reader()
                .quarantine_page(None, Some(&TableId::new("FLOOD-1").unwrap()), 0, 1)
                .unwrap()
                .0;
            let counted: u64 = o
                .iter()
                .filter(|((s, _), _)| s == "FLOOD-1")
                .map(|(_, o)| o.count)
                .sum();
            kept + counted == sent
        }
    })
    .await;
    let usage = ledger.reader().quarantine_usage();
    let grown = dir_bytes(dir.path()) - before;
    let overflowed: Vec<_> = ledger
        .reader()
        .quarantine_overflows()
        .into_iter()
        .filter(|((s, _), _)| s != "FLOOD-1")
        .collect();
    assert!(
        overflowed.is_empty(),
        "only the flood overflows: {overflowed:?}"
    );
    assert!(usage.bytes <= limits().total_bytes_max);
    assert_eq!(
        usage.by_source["FLOOD-1"], usage.bytes,
        "only the flood's refusals"
    );
    assert!(
        usage.bytes > limits().source_bytes_max - charge(FLOOD_LEN),
        "the flood reached its source limit"
    );
    // The other tables' bytes beside the limit: their events and the fenced entries.
    let others = usage.fenced_bytes + calm.iter().map(|p| charge(p.bytes.len())).sum::<u64>();
    let sled_slack = 2 << 20;
    assert!(
        grown <= limits().total_bytes_max + others + sled_slack,
        "the ledger grew {grown} bytes: over the limit {} plus {others} of other tables' and {sled_slack} of sled's",
        limits().total_bytes_max
    );
    println!(
        "flood: {sent} messages of {FLOOD_LEN} B in {flood_secs:.1} s ({:.0}/s), ingested by {caught_up:.1} s; stream {} messages {} bytes; ledger grew {grown} B, quarantine {} B charged; calm publish-to-durable over {} events: p50 {:?} p99 {:?} max {:?}",
        sent as f64 / flood_secs, info.messages, info.bytes, usage.bytes, times.len(), p(0.5), p(0.99), p(1.0)
    );

    // A signed purge of everything so far: the flood's source is kept again.
    let below = ledger.reader().quarantine_head().entries;
    let body = schemas::admin::AdminBody {
        act: schemas::admin::Act::QuarantinePurge { below_id: below },
        note: "flood test".into(),
        signed_at_ns: 1,
    };
    let purge = schemas::admin::AdminAct::sign(&simulator::admin_key(), body).expect("sign");
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Nats-Msg-Id", purge.msg_id().as_str());
    js.publish_with_headers(
        schemas::subjects::ADMIN_SUBJECT,
        headers,
        purge.to_wire().into(),
    )
    .await
    .expect("publish")
    .await
    .expect("the purge's ack");
    until(&ledger, "the purge done", move |l| {
        let (mark, target) = l.reader().purge_progress();
        target == below && mark.below_id == below
    })
    .await;
    assert_eq!(ledger.reader().quarantine_usage().bytes, 0);
    common::publish(&js, "FLOOD-1", "after-purge", &garbage(u64::MAX), None).await;
    until(&ledger, "a refusal kept again", |l| {
        l.reader()
            .quarantine_page(None, Some(&TableId::new("FLOOD-1").unwrap()), 0, 1)
            .unwrap()
            .0
            == 1
    })
    .await;
    let report = ingest.stop().await;
    assert_eq!(
        report.stored,
        calm_open.len() as u64 + fenced_open.len() as u64 + calm.len() as u64,
        "{report:?}"
    );
    assert!(ledger.verifier().verify().expect("verify").is_ok());
}
