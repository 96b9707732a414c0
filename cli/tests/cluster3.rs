//! Issue 43's whole scenario on loopback: a secured 3-server JetStream cluster (TLS, a
//! credential per principal, R3 stream and buckets) and 3 ledger nodes (`serve
//! --node-id`), five tables publishing through it. During the load: kill -9 a ledger node
//! and restart it; kill -9 the sealer lease's holder and restart it; kill -9 a NATS
//! server and restart it. At the end the three ledgers' digests are equal, every published
//! event is stored once on each, each gaming day's seal reached the bus once, and no alert
//! reached it twice. Case notes written through the nodes in turn meanwhile are on every
//! node alike, each acknowledged one once (`cluster3_parts/notes.rs`).
//!
//! Waits are bounded (`WAIT` in common); nothing asserts on time. About a minute.

mod common;
#[path = "cluster3_parts/notes.rs"]
mod notes;

use common::serve::{get, listening, start_env, wait_for, Serve};
use futures::StreamExt;
use schemas::api::ChainStatus;
use schemas::{subjects, TableId};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const TOKEN: &str = "cluster3-admin-token-000000001";
const NODES: [&str; 3] = ["n1", "n2", "n3"];
const TABLES: [&str; 5] = ["CSP6-01", "MLP3-02", "SSP4-03", "CS51-04", "TCP3-05"];
/// Rounds per table, at `RATE` a second: about 25 s of publishing.
const ROUNDS: &str = "25";
const RATE: &str = "1";

/// The cluster, its credentials and the ledger nodes' settings.
struct Floor {
    cluster: natsd::NatsCluster,
    issued: natsd::FloorAccess,
    seal_key: PathBuf,
    root: tempfile::TempDir,
}

impl Floor {
    fn new() -> Floor {
        let mut cluster = natsd::NatsCluster::start_secured(3).expect("cluster");
        let tables: Vec<TableId> = TABLES
            .iter()
            .map(|t| TableId::new(*t).expect("id"))
            .collect();
        let issued = cluster.issue_floor(&tables).expect("credentials");
        let root = tempfile::tempdir().expect("tempdir");
        let seal_key = root.path().join("seal.key");
        let out = common::roundledger(&["keygen", "--out", seal_key.to_str().expect("utf-8")]);
        assert!(out.status.success());
        Floor {
            cluster,
            issued,
            seal_key,
            root,
        }
    }

    fn dir(&self, node: &str) -> PathBuf {
        let d = self.root.path().join(node);
        std::fs::create_dir_all(&d).expect("node dir");
        d
    }

    /// Starts (or restarts) ledger node `node` on the same directory and settings.
    fn start(&self, node: &str) -> (Serve, PathBuf) {
        let creds = self
            .issued
            .ingest
            .credentials
            .as_ref()
            .expect("ingest creds");
        let extra = format!(
            "node-id = {node:?}\nreplica-check-ms = 200\nlease-ttl = 3\nstream-replicas = 3\nseal-key = {:?}\nseal-grace = 0\nnats-creds = {:?}\nnats-ca = {:?}\ntrust-simulated-admin = true\n",
            self.seal_key, creds, self.issued.ca_file
        );
        start_env(
            &self.dir(node),
            &self.cluster.url(),
            TOKEN,
            &extra,
            &[common::TEST_ONLY_SIMULATED_KEYS],
        )
    }

