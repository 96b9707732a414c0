//! The key a table's controller signs with, and the admin's enrollment of it.
//!
//! A live run (`simulate`, `demo`) uses real keys made as an operator makes them: the
//! device's own key (`roundledger keygen`) and an admin's offline signature of its
//! enrollment (`roundledger enroll`). The device never holds the admin's secret: it only
//! carries the signed enrollment, in its first events' headers and in the chain's
//! `DeviceEnrolled` event. Unit tests use keys derived from public labels (`simulated`),
//! which a server trusts only with `serve --trust-simulated-admin`.

use crate::Error;
use schemas::attest::{PublicKey, SigningKey};
use schemas::provenance::HeaderEnrollment;
use schemas::{DeviceId, EventBody, TableId};

/// The device id of a table's controller (the dealer terminal), which publishes the chain
/// and signs its events and checkpoints. An enrollment names it.
pub const CONTROLLER: &str = "dealer-terminal";

/// The admin key that enrolls simulated devices. Derived from a public label, so anybody
/// can sign with it: a server trusts it only in tests (`serve --trust-simulated-admin`,
/// refused without its test-only setting).
pub fn admin_key() -> SigningKey {
    SigningKey::derive_for_simulation("roundledger simulated admin")
}

/// A controller's signing key with an admin's enrollment of it for one table.
pub struct DeviceKey {
    signer: SigningKey,
    enrollment: HeaderEnrollment,
    /// Whether the key derives from a public label (tests), so `rotate_key` may make the
    /// next one.
    simulated: bool,
}

impl std::fmt::Debug for DeviceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DeviceKey(public {}, enrolled by {}{})",
            self.signer.public(),
            self.enrollment.admin,
            if self.simulated { ", simulated" } else { "" }
        )
    }
}

impl DeviceKey {
    /// A real key and its enrollment for `table`'s controller. Refuses an enrollment of
    /// another key, or one whose admin signature does not verify for this table and the
    /// controller: the ledger would refuse every event signed with it.
    pub fn new(
        table: &TableId,
        signer: SigningKey,
        enrollment: HeaderEnrollment,
    ) -> Result<DeviceKey, Error> {
        if enrollment.key != signer.public() {
            return Err(Error::Config(format!(
                "table {table}: the enrollment names key {}, not the device's key {}",
                enrollment.key,
                signer.public()
            )));
        }
        if !enrollment.verifies(table, &controller()) {
            return Err(Error::Config(format!(
                "table {table}: the enrollment's admin signature does not verify for table \
                 {table} and device {CONTROLLER}"
            )));
        }
        Ok(DeviceKey {
            signer,
            enrollment,
            simulated: false,
        })
    }

    /// The key derived from a public label for `table`'s controller (generation `n`),
    /// enrolled by `admin_key()`: unit tests only.
    pub(crate) fn simulated(table: &TableId, n: u32) -> DeviceKey {
        let label = match n {
            0 => format!("device {table}/dealer-terminal"),
            n => format!("device {table}/dealer-terminal, key {n}"),
        };
        let signer = SigningKey::derive_for_simulation(&label);
        let enrollment =
            HeaderEnrollment::sign(&admin_key(), table, &controller(), signer.public());
        DeviceKey {
            signer,
            enrollment,
            simulated: true,
        }
    }

    /// Whether the key derives from a public label.
    pub fn is_simulated(&self) -> bool {
        self.simulated
    }

    /// The key that signs.
    pub(crate) fn signer(&self) -> &SigningKey {
        &self.signer
    }

    /// The admin's enrollment, sent in headers until the chain holds it.
    pub(crate) fn enrollment(&self) -> HeaderEnrollment {
        self.enrollment
    }

    /// The admin key that signed the enrollment.
    pub fn admin(&self) -> PublicKey {
        self.enrollment.admin
    }

    /// The chain's `DeviceEnrolled` event of this key: the same admin signature as the
    /// header's (both sign `attest::enrollment_message`).
    pub(crate) fn enrolled_body(&self, table: &TableId) -> EventBody {
        debug_assert!(
            self.enrollment.verifies(table, &controller()),
            "an enrollment verifies for its table (checked when made)"
        );
        EventBody::DeviceEnrolled {
            device: controller(),
            key: self.enrollment.key,
            admin: self.enrollment.admin,
            signature: self.enrollment.admin_signature,
        }
    }
}

/// The controller's device id.
pub(crate) fn controller() -> DeviceId {
    DeviceId::new(CONTROLLER).expect("the controller's id is valid")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> TableId {
        TableId::new("CSP6-01").unwrap()
    }

    #[test]
    fn a_real_key_needs_its_own_enrollment_for_its_table() {
        let admin = SigningKey::from_secret([7; 32]);
        let device = SigningKey::from_secret([9; 32]);
        let other = SigningKey::from_secret([11; 32]);
        let good = HeaderEnrollment::sign(&admin, &table(), &controller(), device.public());
        assert!(DeviceKey::new(&table(), SigningKey::from_secret([9; 32]), good).is_ok());
        let wrong_key = HeaderEnrollment::sign(&admin, &table(), &controller(), other.public());
        let e = DeviceKey::new(&table(), SigningKey::from_secret([9; 32]), wrong_key);
        assert!(e.unwrap_err().to_string().contains("not the device's key"));
        let elsewhere = TableId::new("MLP3-02").unwrap();
        let wrong_table =
            HeaderEnrollment::sign(&admin, &elsewhere, &controller(), device.public());
        let e = DeviceKey::new(&table(), device, wrong_table);
        assert!(e.unwrap_err().to_string().contains("does not verify"));
    }

    #[test]
    fn a_simulated_key_is_enrolled_by_the_simulated_admin() {
        let k = DeviceKey::simulated(&table(), 0);
        assert!(k.is_simulated());
        assert_eq!(k.admin(), admin_key().public());
        assert_ne!(
            k.signer().public(),
            DeviceKey::simulated(&table(), 1).signer().public()
        );
    }
}
