//! The tail that keeps the read model (`model`) current: it reads each table's new events
//! in order, verifies the chain (every hash recomputed from the stored bytes), replays
//! them, and writes per round what lists need (verdict, disputes, findings, boxes, times),
//! per table its configuration seqs and chain status, per table and shift its finance
//! (`shiftrow`). New rounds and findings go to the live feed.
//!
//! Invariants: derived only from the ledger (events are the ground truth: the model can be
//! deleted and rebuilt); one pass is one store commit, its cursors included, so a crash loses
//! or double-counts nothing; each pass reads at most `INDEX_EVENTS_PER_PASS` events;
//! blocking (the stores): call from `spawn_blocking`.
//!
//! A table's cursor holds what the tail needs to continue exactly: the seq read through,
//! the chain check's state, and the rounds not reported yet. On resume the replayer gets
//! the configuration in force, the last display of each jackpot pool, then the events
//! from the start of the oldest unreported round's replay window: a start reads about one
//! round per table, not history.
//!
//! A round is listed from its first stored event. The replayer reports a round only when
//! the next round of its table begins or the table closes (a `DeckRevealed` after
//! `RoundClosed` still belongs to it), so until then the tail keeps its own row of the
//! round: `in_progress` (nothing decided; its boxes those bet on so far, so a search by box
//! finds it) until `RoundClosed` is stored, then the report of its replay window as read so
//! far (what the round view shows, `rounds::load`), which the replayer's report replaces
//! when it comes. That early replay runs once per pass, for a closed round still unreported
//! whose table grew, so the row depends on the events stored, not on pass boundaries.
//!
//! A closed round counts at once: its early report goes into its shift's finance and its
//! table's verdict counts, and the cursor keeps it. A changed early report, and the
//! replayer's report, take that count back before counting their own: every round is
//! counted exactly once, from its newest report.

use crate::dealers::{self, DealerRow, FloorRow};
use crate::edges::EdgeBook;
use crate::holds::{self, HoldWatch, Judged};
use crate::model::{self, space, Model, TableStatus};
use crate::row::{finding_view, note_box_in_play, row_of, Digest};
use crate::shiftrow::{self, ShiftCache};
use crate::signals::{Coverage, SignalRow, Signals};
use crate::stints;
use crate::streams::StreamRow;
use crate::ReadError;
use analytics::RoundFacts;
use schemas::api::{FeedItem, FindingRow, RoundRow};
use schemas::finance::ShiftRow;
use schemas::report::{RoundReport, Verdict};
use schemas::{chain::event_hash, EventBody, Hash32, Money, RoundId, RuleSet, Seq, TableId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Most events one indexing pass reads (over all tables) before writing what it found: it
/// bounds the memory a pass holds (its reports and its batch).
pub const INDEX_EVENTS_PER_PASS: u64 = 100_000;
/// Events read from the ledger per call while indexing.
pub const INDEX_CHUNK_EVENTS: u64 = 16_384;
/// Most jackpot pools whose last display a table's cursor keeps.
pub const CURSOR_POOLS_MAX: usize = 256;
/// Most committed signals a tail keeps for `Tail::take_raised` between takes; more are
/// counted and left to the model (`GET /v1/analytics` lists them all the same).
pub const RAISED_KEPT_MAX: usize = 4096;

/// The tail's memory: one replayer and cursor per table (no history), the events it has
/// read since it started, and the decision analytics when they are on (`signals`).
#[derive(Debug, Default)]
pub struct Tail {
    tables: BTreeMap<TableId, TableTail>,
    events_read: u64,
    shifts: ShiftCache,
    signals: Option<Signals>,
    /// Signals committed since the last `take_raised`, oldest first.
    raised: Vec<SignalRow>,
    /// Signals committed and not kept: `raised` was full.
    raised_dropped: u64,
    /// Priced configurations in the edge book at the last pass (analytics on): more
    /// judge the shifts awaiting a price at once, not at their table's next round.
    priced_seen: Option<u64>,
}

impl Tail {
    /// A tail that judges every reported round's decisions under `setting`.
    pub fn with_analytics(setting: analytics::TestSetting) -> Tail {
        Tail {
            signals: Some(Signals::new(setting)),
            ..Tail::default()
        }
    }

    /// Each loaded table's newest round.
    fn newest_rounds(&self) -> BTreeMap<TableId, u64> {
        let newest = |(t, tt): (&TableId, &TableTail)| Some((t.clone(), tt.cur.newest_round?));
        self.tables.iter().filter_map(newest).collect()
    }

    /// Decisions judged since this tail started; `None` with analytics off.
    pub fn decisions_judged(&self) -> Option<u64> {
        self.signals.as_ref().map(Signals::decisions)
    }

    /// Events read from the ledger since this tail started, resumes included.
    pub fn events_read(&self) -> u64 {
        self.events_read
    }

    /// The signals committed since the last take, oldest first, and how many were not
    /// kept (`RAISED_KEPT_MAX`). The server alerts on them (`alerts.<table>.<kind>`).
    pub fn take_raised(&mut self) -> (Vec<SignalRow>, u64) {
        let dropped = std::mem::take(&mut self.raised_dropped);
        (std::mem::take(&mut self.raised), dropped)
    }

    /// Keeps `rows`, committed, for `take_raised`, up to `RAISED_KEPT_MAX`.
    fn keep_raised(&mut self, rows: Vec<SignalRow>) {
        let room = RAISED_KEPT_MAX.saturating_sub(self.raised.len());
        self.raised_dropped += rows.len().saturating_sub(room) as u64;
        self.raised.extend(rows.into_iter().take(room));
        assert!(self.raised.len() <= RAISED_KEPT_MAX);
    }
}

/// A table's replayer (inside the analytics' round reader, which keeps each round's cards
/// and decisions beside it) and cursor.
struct TableTail {
    reader: analytics::RoundReader,
    /// Whether its reported rounds' facts go to the analytics.
    judge: bool,
    cur: Cursor,
}

impl std::fmt::Debug for TableTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableTail").field("cur", &self.cur).finish()
    }
}

/// A table's cursor, stored in the model with each pass.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Cursor {
    next_seq: u64,
    prev: Hash32,
    /// Last seq verified.
    checked: u64,
    /// Still verifying (no problem found yet).
    verifying: bool,
    /// The last `TableOpened`: (seq, rule set).
    config: Option<(u64, RuleSet)>,
    /// What a round beginning now begins under.
    #[serde(default)]
    terms: Terms,
    /// Seq of the last event that belongs to a round.
    last_round_seq: Option<u64>,
    /// The newest round id seen.
    newest_round: Option<u64>,
    /// Rounds with stored events that the replayer has not reported yet.
    pending: BTreeMap<u64, Pending>,
    /// Seq of each pool's last round-less `JackpotShown` (the replayer carries it over).
    shown: BTreeMap<String, u64>,
    /// Seq of the last `DealerChanged`: a resumed round reader learns the dealer from it,
    /// so a restart attributes the window's rounds as one pass would.
    #[serde(default)]
    dealer_changed: Option<u64>,
}

