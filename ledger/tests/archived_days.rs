//! Costs that stay flat as archived days pile up, shown by counting reads: opening a
//! ledger of 200 archived days reads exactly what opening one of 1 reads (no day file, no
//! catalog entry, no seal), and so do a lookup, a day's removal, a day's verify and a
//! restart.

mod common;

use common::archived::{Builder, TABLES};
use ledger::store::reads::StoreReads;
use ledger::store::Space;
use ledger::Ledger;
use schemas::{Seq, TableId};
use std::path::Path;

/// Archived days of the large ledger.
const DAYS_MANY: u32 = 200;

/// Builds a ledger of `days` archived days and one hot day; closes it.
fn build(dir: &Path, days: u32) -> String {
    let l = Ledger::open(dir).expect("open");
    Builder::new().build(&l, days)
}

fn reads(l: &Ledger) -> StoreReads {
    l.reader()
        .store_reads()
        .expect("a sled store counts its reads")
}

/// A step of `costs`, run on a ledger just opened.
type Step<'a> = (&'static str, &'a dyn Fn(&Ledger));

/// What the open and each step read, each step after a fresh open.
fn costs(dir: &Path, hot_day: &str) -> Vec<(&'static str, StoreReads)> {
    let t = TableId::new(TABLES[0]).expect("table");
    let steps: [Step; 6] = [
        ("day count", &|l| {
            assert!(l.tier().tier_day_count().expect("count") >= 1);
        }),
        ("days to archive", &|l| {
            let due = l.tier().days_to_archive(i64::MAX / 2, 0).expect("due");
            assert_eq!(due, [hot_day], "only the hot day is due");
        }),
        ("hot lookup", &|l| {
            let head = l.reader().head(&t).expect("head").seq.0;
            assert!(l.reader().stored_event(&t, head).expect("read").is_some());
        }),
        ("archived lookup", &|l| {
            assert!(l.reader().stored_event(&t, 1).expect("read").is_some());
        }),
        ("a day's removal", &|l| {
            assert_eq!(l.removed_day(hot_day).expect("removed_day"), None);
        }),
        ("verify_day", &|l| {
            let v = l.verifier().verify_day(hot_day, None).expect("verify_day");
            assert!(v.is_ok(), "{:?}", v.problems);
        }),
    ];
    let mut out = vec![("open", reads(&Ledger::open(dir).expect("reopen")))];
    for (name, f) in steps {
        let l = Ledger::open(dir).expect("reopen");
        let before = reads(&l);
        f(&l);
        out.push((name, minus(&reads(&l), &before)));
    }
    out
}

fn minus(a: &StoreReads, b: &StoreReads) -> StoreReads {
    let mut d = a.clone();
    for (x, y) in d.entries.iter_mut().zip(b.entries) {
        *x -= y;
    }
    d.day_files_opened -= b.day_files_opened;
    d.frames_loaded -= b.frames_loaded;
    d
}

#[test]
fn open_and_day_reads_do_not_grow_with_archived_days() {
    if common::skip_unless_sled("the archive tier is SledStore's (redb has no tier)") {
        return;
    }
    let (one, many) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let hot_one = build(one.path(), 1);
    let hot_many = build(many.path(), DAYS_MANY);
    let l = Ledger::open(many.path()).unwrap();
    assert_eq!(l.tier().tier_day_count().unwrap(), u64::from(DAYS_MANY));
    drop(l);
    let (a, b) = (costs(one.path(), &hot_one), costs(many.path(), &hot_many));
    for ((step, x), (_, y)) in a.iter().zip(&b) {
        println!("{step}: 1 day {x:?}\n{step}: {DAYS_MANY} days {y:?}");
        assert_eq!(
            x, y,
            "{step} reads the same at 1 and {DAYS_MANY} archived days"
        );
    }
    for (step, r) in &b[1..3] {
        assert_eq!(r.of(Space::Tier), 0, "{step} reads no catalog entry");
    }
    let open = &b[0].1;
    assert_eq!(open.of(Space::Tier), 0, "open reads no catalog entry");
    assert_eq!(open.of(Space::Seal), 0, "open reads no seal");
    assert_eq!((open.day_files_opened, open.frames_loaded), (0, 0));
    // A lookup in an archived day reads its own catalog entry and file, once.
    let archived = &b[4].1;
    assert_eq!(archived.of(Space::Tier), 1);
    assert_eq!(archived.day_files_opened, 1);
    // A day's removal reads that day's catalog entry at most, never the catalog.
    let removal = &b[5].1;
    assert!(removal.of(Space::Tier) <= 1, "{removal:?}");
}

