//! `roundledger replay`: one round as surveillance reads it: the timeline of its events
//! (with `--step`, the state of the layout after each one), the settlement table (what the
//! rules say against what the dealer recorded, per box and line) and the findings, each
//! citing its clause. `--json` prints the same for machines.

use crate::audit::{signed, verdict_name};
use crate::source::{Source, SourceArgs};
use crate::Outcome;
use anyhow::{Context, Result};
use schemas::report::RoundReport;
use schemas::{Event, EventBody, PayLine, RoundId, Seq, TableConfig, TableId};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    source: SourceArgs,
    #[command(flatten)]
    server: crate::client::ServerArgs,
    /// The table.
    #[arg(long)]
    table: String,
    /// The round number.
    #[arg(long)]
    round: u64,
    /// Show the state of the layout after each event.
    #[arg(long)]
    step: bool,
    /// Print JSON: the report, the events and (with --step) the states.
    #[arg(long)]
    json: bool,
}

/// Everything `replay` shows about one round.
#[derive(Serialize)]
pub struct RoundView {
    pub report: RoundReport,
    pub events: Vec<(Seq, Event)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<replayer::StepView>>,
}

/// Finds the round in the source and replays it with the configuration in force then.
pub fn load_round(
    source: &Source,
    table: &TableId,
    round: RoundId,
    with_steps: bool,
) -> Result<RoundView> {
    let mut replayer = replayer::TableReplayer::new(table.clone());
    let mut config: Option<TableConfig> = None;
    let mut events: Vec<(Seq, Event)> = Vec::new();
    let mut report: Option<RoundReport> = None;
    let mut config_then: Option<TableConfig> = None;
    source.visit(table, &mut |seq, bytes| {
        if report.is_some() {
            return Ok(());
        }
        let (event, _) = schemas::codec::decode(bytes).with_context(|| {
            format!("table {table} seq {}: stored event does not decode", seq.0)
        })?;
        if let EventBody::TableOpened { config: c } = &event.body {
            config = Some(c.clone());
        }
        if event.round == Some(round) {
            if events.is_empty() {
                config_then = config.clone();
            }
            events.push((seq, event.clone()));
        } else if !events.is_empty() && matches!(event.body, EventBody::DeckRevealed { .. }) {
            // The reveal after the round completes its shuffle commitment check.
            events.push((seq, event.clone()));
        }
        report = replayer
            .push(seq, &event)
            .into_iter()
            .find(|r| r.round == round);
        Ok(())
    })?;
    let report = match report {
        Some(r) => r,
        None => replayer
            .finish()
            .into_iter()
            .find(|r| r.round == round)
            .with_context(|| format!("table {table} has no round {}", round.0))?,
    };
    let steps = match (with_steps, &config_then) {
        (true, Some(c)) => Some(replayer::steps(c, &events)),
        _ => None,
    };
    Ok(RoundView {
        report,
        events,
        steps,
    })
}

pub fn run(args: Args) -> Result<Outcome> {
    let table = TableId::new(args.table.clone()).map_err(|e| anyhow::anyhow!("--table: {e}"))?;
    if let Some(c) = crate::client::Client::from_args(&args.server)? {
        let d = crate::remote::replay(&c, &table, args.round, args.step, args.json)?;
        let r = &d.report;
        return Ok(if r.findings.is_empty() && r.disputes.is_empty() {
            Outcome::Clean
        } else {
            Outcome::Findings
        });
    }
    let source = Source::open(&args.source)?;
    let view = load_round(&source, &table, RoundId(args.round), args.step)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&view)?);
    } else {
        print!("{}", render(&view));
    }
    let r = &view.report;
    Ok(if r.findings.is_empty() && r.disputes.is_empty() {
        Outcome::Clean
    } else {
        Outcome::Findings
    })
}

