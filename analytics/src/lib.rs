//! Decision analytics: what each recorded decision should have been, and sequential tests
//! that flag a box, dealer or table whose decisions use cards nobody may see (a dealer's
//! hole card, a neighbour's hand).
//!
//! - `strategy`: each rule set's optimal strategy, computed by the rules engine (exact
//!   enumeration of the dealer's unseen cards), and the house edge it gives.
//! - `verdict`: for one decision, the optimal play on what the player could see and the
//!   best play given the dealer's hidden cards.
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

pub mod ev;
pub mod payoff;
pub mod strategy;

pub use ev::{Ev, Evaluator, Info};
