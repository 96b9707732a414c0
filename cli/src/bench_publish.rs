//! `roundledger bench-publish`: what JetStream's `sync_interval` costs a publishing device.
//!
//! For each setting it starts a private nats-server with file storage, then measures (a)
//! throughput with a window of publishes awaiting their acks, as a device outbox sends,
//! and (b) the latency of one publish to its ack, sent one at a time. Prints JSON.
//! RELIABILITY.md ("Power loss") reads these figures.

use crate::Outcome;
use anyhow::{bail, Context, Result};
use std::collections::VecDeque;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Most messages one round may publish.
const MESSAGES_MAX: u64 = 10_000_000;
/// Largest message body: the stream's own bound (`EVENT_LEN_MAX`).
const MESSAGE_BYTES_MAX: usize = schemas::codec::EVENT_LEN_MAX;
/// Most publishes awaiting their acks at once.
const WINDOW_MAX: usize = 4_096;
/// How long a fresh nats-server may take to accept connections.
const START_WAIT: Duration = Duration::from_secs(10);

#[derive(clap::Args)]
pub struct Args {
    /// JetStream `sync_interval` values, compared in this order. `default` leaves it
    /// unset (two minutes); `always` fsyncs every write; or a duration such as `1s`.
    #[arg(long, value_delimiter = ',', default_value = "default,1s,100ms,always")]
    sync: Vec<String>,
    /// Messages published in the throughput phase of each round.
    #[arg(long, default_value_t = 50_000)]
    messages: u64,
    /// Bytes per message (a typical event is about 1,000).
    #[arg(long, default_value_t = 1_000)]
    message_bytes: usize,
    /// Publishes awaiting their acks at once in the throughput phase.
    #[arg(long, default_value_t = 256)]
    window: usize,
    /// Publishes sent one at a time, each awaiting its ack, for the latency phase.
    #[arg(long, default_value_t = 2_000)]
    latency_samples: usize,
    /// Rounds; each round runs every setting once, so load on the host falls on all.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

/// One setting's figures over the rounds.
#[derive(serde::Serialize)]
struct Figures {
    sync_interval: String,
    /// Messages per second in each round, then their median.
    messages_per_s: Vec<u64>,
    messages_per_s_median: u64,
    /// Publish-to-ack latency over every round's samples, microseconds.
    latency_p50_us: u64,
    latency_p99_us: u64,
}

pub fn run(args: Args) -> Result<Outcome> {
    check_args(&args)?;
    let bin = natsd::find_binary().context("finding nats-server (scripts/setup.sh)")?;
    let rt = crate::runtime::runtime()?;
    let mut rates: Vec<Vec<u64>> = vec![Vec::new(); args.sync.len()];
    let mut latencies_ns: Vec<Vec<u64>> = vec![Vec::new(); args.sync.len()];
    for _ in 0..args.rounds {
        for (i, sync) in args.sync.iter().enumerate() {
            let dir = tempfile::tempdir().context("creating a temporary directory")?;
            let mut server = Server::start(&bin, dir.path(), sync)?;
            let (rate, lat) = rt.block_on(measure(&args, server.port))?;
            server.stop();
            rates[i].push(rate);
            latencies_ns[i].extend(lat);
        }
    }
    let figures: Vec<Figures> = (0..args.sync.len())
        .map(|i| figures(&args.sync[i], &rates[i], &mut latencies_ns[i]))
        .collect();
    println!("{}", serde_json::to_string_pretty(&figures)?);
    Ok(Outcome::Clean)
}

fn check_args(args: &Args) -> Result<()> {
    if args.messages == 0 || args.messages > MESSAGES_MAX {
        bail!("--messages must be 1 to {MESSAGES_MAX}");
    }
    if args.message_bytes == 0 || args.message_bytes > MESSAGE_BYTES_MAX {
        bail!("--message-bytes must be 1 to {MESSAGE_BYTES_MAX}");
    }
    if args.window == 0 || args.window > WINDOW_MAX {
        bail!("--window must be 1 to {WINDOW_MAX}");
    }
    if args.rounds == 0 || args.latency_samples == 0 {
        bail!("--rounds and --latency-samples must be at least 1");
    }
    for s in &args.sync {
        if !valid_sync(s) {
            bail!("--sync {s:?}: expected default, always, or a duration such as 1s or 100ms");
        }
    }
    Ok(())
}

/// `default`, `always`, or digits followed by `ms`, `s` or `m`.
fn valid_sync(s: &str) -> bool {
    if s == "default" || s == "always" {
        return true;
    }
    let digits = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &s[digits.len()..];
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && matches!(unit, "ms" | "s" | "m")
}

fn figures(sync: &str, rates: &[u64], latencies_ns: &mut [u64]) -> Figures {
    assert!(!rates.is_empty() && !latencies_ns.is_empty());
    let mut sorted = rates.to_vec();
    sorted.sort_unstable();
    latencies_ns.sort_unstable();
    let at = |q_percent: usize| latencies_ns[(latencies_ns.len() - 1) * q_percent / 100] / 1_000;
    Figures {
        sync_interval: sync.to_string(),
        messages_per_s: rates.to_vec(),
        messages_per_s_median: sorted[sorted.len() / 2],
        latency_p50_us: at(50),
        latency_p99_us: at(99),
    }
}

/// Throughput (messages per second) and each latency sample (ns) against one server.
async fn measure(args: &Args, port: u16) -> Result<(u64, Vec<u64>)> {
    let client = async_nats::connect(format!("nats://127.0.0.1:{port}"))
        .await
        .context("connecting to the bench's nats-server")?;
    let js = async_nats::jetstream::new(client);
    js.get_or_create_stream(async_nats::jetstream::stream::Config {
        name: "BENCHPUB".into(),
        subjects: vec!["benchpub.>".into()],
        storage: async_nats::jetstream::stream::StorageType::File,
        ..Default::default()
    })
    .await
    .context("creating the bench stream")?;
    let body = bytes::Bytes::from(vec![0x5a_u8; args.message_bytes]);
    let started = Instant::now();
    let mut pending = VecDeque::with_capacity(args.window);
    for i in 0..args.messages {
        if pending.len() == args.window {
            ack(pending.pop_front()).await?;
        }
        let subject = format!("benchpub.t{}", i % 16);
        pending.push_back(js.publish(subject, body.clone()).await?);
    }
    while let Some(p) = pending.pop_front() {
        ack(Some(p)).await?;
    }
    let elapsed_ns = started.elapsed().as_nanos().max(1);
    let rate = (u128::from(args.messages) * 1_000_000_000 / elapsed_ns) as u64;
    let mut latencies_ns = Vec::with_capacity(args.latency_samples);
    for _ in 0..args.latency_samples {
        let t = Instant::now();
        js.publish("benchpub.latency", body.clone()).await?.await?;
        latencies_ns.push(t.elapsed().as_nanos() as u64);
    }
    Ok((rate, latencies_ns))
}

async fn ack(p: Option<async_nats::jetstream::context::PublishAckFuture>) -> Result<()> {
    p.context("no publish pending")?
        .await
        .context("the stream refused a publish")?;
    Ok(())
}

/// A private nats-server with one JetStream setting, killed on drop.
struct Server {
    child: Option<Child>,
    port: u16,
}

impl Server {
    fn start(bin: &Path, dir: &Path, sync: &str) -> Result<Server> {
        let port = free_port()?;
        let store = dir.join("js");
        let sync_line = match sync {
            "default" => String::new(),
            s => format!("sync_interval: {s}\n"),
        };
        let conf = format!(
            "listen: 127.0.0.1:{port}\njetstream {{\n store_dir: {:?}\n {sync_line}}}\n",
            store.display().to_string()
        );
        let conf_path = dir.join("bench.conf");
        std::fs::write(&conf_path, conf).context("writing the bench's nats-server config")?;
        let child = Command::new(bin)
            .arg("-c")
            .arg(&conf_path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting nats-server")?;
        let server = Server {
            child: Some(child),
            port,
        };
        let deadline = Instant::now() + START_WAIT;
        while !natsd::port_open(port) {
            if Instant::now() > deadline {
                bail!("nats-server did not listen on {port} within {START_WAIT:?} (sync {sync})");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(server)
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(l.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::valid_sync;

    #[test]
    fn sync_values_are_checked() {
        for ok in ["default", "always", "1s", "100ms", "2m"] {
            assert!(valid_sync(ok), "{ok}");
        }
        for bad in ["", "s", "1h", "-1s", "1.5s", "always\n"] {
            assert!(!valid_sync(bad), "{bad:?}");
        }
    }
}
