//! A flood of distinct refusals is bounded: past a source's entries per minute, refusals
//! are counted against (source, reason) with the stream seqs that keep their bytes and a
//! digest of them, not stored. Other sources and later minutes are unaffected; a
//! redelivery is not counted twice; the counts survive a reopen; `verify` holds.

mod common;

use common::{incoming, table};
use ledger::quarantine::{Bound, Overflow, SOURCE_ENTRIES_PER_MINUTE_MAX};
use ledger::{reason, Appended, Incoming, Ledger, Refused};

/// Distinct undecodable messages sent in the flood's minute, beyond the bound.
const PAST: u64 = 250;

/// Distinct bytes no decoder reads: a flood of different garbage.
fn garbage(n: u64) -> Vec<u8> {
    format!("not an event #{n}").into_bytes()
}

fn flood(t: &schemas::TableId, from_stream_seq: u64, count: u64, minute: i64) -> Vec<Incoming> {
    (0..count)
        .map(|i| {
            let mut m = incoming(t, garbage(from_stream_seq + i), from_stream_seq + i);
            m.received_at_ns += minute * 60_000_000_000;
            m
        })
        .collect()
}

/// The overflow counter the test expects for `msgs`, computed from the definition.
fn expected(msgs: &[Incoming]) -> Overflow {
    msgs.iter()
        .fold(Overflow::default(), |o, m| o.add(m.stream_seq, &m.bytes))
}

#[test]
fn a_flood_of_distinct_refusals_is_counted_past_the_bound() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (t, other) = (table("FLOOD-1"), table("CALM-1"));
    let l = Ledger::open(dir.path()).expect("open");
    let n = SOURCE_ENTRIES_PER_MINUTE_MAX + PAST;
    let msgs = flood(&t, 1, n, 0);
    let mut out = Vec::new();
    for call in msgs.chunks(500) {
        out.extend(l.append_batch(call).expect("append"));
    }
    let stored = out
        .iter()
        .filter(|o| matches!(o, Appended::Refused(Refused::Quarantined { .. })))
        .count();
    assert_eq!(stored as u64, SOURCE_ENTRIES_PER_MINUTE_MAX);
    let past = Appended::Refused(Refused::Overflowed {
        reason: reason::UNDECODABLE,
        bound: Bound::SourceRate,
    });
    assert!(
        out[stored..].iter().all(|o| *o == past),
        "the rest overflow"
    );
    let key = (t.as_str().to_string(), reason::UNDECODABLE.to_string());
    let counted = l.quarantine_overflows()[&key];
    assert_eq!(counted, expected(&msgs[stored..]));
    assert_eq!(counted.count, PAST);
    assert_eq!(counted.first_stream_seq, msgs[stored].stream_seq);
    // Another source in the same minute, and the flooding source a minute later: stored.
    let calm = l
        .append_batch(&flood(&other, 10_000, 3, 0))
        .expect("append");
    assert!(calm
        .iter()
        .all(|o| matches!(o, Appended::Refused(Refused::Quarantined { .. }))));
    let later = l.append_batch(&flood(&t, 20_000, 2, 1)).expect("append");
    assert!(later
        .iter()
        .all(|o| matches!(o, Appended::Refused(Refused::Quarantined { .. }))));
    // A redelivery of a counted message is not counted again.
    let again = l.append_batch(&msgs[n as usize - 1..]).expect("append");
    assert_eq!(again, vec![past]);
    assert_eq!(l.quarantine_overflows()[&key].count, PAST);
    l.flush().expect("flush");
    drop(l);
    let l = Ledger::open(dir.path()).expect("reopen");
    assert_eq!(l.quarantine_overflows()[&key], counted);
    assert_eq!(
        l.quarantine().expect("quarantine").len() as u64,
        SOURCE_ENTRIES_PER_MINUTE_MAX + 5
    );
    let report = l.verify().expect("verify");
    assert!(report.is_ok(), "{report:?}");
}
