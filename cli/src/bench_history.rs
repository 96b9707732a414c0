//! `roundledger bench-history --ledger DIR`: what a long history costs. On a ledger of any
//! size (built by `seed` when DIR does not exist), it measures what must not grow with
//! history: `serve` start (to every table's index current) and its RSS, round lookups and
//! evidence bundles of the oldest, a middle and the newest round, and bytes per event on
//! disk. It drives the real binary (`serve --no-ingest` and HTTP), as an operator would.
//!
//! Figures go to BENCHMARKS.md; nothing here asserts a target.

use crate::client::{Client, ServerArgs};
use crate::Outcome;
use anyhow::{Context, Result};
use schemas::api::ChainStatus;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Longest wait for `serve` to be ready before the bench gives up.
const READY_WAIT_MAX: Duration = Duration::from_secs(3600);

#[derive(clap::Args)]
pub struct Args {
    /// The ledger; built by `seed --close` with --tables and --rounds when missing.
    #[arg(long)]
    ledger: PathBuf,
    /// Tables of a ledger the bench builds.
    #[arg(long, default_value_t = 16)]
    tables: u32,
    /// Rounds per table of a ledger the bench builds.
    #[arg(long, default_value_t = 1500)]
    rounds: u64,
    /// The table whose rounds are measured (default: the first).
    #[arg(long)]
    table: Option<String>,
    /// Timed requests per round and kind.
    #[arg(long, default_value_t = 100)]
    requests: usize,
}

/// The rounds measured: oldest, middle, newest of one table.
struct Probe {
    table: String,
    rounds: [u64; 3],
    events: u64,
}

pub fn run(args: Args) -> Result<Outcome> {
    if !args.ledger.exists() {
        build(&args)?;
    }
    let probe = probe(&args.ledger, args.table.as_deref())?;
    archive_ratio(&args.ledger, &probe.table)?;
    let disk_bytes = dir_bytes(&args.ledger)?;
    println!(
        "ledger: {} events, {} bytes on disk, {:.1} bytes per event",
        probe.events,
        disk_bytes,
        disk_bytes as f64 / probe.events.max(1) as f64
    );
    let tmp = tempfile::tempdir()?;
    let tokens = crate::tokens::write_config(&tmp.path().join("tokens.json"))?;
    let token = tokens
        .iter()
        .find(|(role, _)| *role == "surveillance")
        .map(|(_, t)| t.clone())
        .context("no surveillance token")?;
    let port = free_port()?;
    let client = Client::from_args(&ServerArgs {
        server: vec![format!("http://127.0.0.1:{port}")],
        token: Some(token),
        ca: None,
    })?
    .context("client")?;
    // The first start may build what the server keeps (its read model); the second is
    // the one a floor sees every day.
    let mut server = None;
    for start in ["first start", "restart"] {
        drop(server.take());
        let started = Instant::now();
        let mut s = Server(spawn_serve(&args.ledger, tmp.path(), port)?);
        wait_ready(&client, &mut s.0)?;
        println!(
            "serve {start}: ready in {:.2} s, RSS {} KiB (peak {} KiB)",
            started.elapsed().as_secs_f64(),
            rss_kib(s.0.id(), "VmRSS")?,
            rss_kib(s.0.id(), "VmHWM")?
        );
        server = Some(s);
    }
    for (what, round) in ["oldest", "middle", "newest"].iter().zip(probe.rounds) {
        measure(&client, &probe.table, round, what, args.requests)?;
    }
    Ok(Outcome::Clean)
}

/// Builds the ledger with `seed`, timed.
fn build(args: &Args) -> Result<()> {
    let t0 = Instant::now();
    let status = Command::new(std::env::current_exe()?)
        .args(["seed", "--close", "--ledger"])
        .arg(&args.ledger)
        .args(["--tables", &args.tables.to_string()])
        .args(["--rounds", &args.rounds.to_string()])
        .status()
        .context("running seed")?;
    anyhow::ensure!(status.success(), "seed failed: {status}");
    println!("seed: {:.1} s", t0.elapsed().as_secs_f64());
    Ok(())
}

/// A table's oldest, middle and newest rounds, and the ledger's event count.
fn probe(dir: &Path, table: Option<&str>) -> Result<Probe> {
    let ledger = crate::source::open_ledger(dir)?;
    let events = ledger.reader().stats().events;
    let table = match table {
        Some(t) => {
            schemas::TableId::new(t.to_string()).map_err(|e| anyhow::anyhow!("--table: {e}"))?
        }
        None => ledger
            .reader()
            .tables()
            .into_iter()
            .next()
            .context("the ledger has no table")?,
    };
    let rounds = ledger.reader().rounds(&table)?;
    anyhow::ensure!(!rounds.is_empty(), "table {table} has no rounds");
    let at = |i: usize| rounds[i].round.0;
    Ok(Probe {
        table: table.as_str().to_string(),
        rounds: [at(0), at(rounds.len() / 2), at(rounds.len() - 1)],
        events,
    })
}

