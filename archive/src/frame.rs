//! One table's frame: its events as records, compressed alone so that a lookup reads one
//! table's day, not the whole file.
//!
//! A record: stream seq and arrival time as zigzag deltas from the previous record, the
//! slot of the blanked `prev` field, the length, the bytes. The slot is 0 when the bytes
//! do not hold `prev`, `2k + 1` for raw bytes at offset k (bincode), `2k + 2` for lowercase
//! hex at offset k (JSON).

use crate::{
    read_header, ArchiveError, DayEvent, DayHeader, TableDay, TableSpan, DAY_FORMAT, DAY_VERSION,
    FRAME_RAW_LEN_MAX, HEADER_LEN_MAX, MAGIC, TABLE_EVENTS_MAX, ZSTD_LEVEL,
};
use schemas::chain::event_hash;
use schemas::codec::EVENT_LEN_MAX;
use schemas::Hash32;
use std::io::Read;

/// Writes a day file: the header, then one frame per table, in the order given.
pub fn write_day(day: &str, seal: &[u8], tables: &[TableDay]) -> Result<Vec<u8>, ArchiveError> {
    let mut w = DayWriter::new(day, seal);
    for t in tables {
        w.add(t)?;
    }
    w.finish()
}

/// A day file built one table at a time: only the compressed frames are held, so a
/// caller can read each table's events, add them and drop them.
pub struct DayWriter {
    header: DayHeader,
    frames: Vec<Vec<u8>>,
}

impl DayWriter {
    /// An empty day file for the gaming day `day` (`2026-11-25`) and its seal's exact bytes.
    pub fn new(day: &str, seal: &[u8]) -> DayWriter {
        DayWriter {
            header: DayHeader {
                format: DAY_FORMAT.into(),
                version: DAY_VERSION,
                day: day.into(),
                seal: hex(seal),
                tables: Vec::new(),
            },
            frames: Vec::new(),
        }
    }

    /// Checks and compresses one table's range.
    pub fn add(&mut self, t: &TableDay) -> Result<(), ArchiveError> {
        let (raw, head) = encode(t)?;
        let frame = zstd::bulk::compress(&raw, ZSTD_LEVEL)?;
        self.header.tables.push(TableSpan {
            table: t.table.clone(),
            first_seq: t.events.first().map_or(0, |e| e.seq),
            last_seq: t.events.last().map_or(0, |e| e.seq),
            anchor: t.anchor,
            head,
            frame_offset: 0,
            frame_len: frame.len() as u64,
            raw_len: raw.len() as u64,
            raw_blake3: Hash32(*blake3::hash(&raw).as_bytes()),
        });
        self.frames.push(frame);
        Ok(())
    }

    /// The file: magic, header, frames.
    pub fn finish(self) -> Result<Vec<u8>, ArchiveError> {
        let DayWriter { mut header, frames } = self;
        // Offsets depend on the header's length, which depends on the offsets' digits:
        // place the frames after a header written with the widest offsets, padded to it.
        let json_len = header_json(&header, u64::MAX)?.len();
        let mut offset = (MAGIC.len() + 4 + json_len) as u64;
        for s in &mut header.tables {
            s.frame_offset = offset;
            offset += s.frame_len;
        }
        let mut json =
            serde_json::to_vec(&header).map_err(|e| ArchiveError::Format(e.to_string()))?;
        assert!(
            json.len() <= json_len,
            "a header never grows past its widest form"
        );
        json.resize(json_len, b' ');
        let mut out = Vec::with_capacity(offset as usize);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(json_len as u32).to_be_bytes());
        out.extend_from_slice(&json);
        frames.iter().for_each(|f| out.extend_from_slice(f));
        debug_assert_eq!(out.len() as u64, offset);
        Ok(out)
    }
}

/// The header as JSON with every offset set to `offset` (to size it).
fn header_json(h: &DayHeader, offset: u64) -> Result<Vec<u8>, ArchiveError> {
    let mut h = h.clone();
    h.tables.iter_mut().for_each(|s| s.frame_offset = offset);
    serde_json::to_vec(&h).map_err(|e| ArchiveError::Format(e.to_string()))
}

