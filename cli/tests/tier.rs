//! `roundledger archive move|status|remove` end to end on a seeded ledger: replay,
//! evidence, verify and audit give the same output before and after the move, the bundle
//! made from the archive verifies, and retention removal leaves the seals proving the day.

use ledger::days::DayRule;
use std::path::Path;

mod common;
use common::roundledger;
use common::serve::{get, listening, scrape, wait_for};

fn text(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Output of every reading command, and the bundle without its export time.
fn readings(d: &str, table: &str, day: &str, bundle: &Path) -> Vec<String> {
    let b = bundle.to_str().unwrap();
    let _ = std::fs::remove_file(bundle);
    let runs: Vec<Vec<&str>> = vec![
        vec![
            "replay", "--ledger", d, "--table", table, "--round", "5", "--json",
        ],
        vec!["verify", "--ledger", d],
        vec!["verify", "--ledger", d, "--day", day],
        vec!["audit", "--ledger", d, "--json", "--quiet"],
        vec![
            "evidence", "--ledger", d, "--table", table, "--round", "5", "--out", b,
        ],
    ];
    let mut out = Vec::new();
    for args in runs {
        let o = roundledger(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
        // The evidence line ends with its build time.
        let t = text(&o);
        out.push(t.split(", built in").next().unwrap_or_default().to_string());
    }
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(bundle).unwrap()).unwrap();
    v["exported_at_ns"] = serde_json::Value::Null;
    out.push(v.to_string());
    let check = roundledger(&["verify-bundle", b]);
    assert_eq!(check.status.code(), Some(0), "{}", text(&check));
    out
}

/// Each command's output equal, naming the first line that differs.
fn same(after: &[String], before: &[String]) {
    for (n, (a, b)) in after.iter().zip(before).enumerate() {
        let diff = a.lines().zip(b.lines()).find(|(x, y)| x != y);
        assert!(a == b, "reading {n} differs: {diff:?}");
    }
}

/// A ledger seeded three days ago with `tables` tables of `rounds` rounds, its three
/// gaming days sealed: its directory and the days.
fn sealed_ledger(tmp: &Path, tables: &str, rounds: &str) -> (std::path::PathBuf, Vec<String>) {
    let dir = tmp.join("ledger");
    let d = dir.to_str().unwrap();
    let seed = [
        "seed", "--ledger", d, "--tables", tables, "--rounds", rounds, "--close",
    ];
    // Small value-log segments, so that compaction has closed ones to retire.
    let small = ["--days-ago", "3", "--segment-bytes", "65536"];
    // Days from 00:00 UTC, as the seals below split them: the ledger keeps that rule.
    let small = [&small[..], &["--shift-start", "00:00"]].concat();
    let out = roundledger(&[&seed[..], &small[..]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let key = tmp.join("seal.key");
    assert_eq!(
        roundledger(&["keygen", "--out", key.to_str().unwrap()])
            .status
            .code(),
        Some(0)
    );
    let rule = DayRule::new("00:00", "UTC").unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    let first = rule.day_of(now - 3 * 86_400_000_000_000).unwrap();
    let mut days = vec![first];
    for _ in 0..2 {
        let end = rule.bounds(days.last().unwrap()).unwrap().ends_at_ns;
        days.push(rule.day_of(end).unwrap());
    }
    for day in &days {
        let k = key.to_str().unwrap();
        let args = ["day", "seal", "--ledger", d, "--day", day, "--seal-key", k];
        let o = roundledger(&[&args[..], &["--day-start", "00:00"]].concat());
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    (dir, days)
}

#[test]
fn an_archived_day_reads_as_before_and_retention_keeps_its_seal() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, days) = sealed_ledger(tmp.path(), "2", "12");
    let d = dir.to_str().unwrap();
    let table = ledger::Ledger::open(&dir).unwrap().reader().tables()[0].to_string();
    let bundle = tmp.path().join("bundle.json");
    let before = readings(d, &table, &days[0], &bundle);
    // The value log's segments, by name (they sort in write order), with their bytes.
    let segments = || -> Vec<(String, u64)> {
        let dir = dir.join(ledger::valuelog::DIR);
        let files = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap());
        let mut out: Vec<_> = files
            .map(|e| {
                (
                    e.file_name().into_string().unwrap(),
                    e.metadata().unwrap().len(),
                )
            })
            .collect();
        out.sort();
        out
    };
    let hot = segments();
    let hot_bytes: u64 = hot.iter().map(|s| s.1).sum();

    let moved = roundledger(&["archive", "move", "--ledger", d, "--older-than-days", "0"]);
    assert_eq!(
        moved.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&moved.stderr)
    );
    let lines = text(&moved);
    assert_eq!(
        lines.lines().filter(|l| l.starts_with("day ")).count(),
        3,
        "{lines}"
    );
    // Every day moved: compaction retires every closed segment. The active one stays
    // (where the seed's last batch ended depends on the time of day it runs).
    assert!(lines.contains("value log: "), "{lines}");
    assert!(!lines.contains("value log: 0 of"), "{lines}");
    let after = segments();
    let (closed, active) = hot.split_at(hot.len() - 1);
    assert!(!closed.is_empty(), "small segments: {hot:?}");
    for (name, _) in closed {
        assert!(after.iter().all(|a| &a.0 != name), "{name} kept: {after:?}");
    }
    let after_bytes: u64 = after.iter().map(|s| s.1).sum();
    assert!(
        after_bytes < hot_bytes / 2 && after_bytes < active[0].1 + hot_bytes / 8,
        "{hot:?} -> {after:?}"
    );
    let status = roundledger(&["archive", "status", "--ledger", d]);
    assert_eq!(status.status.code(), Some(0));
    assert_eq!(
        text(&status).matches(" archived:").count(),
        3,
        "{}",
        text(&status)
    );
    same(&readings(d, &table, &days[0], &bundle), &before);

    // Retention: the seeded ledger trusts the simulated admin key.
    let admin = common::simulated_admin_key(tmp.path());
    let remove = |retention: &str| {
        let a = admin.to_str().unwrap();
        roundledger(&[
            "archive",
            "remove",
            "--ledger",
            d,
            "--day",
            &days[0],
            "--retention-days",
            retention,
            "--admin-key",
            a,
        ])
    };
    // A read model built before the removal: the removal rebuilds it.
    let built = roundledger(&["readmodel", "rebuild", "--ledger", d]);
    assert_eq!(built.status.code(), Some(0), "{}", text(&built));
    let young = remove("10");
    assert_eq!(young.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&young.stderr).contains("younger than its retention"));
    let done = remove("1");
    assert_eq!(
        done.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let v = roundledger(&["verify", "--ledger", d, "--day", &days[0]]);
    assert_eq!(v.status.code(), Some(0), "{}", text(&v));
    assert!(text(&v).contains("removed by retention"), "{}", text(&v));
    assert!(
        text(&done).contains("read model rebuilt"),
        "{}",
        text(&done)
    );
    let full = roundledger(&["verify", "--ledger", d]);
    assert_eq!(full.status.code(), Some(0), "{}", text(&full));
    assert!(text(&full).contains("removal journal ok: 1 line chained"));
    assert!(
        text(&full).contains("read model: matches"),
        "{}",
        text(&full)
    );
    // An altered journal line: `verify` and `archive status` name it, exit 1.
    let journal = dir.join("archive").join("removals.jsonl");
    let good = std::fs::read_to_string(&journal).unwrap();
    let altered = good.replacen("\"retention_days\":1", "\"retention_days\":2", 1);
    std::fs::write(&journal, altered).unwrap();
    for args in [
        vec!["verify", "--ledger", d],
        vec!["archive", "status", "--ledger", d],
    ] {
        let o = roundledger(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", text(&o));
        assert!(
            text(&o).contains("removal journal BAD at line 1"),
            "{}",
            text(&o)
        );
    }
    std::fs::write(&journal, good).unwrap();
    let status = roundledger(&["archive", "status", "--ledger", d]);
    assert!(
        text(&status).contains("removed by retention"),
        "{}",
        text(&status)
    );
}

/// The ages from serve's settings file: nonsense refused (also by serve), a flag wins.
#[test]
fn the_archive_ages_come_from_the_settings_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, days) = sealed_ledger(tmp.path(), "1", "3");
    let d = dir.to_str().unwrap();
    let settings = tmp.path().join("serve.toml");
    let f = settings.to_str().unwrap();
    let write = |text: &str| std::fs::write(&settings, format!("batch = 64\n{text}")).unwrap();
    let refused = [
        ("archive-after-days = 0\n", "archive-after-days = 0"),
        ("retention-days = 0\n", "retention-days = 0"),
        (
            "archive-after-days = 10\nretention-days = 5\n",
            "shorter than",
        ),
        ("archive-after-days = \"ten\"\n", "not a number"),
    ];
    for (text, why) in refused {
        write(text);
        let o = roundledger(&["archive", "move", "--ledger", d, "--settings", f]);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(2), "{text}: {err}");
        assert!(err.contains(why), "{text}: {err}");
    }
    let serve = roundledger(&[
        "serve",
        "--ledger",
        d,
        "--no-ingest",
        "--retention-days",
        "0",
    ]);
    assert_eq!(serve.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&serve.stderr).contains("retention-days = 0"));
    let none = roundledger(&["archive", "move", "--ledger", d]);
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("--older-than-days"));

    write("archive-after-days = 10\nretention-days = 20\n");
    let young = roundledger(&["archive", "move", "--ledger", d, "--settings", f]);
    assert_eq!(young.status.code(), Some(0));
    assert!(
        text(&young).contains("older than 10 days"),
        "{}",
        text(&young)
    );
    let flag = ["--older-than-days", "0"];
    let moved = roundledger(
        &[
            &["archive", "move", "--ledger", d, "--settings", f][..],
            &flag,
        ]
        .concat(),
    );
    assert_eq!(
        text(&moved)
            .lines()
            .filter(|l| l.starts_with("day "))
            .count(),
        3
    );
    let admin = common::simulated_admin_key(tmp.path());
    let a = admin.to_str().unwrap();
    let remove = [
        "archive",
        "remove",
        "--ledger",
        d,
        "--day",
        &days[0],
        "--admin-key",
        a,
    ];
    let kept = roundledger(&[&remove[..], &["--settings", f]].concat());
    assert_eq!(kept.status.code(), Some(2));
    let err = String::from_utf8_lossy(&kept.stderr).into_owned();
    assert!(
        err.contains("younger than its retention of 20 days"),
        "{err}"
    );
    let flag = ["--settings", f, "--retention-days", "1"];
    let done = roundledger(&[&remove[..], &flag].concat());
    assert_eq!(
        done.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert!(text(&done).contains("(1 days)"), "{}", text(&done));
}

