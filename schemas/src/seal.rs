//! Day seals: the House's signed statement of what each table's chain held for one gaming
//! day (schemas/README.md §5.4, schemas/SEALS.md).
//!
//! A seal names, per table, the contiguous seq range the day holds, the chain hash just
//! before it (the anchor) and at its end (the head), and the digest of the previous day's
//! seal, so seals form a chain. The signed message is a fixed byte layout
//! (`DaySeal::signed_message`), never a serialisation of a Rust type; a seal is named by
//! its digest (`DaySeal::digest`). Pure: no I/O, no clock.

use crate::attest::{push_id, verify, PublicKey, Signature, SigningKey};
use crate::ids::{Hash32, Seq, TableId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Domain tag of a day seal's signature.
pub const SEAL_DOMAIN: &[u8] = b"roundledger/day-seal/v1";
/// Domain (BLAKE3 derive-key context) of a seal's digest.
pub const SEAL_DIGEST_DOMAIN: &str = "roundledger/day-seal-digest/v1";
/// The seal layout version.
pub const SEAL_VERSION: u8 = 1;
/// Most tables one seal lists: a floor has hundreds.
pub const SEAL_TABLES_MAX: usize = 4096;
/// Most bytes of a seal in its JSON form (a seal file, a stored seal, a NATS message).
pub const SEAL_LEN_MAX: usize = 2 * 1024 * 1024;
/// Longest IANA time zone name a seal carries.
pub const TIME_ZONE_LEN_MAX: usize = 64;

/// One table's part of a gaming day. An empty range has `first_seq == last_seq + 1`,
/// `events == 0` and `anchor_hash == head_hash`.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SealedTable {
    /// The table.
    pub table: TableId,
    /// The first seq of the table's range in the day.
    pub first_seq: Seq,
    /// The last seq of the range.
    pub last_seq: Seq,
    /// The chain hash at `first_seq - 1` (`GENESIS` when the range starts at seq 1).
    pub anchor_hash: Hash32,
    /// The chain hash at `last_seq`.
    pub head_hash: Hash32,
    /// Events in the range: `last_seq + 1 - first_seq`.
    pub events: u64,
}

/// A gaming day's seal, signed by the House's seal key.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DaySeal {
    /// `SEAL_VERSION`.
    pub v: u8,
    /// The gaming day's local date in the property's time zone, `YYYY-MM-DD`.
    pub day: String,
    /// The property's IANA time zone, e.g. `Asia/Singapore`.
    pub time_zone: String,
    /// The day's start, UTC ns (inclusive).
    pub starts_at_ns: i64,
    /// The day's end, UTC ns (exclusive): the next day's start.
    pub ends_at_ns: i64,
    /// Tables in table order.
    pub tables: Vec<SealedTable>,
    /// The digest of the previous day's seal; `None` for the first seal of a ledger.
    pub previous: Option<Hash32>,
    /// The House's clock when signed, UTC ns.
    pub signed_at_ns: i64,
    /// The House's seal key.
    pub signer: PublicKey,
    /// Ed25519 over `signed_message`.
    pub signature: Signature,
}

/// Why a seal is not well formed or does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// Longer than `SEAL_LEN_MAX`.
    #[error("seal of {len} bytes exceeds the limit of {max}")]
    TooLong {
        /// The seal's length in bytes.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// The bytes do not parse as a seal.
    #[error("seal JSON: {0}")]
    Json(String),
    /// A field is out of its bounds or inconsistent.
    #[error("seal field {field}: {why}")]
    Field {
        /// The field's name.
        field: &'static str,
        /// Why it is refused.
        why: String,
    },
    /// The signature does not verify under the signer named.
    #[error("seal signature does not verify under its signer {0}")]
    Signature(PublicKey),
    /// Signed by another key than the one expected.
    #[error("seal is signed by {found}, not the expected key {expected}")]
    Signer {
        /// The key the caller expects.
        expected: PublicKey,
        /// The key that signed.
        found: PublicKey,
    },
}

