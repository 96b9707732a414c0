//! The append-only, hash-chained event ledger: per-table chains checked on append,
//! idempotent re-appends, held gaps, quarantine, indexes by round, device time and arrival
//! order, `verify` and export. Stored on sled behind the narrow `store::Store` trait.
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
mod append;
pub mod arrival;
pub mod attest;
mod call;
mod classify;
pub mod config;
pub mod copies;
pub mod days;
pub mod digest;
#[cfg(feature = "faulty")]
pub mod faulty;
pub mod fence;
pub mod held_check;
mod hold;
pub mod journals;
pub mod logged;
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
pub use hold::{Blocker, BLOCKER_SCAN_MAX};
pub use provenance::Provenance;
pub use quarantine::{QuarantineHead, QuarantineVerdict};
pub use read::{
    ArrivalOrder, Events, ExportRange, ExportSelection, Gap, QuarantineEntry, RoundNeighbours,
    RoundSummary, Stats,
};
pub use recover::Recovery;
pub use types::{reason, Appended, Incoming, Outcomes, Refused};
pub use verify::{
    verify_arrival, verify_arrival_within, verify_store, ArrivalVerdict, AtSeq, TableVerdict,
    VerifyProblem, VerifyReport,
};

use schemas::{ChainHead, Hash32, RoundId, Seq, TableId};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use store::Store;

/// Most messages (events and checkpoints) in one `append` call.
pub const APPEND_BATCH_LEN_MAX: usize = 8192;
/// Most events in one stored record; a call with more events for a table writes several.
pub const RECORD_EVENTS_MAX: usize = 1024;
/// An event whose device time is further than this from its receive time (its stream
/// timestamp) is quarantined (`clock_skew`): 24 hours. The default of
/// `Ledger::set_clock_skew_max_ns`.
pub const CLOCK_SKEW_MAX_NS: i64 = 24 * 3600 * 1_000_000_000;
/// An event more than this many seqs beyond its table's head is quarantined
/// (`seq_too_far_ahead`) rather than held: no device outbox is that deep.
pub const GAP_LEN_MAX: u64 = 100_000;
/// Most held events per table; beyond it, quarantined (`pending_full`).
pub const PENDING_PER_TABLE_MAX: usize = 10_000;
/// Most bytes of held events across all tables (they are also kept in memory).
pub const PENDING_BYTES_MAX: usize = 64 * 1024 * 1024;

/// One stored event as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// The event's position in its table's chain.
    pub seq: Seq,
    /// `schemas::chain::event_hash` over the stored bytes: the next event's prev.
    pub hash: Hash32,
    /// JetStream stream sequence: the House's arrival order across tables.
    pub stream_seq: u64,
    /// When the House received it (its stream timestamp), UTC ns.
    pub received_at_ns: i64,
    /// Copied from the decoded event (device clock); `verify` checks it against the bytes.
    pub occurred_at_ns: i64,
    /// Copied from the decoded event; `verify` checks it against the bytes.
    pub round: Option<RoundId>,
    /// The exact bytes as received.
    pub bytes: Vec<u8>,
}

