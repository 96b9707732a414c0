//! Identifiers and money: small newtypes so a table id is never mistaken for a device id
//! and an amount of money is never a bare integer.

use bincode::{Decode, Encode};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Longest identifier accepted anywhere (table, device, staff, pool). Ids become NATS
/// subject tokens and sled key parts, so they are short and restricted to `[A-Za-z0-9_-]`.
pub const ID_LEN_MAX: usize = 32;

/// Why an identifier was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// The identifier is the empty string.
    #[error("identifier is empty")]
    Empty,
    /// The identifier is longer than `ID_LEN_MAX` bytes.
    #[error("identifier {0:?} is longer than {ID_LEN_MAX} bytes")]
    TooLong(String),
    /// The identifier has a character outside `[A-Za-z0-9_-]`.
    #[error("identifier {0:?} has a character outside [A-Za-z0-9_-]")]
    BadChar(String),
}

/// Checks the id grammar shared by every id newtype.
pub fn check_id(s: &str) -> Result<(), IdError> {
    if s.is_empty() {
        return Err(IdError::Empty);
    }
    if s.len() > ID_LEN_MAX {
        return Err(IdError::TooLong(s.to_string()));
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(IdError::BadChar(s.to_string()));
    }
    Ok(())
}

macro_rules! string_id {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Encode, Decode, JsonSchema)]
        #[serde(try_from = "String", into = "String")]
        #[schemars(transparent)]
        pub struct $name(String);

        impl $name {
            /// Builds the id, checking the grammar (`[A-Za-z0-9_-]`, 1 to 32 bytes).
            pub fn new(s: impl Into<String>) -> Result<Self, IdError> {
                let s = s.into();
                check_id(&s)?;
                Ok(Self(s))
            }
            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
            /// Re-checks the grammar; the bincode decoder cannot, so `codec` calls this.
            pub fn check(&self) -> Result<(), IdError> {
                check_id(&self.0)
            }
        }
        impl TryFrom<String> for $name {
            type Error = IdError;
            fn try_from(s: String) -> Result<Self, IdError> {
                Self::new(s)
            }
        }
        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

string_id!(
    /// A chain's publisher: normally a gaming table (its controller orders the events of
    /// the table's devices); a linked jackpot controller or a pit terminal that publishes a
    /// chain of its own has a `TableId` of its own too. It is the `<table>` token of the
    /// NATS subject `tables.<table>.events`.
    TableId
);
string_id!(
    /// The device that produced an event (shoe, shuffler, bet sensor, dealer terminal,
    /// jackpot controller, pit terminal).
    DeviceId
);
string_id!(
    /// A pit employee (dealer, pit supervisor, pit manager, shift manager).
    StaffId
);
string_id!(
    /// A progressive jackpot pool; linked tables share one.
    PoolId
);

/// A round of play at one table, numbered by the table from 1.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    Encode,
    Decode,
    JsonSchema,
)]
#[serde(transparent)]
pub struct RoundId(pub u64);

/// Position of an event in its table's chain: 1, 2, 3, ... without gaps.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    Encode,
    Decode,
    JsonSchema,
)]
#[serde(transparent)]
pub struct Seq(pub u64);

/// A betting box, numbered from 1 = the first box to the dealer's left (dealt first).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    Encode,
    Decode,
    JsonSchema,
)]
#[serde(transparent)]
pub struct BoxNo(pub u8);

/// Money in integer minor units (cents) of the table's currency. Never a float.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    Encode,
    Decode,
    JsonSchema,
)]
#[serde(transparent)]
pub struct Money(pub i64);

impl Money {
    /// No money.
    pub const ZERO: Money = Money(0);
    /// The amount in minor units.
    pub fn minor(self) -> i64 {
        self.0
    }
}

// Saturating, all of them: amounts come from devices, and two payouts of i64::MAX on one
// line (a broken or hostile device) must give a replay with a dispute, not an overflow
// panic (debug builds) or a wrapped, plausible-looking figure (release). No real table
// comes near ±9.2e18 minor units, so saturation only ever marks such input.
impl std::ops::Add for Money {
    type Output = Money;
    fn add(self, o: Money) -> Money {
        Money(self.0.saturating_add(o.0))
    }
}
impl std::ops::Sub for Money {
    type Output = Money;
    fn sub(self, o: Money) -> Money {
        Money(self.0.saturating_sub(o.0))
    }
}
impl std::ops::Neg for Money {
    type Output = Money;
    fn neg(self) -> Money {
        Money(self.0.saturating_neg())
    }
}
impl std::iter::Sum for Money {
    fn sum<I: Iterator<Item = Money>>(it: I) -> Money {
        it.fold(Money::ZERO, |a, b| a + b)
    }
}

impl Money {
    /// `basis_points` / 10,000 of this amount, rounded toward zero, computed without
    /// overflow (saturating only where the result itself exceeds i64).
    pub fn basis_points(self, basis_points: u32) -> Money {
        let exact = i128::from(self.0) * i128::from(basis_points) / 10_000;
        Money(i64::try_from(exact).unwrap_or(if exact < 0 { i64::MIN } else { i64::MAX }))
    }
}

