//! Retention: a day file removed past its legal retention, by an admin's signed act.
//!
//! The act names the day, its seal's digest and its file's BLAKE3, and is signed by a
//! trusted admin key (`Writer::trust_admin_keys`). It is appended to a journal
//! (`super::journal`, each line numbered and naming the BLAKE3 of the one before) and
//! kept in the day's tier entry; then the file is deleted. The seal still proves the
//! day's heads. A crash after the journal line, before the commit, is finished by the
//! next removal of the day, with the journaled act.

pub use crate::store::tier_ref::Removal;

use super::{file_name, moves::hash_file, TierEntry, TierState};
use crate::faces::Tier;
use crate::store::{Op, Space};
use crate::{error::Error, owner::Ledger};

/// The fewest days a removal may keep a day after its end.
pub const RETENTION_DAYS_MIN: u32 = 1;
/// The most: a century.
pub const RETENTION_DAYS_MAX: u32 = 36_500;
/// How far a removal's signing time may lie from the ledger's clock: one hour.
pub const REMOVAL_SKEW_MAX_NS: i64 = 3_600 * 1_000_000_000;
pub use super::journal::JOURNAL;
/// `Space::Meta` key of the count of days removed by retention (u64 BE). It grows in the
/// removal's own commit, so a reader tells a removal since it last looked by one read.
pub const REMOVALS_KEY: &[u8] = b"tier/removals";
const DAY_NS: i64 = 86_400 * 1_000_000_000;

fn refuse(day: &str, why: impl std::fmt::Display) -> Error {
    Error::Tier(format!("removal of day {day} refused: {why}"))
}

impl Ledger {
    fn check_removal(&self, entry: &TierEntry, r: &Removal, now_ns: i64) -> Result<(), Error> {
        let day = entry.day.as_str();
        if !(RETENTION_DAYS_MIN..=RETENTION_DAYS_MAX).contains(&r.retention_days) {
            return Err(refuse(day, "the retention is out of range"));
        }
        let seal = self
            .reader()
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
            Some(k) if self.reader().trusted_admin_keys().contains(&k) => Ok(()),
            Some(_) => Err(refuse(day, "the signing key is not a trusted admin key")),
            None => Err(refuse(day, "the admin signature does not verify")),
        }
    }

    /// Whether a journaled act still removes `entry`: it names its seal and file and
    /// verifies under a trusted admin key.
    fn journaled_act_holds(&self, entry: &TierEntry, r: &Removal) -> bool {
        let trusted = r
            .signer()
            .is_some_and(|k| self.reader().trusted_admin_keys().contains(&k));
        trusted && r.seal_digest == entry.seal_digest && r.file_blake3 == entry.file_blake3
    }

    /// Deletes the day's Parquet files (`<day>.<name>.parquet`, crate `dayparquet`) kept
    /// beside its day file: retention removes a day's derived copies with its events.
    /// Returns how many it deleted; none is there a second time.
    pub(crate) fn delete_day_parquet(&self, day: &str) -> Result<usize, Error> {
        let Some(dir) = self.store.tier_dir() else {
            return Ok(0);
        };
        let prefix = format!("{day}.");
        let mut deleted = 0;
        let entries = match std::fs::read_dir(&dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            r => r?,
        };
        for entry in entries {
            let name = entry?.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(&prefix) && name.ends_with(".parquet") {
                std::fs::remove_file(dir.join(name.as_ref()))?;
                deleted += 1;
            }
        }
        if deleted > 0 {
            std::fs::File::open(&dir)?.sync_all()?;
        }
        Ok(deleted)
    }

    fn delete_day_file(&self, day: &str) -> Result<(), Error> {
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
}

/// The count under `REMOVALS_KEY`; 0 before the first removal.
fn removals_of(store: &dyn crate::store::Store) -> Result<u64, Error> {
    let Some(v) = store.get(Space::Meta, REMOVALS_KEY)? else {
        return Ok(0);
    };
    let bytes: [u8; 8] = v
        .as_slice()
        .try_into()
        .map_err(|_| crate::record::corrupt("the count of removed days"))?;
    Ok(u64::from_be_bytes(bytes))
}

impl Tier<'_> {
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
        let dir = self
            .store
            .tier_dir()
            .ok_or_else(|| refuse(day, "no tier"))?;
        // A removal journaled before a crash cut its commit short: finish it.
        let act = match super::journal::last_act(&dir)? {
            Some(act) if act.day == day && self.journaled_act_holds(&entry, &act) => act,
            _ => {
                self.check_removal(&entry, removal, now_ns)?;
                super::journal::append(&dir, removal)?;
                removal.clone()
            }
        };
        let seal = self
            .reader()
            .day_seal(day)?
            .ok_or_else(|| refuse(day, "the day has no seal"))?;
        entry.kept = self.events_to_keep(&seal)?;
        entry.state = TierState::Removed;
        entry.removal = Some(act);
        {
            let _appends = self.lock();
            let removals = removals_of(self.store.as_ref())?;
            let ops = vec![
                Op::Put(Space::Tier, day.as_bytes().to_vec(), entry.encode()),
                Op::Put(
                    Space::Meta,
                    REMOVALS_KEY.to_vec(),
                    (removals + 1).to_be_bytes().to_vec(),
                ),
            ];
            // No read after this commit is served the day from a cache.
            self.store.commit_forgetting_tier(ops)?;
            self.store.flush()?;
        }
        self.delete_day_file(day)?;
        Ok(entry)
    }

    /// How many days retention removed from this ledger, ever: one read of `Space::Meta`.
    /// The read model compares it with the count it was built at.
    pub fn removals(&self) -> Result<u64, Error> {
        removals_of(self.store.as_ref())
    }

    /// The removal journal held against the tier catalog (`super::journal::check`).
    pub fn removal_journal(&self) -> Result<super::journal::JournalVerdict, Error> {
        super::journal::check(self.store.as_ref())
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