impl Cursor {
    fn new() -> Cursor {
        Cursor {
            next_seq: 1,
            prev: Hash32::ZERO,
            checked: 0,
            verifying: true,
            config: None,
            terms: Terms::default(),
            last_round_seq: None,
            newest_round: None,
            pending: BTreeMap::new(),
            shown: BTreeMap::new(),
            dealer_changed: None,
        }
    }

    /// Where a resumed replayer starts: the oldest unreported round's replay window, or
    /// after the last round event (a shuffle there belongs to the next round).
    fn replay_from(&self) -> u64 {
        let after_rounds = self.last_round_seq.map_or(1, |s| s + 1);
        self.pending
            .values()
            .map(|p| p.prev_last.map_or(1, |s| s + 1))
            .min()
            .unwrap_or(after_rounds)
            .min(after_rounds)
    }
}

/// What the finance rows need of a round beside its report, as it stood when the round
/// began: the pay tables' edges and the dealer in place.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Terms {
    /// The last `TableOpened` set its own pay tables.
    custom_pay: bool,
    /// The identity of its pay tables where they reprice a line (`edges::identity`).
    #[serde(default)]
    pay_tables: Option<String>,
    /// Its rule set.
    #[serde(default)]
    rule_set: Option<RuleSet>,
    /// The dealer of the last `DealerChanged`; `None` before one or after `TableClosed`.
    dealer: Option<String>,
}

impl Terms {
    fn ctx(&self) -> shiftrow::RoundCtx<'_> {
        shiftrow::RoundCtx {
            custom_pay: self.custom_pay,
            pay_tables: self.pay_tables.as_deref(),
            rule_set: self.rule_set,
            dealer: self.dealer.as_deref(),
        }
    }
}

/// A round the replayer has not reported yet (see the module doc).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Pending {
    /// The in-progress row: first and last seq, opening time, rule set.
    row: RoundRow,
    /// The last seq of the round before it: its replay window starts after it.
    prev_last: Option<u64>,
    config_seq: Option<u64>,
    /// The terms it began under.
    #[serde(default)]
    terms: Terms,
    /// `RoundClosed` is stored.
    closed: bool,
    /// Changed since the end of the last pass.
    changed: bool,
    /// What the feed was last told about it (`None`: nothing yet).
    announced: Option<RoundRow>,
    /// The early report its shift's finance and the table's counts hold (closed rounds
    /// count at once, not when the next round begins).
    #[serde(default)]
    counted: Option<RoundReport>,
}

impl Pending {
    fn new(table: &TableId, round: u64, seq: u64, at_ns: i64, t: &Cursor) -> Pending {
        Pending {
            row: RoundRow {
                table: table.clone(),
                round: RoundId(round),
                rule_set: t.config.map(|(_, rs)| rs),
                opened_at_ns: at_ns,
                closed_at_ns: None,
                first_seq: Seq(seq),
                last_seq: Seq(seq),
                verdict: Verdict::Clean,
                boxes: Vec::new(),
                disputes: 0,
                findings: 0,
                worst_severity: None,
                difference: Money::ZERO,
                in_progress: true,
                dealer: t.terms.dealer.clone(),
            },
            prev_last: t.last_round_seq,
            config_seq: t.config.map(|(s, _)| s),
            terms: t.terms.clone(),
            closed: false,
            changed: true,
            announced: None,
            counted: None,
        }
    }
}

/// What one pass found, written to the model in one batch.
#[derive(Default)]
struct PassOut {
    /// Each report, and the terms its round began under.
    reports: Vec<Reported>,
    /// Rows of rounds the replayer has not reported yet, and whether to announce them.
    early: Vec<(Digest, bool)>,
    /// Closed rounds counted early, or counted again from a changed early report.
    recounts: Vec<Recount>,
    tables: BTreeMap<TableId, TableDelta>,
    events: u64,
    /// Statistics that crossed their thresholds in this pass.
    signals: Vec<SignalRow>,
    /// The states of the statistics this pass pushed.
    streams: Vec<StreamRow>,
    /// The ledger's count of days removed by retention, read as the pass began.
    removals: u64,
    /// The edge book priced more since the last pass: judge the shifts awaiting a price.
    priced_more: bool,
}

#[derive(Default)]
struct TableDelta {
    configs: Vec<(u64, RuleSet)>,
    /// Configurations whose pay tables reprice a line: the edge book wants them.
    pay_configs: Vec<schemas::TableConfig>,
    /// Finance of the pass's events by shift start.
    shifts: BTreeMap<i64, ShiftRow>,
    verified_through: u64,
    problem: Option<String>,
}

/// A round the replayer reported, the terms it began under, and the early report its
/// finance holds (taken back before this one is counted).
struct Reported {
    report: RoundReport,
    terms: Terms,
    counted: Option<RoundReport>,
    /// The round's cards and decisions, when the analytics judge it.
    facts: Option<RoundFacts>,
}

/// A closed round's early report to count: the one counted before is taken back first.
struct Recount {
    take: Option<RoundReport>,
    add: RoundReport,
    terms: Terms,
}

/// Whether `Writes::count` adds a round or takes it back.
#[derive(Clone, Copy)]
enum Count {
    Add,
    Take,
}

