//! `roundledger`: the one command line of roundledger. This file only parses arguments,
//! sets up logging and calls the libraries (mini-redis style); each subcommand lives in its
//! own module.
//!
//! Exit codes (documented in `--help`): 0 clean, 1 findings or disputes (audit, verify,
//! replay), 2 error.

mod admin;
mod args;
mod audit;
#[cfg(feature = "devtools")]
mod bench_api;
#[cfg(feature = "devtools")]
mod bench_history;
#[cfg(feature = "devtools")]
mod bench_ingest;
#[cfg(feature = "devtools")]
mod bench_publish;
mod bus;
#[cfg(feature = "devtools")]
mod cheats;
mod client;
mod cluster;
mod conform;
mod conform_keys;
mod conform_source;
mod count;
mod day;
mod dayfile;
#[cfg(feature = "devtools")]
mod demo;
#[cfg(feature = "devtools")]
mod demo_finance;
#[cfg(feature = "devtools")]
mod devicekeys;
mod digest;
mod edges_link;
mod evidence;
mod export;
mod house_edge;
mod keygen;
mod node;
mod parquet;
mod purge;
mod quarantine;
mod readmodel;
mod records_link;
mod remote;
mod replay;
mod report;
mod resync;
mod runtime;
#[cfg(feature = "devtools")]
mod seed;
mod serve;
mod settings;
mod settle;
mod show;
#[cfg(feature = "devtools")]
mod simulate;
mod source;
mod summary;
mod tables;
mod tier;
mod tokens;
mod verify;
mod when;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// mimalloc, not the system allocator: sled copies and frees whole tree nodes on every
/// insert, and with glibc malloc the ledger writer spent a fifth of its time in malloc,
/// free and page faults. Back to back, ingest went from 107-133 k to 130-153 k messages/s
/// with it (`roundledger bench-ingest`, BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const AFTER_HELP: &str = "\
Exit codes: 0 clean, 1 findings, disputes or verification failures, 2 error.

The ledger directory is a sled database that one process owns at a time: `serve` holds it
open while it runs. The commands that read a ledger (replay, verify, audit, export) open a
directory no server holds, or read an export file (--export).";

/// roundledger: the tamper-evident record of every round played at casino poker tables.
#[derive(Parser)]
#[command(name = "roundledger", version, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server: ingest from NATS JetStream into the ledger (owns the ledger directory).
    Serve(serve::Args),
    /// Simulate tables: play rounds of the five games and publish them over NATS.
    #[cfg(feature = "devtools")]
    Simulate(simulate::Args),
    /// Replay one round: timeline, settlement (expected vs recorded), findings.
    Replay(replay::Args),
    /// Verify every table's hash chain and name the first bad position per table.
    Verify(verify::Args),
    /// Write the ledger digest (Merkle root over every table's chain head, event count, time)
    /// for an outside party; `verify --against` later proves the ledger still extends it.
    Digest(digest::Args),
    /// Write a fresh ed25519 key file for signing digests; prints its public key.
    Keygen(keygen::Args),
    /// Replay a table, a time range or the whole ledger; list disputes and findings.
    Audit(audit::Args),
    /// Export a table or round range to a file that verifies without the ledger.
    Export(export::Args),
    /// List the messages the ledger refused (quarantine), newest first, or one whole.
    Quarantine(quarantine::Args),
    /// Settle rounds described as JSON (pay calculator): one round, or NDJSON with --ndjson.
    Settle(settle::Args),
    /// The demo: a local nats-server, simulated tables, the ledger, then an audit.
    #[cfg(feature = "devtools")]
    Demo(demo::Args),
    /// Export one round as a self-verifying evidence bundle (schemas/BUNDLE.md).
    Evidence(evidence::Args),
    /// Check an evidence bundle offline: hashes, links, the replay of its events.
    VerifyBundle(evidence::VerifyArgs),
    /// Write a server access configuration with one fresh token per role.
    Tokens(tokens::Args),
    /// Play a simulated floor straight into a ledger directory (no NATS).
    #[cfg(feature = "devtools")]
    Seed(seed::Args),
    /// Time the API's round fetch and replay (p50/p99) on a ledger directory.
    #[cfg(feature = "devtools")]
    BenchApi(bench_api::Args),
    /// The server's read model: `readmodel rebuild|check --ledger DIR`.
    Readmodel(readmodel::Args),
    /// Finance reports: three wins, variances and causes, hold per table, pit, game,
    /// shift or day, over a shift, a day, month- or year-to-date (--csv for accounting).
    Report(report::Args),
    /// What a long history costs: serve start and RSS, lookups and bundles of old and new
    /// rounds, bytes per event (builds the ledger with `seed` when missing).
    #[cfg(feature = "devtools")]
    BenchHistory(bench_history::Args),
    /// Measure ingest against a raw JetStream consumer over the same messages.
    #[cfg(feature = "devtools")]
    BenchIngest(bench_ingest::Args),
    /// What JetStream's `sync_interval` costs a publisher: throughput and ack latency.
    #[cfg(feature = "devtools")]
    BenchPublish(bench_publish::Args),
    /// Each bet kind's house edge through the rules engine (rules/RULES.md).
    HouseEdge(house_edge::Args),
    /// The bus's principals: TLS files, credentials, revocation (`bus init|issue|revoke`).
    Bus(bus::Args),
    /// Gaming days: seal an ended day, show a day's seal and ranges (`day seal|show`).
    Day(day::Args),
    /// The archive tier: move sealed days into day files, list them, remove one past its
    /// retention (`archive move|status|remove`).
    Archive(tier::Args),
    /// Check a day seal file alone: its shape and signature.
    VerifySeal(day::VerifySealArgs),
    /// Sign a device key's enrollment offline with the admin key (`Rl-Enrollment` header).
    Enroll(bus::EnrollArgs),
    /// Tables: their chain state (`table status`), a re-sync (`table resync`).
    Table(tables::Args),
    /// The count room's results: sign and send drop box counts, or list them.
    Count(count::Args),
    /// Check one table's events against the device spec, live or from a file.
    Conform(conform::Args),
    /// Ledger nodes on one bus: lag, heads agreement per table, lease holders
    /// (`cluster status`).
    Cluster(cluster::Args),
    /// A lost ledger node rebuilt from the day bucket's sealed days (`node rebuild`).
    Node(node::Args),
    /// Admin acts every ledger node takes in stream order: the clock skew limit
    /// (`admin clock-skew`); `table unfence` is one too.
    Admin(admin::Args),
}

