//! The rules engine: hand evaluation and the settlement of one round for the five rule
//! sets of ../shared/seeds (CSP6, MLP3, SSP4, CS51, TCP3).
//!
//! Invariants:
//! - Pure: no I/O, no clock, no async, no randomness. `settle` is a function of its input;
//!   `edge`'s Monte Carlo draws from a fixed generator, a function of its seed.
//! - Money is integer minor units; percentages of a jackpot round down (RULES-NOTES 3).
//! - One settlement code path (`settle`), driven by one `RuleTable` of data per rule set
//!   (pay tables, qualifier, fold eligibility, caps, clause numbers), which a table's
//!   configuration can override. No per-game copies of the settlement logic.
//! - Every settlement line cites the clause that decided it.
//! - Jackpot contributions are not part of a settlement: the pool is recomputed from
//!   contributions, payments and resets by the replayer.
//!
//! It must never: read the clock, do I/O, or panic on input (bad input is a `SettleError`
//! naming the field).

#![warn(missing_docs)]

pub mod edge;
mod eval;
mod settle;
mod table;

pub use eval::{best5of6, eval3, eval5, tcp3_jackpot_class, Hand};
pub use settle::{check_bounds, dealer_qualifies, evaluate, main_row, settle, void_hands};
pub use table::{lookup, rule_table, Clauses, Qualifier, RuleTable};

/// Why a round cannot be settled: names the field at fault (e.g. `boxes[2].cards[1]`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct SettleError {
    /// The path of the field at fault in the input, e.g. `boxes[2].cards[1]`.
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}
