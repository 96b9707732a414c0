//! Admin acts on three ledger replicas (issue 43): three `roundledger serve --node-id` on
//! one real `nats-server -js`, each trusting the same admin key.
//!
//! A re-sync read through one node, a clock skew limit, a key revocation and an unfence
//! travel on the stream; each node takes them at the same point of the log and checks the
//! signatures itself. Two forged acts (a bent signature, an untrusted key) are refused by
//! every node and kept in quarantine as `admin_refused`. The three ledgers end with equal
//! digests (heads, receipts and the quarantine chain). The CLI's `--server` lists start
//! with a dead URL and fail over to a live node.
//!
//! Waits are bounded (`common::serve::WAIT`); nothing asserts on time.

mod common;

use common::serve::{get, listening, wait_for, Serve};
use schemas::admin::{Act, AdminAct, AdminBody};
use schemas::api::ChainStatus;
use schemas::attest::{key_event_body, KeyAction, SigningKey};
use schemas::chain::event_hash;
use schemas::*;
use std::path::Path;

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

/// Starts the three nodes, each trusting `admin_hex` and the simulator's admin.
fn start_nodes(
    root: &Path,
    url: &str,
    admin_hex: &str,
) -> Vec<(Serve, String, std::path::PathBuf)> {
    NODES
        .iter()
        .map(|n| {
            let dir = root.join(n);
            std::fs::create_dir_all(&dir).expect("node dir");
            let extra = format!(
                "node-id = {n:?}\nreplica-check-ms = 200\nadmin-key = {admin_hex:?}\ntrust-simulated-admin = true\n"
            );
            let (s, log) = common::serve::start(&dir, url, TOKEN, &extra);
            let api = listening(&log).0;
            (s, api, log)
        })
        .collect()
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

#[test]
fn admin_acts_reach_every_replica_and_forged_ones_are_refused_by_each() {
    let nats = natsd::NatsServer::start().expect("nats-server");
    let url = nats.url();
    let root = tempfile::tempdir().expect("tempdir");
    let key_file = root.path().join("admin.key");
    let key_path = key_file.to_str().expect("utf-8");
    let keygen = common::roundledger(&["keygen", "--out", key_path]);
    let admin_hex = String::from_utf8_lossy(&keygen.stdout).trim().to_string();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let mut nodes = start_nodes(root.path(), &url, &admin_hex);
    // T-A: seq 6's clock is 30 h off, refused as clock_skew; 7..=10 wait behind it.
    let mut a = Chain::new("T-A");
    for seq in 1..=10 {
        let skew = if seq == 6 { 30 * HOUR_NS } else { 0 };
        let bytes = a.next(bets(), skew);
        publish_event(&rt, &url, &a, bytes);
    }
    // T-B: the simulator's admin enrolls ctl-1's key; an event 2 h off is within 24 h.
    let mut b = Chain::new("T-B");
    let k1 = SigningKey::derive_for_simulation("ctl-1 key 1").public();
    let admin = simulator::admin_key();
    let enroll = key_event_body(&admin, &b.table, device(), k1, KeyAction::Enroll);
    for (body, skew) in [(enroll, 0), (bets(), 2 * HOUR_NS)] {
        let bytes = b.next(body, skew);
        publish_event(&rt, &url, &b, bytes);
    }
    let blocker = wait_for("n1 holds T-A behind seq 6", || {
        let c = chain_of(&nodes[0].1, &a.table);
        let id = c
            .as_ref()
            .and_then(|c| c.gap.as_ref()?.blocked_by.as_ref())
            .map(|b| b.quarantine_id);
        (
            id.is_some() && c.is_some_and(|c| c.gap.as_ref().is_some_and(|g| g.held == 4)),
            id,
        )
    })
    .expect("a blocker");
    resync_through_n1(&nodes[0].1, key_path, &a.table, blocker, &url);
    let skew = common::roundledger(&[
        "admin",
        "clock-skew",
        "--max-seconds",
        "3600",
        "--admin-key",
        key_path,
        "--note",
        "case 43: tighter clocks",
        "--nats",
        &url,
    ]);
    assert!(
        skew.status.success(),
        "{}",
        String::from_utf8_lossy(&skew.stderr)
    );
    // After the act: a revocation, then an event 2 h off, now past the limit.
    let revoke = key_event_body(&admin, &b.table, device(), k1, KeyAction::Revoke);
    for (body, skew) in [(revoke, 0), (bets(), 2 * HOUR_NS)] {
        let bytes = b.next(body, skew);
        publish_event(&rt, &url, &b, bytes);
    }
    let stranger = SigningKey::derive_for_simulation("not an admin");
    publish(
        &rt,
        &url,
        subjects::ADMIN_SUBJECT,
        forged_act(&admin, &a.table, true),
    );
    publish(
        &rt,
        &url,
        subjects::ADMIN_SUBJECT,
        forged_act(&stranger, &a.table, false),
    );
    let unfence = common::roundledger(&[
        "table",
        "unfence",
        "T-A",
        "--admin-key",
        key_path,
        "--note",
        "case 43: repaired",
        "--nats",
        &url,
    ]);
    assert!(
        unfence.status.success(),
        "{}",
        String::from_utf8_lossy(&unfence.stderr)
    );
    for (_, api, log) in &nodes {
        wait_for("the node takes both admin acts", || {
            let n = logged(log, "admin act taken");
            (n == 2, n)
        });
        let c = chain_of(api, &a.table).expect("T-A");
        assert_eq!(
            c.head_seq,
            Seq(10),
            "the re-sync admitted seq 6, then 7..=10"
        );
    }
    status_fails_over(&nodes);
    for (s, _, _) in &mut nodes {
        assert!(s.stop(), "clean stop");
    }
    drop(nodes);
    every_ledger_holds_the_acts(root.path(), &a.table, &b.table);
}

/// A loopback URL nothing listens on: connections to it are refused.
fn dead_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    drop(l);
    format!("http://127.0.0.1:{port}")
}

