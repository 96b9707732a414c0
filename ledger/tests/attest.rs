//! Device keys and signed checkpoints through the real ledger on sled:
//! a checkpoint is kept only when an admin the ledger trusts enrolled the signing device's
//! key in the chain, the key is not revoked, the signature verifies and the signed head
//! is the stored chain's; everything else is quarantined verbatim with its reason, and the
//! chain itself is never disturbed.

mod common;

use common::signed::{keys, Chain, T0};
use ledger::attest::{reason, CheckpointOutcome};
use ledger::{Appended, Ledger, Refused};
use schemas::attest::{Checkpoint, KeyAction, SigningKey};
use schemas::{DeviceId, Hash32, Seq, TableId};

fn stored_all(out: &[Appended]) {
    assert!(
        out.iter().all(|a| matches!(a, Appended::Stored { .. })),
        "{out:?}"
    );
}

fn quarantined(out: &[CheckpointOutcome]) -> Vec<&'static str> {
    out.iter()
        .map(|o| match o {
            CheckpointOutcome::Refused(Refused::Quarantined { reason, .. }) => *reason,
            other => panic!("expected a quarantine, got {other:?}"),
        })
        .collect()
}

/// A checkpoint the enrolled device signed over a hash the chain does not have at seq 2.
fn wrong_hash_at_2(c: &mut Chain, device: &SigningKey) -> ledger::Incoming {
    let signed = Checkpoint::sign(
        device,
        c.table.clone(),
        DeviceId::new("dealer-terminal").unwrap(),
        Seq(2),
        Hash32([7; 32]),
        T0,
    );
    c.incoming(signed.to_bincode())
}

#[test]
fn enrolled_device_checkpoint_is_kept_and_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let (admin, device) = keys();
    let mut c = Chain::new("CSP-01");
    {
        let l = Ledger::open(dir.path()).unwrap();
        l.writer().trust_admin_keys([admin.public()]).unwrap();
        let batch = vec![
            c.key_event(&admin, &device, KeyAction::Enroll),
            c.announce(),
            c.announce(),
        ];
        stored_all(&l.writer().append_batch(&batch).unwrap());
        assert!(
            l.reader().attestation(&c.table).is_none(),
            "nothing attested yet"
        );
        let cp = c.checkpoint(&device, 3);
        let out = l
            .writer()
            .append_checkpoints(std::slice::from_ref(&cp))
            .unwrap();
        assert_eq!(
            out,
            vec![CheckpointOutcome::Kept {
                table: c.table.clone(),
                seq: Seq(3)
            }]
        );
        // Redelivered: recognised, not kept twice.
        let again = l.writer().append_checkpoints(&[cp]).unwrap();
        assert!(matches!(again[0], CheckpointOutcome::Duplicate { .. }));
        // A later event is not yet attested.
        stored_all(&l.writer().append_batch(&[c.announce()]).unwrap());
        let a = l.reader().attestation(&c.table).unwrap();
        assert_eq!((a.seq, a.hash), (Seq(3), c.hashes[2]));
        assert!(l.reader().head(&c.table).unwrap().seq > a.seq);
        l.flush().unwrap();
    }
    let l = Ledger::open(dir.path()).unwrap();
    let a = l.reader().attestation(&c.table).unwrap();
    assert_eq!(a.seq, Seq(3));
    let dk = l
        .reader()
        .device_key(&c.table, &DeviceId::new("dealer-terminal").unwrap())
        .unwrap();
    assert_eq!((dk.key, dk.enrolled_seq), (device.public(), Seq(1)));
    assert!(l.verifier().verify().unwrap().is_ok());
}

