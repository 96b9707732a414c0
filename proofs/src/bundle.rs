//! The evidence bundle: one round exported as a single self-verifying JSON file, for a
//! manager, a regulator or a court. Format and verification steps: schemas/BUNDLE.md.
//!
//! This module checks everything that needs no rules engine: the hash chain from the
//! bundle's anchor through the table configuration in force and the round's events up to
//! the device-signed checkpoint that covers the round (or, when none does yet, the table's
//! chain head at export), every stored hash, seq and prev link, that the round's events are
//! all listed, the checkpoint's ed25519 signature, and that its key was enrolled in the same
//! chain by an admin key (the bundle's, or one the verifier pins). A version 3 bundle's
//! segment starts at a signed v2 checkpoint, and the config and enrollment before it are
//! cited one event each and checked against the state the checkpoints sign (BUNDLE.md §4).
//! Re-running the replayer
//! and comparing its report is the second half (`readside::evidence::verify`, called by
//! `roundledger verify-bundle`), since this crate cannot depend on the replayer.
//!
//! Invariants: no I/O; never panics on any input; every error names what failed (the seq,
//! the field).

use schemas::api::CaseView;
use schemas::attest::{Checkpoint, CheckpointState, KeyAction, KeyEvent, PublicKey};
use schemas::chain::event_hash;
use schemas::codec;
use schemas::event::{Event, EventBody};
use schemas::ids::{DeviceId, Hash32, RoundId, Seq, TableId};
use schemas::report::RoundReport;
use serde::{Deserialize, Serialize};

/// The `format` field.
pub const BUNDLE_FORMAT: &str = "roundledger-evidence";
/// The version this crate writes when it can (3: the chain starts at a signed v2
/// checkpoint before the round and cites the config and the key's enrollment by the state
/// checkpoints sign).
pub const BUNDLE_VERSION: u32 = 3;
/// The full form (2: the chain runs from the config or the key's enrollment): still read,
/// and written when the short form cannot be (no v2 checkpoint before the round).
pub const BUNDLE_VERSION_FULL: u32 = 2;
/// Most events in a bundle's chain segment (from the configuration in force to the
/// checkpoint covering the round, or to the head when none does yet); beyond, export
/// refuses.
pub const BUNDLE_CHAIN_EVENTS_MAX: u64 = 2_000_000;

/// One event of the chain segment, bytes exactly as stored.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleEvent {
    /// The event's seq in the table's chain.
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainSegment {
    /// The hash of the event at `from_seq - 1` (genesis, 64 zeros, when `from_seq` is 1).
    pub anchor: Hash32,
    /// First seq of the range, from 1.
    pub from_seq: u64,
    /// Last seq of the range, inclusive.
    pub to_seq: u64,
    /// Every event of `from_seq..=to_seq`, in seq order.
    pub events: Vec<BundleEvent>,
}

/// The end of the bundle's chain segment: the signed checkpoint's head (or the end of the
/// replay window when that is later), or the table's chain head at export when no
/// checkpoint covers the round yet.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleHead {
    /// Seq of the segment's last event: `chain.to_seq`.
    pub seq: u64,
    /// That event's hash.
    pub hash: Hash32,
}

/// A kept checkpoint, verbatim.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleCheckpoint {
    /// The checkpoint message exactly as the device published it and the ledger kept it
    /// (bincode or JSON, schemas/README.md), lowercase hex. What the verifier checks.
    pub bytes: String,
    /// The same, decoded, for the reader; the verifier requires it to equal `bytes`.
    pub decoded: Checkpoint,
    /// JetStream stream sequence of the checkpoint message; not signed.
    pub stream_seq: u64,
    /// When ingest received it; not signed.
    pub received_at_ns: i64,
}

/// Version 3: what anchors the chain segment and the events before it that the proof
/// cites (schemas/BUNDLE.md §4).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleOpening {
    /// A kept v2 checkpoint whose head is the segment's first event (`chain.from_seq`), at
    /// or before the replay window's start. Its signed state names the config and the key
    /// enrollment in force there.
    pub checkpoint: BundleCheckpoint,
    /// The config event in force, as a one-event segment, when it lies before the chain
    /// segment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<ChainSegment>,
    /// The enrollment of the signing key, as a one-event segment, when it lies before the
    /// chain segment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enrollment: Option<ChainSegment>,
}

