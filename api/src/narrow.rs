//! What the list searches (`/v1/disputes`, `/v1/findings`, `/v1/rounds`) narrow, sort and
//! export beyond the read model's indexes: box, game, code, severity, difference and
//! amount ranges, a sort key and order, and CSV of the whole result.
//!
//! Invariants: a filter a list cannot apply is a 400 naming it, never ignored; a narrowed
//! or sorted search reads at most `SCAN_ROWS_MAX` rows and refuses more, so its total and
//! order are the whole result's, never one page's; CSV money is a plain decimal number
//! and CSV times are ISO 8601 with the property's offset.

use crate::ReadError;
use ledger::days::DayRule;
use schemas::api::{DisputeRow, RoundRow};
use schemas::config::RuleSet;
use schemas::report::Severity;
use schemas::{BoxNo, RoundId, TableId};
use std::cmp::Ordering;
use std::collections::BTreeSet;

/// Most rows a narrowed, sorted or exported search reads; more is refused (narrow it).
pub const SCAN_ROWS_MAX: u64 = 200_000;

/// Which list a search is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum List {
    Disputes,
    Findings,
    Rounds,
}

/// How a list is sorted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SortKey {
    OpenedAt,
    Table,
    Box,
    Difference,
    Amount,
    Severity,
    Code,
    Findings,
}

/// The query's narrowing, sorting and format, as given.
#[derive(Debug, Default)]
pub(crate) struct Given<'a> {
    pub box_no: Option<u8>,
    pub game: Option<&'a str>,
    pub dealer: Option<&'a str>,
    pub code: Option<&'a str>,
    pub severity: Option<&'a str>,
    pub min_difference_minor: Option<i64>,
    pub max_difference_minor: Option<i64>,
    pub min_amount_minor: Option<i64>,
    pub max_amount_minor: Option<i64>,
    pub sort: Option<&'a str>,
    pub order: Option<&'a str>,
    pub format: Option<&'a str>,
}

/// The query's narrowing, sorting and format, checked for its list.
#[derive(Debug, Clone)]
pub(crate) struct Narrow {
    pub box_no: Option<BoxNo>,
    pub game: Option<RuleSet>,
    pub dealer: Option<String>,
    pub code: Option<String>,
    pub severity: Option<Severity>,
    /// Absolute difference, minor units: `[min, max]`, each open when `None`.
    pub difference_minor: (Option<i64>, Option<i64>),
    /// Absolute amount due, minor units: `[min, max]` (disputes only).
    pub amount_minor: (Option<i64>, Option<i64>),
    pub sort: SortKey,
    pub descending: bool,
    pub csv: bool,
}

/// A value given empty (`?code=`) is one not given.
fn empty(v: Option<&str>) -> Option<&str> {
    v.filter(|s| !s.is_empty())
}

fn bad(m: String) -> ReadError {
    ReadError::BadRequest(m)
}

fn enum_of<T: serde::de::DeserializeOwned>(
    what: &str,
    v: &str,
    says: &str,
) -> Result<T, ReadError> {
    serde_json::from_value(v.into()).map_err(|_| bad(format!("{what} {v:?}: {says}")))
}

/// A range's bounds, each at least 0 and the low one at most the high one.
fn range(
    name: &str,
    lo: Option<i64>,
    hi: Option<i64>,
) -> Result<(Option<i64>, Option<i64>), ReadError> {
    for v in [lo, hi].into_iter().flatten() {
        if v < 0 {
            return Err(bad(format!("{name} {v}: an absolute amount, at least 0")));
        }
    }
    if let (Some(l), Some(h)) = (lo, hi) {
        if l > h {
            return Err(bad(format!("{name}: min {l} is above max {h}")));
        }
    }
    Ok((lo, hi))
}

/// A finding code's shape: 1 to 80 of `A-Z a-z 0-9 . _ -`.
fn check_code(c: &str) -> Result<(), ReadError> {
    let ok = (1..=80).contains(&c.len())
        && c.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(bad(format!("code {c:?}: 1 to 80 of A-Z a-z 0-9 . _ -")))
    }
}

