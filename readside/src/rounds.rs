//! Reading one round from the ledger and replaying it: the round view (events,
//! reconstruction, settlement expected vs recorded, findings), its steps, and the replay
//! window that evidence bundles reuse.
//!
//! The replay window of round N is every event after the previous round's last event up
//! to the event before the next round's first one (or the head): the shuffle before the
//! round, the round, and the deck reveal after it. Replaying the configuration in force
//! (the last `TableOpened` at or before the round) and then the window gives the round's
//! report, on this request, from the stored bytes: the report is never stored.
//!
//! Invariants: blocking (the stores): call from `spawn_blocking`; reads at most
//! `ROUND_WINDOW_EVENTS_MAX` events for one round.

use crate::row::{finding_view, note_box_in_play, row_of};
use crate::ReadError;
use schemas::api::{EventRow, ResyncNote, RoundDetail, SettlementRow, StepList, StepState};
use schemas::report::RoundReport;
use schemas::{Event, EventBody, Money, PayLine, RoundId, Seq, TableConfig, TableId};
use std::collections::BTreeMap;

/// Most events in one round's replay window.
pub const ROUND_WINDOW_EVENTS_MAX: u64 = 20_000;

/// Where a round sits in its table's chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// Seq of the round's first event.
    pub first_seq: u64,
    /// Seq of the round's last event.
    pub last_seq: u64,
    /// Seq of the previous round's last event; `None` for the table's first round.
    pub prev_last: Option<u64>,
    /// Seq of the next round's first event; `None` while no round follows.
    pub next_first: Option<u64>,
    /// Seq of the `TableOpened` in force at the round's first event, if any.
    pub config_seq: Option<u64>,
}

/// From the ledger alone (the CLI, or a round the index has not reached yet): the round
/// and its neighbours from the round index, the configuration from the config index. A
/// few seeks, whatever the table's history.
pub fn locate_in_ledger(
    ledger: &ledger::Ledger,
    table: &TableId,
    round: u64,
) -> Result<Located, ReadError> {
    let n = ledger
        .reader()
        .round_neighbours(table, RoundId(round))?
        .ok_or_else(|| ReadError::NotFound(format!("table {table} has no round {round}")))?;
    let config_seq = ledger
        .reader()
        .config_at(table, n.this.first_seq.0)?
        .map(|(s, _)| s.0);
    Ok(Located {
        first_seq: n.this.first_seq.0,
        last_seq: n.this.last_seq.0,
        prev_last: n.prev.map(|p| p.last_seq.0),
        next_first: n.next.map(|x| x.first_seq.0),
        config_seq,
    })
}

/// A round read and replayed.
#[derive(Debug, Clone)]
pub struct LoadedRound {
    /// The table id.
    pub table: TableId,
    /// The round id.
    pub round: RoundId,
    /// Where the round sits in the chain.
    pub located: Located,
    /// The replay window: its first and last seq, inclusive.
    pub window: (u64, u64),
    /// The configuration in force, stored and decoded; `None` when the table has none.
    pub config: Option<(ledger::StoredEvent, TableConfig)>,
    /// The window's events, stored and decoded (undecodable ones are left out; verify
    /// reports them).
    pub events: Vec<(ledger::StoredEvent, Event)>,
    /// The replayer's report of the round, computed on this read.
    pub report: RoundReport,
    /// Re-syncs that admitted events of the window (none for an export).
    pub resyncs: Vec<ResyncNote>,
}

/// Reads the round's window and replays it.
pub fn load(
    ledger: &ledger::Ledger,
    table: &TableId,
    round: u64,
    located: Located,
) -> Result<LoadedRound, ReadError> {
    let head = ledger
        .reader()
        .head(table)
        .ok_or_else(|| ReadError::NotFound(format!("table {table} is not in the ledger")))?;
    let (from, to) = window_of(table, round, &located, head.seq.0)?;
    let config = match located.config_seq {
        Some(s) => {
            let stored = ledger.reader().stored_event(table, s)?.ok_or_else(|| {
                ReadError::Integrity(format!("table {table}: no event at config seq {s}"))
            })?;
            Some(config_event(table, stored)?)
        }
        None => None,
    };
    let mut events = Vec::new();
    for e in ledger.reader().events(table, from..=to) {
        events.push(decoded(table, e?)?);
    }
    let mut loaded = replayed(table, round, located, (from, to), config, events)?;
    loaded.resyncs = ledger
        .reader()
        .resyncs_in(table, from..=to)?
        .into_iter()
        .map(|k| ResyncNote {
            seq: k.resync.seq,
            quarantine_id: k.resync.quarantine_id,
            admin: k.resync.admin,
            note: k.resync.note,
            signed_at_ns: k.resync.signed_at_ns,
        })
        .collect();
    Ok(loaded)
}

/// A stored event with its decoding; stored bytes that do not decode are an integrity error.
pub(crate) fn decoded(
    table: &TableId,
    e: ledger::StoredEvent,
) -> Result<(ledger::StoredEvent, Event), ReadError> {
    let (ev, _) = schemas::codec::decode(&e.bytes).map_err(|x| {
        ReadError::Integrity(format!(
            "table {table} seq {}: stored bytes do not decode: {x}",
            e.seq.0
        ))
    })?;
    Ok((e, ev))
}

