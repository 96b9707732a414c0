//! The archive tier on a ledger of three sealed gaming days: a moved day reads, replays
//! and verifies exactly as before, a move stopped between any two steps loses nothing,
//! and an altered day file is named by `verify`.

mod common;

use common::table;
use ledger::days::DayRule;
use ledger::store::SledStore;
use ledger::{Incoming, Ledger};
use schemas::attest::SigningKey;
use schemas::codec::{self, WireFormat};
use schemas::*;
use std::path::Path;

const MINUTE_NS: i64 = 60 * 1_000_000_000;
const DAY_NS: i64 = 24 * 60 * MINUTE_NS;
const DAYS: [&str; 3] = ["2026-03-06", "2026-03-07", "2026-03-08"];

fn rule() -> DayRule {
    DayRule::new("06:00", "America/New_York").expect("rule")
}

/// Two tables, one event every 13 and 29 minutes over the three days, appended in
/// arrival order five messages per call; every day sealed.
fn sealed_ledger(dir: &Path) -> Ledger {
    fill_and_seal(Ledger::open(dir).unwrap())
}

/// Value-log segments this small give the three days about 20 segments.
const SEGMENT_BYTES: u64 = 4 * 1024;

fn open_small(dir: &Path) -> Ledger {
    let store = SledStore::open_sized(dir, SEGMENT_BYTES).unwrap();
    Ledger::with_store(Box::new(store)).unwrap()
}

/// `fill_and_seal` with small value-log segments.
fn sealed_small(dir: &Path) -> Ledger {
    fill_and_seal(open_small(dir))
}

fn fill_and_seal(l: Ledger) -> Ledger {
    let r = rule();
    let start = r.bounds(DAYS[0]).unwrap().starts_at_ns;
    let end = r.bounds(DAYS[2]).unwrap().ends_at_ns;
    let mut all = Vec::new();
    for (name, step) in [("T-A", 13), ("T-B", 29)] {
        let t = table(name);
        let mut prev = GENESIS;
        let times = (0..)
            .map(|i| start + i * step * MINUTE_NS)
            .take_while(|at| *at < end);
        for (i, at) in times.enumerate() {
            let seq = i as u64 + 1;
            let e = Event {
                v: WIRE_VERSION,
                table: t.clone(),
                device: DeviceId::new("ctl-1").unwrap(),
                seq: Seq(seq),
                prev,
                occurred_at_ns: at,
                round: Some(RoundId(seq / 4 + 1)),
                body: EventBody::Announced {
                    announcement: Announcement::PlaceYourBets,
                },
            };
            let bytes = codec::encode(&e, WireFormat::Bincode);
            prev = event_hash(&prev, &bytes);
            all.push((at, t.clone(), seq, bytes));
        }
    }
    all.sort_by(|x, y| (x.0, &x.1, x.2).cmp(&(y.0, &y.1, y.2)));
    for (n, call) in all.chunks(5).enumerate() {
        let batch: Vec<Incoming> = call
            .iter()
            .enumerate()
            .map(|(i, (at, t, _, bytes))| Incoming {
                bytes: bytes.clone(),
                subject_table: Some(t.clone()),
                stream_seq: (n * 5 + i + 1) as u64,
                received_at_ns: *at,
                provenance: Default::default(),
            })
            .collect();
        l.writer().append_batch(&batch).expect("append");
    }
    l.flush().unwrap();
    let key = SigningKey::derive_for_simulation("house-seal");
    for day in DAYS {
        l.writer()
            .seal_day(&r, day, &key, r.bounds(day).unwrap().ends_at_ns)
            .unwrap();
    }
    l
}

