//! Replay throughput: events per second through decode (bincode, as stored) +
//! reconstruction + settlement (`rules::settle`) + disputes, over >= 1M simulated events.
//! The events are generated once, outside the timed loop. Measured on one thread and on
//! one thread per core (tables spread over threads, as `roundledger audit` does).
//!
//! Run: `cargo bench -p replayer --bench replay` (REPLAYER_BENCH_EVENTS to change the size).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use replayer::TableReplayer;
use schemas::codec::decode;
use schemas::{RuleSet, TableId};
use simulator::{default_config, FaultPlan, TableSim};

/// (table, the exact bytes of its events in chain order).
fn ledger(events_min: usize) -> Vec<(TableId, Vec<Vec<u8>>)> {
    let mut tables = Vec::new();
    let mut total = 0;
    let mut i = 0u64;
    while total < events_min {
        let rs = RuleSet::ALL[(i % 5) as usize];
        let table = TableId::new(format!("B{i:03}")).expect("valid id");
        let mut sim =
            TableSim::new(table.clone(), default_config(rs), i, FaultPlan::all(0.01)).expect("sim");
        let mut bytes: Vec<Vec<u8>> = sim
            .opening_events()
            .expect("open")
            .into_iter()
            .map(|p| p.bytes)
            .collect();
        for _ in 0..500 {
            bytes.extend(
                sim.play_round()
                    .expect("round")
                    .events
                    .into_iter()
                    .map(|p| p.bytes),
            );
        }
        total += bytes.len();
        tables.push((table, bytes));
        i += 1;
    }
    tables
}

fn replay_one((table, events): &(TableId, Vec<Vec<u8>>)) -> usize {
    let mut rounds = 0;
    let mut rep = TableReplayer::new(table.clone());
    for b in events {
        let (e, _) = decode(b).expect("simulated events decode");
        rounds += rep.push(e.seq, &e).len();
    }
    rounds + rep.finish().len()
}

/// Every table on `workers` threads (`replayer::map_tables`, as `roundledger audit` does).
fn replay_all(tables: &[(TableId, Vec<Vec<u8>>)], workers: usize) -> usize {
    replayer::map_tables(tables, workers, replay_one)
        .iter()
        .sum()
}

fn bench(c: &mut Criterion) {
    let n: usize = std::env::var("REPLAYER_BENCH_EVENTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let tables = ledger(n);
    let events: usize = tables.iter().map(|t| t.1.len()).sum();
    let mut g = c.benchmark_group("replay");
    g.sample_size(10);
    g.throughput(Throughput::Elements(events as u64));
    // One thread: the per-core figure.
    g.bench_function(
        format!("decode+reconstruct+settle {events} events, 1 thread"),
        |b| b.iter(|| replay_all(&tables, 1)),
    );
    // Tables spread over the machine's cores: what an audit of a floor gets.
    let workers = replayer::default_workers();
    g.bench_function(
        format!("decode+reconstruct+settle {events} events, {workers} threads"),
        |b| b.iter(|| replay_all(&tables, workers)),
    );
    // The decode share of the above, to see where the time goes.
    g.bench_function(format!("decode only {events} events"), |b| {
        b.iter(|| {
            let mut n = 0u64;
            for (_, events) in &tables {
                for e in events {
                    n += decode(e).expect("decodes").0.seq.0 & 1;
                }
            }
            n
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
