//! The hash-chain test vectors of schemas/README.md: exact event bytes -> hash.
//! `BLESS=1 cargo test -p schemas --test vectors` rewrites vectors/chain-v1.json; a normal
//! run checks that every stored hash is still what the spec computes, so a change to the
//! chain function or the codec cannot pass unnoticed.

use schemas::chain::{event_hash, verify_chain, EVENT_DOMAIN, GENESIS};
use schemas::codec::{self, WireFormat};
use schemas::*;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, PartialEq, Debug)]
struct Vectors {
    domain: String,
    genesis: Hash32,
    table: TableId,
    events: Vec<Vector>,
}

#[derive(Serialize, Deserialize, PartialEq, Debug)]
struct Vector {
    note: String,
    format: WireFormat,
    seq: u64,
    prev: Hash32,
    bytes_hex: String,
    hash: Hash32,
}

fn chain() -> Vectors {
    let table = TableId::new("CSP-01").unwrap();
    let device = DeviceId::new("ctl-1").unwrap();
    let c = |s: &str| Card::parse(s).unwrap();
    let bodies: Vec<(&str, WireFormat, Option<RoundId>, EventBody)> = vec![
        (
            "round opens (bincode)",
            WireFormat::Bincode,
            Some(RoundId(1)),
            EventBody::Announced {
                announcement: Announcement::PlaceYourBets,
            },
        ),
        (
            "ante 10.00 on box 1 (JSON)",
            WireFormat::Json,
            Some(RoundId(1)),
            EventBody::BetPlaced {
                box_no: BoxNo(1),
                kind: BetKind::Ante,
                stake: Stake::Chips(Money(1000)),
            },
        ),
        (
            "burnt card (bincode)",
            WireFormat::Bincode,
            Some(RoundId(1)),
            EventBody::CardDealt {
                to: CardTarget::Burn,
                card: c("7d"),
                face_up: false,
                position: 1,
            },
        ),
        (
            "dealer pays the BET 5 to 1 (bincode)",
            WireFormat::Bincode,
            Some(RoundId(1)),
            EventBody::PaidOut {
                box_no: BoxNo(1),
                line: PayLine::Bet,
                net: Money(10_000),
            },
        ),
        (
            "a dealer takes the table, round-less (bincode)",
            WireFormat::Bincode,
            None,
            EventBody::DealerChanged {
                dealer: StaffId::new("D-0117").unwrap(),
            },
        ),
    ];
    let mut prev = GENESIS;
    let mut events = Vec::new();
    for (i, (note, format, round, body)) in bodies.into_iter().enumerate() {
        let seq = i as u64 + 1;
        let e = Event {
            v: WIRE_VERSION,
            table: table.clone(),
            device: device.clone(),
            seq: Seq(seq),
            prev,
            occurred_at_ns: 1_763_800_000_000_000_000 + seq as i64 * 1_000_000_000,
            round,
            body,
        };
        let bytes = codec::encode(&e, format);
        let hash = event_hash(&prev, &bytes);
        events.push(Vector {
            note: note.into(),
            format,
            seq,
            prev,
            bytes_hex: hex::encode(&bytes),
            hash,
        });
        prev = hash;
    }
    Vectors {
        domain: String::from_utf8(EVENT_DOMAIN.to_vec()).unwrap(),
        genesis: GENESIS,
        table,
        events,
    }
}

fn path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("vectors/chain-v1.json")
}

#[test]
fn hash_vectors_hold() {
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(
            path(),
            serde_json::to_string_pretty(&chain()).unwrap() + "\n",
        )
        .unwrap();
    }
    let stored: Vectors = serde_json::from_str(&std::fs::read_to_string(path()).unwrap()).unwrap();
    assert_eq!(stored.domain, "roundledger/event/v1");
    assert_eq!(stored.genesis, Hash32::ZERO);
    // Every stored hash is recomputed from the stored bytes, never from a re-encoding.
    let mut prev = GENESIS;
    let mut all = Vec::new();
    for v in &stored.events {
        let bytes = hex::decode(&v.bytes_hex).unwrap();
        assert_eq!(
            v.prev, prev,
            "{}: prev links to the previous vector",
            v.note
        );
        assert_eq!(event_hash(&v.prev, &bytes), v.hash, "{}", v.note);
        let (e, format) = codec::decode(&bytes).unwrap();
        assert_eq!(format, v.format);
        assert_eq!(e.seq, Seq(v.seq));
        prev = v.hash;
        all.push(bytes);
    }
    let head = verify_chain(&stored.table, all.iter().map(|b| b.as_slice())).unwrap();
    assert_eq!(head.hash, prev);
    // And today's encoder still writes the same bytes for the same events.
    assert_eq!(
        stored,
        chain(),
        "the codec or the chain changed: the wire spec must be versioned"
    );
}

#[test]
fn a_flipped_byte_breaks_the_chain() {
    let v = chain();
    let mut all: Vec<Vec<u8>> = v
        .events
        .iter()
        .map(|e| hex::decode(&e.bytes_hex).unwrap())
        .collect();
    all[1][10] ^= 0x01;
    assert!(verify_chain(&v.table, all.iter().map(|b| b.as_slice())).is_err());
}
