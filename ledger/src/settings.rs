//! Ledger settings kept in the meta space: the clock skew limit.
//!
//! Persisted, not passed per call: recovery re-appends lost records at open and judges
//! them again, so it must use the limit they were first judged with, whoever opens the
//! ledger (`serve`, `audit`, a test).

use crate::record::be_u64;
use crate::store::{Op, Space, Store};
use crate::{Error, Ledger, CLOCK_SKEW_MAX_NS};

/// `Space::Meta` key of the clock skew limit (ns, u64 BE); absent means the default,
/// `CLOCK_SKEW_MAX_NS`.
pub const CLOCK_SKEW_KEY: &[u8] = b"clock_skew_max_ns";

pub(crate) fn load_clock_skew_max_ns(store: &dyn Store) -> Result<i64, Error> {
    let Some(v) = store.get(Space::Meta, CLOCK_SKEW_KEY)? else {
        return Ok(CLOCK_SKEW_MAX_NS);
    };
    i64::try_from(be_u64(&v)?)
        .ok()
        .filter(|ns| *ns > 0)
        .ok_or_else(|| crate::record::corrupt("clock skew limit out of range"))
}

impl Ledger {
    /// Sets how far an event's device time may be from its receive time before it is
    /// quarantined (`clock_skew`). Kept durably. Refuses 0 or less.
    pub fn set_clock_skew_max_ns(&self, skew_max_ns: i64) -> Result<(), Error> {
        if skew_max_ns <= 0 {
            return Err(Error::BadSetting(format!(
                "clock skew limit {skew_max_ns} ns: must be above 0"
            )));
        }
        let mut state = self.lock();
        self.store.commit(vec![Op::Put(
            Space::Meta,
            CLOCK_SKEW_KEY.to_vec(),
            (skew_max_ns as u64).to_be_bytes().to_vec(),
        )])?;
        self.store.flush()?;
        state.clock_skew_max_ns = skew_max_ns;
        Ok(())
    }

    /// The clock skew limit in force (`set_clock_skew_max_ns`, else `CLOCK_SKEW_MAX_NS`).
    pub fn clock_skew_max_ns(&self) -> i64 {
        self.lock().clock_skew_max_ns
    }
}
