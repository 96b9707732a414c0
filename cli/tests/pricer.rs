//! The edge pricer under a lease (issue 43): two `roundledger serve --node-id` on one
//! real `nats-server -js`. Only the pricer lease's holder prices a configured pay table;
//! the other node adopts its figures from the bucket `roundledger_edges` without
//! pricing. With the holder killed (SIGKILL), the other node takes the lease and prices
//! the next configuration; the restarted node adopts it. A value in the bucket stamped by
//! a node that holds no lease is refused and counted, and never lands in a read model.

mod common;

use async_nats::jetstream;
use common::serve::{listening, scrape, start, wait_for, Serve};
use readside::edges::{self, EdgeRecord};
use schemas::*;
use std::path::{Path, PathBuf};

const TOKEN: &str = "ops-admin-token-0000000001";
/// A short lease, so a takeover comes within seconds.
const LEASE_TTL_S: u64 = 2;

/// A node: its process, its log, its metrics address and its directory.
struct Node {
    serve: Serve,
    log: PathBuf,
    metrics: String,
}

fn start_node(root: &Path, node: &str, url: &str) -> Node {
    let dir = root.join(node);
    std::fs::create_dir_all(&dir).expect("node dir");
    let extra = format!("node-id = {node:?}\nlease-ttl = {LEASE_TTL_S}\n");
    let (serve, log) = start(&dir, url, TOKEN, &extra);
    let metrics = listening(&log).1;
    Node {
        serve,
        log,
        metrics,
    }
}

/// Whether `log` has a line with `message` whose fields hold `duty`.
fn lease_taken(log: &Path, duty: &str) -> bool {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines().any(|l| {
        let v: serde_json::Value = serde_json::from_str(l).unwrap_or_default();
        v["message"] == "lease taken" && v["duty"] == duty
    })
}

/// A counter of `node`'s scrape (0 when absent).
fn counter(node: &Node, name: &str) -> f64 {
    scrape(&node.metrics).get(name).copied().unwrap_or(0.0)
}

/// TCP3 Pair Plus paying a straight `straight` to 1 (TCP3 §4.2 pays 6): a configuration
/// whose edge must be priced (22,100 hands, exact).
fn config(straight: u32) -> TableConfig {
    use HandClass::*;
    let rows = [
        (StraightFlush, 40),
        (ThreeOfAKind, 30),
        (Straight, straight),
        (Flush, 3),
        (OnePair, 1),
    ];
    let pair_plus = PayTable {
        name: PayTableName::PairPlus,
        rows: rows
            .iter()
            .map(|&(hand, x)| PayRow {
                hand,
                pays: Pays::ToOne(x),
                envy: None,
            })
            .collect(),
    };
    let golden = format!(
        "{}/../replayer/tests/golden/clean_tcp3_fold_and_pair_plus_only.events.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let first = std::fs::read_to_string(golden).expect("golden round");
    let opened: Event = serde_json::from_str(first.lines().next().expect("a line")).expect("event");
    let EventBody::TableOpened { mut config } = opened.body else {
        panic!("the golden round opens its table first");
    };
    config.pay_tables = vec![pair_plus];
    config
}

/// Opens `table` under `config`: its chain's first event.
async fn open_table(url: &str, table: &str, config: TableConfig) {
    let js = jetstream::new(async_nats::connect(url).await.expect("connect"));
    let t = TableId::new(table).expect("id");
    let bytes = codec::to_bincode(&Event {
        v: WIRE_VERSION,
        table: t.clone(),
        device: DeviceId::new("ctl-1").expect("id"),
        seq: Seq(1),
        prev: Hash32::ZERO,
        occurred_at_ns: ingest::system_clock_ns(),
        round: None,
        body: EventBody::TableOpened { config },
    });
    js.publish(subjects::events_subject(&t), bytes.into())
        .await
        .expect("publish")
        .await
        .expect("stream ack");
}

/// The bucket's name of `config`'s edges (`readside::edges::shared_name`).
fn shared_name(config: &TableConfig) -> String {
    let digest = rules::edge::pricing_key(config).expect("a configured pay table");
    edges::shared_name(&edges::key(config.rule_set, &digest)).expect("an edge key")
}

/// Puts a value into the edges bucket as any holder of the nodes' credential could.
async fn forge(url: &str, name: &str, value: Vec<u8>) {
    let js = jetstream::new(async_nats::connect(url).await.expect("connect"));
    let store = js
        .get_key_value(subjects::EDGES_BUCKET)
        .await
        .expect("the edges bucket");
    store.put(name, value.into()).await.expect("put");
}

/// The edge records a stopped node's read model holds, by key.
fn book(root: &Path, node: &str) -> Vec<(Vec<u8>, EdgeRecord)> {
    let dir = readside::model::default_dir(&root.join(node).join("ledger"));
    let model = readside::model::Model::open_as_built(&dir).expect("read model");
    edges::held(&model).expect("edge book")
}

/// The record of `config` in `book`, priced.
fn priced<'a>(book: &'a [(Vec<u8>, EdgeRecord)], config: &TableConfig) -> &'a EdgeRecord {
    let digest = rules::edge::pricing_key(config).expect("configured");
    let k = edges::key(config.rule_set, &digest);
    let (_, r) = book.iter().find(|(key, _)| *key == k).expect("recorded");
    assert!(r.priced.is_some(), "priced: {r:?}");
    r
}

