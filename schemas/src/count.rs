//! The count room's result for one drop box: what finance counted, not what a table device
//! said. A counter signs it with their own key (`roundledger keygen`); the server takes it
//! only from a trusted count key, journals it (`counts.jsonl`) and audits the request.
//! Finance reports take it as the drop of the shift whose box it was.
//!
//! Signed bytes (`SignedCount::signed_message`):
//!
//! ```text
//! "roundledger/count/v1" || len(table) u8 || table || len(drop_box_id) u8 || drop_box_id
//!   || cash i64 BE || markers i64 BE || counted_at_ns i64 BE
//!   || len(counted_by) u8 || counted_by (UTF-8) || signed_at_ns i64 BE
//! ```

use crate::attest::{push_id, verify, PublicKey, Signature, SigningKey};
use crate::ids::{Money, TableId};
use crate::settle::MONEY_INPUT_MAX;
use serde::{Deserialize, Serialize};

/// Domain tag of a count's signed bytes.
pub const COUNT_DOMAIN: &[u8] = b"roundledger/count/v1";
/// Longest drop box id or counter name, in bytes.
pub const COUNT_TEXT_LEN_MAX: usize = 64;

/// One drop box counted: its table, the box removed (`Finance::DropBoxRemoved`), and
/// the cash and marker copies found in it, in minor units.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CountResult {
    /// The table the drop box served.
    pub table: TableId,
    /// The drop box's id, as its `Finance::DropBoxRemoved` names it.
    pub drop_box_id: String,
    /// Cash found in the box.
    #[cfg_attr(feature = "openapi", schema(value_type = i64, minimum = -9223372036854775808_i64, maximum = 9223372036854775807_i64))]
    pub cash: Money,
    /// Marker copies found in the box, at face value.
    #[cfg_attr(feature = "openapi", schema(value_type = i64, minimum = -9223372036854775808_i64, maximum = 9223372036854775807_i64))]
    pub markers: Money,
    /// When the count was made (UTC ns).
    #[cfg_attr(feature = "openapi", schema(minimum = -9223372036854775808_i64, maximum = 9223372036854775807_i64))]
    pub counted_at_ns: i64,
    /// Who counted, as the count sheet names them.
    pub counted_by: String,
}

/// A count as its counter signed it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignedCount {
    /// What the counter counted.
    pub count: CountResult,
    /// When the counter signed it (UTC ns).
    #[cfg_attr(feature = "openapi", schema(minimum = -9223372036854775808_i64, maximum = 9223372036854775807_i64))]
    pub signed_at_ns: i64,
    /// The counter's ed25519 public key, 64 hex digits.
    #[cfg_attr(feature = "openapi", schema(value_type = String, pattern = "^[0-9a-fA-F]{64}$"))]
    pub signer: PublicKey,
    /// The ed25519 signature, 128 hex digits.
    #[cfg_attr(feature = "openapi", schema(value_type = String, pattern = "^[0-9a-fA-F]{128}$"))]
    pub signature: Signature,
}

/// One journal entry: a signed count and who entered it.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CountEntry {
    /// Its line in the journal, from 1.
    pub n: u64,
    /// The count as signed.
    pub signed: SignedCount,
    /// The API caller who entered it (token name).
    pub entered_by: String,
    /// When the server took it (UTC ns).
    pub entered_at_ns: i64,
    /// The records stream's sequence of the record this entry applies (`records`);
    /// absent on a server without the stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_seq: Option<u64>,
}

/// Why a count is not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CountError {
    /// A field is out of its bounds.
    #[error("count {field}: {why}")]
    Field {
        /// The field's name.
        field: &'static str,
        /// Why it is refused.
        why: String,
    },
    /// The signature does not verify under the named key (hex).
    #[error("count signature does not verify under key {0}")]
    Signature(String),
}

impl CountResult {
    /// The box's drop: cash and markers.
    pub fn drop(&self) -> Money {
        self.cash + self.markers
    }

    /// Refuses empty or long text and amounts outside `0..=MONEY_INPUT_MAX`.
    pub fn check(&self) -> Result<(), CountError> {
        text("drop_box_id", &self.drop_box_id)?;
        text("counted_by", &self.counted_by)?;
        amount("cash", self.cash)?;
        amount("markers", self.markers)
    }
}

