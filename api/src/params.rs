//! Query parameters that several handlers take, parsed once: a table id, a page, and
//! the parameters every list search shares (`search_query!`).
//!
//! Invariants: a bad value is a 400 naming it, never replaced by a default; every list
//! search states its shared parameters with the same names, limits and documentation,
//! because one macro declares them.

use crate::search::{bounds, Bounds, Window};
use crate::{ReadError, LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX};
use ledger::days::DayRule;
use schemas::TableId;

/// Largest `offset` of a list: 2^53 - 1, the largest integer every JSON client reads exactly.
pub const OFFSET_MAX: u64 = (1 << 53) - 1;

/// (offset, limit) of a page; an offset past `OFFSET_MAX` or a limit outside `1..=max` is
/// refused rather than quietly changed.
pub(crate) fn page(
    offset: Option<u64>,
    limit: Option<u64>,
    max: u64,
) -> Result<(u64, u64), ReadError> {
    let offset = offset.unwrap_or(0);
    if offset > OFFSET_MAX {
        return Err(ReadError::BadRequest(format!(
            "offset {offset}: at most {OFFSET_MAX}"
        )));
    }
    let limit = limit.unwrap_or(LIST_LIMIT_DEFAULT.min(max));
    if !(1..=max).contains(&limit) {
        return Err(ReadError::BadRequest(format!(
            "limit {limit}: from 1 to {max}"
        )));
    }
    Ok((offset, limit))
}

/// A table id from a path or query, or a 400 saying why it is not one.
pub(crate) fn table_id(s: &str) -> Result<TableId, ReadError> {
    TableId::new(s).map_err(|e| ReadError::BadRequest(format!("table {s:?}: {e}")))
}