/// Everything a reader sees: every event, rounds, arrival order, `verify` and each day's.
fn view(l: &Ledger) -> String {
    let mut out = String::new();
    for t in l.reader().tables() {
        let events: Vec<_> = l
            .reader()
            .events(&t, 1..=u64::MAX)
            .map(|e| e.unwrap())
            .collect();
        out += &format!("{t}: {events:?}\n{:?}\n", l.reader().rounds(&t).unwrap());
        let one = l.reader().round_events(&t, RoundId(7)).unwrap();
        out += &format!("round 7: {one:?}\n");
    }
    let arrival: Vec<_> = l
        .reader()
        .events_in_arrival_order()
        .map(|e| e.unwrap())
        .collect();
    out += &format!("{arrival:?}\n{:?}\n", l.verifier().verify().unwrap());
    for day in DAYS {
        let v = l.verifier().verify_day(day, None).unwrap();
        assert!(v.is_ok(), "{day}: {:?}", v.problems);
        out += &format!("{:?} {} {}\n", v.problems, v.events_read, v.checkpoints);
    }
    assert!(l.verifier().verify().unwrap().is_ok());
    out
}

/// Bytes of files under `dir` whose path contains `part`.
fn bytes_under(dir: &Path, part: &str) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            total += bytes_under(&p, part);
        } else if p.to_string_lossy().contains(part) {
            total += p.metadata().unwrap().len();
        }
    }
    total
}

#[test]
fn a_moved_day_reads_and_verifies_as_before() {
    if common::skip_unless_sled("the archive tier is SledStore's (redb has no tier)") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let l = sealed_ledger(tmp.path());
    let before = view(&l);
    let (sled0, values0) = (
        bytes_under(tmp.path(), "db"),
        bytes_under(tmp.path(), "values"),
    );
    for day in &DAYS[..2] {
        let (entry, plan) = l.tier().archive_move(day).unwrap();
        assert!(entry.records > 10 && plan.events > 50, "{entry:?}");
        println!(
            "{day}: {} records, {} events, {} wire bytes -> {} file bytes, {} straddling",
            entry.records, entry.events, plan.wire_bytes, entry.file_len, plan.straddling
        );
    }
    assert_eq!(view(&l), before, "reads after the move");
    let again = l.tier().archive_move(DAYS[0]);
    assert!(matches!(again, Err(ledger::Error::Tier(_))), "{again:?}");
    drop(l);
    let l = Ledger::open(tmp.path()).unwrap();
    assert_eq!(view(&l), before, "reads after a reopen");
    assert_eq!(l.tier().tier_entries().unwrap().len(), 2);
    println!(
        "sled {sled0} -> {} bytes, value log {values0} -> {} bytes, day files {} bytes",
        bytes_under(tmp.path(), "db"),
        bytes_under(tmp.path(), "values"),
        bytes_under(tmp.path(), "archive")
    );
}

/// A process killed after any step: the day is in exactly one tier, and every read and
/// check gives what it gave before.
#[test]
fn a_move_stopped_after_any_step_loses_nothing() {
    if common::skip_unless_sled("the archive tier is SledStore's (redb has no tier)") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let l = sealed_ledger(tmp.path());
    let before = view(&l);
    let dir = tmp.path().join(ledger::tier::DIR);
    // Killed while writing: a partial file is left.
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("2026-03-06.rlday.partial"), b"RLDAYv1\ncut").unwrap();
    // Killed after the file is written and synced.
    l.tier().archive_write(DAYS[0]).unwrap();
    drop(l);
    let l = Ledger::open(tmp.path()).unwrap();
    assert_eq!(view(&l), before);
    assert!(l.tier().tier_entry(DAYS[0]).unwrap().is_none(), "still hot");
    // Killed after the check, before the commit.
    let file = l.tier().archive_write(DAYS[0]).unwrap();
    l.tier().archive_check(&file).unwrap();
    drop(l);
    let l = Ledger::open(tmp.path()).unwrap();
    assert_eq!(view(&l), before);
    assert!(l.tier().tier_entry(DAYS[0]).unwrap().is_none(), "still hot");
    // A file that is not the one written is refused before any commit.
    let file = l.tier().archive_write(DAYS[0]).unwrap();
    let mut other = file.clone();
    other.blake3 = "00".repeat(32);
    assert!(l.tier().archive_check(&other).is_err());
    let plan = l.tier().archive_check(&file).unwrap();
    l.tier().archive_commit(&plan).unwrap();
    drop(l);
    let l = Ledger::open(tmp.path()).unwrap();
    assert_eq!(view(&l), before);
    assert!(l.tier().tier_entry(DAYS[0]).unwrap().is_some(), "archived");
}

