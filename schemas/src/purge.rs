//! Quarantine purge: an admin-signed decision that the quarantine's entries below an id
//! are removed, so that a quarantine full to its limit keeps refusals again (RUNBOOK.md).
//! The ledger removes them in bounded steps and keeps, in their place, the quarantine
//! chain's hash at the cut: `verify` and digests still check every entry that stays.
//! Entries of a table fenced now are kept (moved past the cut), never removed.
//!
//! Wire form: `PURGE_PREFIX` then the record's JSON, published on the events subject of
//! `via`, any table whose device credential carries it (a re-sync travels the same way;
//! the act is not that table's). Signed bytes (`QuarantinePurge::signed_message`):
//!
//! ```text
//! "roundledger/quarantine-purge/v1" || len(via) u8 || via || below_id u64 BE
//!   || signed_at_ns i64 BE || len(note) u16 BE || note (UTF-8)
//! ```

use crate::attest::{push_id, verify, PublicKey, Signature, SigningKey};
use crate::ids::TableId;
use serde::{Deserialize, Serialize};

/// Domain tag of a purge's signed bytes.
pub const PURGE_DOMAIN: &[u8] = b"roundledger/quarantine-purge/v1";
/// The first bytes of a purge message. No event starts so: bincode starts with its
/// version byte (1), JSON with `{` or white space.
pub const PURGE_PREFIX: &[u8] = b"roundledger/quarantine-purge/v1\n";
/// Longest note, in bytes.
pub const PURGE_NOTE_LEN_MAX: usize = 1024;

/// An admin's signed decision that the quarantine entries below `below_id` are removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuarantinePurge {
    /// The table whose events subject carries it.
    pub via: TableId,
    /// Entries with a lower id are removed (those of a table fenced now are kept).
    pub below_id: u64,
    /// Why, in the operator's words (the case or ticket), at most `PURGE_NOTE_LEN_MAX`.
    pub note: String,
    /// When the admin signed it (UTC ns).
    pub signed_at_ns: i64,
    /// The admin key that signed it.
    pub admin: PublicKey,
    /// Ed25519 over `signed_message`.
    pub signature: Signature,
}

/// Why bytes with the purge prefix are not a purge.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PurgeError {
    /// The JSON after the prefix does not parse as a purge.
    #[error("quarantine purge JSON: {0}")]
    Json(String),
    /// The note is longer than `PURGE_NOTE_LEN_MAX` bytes.
    #[error("quarantine purge note of {len} bytes exceeds {PURGE_NOTE_LEN_MAX}")]
    NoteTooLong {
        /// The note's length in bytes.
        len: usize,
    },
}

impl QuarantinePurge {
    /// `admin` signs a purge of the entries below `below_id`, carried by `via`'s subject.
    pub fn sign(
        admin: &SigningKey,
        via: TableId,
        below_id: u64,
        note: String,
        signed_at_ns: i64,
    ) -> Result<QuarantinePurge, PurgeError> {
        let mut p = QuarantinePurge {
            via,
            below_id,
            note,
            signed_at_ns,
            admin: admin.public(),
            signature: Signature([0; 64]),
        };
        p.check_shape()?;
        p.signature = admin.sign(&p.signed_message());
        Ok(p)
    }

    /// The exact bytes the admin signs (module doc).
    pub fn signed_message(&self) -> Vec<u8> {
        let mut m = Vec::with_capacity(PURGE_DOMAIN.len() + 96 + self.note.len());
        m.extend_from_slice(PURGE_DOMAIN);
        push_id(&mut m, self.via.as_str());
        m.extend_from_slice(&self.below_id.to_be_bytes());
        m.extend_from_slice(&self.signed_at_ns.to_be_bytes());
        let note_len = u16::try_from(self.note.len()).unwrap_or(u16::MAX);
        m.extend_from_slice(&note_len.to_be_bytes());
        m.extend_from_slice(self.note.as_bytes());
        m
    }

    /// Whether `admin`'s signature verifies. Whether that admin is trusted is the caller's
    /// question.
    pub fn signature_verifies(&self) -> bool {
        self.check_shape().is_ok() && verify(&self.admin, &self.signed_message(), &self.signature)
    }

    /// The message as published: the prefix, then the JSON.
    pub fn to_wire(&self) -> Vec<u8> {
        let mut out = PURGE_PREFIX.to_vec();
        out.extend(serde_json::to_vec(self).unwrap_or_default());
        out
    }

    /// Its `Nats-Msg-Id`: `purge:` and the first 16 hex of BLAKE3 over the message.
    pub fn msg_id(&self) -> String {
        let hash = blake3::hash(&self.to_wire());
        format!("purge:{}", &hash.to_hex()[..16])
    }

    /// `None` when `bytes` lack the prefix (an event, or anything else); otherwise the
    /// record, or why it does not read.
    pub fn from_wire(bytes: &[u8]) -> Option<Result<QuarantinePurge, PurgeError>> {
        let json = bytes.strip_prefix(PURGE_PREFIX)?;
        Some(
            serde_json::from_slice::<QuarantinePurge>(json)
                .map_err(|e| PurgeError::Json(e.to_string()))
                .and_then(|p| p.check_shape().map(|()| p)),
        )
    }

    fn check_shape(&self) -> Result<(), PurgeError> {
        if self.note.len() > PURGE_NOTE_LEN_MAX {
            return Err(PurgeError::NoteTooLong {
                len: self.note.len(),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signed() -> QuarantinePurge {
        let admin = SigningKey::from_secret([9; 32]);
        let via = TableId::new("T-1").unwrap();
        QuarantinePurge::sign(&admin, via, 1_000, "case 7".into(), 1_700_000_000).unwrap()
    }

    #[test]
    fn a_purge_reads_back_and_a_changed_field_does_not_verify() {
        let p = signed();
        assert!(p.signature_verifies());
        let back = QuarantinePurge::from_wire(&p.to_wire()).unwrap().unwrap();
        assert_eq!(back, p);
        let wider = QuarantinePurge {
            below_id: 1_001,
            ..p.clone()
        };
        assert!(!wider.signature_verifies());
        let other_via = QuarantinePurge {
            via: TableId::new("T-2").unwrap(),
            ..p.clone()
        };
        assert!(!other_via.signature_verifies());
        assert!(QuarantinePurge::from_wire(b"{\"v\":1}").is_none());
        let mut junk = PURGE_PREFIX.to_vec();
        junk.extend_from_slice(b"{not json");
        assert!(matches!(
            QuarantinePurge::from_wire(&junk),
            Some(Err(PurgeError::Json(_)))
        ));
        let admin = SigningKey::from_secret([9; 32]);
        let long = "x".repeat(PURGE_NOTE_LEN_MAX + 1);
        assert!(QuarantinePurge::sign(&admin, p.via.clone(), 1, long, 0).is_err());
        assert_ne!(p.msg_id(), wider.msg_id());
    }
}