/// One indexing pass: reads what is new in the ledger (at most `INDEX_EVENTS_PER_PASS`
/// events), replays it, writes the model and returns the feed items. Returns `true` in
/// `.1` when it stopped at the limit (more to read). Blocking: the stores.
pub fn pass(
    ledger: &ledger::Ledger,
    tail: &mut Tail,
    model: &Model,
) -> Result<(Vec<FeedItem>, bool), ReadError> {
    let mut out = PassOut {
        removals: removals_unseen(ledger, model)?,
        ..PassOut::default()
    };
    let mut more = false;
    let fenced = ledger.reader().fenced();
    // A fenced table is damaged (`ledger::fence`): left as indexed, so the others go on.
    for head in ledger
        .reader()
        .heads()
        .into_iter()
        .filter(|h| !fenced.contains_key(&h.table))
    {
        if !tail.tables.contains_key(&head.table) {
            let mut t = load_table(ledger, model, &head, &mut tail.events_read)?;
            t.judge = tail.signals.is_some();
            tail.tables.insert(head.table.clone(), t);
        }
        let Some(t) = tail.tables.get_mut(&head.table) else {
            continue;
        };
        if t.cur.next_seq > head.seq.0 {
            continue;
        }
        if out.events >= INDEX_EVENTS_PER_PASS {
            more = true;
            break;
        }
        let delta = out.tables.entry(head.table.clone()).or_default();
        while t.cur.next_seq <= head.seq.0 {
            if out.events >= INDEX_EVENTS_PER_PASS {
                more = true;
                break;
            }
            let to = head.seq.0.min(t.cur.next_seq + INDEX_CHUNK_EVENTS - 1);
            let rule = (model.rule(), &mut tail.shifts);
            let chunk = Chunk {
                table: &head.table,
                to,
                delta: &mut *delta,
                reports: &mut out.reports,
                events: &mut out.events,
                removals: out.removals,
            };
            t.cur.next_seq = index_chunk(ledger, t, chunk, rule)?;
        }
        if t.cur.verifying {
            delta.verified_through = t.cur.checked;
        }
        // The window of a closed round grows with every event of its table.
        for p in t.cur.pending.values_mut().filter(|p| p.closed) {
            p.changed = true;
        }
        early_rows(ledger, &mut t.cur, (&mut out.early, &mut out.recounts));
    }
    tail.events_read += out.events;
    note_pricing(model, tail, &mut out)?;
    judge_signals(model, tail, &mut out)?;
    let mut raised = out.signals.clone();
    let (feed, write_signals) = commit(model, tail, out)?;
    raised.extend(write_signals);
    tail.keep_raised(raised);
    Ok((feed, more))
}

/// The ledger's count of removed days, when the model has seen every removal. A day
/// removed since the model last looked is an integrity error: the model may hold its
/// rounds, finance and signals, so it is rebuilt (the caller clears it), never served.
pub fn removals_unseen(ledger: &ledger::Ledger, model: &Model) -> Result<u64, ReadError> {
    let removals = ledger.tier().removals()?;
    match model.removals_seen()? {
        Some(seen) if seen != removals => Err(ReadError::Integrity(format!(
            "read model: built when {seen} days were removed by retention; the ledger has {removals}"
        ))),
        _ => Ok(removals),
    }
}

/// Whether the edge book priced more since the last pass, when analytics are on: the
/// commit then judges the shifts awaiting a price (`Writes::judge_priced`).
fn note_pricing(model: &Model, tail: &mut Tail, out: &mut PassOut) -> Result<(), ReadError> {
    if tail.signals.is_some() {
        let priced = holds::priced_count(&EdgeBook::load(model)?);
        out.priced_more = tail.priced_seen.replace(priced) != Some(priced);
    }
    Ok(())
}

/// Judges the pass's rounds for decision signals, when analytics are on: the statistics
/// resumed from the model first, the states they changed handed to the commit.
fn judge_signals(model: &Model, tail: &mut Tail, out: &mut PassOut) -> Result<(), ReadError> {
    let Some(signals) = tail.signals.as_mut() else {
        return Ok(());
    };
    if !signals.resumed() {
        signals.resume(model.stream_states(analytics::monitor::STREAMS_MAX)?);
    }
    for f in out.reports.iter_mut().filter_map(|r| r.facts.take()) {
        out.signals.extend(signals.judge(&f));
    }
    out.streams = signals.take_changed();
    Ok(())
}

/// One chunk of a table's events for `index_chunk`: through seq `to`.
struct Chunk<'a> {
    table: &'a TableId,
    to: u64,
    delta: &'a mut TableDelta,
    reports: &'a mut Vec<Reported>,
    /// Events read in the pass so far.
    events: &'a mut u64,
    /// The ledger's count of removed days as the pass began.
    removals: u64,
}

/// Indexes the table's events from its cursor through `chunk.to`; the seq to read next.
fn index_chunk(
    ledger: &ledger::Ledger,
    t: &mut TableTail,
    chunk: Chunk,
    (rule, shifts): (&ledger::days::DayRule, &mut ShiftCache),
) -> Result<u64, ReadError> {
    let Chunk {
        table,
        to,
        delta,
        reports,
        events,
        removals,
    } = chunk;
    let mut fed_through = t.cur.next_seq - 1;
    for stored in ledger.reader().events(table, t.cur.next_seq..=to) {
        let stored = match stored {
            // A day removed by retention: go on after it, from its sealed head, with the
            // events its removal kept.
            Err(ledger::Error::RetentionRemoved { day, .. }) => {
                let next_seq = skip_removed(ledger, table, &mut t.cur, &day)?;
                let kept = ledger.tier().kept_events(&day, table)?;
                let verifying = std::mem::replace(&mut t.cur.verifying, false);
                for k in kept.iter().filter(|k| k.seq.0 > fed_through) {
                    index_event(table, t, delta, k, reports, (rule, &mut *shifts));
                }
                t.cur.verifying = verifying;
                return Ok(next_seq);
            }
            // A record that does not read fences its table; this pass is not kept, and
            // the next one leaves the table out.
            s => s.map_err(|e| read_failed(ledger, table, e, removals))?,
        };
        *events += 1;
        fed_through = stored.seq.0;
        index_event(table, t, delta, &stored, reports, (rule, &mut *shifts));
    }
    Ok(to + 1)
}

/// A read of `table` failed: a removal by retention since the pass began deleted what it
/// read, so the model is rebuilt (an integrity error); else the table is fenced.
fn read_failed(
    ledger: &ledger::Ledger,
    table: &TableId,
    e: ledger::Error,
    removals: u64,
) -> ReadError {
    if ledger.tier().removals().is_ok_and(|n| n != removals) {
        return ReadError::Integrity(format!(
            "read model: a day was removed by retention while table {table} was read ({e})"
        ));
    }
    ledger.writer().fence_after_read_error(table, e).into()
}

