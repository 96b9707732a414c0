//! What a checkpoint's signature check costs: one at a time (`verify`), and as ingest checks
//! a call's checkpoints, together (`verify_many`), 16 of them by 16 devices (a call of
//! ingest's benchmark carries 11-16), with the device keys decompressed anew for every
//! call or kept in the ledger's `KeyCache` across calls.
//!
//! `cargo bench -p schemas --bench signatures`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use schemas::attest::{verify, verify_many, KeyCache, PublicKey, Signature, SigningKey};

const CALL: usize = 16;

fn signatures(c: &mut Criterion) {
    let signed: Vec<(PublicKey, Vec<u8>, Signature)> = (0..CALL)
        .map(|i| {
            let key = SigningKey::derive_for_simulation(&format!("bench device {i}"));
            // About a checkpoint's signed bytes: ids, seq, hash, time.
            let message = vec![i as u8; 96];
            let signature = key.sign(&message);
            (key.public(), message, signature)
        })
        .collect();
    let items: Vec<(&PublicKey, &[u8], &Signature)> = signed
        .iter()
        .map(|(k, m, s)| (k, m.as_slice(), s))
        .collect();

    let mut group = c.benchmark_group("checkpoint signatures");
    group.throughput(Throughput::Elements(CALL as u64));
    group.bench_function("verify, one at a time", |b| {
        b.iter(|| assert!(items.iter().all(|(k, m, s)| verify(k, m, s))))
    });
    group.bench_function("verify_many, keys decompressed every call", |b| {
        b.iter(|| {
            let verdicts = verify_many(&mut KeyCache::default(), &items);
            assert!(verdicts.iter().all(|v| *v));
        })
    });
    let mut keys = KeyCache::default();
    group.bench_function("verify_many, keys kept across calls", |b| {
        b.iter(|| {
            let verdicts = verify_many(&mut keys, &items);
            assert!(verdicts.iter().all(|v| *v));
        })
    });
    group.finish();
}

criterion_group!(benches, signatures);
criterion_main!(benches);
