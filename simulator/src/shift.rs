//! Shift boundaries on the simulated clock: when tables count their trays, remove their
//! drop boxes and hand over to the next shift.

use crate::Error;

/// Shortest shift a clock accepts: a shift change takes up to `SHIFT_CHANGE_WINDOW_NS`.
pub const SHIFT_PERIOD_MIN_NS: i64 = 3_600_000_000_000;

/// Longest shift a clock accepts (a week).
pub const SHIFT_PERIOD_MAX_NS: i64 = 7 * 86_400_000_000_000;

/// A table stops dealing this long before a boundary to count its tray: longer than any
/// simulated round, so a shift's last round ends before the boundary.
pub const SHIFT_CHANGE_WINDOW_NS: i64 = 20 * 60_000_000_000;

/// The closer's count starts this long before the boundary, and the drop box is removed
/// before the boundary.
pub const CLOSING_LEAD_NS: i64 = 60_000_000_000;

/// The property's shift boundaries: `origin_ns + k * period_ns` for every integer `k`
/// (UTC ns). Shift `k` spans `[origin + k * period, origin + (k + 1) * period)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShiftClock {
    origin_ns: i64,
    period_ns: i64,
}

impl ShiftClock {
    /// Refuses a period outside `SHIFT_PERIOD_MIN_NS..=SHIFT_PERIOD_MAX_NS`.
    pub fn new(origin_ns: i64, period_ns: i64) -> Result<ShiftClock, Error> {
        if !(SHIFT_PERIOD_MIN_NS..=SHIFT_PERIOD_MAX_NS).contains(&period_ns) {
            return Err(Error::Config(format!(
                "shift period {period_ns} ns is outside {SHIFT_PERIOD_MIN_NS}..={SHIFT_PERIOD_MAX_NS} ns (1 h to 7 days)"
            )));
        }
        Ok(ShiftClock {
            origin_ns,
            period_ns,
        })
    }

    /// Three 8-hour shifts a day, boundaries at 00:00, 08:00 and 16:00 UTC.
    pub fn eight_hours_utc() -> ShiftClock {
        ShiftClock {
            origin_ns: 0,
            period_ns: 8 * 3_600_000_000_000,
        }
    }

    /// The length of one shift, nanoseconds.
    pub fn period_ns(&self) -> i64 {
        self.period_ns
    }

    /// The index of the shift containing `at_ns`.
    pub fn index_of(&self, at_ns: i64) -> i64 {
        (i128::from(at_ns) - i128::from(self.origin_ns)).div_euclid(i128::from(self.period_ns))
            as i64
    }

    /// Shift `index`'s span (saturating at the ends of time).
    pub fn span(&self, index: i64) -> ShiftSpan {
        let at = |k: i64| {
            let t = i128::from(self.origin_ns) + i128::from(k) * i128::from(self.period_ns);
            t.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
        };
        ShiftSpan {
            index,
            starts_at_ns: at(index),
            ends_at_ns: at(index.saturating_add(1)),
        }
    }

    /// The span of the shift containing `at_ns`.
    pub fn span_at(&self, at_ns: i64) -> ShiftSpan {
        self.span(self.index_of(at_ns))
    }
}

/// A shift: its index on the shift clock and its span, UTC ns `[starts_at_ns,
/// ends_at_ns)`. Without a shift clock a table's session is one shift, index 0, from its
/// opening to the end of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ShiftSpan {
    /// The shift's index on the shift clock.
    pub index: i64,
    /// Start, UTC nanoseconds, inclusive.
    pub starts_at_ns: i64,
    /// End, UTC nanoseconds, exclusive.
    pub ends_at_ns: i64,
}

impl ShiftSpan {
    /// Whether `at_ns` falls in this shift.
    pub fn contains(&self, at_ns: i64) -> bool {
        (self.starts_at_ns..self.ends_at_ns).contains(&at_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shifts_tile_the_clock() {
        let c = ShiftClock::eight_hours_utc();
        let h8 = 8 * 3_600_000_000_000;
        assert_eq!(c.index_of(0), 0);
        assert_eq!(c.index_of(h8 - 1), 0);
        assert_eq!(c.index_of(h8), 1);
        assert_eq!(c.index_of(-1), -1);
        let s = c.span_at(h8 + 5);
        assert_eq!((s.index, s.starts_at_ns, s.ends_at_ns), (1, h8, 2 * h8));
        assert!(ShiftClock::new(0, 60_000_000_000).is_err());
    }
}
