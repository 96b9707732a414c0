//! Admission by device signature (`ledger::provenance`): on a ledger that requires signed
//! events, only the table's enrolled device extends its chain, through enrollment,
//! rotation and revocation; the requirement is kept across opens; recovery re-appends
//! what was admitted before.

mod common;

use common::signed::{keys, Chain};
use common::{closed, copy_dir, put_back_sled_files};
use ledger::{Appended, Incoming, Ledger, Provenance, Refused};
use schemas::attest::{KeyAction, SigningKey};
use schemas::provenance::{EventSignature, HeaderEnrollment};
use schemas::DeviceId;

fn dealer() -> DeviceId {
    DeviceId::new("dealer-terminal").unwrap()
}

/// `msg` signed by `key` as the dealer terminal, as its own delivery (a stream seq of its
/// own: the same delivery refused twice is recognised, not quarantined again).
fn signed(c: &mut Chain, key: &SigningKey, mut msg: Incoming) -> Incoming {
    let s = EventSignature::sign(key, &c.table, &dealer(), &msg.bytes);
    msg.provenance = Provenance::Signed(s);
    c.stream_seq += 1;
    msg.stream_seq = c.stream_seq;
    msg
}

/// `msg` signed by `key`, with `admin`'s enrollment of `key` in a header.
fn with_header(c: &mut Chain, admin: &SigningKey, key: &SigningKey, msg: Incoming) -> Incoming {
    let mut msg = signed(c, key, msg);
    if let Provenance::Signed(s) = &mut msg.provenance {
        s.enrollment = Some(HeaderEnrollment::sign(
            admin,
            &c.table,
            &dealer(),
            key.public(),
        ));
    }
    msg
}

fn reasons(out: &[Appended]) -> Vec<&'static str> {
    out.iter()
        .map(|o| match o {
            Appended::Stored { .. } => "stored",
            // The same bytes refused again for the same reason count against one entry.
            Appended::Refused(Refused::Quarantined { reason, .. })
            | Appended::Refused(Refused::Repeated { reason, .. }) => reason,
            other => panic!("unexpected {other:?}"),
        })
        .collect()
}

fn requiring(dir: &std::path::Path, admin: &SigningKey) -> Ledger {
    let l = Ledger::open(dir).unwrap();
    l.writer().trust_admin_keys([admin.public()]).unwrap();
    l.writer().require_signed_events().unwrap();
    l
}

/// A chain opens with a header enrollment, then its own; the enrolled key alone extends
/// it afterwards. A refused event leaves its seq open for the device's own.
#[test]
fn only_the_enrolled_key_extends_a_chain() {
    let dir = tempfile::tempdir().unwrap();
    let (admin, device) = keys();
    let l = requiring(dir.path(), &admin);
    let thief = SigningKey::from_secret([5; 32]);
    let mut c = Chain::new("PV-01");
    let first = c.announce();
    let enroll = c.key_event(&admin, &device, KeyAction::Enroll);
    let batch = vec![
        signed(&mut c, &device, first.clone()),
        with_header(&mut c, &thief, &device, first.clone()),
        with_header(&mut c, &admin, &device, first),
        signed(&mut c, &device, enroll),
    ];
    let out = l.writer().append_batch(&batch).unwrap();
    assert_eq!(
        reasons(&out),
        ["signer_unknown", "signer_unknown", "stored", "stored"]
    );
    let third = c.announce();
    let mut unsigned = third.clone();
    unsigned.stream_seq = 1_000;
    let out = l
        .writer()
        .append_batch(&[
            unsigned,
            signed(&mut c, &thief, third.clone()),
            with_header(&mut c, &admin, &thief, third.clone()),
            signed(&mut c, &device, third),
        ])
        .unwrap();
    assert_eq!(
        reasons(&out),
        [
            "unsigned",
            "signature_invalid",
            "signature_invalid",
            "stored"
        ]
    );
    assert_eq!(l.reader().head(&c.table).unwrap().seq.0, 3);
}