#[test]
fn every_bad_checkpoint_is_quarantined_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let (admin, device) = keys();
    let l = Ledger::open(dir.path()).unwrap();
    l.writer().trust_admin_keys([admin.public()]).unwrap();
    let mut c = Chain::new("TCP-02");
    let batch = vec![
        c.key_event(&admin, &device, KeyAction::Enroll),
        c.announce(),
        c.announce(),
    ];
    stored_all(&l.writer().append_batch(&batch).unwrap());

    let stranger = SigningKey::derive_for_simulation("not enrolled");
    let bad_sig = c.checkpoint(&stranger, 2);
    let beyond = {
        let mut fake = Chain::new("TCP-02");
        fake.hashes = vec![Hash32([1; 32]); 10];
        let mut i = fake.checkpoint(&device, 10);
        i.stream_seq = 99;
        i
    };
    let mismatch = wrong_hash_at_2(&mut c, &device);
    let mut wrong_subject = c.checkpoint(&device, 2);
    wrong_subject.subject_table = Some(TableId::new("CSP-09").unwrap());
    // A table id declaring 2^62 bytes: the checkpoint decoder's length limit refuses it.
    let garbage = c.incoming(b"\x01\xfd\xff\xff\xff\xff\xff\xff\xff\x3fnot a checkpoint".to_vec());
    let unknown_device = {
        let signed = Checkpoint::sign(
            &device,
            c.table.clone(),
            DeviceId::new("shuffler").unwrap(),
            Seq(2),
            c.hashes[1],
            T0,
        );
        c.incoming(signed.to_bincode())
    };
    let batch = vec![
        bad_sig,
        beyond,
        mismatch,
        wrong_subject,
        garbage.clone(),
        unknown_device,
    ];
    let out = l.writer().append_checkpoints(&batch).unwrap();
    assert_eq!(
        quarantined(&out),
        vec![
            reason::BAD_SIGNATURE,
            reason::CHECKPOINT_BEYOND_HEAD,
            reason::CHECKPOINT_MISMATCH,
            reason::CHECKPOINT_WRONG_SUBJECT,
            reason::CHECKPOINT_UNDECODABLE,
            reason::UNKNOWN_DEVICE,
        ]
    );
    // Kept verbatim, with the reason, and counted.
    let q = l.reader().quarantine().unwrap();
    assert_eq!(q.len(), 6);
    assert!(q
        .iter()
        .any(|e| e.bytes == garbage.bytes && e.reason == reason::CHECKPOINT_UNDECODABLE));
    assert_eq!(
        l.reader().quarantine_counts().get(reason::BAD_SIGNATURE),
        Some(&1)
    );
    // The chain is untouched and still takes events.
    assert!(l.reader().attestation(&c.table).is_none());
    stored_all(&l.writer().append_batch(&[c.announce()]).unwrap());
    assert!(l.verifier().verify().unwrap().is_ok());
}

#[test]
fn untrusted_enrollment_takes_no_effect_and_revocation_and_rotation_do() {
    let dir = tempfile::tempdir().unwrap();
    let (admin, device) = keys();
    let rogue_admin = SigningKey::derive_for_simulation("rogue admin");
    let l = Ledger::open(dir.path()).unwrap();
    l.writer().trust_admin_keys([admin.public()]).unwrap();
    let mut c = Chain::new("MLP-03");
    let id = DeviceId::new("dealer-terminal").unwrap();

    // Enrolled by an admin the ledger does not trust: stored in the chain, no effect.
    stored_all(
        &l.writer()
            .append_batch(&[
                c.key_event(&rogue_admin, &device, KeyAction::Enroll),
                c.announce(),
            ])
            .unwrap(),
    );
    assert!(l.reader().device_key(&c.table, &id).is_none());
    assert_eq!(
        l.reader()
            .quarantine_counts()
            .get(reason::ENROLLMENT_REFUSED),
        Some(&1)
    );
    // The alert's count is not a quarantine entry, yet survives a reopen.
    l.flush().unwrap();
    drop(l);
    let l = Ledger::open(dir.path()).unwrap();
    l.writer().trust_admin_keys([admin.public()]).unwrap();
    assert_eq!(
        l.reader()
            .quarantine_counts()
            .get(reason::ENROLLMENT_REFUSED),
        Some(&1)
    );
    let out = l
        .writer()
        .append_checkpoints(&[c.checkpoint(&device, 2)])
        .unwrap();
    assert_eq!(quarantined(&out), vec![reason::UNKNOWN_DEVICE]);

    // Properly enrolled: kept.
    stored_all(
        &l.writer()
            .append_batch(&[c.key_event(&admin, &device, KeyAction::Enroll)])
            .unwrap(),
    );
    let out = l
        .writer()
        .append_checkpoints(&[c.checkpoint(&device, 3)])
        .unwrap();
    assert!(matches!(out[0], CheckpointOutcome::Kept { .. }));

    // Rotation: the new key replaces the old one.
    let rotated = SigningKey::derive_for_simulation("test device, rotated");
    stored_all(
        &l.writer()
            .append_batch(&[
                c.key_event(&admin, &rotated, KeyAction::Enroll),
                c.announce(),
            ])
            .unwrap(),
    );
    let out = l
        .writer()
        .append_checkpoints(&[c.checkpoint(&device, 5), c.checkpoint(&rotated, 5)])
        .unwrap();
    assert!(matches!(
        out[0],
        CheckpointOutcome::Refused(Refused::Quarantined {
            reason: reason::BAD_SIGNATURE,
            ..
        })
    ));
    assert!(matches!(out[1], CheckpointOutcome::Kept { .. }));

    // Revocation: the device's checkpoints are refused from then on. It comes in a later
    // call than the enrollment; the register still knows where the key was enrolled.
    let terminal = DeviceId::new("dealer-terminal").unwrap();
    let enrolled = l
        .reader()
        .device_key(&c.table, &terminal)
        .unwrap()
        .enrolled_seq;
    assert!(
        enrolled > Seq(1),
        "the rotated key's enrollment, after the first key's"
    );
    let revocation = c.key_event(&admin, &rotated, KeyAction::Revoke);
    let revoked_at = l
        .writer()
        .append_batch(std::slice::from_ref(&revocation))
        .unwrap();
    let revoked_seq = match &revoked_at[..] {
        [Appended::Stored { seq, .. }] => *seq,
        other => panic!("revocation not stored: {other:?}"),
    };
    stored_all(&l.writer().append_batch(&[c.announce()]).unwrap());
    let dk = l.reader().device_key(&c.table, &terminal).unwrap();
    assert_eq!(
        (dk.key, dk.enrolled_seq, dk.revoked_seq),
        (rotated.public(), enrolled, Some(revoked_seq))
    );
    let out = l
        .writer()
        .append_checkpoints(&[c.checkpoint(&rotated, 7)])
        .unwrap();
    assert_eq!(quarantined(&out), vec![reason::REVOKED_DEVICE]);
    assert_eq!(l.reader().attestation(&c.table).unwrap().seq, Seq(5));
    assert!(l.verifier().verify().unwrap().is_ok());
}