/// The human form: header, timeline, settlement table, findings.
pub fn render(v: &RoundView) -> String {
    let r = &v.report;
    let mut o = String::new();
    let rule_set = r.rule_set.map(|x| x.code()).unwrap_or("?");
    let _ = writeln!(
        o,
        "table {}  round {}  {}  events {}..{}  verdict {}",
        r.table,
        r.round.0,
        rule_set,
        r.first_seq.0,
        r.last_seq.0,
        verdict_name(r.verdict).to_uppercase()
    );
    let _ = writeln!(o, "\ntimeline:");
    let t0 = v.events.first().map(|(_, e)| e.occurred_at_ns).unwrap_or(0);
    for (i, (seq, e)) in v.events.iter().enumerate() {
        let dt_ms = (e.occurred_at_ns - t0) / 1_000_000;
        let _ = writeln!(
            o,
            "  #{:<6} +{:>7}ms  {:<14} {}",
            seq.0,
            dt_ms,
            e.device.as_str(),
            readside::describe::describe(&e.body)
        );
        if let Some(step) = v.steps.as_ref().and_then(|s| s.get(i)) {
            let _ = writeln!(o, "           {}", step_line(step));
        }
    }
    let _ = writeln!(
        o,
        "\nsettlement (player's net per line: rules vs dealer's record):"
    );
    let _ = writeln!(
        o,
        "  {:>4}  {:<15} {:>12} {:>12} {:>12}  clause",
        "box", "line", "rules", "recorded", "difference"
    );
    let recorded = recorded_payouts(&v.events);
    if let Some(s) = &r.settlement {
        for b in &s.boxes {
            let mut lines: BTreeMap<PayLine, (schemas::Money, Vec<&str>)> = BTreeMap::new();
            for l in &b.lines {
                let e = lines
                    .entry(l.line)
                    .or_insert((schemas::Money::ZERO, vec![]));
                e.0 = e.0 + l.net;
                e.1.push(l.clause.as_str());
            }
            for (line, (expected, clauses)) in lines {
                let rec = recorded
                    .get(&(b.box_no.0, line))
                    .copied()
                    .unwrap_or_default();
                let diff = rec - expected;
                let mark = if diff.0 != 0 { "  <== DISPUTE" } else { "" };
                let _ = writeln!(
                    o,
                    "  {:>4}  {:<15} {:>12} {:>12} {:>12}  {}{mark}",
                    b.box_no.0,
                    line.name(),
                    expected.to_string(),
                    rec.to_string(),
                    signed(diff),
                    clauses.join(", ")
                );
            }
        }
        for b in &s.boxes {
            for l in &b.lines {
                let _ = writeln!(
                    o,
                    "    box {} {}: {} ({})",
                    b.box_no.0,
                    l.line.name(),
                    l.explanation,
                    l.clause
                );
            }
        }
    } else {
        let _ = writeln!(
            o,
            "  (no settlement: the round could not be settled; see findings)"
        );
    }
    if r.findings.is_empty() {
        let _ = writeln!(o, "\nfindings: none");
    } else {
        let _ = writeln!(o, "\nfindings:");
        for f in &r.findings {
            let seqs: Vec<String> = f.seqs.iter().map(|s| format!("#{}", s.0)).collect();
            let bx = f
                .box_no
                .map(|b| format!(" box {}", b.0))
                .unwrap_or_default();
            let _ = writeln!(
                o,
                "  [{:?}] {} ({}){bx} at {}: {}",
                f.severity,
                f.code,
                f.clause,
                seqs.join(" "),
                f.explanation
            );
        }
    }
    if let Some(p) = &r.reconstruction {
        let _ = writeln!(
            o,
            "\nreconstruction proposal ({}, deck order from #{}):\n  {}",
            p.clause, p.deck_seq.0, p.proposal
        );
        for h in &p.intended {
            let cards: Vec<String> = h.cards.iter().map(|c| c.to_string()).collect();
            let _ = writeln!(o, "  {:<8} {}", h.place, cards.join(" "));
        }
        for m in &p.moves {
            let _ = writeln!(o, "  move the hand at {} to {}", m.from, m.to);
        }
        if let Some(s) = &p.settlement {
            let net: i64 = s.boxes.iter().flat_map(|b| &b.lines).map(|l| l.net.0).sum();
            let _ = writeln!(
                o,
                "  settled with the intended hands, the players' total net would be {}",
                schemas::Money(net)
            );
        }
    }
    o
}

fn recorded_payouts(events: &[(Seq, Event)]) -> BTreeMap<(u8, PayLine), schemas::Money> {
    let mut m = BTreeMap::new();
    for (_, e) in events {
        if let EventBody::PaidOut { box_no, line, net } = &e.body {
            let v: &mut schemas::Money = m.entry((box_no.0, *line)).or_default();
            *v = *v + *net;
        }
    }
    m
}

fn step_line(s: &replayer::StepView) -> String {
    let mut parts = vec![format!("{:?}", s.phase).to_lowercase()];
    for (b, cards) in &s.cards {
        let c: Vec<String> = cards.iter().map(|c| c.to_string()).collect();
        parts.push(format!("box{}[{}]", b.0, c.join(" ")));
    }
    if !s.dealer.is_empty() {
        let c: Vec<String> = s.dealer.iter().map(|c| c.to_string()).collect();
        parts.push(format!("dealer[{}]", c.join(" ")));
    }
    if !s.findings.is_empty() {
        parts.push(format!("findings: {}", s.findings.join(", ")));
    }
    parts.join("  ")
}

/// A progress bar on standard error, hidden when `hidden` or not on a terminal.
pub fn progress_bar(hidden: bool) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if hidden || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} {pos} events replayed ({per_sec}) {elapsed}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    bar
}
