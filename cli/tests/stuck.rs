//! A table stuck behind a refused event, end to end with real processes: a nats-server,
//! `roundledger serve` and a device publishing one event without its signature. ingest
//! raises `table_stuck` on NATS; `table status` and `verify` show the held events and the
//! refusal that blocks them; `table resync`, signed with a trusted admin's key file,
//! unsticks the table once `serve` reads it; `verify` then checks the kept re-sync.
//!
//! Waits are bounded (`WAIT`); nothing here asserts on time.

mod common;

use common::roundledger;
use futures::StreamExt;
use schemas::api::AlertKind;
use schemas::{subjects, ChainHead};
use simulator::{FaultPlan, Floor, Published};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(90);

/// The API token `serve` accepts (role admin).
const TOKEN: &str = "stuck-test-token-0123456789abcdef";

/// `roundledger serve` on `ledger`, trusting `admin` and the simulator's admin key, with
/// its API on (token `TOKEN`) and JSON logs.
fn serve(ledger: &Path, url: &str, admin: &str, log: &Path) -> Child {
    let tokens = log.with_file_name("tokens.json");
    let access = serde_json::json!({"tokens": [{"name": "ops", "role": "admin", "token": TOKEN}]});
    std::fs::write(&tokens, access.to_string()).expect("tokens");
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .expect("log");
    let err = out.try_clone().expect("log clone");
    Command::new(env!("CARGO_BIN_EXE_roundledger"))
        .args(["serve", "--ledger"])
        .arg(ledger)
        .args([
            "--nats",
            url,
            "--http",
            "127.0.0.1:0",
            "--trust-simulated-admin",
        ])
        .env(
            common::TEST_ONLY_SIMULATED_KEYS.0,
            common::TEST_ONLY_SIMULATED_KEYS.1,
        )
        .args(["--admin-key", admin, "--stuck-after", "1"])
        .arg("--config")
        .arg(&tokens)
        .args(["--log-format", "json", "--metrics-http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect("spawning serve")
}

/// SIGTERM (a clean stop: the batch in flight is flushed and acked), then reap.
fn stop(mut child: Child) {
    // SAFETY: the pid is our own child's, not yet reaped.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let status = child.wait().expect("reap serve");
    assert!(status.success(), "serve stopped cleanly: {status}");
}

/// One table's opening and two rounds, its clocks near now.
fn one_table() -> Vec<Published> {
    let start_ns = ingest::system_clock_ns() - 3_600_000_000_000;
    let floor = Floor::new(1, 5, FaultPlan::none())
        .expect("floor")
        .starting_at(start_ns);
    let mut table = floor.tables.into_iter().next().expect("a table");
    let mut events = table.opening_events().expect("opening");
    for _ in 0..2 {
        events.extend(table.play_round().expect("round").events);
    }
    events
}

async fn publish(js: &async_nats::jetstream::Context, p: &Published, signed: bool) {
    let mut headers = async_nats::HeaderMap::new();
    let id = subjects::msg_id(&p.event.table, p.event.seq, &p.bytes);
    headers.insert("Nats-Msg-Id", format!("{id}:{signed}").as_str());
    for (name, value) in p
        .signature
        .iter()
        .filter(|_| signed)
        .flat_map(|s| s.to_headers())
    {
        headers.insert(name, value.as_str());
    }
    let subject = subjects::events_subject(&p.event.table);
    js.publish_with_headers(subject, headers, p.bytes.clone().into())
        .await
        .expect("publish")
        .await
        .expect("ack");
}

fn text(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A nats-server, a ledger directory, an admin key file, and a table's events.
struct Scene {
    dir: tempfile::TempDir,
    nats: natsd::NatsServer,
    admin: String,
    events: Vec<Published>,
    rt: tokio::runtime::Runtime,
}

impl Scene {
    fn new() -> Scene {
        let dir = tempfile::tempdir().expect("tempdir");
        let key_file = dir.path().join("admin.key");
        let keygen = roundledger(&["keygen", "--out", key_file.to_str().expect("utf-8")]);
        Scene {
            nats: natsd::NatsServer::start().expect("nats-server"),
            admin: text(&keygen).trim().to_string(),
            events: one_table(),
            rt: tokio::runtime::Runtime::new().expect("runtime"),
            dir,
        }
    }

    fn path(&self, name: &str) -> String {
        self.dir
            .path()
            .join(name)
            .to_str()
            .expect("utf-8")
            .to_string()
    }

    fn serve(&self) -> Child {
        let (ledger, log) = (
            self.dir.path().join("ledger"),
            self.dir.path().join("serve.log"),
        );
        serve(&ledger, &self.nats.url(), &self.admin, &log)
    }
}

/// `serve` ingests the first `k + 4` events, seq k + 1 without its signature, until
/// `table_stuck` arrives naming the refusal; then stops.
fn stick(s: &Scene, k: usize) {
    let serving = s.serve();
    let t = &s.events[0].event.table;
    s.rt.block_on(async {
        let client = async_nats::connect(s.nats.url()).await.expect("connect");
        let mut alerts = client
            .subscribe(subjects::alerts_subject(t, AlertKind::TableStuck))
            .await
            .expect("sub");
        client.flush().await.expect("flush");
        let js = async_nats::jetstream::new(client);
        ingest::ensure_stream(&js).await.expect("stream");
        for (i, p) in s.events[..k + 4].iter().enumerate() {
            publish(&js, p, i != k).await;
        }
        let alert = tokio::time::timeout(WAIT, alerts.next()).await;
        let alert = alert.expect("table_stuck within the wait").expect("open");
        let detail = String::from_utf8_lossy(&alert.payload).into_owned();
        assert!(detail.contains("refused as unsigned"), "{detail}");
    });
    // Asked through the server, `table status` judges by the server's limit (1 s), not
    // its own default (300 s).
    let api = common::serve::listening(&s.dir.path().join("serve.log")).0;
    let server = format!("http://{api}");
    let status = roundledger(&["table", "status", "--server", &server, "--token", TOKEN]);
    let shown = text(&status);
    assert!(
        shown.contains(&format!("{:<12} stuck", t.as_str())),
        "{shown}"
    );
    stop(serving);
}

/// `table status` and `verify` on the stopped ledger show the stuck table; returns the
/// blocking entry's id.
fn shown_stuck(s: &Scene, k: usize) -> String {
    let (l, t) = (s.path("ledger"), s.events[0].event.table.as_str());
    let status = roundledger(&["table", "status", "--ledger", &l, "--stuck-after", "0"]);
    assert_eq!(status.status.code(), Some(1), "a table holds events");
    let shown = text(&status);
    assert!(shown.contains(&format!("{t:<12} stuck")), "{shown}");
    let want = format!("held #{}..#{} (3 events", k + 2, k + 4);
    assert!(shown.contains(&want), "{shown}");
    let verified = text(&roundledger(&["verify", "--ledger", &l]));
    let held = format!("{t:<12} ok   held 3 events, seq {}..={}", k + 2, k + 4);
    assert!(verified.contains(&held), "{verified}");
    shown
        .split("(quarantine entry ")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .expect("the blocking entry named")
        .to_string()
}

#[test]
fn a_table_stuck_behind_a_refused_event_is_shown_and_resynced() {
    let s = Scene::new();
    let k = 15usize;
    let t = s.events[0].event.table.clone();
    stick(&s, k);
    let entry = shown_stuck(&s, k);
    let l = s.path("ledger");
    let resync = roundledger(&[
        "table",
        "resync",
        "--admin-key",
        &s.path("admin.key"),
        "--table",
        t.as_str(),
        "--entry",
        &entry,
        "--note",
        "case 1",
        "--ledger",
        &l,
        "--nats",
        &s.nats.url(),
    ]);
    assert_eq!(resync.status.code(), Some(0));

    let serving = s.rt.block_on(async {
        let heads = subscribe_head(&s.nats.url(), &t).await;
        let serving = s.serve();
        wait_head(heads, k as u64 + 4).await;
        serving
    });
    stop(serving);
    let status = roundledger(&["table", "status", "--ledger", &l]);
    assert_eq!(status.status.code(), Some(0), "nothing held");
    // The same re-sync again: its event no longer follows the head, so ingest would
    // refuse it; the command refuses it first, with exit 2, and writes nothing.
    let again_file = s.path("again.resync");
    let again = roundledger(&[
        "table",
        "resync",
        "--admin-key",
        &s.path("admin.key"),
        "--table",
        t.as_str(),
        "--entry",
        &entry,
        "--note",
        "case 1 again",
        "--ledger",
        &l,
        "--out",
        &again_file,
    ]);
    assert_eq!(again.status.code(), Some(2), "a refused re-sync fails");
    let why = String::from_utf8_lossy(&again.stderr);
    assert!(why.contains("does not follow"), "{why}");
    assert!(!std::path::Path::new(&again_file).exists());
    let verified = roundledger(&["verify", "--ledger", &l]);
    assert_eq!(verified.status.code(), Some(0));
    assert!(
        text(&verified).contains("re-syncs: 1 kept"),
        "{}",
        text(&verified)
    );
    // The round view says which event an admin admitted, and why.
    let round = s.events[k..]
        .iter()
        .find_map(|p| p.event.round)
        .expect("a round");
    let replay = roundledger(&[
        "replay",
        "--ledger",
        &l,
        "--table",
        t.as_str(),
        "--round",
        &round.0.to_string(),
    ]);
    let shown = text(&replay);
    let want = format!(
        "seq {} ADMITTED BY RE-SYNC: refused first (quarantine entry {entry})",
        k + 1
    );
    assert!(shown.contains(&want), "{shown}");
    assert!(shown.contains(": case 1"), "{shown}");
}

/// A subscription to `table`'s durable head, registered with the server.
async fn subscribe_head(url: &str, table: &schemas::TableId) -> async_nats::Subscriber {
    let client = async_nats::connect(url).await.expect("connect");
    let heads = client
        .subscribe(subjects::head_subject(table))
        .await
        .expect("sub");
    client.flush().await.expect("flush");
    heads
}

/// Waits for ingest to publish the head at `seq` (after the flush that stores it).
async fn wait_head(mut heads: async_nats::Subscriber, seq: u64) {
    let found = tokio::time::timeout(WAIT, async {
        while let Some(m) = heads.next().await {
            let head: ChainHead = serde_json::from_slice(&m.payload).expect("a head");
            if head.seq.0 == seq {
                return;
            }
        }
    });
    found.await.expect("the head within the wait");
}