/// Whether a device-signed checkpoint covers the round.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
pub enum BundleAttestation {
    /// The chain segment reaches a checkpoint signed by an enrolled device key.
    Attested {
        /// The first checkpoint the ledger kept whose head covers the replay window, else
        /// the first whose head covers the round's last event.
        checkpoint: Box<BundleCheckpoint>,
        /// The device's ed25519 public key, which the checkpoint's signature verifies with.
        device_key: PublicKey,
        /// Seq of the `device_enrolled` event (inside `chain`) that enrolled `device_key`
        /// for the checkpoint's device on this table.
        enrollment_seq: u64,
        /// The admin key whose signature in that event enrolls the device key. Check it
        /// against the House's published admin key (`verify-bundle --admin-key`).
        admin_key: PublicKey,
    },
    /// No checkpoint the ledger kept covered the round's last event at export: the segment
    /// runs to the table's chain head at export, which nothing signed.
    NotYetAttested {
        /// The table's highest kept checkpoint at export (below the round), if any.
        latest_checkpoint_seq: Option<u64>,
    },
}

/// The evidence bundle, version 3 (or 2, the full form).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvidenceBundle {
    /// Always `BUNDLE_FORMAT`.
    pub format: String,
    /// `BUNDLE_VERSION` (3) or `BUNDLE_VERSION_FULL` (2); BUNDLE.md §5.
    pub version: u32,
    /// The table the round was played at.
    pub table: TableId,
    /// The round the bundle proves.
    pub round: RoundId,
    /// When the bundle was exported, in nanoseconds since the Unix epoch; outside the proof.
    pub exported_at_ns: i64,
    /// Who exported it (the API user); outside the proof.
    pub exported_by: String,
    /// The end of `chain` (see `BundleHead`).
    pub head: BundleHead,
    /// Seq of the `TableOpened` event in force for the round (inside `chain`).
    pub config_seq: u64,
    /// The replay window: the verifier replays the config event, then the events
    /// `replay_from..=replay_to`, and takes the report of `round`.
    pub replay_from: u64,
    /// Last seq of the replay window, inclusive.
    pub replay_to: u64,
    /// Seqs of the round's own events (those whose `round` is this round).
    pub round_seqs: Vec<u64>,
    /// Version 2: from the config event (or the device's enrollment, when earlier) to the
    /// checkpoint (or the head), every event verbatim. Version 3: from the opening
    /// checkpoint's head to the checkpoint (or the head).
    pub chain: ChainSegment,
    /// Version 3 only: the signed checkpoint the segment starts at, and the events before
    /// it that the proof cites.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opening: Option<BundleOpening>,
    /// The signed checkpoint at the end of the chain, or "not yet attested".
    pub attestation: BundleAttestation,
    /// The replayer's report at export.
    pub report: RoundReport,
    /// Case notes on the round at export (the House's annotations; not covered by the
    /// chain, see BUNDLE.md).
    pub cases: Vec<CaseView>,
}

