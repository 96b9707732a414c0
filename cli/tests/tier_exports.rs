//! Exports, digests and `verify --against` across archived and removed gaming days.
//!
//! The ledger holds two tables whose rounds run across a day boundary. Archived days export
//! byte for byte as hot ones. A day removed by retention is refused by a full export; the
//! export after it starts at the seal's head. Digests taken before a move or a removal hold.

use ledger::days::DayRule;
use proofs::digest::{anchor_seqs, receipt_next, Digest, DigestHead};
use proofs::export::ExportEvent;
use schemas::attest::PublicKey;
use schemas::{Hash32, TableId};
use std::collections::{BTreeMap, BTreeSet};
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

/// A floor of three tables seeded three days ago: its events in arrival order, and the
/// admin keys the seeded ledger trusts.
fn seeded_events(tmp: &Path) -> (Vec<(TableId, ledger::StoredEvent)>, BTreeSet<PublicKey>) {
    let seeded = tmp.join("seeded");
    let s = seeded.to_str().unwrap();
    let seed = ["seed", "--ledger", s, "--tables", "3", "--rounds", "12"];
    run(&[&seed[..], &["--close", "--days-ago", "3"]].concat(), 0);
    let l = ledger::Ledger::open(&seeded).unwrap();
    let mut all = Vec::new();
    for t in l.reader().tables() {
        let head = l.reader().head(&t).unwrap().seq.0;
        for e in l.reader().events(&t, 1..=head) {
            all.push((t.clone(), e.unwrap()));
        }
    }
    all.sort_by_key(|(_, e)| e.stream_seq);
    (all, l.reader().trusted_admin_keys())
}

/// Seeds a floor three days ago, then appends its events again into `<tmp>/ledger` in small
/// calls, as ingest would. The day starts 12 minutes into play, so the first two tables'
/// events lie on both sides of a day's end. The third stops at that end: it lies in the
/// first day only. Seals the three days from there.
fn split_ledger(tmp: &Path) -> Split {
    let (events, keys) = seeded_events(tmp);
    let first_ns = events.iter().map(|(_, e)| e.received_at_ns).min().unwrap();
    let boundary_s = (first_ns + 12 * MINUTE_NS) / MINUTE_NS * 60;
    let short = events.iter().map(|(t, _)| t).max().unwrap().clone();
    let kept = events
        .iter()
        .filter(|(t, e)| *t != short || e.received_at_ns < boundary_s * 1_000_000_000);
    let dir = tmp.join("ledger");
    {
        let l = ledger::Ledger::open(&dir).unwrap();
        l.writer().trust_admin_keys(keys).unwrap();
        let kept: Vec<_> = kept.collect();
        for chunk in kept.chunks(APPEND_LEN) {
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
            for o in l.writer().append_batch(&batch).unwrap() {
                assert!(matches!(o, ledger::Appended::Stored { .. }), "{o:?}");
            }
        }
        l.flush().unwrap();
    }
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
    let table = l.reader().tables()[0].clone();
    let (last, _) = l.reader().sealed_head_at(day, &table).unwrap().unwrap();
    let rounds = l.reader().rounds(&table).unwrap();
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

/// Removes `day` by retention with the simulated admin's key: exit 0.
fn remove(tmp: &Path, d: &str, day: &str) {
    let admin = common::simulated_admin_key(tmp);
    let a = admin.to_str().unwrap();
    let args = ["archive", "remove", "--ledger", d, "--day", day];
    run(
        &[&args[..], &["--retention-days", "1", "--admin-key", a]].concat(),
        0,
    );
}

/// Takes a digest of the ledger into `<tmp>/<name>`: its path.
fn digest(tmp: &Path, d: &str, name: &str) -> PathBuf {
    let path = tmp.join(name);
    run(
        &["digest", "--ledger", d, "--out", path.to_str().unwrap()],
        0,
    );
    path
}

/// The event lines of `table` from `from_seq` on, in an export's bytes.
fn lines_from(export: &[u8], table: &str, from_seq: u64) -> Vec<String> {
    let text = String::from_utf8(export.to_vec()).unwrap();
    let mut out = Vec::new();
    for line in text.lines().skip(1) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["table"] == table && v["seq"].as_u64().unwrap() >= from_seq {
            out.push(line.to_string());
        }
    }
    out
}

