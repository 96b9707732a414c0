//! The value log: event records kept outside sled, in append-only segment files, with sled
//! holding a 21-byte pointer to each.
//!
//! Why: sled 0.34 keeps values inside its tree nodes. A leaf holds up to 16 entries and is
//! rewritten whole when its deltas are consolidated, so every record of several kilobytes
//! was copied into sled's log again and again, and records over 128 KB went to blob files
//! of their own. Profiled under ingest, sled's inserts were 59% of the writer thread. A
//! pointer fits in sled's inline value, and the record is written once, sequentially.
//!
//! Layout: `<ledger>/values/<segment, 8 hex digits>.seg`. An entry is
//! `len (u32 LE) ++ crc32 (u32 LE) ++ value`. A segment ends at `SEGMENT_BYTES_MAX` (an
//! entry that would cross it starts the next segment). Pointer:
//! `POINTER_TAG ++ segment (u32 BE) ++ offset (u64 BE) ++ len (u32 BE) ++ crc32 (u32 BE)`.
//!
//! Invariants:
//! - Durable before referenced: `append` writes and fsyncs the entries before it returns
//!   their pointers, so no pointer that sled persists can outlive its bytes in a crash.
//! - Written once: entries are only ever appended. Entries after the end the last sled
//!   commit recorded (a crash before sled took their pointers, or commits sled lost) are
//!   found by `entries_after` and appended again as new entries by `Ledger::open`
//!   (`recover`); the old ones are never referenced.
//! - Every read is checked: the entry's header must repeat the pointer's length and
//!   checksum, and the bytes must match the checksum, or the read is
//!   `Error::CorruptRecord` naming the segment and offset. Tampering with a segment is
//!   caught here, and by the chain hashes in `verify` for anything a checksum cannot catch.
//! - Never appended after what a crash left: when the log goes on past the end the last
//!   commit recorded (entries no commit references, or bytes of a write cut short), the
//!   store's open calls `start_new_segment` and the next append begins a segment. So torn
//!   bytes only ever end a segment, and a scan that meets them goes on at the next one:
//!   they never hide the entries written after them from recovery (an acknowledged loss
//!   before this rule: RELIABILITY.md).
//! - Damage never hides what follows it: an entry inside a segment that fails its checks
//!   (a flipped bit in its value or its length) is skipped, and the scan resynchronises on
//!   the next whole entry (`ValueLog::resync`: a length that fits, a known first byte, a
//!   matching checksum). Only bytes with no whole entry after them and running past the
//!   segment's end are a write cut short (`Found::Torn { cut: true }`).
//! - Bounded: segment size, open read handles, entry size (below a segment).

use crate::error::Error;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// First byte of a pointer. Records stored inline in sled (ledgers written before the
/// value log) start with `record::RECORD_VERSION` (1), so the two never meet.
pub const POINTER_TAG: u8 = 0xB7;
/// Pointer length: tag, segment, offset, length, checksum.
pub const POINTER_LEN: usize = 1 + 4 + 8 + 4 + 4;
/// Entry header: length and checksum.
pub const ENTRY_HEADER_LEN: usize = 8;
/// A segment is closed before it would grow past this.
pub const SEGMENT_BYTES_MAX: u64 = 1 << 30;
/// Segment files kept open for reading at once; the least recently opened is closed first.
pub const OPEN_SEGMENTS_MAX: usize = 64;
/// The directory, under the ledger's.
pub const DIR: &str = "values";

/// Where a value is: what sled stores in its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pointer {
    /// The segment file's number.
    pub segment: u32,
    /// Where the entry starts in the segment, in bytes.
    pub offset: u64,
    /// The value's length in bytes, without the entry header.
    pub len: u32,
    /// CRC-32 of the value, checked on every read.
    pub crc: u32,
}

impl Pointer {
    /// The stored form in sled, `POINTER_LEN` bytes, integers big-endian.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(POINTER_LEN);
        v.push(POINTER_TAG);
        v.extend_from_slice(&self.segment.to_be_bytes());
        v.extend_from_slice(&self.offset.to_be_bytes());
        v.extend_from_slice(&self.len.to_be_bytes());
        v.extend_from_slice(&self.crc.to_be_bytes());
        v
    }

    /// Where the entry it names ends: the segment and the offset just past its value.
    pub fn end(&self) -> (u32, u64) {
        (
            self.segment,
            // Saturating: a pointer read from a tampered store may name any offset.
            self.offset
                .saturating_add(ENTRY_HEADER_LEN as u64)
                .saturating_add(u64::from(self.len)),
        )
    }

    /// `None` when `v` is not a pointer (a legacy inline record).
    pub fn decode(v: &[u8]) -> Option<Pointer> {
        if v.len() != POINTER_LEN || v[0] != POINTER_TAG {
            return None;
        }
        let u32_at = |i: usize| u32::from_be_bytes([v[i], v[i + 1], v[i + 2], v[i + 3]]);
        let mut offset = [0u8; 8];
        offset.copy_from_slice(&v[5..13]);
        Some(Pointer {
            segment: u32_at(1),
            offset: u64::from_be_bytes(offset),
            len: u32_at(13),
            crc: u32_at(17),
        })
    }
}

