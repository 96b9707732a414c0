//! Signed records: each ledger node signs the records it publishes with its node key
//! (its seal key, `serve --seal-key`), and every node checks a record's signature
//! before it applies it (`records::apply`).
//!
//! The nodes' NATS credential lets its holder publish on `records.>`; the signature
//! decides whether a record is a node's. Trusted keys are this node's own seal key's
//! public half: every node of a floor runs with the same seal key file (OPERATIONS.md),
//! and that key already vouches for the floor's seals. A floor of nodes without a seal
//! key signs and checks nothing, as before; `/ready` names that.
//!
//! Invariants: a signature covers the payload's exact bytes in `RECORD_DOMAIN`; a node
//! that trusts a key applies no record without a signature by it.

use schemas::attest::{self, PublicKey, Signature, SigningKey};
use schemas::records::record_signed_message;
use std::sync::Arc;

/// Most node keys a node trusts.
pub const TRUSTED_KEYS_MAX: usize = 16;

/// This node's key and the node keys it trusts.
#[derive(Clone, Default)]
pub struct RecordKeys {
    signer: Option<Arc<SigningKey>>,
    trusted: Vec<PublicKey>,
}

impl std::fmt::Debug for RecordKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RecordKeys(trusted {:?})", self.trusted)
    }
}

impl RecordKeys {
    /// Signs with `key` and trusts its public half.
    pub fn of_node_key(key: Arc<SigningKey>) -> RecordKeys {
        RecordKeys {
            trusted: vec![key.public()],
            signer: Some(key),
        }
    }

    /// Whether this node checks records' signatures.
    pub fn checks(&self) -> bool {
        !self.trusted.is_empty()
    }

    /// The signature header's value for a record of `bytes`; `None` without a key.
    pub fn sign(&self, bytes: &[u8]) -> Option<String> {
        let key = self.signer.as_ref()?;
        Some(key.sign(&record_signed_message(bytes)).to_hex())
    }

    /// Whether a record of `bytes` with `signature` may be applied; why not otherwise.
    /// A node that trusts no key applies every record.
    pub fn check(&self, bytes: &[u8], signature: Option<&str>) -> Result<(), String> {
        assert!(
            self.trusted.len() <= TRUSTED_KEYS_MAX,
            "at most TRUSTED_KEYS_MAX node keys are trusted"
        );
        if !self.checks() {
            return Ok(());
        }
        let Some(hex) = signature else {
            return Err("no node signature".into());
        };
        let sig = Signature::from_hex(hex).map_err(|_| "a malformed node signature")?;
        let message = record_signed_message(bytes);
        match self
            .trusted
            .iter()
            .any(|k| attest::verify(k, &message, &sig))
        {
            true => Ok(()),
            false => Err("a signature by no node key this node trusts".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_applies_only_with_a_trusted_nodes_signature_of_its_bytes() {
        let node = RecordKeys::of_node_key(Arc::new(SigningKey::from_secret([3; 32])));
        let other = RecordKeys::of_node_key(Arc::new(SigningKey::from_secret([4; 32])));
        let bytes = br#"{"v":1}"#;
        let sig = node.sign(bytes).unwrap();
        assert!(node.check(bytes, Some(&sig)).is_ok());
        assert!(
            node.check(br#"{"v":2}"#, Some(&sig)).is_err(),
            "other bytes"
        );
        assert!(node.check(bytes, None).is_err(), "unsigned");
        assert!(node.check(bytes, Some("00")).is_err(), "malformed");
        let foreign = other.sign(bytes).unwrap();
        assert!(node.check(bytes, Some(&foreign)).is_err(), "untrusted key");
        let open = RecordKeys::default();
        assert_eq!(open.sign(bytes), None);
        assert!(
            open.check(bytes, None).is_ok(),
            "a node without keys checks nothing"
        );
    }
}
