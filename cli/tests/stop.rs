//! `serve` stops on SIGTERM within a few seconds whatever NATS does (issue 46: with
//! nats-server down it ran on for 90 s and more, until NATS came back), and loses
//! nothing: every event it stored before the signal is in the ledger after it.
//!
//! Real processes: the built binary, a real `nats-server -js`, a simulated table.

mod common;

use common::serve::{get, listening, wait_for, Serve, POLL};
use std::time::{Duration, Instant};

const TOKEN: &str = "ops-admin-token-0000000001";
/// How long a stop may take: "a few seconds", with room for a loaded machine. The bug
/// being guarded ran for as long as NATS stayed down.
const STOP_WITHIN: Duration = Duration::from_secs(20);

/// Waits for the process to exit, at most `within`: its success, or `None` if it runs on.
fn exited_within(serve: &mut Serve, within: Duration) -> Option<bool> {
    let start = Instant::now();
    while start.elapsed() < within {
        if let Some(status) = serve.0.try_wait().expect("try_wait") {
            eprintln!("serve exited {:?} after SIGTERM", start.elapsed());
            return Some(status.success());
        }
        std::thread::sleep(POLL);
    }
    None
}

/// Sends SIGTERM to serve.
fn sigterm(serve: &Serve) {
    let pid = serve.0.id() as i32;
    // SAFETY: signals a child this test started and still owns.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
}

fn stored(api: &str) -> u64 {
    let (s, body) = get(api, "/v1/status", Some(TOKEN));
    assert_eq!(s, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("status JSON");
    v["events_stored"].as_u64().expect("events_stored")
}

#[test]
fn serve_stops_on_sigterm_with_nats_down_and_keeps_what_it_stored() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut nats = natsd::NatsServer::start().expect("nats-server");
    let (admin, keys) = common::device_keys(tmp.path(), &["CSP6-01"]);
    let (mut serve, log) = common::serve::start(
        tmp.path(),
        &nats.url(),
        TOKEN,
        &format!("admin-key = [{admin:?}]\n"),
    );
    let (api, ops) = listening(&log);
    wait_for("ready", || {
        let r = get(&ops, "/ready", None);
        (r.0 == 200, r)
    });
    // A server with ingest says so (the UI's Live page shows "live" only then).
    let who = get(&api, "/v1/whoami", Some(TOKEN));
    assert!(who.1.contains("\"ingesting\":true"), "{who:?}");
    let sim = common::roundledger(&[
        "simulate",
        "--nats",
        &nats.url(),
        "--tables",
        "1",
        "--rounds",
        "2",
        "--seed",
        "46",
        "--device-keys",
        keys.to_str().unwrap(),
    ]);
    assert!(sim.status.success());
    // Everything published is stored, then NATS goes away.
    let before = wait_for("the rounds stored", || {
        let n = stored(&api);
        (n > 20 && n == stored(&api), n)
    });
    nats.kill9().expect("kill nats-server");
    wait_for("not ready without NATS", || {
        let r = get(&ops, "/ready", None);
        (r.0 == 503, r)
    });
    sigterm(&serve);
    let stopped = exited_within(&mut serve, STOP_WITHIN);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert_eq!(
        stopped,
        Some(true),
        "a clean stop with NATS down; log:\n{text}"
    );
    let ledger = ledger::Ledger::open(tmp.path().join("ledger")).expect("ledger");
    let after: u64 = ledger
        .tables()
        .iter()
        .map(|t| ledger.head(t).map_or(0, |h| h.seq.0))
        .sum();
    assert_eq!(
        after, before,
        "every event stored before the signal is kept"
    );
}

/// `simulate` stops on SIGINT while nats-server is down, even started with SIGINT ignored
/// (as a shell starts a background job): it exits with an error, not on NATS's return.
#[test]
fn simulate_stops_on_sigint_while_nats_is_down() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::CommandExt;
    let mut nats = natsd::NatsServer::start().expect("nats-server");
    tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(async {
            let client = async_nats::connect(nats.url()).await.expect("connect");
            let js = async_nats::jetstream::new(client);
            ingest::ensure_stream(&js).await.expect("stream");
        });
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_roundledger"));
    cmd.args(["simulate", "--nats", &nats.url(), "--tables", "2"])
        .args(["--rounds", "300", "--rate", "2", "--simulated-keys"])
        .env(
            common::TEST_ONLY_SIMULATED_KEYS.0,
            common::TEST_ONLY_SIMULATED_KEYS.1,
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    // SAFETY: between fork and exec, only an async-signal-safe call.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = Serve(cmd.spawn().expect("simulate"));
    let mut lines = BufReader::new(child.0.stderr.take().expect("stderr")).lines();
    // Its handler is in place once it says so.
    let said = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.contains("SIGINT stops it"));
    assert!(said.is_some(), "simulate never said it handles SIGINT");
    wait_for("simulate publishing", || {
        let n = stream_messages(&nats.url());
        (n > 0, n)
    });
    nats.kill9().expect("nats-server down");
    let pid = child.0.id() as i32;
    // SAFETY: signals a child this test started and still owns.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let exited = exited_within(&mut child, STOP_WITHIN);
    assert_eq!(exited, Some(false), "simulate exits, with an error");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(
        rest.iter().any(|l| l.contains("stopped by SIGINT")),
        "{rest:?}"
    );
}

/// Messages in the events stream now; 0 while it does not exist.
fn stream_messages(url: &str) -> u64 {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let client = async_nats::connect(url).await.expect("connect");
        let js = async_nats::jetstream::new(client);
        match js.get_stream(schemas::subjects::STREAM).await {
            Ok(mut s) => s.info().await.map_or(0, |i| i.state.messages),
            Err(_) => 0,
        }
    })
}
