//! The append path's vocabulary: what a call takes in, what it gives back, and the
//! plain records it keeps. Every feature module uses it; it uses none of them.

use crate::error::Error;
use crate::quarantine::Bound;
use crate::record::{self, W};
use schemas::attest::PublicKey;
use schemas::provenance::EventSignature;
use schemas::{DeviceId, Hash32, Seq, TableId};
use std::collections::BTreeMap;

/// One message as it arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    /// The message body exactly as received.
    pub bytes: Vec<u8>,
    /// The `<table>` token of the subject it arrived on; `None` if the subject did not name
    /// a valid table (then the event is quarantined as `wrong_subject`).
    pub subject_table: Option<TableId>,
    /// JetStream stream sequence: the House's arrival order.
    pub stream_seq: u64,
    /// When the House received it (its stream timestamp), UTC ns.
    pub received_at_ns: i64,
    /// The device signature that came with it (NATS headers), if any.
    pub provenance: Provenance,
}

/// What happened to one message. `append_batch` returns one per input, in input order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Appended {
    /// Appended to its table's chain and written in this call's commit.
    Stored {
        /// The table whose chain it extends.
        table: TableId,
        /// Its seq: the table's new head.
        seq: Seq,
        /// Its hash over the exact bytes received.
        hash: Hash32,
    },
    /// The same (table, seq, hash) is already stored: nothing written.
    Duplicate {
        /// The table of the stored event.
        table: TableId,
        /// The seq of the stored event.
        seq: Seq,
    },
    /// Beyond a gap: kept durably and appended when `missing_from..=missing_to` arrive.
    /// `since_ns` is the receive time of the table's oldest held event.
    Held {
        /// The table whose chain has the gap.
        table: TableId,
        /// The held event's seq.
        seq: Seq,
        /// The first missing seq.
        missing_from: Seq,
        /// The last missing seq.
        missing_to: Seq,
        /// Receive time of the table's oldest held event, UTC ns.
        since_ns: i64,
    },
    /// Refused: quarantined, or counted against an entry or a bound.
    Refused(Refused),
    /// An admin act (`schemas::admin`), taken at its point of the stream.
    Admin {
        /// The act's kind (`schemas::admin::Act::kind`).
        kind: &'static str,
        /// Whether this delivery took it; `false` for one taken before (delivered again).
        first: bool,
    },
}

/// What became of a refused message, event or checkpoint alike. Nothing refused is
/// dropped: it is an entry, counted against one, or counted past a bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Refused and kept verbatim in quarantine as entry `id`.
    Quarantined {
        /// The new quarantine entry's id.
        id: u64,
        /// The stable reason code (`crate::types::reason`, `crate::attest::reason`).
        reason: &'static str,
    },
    /// The same delivery (stream seq and bytes) is already in quarantine under `id` (NATS
    /// delivered it again), or was counted as a repeat of it: nothing written.
    QuarantinedBefore {
        /// The entry that holds it.
        id: u64,
    },
    /// The same bytes refused for the same reason as entry `id`, under a later stream seq
    /// (a device sending a refused message again): counted against `id`, not stored again.
    Repeated {
        /// The entry it is counted against.
        id: u64,
        /// The stable reason code, the same as the entry's.
        reason: &'static str,
    },
    /// Refused past a quarantine bound (`quarantine::Bound`): not stored, counted by its
    /// source and reason (`Reader::quarantine_overflows`). Its bytes stay in the stream.
    Overflowed {
        /// The stable reason code it was refused for.
        reason: &'static str,
        /// Which bound it went past.
        bound: Bound,
    },
}

impl From<Refused> for Appended {
    fn from(r: Refused) -> Appended {
        Appended::Refused(r)
    }
}

impl From<Refused> for CheckpointOutcome {
    fn from(r: Refused) -> CheckpointOutcome {
        CheckpointOutcome::Refused(r)
    }
}

/// What one `Writer::append` call did: one outcome per message, in input order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcomes {
    /// One outcome per event message, in input order.
    pub events: Vec<Appended>,
    /// One outcome per checkpoint message, in input order.
    pub checkpoints: Vec<CheckpointOutcome>,
}

/// Whose signatures a call checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// As the ledger requires (`Writer::require_signed_events`).
    Check,
    /// None: recovery re-appends records admitted before they were written.
    Recovered,
}

/// A held event (in memory and in `Space::Pending`).
#[derive(Debug, Clone)]
pub(crate) struct Held {
    /// `event_hash(event.prev, bytes)`: what its hash will be if its prev is right.
    pub hash: Hash32,
    pub stream_seq: u64,
    pub received_at_ns: i64,
    pub bytes: Vec<u8>,
}