#[test]
fn the_first_checkpoint_at_or_after_a_seq_is_found_verbatim() {
    let dir = tempfile::tempdir().unwrap();
    let (admin, device) = keys();
    let mut c = Chain::new("CSP-01");
    let mut other = Chain::new("CSP-02");
    let l = Ledger::open(dir.path()).unwrap();
    l.writer().trust_admin_keys([admin.public()]).unwrap();
    let mut batch = vec![c.key_event(&admin, &device, KeyAction::Enroll)];
    batch.extend((0..5).map(|_| c.announce()));
    batch.push(other.key_event(&admin, &device, KeyAction::Enroll));
    batch.push(other.announce());
    stored_all(&l.writer().append_batch(&batch).unwrap());
    let (at2, at4, other2) = (
        c.checkpoint(&device, 2),
        c.checkpoint(&device, 4),
        other.checkpoint(&device, 2),
    );
    let kept = l
        .writer()
        .append_checkpoints(&[at2.clone(), at4.clone(), other2])
        .unwrap();
    assert!(
        kept.iter()
            .all(|k| matches!(k, CheckpointOutcome::Kept { .. })),
        "{kept:?}"
    );
    let table = c.table.clone();
    let found = |seq| l.reader().checkpoint_at_or_after(&table, seq).unwrap();
    assert_eq!(found(1).unwrap().bytes, at2.bytes);
    assert_eq!(found(2).unwrap().checkpoint.head_seq, Seq(2));
    let k = found(3).unwrap();
    assert_eq!((k.bytes, k.stream_seq), (at4.bytes, at4.stream_seq));
    assert_eq!(k.received_at_ns, at4.received_at_ns);
    // Beyond the last checkpoint: not yet attested (another table's is never returned).
    assert!(found(5).is_none());
    assert!(found(u64::MAX).is_none());
    // Each kept checkpoint names the enrollment it was verified against, and keeps naming
    // it after the key is rotated; one signed with the new key names the new enrollment.
    assert_eq!(k.key_enrolled_seq, Some(Seq(1)));
    let next = SigningKey::derive_for_simulation("test device, next key");
    let rotation = [c.key_event(&admin, &next, KeyAction::Enroll), c.announce()];
    stored_all(&l.writer().append_batch(&rotation).unwrap());
    let kept = l
        .writer()
        .append_checkpoints(&[c.checkpoint(&next, 8)])
        .unwrap();
    assert!(
        matches!(kept[..], [CheckpointOutcome::Kept { seq: Seq(8), .. }]),
        "{kept:?}"
    );
    assert_eq!(found(3).unwrap().key_enrolled_seq, Some(Seq(1)));
    assert_eq!(found(5).unwrap().key_enrolled_seq, Some(Seq(7)));
}

