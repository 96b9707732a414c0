//! The two wire forms of an `Event` and the one place that encodes and decodes them.
//!
//! - bincode 2.0.1 with `config::standard()` (little endian, variable-length integers):
//!   the compact form the simulator and table controllers publish. Its first byte is the
//!   wire version (1).
//! - JSON (`serde_json`), so a device written in any language can publish. Its first
//!   non-whitespace byte is `{`.
//!
//! A reader tells them apart by that first byte, so no header is needed and the hashed
//! bytes are exactly the message body. schemas/README.md specifies both forms completely
//! enough to read an archive without the bincode crate.

use crate::event::{Event, EVENT_KINDS, WIRE_VERSION};
use crate::ids::IdError;

mod fast;

/// Largest event accepted, in bytes, in either form. A 7-box round's largest event (the
/// table configuration with full pay tables) is well under 4 KiB.
pub const EVENT_LEN_MAX: usize = 64 * 1024;

/// Which wire form a message used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireFormat {
    /// The compact binary form: `WIRE_VERSION` byte, then bincode.
    Bincode,
    /// The JSON form, for devices that cannot write bincode.
    Json,
}

/// Why bytes are not an event. Every variant names what was wrong: it is stored beside
/// the quarantined bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// No bytes at all.
    #[error("empty message")]
    Empty,
    /// Longer than `EVENT_LEN_MAX`: refused before decoding.
    #[error("message of {len} bytes exceeds the limit of {max} bytes")]
    TooLarge {
        /// The message's length in bytes.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// The bincode form does not decode; bincode's error.
    #[error("bincode: {0}")]
    Bincode(String),
    /// Bytes left after a whole bincode event.
    #[error("bincode: {extra} trailing bytes after the event")]
    TrailingBytes {
        /// How many bytes are left.
        extra: usize,
    },
    /// The JSON form does not parse as an event; serde's error.
    #[error("json: {0}")]
    Json(String),
    /// A wire version byte this build does not read.
    #[error("unsupported wire version {0} (this build reads version {WIRE_VERSION})")]
    Version(u8),
    /// An id field breaks the id grammar (`ids::check_id`).
    #[error("bad identifier in field {field}: {source}")]
    Id {
        /// The field's name, e.g. `table`.
        field: &'static str,
        /// What is wrong with the id.
        #[source]
        source: IdError,
    },
    /// Seq 0: chains start at 1.
    #[error("sequence number 0 is not used; chains start at 1")]
    SeqZero,
    /// The body's kind is not in this build's catalogue (`EVENT_KINDS`): a newer device?
    #[error("unknown event kind {kind} (this build knows {} kinds)", EVENT_KINDS.len())]
    UnknownKind {
        /// The bincode variant index, or the JSON `type`.
        kind: String,
    },
}

pub(crate) fn bincode_config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<EVENT_LEN_MAX>()
}

/// The wire form of `bytes`, judged by its first non-whitespace byte.
pub fn detect(bytes: &[u8]) -> WireFormat {
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => WireFormat::Json,
        _ => WireFormat::Bincode,
    }
}

/// Encodes in the compact bincode form.
pub fn to_bincode(event: &Event) -> Vec<u8> {
    // Encoding into a Vec cannot fail for our types (no maps, no unsized limits hit:
    // events are built by our own code and stay far below EVENT_LEN_MAX).
    bincode::encode_to_vec(event, bincode::config::standard())
        .expect("bincode encoding of an Event into a Vec is infallible")
}

/// Encodes in the JSON form (one line, no trailing newline).
pub fn to_json(event: &Event) -> Vec<u8> {
    serde_json::to_vec(event).expect("JSON encoding of an Event is infallible")
}

/// Encodes in the chosen form.
pub fn encode(event: &Event, format: WireFormat) -> Vec<u8> {
    match format {
        WireFormat::Bincode => to_bincode(event),
        WireFormat::Json => to_json(event),
    }
}

/// Decodes one event from either form and checks what the decoders cannot: the wire
/// version, the id grammar, seq >= 1. Never panics, whatever the bytes.
pub fn decode(bytes: &[u8]) -> Result<(Event, WireFormat), DecodeError> {
    if bytes.is_empty() {
        return Err(DecodeError::Empty);
    }
    if bytes.len() > EVENT_LEN_MAX {
        return Err(DecodeError::TooLarge {
            len: bytes.len(),
            max: EVENT_LEN_MAX,
        });
    }
    let format = detect(bytes);
    let event = match format {
        WireFormat::Json => {
            serde_json::from_slice::<Event>(bytes).map_err(|e| json_error(bytes, &e))?
        }
        WireFormat::Bincode => {
            if bytes[0] != WIRE_VERSION {
                return Err(DecodeError::Version(bytes[0]));
            }
            // The events of a round take the direct reader; it answers only where bincode
            // gives the same event (see `fast`), everything else is bincode's. Its events
            // have the wire version and grammar-checked ids already: only `seq` is left of
            // `check`, and the errors are the same either way.
            if let Some(event) = fast::event(bytes) {
                if event.seq.0 == 0 {
                    return Err(DecodeError::SeqZero);
                }
                return Ok((event, format));
            }
            decode_bincode(bytes)?
        }
    };
    check(&event)?;
    Ok((event, format))
}

