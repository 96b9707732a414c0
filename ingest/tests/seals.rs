//! Day seals on a real, secured nats-server: the sealer beside ingest seals the last
//! ended day once ingest's consumer is drained, stores it once, and publishes it on
//! `seals.<day>`, where an observer receives it; a device may not publish there.

mod common;

use common::{open, Running};
use futures::StreamExt;
use ingest::sealer::{self, SealerConfig};
use ingest::IngestConfig;
use ledger::days::DayRule;
use schemas::attest::SigningKey;
use schemas::seal::DaySeal;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sealed_day_is_published_and_an_observer_receives_it() {
    let mut server = natsd::NatsServer::start_secured().expect("nats-server");
    let table = schemas::TableId::new("T-1").unwrap();
    let issued = server.issue_floor(&[table]).expect("credentials");
    let dir = tempfile::tempdir().unwrap();
    let ledger = open(dir.path());
    let observer = bus::connect(&server.url(), &issued.observer).await.unwrap();
    let mut seals = observer
        .subscribe(schemas::subjects::SEALS_WILDCARD)
        .await
        .unwrap();
    observer.flush().await.unwrap();

    let mut config = IngestConfig::new(server.url());
    config.access = issued.ingest.clone();
    let ingest = Running::start_with(config, ledger.clone());
    let key = Arc::new(SigningKey::derive_for_simulation("house-seal"));
    let rule = DayRule::new("06:00", "Asia/Singapore").unwrap();
    let sealer_config = SealerConfig {
        nats_url: server.url(),
        access: issued.ingest.clone(),
        rule: rule.clone(),
        key: key.clone(),
        grace: Duration::ZERO,
        check_every: Duration::from_millis(50),
        clock: ingest::system_clock_ns,
        consumer: schemas::subjects::INGEST_CONSUMER.to_string(),
        lease: None,
    };
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(sealer::run(sealer_config, ledger.clone(), async {
        let _ = rx.await;
    }));

    let msg = tokio::time::timeout(Duration::from_secs(30), seals.next())
        .await
        .expect("a seal within 30 s")
        .expect("subscription open");
    let seal = DaySeal::from_json(&msg.payload).expect("a seal");
    seal.verify(Some(&key.public()))
        .expect("signed by the House");
    let yesterday = rule
        .previous_day(&rule.day_of(ingest::system_clock_ns()).unwrap())
        .unwrap();
    assert_eq!(seal.day, yesterday);
    assert_eq!(msg.subject.as_str(), format!("seals.{yesterday}"));
    assert_eq!(
        ledger.reader().day_seal(&yesterday).unwrap(),
        Some(seal.clone())
    );

    stop.send(()).unwrap();
    assert_eq!(task.await.unwrap().unwrap(), 1, "one seal made");
    ingest.stop().await;

    // A device's credential may not publish a seal: the server refuses it, so nothing
    // reaches the observer.
    let device = bus::Access {
        credentials: Some(issued.creds_dir.join("T-1.json")),
        ca_file: Some(issued.ca_file.clone()),
    };
    let forger = bus::connect(&server.url(), &device).await.unwrap();
    let _ = forger.publish("seals.2000-01-01", "forged".into()).await;
    let _ = forger.flush().await;
    observer.flush().await.unwrap();
    let next = tokio::time::timeout(Duration::from_millis(500), seals.next()).await;
    assert!(next.is_err(), "no forged seal arrives: {next:?}");
}

/// A node that seals a day while another node holds the sealer lease keeps the seal. When
/// the holder dies without publishing it, this node takes the lease and publishes the
/// kept seal, once: a day's seal is never lost to a takeover.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seal_kept_by_a_non_holder_is_published_when_it_takes_the_lease() {
    let server = natsd::NatsServer::start().expect("nats-server");
    let dir = tempfile::tempdir().unwrap();
    let ledger = open(dir.path());
    let client = async_nats::connect(server.url()).await.unwrap();
    let mut seals = client
        .subscribe(schemas::subjects::SEALS_WILDCARD)
        .await
        .unwrap();
    client.flush().await.unwrap();
    let ttl = Duration::from_secs(2);
    // Another node holds the lease, then dies (stops renewing) without publishing.
    let js = async_nats::jetstream::new(client.clone());
    let mut other = ingest::lease::Lease::open(&js, "sealer", "n9", ttl, 1)
        .await
        .unwrap();
    assert!(other.tick().await, "the other node takes the free lease");

    let ingest = Running::start_with(IngestConfig::new(server.url()), ledger.clone());
    let key = Arc::new(SigningKey::derive_for_simulation("house-seal"));
    let rule = DayRule::new("06:00", "Asia/Singapore").unwrap();
    let config = SealerConfig {
        nats_url: server.url(),
        access: bus::Access::default(),
        rule: rule.clone(),
        key: key.clone(),
        grace: Duration::ZERO,
        check_every: Duration::from_millis(50),
        clock: ingest::system_clock_ns,
        consumer: schemas::subjects::INGEST_CONSUMER.to_string(),
        lease: Some(sealer::LeaseSetup {
            node: "n1".to_string(),
            ttl,
            replicas: 1,
        }),
    };
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(sealer::run(config, ledger.clone(), async {
        let _ = rx.await;
    }));
    let msg = tokio::time::timeout(Duration::from_secs(30), seals.next())
        .await
        .expect("the kept seal is published after the takeover, within 30 s")
        .expect("subscription open");
    let seal = DaySeal::from_json(&msg.payload).expect("a seal");
    let yesterday = rule
        .previous_day(&rule.day_of(ingest::system_clock_ns()).unwrap())
        .unwrap();
    assert_eq!(seal.day, yesterday);
    assert_eq!(
        msg.headers
            .as_ref()
            .and_then(|h| h.get(ingest::lease::LEASE_NODE_HEADER))
            .map(|v| v.as_str()),
        Some("n1"),
        "published by the node that took over"
    );
    assert!(!other.tick().await, "the dead holder cannot take it back");
    let again = tokio::time::timeout(Duration::from_secs(3), seals.next()).await;
    assert!(again.is_err(), "the seal is published once: {again:?}");
    stop.send(()).unwrap();
    assert_eq!(task.await.unwrap().unwrap(), 1, "one seal made");
    ingest.stop().await;
}
