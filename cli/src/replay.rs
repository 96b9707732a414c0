//! `roundledger replay`: one round as surveillance reads it: the timeline of its events
//! (with `--step`, the state of the layout after each one), the settlement table (what the
//! rules say against what the dealer recorded, per box and line) and the findings, each
//! citing its clause. `--json` prints the same for machines.
//!
//! One read path: from a ledger, an export or a server, the round is read and replayed by
//! `readside` (the server runs the same code), and printed by `show`.

use crate::show::{signed, verdict_name};
use crate::source::{Source, SourceArgs};
use crate::Outcome;
use anyhow::Result;
use schemas::api::{RoundDetail, StepList, StepState};
use schemas::TableId;
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

/// Reads and replays one round from a ledger or an export.
pub fn load(source: &Source, table: &TableId, round: u64) -> Result<readside::rounds::LoadedRound> {
    let loaded = match source {
        Source::Ledger(l) => readside::rounds::locate_in_ledger(l, table, round)
            .and_then(|at| readside::rounds::load(l, table, round, at)),
        Source::Export(m) => {
            let events = m.get(table).map(|v| v.as_slice()).unwrap_or_default();
            readside::held::load_held(table, round, events)
        }
    };
    Ok(loaded?)
}

pub fn run(args: Args) -> Result<Outcome> {
    let table = TableId::new(args.table.clone()).map_err(|e| anyhow::anyhow!("--table: {e}"))?;
    let (detail, steps) = match crate::client::Client::from_args(&args.server)? {
        Some(c) => crate::remote::replay(&c, &table, args.round, args.step)?,
        None => {
            let loaded = load(&Source::open(&args.source)?, &table, args.round)?;
            (loaded.detail(), args.step.then(|| loaded.steps()))
        }
    };
    show(&detail, steps.as_ref(), args.json)?;
    let r = &detail.report;
    Ok(if r.findings.is_empty() && r.disputes.is_empty() {
        Outcome::Clean
    } else {
        Outcome::Findings
    })
}

/// Prints a round: JSON (`{"detail", "steps"}`, the API's bodies) or the human form.
pub fn show(detail: &RoundDetail, steps: Option<&StepList>, json: bool) -> Result<()> {
    if json {
        let v = serde_json::json!({ "detail": detail, "steps": steps });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", render(detail, steps));
    }
    Ok(())
}

/// The human form: header, timeline (with each step's state), settlement table, findings.
pub fn render(d: &RoundDetail, steps: Option<&StepList>) -> String {
    let r = &d.report;
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
    for r in &d.resyncs {
        let _ = writeln!(
            o,
            "seq {} ADMITTED BY RE-SYNC: refused first (quarantine entry {}), admitted by admin {} at {}: {}",
            r.seq.0,
            r.quarantine_id,
            r.admin,
            crate::when::show(r.signed_at_ns),
            r.note
        );
    }
    timeline(&mut o, d, steps);
    settlement(&mut o, d);
    findings(&mut o, r);
    reconstruction(&mut o, r);
    o
}

fn timeline(o: &mut String, d: &RoundDetail, steps: Option<&StepList>) {
    let opened = d
        .events
        .first()
        .map_or(String::new(), |e| crate::when::show(e.occurred_at_ns));
    let _ = writeln!(o, "\ntimeline (device time; opened {opened}):");
    let t0 = d.events.first().map(|e| e.occurred_at_ns).unwrap_or(0);
    for (i, e) in d.events.iter().enumerate() {
        let dt_ms = (e.occurred_at_ns - t0) / 1_000_000;
        let at = crate::when::show(e.occurred_at_ns);
        let _ = writeln!(
            o,
            "  #{:<6} {} +{:>7}ms  {:<14} {}",
            e.seq.0,
            at.get(11..23).unwrap_or(&at),
            dt_ms,
            e.device,
            e.description
        );
        if let Some(step) = steps.and_then(|s| s.steps.get(i)) {
            let _ = writeln!(o, "           {}", step_line(step));
        }
    }
}

fn settlement(o: &mut String, d: &RoundDetail) {
    let _ = writeln!(
        o,
        "\nsettlement (player's net per line: rules vs dealer's record):"
    );
    let _ = writeln!(
        o,
        "  {:>4}  {:<15} {:>12} {:>12} {:>12}  clause",
        "box", "line", "rules", "recorded", "difference"
    );
    let Some(s) = &d.report.settlement else {
        let _ = writeln!(
            o,
            "  (no settlement: the round could not be settled; see findings)"
        );
        return;
    };
    for row in &d.settlement {
        let mark = if row.difference.0 != 0 {
            "  <== DISPUTE"
        } else {
            ""
        };
        let _ = writeln!(
            o,
            "  {:>4}  {:<15} {:>12} {:>12} {:>12}  {}{mark}",
            row.box_no.0,
            row.line.name(),
            row.expected.to_string(),
            row.recorded.to_string(),
            signed(row.difference),
            row.clauses.join(", ")
        );
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
}

fn findings(o: &mut String, r: &schemas::report::RoundReport) {
    if r.findings.is_empty() {
        let _ = writeln!(o, "\nfindings: none");
        return;
    }
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

fn reconstruction(o: &mut String, r: &schemas::report::RoundReport) {
    let Some(p) = &r.reconstruction else {
        return;
    };
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

fn step_line(s: &StepState) -> String {
    let mut parts = vec![s.phase.clone()];
    if let Some(boxes) = s.cards.as_object() {
        for (b, cards) in boxes {
            let c: Vec<&str> = cards
                .as_array()
                .map(|a| a.iter().filter_map(|c| c.as_str()).collect())
                .unwrap_or_default();
            parts.push(format!("box{b}[{}]", c.join(" ")));
        }
    }
    if !s.dealer.is_empty() {
        parts.push(format!("dealer[{}]", s.dealer.join(" ")));
    }
    if !s.findings.is_empty() {
        parts.push(format!("findings: {}", s.findings.join(", ")));
    }
    parts.join("  ")
}
