//! `roundledger table resync`: signs a re-sync with an admin key file (`schemas::resync`)
//! and publishes it on the table's events subject, where ingest applies it: the table
//! continues with the quarantined event named by `--entry`, and the events held behind it
//! follow. The head and the entry are read from a ledger directory or a running server.
//! RUNBOOK.md says when to use it. A re-sync ingest would refuse (an event of another
//! table, or one that does not follow the head) is refused here with 2, before anything
//! is signed. With `--server` and `--nats` it waits for that server to apply or refuse it
//! (`confirm`). Exit 0 once applied (or, without a server to ask, published or written), 1
//! when refused or not seen applied within the wait, 2 on error.

use crate::client::{Client, ServerArgs};
use crate::Outcome;
use anyhow::{Context, Result};
use schemas::api::{ChainStatus, QuarantinePage, QuarantineRow};
use schemas::resync::{Resync, ResyncTerms};
use schemas::{chain::event_hash, codec, ChainHead, TableId};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct ResyncArgs {
    /// The admin's key file (`roundledger keygen`); its public key must be one `serve`
    /// trusts (`--admin-key`).
    #[arg(long, value_name = "FILE")]
    admin_key: PathBuf,
    #[arg(long)]
    table: String,
    /// The quarantine entry of the event the table continues with (`table status` names
    /// it as the gap's blocker).
    #[arg(long, value_name = "ID")]
    entry: u64,
    /// Why, in words: the case or ticket. Signed and kept.
    #[arg(long)]
    note: String,
    /// A ledger directory no server holds open, to read the head and the entry from.
    #[arg(long, conflicts_with = "server")]
    ledger: Option<PathBuf>,
    #[command(flatten)]
    server: ServerArgs,
    /// Publish it on this NATS server (the table's events subject) and wait for the
    /// stream's ack.
    #[arg(long)]
    nats: Option<String>,
    #[command(flatten)]
    bus: crate::bus::BusArgs,
    /// Write the message to this file too (to publish by another way).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn run(args: ResyncArgs) -> Result<Outcome> {
    anyhow::ensure!(
        args.nats.is_some() || args.out.is_some(),
        "say where it goes: --nats URL, --out FILE, or both"
    );
    let admin = crate::keygen::read_signing_key(&args.admin_key)?;
    let table = TableId::new(&args.table).map_err(|e| anyhow::anyhow!("--table: {e}"))?;
    let (head, entry) = head_and_entry(&args, &table)?;
    let (event, _) = codec::decode(&entry.bytes)
        .with_context(|| format!("quarantine entry {} is not an event", args.entry))?;
    let hash = event_hash(&event.prev, &entry.bytes);
    // What ingest would refuse is refused here, before anything is signed or sent.
    anyhow::ensure!(
        event.table == table,
        "quarantine entry {} holds an event of table {}, not {table}: ingest would refuse this re-sync",
        args.entry,
        event.table
    );
    if let Err(e) = head.next_hashed(&event, hash) {
        anyhow::bail!(
            "quarantine entry {} does not follow {table}'s head (seq {}): {e}; ingest would refuse this re-sync (`table status` names the entry the table waits for)",
            args.entry,
            head.seq.0
        );
    }
    let terms = ResyncTerms {
        table: table.clone(),
        head_seq: head.seq,
        head_hash: head.hash,
        event_hash: hash,
        quarantine_id: args.entry,
        note: args.note.clone(),
        signed_at_ns: ingest::system_clock_ns(),
    };
    let r = Resync::sign(&admin, terms)?;
    if let Some(path) = &args.out {
        std::fs::write(path, r.to_wire()).with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(url) = &args.nats {
        publish(url, &args.bus.access(), &r)?;
    }
    println!(
        "re-sync of {table}: continues at seq {} with quarantine entry {} (event {}), signed by {}",
        r.seq.0, r.quarantine_id, r.event_hash, r.admin
    );
    match (Client::from_args(&args.server)?, &args.nats) {
        (Some(c), Some(_)) => confirm(&c, &r),
        _ => Ok(Outcome::Clean),
    }
}

/// How long `confirm` waits for the server to apply or refuse a re-sync.
const CONFIRM_WAIT: std::time::Duration = std::time::Duration::from_secs(30);
/// Refused re-syncs of the table `confirm` reads, newest first, each poll.
const CONFIRM_REFUSALS_READ: u64 = 20;

/// Waits until the server applied `r` (the table's head at or past its seq) or refused it
/// (a `resync_refused` entry holding its exact bytes). Neither within `CONFIRM_WAIT` is
/// said so: a published act not seen applied is not called done.
fn confirm(c: &Client, r: &Resync) -> Result<Outcome> {
    let deadline = std::time::Instant::now() + CONFIRM_WAIT;
    let wire = hex::encode(r.to_wire());
    loop {
        let chains: Vec<ChainStatus> = c.get("/v1/chain")?;
        if let Some(s) = chains
            .iter()
            .find(|s| s.table == r.table && s.head_seq >= r.seq)
        {
            println!("applied: {} head seq {}", r.table, s.head_seq.0);
            return Ok(Outcome::Clean);
        }
        if let Some(row) = refusal_of(c, r, &wire)? {
            eprintln!(
                "REFUSED: quarantine entry {} ({}): {}",
                row.id, row.reason, row.text
            );
            return Ok(Outcome::Findings);
        }
        if std::time::Instant::now() >= deadline {
            eprintln!(
                "NOT CONFIRMED: published, but not seen applied or refused within {} s; see `table status`",
                CONFIRM_WAIT.as_secs()
            );
            return Ok(Outcome::Findings);
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

/// The `resync_refused` entry holding `r`'s exact message, among the table's newest.
fn refusal_of(c: &Client, r: &Resync, wire_hex: &str) -> Result<Option<QuarantineRow>> {
    let path = format!(
        "/v1/quarantine?reason=resync_refused&table={}&limit={CONFIRM_REFUSALS_READ}",
        r.table
    );
    let page: QuarantinePage = c.get(&path)?;
    for row in page.items {
        if row.bytes_len as usize * 2 != wire_hex.len() {
            continue;
        }
        let whole: QuarantineRow = c.get(&format!("/v1/quarantine/{}", row.id))?;
        if whole.bytes_hex == wire_hex {
            return Ok(Some(whole));
        }
    }
    Ok(None)
}

/// An entry's bytes, wherever they were read.
struct Entry {
    bytes: Vec<u8>,
}

/// The table's head and the entry, from the ledger or the server.
fn head_and_entry(args: &ResyncArgs, table: &TableId) -> Result<(ChainHead, Entry)> {
    if let Some(c) = Client::from_args(&args.server)? {
        let chains: Vec<ChainStatus> = c.get("/v1/chain")?;
        let head = chains
            .into_iter()
            .find(|s| &s.table == table)
            .map(|s| ChainHead {
                table: s.table,
                seq: s.head_seq,
                hash: s.head_hash,
            })
            .with_context(|| format!("the server has no table {table}"))?;
        let row: QuarantineRow = c.get(&format!("/v1/quarantine/{}", args.entry))?;
        let bytes = hex::decode(&row.bytes_hex).context("the entry's bytes_hex")?;
        return Ok((head, Entry { bytes }));
    }
    let dir = args
        .ledger
        .as_deref()
        .context("say where to read: --ledger DIR or --server URL")?;
    let l = crate::source::open_ledger(dir)?;
    let head = l
        .reader()
        .head(table)
        .unwrap_or_else(|| ChainHead::empty(table.clone()));
    let e = l
        .reader()
        .quarantine_entry(args.entry)?
        .with_context(|| format!("no quarantine entry {}", args.entry))?;
    Ok((head, Entry { bytes: e.bytes }))
}

/// Publishes `r` on its table's events subject and waits for the stream's ack.
fn publish(url: &str, access: &bus::Access, r: &Resync) -> Result<()> {
    let rt = crate::runtime::runtime()?;
    rt.block_on(async {
        let client = bus::connect(url, access)
            .await
            .with_context(|| format!("connecting to {url}"))?;
        let js = async_nats::jetstream::new(client);
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", r.msg_id().as_str());
        let subject = schemas::subjects::events_subject(&r.table);
        js.publish_with_headers(subject, headers, r.to_wire().into())
            .await
            .context("publishing the re-sync")?
            .await
            .context("the stream's ack of the re-sync")?;
        Ok(())
    })
}
