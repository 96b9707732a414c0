//! What `verify` knows of days removed by retention: each table's removed seq range and
//! the head its seal proves there. The chain is checked on from that head.
//!
//! A removed day counts only if its tier entry holds a removal act that names its seal and
//! verifies under a trusted admin key, and the seal's own signature verifies. Otherwise the
//! day is reported with its problem, and its tables fail where their records are missing.

use super::{TierEntry, TierState};
use crate::error::Error;
use crate::store::{Space, Store};
use schemas::seal::DaySeal;
use schemas::TableId;
use std::collections::BTreeMap;

pub use super::journal::REMOVED_DAYS_MAX;

pub use crate::types::RemovedRange;

/// A day removed by retention, as `verify` finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemovedDay {
    /// The gaming day, YYYY-MM-DD.
    pub day: String,
    /// The admin key that signed the removal act, 64 hex.
    pub admin: String,
    /// Its tables with events, each proven by the seal.
    pub tables: Vec<RemovedRange>,
    /// Why the day's removal does not hold, if it does not.
    pub problem: Option<String>,
}

/// Every removed day of a store, and each table's ranges in seq order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Removed {
    /// The removed days, in day order.
    pub days: Vec<RemovedDay>,
    /// Append calls whose records were all or partly removed: the arrival chain takes
    /// their stored hash as it is (`verify`).
    pub calls_unchecked: u64,
    /// The removal journal against the catalog (`super::journal`).
    pub journal: super::journal::JournalVerdict,
    by_table: BTreeMap<TableId, Vec<RemovedRange>>,
}

impl Removed {
    /// The table's ranges of removals that hold, in seq order.
    pub fn ranges(&self, table: &TableId) -> &[RemovedRange] {
        self.by_table.get(table).map_or(&[], Vec::as_slice)
    }

    /// Whether every removal holds.
    pub fn is_ok(&self) -> bool {
        self.days.iter().all(|d| d.problem.is_none()) && self.journal.problem.is_none()
    }
}

impl crate::owner::Ledger {
    /// The days removed by retention, each table's ranges and whether each removal holds.
    pub fn removed_days(&self) -> Result<Removed, Error> {
        removed_days(self.store.as_ref())
    }

    /// One day's removal by retention and whether it holds (`None`: not removed). Reads
    /// the day's tier entry only, and its seal and the admin keys when it is removed.
    pub fn removed_day(&self, day: &str) -> Result<Option<RemovedDay>, Error> {
        removed_day_of(self.store.as_ref(), day)
    }
}

/// `Ledger::removed_day` on a store: the same judgment `removed_days` gives that day.
pub fn removed_day_of(store: &dyn Store, day: &str) -> Result<Option<RemovedDay>, Error> {
    let Some(v) = store.get(Space::Tier, day.as_bytes())? else {
        return Ok(None);
    };
    let entry = TierEntry::decode(&v)?;
    if entry.state != TierState::Removed {
        return Ok(None);
    }
    let trusted = crate::attest::load_admin_keys(store)?;
    judged(store, &entry, &trusted).map(Some)
}

/// A removed day's entry judged against its seal and the trusted admin keys.
fn judged(
    store: &dyn Store,
    entry: &TierEntry,
    trusted: &std::collections::BTreeSet<schemas::attest::PublicKey>,
) -> Result<RemovedDay, Error> {
    let seal = store
        .get(Space::Seal, entry.day.as_bytes())?
        .map(|v| DaySeal::from_json(&v));
    Ok(match seal {
        Some(Ok(seal)) => removed_day(entry, &seal, trusted),
        Some(Err(e)) => unproven(entry, format!("its seal does not decode: {e}")),
        None => unproven(entry, "it has no seal".into()),
    })
}

/// Reads the tier catalog and the seals of its removed days.
pub fn removed_days(store: &dyn Store) -> Result<Removed, Error> {
    let trusted = crate::attest::load_admin_keys(store)?;
    let mut out = Removed::default();
    for kv in store.range(Space::Tier, &[], None) {
        let entry = TierEntry::decode(&kv?.1)?;
        if entry.state != TierState::Removed {
            continue;
        }
        if out.days.len() == REMOVED_DAYS_MAX {
            return Err(Error::Tier(format!(
                "more than {REMOVED_DAYS_MAX} removed days"
            )));
        }
        let day = judged(store, &entry, &trusted)?;
        if day.problem.is_none() {
            for r in &day.tables {
                out.by_table
                    .entry(r.table.clone())
                    .or_default()
                    .push(r.clone());
            }
        }
        out.days.push(day);
    }
    out.journal = super::journal::check(store)?;
    for ranges in out.by_table.values_mut() {
        ranges.sort_by_key(|r| r.first_seq);
    }
    Ok(out)
}

fn unproven(entry: &TierEntry, problem: String) -> RemovedDay {
    RemovedDay {
        day: entry.day.clone(),
        admin: entry
            .removal
            .as_ref()
            .map_or_else(String::new, |r| r.admin.clone()),
        tables: Vec::new(),
        problem: Some(problem),
    }
}

/// The day's ranges if its seal and removal act hold, else its problem.
fn removed_day(
    entry: &TierEntry,
    seal: &DaySeal,
    trusted: &std::collections::BTreeSet<schemas::attest::PublicKey>,
) -> RemovedDay {
    if let Err(e) = seal.verify(None) {
        return unproven(entry, format!("its seal does not verify: {e}"));
    }
    if entry.seal_digest != seal.digest().to_string() {
        return unproven(entry, "its tier entry names another seal".into());
    }
    if let Some(p) = entry_problem(entry, seal) {
        return unproven(entry, p);
    }
    let signer = entry.removal.as_ref().and_then(|r| r.signer());
    if !signer.is_some_and(|k| trusted.contains(&k)) {
        return unproven(
            entry,
            "the removal act's key is not a trusted admin key".into(),
        );
    }
    for k in &entry.kept {
        let inside = seal
            .table(&k.table)
            .is_some_and(|t| t.events > 0 && (t.first_seq.0..=t.last_seq.0).contains(&k.seq));
        if let Err(e) = crate::store::tier_ref::kept_stored(k) {
            return unproven(entry, format!("a kept event: {e}"));
        }
        if !inside {
            let why = format!(
                "a kept event, table {} seq {}, is not the day's",
                k.table, k.seq
            );
            return unproven(entry, why);
        }
    }
    let mut day = unproven(entry, String::new());
    day.problem = None;
    day.tables = seal
        .tables
        .iter()
        .filter(|t| t.events > 0)
        .map(|t| RemovedRange {
            day: seal.day.clone(),
            table: t.table.clone(),
            first_seq: t.first_seq.0,
            last_seq: t.last_seq.0,
            head_hash: t.head_hash,
        })
        .collect();
    day
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
    if r.act.is_some() && r.act_seal_content() != Some(seal.content_digest().to_string()) {
        return Some("the removal's admin act names other sealed content".into());
    }
    r.signer()
        .is_none()
        .then(|| "the removal act's signature does not verify".into())
}
