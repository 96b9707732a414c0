//! Case notes written through the three ledger nodes in turn while nodes and a NATS
//! server are killed: the API's records on an R3 stream (issue 43 item 1).
//!
//! A note answered 200 is on every node exactly once. A note answered otherwise (a node
//! down, a 503 while the stream elects a leader) is never sent again under the same
//! text, so it may be on every node or on none, never on some.

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Most notes one run writes: a bound on the writer, whatever the kills do.
const NOTES_MAX: usize = 120;
/// Pause between notes.
const NOTE_GAP: Duration = Duration::from_millis(300);
/// Longer than the API's own 30 s wait for a record to be stored and applied.
const ANSWER_WAIT: Duration = Duration::from_secs(40);

/// One note and whether a node answered 200 for it.
#[derive(Debug, Clone)]
pub struct Sent {
    pub text: String,
    pub acknowledged: bool,
}

/// The API address a node's log names last; `None` before it listens.
pub fn api_now(log: &Path) -> Option<String> {
    let text = std::fs::read_to_string(log).ok()?;
    text.lines().rev().find_map(|line| {
        let v: Value = serde_json::from_str(line).ok()?;
        let m = v["message"].as_str()?;
        let rest = m.strip_prefix("HTTP API and web UI on http://")?;
        Some(rest.trim_end_matches('/').to_string())
    })
}

/// One POST that reports a refused connection or a cut answer as `None`, never panics.
fn try_post(addr: &str, path: &str, token: &str, body: &Value) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(ANSWER_WAIT)).ok()?;
    let body = body.to_string();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok()?;
    let status = raw.get(9..12)?.parse().ok()?;
    let body = raw.split_once("\r\n\r\n").map_or("", |b| b.1).to_string();
    Some((status, body))
}

/// Writes notes to case `case` through the nodes' logs' APIs in turn until `stop`.
pub fn write_notes(
    logs: Vec<PathBuf>,
    token: &'static str,
    case: u64,
    stop: Arc<AtomicBool>,
) -> JoinHandle<Vec<Sent>> {
    std::thread::spawn(move || {
        let mut sent = Vec::new();
        for i in 0..NOTES_MAX {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let text = format!("note {i}");
            let log = &logs[i % logs.len()];
            let answer = api_now(log).and_then(|api| {
                let path = format!("/v1/cases/{case}/notes");
                try_post(&api, &path, token, &json!({ "text": text }))
            });
            match answer {
                Some((200, _)) => sent.push(Sent {
                    text,
                    acknowledged: true,
                }),
                None | Some((502..=504, _)) => sent.push(Sent {
                    text,
                    acknowledged: false,
                }),
                Some((status, body)) => panic!("{text} through {log:?}: {status} {body}"),
            }
            std::thread::sleep(NOTE_GAP);
        }
        sent
    })
}

/// The texts of a case's note entries, in the order a node serves them.
pub fn note_texts(case: &Value) -> Vec<String> {
    case["entries"]
        .as_array()
        .map(|es| {
            es.iter()
                .filter_map(|e| e["text"].as_str())
                .filter(|t| t.starts_with("note "))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Checks what every node serves of the case against what was sent.
pub fn check(cases: &[Value], sent: &[Sent]) {
    let acknowledged = sent.iter().filter(|s| s.acknowledged).count();
    eprintln!("notes: {} sent, {acknowledged} answered 200", sent.len());
    assert!(
        acknowledged >= sent.len() / 2 && acknowledged > 0,
        "most notes are taken while one part is down: {sent:?}"
    );
    let first = &cases[0];
    for c in cases {
        assert_eq!(c, first, "every node serves the same case, entry for entry");
    }
    let texts = note_texts(first);
    for s in sent {
        let n = texts.iter().filter(|t| **t == s.text).count();
        match s.acknowledged {
            true => assert_eq!(n, 1, "{} was answered 200: once on every node", s.text),
            false => assert!(n <= 1, "{} at most once: {texts:?}", s.text),
        }
    }
    assert!(texts.iter().all(|t| sent.iter().any(|s| s.text == *t)));
}
