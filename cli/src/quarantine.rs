//! `roundledger quarantine`: the messages the ledger refused to chain, kept verbatim with
//! their reason: newest first, by reason and table, with the counts per reason and the
//! quarantine chain's head (`verify` checks it, digests name it); `--id N` prints one with
//! all its bytes. From a ledger directory or a running server (`--server URL --token T`:
//! the same bodies as `GET /v1/quarantine`). Exit 0 when the listing is empty, 1 when it
//! lists anything, 2 on error. `quarantine purge` signs and sends a purge (`purge`).

use crate::client::{enc, Client, ServerArgs};
use crate::Outcome;
use anyhow::{Context, Result};
use schemas::api::{QuarantinePage, QuarantineRow};
use schemas::TableId;
use std::path::PathBuf;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    action: Option<Action>,
    /// A ledger directory no server holds open.
    #[arg(long, conflicts_with = "server")]
    ledger: Option<PathBuf>,
    #[command(flatten)]
    server: ServerArgs,
    /// Only this reason code (undecodable, fork, checkpoint_bad_signature, ...).
    #[arg(long)]
    reason: Option<String>,
    /// Only messages whose subject named this table.
    #[arg(long)]
    table: Option<String>,
    /// How many, newest first (at most 500, as the server serves).
    #[arg(long, default_value_t = 50)]
    limit: u64,
    /// One entry, with all its bytes.
    #[arg(long, conflicts_with_all = ["reason", "table"])]
    id: Option<u64>,
    /// Print the API's JSON body.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Sign and send a purge of the entries below an id (a full quarantine keeps
    /// refusals again); a fenced table's entries are kept.
    Purge(crate::purge::PurgeArgs),
}

/// Most entries one listing asks for: the server's page cap.
const LIMIT_MAX: u64 = 500;

pub fn run(args: Args) -> Result<Outcome> {
    if let Some(Action::Purge(a)) = args.action {
        return crate::purge::run(a);
    }
    let table = args
        .table
        .as_deref()
        .map(|t| TableId::new(t).map_err(|e| anyhow::anyhow!("--table {t:?}: {e}")))
        .transpose()?;
    let limit = args.limit.clamp(1, LIMIT_MAX);
    let client = Client::from_args(&args.server)?;
    let ledger = match (&client, &args.ledger) {
        (Some(_), _) => None,
        (None, Some(dir)) => Some(crate::source::open_ledger(dir)?),
        (None, None) => anyhow::bail!("say where: --ledger DIR or --server URL"),
    };
    if let Some(id) = args.id {
        let row: Option<QuarantineRow> = match (&client, &ledger) {
            (Some(c), _) => Some(c.get(&format!("/v1/quarantine/{id}"))?),
            (None, Some(l)) => l
                .reader()
                .quarantine_entry(id)
                .context("reading the quarantine")?
                .map(|e| e.row(usize::MAX)),
            (None, None) => unreachable!("a source was required above"),
        };
        let row = row.with_context(|| format!("no quarantine entry {id}"))?;
        if args.json {
            println!("{}", serde_json::to_string_pretty(&row)?);
        } else {
            print!("{}", render_one(&row));
        }
        return Ok(Outcome::Findings);
    }
    let page: QuarantinePage = match (&client, &ledger) {
        (Some(c), _) => {
            let mut path = format!("/v1/quarantine?limit={limit}");
            if let Some(r) = &args.reason {
                path += &format!("&reason={}", enc(r));
            }
            if let Some(t) = &table {
                path += &format!("&table={}", enc(t.as_str()));
            }
            c.get(&path)?
        }
        (None, Some(l)) => l
            .reader()
            .quarantine_view(args.reason.as_deref(), table.as_ref(), 0, limit)
            .context("reading the quarantine")?,
        (None, None) => unreachable!("a source was required above"),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&page)?);
    } else {
        print!("{}", render(&page));
    }
    Ok(if page.total == 0 {
        Outcome::Clean
    } else {
        Outcome::Findings
    })
}

/// The listing: the head and counts, then one line per entry.
pub fn render(p: &QuarantinePage) -> String {
    let mut out = format!(
        "quarantine: {} in all, chain head {}\n",
        crate::verify::counted(p.head.entries, ("entry", "entries")),
        p.head.hash
    );
    if !p.by_reason.is_empty() {
        let counts: Vec<String> = p
            .by_reason
            .iter()
            .map(|(r, n)| format!("{r} {n}"))
            .collect();
        out += &format!("by reason: {}\n", counts.join(", "));
    }
    for o in &p.overflow {
        out += &format!(
            "past a bound, counted not stored: {} {} x{} ({} bytes), in the stream at seqs {}..={}, digest {}\n",
            o.source, o.reason, o.count, o.bytes, o.first_stream_seq, o.last_stream_seq, o.digest
        );
    }
    if p.items.is_empty() {
        out += "nothing quarantined matches\n";
        return out;
    }
    out += &format!(
        "{:>6}  {:<30} {:<26} {:<12} {:>10} {:>7} {:>8}  why\n",
        "id", "received (local time)", "reason", "subject", "stream seq", "bytes", "repeats"
    );
    for r in &p.items {
        out += &format!(
            "{:>6}  {:<30} {:<26} {:<12} {:>10} {:>7} {:>8}  {}\n",
            r.id,
            crate::when::show(r.received_at_ns),
            r.reason,
            r.subject_table.as_ref().map_or("-", |t| t.as_str()),
            r.stream_seq,
            r.bytes_len,
            r.repeats,
            r.text
        );
    }
    if p.total > p.items.len() as u64 {
        out += &format!(
            "the newest {} of {} (--limit, --reason, --table)\n",
            p.items.len(),
            p.total
        );
    }
    out
}

/// One entry, every field, the bytes in hex 32 to a line.
fn render_one(r: &QuarantineRow) -> String {
    let mut out = format!(
        "quarantine entry {}\nreason:     {}\nwhy:        {}\nsubject:    {}\nstream seq: {}\nreceived:   {} ({} UTC ns)\nbytes:      {}\nrepeats:    {} (the same bytes refused again, for the same reason)\n",
        r.id,
        r.reason,
        r.text,
        r.subject_table.as_ref().map_or("-", |t| t.as_str()),
        r.stream_seq,
        crate::when::show(r.received_at_ns),
        r.received_at_ns,
        r.bytes_len,
        r.repeats
    );
    for line in r.bytes_hex.as_bytes().chunks(64) {
        out += "  ";
        out += std::str::from_utf8(line).unwrap_or("");
        out += "\n";
    }
    out
}