/// A table's tail: resumed from its cursor in the model, or from seq 1. A cursor beyond the
/// chain's head, or whose last verified hash is not the chain's, is of another ledger or
/// an older one: an integrity error. Blocking: the stores.
fn load_table(
    ledger: &ledger::Ledger,
    model: &Model,
    head: &schemas::ChainHead,
    events_read: &mut u64,
) -> Result<TableTail, ReadError> {
    let table = &head.table;
    let key = model::table_key(space::CURSOR, table);
    let mut reader = analytics::RoundReader::new(table.clone());
    let Some(cur) = model.get::<Cursor>(&key)? else {
        return Ok(TableTail {
            reader,
            judge: false,
            cur: Cursor::new(),
        });
    };
    let through = cur.next_seq.saturating_sub(1);
    let hash_at_checked = match cur.checked {
        0 => None,
        s => match ledger.reader().stored_event(table, s) {
            // Removed by retention: the day's seal gives its last hash.
            Err(ledger::Error::RetentionRemoved { day, .. }) => ledger
                .reader()
                .sealed_head_at(&day, table)?
                .filter(|(last, _)| *last == s)
                .map(|(_, h)| h),
            other => other?.map(|e| e.hash),
        },
    };
    if through > head.seq.0 || (cur.checked > 0 && hash_at_checked != Some(cur.prev)) {
        return Err(ReadError::Integrity(format!(
            "read model: table {table} read through seq {through}, verified to seq {}, which this ledger does not hold (head seq {})",
            cur.checked, head.seq.0
        )));
    }
    let from = cur.replay_from();
    // Round-less state the replayer carries from before the window.
    let mut before: Vec<u64> = cur.shown.values().copied().filter(|s| *s < from).collect();
    if let Some((s, _)) = cur.config.filter(|(s, _)| *s < from) {
        before.push(s);
    }
    before.extend(cur.dealer_changed.filter(|s| *s < from));
    before.sort_unstable();
    let mut feed = |stored: ledger::StoredEvent| {
        *events_read += 1;
        if let Ok((e, _)) = schemas::codec::decode(&stored.bytes) {
            // Rounds before the window were reported in earlier passes.
            let _ = reader.push(stored.seq, &e);
        }
    };
    // What retention removed is not fed: the replayer goes on without it.
    let removed = |e: &ledger::Error| matches!(e, ledger::Error::RetentionRemoved { .. });
    for s in before {
        let stored = match ledger.reader().stored_event(table, s) {
            Err(e) if removed(&e) => continue,
            other => other?,
        };
        let stored = stored.ok_or_else(|| {
            ReadError::Integrity(format!("table {table}: cursor names seq {s}, not stored"))
        })?;
        feed(stored);
    }
    feed_window(ledger, table, from, cur.next_seq, &mut feed)?;
    Ok(TableTail {
        reader,
        judge: false,
        cur,
    })
}

/// Feeds the stored events of seqs `from..to` in order, passing over days removed by
/// retention.
fn feed_window(
    ledger: &ledger::Ledger,
    table: &TableId,
    from: u64,
    to: u64,
    feed: &mut dyn FnMut(ledger::StoredEvent),
) -> Result<(), ReadError> {
    let mut at = from;
    while at < to {
        let mut resume = None;
        for stored in ledger.reader().events(table, at..=to - 1) {
            match stored {
                Err(ledger::Error::RetentionRemoved { day, .. }) => {
                    resume = Some(day);
                    break;
                }
                other => feed(other?),
            }
        }
        let Some(day) = resume else { break };
        match ledger.reader().sealed_head_at(&day, table)? {
            Some((last, _)) if last >= at => at = last + 1,
            _ => {
                return Err(ReadError::Integrity(format!(
                    "table {table}: removed day {day} does not cover seq {at}"
                )))
            }
        }
    }
    Ok(())
}

/// Brings the model up to the ledger's heads from its cursors, judging decisions as its
/// passes did (`analytics_of`). Returns the events read. Blocking: the stores.
pub fn catch_up(ledger: &ledger::Ledger, model: &Model) -> Result<u64, ReadError> {
    let analytics = analytics_of(model)?;
    catch_up_as(ledger, model, analytics)
}

/// Rebuilds the model from seq 1 of every table (after `Model::clear`, or a new model),
/// or brings it to the heads, with the decision analytics under `analytics` (`None`: off).
pub fn catch_up_as(
    ledger: &ledger::Ledger,
    model: &Model,
    analytics: Option<analytics::TestSetting>,
) -> Result<u64, ReadError> {
    let mut tail = analytics.map_or_else(Tail::default, Tail::with_analytics);
    catch_up_with(ledger, model, &mut tail)
}

/// The analytics setting the model's passes judged under; `None` when its first pass had
/// them off, or before any pass. Kept in thousandths of a false alarm per 1,000 rounds.
pub fn analytics_of(model: &Model) -> Result<Option<analytics::TestSetting>, ReadError> {
    let milli = model
        .coverage()?
        .map(|c| c.false_alarms_milli_per_1000_rounds);
    Ok(milli.filter(|m| *m > 0).map(|m| analytics::TestSetting {
        false_alarms_per_1000_rounds: m as f64 / 1000.0,
        ..analytics::TestSetting::default()
    }))
}

/// `catch_up` with a given tail (analytics on or off). Returns the events it read.
pub fn catch_up_with(
    ledger: &ledger::Ledger,
    model: &Model,
    tail: &mut Tail,
) -> Result<u64, ReadError> {
    let before = tail.events_read;
    while pass(ledger, tail, model)?.1 {}
    model.flush()?;
    Ok(tail.events_read - before)
}

/// The rows of the rounds the replayer has not reported yet that changed in this pass: in
/// progress, or (closed) the report of the window read so far. Blocking: the stores.
fn early_rows(
    ledger: &ledger::Ledger,
    t: &mut Cursor,
    (out, recounts): (&mut Vec<(Digest, bool)>, &mut Vec<Recount>),
) {
    let read_through = t.next_seq.saturating_sub(1);
    for p in t.pending.values_mut().filter(|p| p.changed) {
        p.changed = false;
        let report = if p.closed {
            let located = crate::rounds::Located {
                first_seq: p.row.first_seq.0,
                last_seq: p.row.last_seq.0,
                prev_last: p.prev_last,
                next_first: Some(read_through + 1),
                config_seq: p.config_seq,
            };
            match crate::rounds::load(ledger, &p.row.table, p.row.round.0, located) {
                Ok(l) => Some(l.report),
                Err(e) => {
                    // Listed as in progress until the replayer reports it.
                    tracing::warn!(
                        "table {} round {}: early replay: {e}",
                        p.row.table,
                        p.row.round.0
                    );
                    None
                }
            }
        } else {
            None
        };
        if let Some(r) = report.as_ref().filter(|r| p.counted.as_ref() != Some(*r)) {
            recounts.push(Recount {
                take: p.counted.replace(r.clone()),
                add: r.clone(),
                terms: p.terms.clone(),
            });
        }
        let digest = match report {
            Some(r) => digest_of(r, p.terms.dealer.as_deref()),
            None => Digest {
                row: p.row.clone(),
                disputes: Vec::new(),
                findings: Vec::new(),
            },
        };
        // Announce a round when it appears and when its report changes, not every event.
        let announce = match &p.announced {
            None => true,
            Some(a) => !digest.row.in_progress && !same_outcome(a, &digest.row),
        };
        if announce {
            p.announced = Some(digest.row.clone());
        }
        out.push((digest, announce));
    }
}

