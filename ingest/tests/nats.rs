//! Ingest against a real `nats-server -js` (natsd guard) and a real sled ledger in a temp
//! dir: the end-to-end path, bad input (garbage, wrong previous hash,
//! duplicate), and a restart on the same ledger and durable consumer.
//!
//! Waits are bounded (`WAIT`) so a broken pipeline fails instead of hanging; nothing here
//! asserts on time.

mod common;

use async_nats::jetstream;
use common::{context, floor_near_now, open, publish, publish_as_device, Running};
use ingest::{IngestConfig, IngestReport};
use ledger::Ledger;
use schemas::{codec, subjects, Hash32, TableId};
use simulator::{FaultPlan, Floor, PublishOptions, Published, TableSim};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

const WAIT: Duration = Duration::from_secs(120);

/// Waits until every table's ledger head is at the expected seq (bounded by `WAIT`).
/// Ledger reads go through `spawn_blocking` under a timeout: sled is synchronous, and a
/// stuck ledger must fail the test rather than block the runtime's two workers.
async fn wait_heads(ledger: &Arc<Ledger>, expected: &BTreeMap<TableId, (u64, Hash32)>) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (l, keys) = (ledger.clone(), expected.keys().cloned().collect::<Vec<_>>());
        let read = tokio::task::spawn_blocking(move || {
            keys.into_iter()
                .filter_map(|t| l.reader().head(&t).map(|h| (t, (h.seq.0, h.hash))))
                .collect::<BTreeMap<TableId, (u64, Hash32)>>()
        });
        let now = tokio::time::timeout_at(deadline, read)
            .await
            .expect("ledger head reads stuck")
            .expect("head read task");
        if &now == expected {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "ledger heads {now:?} never reached {expected:?}; quarantine {:?}, stats {:?}",
            ledger.reader().quarantine_counts(),
            ledger.reader().stats()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Each table's stored (seq, hash) list.
fn stored(ledger: &Ledger, table: &TableId) -> Vec<(u64, Hash32)> {
    ledger
        .reader()
        .events(table, 1..=u64::MAX)
        .map(|e| {
            let e = e.expect("readable event");
            (e.seq.0, e.hash)
        })
        .collect()
}

/// A simulated floor published through a running ingest, drained.
struct Drained {
    _server: natsd::NatsServer,
    _dir: tempfile::TempDir,
    ledger: Arc<Ledger>,
    published: simulator::PublishReport,
    want: BTreeMap<TableId, Vec<(u64, Hash32)>>,
    report: IngestReport,
}

/// Five tables (CSP6, MLP3, SSP4, CS51, TCP3; bincode and JSON), 41 rounds each, payout
/// errors only; waits until the ledger heads equal the published heads, stops ingest. On
/// a secured bus: TLS, and credentials for ingest and for each table's device.
async fn publish_floor_and_drain() -> Drained {
    let mut server = natsd::NatsServer::start_secured().expect("nats-server");
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = open(dir.path());
    let floor = floor_near_now(5, 20261122, FaultPlan::payout_errors(0.15)).expect("floor");
    let tables: Vec<TableId> = floor.tables.iter().map(|t| t.table().clone()).collect();
    let issued = server.issue_floor(&tables).expect("credentials");
    let devices = simulator::DeviceAccess {
        creds_dir: Some(issued.creds_dir),
        ca_file: Some(issued.ca_file),
    };
    let mut config = IngestConfig::new(server.url());
    config.access = issued.ingest;
    let ingest = Running::start_with(config, ledger.clone());
    let published = simulator::publish_floor(
        &server.url(),
        floor.tables,
        41,
        None,
        PublishOptions {
            access: devices,
            ..PublishOptions::default()
        },
    )
    .await
    .expect("publish floor");
    assert!(published.rounds >= 200, "rounds {}", published.rounds);
    assert!(
        !published.faults.is_empty(),
        "the plan injected payout errors"
    );

    let mut want: BTreeMap<TableId, Vec<(u64, Hash32)>> = BTreeMap::new();
    for r in &published.events {
        want.entry(r.table.clone())
            .or_default()
            .push((r.seq.0, r.hash));
    }
    assert!(want.len() >= 3);
    let heads = want
        .iter()
        .map(|(t, evs)| (t.clone(), *evs.last().expect("events")))
        .collect();
    wait_heads(&ledger, &heads).await;
    let report = ingest.stop().await;
    Drained {
        _server: server,
        _dir: dir,
        ledger,
        published,
        want,
        report,
    }
}

/// The simulator publishes >= 200 rounds over >= 3 tables of different games with
/// injected payout errors only; the ledger then holds exactly the published events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_to_end_simulated_floor_is_stored_exactly() {
    let Drained {
        _server,
        _dir,
        ledger,
        published,
        want,
        report,
    } = publish_floor_and_drain().await;
    for (table, evs) in &want {
        assert_eq!(&stored(&ledger, table), evs, "table {table}");
    }
    assert_eq!(ledger.reader().tables().len(), want.len());
    assert_eq!(report.stored, published.events.len() as u64);
    assert_eq!(report.quarantined, 0);
    assert_eq!(report.held, 0);
    assert!(ledger.reader().quarantine().expect("quarantine").is_empty());
    let verified = ledger.verifier().verify().expect("verify");
    assert!(verified.is_ok(), "{verified:?}");
}

