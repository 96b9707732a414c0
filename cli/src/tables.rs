//! `roundledger table`: each table's state for the operator, and the ways out.
//!
//! `status` gives each table's head, and when it holds events beyond a gap, the missing and
//! held seqs, their count and bytes, since when, and the quarantined event the chain waits
//! for; a table fenced as damaged says why (RUNBOOK.md). From a ledger directory or a
//! running server (`GET /v1/chain`). Exit 0 when every table advances, 1 when one holds
//! events or is fenced, 2 on error. `resync` signs a re-sync; `unfence` signs and
//! publishes an unfence (an admin act, `admin`); `fence-log` lists what unfences did. A
//! seq with two signed events (a fork) shows the table as DISPUTED, from either source
//! (`readside::forks`).

use crate::client::{Client, ServerArgs};
use crate::Outcome;
use anyhow::{Context, Result};
use schemas::api::{ChainStatus, DisputedSeq, GapView};
use schemas::{Seq, TableId};
use std::path::PathBuf;

/// `roundledger table`: the tables' state, and the way out of a stuck one.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: TableCommand,
}

#[derive(clap::Subcommand)]
enum TableCommand {
    /// Each table's chain state: head, held events and since when, what blocks it.
    Status(StatusArgs),
    /// Sign and publish a re-sync: the table continues with a quarantined event
    /// (RUNBOOK.md).
    Resync(crate::resync::ResyncArgs),
    /// After a repair: sign and publish an unfence (an admin act). Every ledger node
    /// takes it in stream order; a node whose table is fenced and now passes its check
    /// lifts the fence and appends the events kept meanwhile.
    Unfence {
        /// The table.
        table: String,
        #[command(flatten)]
        sign: crate::admin::SignArgs,
    },
    /// The unfence log: one JSON object per act, oldest first.
    FenceLog {
        /// The ledger directory (no server may hold it).
        #[arg(long)]
        ledger: PathBuf,
    },
}

#[derive(clap::Args)]
pub struct StatusArgs {
    /// A ledger directory no server holds open.
    #[arg(long, conflicts_with = "server")]
    ledger: Option<PathBuf>,
    #[command(flatten)]
    server: ServerArgs,
    /// A table holding events for longer than this many seconds is shown as stuck.
    /// Default: with `--server`, that server's own limit (`serve --stuck-after`); else 300.
    #[arg(long, value_name = "SECONDS")]
    stuck_after: Option<u64>,
}

/// One table as listed.
struct Row {
    table: TableId,
    head_seq: Seq,
    gap: Option<GapView>,
    /// Why the table is fenced as damaged (`check: detail`), when it is.
    fenced: Option<String>,
    /// Seqs where a second signed event was quarantined as a fork (`disputes`).
    disputed: Vec<DisputedSeq>,
}

/// A disputed seq in words: both events, and where the other is kept.
pub fn dispute_text(d: &DisputedSeq) -> String {
    let stored = d
        .stored
        .map_or_else(|| "none yet (held)".to_string(), |h| h.to_string());
    format!(
        "DISPUTED table {} seq {}: stored event {stored}; quarantine entry {} holds another \
         event {} at that seq (a stolen device key or a faulty device; RUNBOOK.md)",
        d.table, d.seq.0, d.quarantine_id, d.quarantined
    )
}

/// Every fork in the quarantine, as a dispute between the stored event and the other.
pub fn disputes(l: &ledger::Ledger) -> Result<Vec<DisputedSeq>> {
    readside::forks::disputed(l).context("reading the quarantine's forks")
}

/// `verify`'s lines for the disputed seqs, and whether there are none.
pub fn dispute_lines(dir: &std::path::Path) -> (Vec<String>, bool) {
    match crate::source::open_ledger(dir).and_then(|l| disputes(&l)) {
        Ok(d) => (d.iter().map(dispute_text).collect(), d.is_empty()),
        Err(e) => (vec![format!("forks: not read: {e:#}")], false),
    }
}

