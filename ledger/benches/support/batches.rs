//! Batches shaped like ingest's benchmark (512 events of ~150 bytes spread over 16 tables,
//! bincode), for the ledger's write-path measurements: the criterion bench `append` and
//! the example `append_cpu` include this file, so both measure the same input.

use ledger::Incoming;
use schemas::{codec, DeviceId, Event, Hash32, Seq, TableId};

pub const TABLES: usize = 16;
pub const BATCH: usize = 512;

/// The chains of `TABLES` tables, continued from one batch to the next.
pub struct Chains {
    tables: Vec<(TableId, Seq, Hash32)>,
    device: DeviceId,
    stream_seq: u64,
}

impl Default for Chains {
    fn default() -> Chains {
        Chains::new()
    }
}

impl Chains {
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
        }
    }

    /// The next `BATCH` events, round-robin over the tables, stamped `now_ns`.
    pub fn batch(&mut self, now_ns: i64) -> Vec<Incoming> {
        (0..BATCH)
            .map(|k| {
                let (table, seq, prev) = &mut self.tables[k % TABLES];
                *seq = Seq(seq.0 + 1);
                let event = Event::filler(table.clone(), self.device.clone(), *seq, *prev, now_ns);
                let bytes = codec::to_bincode(&event);
                *prev = schemas::event_hash(prev, &bytes);
                self.stream_seq += 1;
                Incoming {
                    bytes,
                    subject_table: Some(table.clone()),
                    stream_seq: self.stream_seq,
                    received_at_ns: now_ns,
                }
            })
            .collect()
    }
}

pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}