/// A key the device held before is never enrolled for it again, and a revocation naming a
/// key that is not the device's current one does nothing. The admin's signature on a key
/// event covers the table, the device, the key and the action, not the chain position, so
/// anybody who can publish on the table's subject (the compromised device itself) could
/// replay the enrollment of a revoked key at a new seq and bring it back, or replay the
/// old key's revocation and revoke the current one. ed25519 signatures
/// are deterministic: signing the same event again is exactly such a replay.
#[test]
fn replayed_key_events_of_retired_keys_take_no_effect() {
    let dir = tempfile::tempdir().unwrap();
    let (admin, first) = keys();
    let second = SigningKey::derive_for_simulation("test device, second");
    let l = Ledger::open(dir.path()).unwrap();
    l.writer().trust_admin_keys([admin.public()]).unwrap();
    let mut c = Chain::new("MLP-07");
    let id = DeviceId::new("dealer-terminal").unwrap();
    let refused = |l: &Ledger| {
        l.reader()
            .quarantine_counts()
            .get(reason::ENROLLMENT_REFUSED)
            .copied()
            .unwrap_or(0)
    };

    // The first key enrolled (seq 1), then revoked (seq 3).
    stored_all(
        &l.writer()
            .append_batch(&[c.key_event(&admin, &first, KeyAction::Enroll), c.announce()])
            .unwrap(),
    );
    let out = l
        .writer()
        .append_checkpoints(&[c.checkpoint(&first, 2)])
        .unwrap();
    assert!(matches!(out[0], CheckpointOutcome::Kept { .. }), "{out:?}");
    stored_all(
        &l.writer()
            .append_batch(&[c.key_event(&admin, &first, KeyAction::Revoke), c.announce()])
            .unwrap(),
    );
    let out = l
        .writer()
        .append_checkpoints(&[c.checkpoint(&first, 4)])
        .unwrap();
    assert_eq!(quarantined(&out), vec![reason::REVOKED_DEVICE]);

    // Its enrollment and its revocation replayed (seqs 5 and 6): stored in the chain, no
    // effect (the first revocation stands), counted.
    stored_all(
        &l.writer()
            .append_batch(&[
                c.key_event(&admin, &first, KeyAction::Enroll),
                c.key_event(&admin, &first, KeyAction::Revoke),
                c.announce(),
            ])
            .unwrap(),
    );
    assert_eq!(refused(&l), 2);
    assert_eq!(
        l.reader().device_key(&c.table, &id).unwrap().revoked_seq,
        Some(Seq(3))
    );
    let out = l
        .writer()
        .append_checkpoints(&[c.checkpoint(&first, 7)])
        .unwrap();
    assert_eq!(quarantined(&out), vec![reason::REVOKED_DEVICE]);

    // A new key (seq 8) retires the first.
    stored_all(
        &l.writer()
            .append_batch(&[
                c.key_event(&admin, &second, KeyAction::Enroll),
                c.announce(),
            ])
            .unwrap(),
    );
    let dk = l.reader().device_key(&c.table, &id).unwrap();
    assert_eq!((dk.key, dk.revoked_seq), (second.public(), None));
    assert_eq!(dk.retired, vec![first.public()]);

    // The first key's revocation and enrollment replayed (seqs 10 and 11): nothing changes.
    stored_all(
        &l.writer()
            .append_batch(&[
                c.key_event(&admin, &first, KeyAction::Revoke),
                c.key_event(&admin, &first, KeyAction::Enroll),
                c.announce(),
            ])
            .unwrap(),
    );
    assert_eq!(refused(&l), 4);
    assert_eq!(l.reader().device_key(&c.table, &id).unwrap(), dk);
    let out = l
        .writer()
        .append_checkpoints(&[c.checkpoint(&first, 12), c.checkpoint(&second, 12)])
        .unwrap();
    assert!(
        matches!(
            out[0],
            CheckpointOutcome::Refused(Refused::Quarantined { .. })
        ),
        "{out:?}"
    );
    assert!(matches!(out[1], CheckpointOutcome::Kept { .. }), "{out:?}");

    // The register keeps the retired keys across a reopen.
    l.flush().unwrap();
    drop(l);
    let l = Ledger::open(dir.path()).unwrap();
    l.writer().trust_admin_keys([admin.public()]).unwrap();
    assert_eq!(l.reader().device_key(&c.table, &id).unwrap(), dk);
    stored_all(
        &l.writer()
            .append_batch(&[c.key_event(&admin, &first, KeyAction::Enroll), c.announce()])
            .unwrap(),
    );
    assert_eq!(refused(&l), 5);
    assert_eq!(l.reader().device_key(&c.table, &id).unwrap(), dk);
}

