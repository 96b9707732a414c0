//! Who may extend a table's chain, against a real nats-server and a real ledger that
//! requires signed events: the attacks of a publisher on the floor network that is not
//! the table's device. Each forged event is quarantined with its reason, never becomes
//! the chain's event, and the device's own chain is stored untouched.
//!
//! Waits are bounded (`WAIT`); nothing here asserts on time.

mod common;

use common::{context, floor_near_now, open, publish, publish_as_device, Running};
use futures::StreamExt;
use ingest::IngestConfig;
use ledger::Ledger;
use schemas::attest::SigningKey;
use schemas::provenance::{EventSignature, HeaderEnrollment};
use schemas::{codec, subjects, DeviceId, Event, EventBody, Hash32, TableId};
use simulator::{FaultPlan, Published, TableSim};
use std::sync::Arc;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

async fn wait_head(ledger: &Arc<Ledger>, table: &TableId, seq: u64) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (l, t) = (ledger.clone(), table.clone());
        let head = tokio::task::spawn_blocking(move || l.reader().head(&t).map(|h| h.seq.0))
            .await
            .expect("read");
        if head == Some(seq) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "head {head:?} never reached {seq}; quarantine {:?}",
            ledger.reader().quarantine_counts()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn wait_quarantined(ledger: &Arc<Ledger>, n: u64) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while ledger.reader().quarantine_counts().values().sum::<u64>() < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "quarantine stayed short of {n}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// A subscription to every alert, registered by the server before it returns: its own
/// probe came back through it (a client's flush does not wait for the server).
async fn watch_alerts(url: &str) -> async_nats::Subscriber {
    let client = async_nats::connect(url).await.expect("observer");
    let mut alerts = client
        .subscribe(subjects::ALERTS_WILDCARD)
        .await
        .expect("sub");
    let probe = tokio::time::timeout(WAIT, async {
        loop {
            client
                .publish("alerts.probe.ready", "".into())
                .await
                .expect("probe");
            client.flush().await.expect("flush");
            let next = tokio::time::timeout(Duration::from_millis(100), alerts.next());
            if let Ok(Some(m)) = next.await {
                return m;
            }
        }
    });
    probe.await.expect("the probe came back");
    alerts
}

/// The next alert ingest published (probes of `watch_alerts` skipped), within `WAIT`.
async fn next_alert(alerts: &mut async_nats::Subscriber) -> async_nats::Message {
    let next = tokio::time::timeout(WAIT, async {
        while let Some(m) = alerts.next().await {
            if !m.subject.starts_with("alerts.probe.") {
                return Some(m);
            }
        }
        None
    });
    next.await.ok().flatten().expect("an alert")
}

/// One table's opening and three rounds, as its device would publish them.
fn one_table() -> (TableSim, Vec<Published>) {
    let floor = floor_near_now(1, 5, FaultPlan::none()).expect("floor");
    let mut table = floor.tables.into_iter().next().expect("a table");
    let mut events = table.opening_events().expect("opening");
    for _ in 0..3 {
        events.extend(table.play_round().expect("round").events);
    }
    (table, events)
}

/// The device's own event at `seq`, re-chained by an attacker: `body` replaced, `prev`
/// kept (the right one, learnt from the stream or the head subject).
fn forged_at(events: &[Published], seq: u64, body: EventBody) -> Vec<u8> {
    let genuine = &events[seq as usize - 1];
    let forged = Event {
        body,
        ..genuine.event.clone()
    };
    codec::encode(&forged, codec::WireFormat::Json)
}

fn stored(ledger: &Ledger, table: &TableId) -> Vec<(u64, Hash32)> {
    ledger
        .reader()
        .events(table, 1..=u64::MAX)
        .map(|e| e.map(|e| (e.seq.0, e.hash)).expect("readable"))
        .collect()
}

/// A nats-server, a ledger as `serve` opens it, ingest running, and one table whose
/// device has published its first `k` events, all stored.
struct Scene {
    server: natsd::NatsServer,
    _dir: tempfile::TempDir,
    ledger: Arc<Ledger>,
    ingest: Running,
    js: async_nats::jetstream::Context,
    events: Vec<Published>,
    t: TableId,
}