pub fn run(args: Args) -> Result<Outcome> {
    match args.command {
        TableCommand::Status(a) => status(a),
        TableCommand::Resync(a) => crate::resync::run(a),
        TableCommand::Unfence { table, sign } => unfence(&table, &sign),
        TableCommand::FenceLog { ledger } => {
            let l = crate::source::open_ledger(&ledger)?;
            for line in l.reader().fence_log()? {
                println!("{line}");
            }
            Ok(Outcome::Clean)
        }
    }
}

fn unfence(table: &str, sign: &crate::admin::SignArgs) -> Result<Outcome> {
    let table = TableId::new(table).map_err(|e| anyhow::anyhow!("table: {e}"))?;
    let act = crate::admin::send(
        sign,
        schemas::admin::Act::Unfence {
            table: table.clone(),
        },
    )?;
    println!(
        "unfence of {table}: signed by {}, {}; `table fence-log` shows what each node did",
        act.admin,
        crate::admin::sent_where(sign)
    );
    Ok(Outcome::Clean)
}

/// The server's stuck-table limit; a server that does not ingest has none, and the
/// default is used, said on stderr.
fn server_stuck_after_s(c: &Client) -> Result<u64> {
    let who: schemas::api::WhoAmI = c.get("/v1/whoami")?;
    Ok(who.stuck_after_s.unwrap_or_else(|| {
        let s = ingest::STUCK_AFTER_DEFAULT.as_secs();
        eprintln!("the server does not ingest: stuck is judged at {s} s");
        s
    }))
}

fn status(args: StatusArgs) -> Result<Outcome> {
    let mut store_failures = Vec::new();
    let rows = match (Client::from_args(&args.server)?, &args.ledger) {
        (Some(c), _) => {
            let chains: Vec<ChainStatus> = c.get("/v1/chain")?;
            chains
                .into_iter()
                .map(|c| Row {
                    table: c.table,
                    head_seq: c.head_seq,
                    gap: c.gap,
                    fenced: c.fenced,
                    disputed: c.disputed,
                })
                .collect()
        }
        (None, Some(dir)) => {
            let l = crate::source::open_ledger(dir)?;
            // A corrupt sled page fails only the reads that reach it: read them all.
            store_failures = l.reader().store_read_failures();
            from_ledger(&l)?
        }
        (None, None) => anyhow::bail!("say where: --ledger DIR or --server URL"),
    };
    let now_ns = ingest::system_clock_ns();
    let stuck_after_s = match (args.stuck_after, Client::from_args(&args.server)?) {
        (Some(s), _) => s,
        (None, Some(c)) => server_stuck_after_s(&c)?,
        (None, None) => ingest::STUCK_AFTER_DEFAULT.as_secs(),
    };
    let stuck_after_ns = i64::try_from(stuck_after_s)
        .unwrap_or(i64::MAX)
        .saturating_mul(1_000_000_000);
    print!("{}", render(&rows, now_ns, stuck_after_ns));
    for f in &store_failures {
        println!(
            "store DAMAGED: {f}; run verify, then RUNBOOK.md \"sled's own files are corrupt\""
        );
    }
    Ok(
        if !store_failures.is_empty()
            || rows
                .iter()
                .any(|r| r.gap.is_some() || r.fenced.is_some() || !r.disputed.is_empty())
        {
            Outcome::Findings
        } else {
            Outcome::Clean
        },
    )
}

/// Every table with a head or held events, in table order.
fn from_ledger(l: &ledger::Ledger) -> Result<Vec<Row>> {
    let mut gaps = l.reader().gap_views().context("reading the held events")?;
    let fenced = l.reader().fenced();
    let fence_of = |t: &TableId| fenced.get(t).map(|f| format!("{}: {}", f.check, f.detail));
    let all = disputes(l)?;
    let disputed = |t: &TableId| all.iter().filter(|d| &d.table == t).cloned().collect();
    let mut rows: Vec<Row> = l
        .reader()
        .heads()
        .into_iter()
        .map(|h| Row {
            gap: gaps.remove(&h.table),
            fenced: fence_of(&h.table),
            disputed: disputed(&h.table),
            table: h.table,
            head_seq: h.seq,
        })
        .collect();
    rows.extend(gaps.into_iter().map(|(table, gap)| Row {
        fenced: fence_of(&table),
        disputed: disputed(&table),
        table,
        head_seq: Seq(0),
        gap: Some(gap),
    }));
    rows.sort_by(|a, b| a.table.cmp(&b.table));
    Ok(rows)
}