/// Events in the archive sample: about a day of one busy table.
const ARCHIVE_SAMPLE_EVENTS: u64 = 65_000;

/// A day file of the table's first `ARCHIVE_SAMPLE_EVENTS` events: its size against the
/// events' wire bytes, and the time to write and to read it back.
fn archive_ratio(dir: &Path, table: &str) -> Result<()> {
    let ledger = crate::source::open_ledger(dir)?;
    let id = schemas::TableId::new(table.to_string()).map_err(|e| anyhow::anyhow!("{e}"))?;
    let day = [crate::dayfile::read_range(
        &ledger,
        &id,
        1..=ARCHIVE_SAMPLE_EVENTS,
        schemas::GENESIS,
    )?];
    let wire: usize = day[0].events.iter().map(|e| e.bytes.len()).sum();
    let n = day[0].events.len();
    let t0 = Instant::now();
    let file = archive::write_day("sample", b"", &day)?;
    let written = t0.elapsed();
    let t0 = Instant::now();
    let (_, back) = archive::read_table(&file, table)?;
    anyhow::ensure!(back == day[0].events, "the day file does not read back");
    println!(
        "archive: {n} events of {table}, {wire} wire bytes -> {} bytes ({:.3}x, {:.1} bytes/event); write {:.2} s, read and check {:.3} s",
        file.len(),
        file.len() as f64 / wire.max(1) as f64,
        file.len() as f64 / n.max(1) as f64,
        written.as_secs_f64(),
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Lookup and bundle figures for one round.
fn measure(c: &Client, table: &str, round: u64, what: &str, n: usize) -> Result<()> {
    let lookup = format!("/v1/tables/{table}/rounds/{round}");
    let (p50, p99, _) = timed(n, || c.get_bytes(&lookup))?;
    println!("{what} round {table}/{round}: lookup p50 {p50:.2} ms, p99 {p99:.2} ms");
    let bundle = format!("/v1/evidence/{table}/{round}");
    match timed(n.clamp(1, 20), || c.get_bytes(&bundle)) {
        Ok((p50, p99, bytes)) => println!(
            "{what} round {table}/{round}: bundle {bytes} bytes, p50 {p50:.2} ms, p99 {p99:.2} ms"
        ),
        Err(e) => println!("{what} round {table}/{round}: bundle refused: {e:#}"),
    }
    Ok(())
}

/// Runs `f` once to warm up, then `n` times: p50 and p99 in ms, and the last body's size.
fn timed(n: usize, f: impl Fn() -> Result<Vec<u8>>) -> Result<(f64, f64, usize)> {
    let mut bytes = f()?.len();
    let mut ms: Vec<f64> = Vec::with_capacity(n);
    for _ in 0..n.max(1) {
        let t0 = Instant::now();
        bytes = f()?.len();
        ms.push(t0.elapsed().as_secs_f64() * 1000.0);
    }
    ms.sort_by(f64::total_cmp);
    let q = |p: f64| ms[((ms.len() as f64 * p) as usize).min(ms.len() - 1)];
    Ok((q(0.50), q(0.99), bytes))
}

/// `serve --no-ingest` on the ledger, its API journals in `api_dir`.
fn spawn_serve(ledger: &Path, api_dir: &Path, port: u16) -> Result<Child> {
    Command::new(std::env::current_exe()?)
        .args(["serve", "--no-ingest", "--ledger"])
        .arg(ledger)
        .arg("--config")
        .arg(api_dir.join("tokens.json"))
        .arg("--api-dir")
        .arg(api_dir.join("api"))
        .args(["--http", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .spawn()
        .context("starting serve")
}

/// Waits until every table's index has reached its head (`GET /v1/chain`).
fn wait_ready(c: &Client, server: &mut Child) -> Result<()> {
    let deadline = Instant::now() + READY_WAIT_MAX;
    loop {
        anyhow::ensure!(server.try_wait()?.is_none(), "serve exited");
        if let Ok(chain) = c.get::<Vec<ChainStatus>>("/v1/chain") {
            if !chain.is_empty() && chain.iter().all(|s| s.verified_through == s.head_seq) {
                return Ok(());
            }
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "serve not ready in {READY_WAIT_MAX:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A `/proc/<pid>/status` field in KiB (Linux).
fn rss_kib(pid: u32, field: &str) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .with_context(|| format!("no {field} in /proc/{pid}/status"))?;
    let kib = line.split_whitespace().nth(1).context("field value")?;
    Ok(kib.parse()?)
}

/// Total size of the files under `dir`.
fn dir_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() {
            dir_bytes(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// The server process, stopped (SIGTERM, a clean stop) when dropped, error or not.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid; the worst outcome is an error code.
        let sent = unsafe { libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM) };
        if sent != 0 {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}