/// The segment being appended to.
struct Tail {
    segment: u32,
    file: File,
    /// Bytes in the segment: where the next entry goes.
    end: u64,
    /// A write or sync failed part way: the file's end is unknown, so nothing more is
    /// appended until the ledger is reopened.
    broken: bool,
}

/// An open value log. One appender at a time (the ledger's writer lock); reads from any
/// thread.
pub struct ValueLog {
    dir: PathBuf,
    /// `SEGMENT_BYTES_MAX`, smaller in tests.
    segment_bytes_max: u64,
    tail: Mutex<Option<Tail>>,
    /// The next append starts a new segment (`start_new_segment`).
    new_segment_next: AtomicBool,
    /// A new segment is numbered above this (`start_new_segment_after`): no new segment
    /// takes the number of one that sled's pointers name but the disk no longer holds.
    segment_floor: AtomicU32,
    readers: Mutex<BTreeMap<u32, Arc<File>>>,
}

fn io_err<'a>(op: &'static str, path: &'a Path) -> impl Fn(std::io::Error) -> Error + 'a {
    move |e| Error::Store {
        op,
        detail: format!("{}: {e}", path.display()),
    }
}

/// The file name of a segment in `DIR`.
pub fn segment_file_name(segment: u32) -> String {
    format!("{segment:08x}.seg")
}

/// The path of a segment of the ledger in `ledger_dir`.
pub fn segment_path(ledger_dir: &Path, segment: u32) -> PathBuf {
    ledger_dir.join(DIR).join(segment_file_name(segment))
}

impl ValueLog {
    /// Opens the value log under the ledger directory `ledger_dir`, creating it if absent.
    /// The tail segment is opened on the first append.
    pub fn open(ledger_dir: &Path) -> Result<ValueLog, Error> {
        Self::open_sized(ledger_dir, SEGMENT_BYTES_MAX)
    }

    /// `open` with segments of at most `segment_bytes_max` bytes (tests use small ones).
    pub fn open_sized(ledger_dir: &Path, segment_bytes_max: u64) -> Result<ValueLog, Error> {
        let dir = ledger_dir.join(DIR);
        std::fs::create_dir_all(&dir).map_err(io_err("create value log", &dir))?;
        Ok(ValueLog {
            dir,
            segment_bytes_max,
            tail: Mutex::new(None),
            new_segment_next: AtomicBool::new(false),
            segment_floor: AtomicU32::new(0),
            readers: Mutex::new(BTreeMap::new()),
        })
    }

    fn path(&self, segment: u32) -> PathBuf {
        self.dir.join(segment_file_name(segment))
    }

    /// The highest segment number present, if any.
    fn last_segment(&self) -> Result<Option<u32>, Error> {
        Ok(self.segment_numbers()?.last().copied())
    }

