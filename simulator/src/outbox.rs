//! A table device's outbox: every event it published, kept until the ledger says it is durable
//! (docs/DESIGN.md, durable before acknowledged). JetStream's publish ack is not enough (it may
//! ack before its own disk write, and a stream can lose messages); the ledger's durable head
//! (`ledger.<table>.head`, published by ingest after each flush) is. Events at or below the
//! head are trimmed; whatever stays too long is republished, and the ledger recognises a
//! republished event by (table, seq, hash) for ever, so it is never stored twice.
//!
//! A head trims only events it proves durable: its hash must be this device's event's at
//! its seq. Heads come over core NATS, where anyone on the subject can publish, and the
//! ledger may hold another chain for the table (a second device claiming it, a run of
//! another day): trimming by seq alone let such a head empty the outbox of events the
//! ledger never stored, and the device reported success. A head beyond what this device
//! has sent proves nothing yet and trims nothing; one that disagrees with the device's
//! event at its seq is a fork, an error (`HeadDisagrees`).
//!
//! Bounded: an outbox holds at most `capacity` events; past that `push` refuses with
//! `OutboxFull`, the device's cue to stop taking events until the ledger catches up. The
//! hashes of the last `TRIMMED_REMEMBERED` trimmed events are kept to judge a late head.

use crate::table::Published;
use schemas::{Hash32, Seq, TableId};
use std::collections::VecDeque;

/// Trimmed events whose (seq, hash) the outbox remembers, to judge a head that arrives
/// after a newer one.
pub const TRIMMED_REMEMBERED: usize = 1_024;

/// A full outbox.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("outbox of table {table} is full: {held} events not yet durable in the ledger (capacity {capacity}; durable head {durable})")]
pub struct OutboxFull {
    /// The table.
    pub table: TableId,
    /// Events held, not yet durable.
    pub held: usize,
    /// The most events the outbox holds.
    pub capacity: usize,
    /// The highest seq the ledger confirmed durable.
    pub durable: u64,
}

/// The ledger's head for this table names, at the device's own seq, another event than
/// the device's: the table's chain forked, and the device's events from that seq are not
/// in the ledger.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("table {table}: the ledger's head at seq {} is event {ledger}, but this device's event at that seq is {device}: the chain forked (another device or run writing this table?); the device's events from seq {} are not in the ledger", seq.0, seq.0)]
pub struct HeadDisagrees {
    /// The table.
    pub table: TableId,
    /// The seq where the two chains differ.
    pub seq: Seq,
    /// The chain hash of the ledger's event at `seq`.
    pub ledger: Hash32,
    /// The chain hash of this device's event at `seq`.
    pub device: Hash32,
}

/// The events of one table not yet confirmed durable, in seq order.
#[derive(Debug)]
pub struct Outbox {
    table: TableId,
    capacity: usize,
    events: VecDeque<Published>,
    /// The highest seq the ledger confirmed durable.
    durable: u64,
    /// (seq, hash) of the last trimmed events, oldest first, at most `TRIMMED_REMEMBERED`.
    trimmed: VecDeque<(u64, Hash32)>,
    /// The highest seq pushed.
    last_pushed: u64,
}