fn digest_of(r: RoundReport, dealer: Option<&str>) -> Digest {
    Digest {
        row: row_of(&r, dealer),
        disputes: r.disputes,
        findings: r.findings,
    }
}

/// Whether two rows of one round say the same (its events may have grown).
fn same_outcome(a: &RoundRow, b: &RoundRow) -> bool {
    a.in_progress == b.in_progress
        && a.verdict == b.verdict
        && a.closed_at_ns == b.closed_at_ns
        && a.disputes == b.disputes
        && a.findings == b.findings
        && a.difference == b.difference
}

fn index_event(
    table: &TableId,
    t: &mut TableTail,
    delta: &mut TableDelta,
    stored: &ledger::StoredEvent,
    reports: &mut Vec<Reported>,
    (rule, shifts): (&ledger::days::DayRule, &mut ShiftCache),
) {
    let seq = stored.seq.0;
    let c = &mut t.cur;
    let event = match schemas::codec::decode(&stored.bytes) {
        Ok((e, _)) => e,
        Err(e) => {
            if c.verifying {
                c.verifying = false;
                delta.verified_through = seq - 1;
                delta.problem = Some(format!("seq {seq}: stored bytes do not decode: {e}"));
            }
            return;
        }
    };
    if c.verifying {
        check_link(table, c, delta, stored, &event);
    }
    note_table_event(table, c, delta, seq, &event, (rule, shifts));
    track_pending(table, c, seq, &event);
    for f in t.reader.push(Seq(seq), &event) {
        let (terms, counted) = match t.cur.pending.remove(&f.report.round.0) {
            Some(p) => (p.terms, p.counted),
            None => (t.cur.terms.clone(), None),
        };
        let (report, facts) = match t.judge {
            true => (f.report.clone(), Some(f)),
            false => (f.report, None),
        };
        reports.push(Reported {
            report,
            terms,
            counted,
            facts,
        });
    }
}

/// What an event outside the rounds changes in the table's cursor and the pass's delta:
/// configuration, dealer, finance rows and jackpot displays.
fn note_table_event(
    table: &TableId,
    c: &mut Cursor,
    delta: &mut TableDelta,
    seq: u64,
    event: &schemas::Event,
    (rule, shifts): (&ledger::days::DayRule, &mut ShiftCache),
) {
    match &event.body {
        EventBody::TableOpened { config } => {
            delta.configs.push((seq, config.rule_set));
            c.config = Some((seq, config.rule_set));
            c.terms.custom_pay = !config.pay_tables.is_empty();
            c.terms.pay_tables = crate::edges::identity(config);
            c.terms.rule_set = Some(config.rule_set);
            if c.terms.pay_tables.is_some() {
                delta.pay_configs.push(config.clone());
            }
        }
        EventBody::DealerChanged { dealer } => {
            c.terms.dealer = Some(dealer.to_string());
            c.dealer_changed = Some(seq);
        }
        EventBody::TableClosed => c.terms.dealer = None,
        EventBody::Finance { entry } => {
            let at_ns = event.occurred_at_ns;
            match shiftrow::finance_shift(rule, shifts, entry, at_ns) {
                Ok(s) => {
                    let row = delta
                        .shifts
                        .entry(s.starts_at_ns)
                        .or_insert_with(|| shiftrow::empty_row(table, &s));
                    shiftrow::add_finance(row, entry, Seq(seq), at_ns);
                    row.rule_set = row.rule_set.or(c.config.map(|(_, rs)| rs));
                }
                // Only an instant beyond jiff's years fails: the event stays in the ledger.
                Err(e) => tracing::warn!("table {table} seq {seq}: no shift: {e}"),
            }
        }
        EventBody::JackpotShown { pool, .. } if event.round.is_none() => {
            let known = c.shown.contains_key(pool.as_str());
            if known || c.shown.len() < CURSOR_POOLS_MAX {
                c.shown.insert(pool.as_str().to_string(), seq);
            } else {
                tracing::warn!("table {table}: more than {CURSOR_POOLS_MAX} jackpot pools");
            }
        }
        _ => {}
    }
}

/// Passes over a table's records of a day removed by retention: the chain check goes on
/// from the head the day's seal proves. Rounds it cut are left with their stored part.
/// Returns the seq to read next.
fn skip_removed(
    ledger: &ledger::Ledger,
    table: &TableId,
    c: &mut Cursor,
    day: &str,
) -> Result<u64, ReadError> {
    let (last, head) = ledger.reader().sealed_head_at(day, table)?.ok_or_else(|| {
        ReadError::Integrity(format!(
            "table {table}: removed day {day} has no sealed range"
        ))
    })?;
    if last < c.next_seq {
        return Err(ReadError::Integrity(format!(
            "table {table}: a record of removed day {day} lies past its sealed range"
        )));
    }
    if c.verifying && c.checked < last {
        c.checked = last;
        c.prev = head;
    }
    Ok(c.next_seq.max(last + 1))
}

/// Checks one event's link: seq, table, prev and stored hash against the recomputed one.
fn check_link(
    table: &TableId,
    c: &mut Cursor,
    delta: &mut TableDelta,
    stored: &ledger::StoredEvent,
    event: &schemas::Event,
) {
    let seq = stored.seq.0;
    let computed = event_hash(&c.prev, &stored.bytes);
    let problem = if seq != c.checked + 1 {
        Some(format!("expected seq {}, found seq {seq}", c.checked + 1))
    } else if event.seq.0 != seq || event.table != *table {
        Some(format!(
            "seq {seq}: the bytes are table {} seq {}",
            event.table, event.seq.0
        ))
    } else if event.prev != c.prev {
        Some(format!(
            "seq {seq}: prev {} does not match the previous hash {}",
            event.prev, c.prev
        ))
    } else if computed != stored.hash {
        Some(format!(
            "seq {seq}: stored hash {} differs from the recomputed {computed}",
            stored.hash
        ))
    } else {
        None
    };
    match problem {
        Some(p) => {
            c.verifying = false;
            delta.verified_through = seq - 1;
            delta.problem = Some(p);
        }
        None => {
            c.prev = computed;
            c.checked = seq;
        }
    }
}

