//! The way off sled, measured: copies a ledger's spaces from sled into redb through the
//! `Store` trait (`ledger::store::migrate`), or verifies a ledger on either store.
//! DEPENDENCIES.md keeps the figures. Run each step under `/usr/bin/time -v` for its RSS.
//!
//! `cargo run --release -p ledger --example migrate_store -- copy SLED_DIR REDB_DIR`
//! `cargo run --release -p ledger --example migrate_store -- verify sled|redb DIR`

use ledger::store::choice::StoreKind;
use ledger::store::migrate::copy_spaces;
use ledger::store::redb_store::RedbStore;
use ledger::store::SledStore;
use ledger::Ledger;
use std::path::Path;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["copy", from, to] => copy(Path::new(from), Path::new(to)),
        ["verify", kind, dir] => verify(kind, Path::new(dir)),
        _ => {
            eprintln!("usage: migrate_store copy SLED_DIR REDB_DIR | verify sled|redb DIR");
            std::process::exit(2);
        }
    }
}

fn copy(from: &Path, to: &Path) {
    let src = SledStore::open(from).expect("open the sled ledger");
    let dst = RedbStore::open(to).expect("open the redb file");
    let t0 = Instant::now();
    let report = copy_spaces(&src, &dst).expect("copy");
    let copy_ms = t0.elapsed().as_millis();
    println!("copied in {copy_ms} ms: {} bytes", report.bytes);
    for (space, n) in &report.entries {
        println!("  {space:?}: {n} entries");
    }
    println!("sled directory: {} bytes", dir_bytes(from));
    println!("redb directory: {} bytes", dir_bytes(to));
}

fn verify(kind: &str, dir: &Path) {
    let kind = match kind {
        "sled" => StoreKind::Sled,
        "redb" => StoreKind::Redb,
        other => panic!("a store kind: sled or redb, not {other}"),
    };
    let t0 = Instant::now();
    let ledger = Ledger::with_store(kind.open(dir).expect("open")).expect("ledger");
    let open_ms = t0.elapsed().as_millis();
    let t1 = Instant::now();
    let report = ledger.verifier().verify().expect("verify");
    let verify_ms = t1.elapsed().as_millis();
    let events: u64 = report
        .tables
        .iter()
        .map(|t| match t {
            ledger::TableVerdict::Ok { events, .. } => *events,
            _ => 0,
        })
        .sum();
    println!(
        "{kind:?}: open {open_ms} ms, verify {verify_ms} ms: ok {}, {} tables, {events} events in verified tables, arrival {:?}",
        report.is_ok(),
        report.tables.len(),
        report.arrival
    );
    if !report.is_ok() {
        println!("failures: {}", report.failures());
    }
}

/// Bytes of the files under `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let p = e.path();
        total += if p.is_dir() {
            dir_bytes(&p)
        } else {
            e.metadata().map(|m| m.len()).unwrap_or(0)
        };
    }
    total
}