/// `table resync` reads T-A's head and the blocking entry from n1's API and publishes.
/// Its first `--server` is dead: the CLI says so and goes on with n1.
fn resync_through_n1(api: &str, key: &str, table: &TableId, entry: u64, url: &str) {
    let (dead, server) = (dead_url(), format!("http://{api}"));
    let out = common::roundledger(&[
        "table",
        "resync",
        "--admin-key",
        key,
        "--table",
        table.as_str(),
        "--entry",
        &entry.to_string(),
        "--note",
        "case 43",
        "--server",
        &dead,
        "--server",
        &server,
        "--token",
        TOKEN,
        "--nats",
        url,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains(&format!("{dead} unreachable")), "{err}");
    assert!(err.contains(&format!("using {server}")), "{err}");
}

/// `table status` with a comma-separated list, the dead URL first, then every node.
fn status_fails_over(nodes: &[(Serve, String, std::path::PathBuf)]) {
    let mut urls = vec![dead_url()];
    urls.extend(nodes.iter().map(|(_, api, _)| format!("http://{api}")));
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
/// both forged acts in quarantine, both acts in the admin log, the unfence in the fence
/// log; and the three digests equal.
fn every_ledger_holds_the_acts(root: &Path, a: &TableId, b: &TableId) {
    let mut digests = Vec::new();
    for n in NODES {
        let l = ledger::Ledger::open(root.join(n).join("ledger")).expect("open");
        assert_eq!(l.resyncs(Some(a)).expect("re-syncs").len(), 1, "{n}");
        assert_eq!(
            l.head(b).map(|h| h.seq),
            Some(Seq(3)),
            "{n}: T-B seq 4 refused"
        );
        let key = l.device_key(b, &device()).expect("T-B's device key");
        assert_eq!(key.revoked_seq, Some(Seq(3)), "{n}");
        let reasons = |r| {
            let (_, entries) = l.quarantine_page(Some(r), None, 0, 10).expect("quarantine");
            entries.into_iter().map(|e| e.text).collect::<Vec<_>>()
        };
        let skewed = reasons(ledger::reason::CLOCK_SKEW);
        assert_eq!(skewed.len(), 2, "{n}: T-A seq 6 and T-B seq 4: {skewed:?}");
        let forged = reasons(ledger::reason::ADMIN_REFUSED);
        assert_eq!(forged.len(), 2, "{n}: {forged:?}");
        assert!(
            forged.iter().any(|t| t.contains("does not verify")),
            "{forged:?}"
        );
        assert!(
            forged.iter().any(|t| t.contains("is not trusted")),
            "{forged:?}"
        );
        let acts: Vec<String> = l
            .admin_log()
            .expect("admin log")
            .into_iter()
            .map(|l| l.kind)
            .collect();
        assert_eq!(acts, ["clock_skew", "unfence"], "{n}");
        assert_eq!(l.clock_skew_max_ns(), HOUR_NS, "{n}");
        let fence_log = l.fence_log().expect("fence log");
        assert_eq!(fence_log.len(), 1, "{n}: {fence_log:?}");
        assert!(fence_log[0].contains("case 43: repaired"), "{fence_log:?}");
        assert_eq!(l.check_admin_log().expect("check"), Vec::<String>::new());
        digests.push(l.digest(1).expect("digest"));
        drop(l);
        let dir = root.join(n).join("ledger");
        let verified = common::roundledger(&["verify", "--ledger", dir.to_str().expect("utf-8")]);
        let text = String::from_utf8_lossy(&verified.stdout);
        assert!(
            text.contains("admin acts: 2 taken, each signed by a trusted admin"),
            "{text}"
        );
    }
    assert!(digests.iter().all(|d| d == &digests[0]), "{digests:?}");
}