/// Stable quarantine reason codes (stored; never rename).
pub mod reason {
    /// The bytes do not decode as an event.
    pub const UNDECODABLE: &str = "undecodable";
    /// The event names another table than its subject.
    pub const WRONG_SUBJECT: &str = "wrong_subject";
    /// The event's prev is not the hash of the stored event before it.
    pub const PREV_MISMATCH: &str = "prev_mismatch";
    /// A different event at a stored seq with the same prev: two branches of one chain.
    pub const FORK: &str = "fork";
    /// A different event at a stored seq with a different prev too: the device rewound.
    pub const SEQ_BACKWARDS: &str = "seq_backwards";
    /// Device time further than the clock skew limit from the receive time.
    pub const CLOCK_SKEW: &str = "clock_skew";
    /// Seq more than `GAP_LEN_MAX` beyond the table's head.
    pub const SEQ_TOO_FAR_AHEAD: &str = "seq_too_far_ahead";
    /// Beyond `PENDING_PER_TABLE_MAX` held events for the table, or `PENDING_BYTES_MAX` in all.
    pub const PENDING_FULL: &str = "pending_full";
    /// Seq at or below the head but no stored event there: the ledger is damaged (verify).
    pub const MISSING_BELOW_HEAD: &str = "missing_below_head";
    /// Longer than `schemas::codec::EVENT_LEN_MAX`: refused before decoding.
    pub const OVERSIZED: &str = "oversized";
    /// An event kind this build does not know (a bincode variant index beyond the catalogue,
    /// a JSON body `type` not in it): perhaps a newer device. Kept verbatim.
    pub const UNKNOWN_KIND: &str = "unknown_kind";
    /// An event after its table's `TableClosed` (only a `TableOpened` reopens a table).
    pub const TABLE_CLOSED: &str = "table_closed";
    /// No device signature, or signature headers that do not read, on a ledger that
    /// requires signed events (`Writer::require_signed_events`).
    pub const UNSIGNED: &str = "unsigned";
    /// Signed by a device the chain has no current key for (never enrolled, revoked, or
    /// an enrollment header no trusted admin signed).
    pub const SIGNER_UNKNOWN: &str = "signer_unknown";
    /// The signature does not verify under the signer's key: not the table's device.
    pub const SIGNATURE_INVALID: &str = "signature_invalid";
    /// Its table is fenced as damaged (`fence`): kept verbatim until it is unfenced.
    pub const TABLE_FENCED: &str = "table_fenced";
    /// A re-sync (`schemas::resync`) that is not applied: malformed, not signed by a
    /// trusted admin, stale (the head moved), or naming an entry that is not the next event.
    pub const RESYNC_REFUSED: &str = "resync_refused";
    /// An admin act (`schemas::admin`) that is not applied: malformed, not signed by a
    /// trusted admin, or out of range. Kept as evidence; every node refuses it alike.
    pub const ADMIN_REFUSED: &str = "admin_refused";
}

pub(crate) fn encode_held(h: &Held) -> Vec<u8> {
    let mut w = W::default();
    w.raw(&h.hash.0)
        .u64(h.stream_seq)
        .i64(h.received_at_ns)
        .bytes(&h.bytes);
    w.0
}

pub(crate) fn decode_held(v: &[u8]) -> Result<Held, Error> {
    let mut r = record::R::new(v);
    Ok(Held {
        hash: r.hash()?,
        stream_seq: r.u64()?,
        received_at_ns: r.i64()?,
        bytes: r.bytes()?.to_vec(),
    })
}

/// What happened to one checkpoint message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckpointOutcome {
    /// Verified and kept: the chain is attested up to `seq`.
    Kept {
        /// The table whose chain is attested.
        table: TableId,
        /// The attested seq.
        seq: Seq,
    },
    /// The same checkpoint was kept before (a redelivery).
    Duplicate {
        /// The table of the kept checkpoint.
        table: TableId,
        /// The seq it attests.
        seq: Seq,
    },
    /// Refused: quarantined, or counted against an entry or a bound.
    Refused(Refused),
}

/// Events held beyond a gap in their table's chain, until it fills.
pub(crate) struct HeldEvents {
    /// Held events per table, by seq.
    pub(crate) by_table: std::collections::BTreeMap<TableId, std::collections::BTreeMap<u64, Held>>,
    /// Message bytes of every held event (bounded by `PENDING_BYTES_MAX`).
    pub(crate) bytes: usize,
}

/// A device's key on one chain, as the key register holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceKey {
    /// The device's current public key (Ed25519).
    pub key: PublicKey,
    /// The seq of the enrollment event.
    pub enrolled_seq: Seq,
    /// The seq of the revocation event, if revoked.
    pub revoked_seq: Option<Seq>,
    /// The keys the device held on this chain before `key` (revoked or replaced), oldest
    /// first: none of them is ever enrolled for it again. Without this, replaying the
    /// admin's old enrollment event (its signature covers the table, the device, the key and
    /// the action, not the chain position) brought a revoked key back.
    pub retired: Vec<PublicKey>,
}

