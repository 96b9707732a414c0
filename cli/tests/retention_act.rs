//! Retention removal as a signed admin act on the stream (`admin remove-day`, issue 43):
//! two `serve --node-id` nodes on one real nats-server, each on its own copy of a ledger,
//! each day sealed by each node (so their seal digests differ, their seal contents not).
//! The act, published once, removes the day on both at the same point of the log. `verify`
//! explains the removal on both; each still extends its digest taken before, and their
//! heads agree. An act naming other sealed content is refused on both; an act for a day
//! one node has not archived is applied on the other and reported NOT applied, by name.

mod common;

use common::roundledger;
use common::serve::{listening, start_env, wait_for, Serve};
use ledger::days::DayRule;
use std::path::{Path, PathBuf};

const TOKEN: &str = "retention-act-token-00000001";
const DAY_NS: i64 = 86_400_000_000_000;

fn text(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ok(args: &[&str]) -> String {
    let out = roundledger(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}{err}", text(&out));
    text(&out)
}

/// A ledger of 2 tables over three days from 00:00 UTC, unsealed: (dir, days, seal key).
fn seeded_ledger(tmp: &Path) -> (PathBuf, Vec<String>, PathBuf) {
    let dir = tmp.join("seeded");
    let d = dir.to_str().expect("utf-8");
    ok(&[
        "seed",
        "--ledger",
        d,
        "--tables",
        "2",
        "--rounds",
        "12",
        "--close",
        "--days-ago",
        "3",
        "--shift-start",
        "00:00",
    ]);
    let key = tmp.join("seal.key");
    ok(&["keygen", "--out", key.to_str().expect("utf-8")]);
    let rule = DayRule::new("00:00", "UTC").expect("rule");
    let now = ingest::system_clock_ns();
    let mut days = vec![rule.day_of(now - 3 * DAY_NS).expect("day")];
    for _ in 0..2 {
        let end = rule
            .bounds(days.last().expect("a day"))
            .expect("bounds")
            .ends_at_ns;
        days.push(rule.day_of(end).expect("day"));
    }
    (dir, days, key)
}

/// A copy of `from` as node `node`'s ledger: each day sealed there (its own signing
/// time, so its own seal digest), and days older than `older_than_days` archived.
fn node_ledger(
    root: &Path,
    from: &Path,
    node: &str,
    days: &[String],
    key: &Path,
    older_than_days: &str,
) -> PathBuf {
    let dir = root.join(node);
    std::fs::create_dir_all(&dir).expect("dir");
    let to = dir.join("ledger");
    let cp = std::process::Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(&to)
        .status()
        .expect("cp");
    assert!(cp.success());
    let l = to.to_str().expect("utf-8");
    for day in days {
        let k = key.to_str().expect("utf-8");
        ok(&[
            "day",
            "seal",
            "--ledger",
            l,
            "--day",
            day,
            "--seal-key",
            k,
            "--day-start",
            "00:00",
        ]);
    }
    ok(&[
        "archive",
        "move",
        "--ledger",
        l,
        "--older-than-days",
        older_than_days,
    ]);
    to
}

/// What `archive status` prints of the day's seal: (its digest, its content).
fn seal_of(ledger: &Path, day: &str) -> (String, String) {
    let s = ok(&[
        "archive",
        "status",
        "--ledger",
        ledger.to_str().expect("utf-8"),
    ]);
    let line = s
        .lines()
        .find(|l| l.starts_with(day))
        .expect("the day's line");
    let (rest, content) = line.rsplit_once(", content ").expect("content");
    let digest = rest.rsplit_once("seal ").expect("seal").1;
    (digest.to_string(), content.to_string())
}

/// The log's lines that mention an admin act (what a failed wait shows).
fn about_admin(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter(|l| l.contains("admin") || l.contains("ERROR"))
        .map(str::to_string)
        .collect()
}

/// Each "admin act done" line of a serve log: its outcome.
fn outcomes(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["message"] == "admin act done" || v["fields"]["message"] == "admin act done")
        .map(|v| {
            let o = &v["outcome"];
            let o = if o.is_null() {
                &v["fields"]["outcome"]
            } else {
                o
            };
            o.as_str().unwrap_or_default().to_string()
        })
        .collect()
}

fn start_node(root: &Path, node: &str, nats: &str) -> (Serve, PathBuf) {
    // Each node trusts the simulated admin, who signs the acts.
    let extra = format!("node-id = {node:?}\ntrust-simulated-admin = true\n");
    let env = [common::TEST_ONLY_SIMULATED_KEYS];
    let (serve, log) = start_env(&root.join(node), nats, TOKEN, &extra, &env);
    listening(&log);
    (serve, log)
}

/// Publishes `remove-day` for `day` naming the seal content `content`.
fn remove_day(nats: &str, admin: &Path, day: &str, content: &str) {
    let a = admin.to_str().expect("utf-8");
    let said = ok(&[
        "admin",
        "remove-day",
        "--day",
        day,
        "--seal-content",
        content,
        "--retention-days",
        "1",
        "--note",
        "case R-1",
        "--admin-key",
        a,
        "--nats",
        nats,
    ]);
    assert!(said.contains(&format!("removal of day {day}")), "{said}");
}

/// `verify`'s line for each table: its events and head.
fn heads(ledger: &Path) -> Vec<String> {
    let v = ok(&["verify", "--ledger", ledger.to_str().expect("utf-8")]);
    let heads: Vec<String> = v
        .lines()
        .filter(|l| l.contains(", head seq "))
        .map(str::to_string)
        .collect();
    assert!(!heads.is_empty(), "{v}");
    heads
}

