//! The time window of a list search (`/v1/rounds`, `/v1/disputes`, `/v1/findings`):
//! `from_ns`/`to_ns`, or one gaming `day`, or one `shift` (`<day>/<n>`). A day or a shift
//! becomes bounds through `readside::finance::search_bounds`, the bounds a finance report
//! of that span covers, under the server's day rule (`--day-start`, `--time-zone`,
//! `--shifts`).
//!
//! Invariants: a window is given one way only (two ways are a 400, never one chosen); the
//! OpenAPI document states exactly what the server takes (`document_patterns`), so a
//! value that matches the document's pattern is a day or shift the server knows.

use crate::ReadError;
use ledger::days::DayRule;
use readside::finance::Span;
use utoipa::openapi::path::Operation;
use utoipa::openapi::{OpenApi, RefOr, Schema};

/// The first year a search by day or shift takes.
pub const SEARCH_YEAR_MIN: u16 = 1970;
/// The last year a search by day or shift takes (UTC ns reach 2262).
pub const SEARCH_YEAR_MAX: u16 = 2199;

/// A calendar date from `SEARCH_YEAR_MIN` through `SEARCH_YEAR_MAX`, 29 February in leap
/// years only (2100 is not one). Without anchors: the shift pattern extends it.
const DATE_PATTERN: &str = concat!(
    "((19[7-9][0-9]|2[01][0-9]{2})-",
    "((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)",
    "|02-(0[1-9]|1[0-9]|2[0-8]))",
    "|(19(7[26]|8[048]|9[26])|20([02468][048]|[13579][26])|21(0[48]|[2468][048]|[13579][26]))-02-29)"
);

/// The list paths whose `day` and `shift` parameters `document_patterns` fills in.
const SEARCH_PATHS: [&str; 3] = ["/v1/rounds", "/v1/disputes", "/v1/findings"];

/// A list search's time parameters, as the request gave them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Window<'a> {
    /// Start of the search, UTC nanoseconds, inclusive (`from_ns`).
    pub from_ns: Option<i64>,
    /// End of the search, UTC nanoseconds, exclusive (`to_ns`).
    pub to_ns: Option<i64>,
    /// A gaming day, `YYYY-MM-DD` (`day`); replaces `from_ns` and `to_ns`.
    pub day: Option<&'a str>,
    /// A shift of a gaming day, `YYYY-MM-DD/N` with N from 1 (`shift`).
    pub shift: Option<&'a str>,
}

/// A list search's bounds, UTC ns: `[from_ns, to_ns)`, each open when `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Start, UTC nanoseconds, inclusive; `None` leaves it open.
    pub from_ns: Option<i64>,
    /// End, UTC nanoseconds, exclusive; `None` leaves it open.
    pub to_ns: Option<i64>,
}

/// The bounds of `w` under `rule`. A day and a shift, or either with `from_ns` or
/// `to_ns`, is refused; so is a malformed day or shift, or a shift index past the
/// day's shifts.
pub fn bounds(rule: &DayRule, w: Window<'_>) -> Result<Bounds, ReadError> {
    let bad = |m: String| ReadError::BadRequest(m);
    let span = match (w.day, w.shift) {
        (None, None) => {
            return Ok(Bounds {
                from_ns: w.from_ns,
                to_ns: w.to_ns,
            })
        }
        (Some(_), Some(_)) => return Err(bad("give day or shift, not both".into())),
        _ if w.from_ns.is_some() || w.to_ns.is_some() => {
            return Err(bad(
                "day and shift replace from_ns and to_ns: give one or the other".into(),
            ))
        }
        (Some(d), None) => {
            check_day(d)?;
            Span::Day(d.to_string())
        }
        (None, Some(s)) => {
            let shape = || bad(format!("shift {s:?}: not YYYY-MM-DD/N (N from 1 to 9)"));
            let (d, n) = s.split_once('/').ok_or_else(shape)?;
            if !(n.len() == 1 && matches!(n.as_bytes()[0], b'1'..=b'9')) {
                return Err(shape());
            }
            check_day(d)?;
            Span::Shift(s.to_string())
        }
    };
    let (from_ns, to_ns) = readside::finance::search_bounds(rule, &span)?;
    assert!(from_ns < to_ns, "a day or shift is never empty");
    Ok(Bounds {
        from_ns: Some(from_ns),
        to_ns: Some(to_ns),
    })
}