#[test]
fn a_restart_reads_nothing_per_archived_day() {
    if common::skip_unless_sled("the archive tier is SledStore's (redb has no tier)") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut b = Builder::new();
    b.build(&Ledger::open(dir.path()).unwrap(), 20);
    let first = reads(&Ledger::open(dir.path()).unwrap());
    // Ten more archived days and a hot one, then a restart: the open reads as before.
    {
        let l = Ledger::open(dir.path()).unwrap();
        archive_days(&mut b, &l, 10);
        b.append_day(&l);
        b.seal_day(&l);
        assert_eq!(l.tier().tier_day_count().unwrap(), 30);
    }
    let l = Ledger::open(dir.path()).unwrap();
    let second = reads(&l);
    assert_eq!(second.of(Space::Tier), 0);
    assert_eq!((second.day_files_opened, second.frames_loaded), (0, 0));
    assert_eq!(first, second, "a restart after 10 more archived days");
    let t = TableId::new(TABLES[1]).unwrap();
    assert_eq!(l.reader().stored_event(&t, 1).unwrap().unwrap().seq, Seq(1));
}

/// Appends, seals and archives `days` days after the builder's current one.
fn archive_days(b: &mut Builder, l: &Ledger, days: u32) -> String {
    let mut last = String::new();
    for _ in 0..days {
        b.append_day(l);
        last = b.seal_day(l);
        l.tier().archive_move(&last).unwrap();
    }
    last
}

/// Every head in an archived day: the open checks each head against the day's seal and
/// opens no day file; a missing day file fences its tables, and nothing else does.
#[test]
fn heads_in_an_archived_day_are_checked_without_reading_its_file() {
    if common::skip_unless_sled("the archive tier is SledStore's (redb has no tier)") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut b = Builder::new();
    let last = {
        let l = Ledger::open(dir.path()).unwrap();
        b.build(&l, 3);
        archive_days(&mut b, &l, 2)
    };
    let l = Ledger::open(dir.path()).unwrap();
    let r = reads(&l);
    assert_eq!((r.day_files_opened, r.frames_loaded), (0, 0), "{r:?}");
    assert_eq!(r.of(Space::Seal), TABLES.len() as u64, "one seal per table");
    assert!(l.reader().fenced().is_empty(), "{:?}", l.reader().fenced());
    let v = l.verifier().verify().unwrap();
    assert!(v.is_ok(), "{v:?}");
    drop(l);
    let file = dir.path().join("archive").join(format!("{last}.rlday"));
    std::fs::rename(&file, dir.path().join("aside.rlday")).unwrap();
    let l = Ledger::open(dir.path()).unwrap();
    let fenced = l.reader().fenced();
    assert_eq!(fenced.len(), TABLES.len(), "{fenced:?}");
    for f in fenced.values() {
        assert_eq!(f.check, ledger::fence::check::HEAD_UNREADABLE);
        assert!(f.detail.contains("day file"), "{}", f.detail);
    }
    assert!(
        !l.verifier().verify().unwrap().is_ok(),
        "verify names the missing day file"
    );
}

/// Days archived out of order: the days still hot are found, and the mark through which
/// every day is cataloged moves only over a contiguous run.
#[test]
fn days_archived_out_of_order_are_all_found() {
    if common::skip_unless_sled("the archive tier is SledStore's (redb has no tier)") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let l = Ledger::open(dir.path()).unwrap();
    let mut b = Builder::new();
    let days: Vec<String> = (0..4)
        .map(|_| {
            b.append_day(&l);
            b.seal_day(&l)
        })
        .collect();
    let due = |l: &Ledger| l.tier().days_to_archive(i64::MAX / 2, 0).unwrap();
    l.tier().archive_move(&days[2]).unwrap();
    assert_eq!(due(&l), [days[0].as_str(), &days[1], &days[3]]);
    l.tier().archive_move(&days[0]).unwrap();
    assert_eq!(due(&l), [days[1].as_str(), &days[3]]);
    l.tier().archive_move(&days[1]).unwrap();
    assert_eq!(due(&l), [days[3].as_str()]);
    assert_eq!(l.tier().tier_day_count().unwrap(), 3);
    let before = reads(&l);
    assert_eq!(due(&l), [days[3].as_str()]);
    let r = minus(&reads(&l), &before);
    assert_eq!(
        r.of(Space::Seal),
        1,
        "only the hot day's seal is read: {r:?}"
    );
    assert_eq!(l.tier().tier_entries().unwrap().len(), 3);
}