/// Declares a list search's query type: the shared parameters (`table`, the time window
/// `from_ns`, `to_ns`, `day`, `shift`, then the page `offset`, `limit`) around the list's
/// own filters. The type's `search()` hands the shared ones to `Search::parse`.
macro_rules! search_query {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($(#[$field_meta:meta])* $field:ident: $ty:ty,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
        #[serde(deny_unknown_fields)]
        #[into_params(parameter_in = Query)]
        pub struct $name {
            /// Only this table.
            #[param(pattern = "^[A-Za-z0-9_-]{1,32}$")]
            table: Option<String>,
            /// Rounds opened at or after (UTC ns, device time).
            from_ns: Option<i64>,
            /// Rounds opened before (UTC ns).
            to_ns: Option<i64>,
            /// Only rounds opened in this gaming day, `2026-11-25`, by the server's day start
            /// and time zone. Not with `from_ns`, `to_ns` or `shift`.
            day: Option<String>,
            /// Only rounds opened in this shift, `2026-11-25/2`: the day's second shift of the
            /// server's `--shifts`. Not with `from_ns`, `to_ns` or `day`.
            shift: Option<String>,
            /// Only this box: a dispute's or finding's box, a round where it played.
            #[serde(rename = "box")]
            #[param(rename = "box", minimum = 1, maximum = 9)]
            box_no: Option<u8>,
            /// Only tables of this game (rule set): CSP6, MLP3, SSP4, CS51, TCP3.
            #[param(pattern = "^(CSP6|MLP3|SSP4|CS51|TCP3)?$")]
            game: Option<String>,
            /// Only rounds dealt by this dealer (the table's last `DealerChanged` before the
            /// round); disputes and findings: of such rounds.
            #[param(pattern = "^[A-Za-z0-9_-]{0,32}$")]
            dealer: Option<String>,
            /// Only this finding code; disputes and rounds: rounds with such a finding.
            #[param(pattern = "^[A-Za-z0-9._-]{0,80}$")]
            code: Option<String>,
            /// At least this severity (info, warning, critical); disputes and rounds: rounds
            /// with such a finding.
            #[param(pattern = "^(info|warning|critical)?$")]
            severity: Option<String>,
            /// Disputes and rounds: absolute difference at least this, minor units.
            #[param(minimum = 0)]
            min_difference_minor: Option<i64>,
            /// Disputes and rounds: absolute difference at most this, minor units.
            #[param(minimum = 0)]
            max_difference_minor: Option<i64>,
            /// Disputes only: absolute amount due at least this, minor units.
            #[param(minimum = 0)]
            min_amount_minor: Option<i64>,
            /// Disputes only: absolute amount due at most this, minor units.
            #[param(minimum = 0)]
            max_amount_minor: Option<i64>,
            /// Sort key: opened_at (default), table, box, difference, amount, severity, code,
            /// findings; each list takes the ones it has.
            #[param(pattern = "^(opened_at|table|box|difference|amount|severity|code|findings)?$")]
            sort: Option<String>,
            /// Sort order: desc (default) or asc.
            #[param(pattern = "^(asc|desc)?$")]
            order: Option<String>,
            /// json (default) or csv: every matching row, not one page.
            #[param(pattern = "^(json|csv)?$")]
            format: Option<String>,
            $($(#[$field_meta])* $field: $ty,)*
            /// Items to skip (default 0).
            #[param(maximum = 9007199254740991_u64)]
            offset: Option<u64>,
            /// Items to return (default 50, at most 500).
            #[param(minimum = 1, maximum = 500)]
            limit: Option<u64>,
        }

        impl $name {
            /// The parameters every list search shares, as the request gave them.
            fn search(&self) -> $crate::params::Search<'_> {
                $crate::params::Search {
                    table: self.table.as_deref(),
                    window: $crate::search::Window {
                        from_ns: self.from_ns,
                        to_ns: self.to_ns,
                        day: self.day.as_deref(),
                        shift: self.shift.as_deref(),
                    },
                    offset: self.offset,
                    limit: self.limit,
                }
            }

            /// The narrowing, sorting and format, as the request gave them.
            fn narrow(&self) -> $crate::narrow::Given<'_> {
                $crate::narrow::Given {
                    box_no: self.box_no,
                    game: self.game.as_deref(),
                    dealer: self.dealer.as_deref(),
                    code: self.code.as_deref(),
                    severity: self.severity.as_deref(),
                    min_difference_minor: self.min_difference_minor,
                    max_difference_minor: self.max_difference_minor,
                    min_amount_minor: self.min_amount_minor,
                    max_amount_minor: self.max_amount_minor,
                    sort: self.sort.as_deref(),
                    order: self.order.as_deref(),
                    format: self.format.as_deref(),
                }
            }
        }
    };
}
pub(crate) use search_query;

/// The parameters every list search shares, as the request gave them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Search<'a> {
    /// `table`: only this table.
    pub table: Option<&'a str>,
    /// `from_ns`, `to_ns`, `day` and `shift`.
    pub window: Window<'a>,
    /// `offset`: items to skip.
    pub offset: Option<u64>,
    /// `limit`: items to return.
    pub limit: Option<u64>,
}

/// A list search's shared parameters, checked: what the read model's filters take.
#[derive(Debug, Clone)]
pub(crate) struct Listing {
    /// Only this table, when given.
    pub table: Option<TableId>,
    /// Rounds opened in `[from_ns, to_ns)`, UTC ns.
    pub bounds: Bounds,
    /// Items to skip.
    pub offset: u64,
    /// Items to return, from 1 to `LIST_LIMIT_MAX`.
    pub limit: u64,
}

impl Search<'_> {
    /// Checks the table, the window under `rule` and the page, in that order.
    pub(crate) fn parse(&self, rule: &DayRule) -> Result<Listing, ReadError> {
        let table = self.table.map(table_id).transpose()?;
        let bounds = bounds(rule, self.window)?;
        let (offset, limit) = page(self.offset, self.limit, LIST_LIMIT_MAX)?;
        assert!((1..=LIST_LIMIT_MAX).contains(&limit));
        Ok(Listing {
            table,
            bounds,
            offset,
            limit,
        })
    }
}
