//! A table device's outbox: every event it published, kept until the ledger says it is
//! durable (DESIGN invariant 4). JetStream's publish ack is not enough (it may ack before
//! its own disk write, and a stream can lose messages); the ledger's durable head
//! (`ledger.<table>.head`, published by ingest after each flush) is. Events at or below the
//! head are trimmed; whatever stays too long is republished, and the ledger recognises a
//! republished event by (table, seq, hash) for ever, so it is never stored twice.
//!
//! Bounded: an outbox holds at most `capacity` events; past that `push` refuses with
//! `OutboxFull`, the device's cue to stop taking events until the ledger catches up.

use crate::table::Published;
use schemas::{Seq, TableId};
use std::collections::VecDeque;

/// A full outbox.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("outbox of table {table} is full: {held} events not yet durable in the ledger (capacity {capacity}; durable head {durable})")]
pub struct OutboxFull {
    pub table: TableId,
    pub held: usize,
    pub capacity: usize,
    pub durable: u64,
}

/// The events of one table not yet confirmed durable, in seq order.
#[derive(Debug)]
pub struct Outbox {
    table: TableId,
    capacity: usize,
    events: VecDeque<Published>,
    /// The highest seq the ledger confirmed durable.
    durable: u64,
}

impl Outbox {
    pub fn new(table: TableId, capacity: usize) -> Outbox {
        assert!(capacity > 0, "an outbox holds at least one event");
        Outbox {
            table,
            capacity,
            events: VecDeque::new(),
            durable: 0,
        }
    }

    /// Keeps `event` until confirmed. Events must come in seq order.
    pub fn push(&mut self, event: Published) -> Result<(), OutboxFull> {
        if self.events.len() >= self.capacity {
            return Err(OutboxFull {
                table: self.table.clone(),
                held: self.events.len(),
                capacity: self.capacity,
                durable: self.durable,
            });
        }
        if let Some(last) = self.events.back() {
            assert!(
                last.event.seq.0 < event.event.seq.0,
                "outbox events are pushed in seq order"
            );
        }
        self.events.push_back(event);
        Ok(())
    }

    /// The ledger's durable head for this table reached `seq`: drops what it covers.
    /// Returns how many events were trimmed. A head that goes backwards is ignored (heads
    /// arrive over core NATS, possibly out of order).
    pub fn confirm(&mut self, seq: Seq) -> usize {
        self.durable = self.durable.max(seq.0);
        let before = self.events.len();
        while self
            .events
            .front()
            .is_some_and(|e| e.event.seq.0 <= self.durable)
        {
            self.events.pop_front();
        }
        before - self.events.len()
    }

    /// Events not yet durable, oldest first: what to republish.
    pub fn pending(&self) -> impl Iterator<Item = &Published> {
        self.events.iter()
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    pub fn durable(&self) -> Seq {
        Seq(self.durable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{default_config, FaultPlan, TableSim};
    use schemas::RuleSet;

    #[test]
    fn trims_to_the_durable_head_and_refuses_beyond_capacity() {
        let table = TableId::new("OUT-1").unwrap();
        let mut sim = TableSim::new(
            table.clone(),
            default_config(RuleSet::Csp6),
            7,
            FaultPlan::none(),
        )
        .unwrap();
        let mut events = sim.opening_events().unwrap();
        events.extend(sim.play_round().unwrap().events);
        let n = events.len();
        let mut o = Outbox::new(table, n);
        for e in events.clone() {
            o.push(e).unwrap();
        }
        let full = o.push(events[0].clone()).unwrap_err();
        assert_eq!((full.held, full.capacity), (n, n));
        assert_eq!(o.confirm(Seq(3)), 3);
        assert_eq!(o.pending().next().unwrap().event.seq, Seq(4));
        // A stale head changes nothing.
        assert_eq!(o.confirm(Seq(1)), 0);
        assert_eq!(o.durable(), Seq(3));
        assert_eq!(o.confirm(Seq(n as u64)), n - 3);
        assert!(o.is_empty());
    }
}
