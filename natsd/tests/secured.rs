//! A secured nats-server refuses unknown principals and plain connections, enforces each
//! role's subjects, and applies a revocation on reload without a restart.

use async_nats::jetstream::{self, consumer, stream};
use async_nats::Event;
use bus::{Access, Credentials, Role};
use futures::StreamExt;
use natsd::{NatsCluster, NatsServer};
use schemas::TableId;
use std::time::Duration;
use tokio::sync::mpsc;

/// Longest wait for anything a test expects from the server.
const WAIT: Duration = Duration::from_secs(5);
/// How long a publish the server drops may wait for its ack before it counts as lost.
const ACK_TIMEOUT: Duration = Duration::from_secs(1);

fn device(table: &str) -> Role {
    Role::Device {
        table: TableId::new(table).expect("table id"),
    }
}

/// A connected client and the events (errors, disconnects) its connection reports.
struct Probe {
    client: async_nats::Client,
    events: mpsc::UnboundedReceiver<Event>,
}

impl Probe {
    async fn connect(url: &str, access: &Access) -> Probe {
        let (tx, events) = mpsc::unbounded_channel();
        let options = async_nats::ConnectOptions::new().event_callback(move |e| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(e);
            }
        });
        let client = bus::connect_with(url, access, options)
            .await
            .expect("connect");
        Probe { client, events }
    }

    fn js(&self) -> jetstream::Context {
        jetstream::ContextBuilder::new()
            .timeout(ACK_TIMEOUT)
            .build(self.client.clone())
    }

    /// Waits (bounded) for a server error or event whose text contains `needle`.
    async fn expect_event(&mut self, needle: &str) {
        let found = tokio::time::timeout(WAIT, async {
            while let Some(e) = self.events.recv().await {
                if e.to_string()
                    .to_lowercase()
                    .contains(&needle.to_lowercase())
                {
                    return true;
                }
            }
            false
        })
        .await;
        assert_eq!(found, Ok(true), "no event containing {needle:?}");
    }
}

/// Publishes "x" on `subject` until `sub` has a message (bounded by `WAIT`). Core NATS:
/// a subscription the server has not yet registered misses what is published meanwhile
/// (a client's flush writes its buffer, it does not wait for the server), so heads and
/// alerts are sent again, as ingest does at every flush.
async fn received(
    publisher: &async_nats::Client,
    subject: &'static str,
    sub: &mut async_nats::Subscriber,
) -> async_nats::Message {
    let got = tokio::time::timeout(WAIT, async {
        loop {
            publisher.publish(subject, "x".into()).await.expect("pub");
            publisher.flush().await.expect("flush");
            let next = tokio::time::timeout(Duration::from_millis(200), sub.next());
            if let Ok(m) = next.await {
                return m;
            }
        }
    })
    .await;
    got.ok()
        .flatten()
        .unwrap_or_else(|| panic!("nothing arrived on {subject}"))
}

async fn create_tables_stream(js: &jetstream::Context) -> stream::Stream {
    js.create_stream(stream::Config {
        name: "TABLES".to_string(),
        subjects: vec![
            "tables.*.events".to_string(),
            "tables.*.checkpoints".to_string(),
        ],
        allow_direct: true,
        ..Default::default()
    })
    .await
    .expect("ingest creates the stream")
}

async fn stream_messages(js: &jetstream::Context) -> u64 {
    let mut s = js.get_stream("TABLES").await.expect("stream");
    s.info().await.expect("stream info").state.messages
}

async fn publish_acked(js: &jetstream::Context, subject: &str, payload: &str) -> u64 {
    js.publish(subject.to_string(), payload.to_string().into())
        .await
        .expect("publish sent")
        .await
        .expect("publish acked")
        .sequence
}

fn connect_err(url: &str, access: &Access) -> bus::Error {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    match rt.block_on(bus::connect(url, access)) {
        Ok(_) => panic!("connected to {url} with {access:?}"),
        Err(e) => e,
    }
}

#[test]
fn no_or_unknown_credentials_are_refused() {
    let mut server = NatsServer::start_secured().expect("server");
    server.issue("ingest", Role::Ingest).expect("issue");
    let security = server.security().expect("secured");
    let e = connect_err(&server.url(), &security.anonymous());
    assert!(matches!(e, bus::Error::AuthorizationRefused { .. }), "{e}");
    assert!(e.to_string().contains("authorization"), "{e}");

    // A well-formed credential the server never issued.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("stranger.json");
    Credentials::issue("stranger", Role::Observer)
        .expect("issue")
        .save(&path)
        .expect("save");
    let stranger = Access {
        credentials: Some(path),
        ca_file: Some(security.tls().ca_cert.clone()),
    };
    let e = connect_err(&server.url(), &stranger);
    assert!(matches!(e, bus::Error::AuthorizationRefused { .. }), "{e}");
}

