//! The ledger's limits: batch, record, gap, held and clock-skew bounds.

/// Most messages (events and checkpoints) in one `append` call.
pub const APPEND_BATCH_LEN_MAX: usize = 8192;
/// Most events in one stored record; a call with more events for a table writes several.
pub const RECORD_EVENTS_MAX: usize = 1024;
/// An event whose device time is further than this from its receive time (its stream
/// timestamp) is quarantined (`clock_skew`): 24 hours. The default of
/// `Writer::set_clock_skew_max_ns`.
pub const CLOCK_SKEW_MAX_NS: i64 = 24 * 3600 * 1_000_000_000;
/// An event more than this many seqs beyond its table's head is quarantined
/// (`seq_too_far_ahead`) rather than held: no device outbox is that deep.
pub const GAP_LEN_MAX: u64 = 100_000;
/// Most held events per table; beyond it, quarantined (`pending_full`).
pub const PENDING_PER_TABLE_MAX: usize = 10_000;
/// Most bytes of held events across all tables (they are also kept in memory).
pub const PENDING_BYTES_MAX: usize = 64 * 1024 * 1024;
