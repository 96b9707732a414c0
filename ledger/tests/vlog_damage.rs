//! No loss that verify cannot see (issue 40, item 1). sled rolls back to an earlier copy
//! (RELIABILITY.md's loss) and a bit flips in the value log: recovery at open
//! resynchronises past the damaged entry and appends every whole entry after it again, and
//! the value log's check (`ledger::copies::check_copies`, what `verify` runs) names by
//! table and seq each event the value log holds that no chain does. Each case ends with
//! every acknowledged event present, or with that check failing by name.

mod common;

use common::{chain, closed, copy_dir, incoming, put_back_sled_files, table};
use ledger::copies::{check_copies, CopiesReport};
use ledger::store::{SledStore, PUT_COPY_TAG};
use ledger::valuelog::{segment_path, Found, Pointer, ValueLog, ENTRY_HEADER_LEN};
use ledger::{Appended, Ledger};
use schemas::TableId;
use std::path::Path;

const EVENTS: u64 = 60;
const PER_CALL: usize = 10;

/// Appends events `from..to` (0-based) of each table's chain, `PER_CALL` per table per call.
fn append(l: &Ledger, tables: &[TableId], from: usize, to: usize) {
    let chains: Vec<_> = tables.iter().map(|t| (t, chain(t, EVENTS))).collect();
    let mut start = from;
    while start < to {
        let mut batch = Vec::new();
        for (t, c) in &chains {
            for (i, (_, bytes)) in c.iter().enumerate().skip(start).take(PER_CALL) {
                batch.push(incoming(t, bytes.clone(), 1 + i as u64));
            }
        }
        for o in l.writer().append_batch(&batch).expect("append") {
            assert!(matches!(o, Appended::Stored { .. }), "{o:?}");
        }
        start += PER_CALL;
    }
    l.flush().expect("flush");
}

/// Every whole entry of the value log, in write order.
fn entries(dir: &Path) -> Vec<(Pointer, Vec<u8>)> {
    let log = ValueLog::open(dir).expect("value log");
    log.entries_after(0, 0)
        .expect("scan")
        .filter_map(|f| match f.expect("scan") {
            Found::Entry(p, v) => Some((p, v)),
            Found::Torn { .. } => None,
        })
        .collect()
}

/// Flips bit `bit` of the byte `at` bytes into the entry at `p`.
fn flip(dir: &Path, p: &Pointer, at: u64, bit: u8) {
    let seg = segment_path(dir, p.segment);
    let mut data = std::fs::read(&seg).expect("read");
    data[(p.offset + at) as usize] ^= 1 << bit;
    std::fs::write(&seg, &data).expect("write");
}

/// The table of a record entry's first event.
fn record_table(value: &[u8]) -> TableId {
    let events = ledger::record::decode_record(value).expect("record");
    let (event, _) = schemas::codec::decode(&events[0].bytes).expect("event");
    event.table
}

/// What `verify` runs on the value log, on the bare store.
fn logged_check(dir: &Path) -> CopiesReport {
    closed(dir);
    let store = SledStore::open(dir).expect("store");
    let report = check_copies(&store).expect("check");
    drop(store);
    closed(dir);
    report
}

/// Two tables, 30 events each kept in a copy of sled's files, then 30 more; sled put back
/// to the copy. Returns the first value-log entry written after the copy.
fn rolled_back(dir: &Path, tables: &[TableId]) -> Pointer {
    let earlier = tempfile::tempdir().expect("tempdir");
    let l = Ledger::open(dir).expect("open");
    append(&l, tables, 0, 30);
    drop(l);
    closed(dir);
    copy_dir(dir, earlier.path(), true);
    let kept = entries(dir).last().map(|(p, _)| p.end()).expect("entries");
    let l = Ledger::open(dir).expect("reopen");
    append(&l, tables, 30, EVENTS as usize);
    drop(l);
    closed(dir);
    put_back_sled_files(earlier.path(), dir);
    let after = entries(dir);
    let (first, _) = after
        .iter()
        .find(|(p, _)| (p.segment, p.offset) >= kept)
        .expect("an entry after the copy");
    *first
}