impl Command {
    /// Commands that print and exit, as opposed to servers and long runs, which must
    /// outlive a closed socket.
    fn prints_then_exits(&self) -> bool {
        match self {
            Command::Serve(_) | Command::HouseEdge(_) => false,
            #[cfg(feature = "devtools")]
            Command::Simulate(_)
            | Command::Demo(_)
            | Command::BenchApi(_)
            | Command::BenchHistory(_)
            | Command::BenchIngest(_)
            | Command::BenchPublish(_) => false,
            _ => true,
        }
    }
}

/// A closed stdout (`roundledger replay ... | head`) ends the process quietly, as with
/// other Unix tools, instead of a panic in `println!`.
fn quiet_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: called before any thread starts; SIG_DFL is a valid disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    let cli: Cli = match settings::parse() {
        Ok(cli) => cli,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(2);
        }
    };
    if cli.command.prints_then_exits() {
        quiet_on_closed_pipe();
    }
    init_tracing(&cli.command);
    let result = match cli.command {
        Command::Serve(a) => serve::run(a),
        #[cfg(feature = "devtools")]
        Command::Simulate(a) => simulate::run(a),
        Command::Replay(a) => replay::run(a),
        Command::Verify(a) => verify::run(a),
        Command::Digest(a) => digest::run(a),
        Command::Keygen(a) => keygen::run(a),
        Command::Audit(a) => audit::run(a),
        Command::Export(a) => export::run(a),
        Command::Quarantine(a) => quarantine::run(a),
        Command::Settle(a) => settle::run(a),
        #[cfg(feature = "devtools")]
        Command::Demo(a) => demo::run(a),
        Command::Evidence(a) => evidence::run(a),
        Command::VerifyBundle(a) => evidence::verify(a),
        Command::Tokens(a) => tokens::run(a),
        #[cfg(feature = "devtools")]
        Command::Seed(a) => seed::run(a),
        #[cfg(feature = "devtools")]
        Command::BenchApi(a) => bench_api::run(a),
        #[cfg(feature = "devtools")]
        Command::BenchHistory(a) => bench_history::run(a),
        #[cfg(feature = "devtools")]
        Command::BenchIngest(a) => bench_ingest::run(a),
        #[cfg(feature = "devtools")]
        Command::BenchPublish(a) => bench_publish::run(a),
        Command::HouseEdge(a) => house_edge::run(a),
        Command::Readmodel(a) => readmodel::run(a),
        Command::Report(a) => report::run(a),
        Command::Bus(a) => bus::run(a),
        Command::Enroll(a) => bus::enroll(a),
        Command::Day(a) => day::run(a),
        Command::Archive(a) => tier::run(a),
        Command::VerifySeal(a) => day::verify_seal(a),
        Command::Table(a) => tables::run(a),
        Command::Count(a) => count::run(a),
        Command::Conform(a) => conform::run(a),
        Command::Cluster(a) => cluster::run(a),
        Command::Node(a) => node::run(a),
        Command::Admin(a) => admin::run(a),
    };
    match result {
        Ok(Outcome::Clean) => ExitCode::SUCCESS,
        Ok(Outcome::Findings) => ExitCode::from(1),
        Ok(Outcome::Interrupted) => ExitCode::from(130),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// What a successful command found; errors are the `Err` of `anyhow::Result`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Clean,
    Findings,
    /// Stopped by SIGINT or SIGTERM before the work was done: exit 130.
    Interrupted,
}

/// What `serve` logs by default: warnings, and the lifecycle of the server and of ingest
/// at `info` (start, ledger opened, consumer attached, listening, stopped with counters).
const SERVE_LOG_DEFAULT: &str = "warn,roundledger=info,ingest=info,api=info";

/// Logs to stderr, filtered by `ROUNDLEDGER_LOG` (else warnings, and `serve`'s lifecycle),
/// as text or, with `serve --log-format json`, one JSON object a line.
fn init_tracing(command: &Command) {
    use tracing_subscriber::EnvFilter;
    let (default, format) = match command {
        Command::Serve(a) => (SERVE_LOG_DEFAULT, a.log_format),
        // Its own lines say what the ledger refused or held; the temporary ledger's logs
        // repeat them, or speak of keys it was never told to trust.
        Command::Conform(_) => ("off", serve::LogFormat::Text),
        _ => ("warn", serve::LogFormat::Text),
    };
    let filter =
        EnvFilter::try_from_env("ROUNDLEDGER_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    let fmt = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match format {
        serve::LogFormat::Text => fmt.init(),
        serve::LogFormat::Json => fmt
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .init(),
    }
}
