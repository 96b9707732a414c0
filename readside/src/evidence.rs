//! Evidence bundles (format: schemas/BUNDLE.md, types: `proofs::bundle`): building one
//! from the ledger, and verifying one offline, without the ledger: the chain and
//! attestation half (`proofs::bundle::verify_chain`) and the replay half (re-run the
//! replayer on the decoded events and compare with the bundle's report, field by field).
//!
//! The chain segment ends at the first checkpoint the ledger kept whose head covers the
//! round's replay window, else the first that covers the round's last event (and on to the
//! end of the window); when no checkpoint covers the round yet, at the table's head, and
//! the bundle says "not yet attested". Version 3 starts it at the last kept v2 checkpoint
//! before the window and cites the config and the key's enrollment that checkpoint signs,
//! so its size does not grow with the table's history. When it cannot (no v2 checkpoint
//! before the round, or a key rotated between the two checkpoints), version 2 starts it
//! at the configuration in force (or the signing device's enrollment, when earlier).
//!
//! Invariants: the bundle's bytes are the stored bytes (hex), never re-encoded; building
//! reads at most `BUNDLE_CHAIN_EVENTS_MAX` events; verification never needs sled or the
//! network. Building is blocking (sled).

use crate::rounds::{self, Located};
use crate::ReadError;
use ledger::attest::KeptCheckpoint;
use proofs::bundle::{
    verify_chain, AttestationCheck, BundleAttestation, BundleCheckpoint, BundleError, BundleEvent,
    BundleHead, BundleOpening, ChainSegment, EvidenceBundle, BUNDLE_CHAIN_EVENTS_MAX,
    BUNDLE_FORMAT, BUNDLE_VERSION, BUNDLE_VERSION_FULL,
};
use schemas::api::CaseView;
use schemas::attest::{KeyAction, KeyEvent, PublicKey};
use schemas::{Hash32, TableId, GENESIS};

/// Builds the bundle of `round` of `table`: version 3 when a kept v2 checkpoint precedes
/// the round (and the covering one, if any, signs under the same key enrollment), else
/// version 2, the full form.
pub fn build(
    ledger: &ledger::Ledger,
    table: &TableId,
    round: u64,
    located: Located,
    cases: Vec<CaseView>,
    exported_by: &str,
    exported_at_ns: i64,
) -> Result<EvidenceBundle, ReadError> {
    let last_seq = located.last_seq;
    let loaded = rounds::load(ledger, table, round, located)?;
    let config_seq = loaded
        .config
        .as_ref()
        .map(|(s, _)| s.seq.0)
        .ok_or_else(|| {
            ReadError::Integrity(format!(
                "table {table} round {round}: no configuration event before the round"
            ))
        })?;
    let plan = plan(ledger, table, &loaded, last_seq, config_seq)?;
    let (from_seq, to_seq) = (plan.from_seq, plan.to_seq);
    let chain = read_segment(ledger, table, from_seq, to_seq, plan.kept.is_some())?;
    let attestation = match (plan.kept, plan.enrollment_seq) {
        (Some(k), Some(enrollment_seq)) => attested(ledger, table, k, enrollment_seq)?,
        _ => BundleAttestation::NotYetAttested {
            latest_checkpoint_seq: plan.latest_checkpoint_seq,
        },
    };
    let opening = match plan.opening {
        Some(k) => Some(bundle_opening(ledger, table, k, config_seq, from_seq)?),
        None => None,
    };
    let round_seqs = loaded
        .events
        .iter()
        .filter(|(_, e)| e.round == Some(loaded.round))
        .map(|(s, _)| s.seq.0)
        .collect();
    Ok(EvidenceBundle {
        format: BUNDLE_FORMAT.to_string(),
        version: if opening.is_some() {
            BUNDLE_VERSION
        } else {
            BUNDLE_VERSION_FULL
        },
        table: table.clone(),
        round: loaded.round,
        exported_at_ns,
        exported_by: exported_by.to_string(),
        head: BundleHead {
            seq: to_seq,
            hash: chain.events.last().map_or(chain.anchor, |e| e.hash),
        },
        config_seq,
        replay_from: loaded.window.0,
        replay_to: loaded.window.1,
        round_seqs,
        chain,
        opening,
        attestation,
        report: loaded.report,
        cases,
    })
}

