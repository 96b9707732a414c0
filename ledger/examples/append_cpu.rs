//! CPU per event of the ledger's write path: `append_batch` + `flush` of batches shaped like
//! ingest's benchmark (512 events of ~150 bytes over 16 tables, bincode), into a growing
//! ledger. Prints wall time and the process's CPU time (all threads, sled's own included)
//! per event, under the binary's allocator. On a 2-core machine shared with nats-server,
//! the CPU figure is what the writer takes from message delivery; BENCHMARKS.md (ingest)
//! says how much of the ingest ratio that decides. Linux only (`/proc/self/stat`).
//!
//! `cargo run --release -p ledger --example append_cpu -- [batches, default 400] [--signed]`
//! (`--signed`: each table enrolls a device key and the batches carry its signed
//! checkpoints, one every 45 events of a table, as ingest's benchmark does).

use ledger::attest::CheckpointOutcome;
use ledger::{Incoming, Ledger};
use std::time::{Duration, Instant};

#[path = "../benches/support/batches.rs"]
mod batches;
use batches::{now_ns, Chains, BATCH};

/// The `roundledger` binary's allocator: under glibc malloc this example measured 4.05-4.15
/// us per event where the binary's writer costs 2.9-3.6 (sled allocates and frees a node
/// copy on every insert).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Clock ticks per second of `/proc/<pid>/stat` (USER_HZ, 100 on Linux).
const TICKS_PER_SEC: u64 = 100;

/// User + system CPU time of this process so far.
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("read /proc/self/stat");
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    Duration::from_millis(ticks * 1000 / TICKS_PER_SEC)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let signed = args.iter().any(|a| a == "--signed");
    let batches: usize = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map(|a| a.parse().expect("batches: a number"))
        .unwrap_or(400);
    let dir = tempfile::tempdir().expect("temp dir");
    let ledger = Ledger::open(dir.path().join("ledger")).expect("open ledger");
    let mut chains = if signed {
        Chains::signed()
    } else {
        Chains::new()
    };
    if let Some(admin) = chains.admin() {
        ledger
            .writer()
            .trust_admin_keys([admin])
            .expect("trust the bench admin");
    }
    let now_ns = now_ns();
    // Built before timing: only the ledger's work is measured.
    let input: Vec<(Vec<Incoming>, Vec<Incoming>)> =
        (0..batches).map(|_| chains.batch(now_ns)).collect();
    let (cpu0, wall0) = (process_cpu(), Instant::now());
    let mut flushing = Duration::ZERO;
    let mut kept = 0;
    for (events, checkpoints) in &input {
        let out = ledger.writer().append(events, checkpoints).expect("append");
        assert!(matches!(
            out.events.last(),
            Some(ledger::Appended::Stored { .. })
        ));
        for c in &out.checkpoints {
            assert!(matches!(c, CheckpointOutcome::Kept { .. }), "{c:?}");
            kept += 1;
        }
        let t = Instant::now();
        ledger.flush().expect("flush");
        flushing += t.elapsed();
    }
    let (cpu, wall) = (process_cpu() - cpu0, wall0.elapsed());
    let messages = (batches * BATCH + kept) as f64;
    println!(
        "{} events and {kept} checkpoints in {batches} calls: wall {:.2} us/message ({:?}, of it flush {:?}), cpu {:.2} us/message",
        batches * BATCH,
        wall.as_secs_f64() * 1e6 / messages,
        wall,
        flushing,
        cpu.as_secs_f64() * 1e6 / messages
    );
}
