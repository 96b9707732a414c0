//! Issue 43 item 4 on a real nats-server: two ledger nodes (`serve --node-id`) seal a
//! gaming day that ends during play, and the sealer's publisher puts each sealed day's
//! file into the day bucket. One node is wiped; the stream's history is cut after the
//! sealed day (a purge, as a shorter max age would), so the stream alone cannot rebuild
//! it. `node rebuild` plus the stream give it the survivor's digest.
//!
//! Refused, naming what is wrong, with no ledger left behind: a tampered day object, a
//! missing day, and a stream that no longer holds the messages after the sealed day.
//!
//! Waits are bounded (`WAIT` in common). Up to three minutes: the day ends on a minute.

mod common;

use common::serve::{get, listening, start_env, wait_for, Serve};
use schemas::api::ChainStatus;
use schemas::subjects;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const TOKEN: &str = "rebuild-admin-token-0000000001";
const MINUTE_NS: i64 = 60_000_000_000;

struct Floor {
    nats: natsd::NatsServer,
    root: tempfile::TempDir,
    seal_key: PathBuf,
    seal_pub: String,
    day_start: String,
    rt: tokio::runtime::Runtime,
}

impl Floor {
    fn new(day_start: String) -> Floor {
        let root = tempfile::tempdir().expect("tempdir");
        let seal_key = root.path().join("seal.key");
        let out = common::roundledger(&["keygen", "--out", seal_key.to_str().expect("utf-8")]);
        assert!(out.status.success());
        let seal_pub = String::from_utf8(out.stdout)
            .expect("utf-8")
            .trim()
            .to_string();
        Floor {
            nats: natsd::NatsServer::start().expect("nats-server"),
            root,
            seal_key,
            seal_pub,
            day_start,
            rt: tokio::runtime::Runtime::new().expect("runtime"),
        }
    }

    fn dir(&self, node: &str) -> PathBuf {
        let d = self.root.path().join(node);
        std::fs::create_dir_all(&d).expect("node dir");
        d
    }

    fn start(&self, node: &str) -> (Serve, PathBuf) {
        let extra = format!(
            "node-id = {node:?}\nreplica-check-ms = 200\nlease-ttl = 3\nseal-key = {:?}\nseal-grace = 0\nday-start = {:?}\ntime-zone = \"UTC\"\ntrust-simulated-admin = true\n",
            self.seal_key, self.day_start
        );
        start_env(
            &self.dir(node),
            &self.nats.url(),
            TOKEN,
            &extra,
            &[common::TEST_ONLY_SIMULATED_KEYS],
        )
    }

