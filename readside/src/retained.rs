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

/// A table the read model has not indexed to its chain head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Behind {
    /// The table.
    pub table: schemas::TableId,
    /// The last seq the model verified (0: none, or a rebuild waits).
    pub indexed_seq: u64,
    /// The table's chain head in the ledger.
    pub head_seq: u64,
}

/// The tables the model trails, in table order. A table whose indexing stopped on a
/// problem is not behind (its status says why). A model that has not seen the ledger's
/// last retention removal is about to be rebuilt: every table is behind. O(tables) reads.
pub fn tables_behind(
    ledger: &ledger::Ledger,
    model: &crate::model::Model,
) -> Result<Vec<Behind>, ReadError> {
    let rebuilding = match crate::index::removals_unseen(ledger, model) {
        Ok(_) => false,
        Err(ReadError::Integrity(_)) => true,
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for head in ledger.reader().heads() {
        let status = model.status(&head.table)?;
        let (indexed, problem) = status.map_or((0, None), |s| (s.verified_through, s.problem));
        let indexed_seq = if rebuilding { 0 } else { indexed };
        if indexed_seq >= head.seq.0 || (problem.is_some() && !rebuilding) {
            continue;
        }
        out.push(Behind {
            table: head.table,
            indexed_seq,
            head_seq: head.seq.0,
        });
    }
    out.sort_by(|a, b| a.table.cmp(&b.table));
    Ok(out)
}

/// `ReadError::Indexing` when some table's first event the model has not indexed may
/// fall before the span's end (by device or stream time): a report now would miss it.
/// In a span still open at `now_ns`, an event newer than `LIVE_LAG_NS` is live lag, not
/// missing.
pub fn refuse_unindexed(
    ledger: &ledger::Ledger,
    model: &crate::model::Model,
    span: &Span,
    now_ns: i64,
) -> Result<(), ReadError> {
    let (_, to_ns) = crate::finance::search_bounds(model.rule(), span)?;
    let open = to_ns > now_ns;
    let reader = ledger.reader();
    for b in tables_behind(ledger, model)? {
        let indexing = || {
            ReadError::Indexing(format!(
                "the read model is indexing table {} (seq {} of {}), whose events reach into the span: its figures are not known yet; ask again shortly",
                b.table, b.indexed_seq, b.head_seq
            ))
        };
        let next = match reader.stored_event(&b.table, b.indexed_seq + 1) {
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