    /// The numbers of the segment files present, ascending.
    fn segment_numbers(&self) -> Result<Vec<u32>, Error> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.dir).map_err(io_err("list value log", &self.dir))? {
            let entry = entry.map_err(io_err("list value log", &self.dir))?;
            let name = entry.file_name();
            let number = name
                .to_str()
                .and_then(|n| n.strip_suffix(".seg"))
                .filter(|n| n.len() == 8)
                .and_then(|n| u32::from_str_radix(n, 16).ok());
            out.extend(number);
        }
        out.sort_unstable();
        Ok(out)
    }

    /// Every segment file present and its length in bytes, by number.
    pub fn segments(&self) -> Result<Vec<(u32, u64)>, Error> {
        let mut out = Vec::new();
        for segment in self.segment_numbers()? {
            let path = self.path(segment);
            let len = std::fs::metadata(&path)
                .map_err(io_err("stat value segment", &path))?
                .len();
            out.push((segment, len));
        }
        Ok(out)
    }

    /// Deletes a segment file that nothing references any more (`tier::compact`), drops
    /// its read handle and fsyncs the directory. Returns the bytes freed. Never the tail.
    pub fn remove_segment(&self, segment: u32) -> Result<u64, Error> {
        let tail = self.tail.lock().unwrap_or_else(|p| p.into_inner());
        let last = self.last_segment()?;
        assert!(
            tail.as_ref().is_none_or(|t| t.segment != segment) && last != Some(segment),
            "the tail segment is never removed"
        );
        drop(tail);
        self.readers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&segment);
        let path = self.path(segment);
        let len = match std::fs::metadata(&path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(io_err("stat value segment", &path)(e)),
        };
        std::fs::remove_file(&path).map_err(io_err("remove value segment", &path))?;
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io_err("sync value log directory", &self.dir))?;
        Ok(len)
    }

    fn open_tail(&self, segment: u32) -> Result<Tail, Error> {
        let path = self.path(segment);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io_err("open value segment", &path))?;
        let end = file
            .metadata()
            .map_err(io_err("stat value segment", &path))?
            .len();
        // The new file's name must survive a crash as well as its bytes.
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io_err("sync value log directory", &self.dir))?;
        Ok(Tail {
            segment,
            file,
            end,
            broken: false,
        })
    }

    /// The last segment and its length: where the next entry would go. `None`: no segment.
    pub fn end(&self) -> Result<Option<(u32, u64)>, Error> {
        let Some(last) = self.last_segment()? else {
            return Ok(None);
        };
        let path = self.path(last);
        let len = std::fs::metadata(&path)
            .map_err(io_err("stat value segment", &path))?
            .len();
        Ok(Some((last, len)))
    }

    /// Makes the next append begin a new segment, so that nothing is written after what a
    /// crash left at the log's end (see the module's invariants).
    pub fn start_new_segment(&self) {
        self.new_segment_next.store(true, Ordering::SeqCst);
    }

    /// `start_new_segment`, numbered above `segment` whatever the disk holds: the log is
    /// shorter than the last commit's end, so a missing segment's number is never reused.
    pub fn start_new_segment_after(&self, segment: u32) {
        self.segment_floor.fetch_max(segment, Ordering::SeqCst);
        self.start_new_segment();
    }

    /// Appends `values` in order and makes them durable; returns one pointer per value.
    pub fn append(&self, values: &[&[u8]]) -> Result<Vec<Pointer>, Error> {
        if values.is_empty() {
            return Ok(Vec::new());
        }
        let mut guard = self.tail.lock().unwrap_or_else(|p| p.into_inner());
        // After a failed write (a full disk, a failed fsync) the next append goes to a new
        // segment: the failed one's torn bytes only end it, and ingest resumes without a
        // reopen.
        let broken = guard.as_ref().is_some_and(|t| t.broken);
        if self.new_segment_next.swap(false, Ordering::SeqCst) || broken {
            let last = self.last_segment()?.unwrap_or(0);
            let last = last.max(self.segment_floor.load(Ordering::SeqCst));
            *guard = Some(self.open_tail(next_segment(last)?)?);
        } else if guard.is_none() {
            let segment = self.last_segment()?.unwrap_or(0);
            *guard = Some(self.open_tail(segment)?);
        }
        let mut pointers = Vec::with_capacity(values.len());
        let mut buf = Vec::with_capacity(
            values
                .iter()
                .map(|v| v.len() + ENTRY_HEADER_LEN)
                .sum::<usize>(),
        );
        for value in values {
            let entry_len = (value.len() + ENTRY_HEADER_LEN) as u64;
            let len = u32::try_from(value.len())
                .ok()
                .filter(|_| entry_len <= self.segment_bytes_max)
                .ok_or_else(|| Error::Store {
                    op: "value log append",
                    detail: format!(
                        "a value of {} bytes exceeds the segment size {}",
                        value.len(),
                        self.segment_bytes_max
                    ),
                })?;
            let tail = guard.as_mut().expect("the tail is open");
            if tail.end + buf.len() as u64 + entry_len > self.segment_bytes_max {
                Self::write_synced(tail, &self.dir, &mut buf)?;
                let next = next_segment(tail.segment)?;
                *guard = Some(self.open_tail(next)?);
            }
            let tail = guard.as_mut().expect("the tail is open");
            let crc = crc32fast::hash(value);
            pointers.push(Pointer {
                segment: tail.segment,
                offset: tail.end + buf.len() as u64,
                len,
                crc,
            });
            buf.extend_from_slice(&len.to_le_bytes());
            buf.extend_from_slice(&crc.to_le_bytes());
            buf.extend_from_slice(value);
        }
        let tail = guard.as_mut().expect("the tail is open");
        Self::write_synced(tail, &self.dir, &mut buf)?;
        Ok(pointers)
    }

    /// Writes `buf` at the tail's end and fsyncs it; empties `buf`.
    fn write_synced(tail: &mut Tail, dir: &Path, buf: &mut Vec<u8>) -> Result<(), Error> {
        if tail.broken {
            return Err(Error::Store {
                op: "value log append",
                detail: format!(
                    "segment {} of {} failed earlier; reopen the ledger",
                    segment_file_name(tail.segment),
                    dir.display()
                ),
            });
        }
        if buf.is_empty() {
            return Ok(());
        }
        let path = dir.join(segment_file_name(tail.segment));
        let written = tail
            .file
            .write_all(buf)
            .and_then(|()| tail.file.sync_data());
        if let Err(e) = written {
            // Broken only when bytes of the failed write may be in the file: then they
            // end the segment. A write that left nothing (a full disk refusing the first
            // byte) keeps it, so a long pause does not open a segment per retry.
            let len = tail.file.metadata().map(|m| m.len()).ok();
            tail.broken = len != Some(tail.end);
            return Err(io_err("value log write", &path)(e));
        }
        tail.end += buf.len() as u64;
        buf.clear();
        Ok(())
    }

    fn reader(&self, segment: u32) -> Result<Arc<File>, Error> {
        let mut readers = self.readers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = readers.get(&segment) {
            return Ok(f.clone());
        }
        let path = self.path(segment);
        let file = Arc::new(File::open(&path).map_err(|e| Error::CorruptRecord {
            detail: format!("value segment {} cannot be opened: {e}", path.display()),
        })?);
        if readers.len() >= OPEN_SEGMENTS_MAX {
            // Reads cluster on recent segments; the lowest is the likeliest to be idle.
            readers.pop_first();
        }
        readers.insert(segment, file.clone());
        Ok(file)
    }

    /// The value a pointer names, checked against its header and checksum.
    pub fn read(&self, p: &Pointer) -> Result<Vec<u8>, Error> {
        let where_ = || {
            format!(
                "value segment {} offset {}",
                segment_file_name(p.segment),
                p.offset
            )
        };
        let file = self.reader(p.segment)?;
        // Checked before allocating: a forged length must not make a read allocate gigabytes.
        let file_len = file
            .metadata()
            .map_err(|e| Error::CorruptRecord {
                detail: format!("{}: the segment cannot be read: {e}", where_()),
            })?
            .len();
        let entry_len = ENTRY_HEADER_LEN as u64 + u64::from(p.len);
        if p.offset
            .checked_add(entry_len)
            .is_none_or(|end| end > file_len)
        {
            return Err(Error::CorruptRecord {
                detail: format!(
                    "{}: an entry of {entry_len} bytes there runs past the segment's end ({file_len} bytes)",
                    where_()
                ),
            });
        }
        let mut buf = vec![0u8; entry_len as usize];
        file.read_exact_at(&mut buf, p.offset)
            .map_err(|e| Error::CorruptRecord {
                detail: format!("{}: {} bytes cannot be read: {e}", where_(), buf.len()),
            })?;
        let len = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]);
        let crc = u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]);
        // In place: the header's bytes go, the value stays in this one allocation.
        buf.drain(..ENTRY_HEADER_LEN);
        let value = buf;
        if len != p.len || crc != p.crc {
            return Err(Error::CorruptRecord {
                detail: format!(
                    "{}: the entry's header (length {len}, crc {crc:08x}) is not the pointer's (length {}, crc {:08x})",
                    where_(),
                    p.len,
                    p.crc
                ),
            });
        }
        if crc32fast::hash(&value) != crc {
            return Err(Error::CorruptRecord {
                detail: format!("{}: the bytes do not match their checksum", where_()),
            });
        }
        Ok(value)
    }

    /// A stored value as sled holds it: a pointer is resolved, anything else (a record
    /// stored inline before the value log) is returned as it is.
    pub fn resolve(&self, stored: Vec<u8>) -> Result<Vec<u8>, Error> {
        match Pointer::decode(&stored) {
            Some(p) => self.read(&p),
            None => Ok(stored),
        }
    }
}