/// Checkpoints delivered again are acknowledged once, in one call as across calls: a good
/// one kept once (also when one call holds it, another checkpoint of the table, and it
/// again), a refused one quarantined once.
#[test]
fn checkpoints_delivered_again_are_kept_or_quarantined_once() {
    let dir = tempfile::tempdir().unwrap();
    let (admin, device) = keys();
    let stranger = SigningKey::derive_for_simulation("not enrolled");
    let l = Ledger::open(dir.path()).unwrap();
    l.writer().trust_admin_keys([admin.public()]).unwrap();
    let mut c = Chain::new("MLP-09");
    stored_all(
        &l.writer()
            .append_batch(&[
                c.key_event(&admin, &device, KeyAction::Enroll),
                c.announce(),
                c.announce(),
            ])
            .unwrap(),
    );
    let at2 = c.checkpoint(&device, 2);
    let at3 = c.checkpoint(&device, 3);
    let out = l
        .writer()
        .append_checkpoints(&[at2.clone(), at3.clone(), at2.clone()])
        .unwrap();
    assert!(matches!(out[0], CheckpointOutcome::Kept { .. }), "{out:?}");
    assert!(matches!(out[1], CheckpointOutcome::Kept { .. }), "{out:?}");
    assert!(
        matches!(out[2], CheckpointOutcome::Duplicate { .. }),
        "{out:?}"
    );
    assert_eq!(l.reader().attestation(&c.table).unwrap().seq, Seq(3));

    let forged = c.checkpoint(&stranger, 3);
    let out = l
        .writer()
        .append_checkpoints(&[forged.clone(), forged.clone()])
        .unwrap();
    let id = match out[0] {
        CheckpointOutcome::Refused(Refused::Quarantined { id, .. }) => id,
        ref other => panic!("{other:?}"),
    };
    assert_eq!(
        out[1],
        CheckpointOutcome::Refused(Refused::QuarantinedBefore { id })
    );
    let again = l.writer().append_checkpoints(&[forged]).unwrap();
    assert_eq!(
        again[0],
        CheckpointOutcome::Refused(Refused::QuarantinedBefore { id })
    );
    assert_eq!(l.reader().quarantine().unwrap().len(), 1);
}

/// `Writer::append` keeps checkpoints in the same call (one commit) as the events they
/// sign: the key enrolled, the hashes signed and a revocation are all this call's own, not
/// yet in the store; later calls still find the kept ones, and an older checkpoint never
/// kept is kept, not taken for a duplicate.
#[test]
fn checkpoints_sign_events_of_their_own_call() {
    let dir = tempfile::tempdir().unwrap();
    let (admin, device) = keys();
    let mut c = Chain::new("UTH-04");
    let kept = |table: &TableId, seq| CheckpointOutcome::Kept {
        table: table.clone(),
        seq: Seq(seq),
    };
    {
        let l = Ledger::open(dir.path()).unwrap();
        l.writer().trust_admin_keys([admin.public()]).unwrap();
        let events = vec![
            c.key_event(&admin, &device, KeyAction::Enroll),
            c.announce(),
            c.announce(),
        ];
        let mismatch = wrong_hash_at_2(&mut c, &device);
        let at2 = c.checkpoint(&device, 2);
        let at3 = c.checkpoint(&device, 3);
        let beyond = {
            let mut ahead = Chain::new("UTH-04");
            ahead.hashes = c.hashes.clone();
            ahead.hashes.push(Hash32([1; 32]));
            ahead.checkpoint(&device, 4)
        };
        let out = l
            .writer()
            .append(&events, &[at2, at3.clone(), mismatch, beyond, at3.clone()])
            .unwrap();
        stored_all(&out.events);
        assert_eq!(out.checkpoints[..2], [kept(&c.table, 2), kept(&c.table, 3)]);
        assert_eq!(
            quarantined(&out.checkpoints[2..4]),
            vec![reason::CHECKPOINT_MISMATCH, reason::CHECKPOINT_BEYOND_HEAD]
        );
        assert_eq!(
            out.checkpoints[4],
            CheckpointOutcome::Duplicate {
                table: c.table.clone(),
                seq: Seq(3)
            }
        );
        assert_eq!(l.reader().attestation(&c.table).unwrap().seq, Seq(3));

        // Next call: the checkpoint at 3 is in the store (a duplicate); the one at 1 was
        // never kept (below the highest kept, so it is looked up, and kept); 5 signs this
        // call's head.
        let events = vec![c.announce(), c.announce()];
        let at1 = c.checkpoint(&device, 1);
        let at5 = c.checkpoint(&device, 5);
        let out = l.writer().append(&events, &[at3, at1, at5]).unwrap();
        stored_all(&out.events);
        assert_eq!(
            out.checkpoints,
            vec![
                CheckpointOutcome::Duplicate {
                    table: c.table.clone(),
                    seq: Seq(3)
                },
                kept(&c.table, 1),
                kept(&c.table, 5),
            ]
        );

        // A revocation takes effect for the checkpoints of its own call.
        let events = vec![c.key_event(&admin, &device, KeyAction::Revoke)];
        let at6 = c.checkpoint(&device, 6);
        let out = l.writer().append(&events, &[at6]).unwrap();
        stored_all(&out.events);
        assert_eq!(quarantined(&out.checkpoints), vec![reason::REVOKED_DEVICE]);
        l.flush().unwrap();
    }
    let l = Ledger::open(dir.path()).unwrap();
    let a = l.reader().attestation(&c.table).unwrap();
    assert_eq!((a.seq, a.hash), (Seq(5), c.hashes[4]));
    assert!(l.verifier().verify().unwrap().is_ok());
}