/// The configuration event at a config seq, which must be a `TableOpened`.
pub(crate) fn config_event(
    table: &TableId,
    stored: ledger::StoredEvent,
) -> Result<(ledger::StoredEvent, TableConfig), ReadError> {
    let seq = stored.seq.0;
    match decoded(table, stored)? {
        (
            stored,
            Event {
                body: EventBody::TableOpened { config },
                ..
            },
        ) => Ok((stored, config)),
        _ => Err(ReadError::Integrity(format!(
            "table {table} seq {seq} is not a TableOpened event"
        ))),
    }
}

/// Replays a read window and keeps what the round views need.
pub(crate) fn replayed(
    table: &TableId,
    round: u64,
    located: Located,
    window: (u64, u64),
    config: Option<(ledger::StoredEvent, TableConfig)>,
    events: Vec<(ledger::StoredEvent, Event)>,
) -> Result<LoadedRound, ReadError> {
    let report = replay_window(table, round, config.as_ref().map(|(s, _)| s), &events)
        .ok_or_else(|| ReadError::NotFound(format!("table {table} has no round {round}")))?;
    Ok(LoadedRound {
        table: table.clone(),
        round: RoundId(round),
        located,
        window,
        config,
        events,
        report,
        resyncs: Vec::new(),
    })
}

/// Whether `e` is the first event of its round, by the round index.
pub fn begins_round(
    ledger: &ledger::Ledger,
    table: &TableId,
    e: &ledger::StoredEvent,
) -> Result<bool, ReadError> {
    let Some(round) = e.round else {
        return Ok(false);
    };
    let summary = ledger
        .reader()
        .round_index_entry(table, round)?
        .ok_or_else(|| {
            ReadError::Integrity(format!("table {table}: round {} is not indexed", round.0))
        })?;
    Ok(summary.first_seq == e.seq)
}

/// The first round of `table` whose first event is in `lo..=hi`: read from `lo`, one
/// round index lookup per round met. `None` when no round begins there. A gaming day's
/// rounds are the rounds that begin in its range (`audit --day`, `dayparquet`).
pub fn first_round_beginning_in(
    ledger: &ledger::Ledger,
    table: &TableId,
    lo: u64,
    hi: u64,
) -> Result<Option<RoundId>, ReadError> {
    let mut seen = None;
    for e in ledger.reader().events(table, lo..=hi) {
        let e = e?;
        if e.round.is_some() && e.round != seen && begins_round(ledger, table, &e)? {
            return Ok(e.round);
        }
        seen = e.round;
    }
    Ok(None)
}

/// The replay window of a located round: after the previous round's last event, up to
/// before the next round's first one (or `head_seq`). Refuses a window over
/// `ROUND_WINDOW_EVENTS_MAX`.
pub fn window_of(
    table: &TableId,
    round: u64,
    located: &Located,
    head_seq: u64,
) -> Result<(u64, u64), ReadError> {
    let from = located.prev_last.map_or(1, |p| p + 1);
    let to = located
        .next_first
        .map_or(head_seq, |n| n.saturating_sub(1))
        .max(located.last_seq);
    let len = to.saturating_sub(from) + 1;
    if len > ROUND_WINDOW_EVENTS_MAX {
        return Err(ReadError::TooLarge(format!(
            "round {round} of table {table}: replay window of {len} events exceeds {ROUND_WINDOW_EVENTS_MAX}"
        )));
    }
    Ok((from, to))
}

/// The replay that round views and evidence bundles share: the config event (when it is
/// before the window), then the window, through one `TableReplayer`.
pub fn replay_window(
    table: &TableId,
    round: u64,
    config: Option<&ledger::StoredEvent>,
    events: &[(ledger::StoredEvent, Event)],
) -> Option<RoundReport> {
    let mut input: Vec<(Seq, Event)> = Vec::with_capacity(events.len() + 1);
    if let Some(c) = config {
        if events.first().is_none_or(|(f, _)| c.seq < f.seq) {
            if let Ok((ev, _)) = schemas::codec::decode(&c.bytes) {
                input.push((c.seq, ev));
            }
        }
    }
    input.extend(events.iter().map(|(s, e)| (s.seq, e.clone())));
    replay_events(table, round, &input)
}

/// Replays `(seq, event)` in order and returns the report of `round`.
pub fn replay_events(table: &TableId, round: u64, input: &[(Seq, Event)]) -> Option<RoundReport> {
    let mut r = replayer::TableReplayer::new(table.clone());
    let mut found = None;
    for (seq, e) in input {
        for rep in r.push(*seq, e) {
            if rep.round.0 == round {
                found = Some(rep);
            }
        }
    }
    if found.is_none() {
        found = r.finish().into_iter().find(|rep| rep.round.0 == round);
    }
    found
}