    /// `node rebuild` of `node` into `<node>/ledger`.
    fn rebuild(&self, node: &str) -> Output {
        let ledger = self.dir(node).join("ledger");
        let out = Command::new(env!("CARGO_BIN_EXE_roundledger"))
            .args(["node", "rebuild", "--nats", &self.nats.url()])
            .args(["--ledger", ledger.to_str().expect("utf-8")])
            .args(["--seal-key-pub", &self.seal_pub, "--node-id", node])
            .args(["--trust-simulated-admin", "--day-start", &self.day_start])
            .args(["--time-zone", "UTC"])
            .env(common::TEST_ONLY_SIMULATED_KEYS.0, "1")
            .output()
            .expect("node rebuild");
        eprintln!(
            "$ node rebuild {node}\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    fn bucket(&self) -> async_nats::jetstream::object_store::ObjectStore {
        self.rt.block_on(async {
            let c = async_nats::connect(self.nats.url()).await.expect("connect");
            let js = async_nats::jetstream::new(c);
            ingest::day_store::existing_bucket(&js)
                .await
                .expect("bucket")
        })
    }

    fn days(&self) -> Vec<String> {
        self.rt.block_on(async {
            let c = async_nats::connect(self.nats.url()).await.expect("connect");
            let js = async_nats::jetstream::new(c);
            match ingest::day_store::existing_bucket(&js).await {
                Ok(b) => ingest::day_store::days(&b).await.unwrap_or_default(),
                Err(_) => Vec::new(),
            }
        })
    }

    fn object(&self, day: &str) -> Vec<u8> {
        let b = self.bucket();
        self.rt
            .block_on(ingest::day_store::get_day(&b, day))
            .expect("get")
    }

    /// Replaces day `day`'s object with `bytes`, as anyone with the bucket's rights could.
    fn tamper_object(&self, day: &str, bytes: &[u8]) {
        let b = self.bucket();
        self.rt.block_on(async {
            let mut r = bytes;
            b.put(day, &mut r).await.expect("put");
        });
    }

    /// Puts day `day`'s object back as the sealer puts it.
    fn restore_object(&self, day: &str, bytes: &[u8]) {
        let b = self.bucket();
        self.rt.block_on(async {
            let _ = b.delete(day).await;
            ingest::day_store::put_day(&b, day, bytes)
                .await
                .expect("put back");
        });
    }

    fn delete_object(&self, day: &str) {
        let b = self.bucket();
        self.rt.block_on(b.delete(day)).expect("delete");
    }

    /// Removes the stream's messages below `keep_from`, as retention would.
    fn cut_stream(&self, keep_from: u64) {
        self.rt.block_on(async {
            let c = async_nats::connect(self.nats.url()).await.expect("connect");
            let js = async_nats::jetstream::new(c);
            let s = js.get_stream(subjects::STREAM).await.expect("stream");
            s.purge().sequence(keep_from).await.expect("purge");
        });
    }
}

/// The next minute mark at least 35 s away, as `HH:MM` UTC and ns.
fn day_end_soon() -> (String, i64) {
    let now = ingest::system_clock_ns();
    let mut end = (now / MINUTE_NS + 1) * MINUTE_NS;
    if end - now < 35_000_000_000 {
        end += MINUTE_NS;
    }
    let minutes = end / MINUTE_NS;
    let hhmm = format!("{:02}:{:02}", minutes / 60 % 24, minutes % 60);
    (hhmm, end)
}

fn heads(api: &str) -> BTreeMap<String, u64> {
    if std::net::TcpStream::connect(api).is_err() {
        return BTreeMap::new();
    }
    let (status, body) = get(api, "/v1/chain", Some(TOKEN));
    assert_eq!(status, 200, "{body}");
    let chains: Vec<ChainStatus> = serde_json::from_str(&body).expect("chains");
    chains
        .into_iter()
        .map(|c| (c.table.to_string(), c.head_seq.0))
        .collect()
}

/// Two tables, one round a second each, for about 40 s.
fn simulate(url: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_roundledger"))
        .args(["simulate", "--nats", url, "--tables", "2", "--rounds", "40"])
        .args(["--rate", "1", "--simulated-keys", "--json"])
        .env(common::TEST_ONLY_SIMULATED_KEYS.0, "1")
        .stdin(Stdio::null())
        .output()
        .expect("simulate")
}

fn published_heads(out: &Output) -> BTreeMap<String, u64> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("report");
    let mut heads = BTreeMap::new();
    for e in report["events"].as_array().expect("events") {
        let t = e["table"].as_str().expect("table").to_string();
        let seq = e["seq"].as_u64().expect("seq");
        let h = heads.entry(t).or_insert(0);
        *h = (*h).max(seq);
    }
    heads
}

fn digest_of(dir: &Path) -> proofs::digest::Digest {
    let l = ledger::Ledger::open(dir.join("ledger")).expect("open");
    l.verifier().digest(1).expect("digest")
}

