//! Shifts: a gaming day split by local shift start times (`06:00,14:00,22:00`), named
//! `<gaming day>/<n>` from 1. A shift runs from its local start to the next one's, so
//! across a DST change it lasts an hour more or less. A start a DST gap skips is taken
//! just after the gap, as the day's own start is.
//!
//! Finance attribution: an event belongs to the shift holding its time; a tray count
//! made within `TRAY_COUNT_GRACE_NS` of a shift change belongs across it (an opening to
//! the shift after, a closing to the shift before).

use super::DayRule;
use crate::error::Error;

/// How far from a shift change a tray count still belongs to the shift across it: a
/// closer counting just after the change, an opener just before it.
pub const TRAY_COUNT_GRACE_NS: i64 = 15 * 60 * 1_000_000_000;

/// Most shifts in one gaming day.
pub const SHIFTS_MAX: usize = 8;
const DAY_MIN: u16 = 24 * 60;

/// One shift's name and bounds, UTC ns: `[starts_at_ns, ends_at_ns)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShiftBounds {
    /// The gaming day, YYYY-MM-DD.
    pub day: String,
    /// 1-based position in the day.
    pub n: u8,
    /// The shift's start, UTC ns (inclusive).
    pub starts_at_ns: i64,
    /// The shift's end, UTC ns (exclusive).
    pub ends_at_ns: i64,
}

impl ShiftBounds {
    /// `2026-11-25/2`.
    pub fn name(&self) -> String {
        format!("{}/{}", self.day, self.n)
    }
}

/// `HH:MM` as (hour, minute), `None` unless HH is 00-23 and MM 00-59.
pub(super) fn parse_hh_mm(s: &str) -> Option<(i8, i8)> {
    let (h, m) = s.split_once(':')?;
    let part = |s: &str, max: i8| {
        (s.len() == 2)
            .then(|| s.parse::<i8>().ok())
            .flatten()
            .filter(|v| (0..=max).contains(v))
    };
    Some((part(h, 23)?, part(m, 59)?))
}

impl DayRule {
    /// The rule with its day split at `shifts`: local `HH:MM` starts, comma-separated, in
    /// order from the day start (which must come first). Empty: one shift.
    pub fn with_shifts(mut self, shifts: &str) -> Result<DayRule, Error> {
        let day_min = self.shift_starts_min[0];
        if shifts.trim().is_empty() {
            self.shift_starts_min = vec![day_min];
            return Ok(self);
        }
        let bad = |why: &str| Error::Day(format!("shifts {shifts:?}: {why}"));
        let mut out: Vec<u16> = Vec::new();
        for part in shifts.split(',') {
            let (h, m) = parse_hh_mm(part.trim()).ok_or_else(|| bad("not HH:MM,HH:MM,..."))?;
            out.push(h as u16 * 60 + m as u16);
        }
        if out.len() > SHIFTS_MAX {
            return Err(bad(&format!("more than {SHIFTS_MAX} shifts")));
        }
        if out[0] != day_min {
            return Err(bad("the first shift must start at the day start"));
        }
        let after_start = |m: u16| (m + DAY_MIN - day_min) % DAY_MIN;
        if out
            .windows(2)
            .any(|w| after_start(w[1]) <= after_start(w[0]))
        {
            return Err(bad("starts must follow one another through the day"));
        }
        self.shift_starts_min = out;
        Ok(self)
    }

    /// The shift starts as `--shifts` takes them: `06:00,14:00,22:00`.
    pub fn shifts_text(&self) -> String {
        let hm: Vec<String> = self
            .shift_starts_min
            .iter()
            .map(|m| format!("{:02}:{:02}", m / 60, m % 60))
            .collect();
        hm.join(",")
    }

    /// The whole rule in one line, `06:00 Asia/Singapore 06:00,14:00,22:00`: a read
    /// model built under one rule is rebuilt under another.
    pub fn spec(&self) -> String {
        format!(
            "{:02}:{:02} {} {}",
            self.start_hour,
            self.start_minute,
            self.time_zone_name,
            self.shifts_text()
        )
    }