/// The records of one table's range, and the head they end at.
fn encode(t: &TableDay) -> Result<(Vec<u8>, Hash32), ArchiveError> {
    let fail = |seq: u64, what: &str| ArchiveError::Event {
        table: t.table.clone(),
        seq,
        what: what.into(),
    };
    let mut raw = Vec::new();
    let (mut prev, mut stream, mut at) = (t.anchor, 0u64, 0i64);
    for (i, e) in t.events.iter().enumerate() {
        if i > 0 && e.seq != t.events[i - 1].seq + 1 {
            return Err(fail(e.seq, "seqs are not contiguous"));
        }
        if event_hash(&prev, &e.bytes) != e.hash {
            return Err(fail(
                e.seq,
                "the stored hash does not follow from the chain",
            ));
        }
        let (slot, blanked) = blank_prev(&e.bytes, &prev);
        put_varint(&mut raw, zigzag(e.stream_seq.wrapping_sub(stream) as i64));
        put_varint(&mut raw, zigzag(e.received_at_ns.wrapping_sub(at)));
        put_varint(&mut raw, slot);
        put_varint(&mut raw, blanked.len() as u64);
        raw.extend_from_slice(&blanked);
        (prev, stream, at) = (e.hash, e.stream_seq, e.received_at_ns);
    }
    Ok((raw, prev))
}

/// The header's span of `table`, or why the file has none.
fn table_span(header: DayHeader, table: &str) -> Result<TableSpan, ArchiveError> {
    header
        .tables
        .into_iter()
        .find(|s| s.table == table)
        .ok_or_else(|| ArchiveError::Format(format!("no table {table} in the day file")))
}

/// Reads and checks one table's range of a day file: frame digest, every hash from the
/// anchor, the head. The caller checks anchor and head against the seal.
pub fn read_table(file: &[u8], table: &str) -> Result<(TableSpan, Vec<DayEvent>), ArchiveError> {
    let (header, body_at) = read_header(file)?;
    let span = table_span(header, table)?;
    let fail = |what: String| ArchiveError::Table {
        table: table.into(),
        what,
    };
    let end = span.frame_offset.checked_add(span.frame_len);
    let frame = match end {
        Some(end) if span.frame_offset >= body_at as u64 && end <= file.len() as u64 => {
            &file[span.frame_offset as usize..end as usize]
        }
        _ => return Err(fail("the frame lies outside the file".into())),
    };
    if span.raw_len > FRAME_RAW_LEN_MAX {
        return Err(fail(format!(
            "frame of {} bytes is over the limit",
            span.raw_len
        )));
    }
    let raw = zstd::bulk::decompress(frame, span.raw_len as usize)
        .map_err(|e| fail(format!("the frame does not decompress: {e}")))?;
    if raw.len() as u64 != span.raw_len || *blake3::hash(&raw).as_bytes() != span.raw_blake3.0 {
        return Err(fail("the frame's digest differs from the header's".into()));
    }
    let events = decode(&span, &raw)?;
    Ok((span, events))
}

/// Reads and checks one table's range from a day file on disk, reading only the header
/// and that table's frame: the file may hold a whole floor's day.
pub fn read_table_from<R: std::io::Read + std::io::Seek>(
    r: &mut R,
    table: &str,
) -> Result<(TableSpan, Vec<DayEvent>), ArchiveError> {
    r.seek(std::io::SeekFrom::Start(0))?;
    let (header, body_at) = read_header_from(r)?;
    let span = table_span(header, table)?;
    let fail = |what: String| ArchiveError::Table {
        table: table.into(),
        what,
    };
    if span.frame_offset < body_at as u64 || span.frame_len > FRAME_RAW_LEN_MAX {
        return Err(fail("the frame lies outside the file".into()));
    }
    if span.raw_len > FRAME_RAW_LEN_MAX {
        return Err(fail(format!(
            "frame of {} bytes is over the limit",
            span.raw_len
        )));
    }
    r.seek(std::io::SeekFrom::Start(span.frame_offset))?;
    let mut frame = Vec::new();
    r.take(span.frame_len).read_to_end(&mut frame)?;
    if frame.len() as u64 != span.frame_len {
        return Err(fail("the frame lies outside the file".into()));
    }
    let raw = zstd::bulk::decompress(&frame, span.raw_len as usize)
        .map_err(|e| fail(format!("the frame does not decompress: {e}")))?;
    if raw.len() as u64 != span.raw_len || *blake3::hash(&raw).as_bytes() != span.raw_blake3.0 {
        return Err(fail("the frame's digest differs from the header's".into()));
    }
    let events = decode(&span, &raw)?;
    Ok((span, events))
}

