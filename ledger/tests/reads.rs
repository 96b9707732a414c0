//! The ledger's indexed reads over a ledger filled through the append path: rounds by
//! start time (`Space::RoundTime`), whose entries the append path writes when a round's
//! first event is stored, possibly in a call after the round's other events.

mod common;

use common::{fill, table, T0_NS};
use ledger::Ledger;
use schemas::{RoundId, Seq};

const SECOND: i64 = 1_000_000_000;

#[test]
fn rounds_in_a_time_range_come_by_start_time_then_table() {
    let dir = tempfile::tempdir().unwrap();
    let l = Ledger::open(dir.path()).unwrap();
    let (a, b) = (table("CSP-01"), table("UTH-02"));
    // Event `seq` of each chain happens at T0 + seq seconds in round seq / 10 + 1; calls of
    // 7 events per table, so rounds span calls.
    fill(&l, &[a.clone(), b.clone()], 35, 7);

    let found = |from: i64, to: i64| -> Vec<(String, u64, u64, u64)> {
        l.reader()
            .rounds_in_time_range(T0_NS + from * SECOND, T0_NS + to * SECOND)
            .unwrap()
            .into_iter()
            .map(|(t, s)| (t.to_string(), s.round.0, s.first_seq.0, s.last_seq.0))
            .collect()
    };
    // From inclusive, to exclusive: rounds 2 and 3 start at seqs 10 and 20.
    assert_eq!(
        found(10, 30),
        vec![
            (a.to_string(), 2, 10, 19),
            (b.to_string(), 2, 10, 19),
            (a.to_string(), 3, 20, 29),
            (b.to_string(), 3, 20, 29),
        ]
    );
    assert_eq!(
        found(11, 21),
        vec![(a.to_string(), 3, 20, 29), (b.to_string(), 3, 20, 29)]
    );
    // Round 1 starts with seq 1; round 4 (seqs 30-35) is still open.
    assert_eq!(
        found(0, 2),
        vec![(a.to_string(), 1, 1, 9), (b.to_string(), 1, 1, 9)]
    );
    assert_eq!(
        found(30, 31),
        vec![(a.to_string(), 4, 30, 35), (b.to_string(), 4, 30, 35)]
    );
    assert!(found(31, 1_000).is_empty());
    assert!(found(20, 20).is_empty());

    let r = l.reader().round_events(&a, RoundId(2)).unwrap();
    assert_eq!(
        (r.first().unwrap().seq, r.last().unwrap().seq, r.len()),
        (Seq(10), Seq(19), 10)
    );
}
