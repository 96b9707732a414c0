//! What a report may cover: a span with a day removed by retention is refused, naming the
//! day and the act's signer. Its rounds and finance are gone, so a total over it would
//! show figures it does not know (docs/DESIGN.md, never state what is not known).

use crate::finance::Span;
use crate::ReadError;

/// The first and last gaming day a span covers, `YYYY-MM-DD` (they sort as dates).
fn span_days(span: &Span) -> Option<(String, String)> {
    let day = |d: &str| (d.len() == 10).then(|| d.to_string());
    match span {
        Span::Shift(s) => {
            let d = day(s.split('/').next()?)?;
            Some((d.clone(), d))
        }
        Span::Day(d) => Some((day(d)?, day(d)?)),
        Span::MonthToDate(d) => Some((format!("{}01", &day(d)?[..8]), day(d)?)),
        Span::YearToDate(d) => Some((format!("{}01-01", &day(d)?[..5]), day(d)?)),
        Span::Days { from, to } => Some((day(from)?, day(to)?)),
    }
}

/// `ReadError::Gone` when the span covers a day removed by retention. One day reads its
/// tier entry; a longer span reads the tier catalog (one entry per archived day).
pub fn refuse_removed(ledger: &ledger::Ledger, span: &Span) -> Result<(), ReadError> {
    let Some((from, to)) = span_days(span) else {
        return Ok(());
    };
    let entries = match from == to {
        true => ledger.tier().tier_entry(&from)?.into_iter().collect(),
        false => ledger.tier().tier_entries()?,
    };
    let inside = entries.iter().find(|e| {
        e.state == ledger::tier::TierState::Removed
            && from.as_str() <= e.day.as_str()
            && e.day.as_str() <= to.as_str()
    });
    match inside {
        Some(e) => Err(ReadError::Gone(format!(
            "day {} was removed by retention (act signed by admin key {}): its rounds and finance are gone, so there are no figures for it; its seal keeps its heads",
            e.day,
            e.removal.as_ref().map_or("unknown", |r| r.admin.as_str())
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_span_covers_its_days() {
        let d = |s: &str| s.to_string();
        let cases = [
            (Span::Shift(d("2026-11-25/2")), ("2026-11-25", "2026-11-25")),
            (Span::Day(d("2026-11-25")), ("2026-11-25", "2026-11-25")),
            (
                Span::MonthToDate(d("2026-11-25")),
                ("2026-11-01", "2026-11-25"),
            ),
            (
                Span::YearToDate(d("2026-11-25")),
                ("2026-01-01", "2026-11-25"),
            ),
        ];
        for (span, (from, to)) in cases {
            assert_eq!(span_days(&span), Some((d(from), d(to))), "{span:?}");
        }
        assert_eq!(span_days(&Span::Day(d("2026-11"))), None, "not a day");
    }
}
