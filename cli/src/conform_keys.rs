//! `conform`'s key checks (schemas/DEVICES.md §2, README §5): each enrollment's own
//! admin signature, which admin keys to trust, and whether the chain ends attested.
//!
//! An enrollment is checked for its own consistency always: the admin signature over the
//! table, the device and the key it names needs no trusted key. With `--admin-key`, only
//! those admins are trusted, as `serve --admin-key` does. Without, conform trusts each
//! admin whose enrollment verifies, and says so: it cannot know the House's keys.

use ledger::{Ledger, Provenance};
use schemas::attest::{KeyAction, KeyEvent, PublicKey};
use schemas::{DeviceId, Event, TableId};
use std::collections::BTreeSet;

/// Most distinct enrollment headers remembered as already reported.
const REPORTED_MAX: usize = 4096;

/// A key problem: a quarantine-like code and its text.
pub type Problem = (&'static str, String);

/// The admin keys trusted so far, and the signers seen.
pub struct Keys {
    /// `--admin-key`: when given, the only admins trusted.
    pinned: Option<BTreeSet<PublicKey>>,
    trusted: BTreeSet<PublicKey>,
    /// Enrollment headers already reported as not verifying: (device, key).
    reported: BTreeSet<(DeviceId, PublicKey)>,
    /// Every `Rl-Signer` seen, bounded as `reported`.
    pub signers: BTreeSet<DeviceId>,
}

impl Keys {
    pub fn new(pinned: Vec<PublicKey>) -> Keys {
        let pinned: Option<BTreeSet<PublicKey>> =
            (!pinned.is_empty()).then(|| pinned.into_iter().collect());
        Keys {
            trusted: pinned.clone().unwrap_or_default(),
            pinned,
            reported: BTreeSet::new(),
            signers: BTreeSet::new(),
        }
    }

    /// The admin keys to trust now.
    pub fn trusted(&self) -> &BTreeSet<PublicKey> {
        &self.trusted
    }

    /// Checks the enrollments one event message carries: its `Rl-Enrollment` header and,
    /// for `device_enrolled` or `device_revoked`, its body. Unpinned, a verifying admin
    /// becomes trusted (and is announced on stderr).
    pub fn check(
        &mut self,
        table: &TableId,
        event: Option<&Event>,
        p: &Provenance,
    ) -> Vec<Problem> {
        let mut out = Vec::new();
        if let Provenance::Signed(s) = p {
            if self.signers.len() < REPORTED_MAX {
                self.signers.insert(s.device.clone());
            }
            if let Some(e) = s.enrollment {
                if e.verifies(table, &s.device) {
                    self.admit(e.admin);
                } else if self.reported.len() < REPORTED_MAX
                    && self.reported.insert((s.device.clone(), e.key))
                {
                    out.push((
                        "enrollment_header_invalid",
                        format!(
                            "the Rl-Enrollment header of {} (key {}) is not admin {}'s \
                             signature of that key for table {table}: it enrolls nothing",
                            s.device, e.key, e.admin
                        ),
                    ));
                }
            }
        }
        if let Some(k) = event.and_then(|e| KeyEvent::of(&e.body)) {
            out.extend(self.key_event(table, &k));
        }
        out
    }

    fn key_event(&mut self, table: &TableId, k: &KeyEvent<'_>) -> Option<Problem> {
        let what = match k.action {
            KeyAction::Enroll => "device_enrolled",
            KeyAction::Revoke => "device_revoked",
        };
        if !k.admin_signature_verifies(table) {
            let text = format!(
                "{what} of {} (key {}): the signature is not admin {}'s over that key for table \
                 {table}; the ledger keeps the event as evidence and it takes no effect",
                k.device, k.key, k.admin
            );
            return Some(("enrollment_refused", text));
        }
        if self.pinned.as_ref().is_some_and(|p| !p.contains(k.admin)) {
            let text = format!(
                "{what} of {}: admin {} is not one of --admin-key; the ledger keeps the event \
                 and it takes no effect",
                k.device, k.admin
            );
            return Some(("enrollment_refused", text));
        }
        self.admit(*k.admin);
        None
    }

    fn admit(&mut self, admin: PublicKey) {
        if self.pinned.is_none() && self.trusted.insert(admin) {
            eprintln!(
                "conform: trusting admin key {admin}: its enrollment verifies \
                 (give --admin-key to name the House's keys)"
            );
        }
    }
}

/// What the chain lacks at the end to be attested, when the source carries signatures and
/// checkpoints: `None` when a kept checkpoint covers its head.
pub fn unattested(ledger: &Ledger, table: &TableId, keys: &Keys) -> Option<Problem> {
    let head = ledger.reader().head(table)?.seq.0;
    let attested = ledger.reader().attestation(table).map_or(0, |a| a.seq.0);
    if attested >= head {
        return None;
    }
    let enrolled = keys.signers.iter().any(|s| {
        ledger
            .reader()
            .device_key(table, s)
            .is_some_and(|k| k.revoked_seq.is_none())
    });
    let text = if enrolled {
        format!(
            "seq {}..={head} are not attested: no kept checkpoint covers them (a checkpoint \
             follows each round and the table's close)",
            attested + 1
        )
    } else {
        format!(
            "seq 1..={head} are never attested: no device_enrolled event enrolls the signer, so \
             every checkpoint is refused (unknown_device); send it right after table_opened"
        )
    };
    Some(("not_attested", text))
}
