//! Linked (and single-table) progressive jackpot pools replayed across tables in the
//! House's order: the order events reached the central log, never device clocks (DESIGN
//! invariant 3, MLP3 §4.5.2, TCP3 §4.9.1, RULES-NOTES 9).
//!
//! The pool is recomputed from the first value shown, plus each accepted jackpot stake's
//! contribution (`contribution_bp` of the stake, rounded down per stake, RULES-NOTES 6)
//! when its round ends (not void), minus each hit paid, set to the reset value on a reset.
//! Every later `JackpotShown` is compared with the recomputed value; a difference is
//! reported once and the replay continues from the shown value, so one error is not
//! reported again at every later display.

use schemas::findings::{lookup, FindingKind};
use schemas::{
    Announcement, BetKind, BoxNo, Event, EventBody, Money, PoolId, RoundId, Ruling, Seq, Stake,
    TableConfig, TableId,
};
use serde::Serialize;
use std::collections::BTreeMap;

/// A jackpot paid, in the House's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PoolWin {
    /// Position among this pool's wins, from 1: the order of payment (§4.5.1, §4.5.2).
    pub order: u32,
    /// The table where the jackpot was hit.
    pub table: TableId,
    /// The round of the hit, when the event names one.
    pub round: Option<RoundId>,
    /// Seq of the `JackpotHit` event in its table's chain.
    pub seq: Seq,
    /// The winning box.
    #[serde(rename = "box")]
    pub box_no: BoxNo,
    /// The amount paid out of the pool, in minor units.
    pub amount: Money,
    /// The recomputed pool before the payment, in minor units.
    pub pool_before: Money,
    /// The recomputed pool after it: `pool_before - amount`.
    pub pool_after: Money,
}

/// A displayed value that differs from the recomputed pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PoolMismatch {
    /// `schemas::findings` code of the displaying table's rule set.
    pub code: String,
    /// The displaying table.
    pub table: TableId,
    /// Seq of the `JackpotShown` event in that table's chain.
    pub seq: Seq,
    /// The value displayed, in minor units.
    pub shown: Money,
    /// The value the replay recomputed, in minor units.
    pub recomputed: Money,
    /// `shown - recomputed`.
    pub difference: Money,
}

/// One pool's replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PoolSummary {
    /// The pool id.
    pub pool: PoolId,
    /// Tables that contributed to, displayed or hit the pool, sorted.
    pub tables: Vec<TableId>,
    /// The first value shown (or reset), where the recomputation starts.
    pub start: Money,
    /// Sum of the contributions of rounds not void, each rounded down (RULES-NOTES 6).
    pub contributions: Money,
    /// Jackpot stakes that contributed.
    pub contributing_stakes: u64,
    /// Jackpots paid, in the order of payment.
    pub wins: Vec<PoolWin>,
    /// `JackpotReset` events applied.
    pub resets: u64,
    /// Displays compared with a recomputed value (the first display only starts it).
    pub displays_checked: u64,
    /// Displays that differ from the recomputed value.
    pub mismatches: Vec<PoolMismatch>,
    /// The recomputed value after the last event.
    pub end: Money,
}

/// Every pool seen, by id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct PoolReport {
    /// One summary per pool.
    pub pools: BTreeMap<PoolId, PoolSummary>,
}

#[derive(Debug, Default)]
struct TableRound {
    round: Option<RoundId>,
    closed: bool,
    nmb: bool,
    void: bool,
    stakes: BTreeMap<(BoxNo, BetKind), Stake>,
}

#[derive(Debug, Default)]
struct TableState {
    config: Option<TableConfig>,
    current: TableRound,
}

struct Pool {
    summary: PoolSummary,
    value: Option<Money>,
}

impl Pool {
    fn new(pool: &PoolId) -> Pool {
        Pool {
            summary: PoolSummary {
                pool: pool.clone(),
                tables: Vec::new(),
                start: Money::ZERO,
                contributions: Money::ZERO,
                contributing_stakes: 0,
                wins: Vec::new(),
                resets: 0,
                displays_checked: 0,
                mismatches: Vec::new(),
                end: Money::ZERO,
            },
            value: None,
        }
    }
    fn touch(&mut self, table: &TableId) {
        if !self.summary.tables.contains(table) {
            self.summary.tables.push(table.clone());
            self.summary.tables.sort();
        }
    }
}

/// Replays every pool over `events` from all tables (and jackpot controllers), in the
/// House's order (stream order).
pub fn replay_pool(events: &[Event]) -> PoolReport {
    let mut tables: BTreeMap<TableId, TableState> = BTreeMap::new();
    let mut pools: BTreeMap<PoolId, Pool> = BTreeMap::new();
    for e in events {
        let t = tables.entry(e.table.clone()).or_default();
        if let EventBody::TableOpened { config } = &e.body {
            t.config = Some(config.clone());
            continue;
        }
        // A new round at the table ends the previous one for contributions.
        if e.round.is_some() && e.round != t.current.round {
            end_round(&e.table, t, &mut pools);
            t.current = TableRound {
                round: e.round,
                ..TableRound::default()
            };
        }
        match &e.body {
            EventBody::RoundClosed => {
                end_round(&e.table, t, &mut pools);
                t.current.closed = true;
            }
            EventBody::JackpotShown { pool, value } => {
                let code = shown_differs_code(t);
                pool_of(&mut pools, pool, &e.table).shown(code, e, *value);
            }
            EventBody::JackpotHit {
                pool,
                box_no,
                amount,
            } => pool_of(&mut pools, pool, &e.table).hit(e, *box_no, *amount),
            EventBody::JackpotReset { pool, value } => {
                pool_of(&mut pools, pool, &e.table).reset(*value);
            }
            body => t.current.record(body),
        }
    }
    for (id, t) in tables.iter_mut() {
        end_round(id, t, &mut pools);
    }
    let mut report = PoolReport::default();
    for (id, mut p) in pools {
        p.summary.end = p.value.unwrap_or_default();
        report.pools.insert(id, p.summary);
    }
    report
}

