//! A table's receipt chain: a keyed BLAKE3 chain over its events' stream seqs and receive
//! times, in seq order. No hash in an event covers these two fields; the receipt does.
//!
//! ```text
//! receipt(t, 0) = 32 zero bytes
//! receipt(t, s) = BLAKE3-keyed(key = BLAKE3("roundledger/receipt/v1"),
//!                              receipt(t, s - 1) || stream seq u64 BE || received_at_ns i64 BE)
//! ```
//!
//! An export recomputes it from its lines; a digest binds it into each table's leaf
//! (`digest`). Pure: no I/O, no clock.

use schemas::ids::Hash32;

/// The receipt chain's key is the BLAKE3 hash of this tag. 22 bytes.
pub const RECEIPT_DOMAIN: &[u8] = b"roundledger/receipt/v1";

/// The receipt chain's key, `BLAKE3(RECEIPT_DOMAIN)`, computed once.
fn receipt_key() -> &'static [u8; 32] {
    static KEY: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();
    KEY.get_or_init(|| *blake3::hash(RECEIPT_DOMAIN).as_bytes())
}

/// One step of a table's receipt chain (module doc): the receipt after the event stored
/// with `stream_seq` and `received_at_ns`, given the receipt before it. 48 bytes under a
/// key: one BLAKE3 compression per event.
pub fn receipt_next(prev: &Hash32, stream_seq: u64, received_at_ns: i64) -> Hash32 {
    let mut m = [0u8; 48];
    m[..32].copy_from_slice(&prev.0);
    m[32..40].copy_from_slice(&stream_seq.to_be_bytes());
    m[40..].copy_from_slice(&received_at_ns.to_be_bytes());
    Hash32(*blake3::keyed_hash(receipt_key(), &m).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The receipt step is the documented formula, byte for byte, and any field moves it.
    #[test]
    fn the_receipt_is_the_documented_formula() {
        let prev = Hash32([3; 32]);
        let key = blake3::hash(b"roundledger/receipt/v1");
        let mut m = prev.0.to_vec();
        m.extend_from_slice(&7u64.to_be_bytes());
        m.extend_from_slice(&(-5i64).to_be_bytes());
        let by_hand = Hash32(*blake3::keyed_hash(key.as_bytes(), &m).as_bytes());
        assert_eq!(receipt_next(&prev, 7, -5), by_hand);
        assert_ne!(receipt_next(&prev, 8, -5), by_hand);
        assert_ne!(receipt_next(&prev, 7, -4), by_hand);
        assert_ne!(receipt_next(&Hash32([4; 32]), 7, -5), by_hand);
    }
}
