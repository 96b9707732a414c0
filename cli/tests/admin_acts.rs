//! Admin acts on three ledger replicas (issue 43): three `roundledger serve --node-id` on
//! one real `nats-server -js`, each trusting the same admin key.
//!
//! A re-sync read through one node, a clock skew limit, a key revocation and an unfence
//! travel on the stream; each node takes them at the same point of the log and checks the
//! signatures itself. Before them, n3's copy of one table is fenced (its head forged
//! while stopped, then repaired): the unfence appends what n3 kept meanwhile. Two forged acts (a bent signature, an untrusted key) are refused by
//! every node and kept in quarantine as `admin_refused`. The three ledgers end with equal
//! digests (heads, receipts and the quarantine chain). The CLI's `--server` lists start
//! with a dead URL and fail over to a live node.
//!
//! Waits are bounded (`common::serve::WAIT`); nothing asserts on time.

mod common;

use common::serve::{get, listening, wait_for, Serve};
use ledger::store::{Space, SLED_TREE};
use schemas::admin::{Act, AdminAct, AdminBody};
use schemas::api::ChainStatus;
use schemas::attest::{key_event_body, KeyAction, SigningKey};
use schemas::chain::event_hash;
use schemas::*;
use std::path::{Path, PathBuf};

const TOKEN: &str = "ops-admin-token-0000000001";
const NODES: [&str; 3] = ["n1", "n2", "n3"];
const HOUR_NS: i64 = 3_600_000_000_000;

/// One table's chain as the test writes it.
struct Chain {
    table: TableId,
    prev: Hash32,
    seq: u64,
}

impl Chain {
    fn new(name: &str) -> Chain {
        Chain {
            table: TableId::new(name).expect("id"),
            prev: Hash32::ZERO,
            seq: 0,
        }
    }

    /// The next event's bytes, its device time `skew_ns` before now.
    fn next(&mut self, body: EventBody, skew_ns: i64) -> Vec<u8> {
        self.seq += 1;
        let bytes = codec::to_bincode(&Event {
            v: WIRE_VERSION,
            table: self.table.clone(),
            device: device(),
            seq: Seq(self.seq),
            prev: self.prev,
            occurred_at_ns: ingest::system_clock_ns() - skew_ns,
            round: None,
            body,
        });
        self.prev = event_hash(&self.prev, &bytes);
        bytes
    }
}

fn device() -> DeviceId {
    DeviceId::new("ctl-1").expect("id")
}

fn bets() -> EventBody {
    EventBody::Announced {
        announcement: Announcement::PlaceYourBets,
    }
}

/// Publishes `bytes` on `subject` and waits for the stream's ack.
fn publish(rt: &tokio::runtime::Runtime, url: &str, subject: &str, bytes: Vec<u8>) {
    rt.block_on(async {
        let js = async_nats::jetstream::new(async_nats::connect(url).await.expect("connect"));
        ingest::ensure_stream(&js).await.expect("stream");
        js.publish(subject.to_string(), bytes.into())
            .await
            .expect("publish")
            .await
            .expect("stream ack");
    });
}

fn publish_event(rt: &tokio::runtime::Runtime, url: &str, c: &Chain, bytes: Vec<u8>) {
    publish(rt, url, &subjects::events_subject(&c.table), bytes);
}

/// A table's status on a node's API.
fn chain_of(api: &str, table: &TableId) -> Option<ChainStatus> {
    let (status, body) = get(api, "/v1/chain", Some(TOKEN));
    assert_eq!(status, 200, "{body}");
    let all: Vec<ChainStatus> = serde_json::from_str(&body).expect("chain JSON");
    all.into_iter().find(|c| &c.table == table)
}

/// How many JSON log lines of `log` have `message`.
fn logged(log: &Path, message: &str) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["message"].as_str() == Some(message))
        .count()
}

/// Starts node `n` under `root`, trusting `admin_hex` and the simulator's admin.
fn start_node(root: &Path, n: &str, url: &str, admin_hex: &str) -> Node {
    let dir = root.join(n);
    std::fs::create_dir_all(&dir).expect("node dir");
    let extra = format!(
        "node-id = {n:?}\nreplica-check-ms = 200\nadmin-key = {admin_hex:?}\ntrust-simulated-admin = true\n"
    );
    // The simulator's tables enroll under its admin: a test-only trust.
    let env = [common::TEST_ONLY_SIMULATED_KEYS];
    let (serve, log) = common::serve::start_env(&dir, url, TOKEN, &extra, &env);
    let api = listening(&log).0;
    Node {
        serve,
        api,
        log,
        dir,
    }
}