/// The device signature that came with a message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Provenance {
    /// No signature headers.
    #[default]
    Unsigned,
    /// Signature headers that read.
    Signed(EventSignature),
    /// Signature headers that do not read, with why.
    Malformed(String),
}

/// An admin act whose effect runs after its call's commit.
pub(crate) struct DeferredAct {
    pub(crate) act: schemas::admin::Act,
    pub(crate) line: AdminLogLine,
}

/// One line of the admin log.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AdminLogLine {
    /// The act's stream seq.
    pub stream_seq: u64,
    /// When the stream received it, UTC ns: the act's time on every node.
    pub received_at_ns: i64,
    /// `schemas::admin::Act::kind`.
    pub kind: String,
    /// The table it names, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// The signing admin key, 64 hex.
    pub admin: String,
    /// The admin's note.
    pub note: String,
    /// What it did on this node, in words.
    pub outcome: String,
    /// The act's message as received, hex: its signature can be checked again (`verify`).
    pub wire_hex: String,
}

/// The highest kept checkpoint of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attestation {
    /// The table whose chain the checkpoint attests.
    pub table: TableId,
    /// The chain is attested up to and including this seq.
    pub seq: Seq,
    /// The event hash at `seq` that the device signed.
    pub hash: Hash32,
    /// The device that signed it.
    pub device: DeviceId,
    /// When the House received the checkpoint, UTC ns.
    pub received_at_ns: i64,
}

/// The device key register: (table, device) -> key.
pub(crate) type KeyRegister = BTreeMap<(TableId, DeviceId), DeviceKey>;
/// The highest kept checkpoint per table.
pub(crate) type Attested = BTreeMap<TableId, Attestation>;

/// Who may speak for a table: the ledger's part of "who may speak" (ARCHITECTURE.md).
pub(crate) struct Trust {
    /// Who may enroll device keys (`Writer::trust_admin_keys`, kept in `Space::Meta`).
    pub(crate) admin_keys: std::collections::BTreeSet<schemas::attest::PublicKey>,
    /// Whether only device-signed events are stored (`provenance`).
    pub(crate) require_signed: bool,
    /// The device key register (`attest`).
    pub(crate) devices:
        std::collections::BTreeMap<(TableId, schemas::DeviceId), crate::types::DeviceKey>,
    /// The highest kept checkpoint per table.
    pub(crate) attested: Attested,
}

/// Why a table is fenced.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Fence {
    /// The check it failed (`check`).
    pub check: &'static str,
    /// What the check found, in words.
    pub detail: String,
}

/// What an open found beyond the store's last commit, and what became of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Recovery {
    /// Whole records found.
    pub records: u64,
    /// Events in them.
    pub events: u64,
    /// Held events found (events beyond a gap that a lost commit kept).
    pub held_events: u64,
    /// Of the events and held events, those appended again (the rest were already stored,
    /// held or quarantined).
    pub stored: u64,
    /// Of them, those already stored.
    pub duplicates: u64,
    /// Of them, those held again beyond a gap.
    pub held: u64,
    /// Of them, those quarantined now.
    pub quarantined: u64,
    /// Of the events and checkpoints, those refused again as an entry's repeat: counted
    /// against it (`quarantine::Repeat`).
    pub repeats: u64,
    /// Of the events and checkpoints, those refused past a quarantine bound (counted).
    pub overflowed: u64,
    /// Quarantine entries found, and of them those put back (the rest were already there).
    pub quarantine_entries: u64,
    /// Of the quarantine entries, those written back.
    pub quarantine_restored: u64,
    /// Kept checkpoints found, and of them those kept again (the rest were already kept,
    /// or are quarantined now: `checkpoints_refused`).
    pub checkpoints: u64,
    /// Of the checkpoints, those kept again.
    pub checkpoints_kept: u64,
    /// Of the checkpoints, those quarantined now.
    pub checkpoints_refused: u64,
    /// Day seals found, and of them those put back (the rest were already stored).
    pub seals: u64,
    /// Of the seals, those written back.
    pub seals_restored: u64,
    /// Re-syncs found beyond the last commit, applied again (`resync`).
    pub resyncs: u64,
    /// Bytes that are not a whole record (a write cut short), and where: the first such
    /// place the scan met (each is logged).
    pub torn: Option<String>,
    /// Damaged entries the scan resynchronised past (`valuelog::ValueLog::resync`), at
    /// most `DAMAGED_NAMED_MAX` named: their own records are not recovered.
    pub damaged: Vec<String>,
    /// Damaged entries beyond those named.
    pub damaged_more: u64,
}

/// One table's records of one removed day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemovedRange {
    /// The gaming day, YYYY-MM-DD.
    pub day: String,
    /// The table.
    pub table: TableId,
    /// The day's first seq of the table.
    pub first_seq: u64,
    /// The day's last seq of the table.
    pub last_seq: u64,
    /// The chain hash at `last_seq`, as the day's seal gives it.
    pub head_hash: Hash32,
}
