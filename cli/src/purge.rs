//! `roundledger quarantine purge`: signs a quarantine purge with an admin key file
//! (`schemas::purge`) and publishes it on the events subject of `--via`, where ingest
//! takes it at its point of the stream and removes the entries below `--below-id` in
//! steps (a fenced table's are kept). RUNBOOK.md says when to use it. Exit 0 once
//! published (or written), 2 on error.

use crate::Outcome;
use anyhow::{Context, Result};
use schemas::purge::QuarantinePurge;
use schemas::TableId;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct PurgeArgs {
    /// The admin's key file (`roundledger keygen`); its public key must be one `serve`
    /// trusts (`--admin-key`).
    #[arg(long, value_name = "FILE")]
    admin_key: PathBuf,
    /// Entries with a lower id are removed (`roundledger quarantine` lists ids).
    #[arg(long, value_name = "ID")]
    below_id: u64,
    /// Why, in words: the case or ticket. Signed and kept.
    #[arg(long)]
    note: String,
    /// The table whose events subject carries the act (its device credential publishes
    /// it on a secured bus); the act is not that table's.
    #[arg(long, value_name = "TABLE")]
    via: String,
    /// Publish it on this NATS server and wait for the stream's ack.
    #[arg(long)]
    nats: Option<String>,
    #[command(flatten)]
    bus: crate::bus::BusArgs,
    /// Write the message to this file too (to publish by another way).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn run(args: PurgeArgs) -> Result<Outcome> {
    anyhow::ensure!(
        args.nats.is_some() || args.out.is_some(),
        "say where it goes: --nats URL, --out FILE, or both"
    );
    let admin = crate::keygen::read_signing_key(&args.admin_key)?;
    let via = TableId::new(&args.via).map_err(|e| anyhow::anyhow!("--via: {e}"))?;
    let signed_at_ns = ingest::system_clock_ns();
    let p = QuarantinePurge::sign(&admin, via, args.below_id, args.note.clone(), signed_at_ns)?;
    if let Some(path) = &args.out {
        std::fs::write(path, p.to_wire()).with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(url) = &args.nats {
        publish(url, &args.bus.access(), &p)?;
    }
    println!(
        "quarantine purge of the entries below id {}: sent on {}'s events subject, signed by {}",
        p.below_id, p.via, p.admin
    );
    Ok(Outcome::Clean)
}

/// Publishes `p` on its carrier's events subject and waits for the stream's ack.
fn publish(url: &str, access: &bus::Access, p: &QuarantinePurge) -> Result<()> {
    let rt = crate::runtime::runtime()?;
    rt.block_on(async {
        let client = bus::connect(url, access)
            .await
            .with_context(|| format!("connecting to {url}"))?;
        let js = async_nats::jetstream::new(client);
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", p.msg_id().as_str());
        let subject = schemas::subjects::events_subject(&p.via);
        js.publish_with_headers(subject, headers, p.to_wire().into())
            .await
            .context("publishing the purge")?
            .await
            .context("the stream's ack of the purge")?;
        Ok(())
    })
}