#[test]
fn days_leave_the_hot_tier_by_age() {
    if common::skip_unless_sled("the archive tier is SledStore's (redb has no tier)") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let l = sealed_ledger(tmp.path());
    let end = rule().bounds(DAYS[0]).unwrap().ends_at_ns;
    assert!(l
        .tier()
        .days_to_archive(end + DAY_NS - 1, DAY_NS)
        .unwrap()
        .is_empty());
    assert_eq!(
        l.tier().days_to_archive(end + DAY_NS, DAY_NS).unwrap(),
        vec![DAYS[0]]
    );
    l.tier().archive_move(DAYS[0]).unwrap();
    let later = end + 10 * DAY_NS;
    assert_eq!(l.tier().days_to_archive(later, DAY_NS).unwrap(), &DAYS[1..]);
}

/// One byte of a day file changed: `verify` names the table, and so does `verify --day`.
#[test]
fn an_altered_day_file_is_named_by_verify() {
    if common::skip_unless_sled("the archive tier is SledStore's (redb has no tier)") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let l = sealed_ledger(tmp.path());
    let (entry, _) = l.tier().archive_move(DAYS[1]).unwrap();
    drop(l);
    let path = tmp.path().join(ledger::tier::DIR).join(&entry.file);
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() - 40;
    bytes[at] ^= 0x40;
    std::fs::write(&path, bytes).unwrap();
    let l = Ledger::open(tmp.path()).unwrap();
    let report = l.verifier().verify().unwrap();
    assert!(!report.is_ok());
    let bad: Vec<_> = report
        .tables
        .iter()
        .filter_map(|t| match t {
            ledger::TableVerdict::Bad { table, problem, .. } => Some((table.clone(), problem)),
            _ => None,
        })
        .collect();
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(format!("{:?}", bad[0].1).contains("day file"), "{bad:?}");
    assert!(!l.verifier().verify_day(DAYS[1], None).unwrap().is_ok());
    assert!(l.verifier().verify_day(DAYS[0], None).unwrap().is_ok());
}