#[test]
fn tls_is_required_and_works_with_the_ca() {
    let mut server = NatsServer::start_secured().expect("server");
    let access = server.issue("obs", Role::Observer).expect("issue");
    let plain = format!("nats://127.0.0.1:{}", server.port());
    let no_ca = Access {
        credentials: access.credentials.clone(),
        ca_file: None,
    };
    // The server's INFO demands TLS; without our CA the certificate is not trusted.
    let e = connect_err(&plain, &no_ca);
    assert!(matches!(e, bus::Error::Tls { .. }), "{e}");
    let e = connect_err(&server.url(), &no_ca);
    assert!(matches!(e, bus::Error::Tls { .. }), "{e}");
    // A raw plain-text CONNECT is refused by the server itself.
    let mut raw = std::net::TcpStream::connect(("127.0.0.1", server.port())).expect("tcp");
    raw.set_read_timeout(Some(WAIT)).expect("timeout");
    std::io::Write::write_all(&mut raw, b"CONNECT {}\r\nPING\r\n").expect("write");
    let mut answer = String::new();
    let _ = std::io::Read::read_to_string(&mut raw, &mut answer);
    assert!(!answer.contains("PONG"), "{answer}");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let client = bus::connect(&server.url(), &access).await.expect("tls");
        client.flush().await.expect("flush");
    });
}

#[tokio::test]
async fn a_device_speaks_only_for_its_table() {
    let mut server = NatsServer::start_secured().expect("server");
    let ingest = server.issue("ingest", Role::Ingest).expect("issue");
    let dev = server.issue("dev-a", device("A")).expect("issue");
    let ingest = Probe::connect(&server.url(), &ingest).await;
    create_tables_stream(&ingest.js()).await;
    let mut dev = Probe::connect(&server.url(), &dev).await;
    let js = dev.js();
    js.get_stream("TABLES")
        .await
        .expect("a device waits for the stream");
    assert_eq!(publish_acked(&js, "tables.A.events", "e1").await, 1);
    assert_eq!(publish_acked(&js, "tables.A.checkpoints", "c1").await, 2);

    let refused = js
        .publish("tables.B.events", "forged".into())
        .await
        .expect("sent");
    assert!(refused.await.is_err(), "table B's publish was acked");
    dev.expect_event("permissions violation").await;
    assert_eq!(stream_messages(&ingest.js()).await, 2);

    for subject in ["tables.>", "ledger.B.head"] {
        let _sub = dev.client.subscribe(subject).await.expect("sub sent");
        dev.client.flush().await.expect("flush");
        dev.expect_event("permissions violation").await;
    }
    // Its own head arrives.
    let mut head = dev.client.subscribe("ledger.A.head").await.expect("sub");
    dev.client.flush().await.expect("flush");
    let got = received(&ingest.client, "ledger.A.head", &mut head).await;
    assert_eq!(got.payload.as_ref(), b"x");
}

#[tokio::test]
async fn ingest_does_its_work_but_never_speaks_for_a_table() {
    let mut server = NatsServer::start_secured().expect("server");
    let ingest = server.issue("ingest", Role::Ingest).expect("issue");
    let dev = server.issue("dev-a", device("A")).expect("issue");
    let obs = server.issue("obs", Role::Observer).expect("issue");
    let mut ingest = Probe::connect(&server.url(), &ingest).await;
    let js = ingest.js();
    let stream = create_tables_stream(&js).await;
    let dev = Probe::connect(&server.url(), &dev).await;
    publish_acked(&dev.js(), "tables.A.events", "e1").await;

    let consumer: consumer::PullConsumer = stream
        .create_consumer(consumer::pull::Config {
            durable_name: Some("ingest".to_string()),
            ack_policy: consumer::AckPolicy::All,
            ..Default::default()
        })
        .await
        .expect("durable consumer");
    let mut batch = consumer
        .fetch()
        .max_messages(10)
        .expires(Duration::from_secs(1))
        .messages()
        .await
        .expect("fetch");
    let msg = batch.next().await.expect("one message").expect("message");
    assert_eq!(msg.payload.as_ref(), b"e1");
    msg.double_ack().await.expect("ack");
    let raw = stream.get_raw_message(1).await.expect("msg get");
    assert_eq!(raw.payload.as_ref(), b"e1");
    let direct = stream.direct_get(1).await.expect("direct get");
    assert_eq!(direct.payload.as_ref(), b"e1");

    let obs = Probe::connect(&server.url(), &obs).await;
    let mut heads = obs.client.subscribe("ledger.*.head").await.expect("sub");
    let mut alerts = obs.client.subscribe("alerts.>").await.expect("sub");
    obs.client.flush().await.expect("flush");
    for (subject, sub) in [
        ("ledger.A.head", &mut heads),
        ("alerts.A.fork", &mut alerts),
    ] {
        received(&ingest.client, subject, sub).await;
    }

    let forged = js.publish("tables.A.events", "forged".into()).await;
    assert!(forged.expect("sent").await.is_err(), "ingest spoke for A");
    ingest.expect_event("permissions violation").await;
    assert_eq!(stream_messages(&js).await, 1);
}

