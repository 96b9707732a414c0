//! The ledger writer's cost without NATS: `append` + `flush` of batches shaped like
//! ingest's benchmark (512 events of ~150 bytes spread over 16 tables, bincode), into a
//! ledger that grows across iterations as a live one does; then the same with each table's
//! enrolled key and its signed checkpoints (one every 45 events of a table). Ingest's end-to-end figure
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
    let mut group = c.benchmark_group("ledger");
    group.throughput(Throughput::Elements(BATCH as u64));
    for (name, mut chains) in [
        ("append 512 events over 16 tables + flush", Chains::new()),
        (
            "append 512 events over 16 tables and their signed checkpoints + flush",
            Chains::signed(),
        ),
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let ledger = Ledger::open(dir.path().join("ledger")).expect("open ledger");
        if let Some(admin) = chains.admin() {
            ledger
                .writer()
                .trust_admin_keys([admin])
                .expect("trust the bench admin");
        }
        group.bench_function(name, |b| {
            b.iter_batched(
                || chains.batch(now_ns()),
                |(events, checkpoints)| {
                    let out = ledger
                        .writer()
                        .append(&events, &checkpoints)
                        .expect("append");
                    assert!(matches!(
                        out.events.last(),
                        Some(ledger::Appended::Stored { .. })
                    ));
                    assert!(out
                        .checkpoints
                        .iter()
                        .all(|c| matches!(c, ledger::attest::CheckpointOutcome::Kept { .. })));
                    ledger.flush().expect("flush");
                },
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, append);
criterion_main!(benches);