/// A rotation's enrollment is signed by the key it enrolls; from then on the old key is
/// refused. A revocation ends the key: nothing it signs afterwards is stored.
#[test]
fn rotation_and_revocation_move_who_may_extend() {
    let dir = tempfile::tempdir().unwrap();
    let (admin, device) = keys();
    let l = requiring(dir.path(), &admin);
    let newer = SigningKey::from_secret([9; 32]);
    let mut c = Chain::new("PV-02");
    let e1 = c.key_event(&admin, &device, KeyAction::Enroll);
    let e2 = c.key_event(&admin, &newer, KeyAction::Enroll);
    let out = l
        .writer()
        .append_batch(&[signed(&mut c, &device, e1), signed(&mut c, &newer, e2)])
        .unwrap();
    assert_eq!(reasons(&out), ["stored", "stored"]);
    let next = c.announce();
    let out = l
        .writer()
        .append_batch(&[
            signed(&mut c, &device, next.clone()),
            signed(&mut c, &newer, next),
        ])
        .unwrap();
    assert_eq!(reasons(&out), ["signature_invalid", "stored"]);
    let revoke = c.key_event(&admin, &newer, KeyAction::Revoke);
    let after = c.announce();
    let out = l
        .writer()
        .append_batch(&[
            signed(&mut c, &newer, revoke),
            signed(&mut c, &newer, after),
        ])
        .unwrap();
    assert_eq!(reasons(&out), ["stored", "signer_unknown"]);
}

/// The requirement survives a reopen, and a recovery re-appends the events a lost sled
/// commit held (their signatures, checked when they arrived, are not stored).
#[test]
fn the_requirement_is_kept_and_recovery_re_appends_admitted_events() {
    if common::skip_unless_sled("recovery from the value log") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let earlier = tempfile::tempdir().unwrap();
    let (admin, device) = keys();
    let mut c = Chain::new("PV-03");
    let l = requiring(dir.path(), &admin);
    let enroll = c.key_event(&admin, &device, KeyAction::Enroll);
    let out = l
        .writer()
        .append_batch(&[signed(&mut c, &device, enroll)])
        .unwrap();
    assert_eq!(reasons(&out), ["stored"]);
    l.flush().unwrap();
    drop(l);
    closed(dir.path());
    copy_dir(dir.path(), earlier.path(), true);

    let l = Ledger::open(dir.path()).unwrap();
    assert!(l.reader().requires_signed_events(), "kept across opens");
    let mut batch = Vec::new();
    for _ in 0..5 {
        let m = c.announce();
        batch.push(signed(&mut c, &device, m));
    }
    let out = l.writer().append_batch(&batch).unwrap();
    assert!(reasons(&out).iter().all(|r| *r == "stored"), "{out:?}");
    l.flush().unwrap();
    drop(l);
    closed(dir.path());
    put_back_sled_files(earlier.path(), dir.path());

    let l = Ledger::open(dir.path()).unwrap();
    assert_eq!(l.recovered().stored, 5, "{:?}", l.recovered());
    assert_eq!(l.reader().head(&c.table).unwrap().seq.0, 6);
    assert!(l.verifier().verify().unwrap().is_ok());
}

/// Issue 41: an open ledger (`serve --unsigned-events`) stores unsigned events, never a
/// signature that is present and does not verify: under the enrolled key, under the key
/// an enrollment header names (even an untrusted admin's), or headers that do not parse.
#[test]
fn an_open_ledger_still_refuses_a_signature_that_does_not_verify() {
    let dir = tempfile::tempdir().unwrap();
    let (admin, device) = keys();
    let l = Ledger::open(dir.path()).unwrap();
    l.writer().trust_admin_keys([admin.public()]).unwrap();
    assert!(!l.reader().requires_signed_events());
    let thief = SigningKey::from_secret([7; 32]);
    let mut c = Chain::new("PV-04");
    let enroll = c.key_event(&admin, &device, KeyAction::Enroll);
    let out = l
        .writer()
        .append_batch(&[signed(&mut c, &device, enroll)])
        .unwrap();
    assert_eq!(reasons(&out), ["stored"]);
    // Enrolled: unsigned goes on; the thief's signature, or malformed headers, do not.
    let second = c.announce();
    let mut malformed = second.clone();
    malformed.provenance = Provenance::Malformed("Rl-Signature is not 128 hex digits".into());
    malformed.stream_seq = 1_000;
    let out = l
        .writer()
        .append_batch(&[signed(&mut c, &thief, second.clone()), malformed])
        .unwrap();
    assert_eq!(reasons(&out), ["signature_invalid", "signature_invalid"]);
    let out = l
        .writer()
        .append_batch(&[signed(&mut c, &device, second)])
        .unwrap();
    assert_eq!(reasons(&out), ["stored"]);
    let mut third = c.announce();
    third.stream_seq = 2_000;
    assert_eq!(
        reasons(&l.writer().append_batch(&[third]).unwrap()),
        ["stored"]
    );

    // Never enrolled: a header naming a key (an untrusted admin's) is checked against
    // that key; a signature with no key to judge it by goes on as unsigned.
    let mut d = Chain::new("PV-05");
    let first = d.announce();
    let mut forged = with_header(&mut d, &thief, &device, first.clone());
    if let Provenance::Signed(s) = &mut forged.provenance {
        s.signature = EventSignature::sign(&thief, &d.table, &dealer(), &first.bytes).signature;
    }
    let out = l.writer().append_batch(&[forged]).unwrap();
    assert_eq!(reasons(&out), ["signature_invalid"]);
    let out = l
        .writer()
        .append_batch(&[with_header(&mut d, &thief, &device, first)])
        .unwrap();
    assert_eq!(reasons(&out), ["stored"]);
    let next = d.announce();
    let out = l
        .writer()
        .append_batch(&[signed(&mut d, &thief, next)])
        .unwrap();
    assert_eq!(
        reasons(&out),
        ["stored"],
        "no key is known for PV-05's signer"
    );
    assert_eq!(l.reader().head(&c.table).unwrap().seq.0, 3);
    assert_eq!(l.reader().head(&d.table).unwrap().seq.0, 2);
}

