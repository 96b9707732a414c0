//! The ledger export file: a self-contained, line-oriented record of one or more tables'
//! chains (or a contiguous range of each) that anyone can verify without sled, with this
//! module or from the format below in any language.
//!
//! Format (version 1), UTF-8 JSON lines:
//!
//! 1. A header line: `{"format":"roundledger-export","version":1,"tables":[...]}` where each
//!    table entry is `{"table", "from_seq", "to_seq", "anchor", "head", "events"}`:
//!    - `from_seq..=to_seq` is the exported range of the table's chain (contiguous);
//!    - `anchor` is the hash of the event just before `from_seq` (the `prev` of the first
//!      exported event): 64 zeros (genesis) when `from_seq` is 1. An export that does not
//!      start at seq 1 can only prove that its events extend this anchor; to tie it to the
//!      whole chain, compare the anchor with the ledger's hash at `from_seq - 1` (or with an
//!      earlier export that ends there);
//!    - `head` is the hash of the event at `to_seq`; `events` = `to_seq - from_seq + 1`.
//! 2. Then one line per event, grouped by table in header order, in seq order:
//!    `{"table","seq","hash","stream_seq","received_at_ns","bytes"}` where `hash` is the
//!    stored event hash (hex), `stream_seq` the JetStream stream sequence it arrived with
//!    (the House's arrival order), `received_at_ns` when ingest received it, and `bytes` the
//!    exact message body as received, lowercase hex.
//!
//! A table with an empty range is not listed. `verify_export` recomputes every hash with
//! `chain::event_hash` from the anchor, checks seq continuity, each event's decoded `table`,
//! `seq` and `prev`, the stored hashes, the counts and the heads. No hash in the file covers
//! `stream_seq` and `received_at_ns`: for a range from seq 1 it recomputes the table's
//! receipt over them (`receipt::receipt_next`), which a digest can confirm
//! (`digest::check_export`).

use schemas::chain::{event_hash, GENESIS};
use schemas::codec;
use schemas::ids::{Hash32, TableId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{BufRead, Read as _};

/// The `format` field of the header line.
pub const EXPORT_FORMAT: &str = "roundledger-export";
/// The export format version this crate writes and reads.
pub const EXPORT_VERSION: u32 = 1;
/// Longest line accepted when verifying (an event of `codec::EVENT_LEN_MAX` bytes in hex
/// plus its fields, or a header of many tables).
pub const EXPORT_LINE_LEN_MAX: usize = 4 * codec::EVENT_LEN_MAX;

/// The first line of an export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportHeader {
    /// Always `EXPORT_FORMAT`.
    pub format: String,
    /// The format version; this crate reads `EXPORT_VERSION` only.
    pub version: u32,
    /// The exported ranges, one per table, in the order of the event lines.
    pub tables: Vec<ExportTable>,
}

/// One table's exported range, as announced in the header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportTable {
    /// The table id.
    pub table: TableId,
    /// First exported seq, from 1.
    pub from_seq: u64,
    /// Last exported seq, inclusive; at least `from_seq`.
    pub to_seq: u64,
    /// Hash of the event at `from_seq - 1`; genesis (zeros) when `from_seq == 1`.
    pub anchor: Hash32,
    /// Hash of the event at `to_seq`.
    pub head: Hash32,
    /// Events in the range: `to_seq - from_seq + 1`.
    pub events: u64,
}

/// One event line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportEvent {
    /// The table the event belongs to.
    pub table: TableId,
    /// The event's seq in its table's chain.
    pub seq: u64,
    /// The stored event hash (`chain::event_hash`).
    pub hash: Hash32,
    /// The JetStream stream sequence it arrived with: the House's arrival order.
    pub stream_seq: u64,
    /// When ingest received it, in nanoseconds since the Unix epoch.
    pub received_at_ns: i64,
    /// The exact bytes as received, lowercase hex.
    pub bytes: String,
}

/// What a verified export holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportSummary {
    /// The export format version read.
    pub version: u32,
    /// The verified ranges, as the header lists them.
    pub tables: Vec<ExportTable>,
    /// Event lines verified, over all tables.
    pub events: u64,
    /// The receipt (`receipt::receipt_next` over the events' stream seqs and receive times)
    /// at `to_seq` of each table exported from seq 1; a range starting later has none.
    #[serde(default)]
    pub receipts: BTreeMap<TableId, Hash32>,
}

/// What an export holds at one seq of a table: the event's hash, and the receipt after it
/// when the table's range starts at seq 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportAt {
    /// The event's hash at that seq.
    pub hash: Hash32,
    /// The receipt after that event; `None` when the range starts after seq 1.
    pub receipt: Option<Hash32>,
}

