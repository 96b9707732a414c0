//! Evidence bundles from a ledger fed by the simulator: their size and the events read to
//! build them do not grow with the table's history (counted, not timed); a false state
//! signed in a v2 checkpoint is refused by the ledger and by the verifier; the committed
//! bundle vectors verify, for ever.

use ledger::attest::CheckpointOutcome;
use ledger::Refused;
use proofs::bundle::{BundleAttestation, EvidenceBundle, BUNDLE_VERSION, BUNDLE_VERSION_FULL};
use readside::evidence;
use schemas::attest::{Checkpoint, SigningKey};
use schemas::{Hash32, RoundId, Seq, TableId};

/// Rounds the long table plays: about 50 events each, so the late round sits near seq
/// 1,000,000 (a debug build feeds it in under a minute).
const LATE_ROUNDS: u64 = 20_000;
/// The early round: near seq 1,000.
const EARLY_ROUND: u64 = 15;
/// Events appended per call while feeding.
const FEED_EVENTS_MAX: usize = 4_096;

/// Feeds `rounds` rounds of one simulated table (opening and closing too), with its
/// dealer terminal's checkpoint after each step, as `roundledger seed` does.
fn feed(ledger: &ledger::Ledger, rounds: u64, seed: u64) -> TableId {
    ledger
        .writer()
        .trust_admin_keys([simulator::admin_key().public()])
        .unwrap();
    let mut floor = simulator::Floor::new(1, seed, simulator::FaultPlan::none())
        .unwrap()
        .without_event_signatures();
    let t = &mut floor.tables[0];
    let mut stream_seq = 0u64;
    let mut events = Vec::new();
    let mut checkpoints = Vec::new();
    let mut incoming = |bytes: Vec<u8>, table: &TableId, at_ns: i64| {
        stream_seq += 1;
        ledger::Incoming {
            subject_table: Some(table.clone()),
            stream_seq,
            received_at_ns: at_ns,
            bytes,
            provenance: Default::default(),
        }
    };
    for step in 0..=rounds + 1 {
        let published = match step {
            0 => t.opening_events().unwrap(),
            s if s <= rounds => t.play_round().unwrap().events,
            _ => t.closing_events().unwrap(),
        };
        for p in published {
            events.push(incoming(p.bytes, &p.event.table, p.event.occurred_at_ns));
        }
        let c = t.checkpoint().unwrap();
        checkpoints.push(incoming(c.to_bincode(), &c.table, c.signed_at_ns));
        if events.len() >= FEED_EVENTS_MAX || step == rounds + 1 {
            let out = ledger.writer().append(&events, &checkpoints).unwrap();
            let kept = out
                .checkpoints
                .iter()
                .filter(|o| matches!(o, CheckpointOutcome::Kept { .. }))
                .count();
            assert_eq!(kept, checkpoints.len(), "{:?}", out.checkpoints);
            events.clear();
            checkpoints.clear();
        }
    }
    ledger.flush().unwrap();
    t.table().clone()
}

/// A round's bundle, with the events its building decoded from the store.
fn bundle(ledger: &ledger::Ledger, table: &TableId, round: u64) -> (EvidenceBundle, u64) {
    let before = ledger.reader().events_decoded();
    let located = readside::rounds::locate_in_ledger(ledger, table, round).unwrap();
    let b = evidence::build(ledger, table, round, located, vec![], "test", 0).unwrap();
    (b, ledger.reader().events_decoded() - before)
}

/// The window length of `round` (from the previous round's end to the next's start).
fn window_len(ledger: &ledger::Ledger, table: &TableId, round: u64) -> Option<u64> {
    let n = ledger
        .reader()
        .round_neighbours(table, RoundId(round))
        .unwrap()?;
    Some(n.next?.first_seq.0 - n.prev?.last_seq.0)
}

/// The same round shape early in a table and ~1,000,000 events later: the late bundle's
/// bytes and the events read to build it are within 1.5x of the early one's, and it is
/// under 100 KB. The full form (version 2) grew with the distance to the configuration.
#[test]
fn a_bundles_size_and_reads_do_not_grow_with_history() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger::Ledger::open(dir.path()).unwrap();
    let table = feed(&ledger, LATE_ROUNDS, 7);
    let early_len = window_len(&ledger, &table, EARLY_ROUND).unwrap();
    // The late round with the window closest in length to the early one's.
    let late_round = (LATE_ROUNDS - 200..LATE_ROUNDS - 1)
        .min_by_key(|r| window_len(&ledger, &table, *r).unwrap().abs_diff(early_len))
        .unwrap();
    let (early, early_read) = bundle(&ledger, &table, EARLY_ROUND);
    let (late, late_read) = bundle(&ledger, &table, late_round);
    assert!(
        late.chain.from_seq > 800_000,
        "late: {}",
        late.chain.from_seq
    );
    let admin = [simulator::admin_key().public()];
    for b in [&early, &late] {
        assert_eq!(b.version, BUNDLE_VERSION);
        assert!(matches!(b.attestation, BundleAttestation::Attested { .. }));
        evidence::verify(b, &admin).unwrap();
    }
    let size = |b: &EvidenceBundle| serde_json::to_vec(b).unwrap().len() as u64;
    let (early_bytes, late_bytes) = (size(&early), size(&late));
    println!(
        "early round {EARLY_ROUND} (seq {}): {early_bytes} bytes, {early_read} events read; late round {late_round} (seq {}): {late_bytes} bytes, {late_read} events read",
        early.chain.from_seq, late.chain.from_seq
    );
    assert!(
        late_bytes * 2 <= early_bytes * 3 && late_read * 2 <= early_read * 3,
        "early round {EARLY_ROUND}: {early_bytes} bytes, {early_read} events read; late round {late_round}: {late_bytes} bytes, {late_read} events read"
    );
    assert!(late_bytes < 100_000, "{late_bytes} bytes");
    // The config and the key's enrollment are cited, not reached by the chain.
    let opening = late.opening.as_ref().unwrap();
    assert_eq!(opening.config.as_ref().unwrap().from_seq, late.config_seq);
    assert!(opening.enrollment.is_some());
}

