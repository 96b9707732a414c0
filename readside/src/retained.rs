//! What a report may cover: a span with a day removed by retention is refused, naming the
//! day and the act's signer. Its rounds and finance are gone, so a total over it would
//! show figures it does not know (docs/DESIGN.md, never state what is not known).
//! So is a span the read model has not indexed to its end yet (at start, after a
//! rebuild): its total would leave events out and say nothing.

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

/// How far the model may trail the ledger in a span still open at `now`: the report is a
/// running figure, and live indexing always trails by a pass.
pub const LIVE_LAG_NS: i64 = 10_000_000_000;

/// `ReadError::Indexing` when some table's first event the model has not indexed may
/// fall before the span's end (by device or stream time): a report now would miss it.
/// In a span still open at `now_ns`, an event newer than `LIVE_LAG_NS` is live lag, not
/// missing. A table whose indexing stopped on a problem is not waited for (its status
/// says why).
pub fn refuse_unindexed(
    ledger: &ledger::Ledger,
    model: &crate::model::Model,
    span: &Span,
    now_ns: i64,
) -> Result<(), ReadError> {
    let (_, to_ns) = crate::finance::search_bounds(model.rule(), span)?;
    let open = to_ns > now_ns;
    let reader = ledger.reader();
    for head in reader.heads() {
        let status = model.status(&head.table)?;
        let (indexed, problem) = status.map_or((0, None), |s| (s.verified_through, s.problem));
        if indexed >= head.seq.0 || problem.is_some() {
            continue;
        }
        let indexing = || {
            ReadError::Indexing(format!(
                "the read model is indexing table {} (seq {indexed} of {}), whose events reach into the span: its figures are not known yet; ask again shortly",
                head.table, head.seq.0
            ))
        };
        let next = match reader.stored_event(&head.table, indexed + 1) {
            Ok(Some(next)) => next,
            Ok(None) => continue,
            // A removed day's event has no time left to judge by; the events after it
            // may reach into the span. Never a 410 for a day that was not removed.
            Err(ledger::Error::RetentionRemoved { .. }) => return Err(indexing()),
            Err(e) => return Err(e.into()),
        };
        let at_ns = next.occurred_at_ns.min(next.received_at_ns);
        let live = open && now_ns.saturating_sub(next.received_at_ns) < LIVE_LAG_NS;
        if at_ns < to_ns && !live {
            return Err(indexing());
        }
    }
    Ok(())
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
