//! `roundledger table status|unfence|fence-log --ledger DIR`: damaged tables and the way
//! out. A table whose head record does not read back is fenced at open (`ledger::fence`):
//! its new events are kept as `table_fenced` quarantine entries. After a repair,
//! `unfence` re-checks the table and appends them through the one append path; the act is
//! recorded in the ledger's unfence log. Works on a ledger directory no server holds.

use crate::Outcome;
use anyhow::Result;
use schemas::TableId;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Each table's head, gap and fence; exit 1 when a table is fenced.
    Status {
        /// The ledger directory (no server may hold it).
        #[arg(long)]
        ledger: PathBuf,
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
    /// After a repair: lift a table's fence and append the events kept while it was
    /// fenced. Refused while the table still fails its check.
    Unfence {
        /// The table.
        table: String,
        /// The ledger directory (no server may hold it).
        #[arg(long)]
        ledger: PathBuf,
        /// Who unfences (recorded in the unfence log).
        #[arg(long)]
        by: String,
    },
    /// The unfence log: one JSON object per act, oldest first.
    FenceLog {
        /// The ledger directory (no server may hold it).
        #[arg(long)]
        ledger: PathBuf,
    },
}

pub fn run(args: Args) -> Result<Outcome> {
    match args.command {
        Command::Status { ledger, json } => status(&ledger, json),
        Command::Unfence { table, ledger, by } => {
            let table = TableId::new(table).map_err(|e| anyhow::anyhow!("table: {e}"))?;
            let l = crate::source::open_ledger(&ledger)?;
            let now_ns = ingest::system_clock_ns();
            let r = l.unfence(&table, &by, now_ns)?;
            println!(
                "table {table} unfenced by {by}: {} kept entries appended again: {} stored, {} already stored, {} held, {} refused; head now seq {}",
                r.entries, r.stored, r.duplicates, r.held, r.refused, r.head_seq
            );
            Ok(Outcome::Clean)
        }
        Command::FenceLog { ledger } => {
            let l = crate::source::open_ledger(&ledger)?;
            for line in l.fence_log()? {
                println!("{line}");
            }
            Ok(Outcome::Clean)
        }
    }
}

fn status(dir: &std::path::Path, json: bool) -> Result<Outcome> {
    let l = crate::source::open_ledger(dir)?;
    let fenced = l.fenced();
    let gaps: std::collections::BTreeMap<_, _> =
        l.gaps().into_iter().map(|g| (g.table.clone(), g)).collect();
    let mut rows = Vec::new();
    for h in l.heads() {
        let fence = fenced.get(&h.table);
        let gap = gaps.get(&h.table);
        rows.push(serde_json::json!({
            "table": h.table,
            "head_seq": h.seq.0,
            "fenced": fence.map(|f| format!("{}: {}", f.check, f.detail)),
            "gap": gap.map(|g| serde_json::json!({
                "missing_from": g.missing_from.0, "missing_to": g.missing_to.0,
                "held": g.held, "since_ns": g.since_ns,
            })),
        }));
        if json {
            continue;
        }
        let state = match (fence, gap) {
            (Some(f), _) => format!("DAMAGED, fenced ({}: {})", f.check, f.detail),
            (None, Some(g)) => format!(
                "held: {} events behind missing seq {}..={}",
                g.held, g.missing_from.0, g.missing_to.0
            ),
            (None, None) => "ok".to_string(),
        };
        println!("{:<12} head seq {:>8}  {state}", h.table.as_str(), h.seq.0);
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    }
    Ok(match fenced.is_empty() {
        true => Outcome::Clean,
        false => Outcome::Findings,
    })
}
