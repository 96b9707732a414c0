//! Who sent an event: the device signature every event message carries.
//!
//! The bus's permissions say who may publish on a table's subject. The signature says
//! which device the event came from, whoever relayed it. A table device signs each event
//! it publishes with its enrolled key (`attest`), over the exact bytes it sends. The
//! signature travels in NATS headers, beside the bytes, so the bytes and the chain are
//! unchanged. A ledger that requires signed events stores an event only when its
//! signature verifies under the key its chain enrolled for the signer.
//!
//! A device not yet enrolled on a chain (its table's first events come before the
//! `DeviceEnrolled` event) also sends its admin-signed enrollment in a header: the same
//! statement the chain's own enrollment event will carry.
//!
//! The signed message is a fixed byte layout (schemas/README.md §5.4):
//! `"roundledger/event-signature/v1" || len(table) u8 || table || len(device) u8 ||
//! device || blake3(bytes) (32)`. Pure: no I/O.

use crate::attest::{
    enrollment_message, push_id, verify, KeyAction, PublicKey, Signature, SigningKey,
};
use crate::ids::{DeviceId, TableId};

/// Domain tag of an event signature.
pub const EVENT_SIGNATURE_DOMAIN: &[u8] = b"roundledger/event-signature/v1";
/// Header naming the signing device (a `DeviceId`).
pub const SIGNER_HEADER: &str = "Rl-Signer";
/// Header holding the signature, 128 lowercase hex digits.
pub const SIGNATURE_HEADER: &str = "Rl-Signature";
/// Header holding an admin-signed enrollment of the signer's key:
/// `<key hex>.<admin key hex>.<admin signature hex>`.
pub const ENROLLMENT_HEADER: &str = "Rl-Enrollment";

/// An admin's enrollment of a device key, sent in a header by a device whose chain has
/// not enrolled it yet. The admin signs `attest::enrollment_message(.., Enroll)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderEnrollment {
    /// The device's key to enroll.
    pub key: PublicKey,
    /// The admin key that signs the enrollment.
    pub admin: PublicKey,
    /// The admin's signature over `attest::enrollment_message(.., Enroll)`.
    pub admin_signature: Signature,
}

impl HeaderEnrollment {
    /// `admin` enrolls `key` for `device` on `table`.
    pub fn sign(
        admin: &SigningKey,
        table: &TableId,
        device: &DeviceId,
        key: PublicKey,
    ) -> HeaderEnrollment {
        let message = enrollment_message(table, device, &key, KeyAction::Enroll);
        HeaderEnrollment {
            key,
            admin: admin.public(),
            admin_signature: admin.sign(&message),
        }
    }

    /// Whether the admin's signature verifies for `device` on `table`. Whether that admin
    /// is trusted is the caller's question.
    pub fn verifies(&self, table: &TableId, device: &DeviceId) -> bool {
        let message = enrollment_message(table, device, &self.key, KeyAction::Enroll);
        verify(&self.admin, &message, &self.admin_signature)
    }

    /// The header value: `key.admin.signature`, each in hex (what `roundledger enroll`
    /// prints).
    pub fn to_header(self) -> String {
        format!("{}.{}.{}", self.key, self.admin, self.admin_signature)
    }

    /// Parses a header value written by `to_header`.
    pub fn from_header(value: &str) -> Result<HeaderEnrollment, String> {
        let parts: Vec<&str> = value.trim().split('.').collect();
        let [key, admin, signature] = parts.as_slice() else {
            return Err(format!(
                "{ENROLLMENT_HEADER} has {} parts, not key.admin.signature",
                parts.len()
            ));
        };
        let hex_err = |what: &str, e: hex::FromHexError| format!("{ENROLLMENT_HEADER} {what}: {e}");
        Ok(HeaderEnrollment {
            key: PublicKey::from_hex(key).map_err(|e| hex_err("key", e))?,
            admin: PublicKey::from_hex(admin).map_err(|e| hex_err("admin key", e))?,
            admin_signature: Signature::from_hex(signature)
                .map_err(|e| hex_err("admin signature", e))?,
        })
    }
}

/// A device's signature of one event message, as read from its headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSignature {
    /// The signing device: its key is looked up in the chain's key register.
    pub device: DeviceId,
    /// The device's ed25519 signature over the event's table, device and bytes.
    pub signature: Signature,
    /// Present until the chain enrolls the device.
    pub enrollment: Option<HeaderEnrollment>,
}

impl EventSignature {
    /// `device` signs the event `bytes` of `table` with `key`.
    pub fn sign(key: &SigningKey, table: &TableId, device: &DeviceId, bytes: &[u8]) -> Self {
        EventSignature {
            device: device.clone(),
            signature: key.sign(&signed_message(table, device, bytes)),
            enrollment: None,
        }
    }

    /// Whether the signature is `key`'s over `bytes` of `table`.
    pub fn verifies_with(&self, key: &PublicKey, table: &TableId, bytes: &[u8]) -> bool {
        verify(
            key,
            &signed_message(table, &self.device, bytes),
            &self.signature,
        )
    }

