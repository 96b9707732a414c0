//! The hash chain: a pure function over the exact bytes received, never a re-serialisation
//! (docs/DESIGN.md, stored bytes are received bytes). Anyone can verify an export with this
//! module, or from the spec in schemas/README.md in any language.
//!
//! `hash(event) = BLAKE3( "roundledger/event/v1" || prev_hash (32 bytes) || event bytes )`
//!
//! where `prev_hash` is the hash of the previous event of the same chain, `Hash32::ZERO`
//! (32 zero bytes) for sequence 1, and "event bytes" is the NATS message body exactly as
//! received (bincode or JSON).

use crate::card::Card;
use crate::codec::{self, DecodeError};
use crate::event::Event;
use crate::ids::{Hash32, Seq, TableId};
use serde::{Deserialize, Serialize};

/// Domain tag of event hashes. 20 bytes, no terminator.
pub const EVENT_DOMAIN: &[u8] = b"roundledger/event/v1";
/// Domain tag of deck commitments.
pub const DECK_DOMAIN: &[u8] = b"roundledger/deck/v1";
/// The `prev` of every chain's first event.
pub const GENESIS: Hash32 = Hash32::ZERO;

/// The hash of one event given the previous event's hash and its exact bytes.
pub fn event_hash(prev: &Hash32, bytes: &[u8]) -> Hash32 {
    let mut h = blake3::Hasher::new();
    h.update(EVENT_DOMAIN);
    h.update(&prev.0);
    h.update(bytes);
    Hash32(*h.finalize().as_bytes())
}

/// Commitment to a deck order before the deal:
/// `BLAKE3( "roundledger/deck/v1" || salt (32 bytes) || one byte per card, its code )`.
/// The salt keeps the order secret until `DeckRevealed` publishes it.
pub fn deck_commitment(salt: &Hash32, order: &[Card]) -> Hash32 {
    let mut h = blake3::Hasher::new();
    h.update(DECK_DOMAIN);
    h.update(&salt.0);
    for c in order {
        h.update(&[c.code()]);
    }
    Hash32(*h.finalize().as_bytes())
}

/// The last event of a chain as far as it has been verified. `seq == Seq(0)` and
/// `hash == GENESIS` for an empty chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainHead {
    /// The table whose chain it is.
    pub table: TableId,
    /// The seq of the last verified event; 0 for an empty chain.
    pub seq: Seq,
    /// That event's hash; `GENESIS` for an empty chain.
    pub hash: Hash32,
}

impl ChainHead {
    /// The head of `table`'s empty chain: seq 0, hash `GENESIS`.
    pub fn empty(table: TableId) -> ChainHead {
        ChainHead {
            table,
            seq: Seq(0),
            hash: GENESIS,
        }
    }
}

/// How an event fails to extend a chain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    /// The event belongs to another table.
    #[error("event of table {found} in the chain of table {expected}")]
    WrongTable {
        /// The chain's table.
        expected: TableId,
        /// The event's table.
        found: TableId,
    },
    /// The event's seq is not the head's seq + 1.
    #[error("sequence {found} does not follow {head} (expected {expected})")]
    SeqGap {
        /// The head's seq.
        head: u64,
        /// The seq that comes next: `head` + 1.
        expected: u64,
        /// The event's seq.
        found: u64,
    },
    /// The event's prev is not the head's hash.
    #[error("sequence {seq}: previous hash {found} does not match the chain head {expected}")]
    PrevMismatch {
        /// The event's seq.
        seq: u64,
        /// The head's hash.
        expected: Hash32,
        /// The event's prev.
        found: Hash32,
    },
    /// The bytes at `seq` do not decode.
    #[error("sequence {seq}: undecodable: {source}")]
    Undecodable {
        /// The seq it would take: the head's seq + 1.
        seq: u64,
        /// Why they do not decode.
        #[source]
        source: DecodeError,
    },
    /// A stored hash is not the hash of its stored bytes.
    #[error("position {position}: stored hash {stored} differs from the recomputed {computed}")]
    HashMismatch {
        /// The position in the chain, from 1.
        position: u64,
        /// The hash stored beside the bytes.
        stored: Hash32,
        /// The hash recomputed from the bytes.
        computed: Hash32,
    },
}

impl ChainHead {
    /// Checks that `event` (decoded from `bytes`) is the next link, and returns the new head.
    /// Does not modify `self`: the caller commits the new head only once the event is stored.
    pub fn next(&self, event: &Event, bytes: &[u8]) -> Result<ChainHead, ChainError> {
        self.next_hashed(event, event_hash(&event.prev, bytes))
    }

    /// `next` for a caller that has already hashed the event: `hash` must be
    /// `event_hash(&event.prev, bytes)` (ingest hashes every event once, before it knows
    /// whether it is the next link, a duplicate or a fork).
    pub fn next_hashed(&self, event: &Event, hash: Hash32) -> Result<ChainHead, ChainError> {
        if event.table != self.table {
            return Err(ChainError::WrongTable {
                expected: self.table.clone(),
                found: event.table.clone(),
            });
        }
        let expected = self.seq.0 + 1;
        if event.seq.0 != expected {
            return Err(ChainError::SeqGap {
                head: self.seq.0,
                expected,
                found: event.seq.0,
            });
        }
        if event.prev != self.hash {
            return Err(ChainError::PrevMismatch {
                seq: event.seq.0,
                expected: self.hash,
                found: event.prev,
            });
        }
        Ok(ChainHead {
            table: self.table.clone(),
            seq: event.seq,
            // `event.prev == self.hash` was checked above, so this is the link's hash.
            hash,
        })
    }
}

/// Verifies a whole chain from genesis given each event's exact bytes, in sequence order.
/// Returns the head, or the first position that does not verify.
pub fn verify_chain<'a>(
    table: &TableId,
    events: impl IntoIterator<Item = &'a [u8]>,
) -> Result<ChainHead, ChainError> {
    let mut head = ChainHead::empty(table.clone());
    for bytes in events {
        let (event, _) = codec::decode(bytes).map_err(|source| ChainError::Undecodable {
            seq: head.seq.0 + 1,
            source,
        })?;
        head = head.next(&event, bytes)?;
    }
    Ok(head)
}
