//! Simulated tables' real device keys: `simulate --device-keys DIR` reads, for each table,
//! `DIR/<table>.key` (the device's own key, `roundledger keygen`) and
//! `DIR/<table>.enrollment` (an admin's signature of its enrollment, `roundledger
//! enroll --device dealer-terminal`). The admin's secret is never in DIR. `demo` makes the
//! same files by the same steps, with a fresh admin key of its own.

use anyhow::{Context, Result};
use schemas::attest::SigningKey;
use schemas::provenance::HeaderEnrollment;
use schemas::TableId;
use std::path::{Path, PathBuf};

/// The device key file of `table` in `dir`.
pub fn key_path(dir: &Path, table: &TableId) -> PathBuf {
    dir.join(format!("{table}.key"))
}

/// The enrollment file of `table` in `dir`.
pub fn enrollment_path(dir: &Path, table: &TableId) -> PathBuf {
    dir.join(format!("{table}.enrollment"))
}

/// `table`'s controller key and its enrollment from `dir`, each checked: the enrollment
/// names the key, and its admin signature verifies for the table and the controller.
pub fn load(dir: &Path, table: &TableId) -> Result<simulator::DeviceKey> {
    let (key, enrollment) = (key_path(dir, table), enrollment_path(dir, table));
    let how = format!(
        "make them with `roundledger keygen --out {}` and `roundledger enroll --admin-key \
         ADMIN.key --table {table} --device {} --device-key PUBLIC > {}` (README)",
        key.display(),
        simulator::CONTROLLER,
        enrollment.display()
    );
    anyhow::ensure!(
        key.exists() && enrollment.exists(),
        "table {table}: no device key ({}) or enrollment ({}); {how}",
        key.display(),
        enrollment.display()
    );
    let signer = crate::keygen::read_signing_key(&key)?;
    let text = std::fs::read_to_string(&enrollment)
        .with_context(|| format!("reading {}", enrollment.display()))?;
    let header = HeaderEnrollment::from_header(&text)
        .map_err(|e| anyhow::anyhow!("{}: {e}", enrollment.display()))?;
    simulator::DeviceKey::new(table, signer, header)
        .with_context(|| format!("{} and {}", key.display(), enrollment.display()))
}

/// Gives every table of `floor` its device key from `dir`.
pub fn attach(floor: simulator::Floor, dir: &Path) -> Result<simulator::Floor> {
    let tables = floor
        .tables
        .into_iter()
        .map(|t| {
            let key = load(dir, t.table())?;
            Ok(t.with_device_key(key)?)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(simulator::Floor { tables })
}

/// What an operator does for one table, in one step: a new device key in `dir` and
/// `admin`'s enrollment of it beside it (the admin's secret stays out of `dir`).
pub fn make(dir: &Path, admin: &SigningKey, table: &TableId) -> Result<()> {
    let device = crate::keygen::write_new_key(&key_path(dir, table))?;
    let controller = schemas::DeviceId::new(simulator::CONTROLLER)
        .map_err(|e| anyhow::anyhow!("the controller's id: {e}"))?;
    let e = HeaderEnrollment::sign(admin, table, &controller, device.public());
    let path = enrollment_path(dir, table);
    crate::tokens::write_private(&path, format!("{}\n", e.to_header()).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_keys_load_and_a_wrong_enrollment_is_named() {
        let d = tempfile::tempdir().unwrap();
        let admin = SigningKey::from_secret([3; 32]);
        let (a, b) = (
            TableId::new("CSP6-01").unwrap(),
            TableId::new("MLP3-02").unwrap(),
        );
        make(d.path(), &admin, &a).unwrap();
        make(d.path(), &admin, &b).unwrap();
        let k = load(d.path(), &a).unwrap();
        assert_eq!(k.admin(), admin.public());
        assert!(!k.is_simulated());
        // Another table's enrollment beside this table's key: refused, with both files.
        std::fs::copy(enrollment_path(d.path(), &b), enrollment_path(d.path(), &a)).unwrap();
        let e = format!("{:#}", load(d.path(), &a).unwrap_err());
        assert!(e.contains("CSP6-01.enrollment"), "{e}");
        let missing = TableId::new("SSP4-03").unwrap();
        let e = format!("{:#}", load(d.path(), &missing).unwrap_err());
        assert!(e.contains("roundledger keygen"), "{e}");
    }
}
