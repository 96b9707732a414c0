//! Times as people read and type them, to the millisecond. The CLI takes a time as RFC
//! 3339 (`2026-11-25T14:00:00+08:00`), as a wall time (`2026-11-25 14:00`), or as UTC
//! nanoseconds for scripts. A wall time is read in `--time-zone` when given, else the
//! property's zone (a server's `whoami`, or the ledger's kept day rule), else `TZ`, else
//! UTC; times are shown in `TZ`, else UTC. The system's own zone file is not read: `TZ`
//! names the zone. `now_ns` is the commands' one reading of the clock.

use anyhow::{Context, Result};
use jiff::{civil, tz::TimeZone, Timestamp};

/// The zone `TZ` names: an IANA name (`Asia/Macau`, `:Asia/Macau`) or a POSIX TZ string
/// (`CST-8`); `None` when `TZ` is unset or empty; an error naming it when it is neither.
pub fn env_zone() -> Result<Option<TimeZone>> {
    tz_zone(std::env::var("TZ").ok())
}

/// The zone a `TZ` value names (`env_zone`).
fn tz_zone(tz: Option<String>) -> Result<Option<TimeZone>> {
    let Some(tz) = tz else {
        return Ok(None);
    };
    let name = tz.strip_prefix(':').unwrap_or(&tz).trim();
    if name.is_empty() {
        return Ok(None);
    }
    TimeZone::get(name)
        .or_else(|_| TimeZone::posix(name))
        .map(Some)
        .map_err(|e| anyhow::anyhow!("TZ={tz:?}: not an IANA time zone or POSIX TZ string ({e})"))
}

/// The zone people read times in: `TZ`, else UTC.
fn zone() -> TimeZone {
    env_zone().ok().flatten().unwrap_or(TimeZone::UTC)
}

/// The zone a typed wall time is read in: `flag` (`--time-zone`), else `property` (the
/// server's zone), else `TZ`, else UTC. A zone that does not exist is an error naming it.
pub fn input_zone(flag: Option<&str>, property: Option<&str>) -> Result<TimeZone> {
    input_zone_with(flag, property, env_zone()?)
}

fn input_zone_with(
    flag: Option<&str>,
    property: Option<&str>,
    tz: Option<TimeZone>,
) -> Result<TimeZone> {
    for (what, name) in [
        ("--time-zone", flag),
        ("the property's time zone", property),
    ] {
        if let Some(name) = name.filter(|n| !n.is_empty()) {
            return TimeZone::get(name).with_context(|| format!("{what} {name:?}"));
        }
    }
    Ok(tz.unwrap_or(TimeZone::UTC))
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

/// A time typed by a person, as UTC nanoseconds; a wall time is read in `zone`.
pub fn parse_in(s: &str, zone: &TimeZone) -> Result<i64> {
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
            wall.to_zoned(zone.clone())?.timestamp()
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

    fn parse(s: &str) -> Result<i64> {
        parse_in(s, &zone())
    }

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

    /// `--from "2026-11-28 15:00"` is read in the flag's zone, else the property's, else `TZ`.
    #[test]
    fn a_wall_time_is_read_in_the_flag_else_the_property_else_tz_else_utc() {
        let at = |z: &TimeZone| parse_in("2026-11-28 15:00", z).unwrap();
        let macau = tz_zone(Some("Asia/Macau".into())).unwrap().unwrap();
        let la = tz_zone(Some(":America/Los_Angeles".into()))
            .unwrap()
            .unwrap();
        let posix = tz_zone(Some("CST-8".into())).unwrap().unwrap();
        let utc_ns = at(&TimeZone::UTC);
        assert_eq!(at(&macau), utc_ns - 8 * 3_600_000_000_000);
        assert_eq!(at(&posix), at(&macau), "a POSIX TZ string is a zone too");
        assert_eq!(at(&la), utc_ns + 8 * 3_600_000_000_000, "PST in November");
        assert!(tz_zone(Some("".into())).unwrap().is_none());
        assert!(tz_zone(Some("Nowhere/Atlantis".into())).is_err());
        let pick = |f, p, tz: Option<&TimeZone>| at(&input_zone_with(f, p, tz.cloned()).unwrap());
        assert_eq!(pick(Some("Asia/Macau"), Some("UTC"), Some(&la)), at(&macau));
        assert_eq!(pick(None, Some("Asia/Macau"), Some(&la)), at(&macau));
        assert_eq!(pick(None, None, Some(&la)), at(&la));
        assert_eq!(pick(None, None, None), utc_ns);
        assert!(input_zone_with(Some("Nowhere/Atlantis"), None, None).is_err());
    }
}
