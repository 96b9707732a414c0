//! Benchmark, not a test (`#[ignore]`): ledger nodes on one nats-server, 1 and 3 of them,
//! measured in one run. `simulate` publishes a floor (outboxes on); each `serve --node-id`
//! consumes it through its own durable consumer. Two loads: as fast as the bus takes it,
//! and paced at a floor's rate (`--rate`).
//!
//! - CPU: per node, what its process spent from start to holding every event, over the
//!   events; and nats-server's over the same span.
//! - Publish-to-durable: from each event's stream timestamp (its `received_at_ns`, read
//!   from node 1's ledger after the run) to the first poll of a node's `/v1/chain` whose
//!   head covers it. Polls run every `HEAD_POLL` on each node, so each figure is an upper
//!   bound, late by at most one poll and one request.
//! - Replication lag: per event, the last node's durable time less the first node's.
//!
//! `cargo test --release -p roundledger --test bench_nodes -- --ignored --nocapture`

mod common;

use common::serve::{get, listening, start_env, wait_for, Serve};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const TOKEN: &str = "bench-nodes-token-0000000001";
const TABLES: &str = "5";
const ROUNDS: &str = "300";
/// The paced load: rounds per second per table, and rounds.
const PACED_RATE: &str = "4";
const PACED_ROUNDS: &str = "60";
/// How often each node's heads are read.
const HEAD_POLL: Duration = Duration::from_millis(5);