/// One line per table: state, head, then what it holds.
fn render(rows: &[Row], now_ns: i64, stuck_after_ns: i64) -> String {
    if rows.is_empty() {
        return "the ledger holds no table yet\n".to_string();
    }
    let mut out = format!("{:<12} {:<9} {:>10}  held\n", "table", "state", "head");
    for r in rows {
        let (state, held) = match (&r.fenced, &r.gap) {
            (Some(why), _) => ("DAMAGED", format!("fenced ({why}); RUNBOOK.md")),
            _ if !r.disputed.is_empty() => ("DISPUTED", disputed_text(&r.disputed)),
            (None, None) => ("advancing", "-".to_string()),
            (None, Some(g)) => {
                let age_ns = now_ns.saturating_sub(g.since_ns);
                let state = if age_ns >= stuck_after_ns {
                    "stuck"
                } else {
                    "held"
                };
                (state, describe(g, age_ns))
            }
        };
        out += &format!(
            "{:<12} {:<9} {:>10}  {held}\n",
            r.table.as_str(),
            state,
            r.head_seq.0
        );
    }
    out
}

/// The disputed seqs of a table, in words.
fn disputed_text(d: &[DisputedSeq]) -> String {
    let seqs: Vec<String> = d
        .iter()
        .map(|d| format!("seq {} (quarantine entry {})", d.seq.0, d.quarantine_id))
        .collect();
    format!(
        "two signed events at {}: a stolen key or a faulty device; `verify` names both",
        seqs.join(", ")
    )
}

/// What a gap holds and waits for, in words.
fn describe(g: &GapView, age_ns: i64) -> String {
    let blocker = g.blocked_by.as_ref().map_or_else(
        || "no refused event found in the gap (never received?)".to_string(),
        |b| {
            format!(
                "seq {} refused as {} (quarantine entry {})",
                b.seq.0, b.reason, b.quarantine_id
            )
        },
    );
    format!(
        "missing #{}..#{}; held #{}..#{} ({} {}, {} bytes) since {} ({} s); {blocker}",
        g.missing_from.0,
        g.missing_to.0,
        g.missing_to.0 + 1,
        g.held_last.0,
        g.held,
        if g.held == 1 { "event" } else { "events" },
        g.held_bytes,
        g.since_ns,
        age_ns / 1_000_000_000
    )
}

/// `verify`'s lines for the admin log (each act's signature checked again) and the kept
/// re-syncs, each checked against the chain and the quarantine, and whether they all
/// check out. Held events are verify's own section;
/// what blocks them is `table status`'s. A ledger that does not open fails.
pub fn resync_lines(dir: &std::path::Path) -> (Vec<String>, bool) {
    match crate::source::open_ledger(dir).and_then(|l| lines_of(&l)) {
        Ok(lines) => lines,
        Err(e) => (vec![format!("re-syncs: not read: {e:#}")], false),
    }
}

fn lines_of(l: &ledger::Ledger) -> Result<(Vec<String>, bool)> {
    let mut lines = Vec::new();
    let acts = l.reader().admin_log().context("reading the admin log")?;
    let act_problems = l
        .verifier()
        .check_admin_log()
        .context("checking the admin log")?;
    if !acts.is_empty() && act_problems.is_empty() {
        lines.push(format!(
            "admin acts: {} taken, each signed by a trusted admin",
            acts.len()
        ));
    }
    lines.extend(act_problems.iter().map(|p| format!("BAD {p}")));
    let kept = l.reader().resyncs(None).context("reading the re-syncs")?;
    let problems = l
        .verifier()
        .check_resyncs()
        .context("checking the re-syncs")?;
    if !kept.is_empty() && problems.is_empty() {
        lines.push(format!(
            "re-syncs: {} kept, each signed by a trusted admin, its event in the chain and in quarantine",
            kept.len()
        ));
    }
    let ok = problems.is_empty() && act_problems.is_empty();
    lines.extend(problems.into_iter().map(|p| format!("BAD {p}")));
    Ok((lines, ok))
}