/// The audit half: replaying what the ledger holds reports every injected payout
/// error as a dispute (table, round, box, line, amounts) and nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_reports_exactly_the_injected_payout_errors() {
    // Name the server and the directory: with `..` they would be dropped here, deleting
    // the ledger's directory under the open ledger (sled then hangs flushing on drop).
    let Drained {
        _server,
        _dir,
        ledger,
        published,
        want,
        ..
    } = publish_floor_and_drain().await;
    // The audit over what the ledger holds: every injected payout error is a dispute on
    // its table, round, box and line with the amounts, and nothing else is reported.
    let mut injected = Vec::new();
    for (table, fault) in &published.faults {
        match fault {
            simulator::InjectedFault::WrongPayout {
                round,
                box_no,
                line,
                expected,
                recorded,
                ..
            } => injected.push((table.clone(), *round, *box_no, *line, *expected, *recorded)),
            other => panic!("the plan injects payout errors only, got {other:?}"),
        }
    }
    let mut disputes = Vec::new();
    let mut findings = Vec::new();
    for table in want.keys() {
        let events: Vec<(schemas::Seq, schemas::Event)> = ledger
            .reader()
            .events(table, 1..=u64::MAX)
            .map(|e| {
                let e = e.expect("readable event");
                (
                    e.seq,
                    codec::decode(&e.bytes).expect("stored bytes decode").0,
                )
            })
            .collect();
        for r in replayer::replay_table(table.clone(), &events) {
            for d in &r.disputes {
                disputes.push((
                    r.table.clone(),
                    r.round,
                    d.box_no,
                    d.line,
                    d.expected,
                    d.recorded,
                ));
            }
            findings.extend(
                r.findings
                    .iter()
                    .map(|f| (r.table.clone(), r.round, f.code.clone())),
            );
        }
    }
    injected.sort();
    disputes.sort();
    assert_eq!(disputes, injected);
    // Each dispute also carries its `<RS>-4.1-payout-differs` finding; nothing else.
    let payout_findings = findings
        .iter()
        .filter(|(_, _, c)| c.ends_with("-payout-differs"))
        .count();
    assert_eq!(payout_findings, injected.len());
    assert!(
        findings
            .iter()
            .all(|(_, _, c)| c.ends_with("-payout-differs")),
        "findings beyond the injected payout errors: {findings:?}"
    );
}