/// The two faults of issue 40: sled rolled back, and a bit flipped at `at` of the first
/// entry written after its copy. The entries after the damaged one come back; the damaged
/// record's table stops at 30, its later events held beyond the gap, and the check names
/// them by table and seq and names the damage.
fn two_faults(at: u64, bit: u8) {
    let dir = tempfile::tempdir().expect("tempdir");
    let tables = [table("VD-A"), table("VD-B")];
    let first = rolled_back(dir.path(), &tables);
    let value = entries(dir.path())
        .into_iter()
        .find(|(p, _)| *p == first)
        .map(|(_, v)| v)
        .expect("the entry");
    let damaged = record_table(&value);
    let other = tables.iter().find(|t| **t != damaged).expect("other");
    flip(dir.path(), &first, at, bit);

    let l = Ledger::open(dir.path()).expect("open after both faults");
    let found = l.recovered().clone();
    let case = format!("byte {at} bit {bit}: {found:?}");
    assert_eq!(found.damaged.len(), 1, "{case}");
    assert!(found.damaged[0].contains("bytes skipped"), "{case}");
    assert_eq!(
        found.records, 5,
        "every record after the damaged one: {case}"
    );
    let heads = l.reader().heads();
    let head = |t: &TableId| heads.iter().find(|h| h.table == *t).map(|h| h.seq.0);
    assert_eq!(head(other), Some(EVENTS), "{case}");
    assert_eq!(head(&damaged), Some(30), "{case}");
    drop(l);

    let report = logged_check(dir.path());
    assert!(!report.all_ok(), "{case}: events are missing: {report:?}");
    let problems = &report.logged.problems;
    assert!(
        problems.iter().any(|p| p.contains("a damaged entry")),
        "{case}: {problems:?}"
    );
    for seq in 41..=EVENTS {
        let want = format!("table {damaged} seq {seq}: in the value log whole");
        assert!(
            problems.iter().any(|p| p.contains(&want)),
            "{case}: {want} not named: {problems:?}"
        );
    }
    assert!(
        !problems
            .iter()
            .any(|p| p.contains(&format!("table {other} "))),
        "{case}: the other table is whole: {problems:?}"
    );
}

#[test]
fn sled_rolled_back_and_a_value_bit_flipped_loses_nothing_unseen() {
    if common::skip_unless_sled("damage to the value log and sled rollbacks") {
        return;
    }
    two_faults(ENTRY_HEADER_LEN as u64 + 100, 3);
}

#[test]
fn sled_rolled_back_and_a_length_bit_flipped_loses_nothing_unseen() {
    if common::skip_unless_sled("damage to the value log and sled rollbacks") {
        return;
    }
    // Past the segment's end (read as "a write cut short" before), and a little short.
    two_faults(3, 0);
    two_faults(0, 2);
}

#[test]
fn sled_rolled_back_and_a_checksum_bit_flipped_loses_nothing_unseen() {
    if common::skip_unless_sled("damage to the value log and sled rollbacks") {
        return;
    }
    two_faults(5, 6);
}

/// A plain rollback: before an open, the check names what sled lost by table and seq; an
/// open appends it again, and then the check passes.
#[test]
fn a_plain_rollback_is_named_before_the_open_and_repaired_by_it() {
    if common::skip_unless_sled("damage to the value log and sled rollbacks") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let tables = [table("VD-C"), table("VD-D")];
    rolled_back(dir.path(), &tables);
    let report = logged_check(dir.path());
    assert!(!report.all_ok(), "{report:?}");
    for t in &tables {
        let want = format!("table {t} seq 31: in the value log whole");
        assert!(
            report
                .logged
                .problems
                .iter()
                .any(|p| p.contains(&want) && p.contains("not in sled")),
            "{want}: {:?}",
            report.logged.problems
        );
    }
    let l = Ledger::open(dir.path()).expect("open");
    assert_eq!(l.recovered().records, 6);
    assert!(l.recovered().damaged.is_empty());
    assert!(l.reader().heads().iter().all(|h| h.seq.0 == EVENTS));
    drop(l);
    let report = logged_check(dir.path());
    assert!(report.all_ok(), "{report:?}");
    // Twelve records written, and one per table appended again in one recovery call; the
    // six sled lost are no longer referenced, their events found one by one.
    assert_eq!(report.logged.records, 14);
    assert_eq!(report.logged.unreferenced, 6);
    assert_eq!(report.logged.events_looked_up, 60);
}

/// A torn tail (half a header, as a crash leaves) is not damage: every acknowledged event
/// is present and the check passes.
#[test]
fn a_torn_tail_is_not_a_loss() {
    if common::skip_unless_sled("damage to the value log and sled rollbacks") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let tables = [table("VD-E")];
    let l = Ledger::open(dir.path()).expect("open");
    append(&l, &tables, 0, 20);
    drop(l);
    closed(dir.path());
    let seg = segment_path(dir.path(), 0);
    let mut data = std::fs::read(&seg).expect("read");
    data.extend_from_slice(&[0x40, 0, 0, 0, 1]);
    std::fs::write(&seg, &data).expect("write");
    let l = Ledger::open(dir.path()).expect("open");
    assert!(l.recovered().torn.is_some());
    assert!(l.recovered().damaged.is_empty());
    append(&l, &tables, 20, 40);
    drop(l);
    let report = logged_check(dir.path());
    assert!(report.all_ok(), "{report:?}");
    assert!(!report.torn.is_empty(), "the torn bytes are listed");
}

