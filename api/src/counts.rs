//! The count room's results entered by finance: `POST /v1/counts` takes a count its
//! counter signed, from a trusted count key (`count_keys` in the access file), and
//! appends it to the `counts.jsonl` journal; `GET /v1/counts` lists the standing counts.
//! Reports read them through the same book (`readside::counts`).
//!
//! Invariants: a count is journaled only after its signature and signer are checked,
//! and after `readside::counts::check_bound` binds it to its table's box;
//! entries are never changed (a recount is a new entry that stands over the earlier one);
//! the book's lock is held across the write, so the book and the journal agree.

use crate::auth::Caller;
use crate::journal::{Journal, JournalError};
use readside::counts::CountBook;
use schemas::attest::PublicKey;
use schemas::count::{CountEntry, SignedCount};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

/// Why a count was refused.
#[derive(Debug, thiserror::Error)]
pub enum CountRefused {
    /// The count fails its checks, or the book refuses it or is full; the text says which.
    #[error("{0}")]
    Invalid(String),
    /// The count is signed by a key not in the access file's `count_keys`.
    #[error("count key {0} is not a trusted count key (count_keys in the access file)")]
    Untrusted(String),
    /// The read model has not yet indexed the table's stored events, so it cannot say
    /// whether the box left the table: try again shortly.
    #[error("{0}")]
    Indexing(String),
    /// The read model that binds a count to its box could not be read.
    #[error("checking the count against its box: {0}")]
    Bound(String),
    /// The counts journal could not be written.
    #[error(transparent)]
    Journal(#[from] JournalError),
}

/// The counts journal and its book.
pub struct Counts {
    journal: Journal,
    book: Mutex<CountBook>,
    /// Trusted count keys and whose they are.
    trusted: std::sync::RwLock<BTreeMap<PublicKey, String>>,
    /// The highest records stream sequence among the entries read at open.
    last_stream_seq: u64,
}

/// One count to record: who entered it, when, and the records stream's seq if any.
pub struct CountRecord {
    /// The count as signed.
    pub signed: SignedCount,
    /// The API caller who entered it (token name).
    pub entered_by: String,
    /// When the server took it, UTC ns.
    pub entered_at_ns: i64,
    /// The records stream's sequence, when it came from the stream.
    pub stream_seq: Option<u64>,
}

impl Counts {
    /// Opens the journal, checking every entry as the book reads it.
    pub fn open(path: &Path, trusted: BTreeMap<PublicKey, String>) -> Result<Counts, JournalError> {
        let mut book = CountBook::default();
        let mut last_stream_seq = 0;
        let journal = Journal::open(path, |n, json| {
            last_stream_seq = last_stream_seq.max(crate::journal::stream_seq_of(json)?);
            book.take_json(n, json)
        })?;
        Ok(Counts {
            journal,
            book: Mutex::new(book),
            trusted: std::sync::RwLock::new(trusted),
            last_stream_seq,
        })
    }

    /// The highest records stream sequence among the entries at open (0: none).
    pub fn last_stream_seq(&self) -> u64 {
        self.last_stream_seq
    }

    /// Replaces the trusted count keys (the access file changed).
    pub fn trust(&self, keys: BTreeMap<PublicKey, String>) {
        *self.trusted.write().unwrap_or_else(|p| p.into_inner()) = keys;
    }

    /// The book (read under its lock).
    pub fn book(&self) -> std::sync::MutexGuard<'_, CountBook> {
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The journal (its failures, for `/metrics` and `/ready`).
    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// Checks `signed`'s signature and that this server trusts its signer: the checks a
    /// node makes before it records a count.
    pub fn check(&self, signed: &SignedCount) -> Result<(), CountRefused> {
        signed
            .check()
            .map_err(|e| CountRefused::Invalid(e.to_string()))?;
        let trusted = self.trusted.read().unwrap_or_else(|p| p.into_inner());
        if !trusted.contains_key(&signed.signer) {
            return Err(CountRefused::Untrusted(signed.signer.to_hex()));
        }
        Ok(())
    }

    /// Checks `signed` and journals it as entered by `who` at `at_ns`, with no records
    /// stream.
    pub fn enter(
        &self,
        signed: SignedCount,
        who: &Caller,
        at_ns: i64,
    ) -> Result<CountEntry, CountRefused> {
        self.check(&signed)?;
        self.record(CountRecord {
            signed,
            entered_by: who.name.clone(),
            entered_at_ns: at_ns,
            stream_seq: None,
        })
    }

    /// Journals a count whose node checked its signer. The signature and the book's
    /// bound are checked again: both depend only on the record and the stream's order.
    pub fn record(&self, r: CountRecord) -> Result<CountEntry, CountRefused> {
        r.signed
            .check()
            .map_err(|e| CountRefused::Invalid(e.to_string()))?;
        let mut book = self.book();
        if book.len() >= readside::counts::COUNTS_MAX {
            let max = readside::counts::COUNTS_MAX;
            return Err(CountRefused::Invalid(format!(
                "the book holds {max} counts, its most"
            )));
        }
        let entry = self.journal.append(|n| CountEntry {
            n,
            signed: r.signed,
            entered_by: r.entered_by,
            entered_at_ns: r.entered_at_ns,
            stream_seq: r.stream_seq,
        })?;
        book.take(entry.clone()).map_err(CountRefused::Invalid)?;
        Ok(entry)
    }
}
