//! Admission by device signature: on a ledger that requires signed events, an event joins
//! its chain only when the table's own device signed it (`schemas::provenance`).
//!
//! The key in force for a signer is the chain's key register as the call leaves it so far
//! (`Call::device_key`). Two more keys are accepted, each vouched for by a trusted admin:
//! - the key an admin-signed enrollment header names, while the chain has never enrolled
//!   the signer (its first events come before its `DeviceEnrolled` event);
//! - the key a `DeviceEnrolled` event enrolls, for that event itself (a rotation is signed
//!   by the new key).
//!
//! An event whose `device` has a key on the chain is admitted only under that device's own
//! signature; a signer relays only devices with no key there (`relayed_for`).
//!
//! Invariant: with the requirement on, no event is stored, held or recognised as a
//! duplicate unless its signature verified; what fails is quarantined with its reason.
//! The signatures are not stored: checkpoints, signed by the same keys, prove the chain
//! to outsiders (`attest`). Recovery re-appends its own value log's records without this
//! check: they were admitted before they were written. Without the requirement (an open
//! ledger) an unsigned event goes on, but a signature that is present must still verify
//! (`judge_open`).

use crate::call::Call;
use crate::faces::{Reader, Writer};
use crate::store::{Op, Space};
pub use crate::types::Provenance;
use crate::types::{reason, Appended, Incoming};
use crate::{error::Error, owner::State};
use schemas::attest::{KeyCache, KeyEvent, PublicKey};
use schemas::provenance::EventSignature;
use schemas::{DeviceId, Event, TableId};

/// `Space::Meta` key: present (one byte, 1) once the ledger requires signed events.
pub const REQUIRE_KEY: &[u8] = b"require_signed_events";

/// A call's signatures checked together before its events are decided: for each event
/// message, the key it was checked against and the verdict.
pub(crate) struct Prechecked(Vec<Option<(PublicKey, bool)>>);

impl Prechecked {
    pub(crate) fn none(len: usize) -> Prechecked {
        Prechecked(vec![None; len])
    }

    pub(crate) fn get(&self, i: usize) -> Option<(PublicKey, bool)> {
        self.0.get(i).copied().flatten()
    }
}

/// Loads the requirement at open.
pub(crate) fn load_required(store: &dyn crate::store::Store) -> Result<bool, Error> {
    Ok(store.get(Space::Meta, REQUIRE_KEY)?.is_some())
}

/// Checks every signature of `events` against the key in force at the call's start (or
/// its enrollment header), in batches (`verify_many`). A key an event of this same call
/// changes is checked again, alone, when the event is decided.
pub(crate) fn precheck(state: &State, keys: &mut KeyCache, events: &[Incoming]) -> Prechecked {
    let mut out = Prechecked::none(events.len());
    let mut at = Vec::new();
    let mut messages = Vec::new();
    let mut items = Vec::new();
    for (i, msg) in events.iter().enumerate() {
        let (Provenance::Signed(s), Some(table)) = (&msg.provenance, &msg.subject_table) else {
            continue;
        };
        let Some(key) = key_at_start(state, table, s) else {
            continue;
        };
        at.push((i, key));
        messages.push(schemas::provenance::signed_message(
            table, &s.device, &msg.bytes,
        ));
        items.push((key, s.signature));
    }
    let batch: Vec<_> = items
        .iter()
        .zip(&messages)
        .map(|((key, sig), m)| (key, m.as_slice(), sig))
        .collect();
    let verdicts = schemas::attest::verify_many(keys, &batch);
    for ((i, key), ok) in at.into_iter().zip(verdicts) {
        out.0[i] = Some((key, ok));
    }
    out
}

/// The signer's key as the call starts: its current enrolled key, or the key of an
/// enrollment header while the chain has never enrolled it.
fn key_at_start(state: &State, table: &TableId, s: &EventSignature) -> Option<PublicKey> {
    match state.trust.devices.get(&(table.clone(), s.device.clone())) {
        Some(d) if d.revoked_seq.is_none() => Some(d.key),
        Some(_) => None,
        None => s.enrollment.map(|e| e.key),
    }
}

