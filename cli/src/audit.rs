//! `roundledger audit`: replays a table, a time range or the whole ledger and reports the
//! rounds whose recorded payouts differ from the rules (disputes) and every finding, with
//! a summary by finding code. Exit 0 when clean, 1 when anything was found, 2 on error.
//!
//! With `--day D` it replays only the rounds that began on that gaming day: each table's
//! range (from the day's seal, or computed when the day is not sealed), read from the
//! replay window of its first such round, after the configuration in force. Against a
//! server (`--server`), `--day` and `--shift` ask for the rounds opened in that day or
//! shift, by the server's day rule.

use crate::show::{signed, verdict_name};
use crate::source::{Source, SourceArgs};
use crate::summary::{AuditSummary, Filter};
use crate::Outcome;
use anyhow::{Context, Result};
use schemas::report::RoundReport;
use schemas::{RoundId, TableId};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    source: SourceArgs,
    #[command(flatten)]
    server: crate::client::ServerArgs,
    #[command(flatten)]
    filter: Filter,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Only the rounds that began on this gaming day (YYYY-MM-DD). With --ledger: each
    /// table's seq range of the day. With --server: the rounds opened in the day, by the
    /// server's day rule.
    #[arg(long, conflicts_with_all = ["export", "from", "to", "shift"])]
    day: Option<String>,
    /// Only the rounds opened in this shift (YYYY-MM-DD/N) of the server's `--shifts`;
    /// needs --server.
    #[arg(long, requires = "server", conflicts_with_all = ["from", "to"])]
    shift: Option<String>,
    #[command(flatten)]
    rule: crate::args::DayArgs,
}