    /// The headers that carry it: name and value.
    pub fn to_headers(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![
            (SIGNER_HEADER, self.device.to_string()),
            (SIGNATURE_HEADER, self.signature.to_hex()),
        ];
        if let Some(e) = self.enrollment {
            out.push((ENROLLMENT_HEADER, e.to_header()));
        }
        out
    }

    /// Reads the headers through `get` (a header's value by name). `Ok(None)`: no
    /// signature headers at all. `Err`: headers present but malformed, with why.
    pub fn from_headers<'a>(
        get: impl Fn(&str) -> Option<&'a str>,
    ) -> Result<Option<EventSignature>, String> {
        let (signer, signature) = match (get(SIGNER_HEADER), get(SIGNATURE_HEADER)) {
            (None, None) => return Ok(None),
            (Some(d), Some(s)) => (d, s),
            (None, Some(_)) => return Err(format!("{SIGNATURE_HEADER} without {SIGNER_HEADER}")),
            (Some(_), None) => return Err(format!("{SIGNER_HEADER} without {SIGNATURE_HEADER}")),
        };
        let device =
            DeviceId::new(signer.trim()).map_err(|e| format!("{SIGNER_HEADER} {signer:?}: {e}"))?;
        let signature = Signature::from_hex(signature.trim())
            .map_err(|e| format!("{SIGNATURE_HEADER}: {e}"))?;
        let enrollment = get(ENROLLMENT_HEADER)
            .map(HeaderEnrollment::from_header)
            .transpose()?;
        Ok(Some(EventSignature {
            device,
            signature,
            enrollment,
        }))
    }
}

/// The bytes a device signs for one event message (see the module doc).
pub fn signed_message(table: &TableId, device: &DeviceId, bytes: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(EVENT_SIGNATURE_DOMAIN.len() + 2 + 64 + 32);
    m.extend_from_slice(EVENT_SIGNATURE_DOMAIN);
    push_id(&mut m, table.as_str());
    push_id(&mut m, device.as_str());
    m.extend_from_slice(blake3::hash(bytes).as_bytes());
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn ids() -> (TableId, DeviceId) {
        (
            TableId::new("CSP6-01").unwrap(),
            DeviceId::new("CSP6-01-dealer").unwrap(),
        )
    }

    #[test]
    fn a_signature_binds_the_bytes_the_table_and_the_device() {
        let (table, device) = ids();
        let key = SigningKey::from_secret([7; 32]);
        let s = EventSignature::sign(&key, &table, &device, b"event bytes");
        assert!(s.verifies_with(&key.public(), &table, b"event bytes"));
        assert!(!s.verifies_with(&key.public(), &table, b"event bytez"));
        let other_table = TableId::new("CSP6-02").unwrap();
        assert!(!s.verifies_with(&key.public(), &other_table, b"event bytes"));
        let other_key = SigningKey::from_secret([8; 32]).public();
        assert!(!s.verifies_with(&other_key, &table, b"event bytes"));
        let mut moved = s.clone();
        moved.device = DeviceId::new("CSP6-01-shoe").unwrap();
        assert!(!moved.verifies_with(&key.public(), &table, b"event bytes"));
    }

    #[test]
    fn headers_round_trip_and_malformed_ones_say_why() {
        let (table, device) = ids();
        let key = SigningKey::from_secret([7; 32]);
        let admin = SigningKey::from_secret([9; 32]);
        let mut s = EventSignature::sign(&key, &table, &device, b"x");
        s.enrollment = Some(HeaderEnrollment::sign(
            &admin,
            &table,
            &device,
            key.public(),
        ));
        let headers: BTreeMap<&str, String> = s.to_headers().into_iter().collect();
        let back = EventSignature::from_headers(|n| headers.get(n).map(String::as_str));
        assert_eq!(back, Ok(Some(s.clone())));
        assert!(s.enrollment.unwrap().verifies(&table, &device));
        let other = DeviceId::new("CSP6-01-shoe").unwrap();
        assert!(!s.enrollment.unwrap().verifies(&table, &other));

        assert_eq!(EventSignature::from_headers(|_| None), Ok(None));
        let only_sig = |n: &str| (n == SIGNATURE_HEADER).then_some("00");
        assert!(EventSignature::from_headers(only_sig)
            .unwrap_err()
            .contains("without"));
        let bad_hex = |n: &str| match n {
            SIGNER_HEADER => Some("CSP6-01-dealer"),
            SIGNATURE_HEADER => Some("zz"),
            _ => None,
        };
        assert!(EventSignature::from_headers(bad_hex)
            .unwrap_err()
            .starts_with(SIGNATURE_HEADER));
    }

    #[test]
    fn the_signed_message_has_the_documented_layout() {
        let (table, device) = ids();
        let m = signed_message(&table, &device, b"abc");
        let mut want = EVENT_SIGNATURE_DOMAIN.to_vec();
        want.push(7);
        want.extend_from_slice(b"CSP6-01");
        want.push(14);
        want.extend_from_slice(b"CSP6-01-dealer");
        want.extend_from_slice(blake3::hash(b"abc").as_bytes());
        assert_eq!(m, want);
    }
}