/// Reads the header from the start of a day file on disk; gives it and where frames start.
pub fn read_header_from<R: std::io::Read>(r: &mut R) -> Result<(DayHeader, usize), ArchiveError> {
    let mut start = [0u8; MAGIC.len() + 4];
    r.read_exact(&mut start)
        .map_err(|_| ArchiveError::Format("the magic bytes are missing".into()))?;
    let len = u32::from_be_bytes([start[8], start[9], start[10], start[11]]) as usize;
    if len > HEADER_LEN_MAX {
        return Err(ArchiveError::Format(
            "the header length is out of range".into(),
        ));
    }
    let mut file = start.to_vec();
    file.resize(start.len() + len, 0);
    r.read_exact(&mut file[start.len()..])
        .map_err(|_| ArchiveError::Format("the header length is out of range".into()))?;
    read_header(&file)
}

/// The records of a frame, every hash recomputed from the anchor.
fn decode(span: &TableSpan, raw: &[u8]) -> Result<Vec<DayEvent>, ArchiveError> {
    let count = match span.last_seq.checked_sub(span.first_seq) {
        Some(n) if span.first_seq > 0 && n < TABLE_EVENTS_MAX => n + 1,
        _ if span.first_seq == 0 && span.last_seq == 0 => 0,
        _ => {
            return Err(ArchiveError::Format(format!(
                "{}: bad seq range",
                span.table
            )))
        }
    };
    let mut r = Reader { raw, at: 0 };
    let mut events = Vec::with_capacity(count.min(1 << 16) as usize);
    let (mut prev, mut stream, mut at) = (span.anchor, 0u64, 0i64);
    for seq in span.first_seq..span.first_seq + count {
        let fail = |what: &str| ArchiveError::Event {
            table: span.table.clone(),
            seq,
            what: what.into(),
        };
        let stream_seq =
            stream.wrapping_add(unzigzag(r.varint().ok_or_else(|| fail("cut"))?) as u64);
        let received_at_ns = at.wrapping_add(unzigzag(r.varint().ok_or_else(|| fail("cut"))?));
        let slot = r.varint().ok_or_else(|| fail("cut"))?;
        let len = r.varint().filter(|&l| l as usize <= EVENT_LEN_MAX);
        let mut bytes = r
            .take(len.ok_or_else(|| fail("bad length"))? as usize)
            .ok_or_else(|| fail("cut"))?;
        restore_prev(&mut bytes, slot, &prev).ok_or_else(|| fail("bad prev slot"))?;
        let hash = event_hash(&prev, &bytes);
        events.push(DayEvent {
            seq,
            hash,
            stream_seq,
            received_at_ns,
            bytes,
        });
        (prev, stream, at) = (hash, stream_seq, received_at_ns);
    }
    if r.at != raw.len() {
        return Err(ArchiveError::Format(format!(
            "{}: bytes after the last event",
            span.table
        )));
    }
    if prev != span.head {
        return Err(ArchiveError::Table {
            table: span.table.clone(),
            what: "the recomputed chain does not end at the header's head".into(),
        });
    }
    Ok(events)
}

/// The bytes with `prev` blanked (zeros, or '0' digits), and where it was.
fn blank_prev(bytes: &[u8], prev: &Hash32) -> (u64, Vec<u8>) {
    let mut out = bytes.to_vec();
    if let Some(k) = find(bytes, &prev.0) {
        out[k..k + 32].fill(0);
        return (2 * k as u64 + 1, out);
    }
    let hex = hex(&prev.0);
    if let Some(k) = find(bytes, hex.as_bytes()) {
        out[k..k + 64].fill(b'0');
        return (2 * k as u64 + 2, out);
    }
    (0, out)
}

/// Puts `prev` back where `slot` says; None when the slot lies outside the bytes.
fn restore_prev(bytes: &mut [u8], slot: u64, prev: &Hash32) -> Option<()> {
    if slot == 0 {
        return Some(());
    }
    let k = ((slot - 1) / 2) as usize;
    let fill: Vec<u8> = if slot % 2 == 1 {
        prev.0.to_vec()
    } else {
        hex(&prev.0).into_bytes()
    };
    bytes
        .get_mut(k..k.checked_add(fill.len())?)?
        .copy_from_slice(&fill);
    Some(())
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A cursor over a frame's records; None at the end or on a malformed varint.
struct Reader<'a> {
    raw: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.raw.get(self.at)?;
            self.at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    fn take(&mut self, n: usize) -> Option<Vec<u8>> {
        let s = self.raw.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s.to_vec())
    }
}
