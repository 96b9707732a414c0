//! An append-only, hash-chained JSON-lines file: the server's audit log (`audit.jsonl`) and
//! its case entries (`cases.jsonl`). These live in the API's own directory, not in the
//! ledger's sled database: the ledger holds what devices sent, and nothing the server adds
//! may share its key spaces or its chains.
//!
//! Line format and chain: `proofs::journal`, which `verify` reads them by too. The entry is
//! kept as a string so the hashed bytes are exactly the stored bytes.
//!
//! Invariants: append-only by construction (this type has no update and no delete, and opens
//! the file in append mode); each append is written and `sync_data`'d before it returns, so
//! a recorded read is durable before its response leaves; a write that fails part way (a
//! full disk, a failed sync) is cut back to the last whole entry, and if that cut fails
//! too the journal takes no more entries (`JournalError::Broken`) rather than chain one
//! after torn bytes; the chain is verified when the file is opened (a damaged journal
//! refuses to open, naming the line), except that bytes after the last newline (a line a
//! crash or a full disk stopped part way: never an entry) are cut at open and reported
//! (`torn_tail_cut`); one `Journal` per file per process. Blocking: call it from `spawn_blocking` or a blocking thread.

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use proofs::journal::{line_hash, JournalChain, JournalLine as Line};
pub use proofs::journal::{JOURNAL_DOMAIN, JOURNAL_ENTRY_LEN_MAX};

/// Bytes `Journal::probe` writes and cuts back: a page, so a full disk refuses it.
pub const PROBE_BYTES: usize = 4096;

/// Why a journal could not be opened, read or appended to.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// Opening, reading, writing or syncing the file failed.
    #[error("journal {path}: {source}")]
    Io {
        /// The journal file's path.
        path: PathBuf,
        /// The I/O failure.
        #[source]
        source: std::io::Error,
    },
    /// A line breaks the line format or the hash chain.
    #[error("journal {path} line {line}: {detail}")]
    Damaged {
        /// The journal file's path.
        path: PathBuf,
        /// The damaged line's number, counted from 1.
        line: u64,
        /// What is wrong with the line.
        detail: String,
    },
    /// An entry's JSON is longer than `JOURNAL_ENTRY_LEN_MAX` bytes.
    #[error("journal entry of {len} bytes exceeds {JOURNAL_ENTRY_LEN_MAX}")]
    TooLong {
        /// The entry's length in bytes.
        len: usize,
    },
    /// An entry could not be written as JSON.
    #[error("journal entry: {0}")]
    Json(#[from] serde_json::Error),
    /// A failed write could not be cut back, so the journal takes no more entries.
    #[error("journal {path} takes no more entries: {detail}")]
    Broken {
        /// The journal file's path.
        path: PathBuf,
        /// The write that failed and the cut back that failed too.
        detail: String,
    },
}

struct Tail {
    file: File,
    /// Byte offset of each line, for paging without holding entries in memory.
    offsets: Vec<u64>,
    end: u64,
    last: [u8; 32],
    /// Set when a failed write could not be cut back: the file may end in torn bytes, and
    /// an entry chained after them would make the journal unopenable, so none is.
    broken: Option<String>,
    /// Deterministic fault: the next write stops after this many bytes and fails.
    #[cfg(test)]
    torn_write: Option<usize>,
    /// Deterministic fault: the next cut-back after a failed write fails.
    #[cfg(test)]
    fail_next_cut: bool,
}

/// One append-only journal file.
pub struct Journal {
    path: PathBuf,
    /// Bytes of an unfinished last line cut at open.
    torn_tail_cut: Option<u64>,
    tail: Mutex<Tail>,
    /// Appends that failed since open (`/metrics`).
    failures: std::sync::atomic::AtomicU64,
    /// Why the last append failed, while no append has succeeded since (`/ready`).
    failing: Mutex<Option<String>>,
}

