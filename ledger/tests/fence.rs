//! Fencing inside one process: a table's record damaged after the ledger opened. The
//! next call touching it fails on that table, so the ledger fences it and takes the call
//! again: the other table's events are stored, the damaged table's kept as `table_fenced`.
//! An unfence is refused while the damage stays; after the repair, an admin's signed
//! unfence (`ledger::admin`) lifts the fence before the events that follow it are judged.

use ledger::{Appended, Incoming, Ledger, Refused};
use schemas::chain::event_hash;
use schemas::*;

fn chain(table: &str, from: u64, n: u64, prev: &mut Hash32, stream_seq: &mut u64) -> Vec<Incoming> {
    let table = TableId::new(table).expect("id");
    (from..from + n)
        .map(|seq| {
            let e = Event {
                v: WIRE_VERSION,
                table: table.clone(),
                device: DeviceId::new("ctl-1").expect("id"),
                seq: Seq(seq),
                prev: *prev,
                occurred_at_ns: 1_700_000_000_000_000_000,
                round: None,
                body: EventBody::Announced {
                    announcement: Announcement::PlaceYourBets,
                },
            };
            let bytes = codec::to_bincode(&e);
            *prev = event_hash(prev, &bytes);
            *stream_seq += 1;
            Incoming {
                bytes,
                subject_table: Some(table.clone()),
                stream_seq: *stream_seq,
                received_at_ns: 1_700_000_000_000_000_000,
                provenance: Default::default(),
            }
        })
        .collect()
}

#[test]
fn a_table_damaged_while_open_is_fenced_at_the_next_append_and_the_other_goes_on() {
    if ledger::store::choice::skip_unless_sled("value-log segments damaged or deleted") {
        return;
    }
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::open(dir.path()).expect("open");
    let (mut bad_prev, mut good_prev, mut stream_seq) = (Hash32::ZERO, Hash32::ZERO, 0);
    ledger
        .writer()
        .append_batch(&chain("T-BAD", 1, 5, &mut bad_prev, &mut stream_seq))
        .expect("append");
    ledger.flush().expect("flush");
    let seg = ledger::valuelog::segment_path(dir.path(), 0);
    let bad_end = std::fs::metadata(&seg).expect("segment").len();
    ledger
        .writer()
        .append_batch(&chain("T-OK", 1, 5, &mut good_prev, &mut stream_seq))
        .expect("append");
    ledger.flush().expect("flush");
    // Reopened, then damaged: the open's checks passed, and nothing has read it since.
    drop(ledger);
    let ledger = Ledger::open(dir.path()).expect("reopen");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&seg)
        .expect("segment");
    let mut b = [0u8];
    file.read_exact_at(&mut b, bad_end / 2).expect("read");
    file.write_all_at(&[b[0] ^ 0xff], bad_end / 2)
        .expect("damage");
    assert!(
        ledger.reader().fenced().is_empty(),
        "not fenced before anything reads it"
    );

    let mut batch = chain("T-BAD", 6, 3, &mut bad_prev, &mut stream_seq);
    batch.extend(chain("T-OK", 6, 3, &mut good_prev, &mut stream_seq));
    let out = ledger
        .writer()
        .append_batch(&batch)
        .expect("the other table goes on");
    ledger.flush().expect("flush");
    let fenced: Vec<_> = out[..3]
        .iter()
        .filter(|o| matches!(o, Appended::Refused(Refused::Quarantined { reason, .. }) if *reason == ledger::reason::TABLE_FENCED))
        .collect();
    assert_eq!(fenced.len(), 3, "{out:?}");
    assert!(
        out[3..]
            .iter()
            .all(|o| matches!(o, Appended::Stored { .. })),
        "{out:?}"
    );
    let fences = ledger.reader().fenced();
    let t_bad = TableId::new("T-BAD").expect("id");
    assert_eq!(fences[&t_bad].check, ledger::fence::check::HEAD_UNREADABLE);
    assert_eq!(
        ledger
            .reader()
            .head(&TableId::new("T-OK").expect("id"))
            .map(|h| h.seq.0),
        Some(8)
    );
    assert_eq!(ledger.reader().head(&t_bad).map(|h| h.seq.0), Some(5));
    assert!(
        ledger.writer().unfence(&t_bad, "test", 1).is_err(),
        "still damaged"
    );
    assert_eq!(ledger.reader().fence_log().expect("log").len(), 0);
    // Repaired (the byte put back): an admin's unfence lifts the fence.
    file.write_all_at(&[b[0]], bad_end / 2).expect("repair");
    unfenced_by_an_act(&ledger, &t_bad, &mut bad_prev, &mut stream_seq);
}