/// Flips a bit of the signature of the checkpoint kept at `seq` (the checkpoint's last
/// field, ahead of the record's 8-byte enrollment seq).
fn flip_kept_signature(raw: &common::Raw, table: &TableId, seq: u64) {
    use ledger::record::seq_key;
    use ledger::store::Space;
    let mut v = raw.get(Space::Checkpoint, &seq_key(table, seq)).unwrap();
    let at = v.len() - 8 - 10;
    v[at] ^= 1;
    raw.put(Space::Checkpoint, &seq_key(table, seq), v);
}

/// `verify` checks what decides which events a device vouched for. The chain's hashes do
/// not cover the kept checkpoints or the key register. Trusted as stored, a key put in the
/// register and a checkpoint signed with it would make events "attested" that no device
/// signed. Each case
/// edits a copy of one ledger with the raw store API, then verifies the bare store.
#[test]
fn verify_names_forged_attestation_in_the_store() {
    use common::{copy_dir, Raw};
    use ledger::record::{seq_key, table_key, W};
    use ledger::store::Space;
    use ledger::{verify_store, TableVerdict, VerifyProblem};

    let dir = tempfile::tempdir().unwrap();
    let (admin, device) = keys();
    let rogue = SigningKey::derive_for_simulation("rogue device key");
    let mut c = Chain::new("CSP-01");
    {
        let l = Ledger::open(dir.path()).unwrap();
        l.writer().trust_admin_keys([admin.public()]).unwrap();
        let mut batch = vec![c.key_event(&admin, &device, KeyAction::Enroll)];
        batch.extend((0..4).map(|_| c.announce()));
        stored_all(&l.writer().append_batch(&batch).unwrap());
        let out = l
            .writer()
            .append_checkpoints(&[c.checkpoint(&device, 3)])
            .unwrap();
        assert!(matches!(out[0], CheckpointOutcome::Kept { .. }), "{out:?}");
        l.flush().unwrap();
        assert!(l.verifier().verify().unwrap().is_ok());
    }
    {
        let store = common::open_store(dir.path());
        let (report, _) = verify_store(store.as_ref(), None, &Default::default()).unwrap();
        assert!(
            matches!(
                &report.tables[..],
                [TableVerdict::Ok {
                    checkpoints: 1,
                    attested_seq: 3,
                    ..
                }]
            ),
            "{report:?}"
        );
    }
    let table = c.table.clone();
    let register_key = {
        let mut k = table_key(&table);
        k.extend_from_slice(b"dealer-terminal");
        k
    };
    // A kept checkpoint's record as the ledger writes it: received_at_ns, stream seq,
    // length-prefixed bytes, the seq of the enrollment it was verified against.
    let record = |bytes: &[u8], enrolled: u64| {
        let mut w = W::default();
        w.i64(T0).u64(99).bytes(bytes).u64(enrolled);
        w.0
    };
    let rogue_checkpoint = c.checkpoint(&rogue, 5).bytes;
    let put_rogue_in_register = |raw: &Raw| {
        let mut v = raw.get(Space::DeviceKey, &register_key).unwrap();
        v[..32].copy_from_slice(&rogue.public().0);
        raw.put(Space::DeviceKey, &register_key, v);
    };
    type Edit<'a> = Box<dyn Fn(&Raw) + 'a>;
    let table_ref = &table;
    let copy_checkpoint_3_to = |to: u64| -> Edit {
        Box::new(move |raw: &Raw| {
            let v = raw.get(Space::Checkpoint, &seq_key(table_ref, 3)).unwrap();
            raw.put(Space::Checkpoint, &seq_key(table_ref, to), v);
        })
    };
    let cases: Vec<(&str, Edit, u64, &str)> = vec![
        (
            "a kept checkpoint's signature edited",
            Box::new(|raw: &Raw| flip_kept_signature(raw, &table, 3)),
            3,
            "not signed by",
        ),
        (
            "a kept checkpoint copied to another seq",
            copy_checkpoint_3_to(4),
            4,
            "names table CSP-01 seq 3",
        ),
        (
            "the device's key in the register replaced",
            Box::new(put_rogue_in_register),
            1,
            "key register",
        ),
        (
            "the register's key replaced and a checkpoint signed with it slipped in",
            Box::new(|raw: &Raw| {
                put_rogue_in_register(raw);
                raw.put(
                    Space::Checkpoint,
                    &seq_key(&table, 5),
                    record(&rogue_checkpoint, 1),
                );
            }),
            5,
            "not signed by device dealer-terminal's key",
        ),
        (
            // Signatures are checked in batches, after the pass has met the problem at 4:
            // the bad signature before it is still the first bad position.
            "a signature edited at 3 and checkpoint 3 copied to 4",
            Box::new(|raw: &Raw| {
                copy_checkpoint_3_to(4)(raw);
                flip_kept_signature(raw, &table, 3);
            }),
            3,
            "not signed by",
        ),
        (
            // The same, the later problem being in the chain itself: an unreadable record.
            "a signature edited at 3 and a record of garbage slipped in at 6",
            Box::new(|raw: &Raw| {
                raw.put(Space::Batch, &seq_key(&table, 6), b"not a record".to_vec());
                flip_kept_signature(raw, &table, 3);
            }),
            3,
            "not signed by",
        ),
        (
            "a checkpoint kept beyond the head",
            copy_checkpoint_3_to(9),
            6,
            "beyond the chain's head 5",
        ),
    ];
    for (what, edit, want_seq, want_text) in cases {
        let copy = tempfile::tempdir().unwrap();
        copy_dir(dir.path(), copy.path(), false);
        let raw = Raw::open(copy.path());
        edit(&raw);
        raw.close();
        let store = common::open_store(copy.path());
        let (report, _) = verify_store(store.as_ref(), None, &Default::default()).unwrap();
        match &report.tables[..] {
            [TableVerdict::Bad {
                seq,
                problem: VerifyProblem::Attestation(text),
                ..
            }] => {
                assert_eq!(*seq, want_seq, "{what}: {text}");
                assert!(text.contains(want_text), "{what}: {text}");
            }
            other => panic!("{what}: not named: {other:?}"),
        }
    }
}

