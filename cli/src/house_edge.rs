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
    selection_rows();
    cap_rows(args.seed);
    Ok(Outcome::Clean)
}

/// SSP4's Selection per pick, for a layout of `SSP4_EXAMPLE_BOXES` boxes: exact.
fn selection_rows() {
    let s = rules::edge::ssp4_selection_exact(None, SSP4_EXAMPLE_BOXES);
    let rows = [
        (
            &s.magic_card,
            "Magic Card, per pick, 5 of 52 cards in the hand",
        ),
        (&s.lucky_player, "Lucky Player, per pick, 1 of 7 boxes"),
        (
            &s.lucky_dealer,
            "Lucky Dealer, per pick of this table's dealer",
        ),
    ];
    for (f, what) in rows {
        println!(
            "| SSP4 | Selection 5 to 1 on a jackpot wager: {what} | {} | exact, {} rounds through the engine |",
            percent(f.edge_ppm()),
            f.rounds
        );
    }
}

/// What a BET cap adds to the main game's edge at a few Antes (stratified Monte Carlo).
fn cap_rows(seed: u64) {
    let example = |rs, cap: Option<i64>| schemas::TableConfig {
        rule_set: rs,
        rules_version: String::new(),
        currency: "SGD".into(),
        boxes: SSP4_EXAMPLE_BOXES,
        dealing: schemas::DealingMode::Shuffler,
        limits: Vec::new(),
        pay_tables: Vec::new(),
        bet_win_cap: cap.map(schemas::Money),
        jackpot: None,
    };
    let cases = [
        (
            example(schemas::RuleSet::Csp6, None),
            100_000,
            "SGD 100,000 (4.1.1)",
        ),
        (
            example(schemas::RuleSet::Csp6, None),
            1_000_000,
            "SGD 100,000 (4.1.1)",
        ),
        (
            example(schemas::RuleSet::Ssp4, Some(1_000_000)),
            100_000,
            "SGD 10,000, configured",
        ),
    ];
    for (config, ante_minor, cap) in cases {
        let c = rules::edge::stud_cap_cost(&config, schemas::Money(ante_minor), 200_000, seed);
        println!(
            "| {} | Ante and BET, cap {cap}, Ante SGD {} | +{} | stratified Monte Carlo, 200,000 deals per capped class, seed {seed}; 95%: +-{} |",
            config.rule_set.code(),
            ante_minor / 100,
            percent(c.cost_ppm),
            percent(c.error_ppm as i64)
        );
    }
}

/// Boxes of the layout the Selection rows assume.
const SSP4_EXAMPLE_BOXES: u8 = 7;

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
