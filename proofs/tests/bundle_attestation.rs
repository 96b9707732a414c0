//! Adversarial tests of the attestation half of bundle verification (BUNDLE.md §3 step 8,
//! `proofs::bundle::verify_chain`): chains built by hand, each with a genuine hash chain
//! and genuine signatures, where what the signatures prove is not enough. A checkpoint
//! signed by a key revoked or replaced before its head, an enrollment that is not the
//! latest, a revocation by an admin nobody trusts, a checkpoint over a hash the chain does
//! not hold, a table reopened inside the window: each is refused and named, or accepted,
//! as the format says. The api tests cover bundles the ledger exports.

#[path = "../../schemas/tests/common/mod.rs"]
mod common;

use proofs::bundle::{
    verify_chain, AttestationCheck, BundleAttestation, BundleCheckpoint, BundleError, BundleEvent,
    BundleHead, ChainSegment, EvidenceBundle, BUNDLE_FORMAT, BUNDLE_VERSION_FULL,
};
use schemas::attest::{enrollment_message, key_event_body, Checkpoint, KeyAction, SigningKey};
use schemas::report::{RoundReport, Verdict};
use schemas::*;

const T0: i64 = 1_763_800_000_000_000_000;
const ROUND: RoundId = RoundId(1);

fn table() -> TableId {
    TableId::new("T1").unwrap()
}

fn dealer() -> DeviceId {
    DeviceId::new("dealer-terminal").unwrap()
}

fn admin() -> SigningKey {
    SigningKey::derive_for_simulation("bundle test admin")
}

fn device_key() -> SigningKey {
    SigningKey::derive_for_simulation("bundle test dealer terminal")
}

fn config() -> EventBody {
    common::one_of_each()
        .into_iter()
        .find(|e| matches!(e.body, EventBody::TableOpened { .. }))
        .expect("one_of_each has a TableOpened")
        .body
}

/// A key event for the dealer terminal, signed by `admin` over `table`'s chain.
fn key_event(admin: &SigningKey, key: &SigningKey, action: KeyAction) -> EventBody {
    key_event_body(admin, &table(), dealer(), key.public(), action)
}

fn announce() -> EventBody {
    EventBody::Announced {
        announcement: Announcement::PlaceYourBets,
    }
}

/// A chain from genesis: each body with whether it belongs to the round.
struct Chain {
    events: Vec<BundleEvent>,
    round_seqs: Vec<u64>,
}

impl Chain {
    fn new(bodies: Vec<(EventBody, bool)>) -> Chain {
        let mut prev = GENESIS;
        let mut events = Vec::new();
        let mut round_seqs = Vec::new();
        for (i, (body, in_round)) in bodies.into_iter().enumerate() {
            let seq = i as u64 + 1;
            let e = Event {
                v: WIRE_VERSION,
                table: table(),
                device: dealer(),
                seq: Seq(seq),
                prev,
                occurred_at_ns: T0 + seq as i64,
                round: in_round.then_some(ROUND),
                body,
            };
            let bytes = codec::encode(&e, WireFormat::Bincode);
            prev = event_hash(&prev, &bytes);
            events.push(BundleEvent {
                seq,
                hash: prev,
                stream_seq: seq,
                received_at_ns: T0 + seq as i64,
                bytes: hex::encode(&bytes),
            });
            if in_round {
                round_seqs.push(seq);
            }
        }
        Chain { events, round_seqs }
    }

    fn hash_at(&self, seq: u64) -> Hash32 {
        self.events[seq as usize - 1].hash
    }