impl Journal {
    /// Opens (or creates) the journal at `path` and verifies its whole chain. Calls `each`
    /// with every entry's JSON, in order (to rebuild in-memory state such as cases).
    pub fn open(
        path: &Path,
        mut each: impl FnMut(u64, &str) -> Result<(), String>,
    ) -> Result<Journal, JournalError> {
        let io = |source| JournalError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        let mut reader = BufReader::new(&mut file);
        let (mut offsets, mut pos, mut chain) = (Vec::new(), 0u64, JournalChain::default());
        let mut torn_tail = None;
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let n = reader.read_until(b'\n', &mut buf).map_err(io)?;
            if n == 0 {
                break;
            }
            let no = offsets.len() as u64 + 1;
            let damaged = |detail: String| JournalError::Damaged {
                path: path.to_path_buf(),
                line: no,
                detail,
            };
            if buf.last() != Some(&b'\n') {
                // Bytes after the last newline, at the end of the file: a write the crash
                // or the full disk stopped part way (every line is written whole with its
                // newline, then synced). They were never an entry, so they are cut: kept,
                // the journal would refuse to open, and the server with it.
                torn_tail = Some(n as u64);
                break;
            }
            let line = chain.push(&buf[..buf.len() - 1]).map_err(&damaged)?;
            each(no, &line.entry).map_err(damaged)?;
            offsets.push(pos);
            pos += n as u64;
        }
        let last = chain.head;
        if let Some(bytes) = torn_tail {
            file.set_len(pos).map_err(io)?;
            file.sync_data().map_err(io)?;
            tracing::warn!(journal = %path.display(), bytes, entries = offsets.len(), "cut an unfinished last line (a write a crash or full disk stopped part way)");
        }
        Ok(Journal {
            path: path.to_path_buf(),
            torn_tail_cut: torn_tail,
            tail: Mutex::new(Tail {
                file,
                offsets,
                end: pos,
                last,
                broken: None,
                #[cfg(test)]
                torn_write: None,
                #[cfg(test)]
                fail_next_cut: false,
            }),
            failures: std::sync::atomic::AtomicU64::new(0),
            failing: Mutex::new(None),
        })
    }

    /// Bytes of an unfinished last line cut when the journal was opened, if any.
    pub fn torn_tail_cut(&self) -> Option<u64> {
        self.torn_tail_cut
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tail> {
        // The tail is only changed after a successful write: still consistent after a panic.
        self.tail.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Entries so far.
    pub fn len(&self) -> u64 {
        self.lock().offsets.len() as u64
    }

    /// Whether the journal holds no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends `make(n)` (n = its position from 1), writes and syncs it; returns it. A
    /// failure is counted (`failures`) and kept until an append succeeds (`failing`).
    pub fn append<T: Serialize>(&self, make: impl FnOnce(u64) -> T) -> Result<T, JournalError> {
        let appended = self.append_once(make);
        let mut failing = self.failing.lock().unwrap_or_else(|p| p.into_inner());
        match &appended {
            Ok(_) => *failing = None,
            Err(e) => {
                self.failures
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                *failing = Some(e.to_string());
            }
        }
        appended
    }

    /// Appends that failed since the journal was opened.
    pub fn failures(&self) -> u64 {
        self.failures.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Why the journal takes no entry now: the last append failed and none succeeded
    /// since. `None` while it is writable.
    pub fn failing(&self) -> Option<String> {
        self.failing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// While failing: whether the file takes a write again, tried by writing and syncing
    /// `PROBE_BYTES` past the last entry and cutting them back. Success clears `failing`,
    /// so readiness returns when the disk does, not at the next request (a balancer sends
    /// none to a node that is not ready). A crash between the two leaves a tail that open
    /// cuts. No entry is added.
    pub fn probe(&self) -> bool {
        if self.failing().is_none() {
            return true;
        }
        let mut t = self.lock();
        if t.broken.is_some() {
            return false;
        }
        let probe = vec![b' '; PROBE_BYTES];
        let written = write_line(&mut t, &probe);
        let cut = cut_back(&mut t).and_then(|()| t.file.sync_data());
        if let Err(e) = &cut {
            t.broken = Some(format!("a probe's cut back to byte {} failed ({e})", t.end));
        }
        drop(t);
        let ok = written.is_ok() && cut.is_ok();
        if ok {
            *self.failing.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
        ok
    }

    fn append_once<T: Serialize>(&self, make: impl FnOnce(u64) -> T) -> Result<T, JournalError> {
        let mut t = self.lock();
        let n = t.offsets.len() as u64 + 1;
        let value = make(n);
        let entry = serde_json::to_string(&value)?;
        if entry.len() > JOURNAL_ENTRY_LEN_MAX {
            return Err(JournalError::TooLong { len: entry.len() });
        }
        let h = line_hash(&t.last, entry.as_bytes());
        let line = Line {
            n,
            prev: hex::encode(t.last),
            hash: hex::encode(h),
            entry,
        };
        let mut bytes = serde_json::to_vec(&line)?;
        bytes.push(b'\n');
        let io = |source| JournalError::Io {
            path: self.path.clone(),
            source,
        };
        if let Some(detail) = &t.broken {
            return Err(JournalError::Broken {
                path: self.path.clone(),
                detail: detail.clone(),
            });
        }
        if let Err(e) = write_line(&mut t, &bytes) {
            // Part of the line may be in the file (a full disk, a failed sync). Cut back
            // to the last whole entry: chained after torn bytes, the next entry would be
            // unreadable and the journal would refuse to open.
            if let Err(cut) = cut_back(&mut t) {
                t.broken = Some(format!(
                    "a write failed ({e}) and cutting it back to byte {} failed too ({cut})",
                    t.end
                ));
            }
            return Err(io(e));
        }
        let end = t.end;
        t.offsets.push(end);
        t.end += bytes.len() as u64;
        t.last = h;
        assert_eq!(
            t.offsets.len() as u64,
            n,
            "one line per entry, numbered from 1"
        );
        Ok(value)
    }

    /// Deterministic fault for tests: the next append's write stops after `bytes` bytes and
    /// fails.
    #[cfg(test)]
    pub(crate) fn tear_next_write(&self, bytes: usize) {
        self.lock().torn_write = Some(bytes);
    }

    /// Deterministic fault for tests: the cut-back after the next failed write fails.
    #[cfg(test)]
    fn fail_next_cut(&self) {
        self.lock().fail_next_cut = true;
    }

    /// Entries `offset..offset + limit` (from 0), oldest first.
    pub fn read<T: DeserializeOwned>(
        &self,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<T>, JournalError> {
        let (start, end) = {
            let t = self.lock();
            let len = t.offsets.len() as u64;
            let a = offset.min(len);
            let b = offset.saturating_add(limit).min(len);
            if a == b {
                return Ok(Vec::new());
            }
            let to = if b == len {
                t.end
            } else {
                t.offsets[b as usize]
            };
            (t.offsets[a as usize], to)
        };
        let io = |source| JournalError::Io {
            path: self.path.clone(),
            source,
        };
        let mut f = File::open(&self.path).map_err(io)?;
        f.seek(SeekFrom::Start(start)).map_err(io)?;
        let mut buf = vec![0u8; (end - start) as usize];
        f.read_exact(&mut buf).map_err(io)?;
        let mut out = Vec::new();
        for (i, l) in buf
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .enumerate()
        {
            let damaged = |detail: String| JournalError::Damaged {
                path: self.path.clone(),
                line: offset + i as u64 + 1,
                detail,
            };
            let line: Line = serde_json::from_slice(l).map_err(|e| damaged(e.to_string()))?;
            out.push(serde_json::from_str(&line.entry).map_err(|e| damaged(e.to_string()))?);
        }
        Ok(out)
    }
}

/// The records stream seq a journal entry carries (`stream_seq`), 0 when none: where a
/// node resumes applying the records stream (`records`).
pub fn stream_seq_of(json: &str) -> Result<u64, String> {
    #[derive(serde::Deserialize)]
    struct StreamSeqOf {
        #[serde(default)]
        stream_seq: Option<u64>,
    }
    let s: StreamSeqOf = serde_json::from_str(json).map_err(|e| e.to_string())?;
    Ok(s.stream_seq.unwrap_or(0))
}

/// Cuts the file back to the end of its last whole entry.
fn cut_back(t: &mut Tail) -> std::io::Result<()> {
    #[cfg(test)]
    if std::mem::take(&mut t.fail_next_cut) {
        return Err(std::io::Error::other("injected: the cut failed"));
    }
    t.file.set_len(t.end)
}

/// Writes one whole line and syncs it.
fn write_line(t: &mut Tail, bytes: &[u8]) -> std::io::Result<()> {
    #[cfg(test)]
    if let Some(k) = t.torn_write.take() {
        t.file.write_all(&bytes[..k.min(bytes.len())])?;
        return Err(std::io::Error::other(
            "injected: the write stopped part way",
        ));
    }
    t.file.write_all(bytes)?;
    t.file.sync_data()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A journal of `entries` entries `{"n": n, "i": i}`, i from 0.
    fn journal_of(entries: u64) -> (tempfile::TempDir, PathBuf, Journal) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j.jsonl");
        let j = Journal::open(&p, |_, _| Ok(())).unwrap();
        for i in 0..entries {
            j.append(|n| serde_json::json!({"n": n, "i": i})).unwrap();
        }
        (dir, p, j)
    }

    #[test]
    fn appends_survive_reopen_and_damage_is_named() {
        let (_dir, p, j) = journal_of(5);
        let got: Vec<serde_json::Value> = j.read(1, 2).unwrap();
        assert_eq!(got[0]["i"], 1);
        assert_eq!(got[1]["i"], 2);
        drop(j);
        let mut seen = 0;
        let j = Journal::open(&p, |_, _| {
            seen += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!((seen, j.len()), (5, 5));
        drop(j);
        // Change one entry's content: the reopen names the line.
        let text = std::fs::read_to_string(&p).unwrap();
        let text = text.replacen("\\\"i\\\":3", "\\\"i\\\":4", 1);
        std::fs::write(&p, text).unwrap();
        let err = Journal::open(&p, |_, _| Ok(())).err().unwrap().to_string();
        assert!(err.contains("line 4"), "{err}");
    }

    #[test]
    fn a_write_that_fails_part_way_is_cut_back_and_the_journal_goes_on() {
        let (_dir, p, j) = journal_of(3);
        let len_before = std::fs::metadata(&p).unwrap().len();
        j.tear_next_write(17);
        let err = j
            .append(|n| serde_json::json!({"n": n, "i": 99}))
            .expect_err("the injected write fails");
        assert!(err.to_string().contains("part way"), "{err}");
        assert_eq!(
            std::fs::metadata(&p).unwrap().len(),
            len_before,
            "the torn bytes are cut back"
        );
        assert_eq!(j.len(), 3);
        // Counted for /metrics; failing for /ready until an append succeeds.
        assert_eq!(j.failures(), 1);
        assert!(j.failing().is_some_and(|why| why.contains("part way")));
        for i in 3..5u64 {
            j.append(|n| serde_json::json!({"n": n, "i": i})).unwrap();
        }
        assert_eq!((j.failures(), j.failing()), (1, None));
        drop(j);
        let mut seen = Vec::new();
        let j = Journal::open(&p, |_, e| {
            seen.push(serde_json::from_str::<serde_json::Value>(e).unwrap()["i"].clone());
            Ok(())
        })
        .expect("the journal still opens");
        assert_eq!(
            seen,
            (0..5u64).map(serde_json::Value::from).collect::<Vec<_>>()
        );
        let got: Vec<serde_json::Value> = j.read(3, 2).unwrap();
        assert_eq!(
            (got[0]["i"].clone(), got[1]["n"].clone()),
            (3.into(), 5.into())
        );
    }

    /// A line that a crash or a full disk stopped part way (no newline: lines are written
    /// whole) was never an entry: open cuts it instead of refusing the journal, which kept
    /// the server from starting. A damaged whole line is still refused.
    #[test]
    fn an_unfinished_last_line_is_cut_at_open() {
        let (_dir, p, j) = journal_of(3);
        drop(j);
        let whole = std::fs::read(&p).unwrap();
        let mut torn = whole.clone();
        torn.extend_from_slice("{\"n\":4,\"prev\":\"ab\u{e9}".as_bytes());
        torn.push(0xc3); // half of a two-byte character
        std::fs::write(&p, &torn).unwrap();
        let j = Journal::open(&p, |_, _| Ok(())).expect("opens past an unfinished line");
        assert_eq!(j.torn_tail_cut(), Some((torn.len() - whole.len()) as u64));
        assert_eq!(j.len(), 3);
        assert_eq!(
            std::fs::read(&p).unwrap(),
            whole,
            "cut back to the whole lines"
        );
        j.append(|n| serde_json::json!({"n": n, "i": 3})).unwrap();
        drop(j);
        let j = Journal::open(&p, |_, _| Ok(())).unwrap();
        assert_eq!((j.len(), j.torn_tail_cut()), (4, None));
        drop(j);
        let mut damaged = std::fs::read(&p).unwrap();
        damaged.extend_from_slice(b"{\"n\":5}\n");
        std::fs::write(&p, &damaged).unwrap();
        let err = Journal::open(&p, |_, _| Ok(())).err().unwrap().to_string();
        assert!(err.contains("line 5"), "{err}");
    }

    /// A failed write whose cut-back fails too: the file may end in torn bytes, so the
    /// journal takes no entry (each would be chained after them) until it is opened again,
    /// which cuts them.
    #[test]
    fn a_journal_whose_cut_back_failed_takes_no_more_entries_until_reopened() {
        let (_dir, p, j) = journal_of(3);
        let len_before = std::fs::metadata(&p).unwrap().len();
        j.tear_next_write(17);
        j.fail_next_cut();
        let err = j
            .append(|n| serde_json::json!({"n": n, "i": 99}))
            .expect_err("the injected write fails");
        assert!(err.to_string().contains("part way"), "{err}");
        let err = j
            .append(|n| serde_json::json!({"n": n, "i": 3}))
            .expect_err("a broken journal takes no entry");
        assert!(matches!(err, JournalError::Broken { .. }), "{err}");
        assert!(err.to_string().contains("cutting it back"), "{err}");
        assert_eq!(std::fs::metadata(&p).unwrap().len(), len_before + 17);
        assert_eq!(j.len(), 3);
        drop(j);
        let j = Journal::open(&p, |_, _| Ok(())).expect("open cuts the torn bytes");
        assert_eq!((j.len(), j.torn_tail_cut()), (3, Some(17)));
        j.append(|n| serde_json::json!({"n": n, "i": 3})).unwrap();
        let got: Vec<serde_json::Value> = j.read(3, 1).unwrap();
        assert_eq!(got[0]["n"], 4);
    }
}
