//! Operating through outages against a real `nats-server -js` and a real sled ledger:
//! device time is judged against the stream's timestamp, so an ingest outage adds no
//! skew; and the stream's size limit leaves room for a legal event's headers.
//!
//! Waits are bounded (`WAIT`) so a broken pipeline fails instead of hanging.

mod common;

use async_nats::jetstream;
use common::{context, Running};
use ledger::Ledger;
use schemas::chain::event_hash;
use schemas::codec::{self, WireFormat, EVENT_LEN_MAX};
use schemas::ids::ID_LEN_MAX;
use schemas::*;
use std::sync::Arc;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);
/// The test-small skew limit: shorter than the outage below.
const SKEW_MAX_NS: i64 = 2_000_000_000;
/// How long ingest stays stopped while the device publishes.
const OUTAGE: Duration = Duration::from_secs(4);

/// A device's event `seq` after `prev`, its device clock `occurred_at_ns`.
fn event(table: &TableId, seq: u64, prev: Hash32, occurred_at_ns: i64) -> Event {
    Event {
        v: WIRE_VERSION,
        table: table.clone(),
        device: DeviceId::new("ctl-1").expect("id"),
        seq: Seq(seq),
        prev,
        occurred_at_ns,
        round: None,
        body: EventBody::Announced {
            announcement: Announcement::PlaceYourBets,
        },
    }
}

/// A device publishing a chain, each event stamped with the real time it is sent.
struct Device {
    table: TableId,
    seq: u64,
    prev: Hash32,
}

impl Device {
    fn new(table: &str) -> Device {
        let table = TableId::new(table).expect("table id");
        Device {
            table,
            seq: 0,
            prev: Hash32::ZERO,
        }
    }

    /// The next event's bytes, device time now minus `behind_ns`.
    fn next(&mut self, behind_ns: i64) -> Vec<u8> {
        self.seq += 1;
        let at = ingest::system_clock_ns() - behind_ns;
        let bytes = codec::to_bincode(&event(&self.table, self.seq, self.prev, at));
        self.prev = event_hash(&self.prev, &bytes);
        bytes
    }

    async fn publish(&mut self, js: &jetstream::Context, behind_ns: i64) {
        let bytes = self.next(behind_ns);
        let id = subjects::msg_id(&self.table, Seq(self.seq), &bytes);
        publish(js, &self.table, &id, bytes, &[])
            .await
            .expect("ack");
    }
}

async fn publish(
    js: &jetstream::Context,
    table: &TableId,
    msg_id: &str,
    bytes: Vec<u8>,
    headers: &[(&str, String)],
) -> Result<(), String> {
    let mut h = async_nats::HeaderMap::new();
    h.insert("Nats-Msg-Id", msg_id);
    for (name, value) in headers {
        h.insert(*name, value.as_str());
    }
    let ack = js
        .publish_with_headers(subjects::events_subject(table), h, bytes.into())
        .await
        .map_err(|e| e.to_string())?;
    ack.await.map(|_| ()).map_err(|e| e.to_string())
}

/// Polls `done` on the ledger (off the runtime: sled blocks) until it holds, or fails.
async fn wait_until(ledger: &Arc<Ledger>, what: &str, done: fn(&Ledger) -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let l = ledger.clone();
        if tokio::task::spawn_blocking(move || done(&l))
            .await
            .expect("poll")
        {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} never happened; quarantine {:?}, stats {:?}",
            ledger.reader().quarantine_counts(),
            ledger.reader().stats()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Ingest stopped for twice the skew limit while a device publishes events stamped with
/// real time: after the restart every event is stored once, nothing held or quarantined,
/// though each waited longer than the limit. An event whose device clock is really off
/// its stream time (3 s behind at publish) is still `clock_skew`. With arrival stamped
/// by ingest's clock at fetch, the queued events were all `clock_skew`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ingest_outage_longer_than_the_skew_limit_adds_no_skew() {
    let server = natsd::NatsServer::start().expect("nats-server");
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Arc::new(Ledger::open(dir.path()).expect("open"));
    ledger
        .writer()
        .set_clock_skew_max_ns(SKEW_MAX_NS)
        .expect("skew");
    let js = context(&server.url()).await;
    let mut device = Device::new("T-OUT");

    let running = Running::start(&server.url(), ledger.clone());
    for _ in 0..5 {
        device.publish(&js, 0).await;
    }
    wait_until(&ledger, "5 events stored", |l| {
        l.reader()
            .head(&TableId::new("T-OUT").expect("id"))
            .is_some_and(|h| h.seq.0 == 5)
    })
    .await;
    running.stop().await;

    for _ in 0..10 {
        device.publish(&js, 0).await;
    }
    let mut skewed = Device::new("T-SKEW");
    skewed.publish(&js, 3 * SKEW_MAX_NS / 2).await;
    tokio::time::sleep(OUTAGE).await;

    let running = Running::start(&server.url(), ledger.clone());
    wait_until(&ledger, "the skewed event quarantined", |l| {
        l.reader()
            .quarantine_counts()
            .get(ledger::reason::CLOCK_SKEW)
            == Some(&1)
    })
    .await;
    wait_until(&ledger, "15 events stored", |l| {
        l.reader()
            .head(&TableId::new("T-OUT").expect("id"))
            .is_some_and(|h| h.seq.0 == 15)
    })
    .await;
    let report = running.stop().await;
    assert_eq!(report.stored, 10, "{report:?}");
    assert_eq!((report.held, report.quarantined), (0, 1), "{report:?}");

    let seqs: Vec<u64> = ledger
        .reader()
        .events(&device.table, 1..=u64::MAX)
        .map(|e| e.expect("event").seq.0)
        .collect();
    assert_eq!(seqs, (1..=15).collect::<Vec<_>>(), "each event once");
    for e in ledger.reader().events(&device.table, 6..=15) {
        let e = e.expect("event");
        let waited_ns = 0.max(ingest::system_clock_ns() - e.received_at_ns);
        assert!(
            e.received_at_ns.abs_diff(e.occurred_at_ns) < SKEW_MAX_NS as u64,
            "seq {} judged at its stream time, not ingest's",
            e.seq.0
        );
        assert!(
            waited_ns as u128 >= OUTAGE.as_nanos(),
            "it waited the outage"
        );
    }
    let q = ledger.reader().quarantine().expect("quarantine");
    assert_eq!(q.len(), 1);
    assert_eq!(q[0].reason, ledger::reason::CLOCK_SKEW);
    assert_eq!(q[0].subject_table, Some(skewed.table.clone()));
    assert!(ledger.verifier().verify().expect("verify").is_ok());
}