/// The digest of a stopped ledger: (root, events).
fn digest(ledger: &Path) -> (String, u64) {
    let f = ledger.with_extension("digest.json");
    let (l, o) = (ledger.to_str().expect("utf-8"), f.to_str().expect("utf-8"));
    ok(&["digest", "--ledger", l, "--out", o]);
    let d = proofs::digest::Digest::from_json(&std::fs::read(&f).expect("read")).expect("digest");
    (d.root.to_string(), d.events)
}

#[test]
fn one_act_removes_the_day_on_both_nodes_and_a_node_that_cannot_says_so() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (seeded, days, key) = seeded_ledger(tmp.path());
    let root = tmp.path().join("nodes");
    // n1 archives the first day only; n2 the first two.
    let l1 = node_ledger(&root, &seeded, "n1", &days, &key, "2");
    let l2 = node_ledger(&root, &seeded, "n2", &days, &key, "1");
    let ((s0, d0), (s0_n2, d0_n2)) = (seal_of(&l1, &days[0]), seal_of(&l2, &days[0]));
    assert_ne!(s0, s0_n2, "each node signs its own seal");
    assert_eq!(d0, d0_n2, "what they seal is the same");
    let d1 = seal_of(&l2, &days[1]).1;
    assert_ne!(d0, d1);
    // Before the removal both digests agree; after it, each ledger still extends its own.
    assert_eq!(digest(&l1), digest(&l2), "the replicas' digests agree");
    let admin = common::simulated_admin_key(tmp.path());
    let nats = natsd::NatsServer::start().expect("nats-server");
    let url = nats.url();
    let (mut n1, log1) = start_node(&root, "n1", &url);
    let (mut n2, log2) = start_node(&root, "n2", &url);
    // First an act naming other sealed content (day 1's) for day 0: refused on both.
    remove_day(&url, &admin, &days[0], &d1);
    remove_day(&url, &admin, &days[0], &d0);
    for log in [&log1, &log2] {
        let (seen, _) = wait_for("both acts done", || {
            let o = outcomes(log);
            (o.len() == 2, (o, about_admin(log)))
        });
        assert!(seen[0].starts_with("NOT applied on this node"), "{seen:?}");
        assert!(seen[0].contains("seals other content"), "{seen:?}");
        assert!(
            seen[1].starts_with(&format!("day {} removed by retention", days[0])),
            "{seen:?}"
        );
    }
    assert!(n1.stop() && n2.stop(), "clean stops");
    let admin_hex = {
        let out = ok(&["admin", "log", "--ledger", l1.to_str().expect("utf-8")]);
        let last: serde_json::Value =
            serde_json::from_str(out.lines().last().expect("a line")).expect("json");
        last["admin"].as_str().expect("admin").to_string()
    };
    for l in [&l1, &l2] {
        // Not yet: serve keeps the removed day's read-model rows; `verify` names them.
        let stale = roundledger(&["verify", "--ledger", l.to_str().expect("utf-8")]);
        assert!(
            text(&stale).contains("not in a fresh rebuild"),
            "{}",
            text(&stale)
        );
        ok(&[
            "readmodel",
            "rebuild",
            "--ledger",
            l.to_str().expect("utf-8"),
        ]);
        let v = ok(&["verify", "--ledger", l.to_str().expect("utf-8")]);
        let f = l.with_extension("digest.json");
        let (l_s, f_s) = (l.to_str().expect("utf-8"), f.to_str().expect("utf-8"));
        let against = ok(&["verify", "--ledger", l_s, "--against", f_s]);
        assert!(against.contains("extends"), "{against}");
        let said = format!(
            "day {} removed by retention: act signed by admin key {admin_hex}",
            days[0]
        );
        assert!(v.contains(&said), "{v}");
        let s = ok(&["archive", "status", "--ledger", l.to_str().expect("utf-8")]);
        assert!(
            s.contains(&format!("{} removed by retention", days[0])),
            "{s}"
        );
        assert!(!l
            .join("archive")
            .join(format!("{}.rlday", days[0]))
            .exists());
    }
    assert_eq!(heads(&l1), heads(&l2), "the replicas' heads agree");
    day_one_only_where_archived(&root, &url, &admin, (&l1, &l2), (&days[1], &d1));
}

/// The act for a day n1 has not archived: n2 removes it, n1 reports it NOT applied.
fn day_one_only_where_archived(
    root: &Path,
    url: &str,
    admin: &Path,
    (l1, l2): (&Path, &Path),
    (day, content): (&str, &str),
) {
    let (mut n1, log1) = start_node(root, "n1", url);
    let (mut n2, log2) = start_node(root, "n2", url);
    remove_day(url, admin, day, content);
    let on = |log: &Path| {
        wait_for("the act done (a new log)", || {
            let o = outcomes(log);
            (o.len() == 1, o)
        })
    };
    let (o1, o2) = (on(&log1), on(&log2));
    assert!(o1[0].starts_with("NOT applied on this node"), "{o1:?}");
    assert!(o1[0].contains("not in this node's archive tier"), "{o1:?}");
    assert!(
        o2[0].starts_with(&format!("day {day} removed by retention")),
        "{o2:?}"
    );
    assert!(n1.stop() && n2.stop(), "clean stops");
    ok(&[
        "readmodel",
        "rebuild",
        "--ledger",
        l2.to_str().expect("utf-8"),
    ]);
    let v1 = ok(&["verify", "--ledger", l1.to_str().expect("utf-8")]);
    let v2 = ok(&["verify", "--ledger", l2.to_str().expect("utf-8")]);
    assert!(!v1.contains(&format!("day {day} removed")), "{v1}");
    assert!(
        v2.contains(&format!("day {day} removed by retention: act signed")),
        "{v2}"
    );
    let log = ok(&["admin", "log", "--ledger", l1.to_str().expect("utf-8")]);
    assert!(log.contains("NOT applied on this node"), "{log}");
}