fn sort_key(list: List, s: &str) -> Result<SortKey, ReadError> {
    use SortKey::*;
    let (key, lists): (SortKey, &[List]) = match s {
        "opened_at" => (OpenedAt, &[List::Disputes, List::Findings, List::Rounds]),
        "table" => (Table, &[List::Disputes, List::Findings, List::Rounds]),
        "box" => (Box, &[List::Disputes, List::Findings]),
        "difference" => (Difference, &[List::Disputes, List::Rounds]),
        "amount" => (Amount, &[List::Disputes]),
        "severity" => (Severity, &[List::Findings, List::Rounds]),
        "code" => (Code, &[List::Findings]),
        "findings" => (Findings, &[List::Rounds]),
        _ => {
            return Err(bad(format!(
                "sort {s:?}: opened_at, table, box, difference, amount, severity, code or findings"
            )))
        }
    };
    if !lists.contains(&list) {
        return Err(bad(format!("sort {s:?}: this list has no {s}")));
    }
    Ok(key)
}

impl Given<'_> {
    /// Checks every value for `list`: a filter the list has no field for is refused.
    pub(crate) fn parse(&self, list: List) -> Result<Narrow, ReadError> {
        let box_no = match self.box_no {
            Some(b @ 1..=9) => Some(BoxNo(b)),
            Some(b) => return Err(bad(format!("box {b}: from 1 to 9"))),
            None => None,
        };
        let game = empty(self.game)
            .map(|g| enum_of("game", g, "CSP6, MLP3, SSP4, CS51 or TCP3"))
            .transpose()?;
        let dealer = empty(self.dealer)
            .map(|d| match schemas::StaffId::new(d) {
                Ok(_) => Ok(d.to_string()),
                Err(_) => Err(bad(format!("dealer {d:?}: 1 to 32 of A-Z a-z 0-9 _ -"))),
            })
            .transpose()?;
        let code = empty(self.code)
            .map(|c| check_code(c).map(|_| c.to_string()))
            .transpose()?;
        let severity = empty(self.severity)
            .map(|s| enum_of("severity", s, "info, warning or critical"))
            .transpose()?;
        let difference_minor = range(
            "difference",
            self.min_difference_minor,
            self.max_difference_minor,
        )?;
        let amount_minor = range("amount", self.min_amount_minor, self.max_amount_minor)?;
        if list == List::Findings
            && (difference_minor != (None, None) || amount_minor != (None, None))
        {
            return Err(bad(
                "a finding has no difference or amount: search /v1/disputes".into(),
            ));
        }
        if list == List::Rounds && amount_minor != (None, None) {
            return Err(bad(
                "a round has no single amount: search /v1/disputes by amount".into(),
            ));
        }
        let sort = empty(self.sort)
            .map(|s| sort_key(list, s))
            .transpose()?
            .unwrap_or(SortKey::OpenedAt);
        let descending = match empty(self.order) {
            None | Some("desc") => true,
            Some("asc") => false,
            Some(o) => return Err(bad(format!("order {o:?}: asc or desc"))),
        };
        let csv = match empty(self.format) {
            None | Some("json") => false,
            Some("csv") => true,
            Some(f) => return Err(bad(format!("format {f:?}: json or csv"))),
        };
        Ok(Narrow {
            box_no,
            game,
            dealer,
            code,
            severity,
            difference_minor,
            amount_minor,
            sort,
            descending,
            csv,
        })
    }
}

impl Narrow {
    /// Whether the read model's own page answers the search: nothing of this module's
    /// but what `list`'s indexes filter (a round's box; a finding's code and severity).
    pub(crate) fn is_plain(&self, list: List) -> bool {
        (self.box_no.is_none() || list == List::Rounds)
            && ((self.code.is_none() && self.severity.is_none()) || list == List::Findings)
            && self.game.is_none()
            && self.dealer.is_none()
            && self.difference_minor == (None, None)
            && self.amount_minor == (None, None)
            && self.sort == SortKey::OpenedAt
            && self.descending
            && !self.csv
    }

