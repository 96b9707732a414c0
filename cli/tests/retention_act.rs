//! Retention removal as a signed admin act on the stream (`admin remove-day`, issue 43):
//! two `serve --node-id` nodes on one real nats-server, each on its own copy of a ledger,
//! each day sealed by each node (so their seal digests differ, their seal contents not).
//! The act, published once, removes the day on both at the same point of the log, with
//! its Parquet files, and each serve rebuilds its read model: `verify` passes with no
//! `readmodel rebuild`, the removed round answers 410 Gone, `report --day` refuses the
//! day. One node takes the act while its read model is still being built; the other is
//! restarted right after it. An act naming other sealed content is refused on both. An
//! act for a day one node has not archived stays pending there, across a restart, and is
//! applied when that node archives the day: then both nodes agree.

mod common;

use common::roundledger;
use common::serve::{get, listening, start_env, wait_for, Serve};
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

/// A ledger of 2 tables whose rounds all lie in the first of three days from 00:00 UTC,
/// unsealed: (dir, days, seal key).
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
        .filter(|l| l.contains("admin") || l.contains("ERROR") || l.contains("read model"))
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

/// A running node: its process, its log and its API address.
struct Node {
    serve: Serve,
    log: PathBuf,
    api: String,
}

fn start_node(root: &Path, node: &str, nats: &str) -> Node {
    // Each node trusts the simulated admin, who signs the acts.
    let extra = format!("node-id = {node:?}\ntrust-simulated-admin = true\n");
    let env = [common::TEST_ONLY_SIMULATED_KEYS];
    let (serve, log) = start_env(&root.join(node), nats, TOKEN, &extra, &env);
    let (api, _) = listening(&log);
    Node { serve, log, api }
}

