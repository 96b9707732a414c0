//! The check of the value log's recovery copies: every put of `store::RECOVERED_SPACES`
//! (quarantine entries, held events, kept checkpoints, day seals) is copied into the value
//! log in the commit's fsynced write, so that commits sled loses give them back
//! (`crate::recover`). Nothing reads a copy until a recovery needs it, so damage to one
//! would go unseen until then; `verify` checks them all.
//!
//! Checked: the log still reaches the end sled's last commit recorded (a cut log falls
//! short); every sled entry of those spaces has its latest copy, with the same bytes; every
//! copy up to that end names an entry sled still holds (held events excepted: they leave
//! the held space when appended). Copies beyond that end are what a crash left: reported
//! by `Store::unreferenced`, not here. Each entry's checksum is checked as it is read; the
//! scan resynchronises past a damaged entry (`valuelog::ValueLog::resync`), so only the
//! copies it held are named as missing.
//!
//! The same scan hands every event record to `crate::logged`, which checks that no event
//! the value log holds whole is missing from its chain (`CopiesReport::logged`).
//!
//! Memory: a 64-byte digest per distinct copied key, bounded by `COPIES_CHECKED_MAX`.

use crate::error::Error;
use crate::logged::{LoggedCheck, LoggedReport};
use crate::record::RECORD_VERSION;
use crate::store::RECOVERED_SPACES;
use crate::store::{decode_put_copy, SledStore, Space, Store, Unreferenced, PUT_COPY_TAG};
use crate::valuelog::Found;
use std::collections::BTreeMap;

/// Most distinct copied keys checked in one pass; beyond it the check says so and fails.
pub const COPIES_CHECKED_MAX: usize = 2_000_000;

/// Problems named in one report at most; the rest are counted.
pub const COPY_PROBLEMS_MAX: usize = 100;

/// The verdict on the recovery copies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopiesReport {
    /// Copies read up to the committed end, per space.
    pub copies: BTreeMap<&'static str, u64>,
    /// Sled entries checked against their copies.
    pub entries_checked: u64,
    /// What does not check, in the order found (at most `COPY_PROBLEMS_MAX`).
    pub problems: Vec<String>,
    /// Problems beyond those named.
    pub problems_more: u64,
    /// Where the scan met bytes that are not a whole entry (at most `COPY_PROBLEMS_MAX`).
    pub torn: Vec<String>,
    /// The value log's event records against the chains, read in the same scan
    /// (`crate::logged`).
    pub logged: LoggedReport,
}

impl CopiesReport {
    /// Whether every entry checked matches its copy.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }

    /// Whether the copies check, and every event the value log holds is in its chain.
    pub fn all_ok(&self) -> bool {
        self.is_ok() && self.logged.is_ok()
    }

    fn problem(&mut self, p: String) {
        if self.problems.len() < COPY_PROBLEMS_MAX {
            self.problems.push(p);
        } else {
            self.problems_more += 1;
        }
    }
}

/// What a space's entries are called in a report.
pub fn space_noun(space: Space) -> &'static str {
    match space {
        Space::Quarantine => "quarantine entry",
        Space::Pending => "held event",
        Space::Checkpoint => "checkpoint",
        Space::Seal => "day seal",
        _ => "entry",
    }
}

/// A key for people: a table key's name and seq, or an id, or hex.
fn key_text(space: Space, key: &[u8]) -> String {
    match space {
        Space::Quarantine | Space::Seal if key.len() == 8 => {
            format!("id {}", crate::record::be_u64(key).unwrap_or(0))
        }
        Space::Seal => String::from_utf8_lossy(key).into_owned(),
        _ => match crate::record::split_table_key(key) {
            Ok((t, rest)) => match crate::record::be_u64(rest) {
                Ok(seq) => format!("table {t} seq {seq}"),
                Err(_) => format!("table {t} key {}", hex::encode(rest)),
            },
            Err(_) => format!("key {}", hex::encode(key)),
        },
    }
}

