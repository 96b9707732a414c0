//! Jackpot liability per pool and gaming day: the pool at the day's start and end,
//! recomputed by `replayer::replay_pool` over the events in the House's order (arrival),
//! the day's contributions, hits, payments and resets, against what the controller last
//! displayed, compared with the pool as it stood when displayed (a display shows the pool
//! before the rounds after it). A day is cut by arrival time, as day seals are.
//!
//! Reads every event that arrived before the day's end, at most `JACKPOT_EVENTS_MAX`.

use crate::ReadError;
use ledger::days::DayRule;
use schemas::finance::PoolLiability;
use schemas::{EventBody, Money, PoolId};
use std::collections::BTreeMap;

/// Most events one liability report replays.
pub const JACKPOT_EVENTS_MAX: u64 = 5_000_000;

/// Every pool's liability over `day`. Blocking: sled.
pub fn liability(
    ledger: &ledger::Ledger,
    rule: &DayRule,
    day: &str,
) -> Result<Vec<PoolLiability>, ReadError> {
    let b = rule
        .bounds(day)
        .map_err(|e| ReadError::BadRequest(e.to_string()))?;
    let DayEvents {
        before,
        through,
        shown,
    } = read_day(ledger, &b)?;
    let start = replayer::replay_pool(&before).pools;
    let end = replayer::replay_pool(&through).pools;
    let out = end
        .into_values()
        .map(|p| {
            let s = start.get(&p.pool);
            let paid = |w: &[replayer::PoolWin]| w.iter().map(|w| w.amount).sum::<Money>();
            let displayed = shown.get(&p.pool).map(|(v, _)| *v);
            let at_display = shown.get(&p.pool).and_then(|(_, n)| {
                let pools = replayer::replay_pool(&through[..*n]).pools;
                pools.get(&p.pool).map(|q| q.end)
            });
            PoolLiability {
                day: b.day.clone(),
                tables: p.tables.clone(),
                // A pool first seen this day opens at the value it starts from.
                opening: s.map_or(p.start, |s| s.end),
                contributions: p.contributions - s.map_or(Money::ZERO, |s| s.contributions),
                hits: (p.wins.len() - s.map_or(0, |s| s.wins.len())) as u64,
                paid: paid(&p.wins) - s.map_or(Money::ZERO, |s| paid(&s.wins)),
                resets: p.resets - s.map_or(0, |s| s.resets),
                closing: p.end,
                difference: displayed.zip(at_display).map(|(d, e)| d - e),
                displayed,
                mismatches: (p.mismatches.len() - s.map_or(0, |s| s.mismatches.len())) as u64,
                pool: p.pool,
            }
        })
        .collect();
    Ok(out)
}

/// The pool events up to a day's end: those before it, all of them, and each pool's last
/// display with how many events came before it, itself included.
struct DayEvents {
    before: Vec<schemas::Event>,
    through: Vec<schemas::Event>,
    shown: BTreeMap<PoolId, (Money, usize)>,
}

/// Reads the ledger in arrival order up to the day's end (at most `JACKPOT_EVENTS_MAX`).
fn read_day(ledger: &ledger::Ledger, b: &ledger::days::DayBounds) -> Result<DayEvents, ReadError> {
    let mut before = Vec::new();
    let mut through = Vec::new();
    let mut shown: BTreeMap<PoolId, (Money, usize)> = BTreeMap::new();
    let mut read = 0u64;
    for item in ledger.reader().events_in_arrival_order() {
        let (_, stored) = item?;
        read += 1;
        if read > JACKPOT_EVENTS_MAX {
            return Err(ReadError::TooLarge(format!(
                "more than {JACKPOT_EVENTS_MAX} events before the day's end (use roundledger audit)"
            )));
        }
        if stored.received_at_ns >= b.ends_at_ns {
            continue;
        }
        // Undecodable bytes hold no pool movement; `verify` names them.
        let Ok((e, _)) = schemas::codec::decode(&stored.bytes) else {
            continue;
        };
        let display = match &e.body {
            EventBody::JackpotShown { pool, value } => Some((pool.clone(), *value)),
            _ => None,
        };
        if stored.received_at_ns < b.starts_at_ns {
            before.push(e.clone());
        }
        through.push(e);
        if let Some((pool, value)) = display {
            shown.insert(pool, (value, through.len()));
        }
    }
    Ok(DayEvents {
        before,
        through,
        shown,
    })
}