impl TableRound {
    /// Records what a round event means for the pool: bets closed, void, jackpot stakes.
    fn record(&mut self, body: &EventBody) {
        match body {
            EventBody::Announced {
                announcement: Announcement::NoMoreBets,
            } => self.nmb = true,
            EventBody::Announced {
                announcement: Announcement::Void,
            } => self.void = true,
            EventBody::StaffDecision {
                ruling: Ruling::VoidRound { .. },
                ..
            } => self.void = true,
            EventBody::BetPlaced {
                box_no,
                kind,
                stake,
            } if !self.nmb && is_jackpot(*kind) => {
                let s = self
                    .stakes
                    .entry((*box_no, *kind))
                    .or_insert(Stake::Chips(Money::ZERO));
                *s = add(*s, *stake);
            }
            EventBody::BetChanged {
                box_no, kind, to, ..
            } if !self.nmb && is_jackpot(*kind) => {
                self.stakes.insert((*box_no, *kind), *to);
            }
            EventBody::BetWithdrawn { box_no, kind, .. } if !self.nmb && is_jackpot(*kind) => {
                self.stakes.remove(&(*box_no, *kind));
            }
            _ => {}
        }
    }
}

/// The finding code for a display that differs, in the displaying table's rule set.
fn shown_differs_code(t: &TableState) -> &'static str {
    t.config
        .as_ref()
        .and_then(|c| lookup(c.rule_set, FindingKind::JackpotShownDiffers))
        .map_or("RL-jackpot-shown-differs", |r| r.code)
}

/// The pool `pool`, created on first sight, with `table` recorded as one of its tables.
fn pool_of<'a>(
    pools: &'a mut BTreeMap<PoolId, Pool>,
    pool: &PoolId,
    table: &TableId,
) -> &'a mut Pool {
    let p = pools.entry(pool.clone()).or_insert_with(|| Pool::new(pool));
    p.touch(table);
    p
}

impl Pool {
    /// Checks a displayed value against the recomputed one, then continues from it.
    fn shown(&mut self, code: &str, e: &Event, value: Money) {
        match self.value {
            None => {
                self.summary.start = value;
            }
            Some(v) => {
                self.summary.displays_checked += 1;
                if v != value {
                    self.summary.mismatches.push(PoolMismatch {
                        code: code.to_string(),
                        table: e.table.clone(),
                        seq: e.seq,
                        shown: value,
                        recomputed: v,
                        difference: value - v,
                    });
                }
            }
        }
        self.value = Some(value);
    }

    /// Pays a jackpot out of the pool, in the order of payment.
    fn hit(&mut self, e: &Event, box_no: BoxNo, amount: Money) {
        let before = self.value.unwrap_or_default();
        let after = before - amount;
        self.value = Some(after);
        let order = self.summary.wins.len() as u32 + 1;
        self.summary.wins.push(PoolWin {
            order,
            table: e.table.clone(),
            round: e.round,
            seq: e.seq,
            box_no,
            amount,
            pool_before: before,
            pool_after: after,
        });
    }

    /// Sets the pool to its reset value.
    fn reset(&mut self, value: Money) {
        if self.value.is_none() {
            self.summary.start = value;
        }
        self.value = Some(value);
        self.summary.resets += 1;
    }
}

fn is_jackpot(k: BetKind) -> bool {
    matches!(
        k,
        BetKind::Progressive | BetKind::JackpotPlayer | BetKind::JackpotDealer
    )
}

fn add(a: Stake, b: Stake) -> Stake {
    match (a, b) {
        (Stake::Chips(x), Stake::Chips(y)) => Stake::Chips(x + y),
        (Stake::Credits(x), Stake::Credits(y)) => Stake::Credits(x.saturating_add(y)),
        (Stake::Chips(x), Stake::Credits(y)) if x == Money::ZERO => Stake::Credits(y),
        (_, b) => b,
    }
}

/// Adds the round's contributions once, when it ends and was not void.
fn end_round(table: &TableId, t: &mut TableState, pools: &mut BTreeMap<PoolId, Pool>) {
    if t.current.closed || t.current.round.is_none() {
        return;
    }
    t.current.closed = true;
    if t.current.void {
        return;
    }
    let Some(j) = t.config.as_ref().and_then(|c| c.jackpot.clone()) else {
        return;
    };
    let p = pools
        .entry(j.pool.clone())
        .or_insert_with(|| Pool::new(&j.pool));
    p.touch(table);
    for stake in t.current.stakes.values() {
        let chips = match *stake {
            Stake::Chips(m) => m.0,
            Stake::Credits(c) => i64::from(c).saturating_mul(j.credit_value.0),
        };
        if chips <= 0 {
            continue;
        }
        let c = Money(chips).basis_points(j.contribution_bp);
        p.summary.contributions = p.summary.contributions + c;
        p.summary.contributing_stakes += 1;
        p.value = Some(p.value.unwrap_or_default() + c);
    }
}