/// Garbage bytes and a wrong previous hash go to quarantine with their reasons, verbatim;
/// the same event published twice (different Nats-Msg-Id, so JetStream keeps both) is
/// stored once; ingest keeps running and stores a valid event published afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_wrong_prev_and_duplicate() {
    let server = natsd::NatsServer::start().expect("nats-server");
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = open(dir.path());
    let ingest = Running::start(&server.url(), ledger.clone());
    let js = context(&server.url()).await;

    let floor = floor_near_now(1, 7, FaultPlan::none()).expect("floor");
    let mut table: TableSim = floor.tables.into_iter().next().expect("one table");
    let mut events = table.opening_events().expect("opening");
    events.extend(table.play_round().expect("round").events);
    assert!(events.len() >= 3);
    let t = table.table().clone();

    let garbage = b"\x01\xff\xfenot an event at all".to_vec();
    publish(&js, t.as_str(), "garbage-1", &garbage, None).await;
    publish_as_device(&js, &events[..1]).await;
    // Event 2 with a forged previous hash, re-encoded in the table's own wire form.
    let mut forged = events[1].event.clone();
    forged.prev = Hash32([7; 32]);
    let forged_bytes = codec::encode(&forged, table.wire_format());
    let signed = table.sign(&forged_bytes);
    publish(&js, t.as_str(), "forged-2", &forged_bytes, signed.as_ref()).await;
    // Event 1 again under another message id: JetStream stores it twice, the ledger once.
    let first = &events[0];
    publish(
        &js,
        t.as_str(),
        "dup-1",
        &first.bytes,
        first.signature.as_ref(),
    )
    .await;
    // Then the rest of the chain, valid.
    publish_as_device(&js, &events[1..]).await;

    let last = events.last().expect("events");
    let heads = BTreeMap::from([(t.clone(), (last.event.seq.0, last.hash()))]);
    wait_heads(&ledger, &heads).await;
    let report = ingest.stop().await;

    let q = ledger.reader().quarantine().expect("quarantine");
    let reasons: Vec<(&str, &[u8])> = q
        .iter()
        .map(|e| (e.reason.as_str(), e.bytes.as_slice()))
        .collect();
    assert_eq!(
        reasons,
        vec![
            (ledger::reason::UNDECODABLE, garbage.as_slice()),
            (ledger::reason::PREV_MISMATCH, forged_bytes.as_slice())
        ]
    );
    let want: Vec<(u64, Hash32)> = events.iter().map(|p| (p.event.seq.0, p.hash())).collect();
    assert_eq!(stored(&ledger, &t), want);
    assert_eq!(report.quarantined, 2);
    assert_eq!(report.duplicates, 1);
    assert_eq!(report.stored, events.len() as u64);
    assert_eq!(report.messages, events.len() as u64 + 3);
    assert!(ledger.verifier().verify().expect("verify").is_ok());
}

/// Stop ingest, publish more, start it again on the same ledger directory: it continues
/// from the durable consumer; nothing is lost or stored twice, nothing redelivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_continues_from_the_durable_consumer() {
    let server = natsd::NatsServer::start().expect("nats-server");
    let dir = tempfile::tempdir().expect("tempdir");
    let js = context(&server.url()).await;
    let mut floor = floor_near_now(3, 99, FaultPlan::payout_errors(0.1)).expect("floor");

    let mut all: BTreeMap<TableId, Vec<Published>> = BTreeMap::new();
    let play = |all: &mut BTreeMap<TableId, Vec<Published>>,
                floor: &mut Floor,
                open: bool,
                rounds: usize| {
        let mut batch = Vec::new();
        for t in floor.tables.iter_mut() {
            let mut evs = if open {
                t.opening_events().expect("opening")
            } else {
                Vec::new()
            };
            for _ in 0..rounds {
                evs.extend(t.play_round().expect("round").events);
            }
            all.entry(t.table().clone())
                .or_default()
                .extend(evs.clone());
            batch.extend(evs);
        }
        batch
    };

    let first = play(&mut all, &mut floor, true, 8);
    let heads_of = |all: &BTreeMap<TableId, Vec<Published>>| {
        all.iter()
            .map(|(t, evs)| {
                let l = evs.last().expect("events");
                (t.clone(), (l.event.seq.0, l.hash()))
            })
            .collect::<BTreeMap<_, _>>()
    };
    let ledger = open(dir.path());
    let ingest = Running::start(&server.url(), ledger.clone());
    publish_as_device(&js, &first).await;
    wait_heads(&ledger, &heads_of(&all)).await;
    let report1 = ingest.stop().await;
    assert_eq!(report1.stored, first.len() as u64);
    // sled locks its directory: the first ledger must be closed before reopening.
    drop(ledger);

    // The durable consumer as ingest made it before it dropped its subject filters (the
    // events and checkpoints wildcards): the restart takes it over, filters removed, and
    // continues from its ack floor all the same.
    let stream = js.get_stream(subjects::STREAM).await.expect("stream");
    let mut older = ingest::consumer_config(subjects::INGEST_CONSUMER, &IngestConfig::new(""));
    older.filter_subjects = vec![
        subjects::EVENTS_WILDCARD.to_string(),
        subjects::CHECKPOINTS_WILDCARD.to_string(),
    ];
    let mut consumer: jetstream::consumer::PullConsumer =
        stream.create_consumer(older).await.expect("older consumer");
    let info = consumer.info().await.expect("consumer info");
    assert_eq!(info.config.filter_subjects.len(), 2);

    let second = play(&mut all, &mut floor, false, 8);
    publish_as_device(&js, &second).await;

    let ledger = open(dir.path());
    let ingest = Running::start(&server.url(), ledger.clone());
    wait_heads(&ledger, &heads_of(&all)).await;
    let report2 = ingest.stop().await;
    let info = consumer.info().await.expect("consumer info");
    assert!(
        info.config.filter_subjects.is_empty() && info.config.filter_subject.is_empty(),
        "ingest updated the consumer: {:?}",
        info.config
    );

    assert_eq!(report2.stored, second.len() as u64, "{report2:?}");
    assert_eq!(
        report2.messages,
        second.len() as u64,
        "nothing redelivered: {report2:?}"
    );
    assert_eq!(report2.duplicates, 0);
    assert_eq!(report2.read_back, 0);
    for (t, evs) in &all {
        let want: Vec<(u64, Hash32)> = evs.iter().map(|p| (p.event.seq.0, p.hash())).collect();
        assert_eq!(stored(&ledger, t), want, "table {t}");
    }
    assert!(ledger.verifier().verify().expect("verify").is_ok());
}

