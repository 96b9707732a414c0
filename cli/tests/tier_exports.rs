//! Exports, digests and `verify --against` across archived and removed gaming days.
//!
//! The ledger holds two tables whose rounds run across a day boundary. Archived days export
//! byte for byte as hot ones. A day removed by retention is refused by a full export; the
//! export after it starts at the seal's head. Digests taken before a move or a removal hold.

use ledger::days::DayRule;
use std::path::{Path, PathBuf};

mod common;
use common::roundledger;

const MINUTE_NS: i64 = 60_000_000_000;
/// Appends of this many events: records small enough that most lie inside one day.
const APPEND_LEN: usize = 32;

fn text(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn err(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `roundledger args` and asserts its exit code.
fn run(args: &[&str], code: i32) -> std::process::Output {
    let o = roundledger(args);
    assert_eq!(
        o.status.code(),
        Some(code),
        "{args:?}: {}{}",
        text(&o),
        err(&o)
    );
    o
}

/// A split ledger: its directory and its three sealed days, oldest first.
struct Split {
    dir: PathBuf,
    days: Vec<String>,
}

impl Split {
    fn d(&self) -> &str {
        self.dir.to_str().unwrap()
    }
}

/// Seeds a floor three days ago, then appends its events again into `<tmp>/ledger` in small
/// calls, as ingest would. The day starts 12 minutes into play, so each table's events lie
/// on both sides of a day's end. Seals the three days from there.
fn split_ledger(tmp: &Path) -> Split {
    let seeded = tmp.join("seeded");
    let s = seeded.to_str().unwrap();
    let seed = ["seed", "--ledger", s, "--tables", "2", "--rounds", "12"];
    run(&[&seed[..], &["--close", "--days-ago", "3"]].concat(), 0);
    let (events, keys) = {
        let l = ledger::Ledger::open(&seeded).unwrap();
        let mut all = Vec::new();
        for t in l.tables() {
            let head = l.head(&t).unwrap().seq.0;
            for e in l.events(&t, 1..=head) {
                all.push((t.clone(), e.unwrap()));
            }
        }
        (all, l.trusted_admin_keys())
    };
    let mut events = events;
    events.sort_by_key(|(_, e)| e.stream_seq);
    let dir = tmp.join("ledger");
    {
        let l = ledger::Ledger::open(&dir).unwrap();
        l.trust_admin_keys(keys).unwrap();
        for chunk in events.chunks(APPEND_LEN) {
            let batch: Vec<ledger::Incoming> = chunk
                .iter()
                .map(|(t, e)| ledger::Incoming {
                    bytes: e.bytes.clone(),
                    subject_table: Some(t.clone()),
                    stream_seq: e.stream_seq,
                    received_at_ns: e.received_at_ns,
                    provenance: Default::default(),
                })
                .collect();
            for o in l.append_batch(&batch).unwrap() {
                assert!(matches!(o, ledger::Appended::Stored { .. }), "{o:?}");
            }
        }
        l.flush().unwrap();
    }
    let first_ns = events.iter().map(|(_, e)| e.received_at_ns).min().unwrap();
    let boundary_s = (first_ns + 12 * MINUTE_NS) / MINUTE_NS * 60;
    let start = format!("{:02}:{:02}", boundary_s / 3600 % 24, boundary_s / 60 % 60);
    let rule = DayRule::new(&start, "UTC").unwrap();
    let mut days = vec![rule.day_of(first_ns).unwrap()];
    for _ in 0..2 {
        let end = rule.bounds(days.last().unwrap()).unwrap().ends_at_ns;
        days.push(rule.day_of(end).unwrap());
    }
    let key = tmp.join("seal.key");
    run(&["keygen", "--out", key.to_str().unwrap()], 0);
    let k = key.to_str().unwrap();
    let d = dir.to_str().unwrap();
    for day in &days {
        let args = ["day", "seal", "--ledger", d, "--day", day, "--seal-key", k];
        run(&[&args[..], &["--day-start", &start]].concat(), 0);
    }
    Split { dir, days }
}

/// The first table, and a round range of it that lies wholly after `day`'s sealed head.
fn rounds_after(dir: &Path, day: &str) -> (String, String) {
    let l = ledger::Ledger::open(dir).unwrap();
    let table = l.tables()[0].clone();
    let (last, _) = l.sealed_head_at(day, &table).unwrap().unwrap();
    let rounds = l.rounds(&table).unwrap();
    let after: Vec<u64> = rounds
        .iter()
        .filter(|r| r.first_seq.0 > last)
        .map(|r| r.round.0)
        .collect();
    assert!(after.len() >= 2, "day {day} leaves {} rounds", after.len());
    (table.to_string(), format!("{}..{}", after[0], after[1]))
}

/// Writes an export of `selection` to `<tmp>/<name>` with `verify --export` passing; its bytes.
fn export(tmp: &Path, d: &str, name: &str, selection: &[&str]) -> Vec<u8> {
    let out = tmp.join(name);
    let o = out.to_str().unwrap();
    run(
        &[&["export", "--ledger", d, "--out", o][..], selection].concat(),
        0,
    );
    run(&["verify", "--export", o], 0);
    std::fs::read(&out).unwrap()
}

/// `verify --ledger` against each digest file: it extends it, exit 0.
fn extends(d: &str, digests: &[&Path]) {
    for f in digests {
        let o = run(
            &["verify", "--ledger", d, "--against", f.to_str().unwrap()],
            0,
        );
        assert!(
            text(&o).contains("the ledger extends the digest"),
            "{}",
            text(&o)
        );
    }
}

#[test]
fn archived_days_export_as_before_and_keep_their_digest() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let split = split_ledger(t);
    let d = split.d();
    let (table, later) = rounds_after(&split.dir, &split.days[0]);
    let selections: Vec<Vec<&str>> = vec![
        vec![],
        vec!["--table", &table],
        vec!["--table", &table, "--rounds", "1..3"],
        vec!["--table", &table, "--rounds", "2..12"],
        vec!["--table", &table, "--rounds", &later],
    ];
    let export_all = |tag: &str| -> Vec<Vec<u8>> {
        let name = |n: usize| format!("{tag}-{n}.jsonl");
        selections
            .iter()
            .enumerate()
            .map(|(n, s)| export(t, d, &name(n), s))
            .collect()
    };
    let before = export_all("hot");
    let digest = t.join("digest-hot.json");
    run(
        &["digest", "--ledger", d, "--out", digest.to_str().unwrap()],
        0,
    );

    let moved = run(
        &["archive", "move", "--ledger", d, "--older-than-days", "0"],
        0,
    );
    let first = format!("day {}: 0 records", split.days[0]);
    assert!(!text(&moved).contains(&first), "{}", text(&moved));
    for (n, (a, b)) in export_all("archived").iter().zip(&before).enumerate() {
        assert!(a == b, "export {:?} differs after the move", selections[n]);
    }
    extends(d, &[&digest]);
    let all = t.join("archived-0.jsonl");
    let a = all.to_str().unwrap();
    let o = run(
        &[
            "verify",
            "--export",
            a,
            "--against",
            digest.to_str().unwrap(),
        ],
        0,
    );
    assert!(
        text(&o).contains("the export agrees with the digest"),
        "{}",
        text(&o)
    );
    for day in &split.days {
        run(&["verify", "--ledger", d, "--day", day], 0);
    }
}
