//! The replayer: rebuilds rounds of play from a table chain's events, settles them through
//! the rules engine (`rules::settle`, never a settlement of its own) and reports every
//! deviation from the rules as a finding citing its clause, every recorded payout that
//! differs from the rules as a dispute, and a verdict per round.
//!
//! Invariants:
//! - Pure: a fold over events. The output depends on the events only: no clock, no I/O,
//!   no randomness, no `HashMap` iteration (`BTreeMap` wherever order shows). The same
//!   events give byte-identical reports in any process (tests/determinism.rs).
//! - A round is judged by the configuration in force when it was played: the last
//!   `TableOpened` of the chain before the round began.
//! - Broken rules are data: a misdeal, a late bet, an overpayment is a `Finding` or a
//!   `Dispute` in a successful replay. Nothing here fails on what devices send.
//! - Finding codes come from `schemas::findings` only (stable strings, stored for years).
//!
//! What it must never do: depend on tokio, sled, async-nats or anything doing I/O (CI
//! checks `cargo tree -p replayer -e normal`); settle a bet itself; read a device clock to
//! order anything.
//!
//! Verdict (see `schemas::report::Verdict`): `Void` when the round is void (a void ruling
//! or announcement, or a void-causing irregularity: §5.8.x, §5.7.2, §5.17, SSP4 §5.4), even
//! if the dealer's records also differ (the disputes are still listed); else `Disputed` when
//! any recorded payout differs; else `Irregular` when there is any finding (Info included);
//! else `Clean`.
//!
//! Readings worth knowing (each also in the finding's explanation):
//! - Bets settle as they stood at "No more Bets" (§5.21): later placements, changes and
//!   withdrawals are findings and are not applied. A BET/Play placed after the deal is the
//!   decision's stake, not a late bet.
//! - Void without a ruling: duplicate or foreign card, deck shortage/excess or exhaustion,
//!   no shuffle, two exposed cards before players saw theirs (SSP4: any two), dealer card
//!   count (unless a Reconstruction{allowed} ruling), jackpot fault before cards were seen,
//!   technical interruption before any outcome. A missing burnt card is not voided by the
//!   replayer: §5.9 leaves it to the House, so it is settled as dealt and flagged, plus a
//!   "ruling missing" finding when no Reconstruction/VoidRound ruling is recorded.
//! - "Players have seen their cards" from: a decision, an examination, a reveal, a
//!   `CardExposed` saying so, or (CS51) a face-up card dealt to the player.
//! - A shuffle must precede every round's deal: a `ShuffleCompleted` of the round, or a
//!   round-less one after the previous round. A commitment is checked when `DeckRevealed`
//!   arrives (before or after `RoundClosed`); the deal must be the prefix of the order.

#![warn(missing_docs)]

mod pool;
mod round;

pub use pool::{replay_pool, PoolMismatch, PoolReport, PoolSummary, PoolWin};
pub use round::{panic_text, Phase, StepView};
pub use schemas::parallel::{default_workers, map_tables, MAX_WORKERS};

use round::{RoundState, TableContext};
use schemas::report::RoundReport;
use schemas::{Event, EventBody, RoundId, Seq, TableConfig, TableId};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Code of the one finding that cannot cite a rule set: a round seen before any table
/// configuration, so the rules in force are unknown.
pub const CONFIG_MISSING: &str = "RL-table-config-missing";

/// The clause `CONFIG_MISSING` cites: RULES-NOTES says configurable values belong to the
/// table's configuration, recorded when the table opens.
pub const CONFIG_MISSING_CLAUSE: &str =
    "RULES-NOTES (configurable values are recorded when the table opens)";

/// Code of the finding of a round the replayer could not judge: one of its own assertions
/// failed on it (a defect of roundledger, not of the round). The replay goes on.
pub const INTERNAL_ERROR: &str = "RL-internal-error";

/// The clause `INTERNAL_ERROR` cites: no rule-book clause applies.
pub const INTERNAL_ERROR_CLAUSE: &str = "roundledger: replay is a pure fold (docs/DESIGN.md)";

/// Why input could not be read. Replay itself never fails.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A line is not the JSON wire form of an event.
    #[error("line {line}: not an event: {source}")]
    Json {
        /// The line number, from 1.
        line: usize,
        /// The JSON parser's error.
        #[source]
        source: serde_json::Error,
    },
}

/// Reads events as JSON lines (the JSON wire form, one event per line; blank lines skipped).
pub fn read_jsonl(text: &str) -> Result<Vec<Event>, Error> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|source| Error::Json {
                line: i + 1,
                source,
            })
        })
        .collect()
}

/// The canonical JSON form of reports (pretty, fields in declaration order, maps sorted):
/// what golden files and the determinism test compare byte for byte.
pub fn reports_json(reports: &[RoundReport]) -> String {
    // Serialising our own report types (no non-string map keys, no floats) cannot fail.
    serde_json::to_string_pretty(reports).expect("report serialisation is infallible")
}

