//! One table's part of a sealed day, streamed: the rounds that begin in its sealed range,
//! replayed from the replay window of the first of them (as `audit --day` does), and the
//! finance events of the range. Rows go to the sinks as each round is reported, so only
//! the rounds in play are held.

use crate::rows::{self, FinanceCtx, RoundCtx};
use crate::sink::Sink;
use crate::Error;
use analytics::{Evaluator, RoundFacts};
use ledger::days::DayRule;
use readside::rounds::{begins_round, first_round_beginning_in, locate_in_ledger};
use readside::shiftrow::{finance_shift, ShiftCache};
use schemas::seal::SealedTable;
use schemas::{Event, EventBody, RoundId, RuleSet, TableId};
use std::collections::BTreeMap;

/// The five sinks of a day, in `schema::TABLES` order.
pub struct Sinks {
    /// `schema::ROUNDS`.
    pub rounds: Sink,
    /// `schema::BET_LINES`.
    pub bet_lines: Sink,
    /// `schema::FINDINGS`.
    pub findings: Sink,
    /// `schema::FINANCE_LINES`.
    pub finance_lines: Sink,
    /// `schema::DECISIONS`.
    pub decisions: Sink,
}

/// What one table's part added.
#[derive(Debug, Default, Clone, Copy)]
pub struct TableCounts {
    /// Events read, the replay window's and those past the day's end included.
    pub events_read: u64,
}

/// The rounds in play: when each one's first event arrived, and its currency then.
type Opened = BTreeMap<RoundId, (i64, Option<String>)>;

/// Streams table `t`'s part of `day` into `out`.
pub fn stream_table(
    l: &ledger::Ledger,
    rule: &DayRule,
    day: &str,
    t: &SealedTable,
    out: &mut Sinks,
) -> Result<TableCounts, Error> {
    let mut counts = TableCounts::default();
    if t.events == 0 {
        return Ok(counts);
    }
    let (lo, hi) = (t.first_seq.0, t.last_seq.0);
    let table = &t.table;
    let first = first_round_beginning_in(l, table, lo, hi)?;
    let from = match first {
        Some(r) => locate_in_ledger(l, table, r.0)?
            .prev_last
            .map_or(1, |p| p + 1),
        None => lo,
    }
    .min(lo);
    // The replayer inside the reader; the reader keeps each round's cards and decisions.
    let mut replayer = analytics::RoundReader::new(table.clone());
    if let Some((seq, _)) = l.reader().config_at(table, from)? {
        if seq.0 < from {
            if let Some(stored) = l.reader().stored_event(table, seq.0)? {
                replayer.push(seq, &decode(table, &stored)?);
            }
        }
    }
    let mut state = State {
        day,
        rule,
        table,
        lo,
        hi,
        shifts: ShiftCache::default(),
        opened: Opened::new(),
        evaluators: BTreeMap::new(),
    };
    for stored in l.reader().events(table, from..=u64::MAX) {
        let stored = stored?;
        // Past the day, only the rounds that began in it are finished.
        if stored.seq.0 > hi && (first.is_none() || begins_round(l, table, &stored)?) {
            break;
        }
        counts.events_read += 1;
        let event = decode(table, &stored)?;
        state.note(&stored, &event, replayer.config(), out)?;
        for r in replayer.push(stored.seq, &event) {
            state.round(&r, out)?;
        }
    }
    for r in replayer.finish() {
        state.round(&r, out)?;
    }
    Ok(counts)
}

fn decode(table: &TableId, stored: &ledger::StoredEvent) -> Result<Event, Error> {
    schemas::codec::decode(&stored.bytes)
        .map(|(e, _)| e)
        .map_err(|e| Error::Decode {
            table: table.to_string(),
            seq: stored.seq.0,
            why: e.to_string(),
        })
}

/// What the stream of one table keeps between events.
struct State<'a> {
    day: &'a str,
    rule: &'a DayRule,
    table: &'a TableId,
    lo: u64,
    hi: u64,
    shifts: ShiftCache,
    opened: Opened,
    /// One strategy evaluator per rule set met (`decisions`).
    evaluators: BTreeMap<RuleSet, Evaluator>,
}

impl State<'_> {
    /// Notes an event before the replayer takes it: a round's first arrival, a finance row.
    fn note(
        &mut self,
        stored: &ledger::StoredEvent,
        event: &Event,
        config: Option<&schemas::TableConfig>,
        out: &mut Sinks,
    ) -> Result<(), Error> {
        let currency = config.map(|c| c.currency.clone());
        if let Some(r) = event.round {
            self.opened
                .entry(r)
                .or_insert((stored.received_at_ns, currency.clone()));
        }
        let in_day = (self.lo..=self.hi).contains(&stored.seq.0);
        if let (true, EventBody::Finance { entry }) = (in_day, &event.body) {
            let shift = finance_shift(self.rule, &mut self.shifts, entry, stored.occurred_at_ns)?;
            let ctx = FinanceCtx {
                day: self.day,
                shift: shift.name(),
                table: self.table.as_str(),
                currency,
                stored,
            };
            out.finance_lines.push(rows::finance_row(entry, ctx))?;
        }
        Ok(())
    }

    /// Writes a reported round's rows if it began in the day.
    fn round(&mut self, f: &RoundFacts, out: &mut Sinks) -> Result<(), Error> {
        let r = &f.report;
        let opened = self.opened.remove(&r.round);
        if !(self.lo..=self.hi).contains(&r.first_seq.0) {
            return Ok(());
        }
        // Every event replayed was noted first, from before the day's range.
        let (received_at_ns, currency) =
            opened.expect("the stream notes a round's first event before replaying it");
        let ctx = RoundCtx {
            day: self.day.to_string(),
            shift: self.shifts.shift_of(self.rule, r.opened_at_ns)?.name(),
            currency,
            received_at_ns,
        };
        let lines = match &r.settlement {
            Some(s) => rows::line_rows(r, s),
            None => Vec::new(),
        };
        out.rounds.push(rows::round_row(r, &ctx, &lines))?;
        if let Some(s) = &r.settlement {
            for l in &lines {
                out.bet_lines.push(rows::bet_line_row(r, s, &ctx, l))?;
            }
        }
        for row in rows::finding_rows(r, &ctx) {
            out.findings.push(row)?;
        }
        let verdicts = match f.rule_set {
            Some(rs) => {
                let ev = self
                    .evaluators
                    .entry(rs)
                    .or_insert_with(|| Evaluator::new(rs));
                analytics::verdict::judge(ev, f)
            }
            None => Vec::new(),
        };
        for row in rows::decision_rows(f, &verdicts, &ctx) {
            out.decisions.push(row)?;
        }
        Ok(())
    }
}
