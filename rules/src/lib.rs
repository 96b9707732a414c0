//! The rules engine (being written): hand evaluation and settlement for the five rule sets.

use schemas::settle::{RoundInput, Settlement};

/// Why a round cannot be settled: names the field at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct SettleError {
    pub field: String,
    pub message: String,
}

/// Settles one round (placeholder until the engine lands).
pub fn settle(input: &RoundInput) -> Result<Settlement, SettleError> {
    Err(SettleError { field: "game".into(), message: format!("{} not implemented yet", input.game) })
}
