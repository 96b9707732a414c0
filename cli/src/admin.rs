//! `roundledger admin`: admin acts (`schemas::admin`), signed with an admin key file and
//! published on the stream's `admin.acts` subject. Every ledger node takes each act at the
//! same point of the log and checks the signature itself (`ledger::admin`); an act with a
//! bad signature is quarantined as `admin_refused` on every node. `table unfence` signs
//! and publishes through the same functions. Exit 0 once published (or written), 2 on
//! error. `admin log` lists what one stopped ledger took.

use crate::Outcome;
use anyhow::{Context, Result};
use schemas::admin::{Act, AdminAct, AdminBody};
use schemas::limits::QuarantineLimits;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(clap::Subcommand)]
enum Sub {
    /// Set the clock skew limit on every ledger node, from this point of the stream on.
    ClockSkew {
        /// The limit: an event whose device time is further than this from its arrival
        /// is quarantined as `clock_skew`.
        #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=31_536_000))]
        max_seconds: u64,
        #[command(flatten)]
        sign: SignArgs,
    },
    /// Set the quarantine's limits on every ledger node, from this point of the stream on.
    /// A limit not given returns to its default (`roundledger admin quarantine-limits
    /// --help` shows them); the command prints the whole set it signs.
    QuarantineLimits {
        #[command(flatten)]
        limits: LimitArgs,
        #[command(flatten)]
        sign: SignArgs,
    },
    /// Remove a sealed, archived day past its retention on every ledger node, at this
    /// point of the stream. A node where the day is not archived yet keeps the act pending
    /// and applies it when it archives the day (`admin log`).
    RemoveDay {
        /// The gaming day, YYYY-MM-DD.
        #[arg(long)]
        day: String,
        /// What the day's seal seals, alike on every node (`archive status` prints it as
        /// `content`).
        #[arg(long, value_name = "HEX")]
        seal_content: String,
        /// The legal retention, in days after the day's end; a younger day is refused.
        #[arg(long, value_name = "DAYS", value_parser = clap::value_parser!(u32).range(1..=36_500))]
        retention_days: u32,
        #[command(flatten)]
        sign: SignArgs,
    },
    /// The admin acts a ledger took, oldest first: one JSON object per act (stream seq,
    /// kind, signer, note, what it did there).
    Log {
        /// The ledger directory (no server may hold it).
        #[arg(long)]
        ledger: PathBuf,
    },
}

/// The quarantine's limits, as flags (defaults: `QuarantineLimits::default`).
#[derive(clap::Args)]
pub struct LimitArgs {
    /// The window the rate limits count in, in milliseconds of bus time.
    #[arg(long, default_value_t = 60_000)]
    window_ms: u64,
    /// New entries one source (one table's subject) may add per window.
    #[arg(long, default_value_t = 1_000)]
    source_entries_per_window: u64,
    /// Charged bytes (message + 1,024) one source may add per window.
    #[arg(long, default_value_t = 4 << 20)]
    source_bytes_per_window: u64,
    /// New entries all sources together may add per window.
    #[arg(long, default_value_t = 10_000)]
    all_entries_per_window: u64,
    /// Charged bytes all sources together may add per window.
    #[arg(long, default_value_t = 32 << 20)]
    all_bytes_per_window: u64,
    /// Charged bytes one source's entries may hold in all.
    #[arg(long, default_value_t = 1 << 30)]
    source_bytes_max: u64,
    /// Charged bytes every entry together may hold (`table_fenced` ones apart).
    #[arg(long, default_value_t = 8 << 30)]
    total_bytes_max: u64,
}

impl LimitArgs {
    /// The limits, checked as every node checks them.
    fn limits(&self) -> Result<QuarantineLimits> {
        let window_ns = i64::try_from(self.window_ms)?.saturating_mul(1_000_000);
        let limits = QuarantineLimits {
            window_ns,
            source_entries_per_window: self.source_entries_per_window,
            source_bytes_per_window: self.source_bytes_per_window,
            all_entries_per_window: self.all_entries_per_window,
            all_bytes_per_window: self.all_bytes_per_window,
            source_bytes_max: self.source_bytes_max,
            total_bytes_max: self.total_bytes_max,
        };
        limits
            .check()
            .map_err(|e| anyhow::anyhow!("quarantine limits: {e}"))?;
        Ok(limits)
    }
}

