//! The evidence bundle: one round exported as a single self-verifying JSON file, for a
//! manager, a regulator or a court. Format and verification steps: schemas/BUNDLE.md.
//!
//! This module checks everything that needs no rules engine: the hash chain from the
//! bundle's anchor through the table configuration in force and the round's events up to
//! the table's chain head, every stored hash, seq and prev link, and that the round's events
//! are all listed. Re-running the replayer and comparing its report is the second half
//! (`api::evidence::verify_bundle`, called by `roundledger verify-bundle`), since this
//! crate cannot depend on the replayer.
//!
//! Invariants: no I/O; never panics on any input; every error names what failed (the seq,
//! the field).

use crate::api::CaseView;
use crate::chain::event_hash;
use crate::codec;
use crate::event::{Event, EventBody};
use crate::ids::{Hash32, RoundId, Seq, TableId};
use crate::report::RoundReport;
use serde::{Deserialize, Serialize};

/// The `format` field.
pub const BUNDLE_FORMAT: &str = "roundledger-evidence";
/// The version this crate writes and reads.
pub const BUNDLE_VERSION: u32 = 1;
/// Most events in a bundle's chain segment. Without signed checkpoints the segment runs
/// from the configuration in force to the table's head; beyond this, export refuses.
pub const BUNDLE_CHAIN_EVENTS_MAX: u64 = 2_000_000;

/// One event of the chain segment, bytes exactly as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleEvent {
    pub seq: u64,
    /// The stored hash; the verifier recomputes it.
    pub hash: Hash32,
    /// JetStream stream sequence (the House's arrival order); not covered by the chain.
    pub stream_seq: u64,
    /// When ingest received it; not covered by the chain.
    pub received_at_ns: i64,
    /// The exact bytes as received and stored, lowercase hex.
    pub bytes: String,
}

/// A contiguous range of the table's chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainSegment {
    /// The hash of the event at `from_seq - 1` (genesis, 64 zeros, when `from_seq` is 1).
    pub anchor: Hash32,
    pub from_seq: u64,
    pub to_seq: u64,
    pub events: Vec<BundleEvent>,
}

/// The table's chain head when the bundle was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleHead {
    pub seq: u64,
    pub hash: Hash32,
}

/// The evidence bundle, version 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvidenceBundle {
    pub format: String,
    pub version: u32,
    pub table: TableId,
    pub round: RoundId,
    pub exported_at_ns: i64,
    pub exported_by: String,
    /// The table's chain head at export: the end of `chain`.
    pub head: BundleHead,
    /// Seq of the `TableOpened` event in force for the round (inside `chain`).
    pub config_seq: u64,
    /// The replay window: the verifier replays the config event, then the events
    /// `replay_from..=replay_to`, and takes the report of `round`.
    pub replay_from: u64,
    pub replay_to: u64,
    /// Seqs of the round's own events (those whose `round` is this round).
    pub round_seqs: Vec<u64>,
    /// From the config event to the head, every event verbatim.
    pub chain: ChainSegment,
    /// The replayer's report at export.
    pub report: RoundReport,
    /// Case notes on the round at export (the House's annotations; not covered by the
    /// chain, see BUNDLE.md).
    pub cases: Vec<CaseView>,
    /// Reserved for a device-signed checkpoint at or after the round: when present, the
    /// chain segment may end there instead of at the head. Always `null` in version 1.
    #[serde(default)]
    pub checkpoint: Option<serde_json::Value>,
}

/// Why a bundle does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    #[error(
        "format {found:?} version {version}: expected {BUNDLE_FORMAT:?} version {BUNDLE_VERSION}"
    )]
    Format { found: String, version: u32 },
    #[error("chain segment: {0}")]
    Segment(String),
    #[error("chain event seq {seq}: bytes are not hex: {detail}")]
    NotHex { seq: u64, detail: String },
    #[error("chain event seq {seq}: bytes do not decode: {detail}")]
    Undecodable { seq: u64, detail: String },
    #[error("chain event seq {seq}: decoded event is table {table} seq {found}")]
    WrongEvent {
        seq: u64,
        table: TableId,
        found: u64,
    },
    #[error("chain event seq {seq}: prev {found} does not match the previous hash {expected}")]
    PrevMismatch {
        seq: u64,
        expected: Hash32,
        found: Hash32,
    },
    #[error("chain event seq {seq}: stored hash {stored} differs from the recomputed {computed}")]
    HashMismatch {
        seq: u64,
        stored: Hash32,
        computed: Hash32,
    },
    #[error("head: the chain ends at seq {seq} hash {computed}, the bundle says seq {head_seq} hash {head_hash}")]
    HeadMismatch {
        seq: u64,
        computed: Hash32,
        head_seq: u64,
        head_hash: Hash32,
    },
    #[error("config_seq {0}: not a TableOpened event of the segment")]
    Config(u64),
    #[error("round_seqs: {0}")]
    RoundSeqs(String),
    #[error("checkpoint: version 1 bundles carry none")]
    Checkpoint,
}

