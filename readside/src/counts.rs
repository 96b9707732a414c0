//! The count room's results, read from the API's `counts.jsonl` journal: the one parse of
//! its entries, shared by the server (which appends them) and the CLI's offline reports.
//! A box may be counted again; the latest count stands and the earlier ones stay listed.
//!
//! Invariants: every entry's signature verifies (`SignedCount::check`), or the book refuses
//! the journal at that line; memory is one entry per count (`COUNTS_MAX` in all).

use crate::ReadError;
use proofs::journal::COUNTS_FILE;
use schemas::count::{CountEntry, CountResult};
use schemas::TableId;
use std::collections::BTreeMap;
use std::path::Path;

/// Most count entries one book holds: a 100-table floor counting three boxes a day for
/// ten years.
pub const COUNTS_MAX: usize = 1_100_000;

/// The counts by drop box.
#[derive(Debug, Default)]
pub struct CountBook {
    /// Drop box id -> its entries in journal order; the last stands.
    by_box: BTreeMap<String, Vec<CountEntry>>,
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
        let id = e.signed.count.drop_box_id.clone();
        self.by_box.entry(id).or_default().push(e);
        Ok(())
    }

    /// The standing count of a drop box, and how many counts it had.
    pub fn standing(&self, drop_box_id: &str) -> Option<(&CountEntry, usize)> {
        let all = self.by_box.get(drop_box_id)?;
        all.last().map(|e| (e, all.len()))
    }

    /// The standing counts of the given boxes (those counted), for a report.
    pub fn results<'a>(&self, boxes: impl IntoIterator<Item = &'a str>) -> Vec<CountResult> {
        boxes
            .into_iter()
            .filter_map(|b| self.standing(b))
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