/// A refused rebuild: exit 2, the message names `what`, and no ledger is left.
fn refused(f: &Floor, node: &str, what: &[&str]) {
    let out = f.rebuild(node);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for w in what {
        assert!(err.contains(w), "{w:?} not in: {err}");
    }
    let ledger = f.dir(node).join("ledger");
    let empty = std::fs::read_dir(&ledger).map_or(true, |mut d| d.next().is_none());
    assert!(empty, "{} left behind", ledger.display());
    assert!(!f.dir(node).join("ledger.rebuilding").exists());
}

#[test]
fn a_wiped_node_rebuilds_from_the_day_bucket_and_the_stream() {
    let (day_start, end_ns) = day_end_soon();
    let f = Floor::new(day_start);
    // Nodes start about 30 s before the day ends; play goes on after it.
    let wait_ns = end_ns - 30_000_000_000 - ingest::system_clock_ns();
    std::thread::sleep(Duration::from_nanos(wait_ns.max(0) as u64));
    let mut n1 = f.start("n1");
    let mut n2 = f.start("n2");
    let (api1, api2) = (listening(&n1.1).0, listening(&n2.1).0);
    let published = published_heads(&simulate(&f.nats.url()));
    for api in [&api1, &api2] {
        wait_for("a node holds every published event", || {
            let h = heads(api);
            (h == published, h)
        });
    }
    // The day before (empty) and the day that ended during play.
    let days = wait_for("two sealed days in the bucket", || {
        let d = f.days();
        (d.len() == 2, d)
    });
    let ended = &days[1];
    let file = f.object(ended);
    let key = schemas::attest::PublicKey::from_hex(&f.seal_pub).expect("key");
    let checked = ledger::rebuild::check_day_file(&file, &key).expect("check");
    assert!(checked.events > 0, "the ended day holds events");
    let last = checked.last_stream_seq.expect("events");
    let total: u64 = published.values().sum();
    assert!(
        total > checked.events,
        "play goes on after the sealed day: {total} events, {} sealed",
        checked.events
    );
    // n2 is lost.
    assert!(n2.0.stop());
    std::fs::remove_dir_all(f.dir("n2").join("ledger")).expect("wipe");
    wrong_buckets_are_refused(&f, &days, &file);
    // Retention shorter than the history: the stream starts right after the sealed day.
    f.cut_stream(last + 1);
    let out = f.rebuild("n2");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("through stream seq {last}")),
        "{said}"
    );
    n2 = f.start("n2");
    let api2 = listening(&n2.1).0;
    wait_for("the rebuilt node holds every published event", || {
        let h = heads(&api2);
        (h == published, h)
    });
    assert!(n1.0.stop() && n2.0.stop());
    assert_eq!(digest_of(&f.dir("n1")), digest_of(&f.dir("n2")));
    // Retention cut inside the next day: a gap, named.
    f.cut_stream(last + 3);
    let gap = format!("no longer holds seqs {}..={}", last + 1, last + 2);
    refused(&f, "n3", &[&gap]);
}

/// A tampered object (which the sealer's put leaves alone), then a missing day: each
/// refused, naming the day; then put back.
fn wrong_buckets_are_refused(f: &Floor, days: &[String], file: &[u8]) {
    let mut bad = file.to_vec();
    let at = bad.len() - 20;
    bad[at] ^= 0x40;
    f.tamper_object(&days[1], &bad);
    // The sealer's put never replaces an object that differs: it names the day.
    let b = f.bucket();
    let put =
        f.rt.block_on(ingest::day_store::put_day(&b, &days[1], file));
    let why = format!("{:?}", put.expect_err("a differing object is left alone"));
    assert!(
        why.contains(&days[1]) && why.contains("left as it is"),
        "{why}"
    );
    refused(
        f,
        "n2",
        &[&format!("day {}", days[1]), "does not match its seal"],
    );
    f.restore_object(&days[1], file);
    let first = f.object(&days[0]);
    f.delete_object(&days[0]);
    refused(
        f,
        "n2",
        &[&format!("day {}", days[1]), "an earlier day is missing"],
    );
    f.restore_object(&days[0], &first);
}