async fn scene(k: usize) -> Scene {
    let server = natsd::NatsServer::start().expect("nats-server");
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = open(dir.path());
    let ingest = Running::start(&server.url(), ledger.clone());
    let js = context(&server.url()).await;
    let (_, events) = one_table();
    let t = events[0].event.table.clone();
    publish_as_device(&js, &events[..k]).await;
    wait_head(&ledger, &t, k as u64).await;
    Scene {
        server,
        _dir: dir,
        ledger,
        ingest,
        js,
        events,
        t,
    }
}

/// Each way a publisher that is not the table's device might sign a forged event at the
/// next seq, with the right `prev`: none is stored, each is quarantined with its reason,
/// and the device's own event at that seq, published after them, is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_events_never_extend_the_chain() {
    let k = 30usize;
    let Scene {
        server,
        _dir,
        ledger,
        ingest,
        js,
        events,
        t,
    } = scene(k).await;
    let mut alerts = watch_alerts(&server.url()).await;

    let next = k as u64 + 1;
    let body = EventBody::Announced {
        announcement: schemas::Announcement::NoMoreBets,
    };
    let bytes = forged_at(&events, next, body);
    let own = events[k].signature.clone().expect("the device signs");
    let thief = SigningKey::from_secret([66; 32]);
    let rogue_admin = SigningKey::from_secret([67; 32]);
    let shoe = DeviceId::new(format!("{t}-shoe")).expect("id");
    let mut with_rogue_enrollment = EventSignature::sign(&thief, &t, &shoe, &bytes);
    with_rogue_enrollment.enrollment = Some(HeaderEnrollment::sign(
        &rogue_admin,
        &t,
        &shoe,
        thief.public(),
    ));
    let mut own_with_header = EventSignature::sign(&thief, &t, &own.device, &bytes);
    own_with_header.enrollment = Some(HeaderEnrollment::sign(
        &simulator::admin_key(),
        &t,
        &own.device,
        thief.public(),
    ));
    let attempts: Vec<(&str, Option<EventSignature>)> = vec![
        // No signature at all, under the message id the spec gave devices before: the
        // device's own message is not dropped as a duplicate of it.
        ("unsigned", None),
        // The device's name, another key.
        (
            "signature_invalid",
            Some(EventSignature::sign(&thief, &t, &own.device, &bytes)),
        ),
        // The device's own signature of its genuine event, moved onto the forged bytes.
        ("signature_invalid", Some(own.clone())),
        // A device the chain never enrolled, with a header enrollment by an admin the
        // ledger does not trust.
        ("signer_unknown", Some(with_rogue_enrollment)),
        // A header enrollment, even by the trusted admin, for a device the chain has
        // enrolled: the chain's own key decides.
        ("signature_invalid", Some(own_with_header)),
        // A device of the table the chain never enrolled.
        (
            "signer_unknown",
            Some(EventSignature::sign(&thief, &t, &shoe, &bytes)),
        ),
    ];
    for (i, (_, signature)) in attempts.iter().enumerate() {
        let id = format!("{t}:{next}");
        let id = if i == 0 {
            id
        } else {
            format!("{id}:attack-{i}")
        };
        publish(&js, t.as_str(), &id, &bytes, signature.as_ref()).await;
    }
    // Every attempt, stored or counted as a repeat of the same bytes and reason, counts
    // into the alert when its batch is acked (just after the commit).
    let counted = |l: &ingest::alerts::AlertLog| l.recent().first().map_or(0, |a| a.count);
    let deadline = tokio::time::Instant::now() + WAIT;
    while counted(&ingest.alerts) < attempts.len() as u64 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            ingest.alerts.recent()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    publish_as_device(&js, &events[k..]).await;
    let last = events.last().expect("events");
    wait_head(&ledger, &t, last.event.seq.0).await;
    let logged = ingest.alerts.recent();
    let report = ingest.stop().await;

    // One alert on NATS for the whole attempt, counted in the log.
    let m = next_alert(&mut alerts).await;
    assert_eq!(m.subject.as_str(), format!("alerts.{t}.refused_publisher"));
    let alert: schemas::api::Alert = serde_json::from_slice(&m.payload).expect("alert json");
    assert_eq!((alert.table.clone(), alert.count), (t.clone(), 1));
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert_eq!(logged[0].count, attempts.len() as u64);

    let want: Vec<(u64, Hash32)> = events.iter().map(|p| (p.event.seq.0, p.hash())).collect();
    assert_eq!(stored(&ledger, &t), want, "the device's chain, untouched");
    // One entry per reason (the bytes are the same), the other attempts its repeats.
    let q = ledger.reader().quarantine().expect("quarantine");
    let mut kept: Vec<(&str, u64)> = q
        .iter()
        .map(|e| {
            (
                e.reason.as_str(),
                ledger.reader().quarantine_repeats(e.id).expect("repeats"),
            )
        })
        .collect();
    kept.sort_unstable();
    let mut expected: std::collections::BTreeMap<&str, u64> = Default::default();
    for (r, _) in &attempts {
        *expected.entry(*r).or_insert(0) += 1;
    }
    let expected: Vec<(&str, u64)> = expected.into_iter().map(|(r, n)| (r, n - 1)).collect();
    assert_eq!(kept, expected);
    assert!(q.iter().all(|e| e.bytes == bytes), "kept verbatim");
    assert_eq!(report.stored, events.len() as u64);
    assert!(ledger.verifier().verify().expect("verify").is_ok());
}