/// A seal's content before it is signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealContent {
    /// The gaming day, `YYYY-MM-DD`.
    pub day: String,
    /// The property's IANA time zone.
    pub time_zone: String,
    /// The day's start, UTC ns (inclusive).
    pub starts_at_ns: i64,
    /// The day's end, UTC ns (exclusive).
    pub ends_at_ns: i64,
    /// Tables in table order.
    pub tables: Vec<SealedTable>,
    /// The previous day's seal digest; `None` for the first seal.
    pub previous: Option<Hash32>,
}

impl SealContent {
    /// Signs the content with the House's seal key at `signed_at_ns`.
    pub fn sign(self, key: &SigningKey, signed_at_ns: i64) -> DaySeal {
        let mut seal = DaySeal {
            v: SEAL_VERSION,
            day: self.day,
            time_zone: self.time_zone,
            starts_at_ns: self.starts_at_ns,
            ends_at_ns: self.ends_at_ns,
            tables: self.tables,
            previous: self.previous,
            signed_at_ns,
            signer: key.public(),
            signature: Signature([0; 64]),
        };
        seal.signature = key.sign(&seal.signed_message());
        seal
    }
}

impl DaySeal {
    /// The content this seal signs.
    pub fn content(&self) -> SealContent {
        SealContent {
            day: self.day.clone(),
            time_zone: self.time_zone.clone(),
            starts_at_ns: self.starts_at_ns,
            ends_at_ns: self.ends_at_ns,
            tables: self.tables.clone(),
            previous: self.previous,
        }
    }

    /// The bytes the House signs: `SEAL_DOMAIN || v u8 || len(day) u8 || day ||
    /// len(time_zone) u8 || time_zone || starts_at_ns i64 || ends_at_ns i64 || tables u32 ||
    /// per table (len(table) u8 || table || first_seq u64 || last_seq u64 || anchor_hash 32
    /// || head_hash 32 || events u64) || previous 32 (zeros for none) || signed_at_ns i64 ||
    /// signer 32`, integers big-endian.
    pub fn signed_message(&self) -> Vec<u8> {
        let mut m = Vec::with_capacity(SEAL_DOMAIN.len() + 128 + self.tables.len() * 120);
        m.extend_from_slice(SEAL_DOMAIN);
        m.push(self.v);
        push_short(&mut m, &self.day);
        push_short(&mut m, &self.time_zone);
        m.extend_from_slice(&self.starts_at_ns.to_be_bytes());
        m.extend_from_slice(&self.ends_at_ns.to_be_bytes());
        let n = u32::try_from(self.tables.len()).unwrap_or(u32::MAX);
        m.extend_from_slice(&n.to_be_bytes());
        for t in &self.tables {
            push_id(&mut m, t.table.as_str());
            m.extend_from_slice(&t.first_seq.0.to_be_bytes());
            m.extend_from_slice(&t.last_seq.0.to_be_bytes());
            m.extend_from_slice(&t.anchor_hash.0);
            m.extend_from_slice(&t.head_hash.0);
            m.extend_from_slice(&t.events.to_be_bytes());
        }
        m.extend_from_slice(&self.previous.unwrap_or(Hash32::ZERO).0);
        m.extend_from_slice(&self.signed_at_ns.to_be_bytes());
        m.extend_from_slice(&self.signer.0);
        m
    }

    /// What any ledger sealing the same day of the same chains seals alike: BLAKE3 over the
    /// signed message with the previous seal's digest, the signing time and the signer
    /// zeroed (each node's differ). Ledger nodes compare it (`ingest::replica_seals`).
    pub fn content_digest(&self) -> Hash32 {
        let canonical = DaySeal {
            previous: None,
            signed_at_ns: 0,
            signer: PublicKey([0; 32]),
            ..self.clone()
        };
        Hash32(*blake3::hash(&canonical.signed_message()).as_bytes())
    }

