//! The quarantine's limits (`ledger::quarantine_limits` applies them): what the quarantine
//! keeps of refused messages, per source and in all, per window of bus time and in total.
//! Here because the admin act `quarantine_limits` (`admin`) carries them on the stream, so
//! every ledger node admits refusals alike. Byte limits count charged bytes: a message's
//! length plus what an entry costs on disk at most.

use serde::{Deserialize, Serialize};

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
