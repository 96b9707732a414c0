//! `roundledger cluster status`: the ledger nodes on one bus, from JetStream alone. Each
//! node's consumer lag, each table's heads across the nodes (agree, behind, diverged),
//! and each lease's holder. Exit 1 when a table diverges.
//!
//! It reads the replica bucket (`ingest::replicas`), the stream's consumers and the lease
//! buckets (`ingest::lease`); it opens no ledger.

use crate::Outcome;
use anyhow::{Context, Result};
use async_nats::jetstream;
use futures::StreamExt;
use ingest::replicas::{agreement, TableAgreement};
use schemas::subjects;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(clap::Subcommand)]
enum Sub {
    /// Nodes, their lag, heads agreement per table, lease holders.
    Status(StatusArgs),
}

#[derive(clap::Args)]
struct StatusArgs {
    /// NATS server URL (several comma-separated for a cluster).
    #[arg(long, default_value = "nats://127.0.0.1:4222")]
    nats: String,
    #[command(flatten)]
    bus: crate::bus::BusArgs,
}

pub fn run(args: Args) -> Result<Outcome> {
    let Sub::Status(a) = args.command;
    let rt = crate::runtime::runtime()?;
    rt.block_on(status(a))
}

async fn status(a: StatusArgs) -> Result<Outcome> {
    let client = bus::connect(&a.nats, &a.bus.access())
        .await
        .context("connecting to the bus")?;
    let js = jetstream::new(client);
    let heads = read_heads_retrying(&js)
        .await
        .context("reading the replica bucket")?;
    let mut nodes: Vec<String> = heads.values().flat_map(|m| m.keys().cloned()).collect();
    nodes.sort();
    nodes.dedup();
    if nodes.is_empty() {
        println!("nodes: none in bucket {}", subjects::REPLICA_BUCKET);
    } else {
        println!("nodes: {}", nodes.join(" "));
    }
    print_lag(&js, &nodes).await;
    let diverged = print_tables(&heads);
    print_leases(&js).await;
    Ok(if diverged {
        Outcome::Findings
    } else {
        Outcome::Clean
    })
}

/// How many times `status` reads the replica bucket before it gives up, and the pause
/// between reads. A restarted NATS server holds its bucket's leader election for seconds.
const READ_ATTEMPTS: u32 = 5;
const READ_PAUSE: std::time::Duration = std::time::Duration::from_secs(3);

/// The replica bucket's heads, read again while the bucket has no leader (each failure
/// said on stderr); the last error when every attempt fails.
async fn read_heads_retrying(js: &jetstream::Context) -> Result<ingest::replicas::NodeHeads> {
    let mut attempt = 1;
    loop {
        match ingest::replicas::read_heads(js).await {
            Ok(heads) => return Ok(heads),
            Err(e) if attempt < READ_ATTEMPTS => {
                eprintln!("reading the replica bucket (attempt {attempt}/{READ_ATTEMPTS}): {e}");
                tokio::time::sleep(READ_PAUSE).await;
                attempt += 1;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Each node's consumer: messages not yet delivered and not yet acked; unknown when its
/// info cannot be read (said so, never 0).
async fn print_lag(js: &jetstream::Context, nodes: &[String]) {
    let stream = js.get_stream(subjects::STREAM).await;
    for node in nodes {
        let name = subjects::ingest_consumer(Some(node));
        let info = match &stream {
            Ok(s) => s.consumer_info(&name).await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match info {
            Ok(i) => println!(
                "node {node}: consumer {name}, lag {} pending, {} unacked",
                i.num_pending, i.num_ack_pending
            ),
            Err(e) => println!("node {node}: consumer {name}, lag unknown ({e})"),
        }
    }
}

/// One line per table that does not agree, then the counts. Whether any diverges.
fn print_tables(heads: &ingest::replicas::NodeHeads) -> bool {
    let (mut agree, mut behind, mut diverged) = (0usize, 0usize, 0usize);
    for (table, by_node) in heads {
        match agreement(by_node) {
            TableAgreement::Agree => agree += 1,
            TableAgreement::Behind { head_seq, lag } => {
                behind += 1;
                println!("table {table}: behind, head seq {head_seq}, lag {lag} events");
            }
            TableAgreement::Diverged { seq, hashes } => {
                diverged += 1;
                let named: Vec<String> = hashes.iter().map(|(n, h)| format!("{n} {h}")).collect();
                println!("table {table}: DIVERGED at seq {seq}: {}", named.join(", "));
            }
        }
    }
    println!("tables: {agree} agree, {behind} behind, {diverged} diverged");
    diverged > 0
}

/// Every lease bucket's holder and revision; "unknown" with the error when unreadable.
async fn print_leases(js: &jetstream::Context) {
    let prefix = format!("KV_{}", ingest::lease::bucket_name(""));
    let mut names = js.stream_names();
    let mut duties = Vec::new();
    while let Some(name) = names.next().await {
        let name = match name {
            Ok(name) => name,
            Err(e) => {
                println!("leases: unknown (listing streams: {e})");
                return;
            }
        };
        if let Some(duty) = name.strip_prefix(&prefix) {
            duties.push(duty.to_string());
        }
    }
    if duties.is_empty() {
        println!("leases: none");
    }
    for duty in duties {
        let store = match js.get_key_value(ingest::lease::bucket_name(&duty)).await {
            Ok(store) => store,
            Err(e) => {
                println!("lease {duty}: unknown (its bucket: {e})");
                continue;
            }
        };
        match store.entry(&duty).await {
            Ok(Some(e)) if e.operation == jetstream::kv::Operation::Put => println!(
                "lease {duty}: held by {} at revision {}",
                String::from_utf8_lossy(&e.value),
                e.revision
            ),
            Ok(_) => println!("lease {duty}: free"),
            Err(e) => println!("lease {duty}: unknown ({e})"),
        }
    }
}
