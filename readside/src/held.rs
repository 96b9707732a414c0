//! A round from events held in memory, such as a verified export. One pass over the
//! events locates the round; the window and the replay are the ledger's own
//! (`rounds::window_of`, `rounds::replayed`), so a round reads the same from either.
//!
//! Invariants: `events` are one table's, in seq order; reads nothing else; decodes each
//! event at most twice (locating, then the window).

use crate::rounds::{config_event, decoded, replayed, window_of, LoadedRound, Located};
use crate::ReadError;
use ledger::StoredEvent;
use schemas::{EventBody, TableId};
use std::collections::BTreeMap;

/// Reads and replays `round` of `table` from its events in seq order.
pub fn load_held(
    table: &TableId,
    round: u64,
    events: &[StoredEvent],
) -> Result<LoadedRound, ReadError> {
    debug_assert!(events.windows(2).all(|w| w[0].seq < w[1].seq));
    let located = locate(table, round, events)?;
    let head_seq = events.last().map_or(0, |e| e.seq.0);
    let window = window_of(table, round, &located, head_seq)?;
    let config = match located.config_seq {
        Some(s) => Some(config_event(table, at(events, s)?.clone())?),
        None => None,
    };
    let mut read = Vec::new();
    for e in events
        .iter()
        .filter(|e| (window.0..=window.1).contains(&e.seq.0))
    {
        read.push(decoded(table, e.clone())?);
    }
    replayed(table, round, located, window, config, read)
}

/// Where `round` sits among `events`: its span, its neighbours' and the config in force.
fn locate(table: &TableId, round: u64, events: &[StoredEvent]) -> Result<Located, ReadError> {
    let mut spans: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    let mut configs: Vec<u64> = Vec::new();
    for e in events {
        let (_, ev) = decoded(table, e.clone())?;
        if matches!(ev.body, EventBody::TableOpened { .. }) {
            configs.push(e.seq.0);
        }
        if let Some(r) = ev.round {
            let span = spans.entry(r.0).or_insert((e.seq.0, e.seq.0));
            span.1 = e.seq.0;
        }
    }
    let &(first_seq, last_seq) = spans
        .get(&round)
        .ok_or_else(|| ReadError::NotFound(format!("table {table} has no round {round}")))?;
    Ok(Located {
        first_seq,
        last_seq,
        prev_last: spans.range(..round).next_back().map(|(_, s)| s.1),
        next_first: spans.range(round + 1..).next().map(|(_, s)| s.0),
        config_seq: configs.iter().rev().find(|&&s| s <= first_seq).copied(),
    })
}

/// The event at `seq` (binary search; the events are in seq order).
fn at(events: &[StoredEvent], seq: u64) -> Result<&StoredEvent, ReadError> {
    events
        .binary_search_by_key(&seq, |e| e.seq.0)
        .map(|i| &events[i])
        .map_err(|_| ReadError::Integrity(format!("no event at config seq {seq}")))
}