/// Keeps the rows of rounds the replayer has not reported: a round newer than any seen
/// starts one; its events extend it; `RoundClosed` closes it; a round-less deck reveal
/// after it changes its replay.
fn track_pending(table: &TableId, t: &mut Cursor, seq: u64, event: &schemas::Event) {
    match event.round {
        Some(RoundId(r)) => {
            if t.newest_round.is_none_or(|n| r > n) {
                t.newest_round = Some(r);
                let p = Pending::new(table, r, seq, event.occurred_at_ns, t);
                t.pending.insert(r, p);
            }
            if let Some(p) = t.pending.get_mut(&r) {
                p.row.last_seq = Seq(seq);
                p.changed = true;
                note_box_in_play(&mut p.row.boxes, &event.body);
                if matches!(event.body, EventBody::RoundClosed) && !p.closed {
                    p.closed = true;
                    p.row.closed_at_ns = Some(event.occurred_at_ns);
                }
            }
            t.last_round_seq = Some(seq);
        }
        None => {
            if matches!(event.body, EventBody::DeckRevealed { .. }) {
                if let Some(p) = t.pending.values_mut().next_back() {
                    p.changed = true;
                }
            }
        }
    }
}

/// A pass's writes, read through before they reach the store: the model as it will be.
struct Writes<'a> {
    model: &'a Model,
    digests: BTreeMap<(TableId, u64), Digest>,
    statuses: BTreeMap<TableId, TableStatus>,
    /// Shift rows by (shift start, table), as the model will hold them.
    shifts: BTreeMap<(i64, TableId), ShiftRow>,
    shift_cache: &'a mut ShiftCache,
    configs: Vec<(TableId, u64)>,
    signals: Vec<SignalRow>,
    /// The states of the statistics the pass pushed.
    streams: Vec<StreamRow>,
    /// Dealer quality rows by dealer, as the model will hold them.
    dealers: BTreeMap<String, DealerRow>,
    /// The floor's counts over the dealers' rounds, once read; and whether dealers are
    /// judged (`dealer_errors`, with the decision analytics on).
    floor: (Option<FloorRow>, bool),
    /// Hold watches by table, as the model will hold them (`holds`).
    holds: BTreeMap<TableId, HoldWatch>,
    /// The edge book, read once a pass judges a shift.
    book: Option<EdgeBook>,
}

