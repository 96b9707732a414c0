//! The API's journals (`audit.jsonl`, `cases.jsonl`, `counts.jsonl`): the line format and the check of
//! their chain, shared by the server that writes them (`api::journal`) and `verify`, which
//! reads them without the api crate. Pure: lines in, the chain's head out.
//!
//! Line: `{"n":N,"prev":"<hex>","hash":"<hex>","entry":"<entry as a JSON string>"}` with
//! `hash = BLAKE3("roundledger/journal/v1" || prev || entry bytes)`; `prev` of line 1 is
//! 64 zeros. The head after n lines (n, hash of line n) is what a digest names
//! (schemas/README.md §6), so a journal cut back or rewritten since shows against it.

use schemas::ids::Hash32;
use serde::{Deserialize, Serialize};

/// Domain tag of journal line hashes.
pub const JOURNAL_DOMAIN: &[u8] = b"roundledger/journal/v1";
/// Longest entry accepted (bytes of its JSON).
pub const JOURNAL_ENTRY_LEN_MAX: usize = 64 * 1024;
/// Longest line: an entry escaped inside a JSON string (at most 6 bytes a byte), with the
/// line's other fields.
pub const JOURNAL_LINE_LEN_MAX: usize = 6 * JOURNAL_ENTRY_LEN_MAX + 512;
/// The audit log's file name in the API's directory.
pub const AUDIT_FILE: &str = "audit.jsonl";
/// The case journal's file name in the API's directory.
pub const CASES_FILE: &str = "cases.jsonl";
/// The count room's results journal's file name in the API's directory.
pub const COUNTS_FILE: &str = "counts.jsonl";
/// The journals a digest names, by name (their file names), in this order.
pub const JOURNAL_FILES: [&str; 3] = [AUDIT_FILE, CASES_FILE, COUNTS_FILE];

/// One journal line as stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JournalLine {
    /// Line number, from 1; each line's is one more than the line before.
    pub n: u64,
    /// The previous line's hash in hex; 64 zeros on line 1.
    pub prev: String,
    /// This line's hash in hex, as `line_hash` gives it.
    pub hash: String,
    /// The entry's JSON, kept as a string so its exact bytes are hashed.
    pub entry: String,
}

/// A line's hash: over the previous line's hash and the entry's exact bytes.
pub fn line_hash(prev: &[u8; 32], entry: &[u8]) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(JOURNAL_DOMAIN);
    h.update(prev);
    h.update(entry);
    *h.finalize().as_bytes()
}

/// A journal's chain read so far: lines checked and the last line's hash.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JournalChain {
    /// Lines checked so far.
    pub lines: u64,
    /// The last checked line's hash; all zeros before line 1.
    pub head: [u8; 32],
}

impl JournalChain {
    /// Checks the next line (its bytes without the newline) against the chain and takes
    /// it; returns the line. `Err` says why it does not follow; the chain is unchanged.
    pub fn push(&mut self, bytes: &[u8]) -> Result<JournalLine, String> {
        if bytes.len() > JOURNAL_LINE_LEN_MAX {
            return Err(format!(
                "{} bytes, longer than a line can be ({JOURNAL_LINE_LEN_MAX})",
                bytes.len()
            ));
        }
        let line: JournalLine = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let no = self.lines + 1;
        if line.n != no || line.prev != hex::encode(self.head) {
            return Err(format!(
                "n {} prev {} does not follow line {}",
                line.n,
                line.prev,
                no - 1
            ));
        }
        let h = line_hash(&self.head, line.entry.as_bytes());
        if line.hash != hex::encode(h) {
            return Err("hash does not match the entry".into());
        }
        self.lines = no;
        self.head = h;
        Ok(line)
    }

    /// The head as a digest names it.
    pub fn head_hash(&self) -> Hash32 {
        Hash32(self.head)
    }
}
