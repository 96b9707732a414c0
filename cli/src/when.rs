//! Times as people read and type them: in the local time zone (`TZ`, else the system's),
//! to the millisecond. The CLI takes a time as RFC 3339 (`2026-11-25T14:00:00+08:00`), as
//! a local wall time (`2026-11-25 14:00`), or as UTC nanoseconds for scripts. `now_ns`
//! is the commands' one reading of the clock.

use anyhow::{Context, Result};
use jiff::{civil, tz::TimeZone, Timestamp};

/// The zone people read times in: `TZ`, else the system's, else UTC.
fn zone() -> TimeZone {
    TimeZone::try_system().unwrap_or(TimeZone::UTC)
}

/// `2026-11-25 14:03:07.123 +08:00`.
pub fn show(ns: i64) -> String {
    match Timestamp::from_nanosecond(i128::from(ns)) {
        Ok(t) => t
            .to_zoned(zone())
            .strftime("%Y-%m-%d %H:%M:%S%.3f %:z")
            .to_string(),
        Err(_) => format!("{ns} ns"),
    }
}

/// A time typed by a person, as UTC nanoseconds (clap's value parser).
pub fn parse(s: &str) -> Result<i64> {
    let s = s.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
        return s.parse().context("nanoseconds");
    }
    let t = match s.parse::<Timestamp>() {
        Ok(t) => t,
        Err(_) => {
            let wall: civil::DateTime = s.replacen(' ', "T", 1).parse().with_context(|| {
                format!("{s:?}: a time like 2026-11-25 14:00 (local), RFC 3339, or ns")
            })?;
            wall.to_zoned(zone())?.timestamp()
        }
    };
    i64::try_from(t.as_nanosecond()).context("time out of range")
}

/// UTC nanoseconds now, from this process's clock: what a digest, a seal or a retention
/// check stamps. The clock enters only at this edge.
pub fn now_ns() -> Result<i64> {
    Ok(std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .context("system clock before 1970")?
        .as_nanos() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_rfc3339_local_or_ns_and_show_to_the_millisecond() {
        let ns = 1_764_050_587_123_000_000;
        assert_eq!(parse("1764050587123000000").unwrap(), ns);
        assert_eq!(parse("2025-11-25T06:03:07.123Z").unwrap(), ns);
        assert_eq!(parse("2025-11-25T14:03:07.123+08:00").unwrap(), ns);
        assert!(parse("yesterday").is_err());
        let local = show(ns);
        assert!(local.contains(":07.123 "), "{local}");
        assert_eq!(
            parse(&local[..23]).unwrap(),
            ns,
            "a shown time reads back in the same zone"
        );
    }
}