/// An admin act signed by `key`, its signature bent when `bend`.
fn forged_act(key: &SigningKey, table: &TableId, bend: bool) -> Vec<u8> {
    let body = AdminBody {
        act: Act::Unfence {
            table: table.clone(),
        },
        note: "forged".into(),
        signed_at_ns: ingest::system_clock_ns(),
    };
    let mut act = AdminAct::sign(key, body).expect("sign");
    if bend {
        act.signature.0[0] ^= 1;
    }
    act.to_wire()
}

/// A node: its process, API address, log, and directory.
struct Node {
    serve: Serve,
    api: String,
    log: PathBuf,
    dir: PathBuf,
}

/// Everything the test shares: the bus, the nodes, the admin key file.
struct Scene {
    url: String,
    rt: tokio::runtime::Runtime,
    nodes: Vec<Node>,
    key: String,
    admin_hex: String,
}

impl Scene {
    fn run(&self, args: &[&str]) {
        let out = common::roundledger(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {err}");
    }

    fn publish_all(&self, c: &mut Chain, events: Vec<(EventBody, i64)>) {
        for (body, skew) in events {
            let bytes = c.next(body, skew);
            publish_event(&self.rt, &self.url, c, bytes);
        }
    }
}

#[test]
fn admin_acts_reach_every_replica_and_forged_ones_are_refused_by_each() {
    let nats = natsd::NatsServer::start().expect("nats-server");
    let root = tempfile::tempdir().expect("tempdir");
    let key = root.path().join("admin.key").display().to_string();
    let keygen = common::roundledger(&["keygen", "--out", &key]);
    let admin_hex = String::from_utf8_lossy(&keygen.stdout).trim().to_string();
    let url = nats.url();
    let nodes = NODES
        .iter()
        .map(|n| start_node(root.path(), n, &url, &admin_hex))
        .collect();
    let mut s = Scene {
        url,
        rt: tokio::runtime::Runtime::new().expect("runtime"),
        nodes,
        key,
        admin_hex,
    };
    let mut c = Chain::new("T-C");
    fence_on_n3(&mut s, &mut c);
    let (a, b) = acts_in_stream_order(&s);
    s.run(&[
        "table",
        "unfence",
        "T-C",
        "--admin-key",
        &s.key,
        "--note",
        "case 43: repaired",
        "--nats",
        &s.url,
    ]);
    for node in &s.nodes {
        wait_for("the node takes both admin acts", || {
            let n = logged(&node.log, "admin act taken");
            (n == 2, n)
        });
        let heads: Vec<_> = [&a, &b, &c.table]
            .iter()
            .map(|t| chain_of(&node.api, t).map(|c| c.head_seq.0))
            .collect();
        // T-A: the re-sync admitted seq 6, then 7..=10; T-B: seq 4 refused; T-C: n3
        // appended its two kept events again.
        assert_eq!(heads, [Some(10), Some(3), Some(5)], "{}", node.api);
    }
    status_fails_over(&s.nodes);
    for node in &mut s.nodes {
        assert!(node.serve.stop(), "clean stop");
    }
    every_ledger_holds_the_acts(&s, &a, &b);
}

/// T-C's seqs 1..=3 on every node; n3 stopped, its T-C head forged, started: fenced, it
/// keeps seqs 4 and 5 as `table_fenced`. Stopped, repaired, started: not fenced, the two
/// entries still in quarantine.
fn fence_on_n3(s: &mut Scene, c: &mut Chain) {
    s.publish_all(c, (0..3).map(|_| (bets(), 0)).collect());
    let n3 = &s.nodes[2];
    wait_for("n3 stores T-C", || {
        let h = chain_of(&n3.api, &c.table).map(|c| c.head_seq.0);
        (h == Some(3), h)
    });
    restart_n3(s, Some(&c.table));
    s.publish_all(c, (0..2).map(|_| (bets(), 0)).collect());
    let log = s.nodes[2].log.clone();
    wait_for("n3 keeps T-C's seqs 4 and 5 as table_fenced", || {
        let n = logged(&log, "event quarantined");
        (n == 2, n)
    });
    restart_n3(s, None);
}

/// Stops n3, then forges `forge`'s head in its ledger, or puts the forged head back.
fn restart_n3(s: &mut Scene, forge: Option<&TableId>) {
    assert!(s.nodes[2].serve.stop(), "clean stop");
    let dir = s.nodes[2].dir.clone();
    let (ledger, backup) = (dir.join("ledger"), dir.join("head.bak"));
    match forge {
        Some(t) => std::fs::write(&backup, swap_head(&ledger, t, None)).expect("backup"),
        None => {
            let bytes = std::fs::read(&backup).expect("backup");
            let t = TableId::new("T-C").expect("id");
            swap_head(&ledger, &t, Some(bytes));
        }
    }
    s.nodes[2] = start_node(dir.parent().expect("root"), "n3", &s.url, &s.admin_hex);
}

/// Rewrites table `t`'s stored head in a closed ledger: its hash forged, or `put` back.
/// Returns the head's bytes before.
fn swap_head(ledger_dir: &Path, t: &TableId, put: Option<Vec<u8>>) -> Vec<u8> {
    let db = sled::open(ledger_dir).expect("raw sled open");
    let tree = db.open_tree(SLED_TREE).expect("tree");
    let mut key = vec![Space::Head.prefix()];
    key.extend_from_slice(&ledger::record::table_key(t));
    let before = tree.get(&key).expect("get").expect("head").to_vec();
    let after = put.unwrap_or_else(|| {
        let mut forged = before.clone();
        forged[8..40].copy_from_slice(&[0xAB; 32]);
        forged
    });
    tree.insert(key, after).expect("insert");
    db.flush().expect("flush");
    before
}

/// On the stream, in order: T-A stuck behind a skewed event and re-synced through n1;
/// T-B's enrollment and an event 2 h off (within 24 h); the 1 h clock-skew limit; T-B's
/// revocation and an event 2 h off (now refused); two forged acts.
fn acts_in_stream_order(s: &Scene) -> (TableId, TableId) {
    let mut a = Chain::new("T-A");
    let events = (1..=10)
        .map(|seq| (bets(), if seq == 6 { 30 * HOUR_NS } else { 0 }))
        .collect();
    s.publish_all(&mut a, events);
    let mut b = Chain::new("T-B");
    let k1 = SigningKey::derive_for_simulation("ctl-1 key 1").public();
    let admin = simulator::admin_key();
    let enroll = key_event_body(&admin, &b.table, device(), k1, KeyAction::Enroll);
    s.publish_all(&mut b, vec![(enroll, 0), (bets(), 2 * HOUR_NS)]);
    let blocker = wait_for("n1 holds T-A behind seq 6", || {
        let c = chain_of(&s.nodes[0].api, &a.table);
        let gap = c.and_then(|c| c.gap).filter(|g| g.held == 4);
        let id = gap.and_then(|g| g.blocked_by).map(|b| b.quarantine_id);
        (id.is_some(), id)
    })
    .expect("a blocker");
    resync_through_n1(&s.nodes[0].api, &s.key, &a.table, blocker, &s.url);
    s.run(&[
        "admin",
        "clock-skew",
        "--max-seconds",
        "3600",
        "--admin-key",
        &s.key,
        "--note",
        "case 43: tighter clocks",
        "--nats",
        &s.url,
    ]);
    let revoke = key_event_body(&admin, &b.table, device(), k1, KeyAction::Revoke);
    s.publish_all(&mut b, vec![(revoke, 0), (bets(), 2 * HOUR_NS)]);
    let stranger = SigningKey::derive_for_simulation("not an admin");
    for (key, bend) in [(&admin, true), (&stranger, false)] {
        let act = forged_act(key, &a.table, bend);
        publish(&s.rt, &s.url, subjects::ADMIN_SUBJECT, act);
    }
    (a.table, b.table)
}

/// A loopback URL nothing listens on: connections to it are refused.
fn dead_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    drop(l);
    format!("http://127.0.0.1:{port}")
}

