//! The ledger writer's cost without NATS: `append_batch` + `flush` of batches shaped like
//! ingest's benchmark (512 events of ~150 bytes spread over 16 tables, bincode), into a
//! ledger that grows across iterations as a live one does. Ingest's end-to-end figure
//! (`roundledger bench-ingest`) is this plus JetStream; this one isolates the part the
//! ledger's layout decides.
//!
//! `cargo bench -p ledger --bench append`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ledger::Ledger;

#[path = "support/batches.rs"]
mod batches;
use batches::{now_ns, Chains, BATCH};

fn append(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = Ledger::open(dir.path().join("ledger")).expect("open ledger");
    let mut chains = Chains::new();
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
