//! The API's journals read for `verify` and `digest`, by the same line check the server
//! opens them with (`proofs::journal`), without the api crate: each journal's chain, its
//! head (lines and last hash), and its hash after a given count of lines, for the check
//! against a digest that named it (`proofs::digest::check_journals`).
//!
//! Reads only: an unfinished last line (what a crash leaves, which the server cuts at its
//! next start) is counted, not cut. A journal file that does not exist has no lines. One
//! line at a time in memory, bounded by `JOURNAL_LINE_LEN_MAX`.

use crate::error::Error;
use proofs::digest::{JournalAnchor, JournalNow};
use proofs::journal::{JournalChain, JOURNAL_FILES, JOURNAL_LINE_LEN_MAX};
use schemas::Hash32;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// The API's directory of a ledger directory: `<ledger>/api` (the server's default).
pub fn api_dir(ledger_dir: &Path) -> PathBuf {
    ledger_dir.join("api")
}

/// One journal as read now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalState {
    /// The journal's file name in the API directory.
    pub name: String,
    /// Whether the file exists.
    pub present: bool,
    /// Lines that chain, and the hash of the last of them.
    pub chain: JournalChain,
    /// Bytes after the last newline (an unfinished line), if any.
    pub torn_tail_bytes: u64,
    /// The first line that does not chain, and why.
    pub problem: Option<(u64, String)>,
    /// The chain's hash after `at` lines, when asked and the journal holds that many.
    pub hash_at: Option<Hash32>,
}

impl JournalState {
    /// Its head as a digest names it.
    pub fn anchor(&self) -> JournalAnchor {
        JournalAnchor {
            name: self.name.clone(),
            entries: self.chain.lines,
            hash: self.chain.head_hash(),
        }
    }

    /// The input of the check against a digest.
    pub fn now(&self) -> JournalNow {
        JournalNow {
            name: self.name.clone(),
            entries: self.chain.lines,
            hash_at_digest_entries: self.hash_at,
            chain_problem: self.problem.clone(),
        }
    }
}

/// Reads the journal `name` in `dir`; `at`: also the hash after that many lines.
pub fn read_journal(dir: &Path, name: &str, at: Option<u64>) -> Result<JournalState, Error> {
    read_journal_with(dir, name, at, |_, _| Ok(()))
}

/// `read_journal`, handing each entry that chains to `visit` (its line number and JSON).
/// A visit's `Err` is the journal's problem at that line, and reading stops there.
pub fn read_journal_with(
    dir: &Path,
    name: &str,
    at: Option<u64>,
    mut visit: impl FnMut(u64, &str) -> Result<(), String>,
) -> Result<JournalState, Error> {
    let path = dir.join(name);
    let mut state = JournalState {
        name: name.to_string(),
        present: false,
        chain: JournalChain::default(),
        torn_tail_bytes: 0,
        problem: None,
        hash_at: (at == Some(0)).then_some(Hash32::ZERO),
    };
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(state),
        Err(e) => return Err(io_error(&path, e)),
    };
    state.present = true;
    let mut reader = BufReader::new(file);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let limit = JOURNAL_LINE_LEN_MAX as u64 + 2;
        let n = (&mut reader)
            .take(limit)
            .read_until(b'\n', &mut buf)
            .map_err(|e| io_error(&path, e))?;
        if n == 0 {
            break;
        }
        if buf.last() != Some(&b'\n') && (n as u64) < limit {
            state.torn_tail_bytes = n as u64;
            break;
        }
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let visited = match state.chain.push(line) {
            Ok(l) => visit(l.n, &l.entry).map_err(|e| (l.n, e)),
            Err(e) => Err((state.chain.lines + 1, e)),
        };
        if let Err(problem) = visited {
            state.problem = Some(problem);
            break;
        }
        if at == Some(state.chain.lines) {
            state.hash_at = Some(state.chain.head_hash());
        }
    }
    Ok(state)
}

/// Every journal a digest names (`JOURNAL_FILES`) in the API's directory `dir`, with the
/// hash after the count of lines `digest_entries` gives for it.
pub fn read_journals(
    dir: &Path,
    digest_entries: impl Fn(&str) -> Option<u64>,
) -> Result<Vec<JournalState>, Error> {
    JOURNAL_FILES
        .iter()
        .map(|name| read_journal(dir, name, digest_entries(name)))
        .collect()
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::Store {
        op: "read journal",
        detail: format!("{}: {e}", path.display()),
    }
}
