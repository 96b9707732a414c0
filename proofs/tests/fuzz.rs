//! Fuzzing the proofs with proptest: edited digest files and export headers are refused
//! or read back unchanged, never a panic. `PROPTEST_CASES` sets the count (default 10,000).

use proofs::digest::Digest;
use proptest::prelude::*;
use schemas::{Hash32, TableId};

#[path = "../../schemas/tests/support/mutation.rs"]
mod mutation;
use mutation::{apply, mutation};

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000)
}

/// The heads of the digests the digest properties mutate (with receipts).
fn five_heads() -> Vec<proofs::digest::DigestHead> {
    (0..5u8)
        .map(|i| proofs::digest::DigestHead {
            table: TableId::new(format!("T-{i}")).expect("id"),
            seq: 10 + i as u64,
            head: Hash32([i; 32]),
            receipt: Some(Hash32([i ^ 0xA5; 32])),
            anchors: Vec::new(),
        })
        .collect()
}

/// The quarantine the digest properties name (version 3, the current format).
fn quarantine() -> proofs::digest::QuarantineAnchor {
    proofs::digest::QuarantineAnchor {
        entries: 7,
        hash: Hash32([0x3C; 32]),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    /// Random bytes read as a digest file: an error (JSON opens with `{`), never a panic.
    #[test]
    fn random_bytes_are_no_digest(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        prop_assert!(Digest::from_json(&bytes).is_err() || bytes.first() == Some(&0x7B));
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
        let got = proofs::export::verify_export(header.as_bytes());
        assert!(
            matches!(&got, Err(proofs::export::ExportError::Header(why)) if why.contains("bad range")),
            "{got:?}"
        );
    }
}