#[test]
fn a_removed_day_is_refused_by_exports_and_old_digests_hold() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let split = split_ledger(t);
    let (d, removed) = (split.d(), &split.days[0]);
    let hot = digest(t, d, "digest-hot.json");
    let before = export(t, d, "before.jsonl", &[]);
    run(
        &["archive", "move", "--ledger", d, "--older-than-days", "0"],
        0,
    );
    let archived = digest(t, d, "digest-archived.json");
    let (table, later) = rounds_after(&split.dir, removed);
    remove(t, d, removed);

    exports_around_the_removed_day(t, &split, &before, &table, &later);

    // Digests taken before the move and before the removal: the heads still extend them.
    extends(d, &[&hot, &archived]);
    let o = run(
        &["verify", "--ledger", d, "--against", hot.to_str().unwrap()],
        0,
    );
    let note = "receipt not checked: seqs 1..=";
    assert!(text(&o).contains(note), "{}", text(&o));
    let a = t.join("after.jsonl");
    let args = ["verify", "--export", a.to_str().unwrap(), "--against"];
    let o = run(&[&args[..], &[hot.to_str().unwrap()]].concat(), 0);
    assert!(
        text(&o).contains("the export agrees with the digest"),
        "{}",
        text(&o)
    );
    run(&["verify", "--ledger", d, "--day", &split.days[1]], 0);
    // A new digest would name a receipt and anchors inside the removed day: refused.
    let o = run(&["digest", "--ledger", d], 2);
    let e = err(&o);
    assert!(
        e.contains(&format!("(day {removed}) were removed by retention")),
        "{e}"
    );
    assert!(text(&o).is_empty(), "{}", text(&o));
    digests_at_the_removed_day(t, &split, &hot, &before);
    altered_ledger_is_caught(t, &split, &hot);
}

/// After the removal: every export covering the day refused, with no file left; a round
/// range after it and `--after-removed` verify, the latter equal to `before`'s lines.
fn exports_around_the_removed_day(
    t: &Path,
    split: &Split,
    before: &[u8],
    table: &str,
    later: &str,
) {
    let (d, removed) = (split.d(), &split.days[0]);
    // Any export that covers the removed day: refused, naming it and the way around.
    let refused = t.join("refused.jsonl");
    let r = refused.to_str().unwrap();
    for sel in [
        vec![],
        vec!["--table", table],
        vec!["--table", table, "--rounds", "1..12"],
    ] {
        let o = run(
            &[&["export", "--ledger", d, "--out", r][..], &sel].concat(),
            2,
        );
        let e = err(&o);
        assert!(
            e.contains(&format!("(day {removed}) were removed by retention")),
            "{e}"
        );
        assert!(e.contains("--after-removed"), "{e}");
        assert!(!refused.exists(), "{sel:?} left a file");
    }
    // Around it: rounds after it, and each table from the seal's head.
    export(t, d, "later.jsonl", &["--table", table, "--rounds", later]);
    let a = t.join("after.jsonl");
    let o = run(
        &[
            "export",
            "--ledger",
            d,
            "--after-removed",
            "--out",
            a.to_str().unwrap(),
        ],
        0,
    );
    run(&["verify", "--export", a.to_str().unwrap()], 0);
    let after = std::fs::read(&a).unwrap();
    let first = after.split(|b| *b == b'\n').next().unwrap();
    let header: serde_json::Value = serde_json::from_slice(first).unwrap();
    let l = ledger::Ledger::open(&split.dir).unwrap();
    let tables = l.reader().tables();
    // The third table lies wholly in the removed day: left out, and said so.
    let gone = format!(
        "{}: not exported, its events end with day {removed}",
        tables[2]
    );
    assert!(text(&o).contains(&gone), "{}", text(&o));
    assert_eq!(header["tables"].as_array().unwrap().len(), 2, "{header}");
    for (h, table) in header["tables"].as_array().unwrap().iter().zip(&tables) {
        let (last, hash) = l.reader().sealed_head_at(removed, table).unwrap().unwrap();
        assert_eq!(h["from_seq"].as_u64(), Some(last + 1), "{h}");
        assert_eq!(h["anchor"].as_str(), Some(hash.to_string().as_str()), "{h}");
        let name = table.as_str();
        assert_eq!(
            lines_from(&after, name, 0),
            lines_from(before, name, last + 1)
        );
    }
    drop(l);
}

