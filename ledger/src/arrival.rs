//! Receipts and the arrival chain: the part of the record the per-table chains do not cover.
//!
//! An event's JetStream stream sequence and receive time are ingest's, stored beside the
//! event and not in its bytes, so no event hash covers them; yet they decide the House's
//! order across tables (`Reader::events_in_arrival_order`: linked jackpots, which table's
//! hand came first). Two hashes cover them.
//!
//! **The receipt** of a table is a chain over its events in seq order
//! (`proofs::digest::receipt_next`: keyed BLAKE3 of the previous receipt, the stream seq
//! and the receive time). Each table's `Space::Head` value carries the receipt at the head
//! (`seq ++ hash ++ receipt`), written in the commit that moves the head; `verify`
//! recomputes it, and a digest names it in every table's leaf, so `verify --against`
//! catches a stream seq or receive time rewritten even with every hash rebuilt. It depends
//! only on what is stored per seq, never on how events were grouped into calls, so
//! recovery (which appends lost records again in calls of its own) leaves it unchanged.
//! Heads written before receipts (40 bytes) have none; the next append to such a table
//! computes it from the records (`receipt_of_table`), or, if they do not read, goes on
//! without one (logged; `verify` names the damage) rather than stopping every append.
//!
//! **The arrival chain** records the writing itself: each append call that stores events
//! chains them, in the order it wrote them, onto the previous such call:
//!
//! ```text
//! arrival(c) = BLAKE3("roundledger/arrival/v1" || arrival(c - 1) || call id (u64 BE)
//!                     || for each event of the call, in its records' order:
//!                        event hash (32) || stream seq (u64 BE) || received_at_ns (i64 BE))
//! ```
//!
//! with 32 zero bytes before the first call. The hash closes the call's `Space::Arrival`
//! entry, and the latest (call id ++ hash) is `Space::Meta` `HEAD_KEY`, in the same commit.
//! `verify` recomputes every call's hash from the records the entry lists. Entries written
//! before this chain existed end without a hash; they may only precede the first that has
//! one. Like a table's chain, this detects an edit, not a rewrite of everything after it.
//! A digest does not name this chain's head: recovery at open (`recover`) appends lost
//! records again in calls of its own, so a legitimate repair regroups the calls and changes
//! every hash after the loss. The receipts are what a digest anchors.

use crate::record::{be_u64, R};
use crate::store::{Space, Store};
use schemas::{Hash32, TableId};

/// A table's receipt at `head_seq`, recomputed from its records: for a head written before
/// receipts. An error if the records do not run 1..=`head_seq` (`verify` says where).
pub(crate) fn receipt_of_table(
    store: &dyn Store,
    table: &TableId,
    head_seq: u64,
) -> Result<Hash32, crate::error::Error> {
    let tk = crate::record::table_key(table);
    let mut end = tk.clone();
    end.extend_from_slice(&[0xff; 9]);
    let mut receipt = Hash32::ZERO;
    let mut next = 1u64;
    for kv in store.range(Space::Batch, &tk, Some(&end)) {
        for e in crate::record::decode_record(&kv?.1)? {
            if next > head_seq {
                break;
            }
            if e.seq.0 != next {
                return Err(crate::record::corrupt(&format!(
                    "table {table}: record holds seq {} where seq {next} was expected",
                    e.seq.0
                )));
            }
            receipt = proofs::digest::receipt_next(&receipt, e.stream_seq, e.received_at_ns);
            next += 1;
        }
    }
    if next != head_seq + 1 {
        return Err(crate::record::corrupt(&format!(
            "table {table}: records end at seq {} before its head seq {head_seq}",
            next - 1
        )));
    }
    Ok(receipt)
}

/// Domain tag of an arrival hash.
pub const DOMAIN: &[u8] = b"roundledger/arrival/v1";

/// `Space::Meta` key of the latest arrival hash: `call id (u64 BE) ++ hash`.
pub const HEAD_KEY: &[u8] = b"arrival_head";

/// The arrival hash of one call, fed its events in write order. The events' fields are
/// gathered and hashed in one `update`: BLAKE3 then hashes whole 1 KiB chunks side by side
/// (SIMD), where 48 bytes per call of `update` cost a compression each (callgrind: 800
/// instructions per event, 7% of `append_batch`).
pub struct ArrivalHasher {
    prefix: [u8; 32 + 8],
    events: Vec<u8>,
}

/// Bytes one event adds: hash, stream seq, receive time.
const EVENT_LEN: usize = 32 + 8 + 8;

impl ArrivalHasher {
    /// Starts a call's hash from the previous call's arrival hash and this call's id.
    pub fn new(prev: &Hash32, call_id: u64) -> ArrivalHasher {
        let mut prefix = [0u8; 40];
        prefix[..32].copy_from_slice(&prev.0);
        prefix[32..].copy_from_slice(&call_id.to_be_bytes());
        ArrivalHasher {
            prefix,
            events: Vec::new(),
        }
    }

