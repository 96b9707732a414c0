//! Fuzzing the decoders and the chain checks with proptest: random bytes,
//! mutated valid events (flipped, inserted, deleted bytes), truncations, in both wire
//! forms. Nothing panics; every failure is an `Err`; a mutated event never verifies as the
//! original link of a chain. `PROPTEST_CASES` sets the count (default 10,000 per property;
//! schemas is built with opt-level 3 in test builds).

use proptest::prelude::*;
use schemas::chain::{event_hash, verify_chain, GENESIS};
use schemas::codec::{self, WireFormat};
use schemas::*;

#[path = "support/mutation.rs"]
mod mutation;
use mutation::{apply, mutation};

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
}