/// First byte of a value-log entry that copies a put of `store::RECOVERED_SPACES`. Batch
/// records start with `record::RECORD_VERSION` (1), so the two never meet.
pub const PUT_COPY_TAG: u8 = 0xC7;
const _: () = assert!(PUT_COPY_TAG != crate::record::RECORD_VERSION);

/// The first byte of every value the ledger writes: a batch record or a copied put. A
/// resynchronising scan only takes entries that start so, which makes a false match of a
/// length and checksum inside damaged bytes rarer still.
const VALUE_FIRST_BYTES: [u8; 2] = [crate::record::RECORD_VERSION, PUT_COPY_TAG];

/// Bytes read at a time by a resynchronising scan.
const RESYNC_WINDOW_BYTES: usize = 1 << 20;

impl ValueLog {
    /// The offset of the first whole entry after the bad one at `bad` in its segment, if
    /// any. First where the bad entry's own length says the next begins (a flipped value
    /// byte), then byte by byte (a flipped length): each candidate's length must fit the
    /// segment, its value start as ours do, and its bytes match its checksum.
    pub fn resync(&self, segment: u32, bad: Pointer, file_len: u64) -> Result<Option<u64>, Error> {
        let (_, next) = bad.end();
        if next < file_len && self.entry_at(segment, next, file_len)? {
            return Ok(Some(next));
        }
        let file = self.reader(segment)?;
        let path = self.path(segment);
        let header = ENTRY_HEADER_LEN as u64;
        let mut base = bad.offset + 1;
        while base + header < file_len {
            let n = (file_len - base).min(RESYNC_WINDOW_BYTES as u64 + header) as usize;
            let mut buf = vec![0u8; n];
            file.read_exact_at(&mut buf, base)
                .map_err(io_err("read value segment", &path))?;
            for i in 0..n - ENTRY_HEADER_LEN {
                let len = u32::from_le_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
                let at = base + i as u64;
                if len == 0
                    || !VALUE_FIRST_BYTES.contains(&buf[i + ENTRY_HEADER_LEN])
                    || at + header + u64::from(len) > file_len
                {
                    continue;
                }
                if self.entry_at(segment, at, file_len)? {
                    return Ok(Some(at));
                }
            }
            base += (n - ENTRY_HEADER_LEN) as u64;
        }
        Ok(None)
    }