    /// `simulate` over the secured cluster, in the background.
    fn simulate(&self) -> Child {
        Command::new(env!("CARGO_BIN_EXE_roundledger"))
            .args(["simulate", "--nats", &self.cluster.url(), "--tables", "5"])
            .args([
                "--rounds",
                ROUNDS,
                "--rate",
                RATE,
                "--simulated-keys",
                "--json",
            ])
            .arg("--nats-creds-dir")
            .arg(&self.issued.creds_dir)
            .arg("--nats-ca")
            .arg(&self.issued.ca_file)
            .env(
                common::TEST_ONLY_SIMULATED_KEYS.0,
                common::TEST_ONLY_SIMULATED_KEYS.1,
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("simulate")
    }

    /// `cluster status` with the observer's credential.
    fn status(&self) -> String {
        let creds = self.issued.observer.credentials.as_ref().expect("creds");
        let out = common::roundledger(&[
            "cluster",
            "status",
            "--nats",
            &self.cluster.url(),
            "--nats-creds",
            creds.to_str().expect("utf-8"),
            "--nats-ca",
            self.issued.ca_file.to_str().expect("utf-8"),
        ]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// Every seal and alert message on the bus: (subject, payload).
fn collect(rt: &tokio::runtime::Runtime, f: &Floor) -> Arc<Mutex<Vec<(String, String)>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let into = seen.clone();
    let (url, access) = (f.cluster.url(), f.issued.observer.clone());
    let mut subs = rt.block_on(async {
        let c = bus::connect(&url, &access)
            .await
            .expect("observer connects");
        let seals = c.subscribe(subjects::SEALS_WILDCARD).await.expect("sub");
        let alerts = c.subscribe(subjects::ALERTS_WILDCARD).await.expect("sub");
        c.flush().await.expect("flush");
        futures::stream::select(seals, alerts)
    });
    rt.spawn(async move {
        while let Some(m) = subs.next().await {
            let payload = String::from_utf8_lossy(&m.payload).into_owned();
            into.lock()
                .expect("lock")
                .push((m.subject.to_string(), payload));
        }
    });
    seen
}

/// Each table's head on a node, through its API; empty while it does not answer.
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

/// The holder of the sealer lease, from `cluster status`.
fn sealer_holder(f: &Floor) -> String {
    wait_for("a sealer lease holder", || {
        let text = f.status();
        let holder = text
            .lines()
            .find_map(|l| l.strip_prefix("lease sealer: held by "))
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_string);
        (holder.is_some(), (holder, text))
    })
    .0
    .expect("holder")
}

/// The published events' last seq per table, from simulate's JSON report.
fn published_heads(out: &std::process::Output) -> BTreeMap<String, u64> {
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("report");
    let mut heads = BTreeMap::new();
    for e in report["events"].as_array().expect("events") {
        let (t, seq) = (
            e["table"].as_str().expect("table"),
            e["seq"].as_u64().expect("seq"),
        );
        let h = heads.entry(t.to_string()).or_insert(0);
        *h = (*h).max(seq);
    }
    heads
}

fn digest_of(dir: &Path) -> proofs::digest::Digest {
    let l = ledger::Ledger::open(dir.join("ledger")).expect("open");
    l.verifier().digest(1).expect("digest")
}

#[test]
fn three_ledger_nodes_on_a_secured_cluster_survive_kills_and_agree() {
    let mut f = Floor::new();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    // Subscribed before any node starts: the first seal goes out at once.
    let seen = collect(&rt, &f);
    let mut nodes: BTreeMap<&str, (Serve, PathBuf)> =
        NODES.iter().map(|n| (*n, f.start(n))).collect();
    for (_, log) in nodes.values() {
        listening(log);
    }
    let sim = f.simulate();
    let api_of = |log: &Path| listening(log).0;
    wait_for("n1 stores events", || {
        let h = heads(&api_of(&nodes["n1"].1));
        (h.values().sum::<u64>() > 100, h)
    });
    let case = open_case(&api_of(&nodes["n1"].1));
    let stop = Arc::new(AtomicBool::new(false));
    let logs = NODES.iter().map(|n| f.dir(n).join("serve.log")).collect();
    let writer = notes::write_notes(logs, TOKEN, case, stop.clone());
    // A ledger node killed and restarted.
    nodes.remove("n2");
    std::thread::sleep(Duration::from_secs(2));
    nodes.insert("n2", f.start("n2"));
    // The sealer lease's holder, once the ended day's seal is out.
    wait_for("the ended day's seal on the bus", || {
        let s = seen.lock().expect("lock").clone();
        let done = s.iter().any(|(subj, _)| subj.starts_with("seals."));
        let logs = match done {
            true => Vec::new(),
            false => nodes
                .values()
                .map(|(_, log)| log_lines(log, "seal"))
                .collect(),
        };
        (done, (s.len(), logs))
    });
    let holder = sealer_holder(&f);
    let holder: &str = NODES.iter().find(|n| **n == holder).expect("a node");
    nodes.remove(holder);
    std::thread::sleep(Duration::from_secs(4));
    nodes.insert(holder, f.start(holder));
    // A NATS server killed and restarted.
    f.cluster.kill9(0).expect("kill nats 0");
    std::thread::sleep(Duration::from_secs(3));
    f.cluster.restart(0).expect("restart nats 0");
    let out = sim.wait_with_output().expect("simulate");
    stop.store(true, Ordering::Relaxed);
    let sent = writer.join().expect("the note writer");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let published = published_heads(&out);
    assert_eq!(published.len(), TABLES.len());
    for (node, (serve, log)) in nodes.iter_mut() {
        if let Some(status) = serve.0.try_wait().expect("poll") {
            let text = std::fs::read_to_string(&*log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            panic!("{node} exited ({status}): {tail:#?}");
        }
        wait_for(&format!("{node} holds every published event"), || {
            let api = api_of(log);
            let h = heads(&api);
            let tail = match h == published {
                true => String::new(),
                false => std::fs::read_to_string(&*log).unwrap_or_default(),
            };
            let tail: Vec<String> = tail.lines().rev().take(6).map(str::to_string).collect();
            (h == published, (api, h, tail))
        });
    }
    // The sealer's publisher put each sealed day's file into the day bucket, and ingest's
    // credential reads it back: the role's permissions cover the object store. Checked
    // while the nodes run: a holder killed before its put leaves it to the next holder.
    let days = wait_for("the sealed days in the day bucket", || {
        let d = days_in_bucket(&f, &rt);
        let logs: Vec<Vec<String>> = match d.is_empty() {
            true => nodes
                .values()
                .map(|(_, log)| log_lines(log, "day"))
                .collect(),
            false => Vec::new(),
        };
        (!d.is_empty(), (d, logs))
    })
    .0;
    for (day, sealed) in days {
        assert_eq!(sealed, day, "each object holds its own day's file");
    }
    let cases = same_case_everywhere(&nodes, case);
    notes::check(&cases, &sent);
    all_agree(&mut nodes, &f, &seen);
}

/// Opens a case on CSP6-01's round 1 through `api` once it has indexed the round: its id.
fn open_case(api: &str) -> u64 {
    wait_for("CSP6-01 round 1 indexed", || {
        let (status, body) = get(api, "/v1/tables/CSP6-01/rounds/1", Some(TOKEN));
        (status == 200, (status, body))
    });
    let opened = serde_json::json!({"table": "CSP6-01", "round": 1, "title": "short pay"});
    let (status, body) = common::serve::post(api, "/v1/cases", TOKEN, &opened);
    assert_eq!(status, 201, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("case");
    v["id"].as_u64().expect("an id")
}

/// The case as each node serves it, once all three serve it alike.
fn same_case_everywhere(
    nodes: &BTreeMap<&str, (Serve, PathBuf)>,
    case: u64,
) -> Vec<serde_json::Value> {
    wait_for("every node serves the same case", || {
        let cases: Vec<serde_json::Value> = nodes
            .values()
            .map(|(_, log)| {
                let (_, body) = get(&listening(log).0, &format!("/v1/cases/{case}"), Some(TOKEN));
                serde_json::from_str(&body).unwrap_or(serde_json::Value::Null)
            })
            .collect();
        let same = cases[0].is_object() && cases.iter().all(|c| *c == cases[0]);
        (same, cases)
    })
}

/// Each day object in the day bucket with the day its file's seal names, read with
/// ingest's credential; empty while the bucket cannot be read.
fn days_in_bucket(f: &Floor, rt: &tokio::runtime::Runtime) -> Vec<(String, String)> {
    rt.block_on(async {
        let c = bus::connect(&f.cluster.url(), &f.issued.ingest)
            .await
            .expect("ingest connects");
        let js = async_nats::jetstream::new(c);
        let Ok(b) = ingest::day_store::existing_bucket(&js).await else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for day in ingest::day_store::days(&b)
            .await
            .expect("list the day bucket")
        {
            let file = ingest::day_store::get_day(&b, &day)
                .await
                .expect("read a day");
            let seal = ledger::rebuild::seal_of(&file).expect("a day file");
            out.push((day, seal.day));
        }
        out
    })
}

/// The last lines of a node's log that mention `word`: what a failed wait shows.
fn log_lines(log: &Path, word: &str) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| l.contains(word))
        .map(str::to_string)
        .collect();
    lines.drain(..lines.len().saturating_sub(12));
    lines
}

/// Stops every node; their digests are equal; each day's seal and each alert reached the
/// bus once.
fn all_agree(
    nodes: &mut BTreeMap<&str, (Serve, PathBuf)>,
    f: &Floor,
    seen: &Arc<Mutex<Vec<(String, String)>>>,
) {
    // Read until the bus answers: a restarted NATS server elects the bucket's leader anew.
    let status = wait_for("cluster status reads the replica bucket", || {
        let s = f.status();
        (s.contains("tables:"), s)
    });
    assert!(status.contains("0 diverged"), "{status}");
    for (node, (serve, _)) in nodes.iter_mut() {
        assert!(serve.stop(), "{node} stops cleanly");
    }
    let digests: Vec<_> = NODES.iter().map(|n| digest_of(&f.dir(n))).collect();
    if digests.iter().any(|d| *d != digests[0]) || std::env::var_os("CLUSTER3_SHOW").is_some() {
        for n in NODES {
            let dir = f.dir(n).join("ledger");
            let out =
                common::roundledger(&["quarantine", "--ledger", dir.to_str().expect("utf-8")]);
            eprintln!(
                "quarantine of {n}:\n{}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }
    assert_eq!(digests[0], digests[1], "n1 and n2");
    assert_eq!(digests[0], digests[2], "n1 and n3");
    let seen = seen.lock().expect("lock").clone();
    let mut per_subject: BTreeMap<&str, usize> = BTreeMap::new();
    for (subject, _) in seen.iter().filter(|(s, _)| s.starts_with("seals.")) {
        *per_subject.entry(subject).or_default() += 1;
    }
    assert!(!per_subject.is_empty());
    let logs: Vec<Vec<String>> = nodes
        .values()
        .map(|(_, log)| log_lines(log, "seal"))
        .collect();
    assert!(
        per_subject.values().all(|n| *n == 1),
        "{per_subject:?}: {logs:#?}"
    );
    let mut alerts: Vec<&(String, String)> = seen
        .iter()
        .filter(|(s, _)| s.starts_with("alerts."))
        .collect();
    let all = alerts.len();
    alerts.sort();
    alerts.dedup();
    assert_eq!(alerts.len(), all, "an alert reached the bus twice");
}