/// The attack of re-chaining a round: the attacker reads the device's events back from
/// the stream and republishes them with larger stakes, each with the right `prev` of its
/// own branch, before the device's own, signed with another key in the device's name.
/// None is stored; the device's round is stored as the device sent it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rechained_round_is_refused_and_the_device_round_stored() {
    let k = 20usize;
    let Scene {
        server: _server,
        _dir,
        ledger,
        ingest,
        js,
        events,
        t,
    } = scene(k).await;

    let thief = SigningKey::from_secret([68; 32]);
    let mut prev = events[k - 1].hash();
    let mut forged_n = 0u64;
    for p in &events[k..] {
        let mut e = p.event.clone();
        e.prev = prev;
        // The attacker cannot know the device's bytes before it sends them.
        e.occurred_at_ns += 1;
        if let EventBody::BetPlaced {
            stake: schemas::Stake::Chips(m),
            ..
        } = &mut e.body
        {
            *m = schemas::Money(m.0 * 4);
        }
        let bytes = codec::encode(&e, codec::WireFormat::Bincode);
        prev = schemas::event_hash(&e.prev, &bytes);
        let signer = p
            .signature
            .as_ref()
            .map(|s| s.device.clone())
            .expect("signed");
        let sig = EventSignature::sign(&thief, &t, &signer, &bytes);
        let id = subjects::msg_id(&t, e.seq, &bytes);
        publish(&js, t.as_str(), &id, &bytes, Some(&sig)).await;
        forged_n += 1;
    }
    wait_quarantined(&ledger, forged_n).await;
    publish_as_device(&js, &events[k..]).await;
    wait_head(&ledger, &t, events.last().expect("events").event.seq.0).await;
    ingest.stop().await;

    let want: Vec<(u64, Hash32)> = events.iter().map(|p| (p.event.seq.0, p.hash())).collect();
    assert_eq!(stored(&ledger, &t), want);
    let counts = ledger.reader().quarantine_counts();
    assert_eq!(
        counts.get("signature_invalid"),
        Some(&forged_n),
        "{counts:?}"
    );
    assert_eq!(counts.len(), 1, "{counts:?}");
}