#[test]
fn only_the_lease_holder_prices_and_every_node_adopts() {
    let nats = natsd::NatsServer::start().expect("nats-server");
    let url = nats.url();
    let root = tempfile::tempdir().expect("tempdir");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let a = start_node(root.path(), "a", &url);
    wait_for("a takes the pricer lease", || {
        (lease_taken(&a.log, "pricer"), ())
    });
    let mut b = start_node(root.path(), "b", &url);
    let (one, two, three) = (config(5), config(7), config(8));
    rt.block_on(open_table(&url, "T-P1", one.clone()));
    wait_for("a prices T-P1's pay tables, b adopts them", || {
        let seen = [
            counter(&a, "roundledger_edges_priced_total"),
            counter(&b, "roundledger_edges_adopted_total"),
        ];
        (seen == [1.0, 1.0], seen)
    });
    assert_eq!(
        counter(&b, "roundledger_edges_priced_total"),
        0.0,
        "b priced nothing"
    );

    let mut a = a;
    a.serve.0.kill().expect("SIGKILL a");
    a.serve.0.wait().expect("reap a");
    rt.block_on(open_table(&url, "T-P2", two.clone()));
    wait_for("b takes the lease and prices T-P2", || {
        let n = counter(&b, "roundledger_edges_priced_total");
        (n == 1.0, n)
    });
    assert!(lease_taken(&b.log, "pricer"), "b holds the pricer lease");

    // A value no lease holder stamped: refused by both nodes, never adopted.
    let mut fake = EdgeRecord {
        config: three.clone(),
        priced: None,
    };
    let mut lines = rules::edge::price_configured(&three, &rules::edge::Budget::CONFIGURED);
    lines.iter_mut().for_each(|l| l.edge_ppb = -500_000_000);
    fake.priced = Some(lines);
    let mut value = b"lease 1 mallory\n".to_vec();
    value.extend(serde_json::to_vec(&fake).expect("json"));
    rt.block_on(forge(&url, &shared_name(&three), value));
    let a = start_node(root.path(), "a", &url);
    rt.block_on(open_table(&url, "T-P3", three.clone()));
    wait_for("b refuses the forged value and prices T-P3 itself", || {
        let seen = [
            counter(&b, "roundledger_edges_refused_total"),
            counter(&b, "roundledger_edges_priced_total"),
        ];
        (seen == [1.0, 2.0], seen)
    });
    wait_for("the restarted a adopts T-P2 and T-P3 from b", || {
        let n = counter(&a, "roundledger_edges_adopted_total");
        (n == 2.0, n)
    });
    assert_eq!(counter(&a, "roundledger_edges_priced_total"), 0.0);
    let mut a = a;
    assert!(a.serve.stop(), "a stops cleanly");
    assert!(b.serve.stop(), "b stops cleanly");
    let (on_a, on_b) = (book(root.path(), "a"), book(root.path(), "b"));
    for c in [&one, &two, &three] {
        assert_eq!(priced(&on_a, c), priced(&on_b, c), "one figure on both");
    }
    let p3 = priced(&on_a, &three).priced.as_ref().expect("priced");
    assert!(
        p3.iter().all(|l| l.edge_ppb != -500_000_000),
        "the forged figures are nowhere: {p3:?}"
    );
}