/// `serve --archive-after-days 1` moves the sealed days that old while it runs, writes
/// their Parquet, and compacts: its metrics count the days and the segments freed, the API reads a moved
/// round, and after a clean stop the ledger verifies.
#[test]
fn serve_archives_old_days_itself() {
    const TOKEN: &str = "tier-admin-token-000000001";
    let tmp = tempfile::tempdir().unwrap();
    let (dir, days) = sealed_ledger(tmp.path(), "2", "12");
    let d = dir.to_str().unwrap();
    let table = ledger::Ledger::open(&dir).unwrap().reader().tables()[0].to_string();
    let nats = natsd::NatsServer::start().expect("nats-server");
    let extra = "archive-after-days = 1\n";
    let (mut serve, log) = common::serve::start(tmp.path(), &nats.url(), TOKEN, extra);
    let (api, metrics) = listening(&log);
    // The two days that ended at least a day ago; the third ended today.
    let seen = wait_for("days archived and segments retired", || {
        let m = scrape(&metrics);
        let at = |k: &str| m.get(k).copied().unwrap_or(0.0);
        let seen = (
            at("roundledger_archive_days"),
            at("roundledger_value_log_segments_retired"),
            at("roundledger_value_log_retired_bytes"),
        );
        (seen.0 == 2.0 && seen.1 > 0.0, seen)
    });
    assert!(seen.2 > 65_536.0, "{seen:?}");
    let (status, body) = get(&api, &format!("/v1/tables/{table}/rounds/5"), Some(TOKEN));
    assert_eq!(status, 200, "{body}");
    assert!(serve.stop(), "a clean stop");
    let text_log = std::fs::read_to_string(&log).unwrap();
    assert!(
        text_log.contains(&days[0]) && text_log.contains("day archived"),
        "{text_log}"
    );
    // The first day's pass ended before the second began: its Parquet is beside it.
    assert!(
        text_log.contains(&format!("Parquet of day {}", days[0])),
        "{text_log}"
    );
    for t in ["rounds", "bet_lines", "findings", "finance_lines"] {
        let f = dir.join("archive").join(format!("{}.{t}.parquet", days[0]));
        assert!(f.exists(), "{}", f.display());
    }
    let status = roundledger(&["archive", "status", "--ledger", d]);
    assert!(
        text(&status).contains("2 days in the archive tier"),
        "{}",
        text(&status)
    );
    let v = roundledger(&["verify", "--ledger", d]);
    assert_eq!(v.status.code(), Some(0), "{}", text(&v));
}
