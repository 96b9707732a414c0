//! A hand-written table chain for the golden finance tests: events chained and encoded
//! as a device writes them, and the property's day rule with three shifts.

#[allow(dead_code)]
pub mod golden;

use ledger::days::DayRule;
use schemas::{DeviceId, Event, EventBody, Hash32, RoundId, Seq, TableId};

/// The day rule of the golden shifts: days from 06:00 UTC, shifts at 06:00, 14:00, 22:00.
pub fn rule() -> DayRule {
    DayRule::new("06:00", "UTC")
        .unwrap()
        .with_shifts("06:00,14:00,22:00")
        .unwrap()
}

/// A table's chain as it is written: seq, prev hash, and the messages for the ledger.
pub struct Chain {
    pub table: TableId,
    pub seq: u64,
    pub prev: Hash32,
    pub round: u64,
    pub out: Vec<ledger::Incoming>,
}

impl Chain {
    pub fn new(table: &str) -> Chain {
        Chain {
            table: TableId::new(table).unwrap(),
            seq: 0,
            prev: Hash32::ZERO,
            round: 0,
            out: Vec::new(),
        }
    }

    pub fn push(&mut self, at_ns: i64, round: Option<u64>, body: EventBody) {
        self.seq += 1;
        let e = Event {
            v: 1,
            table: self.table.clone(),
            device: DeviceId::new("dealer-terminal").unwrap(),
            seq: Seq(self.seq),
            prev: self.prev,
            occurred_at_ns: at_ns,
            round: round.map(RoundId),
            body,
        };
        let bytes = schemas::codec::encode(&e, schemas::WireFormat::Bincode);
        self.prev = schemas::chain::event_hash(&self.prev, &bytes);
        self.out.push(ledger::Incoming {
            bytes,
            subject_table: Some(self.table.clone()),
            stream_seq: 0,
            received_at_ns: at_ns,
            provenance: Default::default(),
        });
    }
}