    /// Whether a whole entry, matching its checksum, starts at `offset` of the segment.
    fn entry_at(&self, segment: u32, offset: u64, file_len: u64) -> Result<bool, Error> {
        if offset + ENTRY_HEADER_LEN as u64 > file_len {
            return Ok(false);
        }
        let mut header = [0u8; ENTRY_HEADER_LEN];
        let path = self.path(segment);
        self.reader(segment)?
            .read_exact_at(&mut header, offset)
            .map_err(io_err("read value segment", &path))?;
        let pointer = Pointer {
            segment,
            offset,
            len: u32::from_le_bytes([header[0], header[1], header[2], header[3]]),
            crc: u32::from_le_bytes([header[4], header[5], header[6], header[7]]),
        };
        if pointer.end().1 > file_len {
            return Ok(false);
        }
        match self.read(&pointer) {
            Ok(_) => Ok(true),
            Err(Error::CorruptRecord { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

fn next_segment(segment: u32) -> Result<u32, Error> {
    segment.checked_add(1).ok_or_else(|| Error::Store {
        op: "value log append",
        detail: "segment numbers exhausted".to_string(),
    })
}

/// What `ValueLog::entries_after` finds, in write order.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// A whole entry whose bytes match its checksum.
    Entry(Pointer, Vec<u8>),
    /// Bytes that are not a whole, checksummed entry: a write cut short by a crash, or
    /// damage. The scan resynchronises on the next whole entry of the segment
    /// (`ValueLog::resync`); with none, it goes on at the next segment (appending never
    /// goes on after such bytes, see the module's invariants), or ends if it was the last.
    Torn {
        /// What was found, with the segment and offset (and, after damage, where the scan
        /// resumed).
        detail: String,
        /// No whole entry follows in the segment and the bad entry runs past its end: a
        /// write cut short. Otherwise damage: whole entries follow it, or the entry is
        /// whole in length and fails its checksum.
        cut: bool,
    },
}

/// The entries from one position to the log's end as it was when the scan began (entries
/// appended during the scan are not part of it).
pub struct Scan<'a> {
    log: &'a ValueLog,
    segment: u32,
    offset: u64,
    /// The last segment and its length when the scan began; `None`: an empty log.
    stop: Option<(u32, u64)>,
}

impl ValueLog {
    /// The entries that begin at or after `offset` of `segment`, up to the log's current
    /// end. A position past a segment's end moves on to the next segment.
    pub fn entries_after(&self, segment: u32, offset: u64) -> Result<Scan<'_>, Error> {
        let stop = self.end()?;
        Ok(Scan {
            log: self,
            segment,
            offset,
            stop,
        })
    }
}

impl ValueLog {
    /// The entries of one segment, to its file's end as it is now.
    pub fn entries_in(&self, segment: u32) -> Result<Scan<'_>, Error> {
        let path = self.path(segment);
        let stop = match std::fs::metadata(&path) {
            Ok(m) => Some((segment, m.len())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_err("stat value segment", &path)(e)),
        };
        Ok(Scan {
            log: self,
            segment,
            offset: 0,
            stop,
        })
    }
}

impl Iterator for Scan<'_> {
    type Item = Result<Found, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (last, last_len) = self.stop?;
            if self.segment > last {
                return None;
            }
            let file_len = match self.segment_len(last, last_len) {
                Ok(len) => len,
                Err(e) => {
                    self.stop = None;
                    return Some(Err(e));
                }
            };
            if self.offset >= file_len {
                self.segment += 1;
                self.offset = 0;
                continue;
            }
            return Some(self.entry(last, file_len));
        }
    }
}