/// The bincode form through the bincode crate: the definition `fast` is held to.
fn decode_bincode(bytes: &[u8]) -> Result<Event, DecodeError> {
    let (event, used): (Event, usize) = bincode::decode_from_slice(bytes, bincode_config())
        .map_err(|e| bincode_error(bytes, &e))?;
    if used != bytes.len() {
        return Err(DecodeError::TrailingBytes {
            extra: bytes.len() - used,
        });
    }
    Ok(event)
}

/// Why bincode refused `bytes`: an unknown kind when our own reader finds a body
/// variant index beyond the catalogue, else bincode's own words.
fn bincode_error(bytes: &[u8], e: &bincode::error::DecodeError) -> DecodeError {
    match fast::body_tag(bytes) {
        Some(tag) if tag as usize >= EVENT_KINDS.len() => DecodeError::UnknownKind {
            kind: tag.to_string(),
        },
        _ => DecodeError::Bincode(e.to_string()),
    }
}

/// Why serde_json refused `bytes`: an unknown kind when the body's `type` is a string
/// the catalogue lacks, else serde_json's own words. Runs on refused messages only.
fn json_error(bytes: &[u8], e: &serde_json::Error) -> DecodeError {
    let kind = serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .and_then(|v| v.get("body")?.get("type")?.as_str().map(str::to_string));
    match kind {
        Some(k) if !EVENT_KINDS.contains(&k.as_str()) => DecodeError::UnknownKind { kind: k },
        _ => DecodeError::Json(e.to_string()),
    }
}

/// The variant index of a bincode event's body (its kind's position in `EVENT_KINDS`),
/// read by our own reader. `None` if the bytes end before it.
pub fn body_tag(bytes: &[u8]) -> Option<u32> {
    fast::body_tag(bytes)
}