/// The device itself sends a different event at a stored seq (it rewound), and its table
/// runs on without a checkpoint: both are alerts on NATS and in the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_and_stalled_attestation_raise_alerts() {
    let server = natsd::NatsServer::start().expect("nats-server");
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = open(dir.path());
    let ingest = {
        let mut config = IngestConfig::new(server.url());
        config.attestation_lag_max = 10;
        Running::start_with(config, ledger.clone())
    };
    let js = context(&server.url()).await;
    let mut alerts = watch_alerts(&server.url()).await;
    let (table, events) = one_table();
    let t = events[0].event.table.clone();
    publish_as_device(&js, &events[..20]).await;
    wait_head(&ledger, &t, 20).await;
    // Seq 12 again, other bytes, signed by the device: a fork, not a forgery.
    let body = EventBody::Announced {
        announcement: schemas::Announcement::NoMoreBets,
    };
    let bytes = forged_at(&events, 12, body);
    publish(
        &js,
        t.as_str(),
        "fork-12",
        &bytes,
        table.sign(&bytes).as_ref(),
    )
    .await;
    wait_quarantined(&ledger, 1).await;
    // The log counts an alert when its batch is acked, just after the commit.
    let deadline = tokio::time::Instant::now() + WAIT;
    while ingest.alerts.recent().len() < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            ingest.alerts.recent()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let logged = ingest.alerts.recent();
    ingest.stop().await;

    let mut kinds = std::collections::BTreeSet::new();
    while kinds.len() < 2 {
        let m = next_alert(&mut alerts).await;
        kinds.insert(m.subject.to_string());
    }
    let want = [
        format!("alerts.{t}.attestation_stalled"),
        format!("alerts.{t}.fork"),
    ];
    assert_eq!(kinds.into_iter().collect::<Vec<_>>(), want);
    let mut logged_kinds: Vec<&str> = logged.iter().map(|a| a.kind.as_str()).collect();
    logged_kinds.sort_unstable();
    assert_eq!(logged_kinds, ["attestation_stalled", "fork"]);
    assert_eq!(ledger.reader().quarantine_counts().get("fork"), Some(&1));
}

/// The ids a table's device will give its checkpoints, and the ids the old scheme gave
/// them (`<table>:checkpoint:<head_seq>:<count>`): a twin of the table, built from the
/// same seed, plays what `publish_floor` will publish. An attacker who knew the bytes
/// could do no better.
fn predicted_checkpoint_ids(mut twin: TableSim, rounds: u64) -> (Vec<String>, Vec<String>) {
    let mut heads = Vec::new();
    let mut vouch = |t: &TableSim| {
        let c = t.checkpoint().expect("a checkpoint");
        heads.push((c.head_seq, c.to_bincode()));
    };
    twin.opening_events().expect("opening");
    vouch(&twin);
    for _ in 0..rounds {
        twin.play_round().expect("round");
        vouch(&twin);
    }
    twin.closing_events().expect("closing");
    vouch(&twin);
    let t = twin.table();
    let bound = heads
        .iter()
        .map(|(seq, bytes)| subjects::checkpoint_msg_id(t, *seq, bytes))
        .collect();
    let old = heads
        .iter()
        .enumerate()
        .map(|(n, (seq, _))| format!("{t}:checkpoint:{}:{n}", seq.0))
        .collect();
    (bound, old)
}

