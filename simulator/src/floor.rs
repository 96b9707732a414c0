//! Sensible default table configurations for the five games, and a `Floor` of N tables
//! over them.

use crate::faults::FaultPlan;
use crate::shift::ShiftClock;
use crate::table::{FinanceRecord, TableSim};
use crate::Error;
use schemas::{
    BetKind, BetLimit, DealingMode, JackpotConfig, Money, PoolId, RuleSet, TableConfig, TableId,
    WireFormat,
};

/// The pool shared by every MLP3 table of a floor (MLP3 is a multi-link progressive).
pub const MLP3_LINKED_POOL: &str = "MLP3-LINK";

fn limit(kind: BetKind, min: i64, max: i64) -> BetLimit {
    BetLimit {
        kind,
        min: Money(min),
        max: Money(max),
    }
}

fn pool(id: &str) -> PoolId {
    // The ids used here are constants of this module that satisfy the id grammar.
    PoolId::new(id).expect("built-in pool id is valid")
}

/// A realistic configuration for a table of `rule_set`, in SGD: Ante 25.00 to 5,000.00
/// (CS51, online: 1.00 to 1,000.00), BET/Play up to the rule's multiple of the maximum
/// Ante, prescribed jackpot stakes (min == max), pay tables left to the seed's defaults.
/// Stud tables have 7 boxes, 3 Card Poker 6, the online game 1. Jackpot pools get a reset
/// value and a contribution rate (RULES-NOTES 6); the pool id is a per-rule-set default
/// that `Floor` makes unique per table (or shared, for MLP3).
pub fn default_config(rule_set: RuleSet) -> TableConfig {
    let (version, boxes, dealing) = match rule_set {
        RuleSet::Csp6 => ("Version 6", 7, DealingMode::ManualShoe),
        RuleSet::Mlp3 => ("Version 3", 7, DealingMode::Shuffler),
        RuleSet::Ssp4 => ("Version 4", 7, DealingMode::Shuffler),
        RuleSet::Cs51 => ("2021-12-31", 1, DealingMode::Rng),
        RuleSet::Tcp3 => ("Version 3", 6, DealingMode::ManualShoe),
    };
    TableConfig {
        rule_set,
        rules_version: version.to_string(),
        currency: "SGD".to_string(),
        boxes,
        dealing,
        limits: default_limits(rule_set),
        pay_tables: Vec::new(),
        bet_win_cap: None,
        jackpot: default_jackpot(rule_set),
    }
}

/// The bet limits of a default table, in minor units (SSP4 jackpot wagers in credits).
fn default_limits(rule_set: RuleSet) -> Vec<BetLimit> {
    match rule_set {
        RuleSet::Csp6 | RuleSet::Mlp3 => vec![
            limit(BetKind::Ante, 2_500, 500_000),
            limit(BetKind::Bet, 5_000, 1_000_000),
            limit(BetKind::Progressive, 100, 100),
        ],
        RuleSet::Ssp4 => vec![
            limit(BetKind::Ante, 2_500, 500_000),
            limit(BetKind::Bet, 5_000, 1_000_000),
            // SSP4 jackpot wagers count credits (SSP4 §3.5).
            limit(BetKind::JackpotPlayer, 1, 5),
            limit(BetKind::JackpotDealer, 1, 5),
        ],
        RuleSet::Cs51 => vec![
            limit(BetKind::Ante, 100, 100_000),
            limit(BetKind::Play, 200, 200_000),
            limit(BetKind::Bonus, 100, 10_000),
        ],
        RuleSet::Tcp3 => vec![
            limit(BetKind::Ante, 2_500, 500_000),
            limit(BetKind::Play, 2_500, 500_000),
            limit(BetKind::PairPlus, 2_500, 100_000),
            limit(BetKind::Progressive, 500, 500),
        ],
    }
}

/// The jackpot pool of a default table: none for the online game (CS51).
fn default_jackpot(rule_set: RuleSet) -> Option<JackpotConfig> {
    let (id, linked, reset, contribution_bp, credit_value) = match rule_set {
        RuleSet::Csp6 => ("CSP6-PJ", false, 5_000_000, 2_500, Money::ZERO),
        RuleSet::Mlp3 => (MLP3_LINKED_POOL, true, 10_000_000, 2_000, Money::ZERO),
        RuleSet::Ssp4 => ("SSP4-PJ", false, 5_000_000, 2_500, Money(100)),
        RuleSet::Cs51 => return None,
        RuleSet::Tcp3 => ("TCP3-PJ", false, 2_000_000, 2_500, Money::ZERO),
    };
    Some(JackpotConfig {
        pool: pool(id),
        linked,
        reset: Money(reset),
        contribution_bp,
        credit_value,
    })
}