/// `/v1/status` of a node: (events stored, events indexed, rounds indexed, tables the
/// model has not indexed to their head).
fn status(api: &str) -> (u64, u64, u64, u64) {
    let (code, body) = get(api, "/v1/status", Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    let n = |k: &str| v[k].as_u64().expect("a count");
    let keys = ["events_stored", "events_indexed", "rounds_indexed"];
    (n(keys[0]), n(keys[1]), n(keys[2]), n("tables_indexing"))
}

/// Waits until the node's read model holds every stored event; its rounds.
fn caught_up(api: &str) -> u64 {
    let (_, _, rounds, _) = wait_for("the read model caught up", || {
        let s = status(api);
        (s.2 > 0 && s.0 == s.1 && s.3 == 0, s)
    });
    rounds
}

/// Waits until the node's read model is indexed to every head, with every removal seen
/// (a ledger with a removed day stores more events than it indexes).
fn current(api: &str) -> (u64, u64, u64, u64) {
    wait_for("the read model current", || {
        let s = status(api);
        (s.3 == 0, s)
    })
}

/// The day's Parquet files beside its day file.
fn parquet_of(ledger: &Path, day: &str) -> Vec<String> {
    let dir = ledger.join("archive");
    let mut out: Vec<String> = std::fs::read_dir(&dir)
        .expect("the archive dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(&format!("{day}.")) && n.ends_with(".parquet"))
        .collect();
    out.sort();
    out
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
    for l in [&l1, &l2] {
        assert!(
            !parquet_of(l, &days[0]).is_empty(),
            "archive move wrote them"
        );
    }
    let admin = common::simulated_admin_key(tmp.path());
    let nats = natsd::NatsServer::start().expect("nats-server");
    let url = nats.url();
    // n2 alone first: its read model holds the day when the acts come.
    let mut n2 = start_node(&root, "n2", &url);
    let rounds_before = caught_up(&n2.api);
    // First an act naming other sealed content (day 1's) for day 0: refused on both.
    remove_day(&url, &admin, &days[0], &d1);
    remove_day(&url, &admin, &days[0], &d0);
    let both_done = |log: &Path| {
        let (seen, _) = wait_for("both acts done", || {
            let o = outcomes(log);
            (o.len() == 2, (o, about_admin(log)))
        });
        assert!(seen[0].starts_with("NOT applied on this node"), "{seen:?}");
        assert!(seen[0].contains("seals other content"), "{seen:?}");
        let removed = format!("day {} removed by retention", days[0]);
        assert!(seen[1].starts_with(&removed), "{seen:?}");
    };
    both_done(&n2.log);
    // n2 stops right after the act, its read model maybe not rebuilt yet; n1 starts with
    // both acts waiting, so it takes them while its read model is still being built.
    assert!(n2.serve.stop(), "a clean stop");
    let mut n1 = start_node(&root, "n1", &url);
    both_done(&n1.log);
    let mut n2 = start_node(&root, "n2", &url);
    for n in [&n1, &n2] {
        removal_served(n, rounds_before, &days[0]);
    }
    for l in [&l1, &l2] {
        assert_eq!(
            parquet_of(l, &days[0]),
            Vec::<String>::new(),
            "removed with the day"
        );
    }
    assert!(
        !parquet_of(&l2, &days[1]).is_empty(),
        "another day's files stay"
    );
    assert!(n1.serve.stop() && n2.serve.stop(), "clean stops");
    for l in [&l1, &l2] {
        removal_verified(l, &days[0]);
    }
    assert_eq!(heads(&l1), heads(&l2), "the replicas' heads agree");
    day_one_pending_where_not_archived(&root, &url, &admin, (&l1, &l2), (&days[1], &d1, &d0));
}

/// What a running node serves once it took the removal of the seeded ledger's first
/// day, which holds every round: no round, and round 1 answers 410 Gone naming the day.
fn removal_served(n: &Node, rounds_before: u64, day: &str) {
    let rounds = current(&n.api);
    assert_eq!(rounds.2, 0, "{rounds:?} of {rounds_before}");
    let (code, body) = get(&n.api, "/v1/tables", Some(TOKEN));
    assert_eq!(code, 200, "{body}");
    let tables: serde_json::Value = serde_json::from_str(&body).expect("json");
    let table = tables[0]["table"].as_str().expect("a table");
    let path = format!("/v1/tables/{table}/rounds/1");
    let (code, body) = get(&n.api, &path, Some(TOKEN));
    assert_eq!(code, 410, "{path}: {body} ({rounds:?})");
    assert!(
        body.contains(&format!("day {day} were removed by retention")),
        "{body}"
    );
}

/// A stopped node after the removal, with no `readmodel rebuild`: `verify` passes and
/// explains the removal, the ledger extends its digest taken before, `report --day`
/// refuses the day by name.
fn removal_verified(l: &Path, day: &str) {
    let l_s = l.to_str().expect("utf-8");
    let v = ok(&["verify", "--ledger", l_s]);
    assert!(v.contains("read model: matches a fresh rebuild"), "{v}");
    assert!(
        v.contains(&format!(
            "day {day} removed by retention: act signed by admin key "
        )),
        "{v}"
    );
    let f = l.with_extension("digest.json");
    let against = ok(&[
        "verify",
        "--ledger",
        l_s,
        "--against",
        f.to_str().expect("utf-8"),
    ]);
    assert!(against.contains("extends"), "{against}");
    let s = ok(&["archive", "status", "--ledger", l_s]);
    assert!(s.contains(&format!("{day} removed by retention")), "{s}");
    assert!(!l.join("archive").join(format!("{day}.rlday")).exists());
    let report = roundledger(&["report", "--ledger", l_s, "--day", day]);
    let said = String::from_utf8_lossy(&report.stderr);
    assert_eq!(report.status.code(), Some(2), "{}{said}", text(&report));
    assert!(
        said.contains(&format!("day {day} was removed by retention")),
        "{said}"
    );
    assert!(
        !text(&report).contains("win"),
        "no figures: {}",
        text(&report)
    );
}

/// Acts for a day n1 has not archived: n2 refuses the first (other content) and applies
/// the second; n1 keeps both pending, across a restart, until it archives the day. Then
/// it refuses the first for good and applies the second, at the act's stream time.
fn day_one_pending_where_not_archived(
    root: &Path,
    url: &str,
    admin: &Path,
    (l1, l2): (&Path, &Path),
    (day, content, other): (&str, &str, &str),
) {
    let mut n1 = start_node(root, "n1", url);
    let mut n2 = start_node(root, "n2", url);
    remove_day(url, admin, day, other);
    remove_day(url, admin, day, content);
    let on = |log: &Path| {
        wait_for("both acts done (a new log)", || {
            let o = outcomes(log);
            (o.len() == 2, o)
        })
    };
    let (o1, o2) = (on(&n1.log), on(&n2.log));
    for o in &o1 {
        assert!(o.starts_with("PENDING on this node since "), "{o1:?}");
        assert!(o.contains("not in this node's archive tier yet"), "{o1:?}");
    }
    assert!(o2[0].starts_with("NOT applied on this node"), "{o2:?}");
    assert!(
        o2[1].starts_with(&format!("day {day} removed by retention")),
        "{o2:?}"
    );
    // The day holds no event: the read model's rows stay as they are.
    current(&n2.api);
    // A restart between the act and the archive keeps the acts pending.
    assert!(n1.serve.stop(), "a clean stop");
    let mut n1b = start_node(root, "n1", url);
    current(&n1b.api);
    assert!(n1b.serve.stop() && n2.serve.stop(), "clean stops");
    drop(n1);
    let l1_s = l1.to_str().expect("utf-8");
    let log = ok(&["admin", "log", "--ledger", l1_s]);
    assert_eq!(
        log.matches("PENDING on this node since").count(),
        2,
        "{log}"
    );
    assert!(!log.contains("the day archived here"), "{log}");
    let moved = ok(&[
        "archive",
        "move",
        "--ledger",
        l1_s,
        "--older-than-days",
        "1",
    ]);
    assert_eq!(
        moved.matches("pending retention act applied").count(),
        2,
        "{moved}"
    );
    assert!(
        moved.contains("NOT applied on this node, for good"),
        "{moved}"
    );
    assert!(moved.contains("seals other content"), "{moved}");
    assert!(
        moved.contains(&format!("day {day} removed by retention")),
        "{moved}"
    );
    assert!(moved.contains("read model rebuilt"), "{moved}");
    let log = ok(&["admin", "log", "--ledger", l1_s]);
    assert_eq!(log.matches("the day archived here").count(), 2, "{log}");
    // Archived again later: nothing is pending, nothing applies twice.
    let again = ok(&[
        "archive",
        "move",
        "--ledger",
        l1_s,
        "--older-than-days",
        "1",
    ]);
    assert!(!again.contains("pending retention act applied"), "{again}");
    for l in [l1, l2] {
        assert_eq!(
            parquet_of(l, day),
            Vec::<String>::new(),
            "removed with the day"
        );
        removal_verified(l, day);
    }
    assert_eq!(heads(l1), heads(l2), "the replicas' heads agree");
}
