//! What `readmodel check` compares: a model's rows against a fresh rebuild's, less what
//! depends on when or in what order rounds were indexed.
//!
//! - Cursors, the edge book and hold watches are the indexer's own progress: skipped.
//! - Alarms judged against the whole floor (`dealer_errors`) or once a price lands
//!   (`hold_outside`) are raised at a round that depends on indexing order and pricing
//!   time. They are compared by what they name (the dealer; the table and shift), not by
//!   the round that raised them. A dealer row is compared with its alarm's place left out.
//!
//! Everything else must be equal byte for byte.

use crate::dealers::DealerRow;
use crate::model::{decode, signal_row, space, ModelError};
use crate::signals::SignalRow;
use schemas::api::AlertKind;
use std::cell::RefCell;
use std::collections::BTreeSet;

/// What one stored entry is for the comparison.
pub(crate) enum Part {
    /// Not compared.
    Skip,
    /// Compared by key, with these bytes.
    Compare(Vec<u8>),
    /// Compared by what it names.
    Alarm(String),
}

/// Names of alarms whose raising round depends on indexing order or pricing time.
fn ordered_alarm(row: &SignalRow) -> Option<String> {
    let kind = row.kind.as_str();
    if kind == AlertKind::DealerErrors.as_str() {
        return Some(format!("{kind}: {}", row.subject));
    }
    if kind == AlertKind::HoldOutside.as_str() {
        return Some(format!("{kind}: {} {}", row.table, row.subject));
    }
    None
}

/// The part an entry plays in the comparison.
pub(crate) fn part(k: &[u8], v: &[u8]) -> Result<Part, ModelError> {
    match k.first().copied() {
        Some(space::CURSOR) | Some(space::EDGE) | Some(space::HOLD_WATCH) => Ok(Part::Skip),
        Some(space::SIGNAL) => {
            let row = signal_row(k, v)?;
            Ok(ordered_alarm(&row).map_or_else(|| Part::Compare(v.to_vec()), Part::Alarm))
        }
        Some(space::DEALER) => {
            let mut row: DealerRow = decode(k, v)?;
            let alarmed = row.alarmed_at.take().is_some();
            let mut bytes = serde_json::to_vec(&row)
                .map_err(|e| ModelError::Corrupt(format!("a dealer row: {e}")))?;
            bytes.push(u8::from(alarmed));
            Ok(Part::Compare(bytes))
        }
        _ => Ok(Part::Compare(v.to_vec())),
    }
}

/// The entries compared by key, in key order; alarms go into `alarms`.
pub(crate) fn rows<'a>(
    entries: impl Iterator<Item = crate::kv::EntryResult> + 'a,
    alarms: &'a RefCell<BTreeSet<String>>,
) -> impl Iterator<Item = Result<(Vec<u8>, Vec<u8>), ModelError>> + 'a {
    entries.filter_map(move |kv| {
        let (k, v) = match kv {
            Ok(kv) => kv,
            Err(e) => return Some(Err(e.into())),
        };
        match part(&k, &v) {
            Ok(Part::Skip) => None,
            Ok(Part::Compare(bytes)) => Some(Ok((k, bytes))),
            Ok(Part::Alarm(name)) => {
                alarms.borrow_mut().insert(name);
                None
            }
            Err(e) => Some(Err(e)),
        }
    })
}

/// The alarms one side names and the other does not.
pub(crate) fn alarm_differences(mine: &BTreeSet<String>, fresh: &BTreeSet<String>) -> Vec<String> {
    let extra = mine
        .difference(fresh)
        .map(|a| format!("alarm {a}: not in a fresh rebuild"));
    let missing = fresh
        .difference(mine)
        .map(|a| format!("alarm {a}: missing (a fresh rebuild has it)"));
    extra.chain(missing).collect()
}