/// The dealer terminal's key as the simulator derives it (public label: tests only).
fn dealer_key(table: &TableId) -> SigningKey {
    SigningKey::derive_for_simulation(&format!("device {table}/dealer-terminal"))
}

/// A v2 checkpoint whose signed state is false is refused by the ledger, verbatim, as
/// `checkpoint_state_mismatch`; a bundle carrying one (genuinely signed by the device's
/// key) fails verification, naming what it claims.
#[test]
fn a_forged_checkpoint_state_is_refused_by_the_ledger_and_the_verifier() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger::Ledger::open(dir.path()).unwrap();
    let table = feed(&ledger, 6, 11);
    let (b, _) = bundle(&ledger, &table, 4);
    assert_eq!(b.version, BUNDLE_VERSION);
    let BundleAttestation::Attested { checkpoint, .. } = &b.attestation else {
        panic!("not attested")
    };
    let real = checkpoint.decoded.clone();
    let state = real.state.unwrap();
    let key = dealer_key(&table);
    let head = (
        real.table.clone(),
        real.device.clone(),
        real.head_seq,
        real.head_hash,
    );
    let enrollment_hash = ledger
        .reader()
        .stored_event(&table, 2)
        .unwrap()
        .unwrap()
        .hash;
    let forgeries = [
        // The enrollment event claimed as the config in force: an older "config".
        schemas::attest::CheckpointState {
            config_seq: Seq(2),
            config_hash: enrollment_hash,
            ..state
        },
        schemas::attest::CheckpointState {
            config_hash: Hash32([7; 32]),
            ..state
        },
        schemas::attest::CheckpointState {
            key_seq: Seq(1),
            key_hash: state.config_hash,
            ..state
        },
    ];
    for (i, forged_state) in forgeries.into_iter().enumerate() {
        let forged = Checkpoint::sign_v2(&key, head.clone(), real.signed_at_ns + 1, forged_state);
        let msg = ledger::Incoming {
            subject_table: Some(table.clone()),
            stream_seq: 1_000_000 + i as u64,
            received_at_ns: real.signed_at_ns,
            bytes: forged.to_bincode(),
            provenance: Default::default(),
        };
        let out = ledger.writer().append_checkpoints(&[msg]).unwrap();
        assert!(
            matches!(
                out[0],
                CheckpointOutcome::Refused(Refused::Quarantined {
                    reason: "checkpoint_state_mismatch",
                    ..
                })
            ),
            "forgery {i}: {:?}",
            out[0]
        );
        let mut t = b.clone();
        if let BundleAttestation::Attested { checkpoint, .. } = &mut t.attestation {
            checkpoint.bytes = hex::encode(forged.to_bincode());
            checkpoint.decoded = forged.clone();
        }
        let err = evidence::verify(&t, &[]).unwrap_err().to_string();
        assert!(
            err.contains("config") || err.contains("enrollment"),
            "forgery {i}: {err}"
        );
    }
    // The opening checkpoint re-signed to claim the enrollment event as the config.
    let o = b.opening.as_ref().unwrap().checkpoint.decoded.clone();
    let os = o.state.unwrap();
    let forged = Checkpoint::sign_v2(
        &key,
        (o.table.clone(), o.device.clone(), o.head_seq, o.head_hash),
        o.signed_at_ns,
        schemas::attest::CheckpointState {
            config_seq: Seq(2),
            config_hash: enrollment_hash,
            ..os
        },
    );
    let mut t = b.clone();
    let opening = t.opening.as_mut().unwrap();
    opening.checkpoint.bytes = hex::encode(forged.to_bincode());
    opening.checkpoint.decoded = forged;
    let err = evidence::verify(&t, &[]).unwrap_err().to_string();
    assert!(err.contains("config"), "{err}");
}

/// The committed vectors: a version 2 bundle exported before version 3 existed, and a
/// version 3 one. Both verify, pinned to the simulator's admin key, for ever.
#[test]
fn the_bundle_vectors_verify() {
    let admin = [simulator::admin_key().public()];
    for (name, bytes, version) in [
        (
            "bundle-v2.json",
            include_bytes!("../../schemas/vectors/bundle-v2.json").as_slice(),
            BUNDLE_VERSION_FULL,
        ),
        (
            "bundle-v3.json",
            include_bytes!("../../schemas/vectors/bundle-v3.json").as_slice(),
            BUNDLE_VERSION,
        ),
    ] {
        let v = evidence::verify_bytes(bytes, &admin).unwrap_or_else(|e| panic!("{name}: {e}"));
        let b: EvidenceBundle = serde_json::from_slice(bytes).unwrap();
        assert_eq!(b.version, version, "{name}");
        assert!(v.round_events > 0, "{name}");
        // One flipped hex digit in the chain fails it.
        let mut t = b.clone();
        let e = &mut t.chain.events[1].bytes;
        let flipped = if e.ends_with('0') { '1' } else { '0' };
        e.pop();
        e.push(flipped);
        assert!(evidence::verify(&t, &admin).is_err(), "{name}");
    }
}
