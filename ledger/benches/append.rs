//! The ledger writer's cost without NATS: `append_batch` + `flush` of batches shaped like
//! ingest's benchmark (512 events of ~150 bytes spread over 16 tables, bincode), into a
//! ledger that grows across iterations as a live one does. Ingest's end-to-end figure
//! (`roundledger bench-ingest`) is this plus JetStream; this one isolates the part the
//! ledger's layout decides.
//!
//! `cargo bench -p ledger --bench append`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ledger::{Incoming, Ledger};
use schemas::{codec, DeviceId, Event, Hash32, Seq, TableId};

const TABLES: usize = 16;
const BATCH: usize = 512;

struct Chains {
    tables: Vec<(TableId, Seq, Hash32)>,
    device: DeviceId,
    stream_seq: u64,
}

impl Chains {
    fn batch(&mut self, now_ns: i64) -> Vec<Incoming> {
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

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

fn append(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = Ledger::open(dir.path().join("ledger")).expect("open ledger");
    let mut chains = Chains {
        tables: (0..TABLES)
            .map(|i| {
                let t = TableId::new(format!("BENCH-{i:02}")).expect("table id");
                (t, Seq(0), Hash32::ZERO)
            })
            .collect(),
        device: DeviceId::new("bench-ctl").expect("device id"),
        stream_seq: 0,
    };
    let mut group = c.benchmark_group("ledger");
    group.throughput(Throughput::Elements(BATCH as u64));
    group.bench_function("append_batch 512 events over 16 tables + flush", |b| {
        b.iter_batched(
            || chains.batch(now_ns()),
            |batch| {
                let out = ledger.append_batch(&batch).expect("append");
                assert!(matches!(out.last(), Some(ledger::Appended::Stored { .. })));
                ledger.flush().expect("flush");
            },
            criterion::BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, append);
criterion_main!(benches);