#[tokio::test]
async fn a_revoked_device_is_cut_off_without_a_restart() {
    let mut server = NatsServer::start_secured().expect("server");
    let ingest = server.issue("ingest", Role::Ingest).expect("issue");
    let one = server.issue("dev-1", device("A")).expect("issue");
    let two = server.issue("dev-2", device("A")).expect("issue");
    let ingest = Probe::connect(&server.url(), &ingest).await;
    create_tables_stream(&ingest.js()).await;
    let mut dev1 = Probe::connect(&server.url(), &one).await;
    let dev2 = Probe::connect(&server.url(), &two).await;
    publish_acked(&dev1.js(), "tables.A.events", "1").await;
    let pid = server.pid();

    server.revoke("dev-1").expect("revoke");
    assert_eq!(server.pid(), pid, "the bus restarted");
    dev1.expect_event("authorization").await;
    let acked = match dev1.js().publish("tables.A.events", "2".into()).await {
        Ok(ack) => ack.await.is_ok(),
        Err(_) => false,
    };
    assert!(!acked, "a revoked device's publish was acked");
    let e = bus::connect(&server.url(), &one)
        .await
        .expect_err("refused");
    assert!(matches!(e, bus::Error::AuthorizationRefused { .. }), "{e}");

    assert_eq!(publish_acked(&dev2.js(), "tables.A.events", "3").await, 2);
    assert_eq!(stream_messages(&ingest.js()).await, 2);
}

#[test]
fn a_secured_server_restarts_with_its_roster() {
    let mut server = NatsServer::start_secured().expect("server");
    let obs = server.issue("obs", Role::Observer).expect("issue");
    let port = server.port();
    server.restart().expect("restart");
    assert_eq!(server.port(), port);
    assert!(server.url().starts_with("tls://"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let c = bus::connect(&server.url(), &obs).await.expect("connect");
        c.flush().await.expect("flush");
    });
    let anonymous = server.security().expect("secured").anonymous();
    let e = connect_err(&server.url(), &anonymous);
    assert!(matches!(e, bus::Error::AuthorizationRefused { .. }), "{e}");
}

#[test]
fn a_secured_cluster_acks_a_device_publish_on_an_r3_stream() {
    let mut cluster = NatsCluster::start_secured(3).expect("cluster");
    let ingest = cluster.issue("ingest", Role::Ingest).expect("issue");
    let dev = cluster.issue("dev-a", device("A")).expect("issue");
    assert!(cluster.url().split(',').all(|u| u.starts_with("tls://")));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let ingest = bus::connect(&cluster.url(), &ingest).await.expect("ingest");
        let js = jetstream::new(ingest);
        let info = js
            .create_stream(stream::Config {
                name: "TABLES".to_string(),
                subjects: vec!["tables.*.events".to_string()],
                num_replicas: 3,
                ..Default::default()
            })
            .await
            .expect("R3 stream")
            .info()
            .await
            .expect("info")
            .clone();
        assert_eq!(info.cluster.expect("cluster").replicas.len(), 2);
        let dev = bus::connect(&cluster.url(), &dev).await.expect("device");
        assert_eq!(
            publish_acked(&jetstream::new(dev), "tables.A.events", "e").await,
            1
        );
    });
    let e = connect_err(&cluster.url(), &cluster.security().expect("s").anonymous());
    assert!(matches!(e, bus::Error::AuthorizationRefused { .. }), "{e}");
}
