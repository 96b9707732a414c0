//! Ledger settings kept in the meta space: the clock skew limit and the property's day rule.
//!
//! Persisted, not passed per call: recovery re-appends lost records at open and judges
//! them again, so it must use the limit they were first judged with, whoever opens the
//! ledger (`serve`, `audit`, a test). The day rule (gaming day start, time zone, shift
//! starts) is kept so every report on the ledger splits its days the same way.

use crate::faces::{Reader, Writer};
use crate::record::be_u64;
use crate::store::{Op, Space, Store};
use crate::{error::Error, limits::CLOCK_SKEW_MAX_NS};

/// `Space::Meta` key of the clock skew limit (ns, u64 BE); absent means the default,
/// `CLOCK_SKEW_MAX_NS`.
pub const CLOCK_SKEW_KEY: &[u8] = b"clock_skew_max_ns";

/// `Space::Meta` key of the day rule (`DayRule::spec` text); absent means none set.
pub const DAY_RULE_KEY: &[u8] = b"day_rule";

pub(crate) fn load_clock_skew_max_ns(store: &dyn Store) -> Result<i64, Error> {
    let Some(v) = store.get(Space::Meta, CLOCK_SKEW_KEY)? else {
        return Ok(CLOCK_SKEW_MAX_NS);
    };
    i64::try_from(be_u64(&v)?)
        .ok()
        .filter(|ns| *ns > 0)
        .ok_or_else(|| crate::record::corrupt("clock skew limit out of range"))
}

impl Writer<'_> {
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
}

impl Reader<'_> {
    /// The clock skew limit in force (`set_clock_skew_max_ns`, else `CLOCK_SKEW_MAX_NS`).
    pub fn clock_skew_max_ns(&self) -> i64 {
        self.lock().clock_skew_max_ns
    }
}

impl Writer<'_> {
    /// Keeps `rule` as the property's day rule (`day_rule`). Kept durably.
    pub fn set_day_rule(&self, rule: &crate::days::DayRule) -> Result<(), Error> {
        let spec = rule.spec();
        // What is stored must read back as the same rule.
        assert_eq!(crate::days::DayRule::from_spec(&spec)?.spec(), spec);
        let _state = self.lock();
        self.store.commit(vec![Op::Put(
            Space::Meta,
            DAY_RULE_KEY.to_vec(),
            spec.into_bytes(),
        )])?;
        self.store.flush()
    }
}

impl Reader<'_> {
    /// The property's day rule as `set_day_rule` kept it; `None` before one is set.
    pub fn day_rule(&self) -> Result<Option<crate::days::DayRule>, Error> {
        let Some(v) = self.store.get(Space::Meta, DAY_RULE_KEY)? else {
            return Ok(None);
        };
        let spec =
            std::str::from_utf8(&v).map_err(|_| crate::record::corrupt("day rule is not UTF-8"))?;
        crate::days::DayRule::from_spec(spec).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use crate::days::DayRule;

    #[test]
    fn the_day_rule_is_kept_and_read_back_after_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let rule = DayRule::new("06:00", "Asia/Singapore")
            .unwrap()
            .with_shifts("06:00,14:00,22:00")
            .unwrap();
        {
            let l = crate::Ledger::open(dir.path()).unwrap();
            assert!(l.reader().day_rule().unwrap().is_none(), "none set yet");
            l.writer().set_day_rule(&rule).unwrap();
        }
        let l = crate::Ledger::open(dir.path()).unwrap();
        assert_eq!(
            l.reader().day_rule().unwrap().map(|r| r.spec()),
            Some(rule.spec())
        );
    }
}
