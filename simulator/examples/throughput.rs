//! Measures the simulator: events generated per second (pure layer), and events published
//! per second to a local nats-server with JetStream (started by the natsd guard).
//!
//! `cargo run --release -p simulator --example throughput -- [tables] [rounds_per_table]`

use async_nats::jetstream::{self, stream};
use schemas::subjects::{EVENTS_WILDCARD, STREAM};
use simulator::{publish_floor, FaultPlan, Floor, PublishOptions};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let tables: usize = args.get(1).map_or(Ok(10), |s| s.parse())?;
    let rounds: u64 = args.get(2).map_or(Ok(200), |s| s.parse())?;

    let mut floor = Floor::new(tables, 1, FaultPlan::payout_errors(0.02))?;
    let start = Instant::now();
    let mut events = 0usize;
    for t in &mut floor.tables {
        events += t.opening_events()?.len();
        for _ in 0..rounds {
            events += t.play_round()?.events.len();
        }
        events += t.closing_events()?.len();
    }
    let s = start.elapsed().as_secs_f64();
    println!(
        "generate: {tables} tables x {rounds} rounds = {events} events in {s:.2} s: {:.0} events/s",
        events as f64 / s
    );

    let server = natsd::NatsServer::start()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let js = jetstream::new(async_nats::connect(server.url()).await?);
        js.get_or_create_stream(stream::Config {
            name: STREAM.to_string(),
            subjects: vec![EVENTS_WILDCARD.to_string()],
            storage: stream::StorageType::File,
            ..Default::default()
        })
        .await?;
        let floor = Floor::new(tables, 1, FaultPlan::payout_errors(0.02))?;
        let start = Instant::now();
        let report = publish_floor(&server.url(), floor.tables, rounds, None, PublishOptions::default()).await?;
        let s = start.elapsed().as_secs_f64();
        println!(
            "publish: {} events ({} rounds) in {s:.2} s: {:.0} events/s, acked by JetStream (file storage)",
            report.events.len(),
            report.rounds,
            report.events.len() as f64 / s
        );
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    Ok(())
}