    /// The bundle of the round, the whole chain as its segment, config at seq 1, the
    /// replay window as the ledger cuts it (no round before or after: seq 1 to the head),
    /// attested by a checkpoint of the head at
    /// `signed` (signed by `key` over `hash`) and the enrollment at `enrollment_seq`.
    fn bundle(
        &self,
        key: &SigningKey,
        signed: u64,
        hash: Hash32,
        enrollment_seq: u64,
    ) -> EvidenceBundle {
        let checkpoint = Checkpoint::sign(key, table(), dealer(), Seq(signed), hash, T0);
        let last = self.events.last().unwrap();
        let (from, to) = (1, last.seq);
        EvidenceBundle {
            format: BUNDLE_FORMAT.to_string(),
            version: BUNDLE_VERSION_FULL,
            table: table(),
            round: ROUND,
            exported_at_ns: T0 + 1_000,
            exported_by: "test".into(),
            head: BundleHead {
                seq: last.seq,
                hash: last.hash,
            },
            config_seq: 1,
            replay_from: from,
            replay_to: to,
            round_seqs: self.round_seqs.clone(),
            chain: ChainSegment {
                anchor: GENESIS,
                from_seq: 1,
                to_seq: last.seq,
                events: self.events.clone(),
            },
            opening: None,
            attestation: BundleAttestation::Attested {
                checkpoint: Box::new(BundleCheckpoint {
                    bytes: hex::encode(checkpoint.to_bincode()),
                    decoded: checkpoint,
                    stream_seq: 100,
                    received_at_ns: T0 + 500,
                }),
                device_key: key.public(),
                enrollment_seq,
                admin_key: admin().public(),
            },
            report: RoundReport {
                table: table(),
                round: ROUND,
                rule_set: None,
                first_seq: Seq(from),
                last_seq: Seq(to),
                opened_at_ns: T0,
                closed_at_ns: None,
                verdict: Verdict::Clean,
                settlement: None,
                disputes: vec![],
                findings: vec![],
                reconstruction: None,
            },
            cases: vec![],
        }
    }

    /// `bundle` with the checkpoint signing the chain's own hash at `signed`.
    fn signed_at(&self, key: &SigningKey, signed: u64, enrollment_seq: u64) -> EvidenceBundle {
        self.bundle(key, signed, self.hash_at(signed), enrollment_seq)
    }
}

/// Opening, enrollment of the device key, two events of the round, then `after`, then one
/// more event (the checkpoint's head).
fn chain_with(after: Vec<EventBody>) -> Chain {
    chain_enrolled(key_event(&admin(), &device_key(), KeyAction::Enroll), after)
}

/// `chain_with`, with `enrollment` as the event at seq 2.
fn chain_enrolled(enrollment: EventBody, after: Vec<EventBody>) -> Chain {
    let mut bodies = vec![
        (config(), false),
        (enrollment, false),
        (announce(), true),
        (announce(), true),
    ];
    bodies.extend(after.into_iter().map(|b| (b, false)));
    bodies.push((announce(), false));
    Chain::new(bodies)
}

fn refused(b: &EvidenceBundle, pinned: &[schemas::attest::PublicKey]) -> BundleError {
    match verify_chain(b, pinned) {
        Ok(v) => panic!("accepted: {:?}", v.attestation),
        Err(e) => e,
    }
}

fn attested(b: &EvidenceBundle, pinned: &[schemas::attest::PublicKey]) -> AttestationCheck {
    let v = verify_chain(b, pinned).unwrap_or_else(|e| panic!("refused: {e}"));
    assert!(
        matches!(v.attestation, AttestationCheck::Attested { .. }),
        "{:?}",
        v.attestation
    );
    v.attestation
}

#[test]
fn the_plain_chain_is_attested_so_every_refusal_below_is_the_change_it_makes() {
    let chain = chain_with(vec![]);
    let head = chain.events.len() as u64;
    let AttestationCheck::Attested {
        checkpoint_seq,
        enrollment_seq,
        admin_key,
        admin_pinned,
        unattested,
        ..
    } = attested(
        &chain.signed_at(&device_key(), head, 2),
        &[admin().public()],
    )
    else {
        unreachable!()
    };
    assert_eq!(
        (
            checkpoint_seq,
            enrollment_seq,
            admin_key,
            admin_pinned,
            unattested
        ),
        (head, 2, admin().public(), true, None)
    );
}

#[test]
fn a_key_revoked_before_the_signed_head_does_not_attest() {
    let chain = chain_with(vec![key_event(&admin(), &device_key(), KeyAction::Revoke)]);
    let b = chain.signed_at(&device_key(), 6, 2);
    for pinned in [vec![], vec![admin().public()]] {
        let err = refused(&b, &pinned);
        assert!(
            matches!(&err, BundleError::NotEnrolled { detail, .. } if detail == "revoked at seq 5, before the checkpoint's head (seq 6)"),
            "{err}"
        );
    }
    // Signed before the revocation, the same key still attests the round; the events
    // after its head are chained to it but reported as not signed.
    let early = chain.signed_at(&device_key(), 4, 2);
    let AttestationCheck::Attested { unattested, .. } = attested(&early, &[admin().public()])
    else {
        unreachable!()
    };
    assert_eq!(unattested, Some((5, 6)));
}

