//! The ed25519 key and signature types, on their own so that the event catalogue can
//! carry keys without depending on `attest`, which decodes events. `attest` re-exports
//! them: `schemas::attest::PublicKey` is their public path.
//!
//! Their wire forms are fixed: raw bytes in bincode, lowercase hex in JSON.

use bincode::{Decode, Encode};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

/// An ed25519 public key (32 bytes; lowercase hex in JSON).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Encode, Decode)]
pub struct PublicKey(pub [u8; 32]);

/// An ed25519 signature (64 bytes; lowercase hex in JSON).
#[derive(Clone, Copy, PartialEq, Eq, Encode, Decode)]
pub struct Signature(pub [u8; 64]);

macro_rules! hex_bytes {
    ($t:ident, $n:expr, $what:expr) => {
        impl $t {
            /// The bytes as lowercase hex, as JSON carries them.
            pub fn to_hex(&self) -> String {
                hex::encode(self.0)
            }
            /// Reads exactly the hex length of the type; an error otherwise.
            pub fn from_hex(s: &str) -> Result<Self, hex::FromHexError> {
                let mut out = [0u8; $n];
                hex::decode_to_slice(s, &mut out)?;
                Ok($t(out))
            }
        }
        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($t), self.to_hex())
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.to_hex())
            }
        }
        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.to_hex())
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                $t::from_hex(&s)
                    .map_err(|e| serde::de::Error::custom(format!("{} {s:?}: {e}", $what)))
            }
        }
        impl JsonSchema for $t {
            fn schema_name() -> String {
                stringify!($t).into()
            }
            fn json_schema(_: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
                let mut s = schemars::schema::SchemaObject {
                    instance_type: Some(schemars::schema::InstanceType::String.into()),
                    ..Default::default()
                };
                s.string().pattern = Some(format!("^[0-9a-f]{{{}}}$", $n * 2));
                s.metadata().description = Some(format!("{}, lowercase hex", $what));
                s.into()
            }
        }
    };
}
hex_bytes!(PublicKey, 32, "ed25519 public key");
hex_bytes!(Signature, 64, "ed25519 signature");