impl Scan<'_> {
    /// The bytes of the current segment to scan: up to the recorded end in the last.
    fn segment_len(&self, last: u32, last_len: u64) -> Result<u64, Error> {
        if self.segment == last {
            return Ok(last_len);
        }
        let path = self.log.path(self.segment);
        match std::fs::metadata(&path) {
            Ok(m) => Ok(m.len()),
            // A segment number never used (the log starts past it): nothing there.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(io_err("stat value segment", &path)(e)),
        }
    }

    /// The entry at the offset, or torn bytes (what follows them in this segment is
    /// skipped); an I/O error ends the scan.
    fn entry(&mut self, last: u32, file_len: u64) -> Result<Found, Error> {
        let at = format!(
            "value segment {} offset {}",
            segment_file_name(self.segment),
            self.offset
        );
        if file_len - self.offset < ENTRY_HEADER_LEN as u64 {
            let left = file_len - self.offset;
            return Ok(self.torn(
                last,
                format!("{at}: {left} bytes, less than an entry's header"),
                true,
            ));
        }
        let path = self.log.path(self.segment);
        let mut header = [0u8; ENTRY_HEADER_LEN];
        let read = self.log.reader(self.segment).and_then(|f| {
            f.read_exact_at(&mut header, self.offset)
                .map_err(io_err("read value segment", &path))
        });
        if let Err(e) = read {
            self.stop = None;
            return Err(e);
        }
        let pointer = Pointer {
            segment: self.segment,
            offset: self.offset,
            len: u32::from_le_bytes([header[0], header[1], header[2], header[3]]),
            crc: u32::from_le_bytes([header[4], header[5], header[6], header[7]]),
        };
        // `read` bounds the length by the segment before allocating, and checks the
        // bytes against the checksum.
        match self.log.read(&pointer) {
            Ok(value) => {
                self.offset = pointer.end().1;
                Ok(Found::Entry(pointer, value))
            }
            Err(Error::CorruptRecord { detail }) => self.damaged(last, file_len, pointer, detail),
            Err(e) => {
                self.stop = None;
                Err(e)
            }
        }
    }

    /// An entry that fails its checks at `bad`: the scan resynchronises on the next whole
    /// entry of the segment, if any (damage), or the segment ends there (a write cut short
    /// when the entry runs past the end).
    fn damaged(
        &mut self,
        last: u32,
        file_len: u64,
        bad: Pointer,
        detail: String,
    ) -> Result<Found, Error> {
        let resumed = match self.log.resync(self.segment, bad, file_len) {
            Ok(r) => r,
            Err(e) => {
                self.stop = None;
                return Err(e);
            }
        };
        if let Some(next) = resumed {
            let skipped = next - bad.offset;
            self.offset = next;
            return Ok(Found::Torn {
                detail: format!(
                    "{detail} ({skipped} bytes skipped to the next whole entry, at offset {next})"
                ),
                cut: false,
            });
        }
        let cut = bad.offset + ENTRY_HEADER_LEN as u64 + u64::from(bad.len) > file_len;
        Ok(self.torn(last, detail, cut))
    }

    /// Torn bytes (`detail` names the segment and offset): the scan goes on at the next
    /// segment, or ends in the last.
    fn torn(&mut self, last: u32, detail: String, cut: bool) -> Found {
        if self.segment < last {
            self.segment += 1;
            self.offset = 0;
        } else {
            self.stop = None;
        }
        Found::Torn { detail, cut }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pointer read from a tampered store may name any offset: where its entry ends is
    /// computed without overflow.
    #[test]
    fn the_end_of_a_pointer_at_the_last_offset_does_not_overflow() {
        let p = Pointer {
            segment: 3,
            offset: u64::MAX - 1,
            len: u32::MAX,
            crc: 0,
        };
        assert_eq!(p.end(), (3, u64::MAX));
        let decoded = Pointer::decode(&p.encode()).expect("decodes");
        assert_eq!(decoded.end(), (3, u64::MAX));
    }

    #[test]
    fn values_read_back_and_every_damage_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = ValueLog::open(dir.path()).expect("open");
        let a = b"first value".to_vec();
        let b = vec![7u8; 5000];
        let ptrs = log.append(&[&a, &b]).expect("append");
        assert_eq!(ptrs[0].offset, 0);
        assert_eq!(ptrs[1].offset, (ENTRY_HEADER_LEN + a.len()) as u64);
        assert_eq!(log.read(&ptrs[0]).expect("a"), a);
        assert_eq!(log.read(&ptrs[1]).expect("b"), b);
        let encoded = ptrs[1].encode();
        assert_eq!(encoded.len(), POINTER_LEN);
        assert_eq!(Pointer::decode(&encoded), Some(ptrs[1]));
        assert_eq!(log.resolve(encoded).expect("resolve"), b);
        // A legacy inline record passes through.
        assert_eq!(log.resolve(vec![1, 2, 3]).expect("inline"), vec![1, 2, 3]);
        drop(log);

        // Reopened, appends continue after what is there.
        let log = ValueLog::open(dir.path()).expect("reopen");
        let c = log.append(&[b"third"]).expect("append")[0];
        assert_eq!(
            c.offset,
            ptrs[1].offset + (ENTRY_HEADER_LEN + b.len()) as u64
        );
        assert_eq!(log.read(&c).expect("c"), b"third");

        // A flipped byte in a value, a pointer with another length, past the end.
        let seg = segment_path(dir.path(), 0);
        let mut data = std::fs::read(&seg).expect("read");
        data[ptrs[1].offset as usize + ENTRY_HEADER_LEN + 10] ^= 1;
        std::fs::write(&seg, &data).expect("write");
        let log = ValueLog::open(dir.path()).expect("reopen");
        let e = log.read(&ptrs[1]).expect_err("flipped");
        assert!(e.to_string().contains("do not match their checksum"), "{e}");
        let e = log
            .read(&Pointer { len: 4, ..ptrs[0] })
            .expect_err("other length");
        assert!(e.to_string().contains("is not the pointer's"), "{e}");
        let e = log
            .read(&Pointer {
                offset: 1 << 20,
                ..ptrs[0]
            })
            .expect_err("past the end");
        assert!(e.to_string().contains("runs past the segment's end"), "{e}");
        let e = log
            .read(&Pointer {
                len: u32::MAX,
                ..ptrs[0]
            })
            .expect_err("a forged length");
        assert!(e.to_string().contains("runs past the segment's end"), "{e}");
        let e = log
            .read(&Pointer {
                segment: 9,
                ..ptrs[0]
            })
            .expect_err("no such segment");
        assert!(e.to_string().contains("cannot be opened"), "{e}");
        assert_eq!(log.read(&ptrs[0]).expect("a still reads"), a);
    }

    #[test]
    fn a_full_segment_closes_and_the_next_one_opens() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = ValueLog::open_sized(dir.path(), 100).expect("open");
        let v = [0x5au8; 40];
        // Two 48-byte entries fit in 100 bytes; the third starts segment 1, in the same
        // call as well as in a later one.
        let ptrs = log.append(&[&v, &v, &v]).expect("append");
        let more = log.append(&[&v, &v]).expect("append");
        let places: Vec<(u32, u64)> = ptrs
            .iter()
            .chain(&more)
            .map(|p| (p.segment, p.offset))
            .collect();
        assert_eq!(places, [(0, 0), (0, 48), (1, 0), (1, 48), (2, 0)]);
        for p in ptrs.iter().chain(&more) {
            assert_eq!(log.read(p).expect("read"), v);
        }
        drop(log);
        // Reopened: appends go to the last segment.
        let log = ValueLog::open_sized(dir.path(), 100).expect("reopen");
        let p = log.append(&[&v]).expect("append")[0];
        assert_eq!((p.segment, p.offset), (2, 48));
        let e = log
            .append(&[&[0u8; 93]])
            .expect_err("larger than a segment");
        assert!(
            e.to_string().contains("exceeds the segment size 100"),
            "{e}"
        );
    }

    #[test]
    fn a_scan_finds_the_entries_after_a_position_across_segments_and_goes_past_torn_bytes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = ValueLog::open_sized(dir.path(), 100).expect("open");
        let values: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; 40]).collect();
        let refs: Vec<&[u8]> = values.iter().map(|v| v.as_slice()).collect();
        let ptrs = log.append(&refs).expect("append");
        let found = |scan: Scan| -> Vec<Found> { scan.map(|f| f.expect("scan")).collect() };

        // From the end of the second entry: the third to the fifth, over two segments.
        let (segment, offset) = ptrs[1].end();
        let after = found(log.entries_after(segment, offset).expect("scan"));
        let want: Vec<Found> = (2..5)
            .map(|i| Found::Entry(ptrs[i], values[i].clone()))
            .collect();
        assert_eq!(after, want);
        // From the log's end, and from a position past a segment's end: nothing.
        let (segment, offset) = ptrs[4].end();
        assert!(found(log.entries_after(segment, offset).expect("scan")).is_empty());
        assert_eq!(
            found(log.entries_after(0, 4096).expect("scan")),
            want,
            "a position past segment 0's end moves on to segment 1"
        );

        // A write cut short: half a header at the end of the last segment.
        let last = segment_path(dir.path(), 2);
        let mut data = std::fs::read(&last).expect("read");
        data.extend_from_slice(&[9, 0, 0]);
        std::fs::write(&last, &data).expect("write");
        let after = found(log.entries_after(2, 0).expect("scan"));
        assert_eq!(after.len(), 2);
        assert_eq!(after[0], Found::Entry(ptrs[4], values[4].clone()));
        assert!(
            matches!(&after[1], Found::Torn { detail, cut: true } if detail.contains("00000002.seg offset 48: 3 bytes, less than an entry's header")),
            "{:?}",
            after[1]
        );

        // A header whose length runs past the end: torn there.
        data.truncate(48);
        data.extend_from_slice(&1000u32.to_le_bytes());
        data.extend_from_slice(&[0u8; 12]);
        std::fs::write(&last, &data).expect("write");
        let after = found(log.entries_after(2, 0).expect("scan"));
        assert!(
            matches!(&after[1], Found::Torn { detail, cut: true } if detail.contains("runs past the segment's end")),
            "{after:?}"
        );
        // A flipped value byte: damage, skipped; the scan resynchronises on the entry after
        // it in the same segment, so nothing whole is hidden.
        let seg1 = segment_path(dir.path(), 1);
        let mut one = std::fs::read(&seg1).expect("read");
        one[ENTRY_HEADER_LEN + 3] ^= 1;
        std::fs::write(&seg1, &one).expect("write");
        let after = found(log.entries_after(1, 0).expect("scan"));
        assert_eq!(after.len(), 4, "{after:?}");
        assert!(
            matches!(&after[0], Found::Torn { detail, cut: false } if detail.contains("do not match their checksum") && detail.contains("48 bytes skipped")),
            "{after:?}"
        );
        assert_eq!(after[1], Found::Entry(ptrs[3], values[3].clone()));
        assert_eq!(after[2], Found::Entry(ptrs[4], values[4].clone()));
        assert!(
            matches!(&after[3], Found::Torn { detail, cut: true } if detail.contains("00000002.seg offset 48")),
            "{after:?}"
        );
    }

    /// Values that start as the ledger's do (a record's version byte), so the byte-by-byte
    /// resynchronisation takes them.
    fn record_like(i: u8, len: usize) -> Vec<u8> {
        let mut v = vec![i; len];
        v[0] = crate::record::RECORD_VERSION;
        v
    }

    /// A flipped bit in an entry's length, its checksum or its value, in the last segment:
    /// every whole entry after it is still found, and the damage is not "a write cut
    /// short". Each bit of the header is tried.
    #[test]
    fn a_flipped_header_bit_hides_no_entry_after_it() {
        let values: Vec<Vec<u8>> = (0..6u8)
            .map(|i| record_like(i, 30 + 7 * i as usize))
            .collect();
        let refs: Vec<&[u8]> = values.iter().map(|v| v.as_slice()).collect();
        for bit in 0..(ENTRY_HEADER_LEN * 8 + 8) {
            let dir = tempfile::tempdir().expect("tempdir");
            let log = ValueLog::open(dir.path()).expect("open");
            let ptrs = log.append(&refs).expect("append");
            let seg = segment_path(dir.path(), 0);
            let mut data = std::fs::read(&seg).expect("read");
            // The second entry; bits past the header flip its value's first bytes.
            data[ptrs[1].offset as usize + bit / 8] ^= 1 << (bit % 8);
            std::fs::write(&seg, &data).expect("write");
            let after: Vec<Found> = log
                .entries_after(0, 0)
                .expect("scan")
                .map(|f| f.expect("scan"))
                .collect();
            assert_eq!(after.len(), 6, "bit {bit}: {after:?}");
            assert_eq!(after[0], Found::Entry(ptrs[0], values[0].clone()));
            assert!(
                matches!(&after[1], Found::Torn { cut: false, detail } if detail.contains("offset 38")),
                "bit {bit}: {after:?}"
            );
            for i in 2..6 {
                assert_eq!(
                    after[i],
                    Found::Entry(ptrs[i], values[i].clone()),
                    "bit {bit}"
                );
            }
        }
    }

    /// The last entry damaged in full length is damage; cut short, it is a torn tail.
    #[test]
    fn a_bad_last_entry_is_damage_whole_and_torn_when_cut() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = ValueLog::open(dir.path()).expect("open");
        let a = record_like(1, 50);
        let ptrs = log.append(&[&a, &a]).expect("append");
        let seg = segment_path(dir.path(), 0);
        let mut data = std::fs::read(&seg).expect("read");
        data[ptrs[1].offset as usize + ENTRY_HEADER_LEN + 20] ^= 4;
        std::fs::write(&seg, &data).expect("write");
        let scan = |log: &ValueLog| -> Vec<Found> {
            log.entries_after(0, 0)
                .expect("scan")
                .map(|f| f.expect("scan"))
                .collect()
        };
        let after = scan(&log);
        assert!(
            matches!(&after[1], Found::Torn { cut: false, .. }),
            "{after:?}"
        );
        data.truncate(data.len() - 5);
        std::fs::write(&seg, &data).expect("write");
        let after = scan(&log);
        assert_eq!(after.len(), 2, "{after:?}");
        assert!(
            matches!(&after[1], Found::Torn { cut: true, .. }),
            "{after:?}"
        );
    }

    #[test]
    fn after_start_new_segment_the_next_append_begins_one_and_a_scan_passes_torn_bytes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = ValueLog::open(dir.path()).expect("open");
        let first = log.append(&[b"one".as_slice()]).expect("append");
        drop(log);
        let seg0 = segment_path(dir.path(), 0);
        let mut data = std::fs::read(&seg0).expect("read");
        data.extend_from_slice(&[7, 0]);
        std::fs::write(&seg0, &data).expect("write");

        let log = ValueLog::open(dir.path()).expect("reopen");
        assert_eq!(log.end().expect("end"), Some((0, data.len() as u64)));
        log.start_new_segment();
        let next = log.append(&[b"two".as_slice()]).expect("append");
        assert_eq!((next[0].segment, next[0].offset), (1, 0));
        assert_eq!(
            std::fs::read(&seg0).expect("read"),
            data,
            "segment 0 untouched"
        );
        let (segment, offset) = first[0].end();
        let after: Vec<Found> = log
            .entries_after(segment, offset)
            .expect("scan")
            .map(|f| f.expect("scan"))
            .collect();
        assert_eq!(after.len(), 2, "the torn bytes, then segment 1: {after:?}");
        assert!(
            matches!(&after[0], Found::Torn { detail, .. } if detail.contains("00000000.seg offset 11")),
            "{after:?}"
        );
        assert_eq!(after[1], Found::Entry(next[0], b"two".to_vec()));
        // Once: the append after that one goes on in segment 1.
        let third = log.append(&[b"three".as_slice()]).expect("append");
        assert_eq!((third[0].segment, third[0].offset), (1, next[0].end().1));
    }

    #[test]
    fn a_scan_ends_where_the_log_ended_when_it_began() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = ValueLog::open(dir.path()).expect("open");
        assert!(
            log.entries_after(0, 0).expect("scan").next().is_none(),
            "empty log"
        );
        let first = log.append(&[b"one", b"two"]).expect("append");
        let mut scan = log.entries_after(0, 0).expect("scan");
        assert_eq!(
            scan.next().map(|f| f.expect("entry")),
            Some(Found::Entry(first[0], b"one".to_vec()))
        );
        // Appended while scanning (as recovery does when it re-appends): not part of it.
        log.append(&[b"three"]).expect("append");
        assert_eq!(
            scan.next().map(|f| f.expect("entry")),
            Some(Found::Entry(first[1], b"two".to_vec()))
        );
        assert!(scan.next().is_none());
    }

    #[test]
    fn malformed_pointers_are_not_pointers() {
        let p = Pointer {
            segment: 1,
            offset: 2,
            len: 3,
            crc: 4,
        };
        let mut v = p.encode();
        assert_eq!(Pointer::decode(&v), Some(p));
        v.push(0);
        assert_eq!(Pointer::decode(&v), None);
        v.pop();
        v[0] = 1;
        assert_eq!(Pointer::decode(&v), None);
        assert_eq!(Pointer::decode(&[]), None);
    }
}
