//! What devices and every other roundledger crate share: the event catalogue, its two wire
//! forms, the hash chain, and the settlement and report types.
//!
//! Invariants:
//! - An event's hash is computed over the exact bytes received, never a re-serialisation
//!   (`chain`); the spec and test vectors are in schemas/README.md and `tests/vectors`.
//! - Money is integer minor units (`Money`), time is UTC nanoseconds (`*_ns: i64`).
//! - Decoding never panics, whatever the bytes (`codec::decode`).
//! - The bincode form only ever grows by appending variants (schemas/README.md §4).
//!
//! This crate does no I/O.

#![warn(missing_docs)]

pub mod admin;
pub mod api;
pub mod attest;
pub mod card;
pub mod chain;
pub mod codec;
pub mod config;
pub mod count;
pub mod event;
pub mod finance;
pub mod findings;
pub mod ids;
mod keys;
pub mod limits;
pub mod metrics;
pub mod parallel;
pub mod provenance;
pub mod records;
pub mod report;
pub mod resync;
pub mod seal;
pub mod settle;
pub mod subjects;

pub use card::{Card, Rank, Suit};
pub use chain::{event_hash, ChainError, ChainHead, GENESIS};
pub use codec::{decode, DecodeError, WireFormat};
pub use config::{
    BetKind, BetLimit, DealingMode, HandClass, JackpotConfig, PayLine, PayRow, PayTable,
    PayTableName, Pays, RuleSet, TableConfig,
};
pub use event::{
    Announcement, CardTarget, ChipCount, Choice, Event, EventBody, Finance, PlayerOption, Ruling,
    Stake, EVENT_KINDS, WIRE_VERSION,
};
pub use ids::{BoxNo, DeviceId, Hash32, Money, PoolId, RoundId, Seq, StaffId, TableId};