    /// The rule `spec` wrote.
    pub fn from_spec(spec: &str) -> Result<DayRule, Error> {
        let mut parts = spec.split(' ');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(start), Some(zone), Some(shifts), None) => {
                DayRule::new(start, zone)?.with_shifts(shifts)
            }
            _ => Err(Error::Day(format!(
                "day rule {spec:?}: not `HH:MM ZONE SHIFTS`"
            ))),
        }
    }

    /// The shifts of a day, in order; they cover the day exactly.
    pub fn shifts(&self, day: &str) -> Result<Vec<ShiftBounds>, Error> {
        let b = self.bounds(day)?;
        let date: jiff::civil::Date = b.day.parse().map_err(|e| Error::Day(format!("{e}")))?;
        let next = date.tomorrow().map_err(|e| Error::Day(e.to_string()))?;
        let day_min = self.shift_starts_min[0];
        let mut starts = Vec::with_capacity(self.shift_starts_min.len());
        for m in &self.shift_starts_min {
            let on = if *m >= day_min { date } else { next };
            starts.push(self.local_instant(on, *m)?);
        }
        starts.push(b.ends_at_ns);
        assert_eq!(starts[0], b.starts_at_ns, "the first shift starts the day");
        let mut out = Vec::with_capacity(starts.len() - 1);
        for (i, w) in starts.windows(2).enumerate() {
            if w[1] <= w[0] {
                return Err(Error::Day(format!(
                    "day {day}: shift {} is empty in {} (a DST change)",
                    i + 1,
                    self.time_zone_name
                )));
            }
            out.push(ShiftBounds {
                day: b.day.clone(),
                n: (i + 1) as u8,
                starts_at_ns: w[0],
                ends_at_ns: w[1],
            });
        }
        Ok(out)
    }

    /// The shift that holds the instant `at_ns`.
    pub fn shift_of(&self, at_ns: i64) -> Result<ShiftBounds, Error> {
        let day = self.day_of(at_ns)?;
        self.shifts(&day)?
            .into_iter()
            .find(|s| (s.starts_at_ns..s.ends_at_ns).contains(&at_ns))
            .ok_or_else(|| Error::Day(format!("no shift holds instant {at_ns}")))
    }

    /// The shift named `<day>/<n>`.
    pub fn shift_named(&self, name: &str) -> Result<ShiftBounds, Error> {
        let bad = || Error::Day(format!("shift {name:?}: not YYYY-MM-DD/N"));
        let (day, n) = name.split_once('/').ok_or_else(bad)?;
        let n: usize = n.parse().map_err(|_| bad())?;
        let shifts = self.shifts(day)?;
        n.checked_sub(1)
            .and_then(|i| shifts.get(i).cloned())
            .ok_or_else(|| Error::Day(format!("day {day} has {} shifts", shifts.len())))
    }

    /// The shift an opening tray count belongs to: the one it was made in, or the next
    /// when it was made at most `TRAY_COUNT_GRACE_NS` before that shift starts (an opener
    /// counting early).
    pub fn opening_shift(&self, at_ns: i64) -> Result<ShiftBounds, Error> {
        let this = self.shift_of(at_ns)?;
        if this.ends_at_ns - at_ns <= TRAY_COUNT_GRACE_NS {
            return self.shift_of(this.ends_at_ns);
        }
        Ok(this)
    }

    /// The shift a closing tray count (or a drop box removal) belongs to: the one it was
    /// made in, or the previous when it was made at most `TRAY_COUNT_GRACE_NS` after that
    /// shift ended (a closer counting late).
    pub fn closing_shift(&self, at_ns: i64) -> Result<ShiftBounds, Error> {
        let this = self.shift_of(at_ns)?;
        if at_ns - this.starts_at_ns < TRAY_COUNT_GRACE_NS {
            return self.shift_of(this.starts_at_ns - 1);
        }
        Ok(this)
    }

    /// An instant as people at the property read it: `2026-11-25 14:00 +08`.
    pub fn local_text(&self, at_ns: i64) -> String {
        match jiff::Timestamp::from_nanosecond(i128::from(at_ns)) {
            Ok(ts) => ts
                .to_zoned(self.time_zone.clone())
                .strftime("%Y-%m-%d %H:%M %:z")
                .to_string(),
            Err(_) => format!("{at_ns} ns"),
        }
    }

    /// A local date and minute of day as UTC ns, DST as the day start takes it.
    fn local_instant(&self, date: jiff::civil::Date, minute: u16) -> Result<i64, Error> {
        let zoned = date
            .at((minute / 60) as i8, (minute % 60) as i8, 0, 0)
            .to_zoned(self.time_zone.clone())
            .map_err(|e| Error::Day(format!("{date} in {}: {e}", self.time_zone_name)))?;
        i64::try_from(zoned.timestamp().as_nanosecond())
            .map_err(|_| Error::Day(format!("{date} is beyond the ns range")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR_NS: i64 = 3600 * 1_000_000_000;

    fn ny3() -> DayRule {
        DayRule::new("06:00", "America/New_York")
            .unwrap()
            .with_shifts("06:00,14:00,22:00")
            .unwrap()
    }

    #[test]
    fn three_shifts_cover_the_day_and_the_night_one_crosses_midnight() {
        let r = ny3();
        let s = r.shifts("2026-11-25").unwrap();
        let lens: Vec<i64> = s
            .iter()
            .map(|s| (s.ends_at_ns - s.starts_at_ns) / HOUR_NS)
            .collect();
        assert_eq!(lens, [8, 8, 8]);
        assert_eq!(s[2].name(), "2026-11-25/3");
        // 22:00 EST on the 25th is 03:00 UTC on the 26th.
        let t = jiff::Timestamp::from_second(s[2].starts_at_ns / 1_000_000_000).unwrap();
        assert_eq!(t.to_string(), "2026-11-26T03:00:00Z");
        assert_eq!(r.shift_of(s[1].starts_at_ns).unwrap(), s[1]);
        assert_eq!(r.shift_of(s[1].starts_at_ns - 1).unwrap(), s[0]);
        assert_eq!(r.shift_named("2026-11-25/3").unwrap(), s[2]);
        assert!(r.shift_named("2026-11-25/4").is_err());
    }

    #[test]
    fn across_dst_the_night_shift_lasts_seven_or_nine_hours() {
        let r = ny3();
        // 2026-03-08 02:00 EST jumps to 03:00 EDT: the night of the 7th loses an hour.
        let spring = r.shifts("2026-03-07").unwrap();
        assert_eq!((spring[2].ends_at_ns - spring[2].starts_at_ns) / HOUR_NS, 7);
        assert_eq!((spring[0].ends_at_ns - spring[0].starts_at_ns) / HOUR_NS, 8);
        let autumn = r.shifts("2026-10-31").unwrap();
        assert_eq!((autumn[2].ends_at_ns - autumn[2].starts_at_ns) / HOUR_NS, 9);
        let day = r.bounds("2026-10-31").unwrap();
        assert_eq!(autumn[2].ends_at_ns, day.ends_at_ns);
    }

    #[test]
    fn tray_counts_near_a_change_go_across_it() {
        let r = ny3();
        let s = r.shifts("2026-11-25").unwrap();
        let change = s[1].starts_at_ns;
        let ten_min = 600 * 1_000_000_000;
        // The opener counts ten minutes early, the closer ten minutes late.
        assert_eq!(r.opening_shift(change - ten_min).unwrap(), s[1]);
        assert_eq!(r.opening_shift(change + ten_min).unwrap(), s[1]);
        assert_eq!(r.closing_shift(change + ten_min).unwrap(), s[0]);
        assert_eq!(r.closing_shift(change - ten_min).unwrap(), s[0]);
        assert_eq!(r.closing_shift(s[1].ends_at_ns - 1).unwrap(), s[1]);
    }

    #[test]
    fn bad_shifts_are_refused_and_the_spec_reads_back() {
        let day = || DayRule::new("06:00", "UTC").unwrap();
        assert!(
            day().with_shifts("07:00,14:00").is_err(),
            "not the day start"
        );
        assert!(
            day().with_shifts("06:00,22:00,14:00").is_err(),
            "out of order"
        );
        assert!(day().with_shifts("06:00,5:00").is_err());
        assert!(
            day().with_shifts("06:00,02:00,05:00").is_ok(),
            "past midnight"
        );
        let r = ny3();
        assert_eq!(r.spec(), "06:00 America/New_York 06:00,14:00,22:00");
        assert_eq!(DayRule::from_spec(&r.spec()).unwrap().spec(), r.spec());
        assert_eq!(day().with_shifts("").unwrap().shifts_text(), "06:00");
    }
}