    /// The seal's name: BLAKE3 (derive-key `SEAL_DIGEST_DOMAIN`) over the signed message
    /// and the signature.
    pub fn digest(&self) -> Hash32 {
        let mut h = blake3::Hasher::new_derive_key(SEAL_DIGEST_DOMAIN);
        h.update(&self.signed_message());
        h.update(&self.signature.0);
        Hash32(*h.finalize().as_bytes())
    }

    /// Checks the shape (`check_shape`) and the signature; with `expected`, also the signer.
    pub fn verify(&self, expected: Option<&PublicKey>) -> Result<(), SealError> {
        self.check_shape()?;
        if let Some(k) = expected {
            if *k != self.signer {
                return Err(SealError::Signer {
                    expected: *k,
                    found: self.signer,
                });
            }
        }
        if !verify(&self.signer, &self.signed_message(), &self.signature) {
            return Err(SealError::Signature(self.signer));
        }
        Ok(())
    }

    /// What every seal must hold whatever its signature: the version, a `YYYY-MM-DD` day,
    /// a short zone, a day that ends after it starts, tables in order with whole ranges.
    pub fn check_shape(&self) -> Result<(), SealError> {
        let bad = |field, why: String| Err(SealError::Field { field, why });
        if self.v != SEAL_VERSION {
            return bad("v", format!("{} is not {SEAL_VERSION}", self.v));
        }
        check_day_name(&self.day).map_err(|why| SealError::Field { field: "day", why })?;
        if self.time_zone.is_empty() || self.time_zone.len() > TIME_ZONE_LEN_MAX {
            return bad("time_zone", format!("1 to {TIME_ZONE_LEN_MAX} bytes"));
        }
        if self.ends_at_ns <= self.starts_at_ns {
            return bad("ends_at_ns", "not after starts_at_ns".into());
        }
        if self.tables.len() > SEAL_TABLES_MAX {
            return bad("tables", format!("more than {SEAL_TABLES_MAX}"));
        }
        for pair in self.tables.windows(2) {
            if pair[0].table >= pair[1].table {
                return bad("tables", format!("{} is out of order", pair[1].table));
            }
        }
        for t in &self.tables {
            let whole = t.first_seq.0 >= 1
                && t.last_seq.0.checked_add(1) >= Some(t.first_seq.0)
                && t.last_seq.0 + 1 - t.first_seq.0 == t.events;
            if !whole {
                return bad(
                    "tables",
                    format!("{}: range and event count disagree", t.table),
                );
            }
            if t.events == 0 && t.anchor_hash != t.head_hash {
                return bad(
                    "tables",
                    format!("{}: empty range with two hashes", t.table),
                );
            }
        }
        Ok(())
    }

    /// The seal's JSON form (a file, a stored seal, a NATS message).
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).expect("a seal always serialises")
    }

    /// Reads a seal's JSON form, bounded by `SEAL_LEN_MAX`; checks its shape.
    pub fn from_json(bytes: &[u8]) -> Result<DaySeal, SealError> {
        if bytes.len() > SEAL_LEN_MAX {
            return Err(SealError::TooLong {
                len: bytes.len(),
                max: SEAL_LEN_MAX,
            });
        }
        let seal: DaySeal =
            serde_json::from_slice(bytes).map_err(|e| SealError::Json(e.to_string()))?;
        seal.check_shape()?;
        Ok(seal)
    }

    /// This table's range, if the seal lists it.
    pub fn table(&self, table: &TableId) -> Option<&SealedTable> {
        self.tables
            .binary_search_by(|t| t.table.cmp(table))
            .ok()
            .map(|i| &self.tables[i])
    }
}

/// `len u8 || bytes` for the day and the zone, both checked short by `check_shape`.
fn push_short(out: &mut Vec<u8>, s: &str) {
    let len = u8::try_from(s.len()).unwrap_or(u8::MAX);
    out.push(len);
    out.extend_from_slice(&s.as_bytes()[..usize::from(len)]);
}

