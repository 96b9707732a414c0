//! Test setup shared by the API's integration tests.

/// Two simulated tables from `start_ns`, `rounds` rounds each under `plan`, appended to
/// `ledger` as ingest would (`chunk` messages a call) and flushed. The simulator's admin
/// key is trusted first, so its enrollments take effect.
pub fn play_floor(
    ledger: &ledger::Ledger,
    plan: simulator::FaultPlan,
    start_ns: i64,
    rounds: u64,
    chunk: usize,
) {
    ledger
        .trust_admin_keys([simulator::admin_key().public()])
        .unwrap();
    let mut floor = simulator::Floor::new(2, 30, plan)
        .unwrap()
        .starting_at(start_ns);
    let mut events = Vec::new();
    for t in floor.tables.iter_mut() {
        events.extend(t.opening_events().unwrap());
        for _ in 0..rounds {
            events.extend(t.play_round().unwrap().events);
        }
        events.extend(t.closing_events().unwrap());
    }
    let batch: Vec<ledger::Incoming> = events
        .iter()
        .enumerate()
        .map(|(i, p)| ledger::Incoming {
            subject_table: Some(p.event.table.clone()),
            stream_seq: i as u64 + 1,
            received_at_ns: p.event.occurred_at_ns,
            bytes: p.bytes.clone(),
            provenance: Default::default(),
        })
        .collect();
    for part in batch.chunks(chunk) {
        ledger.append_batch(part).unwrap();
    }
    ledger.flush().unwrap();
}