/// CPU seconds a process has spent (user + system), from `/proc`.
fn cpu_s(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>().expect("utime") + f[12].parse::<f64>().expect("stime");
    // SAFETY: sysconf reads a constant.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

fn wall_ns() -> i64 {
    ingest::system_clock_ns()
}

/// Each table's head seq on one node.
fn heads(api: &str) -> Vec<(String, u64)> {
    let (status, body) = get(api, "/v1/chain", Some(TOKEN));
    assert_eq!(status, 200, "{body}");
    let chains: Vec<schemas::api::ChainStatus> = serde_json::from_str(&body).expect("chains");
    chains
        .iter()
        .map(|c| (c.table.to_string(), c.head_seq.0))
        .collect()
}

fn events_held(api: &str) -> u64 {
    heads(api).iter().map(|h| h.1).sum()
}

/// One node's heads as polled: per table, each new head seq and the wall ns of the
/// answer that first showed it, in order.
type Seen = BTreeMap<String, Vec<(u64, i64)>>;

fn poll_heads(api: String, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Seen> {
    std::thread::spawn(move || {
        let mut seen = Seen::new();
        while !stop.load(Ordering::Relaxed) {
            let got = heads(&api);
            let at_ns = wall_ns();
            for (table, seq) in got {
                let series = seen.entry(table).or_default();
                if series.last().is_none_or(|l| l.0 < seq) {
                    series.push((seq, at_ns));
                }
            }
            std::thread::sleep(HEAD_POLL);
        }
        seen
    })
}

/// When `seen` first showed a head at or past `seq` of `table`.
fn durable_at_ns(seen: &Seen, table: &str, seq: u64) -> Option<i64> {
    let series = seen.get(table)?;
    let i = series.partition_point(|(s, _)| *s < seq);
    series.get(i).map(|p| p.1)
}

/// The `q` quantile of sorted `v`, ms.
fn ms(v: &[i64], q: f64) -> f64 {
    let i = ((v.len() as f64 - 1.0) * q).round() as usize;
    v[i] as f64 / 1e6
}

/// Publish-to-durable, ns, per node (sorted), and replication lag, ns (sorted).
fn latencies(ledger_dir: &std::path::Path, seen: &[Seen]) -> (Vec<Vec<i64>>, Vec<i64>) {
    let l = ledger::Ledger::open(ledger_dir).expect("node 1's ledger");
    let mut per_node = vec![Vec::new(); seen.len()];
    let mut lag = Vec::new();
    for e in l.reader().events_in_arrival_order() {
        let (table, e) = e.expect("event");
        let at: Vec<i64> = seen
            .iter()
            .map(|s| durable_at_ns(s, table.as_str(), e.seq.0).expect("every event seen"))
            .collect();
        for (v, t) in per_node.iter_mut().zip(&at) {
            v.push(t - e.received_at_ns);
        }
        lag.push(at.iter().max().expect("a node") - at.iter().min().expect("a node"));
    }
    per_node.iter_mut().for_each(|v| v.sort_unstable());
    lag.sort_unstable();
    (per_node, lag)
}

/// What one run measured.
struct Run {
    events: u64,
    cpu_us: Vec<f64>,
    nats_us: Option<f64>,
    secs: f64,
    durable_ns: Vec<Vec<i64>>,
    lag_ns: Vec<i64>,
}

fn start_nodes(root: &std::path::Path, nats: &str, n: usize) -> Vec<(Serve, String)> {
    let env = [common::TEST_ONLY_SIMULATED_KEYS];
    let extra = |node: &str| format!("node-id = {node:?}\ntrust-simulated-admin = true\n");
    (1..=n)
        .map(|i| {
            let (node, dir) = (format!("n{i}"), root.join(format!("n{i}")));
            std::fs::create_dir_all(&dir).expect("dir");
            let (serve, log) = start_env(&dir, nats, TOKEN, &extra(&node), &env);
            (serve, listening(&log).0)
        })
        .collect()
}

fn simulate(nats: &str, pace: Option<(&str, &str)>) -> u64 {
    let env = common::TEST_ONLY_SIMULATED_KEYS;
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_roundledger"));
    cmd.args(["simulate", "--nats", nats, "--tables", TABLES])
        .args(["--simulated-keys", "--json"])
        .env(env.0, env.1);
    match pace {
        Some((rate, rounds)) => cmd.args(["--rate", rate, "--rounds", rounds]),
        None => cmd.args(["--rounds", ROUNDS]),
    };
    let out = cmd.output().expect("simulate");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("report");
    report["events"].as_array().expect("events").len() as u64
}

/// One run with `n` nodes, flat out or paced.
fn run(n: usize, pace: Option<(&str, &str)>) -> Run {
    let nats = natsd::NatsServer::start().expect("nats-server");
    let root = tempfile::tempdir().expect("tempdir");
    let mut nodes = start_nodes(root.path(), &nats.url(), n);
    let before: Vec<f64> = nodes.iter().map(|(s, _)| cpu_s(s.0.id())).collect();
    let nats_before = nats.pid().map(cpu_s);
    let stop = Arc::new(AtomicBool::new(false));
    let pollers: Vec<_> = nodes
        .iter()
        .map(|(_, api)| poll_heads(api.clone(), stop.clone()))
        .collect();
    let t0 = Instant::now();
    let events = simulate(&nats.url(), pace);
    for (_, api) in &nodes {
        wait_for("the node holds every event", || {
            let held = events_held(api);
            (held == events, held)
        });
    }
    let secs = t0.elapsed().as_secs_f64();
    let cpu_us = nodes
        .iter()
        .zip(&before)
        .map(|((s, _), b)| (cpu_s(s.0.id()) - b) * 1e6 / events as f64)
        .collect();
    // Unknown, not 0, when this process did not start the server.
    let nats_us = nats_before
        .zip(nats.pid().map(cpu_s))
        .map(|(b, a)| (a - b) * 1e6 / events as f64);
    stop.store(true, Ordering::Relaxed);
    let seen: Vec<Seen> = pollers
        .into_iter()
        .map(|p| p.join().expect("poller"))
        .collect();
    nodes
        .iter_mut()
        .for_each(|(s, _)| assert!(s.stop(), "a clean stop"));
    let (durable_ns, lag_ns) = latencies(&root.path().join("n1").join("ledger"), &seen);
    Run {
        events,
        cpu_us,
        nats_us,
        secs,
        durable_ns,
        lag_ns,
    }
}

fn print(n: usize, load: &str, r: &Run) {
    let each = |v: &[f64]| v.iter().map(|x| format!("{x:.1}")).collect::<Vec<_>>();
    let pct = |v: &[i64]| format!("{:.1} / {:.1} / {:.1}", ms(v, 0.5), ms(v, 0.99), ms(v, 1.0));
    let durable: Vec<String> = r.durable_ns.iter().map(|v| pct(v)).collect();
    println!(
        "{n} node(s), {load}: {} events in {:.1} s; serve CPU us an event, each node: {}; nats-server {} us an event",
        r.events,
        r.secs,
        each(&r.cpu_us).join(" / "),
        r.nats_us.map_or("unknown".to_string(), |us| format!("{us:.1}"))
    );
    println!(
        "  publish-to-durable p50 / p99 / max ms, each node: {}",
        durable.join("; ")
    );
    if n > 1 {
        println!("  replication lag p50 / p99 / max ms: {}", pct(&r.lag_ns));
    }
}

#[test]
#[ignore = "a benchmark: run by hand with --release (module doc)"]
fn ingest_cpu_and_latency_with_one_and_three_nodes() {
    for n in [1, 3, 1, 3] {
        let r = run(n, None);
        print(n, "flat out", &r);
        assert_eq!(r.cpu_us.len(), n);
        assert_eq!(r.durable_ns.len(), n);
        assert!(r.durable_ns.iter().all(|v| v.len() as u64 == r.events));
    }
    for n in [1, 3] {
        let r = run(n, Some((PACED_RATE, PACED_ROUNDS)));
        print(n, "paced", &r);
        assert!(r.durable_ns.iter().all(|v| v.len() as u64 == r.events));
    }
}
