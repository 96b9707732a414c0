//! Proofs over the wire types: what an outside party checks, and the files it checks.
//!
//! - `export`: a table's chain as NDJSON, and its verification from genesis or an anchor.
//! - `digest`: the signed digest of a whole ledger (heads, receipts, quarantine, journals).
//! - `bundle`: one round's evidence bundle and its verification (schemas/BUNDLE.md).
//! - `journal`: the hash chain every append-only journal beside the ledger keeps.
//! - `receipt`: the chain over each table's stream seqs and receive times.
//!
//! API boundary: the CLI's file checks and an outside verifier use these functions alone.
//! `ledger` and `readside` build the files they check.
//!
//! Invariants: pure (no I/O but the reader given; no clock); verification never panics on
//! any input; a file that verifies is exactly the chain it claims.

#![warn(missing_docs)]

pub mod bundle;
pub mod digest;
pub mod export;
pub mod journal;
pub mod receipt;
