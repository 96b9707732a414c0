//! Re-syncs (`ledger::resync`) through the append path and through recovery: a table held
//! behind an event refused as `unsigned` is unstuck by an admin's re-sync; sled then loses
//! that commit (its files put back to a copy taken before), and the open's recovery puts
//! the chain and the kept re-sync back as they were, whatever order it finds them in.

mod common;

use common::signed::{keys, Chain};
use common::{closed, copy_dir, put_back_sled_files};
use ledger::{Appended, Incoming, Ledger, Provenance, Refused};
use schemas::attest::{KeyAction, SigningKey};
use schemas::provenance::{EventSignature, HeaderEnrollment};
use schemas::resync::{Resync, ResyncTerms};
use schemas::DeviceId;

fn dealer() -> DeviceId {
    DeviceId::new("dealer-terminal").unwrap()
}

fn signed(c: &Chain, key: &SigningKey, mut msg: Incoming) -> Incoming {
    msg.provenance = Provenance::Signed(EventSignature::sign(key, &c.table, &dealer(), &msg.bytes));
    msg
}

fn requiring(dir: &std::path::Path, admin: &SigningKey) -> Ledger {
    let l = Ledger::open(dir).unwrap();
    l.writer().trust_admin_keys([admin.public()]).unwrap();
    l.writer().require_signed_events().unwrap();
    l
}

/// A chain of 3 stored events (the device enrolled by a header, then by its own event),
/// then seq 4 sent unsigned and 5..=7 held behind it. Returns the entry of seq 4.
fn stuck(l: &Ledger, c: &mut Chain, admin: &SigningKey, device: &SigningKey) -> u64 {
    let first = c.announce();
    let mut first = signed(c, device, first);
    if let Provenance::Signed(s) = &mut first.provenance {
        s.enrollment = Some(HeaderEnrollment::sign(
            admin,
            &c.table,
            &dealer(),
            device.public(),
        ));
    }
    let enroll = c.key_event(admin, device, KeyAction::Enroll);
    let third = c.announce();
    let batch = [first, signed(c, device, enroll), signed(c, device, third)];
    let out = l.writer().append_batch(&batch).unwrap();
    assert!(
        out.iter().all(|o| matches!(o, Appended::Stored { .. })),
        "{out:?}"
    );
    let refused = c.announce();
    let mut batch = vec![refused];
    for _ in 5..=7 {
        let next = c.announce();
        batch.push(signed(c, device, next));
    }
    let out = l.writer().append_batch(&batch).unwrap();
    let Appended::Refused(Refused::Quarantined { id, reason }) = out[0] else {
        panic!("{out:?}")
    };
    assert_eq!(reason, ledger::reason::UNSIGNED);
    assert!(
        out[1..].iter().all(|o| matches!(o, Appended::Held { .. })),
        "{out:?}"
    );
    l.flush().unwrap();
    id
}

/// The admin's re-sync of `c`'s seq 4, from entry `id`, as its own delivery.
fn resync_of(l: &Ledger, c: &mut Chain, admin: &SigningKey, id: u64) -> (Resync, Incoming) {
    let head = l.reader().head(&c.table).unwrap();
    let terms = ResyncTerms {
        table: c.table.clone(),
        head_seq: head.seq,
        head_hash: head.hash,
        event_hash: c.hashes[3],
        quarantine_id: id,
        note: "case 3".into(),
        signed_at_ns: common::signed::T0,
    };
    let r = Resync::sign(admin, terms).unwrap();
    let msg = c.incoming(r.to_wire());
    (r, msg)
}

#[test]
fn a_resync_lost_with_its_commit_comes_back_with_the_chain() {
    if common::skip_unless_sled("recovery from the value log") {
        return;
    }
    let (dir, earlier) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (admin, device) = keys();
    let mut c = Chain::new("RS-01");
    let l = requiring(dir.path(), &admin);
    let id = stuck(&l, &mut c, &admin, &device);
    l.flush().unwrap();
    drop(l);
    closed(dir.path());
    copy_dir(dir.path(), earlier.path(), true);

    let l = requiring(dir.path(), &admin);
    let (r, msg) = resync_of(&l, &mut c, &admin, id);
    let out = l.writer().append_batch(std::slice::from_ref(&msg)).unwrap();
    assert!(matches!(out[0], Appended::Stored { .. }), "{out:?}");
    l.flush().unwrap();
    let heads = l.reader().heads();
    assert_eq!(
        heads[0].seq.0, 7,
        "the admitted event and the 3 held behind it"
    );
    drop(l);
    closed(dir.path());
    put_back_sled_files(earlier.path(), dir.path());

    let l = requiring(dir.path(), &admin);
    assert_eq!(l.recovered().resyncs, 1, "{:?}", l.recovered());
    assert_eq!(l.reader().heads(), heads, "the chain is back");
    assert!(l.reader().gaps().is_empty(), "{:?}", l.reader().gaps());
    let kept: Vec<Resync> = l
        .reader()
        .resyncs(None)
        .unwrap()
        .into_iter()
        .map(|k| k.resync)
        .collect();
    assert_eq!(kept, vec![r.clone()], "the re-sync is back");
    assert_eq!(l.verifier().check_resyncs().unwrap(), Vec::<String>::new());
    assert!(l.verifier().verify().unwrap().is_ok());
    // NATS delivers the unacked message again: recognised, nothing written.
    let again = l.writer().append_batch(&[msg]).unwrap();
    assert!(matches!(again[0], Appended::Duplicate { .. }), "{again:?}");
    assert_eq!(
        l.reader()
            .quarantine_counts()
            .get(ledger::reason::RESYNC_REFUSED),
        None
    );
}
