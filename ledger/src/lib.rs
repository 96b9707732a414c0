//! The append-only, hash-chained event ledger: per-table chains checked on append,
//! idempotent re-appends, held gaps, quarantine, indexes by round, device time and arrival
//! order, `verify` and export. Stored on sled behind the narrow `store::Store` trait.
//!
//! Callers reach it through four faces that `Ledger` hands out (`faces`): `writer()`,
//! `reader()`, `verifier()` and `tier()`. This root only declares modules and re-exports.
//!
//! Invariants:
//! - **Append-only by construction.** The public API has no update and no delete: events
//!   and quarantine entries are written once; a signed purge (`purge`) is the one way an
//!   entry leaves. (Held events leave the pending space only to
//!   be appended or quarantined.)
//! - **The stored bytes are the received bytes**; hashes are `schemas::chain::event_hash`
//!   over them, never over a re-serialisation.
//! - **Idempotent for ever**: (table, seq, hash) already stored is `Appended::Duplicate`,
//!   whenever it comes back. A different event at a stored seq is quarantined (fork).
//! - **Gaps are held, never skipped**: an event beyond head + 1 is kept durably and appended
//!   automatically when the gap fills.
//! - **Nothing accepted is dropped**: what cannot be appended or held is quarantined
//!   verbatim with a stable reason code and counted. A delivery already quarantined (the same stream
//!   seq and bytes, among the newest `quarantine::QUARANTINE_RECENT_MAX` entries) is
//!   `Refused::QuarantinedBefore`: acknowledged, not written twice. The same bytes refused
//!   again for the same reason under a later stream seq are `Refused::Repeated`: counted
//!   beside the first entry (`quarantine::Repeat`), not stored again. Past a limit of
//!   `quarantine_limits` a refusal is counted with a digest, its bytes left in the stream.
//!   Only a signed purge (`purge`) removes entries, and never a fenced table's.
//! - **Durable only after `flush`**: callers acknowledge only after it returns.
//! - **One damaged table never stops the others**: a table whose head record does not
//!   read back is fenced (`fence`); its new messages are quarantined as `table_fenced`.
//! - One process owns a ledger directory (sled locks it; a second `open` gets
//!   `Error::Locked`). One append call runs at a time (an internal mutex).
//!
//! Storage layout (one sled tree, one byte of prefix per space, see `store::Space`): one
//! record per table per append call (`table ++ first seq`) holding each event's seq, hash,
//! stream seq, receive time, device time, round and exact bytes; chain heads in memory,
//! persisted in the same atomic commit; round summaries and device-time and arrival indexes
//! point into the records. The records themselves live in the value log
//! (`<dir>/values/*.seg`, see `valuelog`), written and fsynced before the commit that
//! gives sled their 21-byte pointers; sled keeps the keys, the pointers and every index.
//!
//! It must never panic on any input bytes, and never be used from async runtime threads
//! (sled blocks): give it a dedicated thread or `spawn_blocking`.

#![warn(missing_docs)]

pub mod admin;
pub mod admin_pending;
mod append;
pub mod arrival;
pub mod attest;
mod call;
mod classify;
pub mod config;
pub mod copies;
pub mod days;
pub mod digest;
mod error;
mod faces;
#[cfg(feature = "faulty")]
pub mod faulty;
pub mod fence;
pub mod held_check;
mod hold;
pub mod journals;
mod limits;
pub mod logged;
mod open;
mod owner;
pub mod provenance;
pub mod purge;
pub mod purge_mark;
mod purge_step;
pub mod quarantine;
pub mod quarantine_limits;
mod read;
pub mod rebuild;
pub mod record;
mod recover;
mod refuse;
pub mod resync;
pub mod settings;
pub mod store;
pub mod tier;
mod types;
pub mod valuelog;
mod verify;

pub use append::checkpoint_first;
pub use error::Error;
pub use faces::{Reader, Tier, Verifier, Writer};
pub use hold::{Blocker, BLOCKER_SCAN_MAX};
pub use limits::{
    APPEND_BATCH_LEN_MAX, CLOCK_SKEW_MAX_NS, GAP_LEN_MAX, PENDING_BYTES_MAX, PENDING_PER_TABLE_MAX,
    RECORD_EVENTS_MAX,
};
pub use owner::Ledger;
pub use provenance::Provenance;
pub use quarantine::{QuarantineHead, QuarantineVerdict};
pub use read::{
    ArrivalOrder, Events, ExportRange, ExportSelection, Gap, QuarantineEntry, RoundNeighbours,
    RoundSummary, Stats,
};
pub use record::StoredEvent;
pub use recover::Recovery;
pub use types::{reason, Appended, Incoming, Outcomes, Refused};
pub use verify::{
    verify_arrival, verify_arrival_within, verify_store, ArrivalVerdict, AtSeq, TableVerdict,
    VerifyProblem, VerifyReport,
};
