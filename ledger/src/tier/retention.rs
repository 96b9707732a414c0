//! Retention: a day file removed past its legal retention, by an admin's signed act.
//!
//! The act names the day, its seal's digest and its file's BLAKE3, and is signed by a
//! trusted admin key (`Ledger::trust_admin_keys`). It is appended to a journal
//! (`archive/removals.jsonl`, each line naming the BLAKE3 of the one before) and kept in
//! the day's tier entry; then the file is deleted. The seal still proves the day's heads.

use super::{file_name, moves::hash_file, TierEntry, TierState};
use crate::store::{Op, Space};
use crate::{Error, Ledger};
use schemas::attest::{PublicKey, Signature, SigningKey};
use serde::{Deserialize, Serialize};
use std::io::Write;

/// The fewest days a removal may keep a day after its end.
pub const RETENTION_DAYS_MIN: u32 = 1;
/// The most: a century.
pub const RETENTION_DAYS_MAX: u32 = 36_500;
/// How far a removal's signing time may lie from the ledger's clock: one hour.
pub const REMOVAL_SKEW_MAX_NS: i64 = 3_600 * 1_000_000_000;
/// The journal of removals, in the archive directory.
pub const JOURNAL: &str = "removals.jsonl";
const DAY_NS: i64 = 86_400 * 1_000_000_000;
const DOMAIN: &[u8] = b"roundledger/retention-removal/v1\n";

/// A signed removal, kept in the day's tier entry for ever.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Removal {
    pub day: String,
    pub seal_digest: String,
    pub file_blake3: String,
    pub retention_days: u32,
    pub removed_at_ns: i64,
    /// The admin key that signed, 64 hex.
    pub admin: String,
    /// Ed25519 over `message`, 128 hex.
    pub signature: String,
}

impl Removal {
    /// The exact bytes an admin signs.
    pub fn message(&self) -> Vec<u8> {
        let mut m = DOMAIN.to_vec();
        let fields = format!(
            "{}\n{}\n{}\n{}\n{}\n",
            self.day, self.seal_digest, self.file_blake3, self.retention_days, self.removed_at_ns
        );
        m.extend_from_slice(fields.as_bytes());
        m
    }

    /// The removal of the archived `entry`, signed by `admin` at `at_ns`.
    pub fn sign(entry: &TierEntry, retention_days: u32, admin: &SigningKey, at_ns: i64) -> Removal {
        let mut r = Removal {
            day: entry.day.clone(),
            seal_digest: entry.seal_digest.clone(),
            file_blake3: entry.file_blake3.clone(),
            retention_days,
            removed_at_ns: at_ns,
            admin: admin.public().to_hex(),
            signature: String::new(),
        };
        r.signature = admin.sign(&r.message()).to_hex();
        r
    }

    /// The admin key, if the signature verifies under it.
    pub fn signer(&self) -> Option<PublicKey> {
        let key = PublicKey::from_hex(&self.admin).ok()?;
        let sig = Signature::from_hex(&self.signature).ok()?;
        schemas::attest::verify(&key, &self.message(), &sig).then_some(key)
    }
}

fn refuse(day: &str, why: impl std::fmt::Display) -> Error {
    Error::Tier(format!("removal of day {day} refused: {why}"))
}

impl Ledger {
    /// Removes an archived day's file past its retention, by a trusted admin's signed act.
    /// Done again after a crash, it finishes the deletion.
    pub fn retention_remove(&self, removal: &Removal, now_ns: i64) -> Result<TierEntry, Error> {
        let day = removal.day.as_str();
        let mut entry = self
            .tier_entry(day)?
            .ok_or_else(|| refuse(day, "the day is not in the archive tier"))?;
        if entry.state == TierState::Removed {
            self.delete_day_file(day)?;
            return Ok(entry);
        }
        self.check_removal(&entry, removal, now_ns)?;
        self.journal_removal(removal)?;
        entry.state = TierState::Removed;
        entry.removal = Some(removal.clone());
        {
            let _appends = self.lock();
            let op = Op::Put(Space::Tier, day.as_bytes().to_vec(), entry.encode());
            self.store.commit(vec![op])?;
            self.store.flush()?;
        }
        self.delete_day_file(day)?;
        Ok(entry)
    }

    fn check_removal(&self, entry: &TierEntry, r: &Removal, now_ns: i64) -> Result<(), Error> {
        let day = entry.day.as_str();
        if !(RETENTION_DAYS_MIN..=RETENTION_DAYS_MAX).contains(&r.retention_days) {
            return Err(refuse(day, "the retention is out of range"));
        }
        let seal = self
            .day_seal(day)?
            .ok_or_else(|| refuse(day, "the day has no seal"))?;
        let kept_until = seal
            .ends_at_ns
            .saturating_add(i64::from(r.retention_days) * DAY_NS);
        if kept_until > now_ns {
            return Err(refuse(
                day,
                format!("younger than its retention of {} days", r.retention_days),
            ));
        }
        if r.removed_at_ns.abs_diff(now_ns) > REMOVAL_SKEW_MAX_NS as u64 {
            return Err(refuse(day, "the act's signing time is not now"));
        }
        if r.seal_digest != entry.seal_digest || r.file_blake3 != entry.file_blake3 {
            return Err(refuse(day, "the act names another seal or file"));
        }
        match r.signer() {
            Some(k) if self.trusted_admin_keys().contains(&k) => Ok(()),
            Some(_) => Err(refuse(day, "the signing key is not a trusted admin key")),
            None => Err(refuse(day, "the admin signature does not verify")),
        }
    }

    /// Appends the act to the journal, chained to the line before, and fsyncs it.
    fn journal_removal(&self, r: &Removal) -> Result<(), Error> {
        let dir = self
            .store
            .tier_dir()
            .ok_or_else(|| refuse(&r.day, "no tier"))?;
        let path = dir.join(JOURNAL);
        let prev = if path.exists() {
            let text = std::fs::read_to_string(&path)?;
            let last = text.lines().last().unwrap_or_default();
            blake3::hash(last.as_bytes()).to_hex().to_string()
        } else {
            "0".repeat(64)
        };
        let line = serde_json::json!({ "prev": prev, "removal": r }).to_string();
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        f.write_all(format!("{line}\n").as_bytes())?;
        f.sync_all()?;
        Ok(())
    }

    fn delete_day_file(&self, day: &str) -> Result<(), Error> {
        self.store.forget_tier();
        let Some(dir) = self.store.tier_dir() else {
            return Ok(());
        };
        let path = dir.join(file_name(day));
        if path.exists() {
            std::fs::remove_file(&path)?;
            std::fs::File::open(&dir)?.sync_all()?;
        }
        Ok(())
    }

    /// Whether the day's file still hashes to what its tier entry says.
    pub fn day_file_intact(&self, day: &str) -> Result<bool, Error> {
        let (Some(entry), Some(dir)) = (self.tier_entry(day)?, self.store.tier_dir()) else {
            return Ok(false);
        };
        let path = dir.join(&entry.file);
        Ok(path.exists() && hash_file(&path)? == entry.file_blake3)
    }
}

/// What is wrong with a removed day's entry against its seal, if anything: the act must
/// name the seal and verify under its admin key.
pub fn entry_problem(entry: &TierEntry, seal: &schemas::seal::DaySeal) -> Option<String> {
    let Some(r) = &entry.removal else {
        return Some("removed by retention without a signed act".into());
    };
    if r.seal_digest != seal.digest().to_string() || r.day != seal.day {
        return Some("the removal act names another seal".into());
    }
    r.signer()
        .is_none()
        .then(|| "the removal act's signature does not verify".into())
}