/// One `table resync` of `entry` signed with `key`, read and confirmed through `servers`.
fn resync(
    key: &str,
    table: &TableId,
    entry: u64,
    url: &str,
    servers: &[&str],
) -> std::process::Output {
    let entry = entry.to_string();
    let mut args = vec![
        "table",
        "resync",
        "--admin-key",
        key,
        "--table",
        table.as_str(),
        "--entry",
        &entry,
        "--note",
        "case 43",
        "--token",
        TOKEN,
        "--nats",
        url,
    ];
    for s in servers {
        args.extend(["--server", s]);
    }
    common::roundledger(&args)
}

/// `table resync` reads T-A's head and the blocking entry from n1's API and publishes.
/// First with a key no node trusts: every node refuses it, and the CLI, waiting for n1,
/// says REFUSED (exit 1). Then the admin's: its first `--server` is dead, the CLI says so,
/// goes on with n1 and waits until n1 applied it. The same entry once more is refused
/// before signing (exit 2): it no longer follows the head.
fn resync_through_n1(api: &str, key: &str, table: &TableId, entry: u64, url: &str) {
    let (dead, server) = (dead_url(), format!("http://{api}"));
    let stranger = format!("{key}.stranger");
    assert!(common::roundledger(&["keygen", "--out", &stranger])
        .status
        .success());
    let refused = resync(&stranger, table, entry, url, &[&server]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(
        err.contains("REFUSED: quarantine entry") && err.contains("resync_refused"),
        "{err}"
    );
    let out = resync(key, table, entry, url, &[&dead, &server]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains(&format!("{dead} unreachable")), "{err}");
    assert!(err.contains(&format!("using {server}")), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("applied:"));
    let again = resync(key, table, entry, url, &[&server]);
    let err = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(2), "{err}");
    assert!(err.contains("ingest would refuse"), "{err}");
}