/// A gaming floor: N tables cycling through the five games (CSP6, MLP3, SSP4, CS51,
/// TCP3, CSP6, ...). Table `i` (from 1) is `<RULESET>-<i:02>`; the live games alternate
/// manual shoe and shuffler; every third table publishes JSON, the others bincode, so
/// both wire forms are exercised; unlinked jackpot pools are one per table, MLP3 tables
/// share `MLP3_LINKED_POOL`.
///
/// Each table keeps its own view of its pool (the simulator has no jackpot controller
/// chain yet), so the values shown at linked MLP3 tables are per-table views.
pub struct Floor {
    /// The tables in order: table `i` (from 1) is at index `i - 1`.
    pub tables: Vec<TableSim>,
}

impl Floor {
    /// A floor of `tables` tables, each seeded from `seed` and its number, with the plan `faults`.
    pub fn new(tables: usize, seed: u64, faults: FaultPlan) -> Result<Floor, Error> {
        let mut out = Vec::with_capacity(tables);
        for i in 0..tables {
            let n = i + 1;
            let rule_set = RuleSet::ALL[i % RuleSet::ALL.len()];
            let id = TableId::new(format!("{}-{n:02}", rule_set.code()))
                .map_err(|e| Error::Config(format!("table id for table {n}: {e}")))?;
            let mut config = default_config(rule_set);
            // The live games alternate shoe and shuffler across the floor's tables.
            if matches!(rule_set, RuleSet::Csp6 | RuleSet::Mlp3 | RuleSet::Tcp3) {
                // Each pass over the five games flips the live games' dealing mode.
                let flip = (i / RuleSet::ALL.len()).is_multiple_of(2);
                let first = config.dealing == DealingMode::ManualShoe;
                config.dealing = if first == flip {
                    DealingMode::ManualShoe
                } else {
                    DealingMode::Shuffler
                };
            }
            if let Some(j) = config.jackpot.as_mut() {
                if !j.linked {
                    j.pool = PoolId::new(format!("{id}-PJ"))
                        .map_err(|e| Error::Config(format!("pool id of {id}: {e}")))?;
                }
            }
            let wire = if i % 3 == 2 {
                WireFormat::Json
            } else {
                WireFormat::Bincode
            };
            let table = TableSim::new(id, config, table_seed(seed, n as u64), faults)?
                .with_wire_format(wire);
            out.push(table);
        }
        Ok(Floor { tables: out })
    }
}

impl Floor {
    /// Every table signs no events (`TableSim::without_event_signatures`).
    pub fn without_event_signatures(self) -> Floor {
        let tables = self
            .tables
            .into_iter()
            .map(TableSim::without_event_signatures)
            .collect();
        Floor { tables }
    }

    /// Every table changes shift at `clock`'s boundaries (`TableSim::with_shifts`).
    pub fn with_shifts(self, clock: ShiftClock) -> Floor {
        let tables = self
            .tables
            .into_iter()
            .map(|t| t.with_shifts(clock))
            .collect();
        Floor { tables }
    }

    /// Takes every table's count results and finance errors (`TableSim::take_finance`).
    pub fn take_finance(&mut self) -> FinanceRecord {
        let mut out = FinanceRecord::default();
        for t in &mut self.tables {
            out.extend(t.take_finance());
        }
        out
    }

    /// Starts every table's device clock at `start_ns` plus a stagger of up to a minute per
    /// table (tables do not open in the same nanosecond).
    pub fn starting_at(self, start_ns: i64) -> Floor {
        let tables = self
            .tables
            .into_iter()
            .enumerate()
            .map(|(i, t)| t.with_clock_start(start_ns + i as i64 * 7_000_000_000))
            .collect();
        Floor { tables }
    }
}

/// Independent per-table seeds from one floor seed (splitmix64 of seed and table number).
pub fn table_seed(seed: u64, table_no: u64) -> u64 {
    let mut z = seed
        .wrapping_add(table_no.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