impl Writes<'_> {
    fn digest(&self, table: &TableId, round: u64) -> Result<Option<Digest>, ReadError> {
        match self.digests.get(&(table.clone(), round)) {
            Some(d) => Ok(Some(d.clone())),
            None => Ok(self.model.digest(table, round)?),
        }
    }

    fn status(&mut self, table: &TableId) -> Result<&mut TableStatus, ReadError> {
        if !self.statuses.contains_key(table) {
            let s = self.model.status(table)?.unwrap_or_default();
            self.statuses.insert(table.clone(), s);
        }
        Ok(self.statuses.entry(table.clone()).or_default())
    }

    /// The row of `table`'s shift starting at `starts_at_ns`: this pass's, the model's,
    /// or `new()`.
    fn shift(
        &mut self,
        table: &TableId,
        starts_at_ns: i64,
        new: impl FnOnce() -> ShiftRow,
    ) -> Result<&mut ShiftRow, ReadError> {
        let k = (starts_at_ns, table.clone());
        if !self.shifts.contains_key(&k) {
            let key = model::shift_key(starts_at_ns, Some(table));
            let row = self.model.get(&key)?.unwrap_or_else(new);
            self.shifts.insert(k.clone(), row);
        }
        Ok(self.shifts.entry(k).or_default())
    }

    fn table_delta(&mut self, table: &TableId, d: TableDelta) -> Result<(), ReadError> {
        for part in d.shifts.into_values() {
            let empty = || ShiftRow {
                table: part.table.clone(),
                shift: part.shift.clone(),
                starts_at_ns: part.starts_at_ns,
                ends_at_ns: part.ends_at_ns,
                ..ShiftRow::default()
            };
            let row = self.shift(table, part.starts_at_ns, empty)?;
            shiftrow::merge(row, &part);
        }
        let s = self.status(table)?;
        if let Some((_, rs)) = d.configs.last() {
            s.rule_set = Some(*rs);
        }
        if s.problem.is_none() {
            s.verified_through = d.verified_through;
            s.problem = d.problem;
        }
        for (seq, _) in d.configs {
            self.configs.push((table.clone(), seq));
        }
        Ok(())
    }

    /// A round the replayer reported: counted once (its early count, if any, taken back
    /// first), announced unless its early report already said the same.
    fn report(&mut self, rep: Reported, feed: &mut Vec<FeedItem>) -> Result<(), ReadError> {
        let Reported {
            report: r,
            terms,
            counted,
            ..
        } = rep;
        if let Some(early) = &counted {
            assert_eq!(early.round, r.round, "an early count is of the same round");
            self.count(early, &terms, Count::Take)?;
        }
        self.count(&r, &terms, Count::Add)?;
        let digest = digest_of(r, terms.dealer.as_deref());
        let old = self.digest(&digest.row.table, digest.row.round.0)?;
        let announced = old.is_some_and(|old| {
            !old.row.in_progress
                && same_outcome(&old.row, &digest.row)
                && old.findings == digest.findings
        });
        if !announced {
            announce(&digest, feed);
        }
        self.put(digest)
    }

    /// Adds a round to (or takes it from) its shift's finance and its table's verdict
    /// counts.
    fn count(&mut self, r: &RoundReport, terms: &Terms, how: Count) -> Result<(), ReadError> {
        match self.shift_cache.shift_of(self.model.rule(), r.opened_at_ns) {
            Ok(b) => {
                let row = self.shift(&r.table, b.starts_at_ns, || {
                    shiftrow::empty_row(&r.table, &b)
                })?;
                match how {
                    Count::Add => shiftrow::add_round(row, r, &terms.ctx()),
                    Count::Take => shiftrow::take_round(row, r, &terms.ctx()),
                }
            }
            Err(e) => tracing::warn!("table {} round {}: no shift: {e}", r.table, r.round.0),
        }
        let s = self.status(&r.table)?;
        let n = match r.verdict {
            Verdict::Disputed => &mut s.disputed,
            Verdict::Irregular => &mut s.irregular,
            Verdict::Void => &mut s.void,
            Verdict::Clean => return Ok(()),
        };
        match how {
            Count::Add => *n += 1,
            Count::Take => {
                assert!(*n > 0, "a round taken back was counted");
                *n -= 1;
            }
        }
        Ok(())
    }

    /// Writes a round's row; its dealer's counters take back the old row's part first.
    /// With dealers judged, a counted round may raise its dealer's `dealer_errors`.
    fn put(&mut self, d: Digest) -> Result<(), ReadError> {
        let old = self.digest(&d.row.table, d.row.round.0)?;
        if stints::stint_moves(old.as_ref(), &d) {
            self.restint(old.as_ref(), &d)?;
        }
        if let Some(old) = &old {
            if let Some(name) = dealers::counted(old) {
                dealers::take(self.dealer(name)?, old);
                dealers::floor_take(self.floor()?, old);
            }
        }
        if old.is_none() && self.floor.1 {
            self.judge_holds(&d)?;
        }
        if let Some(name) = dealers::counted(&d) {
            dealers::add(self.dealer(name)?, &d);
            let floor = *self.floor()?;
            let floor = FloorRow {
                rounds: floor.rounds + 1,
                disputed_rounds: floor.disputed_rounds + u64::from(!d.disputes.is_empty()),
            };
            dealers::floor_add(self.floor()?, &d);
            assert_eq!(*self.floor()?, floor, "the floor counts the round once");
            if self.floor.1 {
                let judge = self.judge_dealer(name, &floor, &d)?;
                self.signals.extend(judge);
            }
        }
        self.digests.insert((d.row.table.clone(), d.row.round.0), d);
        Ok(())
    }

    /// Writing `d` over `old` moves the stint parts of `d` and the table's next round.
    fn restint(&mut self, old: Option<&Digest>, d: &Digest) -> Result<(), ReadError> {
        let (table, round) = (&d.row.table, d.row.round.0);
        let before = match round.checked_sub(1) {
            Some(r) => self.digest(table, r)?,
            None => None,
        };
        let after = match round.checked_add(1) {
            Some(r) => self.digest(table, r)?,
            None => None,
        };
        let r = stints::restint(old, d, before.as_ref(), after.as_ref());
        for c in &r.take {
            stints::stint_take(self.dealer(&c.dealer)?, c);
        }
        for c in &r.add {
            stints::stint_add(self.dealer(&c.dealer)?, c);
        }
        Ok(())
    }

    /// The dealer's `dealer_errors` signal, if this round makes their count cross.
    fn judge_dealer(
        &mut self,
        name: &str,
        floor: &FloorRow,
        d: &Digest,
    ) -> Result<Option<SignalRow>, ReadError> {
        let row = self.dealer(name)?;
        Ok(dealers::judge(row, floor, d))
    }

    /// A new round of its table: judges the shift it closes for `hold_outside`, and the
    /// table's shifts awaiting a price once the edge book priced more (`holds`).
    fn judge_holds(&mut self, d: &Digest) -> Result<(), ReadError> {
        let table = &d.row.table;
        let Ok(shift) = self
            .shift_cache
            .shift_of(self.model.rule(), d.row.opened_at_ns)
        else {
            return Ok(()); // `count` warns of a round in no shift
        };
        if !self.holds.contains_key(table) {
            let k = model::table_key(space::HOLD_WATCH, table);
            let w: HoldWatch = self.model.get(&k)?.unwrap_or_default();
            self.holds.insert(table.clone(), w);
        }
        let mut watch = self.holds.get(table).cloned().unwrap_or_default();
        let todo: Vec<i64> = holds::advance(&mut watch, shift.starts_at_ns)
            .into_iter()
            .collect();
        if todo.is_empty() && watch.awaiting.is_empty() {
            self.holds.insert(table.clone(), watch);
            return Ok(());
        }
        self.judge_watch(table, watch, todo, d)
    }

    /// Judges the shifts of `todo`, and those awaiting a price when the edge book priced
    /// more since they began waiting, at round `d` of `table`. Keeps the watch.
    fn judge_watch(
        &mut self,
        table: &TableId,
        mut watch: HoldWatch,
        mut todo: Vec<i64>,
        d: &Digest,
    ) -> Result<(), ReadError> {
        let book = match self.book.take() {
            Some(b) => b,
            None => EdgeBook::load(self.model)?,
        };
        let priced = holds::priced_count(&book);
        if !watch.awaiting.is_empty() && priced != watch.priced_seen {
            todo.splice(0..0, std::mem::take(&mut watch.awaiting));
        }
        for start in todo {
            let row = self.shift_row(start, table)?;
            match row.map(|r| holds::judge(&r, &book, d)) {
                Some(Judged::Outside(s)) => self.signals.push(*s),
                Some(Judged::Pending) => {
                    if let Some(gone) = holds::await_price(&mut watch, start, priced) {
                        let row = self.shift_row(gone, table)?;
                        holds::give_up(&mut watch, table.as_str(), gone, row.as_ref());
                    }
                }
                Some(Judged::Inside) | None => {}
            }
        }
        self.book = Some(book);
        self.holds.insert(table.clone(), watch);
        Ok(())
    }

    /// The edge book priced more: judges every table's shifts awaiting a price at its
    /// newest round (`newest`), so a quiet table's shift need not wait for its next
    /// round. A table this pass judged already is left as it is. O(tables) watch reads.
    fn judge_priced(&mut self, newest: &BTreeMap<TableId, u64>) -> Result<(), ReadError> {
        let mut waiting = Vec::new();
        for kv in self.model.db.scan_prefix(&[space::HOLD_WATCH]).fwd() {
            let (k, v) = kv.map_err(model::ModelError::from)?;
            let watch: HoldWatch = model::decode(&k, &v)?;
            let table = crate::keystr::first_str(&k).and_then(|t| TableId::new(t).ok());
            if let Some(t) = table.filter(|_| !watch.awaiting.is_empty()) {
                waiting.push((t, watch));
            }
        }
        for (table, watch) in waiting {
            let round = newest.get(&table).copied();
            if self.holds.contains_key(&table) {
                continue;
            }
            let Some(d) = round.map(|r| self.digest(&table, r)).transpose()?.flatten() else {
                continue;
            };
            self.judge_watch(&table, watch, Vec::new(), &d)?;
        }
        Ok(())
    }

    /// A table shift's row: this pass's, or the model's.
    fn shift_row(&self, start: i64, table: &TableId) -> Result<Option<ShiftRow>, ReadError> {
        match self.shifts.get(&(start, table.clone())) {
            Some(r) => Ok(Some(r.clone())),
            None => Ok(self.model.get(&model::shift_key(start, Some(table)))?),
        }
    }

    /// The floor's counts: this pass's, or the model's.
    fn floor(&mut self) -> Result<&mut FloorRow, ReadError> {
        if self.floor.0.is_none() {
            self.floor.0 = Some(self.model.dealer_floor()?);
        }
        Ok(self.floor.0.get_or_insert_with(FloorRow::default))
    }

    /// A dealer's quality row: this pass's, the model's, or a new one.
    fn dealer(&mut self, name: &str) -> Result<&mut DealerRow, ReadError> {
        if !self.dealers.contains_key(name) {
            let row = self.model.dealer(name)?.unwrap_or_else(|| DealerRow {
                dealer: name.to_owned(),
                ..DealerRow::default()
            });
            self.dealers.insert(name.to_owned(), row);
        }
        Ok(self.dealers.entry(name.to_owned()).or_default())
    }

    /// Puts the pass's round rows with their index keys, an old row's keys removed first;
    /// a new round counts in `meta` and its table's status.
    fn put_rounds(
        &mut self,
        b: &mut crate::kv::Batch,
        meta: &mut model::Meta,
    ) -> Result<(), ReadError> {
        for ((t, r), d) in std::mem::take(&mut self.digests) {
            match self.model.digest(&t, r)? {
                Some(old) => {
                    for (k, _) in model::index_entries(&old) {
                        b.remove(k);
                    }
                }
                None => {
                    meta.rounds += 1;
                    self.status(&t)?.rounds += 1;
                }
            }
            for (k, v) in model::index_entries(&d) {
                b.insert(k, v);
            }
            let k = model::round_key(&t, r);
            b.insert(k.clone(), model::seal(&k, &d));
        }
        Ok(())
    }

    /// The pass as one batch: rows with their index keys (an old row's keys removed
    /// first), statuses, configuration seqs, shift rows, cursors and counts.
    fn into_batch(
        mut self,
        tail: &Tail,
        (events, removals): (u64, u64),
    ) -> Result<crate::kv::Batch, ReadError> {
        let mut b = crate::kv::Batch::default();
        let mut meta = self.model.meta()?;
        let rounds_before = meta.rounds;
        meta.events_indexed += events;
        meta.removals_seen = removals;
        self.put_rounds(&mut b, &mut meta)?;
        for (t, s) in &self.statuses {
            let k = model::table_key(space::STATUS, t);
            b.insert(k.clone(), model::seal(&k, s));
            if let Some(c) = tail.tables.get(t) {
                let k = model::table_key(space::CURSOR, t);
                b.insert(k.clone(), model::seal(&k, &c.cur));
            }
        }
        for (t, seq) in &self.configs {
            let mut k = model::table_key(space::CONFIG, t);
            k.extend_from_slice(&seq.to_be_bytes());
            b.insert(k, Vec::new());
        }
        for ((start, t), row) in &self.shifts {
            let k = model::shift_key(*start, Some(t));
            b.insert(k.clone(), model::seal(&k, row));
        }
        for (name, row) in &self.dealers {
            let k = model::str_key(space::DEALER, name);
            b.insert(k.clone(), model::seal(&k, row));
        }
        for (t, w) in &self.holds {
            let k = model::table_key(space::HOLD_WATCH, t);
            b.insert(k.clone(), model::seal(&k, w));
        }
        if let Some(floor) = &self.floor.0 {
            let k = vec![space::DEALER_FLOOR];
            b.insert(k.clone(), model::seal(&k, floor));
        }
        for row in &self.signals {
            let k = model::signal_key(row);
            b.insert(k.clone(), model::seal(&k, row));
        }
        for row in &self.streams {
            let k = row.key();
            b.insert(k.clone(), model::seal(&k, row));
        }
        let k = vec![space::ANALYTICS];
        let coverage = coverage(self.model.coverage()?, rounds_before, tail);
        b.insert(k.clone(), model::seal(&k, &coverage));
        let k = vec![space::META];
        b.insert(k.clone(), model::seal(&k, &meta));
        Ok(b)
    }
}