    /// Adds one appended event: its hash, stream seq and receive time (UTC ns).
    pub fn event(&mut self, hash: &Hash32, stream_seq: u64, received_at_ns: i64) {
        self.events.reserve(EVENT_LEN);
        self.events.extend_from_slice(&hash.0);
        self.events.extend_from_slice(&stream_seq.to_be_bytes());
        self.events.extend_from_slice(&received_at_ns.to_be_bytes());
    }

    /// The call's arrival hash: the next call's `prev`.
    pub fn finish(self) -> Hash32 {
        let mut h = blake3::Hasher::new();
        h.update(DOMAIN);
        h.update(&self.prefix);
        h.update(&self.events);
        Hash32(*h.finalize().as_bytes())
    }
}

/// One `Space::Arrival` entry: the keys of the call's records, in write order, and the
/// call's arrival hash (`None` in entries written before the chain).
pub struct ArrivalEntry {
    /// Keys of the call's records, in write order.
    pub records: Vec<Vec<u8>>,
    /// The call's arrival hash; `None` in entries written before the chain.
    pub hash: Option<Hash32>,
}

/// An entry's value: the keys of the call's records in write order, then its hash.
pub fn encode_entry(records: &[Vec<u8>], hash: &Hash32) -> Vec<u8> {
    let mut w = crate::record::W::default();
    w.u32(records.len() as u32);
    for r in records {
        w.bytes(r);
    }
    w.raw(&hash.0);
    w.0
}

/// Reads an entry's value: `count u32, count x (len u32, key)` (little-endian, as `record`
/// writes), then the hash or nothing.
pub fn decode_entry(v: &[u8]) -> Result<ArrivalEntry, crate::error::Error> {
    let mut r = R::new(v);
    let n = r.u32()?;
    let mut records = Vec::new();
    for _ in 0..n {
        records.push(r.bytes()?.to_vec());
    }
    let hash = match r.rest().len() {
        0 => None,
        32 => Some(r.hash()?),
        n => {
            return Err(crate::record::corrupt(&format!(
                "arrival entry has {n} trailing bytes, not a 32-byte hash"
            )))
        }
    };
    Ok(ArrivalEntry { records, hash })
}

/// The call id of an entry's key (`min stream seq (u64 BE) ++ call id (u64 BE)`).
pub fn call_id_of_key(k: &[u8]) -> Result<u64, crate::error::Error> {
    be_u64(k.get(8..).unwrap_or(&[]))
}

/// `HEAD_KEY`'s value.
pub fn encode_head(call_id: u64, hash: &Hash32) -> Vec<u8> {
    let mut v = call_id.to_be_bytes().to_vec();
    v.extend_from_slice(&hash.0);
    v
}

/// Reads `HEAD_KEY`'s value: (call id, hash).
pub fn decode_head(v: &[u8]) -> Result<(u64, Hash32), crate::error::Error> {
    if v.len() != 40 {
        return Err(crate::record::corrupt("arrival head is not 40 bytes"));
    }
    let mut h = [0u8; 32];
    h.copy_from_slice(&v[8..]);
    Ok((be_u64(&v[..8])?, Hash32(h)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hash is the module doc's formula, byte for byte.
    #[test]
    fn the_hash_is_the_documented_formula() {
        let prev = Hash32([3; 32]);
        let events = [(Hash32([1; 32]), 7u64, -5i64), (Hash32([2; 32]), 9, 1_000)];
        let mut h = ArrivalHasher::new(&prev, 42);
        for (hash, seq, at) in &events {
            h.event(hash, *seq, *at);
        }
        let mut by_hand = b"roundledger/arrival/v1".to_vec();
        by_hand.extend_from_slice(&prev.0);
        by_hand.extend_from_slice(&42u64.to_be_bytes());
        for (hash, seq, at) in &events {
            by_hand.extend_from_slice(&hash.0);
            by_hand.extend_from_slice(&seq.to_be_bytes());
            by_hand.extend_from_slice(&at.to_be_bytes());
        }
        assert_eq!(h.finish(), Hash32(*blake3::hash(&by_hand).as_bytes()));
        // Any field moves it.
        let mut other = ArrivalHasher::new(&prev, 42);
        other.event(&events[0].0, events[0].1, events[0].2 + 1);
        other.event(&events[1].0, events[1].1, events[1].2);
        assert_ne!(other.finish(), Hash32(*blake3::hash(&by_hand).as_bytes()));
    }

    #[test]
    fn an_entry_ends_with_a_whole_hash_or_nothing() {
        let mut w = crate::record::W::default();
        w.u32(1).bytes(b"key");
        let legacy = w.0.clone();
        assert!(decode_entry(&legacy).unwrap().hash.is_none());
        let mut hashed = legacy.clone();
        hashed.extend_from_slice(&[9; 32]);
        let e = decode_entry(&hashed).unwrap();
        assert_eq!(
            (e.records, e.hash),
            (vec![b"key".to_vec()], Some(Hash32([9; 32])))
        );
        let mut torn = legacy;
        torn.extend_from_slice(&[9; 31]);
        assert!(decode_entry(&torn).is_err());
        assert_eq!(
            decode_head(&encode_head(5, &Hash32([4; 32]))).unwrap(),
            (5, Hash32([4; 32]))
        );
        assert!(decode_head(&[0; 39]).is_err());
    }
}