/// Where a bundle's chain segment starts and ends, and the checkpoints it cites.
struct Plan {
    /// The first kept checkpoint covering the round, if any.
    kept: Option<KeptCheckpoint>,
    /// The enrollment of its key.
    enrollment_seq: Option<u64>,
    /// Version 3's opening checkpoint (`None`: the full form).
    opening: Option<KeptCheckpoint>,
    /// The table's highest kept checkpoint, read before `kept` was looked up.
    latest_checkpoint_seq: Option<u64>,
    from_seq: u64,
    to_seq: u64,
}

fn plan(
    ledger: &ledger::Ledger,
    table: &TableId,
    loaded: &rounds::LoadedRound,
    last_seq: u64,
    config_seq: u64,
) -> Result<Plan, ReadError> {
    let head = ledger
        .reader()
        .head(table)
        .ok_or_else(|| ReadError::NotFound(format!("table {table} is not in the ledger")))?;
    // Read before looking for a covering checkpoint: a checkpoint kept in between would
    // otherwise be named as the latest by a bundle saying "not yet attested", which its
    // own verification refuses. Read first, it is older than any the lookup could miss.
    let latest_checkpoint_seq = ledger.reader().attestation(table).map(|a| a.seq.0);
    // Prefer a checkpoint that signs the whole replay window; else the first one that
    // covers the round itself (the window's tail is then chained but not signed).
    let kept = match ledger
        .reader()
        .checkpoint_at_or_after(table, loaded.window.1)?
    {
        Some(k) => Some(k),
        None => ledger.reader().checkpoint_at_or_after(table, last_seq)?,
    };
    let enrollment_seq = match &kept {
        Some(k) => Some(enrollment_of(ledger, table, k)?),
        None => None,
    };
    let opening = opening_for(
        ledger,
        table,
        loaded.window.0,
        config_seq,
        &kept,
        enrollment_seq,
    )?;
    let from_seq = match &opening {
        Some(o) => o.checkpoint.head_seq.0,
        None => enrollment_seq.map_or(config_seq, |e| e.min(config_seq)),
    };
    let to_seq = match (&kept, enrollment_seq) {
        (Some(k), Some(e)) => k.checkpoint.head_seq.0.max(loaded.window.1).max(e),
        _ => head.seq.0,
    };
    Ok(Plan {
        kept,
        enrollment_seq,
        opening,
        latest_checkpoint_seq,
        from_seq,
        to_seq,
    })
}

/// The opening of a version 3 bundle: the last kept checkpoint at or before the event
/// before the window, if it signs the chain's state (v2), names the round's config, and
/// (when a checkpoint covers the round) signs under the same key enrollment as that one.
/// `None`: the bundle takes the full form (version 2).
fn opening_for(
    ledger: &ledger::Ledger,
    table: &TableId,
    window_from: u64,
    config_seq: u64,
    kept: &Option<KeptCheckpoint>,
    enrollment_seq: Option<u64>,
) -> Result<Option<KeptCheckpoint>, ReadError> {
    let Some(before) = window_from.checked_sub(1).filter(|s| *s > 0) else {
        return Ok(None);
    };
    let Some(o) = ledger.reader().checkpoint_at_or_before(table, before)? else {
        return Ok(None);
    };
    let Some(s) = o.checkpoint.state else {
        return Ok(None);
    };
    let config_ok = config_seq >= o.checkpoint.head_seq.0 || s.config_seq.0 == config_seq;
    let key_ok = o.key_enrolled_seq == Some(s.key_seq);
    let same_key = match (kept, enrollment_seq) {
        (Some(k), Some(e)) => {
            k.checkpoint.device == o.checkpoint.device
                && k.checkpoint
                    .state
                    .is_some_and(|ks| ks.key_seq == s.key_seq && ks.key_hash == s.key_hash)
                && e == s.key_seq.0
        }
        _ => true,
    };
    Ok((config_ok && key_ok && same_key).then_some(o))
}

