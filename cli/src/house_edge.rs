//! `roundledger house-edge`: each bet kind's house edge through the rules engine
//! (`rules::edge`), printed as the table in rules/RULES.md.

use crate::Outcome;
use anyhow::{bail, Result};

#[derive(clap::Args)]
pub struct Args {
    /// Rounds per five-card game for the Monte Carlo (TCP3 is exact, over every deal).
    #[arg(long, default_value_t = 2_000_000)]
    rounds: u64,
    /// Seed of the Monte Carlo's generator: the same seed prints the same figures.
    #[arg(long, default_value_t = 2026)]
    seed: u64,
}

pub fn run(args: Args) -> Result<Outcome> {
    if args.rounds == 0 || args.rounds > rules::edge::MONTE_CARLO_ROUNDS_MAX {
        bail!(
            "--rounds must be 1 to {}",
            rules::edge::MONTE_CARLO_ROUNDS_MAX
        );
    }
    println!("| rule set | bet | house edge | method |");
    println!("|---|---|---|---|");
    for f in rules::edge::all_edges(args.rounds, args.seed) {
        let method = match f.exact {
            true => format!("exact, every deal ({})", f.rounds),
            false => format!(
                "Monte Carlo, {} rounds, seed {}; 95%: +-{}",
                f.rounds,
                args.seed,
                percent(2 * f.std_error_ppm() as i64)
            ),
        };
        println!(
            "| {} | {} | {} | {method} |",
            f.rule_set.code(),
            f.bet,
            percent(f.edge_ppm())
        );
    }
    Ok(Outcome::Clean)
}

/// Parts per million as a percentage with three decimals: 33729 -> "3.373%".
fn percent(ppm: i64) -> String {
    let sign = if ppm < 0 { "-" } else { "" };
    let thousandths = (ppm.unsigned_abs() + 5) / 10;
    format!("{sign}{}.{:03}%", thousandths / 1000, thousandths % 1000)
}

#[cfg(test)]
mod tests {
    #[test]
    fn percent_rounds_to_three_decimals() {
        assert_eq!(super::percent(33_729), "3.373%");
        assert_eq!(super::percent(-55_747), "-5.575%");
        assert_eq!(super::percent(4), "0.000%");
    }
}