/// Why an export does not verify. `line` is 1-based (the header is line 1).
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The reader failed.
    #[error("reading the export: {0}")]
    Io(#[from] std::io::Error),
    /// The file has no header line.
    #[error("the export is empty (no header line)")]
    Empty,
    /// A line is longer than `EXPORT_LINE_LEN_MAX` bytes.
    #[error("line {line}: longer than {EXPORT_LINE_LEN_MAX} bytes")]
    LineTooLong {
        /// The line number, from 1.
        line: u64,
    },
    /// A line is not valid JSON of its kind.
    #[error("line {line}: not a valid {what}: {message}")]
    Syntax {
        /// The line number, from 1.
        line: u64,
        /// What the line should be: "header" or "event line".
        what: &'static str,
        /// The JSON parser's message.
        message: String,
    },
    /// The header names another format or version.
    #[error("unsupported export format {format:?} version {version}")]
    Version {
        /// The `format` field read.
        format: String,
        /// The `version` field read.
        version: u32,
    },
    /// The header's table ranges are inconsistent: a table twice, a bad range or count.
    #[error("header: {0}")]
    Header(String),
    /// An event line does not extend its table's chain.
    #[error("line {line}: table {table} seq {seq}: {problem}")]
    Chain {
        /// The line number, from 1.
        line: u64,
        /// The table the line names.
        table: TableId,
        /// The seq the line names.
        seq: u64,
        /// What does not follow.
        problem: String,
    },
    /// A table's event lines stop short of, or miss, the range and head announced.
    #[error("table {table}: {problem}")]
    Incomplete {
        /// The table id.
        table: TableId,
        /// What is missing.
        problem: String,
    },
}

/// Verifies an export from a reader, without sled. Returns what it holds, or the first
/// problem found.
pub fn verify_export(reader: impl BufRead) -> Result<ExportSummary, ExportError> {
    Ok(verify_export_at(reader, &BTreeMap::new())?.0)
}

/// `verify_export`, also returning what the export holds at each `(table, seq)` of `at`
/// that it covers (for checking an export against a digest, `digest::check_export`).
pub fn verify_export_at(
    reader: impl BufRead,
    at: &BTreeMap<TableId, u64>,
) -> Result<(ExportSummary, BTreeMap<TableId, ExportAt>), ExportError> {
    let mut lines = LineReader { reader, line: 0 };
    let header = read_header(&mut lines)?;
    let mut cursor = Cursor::new(&header.tables);
    let mut found = BTreeMap::new();
    let mut total = 0u64;
    while let Some(text) = lines.next_line()? {
        let line = lines.line;
        if text.trim().is_empty() {
            continue;
        }
        let ev: ExportEvent = serde_json::from_str(&text).map_err(|e| ExportError::Syntax {
            line,
            what: "event line",
            message: e.to_string(),
        })?;
        cursor.skip_complete(ev.seq)?;
        cursor.take(line, &ev)?;
        if at.get(&ev.table) == Some(&ev.seq) {
            let (hash, receipt) = (cursor.prev, cursor.receipt);
            found.insert(ev.table.clone(), ExportAt { hash, receipt });
        }
        total += 1;
    }
    // Every remaining table must be complete.
    cursor.skip_complete(u64::MAX)?;
    let summary = ExportSummary {
        version: header.version,
        events: total,
        receipts: cursor.receipts,
        tables: header.tables,
    };
    Ok((summary, found))
}

/// The header line, its format and version, and its table ranges.
fn read_header(lines: &mut LineReader<impl BufRead>) -> Result<ExportHeader, ExportError> {
    let header_line = lines.next_line()?.ok_or(ExportError::Empty)?;
    let header: ExportHeader =
        serde_json::from_str(&header_line).map_err(|e| ExportError::Syntax {
            line: 1,
            what: "header",
            message: e.to_string(),
        })?;
    if header.format != EXPORT_FORMAT || header.version != EXPORT_VERSION {
        return Err(ExportError::Version {
            format: header.format,
            version: header.version,
        });
    }
    check_header(&header)?;
    Ok(header)
}

/// Where the event lines are in the header's tables: the table, the chain so far and its
/// receipt (for a table exported from seq 1).
struct Cursor<'a> {
    tables: &'a [ExportTable],
    current: usize,
    prev: Hash32,
    next_seq: u64,
    receipt: Option<Hash32>,
    receipts: BTreeMap<TableId, Hash32>,
}