/// The chain `from_seq..=to_seq`, every event verbatim, anchored at the hash before it.
fn read_segment(
    ledger: &ledger::Ledger,
    table: &TableId,
    from_seq: u64,
    to_seq: u64,
    attested: bool,
) -> Result<ChainSegment, ReadError> {
    let count = to_seq - from_seq + 1;
    if count > BUNDLE_CHAIN_EVENTS_MAX {
        return Err(ReadError::TooLarge(format!(
            "the chain from seq {from_seq} to seq {to_seq} ({}) holds {count} events, more than {BUNDLE_CHAIN_EVENTS_MAX}",
            if attested { "the signed checkpoint" } else { "the head: no checkpoint covers the round yet" }
        )));
    }
    let anchor = hash_before(ledger, table, from_seq)?;
    let mut events = Vec::with_capacity(count as usize);
    for e in ledger.reader().events(table, from_seq..=to_seq) {
        let e = e?;
        events.push(BundleEvent {
            seq: e.seq.0,
            hash: e.hash,
            stream_seq: e.stream_seq,
            received_at_ns: e.received_at_ns,
            bytes: hex::encode(&e.bytes),
        });
    }
    if events.len() as u64 != count {
        return Err(ReadError::Integrity(format!(
            "table {table}: {} events stored from seq {from_seq} to {to_seq}, expected {count} (run verify)",
            events.len(),
        )));
    }
    Ok(ChainSegment {
        anchor,
        from_seq,
        to_seq,
        events,
    })
}

/// The chain hash before `seq`: genesis for seq 1.
fn hash_before(ledger: &ledger::Ledger, table: &TableId, seq: u64) -> Result<Hash32, ReadError> {
    if seq == 1 {
        return Ok(GENESIS);
    }
    Ok(ledger
        .reader()
        .stored_event(table, seq - 1)?
        .ok_or_else(|| ReadError::Integrity(format!("table {table}: no event at seq {}", seq - 1)))?
        .hash)
}

/// The covering checkpoint, its key and the key's enrollment, for the bundle.
fn attested(
    ledger: &ledger::Ledger,
    table: &TableId,
    k: KeptCheckpoint,
    enrollment_seq: u64,
) -> Result<BundleAttestation, ReadError> {
    let stored = ledger
        .reader()
        .stored_event(table, enrollment_seq)?
        .ok_or_else(|| {
            ReadError::Integrity(format!("table {table}: no event at seq {enrollment_seq}"))
        })?;
    let Some((device_key, admin_key)) = enrolls(table, &stored.bytes, &k) else {
        return Err(ReadError::Integrity(format!(
            "table {table} seq {enrollment_seq}: not the enrollment of the checkpoint's key"
        )));
    };
    Ok(BundleAttestation::Attested {
        device_key,
        enrollment_seq,
        admin_key,
        checkpoint: Box::new(bundle_checkpoint(k)),
    })
}

fn bundle_checkpoint(k: KeptCheckpoint) -> BundleCheckpoint {
    BundleCheckpoint {
        bytes: hex::encode(&k.bytes),
        decoded: k.checkpoint,
        stream_seq: k.stream_seq,
        received_at_ns: k.received_at_ns,
    }
}

/// A version 3 bundle's opening: its checkpoint, and the config event and key enrollment
/// its state names, each as a one-event segment when it lies before `from_seq`.
fn bundle_opening(
    ledger: &ledger::Ledger,
    table: &TableId,
    k: KeptCheckpoint,
    config_seq: u64,
    from_seq: u64,
) -> Result<BundleOpening, ReadError> {
    let key_seq = k.checkpoint.state.map_or(0, |s| s.key_seq.0);
    assert!(
        k.checkpoint.state.is_some(),
        "opening_for takes v2 checkpoints only"
    );
    let cite = |seq: u64| -> Result<Option<ChainSegment>, ReadError> {
        if seq >= from_seq {
            return Ok(None);
        }
        read_segment(ledger, table, seq, seq, true).map(Some)
    };
    Ok(BundleOpening {
        config: cite(config_seq)?,
        enrollment: cite(key_seq)?,
        checkpoint: bundle_checkpoint(k),
    })
}

