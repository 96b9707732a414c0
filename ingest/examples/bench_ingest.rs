//! Runs `ingest::bench_ingest` against a private nats-server (natsd guard) and a ledger in
//! a temp dir, and prints the report as JSON.
//!
//! `cargo run --release -p ingest --example bench_ingest -- [MESSAGES] [BATCH]`
//! (defaults 100000 and 512).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let messages: u64 = args.next().map_or(Ok(100_000), |a| a.parse())?;
    let batch: usize = args.next().map_or(Ok(512), |a| a.parse())?;
    let server = natsd::NatsServer::start()?;
    let dir = tempfile::tempdir()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let report = runtime.block_on(ingest::bench_ingest(
        &server.url(),
        &dir.path().join("ledger"),
        messages,
        batch,
    ))?;
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