    /// Whether `v` is in the difference range (absolute).
    pub(crate) fn difference_in(&self, v: i64) -> bool {
        in_range(self.difference_minor, v.unsigned_abs())
    }

    /// Whether `v` is in the amount range (absolute).
    pub(crate) fn amount_in(&self, v: i64) -> bool {
        in_range(self.amount_minor, v.unsigned_abs())
    }
}

fn in_range((lo, hi): (Option<i64>, Option<i64>), v: u64) -> bool {
    lo.is_none_or(|l| v >= l.unsigned_abs()) && hi.is_none_or(|h| v <= h.unsigned_abs())
}

/// Refuses a result larger than `SCAN_ROWS_MAX` rows.
pub(crate) fn check_scan(total: u64) -> Result<(), ReadError> {
    if total > SCAN_ROWS_MAX {
        return Err(bad(format!(
            "the search matches {total} rows, more than {SCAN_ROWS_MAX} that filters, sorting and CSV read: narrow it by table or time"
        )));
    }
    Ok(())
}

/// The rounds named by `(table, round)` pairs, for "a round with a finding of this code".
pub(crate) type RoundSet = BTreeSet<(TableId, RoundId)>;

/// Sorts `rows` by `key` (ties: newest first, then table and round), in `n`'s order.
pub(crate) fn sort<T>(
    rows: &mut [T],
    n: &Narrow,
    key: impl Fn(&T, &T) -> Ordering,
    tie: impl Fn(&T, &T) -> Ordering,
) {
    rows.sort_by(|a, b| {
        let o = key(a, b).then_with(|| tie(a, b));
        if n.descending {
            o.reverse()
        } else {
            o
        }
    });
}

/// A dispute row's order under `key`.
pub(crate) fn dispute_order(key: SortKey, a: &DisputeRow, b: &DisputeRow) -> Ordering {
    match key {
        SortKey::Table => a.table.cmp(&b.table),
        SortKey::Box => a.box_no.cmp(&b.box_no),
        SortKey::Difference => a.difference.0.cmp(&b.difference.0),
        SortKey::Amount => a
            .expected
            .0
            .unsigned_abs()
            .cmp(&b.expected.0.unsigned_abs()),
        _ => Ordering::Equal,
    }
}

/// A round row's order under `key`.
pub(crate) fn round_order(key: SortKey, a: &RoundRow, b: &RoundRow) -> Ordering {
    match key {
        SortKey::Table => a.table.cmp(&b.table),
        SortKey::Difference => a.difference.0.cmp(&b.difference.0),
        SortKey::Severity => a.worst_severity.cmp(&b.worst_severity),
        SortKey::Findings => a.findings.cmp(&b.findings),
        _ => Ordering::Equal,
    }
}

/// Money in minor units as a plain decimal number: `-1234` is `-12.34`.
pub fn decimal(minor: i64) -> String {
    let sign = if minor < 0 { "-" } else { "" };
    let m = minor.unsigned_abs();
    format!("{sign}{}.{:02}", m / 100, m % 100)
}