type Copies = BTreeMap<(Space, Vec<u8>), [u8; 32]>;

/// Checks every recovery copy of `store` against sled (module doc).
pub fn check_copies(store: &SledStore) -> Result<CopiesReport, Error> {
    let mut report = CopiesReport::default();
    let end = store.committed_values_end()?;
    let log_end = store.value_log().end()?.unwrap_or((0, 0));
    if log_end < end {
        report.problem(format!(
            "the value log ends at segment {} offset {}, before the end sled's last commit recorded (segment {} offset {}): its last bytes are gone",
            log_end.0, log_end.1, end.0, end.1
        ));
    }
    let copies = read_copies(store, end, &mut report)?;
    compare(store, copies, &mut report)?;
    Ok(report)
}

/// The latest copy of each key, up to the committed end; torn bytes before it are named.
fn read_copies(
    store: &SledStore,
    end: (u32, u64),
    report: &mut CopiesReport,
) -> Result<Copies, Error> {
    let mut copies = Copies::new();
    let mut logged = LoggedCheck::new(store);
    let mut full = false;
    for found in store.value_log().entries_after(0, 0)? {
        let (p, value) = match found? {
            Found::Entry(p, value) => (p, value),
            // A crash leaves such bytes at a segment's end too: what they hide is named
            // below, as copies missing. Damage inside a segment fails the check.
            Found::Torn { detail, cut } => {
                if !cut {
                    logged.damaged(&detail);
                }
                if report.torn.len() < COPY_PROBLEMS_MAX {
                    report.torn.push(detail);
                }
                continue;
            }
        };
        if value.first() == Some(&RECORD_VERSION) {
            logged.record(&p, &value)?;
            continue;
        }
        if p.end() > end || value.first() != Some(&PUT_COPY_TAG) {
            continue;
        }
        let Ok(Unreferenced::Put { space, key, value }) = decode_put_copy(&value) else {
            report.problem(format!(
                "a copy at segment {} offset {} does not decode",
                p.segment, p.offset
            ));
            continue;
        };
        *report.copies.entry(space_noun(space)).or_default() += 1;
        if copies.len() >= COPIES_CHECKED_MAX && !copies.contains_key(&(space, key.clone())) {
            // Once; the scan goes on for the records.
            if !full {
                report.problem(format!(
                    "more than {COPIES_CHECKED_MAX} copied keys: the rest are not checked"
                ));
            }
            full = true;
            continue;
        }
        copies.insert((space, key), *blake3::hash(&value).as_bytes());
    }
    report.logged = logged.report;
    Ok(copies)
}

/// Every sled entry of the recovered spaces against its copy, then the copies left over.
fn compare(store: &SledStore, mut copies: Copies, report: &mut CopiesReport) -> Result<(), Error> {
    for space in RECOVERED_SPACES {
        for kv in store.range(space, &[], None) {
            let (key, value) = kv?;
            report.entries_checked += 1;
            let what = || format!("{} {}", space_noun(space), key_text(space, &key));
            match copies.remove(&(space, key.clone())) {
                None => report.problem(format!("{}: no recovery copy in the value log", what())),
                Some(h) if h != *blake3::hash(&value).as_bytes() => report.problem(format!(
                    "{}: its recovery copy in the value log differs from sled's entry",
                    what()
                )),
                Some(_) => {}
            }
        }
    }
    let purged_below = crate::purge_mark::load_mark(store)?.below_id;
    let purged = |space: Space, key: &[u8]| {
        space == Space::Quarantine && crate::record::be_u64(key).is_ok_and(|id| id < purged_below)
    };
    for (space, key) in copies.into_keys() {
        // A held event leaves the held space when the gap fills; its copy stays. So does
        // a quarantine entry's when a purge removes it.
        if space != Space::Pending && !purged(space, &key) {
            report.problem(format!(
                "{} {}: a recovery copy names it, sled does not hold it",
                space_noun(space),
                key_text(space, &key)
            ));
        }
    }
    Ok(())
}
