//! A table device written from schemas/ alone, in Python (tests/device/device.py), against
//! real processes: a nats-server and `roundledger serve` requiring signed events. It
//! follows DEVICES.md §1: opens a table, enrolls its key, checkpoints, plays one round of
//! each rule set and closes. The ledger verifies, every round audits CLEAN and every table
//! is attested to its last event. Then `roundledger conform` names each seeded departure:
//! live on the bus for a missing shuffle, from the device's files for the rest, key
//! faults included, with the file line of each.
//!
//! Needs python3 with `blake3`, `pynacl` and `nats-py` (`scripts/setup.sh --tests`).
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
        .args(["-c", "import blake3, nacl.signing, nats"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("ROUNDLEDGER_REQUIRE_PYTHON").is_none(),
            "python3 with blake3, pynacl and nats-py is required (ROUNDLEDGER_REQUIRE_PYTHON)"
        );
        eprintln!(
            "SKIPPED: python3 with blake3, pynacl and nats-py not found (scripts/setup.sh --tests)"
        );
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

/// Waits until ingest's consumer has taken and acknowledged every message of the stream:
/// the last checkpoints too.
async fn drained(client: &async_nats::Client) {
    let js = async_nats::jetstream::new(client.clone());
    let name = schemas::subjects::ingest_consumer(None);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let mut stream = js.get_stream("TABLES").await.expect("the stream");
        let mut consumer: async_nats::jetstream::consumer::PullConsumer =
            stream.get_consumer(&name).await.expect("ingest's consumer");
        let info = consumer.info().await.expect("consumer info");
        let total = stream.info().await.expect("stream info").state.messages;
        if info.num_pending == 0
            && info.num_ack_pending == 0
            && info.ack_floor.stream_sequence == total
        {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "ingest drains within WAIT: {info:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
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
        let events = std::fs::read_to_string(&file)
            .expect("messages")
            .lines()
            .filter(|l| l.contains(".events\""))
            .count();
        want.insert(table, events as u64);
        // The same events offline: nothing departs.
        let out = roundledger(&["conform", "--file", f]);
        assert_eq!(out.status.code(), Some(0), "{rs} conforms");
    }
    let tables: Vec<String> = want.keys().cloned().collect();
    rt.block_on(heads_reach(want.clone(), &mut heads));
    live_conform_names_a_missing_shuffle(&url, dir.path());
    rt.block_on(drained(&client));
    stop(server);
    attested_and_verified(&ledger, &want);

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
    file_conform_names_key_faults_by_line(dir.path(), admin.trim());
}

/// The ledger verifies, refused nothing, and a kept checkpoint covers each table's head.
fn attested_and_verified(ledger_dir: &Path, want: &BTreeMap<String, u64>) {
    let out = roundledger(&["verify", "--ledger", ledger_dir.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "the ledger verifies");
    let l = ledger::Ledger::open(ledger_dir).expect("open the ledger");
    let refused: Vec<_> = l
        .reader()
        .quarantine()
        .expect("quarantine")
        .into_iter()
        .map(|q| q.text)
        .collect();
    assert!(refused.is_empty(), "nothing refused: {refused:?}");
    for (table, seq) in want {
        let t = schemas::TableId::new(table.as_str()).expect("id");
        let attested = l.reader().attestation(&t).map(|a| a.seq.0);
        assert_eq!(attested, Some(*seq), "{table} attested to its last event");
    }
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

/// The device's file with a key fault: `conform` names the file line of each refusal.
fn device_file(dir: &Path, fault: &str) -> PathBuf {
    let file = dir.join(format!("{fault}.jsonl"));
    let f = file.to_str().expect("utf-8");
    device(&[
        "--table",
        "PY-KEYS",
        "--rule-set",
        "CSP6",
        "--fault",
        fault,
        "--out",
        f,
    ]);
    file
}

fn line_with<'a>(lines: &'a [serde_json::Value], code: &str) -> &'a serde_json::Value {
    lines
        .iter()
        .find(|l| l["code"] == code)
        .unwrap_or_else(|| panic!("{code} in {lines:?}"))
}

/// A bad enrollment signature, a forged event signature, and an admin not among
/// `--admin-key`: each is a departure at the file line that carries it.
fn file_conform_names_key_faults_by_line(dir: &Path, admin: &str) {
    let bad = device_file(dir, "bad-enrollment");
    let out = roundledger(&["conform", "--file", bad.to_str().expect("utf-8"), "--json"]);
    assert_eq!(out.status.code(), Some(1), "a bad enrollment departs");
    let lines = conform_lines(&out);
    let e = line_with(&lines, "enrollment_refused");
    assert_eq!((e["line"].as_u64(), e["seq"].as_u64()), (Some(2), Some(2)));
    assert_eq!(e["event"], "device_enrolled");
    assert_eq!(line_with(&lines, "enrollment_header_invalid")["line"], 1);
    assert_eq!(
        line_with(&lines, "signer_unknown")["line"],
        1,
        "the floor refuses it"
    );

    // No device_enrolled: the events are stored under the header, every checkpoint refused.
    let none = device_file(dir, "no-enrollment");
    let out = roundledger(&["conform", "--file", none.to_str().expect("utf-8"), "--json"]);
    assert_eq!(out.status.code(), Some(1), "a chain never attested departs");
    let lines = conform_lines(&out);
    assert_eq!(
        line_with(&lines, "unknown_device")["line"],
        2,
        "the first checkpoint"
    );
    assert!(!has_code(&lines, "signer_unknown"), "{lines:?}");
    assert!(line_with(&lines, "not_attested")["text"]
        .as_str()
        .is_some_and(|t| t.contains("never attested")));

    let forged = device_file(dir, "forged-event");
    let f = forged.to_str().expect("utf-8");
    let out = roundledger(&["conform", "--file", f, "--json", "--admin-key", admin]);
    assert_eq!(out.status.code(), Some(1), "a forged event departs");
    let lines = conform_lines(&out);
    let text = std::fs::read_to_string(&forged).expect("file");
    let n = 1 + text
        .lines()
        .position(|l| l.contains("Rl-Signature") && signed_by_other(l))
        .expect("the forged line");
    let s = line_with(&lines, "signature_invalid");
    assert_eq!(s["line"].as_u64(), Some(n as u64), "{s}");
    assert_eq!(s["event"], "paid_out");
    // What follows the forged seq is held, the seq itself missing: the round is not judged.
    let seq = s["seq"].as_u64().expect("seq");
    assert!(lines.iter().any(|l| l["kind"] == "held"));
    let gap = line_with(&lines, "gap");
    assert!(
        lines
            .iter()
            .any(|l| l["kind"] == "missing" && l["seq"].as_u64() == Some(seq)),
        "{gap}"
    );
    assert!(line_with(&lines, "incomplete")["kind"] == "round");
    assert!(
        !has_code(&lines, "CSP6-4.1-payout-differs"),
        "held payouts are not underpaid"
    );

    let out = roundledger(&[
        "conform",
        "--file",
        f,
        "--json",
        "--admin-key",
        &"0".repeat(64),
    ]);
    let lines = conform_lines(&out);
    let e = line_with(&lines, "enrollment_refused");
    assert!(
        e["text"]
            .as_str()
            .is_some_and(|t| t.contains("--admin-key")),
        "{e}"
    );
}

/// Whether a message line's `Rl-Signature` is not the device's own: the device's file
/// says so by signing the forged line with a key the chain never enrolled. Recomputed
/// here with the event-signature rule of README §5.4.
fn signed_by_other(line: &str) -> bool {
    let v: serde_json::Value = serde_json::from_str(line).expect("a message line");
    let Some(sig) = v["headers"]["Rl-Signature"].as_str() else {
        return false;
    };
    let bytes = hex::decode(v["bytes"].as_str().expect("bytes")).expect("hex");
    let table = schemas::TableId::new("PY-KEYS").expect("id");
    let device = schemas::DeviceId::new("dealer-py").expect("id");
    let s = schemas::provenance::EventSignature {
        device,
        signature: schemas::attest::Signature::from_hex(sig).expect("hex"),
        enrollment: None,
    };
    let key = schemas::attest::SigningKey::from_secret([7; 32]).public();
    !s.verifies_with(&key, &table, &bytes)
}