/// Why an event is refused admission: a quarantine reason and its text.
pub(crate) type Refusal = (&'static str, String);

/// The quarantine outcome of `msg` when `event` is not its device's (`admit`), or, on an
/// open ledger, carries a signature that does not verify (`judge_open`); `None` when it
/// may go on to the chain checks.
pub(crate) fn refused(
    state: &State,
    call: &mut Call,
    msg: &Incoming,
    event: &Event,
    pre: Option<(PublicKey, bool)>,
) -> Option<Appended> {
    let verdict = match (call.checks_signatures(), call.recovering) {
        (true, _) => admit(state, call, msg, event, pre),
        // Recovery re-appends records admitted before; nothing is judged again.
        (false, true) => return None,
        (false, false) => judge_open(state, call, msg, event),
    };
    let (code, text) = verdict.err()?;
    tracing::warn!(table = %event.table, seq = event.seq.0, code, "event refused: not its device's");
    Some(crate::refuse::quarantine(state, call, msg, code, text).into())
}

/// Decides whether `event` (message `msg`, precheck `pre`) may join its chain.
fn admit(
    state: &State,
    call: &Call,
    msg: &Incoming,
    event: &Event,
    pre: Option<(PublicKey, bool)>,
) -> Result<(), Refusal> {
    let s = match &msg.provenance {
        Provenance::Signed(s) => s,
        Provenance::Unsigned => {
            return Err((reason::UNSIGNED, unsigned_text(event)));
        }
        Provenance::Malformed(why) => {
            return Err((reason::UNSIGNED, format!("signature headers: {why}")));
        }
    };
    let candidates = candidate_keys(state, call, event, s)?;
    let ok = candidates.iter().any(|key| match pre {
        Some((k, verdict)) if k == *key => verdict,
        _ => s.verifies_with(key, &event.table, &msg.bytes),
    });
    if ok {
        return relayed_for(state, call, event, s);
    }
    let text = format!(
        "seq {}: the signature of {} does not verify under its key {} on table {}",
        event.seq.0,
        s.device,
        candidates
            .iter()
            .map(|k| k.to_hex())
            .collect::<Vec<_>>()
            .join(" or "),
        event.table
    );
    Err((reason::SIGNATURE_INVALID, text))
}

/// The rule between the envelope's `device` and the signer (DEVICES.md §2): a device the
/// chain has enrolled (its key in force or revoked) signs its own events; the signer relays
/// only devices with no key on the chain, such as a shoe behind the dealer terminal.
fn relayed_for(
    state: &State,
    call: &Call,
    event: &Event,
    s: &EventSignature,
) -> Result<(), Refusal> {
    if event.device == s.device
        || call
            .device_key(state, &event.table, &event.device)
            .is_none()
    {
        return Ok(());
    }
    let text = format!(
        "seq {}: the event names device {}, which has a key on table {}, but {} signed it; \
         an enrolled device signs its own events",
        event.seq.0, event.device, event.table, s.device
    );
    Err((reason::SIGNATURE_INVALID, text))
}

/// On a ledger that does not require signatures (`serve --unsigned-events`): an unsigned
/// event goes on, but a signature that is present must verify. It is checked against the
/// keys that would admit it on a requiring ledger, else the key its enrollment header
/// names. With neither, no key is known to judge it by, and it goes on as unsigned.
fn judge_open(state: &State, call: &Call, msg: &Incoming, event: &Event) -> Result<(), Refusal> {
    let s = match &msg.provenance {
        Provenance::Unsigned => return Ok(()),
        Provenance::Signed(s) => s,
        Provenance::Malformed(why) => {
            let text = format!(
                "seq {} of table {}: signature headers: {why}; this ledger stores unsigned \
                 events, never badly signed ones",
                event.seq.0, event.table
            );
            return Err((reason::SIGNATURE_INVALID, text));
        }
    };
    let mut keys = candidate_keys(state, call, event, s).unwrap_or_default();
    if keys.is_empty() {
        keys.extend(s.enrollment.map(|e| e.key));
    }
    let verifies = |k: &PublicKey| s.verifies_with(k, &event.table, &msg.bytes);
    if keys.is_empty() || keys.iter().any(verifies) {
        return Ok(());
    }
    let text = format!(
        "seq {}: the signature of {} does not verify under {} on table {}; this ledger \
         stores unsigned events, never badly signed ones",
        event.seq.0,
        s.device,
        keys.iter()
            .map(|k| k.to_hex())
            .collect::<Vec<_>>()
            .join(" or "),
        event.table
    );
    Err((reason::SIGNATURE_INVALID, text))
}

fn unsigned_text(event: &Event) -> String {
    format!(
        "seq {} of table {}: no device signature (headers {} and {}); this ledger stores only \
         events its tables' enrolled devices signed",
        event.seq.0,
        event.table,
        schemas::provenance::SIGNER_HEADER,
        schemas::provenance::SIGNATURE_HEADER
    )
}

/// The keys whose signature admits `event` from signer `s`: at most three (see the module
/// doc). `Err` when there is none.
fn candidate_keys(
    state: &State,
    call: &Call,
    event: &Event,
    s: &EventSignature,
) -> Result<Vec<PublicKey>, Refusal> {
    let mut keys = Vec::with_capacity(2);
    let register = call.device_key(state, &event.table, &s.device);
    match register {
        Some(d) if d.revoked_seq.is_none() => keys.push(d.key),
        Some(_) => {}
        None => keys.extend(header_key(state, &event.table, s)),
    }
    keys.extend(self_enrolled_key(state, event, &s.device));
    if keys.is_empty() {
        let why = match register {
            Some(d) => format!(
                "its key {} was revoked at seq {}",
                d.key,
                d.revoked_seq.map_or(0, |s| s.0)
            ),
            None if s.enrollment.is_some() => {
                "its enrollment header is not signed by an admin key this ledger trusts".into()
            }
            None => "the chain has not enrolled it and no enrollment header came with it".into(),
        };
        let text = format!(
            "seq {}: signer {} may not extend table {}: {why}",
            event.seq.0, s.device, event.table
        );
        return Err((reason::SIGNER_UNKNOWN, text));
    }
    Ok(keys)
}

/// The key of `s`'s enrollment header, when a trusted admin signed it for this table.
fn header_key(state: &State, table: &TableId, s: &EventSignature) -> Option<PublicKey> {
    let e = s.enrollment?;
    (state.trust.admin_keys.contains(&e.admin) && e.verifies(table, &s.device)).then_some(e.key)
}

/// The key `event` itself enrolls for `signer`, when a trusted admin signed it.
fn self_enrolled_key(state: &State, event: &Event, signer: &DeviceId) -> Option<PublicKey> {
    let k = KeyEvent::of(&event.body)?;
    let enrolls = k.action == schemas::attest::KeyAction::Enroll && k.device == signer;
    (enrolls
        && state.trust.admin_keys.contains(k.admin)
        && k.admin_signature_verifies(&event.table))
    .then_some(*k.key)
}

impl Writer<'_> {
    /// From now on, stores only events their table's enrolled device signed. Kept
    /// durably: a ledger never goes back to accepting unsigned events.
    pub fn require_signed_events(&self) -> Result<(), Error> {
        let mut state = self.lock();
        if state.trust.require_signed {
            return Ok(());
        }
        self.store
            .commit(vec![Op::Put(Space::Meta, REQUIRE_KEY.to_vec(), vec![1])])?;
        self.store.flush()?;
        state.trust.require_signed = true;
        Ok(())
    }
}

impl Reader<'_> {
    /// Whether the ledger stores only signed events (`require_signed_events`).
    pub fn requires_signed_events(&self) -> bool {
        self.lock().trust.require_signed
    }
}