/// A JSON event padded with spaces to `len` bytes (JSON allows trailing whitespace).
fn event_of_len(table: &TableId, len: usize) -> Vec<u8> {
    let now = ingest::system_clock_ns();
    let mut bytes = codec::encode(&event(table, 1, Hash32::ZERO, now), WireFormat::Json);
    assert!(bytes.len() < len);
    bytes.resize(len, b' ');
    bytes
}

/// The longest headers a device sends: a republish's message id and a signature with an
/// admin-signed enrollment, ids at their longest.
fn longest_headers(table: &TableId, bytes: &[u8]) -> (String, Vec<(&'static str, String)>) {
    use schemas::attest::SigningKey;
    use schemas::provenance::{EventSignature, HeaderEnrollment};
    let device = DeviceId::new("D".repeat(ID_LEN_MAX)).expect("device id");
    let key = SigningKey::derive_for_simulation("device");
    let admin = SigningKey::derive_for_simulation("admin");
    let mut signature = EventSignature::sign(&key, table, &device, bytes);
    signature.enrollment = Some(HeaderEnrollment::sign(&admin, table, &device, key.public()));
    let id = format!(
        "{}:r{}",
        subjects::msg_id(table, Seq(u64::MAX), bytes),
        u64::MAX
    );
    (id, signature.to_headers())
}

/// An event of exactly `EVENT_LEN_MAX` bytes with every header a device sends is taken
/// by the stream and stored; one byte more is taken by the stream and quarantined
/// `oversized`; a body of `subjects::MESSAGE_LEN_MAX` + 1 bytes is refused by the stream
/// (it stays with the publisher). With the stream's limit at `EVENT_LEN_MAX`, the first
/// was refused by the stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_of_the_largest_legal_size_with_all_headers_is_stored() {
    let server = natsd::NatsServer::start().expect("nats-server");
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Arc::new(Ledger::open(dir.path()).expect("open"));
    let js = context(&server.url()).await;
    let table = TableId::new("T".repeat(ID_LEN_MAX)).expect("table id");

    let largest = event_of_len(&table, EVENT_LEN_MAX);
    let (id, headers) = longest_headers(&table, &largest);
    publish(&js, &table, &id, largest, &headers)
        .await
        .expect("a legal event with its headers fits the stream");
    let over = event_of_len(&table, EVENT_LEN_MAX + 1);
    let (id, headers) = longest_headers(&table, &over);
    publish(&js, &table, &id, over, &headers)
        .await
        .expect("one byte over still fits the stream; the ledger refuses it");
    let huge = vec![b' '; subjects::MESSAGE_LEN_MAX + 1];
    let refused = publish(&js, &table, "huge", huge, &[]).await;
    assert!(refused.is_err(), "the stream refuses beyond its limit");

    let running = Running::start(&server.url(), ledger.clone());
    wait_until(&ledger, "one stored, one quarantined", |l| {
        l.reader().stats().events == 1 && l.reader().quarantine_counts().values().sum::<u64>() == 1
    })
    .await;
    running.stop().await;
    let stored: Vec<_> = ledger.reader().events(&table, 1..=1).collect();
    assert_eq!(stored.len(), 1);
    assert_eq!(
        stored[0].as_ref().expect("event").bytes.len(),
        EVENT_LEN_MAX
    );
    let q = ledger.reader().quarantine().expect("quarantine");
    assert_eq!(q[0].reason, ledger::reason::OVERSIZED);
    assert_eq!(q[0].bytes.len(), EVENT_LEN_MAX + 1);
}
