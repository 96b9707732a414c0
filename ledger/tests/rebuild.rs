//! A ledger rebuilt from its sealed days' files (`ledger::rebuild`): the same heads and
//! digest as the ledger they came from; a tampered file, a day left out, a day imported
//! twice, a file under another key each refused, naming the day.

mod common;

use common::archived::{rule, Builder};
use ledger::rebuild::check_day_file;
use ledger::{Error, Ledger};
use schemas::attest::SigningKey;

/// Three sealed days of two tables (`Builder`): each day's file, and the source ledger.
fn sealed_days(dir: &std::path::Path) -> (Ledger, Vec<(String, Vec<u8>)>) {
    let l = Ledger::open(dir.join("source")).expect("open");
    l.writer().set_day_rule(&rule()).expect("rule");
    let mut b = Builder::new().events_per_day(40);
    let mut files = Vec::new();
    for _ in 0..3 {
        b.append_day(&l);
        let day = b.seal_day(&l);
        files.push((day.clone(), l.reader().day_file(&day).expect("day file")));
    }
    (l, files)
}

fn seal_key() -> schemas::attest::PublicKey {
    SigningKey::derive_for_simulation("house-seal").public()
}

fn fresh(dir: &std::path::Path, name: &str) -> Ledger {
    let l = Ledger::open(dir.join(name)).expect("open");
    l.writer().set_day_rule(&rule()).expect("rule");
    l
}

fn refused_day(r: Result<ledger::rebuild::CheckedDay, Error>) -> (String, String) {
    match r {
        Err(Error::Import { day, why }) => (day, why),
        other => panic!("not refused as an import: {other:?}"),
    }
}

#[test]
fn a_ledger_rebuilt_from_its_day_files_has_the_same_heads_and_digest() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (source, files) = sealed_days(tmp.path());
    let rebuilt = fresh(tmp.path(), "rebuilt");
    let mut events = 0;
    for (day, file) in &files {
        let checked = rebuilt
            .writer()
            .import_day(file, &seal_key())
            .expect("import");
        assert_eq!(&checked.seal.day, day);
        events += checked.events;
    }
    assert_eq!(events, 3 * 40 * 2);
    assert_eq!(source.reader().heads(), rebuilt.reader().heads());
    let (a, b) = (
        source.verifier().digest(1).expect("digest"),
        rebuilt.verifier().digest(1).expect("digest"),
    );
    assert_eq!(a, b);
    for (day, _) in &files {
        assert_eq!(
            source.reader().day_seal(day).unwrap(),
            rebuilt.reader().day_seal(day).unwrap()
        );
    }
    let last = check_day_file(&files[2].1, &seal_key()).expect("check");
    assert_eq!(last.last_stream_seq, Some(3 * 40 * 2));
}

#[test]
fn a_tampered_file_is_refused_naming_its_day_and_nothing_of_it_is_sealed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (_source, files) = sealed_days(tmp.path());
    let rebuilt = fresh(tmp.path(), "rebuilt");
    rebuilt
        .writer()
        .import_day(&files[0].1, &seal_key())
        .expect("day 1");
    // One byte near the end of the file: inside the last table's frame.
    let mut bad = files[1].1.clone();
    let at = bad.len() - 20;
    bad[at] ^= 0x40;
    let (day, why) = refused_day(rebuilt.writer().import_day(&bad, &seal_key()));
    assert_eq!(day, files[1].0);
    assert!(why.contains("does not match its seal"), "{why}");
    assert!(rebuilt.reader().day_seal(&files[1].0).unwrap().is_none());
    // Another key's seal is refused before any frame is read.
    let other = SigningKey::derive_for_simulation("not-the-house").public();
    let (day, why) = refused_day(rebuilt.writer().import_day(&files[1].1, &other));
    assert_eq!(day, files[1].0);
    assert!(why.contains("does not verify"), "{why}");
}

#[test]
fn a_day_left_out_or_imported_twice_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (_source, files) = sealed_days(tmp.path());
    // The first day missing: the second's seal names a previous seal.
    let a = fresh(tmp.path(), "a");
    let (day, why) = refused_day(a.writer().import_day(&files[1].1, &seal_key()));
    assert_eq!(day, files[1].0);
    assert!(why.contains("an earlier day is missing"), "{why}");
    assert!(a.reader().heads().is_empty(), "nothing appended");
    // A day between missing: the third does not follow the first.
    a.writer()
        .import_day(&files[0].1, &seal_key())
        .expect("day 1");
    let (day, why) = refused_day(a.writer().import_day(&files[2].1, &seal_key()));
    assert_eq!(day, files[2].0);
    assert!(why.contains("a day between them is missing"), "{why}");
    // The same day again.
    let (day, why) = refused_day(a.writer().import_day(&files[0].1, &seal_key()));
    assert_eq!(day, files[0].0);
    assert!(why.contains("holds its seal already"), "{why}");
    a.writer()
        .import_day(&files[1].1, &seal_key())
        .expect("day 2 in order");
}

#[test]
fn bytes_that_are_not_a_day_file_are_refused() {
    let r = check_day_file(b"RLDAYv1\nnot a header", &seal_key());
    let (_, why) = refused_day(r);
    assert!(why.contains("not a day file"), "{why}");
}
