//! Admin acts: what changes a ledger beyond device events, signed by an admin and sent on
//! the stream (`subjects::ADMIN_SUBJECT`), so every ledger node applies it at the same
//! point of the log and checks the signature itself (docs/DESIGN.md, every ledger node is
//! a replica of the stream). Re-syncs (`crate::resync`) and key enrollment and revocation
//! (`DeviceEnrolled`, `DeviceRevoked`) travel on a table's own subject and are not here.
//! Acts: unfence a table, set the clock skew limit or the quarantine's limits, purge old
//! quarantine, remove an archived day past its retention (`RemoveDay`). `archive remove`
//! does the same on one stopped ledger.
//!
//! Wire form, one message:
//!
//! ```text
//! "roundledger/admin/v1\n" || admin key (64 hex) || " " || signature (128 hex) || "\n"
//!   || body (JSON `AdminBody`)
//! ```
//!
//! The admin signs `ADMIN_DOMAIN || body`, the body's exact bytes as sent: nothing is
//! re-encoded to verify it.

use crate::attest::{verify, PublicKey, Signature, SigningKey};
use crate::ids::TableId;
use serde::{Deserialize, Serialize};

/// Domain tag of an admin act's signed bytes.
pub const ADMIN_DOMAIN: &[u8] = b"roundledger/admin-act/v1";
/// The first bytes of an admin act message. No event starts so.
pub const ADMIN_PREFIX: &[u8] = b"roundledger/admin/v1\n";
/// Longest note, in bytes.
pub const ADMIN_NOTE_LEN_MAX: usize = 1024;
/// Longest body, in bytes.
pub const ADMIN_BODY_LEN_MAX: usize = 4 * 1024;

/// What the admin decides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Act {
    /// Lift a repaired table's fence and append the messages kept while it was fenced.
    Unfence {
        /// The table.
        table: TableId,
    },
    /// Judge device clocks against arrival with this limit from here on (`clock_skew`).
    ClockSkew {
        /// The limit, ns; above 0.
        max_ns: i64,
    },
    /// Remove the quarantine's entries below this id, in steps; a fenced table's
    /// `table_fenced` entries are kept (`ledger::purge`).
    QuarantinePurge {
        /// Entries with a lower id go; no further than the entries stored when taken.
        below_id: u64,
    },
    /// Keep refusals within these limits from here on (`crate::limits`).
    QuarantineLimits {
        /// Every limit; `QuarantineLimits::check` must pass.
        limits: crate::limits::QuarantineLimits,
    },
    /// Remove a sealed, archived day's records past its legal retention. It names what
    /// the day's seal seals (`DaySeal::content_digest`), alike on every node; never a
    /// node's own seal digest or day file, which differ between nodes.
    RemoveDay {
        /// The gaming day, `YYYY-MM-DD`.
        day: String,
        /// `DaySeal::content_digest` of the day's seal, lowercase hex.
        seal_content: String,
        /// The retention applied, days after the day's end.
        retention_days: u32,
    },
}

impl Act {
    /// The act's stable name (logs, metrics, the admin log).
    pub fn kind(&self) -> &'static str {
        match self {
            Act::Unfence { .. } => "unfence",
            Act::ClockSkew { .. } => "clock_skew",
            Act::QuarantinePurge { .. } => "quarantine_purge",
            Act::QuarantineLimits { .. } => "quarantine_limits",
            Act::RemoveDay { .. } => "remove_day",
        }
    }
}

/// What is signed: the act, why, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdminBody {
    /// The act.
    pub act: Act,
    /// Why, in the operator's words (the case or ticket), at most `ADMIN_NOTE_LEN_MAX`.
    pub note: String,
    /// When the admin signed it, UTC ns.
    pub signed_at_ns: i64,
}

/// A signed admin act, as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminAct {
    /// The admin key that signed it.
    pub admin: PublicKey,
    /// Ed25519 over `ADMIN_DOMAIN || body_bytes`.
    pub signature: Signature,
    /// The body, read from `body_bytes`.
    pub body: AdminBody,
    /// The body's exact bytes.
    pub body_bytes: Vec<u8>,
}

/// Why bytes with the admin prefix are not an admin act.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdminError {
    /// The key and signature line does not read.
    #[error("admin act header: {0}")]
    Header(String),
    /// The body does not parse.
    #[error("admin act body: {0}")]
    Body(String),
    /// The note or the body is too long.
    #[error("admin act of {len} bytes exceeds {max}")]
    TooLong {
        /// Its length.
        len: usize,
        /// The bound.
        max: usize,
    },
}

impl AdminAct {
    /// `admin` signs `body`.
    pub fn sign(admin: &SigningKey, body: AdminBody) -> Result<AdminAct, AdminError> {
        let body_bytes = serde_json::to_vec(&body).map_err(|e| AdminError::Body(e.to_string()))?;
        check_len(&body, &body_bytes)?;
        let signature = admin.sign(&signed_message(&body_bytes));
        Ok(AdminAct {
            admin: admin.public(),
            signature,
            body,
            body_bytes,
        })
    }

    /// Whether the signature verifies over the body's bytes. Whether that admin is
    /// trusted is the caller's question.
    pub fn signature_verifies(&self) -> bool {
        verify(
            &self.admin,
            &signed_message(&self.body_bytes),
            &self.signature,
        )
    }

