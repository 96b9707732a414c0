//! Fuzzing the decoders and the chain checks with proptest (issue 5 item 4): random bytes,
//! mutated valid events (flipped, inserted, deleted bytes), truncations, in both wire
//! forms. Nothing panics; every failure is an `Err`; a mutated event never verifies as the
//! original link of a chain. `PROPTEST_CASES` sets the count (default 10,000 per property;
//! schemas is built with opt-level 3 in test builds).

use proptest::prelude::*;
use schemas::chain::{event_hash, verify_chain, GENESIS};
use schemas::codec::{self, WireFormat};
use schemas::digest::Digest;
use schemas::*;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000)
}

/// A small valid chain of three events, alternating wire forms.
fn valid_chain() -> (TableId, Vec<Vec<u8>>) {
    let t = TableId::new("FZ-1").expect("id");
    let bodies = [
        EventBody::Announced {
            announcement: Announcement::PlaceYourBets,
        },
        EventBody::BetPlaced {
            box_no: BoxNo(2),
            kind: BetKind::Ante,
            stake: Stake::Chips(Money(2500)),
        },
        EventBody::CardDealt {
            to: CardTarget::Box(BoxNo(2)),
            card: Card::parse("Td").expect("card"),
            face_up: false,
            position: 3,
        },
    ];
    let mut prev = GENESIS;
    let mut out = Vec::new();
    for (i, body) in bodies.into_iter().enumerate() {
        let e = Event {
            v: WIRE_VERSION,
            table: t.clone(),
            device: DeviceId::new("ctl-1").expect("id"),
            seq: Seq(i as u64 + 1),
            prev,
            occurred_at_ns: 1_767_225_600_000_000_000 + i as i64,
            round: Some(RoundId(1)),
            body,
        };
        let f = if i % 2 == 0 {
            WireFormat::Bincode
        } else {
            WireFormat::Json
        };
        let b = codec::encode(&e, f);
        prev = event_hash(&prev, &b);
        out.push(b);
    }
    (t, out)
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1..=255u8).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<usize>().prop_map(Mutation::Delete),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(b: &mut Vec<u8>, m: &Mutation) {
    let n = b.len();
    match *m {
        Mutation::Flip(i, x) => b[i % n] ^= x,
        Mutation::Insert(i, x) => b.insert(i % (n + 1), x),
        Mutation::Delete(i) => {
            b.remove(i % n);
        }
        Mutation::Truncate(i) => b.truncate(i % n),
    }
}

/// The heads of the digests the digest properties mutate (with receipts).
fn five_heads() -> Vec<schemas::digest::DigestHead> {
    (0..5u8)
        .map(|i| schemas::digest::DigestHead {
            table: TableId::new(format!("T-{i}")).expect("id"),
            seq: 10 + i as u64,
            head: Hash32([i; 32]),
            receipt: Some(Hash32([i ^ 0xA5; 32])),
            anchors: Vec::new(),
        })
        .collect()
}

/// The quarantine the digest properties name (version 3, the current format).
fn quarantine() -> schemas::digest::QuarantineAnchor {
    schemas::digest::QuarantineAnchor {
        entries: 7,
        hash: Hash32([0x3C; 32]),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    /// Random bytes: decode returns Ok or Err, never panics; an Ok re-checks its own grammar.
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512), lead in prop_oneof![Just(None), Just(Some(0x01u8)), Just(Some(b'{'))]) {
        let mut b = bytes;
        if let Some(l) = lead { b.insert(0, l); }
        if let Ok((e, _)) = codec::decode(&b) {
            prop_assert!(e.seq.0 >= 1);
            prop_assert!(e.table.check().is_ok());
        }
        let t = TableId::new("FZ-1").expect("id");
        let _ = verify_chain(&t, [b.as_slice()]);
        let _ = Digest::from_json(&b);
    }

    /// Mutated valid events (one to three mutations, either form): never a panic, and never
    /// accepted as the original link: the chain either fails or has another head.
    #[test]
    fn mutated_events_never_pass_as_the_original(which in 0usize..3, ms in proptest::collection::vec(mutation(), 1..4)) {
        let (t, chain) = valid_chain();
        let original = verify_chain(&t, chain.iter().map(|b| b.as_slice())).expect("valid chain");
        let mut chain2 = chain.clone();
        for m in &ms {
            if chain2[which].is_empty() { break; }
            apply(&mut chain2[which], m);
        }
        let _ = codec::decode(&chain2[which]);
        if chain2[which] != chain[which] {
            match verify_chain(&t, chain2.iter().map(|b| b.as_slice())) {
                Err(_) => {}
                Ok(head) => prop_assert_ne!(head.hash, original.hash),
            }
        }
    }

    /// Truncations of every valid event at every length are errors, never panics.
    #[test]
    fn truncations_are_errors(which in 0usize..3, cut in any::<usize>()) {
        let (_, chain) = valid_chain();
        let b = &chain[which];
        let cut = cut % b.len();
        prop_assert!(codec::decode(&b[..cut]).is_err());
    }

    /// A digest file with edited JSON is refused or, when it still parses and checks,
    /// recomputes to the same root (an edit of whitespace).
    #[test]
    fn mutated_digest_files_are_refused(ms in proptest::collection::vec(mutation(), 1..3)) {
        let d = Digest::new(five_heads(), 42).with_quarantine(quarantine());
        let mut b = d.to_json();
        for m in &ms { if !b.is_empty() { apply(&mut b, m); } }
        if let Ok(back) = Digest::from_json(&b) {
            prop_assert_eq!(back.root, d.root);
            prop_assert_eq!(back.tables, d.tables);
            prop_assert_eq!(back.quarantine, d.quarantine);
        }
    }

    /// The same for a signed digest: an edit that still reads leaves the time, the count,
    /// the root and the signature as they were (the signature binds the time).
    #[test]
    fn mutated_signed_digest_files_are_refused(ms in proptest::collection::vec(mutation(), 1..3)) {
        let key = schemas::attest::SigningKey::from_secret([5; 32]);
        let d = Digest::new(five_heads(), 1_767_225_600_000_000_000)
            .with_quarantine(quarantine())
            .signed(&key);
        let mut b = d.to_json();
        for m in &ms { if !b.is_empty() { apply(&mut b, m); } }
        if let Ok(back) = Digest::from_json(&b) {
            prop_assert_eq!(back, d);
        }
    }
}

/// A header announcing a range that ends at seq u64::MAX, with no event line: refused,
/// not a panic (`to_seq + 1` would overflow).
#[test]
fn an_export_header_ending_at_the_last_seq_is_refused() {
    let zeros = "0".repeat(64);
    for (from, to, events) in [(u64::MAX, u64::MAX, 1u64), (1, u64::MAX, u64::MAX)] {
        let header = format!(
            r#"{{"format":"roundledger-export","version":1,"tables":[{{"table":"T-1","from_seq":{from},"to_seq":{to},"anchor":"{zeros}","head":"{zeros}","events":{events}}}]}}"#
        );
        let got = schemas::export::verify_export(header.as_bytes());
        assert!(
            matches!(&got, Err(schemas::export::ExportError::Header(why)) if why.contains("bad range")),
            "{got:?}"
        );
    }
}