/// Why a bundle does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BundleError {
    /// The `format` or `version` is not one this crate reads.
    #[error(
        "format {found:?} version {version}: expected {BUNDLE_FORMAT:?} version {BUNDLE_VERSION_FULL} or {BUNDLE_VERSION}"
    )]
    Format {
        /// The `format` field read.
        found: String,
        /// The `version` field read.
        version: u32,
    },
    /// A version 3 opening does not anchor the segment or cite its events (BUNDLE.md §4).
    #[error("opening checkpoint: {0}")]
    Opening(String),
    /// The segment's range is empty, truncated, padded or out of order.
    #[error("chain segment: {0}")]
    Segment(String),
    /// An event's `bytes` are not lowercase hex.
    #[error("chain event seq {seq}: bytes are not hex: {detail}")]
    NotHex {
        /// The event's seq.
        seq: u64,
        /// The hex decoder's message.
        detail: String,
    },
    /// An event's bytes do not decode as an event.
    #[error("chain event seq {seq}: bytes do not decode: {detail}")]
    Undecodable {
        /// The event's seq.
        seq: u64,
        /// The codec's message.
        detail: String,
    },
    /// An event decodes to another table or seq than its place in the segment.
    #[error("chain event seq {seq}: decoded event is table {table} seq {found}")]
    WrongEvent {
        /// The seq of its place in the segment.
        seq: u64,
        /// The table the decoded event names.
        table: TableId,
        /// The seq the decoded event names.
        found: u64,
    },
    /// An event's `prev` is not the previous event's hash.
    #[error("chain event seq {seq}: prev {found} does not match the previous hash {expected}")]
    PrevMismatch {
        /// The event's seq.
        seq: u64,
        /// The previous event's recomputed hash (or the anchor).
        expected: Hash32,
        /// The `prev` the event carries.
        found: Hash32,
    },
    /// An event's stored hash is not the hash recomputed from its bytes.
    #[error("chain event seq {seq}: stored hash {stored} differs from the recomputed {computed}")]
    HashMismatch {
        /// The event's seq.
        seq: u64,
        /// The hash the bundle stores.
        stored: Hash32,
        /// The hash recomputed with `chain::event_hash`.
        computed: Hash32,
    },
    /// The recomputed chain does not end at the bundle's `head`.
    #[error("head: the chain ends at seq {seq} hash {computed}, the bundle says seq {head_seq} hash {head_hash}")]
    HeadMismatch {
        /// Seq of the segment's last event.
        seq: u64,
        /// Its recomputed hash.
        computed: Hash32,
        /// The seq `head` names.
        head_seq: u64,
        /// The hash `head` names.
        head_hash: Hash32,
    },
    /// `config_seq` does not name the `TableOpened` event in force; the value is `config_seq`.
    #[error("config_seq {0}: not a TableOpened event of the segment")]
    Config(u64),
    /// `round_seqs` is not exactly the round's events of the window, or is empty.
    #[error("round_seqs: {0}")]
    RoundSeqs(String),
    /// The replay window is not the round's whole window as the ledger cuts it.
    #[error("replay window: {0}")]
    Window(String),
    /// The checkpoint does not decode, does not cover the round, or disagrees with the chain.
    #[error("checkpoint: {0}")]
    Checkpoint(String),
    /// The checkpoint signs a seq past the segment's end.
    #[error("checkpoint signs seq {signed}, beyond the end of the chain segment (seq {end}): the proof is truncated")]
    ProofTruncated {
        /// The seq the checkpoint signs.
        signed: u64,
        /// The segment's last seq.
        end: u64,
    },
    /// The checkpoint signs another hash than the recomputed chain has at its seq.
    #[error("checkpoint signs hash {signed} at seq {seq}, the recomputed chain has {computed}")]
    CheckpointHashMismatch {
        /// The seq the checkpoint signs.
        seq: u64,
        /// The hash the checkpoint signs.
        signed: Hash32,
        /// The recomputed hash at that seq.
        computed: Hash32,
    },
    /// The checkpoint's ed25519 signature does not verify with the device key.
    #[error(
        "checkpoint signature does not verify with device {device}'s key {key}: forged or altered"
    )]
    BadSignature {
        /// The device the checkpoint names.
        device: DeviceId,
        /// The key the bundle claims for it.
        key: PublicKey,
    },
    /// The device key has no valid enrollment in the chain for this checkpoint.
    #[error("device key {key} is not enrolled: {detail}")]
    NotEnrolled {
        /// The device key.
        key: PublicKey,
        /// What is wrong with its enrollment.
        detail: String,
    },
    /// The enrolling admin key is not one the verifier pinned.
    #[error("admin key {admin} enrolled the device key, but it is not one of the pinned admin keys ({pinned})")]
    AdminNotPinned {
        /// The admin key that signed the enrollment.
        admin: PublicKey,
        /// The pinned keys, listed for the message.
        pinned: String,
    },
}

/// What the attestation half of the verification established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttestationCheck {
    /// The checkpoint's signature verifies with `device_key`, the recomputed chain holds its
    /// head, and `device_key` was enrolled at `enrollment_seq` by `admin_key` and neither
    /// revoked nor replaced before the checkpoint's head.
    Attested {
        /// The device that signed the checkpoint.
        device: DeviceId,
        /// The device's ed25519 public key.
        device_key: PublicKey,
        /// The seq the checkpoint signs.
        checkpoint_seq: u64,
        /// The hash the checkpoint signs, equal to the recomputed one.
        checkpoint_hash: Hash32,
        /// When the device signed, in nanoseconds since the Unix epoch, as it claims.
        signed_at_ns: i64,
        /// Seq of the `device_enrolled` event that enrolled `device_key`.
        enrollment_seq: u64,
        /// The admin key whose signature enrolls `device_key`.
        admin_key: PublicKey,
        /// Whether `admin_key` is one the verifier pinned; when false it was taken from the
        /// bundle on trust.
        admin_pinned: bool,
        /// Events of the segment after the checkpoint (the replay window's tail past the
        /// round): chained to the signed head, but not themselves signed. The pair is
        /// the first and last seq, inclusive.
        unattested: Option<(u64, u64)>,
    },
    /// No checkpoint: the chain is recomputed up to the head at export, which nothing
    /// signed.
    NotYetAttested {
        /// The table's highest kept checkpoint at export, if any.
        latest_checkpoint_seq: Option<u64>,
    },
}

/// The bundle's chain, verified and decoded: `(seq, event)` in seq order.
#[derive(Debug, Clone)]
pub struct VerifiedChain {
    /// The segment's events, recomputed and decoded, in seq order.
    pub events: Vec<(Seq, Event)>,
    /// Version 3: the config event when it lies before the segment, verified against the
    /// opening checkpoint's signed state.
    pub config_before: Option<(Seq, Event)>,
    /// What the attestation check established.
    pub attestation: AttestationCheck,
}

