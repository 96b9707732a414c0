//! Batches shaped like ingest's benchmark (512 events of ~150 bytes spread over 16 tables,
//! bincode), for the ledger's write-path measurements: the criterion bench `append` and
//! the example `append_cpu` include this file, so both measure the same input. With
//! `Chains::signed`, as in ingest's benchmark, each table's first event enrolls its device's
//! key (admin-signed) and the device signs a checkpoint of every `CHECKPOINT_EVERY`th event.

// Each bench and example that includes this file uses a part of it.
#![allow(dead_code)]

use ledger::Incoming;
use schemas::attest::{key_event_body, Checkpoint, KeyAction, PublicKey, SigningKey};
use schemas::{codec, DeviceId, Event, Hash32, Seq, TableId};

pub const TABLES: usize = 16;
pub const BATCH: usize = 512;
/// A table's checkpoint cadence in `Chains::signed`: ingest's benchmark's, the seeded
/// floor's mean round.
pub const CHECKPOINT_EVERY: u64 = 45;

/// The chains of `TABLES` tables, continued from one batch to the next.
pub struct Chains {
    tables: Vec<(TableId, Seq, Hash32)>,
    device: DeviceId,
    stream_seq: u64,
    /// The admin and each table's device key, when the chains enroll keys and sign.
    signing: Option<(SigningKey, Vec<SigningKey>)>,
}

impl Default for Chains {
    fn default() -> Chains {
        Chains::new()
    }
}

impl Chains {
    /// Chains of filler events, no keys and no checkpoints.
    pub fn new() -> Chains {
        Chains {
            tables: (0..TABLES)
                .map(|i| {
                    let t = TableId::new(format!("BENCH-{i:02}")).expect("table id");
                    (t, Seq(0), Hash32::ZERO)
                })
                .collect(),
            device: DeviceId::new("bench-ctl").expect("device id"),
            stream_seq: 0,
            signing: None,
        }
    }

    /// Chains that enroll a key per table and carry its signed checkpoints; the ledger
    /// must trust `admin()`.
    pub fn signed() -> Chains {
        let signers = (0..TABLES)
            .map(|i| SigningKey::derive_for_simulation(&format!("bench device {i}")))
            .collect();
        let admin = SigningKey::derive_for_simulation("bench admin");
        Chains {
            signing: Some((admin, signers)),
            ..Chains::new()
        }
    }

    /// The admin key that signs the enrollments, if the chains sign.
    pub fn admin(&self) -> Option<PublicKey> {
        self.signing.as_ref().map(|(admin, _)| admin.public())
    }

    /// The next `BATCH` events, round-robin over the tables, stamped `now_ns`, and the
    /// checkpoints due among them (none unless `signed`).
    pub fn batch(&mut self, now_ns: i64) -> (Vec<Incoming>, Vec<Incoming>) {
        let mut checkpoints = Vec::new();
        let events = (0..BATCH)
            .map(|k| {
                let i = k % TABLES;
                let (table, seq, prev) = &mut self.tables[i];
                *seq = Seq(seq.0 + 1);
                let mut event =
                    Event::filler(table.clone(), self.device.clone(), *seq, *prev, now_ns);
                if let (Some((admin, signers)), 1) = (&self.signing, seq.0) {
                    event.round = None;
                    event.body = key_event_body(
                        admin,
                        table,
                        self.device.clone(),
                        signers[i].public(),
                        KeyAction::Enroll,
                    );
                }
                let bytes = codec::to_bincode(&event);
                *prev = schemas::event_hash(prev, &bytes);
                self.stream_seq += 1;
                if let (Some((_, signers)), 0) = (&self.signing, seq.0 % CHECKPOINT_EVERY) {
                    let c = Checkpoint::sign(
                        &signers[i],
                        table.clone(),
                        self.device.clone(),
                        *seq,
                        *prev,
                        now_ns,
                    );
                    checkpoints.push(Incoming {
                        bytes: c.to_bincode(),
                        subject_table: Some(table.clone()),
                        stream_seq: 0, // numbered below, after the batch's events
                        received_at_ns: now_ns,
                        provenance: Default::default(),
                    });
                }
                Incoming {
                    bytes,
                    subject_table: Some(table.clone()),
                    stream_seq: self.stream_seq,
                    received_at_ns: now_ns,
                    provenance: Default::default(),
                }
            })
            .collect();
        for c in &mut checkpoints {
            self.stream_seq += 1;
            c.stream_seq = self.stream_seq;
        }
        (events, checkpoints)
    }
}

pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}