/// A process that fetched a batch and died before acking it: under AckPolicy::All the
/// next ack would cover those messages unseen, so ingest reads them back from the stream
/// first. Nothing is lost although their redelivery (after ack_wait) never happens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_delivered_to_a_dead_consumer_are_read_back() {
    use futures::StreamExt;
    let server = natsd::NatsServer::start().expect("nats-server");
    let dir = tempfile::tempdir().expect("tempdir");
    let js = context(&server.url()).await;
    let floor = floor_near_now(2, 5, FaultPlan::none()).expect("floor");
    let mut events = Vec::new();
    let mut all: BTreeMap<TableId, (u64, Hash32)> = BTreeMap::new();
    for mut t in floor.tables {
        let mut evs = t.opening_events().expect("opening");
        evs.extend(t.play_round().expect("round").events);
        let l = evs.last().expect("events");
        all.insert(t.table().clone(), (l.event.seq.0, l.hash()));
        events.extend(evs);
    }
    publish_as_device(&js, &events).await;

    // The "dead" process: same durable consumer, fetches 10 messages, never acks.
    let stream = ingest::ensure_stream(&js).await.expect("stream");
    let config = IngestConfig::new(server.url());
    let consumer = ingest::ensure_consumer(&stream, subjects::INGEST_CONSUMER, &config)
        .await
        .expect("consumer");
    let mut fetched = consumer
        .fetch()
        .max_messages(10)
        .messages()
        .await
        .expect("fetch");
    let mut dead = 0;
    while let Some(m) = fetched.next().await {
        m.expect("message");
        dead += 1;
    }
    assert_eq!(dead, 10);

    let ledger = open(dir.path());
    let ingest = Running::start(&server.url(), ledger.clone());
    wait_heads(&ledger, &all).await;
    let report = ingest.stop().await;
    assert_eq!(report.read_back, 10, "{report:?}");
    assert_eq!(report.stored, events.len() as u64);
    assert!(ledger.verifier().verify().expect("verify").is_ok());
}

