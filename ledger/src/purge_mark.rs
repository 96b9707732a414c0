//! Where quarantine purges have cut the quarantine (`purge`): what `verify`, the open and
//! the purge steps read, kept below them so none of them depends on the purge act.

use crate::error::Error;
use crate::record::be_u64;
use crate::store::{Space, Store};
use schemas::Hash32;
use serde::{Deserialize, Serialize};

/// `Space::Meta` key of the purge's cut (`PurgeMark`, JSON); absent: nothing purged.
pub const MARK_KEY: &[u8] = b"quarantine_purged";
/// `Space::Meta` key of the id the purges asked for so far: entries below it go (u64 BE).
pub const TARGET_KEY: &[u8] = b"quarantine_purge_to";

/// Where the purged entries end: the chain over every entry below `below_id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PurgeMark {
    /// No entry below this id is stored (kept ones were moved above it).
    pub below_id: u64,
    /// Chain entries below the cut, removed or moved.
    pub entries: u64,
    /// The quarantine chain's hash after them.
    pub hash: Hash32,
    /// Entries removed so far.
    pub purged_entries: u64,
    /// Their charged bytes (`quarantine_limits::charge`).
    pub purged_bytes: u64,
}

impl Default for PurgeMark {
    /// Nothing purged: the chain's start.
    fn default() -> PurgeMark {
        PurgeMark {
            below_id: 0,
            entries: 0,
            hash: Hash32::ZERO,
            purged_entries: 0,
            purged_bytes: 0,
        }
    }
}

pub(crate) fn load_mark(store: &dyn Store) -> Result<PurgeMark, Error> {
    match store.get(Space::Meta, MARK_KEY)? {
        None => Ok(PurgeMark::default()),
        Some(v) => serde_json::from_slice(&v)
            .map_err(|e| crate::record::corrupt(&format!("quarantine purge mark: {e}"))),
    }
}

pub(crate) fn load_target(store: &dyn Store) -> Result<u64, Error> {
    store
        .get(Space::Meta, TARGET_KEY)?
        .map_or(Ok(0), |v| be_u64(&v))
}
