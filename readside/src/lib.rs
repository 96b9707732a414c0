//! The read side: everything the API and the CLI look up about rounds, above `ledger` and
//! `replayer` and below both front ends.
//!
//! - `rounds`: where a round sits in its table's chain, reading and replaying its window
//!   (the one read path for a round).
//! - `evidence`: building and verifying evidence bundles (schemas/BUNDLE.md).
//! - `model`: the read model on disk that lists and lookups are served from.
//! - `index`: the tail that keeps the model current from the ledger.
//! - `row`: what the model keeps of a round, and what lists show of it.
//! - `shiftrow`: a table's shift row of finance; `finance`: the reports read from them.
//! - `edges`: the house edges of configured pay tables, priced off the indexer's path.
//! - `counts`: the count room's results, from the API's `counts.jsonl`.
//! - `signals`: the decision analytics' signals (hole-card play, card sharing), kept as
//!   rounds are indexed; `streams`: their statistics' states, so a restart resumes them.
//! - `dealers`: dealer quality rows; `stints`: their dealing time, summed over stints.
//! - `retained`: a report over a day removed by retention, or over events the model has
//!   not indexed yet, is refused, by name.
//! - `compare`: what `readmodel check` compares with a fresh rebuild, and how.
//! - `forks`: disputed seqs, where a chain has two signed events (one quarantined).
//! - `describe`, `clauses`: event descriptions and finding wording for people.
//!
//! Invariants: never appends to the ledger (it writes only its own read model, derived
//! from the ledger); no HTTP and no async runtime here.

#![warn(missing_docs)]

pub mod clauses;
mod compare;
pub mod counts;
pub mod dealers;
pub mod describe;
pub mod edges;
pub mod evidence;
pub mod finance;
pub mod forks;
pub mod held;
pub mod holds;
pub mod index;
pub mod jackpot;
mod keystr;
pub mod kv;
pub mod model;
pub mod retained;
pub mod rounds;
pub mod row;
pub mod shiftrow;
pub mod signals;
pub mod stints;
pub mod streams;

/// Why a read failed. The API maps each kind to an HTTP status; the CLI prints it.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The table, round or record asked for does not exist (HTTP 404).
    #[error("{0}")]
    NotFound(String),
    /// The request itself is invalid (HTTP 400).
    #[error("{0}")]
    BadRequest(String),
    /// What was asked was removed by retention for good (HTTP 410).
    #[error("{0}")]
    Gone(String),
    /// The read model has not yet indexed what the answer needs; ask again (HTTP 503).
    #[error("{0}")]
    Indexing(String),
    /// The answer would exceed a limit: window, chain or group count (HTTP 413).
    #[error("{0}")]
    TooLarge(String),
    /// Stored data contradicts itself: a chain, journal or model that does not check (HTTP 500).
    #[error("integrity: {0}")]
    Integrity(String),
    /// The ledger failed (HTTP 500).
    #[error("ledger: {0}")]
    Ledger(#[from] ledger::Error),
    /// Any other failure of our own: the read model's store, a blocking task (HTTP 500).
    #[error("{0}")]
    Internal(String),
}