/// Issue 41's claim attack on a secured bus: another table's device credential first
/// publishes, on its own checkpoints subject, one-byte messages under the ids the victim
/// will give its checkpoints (the old predictable form, and even the byte-bound form,
/// as if it knew the bytes). JetStream de-duplicates ids across the stream, so it calls
/// each of the victim's checkpoints a duplicate. The victim sends each again under an id
/// only its key can compute, says so, and the ledger keeps them: attested to its head.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_device_cannot_suppress_a_tables_checkpoints() {
    let rounds = 5;
    let mut server = natsd::NatsServer::start_secured().expect("nats-server");
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = open(dir.path());
    let floor = floor_near_now(2, 41, FaultPlan::none()).expect("floor");
    let tables: Vec<TableId> = floor.tables.iter().map(|t| t.table().clone()).collect();
    let issued = server.issue_floor(&tables).expect("credentials");
    let (attacker, victim) = (tables[0].clone(), tables[1].clone());
    let mut config = IngestConfig::new(server.url());
    config.access = issued.ingest.clone();
    let ingest = Running::start_with(config, ledger.clone());
    let devices = simulator::DeviceAccess {
        creds_dir: Some(issued.creds_dir.clone()),
        ca_file: Some(issued.ca_file.clone()),
    };

    let twin = floor_near_now(2, 41, FaultPlan::none()).expect("twin floor");
    let twin = twin.tables.into_iter().nth(1).expect("the victim's twin");
    let (bound, old) = predicted_checkpoint_ids(twin, rounds);
    let client = bus::connect(&server.url(), &devices.for_table(&attacker))
        .await
        .expect("the attacker's device credential");
    let js = async_nats::jetstream::new(client);
    simulator::wait_for_stream(&js, WAIT).await.expect("stream");
    for id in bound.iter().chain(&old) {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", id.as_str());
        let subject = subjects::checkpoints_subject(&attacker);
        let ack = js.publish_with_headers(subject, headers, vec![0u8].into());
        let ack = ack
            .await
            .expect("publish")
            .await
            .expect("the stream takes it");
        assert!(!ack.duplicate, "{id} was free");
    }

    let victim_sim = floor.tables.into_iter().nth(1).expect("victim");
    let options = simulator::PublishOptions {
        access: devices,
        ..simulator::PublishOptions::default()
    };
    let published =
        simulator::publish_floor(&server.url(), vec![victim_sim], rounds, None, options)
            .await
            .expect("publish");
    assert_eq!(published.checkpoints, bound.len() as u64);
    let claimed: Vec<u64> = published
        .checkpoints_claimed
        .iter()
        .map(|(t, seq)| {
            assert_eq!(t, &victim);
            seq.0
        })
        .collect();
    assert_eq!(
        claimed.len(),
        bound.len(),
        "every byte-bound id was claimed"
    );

    let last = published.events.last().expect("events").seq.0;
    wait_head(&ledger, &victim, last).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while ledger
        .reader()
        .attestation(&victim)
        .is_none_or(|a| a.seq.0 < last)
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never attested to seq {last}: {:?}",
            ledger.reader().attestation(&victim)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let report = ingest.stop().await;
    assert_eq!(report.checkpoints_kept, bound.len() as u64, "{report:?}");
    let verified = ledger.verifier().verify().expect("verify");
    assert!(verified.is_ok(), "{verified:?}");
    let attested: Vec<u64> = verified
        .tables
        .iter()
        .filter_map(|v| match v {
            ledger::TableVerdict::Ok { attested_seq, .. } => Some(*attested_seq),
            _ => None,
        })
        .collect();
    assert_eq!(
        attested,
        [last],
        "verify attests the victim's table to its head"
    );
    // The attacker's messages are refused on its own table, never on the victim's.
    for q in ledger.reader().quarantine().expect("quarantine") {
        assert_eq!(q.subject_table.as_ref(), Some(&attacker), "{}", q.reason);
    }
}

/// Issue 41: a device whose bus credential is revoked while it publishes stops with
/// `CredentialRefused`, naming its table, instead of reconnecting for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_device_stops_with_a_clear_error() {
    let mut server = natsd::NatsServer::start_secured().expect("nats-server");
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = open(dir.path());
    let floor = floor_near_now(1, 43, FaultPlan::none()).expect("floor");
    let tables: Vec<TableId> = floor.tables.iter().map(|t| t.table().clone()).collect();
    let issued = server.issue_floor(&tables).expect("credentials");
    let mut config = IngestConfig::new(server.url());
    config.access = issued.ingest.clone();
    let ingest = Running::start_with(config, ledger.clone());
    let options = simulator::PublishOptions {
        access: simulator::DeviceAccess {
            creds_dir: Some(issued.creds_dir.clone()),
            ca_file: Some(issued.ca_file.clone()),
        },
        ..simulator::PublishOptions::with_outbox(Duration::from_millis(200), WAIT)
    };
    let url = server.url();
    // 20 rounds a second for 10,000 rounds: still publishing when revoked.
    let device = tokio::spawn(async move {
        simulator::publish_floor(&url, floor.tables, 10_000, Some(20.0), options).await
    });
    let t = tables[0].clone();
    let deadline = tokio::time::Instant::now() + WAIT;
    while ledger.reader().head(&t).is_none_or(|h| h.seq.0 < 20) {
        assert!(tokio::time::Instant::now() < deadline, "nothing stored");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    server.revoke(t.as_str()).expect("revoke");
    let ended = tokio::time::timeout(WAIT, device).await;
    let result = ended.expect("the device stopped").expect("task");
    match result {
        Err(simulator::Error::CredentialRefused { table, detail }) => {
            assert_eq!(table, t);
            assert!(detail.to_lowercase().contains("authorization"), "{detail}");
        }
        other => panic!("expected CredentialRefused, got {other:?}"),
    }
    ingest.stop().await;
}