/// `Some((device key, admin key))` when `bytes` is a `DeviceEnrolled` of `table`, validly
/// signed by its admin, enrolling a key of the checkpoint's device that the checkpoint
/// verifies with.
fn enrolls(table: &TableId, bytes: &[u8], k: &KeptCheckpoint) -> Option<(PublicKey, PublicKey)> {
    let (event, _) = schemas::codec::decode(bytes).ok()?;
    let enrolled @ KeyEvent {
        device,
        key,
        admin,
        action: KeyAction::Enroll,
        ..
    } = KeyEvent::of(&event.body)?
    else {
        return None;
    };
    let ok = event.table == *table
        && *device == k.checkpoint.device
        && k.checkpoint.verifies_with(key)
        && enrolled.admin_signature_verifies(table);
    ok.then_some((*key, *admin))
}

/// The seq of the enrollment event of the key that signed `k`: the one the ledger
/// verified it against when it kept it (recorded with the checkpoint, so a key rotated or
/// revoked since changes nothing, and an enrollment the ledger refused is never cited).
/// A checkpoint kept before the ledger recorded that has none: then the last enrollment of
/// the key in the chain up to the checkpoint's head, read at most
/// `BUNDLE_CHAIN_EVENTS_MAX` events back.
fn enrollment_of(
    ledger: &ledger::Ledger,
    table: &TableId,
    k: &KeptCheckpoint,
) -> Result<u64, ReadError> {
    if let Some(seq) = k.key_enrolled_seq {
        let e = ledger.reader().stored_event(table, seq.0)?.ok_or_else(|| {
            ReadError::Integrity(format!("table {table}: no event at seq {}", seq.0))
        })?;
        return match enrolls(table, &e.bytes, k) {
            Some(_) => Ok(seq.0),
            None => Err(ReadError::Integrity(format!(
                "table {table}: the checkpoint at seq {} was kept against the enrollment at seq {}, which does not enroll its key (run verify)",
                k.checkpoint.head_seq.0, seq.0
            ))),
        };
    }
    let to = k.checkpoint.head_seq.0;
    let from = to.saturating_sub(BUNDLE_CHAIN_EVENTS_MAX).max(1);
    let mut found = None;
    for e in ledger.reader().events(table, from..=to) {
        let e = e?;
        if enrolls(table, &e.bytes, k).is_some() {
            found = Some(e.seq.0);
        }
    }
    found.ok_or_else(|| {
        ReadError::Integrity(format!(
            "table {table}: the checkpoint at seq {to} was kept, but no enrollment of device {}'s signing key is found in the chain",
            k.checkpoint.device
        ))
    })
}

/// Why a bundle does not verify.
#[derive(Debug, thiserror::Error)]
pub enum VerifyBundleError {
    /// The file is not JSON of an evidence bundle.
    #[error("not an evidence bundle: {0}")]
    Json(#[from] serde_json::Error),
    /// The chain, head or attestation does not verify (BUNDLE.md §3).
    #[error("{0}")]
    Chain(#[from] BundleError),
    /// Replaying the window gives no report for the round; the value is the round.
    #[error("replay: the decoded events hold no report for round {0}")]
    NoReport(u64),
    /// The bundle's report is not the replay's.
    #[error(
        "report differs from the replay at {path}: bundle says {bundle}, replay gives {replay}"
    )]
    ReportDiffers {
        /// Where the first difference is in the report's JSON.
        path: String,
        /// The bundle's value there, as JSON.
        bundle: String,
        /// The replay's value there, as JSON.
        replay: String,
    },
    /// A case note is about another table or round than the bundle's.
    #[error("case {case} is on table {table} round {round}, not on the bundle's round")]
    CaseElsewhere {
        /// The case id.
        case: u64,
        /// The case's table.
        table: TableId,
        /// The case's round.
        round: u64,
    },
}

