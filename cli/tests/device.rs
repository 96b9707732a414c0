//! A table device written from schemas/ alone, in Python (tests/device/device.py), against
//! real processes: a nats-server and `roundledger serve` requiring signed events. It plays
//! one round of each rule set, signed with an enrollment header; every round audits CLEAN.
//! Then `roundledger conform` names each seeded departure from the round grammar: live
//! on the bus for a missing shuffle, from the device's files for the rest.
//!
//! Needs python3 with `blake3` and `pynacl` (`scripts/setup.sh --tests` installs them).
//! Without them the test says SKIPPED on stderr and passes, unless ROUNDLEDGER_REQUIRE_PYTHON
//! is set.
//! Waits are bounded (`WAIT`); nothing here asserts on time.

mod common;

use common::roundledger;
use futures::StreamExt;
use schemas::ChainHead;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(90);
const RULE_SETS: [&str; 5] = ["CSP6", "MLP3", "SSP4", "CS51", "TCP3"];

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/device/device.py")
}

/// Whether python3 and its packages are here; says SKIPPED loudly when not.
fn python_ready() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import blake3, nacl.signing"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("ROUNDLEDGER_REQUIRE_PYTHON").is_none(),
            "python3 with blake3 and pynacl is required (ROUNDLEDGER_REQUIRE_PYTHON)"
        );
        eprintln!("SKIPPED: python3 with blake3 and pynacl not found (scripts/setup.sh --tests)");
    }
    ok
}

