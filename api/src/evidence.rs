//! Evidence bundles (format: schemas/BUNDLE.md, types: `schemas::bundle`): building one
//! from the ledger, and verifying one offline, without the ledger: the chain half
//! (`schemas::bundle::verify_chain`) and the replay half (re-run the replayer on the
//! decoded events and compare with the bundle's report, field by field).
//!
//! Invariants: the bundle's bytes are the stored bytes (hex), never re-encoded; building
//! reads at most `BUNDLE_CHAIN_EVENTS_MAX` events; verification never needs sled or the
//! network. Building is blocking (sled).

use crate::rounds::{self, Located};
use crate::ReadError;
use schemas::api::CaseView;
use schemas::bundle::{
    verify_chain, BundleError, BundleEvent, BundleHead, ChainSegment, EvidenceBundle,
    BUNDLE_CHAIN_EVENTS_MAX, BUNDLE_FORMAT, BUNDLE_VERSION,
};
use schemas::{Hash32, TableId, GENESIS};

/// Builds the bundle of `round` of `table`.
pub fn build(
    ledger: &ledger::Ledger,
    table: &TableId,
    round: u64,
    located: Located,
    cases: Vec<CaseView>,
    exported_by: &str,
    exported_at_ns: i64,
) -> Result<EvidenceBundle, ReadError> {
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
    let head = ledger
        .head(table)
        .ok_or_else(|| ReadError::NotFound(format!("table {table} is not in the ledger")))?;
    let count = head.seq.0 - config_seq + 1;
    if count > BUNDLE_CHAIN_EVENTS_MAX {
        return Err(ReadError::TooLarge(format!(
            "the chain from the configuration (seq {config_seq}) to the head (seq {}) holds {count} events, more than {BUNDLE_CHAIN_EVENTS_MAX}; a signed checkpoint would shorten it",
            head.seq.0
        )));
    }
    let anchor: Hash32 = if config_seq == 1 {
        GENESIS
    } else {
        ledger
            .stored_event(table, config_seq - 1)?
            .ok_or_else(|| {
                ReadError::Integrity(format!("table {table}: no event at seq {}", config_seq - 1))
            })?
            .hash
    };
    let mut events = Vec::with_capacity(count as usize);
    for e in ledger.events(table, config_seq..=head.seq.0) {
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
            "table {table}: {} events stored between seq {config_seq} and the head {}, expected {count} (run verify)",
            events.len(),
            head.seq.0
        )));
    }
    let round_seqs = loaded
        .events
        .iter()
        .filter(|(_, e)| e.round == Some(loaded.round))
        .map(|(s, _)| s.seq.0)
        .collect();
    Ok(EvidenceBundle {
        format: BUNDLE_FORMAT.to_string(),
        version: BUNDLE_VERSION,
        table: table.clone(),
        round: loaded.round,
        exported_at_ns,
        exported_by: exported_by.to_string(),
        head: BundleHead {
            seq: head.seq.0,
            hash: head.hash,
        },
        config_seq,
        replay_from: loaded.window.0,
        replay_to: loaded.window.1,
        round_seqs,
        chain: ChainSegment {
            anchor,
            from_seq: config_seq,
            to_seq: head.seq.0,
            events,
        },
        report: loaded.report,
        cases,
        checkpoint: None,
    })
}

/// Why a bundle does not verify.
#[derive(Debug, thiserror::Error)]
pub enum VerifyBundleError {
    #[error("not an evidence bundle: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{0}")]
    Chain(#[from] BundleError),
    #[error("replay: the decoded events hold no report for round {0}")]
    NoReport(u64),
    #[error(
        "report differs from the replay at {path}: bundle says {bundle}, replay gives {replay}"
    )]
    ReportDiffers {
        path: String,
        bundle: String,
        replay: String,
    },
}

/// What a verified bundle proves, for the verifier's summary.
#[derive(Debug, Clone)]
pub struct Verified {
    pub table: TableId,
    pub round: u64,
    pub chain_events: u64,
    pub from_seq: u64,
    pub head_seq: u64,
    pub head_hash: Hash32,
    pub round_events: usize,
    pub verdict: schemas::report::Verdict,
    pub disputes: usize,
    pub findings: usize,
    pub case_entries: usize,
}

/// Verifies a bundle's bytes (the whole file) offline.
pub fn verify_bytes(bytes: &[u8]) -> Result<Verified, VerifyBundleError> {
    let b: EvidenceBundle = serde_json::from_slice(bytes)?;
    verify(&b)
}

/// Verifies a parsed bundle offline.
pub fn verify(b: &EvidenceBundle) -> Result<Verified, VerifyBundleError> {
    let chain = verify_chain(b)?;
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
    })
}

/// The first JSON path where `a` and `b` differ, with both values.
fn first_difference(
    path: &str,
    a: &serde_json::Value,
    b: &serde_json::Value,
) -> Option<(String, String, String)> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
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
