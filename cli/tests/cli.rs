//! The `roundledger` binary end to end: the demo against a real nats-server (and the web
//! UI it serves with the tokens it prints), then every read command on the ledger it kept,
//! and the pay calculator on the worked examples (rules/tests/data/examples.md).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod common;
use common::roundledger;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn examples() -> Vec<serde_json::Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../rules/tests/data/examples.md");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.split("```json")
        .skip(1)
        .map(|chunk| serde_json::from_str(chunk.split("```").next().unwrap().trim()).unwrap())
        .collect()
}

#[test]
fn settle_prints_the_examples_net_results() {
    let dir = tempfile::tempdir().unwrap();
    let all = examples();
    assert!(all.len() >= 14, "EXAMPLES.md has {} examples", all.len());
    for (i, ex) in all.iter().enumerate() {
        let file = dir.path().join(format!("ex{i}.json"));
        std::fs::write(&file, ex.to_string()).unwrap();
        let out = roundledger(&["settle", "--net", file.to_str().unwrap()]);
        assert!(out.status.success(), "example {i}");
        let net: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_net(i, ex, &net);
    }
}

#[test]
fn settle_names_the_bad_field() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.json");
    std::fs::write(&file, r#"{"game":"CSP6","dealer":["Ah","Qd","9c","6s","3h"],"boxes":[{"box":1,"cards":["7c","7d","Kh","5s","1d"],"decision":"play","bets":{"ante":1000}}]}"#).unwrap();
    let out = roundledger(&["settle", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("boxes[0].cards"), "{err}");
}

/// Asserts that `net` (box -> line -> amount) holds the example's expected net.
fn assert_net(i: usize, ex: &serde_json::Value, net: &serde_json::Value) {
    for (bx, lines) in ex["net"].as_object().unwrap() {
        for (line, want) in lines.as_object().unwrap() {
            let got = net[bx].get(line).and_then(|v| v.as_i64()).unwrap_or(0);
            assert_eq!(got, want.as_i64().unwrap(), "example {i} box {bx} {line}");
        }
    }
}

/// Runs `settle --ndjson [--net]` over `lines`: (exit code, one JSON value a line).
fn settle_ndjson(lines: &[String], net: bool) -> (Option<i32>, Vec<serde_json::Value>) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rounds.ndjson");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let mut args = vec!["settle", "--ndjson", file.to_str().unwrap()];
    if net {
        args.push("--net");
    }
    let out = roundledger(&args);
    let results = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (out.status.code(), results)
}

const CSP6_ROUND: &str = r#"{"game":"CSP6","dealer":["Ah","Qd","9c","6s","3h"],"boxes":[{"box":1,"cards":["7c","7d","Kh","5s","2d"],"decision":"play","bets":{"ante":1000,"bet":2000}}]}"#;

#[test]
fn settle_ndjson_gives_each_examples_net_in_order() {
    let all = examples();
    let lines: Vec<String> = all.iter().map(|ex| ex["round"].to_string()).collect();
    let (code, results) = settle_ndjson(&lines, true);
    assert_eq!(code, Some(0));
    assert_eq!(results.len(), all.len());
    for (i, (ex, got)) in all.iter().zip(&results).enumerate() {
        assert_eq!(got["line"], i + 1);
        assert_net(i, ex, &got["net"]);
    }
}