/// An admin's unfence of `t_bad` arrives on the stream, followed in the same batch by
/// its seqs 9 and 10: the 3 kept events are appended again before those are judged.
fn unfenced_by_an_act(
    ledger: &Ledger,
    t_bad: &TableId,
    bad_prev: &mut Hash32,
    stream_seq: &mut u64,
) {
    let admin = schemas::attest::SigningKey::derive_for_simulation("fence test admin");
    ledger
        .writer()
        .trust_admin_keys([admin.public()])
        .expect("trust");
    let act = unfence_act(&admin, t_bad, stream_seq);
    let mut batch = vec![act.clone()];
    batch.extend(chain("T-BAD", 9, 2, bad_prev, stream_seq));
    let out = ledger.writer().append_batch(&batch).expect("append");
    ledger.flush().expect("flush");
    assert_eq!(
        out[0],
        Appended::Admin {
            kind: "unfence",
            first: true
        }
    );
    // The unfence took effect before seqs 9 and 10 were judged: stored, not fenced.
    assert!(
        out[1..]
            .iter()
            .all(|o| matches!(o, Appended::Stored { .. })),
        "{out:?}"
    );
    assert_eq!(ledger.reader().head(t_bad).map(|h| h.seq.0), Some(10));
    assert!(ledger.reader().fenced().is_empty());
    let log = ledger.reader().admin_log().expect("admin log");
    assert_eq!(log.len(), 1);
    assert!(
        log[0]
            .outcome
            .contains("3 kept entries appended again (3 stored"),
        "{log:?}"
    );
    // Delivered again: recognised, not taken twice.
    let again = ledger.writer().append_batch(&[act]).expect("append");
    assert_eq!(
        again[0],
        Appended::Admin {
            kind: "unfence",
            first: false
        }
    );
    assert_eq!(ledger.reader().fence_log().expect("log").len(), 1);
}

/// An admin's signed unfence of `table`, as it arrives on `admin.acts`.
fn unfence_act(
    admin: &schemas::attest::SigningKey,
    table: &TableId,
    stream_seq: &mut u64,
) -> Incoming {
    use schemas::admin::{Act, AdminAct, AdminBody};
    let body = AdminBody {
        act: Act::Unfence {
            table: table.clone(),
        },
        note: "repaired".into(),
        signed_at_ns: 1_700_000_000_000_000_000,
    };
    *stream_seq += 1;
    Incoming {
        bytes: AdminAct::sign(admin, body).expect("sign").to_wire(),
        subject_table: None,
        stream_seq: *stream_seq,
        received_at_ns: 1_700_000_000_000_000_000,
        provenance: Default::default(),
    }
}

/// The value log's last segment deleted (the fault an operator met): the ledger opens,
/// fences the table whose records it held, and a new table's events go to a new segment
/// numbered past the missing one, never to a file under its number (which sled's
/// pointers into the lost segment would then misread).
#[test]
fn a_deleted_last_segment_fences_its_tables_and_is_never_reused() {
    if ledger::store::choice::skip_unless_sled("value-log segments damaged or deleted") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut prev, mut other, mut stream_seq) = (Hash32::ZERO, Hash32::ZERO, 0);
    {
        let l = Ledger::open(dir.path()).expect("open");
        l.writer()
            .append_batch(&chain("T-LOST", 1, 5, &mut prev, &mut stream_seq))
            .expect("append");
        l.flush().expect("flush");
    }
    std::fs::remove_file(ledger::valuelog::segment_path(dir.path(), 0)).expect("delete");
    let l = Ledger::open(dir.path()).expect("a damaged ledger still opens");
    let lost = TableId::new("T-LOST").expect("id");
    assert_eq!(
        l.reader().fenced()[&lost].check,
        ledger::fence::check::HEAD_UNREADABLE
    );
    let out = l
        .writer()
        .append_batch(&chain("T-NEW", 1, 5, &mut other, &mut stream_seq))
        .expect("a new table goes on");
    l.flush().expect("flush");
    assert!(
        out.iter().all(|o| matches!(o, Appended::Stored { .. })),
        "{out:?}"
    );
    assert!(!ledger::valuelog::segment_path(dir.path(), 0).exists());
    assert!(ledger::valuelog::segment_path(dir.path(), 1).exists());
    let new = TableId::new("T-NEW").expect("id");
    assert_eq!(
        l.reader().events(&new, 1..=5).filter(|e| e.is_ok()).count(),
        5
    );
}