fn check(e: &Event) -> Result<(), DecodeError> {
    if e.v != WIRE_VERSION {
        return Err(DecodeError::Version(e.v));
    }
    e.table.check().map_err(|source| DecodeError::Id {
        field: "table",
        source,
    })?;
    e.device.check().map_err(|source| DecodeError::Id {
        field: "device",
        source,
    })?;
    if e.seq.0 == 0 {
        return Err(DecodeError::SeqZero);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::card::Card;
    use crate::config::{BetKind, PayLine};
    use crate::event::{Announcement, CardTarget, Choice, EventBody, PlayerOption, Ruling, Stake};
    use crate::ids::{BoxNo, DeviceId, Hash32, Money, PoolId, RoundId, Seq, StaffId, TableId};

    fn ev(seq: u64, round: Option<RoundId>, occurred_at_ns: i64, body: EventBody) -> Event {
        Event {
            v: WIRE_VERSION,
            table: TableId::new("T-01_a").unwrap(),
            device: DeviceId::new("shoe-1").unwrap(),
            seq: Seq(seq),
            prev: Hash32([seq as u8; 32]),
            occurred_at_ns,
            round,
            body,
        }
    }

    /// Every body the direct reader handles, with every sub-variant, and integers at the
    /// edges of each varint width.
    fn samples() -> Vec<Event> {
        let c = |s: &str| Card::parse(s).unwrap();
        let pool = PoolId::new("MLP-1").unwrap();
        let staff = StaffId::new("pit-7").unwrap();
        let deck: Vec<Card> = Card::deck().collect();
        let mut bodies = vec![
            EventBody::TableClosed,
            EventBody::ShuffleCompleted {
                deck_commitment: None,
            },
            EventBody::ShuffleCompleted {
                deck_commitment: Some(Hash32([0xab; 32])),
            },
            EventBody::DeckRevealed {
                order: deck.clone(),
                salt: Hash32([3; 32]),
            },
            EventBody::DeckRevealed {
                order: Vec::new(),
                salt: Hash32([0; 32]),
            },
            EventBody::Announced {
                announcement: Announcement::Result {
                    text: "Dealer has a pair of Kings, é".into(),
                },
            },
            EventBody::HandExamined {
                player_box: BoxNo(1),
                hand_box: BoxNo(255),
            },
            EventBody::HandRevealed {
                box_no: BoxNo(3),
                cards: vec![c("As"), c("Kd"), c("2c")],
            },
            EventBody::DealerRevealed {
                cards: vec![c("Td"), c("Th"), c("9s"), c("8c"), c("7d")],
            },
            EventBody::JackpotShown {
                pool: pool.clone(),
                value: Money(123_456_789),
            },
            EventBody::JackpotHit {
                pool: pool.clone(),
                box_no: BoxNo(2),
                amount: Money(-1),
            },
            EventBody::JackpotReset {
                pool: pool.clone(),
                value: Money(i64::MIN),
            },
            EventBody::JackpotFault {
                pool: pool.clone(),
                description: String::new(),
            },
            EventBody::JackpotRestored { pool },
            EventBody::MagicCardSelected { card: c("Qh") },
            EventBody::LuckyPlayerSelected { box_no: BoxNo(7) },
            EventBody::LuckyDealerSelected,
            EventBody::TechnicalInterruption {
                description: "power failure".into(),
            },
            EventBody::RoundClosed,
        ];
        for announcement in [
            Announcement::PlaceYourBets,
            Announcement::NoMoreBets,
            Announcement::NoHand,
            Announcement::Void,
        ] {
            bodies.push(EventBody::Announced { announcement });
        }
        for (i, to) in [
            CardTarget::Burn,
            CardTarget::Box(BoxNo(4)),
            CardTarget::Dealer,
        ]
        .into_iter()
        .enumerate()
        {
            for position in [0u16, 1, 250, 251, 300, u16::MAX] {
                bodies.push(EventBody::CardDealt {
                    to,
                    card: deck[i * 17 + usize::from(position % 3)],
                    face_up: position % 2 == 0,
                    position,
                });
            }
            bodies.push(EventBody::CardExposed {
                at: to,
                card: c("5h"),
                players_had_seen: i == 1,
            });
        }
        let stakes = [
            Stake::Chips(Money(0)),
            Stake::Chips(Money(2500)),
            Stake::Chips(Money(-125)),
            Stake::Chips(Money(i64::MAX)),
            Stake::Credits(0),
            Stake::Credits(250),
            Stake::Credits(70_000),
            Stake::Credits(u32::MAX),
        ];
        for kind in BetKind::ALL {
            for stake in stakes {
                bodies.push(EventBody::BetPlaced {
                    box_no: BoxNo(1),
                    kind,
                    stake,
                });
                bodies.push(EventBody::BetWithdrawn {
                    box_no: BoxNo(6),
                    kind,
                    stake,
                });
            }
            bodies.push(EventBody::BetRejected {
                box_no: BoxNo(2),
                kind,
                stake: Stake::Chips(Money(1)),
                reason: "over the maximum".into(),
            });
            bodies.push(EventBody::BetChanged {
                box_no: BoxNo(2),
                kind,
                from: Stake::Credits(3),
                to: Stake::Chips(Money(99_999)),
            });
        }
        for choice in [
            Choice::Play,
            Choice::Fold,
            Choice::WalkAway,
            Choice::RefuseToReveal,
        ] {
            for stake in [None, Some(Money(5000)), Some(Money(-3))] {
                bodies.push(EventBody::Decided {
                    box_no: BoxNo(5),
                    choice,
                    stake,
                });
            }
        }
        for line in [
            PayLine::Ante,
            PayLine::Bet,
            PayLine::Play,
            PayLine::PairPlus,
            PayLine::Progressive,
            PayLine::JackpotPlayer,
            PayLine::JackpotDealer,
            PayLine::Bonus,
            PayLine::AnteBonus,
            PayLine::Envy,
        ] {
            bodies.push(EventBody::PaidOut {
                box_no: BoxNo(3),
                line,
                net: Money(-5000),
            });
        }
        let rulings = [
            Ruling::IrregularityDeclared {
                clause: "CSP6 5.9".into(),
                note: "no burn".into(),
            },
            Ruling::VoidRound {
                clause: "CSP6 5.8.2".into(),
                reason: "two cards exposed".into(),
            },
            Ruling::PlayerOption {
                box_no: BoxNo(2),
                option: PlayerOption::Continue,
            },
            Ruling::PlayerOption {
                box_no: BoxNo(2),
                option: PlayerOption::ContinueReconstructed,
            },
            Ruling::PlayerOption {
                box_no: BoxNo(2),
                option: PlayerOption::ReturnBets,
            },
            Ruling::CardOrder {
                cards: vec![c("2c"), c("3d")],
            },
            Ruling::ExaminationIntent {
                player_box: BoxNo(1),
                hand_box: BoxNo(2),
                intentional: true,
            },
            Ruling::Reconstruction {
                allowed: false,
                note: "refused".into(),
            },
            Ruling::ShiftManager {
                decision: "pay it".into(),
            },
        ];
        for ruling in rulings {
            bodies.push(EventBody::StaffDecision {
                staff: staff.clone(),
                ruling,
            });
        }
        let edges: [(u64, i64); 8] = [
            (1, 0),
            (250, -1),
            (251, 1_780_000_000_000_000_000),
            (65_535, -1_780_000_000_000_000_000),
            (65_536, i64::MAX),
            (u64::from(u32::MAX), i64::MIN),
            (u64::from(u32::MAX) + 1, 125),
            (u64::MAX, -126),
        ];
        bodies
            .into_iter()
            .enumerate()
            .map(|(i, body)| {
                let (seq, at) = edges[i % edges.len()];
                let round = match i % 3 {
                    0 => None,
                    1 => Some(RoundId(seq)),
                    _ => Some(RoundId(7)),
                };
                ev(seq, round, at, body)
            })
            .collect()
    }

    /// The direct reader takes every sample and agrees with bincode on it.
    #[test]
    fn direct_reader_agrees_with_bincode_on_every_variant() {
        for e in samples() {
            let bytes = to_bincode(&e);
            assert_eq!(decode_bincode(&bytes), Ok(e.clone()), "{e:?}");
            assert_eq!(fast::event(&bytes), Some(e.clone()), "{e:?}");
            assert_eq!(decode(&bytes), Ok((e, WireFormat::Bincode)));
        }
    }

    /// A JSON card of one two-byte character ("é") must not be cut inside it (a panic in
    /// `decode` would poison ingest and `verify`). Every card in every sample, replaced
    /// by non-ASCII text, is an error.
    #[test]
    fn a_card_in_non_ascii_text_is_an_error_not_a_panic() {
        let mut tried = 0;
        for e in samples() {
            let json = String::from_utf8(to_json(&e)).unwrap();
            for card in Card::deck() {
                let quoted = format!("\"{card}\"");
                if !json.contains(&quoted) {
                    continue;
                }
                for hostile in ["é", "Aé", "é♠", "10é", "1é", "♠", "ÀÁ"] {
                    let bad = json.replace(&quoted, &format!("\"{hostile}\""));
                    assert!(decode(bad.as_bytes()).is_err(), "{bad}");
                    tried += 1;
                }
            }
        }
        assert!(tried > 50, "only {tried} cards replaced");
        assert!(Card::parse("é").is_err());
    }

    /// Mutated messages: wherever the direct reader answers, bincode gives the same event,
    /// and `decode` as a whole gives what bincode alone gives.
    #[test]
    fn direct_reader_never_answers_where_bincode_differs() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            // xorshift64: deterministic, no dependency.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let old = |bytes: &[u8]| -> Result<(Event, WireFormat), DecodeError> {
            if bytes.is_empty() {
                return Err(DecodeError::Empty);
            }
            if bytes[0] != WIRE_VERSION {
                return Err(DecodeError::Version(bytes[0]));
            }
            let e = decode_bincode(bytes)?;
            check(&e)?;
            Ok((e, WireFormat::Bincode))
        };
        let mut answered = 0;
        for e in samples() {
            let good = to_bincode(&e);
            for _ in 0..400 {
                let mut b = good.clone();
                for _ in 0..=(next() % 3) {
                    let i = (next() as usize) % b.len().max(1);
                    match next() % 6 {
                        0 if !b.is_empty() => b[i] ^= 1 << (next() % 8),
                        1 if !b.is_empty() => b[i] = next() as u8,
                        2 if !b.is_empty() => {
                            b[i] = [0, 1, 2, 250, 251, 252, 253, 254, 255][(next() % 9) as usize]
                        }
                        3 => b.insert(i.min(b.len()), next() as u8),
                        4 if !b.is_empty() => {
                            b.remove(i);
                        }
                        _ => b.truncate(i),
                    }
                }
                if b.first() != Some(&WIRE_VERSION) {
                    continue;
                }
                if let Some(f) = fast::event(&b) {
                    answered += 1;
                    assert_eq!(decode_bincode(&b), Ok(f), "{b:?}");
                }
                assert_eq!(decode(&b), old(&b), "{b:?}");
            }
        }
        // The mutations must exercise the reader, not only its refusals.
        assert!(answered > 1000, "{answered}");
    }
}
