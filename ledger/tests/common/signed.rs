//! A table's chain with device keys and signed checkpoints, for the tests
//! of attestation and of its recovery.

use ledger::Incoming;
use schemas::attest::{key_event_body, Checkpoint, KeyAction, SigningKey};
use schemas::codec::{encode, WireFormat};
use schemas::{event_hash, Announcement, DeviceId, Event, EventBody, Hash32, Seq, TableId};

pub const T0: i64 = 1_780_000_000_000_000_000;

pub struct Chain {
    pub table: TableId,
    pub prev: Hash32,
    pub seq: u64,
    pub stream_seq: u64,
    pub hashes: Vec<Hash32>,
}

impl Chain {
    pub fn new(table: &str) -> Chain {
        Chain {
            table: TableId::new(table).unwrap(),
            prev: Hash32::ZERO,
            seq: 0,
            stream_seq: 0,
            hashes: Vec::new(),
        }
    }

    pub fn event(&mut self, body: EventBody) -> Incoming {
        self.seq += 1;
        let e = Event {
            v: 1,
            table: self.table.clone(),
            device: DeviceId::new("dealer-terminal").unwrap(),
            seq: Seq(self.seq),
            prev: self.prev,
            occurred_at_ns: T0 + self.seq as i64,
            round: None,
            body,
        };
        let bytes = encode(&e, WireFormat::Bincode);
        self.prev = event_hash(&e.prev, &bytes);
        self.hashes.push(self.prev);
        self.incoming(bytes)
    }

    pub fn incoming(&mut self, bytes: Vec<u8>) -> Incoming {
        self.stream_seq += 1;
        Incoming {
            bytes,
            subject_table: Some(self.table.clone()),
            stream_seq: self.stream_seq,
            received_at_ns: T0 + 1_000,
            provenance: Default::default(),
        }
    }

    pub fn key_event(
        &mut self,
        admin: &SigningKey,
        key: &SigningKey,
        action: KeyAction,
    ) -> Incoming {
        let device = DeviceId::new("dealer-terminal").unwrap();
        let body = key_event_body(admin, &self.table, device, key.public(), action);
        self.event(body)
    }

    pub fn announce(&mut self) -> Incoming {
        self.event(EventBody::Announced {
            announcement: Announcement::PlaceYourBets,
        })
    }

    /// A checkpoint of the head at `seq` (1-based), signed with `key`.
    pub fn checkpoint(&mut self, key: &SigningKey, seq: u64) -> Incoming {
        let hash = self.hashes[seq as usize - 1];
        let c = Checkpoint::sign(
            key,
            self.table.clone(),
            DeviceId::new("dealer-terminal").unwrap(),
            Seq(seq),
            hash,
            T0,
        );
        self.incoming(c.to_bincode())
    }
}

pub fn keys() -> (SigningKey, SigningKey) {
    (
        SigningKey::derive_for_simulation("test admin"),
        SigningKey::derive_for_simulation("test device"),
    )
}