#[test]
fn a_key_replaced_by_a_rotation_before_the_signed_head_does_not_attest() {
    let next = SigningKey::derive_for_simulation("the dealer terminal's next key");
    let chain = chain_with(vec![key_event(&admin(), &next, KeyAction::Enroll)]);
    let err = refused(&chain.signed_at(&device_key(), 6, 2), &[]);
    assert!(
        matches!(&err, BundleError::NotEnrolled { detail, .. } if detail.starts_with("replaced by another key at seq 5")),
        "{err}"
    );
    // The new key, cited with its own enrollment, attests.
    attested(&chain.signed_at(&next, 6, 5), &[admin().public()]);
    // The new key cited with the old enrollment: that event enrolls another key.
    let err = refused(&chain.signed_at(&next, 6, 2), &[]);
    assert!(
        matches!(&err, BundleError::NotEnrolled { detail, .. } if detail.contains("seq 2 enrolls key")),
        "{err}"
    );
}

#[test]
fn an_enrollment_cited_from_before_a_revoke_and_reenroll_is_refused_and_the_latest_accepted() {
    let chain = chain_with(vec![
        key_event(&admin(), &device_key(), KeyAction::Revoke),
        key_event(&admin(), &device_key(), KeyAction::Enroll),
    ]);
    let err = refused(&chain.signed_at(&device_key(), 7, 2), &[]);
    assert!(
        matches!(&err, BundleError::NotEnrolled { detail, .. } if detail.starts_with("revoked at seq 5")),
        "{err}"
    );
    attested(&chain.signed_at(&device_key(), 7, 6), &[admin().public()]);
}

#[test]
fn a_revocation_by_an_admin_nobody_trusts_takes_no_effect() {
    let stranger = SigningKey::derive_for_simulation("not the House's admin");
    let chain = chain_with(vec![key_event(&stranger, &device_key(), KeyAction::Revoke)]);
    // Trusted here: the bundle's admin (unpinned) or the pinned one; neither signed it.
    attested(&chain.signed_at(&device_key(), 6, 2), &[]);
    attested(&chain.signed_at(&device_key(), 6, 2), &[admin().public()]);
    // Pinned to both, the stranger's revocation counts.
    let err = refused(
        &chain.signed_at(&device_key(), 6, 2),
        &[admin().public(), stranger.public()],
    );
    assert!(matches!(err, BundleError::NotEnrolled { .. }), "{err}");
}

#[test]
fn a_revocation_whose_admin_signature_is_for_another_table_takes_no_effect() {
    let elsewhere = TableId::new("T2").unwrap();
    let key = device_key().public();
    let signature = admin().sign(&enrollment_message(
        &elsewhere,
        &dealer(),
        &key,
        KeyAction::Revoke,
    ));
    let chain = chain_with(vec![EventBody::DeviceRevoked {
        device: dealer(),
        key,
        admin: admin().public(),
        signature,
    }]);
    attested(&chain.signed_at(&device_key(), 6, 2), &[admin().public()]);
}

#[test]
fn an_enrollment_signed_by_an_unpinned_or_unnamed_admin_is_refused() {
    let stranger = SigningKey::derive_for_simulation("not the House's admin");
    let chain = chain_enrolled(
        key_event(&stranger, &device_key(), KeyAction::Enroll),
        vec![],
    );
    // The bundle names the House's admin, the event carries the stranger's.
    let err = refused(&chain.signed_at(&device_key(), 5, 2), &[]);
    assert!(
        matches!(&err, BundleError::NotEnrolled { detail, .. } if detail.contains("the bundle names")),
        "{err}"
    );
    // The bundle names the stranger too: accepted only on trust, refused when pinned.
    let mut b = chain.signed_at(&device_key(), 5, 2);
    if let BundleAttestation::Attested { admin_key, .. } = &mut b.attestation {
        *admin_key = stranger.public();
    }
    let AttestationCheck::Attested { admin_pinned, .. } = attested(&b, &[]) else {
        unreachable!()
    };
    assert!(!admin_pinned);
    let err = refused(&b, &[admin().public()]);
    assert!(
        matches!(err, BundleError::AdminNotPinned { admin, .. } if admin == stranger.public()),
        "{err}"
    );
}

