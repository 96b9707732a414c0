//! The binary's evidence and server commands end to end, without NATS: `seed` a floor,
//! `evidence` a disputed round, `verify-bundle` it (then a bundle with one flipped byte,
//! which must fail naming the seq), and `serve --no-ingest` with `tokens`, against which
//! `replay`, `audit` and `export --server` give what the ledger gives, and `audit
//! --server` by gaming day and shift partitions the rounds. `readmodel
//! rebuild|check` and `verify` on a read model with a changed byte or another version.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_roundledger"))
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = bin().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn seed(dir: &Path) -> String {
    let ledger = dir.join("ledger");
    let l = ledger.to_str().unwrap().to_string();
    let (code, out, err) = run(&[
        "seed",
        "--ledger",
        &l,
        "--tables",
        "3",
        "--rounds",
        "25",
        "--payout-errors",
        "0.2",
        "--seed",
        "9",
        "--close",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    l
}

/// The first disputed round of the local audit: (table, round), and the audit's JSON.
fn first_dispute(ledger: &str) -> (String, u64, serde_json::Value) {
    let (code, out, err) = run(&["audit", "--ledger", ledger, "--json", "--quiet"]);
    assert_eq!(code, 1, "the seeded floor has disputes: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let d = &v["disputed_rounds"][0];
    (
        d["table"].as_str().unwrap().to_string(),
        d["round"].as_u64().unwrap(),
        v,
    )
}

#[test]
fn evidence_bundle_verifies_offline_and_a_flipped_byte_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = seed(dir.path());
    let (table, round, _) = first_dispute(&ledger);
    let file = dir.path().join("bundle.json");
    let f = file.to_str().unwrap();
    let (code, out, err) = run(&[
        "evidence",
        "--ledger",
        &ledger,
        "--table",
        &table,
        "--round",
        &round.to_string(),
        "--out",
        f,
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("ATTESTED: device"), "{out}");
    let (code, out, _) = run(&["verify-bundle", f]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("OK "), "{out}");
    // Signed by the dealer terminal; its key's admin taken on trust unless pinned.
    assert!(out.contains("ATTESTED: device"), "{out}");
    assert!(out.contains("TRUSTED, NOT CHECKED: admin key"), "{out}");
    let b: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    // Round 1's window starts at seq 1: no checkpoint precedes it, so the full form.
    assert_eq!(b["version"], if round > 1 { 3 } else { 2 }, "round {round}");
    assert_eq!(b["attestation"]["status"], "attested");
    let admin = b["attestation"]["admin_key"].as_str().unwrap();
    let (code, out, _) = run(&["verify-bundle", f, "--admin-key", admin]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("is one of the pinned --admin-key keys"),
        "{out}"
    );
    let other = "ab".repeat(32);
    let (code, out, _) = run(&["verify-bundle", f, "--admin-key", &other]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("not one of the pinned admin keys"), "{out}");
    let (code, _, err) = run(&["verify-bundle", f, "--admin-key", "not-hex"]);
    assert_eq!(code, 2, "{err}");

    // Flip one hex digit of the first round event's bytes.
    let mut b: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let seq = b["round_seqs"][0].as_u64().unwrap();
    let from = b["chain"]["from_seq"].as_u64().unwrap();
    let e = &mut b["chain"]["events"][(seq - from) as usize];
    let mut hexs = e["bytes"].as_str().unwrap().to_string();
    let last = hexs.pop().unwrap();
    hexs.push(if last == 'a' { 'b' } else { 'a' });
    e["bytes"] = hexs.into();
    let bad = dir.path().join("tampered.json");
    std::fs::write(&bad, serde_json::to_vec(&b).unwrap()).unwrap();
    let (code, out, _) = run(&["verify-bundle", bad.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("FAILED"), "{out}");
    assert!(
        out.contains(&format!("seq {seq}")),
        "names the event: {out}"
    );
    // Not a bundle at all: exit 1 with the reason, not a panic.
    std::fs::write(&bad, b"{}").unwrap();
    let (code, out, _) = run(&["verify-bundle", bad.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
}

#[test]
fn replay_audit_and_export_work_against_a_running_server() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = seed(dir.path());
    let (table, round, local) = first_dispute(&ledger);
    // Two refused messages, so that the quarantine has something to list.
    {
        let l = ledger::Ledger::open(&ledger).unwrap();
        let junk = |n: u64| ledger::Incoming {
            bytes: format!("not an event #{n}").into_bytes(),
            subject_table: Some(schemas::TableId::new(&table).unwrap()),
            stream_seq: 10_000_000 + n,
            received_at_ns: 1_780_000_000_000_000_000,
            provenance: Default::default(),
        };
        l.writer().append_batch(&[junk(0), junk(1)]).unwrap();
        l.flush().unwrap();
    }
    let (code, local_quarantine, _) = run(&["quarantine", "--ledger", &ledger]);
    assert_eq!(code, 1, "a listing with entries: {local_quarantine}");
    assert!(
        local_quarantine.contains("quarantine: 2 entries in all, chain head "),
        "{local_quarantine}"
    );
    assert!(
        local_quarantine.contains("by reason: undecodable 2"),
        "{local_quarantine}"
    );
    let (code, one, _) = run(&["quarantine", "--ledger", &ledger, "--id", "1"]);
    assert_eq!(code, 1);
    assert!(one.contains(&hex::encode(b"not an event #1")), "{one}");
    let (code, none, _) = run(&["quarantine", "--ledger", &ledger, "--reason", "fork"]);
    assert_eq!(code, 0, "nothing matches: {none}");
    assert!(none.contains("nothing quarantined matches"), "{none}");
    let (_, local_replay, _) = run(&[
        "replay",
        "--ledger",
        &ledger,
        "--table",
        &table,
        "--round",
        &round.to_string(),
    ]);
    let tokens = dir.path().join("tokens.json");
    let (code, out, _) = run(&["tokens", "--out", tokens.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(out.contains("surveillance"));
    let cfg: serde_json::Value = serde_json::from_slice(&std::fs::read(&tokens).unwrap()).unwrap();
    let token = |role: &str| {
        cfg["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["role"] == role)
            .unwrap()["token"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let mut server = bin()
        .args([
            "serve",
            "--ledger",
            &ledger,
            "--no-ingest",
            "--config",
            tokens.to_str().unwrap(),
            "--http",
            "127.0.0.1:0",
        ])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let url = loop {
        let l = lines.next().expect("server output").unwrap();
        if let Some(rest) = l.split("web UI on ").nth(1) {
            break rest.trim_end_matches('/').to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    let surv = token("surveillance");
    // Wait until the server's index has read the whole ledger.
    for _ in 0..200 {
        let (_, out, _) = run(&["audit", "--server", &url, "--token", &surv, "--json"]);
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&out) {
            if v["rounds"] == local["rounds"] {
                break;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let (code, out, err) = run(&["audit", "--server", &url, "--token", &surv, "--json"]);
    assert_eq!(code, 1, "{err}");
    let remote: serde_json::Value = serde_json::from_str(&out).unwrap();
    for k in [
        "tables",
        "rounds",
        "events",
        "verdicts",
        "findings_by_code",
        "net_difference",
        "disputed_rounds",
    ] {
        assert_eq!(remote[k], local[k], "audit --server differs in {k}");
    }
    audit_by_day_and_shift(&url, &surv, local["rounds"].as_u64().unwrap());
    let (code, remote_replay, err) = run(&[
        "replay",
        "--server",
        &url,
        "--token",
        &surv,
        "--table",
        &table,
        "--round",
        &round.to_string(),
    ]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        remote_replay, local_replay,
        "replay --server prints what replay --ledger prints"
    );
    let (code, remote_quarantine, err) = run(&["quarantine", "--server", &url, "--token", &surv]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        remote_quarantine, local_quarantine,
        "quarantine --server prints what quarantine --ledger prints"
    );
    let (_, remote_one, _) = run(&[
        "quarantine",
        "--server",
        &url,
        "--token",
        &surv,
        "--id",
        "1",
    ]);
    assert_eq!(remote_one, one);
    let file = dir.path().join("export.jsonl");
    let (code, out, err) = run(&[
        "export",
        "--server",
        &url,
        "--token",
        &surv,
        "--table",
        &table,
        "--out",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, _) = run(&["verify", "--export", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    report_uses_the_servers_day_rule(&url, &token("finance"));
    // The finance token may not replay rounds.
    let (code, _, err) = run(&[
        "replay",
        "--server",
        &url,
        "--token",
        &token("finance"),
        "--table",
        &table,
        "--round",
        "1",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("403"), "{err}");
    let pid = server.id();
    let _ = Command::new("kill").arg(pid.to_string()).status();
    let _ = server.wait();
}

/// Changes the read model of `ledger` through sled, as a disk fault or a hand would.
/// `audit --server --day` and `--shift`: the seeded floor plays from about now, so its
/// rounds open within the gaming days from yesterday to the day after tomorrow. `serve`
/// was given no day rule: it uses the one `seed` kept (06:00 UTC, shifts at 06:00, 14:00
/// and 22:00). The days' audits partition the rounds, a day's three shifts partition
/// the day, and a shift the day does not have is the server's 400.
fn audit_by_day_and_shift(url: &str, token: &str, rounds: u64) {
    let audit = |when: &[&str]| -> (i32, serde_json::Value, String) {
        let mut args = vec!["audit", "--server", url, "--token", token, "--json"];
        args.extend_from_slice(when);
        let (code, out, err) = run(&args);
        (code, serde_json::from_str(&out).unwrap_or_default(), err)
    };
    let rule = ledger::days::DayRule::new("06:00", "UTC").unwrap();
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    let mut days: Vec<String> = (-1..=2)
        .map(|k| rule.day_of(now_ns + k * 86_400_000_000_000).unwrap())
        .collect();
    days.dedup();
    let mut sum = 0;
    for day in &days {
        let day = day.as_str();
        let (code, by_day, err) = audit(&["--day", day]);
        assert!(code == 0 || code == 1, "{day}: {err}");
        let shifts: u64 = (1..=3)
            .map(|n| {
                audit(&["--shift", &format!("{day}/{n}")]).1["rounds"]
                    .as_u64()
                    .unwrap()
            })
            .sum();
        assert_eq!(
            shifts,
            by_day["rounds"].as_u64().unwrap(),
            "{day}: its shifts"
        );
        sum += by_day["rounds"].as_u64().unwrap();
    }
    assert_eq!(
        sum, rounds,
        "the days' rounds are all the rounds, once each"
    );
    let (code, _, err) = audit(&["--shift", &format!("{}/4", days[1])]);
    assert_eq!(code, 2);
    assert!(err.contains("400") && err.contains("has 3 shifts"), "{err}");
    let (code, _, err) = audit(&["--day", &days[1], "--from", "0"]);
    assert_eq!(code, 2, "a day and a time are refused: {err}");
}

/// `report --server` splits days by the server's rule; flags saying another are refused,
/// never ignored, and flags saying the same are accepted.
fn report_uses_the_servers_day_rule(url: &str, token: &str) {
    let day = ledger::days::DayRule::new("06:00", "UTC")
        .unwrap()
        .day_of(now_ns())
        .unwrap();
    let report = |flags: &[&str]| {
        let mut args = vec!["report", "--server", url, "--token", token, "--day", &day];
        args.extend_from_slice(flags);
        run(&args)
    };
    let (code, out, err) = report(&["--json"]);
    assert!(code == 0 || code == 1, "{err}");
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["day_rule"], "06:00 UTC 06:00,14:00,22:00");
    let (code, _, err) = report(&["--json", "--shifts", "06:00,14:00,22:00"]);
    assert!(code == 0 || code == 1, "the same rule: {err}");
    let (code, out, err) = report(&["--json", "--shifts", "06:00,18:00"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        err.contains("the server's day rule is `06:00 UTC 06:00,14:00,22:00`"),
        "{err}"
    );
    assert!(out.is_empty(), "nothing printed under another rule: {out}");
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

/// Changes the read model's store directly (`readside::kv`), below the model's seals.
fn tamper_model(ledger: &str, f: impl FnOnce(&readside::kv::ModelKv)) {
    let db = readside::kv::ModelKv::open(&Path::new(ledger).join("readmodel")).unwrap();
    f(&db);
    db.flush().unwrap();
}

#[test]
fn readmodel_check_names_a_changed_row_and_a_wrong_version() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = seed(dir.path());
    let (code, out, err) = run(&["readmodel", "rebuild", "--ledger", &ledger]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("read model rebuilt"), "{out}");
    let (code, out, err) = run(&["readmodel", "check", "--ledger", &ledger]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(&["verify", "--ledger", &ledger]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("read model: matches"), "{out}");

    tamper_model(&ledger, |db| {
        let (k, v) = db.scan_prefix(b"r").first().unwrap().unwrap();
        let mut changed = v.to_vec();
        let at = changed.len() - 2;
        changed[at] ^= 0x01;
        db.insert(&k, changed).unwrap();
    });
    let (code, out, err) = run(&["readmodel", "check", "--ledger", &ledger]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("read model: round row"), "{out}");
    let (code, out, err) = run(&["verify", "--ledger", &ledger]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("read model: round row"), "{out}");

    tamper_model(&ledger, |db| {
        db.insert(b"v", 99u32.to_be_bytes().to_vec()).unwrap();
    });
    let (code, out, err) = run(&["readmodel", "check", "--ledger", &ledger]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("version"), "{out}");

    let (code, out, err) = run(&["readmodel", "rebuild", "--ledger", &ledger]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = run(&["readmodel", "check", "--ledger", &ledger]);
    assert_eq!(code, 0, "{out}{err}");
}