/// A table with more kept checkpoints than one signature batch holds: verify counts every
/// one, and a bad signature in the middle batch is named at its seq.
#[test]
fn verify_checks_checkpoints_across_signature_batches() {
    use common::{copy_dir, Raw};
    use ledger::{verify_store, TableVerdict, VerifyProblem};

    let dir = tempfile::tempdir().unwrap();
    let (admin, device) = keys();
    let mut c = Chain::new("CSP-03");
    let last = 2 * schemas::attest::VERIFY_BATCH_MAX as u64 + 22;
    {
        let l = Ledger::open(dir.path()).unwrap();
        l.writer().trust_admin_keys([admin.public()]).unwrap();
        let mut batch = vec![c.key_event(&admin, &device, KeyAction::Enroll)];
        batch.extend((2..=last).map(|_| c.announce()));
        stored_all(&l.writer().append_batch(&batch).unwrap());
        let checkpoints: Vec<_> = (2..=last).map(|s| c.checkpoint(&device, s)).collect();
        let out = l.writer().append_checkpoints(&checkpoints).unwrap();
        assert!(out
            .iter()
            .all(|o| matches!(o, CheckpointOutcome::Kept { .. })));
        l.flush().unwrap();
    }
    let verdict = |path: &std::path::Path| {
        let store = common::open_store(path);
        let (report, _) = verify_store(store.as_ref(), None, &Default::default()).unwrap();
        report.tables.into_iter().next().unwrap()
    };
    match verdict(dir.path()) {
        TableVerdict::Ok {
            checkpoints,
            attested_seq,
            ..
        } => {
            assert_eq!(checkpoints, last - 1);
            assert_eq!(attested_seq, last);
        }
        other => panic!("{other:?}"),
    }
    let bad_at = 100;
    let copy = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), copy.path(), false);
    let raw = Raw::open(copy.path());
    flip_kept_signature(&raw, &c.table, bad_at);
    raw.close();
    match verdict(copy.path()) {
        TableVerdict::Bad {
            seq,
            problem: VerifyProblem::Attestation(text),
            ..
        } => {
            assert_eq!(seq, bad_at, "{text}");
            assert!(text.contains("not signed by"), "{text}");
        }
        other => panic!("{other:?}"),
    }
}

/// Reopens `dir` through a counting store: the attestations found and the entries the open
/// read from range scans.
fn reopen_counting(dir: &std::path::Path) -> (Ledger, u64) {
    let (store, switch) = ledger::faulty::FaultyStore::open(dir).unwrap();
    let l = Ledger::with_store(Box::new(store)).unwrap();
    let read = switch
        .entries_read
        .load(std::sync::atomic::Ordering::SeqCst);
    (l, read)
}

