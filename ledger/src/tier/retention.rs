//! Retention: a day file removed past its legal retention, by an admin's signed act.

use serde::{Deserialize, Serialize};

/// A signed removal, kept in the day's tier entry for ever.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Removal {
    pub removed_at_ns: i64,
    /// The admin key that signed, 64 hex.
    pub admin: String,
    /// Ed25519 over `signed_message`, 128 hex.
    pub signature: String,
    pub retention_days: u32,
}
