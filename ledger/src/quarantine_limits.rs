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

use crate::store::{Op, Space, Store};
use crate::{Error, Ledger};
use serde::{Deserialize, Serialize};

/// What a quarantine entry costs on disk beyond its message's bytes, at most: its reason
/// and text (`quarantine::QUARANTINE_TEXT_LEN_MAX`), subject, stream seq and receive time, the value
/// log's headers, and sled's key and pointer with sled's own overhead (measured in
/// BENCHMARKS.md). The byte bounds count each entry as its message plus this.
pub const ENTRY_COST_BYTES: u64 = 1024;

/// `Space::Meta` key of the limits in force (JSON); absent means the defaults.
pub const LIMITS_KEY: &[u8] = b"quarantine_limits";

/// How long a window of bus time is by default: one minute.
pub const WINDOW_NS_DEFAULT: i64 = 60_000_000_000;
/// Shortest window a setting may ask for: 1 ms of bus time.
pub const WINDOW_NS_MIN: i64 = 1_000_000;

/// The quarantine's limits. Byte limits count charged bytes (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuarantineLimits {
    /// The window of bus time the rate limits count in, ns.
    pub window_ns: i64,
    /// New entries one source may add per window.
    pub source_entries_per_window: u64,
    /// Charged bytes one source may add per window.
    pub source_bytes_per_window: u64,
    /// New entries all sources together may add per window.
    pub all_entries_per_window: u64,
    /// Charged bytes all sources together may add per window.
    pub all_bytes_per_window: u64,
    /// Charged bytes one source's entries may hold in all.
    pub source_bytes_max: u64,
    /// Charged bytes every entry together may hold (`table_fenced` ones apart).
    pub total_bytes_max: u64,
}

impl Default for QuarantineLimits {
    /// One minute; 1,000 entries and 4 MiB per source and 10,000 and 32 MiB in all per
    /// minute; 1 GiB per source and 8 GiB in all. At the per-source rate one credential
    /// reaches its total in about four hours and cannot fill the quarantine alone.
    fn default() -> QuarantineLimits {
        QuarantineLimits {
            window_ns: WINDOW_NS_DEFAULT,
            source_entries_per_window: 1_000,
            source_bytes_per_window: 4 << 20,
            all_entries_per_window: 10_000,
            all_bytes_per_window: 32 << 20,
            source_bytes_max: 1 << 30,
            total_bytes_max: 8 << 30,
        }
    }
}

impl QuarantineLimits {
    /// Why these limits cannot be used, if they cannot: every limit above 0, the window at
    /// least `WINDOW_NS_MIN`, and no per-source limit above its limit in all.
    pub fn check(&self) -> Result<(), String> {
        if self.window_ns < WINDOW_NS_MIN {
            return Err(format!(
                "window {} ns: at least {WINDOW_NS_MIN}",
                self.window_ns
            ));
        }
        let all = [
            ("source entries per window", self.source_entries_per_window),
            ("source bytes per window", self.source_bytes_per_window),
            ("entries per window", self.all_entries_per_window),
            ("bytes per window", self.all_bytes_per_window),
            ("source bytes", self.source_bytes_max),
            ("total bytes", self.total_bytes_max),
        ];
        if let Some((name, _)) = all.iter().find(|(_, v)| *v == 0) {
            return Err(format!("{name}: must be above 0"));
        }
        let pairs = [
            (self.source_entries_per_window, self.all_entries_per_window),
            (self.source_bytes_per_window, self.all_bytes_per_window),
            (self.source_bytes_max, self.total_bytes_max),
        ];
        if pairs.iter().any(|(one, all)| one > all) {
            return Err("a per-source limit above its limit in all".to_string());
        }
        Ok(())
    }

    /// The window a receive time falls in.
    pub fn window_of(&self, received_at_ns: i64) -> i64 {
        received_at_ns.div_euclid(self.window_ns)
    }
}

/// What an entry of `len` message bytes is charged against the byte limits.
pub fn charge(len: usize) -> u64 {
    len as u64 + ENTRY_COST_BYTES
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

impl Ledger {
    /// Sets the quarantine's limits from the next refusal on. Kept durably. Refuses limits
    /// that fail `QuarantineLimits::check`.
    pub fn set_quarantine_limits(&self, limits: &QuarantineLimits) -> Result<(), Error> {
        limits.check().map_err(Error::BadSetting)?;
        let mut state = self.lock();
        let json = serde_json::to_vec(limits).expect("limits serialize");
        self.store
            .commit(vec![Op::Put(Space::Meta, LIMITS_KEY.to_vec(), json)])?;
        self.store.flush()?;
        if state.quarantine.limits.window_ns != limits.window_ns {
            // Window numbers of another length: counting starts again.
            state.quarantine.window = Default::default();
        }
        state.quarantine.limits = *limits;
        Ok(())
    }

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

/// What the quarantine holds against its limits (`Ledger::quarantine_usage`).
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