impl LoadedRound {
    /// The round's timeline: its own events and the deck reveal after it (what `replay
    /// --step` shows), in seq order.
    pub fn timeline(&self) -> Vec<&(ledger::StoredEvent, Event)> {
        let mut started = false;
        self.events
            .iter()
            .filter(|(_, e)| {
                if e.round == Some(self.round) {
                    started = true;
                    true
                } else {
                    started && e.round.is_none() && matches!(e.body, EventBody::DeckRevealed { .. })
                }
            })
            .collect()
    }

    /// The round view: events, reconstruction, expected and recorded settlement, findings.
    pub fn detail(&self) -> RoundDetail {
        let timeline = self.timeline();
        let events = timeline
            .iter()
            .map(|(s, e)| EventRow {
                seq: s.seq,
                hash: s.hash,
                stream_seq: s.stream_seq,
                received_at_ns: s.received_at_ns,
                occurred_at_ns: e.occurred_at_ns,
                device: e.device.as_str().to_string(),
                type_name: e.body.type_name().to_string(),
                description: crate::describe::describe(&e.body),
                event: e.clone(),
            })
            .collect();
        let mut row = row_of(&self.report, None);
        // Not closed, no later round and the table still open: it may still be played.
        row.in_progress = self.report.closed_at_ns.is_none()
            && self.located.next_first.is_none()
            && !self
                .events
                .iter()
                .any(|(_, e)| matches!(e.body, EventBody::TableClosed));
        if self.report.settlement.is_none() {
            // No settlement names them yet: the boxes bet on so far, as the list shows them.
            for (_, e) in &self.events {
                if e.round == Some(self.report.round) {
                    note_box_in_play(&mut row.boxes, &e.body);
                }
            }
        }
        RoundDetail {
            row,
            config: self.config.as_ref().map(|(_, c)| c.clone()),
            config_seq: self.config.as_ref().map(|(s, _)| s.seq),
            report: self.report.clone(),
            events,
            settlement: settlement_rows(&self.report, &timeline),
            findings: self.report.findings.iter().map(finding_view).collect(),
            resyncs: self.resyncs.clone(),
        }
    }

    /// The round's state after each of its events (`replay --step`).
    pub fn steps(&self) -> StepList {
        let input: Vec<(Seq, Event)> = self
            .timeline()
            .into_iter()
            .map(|(s, e)| (s.seq, e.clone()))
            .collect();
        let steps = match &self.config {
            Some((_, c)) => replayer::steps(c, &input),
            None => Vec::new(),
        };
        StepList {
            table: self.table.clone(),
            round: self.round,
            steps: steps
                .iter()
                .enumerate()
                .filter_map(|(k, s)| step_state(k as u64, s))
                .collect(),
        }
    }
}

/// The replayer's step view as the API's body (same JSON field by field).
fn step_state(k: u64, s: &replayer::StepView) -> Option<StepState> {
    let mut v = serde_json::to_value(s).ok()?;
    v.as_object_mut()?.insert("k".into(), k.into());
    serde_json::from_value(v).ok()
}

/// Settlement per box and line: the rules against the dealer's `PaidOut` records; lines
/// recorded but not in the settlement appear with expected 0.
fn settlement_rows(
    r: &RoundReport,
    timeline: &[&(ledger::StoredEvent, Event)],
) -> Vec<SettlementRow> {
    let mut recorded: BTreeMap<(u8, PayLine), Money> = BTreeMap::new();
    for (_, e) in timeline {
        if let EventBody::PaidOut { box_no, line, net } = &e.body {
            let v = recorded.entry((box_no.0, *line)).or_default();
            *v = *v + *net;
        }
    }
    let mut rows: BTreeMap<(u8, PayLine), SettlementRow> = BTreeMap::new();
    if let Some(s) = &r.settlement {
        for b in &s.boxes {
            for l in &b.lines {
                let row = rows
                    .entry((b.box_no.0, l.line))
                    .or_insert_with(|| SettlementRow {
                        box_no: b.box_no,
                        line: l.line,
                        expected: Money::ZERO,
                        recorded: Money::ZERO,
                        difference: Money::ZERO,
                        clauses: Vec::new(),
                        explanation: String::new(),
                    });
                row.expected = row.expected + l.net;
                row.clauses.push(l.clause.clone());
                if !row.explanation.is_empty() {
                    row.explanation.push_str("; ");
                }
                row.explanation.push_str(&l.explanation);
            }
        }
    }
    for (&(b, line), &m) in &recorded {
        rows.entry((b, line)).or_insert_with(|| SettlementRow {
            box_no: schemas::BoxNo(b),
            line,
            expected: Money::ZERO,
            recorded: Money::ZERO,
            difference: Money::ZERO,
            clauses: Vec::new(),
            explanation: "recorded, but the rules settle nothing on this line".into(),
        });
        let _ = m;
    }
    rows.into_values()
        .map(|mut row| {
            row.recorded = recorded
                .get(&(row.box_no.0, row.line))
                .copied()
                .unwrap_or_default();
            row.difference = row.recorded - row.expected;
            row
        })
        .collect()
}
