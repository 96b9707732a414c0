//! Refusals are idempotent: a refused message sent again (the same bytes, a new stream
//! seq) is counted against its first quarantine entry, not stored again; the same
//! delivery again is a redelivery; the counts survive a reopen and `verify` holds.

mod common;

use common::{chain, incoming, table};
use ledger::{reason, Appended, Incoming, Ledger, Refused};

/// Times the refused event is sent in `one_refused_event_sent_10000_times_is_one_entry`.
const SENDS: u64 = 10_000;
/// Messages per append call in that test (below `ledger::APPEND_BATCH_LEN_MAX`).
const CALL_LEN: usize = 1_000;

/// An event 3 of `t` whose prev is not event 2's hash: refused (`prev_mismatch`) the same
/// way each time it is sent.
fn refused_bytes(t: &schemas::TableId) -> Vec<u8> {
    common::chain_from(t, 3, schemas::Hash32([7; 32]), 1)
        .remove(0)
        .1
}

/// One refused event appended 10,000 times under different stream seqs: one entry, its
/// repeat count 9,999 (the sends after the first), the same delivery again is
/// `QuarantinedBefore`, the device's real events are stored, `verify` is ok, and after a
/// reopen the count is still there and goes on from it.
#[test]
fn one_refused_event_sent_10000_times_is_one_entry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = table("REP-1");
    let good = chain(&t, 4);
    let bad = refused_bytes(&t);
    let l = Ledger::open(dir.path()).expect("open");
    let first_two: Vec<Incoming> = (0..2)
        .map(|i| incoming(&t, good[i].1.clone(), i as u64 + 1))
        .collect();
    l.writer().append_batch(&first_two).expect("append");
    let sends: Vec<Incoming> = (0..SENDS)
        .map(|i| incoming(&t, bad.clone(), 100 + i))
        .collect();
    let mut outcomes = Vec::new();
    for call in sends.chunks(CALL_LEN) {
        outcomes.extend(l.writer().append_batch(call).expect("append"));
        l.flush().expect("flush");
    }
    let (id, code) = match outcomes[0] {
        Appended::Refused(Refused::Quarantined { id, reason }) => (id, reason),
        ref other => panic!("the first send is quarantined, got {other:?}"),
    };
    assert_eq!(code, reason::PREV_MISMATCH);
    let repeated = Appended::Refused(Refused::Repeated { id, reason: code });
    assert!(
        outcomes[1..].iter().all(|o| *o == repeated),
        "every later send repeats"
    );
    assert_eq!(l.reader().quarantine().expect("quarantine").len(), 1);
    assert_eq!(
        l.reader().quarantine_repeats(id).expect("repeats"),
        SENDS - 1
    );
    assert_eq!(
        l.reader().quarantine_counts().get(code),
        Some(&1),
        "entries, not sends"
    );
    assert_eq!(l.reader().quarantine_head().entries, 1);

    // The same deliveries again: the entry's own and a counted repeat's.
    let again = l
        .writer()
        .append_batch(&[sends[0].clone(), sends[5_000].clone(), sends[9_999].clone()])
        .expect("append");
    assert!(
        again
            .iter()
            .all(|o| *o == Appended::Refused(Refused::QuarantinedBefore { id })),
        "{again:?}"
    );
    l.flush().expect("flush");
    assert!(l.verifier().verify().expect("verify").is_ok());
    let view = l.reader().quarantine_view(None, None, 0, 10).expect("view");
    assert_eq!(view.items.len(), 1);
    assert_eq!(view.items[0].repeats, SENDS - 1);
    drop(l);

    let l = Ledger::open(dir.path()).expect("reopen");
    assert_eq!(
        l.reader().quarantine_repeats(id).expect("repeats"),
        SENDS - 1
    );
    assert_eq!(
        l.reader()
            .quarantine_entry(id)
            .expect("entry")
            .expect("kept")
            .repeats,
        SENDS - 1
    );
    let redelivered = l
        .writer()
        .append_batch(&[sends[9_999].clone()])
        .expect("append");
    assert_eq!(
        redelivered,
        vec![Appended::Refused(Refused::QuarantinedBefore { id })],
        "after a reopen"
    );
    let once_more = l
        .writer()
        .append_batch(&[incoming(&t, bad.clone(), 30_000)])
        .expect("append");
    assert_eq!(once_more, vec![repeated]);
    // The device's real events go on being stored.
    let rest: Vec<Incoming> = (2..4)
        .map(|i| incoming(&t, good[i].1.clone(), 40_000 + i as u64))
        .collect();
    let stored = l.writer().append_batch(&rest).expect("append");
    assert!(
        stored.iter().all(|o| matches!(o, Appended::Stored { .. })),
        "{stored:?}"
    );
    l.flush().expect("flush");
    assert_eq!(l.reader().quarantine_repeats(id).expect("repeats"), SENDS);
    assert_eq!(l.reader().quarantine().expect("quarantine").len(), 1);
    assert!(l.verifier().verify().expect("verify").is_ok());
}

/// A repeat is the same bytes for the same reason: the same bytes refused for another
/// reason (here on another table's subject) make an entry of their own, and so do other
/// bytes. Repeats within one call count as across calls.
#[test]
fn a_repeat_needs_the_same_bytes_and_the_same_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = table("REP-2");
    let l = Ledger::open(dir.path()).expect("open");
    let junk = |bytes: &[u8], stream_seq| incoming(&t, bytes.to_vec(), stream_seq);
    let mut wrong_subject = junk(&chain(&t, 1)[0].1, 4);
    wrong_subject.subject_table = Some(table("REP-3"));
    let out = l
        .writer()
        .append_batch(&[
            junk(b"garbage", 1),
            junk(b"garbage", 2),
            junk(b"other garbage", 3),
            wrong_subject.clone(),
        ])
        .expect("append");
    let Appended::Refused(Refused::Quarantined { id, reason: code }) = out[0] else {
        panic!("{out:?}");
    };
    assert_eq!(code, reason::UNDECODABLE);
    assert_eq!(
        out[1],
        Appended::Refused(Refused::Repeated { id, reason: code })
    );
    assert!(
        matches!(out[2], Appended::Refused(Refused::Quarantined { .. })),
        "{out:?}"
    );
    assert!(
        matches!(
            out[3],
            Appended::Refused(Refused::Quarantined {
                reason: reason::WRONG_SUBJECT,
                ..
            })
        ),
        "{out:?}"
    );
    wrong_subject.stream_seq = 5;
    let out = l.writer().append_batch(&[wrong_subject]).expect("append");
    assert!(
        matches!(
            out[0],
            Appended::Refused(Refused::Repeated {
                reason: reason::WRONG_SUBJECT,
                ..
            })
        ),
        "{out:?}"
    );
    l.flush().expect("flush");
    assert_eq!(l.reader().quarantine().expect("quarantine").len(), 3);
    assert_eq!(l.reader().quarantine_repeats(id).expect("repeats"), 1);
    assert!(l.verifier().verify().expect("verify").is_ok());
}
