//! `roundledger verify`: recomputes every hash of every table's chain from genesis (a
//! ledger directory) or from the export's anchors (an export file), and names the first bad
//! position per table. Exit 0 when every chain verifies, 1 when one does not.

use crate::source::{open_ledger, SourceArgs};
use crate::Outcome;
use anyhow::{Context, Result};
use ledger::TableVerdict;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    source: SourceArgs,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<Outcome> {
    match (&args.source.ledger, &args.source.export) {
        (Some(dir), None) => {
            let ledger = open_ledger(dir)?;
            let report = ledger.verify().context("verifying")?;
            let lines: Vec<serde_json::Value> = report.tables.iter().map(verdict_json).collect();
            if args.json {
                println!("{}", serde_json::to_string_pretty(&lines)?);
            } else {
                for t in &report.tables {
                    match t {
                        TableVerdict::Ok { head, events } => {
                            println!(
                                "{:<12} ok   {events} events, head seq {} {}",
                                head.table.as_str(),
                                head.seq.0,
                                head.hash
                            )
                        }
                        TableVerdict::Bad {
                            table,
                            seq,
                            problem,
                        } => {
                            println!(
                                "{:<12} BAD  first bad position: seq {seq}: {problem}",
                                table.as_str()
                            )
                        }
                    }
                }
                println!(
                    "{} tables: {}",
                    report.tables.len(),
                    if report.is_ok() {
                        "every chain verifies"
                    } else {
                        "verification FAILED"
                    }
                );
            }
            Ok(if report.is_ok() {
                Outcome::Clean
            } else {
                Outcome::Findings
            })
        }
        (None, Some(file)) => {
            let f =
                std::fs::File::open(file).with_context(|| format!("opening {}", file.display()))?;
            match schemas::export::verify_export(std::io::BufReader::new(f)) {
                Ok(s) => {
                    if args.json {
                        println!("{}", serde_json::to_string_pretty(&s)?);
                    } else {
                        for t in &s.tables {
                            println!(
                                "{:<12} ok   seq {}..={} ({} events) anchor {} head {}",
                                t.table.as_str(),
                                t.from_seq,
                                t.to_seq,
                                t.events,
                                t.anchor,
                                t.head
                            );
                        }
                        println!("{}: {} events verify", file.display(), s.events);
                    }
                    Ok(Outcome::Clean)
                }
                Err(e) => {
                    println!("{}: verification FAILED: {e}", file.display());
                    Ok(Outcome::Findings)
                }
            }
        }
        _ => anyhow::bail!("say what to verify: --ledger DIR or --export FILE"),
    }
}

fn verdict_json(t: &TableVerdict) -> serde_json::Value {
    match t {
        TableVerdict::Ok { head, events } => serde_json::json!({
            "table": head.table, "ok": true, "events": events, "head_seq": head.seq, "head": head.hash,
        }),
        TableVerdict::Bad {
            table,
            seq,
            problem,
        } => serde_json::json!({
            "table": table, "ok": false, "first_bad_seq": seq, "problem": problem.to_string(),
        }),
    }
}
