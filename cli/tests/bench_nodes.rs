//! Benchmark, not a test (`#[ignore]`): ingest's CPU per event with 1 and with 3 ledger
//! nodes on one nats-server, measured in one run. `simulate` publishes a floor as fast as
//! the bus takes it (outboxes on); each `serve --node-id` consumes it through its own
//! durable consumer. Per node: the CPU its process spent from start to holding every
//! event, over the events; and nats-server's over the same span. Run:
//!
//! `cargo test --release -p roundledger --test bench_nodes -- --ignored --nocapture`

mod common;

use common::serve::{get, listening, start_env, wait_for, Serve};
use std::time::Instant;

const TOKEN: &str = "bench-nodes-token-0000000001";
const TABLES: &str = "5";
const ROUNDS: &str = "300";

/// CPU seconds a process has spent (user + system), from `/proc`.
fn cpu_s(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>().expect("utime") + f[12].parse::<f64>().expect("stime");
    // SAFETY: sysconf reads a constant.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

fn events_held(api: &str) -> u64 {
    let (status, body) = get(api, "/v1/chain", Some(TOKEN));
    assert_eq!(status, 200, "{body}");
    let chains: Vec<schemas::api::ChainStatus> = serde_json::from_str(&body).expect("chains");
    chains.iter().map(|c| c.head_seq.0).sum()
}

/// One run with `n` nodes: (events, per-node CPU us an event, nats-server's, seconds until
/// the last node held everything).
fn run(n: usize) -> (u64, Vec<f64>, Option<f64>, f64) {
    let nats = natsd::NatsServer::start().expect("nats-server");
    let root = tempfile::tempdir().expect("tempdir");
    let env = [common::TEST_ONLY_SIMULATED_KEYS];
    let extra = |node: &str| format!("node-id = {node:?}\ntrust-simulated-admin = true\n");
    let nodes: Vec<(Serve, String)> = (1..=n)
        .map(|i| {
            let (node, dir) = (format!("n{i}"), root.path().join(format!("n{i}")));
            std::fs::create_dir_all(&dir).expect("dir");
            let (serve, log) = start_env(&dir, &nats.url(), TOKEN, &extra(&node), &env);
            (serve, listening(&log).0)
        })
        .collect();
    let before: Vec<f64> = nodes.iter().map(|(s, _)| cpu_s(s.0.id())).collect();
    let nats_before = nats.pid().map(cpu_s);
    let t0 = Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_roundledger"))
        .args(["simulate", "--nats", &nats.url(), "--tables", TABLES])
        .args(["--rounds", ROUNDS, "--simulated-keys", "--json"])
        .env(env[0].0, env[0].1)
        .output()
        .expect("simulate");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("report");
    let events = report["events"].as_array().expect("events").len() as u64;
    for (_, api) in &nodes {
        wait_for("the node holds every event", || {
            let held = events_held(api);
            (held == events, held)
        });
    }
    let secs = t0.elapsed().as_secs_f64();
    let per_node = nodes
        .iter()
        .zip(&before)
        .map(|((s, _), b)| (cpu_s(s.0.id()) - b) * 1e6 / events as f64)
        .collect();
    // Unknown, not 0, when this process did not start the server.
    let nats_us = nats_before
        .zip(nats.pid().map(cpu_s))
        .map(|(b, a)| (a - b) * 1e6 / events as f64);
    (events, per_node, nats_us, secs)
}

#[test]
#[ignore = "a benchmark: run by hand with --release (module doc)"]
fn ingest_cpu_per_event_with_one_and_three_nodes() {
    for n in [1, 3, 1, 3] {
        let (events, per_node, nats_us, secs) = run(n);
        let text = per_node
            .iter()
            .map(|us| format!("{us:.1}"))
            .collect::<Vec<_>>();
        println!(
            "{n} node(s): {events} events in {secs:.1} s; serve CPU us an event, each node: {}; nats-server {} us an event",
            text.join(" / "),
            nats_us.map_or("unknown".to_string(), |us| format!("{us:.1}"))
        );
        assert_eq!(per_node.len(), n);
    }
}
