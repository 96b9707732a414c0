//! Re-sync: an admin-signed way out for a table held behind a refused event
//! (schemas/README.md §5.7, RUNBOOK.md). It names a quarantined event by its entry and
//! hash, and the chain head it continues: "table T continues from seq n with this event,
//! whose prev is the head's hash". The ledger then appends that event's exact bytes at
//! seq n, whatever it was refused for, and the held events behind it follow. The chain
//! stays whole, so every verifier of chains, exports and bundles checks it unchanged; the
//! quarantine entry stays, and the re-sync itself is kept and checked by `verify`.
//!
//! Wire form: `RESYNC_PREFIX` then the record's JSON, published on the table's events
//! subject. Signed bytes (`Resync::signed_message`):
//!
//! ```text
//! "roundledger/resync/v1" || len(table) u8 || table || head_seq u64 BE || head_hash (32)
//!   || seq u64 BE || event_hash (32) || quarantine_id u64 BE || signed_at_ns i64 BE
//!   || len(note) u16 BE || note (UTF-8)
//! ```

use crate::attest::{push_id, verify, PublicKey, Signature, SigningKey};
use crate::ids::{Hash32, Seq, TableId};
use serde::{Deserialize, Serialize};

/// Domain tag of a re-sync's signed bytes.
pub const RESYNC_DOMAIN: &[u8] = b"roundledger/resync/v1";
/// The first bytes of a re-sync message. No event starts so: bincode starts with its
/// version byte (1), JSON with `{` or white space.
pub const RESYNC_PREFIX: &[u8] = b"roundledger/resync/v1\n";
/// Longest note, in bytes.
pub const RESYNC_NOTE_LEN_MAX: usize = 1024;

/// An admin's signed decision that a table continues with a quarantined event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resync {
    /// The table that continues.
    pub table: TableId,
    /// The chain head it continues; it applies only there (a replay later is stale).
    pub head_seq: Seq,
    /// The chain hash at `head_seq`.
    pub head_hash: Hash32,
    /// `head_seq` + 1: the seq the admitted event takes.
    pub seq: Seq,
    /// The admitted event's chain hash (`event_hash(head_hash, bytes)`).
    pub event_hash: Hash32,
    /// The quarantine entry holding its bytes (it stays there).
    pub quarantine_id: u64,
    /// Why, in the operator's words (the case or ticket), at most `RESYNC_NOTE_LEN_MAX`.
    pub note: String,
    /// When the admin signed it (UTC ns).
    pub signed_at_ns: i64,
    /// The admin key that signed it.
    pub admin: PublicKey,
    /// Ed25519 over `signed_message`.
    pub signature: Signature,
}

/// What a re-sync says, before it is signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResyncTerms {
    /// The table that continues.
    pub table: TableId,
    /// The chain head it continues.
    pub head_seq: Seq,
    /// The chain hash at `head_seq`.
    pub head_hash: Hash32,
    /// The admitted event's chain hash.
    pub event_hash: Hash32,
    /// The quarantine entry holding its bytes.
    pub quarantine_id: u64,
    /// Why, in the operator's words, at most `RESYNC_NOTE_LEN_MAX` bytes.
    pub note: String,
    /// When the admin signs it, UTC ns.
    pub signed_at_ns: i64,
}

/// Why bytes with the re-sync prefix are not a re-sync.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResyncError {
    /// The JSON after the prefix does not parse as a re-sync.
    #[error("re-sync JSON: {0}")]
    Json(String),
    /// The note is longer than `RESYNC_NOTE_LEN_MAX` bytes.
    #[error("re-sync note of {len} bytes exceeds {RESYNC_NOTE_LEN_MAX}")]
    NoteTooLong {
        /// The note's length in bytes.
        len: usize,
    },
    /// `seq` is not `head_seq` + 1.
    #[error("re-sync seq {seq} does not follow its head {head_seq}")]
    SeqNotNext {
        /// The seq the re-sync names.
        seq: u64,
        /// The head it continues.
        head_seq: u64,
    },
}

impl Resync {
    /// `admin` signs `terms`.
    pub fn sign(admin: &SigningKey, terms: ResyncTerms) -> Result<Resync, ResyncError> {
        let mut r = Resync {
            seq: Seq(terms.head_seq.0.saturating_add(1)),
            table: terms.table,
            head_seq: terms.head_seq,
            head_hash: terms.head_hash,
            event_hash: terms.event_hash,
            quarantine_id: terms.quarantine_id,
            note: terms.note,
            signed_at_ns: terms.signed_at_ns,
            admin: admin.public(),
            signature: Signature([0; 64]),
        };
        r.check_shape()?;
        r.signature = admin.sign(&r.signed_message());
        Ok(r)
    }

