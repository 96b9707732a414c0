//! Access hygiene end to end, against `serve --no-ingest` over HTTPS on loopback: a
//! person's token from `tokens add` works and the file keeps only its hash; the count
//! room's signed count goes in with `count add` over https; plain http:// and an untrusted
//! CA are refused; the audit log names the person and the client address; `tokens revoke`
//! takes effect without a restart; a flood of bad tokens meets 429 and adds a bounded
//! number of audit entries.

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

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Seeds one table, writes the TLS files and the access file; returns the ledger.
fn setup(dir: &Path) -> String {
    let ledger = dir.join("ledger");
    let args = [
        "seed",
        "--ledger",
        path(&ledger),
        "--tables",
        "1",
        "--rounds",
        "3",
        "--close",
    ];
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{out}{err}");
    bus::generate_tls(dir).unwrap();
    let (code, _, err) = run(&["tokens", "--out", path(&dir.join("access.json"))]);
    assert_eq!(code, 0, "{err}");
    path(&ledger).to_string()
}

/// The drop box the seeded table's closing removed (the one a count may name), and a
/// minute after its removal, RFC 3339: the seeded device clock runs ahead of now.
fn removed_box(ledger: &str) -> (String, String) {
    let l = ledger::Ledger::open(ledger).unwrap();
    let t = l.reader().tables().remove(0);
    let head = l.reader().head(&t).unwrap().seq.0;
    l.reader()
        .events(&t, 1..=head)
        .filter_map(|e| {
            let (e, _) = schemas::codec::decode(&e.unwrap().bytes).unwrap();
            match e.body {
                schemas::EventBody::Finance {
                    entry: schemas::Finance::DropBoxRemoved { drop_box_id },
                } => Some((drop_box_id, e.occurred_at_ns)),
                _ => None,
            }
        })
        .last()
        .map(|(id, at_ns)| {
            let later = i128::from(at_ns) + 60_000_000_000;
            let t = jiff::Timestamp::from_nanosecond(later).unwrap();
            (id, t.to_string())
        })
        .expect("the closing removes a box")
}

/// Starts the server over TLS; returns it and its https:// URL.
fn serve(dir: &Path, ledger: &str) -> (std::process::Child, String) {
    let mut server = bin()
        .args([
            "serve",
            "--ledger",
            ledger,
            "--no-ingest",
            "--http",
            "127.0.0.1:0",
        ])
        .args(["--config", path(&dir.join("access.json"))])
        .args(["--tls-cert", path(&dir.join("server.pem"))])
        .args(["--tls-key", path(&dir.join("server-key.pem"))])
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
    (server, url)
}

/// `count list` over the server as `token`, trusting the test CA.
fn list(url: &str, token: &str, ca: &Path) -> (i32, String, String) {
    run(&[
        "count",
        "list",
        "--server",
        url,
        "--token",
        token,
        "--ca",
        path(ca),
    ])
}

fn audit_lines(dir: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join("ledger/api/audit.jsonl")).unwrap();
    text.lines()
        .map(|l| {
            let line: serde_json::Value = serde_json::from_str(l).unwrap();
            serde_json::from_str(line["entry"].as_str().unwrap()).unwrap()
        })
        .collect()
}

#[test]
fn people_tokens_https_counts_revocation_and_the_rate_limit() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = setup(dir.path());
    let access = dir.path().join("access.json");
    let (code, out, err) = run(&[
        "tokens",
        "add",
        "--config",
        path(&access),
        "--name",
        "fiona",
        "--role",
        "finance",
    ]);
    assert_eq!(code, 0, "{err}");
    let token = out.lines().last().unwrap().trim().to_string();
    let file = std::fs::read_to_string(&access).unwrap();
    assert!(
        !file.contains(&token),
        "the access file keeps only the hash"
    );
    let key = dir.path().join("counter.key");
    let (code, public, _) = run(&["keygen", "--out", path(&key)]);
    assert_eq!(code, 0);
    let (code, _, err) = run(&[
        "tokens",
        "count-key",
        "--config",
        path(&access),
        "--name",
        "team B",
        "--key",
        public.trim(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (drop_box, counted_at) = removed_box(&ledger);
    let (mut server, url) = serve(dir.path(), &ledger);
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let ca = dir.path().join("ca.pem");
    let (code, out, err) = list(&url, &token, &ca);
    assert_eq!(code, 0, "{out}{err}");
    // `seed --tables 1` plays one table of the first game.
    let table = "CSP6-01";
    let add = |drop_box: &str, extra: &[&str]| {
        let mut args = vec!["count", "add", "--server", &url, "--token", &token, "--ca"];
        args.extend([path(&ca), "--sign-key", path(&key), "--table", table]);
        args.extend([
            "--box",
            drop_box,
            "--cash",
            "1234.50",
            "--counted-by",
            "team B",
        ]);
        args.extend_from_slice(extra);
        run(&args)
    };
    let (code, out, err) = add(&drop_box, &["--counted-at", &counted_at]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("cash 1234.50"), "{out}");
    // A box never on the table, and a count dated ahead: refused, naming the rule.
    let (code, _, err) = add("TCP3-05/62343", &["--counted-at", &counted_at]);
    assert_eq!(code, 2);
    assert!(err.contains("box-not-on-table"), "{err}");
    let (code, _, err) = add(&drop_box, &["--counted-at", "2030-01-01T00:00:00Z"]);
    assert_eq!(code, 2);
    assert!(err.contains("count-in-future"), "{err}");
    let (code, out, err) = list(&url, &token, &ca);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.matches(drop_box.as_str()).count(),
        1,
        "only the bound count: {out}"
    );
    let plain = url.replacen("https://", "http://", 1);
    let (code, _, _) = list(&plain, &token, &ca);
    assert_eq!(code, 2, "plain HTTP to the TLS port fails");
    let (code, _, err) = run(&["count", "list", "--server", &url, "--token", &token]);
    assert_eq!(code, 2, "the system roots do not know the test CA: {err}");
    let seen = audit_lines(dir.path());
    let mine = seen
        .iter()
        .find(|e| e["who"] == "fiona")
        .expect("fiona audited");
    assert_eq!(mine["client"], "127.0.0.1", "{mine}");
    let (code, _, err) = run(&[
        "tokens",
        "revoke",
        "--config",
        path(&access),
        "--name",
        "fiona",
    ]);
    assert_eq!(code, 0, "{err}");
    let revoked = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        list(&url, &token, &ca).2.contains("401")
    });
    assert!(revoked, "a revoked token is refused without a restart");
    flood(dir.path(), &url, &ca);
    let _ = Command::new("kill").arg(server.id().to_string()).status();
    let _ = server.wait();
}

/// 80 requests with a wrong token: some meet 429, and the audit log grows by fewer
/// entries than requests.
fn flood(dir: &Path, url: &str, ca: &Path) {
    let before = audit_lines(dir).len();
    let mut limited = 0;
    for _ in 0..80 {
        let (_, _, err) = list(url, "wrong-token-0000000000000000", ca);
        limited += usize::from(err.contains("429"));
    }
    assert!(limited >= 10, "{limited} requests met 429");
    let added = audit_lines(dir).len() - before;
    assert!(
        added <= 80 - limited + 1,
        "{added} audit entries for 80 requests"
    );
}