/// What a verified bundle proves, for the verifier's summary.
#[derive(Debug, Clone)]
pub struct Verified {
    /// The bundle's table.
    pub table: TableId,
    /// The bundle's round.
    pub round: u64,
    /// Events of the chain segment, each recomputed.
    pub chain_events: u64,
    /// First seq of the chain segment.
    pub from_seq: u64,
    /// Last seq of the chain segment.
    pub head_seq: u64,
    /// The recomputed hash at `head_seq`.
    pub head_hash: Hash32,
    /// The round's own events.
    pub round_events: usize,
    /// The replay's verdict.
    pub verdict: schemas::report::Verdict,
    /// Disputes in the replay's report.
    pub disputes: usize,
    /// Findings in the replay's report.
    pub findings: usize,
    /// Case note entries the bundle carries, outside the proof.
    pub case_entries: usize,
    /// The checkpoint and its key's enrollment, or "not yet attested".
    pub attestation: AttestationCheck,
}

/// Just enough of a bundle to tell its version, whatever the rest holds.
#[derive(serde::Deserialize)]
struct Probe {
    format: Option<String>,
    version: Option<u32>,
}

/// Verifies a bundle's bytes (the whole file) offline. `pinned_admin_keys`: the admin keys
/// the verifier trusts to enroll device keys (empty: the bundle's own is taken on trust,
/// and the result says so).
pub fn verify_bytes(
    bytes: &[u8],
    pinned_admin_keys: &[PublicKey],
) -> Result<Verified, VerifyBundleError> {
    // Name an older or foreign version before its fields fail to parse.
    let probe: Probe = serde_json::from_slice(bytes)?;
    let known = matches!(probe.version, Some(BUNDLE_VERSION | BUNDLE_VERSION_FULL));
    if probe.format.as_deref() != Some(BUNDLE_FORMAT) || !known {
        return Err(BundleError::Format {
            found: probe.format.unwrap_or_default(),
            version: probe.version.unwrap_or(0),
        }
        .into());
    }
    let b: EvidenceBundle = serde_json::from_slice(bytes)?;
    verify(&b, pinned_admin_keys)
}

/// Verifies a parsed bundle offline (see `verify_bytes`).
pub fn verify(
    b: &EvidenceBundle,
    pinned_admin_keys: &[PublicKey],
) -> Result<Verified, VerifyBundleError> {
    let chain = verify_chain(b, pinned_admin_keys)?;
    // Case notes are the House's and unproven, but they must at least be this round's.
    if let Some(c) = b
        .cases
        .iter()
        .find(|c| c.table != b.table || c.round != b.round)
    {
        return Err(VerifyBundleError::CaseElsewhere {
            case: c.id,
            table: c.table.clone(),
            round: c.round.0,
        });
    }
    let input = chain.replay_input(b);
    let replay = rounds::replay_events(&b.table, b.round.0, &input)
        .ok_or(VerifyBundleError::NoReport(b.round.0))?;
    let ours = serde_json::to_value(&replay)?;
    let theirs = serde_json::to_value(&b.report)?;
    if let Some((path, bundle, replay)) = first_difference("", &theirs, &ours) {
        return Err(VerifyBundleError::ReportDiffers {
            path,
            bundle,
            replay,
        });
    }
    Ok(Verified {
        table: b.table.clone(),
        round: b.round.0,
        chain_events: b.chain.events.len() as u64,
        from_seq: b.chain.from_seq,
        head_seq: b.head.seq,
        head_hash: b.head.hash,
        round_events: b.round_seqs.len(),
        verdict: replay.verdict,
        disputes: replay.disputes.len(),
        findings: replay.findings.len(),
        case_entries: b.cases.iter().map(|c| c.entries.len()).sum(),
        attestation: chain.attestation,
    })
}