/// Whether the model's rounds are all judged after this pass: only if every pass judged
/// its rounds under one setting, from a model with no rounds.
fn coverage(before: Option<Coverage>, rounds: u64, tail: &Tail) -> Coverage {
    let now = tail.signals.as_ref().map(Signals::setting_milli);
    let setting = now.unwrap_or(0);
    let complete = match before {
        None => now.is_some() && rounds == 0,
        Some(b) => b.complete && now == Some(b.false_alarms_milli_per_1000_rounds),
    };
    Coverage {
        complete,
        false_alarms_milli_per_1000_rounds: before
            .map_or(setting, |b| b.false_alarms_milli_per_1000_rounds),
    }
}

/// Writes one pass to the model in one batch; the feed items and the signals its writes
/// raised (`dealer_errors`, `hold_outside`).
fn commit(
    model: &Model,
    tail: &mut Tail,
    out: PassOut,
) -> Result<(Vec<FeedItem>, Vec<SignalRow>), ReadError> {
    let nothing = out.reports.is_empty() && out.early.is_empty() && out.recounts.is_empty();
    if out.tables.is_empty() && nothing && !out.priced_more {
        return Ok((Vec::new(), Vec::new()));
    }
    let newest: BTreeMap<TableId, u64> = match out.priced_more {
        true => tail.newest_rounds(),
        false => BTreeMap::new(),
    };
    let decision_signals = out.signals.len();
    let mut cache = std::mem::take(&mut tail.shifts);
    let mut w = Writes {
        model,
        digests: BTreeMap::new(),
        statuses: BTreeMap::new(),
        shifts: BTreeMap::new(),
        shift_cache: &mut cache,
        configs: Vec::new(),
        signals: out.signals,
        streams: out.streams,
        dealers: BTreeMap::new(),
        floor: (None, tail.signals.is_some()),
        holds: BTreeMap::new(),
        book: None,
    };
    let mut feed = Vec::new();
    // Before the batch: a committed pass implies its configurations are in the book.
    for config in out.tables.values().flat_map(|d| &d.pay_configs) {
        crate::edges::want(model, config)?;
    }
    for (table, d) in out.tables {
        w.table_delta(&table, d)?;
    }
    for r in out.reports {
        w.report(r, &mut feed)?;
    }
    for r in out.recounts {
        if let Some(old) = &r.take {
            w.count(old, &r.terms, Count::Take)?;
        }
        w.count(&r.add, &r.terms, Count::Add)?;
    }
    for (digest, announce_it) in out.early {
        if announce_it {
            announce(&digest, &mut feed);
        }
        w.put(digest)?;
    }
    if out.priced_more && w.floor.1 {
        w.judge_priced(&newest)?;
    }
    let write_signals = w.signals[decision_signals..].to_vec();
    let batch = w.into_batch(tail, (out.events, out.removals))?;
    tail.shifts = cache;
    model.db.apply(batch).map_err(model::ModelError::from)?;
    Ok((feed, write_signals))
}

/// The feed items of a round: its findings, then the round.
fn announce(d: &Digest, feed: &mut Vec<FeedItem>) {
    for f in &d.findings {
        feed.push(FeedItem::Finding {
            finding: FindingRow {
                table: d.row.table.clone(),
                round: d.row.round,
                opened_at_ns: d.row.opened_at_ns,
                finding: finding_view(f),
            },
        });
    }
    feed.push(FeedItem::Round {
        round: d.row.clone(),
    });
}
