//! The count room's results, read from the API's `counts.jsonl` journal: the one parse of
//! its entries, shared by the server (which appends them) and the CLI's offline reports.
//! A box may be counted again; the latest count stands and the earlier ones stay listed.
//!
//! A count is bound to what it counts (`check_bound`): a box the table's events removed
//! from that table, counted after that and not in the future. A second count of a box is
//! a recount: both stay in the journal with their signers, and the later stands.
//!
//! Invariants: every entry's signature verifies (`SignedCount::check`), or the book refuses
//! the journal at that line; memory is one entry per count (`COUNTS_MAX` in all).

use crate::model::Model;
use crate::ReadError;
use proofs::journal::COUNTS_FILE;
use schemas::count::{CountEntry, CountResult};
use schemas::TableId;
use std::collections::BTreeMap;
use std::path::Path;

/// Most count entries one book holds: a 100-table floor counting three boxes a day for
/// ten years.
pub const COUNTS_MAX: usize = 1_100_000;

/// Longest a count may follow its box's removal: a month.
pub const COUNT_AFTER_REMOVAL_MAX_NS: i64 = 31 * DAY_NS;
const DAY_NS: i64 = 86_400_000_000_000;

/// Checks that `c` counts a box its table's events removed (`drop_box_removed` on
/// `c.table`, within `COUNT_AFTER_REMOVAL_MAX_NS` before it), counted after the removal
/// and not after `now_ns` by more than `skew_max_ns`: the ledger's clock skew limit, as
/// far as a device clock (and so a removal's time) may run ahead. The error names the
/// rule broken. Blocking: sled.
pub fn check_bound(
    model: &Model,
    c: &CountResult,
    (now_ns, skew_max_ns): (i64, i64),
) -> Result<(), BoundError> {
    let at = c.counted_at_ns;
    if at > now_ns.saturating_add(skew_max_ns) {
        return Err(BoundError::Refused(format!(
            "count-in-future: box {} counted at {at} ns, more than {skew_max_ns} ns after now ({now_ns} ns)",
            c.drop_box_id
        )));
    }
    let from = at.saturating_sub(COUNT_AFTER_REMOVAL_MAX_NS + DAY_NS);
    let rows = model.shift_rows(from, at.saturating_add(DAY_NS))?;
    let removals = rows.iter().flat_map(|r| {
        let table = r.table.as_ref();
        r.drop_boxes.iter().map(move |b| (table, b))
    });
    let mut elsewhere = None;
    for (table, b) in removals.filter(|(_, b)| b.drop_box_id == c.drop_box_id) {
        if table != Some(&c.table) {
            elsewhere = table.cloned();
            continue;
        }
        if at < b.at_ns {
            return Err(BoundError::Refused(format!(
                "count-before-removal: box {} counted at {at} ns, before it left table {} at {} ns (seq {})",
                c.drop_box_id, c.table, b.at_ns, b.seq.0
            )));
        }
        return Ok(());
    }
    let other = elsewhere.map_or(String::new(), |t| format!("; it left table {t}"));
    Err(BoundError::Refused(format!(
        "box-not-on-table: no drop_box_removed of box {} on table {} in the month before the count{other}",
        c.drop_box_id, c.table
    )))
}

/// Why `check_bound` refused a count.
#[derive(Debug, thiserror::Error)]
pub enum BoundError {
    /// The count breaks a rule; the text names it.
    #[error("{0}")]
    Refused(String),
    /// The read model could not be read.
    #[error(transparent)]
    Model(#[from] crate::model::ModelError),
}

/// The counts by table and drop box: a count naming another table never stands over
/// that table's count of the box.
#[derive(Debug, Default)]
pub struct CountBook {
    /// (table, drop box id) -> its entries in journal order; the last stands.
    by_box: BTreeMap<(TableId, String), Vec<CountEntry>>,
    entries: usize,
}

impl CountBook {
    /// Reads `counts.jsonl` in the API directory `dir` (none: an empty book).
    pub fn read(dir: &Path) -> Result<CountBook, ReadError> {
        let mut book = CountBook::default();
        let state = ledger::journals::read_journal_with(dir, COUNTS_FILE, None, |n, json| {
            book.take_json(n, json)
        })?;
        if let Some((line, why)) = state.problem {
            return Err(ReadError::Integrity(format!(
                "{COUNTS_FILE} line {line}: {why}"
            )));
        }
        Ok(book)
    }

    /// Parses and checks one journal entry and takes it.
    pub fn take_json(&mut self, n: u64, json: &str) -> Result<(), String> {
        let e: CountEntry = serde_json::from_str(json).map_err(|e| e.to_string())?;
        if e.n != n {
            return Err(format!("entry says line {}, stored at line {n}", e.n));
        }
        e.signed.check().map_err(|e| e.to_string())?;
        self.take(e)
    }

    /// Takes a checked entry.
    pub fn take(&mut self, e: CountEntry) -> Result<(), String> {
        if self.entries >= COUNTS_MAX {
            return Err(format!("more than {COUNTS_MAX} counts"));
        }
        self.entries += 1;
        let c = &e.signed.count;
        let key = (c.table.clone(), c.drop_box_id.clone());
        self.by_box.entry(key).or_default().push(e);
        Ok(())
    }

    /// The standing count of `table`'s drop box, and how many counts it had.
    pub fn standing(&self, table: &TableId, drop_box_id: &str) -> Option<(&CountEntry, usize)> {
        let all = self.by_box.get(&(table.clone(), drop_box_id.to_string()))?;
        all.last().map(|e| (e, all.len()))
    }

    /// Every count of a drop box in journal order: a recount after the count it follows.
    pub fn history(&self, table: &TableId, drop_box_id: &str) -> &[CountEntry] {
        let key = (table.clone(), drop_box_id.to_string());
        self.by_box.get(&key).map_or(&[], Vec::as_slice)
    }

    /// The standing counts of the given (table, box) pairs (those counted), for a report.
    pub fn results<'a>(
        &self,
        boxes: impl IntoIterator<Item = &'a (TableId, String)>,
    ) -> Vec<CountResult> {
        boxes
            .into_iter()
            .filter_map(|(t, b)| self.standing(t, b))
            .map(|(e, _)| e.signed.count.clone())
            .collect()
    }

    /// Every standing count of a table (or all tables), newest line first, at most `limit`.
    pub fn list(&self, table: Option<&TableId>, limit: usize) -> Vec<CountEntry> {
        let mut out: Vec<&CountEntry> = self
            .by_box
            .values()
            .filter_map(|all| all.last())
            .filter(|e| table.is_none_or(|t| &e.signed.count.table == t))
            .collect();
        out.sort_by_key(|e| std::cmp::Reverse(e.n));
        out.into_iter().take(limit).cloned().collect()
    }

    /// Entries held, recounts included.
    pub fn len(&self) -> usize {
        self.entries
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }
}