/// A flipped bit in each kind of entry the value log holds beyond a rolled-back sled: a
/// record, a quarantine entry's copy, a held event's copy. Everything after it comes back;
/// what it held is named, as damage, by the check.
#[test]
fn a_flipped_bit_in_each_entry_kind_hides_nothing_after_it() {
    if common::skip_unless_sled("damage to the value log and sled rollbacks") {
        return;
    }
    for kind in ["record", "quarantine", "held"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let earlier = tempfile::tempdir().expect("tempdir");
        let (t, u) = (table("VD-K"), table("VD-L"));
        let ct = chain(&t, 10);
        let cu = chain(&u, 10);
        let l = Ledger::open(dir.path()).expect("open");
        l.writer()
            .append_batch(&[incoming(&t, ct[0].1.clone(), 1)])
            .expect("append");
        l.flush().expect("flush");
        drop(l);
        closed(dir.path());
        copy_dir(dir.path(), earlier.path(), true);

        let l = Ledger::open(dir.path()).expect("reopen");
        let out = l
            .writer()
            .append_batch(&[incoming(&t, ct[1].1.clone(), 2)])
            .expect("record");
        assert!(matches!(out[0], Appended::Stored { .. }), "{out:?}");
        let out = l
            .writer()
            .append_batch(&[incoming(&t, b"not an event".to_vec(), 3)])
            .expect("garbage");
        assert!(matches!(out[0], Appended::Refused(_)), "{out:?}");
        let out = l
            .writer()
            .append_batch(&[incoming(&t, ct[4].1.clone(), 4)])
            .expect("beyond a gap");
        assert!(matches!(out[0], Appended::Held { .. }), "{out:?}");
        let batch: Vec<_> = cu
            .iter()
            .enumerate()
            .map(|(i, (_, b))| incoming(&u, b.clone(), 10 + i as u64))
            .collect();
        l.writer().append_batch(&batch).expect("table u");
        l.flush().expect("flush");
        drop(l);
        closed(dir.path());
        put_back_sled_files(earlier.path(), dir.path());

        let target = entries(dir.path())
            .into_iter()
            .skip(1)
            .find(|(_, v)| match kind {
                "record" => v[0] == ledger::record::RECORD_VERSION,
                "quarantine" => v[0] == PUT_COPY_TAG && v[1] == b'q',
                _ => v[0] == PUT_COPY_TAG && v[1] == b'p',
            })
            .map(|(p, _)| p)
            .expect("an entry of the kind");
        flip(dir.path(), &target, ENTRY_HEADER_LEN as u64 + 2, 1);

        let l = Ledger::open(dir.path()).expect("open after the loss");
        let found = l.recovered().clone();
        assert_eq!(found.damaged.len(), 1, "{kind}: {found:?}");
        let head_u = l
            .reader()
            .heads()
            .into_iter()
            .find(|h| h.table == u)
            .map(|h| h.seq.0);
        assert_eq!(
            head_u,
            Some(10),
            "{kind}: table u comes back after the damage"
        );
        drop(l);
        let report = logged_check(dir.path());
        assert!(!report.all_ok(), "{kind}: {report:?}");
        assert!(
            report
                .logged
                .problems
                .iter()
                .any(|p| p.contains("a damaged entry") && p.contains("bytes skipped")),
            "{kind}: {report:?}"
        );
    }
}

/// RUNBOOK.md's repair of a corrupt sled: sled's own files moved aside, the value log kept.
/// The open finds every record beyond sled's (empty) last commit and appends it again:
/// heads, a quarantine entry and a held event come back, and the check passes. With a
/// damaged value log too, the check names what is missing.
#[test]
fn sled_rebuilt_from_the_value_log_alone_holds_every_event() {
    if common::skip_unless_sled("damage to the value log and sled rollbacks") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let tables = [table("VD-R"), table("VD-S")];
    let l = Ledger::open(dir.path()).expect("open");
    append(&l, &tables, 0, 40);
    let t = &tables[0];
    let c = chain(t, EVENTS);
    let out = l
        .writer()
        .append_batch(&[incoming(t, b"not an event".to_vec(), 100)])
        .expect("garbage");
    assert!(matches!(out[0], Appended::Refused(_)), "{out:?}");
    let out = l
        .writer()
        .append_batch(&[incoming(t, c[45].1.clone(), 101)])
        .expect("beyond a gap");
    assert!(matches!(out[0], Appended::Held { .. }), "{out:?}");
    l.flush().expect("flush");
    let heads = l.reader().heads();
    drop(l);
    closed(dir.path());

    // sled's files moved aside: an empty directory but for the value log.
    let aside = tempfile::tempdir().expect("tempdir");
    copy_dir(dir.path(), aside.path(), true);
    let empty = tempfile::tempdir().expect("tempdir");
    put_back_sled_files(empty.path(), dir.path());

    let l = Ledger::open(dir.path()).expect("open on the value log alone");
    let found = l.recovered().clone();
    assert_eq!(found.events, 80, "{found:?}");
    assert_eq!(found.quarantine_restored, 1, "{found:?}");
    assert_eq!(found.held_events, 1, "{found:?}");
    assert_eq!(l.reader().heads(), heads);
    assert_eq!(l.reader().gaps().len(), 1, "the held event is held again");
    assert!(l.verifier().verify().expect("verify").is_ok());
    drop(l);
    let report = logged_check(dir.path());
    assert!(report.all_ok(), "{report:?}");
}