fn device(args: &[&str]) -> Output {
    let out = Command::new("python3")
        .arg(script())
        .args(args)
        .output()
        .expect("running device.py");
    eprintln!(
        "$ device.py {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "device.py {args:?} failed");
    out
}

fn serve(ledger: &Path, url: &str, admin: &str, log: &Path) -> Child {
    let out = std::fs::File::create(log).expect("log");
    let err = out.try_clone().expect("log clone");
    Command::new(env!("CARGO_BIN_EXE_roundledger"))
        .args(["serve", "--ledger"])
        .arg(ledger)
        .args(["--nats", url, "--http", "127.0.0.1:0", "--admin-key", admin])
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect("spawning serve")
}

/// SIGTERM (a clean stop), then reap.
fn stop(mut child: Child) {
    // SAFETY: the pid is our own child's, not yet reaped.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let status = child.wait().expect("reap");
    assert!(status.success(), "serve stopped cleanly: {status}");
}

/// Waits until each table's durable head reaches its seq.
async fn heads_reach(want: BTreeMap<String, u64>, rx: &mut async_nats::Subscriber) {
    let mut have: BTreeMap<String, u64> = BTreeMap::new();
    let done = |have: &BTreeMap<String, u64>| want.iter().all(|(t, s)| have.get(t) >= Some(s));
    while !done(&have) {
        let msg = tokio::time::timeout(WAIT, rx.next())
            .await
            .expect("heads within WAIT")
            .expect("head subscription open");
        let head: ChainHead = serde_json::from_slice(&msg.payload).expect("ChainHead JSON");
        have.insert(head.table.to_string(), head.seq.0);
    }
}

fn conform_lines(out: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn has_code(lines: &[serde_json::Value], code: &str) -> bool {
    lines.iter().any(|l| l["code"] == code)
}

#[test]
fn a_python_device_plays_clean_rounds_and_conform_names_each_departure() {
    if !python_ready() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let nats = natsd::NatsServer::start().expect("nats-server");
    let url = nats.url();
    let admin = String::from_utf8(device(&["--print-admin-key"]).stdout).expect("utf-8");
    let ledger = dir.path().join("ledger");
    let server = serve(&ledger, &url, admin.trim(), &dir.path().join("serve.log"));
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let client = rt
        .block_on(async_nats::connect(url.as_str()))
        .expect("connect");
    let mut heads = rt
        .block_on(client.subscribe("ledger.*.head"))
        .expect("subscribe");

    let mut want = BTreeMap::new();
    for rs in RULE_SETS {
        let (table, file) = (format!("PY-{rs}"), dir.path().join(format!("{rs}.jsonl")));
        let f = file.to_str().expect("utf-8");
        device(&[
            "--nats",
            &url,
            "--table",
            &table,
            "--rule-set",
            rs,
            "--out",
            f,
        ]);
        let n = std::fs::read_to_string(&file)
            .expect("events")
            .lines()
            .count();
        want.insert(table, n as u64);
        // The same events offline: nothing departs.
        let out = roundledger(&["conform", "--file", f]);
        assert_eq!(out.status.code(), Some(0), "{rs} conforms");
    }
    let tables: Vec<String> = want.keys().cloned().collect();
    rt.block_on(heads_reach(want, &mut heads));
    live_conform_names_a_missing_shuffle(&url, dir.path());
    stop(server);

    let l = ledger.to_str().expect("utf-8");
    let mut args = vec!["audit", "--ledger", l, "--json"];
    for t in &tables {
        args.extend(["--table", t.as_str()]);
    }
    let out = roundledger(&args);
    assert_eq!(out.status.code(), Some(0), "every round is clean");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(summary["rounds"], 5);
    assert_eq!(
        summary["verdicts"]["clean"], 5,
        "one clean round per rule set"
    );
    file_conform_names_each_departure(dir.path());
}

/// `conform --nats` watches a table while the device publishes a round without a shuffle.
fn live_conform_names_a_missing_shuffle(url: &str, dir: &Path) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_roundledger"))
        .args([
            "conform", "--nats", url, "--table", "PY-LIVE", "--rounds", "1",
        ])
        .arg("--json")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn conform");
    let mut err = BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    while !line.contains("watching") {
        line.clear();
        assert!(err.read_line(&mut line).expect("read") > 0, "conform ended");
    }
    let file = dir.join("live.jsonl");
    let f = file.to_str().expect("utf-8");
    device(
        &["--nats", url, "--table", "PY-LIVE", "--rule-set", "CSP6"]
            .into_iter()
            .chain(["--fault", "no-shuffle", "--out", f])
            .collect::<Vec<_>>(),
    );
    let out = child
        .wait_with_output()
        .expect("conform ends after one round");
    let lines = conform_lines(&out);
    eprintln!("{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(out.status.code(), Some(1), "a departure");
    assert!(has_code(&lines, "CSP6-5.8.5-no-shuffle"), "{lines:?}");
    let finding = lines
        .iter()
        .find(|l| l["code"] == "CSP6-5.8.5-no-shuffle")
        .expect("the finding");
    assert_eq!(finding["clause"], "CSP6 §5.8.5");
    assert_eq!(finding["event"], "card_dealt", "the first card of the deal");
    assert!(!finding["words"].as_array().expect("words").is_empty());
    assert!(lines
        .iter()
        .any(|l| l["kind"] == "round" && l["code"] == "void"));
}

/// `conform --file` on the device's files with one seeded departure each.
fn file_conform_names_each_departure(dir: &Path) {
    let cases = [
        ("no-burn", "CSP6-5.9-burn-card-missing"),
        ("card-order", "CSP6-3.10-deal-order-wrong"),
        ("wrong-payout", "CSP6-4.1-payout-differs"),
        ("bad-link", "prev_mismatch"),
    ];
    for (fault, code) in cases {
        let file = dir.join(format!("{fault}.jsonl"));
        let f = file.to_str().expect("utf-8");
        let table = format!("PY-{}", fault.to_uppercase());
        device(&[
            "--table",
            &table,
            "--rule-set",
            "CSP6",
            "--fault",
            fault,
            "--out",
            f,
        ]);
        let out = roundledger(&["conform", "--file", f, "--json"]);
        assert_eq!(out.status.code(), Some(1), "{fault} departs");
        let lines = conform_lines(&out);
        assert!(has_code(&lines, code), "{fault}: {code} in {lines:?}");
    }
}