    /// The message as published.
    pub fn to_wire(&self) -> Vec<u8> {
        let mut out = ADMIN_PREFIX.to_vec();
        out.extend_from_slice(self.admin.to_hex().as_bytes());
        out.push(b' ');
        out.extend_from_slice(self.signature.to_hex().as_bytes());
        out.push(b'\n');
        out.extend_from_slice(&self.body_bytes);
        out
    }

    /// Its `Nats-Msg-Id`: `admin:<kind>:<hash>`, the hash over the whole message.
    pub fn msg_id(&self) -> String {
        let hash = blake3::hash(&self.to_wire());
        format!("admin:{}:{}", self.body.act.kind(), &hash.to_hex()[..16])
    }

    /// `None` when `bytes` lack the prefix; otherwise the act, or why it does not read.
    pub fn from_wire(bytes: &[u8]) -> Option<Result<AdminAct, AdminError>> {
        let rest = bytes.strip_prefix(ADMIN_PREFIX)?;
        Some(parse(rest))
    }
}

/// Whether `bytes` claim to be an admin act (its prefix).
pub fn is_admin_act(bytes: &[u8]) -> bool {
    bytes.starts_with(ADMIN_PREFIX)
}

fn signed_message(body: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(ADMIN_DOMAIN.len() + body.len());
    m.extend_from_slice(ADMIN_DOMAIN);
    m.extend_from_slice(body);
    m
}

fn check_len(body: &AdminBody, bytes: &[u8]) -> Result<(), AdminError> {
    if body.note.len() > ADMIN_NOTE_LEN_MAX {
        return Err(AdminError::TooLong {
            len: body.note.len(),
            max: ADMIN_NOTE_LEN_MAX,
        });
    }
    if bytes.len() > ADMIN_BODY_LEN_MAX {
        return Err(AdminError::TooLong {
            len: bytes.len(),
            max: ADMIN_BODY_LEN_MAX,
        });
    }
    Ok(())
}

fn parse(rest: &[u8]) -> Result<AdminAct, AdminError> {
    let header = |why: &str| AdminError::Header(why.to_string());
    let nl = rest
        .iter()
        .position(|b| *b == b'\n')
        .ok_or_else(|| header("no line end"))?;
    let line = std::str::from_utf8(&rest[..nl]).map_err(|_| header("not UTF-8"))?;
    let (key, sig) = line
        .split_once(' ')
        .ok_or_else(|| header("no key and signature"))?;
    let admin = PublicKey::from_hex(key).map_err(|_| header("the key is not 64 hex"))?;
    let signature = Signature::from_hex(sig).map_err(|_| header("the signature is not 128 hex"))?;
    let body_bytes = rest[nl + 1..].to_vec();
    let body: AdminBody =
        serde_json::from_slice(&body_bytes).map_err(|e| AdminError::Body(e.to_string()))?;
    check_len(&body, &body_bytes)?;
    Ok(AdminAct {
        admin,
        signature,
        body,
        body_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body() -> AdminBody {
        AdminBody {
            act: Act::Unfence {
                table: TableId::new("T-1").unwrap(),
            },
            note: "case 7".into(),
            signed_at_ns: 1_700_000_000_000_000_000,
        }
    }

    #[test]
    fn an_act_reads_back_and_verifies_over_its_exact_bytes() {
        let admin = SigningKey::from_secret([9; 32]);
        let act = AdminAct::sign(&admin, body()).unwrap();
        let wire = act.to_wire();
        assert!(is_admin_act(&wire));
        let back = AdminAct::from_wire(&wire).unwrap().unwrap();
        assert_eq!(back, act);
        assert!(back.signature_verifies());
        // One byte of the body changed: the signature no longer holds.
        let mut bent = wire.clone();
        let at = bent.len() - 3;
        bent[at] = b'9';
        let bent = AdminAct::from_wire(&bent).unwrap().unwrap();
        assert!(!bent.signature_verifies());
        assert!(AdminAct::from_wire(b"{\"v\":1}").is_none());
    }

    #[test]
    fn bad_shapes_are_named() {
        let mut junk = ADMIN_PREFIX.to_vec();
        junk.extend_from_slice(b"zz yy\n{}");
        assert!(matches!(
            AdminAct::from_wire(&junk),
            Some(Err(AdminError::Header(_)))
        ));
        let admin = SigningKey::from_secret([9; 32]);
        let mut wire = AdminAct::sign(&admin, body()).unwrap().to_wire();
        wire.truncate(wire.len() - 1);
        assert!(matches!(
            AdminAct::from_wire(&wire),
            Some(Err(AdminError::Body(_)))
        ));
        let long = AdminBody {
            note: "x".repeat(ADMIN_NOTE_LEN_MAX + 1),
            ..body()
        };
        assert!(AdminAct::sign(&admin, long).is_err());
        let skew = AdminBody {
            act: Act::ClockSkew { max_ns: 5 },
            ..body()
        };
        let json = serde_json::to_string(&skew).unwrap();
        assert!(json.contains("\"kind\":\"clock_skew\""), "{json}");
    }
}
