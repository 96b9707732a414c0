//! Rebuild time per million events (issue 43 item 4): sealed days' files imported into
//! an empty ledger (`Writer::import_day`), each checked against its seal first. The
//! source ledger is built through the library (`tests/common/archived.rs`): two tables,
//! 1,000 events a table a day, each day sealed and written as a day file in memory.
//! Only the imports are timed; fetching from the bucket is not included.
//!
//! `cargo run --release -p ledger --example rebuild_speed -- [events, default 1000000] [dir]`
//!
//! Figures go to BENCHMARKS.md; nothing here asserts a target.

use ledger::Ledger;
use std::path::PathBuf;
use std::time::Instant;

#[path = "../tests/common/mod.rs"]
mod common;
use common::archived::{rule, Builder, TABLES};

const EVENTS_PER_TABLE_DAY: u64 = 1_000;

fn main() {
    let events: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("events: a number"))
        .unwrap_or(1_000_000);
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = std::env::args()
        .nth(2)
        .map(PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    let per_day = EVENTS_PER_TABLE_DAY * TABLES.len() as u64;
    let days = events.div_ceil(per_day);
    let t0 = Instant::now();
    let source = Ledger::open(root.join("source")).expect("open");
    source.writer().set_day_rule(&rule()).expect("rule");
    let mut b = Builder::new().events_per_day(EVENTS_PER_TABLE_DAY);
    let mut files = Vec::new();
    for _ in 0..days {
        b.append_day(&source);
        let day = b.seal_day(&source);
        files.push(source.reader().day_file(&day).expect("day file"));
    }
    let file_bytes: usize = files.iter().map(Vec::len).sum();
    println!(
        "built {days} sealed days, {} events, {file_bytes} bytes of day files, in {:.1?}",
        days * per_day,
        t0.elapsed()
    );
    let key = schemas::attest::SigningKey::derive_for_simulation("house-seal").public();
    let rebuilt = Ledger::open(root.join("rebuilt")).expect("open");
    rebuilt.writer().set_day_rule(&rule()).expect("rule");
    let t1 = Instant::now();
    let mut imported = 0u64;
    for file in &files {
        imported += rebuilt
            .writer()
            .import_day(file, &key)
            .expect("import")
            .events;
    }
    let took = t1.elapsed();
    assert_eq!(rebuilt.reader().heads(), source.reader().heads());
    let per_million_s = took.as_secs_f64() * 1e6 / imported as f64;
    println!(
        "imported {imported} events of {days} days in {:.2} s: {per_million_s:.1} s per million events, {:.0} events/s",
        took.as_secs_f64(),
        imported as f64 / took.as_secs_f64()
    );
}