/// Replays every wanted table of `source` and summarises the wanted rounds. Tables are
/// spread over one thread per core (`replayer::map_tables`); their summaries are merged
/// in table order, so the result is the same on any number of threads. `progress` is
/// called, from any of those threads, with the number of events read so far.
pub fn audit(
    source: &Source,
    filter: &Filter,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<AuditSummary> {
    let tables: Vec<TableId> = source
        .tables()?
        .into_iter()
        .filter(|t| filter.wants_table(t))
        .collect();
    let read = AtomicU64::new(0);
    let per_table = replayer::map_tables(&tables, replayer::default_workers(), |table| {
        audit_table(source, table, filter, &|n| {
            progress(read.fetch_add(n, Ordering::Relaxed) + n)
        })
    });
    let mut summary = AuditSummary::default();
    for s in per_table {
        summary.merge(s?);
    }
    progress(summary.events);
    Ok(summary)
}

/// How many events a table's replay reads between two progress reports.
const PROGRESS_EVERY: u64 = 4096;

/// One table's part of `audit`. `read` is told of every `PROGRESS_EVERY` events read.
fn audit_table(
    source: &Source,
    table: &TableId,
    filter: &Filter,
    read: &dyn Fn(u64),
) -> Result<AuditSummary> {
    let mut summary = AuditSummary {
        tables: 1,
        ..AuditSummary::default()
    };
    let mut replayer = replayer::TableReplayer::new(table.clone());
    let add = |reports: Vec<RoundReport>, s: &mut AuditSummary| {
        for r in reports.iter().filter(|r| filter.wants_round(r)) {
            s.add(r);
        }
    };
    source.visit(table, &mut |seq, bytes| {
        let (event, _) = schemas::codec::decode(bytes).with_context(|| {
            format!("table {table} seq {}: stored event does not decode", seq.0)
        })?;
        summary.events += 1;
        if summary.events.is_multiple_of(PROGRESS_EVERY) {
            read(PROGRESS_EVERY);
        }
        let reports = replayer.push(seq, &event);
        add(reports, &mut summary);
        Ok(())
    })?;
    add(replayer.finish(), &mut summary);
    Ok(summary)
}

/// The property's zone for typed wall times (`--from`, `--to`) when `--time-zone` is not
/// given: the server's (`whoami`), else the ledger's kept day rule; `None` when no time is
/// typed or neither says (then `TZ`, `when::input_zone`).
fn property_zone(args: &Args, client: Option<&crate::client::Client>) -> Result<Option<String>> {
    let typed = args.filter.from_text.is_some() || args.filter.to_text.is_some();
    if !typed || args.rule.time_zone.is_some() {
        return Ok(None);
    }
    if let Some(c) = client {
        return Ok(Some(c.get::<schemas::api::WhoAmI>("/v1/whoami")?.time_zone));
    }
    let Some(dir) = args.source.ledger.as_deref() else {
        return Ok(None);
    };
    // Opened and closed again here: the audit opens the ledger itself.
    let kept = crate::source::open_ledger(dir)?.reader().day_rule()?;
    Ok(kept.map(|r| r.time_zone().to_string()))
}

pub fn run(mut args: Args) -> Result<Outcome> {
    let client = crate::client::Client::from_args(&args.server)?;
    let property = property_zone(&args, client.as_ref())?;
    let zone = crate::when::input_zone(args.rule.time_zone.as_deref(), property.as_deref())?;
    args.filter.resolve(&zone)?;
    let summary = match client {
        Some(c) => {
            let when = crate::remote::When {
                day: args.day.as_deref(),
                shift: args.shift.as_deref(),
            };
            crate::remote::audit(&c, &args.filter, when)?
        }
        None if args.day.is_some() => {
            let dir = args
                .source
                .ledger
                .as_deref()
                .context("--day needs --ledger DIR or --server URL")?;
            let l = crate::source::open_ledger(dir)?;
            let day = args.day.as_deref().unwrap_or_default();
            let tables = match l.reader().day_seal(day)? {
                Some(seal) => seal.tables,
                None => l.reader().day_ranges(&args.rule.rule_of(&l)?, day)?.tables,
            };
            audit_day(&l, &tables, &args.filter)?
        }
        None if args.filter.from.is_some() || args.filter.to.is_some() => {
            match Source::open(&args.source)? {
                Source::Ledger(l) => audit_time_range(&l, &args.filter)?,
                source => audit(&source, &args.filter, &|_| ())?,
            }
        }
        None => {
            let source = Source::open(&args.source)?;
            let bar = crate::show::progress_bar(args.quiet || args.json);
            let summary = audit(&source, &args.filter, &|n| bar.set_position(n))?;
            bar.finish_and_clear();
            summary
        }
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{}", render(&summary));
    }
    Ok(if summary.clean() {
        Outcome::Clean
    } else {
        Outcome::Findings
    })
}

/// The rounds that began within each table's range of a gaming day, replayed from the
/// replay window of the first of them with the configuration in force.
pub fn audit_day(
    l: &ledger::Ledger,
    tables: &[schemas::seal::SealedTable],
    filter: &Filter,
) -> Result<AuditSummary> {
    let wanted: Vec<&schemas::seal::SealedTable> = tables
        .iter()
        .filter(|t| filter.wants_table(&t.table))
        .collect();
    let workers = schemas::parallel::default_workers();
    merged(schemas::parallel::map_tables(&wanted, workers, |t| {
        audit_day_table(l, t)
    }))
}

fn audit_day_table(l: &ledger::Ledger, t: &schemas::seal::SealedTable) -> Result<AuditSummary> {
    let (lo, hi) = (t.first_seq.0, t.last_seq.0);
    let table = &t.table;
    let first = readside::rounds::first_round_beginning_in(l, table, lo, hi)
        .map_err(|e| anyhow::anyhow!("table {table}: {e}"))?;
    let Some(first) = first else {
        return Ok(AuditSummary {
            tables: 1,
            ..AuditSummary::default()
        });
    };
    // The replay stops before the first round to begin after the day.
    let mut stop = |e: &ledger::StoredEvent| -> Result<bool> {
        Ok(e.seq.0 > hi
            && readside::rounds::begins_round(l, table, e)
                .map_err(|e| anyhow::anyhow!("table {table}: {e}"))?)
    };
    let keep = |r: &RoundReport| (lo..=hi).contains(&r.first_seq.0);
    replay_span(l, table, first, &mut stop, &keep)
}

/// `--from/--to` on a ledger: the rounds whose first event's device time is in range,
/// from the round time index, each table read from the replay window of its first such
/// round. The cost follows the rounds found, not the history.
pub fn audit_time_range(l: &ledger::Ledger, filter: &Filter) -> Result<AuditSummary> {
    let (from, to) = (
        filter.from.unwrap_or(i64::MIN),
        filter.to.unwrap_or(i64::MAX),
    );
    let mut by_table: BTreeMap<TableId, Vec<ledger::RoundSummary>> = BTreeMap::new();
    for (table, r) in l.reader().rounds_in_time_range(from, to)? {
        by_table.entry(table).or_default().push(r);
    }
    let tables: Vec<TableId> = l
        .reader()
        .tables()
        .into_iter()
        .filter(|t| filter.wants_table(t))
        .collect();
    let workers = schemas::parallel::default_workers();
    merged(schemas::parallel::map_tables(
        &tables,
        workers,
        |t| match by_table.get(t) {
            Some(rounds) => audit_rounds(l, t, rounds),
            None => Ok(AuditSummary {
                tables: 1,
                ..AuditSummary::default()
            }),
        },
    ))
}

/// Per-table summaries merged in table order (the order `map_tables` keeps).
fn merged(per_table: Vec<Result<AuditSummary>>) -> Result<AuditSummary> {
    let mut summary = AuditSummary::default();
    for s in per_table {
        summary.merge(s?);
    }
    Ok(summary)
}

/// The table's `rounds`, replayed from the replay window of the first of them (by seq) to
/// the start of the round after the last of them.
fn audit_rounds(
    l: &ledger::Ledger,
    table: &TableId,
    rounds: &[ledger::RoundSummary],
) -> Result<AuditSummary> {
    assert!(!rounds.is_empty(), "a table without rounds is not replayed");
    let first = rounds
        .iter()
        .min_by_key(|r| r.first_seq)
        .expect("not empty");
    let last = rounds
        .iter()
        .max_by_key(|r| r.first_seq)
        .expect("not empty");
    let next_first = l
        .reader()
        .round_neighbours(table, last.round)?
        .and_then(|n| n.next)
        .map(|n| n.first_seq.0)
        .filter(|s| *s > last.last_seq.0);
    let wanted: std::collections::BTreeSet<RoundId> = rounds.iter().map(|r| r.round).collect();
    let mut stop =
        |e: &ledger::StoredEvent| -> Result<bool> { Ok(next_first.is_some_and(|n| e.seq.0 >= n)) };
    let keep = |r: &RoundReport| wanted.contains(&r.round);
    replay_span(l, table, first.round, &mut stop, &keep)
}

/// Replays `table` from the replay window of round `first` (after the configuration in
/// force) until `stop` says an event is beyond the span; summarises the reports `keep` picks.
fn replay_span(
    l: &ledger::Ledger,
    table: &TableId,
    first: RoundId,
    stop: &mut dyn FnMut(&ledger::StoredEvent) -> Result<bool>,
    keep: &dyn Fn(&RoundReport) -> bool,
) -> Result<AuditSummary> {
    let mut summary = AuditSummary {
        tables: 1,
        ..AuditSummary::default()
    };
    let located = readside::rounds::locate_in_ledger(l, table, first.0)
        .map_err(|e| anyhow::anyhow!("table {table}: {e}"))?;
    let from = located.prev_last.map_or(1, |p| p + 1);
    let config = located.config_seq.filter(|c| *c < from);
    let seqs = config
        .into_iter()
        .map(|c| (c..=c, true))
        .chain(std::iter::once((from..=u64::MAX, false)));
    let mut replayer = replayer::TableReplayer::new(table.clone());
    'ranges: for (range, is_config) in seqs {
        for stored in l.reader().events(table, range) {
            let stored = stored.with_context(|| format!("reading table {table}"))?;
            if !is_config && stop(&stored)? {
                break 'ranges;
            }
            let (event, _) = schemas::codec::decode(&stored.bytes).with_context(|| {
                format!(
                    "table {table} seq {}: stored event does not decode",
                    stored.seq.0
                )
            })?;
            summary.events += 1;
            for r in replayer.push(stored.seq, &event).iter().filter(|r| keep(r)) {
                summary.add(r);
            }
        }
    }
    for r in replayer.finish().iter().filter(|r| keep(r)) {
        summary.add(r);
    }
    Ok(summary)
}