#[test]
fn settle_ndjson_reports_a_bad_line_and_settles_the_rest() {
    let all = examples();
    let mut lines: Vec<String> = all.iter().map(|ex| ex["round"].to_string()).collect();
    let bad = CSP6_ROUND.replace(r#""bet":2000"#, r#""bet":2000,"antee":5"#);
    lines.insert(3, bad);
    let (code, results) = settle_ndjson(&lines, true);
    assert_eq!(code, Some(1), "a refused line exits 1");
    assert_eq!(results.len(), lines.len());
    assert_eq!(results[3]["line"], 4);
    assert_eq!(results[3]["error"]["field"], "boxes[0].bets.antee");
    let message = results[3]["error"]["message"].as_str().unwrap();
    assert!(message.contains("unknown bet kind `antee`"), "{message}");
    for (i, ex) in all.iter().enumerate().skip(3) {
        assert_eq!(results[i + 1]["line"], i + 2);
        assert_net(i, ex, &results[i + 1]["net"]);
    }
}

#[test]
fn settle_refuses_an_overflowing_stake() {
    // i64::MAX / 2: today's arithmetic would saturate the BET's win at i64::MAX.
    let huge = CSP6_ROUND.replace(r#""ante":1000"#, r#""ante":4611686018427387903"#);
    let (code, results) = settle_ndjson(&[huge.clone(), CSP6_ROUND.into()], false);
    assert_eq!(code, Some(1));
    assert_eq!(results[0]["error"]["field"], "boxes[0].bets.ante");
    let message = results[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("over the input maximum"), "{message}");
    assert_eq!(
        results[1]["settlement"]["boxes"][0]["lines"][0]["net"],
        1000
    );
    // The single-round form refuses it too, naming the field.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("huge.json");
    std::fs::write(&file, &huge).unwrap();
    let out = roundledger(&["settle", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("boxes[0].bets.ante"), "{err}");
}

/// Issue 47's first input: it panicked (exit 101) and ended a batch.
const SSP4_EMPTY_POOL_MAGIC: &str = r#"{"game":"SSP4","dealer":["2c","2h","2s","3c","3d"],"boxes":[{"box":1,"cards":["8h","6h","5h","4h","7h"],"bets":{"ante":1000,"bet":2000,"jackpot_player":1},"decision":"play"}],"pool":0,"reset":0,"credit_value":100,"magic_card":"4h","lucky_box":null,"lucky_dealer":false}"#;

#[test]
fn settle_ndjson_answers_every_line_in_order() {
    let lucky_empty = SSP4_EMPTY_POOL_MAGIC.replace(r#""lucky_box":null"#, r#""lucky_box":6"#);
    let lines = [
        format!("\u{feff}{CSP6_ROUND}"),
        SSP4_EMPTY_POOL_MAGIC.to_string(),
        String::new(),
        "   ".to_string(),
        "hello".to_string(),
        lucky_empty,
        CSP6_ROUND.to_string(),
    ];
    let (code, results) = settle_ndjson(&lines, true);
    assert_eq!(code, Some(1), "blank and non-JSON lines are refused");
    assert_eq!(results.len(), lines.len(), "one output line per input line");
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["line"], i + 1);
    }
    // A byte-order mark before line 1 is skipped (CSP6 §3.13: the dealer does not qualify).
    assert_eq!(results[0]["net"]["1"]["ante"], 1000);
    // SSP4 §4.2 pays 0.00 from the empty pool, §4.3 the Magic Card 5 to 1 on 1.00.
    assert_eq!(results[1]["net"]["1"]["jackpot_player"], 500);
    assert_eq!(results[1]["net"]["1"]["bet"], 100_000);
    for blank in [2, 3] {
        let message = results[blank]["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("blank line"), "{message}");
    }
    let message = results[4]["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("not JSON"), "{message}");
    // SSP4 §4.4: a Lucky Player on an empty area pays nobody; box 1 is unchanged.
    assert_eq!(results[5]["net"]["1"]["jackpot_player"], 500);
    assert_eq!(results[6]["net"]["1"]["ante"], 1000);
}

#[test]
fn settle_accepts_an_ssp4_lucky_box_on_an_empty_area_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lucky.json");
    let round = SSP4_EMPTY_POOL_MAGIC.replace(r#""lucky_box":null"#, r#""lucky_box":6"#);
    std::fs::write(&file, format!("\u{feff}{round}")).unwrap();
    let out = roundledger(&["settle", file.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["notes"][0]["box"], 6);
    assert_eq!(s["notes"][0]["clause"], "SSP4 4.4");
}

#[test]
fn settle_refuses_a_negative_pool_and_a_lucky_box_outside_ssp4() {
    let pool = CSP6_ROUND.replace(r#""game":"CSP6","#, r#""game":"CSP6","pool":-1,"#);
    let lucky = CSP6_ROUND.replace(r#""game":"CSP6","#, r#""game":"CSP6","lucky_box":4,"#);
    let (code, results) = settle_ndjson(&[pool, lucky], false);
    assert_eq!(code, Some(1));
    assert_eq!(results[0]["error"]["field"], "pool");
    assert_eq!(results[1]["error"]["field"], "lucky_box");
}

/// CSP6 §5.15: a hand of the wrong card count is void, and `--net` says so.
#[test]
fn settle_net_reports_a_wrong_card_count_hand_void() {
    let four = CSP6_ROUND.replace(r#","2d"]"#, "]");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("four.json");
    std::fs::write(&file, &four).unwrap();
    let out = roundledger(&["settle", "--net", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let net: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(net["1"]["ante"], 0);
    assert_eq!(net["void_hands"][0]["box"], 1);
    assert_eq!(net["void_hands"][0]["clause"], "CSP6 5.15");
    let (code, results) = settle_ndjson(&[four, CSP6_ROUND.into()], true);
    assert_eq!(code, Some(0));
    assert_eq!(results[0]["void_hands"][0]["clause"], "CSP6 5.15");
    assert!(results[1].get("void_hands").is_none(), "{}", results[1]);
}

#[test]
fn settle_locates_errors_in_the_users_text() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.json");
    let text = "{\n  \"game\": \"CSP6\",\n  \"dealer\": [\"Ah\", \"Qd\", \"9c\", \"6s\", \"3h\"],\n  \"boxes\": [{\"box\": 1, \"cards\": [\"7c\", \"7d\", \"Kh\", \"5s\", \"2x\"],\n    \"bets\": {\"ante\": 1000}}]\n}\n";
    std::fs::write(&file, text).unwrap();
    let out = roundledger(&["settle", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("boxes[0].cards[4]"), "{err}");
    assert!(err.contains("at line 4 column"), "{err}");
}

/// `GET path` with a bearer token: (status, body).
fn http_get(addr: &str, path: &str, token: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    let body = out
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

#[test]
fn demo_then_audit_replay_verify_export() {
    let dir = tempfile::tempdir().unwrap();
    let ledger: PathBuf = dir.path().join("ledger");
    let l = ledger.to_str().unwrap();
    // The demo with --serve: it prints the web UI's address and a token per role, and
    // after the audit keeps serving the ledger until SIGTERM.
    let mut demo = Command::new(env!("CARGO_BIN_EXE_roundledger"))
        .args([
            "demo",
            "--tables",
            "5",
            "--rounds",
            "40",
            "--seed",
            "7",
            "--payout-errors",
            "0.1",
            "--irregularities",
            "0",
            "--keep",
            l,
            "--http",
            "127.0.0.1:0",
            "--serve",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(demo.stdout.take().unwrap()).lines();
    // Ends the demo if an assertion fails while it serves.
    struct Kill(u32);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = Command::new("kill").arg(self.0.to_string()).status();
        }
    }
    let kill = Kill(demo.id());
    let mut text = String::new();
    let serving = loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("the demo ended without serving: {text}"))
            .unwrap();
        text.push_str(&line);
        text.push('\n');
        if let Some(rest) = line.strip_prefix("serving the web UI on ") {
            break rest.split('/').nth(2).unwrap().to_string();
        }
    };
    eprintln!("{text}");
    assert!(
        text.contains("web UI and API on http://127.0.0.1:"),
        "{text}"
    );
    // Finance: every injected finance error is in the report with its cause and amount.
    let finance = text
        .lines()
        .find(|l| l.starts_with("injected finance errors: "))
        .unwrap_or_else(|| panic!("no finance summary: {text}"));
    let figures: Vec<u64> = finance
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .take(2)
        .collect();
    assert!(figures[0] > 0 && figures[0] == figures[1], "{finance}");
    // The printed tokens are the ones in <ledger>/tokens.json, and they work.
    let printed = |role: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(role).map(|t| t.trim().to_string()))
            .unwrap_or_else(|| panic!("no {role} token printed: {text}"))
    };
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(ledger.join("tokens.json")).unwrap()).unwrap();
    for role in ["surveillance", "finance", "admin"] {
        assert!(config["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["role"] == role && t["token"] == printed(role).as_str()));
    }
    let (status, body) = http_get(&serving, "/v1/whoami", &printed("surveillance"));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"surveillance\""), "{body}");
    // Every round is listed once the server's index has read the ledger.
    let mut body = String::new();
    for _ in 0..300 {
        let (status, b) = http_get(&serving, "/v1/rounds?limit=1", &printed("surveillance"));
        assert_eq!(status, 200, "{b}");
        body = b;
        if body.contains("\"total\":200") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        body.contains("\"total\":200"),
        "every round is listed: {body}"
    );
    assert_eq!(http_get(&serving, "/v1/rounds", &printed("finance")).0, 403);
    assert_eq!(
        http_get(&serving, "/v1/audit?limit=1", &printed("admin")).0,
        200
    );
    assert_eq!(
        http_get(&serving, "/v1/whoami", "not-a-token-0000000000").0,
        401
    );
    let killed = Command::new("kill")
        .args(["-TERM", &demo.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    for line in lines {
        text.push_str(&line.unwrap());
        text.push('\n');
    }
    let status = demo.wait().unwrap();
    std::mem::forget(kill);
    assert_eq!(
        status.code(),
        Some(0),
        "the demo finds every injected fault and nothing else: {text}"
    );
    assert!(text.contains("web UI stopped"), "{text}");
    assert!(text.contains("chains verified: 5 tables"), "{text}");
    assert!(
        text.contains("injected but not flagged: 0; flagged but not injected: 0"),
        "{text}"
    );

    // audit: disputes exist (payout errors at 10% of 200 rounds), so exit 1.
    let out = roundledger(&["audit", "--ledger", l, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["rounds"], 200);
    let disputed = summary["disputed_rounds"].as_array().unwrap();
    assert!(!disputed.is_empty());

    // replay the first disputed round: the settlement table marks the dispute.
    let table = disputed[0]["table"].as_str().unwrap().to_string();
    let round = disputed[0]["round"].as_u64().unwrap().to_string();
    let out = roundledger(&[
        "replay", "--ledger", l, "--table", &table, "--round", &round, "--step",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("<== DISPUTE"));
    assert!(stdout(&out).contains("verdict DISPUTED"));

    // verify the ledger, export a table, verify the export without the ledger.
    let out = roundledger(&["verify", "--ledger", l]);
    assert_eq!(out.status.code(), Some(0));
    let export = dir.path().join("export.jsonl");
    let e = export.to_str().unwrap();
    let out = roundledger(&["export", "--ledger", l, "--table", &table, "--out", e]);
    assert!(out.status.success());
    let out = roundledger(&["verify", "--export", e]);
    assert_eq!(out.status.code(), Some(0));
    // The export replays like the ledger.
    let out = roundledger(&["audit", "--export", e, "--json"]);
    let from_export: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(from_export["disputed_rounds"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["round"].as_u64().unwrap().to_string() == round));
    // One read path: a round replays from the export exactly as from the ledger.
    for form in [&["--step"][..], &["--json", "--step"][..]] {
        let mut from_ledger = vec![
            "replay", "--ledger", l, "--table", &table, "--round", &round,
        ];
        let mut from_file = vec![
            "replay", "--export", e, "--table", &table, "--round", &round,
        ];
        from_ledger.extend(form);
        from_file.extend(form);
        let (a, b) = (roundledger(&from_ledger), roundledger(&from_file));
        assert_eq!(a.status.code(), Some(1));
        assert_eq!(stdout(&a), stdout(&b), "replay {form:?}: export vs ledger");
    }

    // A flipped byte in the export is caught.
    let text = std::fs::read_to_string(&export).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let victim = &mut lines[5];
    let pos = victim.rfind("\"bytes\":\"").unwrap() + 20;
    let flipped = if &victim[pos..pos + 1] == "0" {
        "1"
    } else {
        "0"
    };
    victim.replace_range(pos..pos + 1, flipped);
    std::fs::write(&export, lines.join("\n") + "\n").unwrap();
    let out = roundledger(&["verify", "--export", e]);
    assert_eq!(out.status.code(), Some(1));
}

/// `bench-ingest` on a small count: every round ingests every message (the bench waits
/// until the durable heads cover them all) with the controllers' signed checkpoints
/// verified, and every event of the latency phase is timed from its publish to a head that
/// covers it.
/// The bench on a secured bus (TLS, a credential per principal) with signed events: every
/// event is stored (the bench waits for every table's head) and reported as such.
#[test]
fn bench_ingest_runs_on_a_secured_bus_with_signed_events() {
    let out = common::roundledger(&[
        "bench-ingest",
        "--messages",
        "1000",
        "--rounds",
        "1",
        "--secured",
        "--signed-events",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["secured_bus"], true);
    assert_eq!(report["signed_events"], true);
    assert_eq!(report["events"], 1000);
    assert!(report["latency_events"].as_u64().is_some_and(|n| n > 0));
}

#[test]
fn bench_ingest_reports_each_round() {
    let out = common::roundledger(&[
        "bench-ingest",
        "--messages",
        "3000",
        "--batch",
        "256",
        "--rounds",
        "2",
    ]);
    assert!(out.status.success());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    // 3,000 events over 16 tables is 187 or 188 a table: a signed checkpoint after each
    // table's 45th, 90th, 135th and 180th event, all of which ingest verified and kept
    // (the bench fails otherwise).
    assert_eq!(report["events"], 3000);
    assert_eq!(report["checkpoints"], 16 * 4);
    assert_eq!(report["messages"], 3000 + 16 * 4);
    assert_eq!(report["batch_len_max"], 256);
    let rounds = report["rounds"].as_array().expect("rounds");
    assert_eq!(rounds.len(), 2);
    for round in rounds {
        for figure in ["raw_rate", "ingest_rate", "ratio"] {
            let v = round[figure].as_f64().expect(figure);
            assert!(v.is_finite() && v > 0.0, "{figure} = {v}");
        }
        // CPU per message of each phase, this process's and the server's (the CLI started
        // it, so its pid is known). Ticks are 10 ms, so a short phase may read 0.
        for phase in ["raw_cpu", "ingest_cpu"] {
            for side in ["client_us", "server_us"] {
                let v = round[phase][side]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{phase}.{side}: {round}"));
                assert!(v.is_finite() && v >= 0.0, "{phase}.{side} = {v}");
            }
        }
    }
    assert!(report["cores"].as_u64().expect("cores") >= 1);
    assert!(report["ingest_cpu"]["server_us"].is_f64(), "{report}");
    assert_eq!(report["latency_events"], 3000);
    let p50 = report["latency_p50_us"].as_u64().expect("p50");
    let p99 = report["latency_p99_us"].as_u64().expect("p99");
    assert!(0 < p50 && p50 <= p99, "p50 {p50} us, p99 {p99} us");
}

/// `audit --from/--to` on a ledger reads the rounds in range from their replay windows;
/// it finds what the full replay of an export, filtered the same way, finds, reading
/// fewer events.
#[test]
fn audit_of_a_time_range_reads_only_its_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let l = dir.path().join("ledger");
    let ls = l.to_str().unwrap();
    let out = roundledger(&[
        "seed",
        "--ledger",
        ls,
        "--tables",
        "3",
        "--rounds",
        "60",
        "--close",
        "--payout-errors",
        "0.2",
    ]);
    assert!(out.status.success());
    let (from, to) = {
        let ledger = ledger::Ledger::open(&l).unwrap();
        let t = ledger.reader().tables().remove(0);
        let rounds = ledger.reader().rounds(&t).unwrap();
        (
            rounds[20].first_occurred_at_ns,
            rounds[40].first_occurred_at_ns,
        )
    };
    let export = dir.path().join("all.jsonl");
    let e = export.to_str().unwrap();
    assert!(roundledger(&["export", "--ledger", ls, "--out", e])
        .status
        .success());
    let (f, t) = (from.to_string(), to.to_string());
    let summary = |src: &[&str]| -> serde_json::Value {
        let mut args = vec!["audit", "--json", "--from", &f, "--to", &t];
        args.extend(src);
        serde_json::from_slice(&roundledger(&args).stdout).unwrap()
    };
    let (windows, full) = (summary(&["--ledger", ls]), summary(&["--export", e]));
    for field in [
        "rounds",
        "verdicts",
        "findings_by_code",
        "disputed_rounds",
        "net_difference",
    ] {
        assert_eq!(windows[field], full[field], "{field}");
    }
    assert!(windows["rounds"].as_u64().unwrap() >= 3 * 15, "{windows}");
    let (read, all) = (
        windows["events"].as_u64().unwrap(),
        full["events"].as_u64().unwrap(),
    );
    assert!(read * 2 < all, "{read} events read of {all}");
}

/// Issue 46: a wall time on the command line is read in `--time-zone`, else the
/// property's zone (the ledger's kept day rule: UTC, as `seed` keeps it), else `TZ`. The
/// same window typed as wall times of the zone used audits the rounds its nanoseconds do;
/// read in another zone it is hours off and finds others.
#[test]
fn audit_reads_wall_times_in_the_flag_else_the_ledgers_zone_else_tz() {
    let dir = tempfile::tempdir().unwrap();
    let l = dir.path().join("ledger");
    let ls = l.to_str().unwrap();
    let out = roundledger(&[
        "seed", "--ledger", ls, "--tables", "2", "--rounds", "30", "--close",
    ]);
    assert!(out.status.success());
    let (from, to) = {
        let ledger = ledger::Ledger::open(&l).unwrap();
        let t = ledger.reader().tables().remove(0);
        let rounds = ledger.reader().rounds(&t).unwrap();
        (
            rounds[5].first_occurred_at_ns,
            rounds[20].first_occurred_at_ns,
        )
    };
    let wall = |ns: i64, zone: &str| {
        jiff::Timestamp::from_nanosecond(i128::from(ns))
            .unwrap()
            .to_zoned(jiff::tz::TimeZone::get(zone).unwrap())
            .strftime("%Y-%m-%d %H:%M:%S%.9f")
            .to_string()
    };
    let (fw, tw) = (wall(from, "Asia/Macau"), wall(to, "Asia/Macau"));
    let (fu, tu) = (wall(from, "UTC"), wall(to, "UTC"));
    let rounds = |args: &[&str], tz: Option<&str>| -> u64 {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_roundledger"));
        c.args(["audit", "--json", "--ledger", ls])
            .args(args)
            .env_remove("TZ");
        if let Some(tz) = tz {
            c.env("TZ", tz);
        }
        let out = c.output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
        v["rounds"].as_u64().unwrap()
    };
    let (f, t) = (from.to_string(), to.to_string());
    let want = rounds(&["--from", &f, "--to", &t], None);
    assert!(want >= 2 * 10, "{want}");
    let typed = ["--from", fw.as_str(), "--to", tw.as_str()];
    let typed_utc = ["--from", fu.as_str(), "--to", tu.as_str()];
    assert_eq!(
        rounds(&typed_utc, Some("Asia/Macau")),
        want,
        "the ledger's zone wins over TZ"
    );
    let flagged = [&typed[..], &["--time-zone", "Asia/Macau"]].concat();
    assert_eq!(
        rounds(&flagged, Some("America/Los_Angeles")),
        want,
        "--time-zone wins over the ledger's zone and TZ"
    );
    assert_ne!(
        rounds(&typed, Some("Asia/Macau")),
        want,
        "Macau wall times read in the ledger's UTC: eight hours off"
    );
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_roundledger"))
        .args(["audit", "--ledger", ls])
        .args(typed)
        .env("TZ", "Nowhere/Atlantis")
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("TZ="),
        "a bad TZ is named"
    );
}

fn roundledger_jackpots_header() -> &'static str {
    "pool,day,opening,contributions,hits,paid,resets,closing,displayed,difference,mismatches"
}

/// `report` on a ledger directory: JSON, CSV and the table under the day rule the ledger
/// keeps, other shifts refused, boxes never counted read as not counted, exit 1 with
/// variances.
#[test]
fn report_reads_the_model_under_the_ledgers_day_rule() {
    let dir = tempfile::tempdir().unwrap();
    let l = dir.path().join("ledger");
    let ls = l.to_str().unwrap();
    let seeded = roundledger(&[
        "seed",
        "--ledger",
        ls,
        "--tables",
        "3",
        "--rounds",
        "40",
        "--close",
        "--payout-errors",
        "0.2",
    ]);
    assert!(seeded.status.success());
    let day = {
        let ledger = ledger::Ledger::open(&l).unwrap();
        let t = ledger.reader().tables().remove(0);
        let at = ledger.reader().rounds(&t).unwrap()[0].first_occurred_at_ns;
        ledger::days::DayRule::new("06:00", "UTC")
            .unwrap()
            .day_of(at)
            .unwrap()
    };
    let out = roundledger(&["report", "--ledger", ls, "--day", &day, "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(r["total"]["rounds"].as_u64().unwrap() > 0, "{r}");
    assert!(r["total"]["drop"].is_null(), "not counted, never zero");
    let csv = roundledger(&[
        "report",
        "--ledger",
        ls,
        "--day",
        &day,
        "--csv",
        "--group-by",
        "game",
    ]);
    assert!(
        stdout(&csv).starts_with(readside::finance::CSV_HEADER),
        "{}",
        stdout(&csv)
    );
    let shift = format!("{day}/1");
    let other = roundledger(&[
        "report",
        "--ledger",
        ls,
        "--shift",
        &shift,
        "--shifts",
        "06:00,18:00",
    ]);
    // Jackpot liability as CSV: a pool whose displays all matched shows no difference.
    let jp = roundledger(&[
        "report",
        "--ledger",
        ls,
        "--jackpots",
        "--day",
        &day,
        "--csv",
    ]);
    let text = stdout(&jp);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(roundledger_jackpots_header()), "{text}");
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(!rows.is_empty(), "{text}");
    for r in &rows {
        if r[10] == "0" {
            assert!(r[9] == "0.00" || r[9].is_empty(), "{text}");
        }
    }
    let off = rows.iter().any(|r| !(r[9] == "0.00" || r[9].is_empty()));
    assert_eq!(jp.status.code(), Some(i32::from(off)), "{text}");
    // An unknown table and a day not begun are errors, never all-zero reports.
    let nope = roundledger(&[
        "report", "--ledger", ls, "--day", &day, "--table", "NOPE-99",
    ]);
    assert_eq!(nope.status.code(), Some(2), "{}", stdout(&nope));
    assert!(String::from_utf8_lossy(&nope.stderr).contains("no table NOPE-99"));
    let later = roundledger(&["report", "--ledger", ls, "--day", "2099-01-01"]);
    assert_eq!(later.status.code(), Some(2), "{}", stdout(&later));
    assert!(String::from_utf8_lossy(&later.stderr).contains("has not begun"));
    let before = roundledger(&["report", "--ledger", ls, "--day", "2020-01-01"]);
    assert_eq!(before.status.code(), Some(0));
    assert!(
        stdout(&before).contains("no table played in day 2020-01-01"),
        "{}",
        stdout(&before)
    );
    // The seeded ledger keeps its floor's day rule: a report never splits days another way.
    let err = String::from_utf8_lossy(&other.stderr);
    assert_eq!(other.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the ledger's day rule is `06:00 UTC 06:00,14:00,22:00`"),
        "{err}"
    );
    assert!(stdout(&other).is_empty(), "{}", stdout(&other));
}