/// Retention: refused while young, unsigned or signed by an untrusted key; then the day
/// file goes, the act is journaled, and the seals still verify every remaining day.
#[test]
fn a_day_removed_by_retention_is_proven_by_its_seal() {
    if common::skip_unless_sled("the archive tier is SledStore's (redb has no tier)") {
        return;
    }
    use ledger::tier::retention::Removal;
    let tmp = tempfile::tempdir().unwrap();
    let l = sealed_ledger(tmp.path());
    let admin = SigningKey::derive_for_simulation("admin");
    l.writer().trust_admin_keys([admin.public()]).unwrap();
    let (entry, _) = l.tier().archive_move(DAYS[0]).unwrap();
    l.tier().archive_move(DAYS[1]).unwrap();
    let end = rule().bounds(DAYS[0]).unwrap().ends_at_ns;
    let now = end + 30 * DAY_NS;
    let refused = |r: &Removal, now: i64| match l.tier().retention_remove(r, now) {
        Err(ledger::Error::Tier(why)) => why,
        other => panic!("{other:?}"),
    };
    let young = Removal::sign(&entry, 31, &admin, now);
    assert!(refused(&young, now).contains("younger than its retention"));
    let stranger = SigningKey::derive_for_simulation("stranger");
    let untrusted = Removal::sign(&entry, 30, &stranger, now);
    assert!(refused(&untrusted, now).contains("not a trusted admin"));
    let mut forged = Removal::sign(&entry, 30, &admin, now);
    forged.retention_days = 29;
    assert!(refused(&forged, now).contains("does not verify"));
    let stale = Removal::sign(&entry, 30, &admin, now - 2 * 3_600_000_000_000);
    assert!(refused(&stale, now).contains("signing time"));
    assert!(
        l.tier().day_file_intact(DAYS[0]).unwrap(),
        "nothing removed yet"
    );
    assert_eq!(
        l.tier().removals().unwrap(),
        0,
        "a refusal counts no removal"
    );

    let act = Removal::sign(&entry, 30, &admin, now);
    let removed = l.tier().retention_remove(&act, now).unwrap();
    assert_eq!(removed.state, ledger::tier::TierState::Removed);
    assert_eq!(
        l.tier().removals().unwrap(),
        1,
        "the removal's commit counts it"
    );
    let dir = tmp.path().join(ledger::tier::DIR);
    assert!(!dir.join(&entry.file).exists());
    let journal = std::fs::read_to_string(dir.join("removals.jsonl")).unwrap();
    assert_eq!(journal.lines().count(), 1);
    // Done again (a crash before the deletion): it finishes, nothing more is journaled.
    l.tier().retention_remove(&act, now).unwrap();
    drop(l);
    let l = Ledger::open(tmp.path()).unwrap();
    assert_eq!(
        l.tier().removals().unwrap(),
        1,
        "durable, and not counted twice"
    );
    let v = l.verifier().verify_day(DAYS[0], None).unwrap();
    assert!(v.removed_by_retention && v.is_ok(), "{:?}", v.problems);
    for day in &DAYS[1..] {
        let v = l.verifier().verify_day(day, None).unwrap();
        assert!(
            v.is_ok() && !v.removed_by_retention,
            "{day}: {:?}",
            v.problems
        );
    }
    // The whole ledger verifies: each chain goes on from the head the seal proves.
    let report = l.verifier().verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.failures());
    assert_eq!(report.removed.days.len(), 1);
    // One day's lookup judges it as the whole catalog's scan does.
    let one = l.removed_day(DAYS[0]).unwrap();
    assert_eq!(one.as_ref(), report.removed.days.first());
    assert!(one.is_some_and(|d| d.problem.is_none()));
    assert_eq!(
        l.removed_day(DAYS[1]).unwrap(),
        None,
        "archived, not removed"
    );
    assert!(l.reader().fenced().is_empty(), "{:?}", l.reader().fenced());
    // The next day removed too: the chain skips two ranges in a row.
    let second = l.tier().tier_entry(DAYS[1]).unwrap().unwrap();
    let act = Removal::sign(&second, 29, &admin, now);
    l.tier().retention_remove(&act, now).unwrap();
    let report = l.verifier().verify().unwrap();
    assert!(
        report.is_ok(),
        "{:?} {:?}",
        report.failures(),
        report.tables
    );
    assert_eq!(report.removed.days.len(), 2);
    assert!(report.removed.calls_unchecked > 0);
    let t = table("T-A");
    let gone = l.reader().round_events(&t, RoundId(2));
    assert!(
        matches!(gone, Err(ledger::Error::RetentionRemoved { .. })),
        "{gone:?}"
    );
    let last = l.reader().head(&t).unwrap().seq.0;
    assert!(l.reader().stored_event(&t, last).unwrap().is_some());
}