/// `digest` with its first table's head replaced, and that table's anchors from `anchor`.
fn rebuilt(digest: &Digest, head: DigestHead, anchor: impl Fn(u64) -> Hash32) -> Digest {
    let mut heads = digest.tables.clone();
    heads[0] = head;
    let first = heads[0].table.clone();
    let anchors: BTreeMap<_, Vec<Hash32>> = heads
        .iter()
        .map(|h| match h.table == first {
            true => (
                h.table.clone(),
                anchor_seqs(h.seq).into_iter().map(&anchor).collect(),
            ),
            false => (h.table.clone(), h.anchors.clone()),
        })
        .collect();
    Digest::new(heads, digest.created_at_ns)
        .with_quarantine(digest.quarantine.unwrap())
        .with_anchors_and_journals(|h| anchors[&h.table].clone(), digest.journals.clone())
}

/// `verify --against` a digest written to `<tmp>/<name>`: exit `code`, its stdout.
fn against(t: &Path, d: &str, digest: &Digest, name: &str, code: i32) -> String {
    let file = t.join(name);
    std::fs::write(&file, digest.to_json()).unwrap();
    text(&run(
        &["verify", "--ledger", d, "--against", file.to_str().unwrap()],
        code,
    ))
}

/// The digest `hot` moved back to `seq` of its first table, as one taken then: the hash,
/// receipt and anchors of that seq in `before`, an export from seq 1.
fn taken_at(hot: &Digest, before: &[u8], seq: u64) -> Digest {
    let table = hot.tables[0].table.clone();
    let (mut hashes, mut receipt) = (BTreeMap::new(), Hash32::ZERO);
    for line in before
        .split(|b| *b == b'\n')
        .skip(1)
        .filter(|l| !l.is_empty())
    {
        let e: ExportEvent = serde_json::from_slice(line).unwrap();
        if e.table == table && e.seq <= seq {
            receipt = receipt_next(&receipt, e.stream_seq, e.received_at_ns);
            hashes.insert(e.seq, e.hash);
        }
    }
    let head = DigestHead {
        seq,
        head: hashes[&seq],
        receipt: Some(receipt),
        ..hot.tables[0].clone()
    };
    rebuilt(hot, head, |s| hashes[&s])
}

/// Digests of the first table at the removed day's sealed head, and inside the day.
fn digests_at_the_removed_day(t: &Path, split: &Split, hot: &Path, before: &[u8]) {
    let d = split.d();
    let hot = Digest::from_json(&std::fs::read(hot).unwrap()).unwrap();
    let id = hot.tables[0].table.clone();
    let table = id.as_str();
    let l = ledger::Ledger::open(&split.dir).unwrap();
    let (last, _) = l
        .reader()
        .sealed_head_at(&split.days[0], &id)
        .unwrap()
        .unwrap();
    drop(l);
    let at_head = against(t, d, &taken_at(&hot, before, last), "at-head.json", 0);
    let line = format!("{table:<12} ok   extends: digest seq {last}, now seq");
    assert!(at_head.contains(&line), "{at_head}");
    let inside = against(t, d, &taken_at(&hot, before, last - 10), "inside.json", 1);
    let line = format!("{table:<12} BAD  not checkable: digest seq {}", last - 10);
    assert!(inside.contains(&line), "{inside}");
}

/// A digest of another history, and an archived day file whose bytes changed, each fail
/// `verify --against` with exit 1 after the removal.
fn altered_ledger_is_caught(t: &Path, split: &Split, hot: &Path) {
    let d = split.d();
    let digest = Digest::from_json(&std::fs::read(hot).unwrap()).unwrap();
    let head = DigestHead {
        head: Hash32([7; 32]),
        ..digest.tables[0].clone()
    };
    // Every anchor of the first table differs too: the search reaches the removed day.
    let forged = rebuilt(&digest, head, |_| Hash32([7; 32]));
    let out = against(t, d, &forged, "digest-other.json", 1);
    let table = digest.tables[0].table.as_str();
    let line = format!("{table:<12} BAD  rewritten: at seq");
    assert!(out.contains(&line), "{out}");
    let line = "BAD  first altered event: between seq 1 and seq";
    assert!(out.contains(line), "{out}");

    let file = split
        .dir
        .join("archive")
        .join(format!("{}.rlday", split.days[1]));
    let mut bytes = std::fs::read(&file).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x5a;
    std::fs::write(&file, bytes).unwrap();
    let o = run(
        &["verify", "--ledger", d, "--against", hot.to_str().unwrap()],
        1,
    );
    assert!(
        text(&o).contains("the ledger does NOT extend the digest"),
        "{}",
        text(&o)
    );
}
