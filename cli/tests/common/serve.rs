//! Running `roundledger serve` as a process: started from a settings file, logging JSON,
//! its listeners read from the log, its endpoints fetched over plain HTTP/1.1.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The longest any wait polls.
pub const WAIT: Duration = Duration::from_secs(60);
/// How often a wait looks.
pub const POLL: Duration = Duration::from_millis(50);

/// A running serve, killed when dropped.
pub struct Serve(pub Child);

impl Serve {
    /// Stops it as an orchestrator would (SIGTERM) and waits: whether it exited 0.
    pub fn stop(&mut self) -> bool {
        let pid = self.0.id() as i32;
        // SAFETY: signals a child this test started and still owns.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        self.0.wait().expect("wait").success()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts serve on `<dir>/ledger` with an admin `token`, its listeners on free ports,
/// logging JSON to `<dir>/serve.log`; `extra` is more TOML for the settings file.
pub fn start(dir: &Path, nats_url: &str, token: &str, extra: &str) -> (Serve, PathBuf) {
    start_env(dir, nats_url, token, extra, &[])
}

/// `start` with these environment variables set.
pub fn start_env(
    dir: &Path,
    nats_url: &str,
    token: &str,
    extra: &str,
    env: &[(&str, &str)],
) -> (Serve, PathBuf) {
    let access = serde_json::json!({"tokens": [{"name": "ops", "role": "admin", "token": token}]});
    start_access(dir, nats_url, &access, extra, env)
}

/// `start_env` with this access file (tokens and count keys).
pub fn start_access(
    dir: &Path,
    nats_url: &str,
    access: &serde_json::Value,
    extra: &str,
    env: &[(&str, &str)],
) -> (Serve, PathBuf) {
    let tokens = dir.join("tokens.json");
    std::fs::write(&tokens, access.to_string()).expect("tokens");
    let settings = dir.join("serve.toml");
    let toml = format!(
        "ledger = {:?}\nnats = {nats_url:?}\nhttp = \"127.0.0.1:0\"\nmetrics-http = \"127.0.0.1:0\"\nconfig = {:?}\nunsigned-events = true\nlog-format = \"json\"\n{extra}",
        dir.join("ledger").display().to_string(),
        tokens.display().to_string()
    );
    std::fs::write(&settings, toml).expect("settings");
    let log = dir.join("serve.log");
    let err = std::fs::File::create(&log).expect("log");
    let child = Command::new(env!("CARGO_BIN_EXE_roundledger"))
        .arg("serve")
        .arg("--settings")
        .arg(&settings)
        .env_remove("ROUNDLEDGER_LOG")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .expect("spawning roundledger serve");
    (Serve(child), log)
}

/// One HTTP/1.1 GET: (status, body).
pub fn get(addr: &str, path: &str, token: Option<&str>) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(WAIT)).expect("timeout");
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n"
    )
    .expect("request");
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("response");
    let status = raw[9..12].parse().expect("status");
    let body = raw.split_once("\r\n\r\n").map_or("", |b| b.1).to_string();
    (status, body)
}

/// One HTTP/1.1 POST of a JSON body: (status, body).
pub fn post(addr: &str, path: &str, token: &str, body: &serde_json::Value) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(WAIT)).expect("timeout");
    let body = body.to_string();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("request");
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("response");
    let status = raw[9..12].parse().expect("status");
    let body = raw.split_once("\r\n\r\n").map_or("", |b| b.1).to_string();
    (status, body)
}

/// A scrape as `name{labels}` -> value.
pub fn scrape(addr: &str) -> BTreeMap<String, f64> {
    let (status, body) = get(addr, "/metrics", None);
    assert_eq!(status, 200, "{body}");
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').expect("sample");
            (k.to_string(), v.parse().expect("value"))
        })
        .collect()
}

/// Polls `check` until it holds, or fails with `what`.
pub fn wait_for<T: std::fmt::Debug>(what: &str, mut check: impl FnMut() -> (bool, T)) -> T {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let (done, seen) = check();
        if done {
            return seen;
        }
        assert!(std::time::Instant::now() < deadline, "{what}: {seen:?}");
        std::thread::sleep(POLL);
    }
}

/// The addresses serve logged as listening (JSON lines): (API, metrics).
pub fn listening(log: &Path) -> (String, String) {
    wait_for("serve logs its listeners", || {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let mut api = None;
        let mut metrics = None;
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let message = v["message"].as_str().unwrap_or("");
            let addr = |prefix: &str| {
                let rest = message.strip_prefix(prefix)?;
                Some(rest.trim_end_matches('/').to_string())
            };
            api = api.or_else(|| addr("HTTP API and web UI on http://"));
            metrics = metrics.or_else(|| addr("metrics on http://"));
        }
        match (api, metrics) {
            (Some(a), Some(m)) => (true, Some((a, m))),
            _ => (false, None),
        }
    })
    .expect("both")
}
