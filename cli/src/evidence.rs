//! `roundledger evidence`: exports one round as an evidence bundle (schemas/BUNDLE.md),
//! from a ledger directory no server holds or from a running server (`--server`);
//! `roundledger verify-bundle FILE [--admin-key HEX]`: checks a bundle offline, without
//! the ledger: every hash from the anchor to the end of the segment, the round's events,
//! the configuration in force, the device-signed checkpoint and its key's enrollment by an
//! admin key (pinned with `--admin-key`, else taken from the bundle on trust, and said so),
//! and the report re-computed by the replayer. Exit 0 when it verifies (attested or, said
//! loudly, not yet attested), 1 when it does not (naming what failed), 2 on error.

use crate::client::{enc, Client, ServerArgs};
use crate::source::open_ledger;
use crate::Outcome;
use anyhow::{Context, Result};
use schemas::attest::PublicKey;
use schemas::{RoundId, TableId};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The ledger directory (no server may hold it open); or use --server.
    #[arg(long, conflicts_with = "server")]
    ledger: Option<PathBuf>,
    #[command(flatten)]
    server: ServerArgs,
    /// The table.
    #[arg(long)]
    table: String,
    /// The round number.
    #[arg(long)]
    round: u64,
    /// The file to write.
    #[arg(long)]
    out: PathBuf,
    /// Who exports (recorded in the bundle; with --server the token's name is used).
    #[arg(long, default_value = "roundledger-cli")]
    by: String,
}

pub fn run(args: Args) -> Result<Outcome> {
    let table = TableId::new(args.table.clone()).map_err(|e| anyhow::anyhow!("--table: {e}"))?;
    // From the request, or from the ledger once open: what building the bundle costs.
    let mut started = std::time::Instant::now();
    let bytes = match (Client::from_args(&args.server)?, &args.ledger) {
        (Some(c), _) => c.get_bytes(&format!(
            "/v1/evidence/{}/{}",
            enc(table.as_str()),
            args.round
        ))?,
        (None, Some(dir)) => {
            let ledger = open_ledger(dir)?;
            started = std::time::Instant::now();
            let located = readside::rounds::locate_in_ledger(&ledger, &table, args.round)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let cases = api::cases::read_cases(
                &api::cases_path(&api::default_state_dir(dir)),
                &table,
                RoundId(args.round),
            )
            .context("reading the case journal")?;
            let bundle = readside::evidence::build(
                &ledger,
                &table,
                args.round,
                located,
                cases,
                &args.by,
                api::system_clock(),
            )
            .map_err(|e| anyhow::anyhow!("{e}"))?;
            serde_json::to_vec(&bundle)?
        }
        (None, None) => anyhow::bail!("say where the round is: --ledger DIR or --server URL"),
    };
    let built = started.elapsed();
    std::fs::write(&args.out, &bytes).with_context(|| format!("writing {}", args.out.display()))?;
    let v = readside::evidence::verify_bytes(&bytes, &[])
        .context("the bundle just written does not verify")?;
    println!(
        "wrote {}: table {} round {}, {} round events, chain of {} events from seq {} to seq {}; {} bytes, built in {:.1?}",
        args.out.display(),
        v.table,
        v.round,
        v.round_events,
        v.chain_events,
        v.from_seq,
        v.head_seq,
        bytes.len(),
        built
    );
    for line in readside::evidence::describe_attestation(&v) {
        println!("  {line}");
    }
    Ok(Outcome::Clean)
}

#[derive(clap::Args)]
pub struct VerifyArgs {
    /// The bundle file.
    file: PathBuf,
    /// An admin public key (64 hex chars) trusted to enroll device keys; repeatable. The
    /// enrollment of the checkpoint's key must be signed by one of them. Without it, the
    /// admin key named in the bundle is taken on trust (and the output says so).
    #[arg(long = "admin-key", value_name = "HEX")]
    admin_keys: Vec<String>,
}

pub fn verify(args: VerifyArgs) -> Result<Outcome> {
    let pinned = args
        .admin_keys
        .iter()
        .map(|k| PublicKey::from_hex(k).map_err(|e| anyhow::anyhow!("--admin-key {k:?}: {e}")))
        .collect::<Result<Vec<_>>>()?;
    let bytes =
        std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    match readside::evidence::verify_bytes(&bytes, &pinned) {
        Ok(v) => {
            println!(
                "OK {}: table {} round {}: {} chain events from seq {} recomputed to seq {} ({}); {} round events; replay agrees: verdict {:?}, {} disputes, {} findings; {} case entries (not chained)",
                args.file.display(),
                v.table,
                v.round,
                v.chain_events,
                v.from_seq,
                v.head_seq,
                v.head_hash,
                v.round_events,
                v.verdict,
                v.disputes,
                v.findings,
                v.case_entries
            );
            for line in readside::evidence::describe_attestation(&v) {
                println!("  {line}");
            }
            println!("  {}", unverified(&bytes, v.case_entries));
            Ok(Outcome::Clean)
        }
        Err(e) => {
            println!("FAILED {}: {e}", args.file.display());
            Ok(Outcome::Findings)
        }
    }
}

/// What a bundle carries outside its proof: who exported it, when, and the case notes.
/// Anyone holding the file can change them unseen, so the output says so.
fn unverified(bytes: &[u8], case_entries: usize) -> String {
    let v: serde_json::Value = serde_json::from_slice(bytes).unwrap_or_default();
    let at_ns = v["exported_at_ns"]
        .as_i64()
        .map_or("?".into(), crate::when::show);
    format!(
        "NOT VERIFIED (outside the proof, editable by whoever holds the file): exported by {} at {at_ns}; {case_entries} case entries",
        v["exported_by"]
    )
}
