//! `roundledger settle`: the pay calculator. Reads one round as JSON
//! (schemas/json/settle-input.schema.json, a superset of EXAMPLES.md's rounds) from a file
//! or standard input and prints the settlement as JSON
//! (schemas/json/settle-output.schema.json).

use crate::Outcome;
use anyhow::{Context, Result};
use std::io::Read;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The round as JSON; `-` or nothing reads standard input.
    file: Option<PathBuf>,
    /// Print only the net result per box and line (EXAMPLES.md's `net` shape).
    #[arg(long)]
    net: bool,
}

pub fn run(args: Args) -> Result<Outcome> {
    let text = match args.file.as_deref() {
        None => read_stdin()?,
        Some(p) if p.as_os_str() == "-" => read_stdin()?,
        Some(p) => {
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?
        }
    };
    let input: schemas::settle::RoundInput = parse_input(&text)?;
    let settlement = rules::settle(&input).map_err(|e| anyhow::anyhow!("invalid round: {e}"))?;
    let out = if args.net {
        serde_json::to_string_pretty(&settlement.net())?
    } else {
        serde_json::to_string_pretty(&settlement)?
    };
    println!("{out}");
    Ok(Outcome::Clean)
}

fn read_stdin() -> Result<String> {
    let mut s = String::new();
    std::io::stdin()
        .read_to_string(&mut s)
        .context("reading standard input")?;
    Ok(s)
}

/// Parses the input, naming the field and position of the first problem. Accepts either
/// a round object or EXAMPLES.md's `{"round": {...}, ...}` wrapper.
pub fn parse_input(text: &str) -> Result<schemas::settle::RoundInput> {
    let value: serde_json::Value = serde_json::from_str(text).context("input is not JSON")?;
    let round = match value.get("round") {
        Some(r) if value.get("game").is_none() => r.clone(),
        _ => value,
    };
    let de = round.to_string();
    let mut d = serde_json::Deserializer::from_str(&de);
    let parsed: Result<schemas::settle::RoundInput, _> = serde_path_to_error::deserialize(&mut d);
    parsed.map_err(|e| anyhow::anyhow!("invalid round: field `{}`: {}", e.path(), e.inner()))
}