/// The removal journal, held against the catalog: an altered, reordered, cut or missing
/// line is named by its number, and `verify` fails.
#[test]
fn a_tampered_removal_journal_is_named_by_line() {
    if common::skip_unless_sled("the archive tier is SledStore's (redb has no tier)") {
        return;
    }
    use ledger::tier::retention::Removal;
    let tmp = tempfile::tempdir().unwrap();
    let l = sealed_ledger(tmp.path());
    let admin = SigningKey::derive_for_simulation("admin");
    l.writer().trust_admin_keys([admin.public()]).unwrap();
    let now = rule().bounds(DAYS[2]).unwrap().ends_at_ns + 30 * DAY_NS;
    for day in &DAYS[..2] {
        let (entry, _) = l.tier().archive_move(day).unwrap();
        l.tier()
            .retention_remove(&Removal::sign(&entry, 30, &admin, now), now)
            .unwrap();
    }
    let ok = l.tier().removal_journal().unwrap();
    assert_eq!((ok.lines, ok.problem.clone()), (2, None), "{ok:?}");
    assert!(l.verifier().verify().unwrap().is_ok());
    let path = tmp.path().join(ledger::tier::DIR).join("removals.jsonl");
    let good = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = good.lines().collect();
    let cases = [
        (
            "altered",
            good.replacen("\"retention_days\":30", "\"retention_days\":31", 1),
            1,
            "signature",
        ),
        (
            "reordered",
            format!("{}\n{}\n", lines[1], lines[0]),
            1,
            "numbered 2",
        ),
        ("truncated", format!("{}\n", lines[0]), 2, "not journaled"),
        (
            "cut short",
            good[..good.len() - 9].to_string(),
            2,
            "cut short",
        ),
        (
            "rechained",
            format!(
                "{}\n{}\n",
                lines[0],
                lines[1].replacen("\"prev\":\"", "\"prev\":\"f", 1)
            ),
            2,
            "prev",
        ),
    ];
    for (what, text, line, why) in cases {
        std::fs::write(&path, &text).unwrap();
        let v = l.tier().removal_journal().unwrap();
        let (at, p) = v.problem.clone().unwrap_or_else(|| panic!("{what}: {v:?}"));
        assert_eq!(at, line, "{what}: {p}");
        assert!(p.contains(why), "{what}: {p}");
        let report = l.verifier().verify().unwrap();
        assert!(!report.is_ok(), "{what}");
        assert!(report.failures().contains("removals"), "{what}");
    }
    std::fs::write(&path, &good).unwrap();
    assert!(l.verifier().verify().unwrap().is_ok());

    // A crash after the journal line, before the commit: `verify` names the line, and
    // the next removal finishes with the journaled act, journaling nothing more.
    let (entry, _) = l.tier().archive_move(DAYS[2]).unwrap();
    let act = Removal::sign(&entry, 30, &admin, now);
    let line = ledger::tier::journal::Line {
        n: 3,
        prev: blake3::hash(lines[1].as_bytes()).to_hex().to_string(),
        removal: act.clone(),
    };
    let text = format!("{good}{}\n", serde_json::to_string(&line).unwrap());
    std::fs::write(&path, &text).unwrap();
    let (at, p) = l.tier().removal_journal().unwrap().problem.unwrap();
    assert!(
        at == 3 && p.contains("not removed in the catalog"),
        "{at} {p}"
    );
    let later = Removal::sign(&entry, 30, &admin, now + 60_000_000_000);
    let done = l
        .tier()
        .retention_remove(&later, now + 60_000_000_000)
        .unwrap();
    assert_eq!(done.removal, Some(act));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    assert_eq!(l.tier().removal_journal().unwrap().lines, 3);
    assert!(l.verifier().verify().unwrap().is_ok());
}

/// A day marked removed in the catalog by an act no trusted admin signed, its file
/// deleted: `verify` names the day and fails its tables where their records are gone.
#[test]
fn a_removal_without_a_trusted_act_fails_verify() {
    if common::skip_unless_sled("the archive tier is SledStore's (redb has no tier)") {
        return;
    }
    use ledger::store::{Op, SledStore, Space, Store};
    use ledger::tier::retention::Removal;
    let tmp = tempfile::tempdir().unwrap();
    let l = sealed_ledger(tmp.path());
    l.writer()
        .trust_admin_keys([SigningKey::derive_for_simulation("admin").public()])
        .unwrap();
    let (mut entry, _) = l.tier().archive_move(DAYS[0]).unwrap();
    drop(l);
    let stranger = SigningKey::derive_for_simulation("stranger");
    entry.removal = Some(Removal::sign(&entry, 1, &stranger, 0));
    entry.state = ledger::tier::TierState::Removed;
    let store = SledStore::open(tmp.path()).unwrap();
    let put = Op::Put(Space::Tier, DAYS[0].as_bytes().to_vec(), entry.encode());
    store.commit(vec![put]).unwrap();
    store.flush().unwrap();
    std::fs::remove_file(tmp.path().join(ledger::tier::DIR).join(&entry.file)).unwrap();
    let (report, _) = ledger::verify_store(&store, None, &Default::default()).unwrap();
    assert!(!report.is_ok());
    let day = &report.removed.days[0];
    let why = day.problem.as_deref().unwrap_or_default();
    assert!(why.contains("not a trusted admin key"), "{why}");
    let bad = report
        .tables
        .iter()
        .filter(|t| matches!(t, ledger::TableVerdict::Bad { problem, .. } if problem.to_string().contains("without a valid removal act")))
        .count();
    assert_eq!(bad, 2, "{:?}", report.tables);
}