/// The bundle's chain, verified and decoded: `(seq, event)` in seq order.
#[derive(Debug, Clone)]
pub struct VerifiedChain {
    pub events: Vec<(Seq, Event)>,
}

impl VerifiedChain {
    /// The events the replay of the bundle reads: the config event, then the window.
    pub fn replay_input(&self, b: &EvidenceBundle) -> Vec<(Seq, Event)> {
        let mut out = Vec::new();
        if b.config_seq < b.replay_from {
            if let Some(e) = self.events.iter().find(|(s, _)| s.0 == b.config_seq) {
                out.push(e.clone());
            }
        }
        out.extend(
            self.events
                .iter()
                .filter(|(s, _)| (b.replay_from..=b.replay_to).contains(&s.0))
                .cloned(),
        );
        out
    }
}

/// Checks the chain half of a bundle (see the module doc and BUNDLE.md §3).
pub fn verify_chain(b: &EvidenceBundle) -> Result<VerifiedChain, BundleError> {
    if b.format != BUNDLE_FORMAT || b.version != BUNDLE_VERSION {
        return Err(BundleError::Format {
            found: b.format.clone(),
            version: b.version,
        });
    }
    if b.checkpoint.as_ref().is_some_and(|c| !c.is_null()) {
        return Err(BundleError::Checkpoint);
    }
    let c = &b.chain;
    if c.from_seq == 0 || c.to_seq < c.from_seq {
        return Err(BundleError::Segment(format!(
            "range {}..={} is empty",
            c.from_seq, c.to_seq
        )));
    }
    if c.events.len() as u64 != c.to_seq - c.from_seq + 1 {
        return Err(BundleError::Segment(format!(
            "range {}..={} but {} events",
            c.from_seq,
            c.to_seq,
            c.events.len()
        )));
    }
    if c.from_seq == 1 && c.anchor != crate::GENESIS {
        return Err(BundleError::Segment(
            "a segment from seq 1 must be anchored at genesis".into(),
        ));
    }
    let mut prev = c.anchor;
    let mut out = Vec::with_capacity(c.events.len());
    for (i, e) in c.events.iter().enumerate() {
        let seq = c.from_seq + i as u64;
        if e.seq != seq {
            return Err(BundleError::Segment(format!(
                "event {i} has seq {}, expected {seq}",
                e.seq
            )));
        }
        let bytes = hex::decode(&e.bytes).map_err(|x| BundleError::NotHex {
            seq,
            detail: x.to_string(),
        })?;
        let (event, _) = codec::decode(&bytes).map_err(|x| BundleError::Undecodable {
            seq,
            detail: x.to_string(),
        })?;
        if event.table != b.table || event.seq.0 != seq {
            return Err(BundleError::WrongEvent {
                seq,
                table: event.table.clone(),
                found: event.seq.0,
            });
        }
        if event.prev != prev {
            return Err(BundleError::PrevMismatch {
                seq,
                expected: prev,
                found: event.prev,
            });
        }
        let computed = event_hash(&prev, &bytes);
        if computed != e.hash {
            return Err(BundleError::HashMismatch {
                seq,
                stored: e.hash,
                computed,
            });
        }
        prev = computed;
        out.push((Seq(seq), event));
    }
    if c.to_seq != b.head.seq || prev != b.head.hash {
        return Err(BundleError::HeadMismatch {
            seq: c.to_seq,
            computed: prev,
            head_seq: b.head.seq,
            head_hash: b.head.hash,
        });
    }
    let config_ok = out
        .iter()
        .any(|(s, e)| s.0 == b.config_seq && matches!(e.body, EventBody::TableOpened { .. }));
    if !config_ok || b.config_seq > b.replay_from {
        return Err(BundleError::Config(b.config_seq));
    }
    if b.replay_from > b.replay_to || b.replay_to > c.to_seq || b.replay_from < c.from_seq {
        return Err(BundleError::Segment(format!(
            "replay window {}..={} outside the segment",
            b.replay_from, b.replay_to
        )));
    }
    // Exactly the round's events of the window, in order.
    let in_round: Vec<u64> = out
        .iter()
        .filter(|(s, e)| (b.replay_from..=b.replay_to).contains(&s.0) && e.round == Some(b.round))
        .map(|(s, _)| s.0)
        .collect();
    if in_round != b.round_seqs {
        return Err(BundleError::RoundSeqs(format!(
            "the window holds round {} at seqs {:?}, the bundle lists {:?}",
            b.round.0, in_round, b.round_seqs
        )));
    }
    if in_round.is_empty() {
        return Err(BundleError::RoundSeqs(format!(
            "no event of round {} in the window",
            b.round.0
        )));
    }
    Ok(VerifiedChain { events: out })
}