/// One CSV field, quoted when it holds a comma, a quote or a line break.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The time columns of a CSV row: ISO 8601 with the property's offset, the gaming day
/// and the shift (`2026-11-25/2`). A time no day holds leaves day and shift empty.
pub(crate) fn time_cells(rule: &DayRule, zone: &jiff::tz::TimeZone, at_ns: i64) -> [String; 3] {
    let iso = jiff::Timestamp::from_nanosecond(i128::from(at_ns))
        .map(|t| {
            let z = t.to_zoned(zone.clone());
            let ms = at_ns.rem_euclid(1_000_000_000) / 1_000_000;
            format!(
                "{}.{ms:03}{}",
                z.strftime("%Y-%m-%dT%H:%M:%S"),
                z.strftime("%:z")
            )
        })
        .unwrap_or_default();
    match rule.shift_of(at_ns) {
        Ok(s) => [iso, s.day.clone(), s.name()],
        Err(_) => [iso, String::new(), String::new()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given() -> Given<'static> {
        Given::default()
    }

    fn refused(g: Given<'_>, list: List) -> String {
        match g.parse(list) {
            Err(ReadError::BadRequest(m)) => m,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_filter_a_list_cannot_apply_is_refused_not_ignored() {
        let g = Given {
            min_difference_minor: Some(5000),
            ..given()
        };
        assert!(refused(g, List::Findings).contains("no difference"));
        let g = Given {
            min_amount_minor: Some(1),
            ..given()
        };
        assert!(refused(g, List::Rounds).contains("no single amount"));
        assert!(refused(
            Given {
                sort: Some("amount"),
                ..given()
            },
            List::Rounds
        )
        .contains("no amount"));
        assert!(refused(
            Given {
                box_no: Some(0),
                ..given()
            },
            List::Disputes
        )
        .contains("from 1 to 9"));
        assert!(refused(
            Given {
                game: Some("XYZ"),
                ..given()
            },
            List::Disputes
        )
        .contains("CSP6"));
        assert!(refused(
            Given {
                code: Some("a b"),
                ..given()
            },
            List::Findings
        )
        .contains("code"));
        assert!(refused(
            Given {
                severity: Some("high"),
                ..given()
            },
            List::Rounds
        )
        .contains("critical"));
        assert!(refused(
            Given {
                order: Some("up"),
                ..given()
            },
            List::Rounds
        )
        .contains("asc"));
        assert!(refused(
            Given {
                format: Some("xls"),
                ..given()
            },
            List::Rounds
        )
        .contains("csv"));
        let g = Given {
            min_difference_minor: Some(10),
            max_difference_minor: Some(5),
            ..given()
        };
        assert!(refused(g, List::Disputes).contains("above max"));
        let g = Given {
            min_difference_minor: Some(-1),
            ..given()
        };
        assert!(refused(g, List::Disputes).contains("at least 0"));
    }

    #[test]
    fn ranges_are_absolute_and_inclusive() {
        let n = Given {
            min_difference_minor: Some(5000),
            max_difference_minor: Some(10_000),
            ..given()
        }
        .parse(List::Disputes)
        .unwrap();
        assert!(n.difference_in(-5000) && n.difference_in(10_000));
        assert!(!n.difference_in(4999) && !n.difference_in(-10_001));
        assert!(!n.is_plain(List::Disputes));
        assert!(given()
            .parse(List::Disputes)
            .unwrap()
            .is_plain(List::Disputes));
        let boxed = Given {
            box_no: Some(3),
            ..given()
        };
        assert!(boxed.parse(List::Rounds).unwrap().is_plain(List::Rounds));
        assert!(!boxed
            .parse(List::Disputes)
            .unwrap()
            .is_plain(List::Disputes));
    }

    #[test]
    fn csv_money_is_a_plain_number_and_times_carry_the_offset() {
        assert_eq!(decimal(-1_000_050), "-10000.50");
        assert_eq!(decimal(7), "0.07");
        assert_eq!(csv_field("a,\"b\""), "\"a,\"\"b\"\"\"");
        let rule = DayRule::new("06:00", "Asia/Macau").unwrap();
        let zone = jiff::tz::TimeZone::get("Asia/Macau").unwrap();
        // 2026-11-28T07:00:00.123Z is 15:00:00.123 in Macau, gaming day 2026-11-28.
        let ns = 1_795_849_200_123_000_000;
        let [iso, day, shift] = time_cells(&rule, &zone, ns);
        assert_eq!(iso, "2026-11-28T15:00:00.123+08:00");
        assert_eq!(
            (day.as_str(), shift.as_str()),
            ("2026-11-28", "2026-11-28/1")
        );
    }
}