/// `table status` with a comma-separated list, the dead URL first, then every node.
fn status_fails_over(nodes: &[Node]) {
    let mut urls = vec![dead_url()];
    urls.extend(nodes.iter().map(|n| format!("http://{}", n.api)));
    let list = urls.join(",");
    let out = common::roundledger(&["table", "status", "--server", &list, "--token", TOKEN]);
    let (text, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{text}{err}");
    assert!(text.contains("T-A") && text.contains("T-B"), "{text}");
    assert!(err.contains(&format!("{} unreachable", urls[0])), "{err}");
    let all_dead = format!("{},{}", dead_url(), dead_url());
    let out = common::roundledger(&["table", "status", "--server", &all_dead, "--token", TOKEN]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no --server answered"), "{err}");
}

/// Each stopped ledger: the re-sync kept, T-B's key revoked and its late event refused,
/// both forged acts in quarantine, both acts in the admin log and checked by `verify`,
/// the unfence in the fence log (n3's appended its two kept events). Every table's head
/// and receipt are equal on the three; n1 and n2 have equal digests (n3's quarantine
/// also holds its `table_fenced` entries).
fn every_ledger_holds_the_acts(s: &Scene, a: &TableId, b: &TableId) {
    let mut digests = Vec::new();
    for (n, node) in NODES.iter().zip(&s.nodes) {
        let dir = node.dir.join("ledger");
        let l = ledger::Ledger::open(&dir).expect("open");
        assert_eq!(
            l.reader().resyncs(Some(a)).expect("re-syncs").len(),
            1,
            "{n}"
        );
        let key = l
            .reader()
            .device_key(b, &device())
            .expect("T-B's device key");
        assert_eq!(key.revoked_seq, Some(Seq(3)), "{n}");
        let reasons = |r| {
            let (_, entries) = l
                .reader()
                .quarantine_page(Some(r), None, 0, 10)
                .expect("quarantine");
            entries.into_iter().map(|e| e.text).collect::<Vec<_>>()
        };
        let skewed = reasons(ledger::reason::CLOCK_SKEW);
        assert_eq!(skewed.len(), 2, "{n}: T-A seq 6 and T-B seq 4: {skewed:?}");
        let fenced = reasons(ledger::reason::TABLE_FENCED).len();
        assert_eq!(fenced, if *n == "n3" { 2 } else { 0 }, "{n}");
        let forged = reasons(ledger::reason::ADMIN_REFUSED);
        assert_eq!(forged.len(), 2, "{n}: {forged:?}");
        for why in ["does not verify", "is not trusted"] {
            assert!(forged.iter().any(|t| t.contains(why)), "{forged:?}");
        }
        acts_logged(&l, n);
        assert_eq!(l.reader().clock_skew_max_ns(), HOUR_NS, "{n}");
        digests.push(l.verifier().digest(1).expect("digest"));
        drop(l);
        let verified = common::roundledger(&["verify", "--ledger", dir.to_str().expect("utf-8")]);
        let text = String::from_utf8_lossy(&verified.stdout);
        let want = "admin acts: 2 taken, each signed by a trusted admin";
        assert!(text.contains(want), "{text}");
    }
    assert!(
        digests.iter().all(|d| d.tables == digests[0].tables),
        "{digests:?}"
    );
    assert_eq!(digests[0], digests[1]);
}

/// The admin log has the skew limit then the unfence, each signature good; on n3 the
/// unfence appended T-C's two kept events, elsewhere none. The fence log has it too.
fn acts_logged(l: &ledger::Ledger, n: &str) {
    let log = l.reader().admin_log().expect("admin log");
    let kinds: Vec<&str> = log.iter().map(|l| l.kind.as_str()).collect();
    assert_eq!(kinds, ["clock_skew", "unfence"], "{n}");
    let kept = if n == "n3" { 2 } else { 0 };
    let did = format!("unfenced T-C: {kept} kept entries appended again ({kept} stored");
    assert!(log[1].outcome.contains(&did), "{n}: {log:?}");
    assert_eq!(
        l.verifier().check_admin_log().expect("check"),
        Vec::<String>::new()
    );
    let fence_log = l.reader().fence_log().expect("fence log");
    assert_eq!(fence_log.len(), 1, "{n}: {fence_log:?}");
    assert!(fence_log[0].contains("case 43: repaired"), "{fence_log:?}");
}