/// What the attestation established and what it took on trust, in words, one sentence per
/// line (for `verify-bundle` and `evidence`).
pub fn describe_attestation(v: &Verified) -> Vec<String> {
    match &v.attestation {
        AttestationCheck::Attested {
            device,
            device_key,
            checkpoint_seq,
            checkpoint_hash,
            signed_at_ns,
            enrollment_seq,
            admin_key,
            admin_pinned,
            unattested,
        } => {
            let mut out = vec![
                format!(
                    "ATTESTED: device {device} signed the chain head at seq {checkpoint_seq} ({checkpoint_hash}) at {signed_at_ns} ns (device clock); the signature verifies with its key {device_key}, and the recomputed chain holds that head"
                ),
                format!(
                    "the key was enrolled for device {device} at seq {enrollment_seq} of the chain by admin key {admin_key}, and not revoked or replaced before the checkpoint"
                ),
            ];
            out.push(if *admin_pinned {
                format!("admin key {admin_key} is one of the pinned --admin-key keys")
            } else {
                format!(
                    "TRUSTED, NOT CHECKED: admin key {admin_key} is taken from the bundle; pass --admin-key with the House's published admin key to check it"
                )
            });
            if let Some((from, to)) = unattested {
                out.push(format!(
                    "events {from}..={to} (the replay window after the round) follow the signed head in the chain but are not themselves signed"
                ));
            }
            out
        }
        AttestationCheck::NotYetAttested {
            latest_checkpoint_seq,
        } => vec![format!(
            "NOT YET ATTESTED: no device-signed checkpoint covered the round at export ({}); the chain is recomputed up to the table's head at export (seq {}), which nothing signed: compare it with the ledger's head or a digest",
            match latest_checkpoint_seq {
                Some(s) => format!("the table's latest was at seq {s}"),
                None => "the table had none".to_string(),
            },
            v.head_seq
        )],
    }
}

/// Report fields that are the replayer's words for people, not what it decided: a newer
/// replayer may word or cite a round differently, and an old bundle still verifies.
const WORDING_KEYS: [&str; 2] = ["explanation", "clause"];

/// The first JSON path where `a` and `b` differ, with both values; wording is skipped.
fn first_difference(
    path: &str,
    a: &serde_json::Value,
    b: &serde_json::Value,
) -> Option<(String, String, String)> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys
                .into_iter()
                .filter(|k| !WORDING_KEYS.contains(&k.as_str()))
            {
                let (va, vb) = (
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                );
                if let Some(d) = first_difference(&format!("{path}/{k}"), va, vb) {
                    return Some(d);
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) => {
            for i in 0..x.len().max(y.len()) {
                let (va, vb) = (
                    x.get(i).unwrap_or(&Value::Null),
                    y.get(i).unwrap_or(&Value::Null),
                );
                if let Some(d) = first_difference(&format!("{path}/{i}"), va, vb) {
                    return Some(d);
                }
            }
            None
        }
        _ if a == b => None,
        _ => Some((
            if path.is_empty() {
                "/".into()
            } else {
                path.into()
            },
            a.to_string(),
            b.to_string(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::first_difference;
    use serde_json::json;

    #[test]
    fn wording_may_differ_money_may_not() {
        let old = json!({"verdict": "disputed", "lines": [
            {"net": 1500, "clause": "TCP3 4.4, TCP3 4.9.1", "explanation": "OnePair wins"}]});
        let reworded = json!({"verdict": "disputed", "lines": [
            {"net": 1500, "clause": "TCP3 4.4, RN8", "explanation": "a pair wins"}]});
        assert_eq!(first_difference("", &old, &reworded), None);
        let paid_more = json!({"verdict": "disputed", "lines": [
            {"net": 1600, "clause": "TCP3 4.4, TCP3 4.9.1", "explanation": "OnePair wins"}]});
        let (path, bundle, replay) = first_difference("", &old, &paid_more).expect("differs");
        assert_eq!(
            (path.as_str(), bundle.as_str(), replay.as_str()),
            ("/lines/0/net", "1500", "1600")
        );
    }
}
