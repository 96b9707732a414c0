//! Decision analytics: what each recorded decision should have been, and sequential tests
//! that flag a box, dealer or table whose decisions use cards nobody may see (a dealer's
//! hole card, a neighbour's hand).
//!
//! - `strategy`: each rule set's optimal strategy, computed by the rules engine (exact
//!   enumeration of the dealer's unseen cards), and the house edge it gives.
//! - `verdict`: for one decision, the optimal play on what the player could see and the
//!   best play given the dealer's hidden cards.
//! - `monitor`: those tests per box, dealer, table and pair of neighbouring boxes.
//! - `dealer`: payout errors, irregularities and pace per dealer against the floor.
//! - `pace`: dealing time summed over stints, and rounds per hour of it.
//! - `hold`: actual against theoretical win with its confidence interval.
//! - `sequential`: a CUSUM of a test martingale whose false-alarm rate per 1,000 rounds
//!   is a setting, with the rounds that moved it.
//!
//! Invariants:
//! - Pure: no I/O, no clock, no async; the same rounds give the same verdicts and alarms.
//! - Every net comes from `rules::settle` (`payoff`); no pay table is written here.
//! - Floats appear only in statistics (expected values, test statistics); never in money.
//!
//! It must never: settle a bet for money, read the clock, or depend on tokio, sled,
//! async-nats or axum (the purity gate in scripts/test.sh).

#![warn(missing_docs)]

pub mod cheats;
pub mod dealer;
pub mod ev;
pub mod hold;
pub mod monitor;
pub mod pace;
pub mod payoff;
pub mod rounds;
pub mod sequential;
pub mod strategy;
pub mod verdict;

pub use ev::{Ev, Evaluator, Info};
pub use monitor::{DecisionAlarm, Kind, Monitor, StreamKey, Subject};
pub use rounds::{read_table, BoxFacts, RoundFacts, RoundReader};
pub use sequential::{Alarm, CusumState, Moved, TestSetting};
pub use verdict::DecisionVerdict;