/// How an admin act is signed and where it goes.
#[derive(clap::Args)]
pub struct SignArgs {
    /// The admin's key file (`roundledger keygen`); every ledger node must trust its
    /// public key (`serve --admin-key`).
    #[arg(long, value_name = "FILE")]
    admin_key: PathBuf,
    /// Why, in words: the case or ticket. Signed and kept in each node's admin log.
    #[arg(long)]
    note: String,
    /// Publish it on this NATS server (`admin.acts`; several comma-separated for a
    /// cluster) and wait for the stream's ack.
    #[arg(long)]
    nats: Option<String>,
    #[command(flatten)]
    bus: crate::bus::BusArgs,
    /// Write the message to this file too (to publish by another way).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<Outcome> {
    match args.command {
        Sub::ClockSkew { max_seconds, sign } => clock_skew(max_seconds, &sign),
        Sub::QuarantineLimits { limits, sign } => {
            let limits = limits.limits()?;
            let act = send(&sign, Act::QuarantineLimits { limits })?;
            println!(
                "quarantine limits {}: signed by {}, {}",
                serde_json::to_string(&limits)?,
                act.admin,
                sent_where(&sign)
            );
            Ok(Outcome::Clean)
        }
        Sub::RemoveDay {
            day,
            seal_content,
            retention_days,
            sign,
        } => remove_day(day, seal_content, retention_days, &sign),
        Sub::Log { ledger } => log(&ledger),
    }
}

/// Signs and sends `remove_day`, once the day and the digest read.
fn remove_day(
    day: String,
    seal_content: String,
    retention_days: u32,
    sign: &SignArgs,
) -> Result<Outcome> {
    let rule = ledger::days::DayRule::new("00:00", "UTC")?;
    let day_ok = day.len() == 10 && rule.bounds(&day).is_ok();
    anyhow::ensure!(day_ok, "--day {day}: not a date YYYY-MM-DD");
    let hex_ok = seal_content.len() == 64
        && seal_content
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    anyhow::ensure!(hex_ok, "--seal-content: not 64 lowercase hex digits");
    let act = Act::RemoveDay {
        day: day.clone(),
        seal_content: seal_content.clone(),
        retention_days,
    };
    let signed = send(sign, act)?;
    println!(
        "removal of day {day}, seal content {seal_content} ({retention_days} days): signed by {}, {}",
        signed.admin,
        sent_where(sign)
    );
    Ok(Outcome::Clean)
}

fn clock_skew(max_seconds: u64, sign: &SignArgs) -> Result<Outcome> {
    let max_ns = i64::try_from(max_seconds)?.saturating_mul(1_000_000_000);
    let act = send(sign, Act::ClockSkew { max_ns })?;
    println!(
        "clock skew limit {max_seconds} s: signed by {}, {}",
        act.admin,
        sent_where(sign)
    );
    Ok(Outcome::Clean)
}

/// Prints the admin log; exit 1 when an act's signature no longer checks out.
fn log(dir: &std::path::Path) -> Result<Outcome> {
    let l = crate::source::open_ledger(dir)?;
    for line in l.reader().admin_log()? {
        println!("{}", serde_json::to_string(&line)?);
    }
    let problems = l.verifier().check_admin_log()?;
    for p in &problems {
        eprintln!("BAD {p}");
    }
    Ok(match problems.is_empty() {
        true => Outcome::Clean,
        false => Outcome::Findings,
    })
}

/// Signs `act` with the admin key and publishes or writes it, as `sign` says.
pub fn send(sign: &SignArgs, act: Act) -> Result<AdminAct> {
    anyhow::ensure!(
        sign.nats.is_some() || sign.out.is_some(),
        "say where it goes: --nats URL, --out FILE, or both"
    );
    let admin = crate::keygen::read_signing_key(&sign.admin_key)?;
    let body = AdminBody {
        act,
        note: sign.note.clone(),
        signed_at_ns: ingest::system_clock_ns(),
    };
    let signed = AdminAct::sign(&admin, body)?;
    if let Some(path) = &sign.out {
        std::fs::write(path, signed.to_wire())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(url) = &sign.nats {
        publish(url, &sign.bus.access(), &signed)?;
    }
    Ok(signed)
}

/// Where `send` put the act, in words.
pub fn sent_where(sign: &SignArgs) -> String {
    match (&sign.nats, &sign.out) {
        (Some(_), Some(f)) => format!("published and written to {}", f.display()),
        (Some(_), None) => "published; every ledger node takes it in stream order".into(),
        (None, Some(f)) => format!("written to {}", f.display()),
        (None, None) => "nowhere".into(),
    }
}

/// Publishes `act` on `admin.acts` and waits for the stream's ack.
fn publish(url: &str, access: &bus::Access, act: &AdminAct) -> Result<()> {
    let rt = crate::runtime::runtime()?;
    rt.block_on(async {
        let client = bus::connect(url, access)
            .await
            .with_context(|| format!("connecting to {url}"))?;
        let js = async_nats::jetstream::new(client);
        ingest::ensure_stream(&js)
            .await
            .context("the stream, with the admin subject")?;
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", act.msg_id().as_str());
        js.publish_with_headers(
            schemas::subjects::ADMIN_SUBJECT,
            headers,
            act.to_wire().into(),
        )
        .await
        .context("publishing the admin act")?
        .await
        .context("the stream's ack of the admin act")?;
        Ok(())
    })
}