impl VerifiedChain {
    /// The events the replay of the bundle reads: the config event, then the window.
    pub fn replay_input(&self, b: &EvidenceBundle) -> Vec<(Seq, Event)> {
        let mut out = Vec::new();
        if b.config_seq < b.replay_from {
            let config = self
                .events
                .iter()
                .chain(self.config_before.iter())
                .find(|(s, _)| s.0 == b.config_seq);
            if let Some(e) = config {
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

/// An event the proof cites from before the chain segment (version 3): a one-event
/// segment, verified, with its recomputed hash.
#[derive(Debug, Clone)]
struct Cited {
    seq: Seq,
    event: Event,
    hash: Hash32,
}

/// A version 3 bundle's opening: its checkpoint decoded, and the events it cites.
struct Opening {
    checkpoint: Checkpoint,
    state: CheckpointState,
    config: Option<Cited>,
    enrollment: Option<Cited>,
}

/// Checks the chain and attestation half of a bundle (see the module doc and BUNDLE.md
/// §3, §4). `pinned_admin_keys`: the admin keys the verifier trusts; when empty, the
/// bundle's own `admin_key` is taken on trust (and `AttestationCheck::Attested::admin_pinned`
/// says so).
pub fn verify_chain(
    b: &EvidenceBundle,
    pinned_admin_keys: &[PublicKey],
) -> Result<VerifiedChain, BundleError> {
    let opening = match (b.format == BUNDLE_FORMAT, b.version, &b.opening) {
        (true, BUNDLE_VERSION, Some(o)) => Some(decode_opening(b, o)?),
        (true, BUNDLE_VERSION_FULL, None) => None,
        (true, v @ (BUNDLE_VERSION | BUNDLE_VERSION_FULL), o) => {
            return Err(BundleError::Opening(format!(
                "a version {v} bundle {} an opening",
                if o.is_some() { "has" } else { "lacks" }
            )))
        }
        _ => {
            return Err(BundleError::Format {
                found: b.format.clone(),
                version: b.version,
            })
        }
    };
    let (out, end) = verify_segment(&b.table, &b.chain)?;
    let c = &b.chain;
    if c.to_seq != b.head.seq || end != b.head.hash {
        return Err(BundleError::HeadMismatch {
            seq: c.to_seq,
            computed: end,
            head_seq: b.head.seq,
            head_hash: b.head.hash,
        });
    }
    let config_before = check_config(b, opening.as_ref(), &out)?;
    if b.replay_from > b.replay_to || b.replay_to > c.to_seq || b.replay_from < c.from_seq {
        return Err(BundleError::Segment(format!(
            "replay window {}..={} outside the segment",
            b.replay_from, b.replay_to
        )));
    }
    check_round_seqs(b, &out)?;
    check_window_bounds(b, &out)?;
    let last_round_seq = b.round_seqs.last().copied().unwrap_or(0);
    let attestation =
        check_attestation(b, &out, opening.as_ref(), last_round_seq, pinned_admin_keys)?;
    if let Some(o) = &opening {
        check_opening(b, &out, o, &attestation, pinned_admin_keys)?;
    }
    Ok(VerifiedChain {
        events: out,
        config_before,
        attestation,
    })
}

/// A segment's events recomputed from the anchor: each decoded, of this table, at its seq,
/// chained to the one before, with its stored hash. Returns them and the last hash.
fn verify_segment(
    table: &TableId,
    c: &ChainSegment,
) -> Result<(Vec<(Seq, Event)>, Hash32), BundleError> {
    if c.from_seq == 0 || c.to_seq < c.from_seq {
        return Err(BundleError::Segment(format!(
            "range {}..={} is empty",
            c.from_seq, c.to_seq
        )));
    }
    if c.events.len() as u64 != c.to_seq - c.from_seq + 1 {
        return Err(BundleError::Segment(format!(
            "range {}..={} but {} events: the segment is truncated or padded",
            c.from_seq,
            c.to_seq,
            c.events.len()
        )));
    }
    if c.from_seq == 1 && c.anchor != schemas::GENESIS {
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
        if event.table != *table || event.seq.0 != seq {
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
    Ok((out, prev))
}

/// A one-event segment (version 3's cited events), verified like any segment.
fn one_event(table: &TableId, c: &ChainSegment, what: &str) -> Result<Cited, BundleError> {
    if c.from_seq != c.to_seq {
        return Err(BundleError::Opening(format!(
            "the {what} must be a one-event segment, not {}..={}",
            c.from_seq, c.to_seq
        )));
    }
    let (mut events, hash) = verify_segment(table, c)?;
    let (seq, event) = events
        .pop()
        .expect("a verified one-event segment holds one");
    Ok(Cited { seq, event, hash })
}

/// The opening checkpoint decoded from its exact bytes (a v2 one, of this table), and its
/// cited events verified.
fn decode_opening(b: &EvidenceBundle, o: &BundleOpening) -> Result<Opening, BundleError> {
    let checkpoint = decode_checkpoint(&o.checkpoint).map_err(BundleError::Opening)?;
    if checkpoint.table != b.table {
        return Err(BundleError::Opening(format!(
            "signed for table {}, the bundle is of table {}",
            checkpoint.table, b.table
        )));
    }
    let state = checkpoint.state.ok_or_else(|| {
        BundleError::Opening("a version 1 checkpoint: it signs no chain state".into())
    })?;
    let config = o
        .config
        .as_ref()
        .map(|c| one_event(&b.table, c, "config event"))
        .transpose()?;
    let enrollment = o
        .enrollment
        .as_ref()
        .map(|c| one_event(&b.table, c, "key enrollment"))
        .transpose()?;
    Ok(Opening {
        checkpoint,
        state,
        config,
        enrollment,
    })
}

/// A bundled checkpoint's exact bytes decoded; the reader's copy must equal them.
fn decode_checkpoint(k: &BundleCheckpoint) -> Result<Checkpoint, String> {
    let bytes = hex::decode(&k.bytes).map_err(|e| format!("bytes are not hex: {e}"))?;
    let cp = Checkpoint::decode(&bytes).map_err(|e| format!("bytes do not decode: {e}"))?;
    if cp != k.decoded {
        return Err("the decoded copy differs from the checkpoint's bytes".into());
    }
    Ok(cp)
}

fn is_opened(e: &Event) -> bool {
    matches!(e.body, EventBody::TableOpened { .. })
}

/// The configuration in force is the last `TableOpened` before the round's first event (it
/// may lie inside the window: a table opened again after the previous round). Version 3
/// may cite it from before the segment: then the opening checkpoint's signed state names
/// it, and the segment holds no `TableOpened` before the round.
fn check_config(
    b: &EvidenceBundle,
    opening: Option<&Opening>,
    events: &[(Seq, Event)],
) -> Result<Option<(Seq, Event)>, BundleError> {
    let first_round = b.round_seqs.first().copied().unwrap_or(b.replay_to);
    let reopened = events
        .iter()
        .any(|(s, e)| s.0 > b.config_seq && s.0 < first_round && is_opened(e));
    if b.config_seq >= first_round || reopened {
        return Err(BundleError::Config(b.config_seq));
    }
    if b.config_seq >= b.chain.from_seq {
        let ok = events
            .iter()
            .any(|(s, e)| s.0 == b.config_seq && is_opened(e));
        return if ok {
            Ok(None)
        } else {
            Err(BundleError::Config(b.config_seq))
        };
    }
    let Some(o) = opening else {
        return Err(BundleError::Config(b.config_seq));
    };
    let Some(cited) = &o.config else {
        return Err(BundleError::Opening(format!(
            "config_seq {} is before the segment, but the config event is not cited",
            b.config_seq
        )));
    };
    let signed = (o.state.config_seq, o.state.config_hash);
    if cited.seq.0 != b.config_seq || !is_opened(&cited.event) || signed != (cited.seq, cited.hash)
    {
        return Err(BundleError::Opening(format!(
            "the cited config event is seq {} hash {} ({}); the opening checkpoint signs seq {} hash {}, the bundle says config_seq {}",
            cited.seq.0,
            cited.hash,
            cited.event.body.type_name(),
            signed.0 .0,
            signed.1,
            b.config_seq
        )));
    }
    Ok(Some((cited.seq, cited.event.clone())))
}

/// Exactly the round's events of the window, in order, and at least one.
fn check_round_seqs(b: &EvidenceBundle, events: &[(Seq, Event)]) -> Result<(), BundleError> {
    let in_round: Vec<u64> = events
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
    Ok(())
}

/// Step 6 of BUNDLE.md §3, its second half: the window is the round's whole window, as the
/// ledger cuts it, so that a narrower one (the payouts or the deck reveal left out, and a
/// report replayed to match) does not verify. `events` is the verified segment.
fn check_window_bounds(b: &EvidenceBundle, events: &[(Seq, Event)]) -> Result<(), BundleError> {
    let c = &b.chain;
    let at = |seq: u64| -> Option<&Event> {
        seq.checked_sub(c.from_seq)
            .and_then(|i| events.get(i as usize))
            .map(|(_, e)| e)
    };
    let bad = |why: String| Err(BundleError::Window(why));
    for (s, e) in events {
        let inside = (b.replay_from..=b.replay_to).contains(&s.0);
        match e.round {
            Some(r) if r == b.round && !inside => {
                return bad(format!(
                    "seq {} is an event of round {} outside the replay window {}..={}",
                    s.0, b.round.0, b.replay_from, b.replay_to
                ))
            }
            Some(r) if r != b.round && inside => {
                return bad(format!(
                    "seq {} in the replay window {}..={} is an event of round {}",
                    s.0, b.replay_from, b.replay_to, r.0
                ))
            }
            _ => {}
        }
    }
    // It starts right after the previous round's last event (or at seq 1, or at the
    // configuration that opened the table again).
    if b.replay_from > c.from_seq {
        if at(b.replay_from - 1).and_then(|e| e.round).is_none() {
            return bad(format!(
                "the replay window starts at seq {}, but seq {} is not the previous round's last event",
                b.replay_from,
                b.replay_from - 1
            ));
        }
    } else if b.replay_from != 1 {
        return bad(format!(
            "the replay window starts at seq {}, where the segment starts: the event before it is not in the bundle",
            b.replay_from
        ));
    }
    // It ends right before the next round's first event, or where the segment ends.
    if b.replay_to < c.to_seq && at(b.replay_to + 1).and_then(|e| e.round).is_none() {
        return bad(format!(
            "the replay window ends at seq {}, but seq {} does not start the next round",
            b.replay_to,
            b.replay_to + 1
        ));
    }
    Ok(())
}

/// Step 8 of BUNDLE.md §3: the checkpoint, its signature, and its key's enrollment.
/// `events` is the verified, decoded segment.
fn check_attestation(
    b: &EvidenceBundle,
    events: &[(Seq, Event)],
    opening: Option<&Opening>,
    last_round_seq: u64,
    pinned: &[PublicKey],
) -> Result<AttestationCheck, BundleError> {
    let c = &b.chain;
    let (checkpoint, device_key, enrollment_seq, admin_key) = match &b.attestation {
        BundleAttestation::NotYetAttested {
            latest_checkpoint_seq,
        } => {
            if let Some(s) = latest_checkpoint_seq.filter(|s| *s >= last_round_seq) {
                return Err(BundleError::Checkpoint(format!(
                    "the bundle says not yet attested, yet names a checkpoint at seq {s}, which covers the round's last event (seq {last_round_seq})"
                )));
            }
            return Ok(AttestationCheck::NotYetAttested {
                latest_checkpoint_seq: *latest_checkpoint_seq,
            });
        }
        BundleAttestation::Attested {
            checkpoint,
            device_key,
            enrollment_seq,
            admin_key,
        } => (checkpoint, *device_key, *enrollment_seq, *admin_key),
    };
    let cp = decode_checkpoint(checkpoint).map_err(BundleError::Checkpoint)?;
    let signed = check_covering_head(b, &cp, last_round_seq)?;
    if !cp.verifies_with(&device_key) {
        return Err(BundleError::BadSignature {
            device: cp.device.clone(),
            key: device_key,
        });
    }
    let claim = Enrollment {
        seq: enrollment_seq,
        device: &cp.device,
        key: Some(device_key),
        admin: Some(admin_key),
    };
    let admin = check_enrollment(b, events, opening, &claim, pinned)?;
    check_key_state(b, &cp, opening.is_some(), enrollment_seq, events, opening)?;
    check_not_retired(
        b,
        events,
        &cp.device,
        &device_key,
        enrollment_seq,
        signed,
        admin,
        pinned,
    )?;
    Ok(AttestationCheck::Attested {
        device: cp.device.clone(),
        device_key,
        checkpoint_seq: signed,
        checkpoint_hash: cp.head_hash,
        signed_at_ns: cp.signed_at_ns,
        enrollment_seq,
        admin_key: admin,
        admin_pinned: !pinned.is_empty(),
        unattested: (c.to_seq > signed).then_some((signed + 1, c.to_seq)),
    })
}

/// The covering checkpoint is of this table, its head lies in the segment at or after the
/// round's last event, and the recomputed chain holds its hash there. Returns its seq.
fn check_covering_head(
    b: &EvidenceBundle,
    cp: &Checkpoint,
    last_round_seq: u64,
) -> Result<u64, BundleError> {
    let c = &b.chain;
    if cp.table != b.table {
        return Err(BundleError::Checkpoint(format!(
            "signed for table {}, the bundle is of table {}",
            cp.table, b.table
        )));
    }
    let signed = cp.head_seq.0;
    if signed > c.to_seq {
        return Err(BundleError::ProofTruncated {
            signed,
            end: c.to_seq,
        });
    }
    if signed < c.from_seq {
        return Err(BundleError::Checkpoint(format!(
            "signs seq {signed}, before the chain segment starts (seq {})",
            c.from_seq
        )));
    }
    if signed < last_round_seq {
        return Err(BundleError::Checkpoint(format!(
            "signs seq {signed}, before the round's last event (seq {last_round_seq}): it does not cover the round"
        )));
    }
    // The segment verified, so the stored hash at `signed` is the recomputed one.
    let computed = c.events[(signed - c.from_seq) as usize].hash;
    if computed != cp.head_hash {
        return Err(BundleError::CheckpointHashMismatch {
            seq: signed,
            signed: cp.head_hash,
            computed,
        });
    }
    Ok(signed)
}

/// The chain event at `seq` and its hash: from the segment, or cited by the opening.
fn cited_at<'e>(
    b: &EvidenceBundle,
    events: &'e [(Seq, Event)],
    opening: Option<&'e Opening>,
    seq: u64,
) -> Option<(&'e Event, Hash32)> {
    let c = &b.chain;
    if let Some(i) = seq.checked_sub(c.from_seq) {
        let (_, e) = events.get(usize::try_from(i).ok()?)?;
        return Some((e, c.events[i as usize].hash));
    }
    let o = opening?;
    [&o.enrollment, &o.config]
        .into_iter()
        .flatten()
        .find(|x| x.seq.0 == seq)
        .map(|x| (&x.event, x.hash))
}

/// What a bundle claims of a key's enrollment: at `seq`, for `device`, of `key` by `admin`
/// (`None`: taken from the event).
struct Enrollment<'a> {
    seq: u64,
    device: &'a DeviceId,
    key: Option<PublicKey>,
    admin: Option<PublicKey>,
}

/// The enrollment event at `claim.seq` enrolls the claimed key for the device, under a
/// verifying admin signature by a pinned admin key (or the claimed one, taken on trust).
/// Returns the enrolled key and its admin key.
fn check_enrollment(
    b: &EvidenceBundle,
    events: &[(Seq, Event)],
    opening: Option<&Opening>,
    claim: &Enrollment,
    pinned: &[PublicKey],
) -> Result<PublicKey, BundleError> {
    let seq = claim.seq;
    let claimed_key = claim.key.unwrap_or(PublicKey([0; 32]));
    let not_enrolled = |detail: String| BundleError::NotEnrolled {
        key: claimed_key,
        detail,
    };
    let (event, _) = cited_at(b, events, opening, seq).ok_or_else(|| {
        not_enrolled(format!(
            "enrollment_seq {seq} is outside the chain segment {}..={} and not cited",
            b.chain.from_seq, b.chain.to_seq
        ))
    })?;
    let Some(
        enrolled @ KeyEvent {
            device,
            key,
            admin,
            action: KeyAction::Enroll,
            ..
        },
    ) = KeyEvent::of(&event.body)
    else {
        return Err(not_enrolled(format!(
            "the event at seq {seq} is {}, not a device enrollment",
            event.body.type_name()
        )));
    };
    if device != claim.device || claim.key.is_some_and(|k| k != *key) {
        return Err(not_enrolled(format!(
            "seq {seq} enrolls key {key} for device {device}, the checkpoint is device {}'s",
            claim.device
        )));
    }
    if claim.admin.is_some_and(|a| a != *admin) {
        return Err(not_enrolled(format!(
            "seq {seq} is signed by admin key {admin}, the bundle names {}",
            claim.admin.map(|a| a.to_hex()).unwrap_or_default()
        )));
    }
    if !enrolled.admin_signature_verifies(&b.table) {
        return Err(not_enrolled(format!(
            "the admin signature of the enrollment at seq {seq} does not verify"
        )));
    }
    if !pinned.is_empty() && !pinned.contains(admin) {
        return Err(BundleError::AdminNotPinned {
            admin: *admin,
            pinned: pinned
                .iter()
                .map(|k| k.to_hex())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    Ok(*admin)
}

/// A checkpoint with a signed state names the config in force at its head and the
/// enrollment the bundle cites (required in version 3, where the events between them and
/// the segment are left out).
fn check_key_state(
    b: &EvidenceBundle,
    cp: &Checkpoint,
    required: bool,
    enrollment_seq: u64,
    events: &[(Seq, Event)],
    opening: Option<&Opening>,
) -> Result<(), BundleError> {
    let Some(state) = cp.state else {
        return match required {
            false => Ok(()),
            true => Err(BundleError::Checkpoint(
                "a version 3 bundle ends at a checkpoint that signs the chain's state".into(),
            )),
        };
    };
    // The config in force at the head: the segment's last `TableOpened` up to it, else the
    // cited one (checked against the opening's state by `check_config`).
    let signed = cp.head_seq.0;
    let config_seq = events
        .iter()
        .rev()
        .find(|(s, e)| s.0 <= signed && is_opened(e))
        .map_or(b.config_seq, |(s, _)| s.0);
    let config = cited_at(b, events, opening, config_seq)
        .filter(|(e, _)| is_opened(e))
        .map(|(_, h)| (config_seq, h));
    if config != Some((state.config_seq.0, state.config_hash)) {
        return Err(BundleError::Checkpoint(format!(
            "signs config seq {} hash {} in force at its head, the bundle's chain has {}",
            state.config_seq.0,
            state.config_hash,
            config.map_or("none".to_string(), |(s, h)| format!("seq {s} hash {h}"))
        )));
    }
    let hash = cited_at(b, events, opening, enrollment_seq).map(|(_, h)| h);
    if state.key_seq.0 != enrollment_seq || hash != Some(state.key_hash) {
        return Err(BundleError::NotEnrolled {
            key: PublicKey([0; 32]),
            detail: format!(
                "the checkpoint signs its key's enrollment at seq {} hash {}, the bundle cites seq {enrollment_seq} hash {}",
                state.key_seq.0,
                state.key_hash,
                hash.map_or("none".to_string(), |h| h.to_hex())
            ),
        });
    }
    Ok(())
}

/// Neither revoked nor replaced between the enrollment and the signed head, among the
/// events the bundle holds (by an admin key trusted here: the pinned ones, or the
/// bundle's). Version 3 leaves out those before the segment: the checkpoint's signed
/// state says the enrollment is still in force, and the ledger checked it.
#[allow(clippy::too_many_arguments)]
fn check_not_retired(
    b: &EvidenceBundle,
    events: &[(Seq, Event)],
    device: &DeviceId,
    key: &PublicKey,
    enrollment_seq: u64,
    signed: u64,
    admin: PublicKey,
    pinned: &[PublicKey],
) -> Result<(), BundleError> {
    let trusted: &[PublicKey] = if pinned.is_empty() {
        std::slice::from_ref(&admin)
    } else {
        pinned
    };
    for (s, e) in events
        .iter()
        .filter(|(s, _)| s.0 > enrollment_seq && s.0 <= signed)
    {
        let Some(later) = KeyEvent::of(&e.body) else {
            continue;
        };
        let effective = later.device == device
            && trusted.contains(later.admin)
            && later.admin_signature_verifies(&b.table);
        if !effective || (later.action == KeyAction::Enroll && later.key == key) {
            continue;
        }
        let what = match later.action {
            KeyAction::Revoke => "revoked",
            KeyAction::Enroll => "replaced by another key",
        };
        return Err(BundleError::NotEnrolled {
            key: *key,
            detail: format!(
                "{what} at seq {}, before the checkpoint's head (seq {signed})",
                s.0
            ),
        });
    }
    Ok(())
}

/// Version 3's opening checkpoint: its head is the segment's first event, its signature
/// verifies with the key its signed state's enrollment enrolled (the attested checkpoint's
/// key, under the same enrollment), and that enrollment is admin-signed.
fn check_opening(
    b: &EvidenceBundle,
    events: &[(Seq, Event)],
    o: &Opening,
    attestation: &AttestationCheck,
    pinned: &[PublicKey],
) -> Result<(), BundleError> {
    let c = &b.chain;
    let cp = &o.checkpoint;
    let first = c.events.first().map(|e| e.hash);
    if cp.head_seq.0 != c.from_seq || first != Some(cp.head_hash) {
        return Err(BundleError::Opening(format!(
            "signs seq {} hash {}, the segment starts at seq {} with another hash",
            cp.head_seq.0, cp.head_hash, c.from_seq
        )));
    }
    let claim = Enrollment {
        seq: o.state.key_seq.0,
        device: &cp.device,
        key: None,
        admin: None,
    };
    check_enrollment(b, events, Some(o), &claim, pinned)?;
    let (event, hash) = cited_at(b, events, Some(o), claim.seq).expect("checked above");
    let key = *KeyEvent::of(&event.body).expect("an enrollment").key;
    if hash != o.state.key_hash {
        return Err(BundleError::Opening(format!(
            "signs its key's enrollment hash {}, the cited event at seq {} has {hash}",
            o.state.key_hash, claim.seq
        )));
    }
    if let AttestationCheck::Attested {
        device,
        device_key,
        enrollment_seq,
        ..
    } = attestation
    {
        if *device != cp.device || *device_key != key || *enrollment_seq != claim.seq {
            return Err(BundleError::Opening(format!(
                "signed by device {} under the enrollment at seq {}, the attested checkpoint by device {device} under seq {enrollment_seq}",
                cp.device, claim.seq
            )));
        }
    }
    if !cp.verifies_with(&key) {
        return Err(BundleError::Opening(format!(
            "the signature does not verify with device {}'s key {key}: forged or altered",
            cp.device
        )));
    }
    Ok(())
}