/// Whether `day` has the form `YYYY-MM-DD` with a month 01-12 and a day 01-31 (the
/// calendar check is the caller's, with its time zone library).
pub fn check_day_name(day: &str) -> Result<(), String> {
    let b = day.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let shaped = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && digits(0..4)
        && digits(5..7)
        && digits(8..10);
    if !shaped {
        return Err(format!("{day:?} is not YYYY-MM-DD"));
    }
    let month = (b[5] - b'0') * 10 + (b[6] - b'0');
    let dom = (b[8] - b'0') * 10 + (b[9] - b'0');
    if !(1..=12).contains(&month) || !(1..=31).contains(&dom) {
        return Err(format!("{day:?} is not a date"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GENESIS;

    fn content() -> SealContent {
        SealContent {
            day: "2026-11-25".into(),
            time_zone: "Asia/Singapore".into(),
            starts_at_ns: 1_000,
            ends_at_ns: 2_000,
            tables: vec![
                SealedTable {
                    table: TableId::new("A").unwrap(),
                    first_seq: Seq(1),
                    last_seq: Seq(3),
                    anchor_hash: GENESIS,
                    head_hash: Hash32([7; 32]),
                    events: 3,
                },
                SealedTable {
                    table: TableId::new("B").unwrap(),
                    first_seq: Seq(5),
                    last_seq: Seq(4),
                    anchor_hash: Hash32([9; 32]),
                    head_hash: Hash32([9; 32]),
                    events: 0,
                },
            ],
            previous: None,
        }
    }

    #[test]
    fn a_signed_seal_verifies_and_survives_json() {
        let key = SigningKey::derive_for_simulation("house");
        let seal = content().sign(&key, 3_000);
        seal.verify(Some(&key.public())).unwrap();
        let back = DaySeal::from_json(&seal.to_json()).unwrap();
        assert_eq!(back, seal);
        assert_eq!(back.digest(), seal.digest());
        let other = SigningKey::derive_for_simulation("other");
        assert!(matches!(
            seal.verify(Some(&other.public())),
            Err(SealError::Signer { .. })
        ));
    }

    #[test]
    fn every_signed_field_is_covered() {
        let key = SigningKey::derive_for_simulation("house");
        let seal = content().sign(&key, 3_000);
        let mut changed = Vec::new();
        let mut s = seal.clone();
        s.tables[0].head_hash = Hash32([8; 32]);
        changed.push(s);
        let mut s = seal.clone();
        s.previous = Some(Hash32([1; 32]));
        changed.push(s);
        let mut s = seal.clone();
        s.ends_at_ns += 1;
        changed.push(s);
        let mut s = seal.clone();
        s.time_zone = "UTC".into();
        changed.push(s);
        for s in changed {
            assert!(matches!(s.verify(None), Err(SealError::Signature(_))));
            assert_ne!(s.digest(), seal.digest());
        }
    }

    #[test]
    fn malformed_seals_are_refused_with_the_field() {
        let key = SigningKey::derive_for_simulation("house");
        for (field, change) in [
            (
                "day",
                (|s: &mut DaySeal| s.day = "2026-13-01".into()) as fn(&mut DaySeal),
            ),
            ("day", |s| s.day = "25/11/2026".into()),
            ("ends_at_ns", |s| s.ends_at_ns = s.starts_at_ns),
            ("tables", |s| s.tables[0].events = 2),
            ("tables", |s| s.tables.swap(0, 1)),
            ("tables", |s| s.tables[1].head_hash = GENESIS),
        ] {
            let mut seal = content().sign(&key, 3_000);
            change(&mut seal);
            match seal.check_shape() {
                Err(SealError::Field { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: {other:?}"),
            }
        }
        let long = vec![b' '; SEAL_LEN_MAX + 1];
        assert!(matches!(
            DaySeal::from_json(&long),
            Err(SealError::TooLong { .. })
        ));
    }
}