#[test]
fn an_enrollment_with_a_forged_admin_signature_is_refused() {
    let key = device_key().public();
    let forged = device_key().sign(&enrollment_message(
        &table(),
        &dealer(),
        &key,
        KeyAction::Enroll,
    ));
    let forged_enrollment = EventBody::DeviceEnrolled {
        device: dealer(),
        key,
        admin: admin().public(),
        signature: forged,
    };
    let chain = chain_enrolled(forged_enrollment, vec![]);
    let err = refused(&chain.signed_at(&device_key(), 5, 2), &[]);
    assert!(
        matches!(&err, BundleError::NotEnrolled { detail, .. } if detail.contains("admin signature of the enrollment at seq 2 does not verify")),
        "{err}"
    );
}

#[test]
fn a_checkpoint_over_a_hash_the_chain_does_not_hold_is_refused() {
    let chain = chain_with(vec![]);
    // Genuinely signed by the enrolled key, over the hash of another seq.
    let b = chain.bundle(&device_key(), 5, chain.hash_at(4), 2);
    let err = refused(&b, &[]);
    assert_eq!(
        err,
        BundleError::CheckpointHashMismatch {
            seq: 5,
            signed: chain.hash_at(4),
            computed: chain.hash_at(5),
        }
    );
}

#[test]
fn a_checkpoint_of_another_table_is_refused() {
    let chain = chain_with(vec![]);
    let mut b = chain.signed_at(&device_key(), 5, 2);
    let other = Checkpoint::sign(
        &device_key(),
        TableId::new("T2").unwrap(),
        dealer(),
        Seq(5),
        chain.hash_at(5),
        T0,
    );
    if let BundleAttestation::Attested { checkpoint, .. } = &mut b.attestation {
        checkpoint.bytes = hex::encode(other.to_bincode());
        checkpoint.decoded = other;
    }
    let err = refused(&b, &[]);
    assert!(err.to_string().contains("signed for table T2"), "{err}");
}

#[test]
fn a_table_reopened_between_the_cited_configuration_and_the_round_is_refused() {
    let chain = Chain::new(vec![
        (config(), false),
        (key_event(&admin(), &device_key(), KeyAction::Enroll), false),
        (config(), false),
        (announce(), true),
    ]);
    // config_seq 1, but the table was opened again at seq 3: the round ran under that one.
    let err = refused(&chain.signed_at(&device_key(), 4, 2), &[]);
    assert_eq!(err, BundleError::Config(1));
    let mut b = chain.signed_at(&device_key(), 4, 2);
    b.config_seq = 3;
    attested(&b, &[admin().public()]);
}

/// The replay window must be the round's whole window as the ledger cuts it: from the
/// event after the previous round's last (seq 1 here: no round before) to the event
/// before the next round's first (the head here: none after). A window cut to the round's
/// own events leaves out what the replay would see around it (a shuffle, a deck reveal),
/// and a report replayed over the cut window could tell another story.
#[test]
fn a_replay_window_narrower_than_the_rounds_is_refused() {
    let chain = chain_with(vec![]);
    let head = chain.events.len() as u64;
    let whole = chain.signed_at(&device_key(), head, 2);
    attested(&whole, &[admin().public()]);
    let (first, last) = (whole.round_seqs[0], *whole.round_seqs.last().unwrap());
    for (from, to, says) in [
        (first, head, "seq 2 is not the previous round's last event"),
        (1, last, "does not start the next round"),
    ] {
        let mut b = whole.clone();
        (b.replay_from, b.replay_to) = (from, to);
        match refused(&b, &[admin().public()]) {
            BundleError::Window(why) => assert!(why.contains(says), "{why}"),
            other => panic!("{other}"),
        }
    }
}