impl fmt::Display for Money {
    /// `12.34`, `-0.05`: two decimals, the way a cage slip shows it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let a = self.0.unsigned_abs();
        write!(f, "{sign}{}.{:02}", a / 100, a % 100)
    }
}

/// A blake3 hash: event hashes, chain heads, deck commitments. Hex in JSON.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Encode, Decode)]
pub struct Hash32(pub [u8; 32]);

impl Hash32 {
    /// The `prev` of the first event of every chain.
    pub const ZERO: Hash32 = Hash32([0; 32]);
    /// The 32 bytes as lowercase hex.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
    /// Reads exactly 64 hex digits; an error otherwise.
    pub fn from_hex(s: &str) -> Result<Self, hex::FromHexError> {
        // Every JSON event carries at least one hash: decoded by hand, a nibble table
        // lookup per digit (the `hex` crate's general path showed in replay profiles).
        // Same answers and errors as `hex::decode_to_slice`.
        let b = s.as_bytes();
        if b.len() != 64 {
            return Err(if b.len() % 2 == 1 {
                hex::FromHexError::OddLength
            } else {
                hex::FromHexError::InvalidStringLength
            });
        }
        let mut out = [0u8; 32];
        for (i, pair) in b.chunks_exact(2).enumerate() {
            let nibble = |k: usize| {
                let c = pair[k];
                let v = NIBBLE[usize::from(c)];
                if v == 0xff {
                    Err(hex::FromHexError::InvalidHexCharacter {
                        c: char::from(c),
                        index: 2 * i + k,
                    })
                } else {
                    Ok(v)
                }
            };
            out[i] = (nibble(0)? << 4) | nibble(1)?;
        }
        Ok(Hash32(out))
    }
}

/// Value of each byte as a hex digit, 0xff where it is none.
const NIBBLE: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

impl fmt::Debug for Hash32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Hash32({})", self.to_hex())
    }
}
impl fmt::Display for Hash32 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}
impl Serialize for Hash32 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}
impl<'de> Deserialize<'de> for Hash32 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A visitor rather than `String::deserialize`: the hex is read where the JSON
        // holds it, with no string allocated per hash (two or more per JSON event).
        struct Hex;
        impl serde::de::Visitor<'_> for Hex {
            type Value = Hash32;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a 32-byte hash as 64 lowercase hex digits")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Hash32, E> {
                Hash32::from_hex(s).map_err(|e| E::custom(format!("hash {s:?}: {e}")))
            }
        }
        d.deserialize_str(Hex)
    }
}
impl JsonSchema for Hash32 {
    fn schema_name() -> String {
        "Hash32".into()
    }
    fn json_schema(_: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
        let mut s = schemars::schema::SchemaObject {
            instance_type: Some(schemars::schema::InstanceType::String.into()),
            ..Default::default()
        };
        s.string().pattern = Some("^[0-9a-f]{64}$".into());
        s.metadata().description = Some("32-byte blake3 hash, lowercase hex".into());
        s.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_hex_decodes_as_the_hex_crate_does() {
        let h = Hash32(std::array::from_fn(|i| (i as u8).wrapping_mul(37)));
        let lower = h.to_hex();
        assert_eq!(Hash32::from_hex(&lower), Ok(h));
        assert_eq!(Hash32::from_hex(&lower.to_uppercase()), Ok(h));
        let mut buf = [0u8; 32];
        for bad in [
            String::new(),
            "a".repeat(63),
            "a".repeat(62),
            "a".repeat(66),
            format!("{}g", &lower[..63]),
            format!("x{}", &lower[1..]),
            format!("{}é", &lower[..62]),
        ] {
            assert_eq!(
                Hash32::from_hex(&bad).err(),
                hex::decode_to_slice(&bad, &mut buf).err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn ids_are_checked() {
        assert!(TableId::new("T-01_a").is_ok());
        assert_eq!(TableId::new(""), Err(IdError::Empty));
        assert!(matches!(TableId::new("a.b"), Err(IdError::BadChar(_))));
        assert!(matches!(
            TableId::new("x".repeat(33)),
            Err(IdError::TooLong(_))
        ));
        let j: Result<TableId, _> = serde_json::from_str("\"tables.*\"");
        assert!(j.is_err());
    }

    #[test]
    fn money_displays_as_two_decimals() {
        assert_eq!(Money(12345).to_string(), "123.45");
        assert_eq!(Money(-5).to_string(), "-0.05");
        assert_eq!(Money(0).to_string(), "0.00");
    }

    #[test]
    fn hash_round_trips_hex() {
        let h = Hash32([7; 32]);
        let j = serde_json::to_string(&h).unwrap();
        assert_eq!(serde_json::from_str::<Hash32>(&j).unwrap(), h);
        assert!(serde_json::from_str::<Hash32>("\"00\"").is_err());
    }
}