/// Segment files present and their total bytes.
fn segment_files(dir: &Path) -> (usize, u64) {
    let dir = dir.join(ledger::valuelog::DIR);
    let lens: Vec<u64> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .collect();
    (lens.len(), lens.iter().sum())
}

/// The recovery copies still check against sled (what `roundledger verify` runs).
fn copies_check(dir: &Path) {
    let store = SledStore::open(dir).unwrap();
    let report = ledger::copies::check_copies(&store).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert!(report.entries_checked > 0, "{report:?}");
}

#[test]
fn compaction_frees_the_segments_a_move_emptied() {
    let tmp = tempfile::tempdir().unwrap();
    // A quarantine entry in the first segment: its recovery copy must move.
    let l = open_small(tmp.path());
    let junk = Incoming {
        bytes: b"not an event".to_vec(),
        subject_table: Some(table("T-A")),
        stream_seq: 1_000_000,
        received_at_ns: rule().bounds(DAYS[0]).unwrap().starts_at_ns,
        provenance: Default::default(),
    };
    l.writer().append_batch(&[junk]).unwrap();
    let l = fill_and_seal(l);
    let before = view(&l);
    let (files0, bytes0) = segment_files(tmp.path());
    // Nothing has left the hot tier: every closed segment is live and kept.
    let c = l.tier().compact_values().unwrap();
    assert!(c.segments_closed >= 10, "{c:?} of {files0} files");
    assert_eq!(
        (c.retired.len() as u64, c.kept_live),
        (0, c.segments_closed),
        "{c:?}"
    );
    assert_eq!(segment_files(tmp.path()), (files0, bytes0));

    for day in &DAYS[..2] {
        l.tier().archive_move(day).unwrap();
    }
    let c = l.tier().compact_values().unwrap();
    let (files1, bytes1) = segment_files(tmp.path());
    println!("{files0} files, {bytes0} bytes -> {files1}, {bytes1}: {c:?}");
    assert!(c.retired.len() >= 5, "{c:?}");
    assert_eq!(
        c.bytes_freed,
        c.retired.iter().map(|r| r.file_bytes).sum::<u64>()
    );
    // The third day stays hot, and a few records straddle the archived days' ends.
    assert!(bytes1 < bytes0 * 6 / 10, "{bytes0} -> {bytes1}");
    assert_eq!(c.retired[0].segment, 0);
    assert_eq!(c.retired[0].copies_moved, 1, "the quarantine entry's copy");
    assert!(
        c.retired.iter().any(|r| r.records_moved > 0),
        "straddling records"
    );
    for r in &c.retired {
        let path = ledger::valuelog::segment_path(tmp.path(), r.segment);
        assert!(!path.exists(), "{} removed", path.display());
    }
    assert_eq!(view(&l), before, "reads after compaction");
    assert_eq!(l.tier().retired_segments().unwrap(), c.retired);
    // Again: nothing more to do.
    let again = l.tier().compact_values().unwrap();
    assert!(
        again.retired.is_empty() && again.leftovers_removed == 0,
        "{again:?}"
    );
    drop(l);
    copies_check(tmp.path());
    let l = open_small(tmp.path());
    assert!(l.recovered().is_empty(), "{:?}", l.recovered());
    assert_eq!(view(&l), before, "reads after a reopen");
}

/// Copies the closed ledger's sled files aside, or puts such a copy back: what sled holds
/// after a crash that lost every commit since the copy (the value log stays as written).
fn sled_copy(from: &Path, to: &Path) {
    let skip = |name: &std::ffi::OsStr| {
        [ledger::valuelog::DIR, ledger::tier::DIR].contains(&name.to_str().unwrap())
    };
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(to).unwrap() {
        let e = e.unwrap();
        if !skip(&e.file_name()) {
            let _ = std::fs::remove_dir_all(e.path());
            let _ = std::fs::remove_file(e.path());
        }
    }
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if skip(&name) {
            continue;
        }
        if e.file_type().unwrap().is_dir() {
            sled_copy(&e.path(), &to.join(&name));
        } else {
            std::fs::copy(e.path(), to.join(&name)).unwrap();
        }
    }
}