/// The ledger's errors: integrity and operating failures. Bad input bytes are never an
/// error: they are quarantined.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Another process, or another `Ledger` here, holds the directory's lock.
    #[error("ledger directory {path} is locked by another process (one process owns a ledger; use its API or an export): {detail}")]
    Locked {
        /// The ledger directory.
        path: PathBuf,
        /// The store's error.
        detail: String,
    },
    /// The store failed an operation.
    #[error("store {op}: {detail}")]
    Store {
        /// The operation, e.g. `commit`.
        op: &'static str,
        /// The store's error.
        detail: String,
    },
    /// A stored value does not decode: the ledger is damaged.
    #[error("corrupt stored value: {detail} (run verify)")]
    CorruptRecord {
        /// What does not decode, and where.
        detail: String,
    },
    /// One `append` call carried more than `APPEND_BATCH_LEN_MAX` messages.
    #[error("append batch of {len} messages exceeds the limit of {max}")]
    BatchTooLarge {
        /// Messages in the call.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// No event of this table is stored.
    #[error("table {0} is not in the ledger")]
    UnknownTable(TableId),
    /// No event of this round is stored for the table.
    #[error("round {round} of table {table} is not in the ledger")]
    UnknownRound {
        /// The table asked for.
        table: TableId,
        /// The round id asked for.
        round: u64,
    },
    /// An export cannot be made; the text says why.
    #[error("export: {0}")]
    Export(String),
    /// An export selection holds more events than its limit.
    #[error("export: the selection holds {events} events, more than the {max} allowed (choose a table and fewer rounds)")]
    ExportTooLarge {
        /// Events the selection holds.
        events: u64,
        /// The limit (`ExportSelection::events_max`).
        max: u64,
    },
    /// An export would cover events removed by retention. It is refused: an export never
    /// holds a gap, so it never looks complete without being so.
    #[error("export: table {table} seqs {first_seq}..={last_seq} (day {day}) were removed by retention; an export cannot hold them")]
    ExportRemoved {
        /// The table.
        table: TableId,
        /// The removed gaming day, `YYYY-MM-DD`.
        day: String,
        /// The day's first seq of the table.
        first_seq: u64,
        /// The day's last seq of the table.
        last_seq: u64,
    },
    /// A gaming-day rule or date is not valid.
    #[error("gaming day: {0}")]
    Day(String),
    /// A day cannot be sealed.
    #[error("cannot seal day {day}: {why}")]
    Seal {
        /// The gaming day, `YYYY-MM-DD`.
        day: String,
        /// Why it cannot, in words.
        why: String,
    },
    /// A sealed day cannot be imported (`rebuild`); nothing of it claims to be complete.
    #[error("day {day} cannot be imported: {why}")]
    Import {
        /// The gaming day, `YYYY-MM-DD`.
        day: String,
        /// Why, in words.
        why: String,
    },
    /// The archive tier refused or failed an operation.
    #[error("archive tier: {0}")]
    Tier(String),
    /// A signed retention act removed the day's records; its seal remains.
    #[error("table {table}: its records of day {day} were removed by retention; the day's seal keeps its heads")]
    RetentionRemoved {
        /// The gaming day, `YYYY-MM-DD`.
        day: String,
        /// The table asked for.
        table: TableId,
    },
    /// A setting is out of its allowed range.
    #[error("bad setting: {0}")]
    BadSetting(String),
    /// Writing an export to a file or stream failed.
    #[error("writing the export: {0}")]
    Io(#[from] std::io::Error),
}

/// Mutable state, guarded by one mutex: only one append runs at a time.
struct State {
    heads: BTreeMap<TableId, ChainHead>,
    /// Each table's receipt at its head (`arrival::receipt_of_table`). A table whose head
    /// was written before receipts has none here until its next append computes it.
    receipts: BTreeMap<TableId, Hash32>,
    /// Tables with such a head whose receipt could not be computed (their records do not
    /// read): not tried again until the next open, so a damaged table costs one scan.
    receiptless: std::collections::BTreeSet<TableId>,
    /// Events held beyond a gap, until it fills.
    held: types::HeldEvents,
    counters: BTreeMap<String, u64>,
    /// The quarantine: its chain, counts and bounds.
    quarantine: quarantine::QuarantineState,
    next_call_id: u64,
    bytes_total: u64,
    /// The last call's arrival hash (`arrival`); zeros before the first.
    arrival_head: Hash32,
    /// Who may speak for a table: admin keys, device keys, kept checkpoints.
    trust: attest::Trust,
    /// The clock skew limit in force (`settings`).
    clock_skew_max_ns: i64,
    /// Whether a table's chain ends with `TableClosed`, for the tables an append has
    /// looked at since open. A cache of the head event's kind: reading the head record
    /// back from the store for every table of every batch was 13% of the writer's time.
    closed: BTreeMap<TableId, bool>,
    /// Tables fenced as damaged (`fence`): their new messages are quarantined.
    fenced: BTreeMap<TableId, fence::Fence>,
    /// Admin acts the last call took whose effect runs after its commit (`admin`).
    admin_deferred: Vec<types::DeferredAct>,
}

/// An open ledger.
pub struct Ledger {
    store: Box<dyn Store>,
    state: Mutex<State>,
    /// Device keys decompressed for checkpoint signatures (`attest`); taken only by the
    /// append that holds `state`.
    verifying_keys: Mutex<schemas::attest::KeyCache>,
    /// What this open found beyond the store's last commit (`recover`).
    recovered: Recovery,
    /// Events decoded from stored records since open (`Ledger::events_decoded`).
    events_decoded: std::sync::atomic::AtomicU64,
}

impl Ledger {
    /// Opens or creates the ledger in `path` on sled (redb when the test switch
    /// `ROUNDLEDGER_TEST_STORE` says so, `store::choice`). `Error::Locked` if another
    /// process (or another `Ledger` in this process) holds it.
    pub fn open(path: impl AsRef<Path>) -> Result<Ledger, Error> {
        Ledger::with_store(store::choice::open_store(path.as_ref())?)
    }

    /// Opens a ledger on any `Store`: loads heads, held events and quarantine counters,
    /// then appends again any records the store wrote but holds no commit for (`recover`).
    pub fn with_store(store: Box<dyn Store>) -> Result<Ledger, Error> {
        let state = read::load_state(store.as_ref())?;
        let mut ledger = Ledger {
            store,
            state: Mutex::new(state),
            verifying_keys: Mutex::new(schemas::attest::KeyCache::default()),
            recovered: Recovery::default(),
            events_decoded: Default::default(),
        };
        ledger.recovered = ledger.recover_unreferenced()?;
        ledger.build_config_index_if_missing()?;
        ledger.fence_damaged_tables();
        Ok(ledger)
    }

    /// What this open found beyond the store's last commit, and appended again.
    pub fn recovered(&self) -> &Recovery {
        &self.recovered
    }

    /// Makes every append so far durable. Acknowledge only after this returns.
    pub fn flush(&self) -> Result<(), Error> {
        self.store.flush()
    }

    /// The device keys decompressed so far; taken only by the append that holds `state`.
    fn key_cache(&self) -> MutexGuard<'_, schemas::attest::KeyCache> {
        self.verifying_keys
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock can only come from a broken invariant of our own;
        // the state is only replaced after a successful commit, so it is still consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}