impl Outbox {
    /// An empty outbox for `table` that holds at most `capacity` events (at least one).
    pub fn new(table: TableId, capacity: usize) -> Outbox {
        assert!(capacity > 0, "an outbox holds at least one event");
        Outbox {
            table,
            capacity,
            events: VecDeque::new(),
            durable: 0,
            trimmed: VecDeque::new(),
            last_pushed: 0,
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
        self.last_pushed = event.event.seq.0;
        self.events.push_back(event);
        Ok(())
    }

    /// The ledger says its durable head for this table is `hash` at `seq`: drops the
    /// events it covers, when this device's event at `seq` is that one. Returns how many
    /// events were trimmed. Trims nothing for a head beyond what was pushed (it proves
    /// nothing about events not yet sent: judged again once they are) or behind the
    /// durable seq (an older head arriving late; checked against the trimmed hashes the
    /// outbox remembers). A head whose hash is not the device's at its seq is refused.
    pub fn confirm(&mut self, seq: Seq, hash: Hash32) -> Result<usize, HeadDisagrees> {
        let disagrees = |device: Hash32| HeadDisagrees {
            table: self.table.clone(),
            seq,
            ledger: hash,
            device,
        };
        if seq.0 == 0 || seq.0 > self.last_pushed {
            return Ok(0);
        }
        if seq.0 <= self.durable {
            return match self.trimmed.iter().rev().find(|(s, _)| *s == seq.0) {
                Some((_, ours)) if *ours != hash => Err(disagrees(*ours)),
                _ => Ok(0),
            };
        }
        // Pushed in seq order, one event per seq, and nothing above `durable` trimmed.
        let Some(at) = self.events.iter().position(|e| e.event.seq == seq) else {
            return Ok(0);
        };
        let ours = self.events[at].hash();
        if ours != hash {
            return Err(disagrees(ours));
        }
        for e in self.events.drain(..=at) {
            if self.trimmed.len() == TRIMMED_REMEMBERED {
                self.trimmed.pop_front();
            }
            self.trimmed.push_back((e.event.seq.0, e.hash()));
        }
        self.durable = seq.0;
        Ok(at + 1)
    }

    /// Events not yet durable, oldest first: what to republish.
    pub fn pending(&self) -> impl Iterator<Item = &Published> {
        self.events.iter()
    }

    /// Events held, not yet durable.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether no event waits to become durable.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The highest seq the ledger confirmed durable.
    pub fn durable(&self) -> Seq {
        Seq(self.durable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{default_config, FaultPlan, TableSim};
    use schemas::RuleSet;

    /// A table's opening and first round, as its device publishes them.
    fn opening_and_a_round(table: &TableId) -> Vec<Published> {
        let mut sim = TableSim::new(
            table.clone(),
            default_config(RuleSet::Csp6),
            7,
            FaultPlan::none(),
        )
        .unwrap();
        let mut events = sim.opening_events().unwrap();
        events.extend(sim.play_round().unwrap().events);
        events
    }

    #[test]
    fn trims_to_the_durable_head_and_refuses_beyond_capacity() {
        let table = TableId::new("OUT-1").unwrap();
        let events = opening_and_a_round(&table);
        let n = events.len();
        let mut o = Outbox::new(table, n);
        for e in events.clone() {
            o.push(e).unwrap();
        }
        let full = o.push(events[0].clone()).unwrap_err();
        assert_eq!((full.held, full.capacity), (n, n));
        let at = |seq: usize| (events[seq - 1].event.seq, events[seq - 1].hash());
        let (s3, h3) = at(3);
        assert_eq!(o.confirm(s3, h3), Ok(3));
        assert_eq!(o.pending().next().unwrap().event.seq, Seq(4));
        // A stale head changes nothing.
        let (s1, h1) = at(1);
        assert_eq!(o.confirm(s1, h1), Ok(0));
        assert_eq!(o.durable(), Seq(3));
        let (last, last_hash) = at(n);
        assert_eq!(o.confirm(last, last_hash), Ok(n - 3));
        assert!(o.is_empty());
    }

    /// A head's seq alone must not trim: a head of another chain for the table (or
    /// anyone's message on `ledger.<t>.head`) would trim events the ledger never stored,
    /// and the device would report them durable.
    #[test]
    fn only_a_head_naming_the_devices_own_event_trims() {
        let table = TableId::new("OUT-2").unwrap();
        let events = opening_and_a_round(&table);
        let mut o = Outbox::new(table, 100);
        for e in events.clone() {
            o.push(e).unwrap();
        }
        let n = events.len();
        let forged = Hash32([7; 32]);
        // Beyond what was sent: proves nothing, trims nothing.
        assert_eq!(o.confirm(Seq(1_000_000), forged), Ok(0));
        assert_eq!(o.confirm(Seq(u64::MAX), forged), Ok(0));
        assert_eq!(o.len(), n);
        // Another event at one of ours: a fork, refused, nothing trimmed.
        let refused = o.confirm(Seq(2), forged).unwrap_err();
        assert_eq!(
            (refused.seq, refused.ledger, refused.device),
            (Seq(2), forged, events[1].hash())
        );
        assert_eq!((o.len(), o.durable()), (n, Seq(0)));
        // The genuine head trims; a late head that disagrees with a trimmed event is
        // refused too, one that agrees changes nothing.
        assert_eq!(o.confirm(Seq(2), events[1].hash()), Ok(2));
        assert!(o.confirm(Seq(1), forged).is_err());
        assert_eq!(o.confirm(Seq(1), events[0].hash()), Ok(0));
        assert_eq!((o.len(), o.durable()), (n - 2, Seq(2)));
    }
}