impl<'a> Cursor<'a> {
    fn new(tables: &'a [ExportTable]) -> Cursor<'a> {
        let mut c = Cursor {
            tables,
            current: 0,
            prev: GENESIS,
            next_seq: 1,
            receipt: None,
            receipts: BTreeMap::new(),
        };
        c.start_table();
        c
    }

    fn start_table(&mut self) {
        if let Some(t) = self.tables.get(self.current) {
            self.prev = t.anchor;
            self.next_seq = t.from_seq;
            self.receipt = (t.from_seq == 1).then_some(Hash32::ZERO);
        }
    }

    /// Moves past every table complete before an event at `seq` would come, checking
    /// each reached its end. `u64::MAX`: every table left.
    fn skip_complete(&mut self, seq: u64) -> Result<(), ExportError> {
        while let Some(t) = self.tables.get(self.current) {
            let done = self.next_seq > t.to_seq || seq == u64::MAX;
            if !done {
                break;
            }
            finish_table(t, &self.prev, self.next_seq)?;
            if let Some(r) = self.receipt {
                self.receipts.insert(t.table.clone(), r);
            }
            self.current += 1;
            self.start_table();
        }
        Ok(())
    }

    /// One event line: the table and seq expected, its bytes, its chain link and hash.
    fn take(&mut self, line: u64, ev: &ExportEvent) -> Result<(), ExportError> {
        let next_seq = self.next_seq;
        let Some(t) = self.tables.get(self.current) else {
            return Err(chain_err(line, ev, "event beyond the ranges in the header"));
        };
        if ev.table != t.table {
            let want = format!("expected an event of table {} seq {next_seq}", t.table);
            return Err(chain_err(line, ev, &want));
        }
        if ev.seq != next_seq {
            return Err(chain_err(line, ev, &format!("expected seq {next_seq}")));
        }
        let computed = check_line_bytes(line, ev, &self.prev)?;
        self.prev = computed;
        if let Some(r) = &mut self.receipt {
            *r = crate::receipt::receipt_next(r, ev.stream_seq, ev.received_at_ns);
        }
        self.next_seq += 1;
        Ok(())
    }
}

/// A line's bytes: hex, an event that is the one the line names, linked to `prev`, with
/// the line's hash. Returns that hash.
fn check_line_bytes(line: u64, ev: &ExportEvent, prev: &Hash32) -> Result<Hash32, ExportError> {
    let bytes = hex::decode(&ev.bytes)
        .map_err(|e| chain_err(line, ev, &format!("bytes are not hex: {e}")))?;
    let (event, _) =
        codec::decode(&bytes).map_err(|e| chain_err(line, ev, &format!("undecodable: {e}")))?;
    if event.table != ev.table || event.seq.0 != ev.seq {
        let what = format!(
            "the bytes are event {} seq {}, not the one the line names",
            event.table, event.seq.0
        );
        return Err(chain_err(line, ev, &what));
    }
    if event.prev != *prev {
        let what = format!("prev {} does not match {}", event.prev, prev);
        return Err(chain_err(line, ev, &what));
    }
    let computed = event_hash(prev, &bytes);
    if computed != ev.hash {
        let what = format!(
            "stored hash {} differs from the recomputed {computed}",
            ev.hash
        );
        return Err(chain_err(line, ev, &what));
    }
    Ok(computed)
}

fn check_header(h: &ExportHeader) -> Result<(), ExportError> {
    let mut seen = std::collections::BTreeSet::new();
    for t in &h.tables {
        if !seen.insert(t.table.clone()) {
            return Err(ExportError::Header(format!(
                "table {} listed twice",
                t.table
            )));
        }
        // No chain reaches seq u64::MAX (the ledger refuses a seq that far ahead), and
        // `to_seq + 1` must exist.
        if t.from_seq == 0 || t.to_seq < t.from_seq || t.to_seq == u64::MAX {
            return Err(ExportError::Header(format!(
                "table {}: bad range {}..={}",
                t.table, t.from_seq, t.to_seq
            )));
        }
        if t.events != t.to_seq - t.from_seq + 1 {
            return Err(ExportError::Header(format!(
                "table {}: {} events announced for range {}..={}",
                t.table, t.events, t.from_seq, t.to_seq
            )));
        }
        if t.from_seq == 1 && t.anchor != GENESIS {
            return Err(ExportError::Header(format!(
                "table {}: a range from seq 1 must be anchored at genesis",
                t.table
            )));
        }
    }
    Ok(())
}

fn finish_table(t: &ExportTable, last: &Hash32, next_seq: u64) -> Result<(), ExportError> {
    if next_seq != t.to_seq + 1 {
        return Err(ExportError::Incomplete {
            table: t.table.clone(),
            problem: format!(
                "the file ends at seq {}, the header announces {}",
                next_seq - 1,
                t.to_seq
            ),
        });
    }
    if *last != t.head {
        return Err(ExportError::Incomplete {
            table: t.table.clone(),
            problem: format!("chain ends at {last}, the header announces head {}", t.head),
        });
    }
    Ok(())
}

fn chain_err(line: u64, ev: &ExportEvent, problem: &str) -> ExportError {
    ExportError::Chain {
        line,
        table: ev.table.clone(),
        seq: ev.seq,
        problem: problem.to_string(),
    }
}

/// Reads lines with a length bound, so a hostile file cannot exhaust memory.
struct LineReader<R> {
    reader: R,
    line: u64,
}

impl<R: BufRead> LineReader<R> {
    fn next_line(&mut self) -> Result<Option<String>, ExportError> {
        let mut buf = Vec::new();
        let n = (&mut self.reader)
            .take(EXPORT_LINE_LEN_MAX as u64 + 1)
            .read_until(b'\n', &mut buf)?;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        if buf.len() > EXPORT_LINE_LEN_MAX {
            return Err(ExportError::LineTooLong { line: self.line });
        }
        String::from_utf8(buf)
            .map(Some)
            .map_err(|e| ExportError::Syntax {
                line: self.line,
                what: "UTF-8 line",
                message: e.to_string(),
            })
    }
}
