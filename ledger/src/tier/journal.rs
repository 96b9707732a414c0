//! The removal journal, `archive/removals.jsonl`: one line per retention removal, in the
//! order they were made. Each line is `{"n":N,"prev":HEX,"removal":{..}}`: `n` counts from
//! 1, `prev` is the BLAKE3 of the line before (64 zeros for the first).
//!
//! `check` holds the journal against the tier catalog: every line numbered and chained,
//! its act signed by a trusted admin key and naming its day's seal, and every removed day
//! journaled exactly once. An altered, reordered or missing line is named by its number.

use super::{TierEntry, TierState};
use crate::error::Error;
use crate::store::tier_ref::Removal;
use crate::store::{Space, Store};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// The journal's file name, in the archive directory.
pub const JOURNAL: &str = "removals.jsonl";
/// Most removed days `verify` holds in memory: a century of gaming days.
pub const REMOVED_DAYS_MAX: usize = 36_600;
/// Most lines a journal holds: one per removed day.
pub const LINES_MAX: u64 = REMOVED_DAYS_MAX as u64;
/// Longest line: an act is a few hundred bytes; one that came as an admin act holds its
/// message in hex, at most about 8.5 KiB (`schemas::admin::ADMIN_BODY_LEN_MAX`).
pub const LINE_BYTES_MAX: usize = 16_384;
const FIRST_PREV: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// One journal line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Line {
    /// The line's number, from 1.
    pub n: u64,
    /// BLAKE3 of the line before, lowercase hex; zeros on line 1.
    pub prev: String,
    /// The signed removal act.
    pub removal: Removal,
}

/// What `check` finds of the journal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JournalVerdict {
    /// Lines that hold.
    pub lines: u64,
    /// BLAKE3 of the last line, lowercase hex.
    pub head: Option<String>,
    /// The first line that does not hold (1-based), and why.
    pub problem: Option<(u64, String)>,
}

fn hash_line(line: &str) -> String {
    blake3::hash(line.as_bytes()).to_hex().to_string()
}

/// The journal's text, empty when there is none yet.
fn read(dir: &Path) -> Result<String, Error> {
    match std::fs::read_to_string(dir.join(JOURNAL)) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e.into()),
    }
}

/// The last line's act, if it parses: a removal journaled before a crash kept its commit.
pub(crate) fn last_act(dir: &Path) -> Result<Option<Removal>, Error> {
    let text = read(dir)?;
    let last = text.lines().last().unwrap_or_default();
    Ok(serde_json::from_str::<Line>(last).ok().map(|l| l.removal))
}

/// Appends `removal` as the next line, numbered and chained, and fsyncs it.
pub(crate) fn append(dir: &Path, removal: &Removal) -> Result<(), Error> {
    let text = read(dir)?;
    let (n, prev) = match text.lines().last() {
        None => (1, FIRST_PREV.to_string()),
        Some(last) => {
            let parsed: Line = serde_json::from_str(last).map_err(|e| {
                Error::Tier(format!(
                    "the removal journal's last line does not parse: {e}"
                ))
            })?;
            (parsed.n + 1, hash_line(last))
        }
    };
    if n > LINES_MAX {
        return Err(Error::Tier(format!(
            "the removal journal holds {LINES_MAX} lines"
        )));
    }
    let line = Line {
        n,
        prev,
        removal: removal.clone(),
    };
    let text = serde_json::to_string(&line).expect("a journal line serializes");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(JOURNAL))?;
    f.write_all(format!("{text}\n").as_bytes())?;
    f.sync_all()?;
    Ok(())
}

/// Holds the journal against the store's tier catalog and seals.
pub fn check(store: &dyn Store) -> Result<JournalVerdict, Error> {
    let Some(dir) = store.tier_dir() else {
        return Ok(JournalVerdict::default());
    };
    let mut removed: BTreeMap<String, TierEntry> = BTreeMap::new();
    for kv in store.range(Space::Tier, &[], None) {
        let e = TierEntry::decode(&kv?.1)?;
        if e.state == TierState::Removed {
            removed.insert(e.day.clone(), e);
        }
    }
    let trusted = crate::attest::load_admin_keys(store)?;
    let text = read(&dir)?;
    let mut v = JournalVerdict::default();
    let mut prev = FIRST_PREV.to_string();
    for (i, raw) in text.split_inclusive('\n').enumerate() {
        let at = i as u64 + 1;
        let fail = |why: String| Ok(Some((at, why)));
        let problem = match raw.strip_suffix('\n') {
            None => fail("the line is cut short (no line end)".into()),
            Some(line) => check_line(store, line, at, &prev, &trusted, &mut removed),
        }?;
        if let Some(p) = problem {
            v.problem = Some(p);
            return Ok(v);
        }
        prev = hash_line(raw.trim_end_matches('\n'));
        v.lines = at;
        v.head = Some(prev.clone());
    }
    if let Some(day) = removed.keys().next() {
        let why = format!("day {day} is removed but not journaled: lines are missing");
        v.problem = Some((v.lines + 1, why));
    }
    Ok(v)
}

/// One line: `Some(problem)` if it does not hold. Takes its day out of `removed`.
fn check_line(
    store: &dyn Store,
    line: &str,
    at: u64,
    prev: &str,
    trusted: &std::collections::BTreeSet<schemas::attest::PublicKey>,
    removed: &mut BTreeMap<String, TierEntry>,
) -> Result<Option<(u64, String)>, Error> {
    let fail = |why: String| Ok(Some((at, why)));
    if line.len() > LINE_BYTES_MAX || at > LINES_MAX {
        return fail("the line is longer than any act, or one line too many".into());
    }
    let l: Line = match serde_json::from_str(line) {
        Ok(l) => l,
        Err(e) => return fail(format!("the line does not parse: {e}")),
    };
    if l.n != at {
        return fail(format!(
            "the line is numbered {}: lines were reordered or removed",
            l.n
        ));
    }
    if l.prev != prev {
        return fail("its prev is not the BLAKE3 of the line before: a line was altered".into());
    }
    let r = &l.removal;
    match r.signer() {
        None => {
            return fail(format!(
                "day {}: the act's signature does not verify",
                r.day
            ))
        }
        Some(k) if !trusted.contains(&k) => {
            return fail(format!(
                "day {}: the act's key is not a trusted admin key",
                r.day
            ))
        }
        Some(_) => {}
    }
    let seal = store
        .get(Space::Seal, r.day.as_bytes())?
        .map(|v| schemas::seal::DaySeal::from_json(&v));
    let Some(Ok(seal)) = seal else {
        return fail(format!("day {}: no seal to match", r.day));
    };
    if seal.digest().to_string() != r.seal_digest {
        return fail(format!("day {}: the act names another seal", r.day));
    }
    match removed.remove(&r.day) {
        Some(e) if e.removal.as_ref() == Some(r) => Ok(None),
        Some(_) => fail(format!("day {}: the catalog keeps another act", r.day)),
        None => fail(format!(
            "day {}: not removed in the catalog, or journaled twice",
            r.day
        )),
    }
}