/// Replays one table's chain, event by event in sequence order.
#[derive(Debug)]
pub struct TableReplayer {
    table: TableId,
    /// Shared with every round played under it: a round holds the configuration, and a
    /// table plays thousands of rounds under one.
    config: Option<Arc<TableConfig>>,
    ctx: TableContext,
    open: Option<RoundState>,
    /// Closed rounds not yet reported (see `push`).
    held: Vec<RoundState>,
}

impl TableReplayer {
    /// A replayer for `table` with no configuration yet and no round open.
    pub fn new(table: TableId) -> TableReplayer {
        TableReplayer {
            table,
            config: None,
            ctx: TableContext::default(),
            open: None,
            held: Vec::new(),
        }
    }

    /// The configuration in force now (the last `TableOpened`).
    pub fn config(&self) -> Option<&TableConfig> {
        self.config.as_deref()
    }

    /// Feeds the next event of the chain. Returns the reports of rounds that completed. A
    /// closed round is held until the next round begins (or a round-less shuffle, the
    /// table closing, `finish`), so that a `DeckRevealed` after `RoundClosed` and any late
    /// event of that round ("event after round closed") still land in its report. A round
    /// that never closed is reported when another round begins ("round never closed").
    pub fn push(&mut self, seq: Seq, event: &Event) -> Vec<RoundReport> {
        let mut out = Vec::new();
        match (event.round, &event.body) {
            (_, EventBody::TableOpened { config }) => {
                self.config = Some(Arc::new(config.clone()));
            }
            (None, EventBody::ShuffleCompleted { deck_commitment }) => {
                self.release_held(&mut out);
                self.ctx.shuffle = Some((seq, *deck_commitment));
            }
            (None, EventBody::JackpotShown { pool, value }) => {
                self.ctx
                    .pool_shown
                    .insert(pool.as_str().to_string(), *value);
                if let Some(r) = self.open.as_mut() {
                    r.apply(seq, event);
                }
            }
            (None, EventBody::DeckRevealed { .. }) => {
                if let Some(r) = self.held.iter_mut().find(|r| r.awaits_reveal()) {
                    r.apply(seq, event);
                } else if let Some(r) = self.open.as_mut() {
                    r.apply(seq, event);
                }
            }
            (None, EventBody::TableClosed) => {
                self.release_held(&mut out);
                if let Some(r) = self.open.take() {
                    out.push(r.finish());
                }
            }
            (None, _) => {
                // Finance and other table events; a round-less jackpot fault or technical
                // interruption during an open round concerns that round.
                if matches!(
                    event.body,
                    EventBody::JackpotFault { .. } | EventBody::TechnicalInterruption { .. }
                ) {
                    if let Some(r) = self.open.as_mut() {
                        r.apply(seq, event);
                    }
                }
            }
            (Some(round), _) => self.push_round_event(round, seq, event, &mut out),
        }
        out
    }

    fn push_round_event(
        &mut self,
        round: RoundId,
        seq: Seq,
        event: &Event,
        out: &mut Vec<RoundReport>,
    ) {
        if let Some(r) = self.held.iter_mut().find(|r| r.round == round) {
            // A late event of a closed round: recorded in that round's report.
            r.apply(seq, event);
            return;
        }
        if self.open.as_ref().is_some_and(|r| r.round != round) {
            if let Some(prev) = self.open.take() {
                out.push(prev.finish());
            }
        }
        if self.open.is_none() {
            self.release_held(out);
            let shuffle = self.ctx.shuffle.take();
            self.open = Some(RoundState::new(
                self.table.clone(),
                round,
                self.config.clone(),
                seq,
                event.occurred_at_ns,
                &self.ctx.pool_shown,
                shuffle,
            ));
        }
        if let Some(r) = self.open.as_mut() {
            r.apply(seq, event);
            if r.closed.is_some() {
                if let Some(r) = self.open.take() {
                    self.held.push(r);
                }
            }
        }
    }

    fn release_held(&mut self, out: &mut Vec<RoundReport>) {
        for r in self.held.drain(..) {
            out.push(r.finish());
        }
    }

    /// Ends the chain: rounds still open are reported with "round never closed".
    pub fn finish(mut self) -> Vec<RoundReport> {
        let mut out = Vec::new();
        self.release_held(&mut out);
        if let Some(r) = self.open.take() {
            out.push(r.finish());
        }
        out
    }
}

/// Replays a whole chain (events in sequence order) and returns every round's report.
pub fn replay_table(table: TableId, events: &[(Seq, Event)]) -> Vec<RoundReport> {
    let mut t = TableReplayer::new(table);
    let mut out = Vec::new();
    for (seq, e) in events {
        out.extend(t.push(*seq, e));
    }
    out.extend(t.finish());
    out
}