/// End-to-end exactly-once: a device trims its outbox only by a head of its own chain. A
/// message on `ledger.<t>.head` from another ledger, another device's chain or a forger
/// must not empty it. With no ingest running nothing is durable: a head
/// far beyond what the device sent must trim nothing (the device gives up, not durable),
/// and one naming another event at one of the device's seqs is a fork, an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_that_is_not_the_devices_chain_confirms_nothing() {
    let server = natsd::NatsServer::start().expect("nats-server");
    let js = context(&server.url()).await;
    let client = async_nats::connect(server.url()).await.expect("connect");
    for (forged_seq, seed) in [(1_000_000u64, 7_710u64), (3, 7_711)] {
        let floor = floor_near_now(1, seed, FaultPlan::none()).expect("floor");
        let table = floor.tables[0].table().clone();
        let forged = schemas::ChainHead {
            table: table.clone(),
            seq: schemas::Seq(forged_seq),
            hash: Hash32([0xAB; 32]),
        };
        let (stop, mut stopped) = oneshot::channel::<()>();
        let forger = {
            let client = client.clone();
            let json = serde_json::to_vec(&forged).expect("json");
            tokio::spawn(async move {
                loop {
                    client
                        .publish(subjects::head_subject(&forged.table), json.clone().into())
                        .await
                        .expect("publish forged head");
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(20)) => {}
                        _ = &mut stopped => return,
                    }
                }
            })
        };
        let options =
            PublishOptions::with_outbox(Duration::from_millis(300), Duration::from_secs(3));
        let outcome = simulator::publish_floor(&server.url(), floor.tables, 2, None, options).await;
        let _ = stop.send(());
        forger.await.expect("forger");
        match (forged_seq, &outcome) {
            (1_000_000, Err(simulator::Error::NotDurable { durable, .. })) => {
                assert_eq!(durable.0, 0, "the forged head confirmed events")
            }
            (3, Err(simulator::Error::HeadDisagrees(e))) => {
                assert_eq!((&e.table, e.seq.0, e.ledger), (&table, 3, forged.hash))
            }
            _ => panic!("forged head at seq {forged_seq}: {outcome:?}"),
        }
    }
    // Nothing was ingested: the events are all still in the stream.
    let stream = js.get_stream(subjects::STREAM).await.expect("stream");
    assert!(stream.cached_info().state.messages > 0);
}