/// Appends `rounds` announcements to each chain, each followed by its checkpoint.
fn attest_rounds(l: &Ledger, chains: &mut [Chain], device: &SigningKey, rounds: u64) {
    for _ in 0..rounds {
        for c in chains.iter_mut() {
            stored_all(&l.writer().append_batch(&[c.announce()]).unwrap());
            let seq = c.hashes.len() as u64;
            let out = l
                .writer()
                .append_checkpoints(&[c.checkpoint(device, seq)])
                .unwrap();
            assert!(matches!(out[0], CheckpointOutcome::Kept { .. }), "{out:?}");
        }
    }
}

/// Opening a ledger reads each table's last checkpoint, not every checkpoint kept: its
/// cost is the same after 3 checkpoints a table as after 300.
#[test]
fn opening_reads_the_same_whatever_the_checkpoints_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (admin, device) = keys();
    let mut chains = [Chain::new("CSP-01"), Chain::new("CSP-02")];
    let mut reads = Vec::new();
    for rounds in [3, 297] {
        {
            let l = Ledger::open(dir.path()).unwrap();
            if rounds == 3 {
                l.writer().trust_admin_keys([admin.public()]).unwrap();
                for c in chains.iter_mut() {
                    let enroll = c.key_event(&admin, &device, KeyAction::Enroll);
                    stored_all(&l.writer().append_batch(&[enroll]).unwrap());
                }
            }
            attest_rounds(&l, &mut chains, &device, rounds);
            l.flush().unwrap();
        }
        let (l, read) = reopen_counting(dir.path());
        for c in &chains {
            let a = l.reader().attestation(&c.table).unwrap();
            let head = (Seq(c.hashes.len() as u64), *c.hashes.last().unwrap());
            assert_eq!((a.seq, a.hash), head);
        }
        reads.push(read);
    }
    assert_eq!(reads[0], reads[1], "entries read at open: {reads:?}");
}

/// Replicas group deliveries into calls as their timing allows. A checkpoint is judged at
/// its place in the stream, so every grouping gives the same outcomes and the same digest.
/// Here the checkpoint at 4 reached the stream before event 4 (a publish retried after an
/// outage): it is beyond the head in every grouping, never kept in some and refused in
/// others. Two faults at once: the enrollment arrives in the same stream as both.
#[test]
fn checkpoint_outcomes_do_not_depend_on_how_calls_are_grouped() {
    let (admin, device) = keys();
    let mut c = Chain::new("CSP-07");
    let mut events = vec![
        c.key_event(&admin, &device, KeyAction::Enroll),
        c.announce(),
    ];
    let at2 = c.checkpoint(&device, 2);
    events.extend([c.announce(), c.announce()]);
    let at4 = c.checkpoint(&device, 4);
    // Stream order: e1 e2 cp@2 e3 cp@4 e4.
    let stream: Vec<(bool, ledger::Incoming)> = vec![
        (false, events[0].clone()),
        (false, events[1].clone()),
        (true, at2),
        (false, events[2].clone()),
        (true, at4),
        (false, events[3].clone()),
    ];
    let stream: Vec<(bool, ledger::Incoming)> = stream
        .into_iter()
        .enumerate()
        .map(|(i, (cp, mut m))| {
            m.stream_seq = i as u64 + 1;
            (cp, m)
        })
        .collect();
    let mut seen = Vec::new();
    for split in 0..=stream.len() {
        let dir = tempfile::tempdir().unwrap();
        let l = Ledger::open(dir.path()).unwrap();
        l.writer().trust_admin_keys([admin.public()]).unwrap();
        let mut outcomes = Vec::new();
        for part in [&stream[..split], &stream[split..]] {
            let evs: Vec<_> = part.iter().filter(|m| !m.0).map(|m| m.1.clone()).collect();
            let cps: Vec<_> = part.iter().filter(|m| m.0).map(|m| m.1.clone()).collect();
            let out = l.writer().append(&evs, &cps).unwrap();
            stored_all(&out.events);
            outcomes.extend(out.checkpoints);
        }
        l.flush().unwrap();
        assert_eq!(
            outcomes[0],
            CheckpointOutcome::Kept {
                table: c.table.clone(),
                seq: Seq(2)
            }
        );
        assert_eq!(
            quarantined(&outcomes[1..]),
            vec![reason::CHECKPOINT_BEYOND_HEAD],
            "split at {split}"
        );
        seen.push(l.verifier().digest(1).unwrap().root);
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]), "{seen:?}");
}