/// A day's shape and year; the rule's bounds check the date itself.
pub(crate) fn check_day(d: &str) -> Result<(), ReadError> {
    schemas::seal::check_day_name(d).map_err(|e| ReadError::BadRequest(format!("day {e}")))?;
    let year: u16 = d[..4].parse().unwrap_or(0);
    if !(SEARCH_YEAR_MIN..=SEARCH_YEAR_MAX).contains(&year) {
        return Err(ReadError::BadRequest(format!(
            "day {d}: years {SEARCH_YEAR_MIN} to {SEARCH_YEAR_MAX}"
        )));
    }
    Ok(())
}

/// Sets the pattern of each list search's `day` and `shift` parameter, and of the
/// jackpot report's `day`: the dates taken, and for a shift the indexes of the server's
/// `shifts_len` shifts.
pub fn document_patterns(doc: &mut OpenApi, shifts_len: usize) {
    assert!(
        (1..=9).contains(&shifts_len),
        "a day has 1 to 9 shifts ({shifts_len})"
    );
    let day = format!("^{DATE_PATTERN}$");
    let shift = format!("^{DATE_PATTERN}/[1-{shifts_len}]$");
    for path in SEARCH_PATHS {
        let op = doc.paths.paths.get_mut(path).and_then(|i| i.get.as_mut());
        if let Some(op) = op {
            set_pattern(op, "day", &day);
            set_pattern(op, "shift", &shift);
        }
    }
    // The jackpot report's day is checked as a search's is (`check_day`).
    let jackpots = doc.paths.paths.get_mut("/v1/reports/jackpots");
    if let Some(op) = jackpots.and_then(|i| i.get.as_mut()) {
        set_pattern(op, "day", &day);
    }
}

fn set_pattern(op: &mut Operation, name: &str, pattern: &str) {
    for p in op.parameters.iter_mut().flatten() {
        let RefOr::T(p) = p else { continue };
        if p.name != name {
            continue;
        }
        if let Some(RefOr::T(Schema::Object(o))) = p.schema.as_mut() {
            o.pattern = Some(pattern.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule() -> DayRule {
        DayRule::new("06:00", "Asia/Singapore")
            .unwrap()
            .with_shifts("06:00,14:00,22:00")
            .unwrap()
    }

    fn refused(w: Window<'_>) -> String {
        match bounds(&rule(), w) {
            Err(ReadError::BadRequest(m)) => m,
            other => panic!("{w:?}: {other:?}"),
        }
    }

    #[test]
    fn a_shift_is_its_part_of_the_day_and_a_day_is_all_its_shifts() {
        let r = rule();
        let day = r.bounds("2026-11-25").unwrap();
        let w = |day, shift| Window {
            day,
            shift,
            ..Window::default()
        };
        let d = bounds(&r, w(Some("2026-11-25"), None)).unwrap();
        assert_eq!(
            (d.from_ns, d.to_ns),
            (Some(day.starts_at_ns), Some(day.ends_at_ns))
        );
        let s1 = bounds(&r, w(None, Some("2026-11-25/1"))).unwrap();
        let s3 = bounds(&r, w(None, Some("2026-11-25/3"))).unwrap();
        assert_eq!(s1.from_ns, d.from_ns);
        assert_eq!(s3.to_ns, d.to_ns);
        // 06:00 to 14:00 local: eight hours.
        assert_eq!(
            s1.to_ns.unwrap() - s1.from_ns.unwrap(),
            8 * 3_600_000_000_000
        );
    }

    #[test]
    fn two_windows_a_bad_day_and_an_unknown_shift_are_refused() {
        let w = Window {
            from_ns: Some(1),
            day: Some("2026-11-25"),
            ..Window::default()
        };
        assert!(refused(w).contains("one or the other"));
        let w = Window {
            day: Some("2026-11-25"),
            shift: Some("2026-11-25/1"),
            ..Window::default()
        };
        assert!(refused(w).contains("not both"));
        for (day, shift, says) in [
            (Some("2026-02-30"), None, "2026-02-30"),
            (Some("1969-12-31"), None, "years 1970"),
            (Some("2026-11-5"), None, "not YYYY-MM-DD"),
            (None, Some("2026-11-25/4"), "has 3 shifts"),
            (None, Some("2026-11-25/+1"), "not YYYY-MM-DD/N"),
            (None, Some("2026-11-25"), "not YYYY-MM-DD/N"),
        ] {
            let m = refused(Window {
                day,
                shift,
                ..Window::default()
            });
            assert!(m.contains(says), "{day:?} {shift:?}: {m}");
        }
    }
}
