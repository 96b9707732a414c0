//! What a ledger costs at 1 and at many archived gaming days, in one run, with the ratio
//! (issue 40: costs stay flat as archived days pile up). Two ledgers are built through the
//! library (`tests/common/archived.rs`): two tables, three events a table a day, each day
//! sealed and moved to the archive tier, then one hot sealed day. Then, on each:
//! - open: the first open after the build; restart: the median of reopens;
//! - `verify_day` of the hot day (`roundledger day verify`), on a fresh open;
//! - a lookup of a hot event, and of an archived one (first read: its frame decodes);
//! - with `ROUNDLEDGER_BIN` set, `audit --day` and `report --day` of the hot day, run as
//!   an operator runs them.
//!
//! Also prints what the open read (`Reader::store_reads`). Figures go to BENCHMARKS.md;
//! nothing here asserts a target.
//!
//! `ROUNDLEDGER_BIN=target/release/roundledger \
//!  cargo run --release -p ledger --example archived_days -- [days, default 3650] [dir]`

use ledger::Ledger;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[path = "../tests/common/mod.rs"]
mod common;
use common::archived::{Builder, TABLES};

/// Reopens, `verify_day` calls and command runs whose median is taken.
const RUNS: usize = 5;

fn main() {
    let days: u32 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("days: a number"))
        .unwrap_or(3650);
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = std::env::args()
        .nth(2)
        .map(PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    let mut rows = Vec::new();
    for n in [1, days] {
        let dir = root.join(format!("days-{n}"));
        let t0 = Instant::now();
        let hot = Builder::new().build(&Ledger::open(&dir).expect("open"), n);
        println!(
            "built {n} archived days in {:.1?} at {}",
            t0.elapsed(),
            dir.display()
        );
        rows.push(measure(&dir, &hot));
    }
    print_table(&rows, days);
}

/// One ledger's figures, in the order of `NAMES`.
fn measure(dir: &Path, hot: &str) -> Vec<Option<Duration>> {
    let t0 = Instant::now();
    let l = Ledger::open(dir).expect("open");
    let open = t0.elapsed();
    println!("open read {:?}", l.reader().store_reads());
    drop(l);
    let restart = median((0..RUNS).map(|_| {
        let t0 = Instant::now();
        drop(Ledger::open(dir).expect("reopen"));
        t0.elapsed()
    }));
    let verify_day = median((0..RUNS).map(|_| {
        let l = Ledger::open(dir).expect("reopen");
        let t0 = Instant::now();
        assert!(l
            .verifier()
            .verify_day(hot, None)
            .expect("verify_day")
            .is_ok());
        t0.elapsed()
    }));
    let (hot_lookup, archived_lookup) = lookups(dir);
    let bin = std::env::var_os("ROUNDLEDGER_BIN").map(PathBuf::from);
    let cmd = |args: &[&str]| bin.as_deref().map(|b| run(b, dir, args));
    vec![
        Some(open),
        Some(restart),
        Some(verify_day),
        Some(hot_lookup),
        Some(archived_lookup),
        cmd(&["audit", "--day", hot]),
        cmd(&["report", "--day", hot]),
    ]
}

/// The median of a hot lookup (head of a table) and of a first archived lookup (seq 1).
fn lookups(dir: &Path) -> (Duration, Duration) {
    let t = schemas::TableId::new(TABLES[0]).expect("table");
    let l = Ledger::open(dir).expect("reopen");
    let head = l.reader().head(&t).expect("head").seq.0;
    let hot = median((0..RUNS * 20).map(|_| {
        let t0 = Instant::now();
        assert!(l.reader().stored_event(&t, head).expect("read").is_some());
        t0.elapsed()
    }));
    drop(l);
    let archived = median((0..RUNS).map(|_| {
        let l = Ledger::open(dir).expect("reopen");
        let t0 = Instant::now();
        assert!(l.reader().stored_event(&t, 1).expect("read").is_some());
        t0.elapsed()
    }));
    (hot, archived)
}

/// The median wall time of `RUNS` runs of the command on the ledger.
fn run(bin: &Path, dir: &Path, args: &[&str]) -> Duration {
    median((0..RUNS).map(|_| {
        let t0 = Instant::now();
        let out = std::process::Command::new(bin)
            .args(args)
            .arg("--ledger")
            .arg(dir)
            .output()
            .expect("run roundledger");
        let took = t0.elapsed();
        // Findings (exit 1) still measure the run; an error does not.
        if !matches!(out.status.code(), Some(0 | 1)) {
            panic!("{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        took
    }))
}

fn median(runs: impl Iterator<Item = Duration>) -> Duration {
    let mut v: Vec<Duration> = runs.collect();
    v.sort();
    v[v.len() / 2]
}

const NAMES: [&str; 7] = [
    "open (first)",
    "restart (reopen)",
    "verify_day (hot day)",
    "lookup, hot event",
    "lookup, archived event",
    "audit --day (hot day)",
    "report --day (hot day)",
];

fn print_table(rows: &[Vec<Option<Duration>>], days: u32) {
    println!("| step | 1 archived day | {days} archived days | ratio |");
    println!("|---|---|---|---|");
    for (i, name) in NAMES.iter().enumerate() {
        let (a, b) = (rows[0][i], rows[1][i]);
        let show = |d: Option<Duration>| {
            d.map_or("not run (no ROUNDLEDGER_BIN)".into(), |d| {
                format!("{d:.2?}")
            })
        };
        let ratio = a.zip(b).map_or("null".into(), |(a, b)| {
            format!("{:.2}", b.as_secs_f64() / a.as_secs_f64())
        });
        println!("| {name} | {} | {} | {ratio} |", show(a), show(b));
    }
}
