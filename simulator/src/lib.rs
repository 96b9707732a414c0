//! The table-device simulator: plays realistic rounds of the five games (CSP6, MLP3, SSP4,
//! CS51, TCP3) with correct hash chains, injects dealer errors and irregularities on
//! request, and publishes the events over NATS JetStream as table controllers would.
//!
//! Two layers:
//! - `table`, `floor`, `faults`, `expected`, `tray`, `shift`: pure and deterministic. The
//!   same table id, configuration, seed and fault plan give byte-identical events. No
//!   clock (timestamps come from a simulated device clock), no I/O, no tokio.
//! - `publish`: the async edge that puts those events on NATS.
//!
//! Invariants:
//! - Each table's events form a valid chain: seq 1, 2, 3, ..., each `prev` the hash of the
//!   previous event's exact published bytes (`schemas::chain::verify_chain` accepts them).
//! - Payouts are what `rules::settle` says, except where a fault plan injected a wrong
//!   payout, and every injected fault is listed with the finding code the replayer must
//!   raise (`expected`).
//! - The chip tray moves by what the dealer recorded (`tray`, `table::finance`). With no
//!   finance error injected, each shift's counted closing is its opening plus fills, minus
//!   credits, plus the tray's win, minus buy-ins and markers; each drop box's count equals
//!   what went in. Every injected finance error is listed as the variance a report must
//!   show (`expected`).
//! - Bets lie within the table's limits; every card comes from one shuffled 52-card deck
//!   unless a duplicate card was injected on purpose.
//!
//! It must never compute a settlement itself, read the system clock in the pure layer, or
//! leave more than `PublishOptions::in_flight_max` publish acks unawaited per table.
#![warn(missing_docs)]

pub mod expected;
pub mod faults;
pub mod floor;
pub mod keys;
pub mod outbox;
pub mod players;
pub mod publish;
pub mod shift;
pub mod table;
pub mod tray;

pub use expected::{FaultKind, FinanceFaultKind, FinanceLink, FinanceVariance, VarianceKind};
pub use faults::{FaultPlan, InjectedFault};
pub use floor::{default_config, table_seed, Floor, MLP3_LINKED_POOL};
pub use keys::{admin_key, DeviceKey, CONTROLLER};
pub use players::{Decider, DecisionView, ErrorProneDealer, HoldSkew};
pub use publish::{
    publish_floor, wait_for_stream, DeviceAccess, DurableWait, PublishOptions, PublishReport,
    PublishedRecord,
};
pub use shift::{ShiftClock, ShiftSpan};
pub use table::{stud_plays, tcp3_plays, FinanceRecord, PlayedRound, Published, TableSim};
pub use tray::Tray;

use schemas::{RoundId, Seq, TableId};
use std::time::Duration;

/// Why the simulator could not play or publish.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration is unusable; the text says why.
    #[error("configuration: {0}")]
    Config(String),
    /// A table could not take the step asked of it.
    #[error("table {table}: {message}")]
    State {
        /// The table.
        table: TableId,
        /// What the table could not do.
        message: String,
    },
    /// The rules engine could not settle a round the simulator played.
    #[error("table {table}, round {}: the rules engine could not settle the round: {source}", round.0)]
    Settle {
        /// The table.
        table: TableId,
        /// The round.
        round: RoundId,
        /// The rules engine's error.
        #[source]
        source: rules::SettleError,
    },
    /// A NATS call failed.
    #[error("NATS, {context}: {message}")]
    Nats {
        /// What the simulator was doing.
        context: String,
        /// The NATS client's error.
        message: String,
    },
    #[error(
        "stream {stream} still missing after {waited:?} ({attempts} attempts; last error: \
         {last_error}); it is created by the ingest service (`roundledger serve`)"
    )]
    /// The JetStream stream did not appear in time; ingest creates it.
    StreamMissing {
        /// The stream's name.
        stream: &'static str,
        /// How long the simulator waited.
        waited: Duration,
        /// Lookups of the stream made.
        attempts: u32,
        /// The last lookup's error.
        last_error: String,
    },
    /// Publishing one event failed.
    #[error("table {table}, seq {}: publish failed: {message}", seq.0)]
    Publish {
        /// The table.
        table: TableId,
        /// The event's seq in its table's chain.
        seq: Seq,
        /// The NATS client's error.
        message: String,
    },
    /// The bus refused the device's credential while it ran (revoked, or never valid).
    #[error(
        "table {table}: the bus refused this device's credential ({detail}): it was revoked \
         or is not authorized; the device stops instead of reconnecting for ever"
    )]
    CredentialRefused {
        /// The table whose device was refused.
        table: TableId,
        /// The bus's words.
        detail: String,
    },
    /// A publishing task failed or its channel closed; the text says which.
    #[error("a publishing task failed: {0}")]
    Task(String),
    /// A table's outbox is full of events not yet durable.
    #[error(transparent)]
    OutboxFull(#[from] outbox::OutboxFull),
    /// The ledger holds another event at one of this device's seqs: the chain forked.
    #[error(transparent)]
    HeadDisagrees(#[from] outbox::HeadDisagrees),
    /// The ledger did not confirm a table's last event durable in time.
    #[error("table {table}: the ledger confirmed seq {} durable, not {}, {waited:?} after the last event (outbox republished meanwhile)", durable.0, last.0)]
    NotDurable {
        /// The table.
        table: TableId,
        /// The highest seq the ledger confirmed durable.
        durable: Seq,
        /// The seq of the table's last event.
        last: Seq,
        /// How long the simulator waited after the last event.
        waited: Duration,
    },
}