/// A process killed in a compaction: after the relocated entries are written but before
/// sled's commit, and after the commit but before the file's removal. Each stop is
/// followed by a reopen: every read is as before, and the next run completes.
#[test]
fn a_compaction_stopped_anywhere_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ledger");
    let aside = tmp.path().join("aside");
    let l = sealed_small(&dir);
    l.tier().archive_move(DAYS[0]).unwrap();
    let before = view(&l);
    drop(l);

    // Killed before sled's commit: the relocated entries are in the log, unreferenced.
    sled_copy(&dir, &aside);
    let l = open_small(&dir);
    let moved: Vec<_> = (0..6)
        .map(|s| l.tier().relocate_segment(s).unwrap())
        .collect();
    assert!(moved.iter().any(|r| r.records_moved > 0), "{moved:?}");
    drop(l);
    sled_copy(&aside, &dir);
    let l = open_small(&dir);
    let found = l.recovered();
    assert!(found.records > 0 && found.stored == 0, "{found:?}");
    assert_eq!(found.duplicates, found.events, "{found:?}");
    assert!(l.tier().retired_segments().unwrap().is_empty());
    assert_eq!(view(&l), before, "after the lost commit");

    // Killed after the commit, before the file's removal.
    let r = l.tier().relocate_segment(0).unwrap();
    let seg0 = ledger::valuelog::segment_path(&dir, 0);
    assert!(seg0.exists());
    drop(l);
    let l = open_small(&dir);
    assert_eq!(view(&l), before, "after the retiring commit");
    assert_eq!(l.tier().retired_segments().unwrap(), vec![r]);
    let c = l.tier().compact_values().unwrap();
    assert_eq!(c.leftovers_removed, 1, "{c:?}");
    assert!(!seg0.exists() && !c.retired.is_empty(), "{c:?}");
    assert_eq!(view(&l), before, "after the run that completes it");
    drop(l);
    copies_check(&dir);
}

/// A closed segment whose bytes fail their checksum inside the file may hide entries:
/// kept and named. The others are retired as usual.
#[test]
fn a_damaged_segment_is_kept_and_named() {
    let tmp = tempfile::tempdir().unwrap();
    let l = sealed_small(tmp.path());
    for day in &DAYS[..2] {
        l.tier().archive_move(day).unwrap();
    }
    let before = view(&l);
    let seg1 = ledger::valuelog::segment_path(tmp.path(), 1);
    let mut bytes = std::fs::read(&seg1).unwrap();
    bytes[100] ^= 0x40;
    std::fs::write(&seg1, &bytes).unwrap();
    let c = l.tier().compact_values().unwrap();
    assert_eq!(c.kept_damaged.len(), 1, "{c:?}");
    assert!(
        c.kept_damaged[0].contains("00000001.seg") && c.kept_damaged[0].contains("checksum"),
        "{c:?}"
    );
    assert!(seg1.exists(), "kept");
    assert!(c.retired.len() >= 5, "{c:?}");
    assert_eq!(view(&l), before);
}

/// Whether any file under `dir` holds `needle`.
fn any_file_holds(dir: &Path, needle: &[u8]) -> bool {
    std::fs::read_dir(dir).unwrap().any(|e| {
        let p = e.unwrap().path();
        if p.is_dir() {
            return any_file_holds(&p, needle);
        }
        let bytes = std::fs::read(&p).unwrap();
        bytes.windows(needle.len()).any(|w| w == needle)
    })
}