fn text(field: &'static str, s: &str) -> Result<(), CountError> {
    if s.trim().is_empty() || s.len() > COUNT_TEXT_LEN_MAX || s.chars().any(char::is_control) {
        return Err(CountError::Field {
            field,
            why: format!("1 to {COUNT_TEXT_LEN_MAX} bytes of printable text, got {s:?}"),
        });
    }
    Ok(())
}

fn amount(field: &'static str, m: Money) -> Result<(), CountError> {
    if !(0..=MONEY_INPUT_MAX).contains(&m.0) {
        return Err(CountError::Field {
            field,
            why: format!("{} minor units is outside 0..={MONEY_INPUT_MAX}", m.0),
        });
    }
    Ok(())
}

impl SignedCount {
    /// `counter` signs `count`, checked first.
    pub fn sign(
        counter: &SigningKey,
        count: CountResult,
        signed_at_ns: i64,
    ) -> Result<SignedCount, CountError> {
        count.check()?;
        let mut s = SignedCount {
            count,
            signed_at_ns,
            signer: counter.public(),
            signature: Signature([0; 64]),
        };
        s.signature = counter.sign(&s.signed_message());
        Ok(s)
    }

    /// The exact bytes the counter signs (module doc).
    pub fn signed_message(&self) -> Vec<u8> {
        let c = &self.count;
        let mut m = Vec::with_capacity(COUNT_DOMAIN.len() + 200);
        m.extend_from_slice(COUNT_DOMAIN);
        push_id(&mut m, c.table.as_str());
        push_text(&mut m, &c.drop_box_id);
        m.extend_from_slice(&c.cash.0.to_be_bytes());
        m.extend_from_slice(&c.markers.0.to_be_bytes());
        m.extend_from_slice(&c.counted_at_ns.to_be_bytes());
        push_text(&mut m, &c.counted_by);
        m.extend_from_slice(&self.signed_at_ns.to_be_bytes());
        m
    }

    /// The count's shape and signature. Whether the signer is trusted is the caller's
    /// question.
    pub fn check(&self) -> Result<(), CountError> {
        self.count.check()?;
        if !verify(&self.signer, &self.signed_message(), &self.signature) {
            return Err(CountError::Signature(self.signer.to_hex()));
        }
        Ok(())
    }
}

/// Text of at most `COUNT_TEXT_LEN_MAX` bytes, after its length byte.
fn push_text(out: &mut Vec<u8>, s: &str) {
    debug_assert!(s.len() <= COUNT_TEXT_LEN_MAX);
    out.push(u8::try_from(s.len()).unwrap_or(u8::MAX));
    out.extend_from_slice(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count() -> CountResult {
        CountResult {
            table: TableId::new("TCP3-05").unwrap(),
            drop_box_id: "TCP3-05/2026-11-25/2".into(),
            cash: Money(1_250_000),
            markers: Money(500_000),
            counted_at_ns: 1_764_100_000_000_000_000,
            counted_by: "count team B".into(),
        }
    }

    #[test]
    fn a_signed_count_verifies_and_a_changed_one_does_not() {
        let key = SigningKey::from_secret([7; 32]);
        let s = SignedCount::sign(&key, count(), 1_764_100_001_000_000_000).unwrap();
        s.check().unwrap();
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<SignedCount>(&json).unwrap(), s);
        let mut moved = s.clone();
        moved.count.cash = Money(1_250_001);
        assert!(matches!(moved.check(), Err(CountError::Signature(_))));
    }

    #[test]
    fn bad_fields_are_refused_by_name() {
        let key = SigningKey::from_secret([7; 32]);
        let mut c = count();
        c.cash = Money(-1);
        let e = SignedCount::sign(&key, c, 0).unwrap_err();
        assert!(e.to_string().contains("cash"), "{e}");
        let mut c = count();
        c.drop_box_id = "x".repeat(COUNT_TEXT_LEN_MAX + 1);
        assert!(SignedCount::sign(&key, c, 0).is_err());
        let mut c = count();
        c.counted_by = "  ".into();
        assert!(SignedCount::sign(&key, c, 0).is_err());
    }
}