    /// The exact bytes the admin signs (module doc).
    pub fn signed_message(&self) -> Vec<u8> {
        let mut m = Vec::with_capacity(RESYNC_DOMAIN.len() + 160 + self.note.len());
        m.extend_from_slice(RESYNC_DOMAIN);
        push_id(&mut m, self.table.as_str());
        m.extend_from_slice(&self.head_seq.0.to_be_bytes());
        m.extend_from_slice(&self.head_hash.0);
        m.extend_from_slice(&self.seq.0.to_be_bytes());
        m.extend_from_slice(&self.event_hash.0);
        m.extend_from_slice(&self.quarantine_id.to_be_bytes());
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
        let mut out = RESYNC_PREFIX.to_vec();
        out.extend(serde_json::to_vec(self).unwrap_or_default());
        out
    }

    /// Its `Nats-Msg-Id`: unique per content, as an event's (`subjects::msg_id`).
    pub fn msg_id(&self) -> String {
        crate::subjects::msg_id(&self.table, self.seq, &self.to_wire())
    }

    /// `None` when `bytes` lack the prefix (an event, or anything else); otherwise the
    /// record, or why it does not read.
    pub fn from_wire(bytes: &[u8]) -> Option<Result<Resync, ResyncError>> {
        let json = bytes.strip_prefix(RESYNC_PREFIX)?;
        Some(
            serde_json::from_slice::<Resync>(json)
                .map_err(|e| ResyncError::Json(e.to_string()))
                .and_then(|r| r.check_shape().map(|()| r)),
        )
    }

    fn check_shape(&self) -> Result<(), ResyncError> {
        if self.note.len() > RESYNC_NOTE_LEN_MAX {
            return Err(ResyncError::NoteTooLong {
                len: self.note.len(),
            });
        }
        if Some(self.seq.0) != self.head_seq.0.checked_add(1) {
            return Err(ResyncError::SeqNotNext {
                seq: self.seq.0,
                head_seq: self.head_seq.0,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The terms of the test vector in `vectors/resync-v1.json`.
    pub(crate) fn vector_terms() -> ResyncTerms {
        ResyncTerms {
            table: TableId::new("T-1").unwrap(),
            head_seq: Seq(20),
            head_hash: Hash32([0x11; 32]),
            event_hash: Hash32([0x22; 32]),
            quarantine_id: 7,
            note: "case 42".into(),
            signed_at_ns: 1_700_000_000_000_000_000,
        }
    }

    #[test]
    fn the_vector_holds() {
        let admin = SigningKey::from_secret([9; 32]);
        let r = Resync::sign(&admin, vector_terms()).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(include_str!("../vectors/resync-v1.json")).unwrap();
        assert_eq!(hex::encode(r.signed_message()), v["signed_message_hex"]);
        assert_eq!(r.admin.to_hex(), v["admin"]);
        assert_eq!(r.signature.to_hex(), v["signature"]);
        assert_eq!(hex::encode(r.to_wire()), v["wire_hex"]);
        assert!(r.signature_verifies());
    }

    #[test]
    fn a_changed_field_or_a_bad_shape_does_not_verify() {
        let admin = SigningKey::from_secret([9; 32]);
        let r = Resync::sign(&admin, vector_terms()).unwrap();
        let back = Resync::from_wire(&r.to_wire()).unwrap().unwrap();
        assert_eq!(back, r);
        let moved = Resync {
            quarantine_id: 8,
            ..r.clone()
        };
        assert!(!moved.signature_verifies());
        let skipped = Resync {
            seq: Seq(22),
            ..r.clone()
        };
        assert!(!skipped.signature_verifies());
        assert!(Resync::from_wire(b"{\"v\":1}").is_none());
        let mut junk = RESYNC_PREFIX.to_vec();
        junk.extend_from_slice(b"{not json");
        assert!(matches!(
            Resync::from_wire(&junk),
            Some(Err(ResyncError::Json(_)))
        ));
        let long = ResyncTerms {
            note: "x".repeat(RESYNC_NOTE_LEN_MAX + 1),
            ..vector_terms()
        };
        assert!(Resync::sign(&admin, long).is_err());
    }
}