/// Replays one round given the configuration in force. `events` are the round's events
/// in sequence order, round-less ones included (a shuffle before the round).
pub fn replay_round(config: &TableConfig, events: &[(Seq, Event)]) -> RoundReport {
    fold_round(config, events, |_, _| {}).finish()
}

/// The round's state after each event, for `replay --step`.
pub fn steps(config: &TableConfig, events: &[(Seq, Event)]) -> Vec<StepView> {
    let mut views = Vec::with_capacity(events.len());
    fold_round(config, events, |state, (seq, e)| {
        views.push(state.view(*seq, e.body.type_name()))
    });
    views
}

fn fold_round(
    config: &TableConfig,
    events: &[(Seq, Event)],
    mut each: impl FnMut(&RoundState, &(Seq, Event)),
) -> RoundState {
    let (first_seq, at_ns, table) = events.first().map_or((Seq(0), 0, None), |(s, e)| {
        (*s, e.occurred_at_ns, Some(e.table.clone()))
    });
    let table = table.unwrap_or_else(|| TableId::new("unknown").expect("a valid literal id"));
    let round = events
        .iter()
        .find_map(|(_, e)| e.round)
        .unwrap_or(RoundId(0));
    let mut state = RoundState::new(
        table,
        round,
        Some(Arc::new(config.clone())),
        first_seq,
        at_ns,
        &BTreeMap::new(),
        None,
    );
    for item in events {
        state.apply(item.0, &item.1);
        each(&state, item);
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemas::report::Verdict;
    use schemas::RuleSet;
    use simulator::{default_config, FaultPlan, TableSim};

    /// An SSP4 table's chain of `rounds` rounds from the simulator, seed 47.
    fn chain(rounds: u64) -> (TableId, Vec<(Seq, Event)>) {
        let table = TableId::new("SIM-SSP4").unwrap();
        let config = default_config(RuleSet::Ssp4);
        let mut sim = TableSim::new(table.clone(), config, 47, FaultPlan::none()).unwrap();
        let mut events: Vec<_> = sim.opening_events().unwrap();
        for _ in 0..rounds {
            events.extend(sim.play_round().unwrap().events);
        }
        events.extend(sim.closing_events().unwrap());
        let events = events.into_iter().map(|p| (p.event.seq, p.event)).collect();
        (table, events)
    }

    fn replay_failing(table: &TableId, events: &[(Seq, Event)], fail: u64) -> Vec<RoundReport> {
        round::inject::fail_round(Some(RoundId(fail)));
        let reports = replay_table(table.clone(), events);
        round::inject::fail_round(None);
        reports
    }

    #[test]
    fn a_failed_assertion_becomes_an_internal_error_finding_and_the_replay_goes_on() {
        let (table, events) = chain(4);
        let clean = replay_table(table.clone(), &events);
        assert_eq!(clean.len(), 4);
        let first = clean[0].round.0;
        // A round in the middle, then the last one (reported by `finish`, not `push`).
        for fail in [first + 1, first + 3] {
            let reports = replay_failing(&table, &events, fail);
            assert_eq!(reports.len(), 4, "every round is still reported");
            for (got, want) in reports.iter().zip(&clean) {
                if got.round.0 != fail {
                    assert_eq!(got, want, "another round is judged as without the failure");
                    continue;
                }
                assert_eq!(got.verdict, Verdict::Irregular);
                assert!(got.settlement.is_none());
                assert_eq!(
                    (got.first_seq, got.last_seq),
                    (want.first_seq, want.last_seq)
                );
                assert_eq!(got.rule_set, Some(RuleSet::Ssp4));
                let codes: Vec<&str> = got.findings.iter().map(|f| f.code.as_str()).collect();
                assert_eq!(codes, vec![INTERNAL_ERROR]);
                assert!(got.findings[0].explanation.contains("injected failure"));
                assert!(!got.findings[0].clause.contains("invariant"));
            }
        }
    }

    #[test]
    fn one_round_replay_survives_a_failed_assertion() {
        let (table, events) = chain(1);
        let config = default_config(RuleSet::Ssp4);
        let round = replay_table(table, &events)[0].round;
        round::inject::fail_round(Some(round));
        let report = replay_round(&config, &events);
        round::inject::fail_round(None);
        assert_eq!(report.findings[0].code, INTERNAL_ERROR);
        let again = replay_round(&config, &events);
        assert!(again.settlement.is_some());
        assert!(again.findings.iter().all(|f| f.code != INTERNAL_ERROR));
    }

    #[test]
    fn a_round_without_configuration_cites_no_design_document() {
        let (table, events) = chain(1);
        let without: Vec<(Seq, Event)> = events
            .into_iter()
            .filter(|(_, e)| !matches!(e.body, EventBody::TableOpened { .. }))
            .collect();
        let reports = replay_table(table, &without);
        let f = &reports[0].findings[0];
        assert_eq!(f.code, CONFIG_MISSING);
        assert_eq!(f.clause, CONFIG_MISSING_CLAUSE);
        assert!(!f.clause.contains("invariant"));
    }
}