/// `event` with the envelope's `device` set to `device`, next in `c`'s chain.
fn event_of(c: &mut Chain, device: &str) -> Incoming {
    c.seq += 1;
    let e = schemas::Event {
        v: 1,
        table: c.table.clone(),
        device: DeviceId::new(device).unwrap(),
        seq: schemas::Seq(c.seq),
        prev: c.prev,
        occurred_at_ns: common::signed::T0 + c.seq as i64,
        round: None,
        body: schemas::EventBody::Announced {
            announcement: schemas::Announcement::PlaceYourBets,
        },
    };
    let bytes = schemas::codec::encode(&e, schemas::codec::WireFormat::Bincode);
    c.prev = schemas::event_hash(&e.prev, &bytes);
    c.hashes.push(c.prev);
    c.incoming(bytes)
}

/// DEVICES.md §2: the dealer terminal relays a shoe with no key of its own; once the chain
/// enrolls the shoe, only the shoe signs the events that name it, even after a revocation.
#[test]
fn an_enrolled_device_signs_its_own_events_and_others_are_relayed() {
    let dir = tempfile::tempdir().unwrap();
    let (admin, device) = keys();
    let l = requiring(dir.path(), &admin);
    let shoe_key = SigningKey::from_secret([11; 32]);
    let shoe = DeviceId::new("shoe-1").unwrap();
    let mut c = Chain::new("PV-05");
    let enroll = c.key_event(&admin, &device, KeyAction::Enroll);
    let relayed = event_of(&mut c, "shoe-1");
    let out = l
        .writer()
        .append_batch(&[
            signed(&mut c, &device, enroll),
            signed(&mut c, &device, relayed),
        ])
        .unwrap();
    assert_eq!(
        reasons(&out),
        ["stored", "stored"],
        "a relay of a keyless shoe"
    );

    let body = schemas::attest::key_event_body(
        &admin,
        &c.table,
        shoe.clone(),
        shoe_key.public(),
        KeyAction::Enroll,
    );
    let shoe_enroll = c.event(body);
    let own = |c: &mut Chain, key: &SigningKey, mut msg: Incoming| {
        let s = EventSignature::sign(key, &c.table, &shoe, &msg.bytes);
        msg.provenance = Provenance::Signed(s);
        c.stream_seq += 1;
        msg.stream_seq = c.stream_seq;
        msg
    };
    let shoe_enroll = signed(&mut c, &device, shoe_enroll);
    let by_shoe = event_of(&mut c, "shoe-1");
    let out = l
        .writer()
        .append_batch(&[shoe_enroll, signed(&mut c, &device, by_shoe.clone())])
        .unwrap();
    assert_eq!(reasons(&out), ["stored", "signature_invalid"]);
    let out = l
        .writer()
        .append_batch(&[own(&mut c, &shoe_key, by_shoe)])
        .unwrap();
    assert_eq!(reasons(&out), ["stored"], "the shoe's own signature");

    let revoke = schemas::attest::key_event_body(
        &admin,
        &c.table,
        shoe.clone(),
        shoe_key.public(),
        KeyAction::Revoke,
    );
    let revoke = c.event(revoke);
    let after = event_of(&mut c, "shoe-1");
    let out = l
        .writer()
        .append_batch(&[
            signed(&mut c, &device, revoke),
            signed(&mut c, &device, after),
        ])
        .unwrap();
    assert_eq!(
        reasons(&out),
        ["stored", "signature_invalid"],
        "a revoked device is not relayed either"
    );
    assert_eq!(l.reader().head(&c.table).unwrap().seq.0, 5);
}