/// After a retention removal, compaction takes the removed day's event bytes off the disk:
/// no file of the ledger holds them. The ledger still verifies from the seal's heads.
#[test]
fn a_removed_day_leaves_no_event_bytes_after_compaction() {
    use ledger::tier::retention::Removal;
    let tmp = tempfile::tempdir().unwrap();
    let l = sealed_small(tmp.path());
    let admin = SigningKey::derive_for_simulation("admin");
    l.writer().trust_admin_keys([admin.public()]).unwrap();
    let (entry, _) = l.tier().archive_move(DAYS[0]).unwrap();
    // An event well inside the first day (its records are whole there).
    let t = table("T-A");
    let seq = l.reader().day_seal(DAYS[0]).unwrap().unwrap().tables[0]
        .first_seq
        .0
        + 20;
    let inside = l
        .reader()
        .events(&t, seq..=seq)
        .next()
        .unwrap()
        .unwrap()
        .bytes;
    let now = rule().bounds(DAYS[0]).unwrap().ends_at_ns + 30 * DAY_NS;
    l.tier()
        .retention_remove(&Removal::sign(&entry, 30, &admin, now), now)
        .unwrap();
    assert!(
        any_file_holds(tmp.path(), &inside),
        "still in the value log"
    );
    let c = l.tier().compact_values().unwrap();
    assert!(!c.retired.is_empty(), "{c:?}");
    assert!(!any_file_holds(tmp.path(), &inside), "gone from every file");
    let report = l.verifier().verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.failures());
    drop(l);
    copies_check(tmp.path());
}

/// A server stopping gives up a day file being written: nothing is committed, and the
/// next move of the day completes.
#[test]
fn a_move_given_up_on_stop_leaves_the_day_hot() {
    if common::skip_unless_sled("the archive tier is SledStore's (redb has no tier)") {
        return;
    }
    use std::sync::atomic::AtomicBool;
    let tmp = tempfile::tempdir().unwrap();
    let l = sealed_ledger(tmp.path());
    let before = view(&l);
    let end = rule().bounds(DAYS[2]).unwrap().ends_at_ns;
    let stopped = l
        .tier()
        .archive_pass(end + DAY_NS, DAY_NS, 3, &AtomicBool::new(true));
    match stopped {
        Err(ledger::Error::Tier(why)) => assert!(why.contains("stopped"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert!(
        l.tier().tier_entries().unwrap().is_empty(),
        "every day still hot"
    );
    assert_eq!(view(&l), before);
    let pass = l
        .tier()
        .archive_pass(end + DAY_NS, DAY_NS, 3, &AtomicBool::new(false))
        .unwrap();
    assert_eq!(pass.moved.len(), 3);
    assert_eq!(view(&l), before);
}

/// Readers taking turns between two tables' archived records (verify's threads, the
/// API's requests) decode each table's day once.
#[test]
fn reads_alternating_between_archived_tables_decode_each_frame_once() {
    if common::skip_unless_sled("the archive tier is SledStore's (redb has no tier)") {
        return;
    }
    use ledger::store::{Space, Store};
    let tmp = tempfile::tempdir().unwrap();
    let l = sealed_ledger(tmp.path());
    l.tier().archive_move(DAYS[0]).unwrap();
    let seal = l.reader().day_seal(DAYS[0]).unwrap().unwrap();
    drop(l);
    let store = SledStore::open(tmp.path()).unwrap();
    // Records wholly inside the day: from after its first seq to before its last.
    let archived = |t: &schemas::seal::SealedTable| -> Vec<Vec<u8>> {
        let from = ledger::record::seq_key(&t.table, t.first_seq.0 + 1);
        let to = ledger::record::seq_key(&t.table, t.last_seq.0);
        let keys = store.keys(Space::Batch, &from, Some(&to));
        keys.map(|k| k.unwrap()).collect()
    };
    let (a, b) = (archived(&seal.tables[0]), archived(&seal.tables[1]));
    assert!(a.len() >= 5 && b.len() >= 5, "{} {}", a.len(), b.len());
    for (ka, kb) in a.iter().zip(&b) {
        assert!(store.get(Space::Batch, ka).unwrap().is_some());
        assert!(store.get(Space::Batch, kb).unwrap().is_some());
    }
    assert_eq!(store.tier_frames_loaded(), 2);
}