/// The human form of a summary.
pub fn render(s: &AuditSummary) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "audit: {} tables, {} rounds, {} events",
        s.tables, s.rounds, s.events
    );
    let verdicts: Vec<String> = s
        .verdicts
        .iter()
        .map(|(v, n)| format!("{} {n}", verdict_name(*v)))
        .collect();
    let _ = writeln!(o, "verdicts: {}", verdicts.join(", "));
    if s.findings_by_code.is_empty() {
        let _ = writeln!(o, "findings: none");
    } else {
        let _ = writeln!(o, "findings by code:");
        for (code, n) in &s.findings_by_code {
            let clause = schemas::findings::by_code(code)
                .map(|r| r.clause_text())
                .unwrap_or_default();
            let _ = writeln!(o, "  {code:<48} {n:>6}  {clause}");
        }
    }
    if s.disputed_rounds.is_empty() {
        let _ = writeln!(o, "disputes: none");
    } else {
        let n: usize = s.disputed_rounds.iter().map(|r| r.disputes.len()).sum();
        let _ = writeln!(
            o,
            "disputes: {n} lines in {} rounds; recorded minus rules = {}",
            s.disputed_rounds.len(),
            schemas::Money(s.net_difference)
        );
        let _ = writeln!(
            o,
            "  {:<10} {:>6} {:>4}  {:<15} {:>12} {:>12} {:>12}",
            "table", "round", "box", "line", "expected", "recorded", "difference"
        );
        for r in &s.disputed_rounds {
            for d in &r.disputes {
                let _ = writeln!(
                    o,
                    "  {:<10} {:>6} {:>4}  {:<15} {:>12} {:>12} {:>12}",
                    r.table.as_str(),
                    r.round.0,
                    d.box_no.0,
                    d.line.name(),
                    d.expected.to_string(),
                    d.recorded.to_string(),
                    signed(d.difference)
                );
            }
        }
    }
    o
}
