//! The quarantine's limits: what it keeps of refused messages, per source and in all, per
//! window of bus time and in total. A source is the table a message's subject names (`-`
//! for none); on a secured bus a credential publishes only on its own table's subjects, so
//! a source is a credential. Past a limit a refusal is counted, not stored (`Overflow`).
//!
//! Bytes are charged as a message's length plus `ENTRY_COST_BYTES`, what an entry costs on
//! disk at most, so the byte limits bound the ledger's growth, not only the messages.
//!
//! `table_fenced` entries are kept apart: never refused by a limit, not charged here, and
//! never purged while their table is fenced. Only the table's enrolled device gets a
//! message that far (subject and signature are checked before the fence), so they grow at
//! its own event rate.
//!
//! Persisted in `Space::Meta`, not passed per call: recovery judges lost refusals again at
//! open and must use the limits they were first judged with (as `settings` does for the
//! clock skew limit).

use crate::error::Error;
use crate::faces::{Reader, Writer};
use crate::store::{Op, Space, Store};

pub use crate::quarantine::ENTRY_COST_BYTES;

/// `Space::Meta` key of the limits in force (JSON); absent means the defaults.
pub const LIMITS_KEY: &[u8] = b"quarantine_limits";

pub use schemas::limits::{QuarantineLimits, WINDOW_NS_DEFAULT, WINDOW_NS_MIN};

/// What an entry of `len` message bytes is charged against the byte limits.
pub fn charge(len: usize) -> u64 {
    len as u64 + ENTRY_COST_BYTES
}

/// The op that keeps `limits` as the ones in force.
pub(crate) fn limits_op(limits: &QuarantineLimits) -> Op {
    let json = serde_json::to_vec(limits).expect("limits serialize");
    Op::Put(Space::Meta, LIMITS_KEY.to_vec(), json)
}

pub(crate) fn load_limits(store: &dyn Store) -> Result<QuarantineLimits, Error> {
    let Some(v) = store.get(Space::Meta, LIMITS_KEY)? else {
        return Ok(QuarantineLimits::default());
    };
    let limits: QuarantineLimits = serde_json::from_slice(&v)
        .map_err(|e| crate::record::corrupt(&format!("quarantine limits: {e}")))?;
    limits
        .check()
        .map_err(|e| crate::record::corrupt(&format!("quarantine limits: {e}")))?;
    Ok(limits)
}

impl Writer<'_> {
    /// Sets the quarantine's limits from the next refusal on. Kept durably. Refuses limits
    /// that fail `QuarantineLimits::check`.
    pub fn set_quarantine_limits(&self, limits: &QuarantineLimits) -> Result<(), Error> {
        limits.check().map_err(Error::BadSetting)?;
        let mut state = self.lock();
        self.store.commit(vec![limits_op(limits)])?;
        self.store.flush()?;
        state.quarantine.set_limits(*limits);
        Ok(())
    }
}

impl Reader<'_> {
    /// The quarantine's limits in force.
    pub fn quarantine_limits(&self) -> QuarantineLimits {
        self.lock().quarantine.limits
    }

    /// What the quarantine holds against its limits now.
    pub fn quarantine_usage(&self) -> QuarantineUsage {
        let state = self.lock();
        let q = &state.quarantine;
        QuarantineUsage {
            limits: q.limits,
            bytes: q.bytes,
            fenced_bytes: q.fenced_bytes,
            by_source: q.by_source.all(),
        }
    }
}

/// What the quarantine holds against its limits (`Reader::quarantine_usage`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuarantineUsage {
    /// The limits in force.
    pub limits: QuarantineLimits,
    /// Charged bytes of every entry but `table_fenced` ones.
    pub bytes: u64,
    /// Charged bytes of `table_fenced` entries (no limit; kept apart).
    pub fenced_bytes: u64,
    /// Charged bytes per source (`table_fenced` apart); past
    /// `quarantine::SOURCES_COUNTED_MAX`
    /// sources, the rest under `*`.
    pub by_source: std::collections::BTreeMap<String, u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_check_and_each_bad_setting_is_named() {
        let d = QuarantineLimits::default();
        assert_eq!(d.check(), Ok(()));
        let short = QuarantineLimits { window_ns: 1, ..d };
        assert!(short.check().unwrap_err().contains("window"));
        let zero = QuarantineLimits {
            all_bytes_per_window: 0,
            ..d
        };
        assert!(zero.check().unwrap_err().contains("bytes per window"));
        let above = QuarantineLimits {
            source_bytes_max: d.total_bytes_max + 1,
            ..d
        };
        assert!(above.check().unwrap_err().contains("per-source"));
        assert_eq!(d.window_of(-1), -1);
        assert_eq!(d.window_of(WINDOW_NS_DEFAULT), 1);
    }
}