/// End-to-end exactly-once: a message JetStream acknowledged and then lost leaves a gap.
/// A durable head that stands still while events are pending makes the device republish
/// mid-run, so the gap fills while the table is still publishing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gap_is_filled_while_the_device_still_publishes() {
    let server = natsd::NatsServer::start().expect("nats-server");
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = open(dir.path());
    let js = context(&server.url()).await;
    const SEED: u64 = 7_720;
    const ROUNDS: u64 = 60;
    // Each table's event count, counted apart from publishing.
    let totals: BTreeMap<TableId, u64> = floor_near_now(2, SEED, FaultPlan::none())
        .expect("floor")
        .tables
        .into_iter()
        .map(|t| (t.table().clone(), t.events_in_a_run(ROUNDS).expect("plays")))
        .collect();

    let ingest = Running::start(&server.url(), ledger.clone());
    let options = PublishOptions::with_outbox(Duration::from_millis(300), WAIT);
    let url = server.url();
    let floor = floor_near_now(2, SEED, FaultPlan::none()).expect("floor");
    // About 15 s of publishing: 60 rounds per table at 4 per second.
    let publishing = tokio::spawn(async move {
        simulator::publish_floor(&url, floor.tables, ROUNDS, Some(4.0), options).await
    });

    // Stop ingest once it has taken some of the floor, lose one event it has not read,
    // start it again.
    let stream = js.get_stream(subjects::STREAM).await.expect("stream");
    let messages = |n: u64| {
        let mut stream = stream.clone();
        async move {
            let deadline = tokio::time::Instant::now() + WAIT;
            loop {
                let have = stream.info().await.expect("stream info").state.messages;
                if have >= n {
                    return have;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "the stream never reached {n}"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    messages(100).await;
    let first_run = ingest.stop().await;
    // Past what the first run took: its fetch in flight at the stop was stored and acked.
    let stopped_at = stream
        .get_consumer::<jetstream::consumer::pull::Config>(subjects::INGEST_CONSUMER)
        .await
        .expect("ingest's consumer")
        .info()
        .await
        .expect("consumer info")
        .ack_floor
        .stream_sequence;
    messages(stopped_at + 40).await;
    let mut lost = None;
    for seq in (stopped_at + 10..stopped_at + 40).rev() {
        let raw = stream.get_raw_message(seq).await.expect("read back");
        if subjects::table_of_subject(&raw.subject).is_some() {
            let (event, _) = codec::decode(&raw.payload).expect("an event");
            assert!(stream.delete_message(seq).await.expect("delete"));
            lost = Some((event.table, event.seq.0));
            break;
        }
    }
    let (table, lost_seq) = lost.expect("an event among the newest messages");
    let ingest = Running::start(&server.url(), ledger.clone());

    // The gap fills while the device still has much of its table to publish.
    let deadline = tokio::time::Instant::now() + WAIT;
    let head_when_filled = loop {
        if let Some(h) = ledger.reader().head(&table).filter(|h| h.seq.0 > lost_seq) {
            break h.seq.0;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the gap at {table} seq {lost_seq} never filled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let total = totals[&table];
    eprintln!("{table}: seq {lost_seq} lost; the gap filled with the head at {head_when_filled} of {total}");
    assert!(
        head_when_filled + 100 < total,
        "{table}: the gap at seq {lost_seq} filled only when the head reached {head_when_filled} of {total}"
    );

    let published = publishing
        .await
        .expect("publishing task")
        .expect("every event confirmed durable by the ledger");
    let report = ingest.stop().await;
    assert!(
        first_run.stored > 0 && report.missing_in_stream == 1,
        "{report:?}"
    );
    for (t, n) in &totals {
        let want: Vec<(u64, Hash32)> = published
            .events
            .iter()
            .filter(|r| &r.table == t)
            .map(|r| (r.seq.0, r.hash))
            .collect();
        assert_eq!(want.len() as u64, *n, "{t}: published as counted");
        assert_eq!(stored(&ledger, t), want, "{t}");
    }
    assert!(ledger.verifier().verify().expect("verify").is_ok());
}

/// End-to-end exactly-once: the stream loses messages before ingest reads them
/// (deleted here, as a crash of a JetStream node before its fsync would lose them). The
/// devices' outboxes still hold those events, see the ledger's durable head stop short of
/// them, and republish; the ledger then holds exactly the published events, each once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outbox_republishes_what_the_stream_lost() {
    let server = natsd::NatsServer::start().expect("nats-server");
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = open(dir.path());
    let js = context(&server.url()).await;

    let floor = floor_near_now(3, 7_700, FaultPlan::none()).expect("floor");
    let options = PublishOptions::with_outbox(Duration::from_millis(500), WAIT);
    let url = server.url();
    let publishing = tokio::spawn(async move {
        simulator::publish_floor(&url, floor.tables, 8, None, options).await
    });

    // With no ingest running yet, wait for the stream to fill, then lose some of it.
    let mut stream = js.get_stream(subjects::STREAM).await.expect("stream");
    let deadline = tokio::time::Instant::now() + WAIT;
    while stream.info().await.expect("stream info").state.messages < 600 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the stream never filled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let lost: Vec<u64> = vec![40, 41, 42, 300, 517];
    for seq in &lost {
        assert!(
            stream.delete_message(*seq).await.expect("delete"),
            "stream message {seq} deleted"
        );
    }

    let ingest = Running::start(&server.url(), ledger.clone());
    let published = publishing
        .await
        .expect("publishing task")
        .expect("every event confirmed durable by the ledger");
    assert!(
        published.republished > 0,
        "nothing was republished, so the loss was not exercised"
    );
    let mut want: BTreeMap<TableId, Vec<(u64, Hash32)>> = BTreeMap::new();
    for r in &published.events {
        want.entry(r.table.clone())
            .or_default()
            .push((r.seq.0, r.hash));
    }
    let heads = want
        .iter()
        .map(|(t, evs)| (t.clone(), *evs.last().expect("events")))
        .collect();
    wait_heads(&ledger, &heads).await;
    // The devices vouch again after recovering: every table ends attested to its end.
    let deadline = tokio::time::Instant::now() + WAIT;
    for (table, events) in &want {
        let last = events.last().expect("events").0;
        while ledger
            .reader()
            .attestation(table)
            .is_none_or(|a| a.seq.0 < last)
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "table {table} never attested to seq {last}: {:?}",
                ledger.reader().attestation(table)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let report = ingest.stop().await;
    // Exactly the deleted sequences were missing, and events were held behind the gaps
    // they made until the outboxes filled them.
    assert_eq!(
        report.missing_in_stream,
        lost.len() as u64,
        "stream sequences missing, of {} deleted",
        lost.len()
    );
    assert!(
        report.held > 0,
        "no event was held behind a gap: {report:?}"
    );
    for (table, events) in &want {
        assert_eq!(&stored(&ledger, table), events, "table {table}");
    }
    assert!(ledger.verifier().verify().expect("verify").is_ok());
    // Nothing but checkpoints that named seqs beyond the gap the lost messages made was
    // refused; no event was quarantined.
    let counts = ledger.reader().quarantine_counts();
    assert!(
        counts
            .keys()
            .all(|r| r == ledger::attest::reason::CHECKPOINT_BEYOND_HEAD),
        "{counts:?}"
    );
    println!(
        "outbox: {} events published, {} stream messages lost, {} republished, ledger holds each once",
        published.events.len(),
        lost.len(),
        published.republished
    );
}
