//! On-disk encodings of keys and values. All integers in keys are big-endian so the store's
//! byte order is numeric order; signed times are stored with the sign bit flipped for the
//! same reason. Values are little-endian, length-prefixed, hand-written (no codec crate), so
//! the format stays readable without any dependency. Parsing never panics: a tampered or
//! truncated value is `Error::CorruptRecord`.
//!
//! Batch record (version 1): `0x01`, event count (u32), then per event:
//! `seq u64, stream_seq u64, received_at_ns i64, occurred_at_ns i64, round flag u8,
//! round u64, hash [32], byte length u32, bytes`. The events of one record are consecutive
//! seqs of one table; the key's first seq is the first event's seq.

use crate::error::Error;
use schemas::{Hash32, RoundId, Seq, TableId};

/// One stored event as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// The event's position in its table's chain.
    pub seq: Seq,
    /// `schemas::chain::event_hash` over the stored bytes: the next event's prev.
    pub hash: Hash32,
    /// JetStream stream sequence: the House's arrival order across tables.
    pub stream_seq: u64,
    /// When the House received it (its stream timestamp), UTC ns.
    pub received_at_ns: i64,
    /// Copied from the decoded event (device clock); `verify` checks it against the bytes.
    pub occurred_at_ns: i64,
    /// Copied from the decoded event; `verify` checks it against the bytes.
    pub round: Option<RoundId>,
    /// The exact bytes as received.
    pub bytes: Vec<u8>,
}

/// Version byte of batch records.
pub const RECORD_VERSION: u8 = 1;

/// `len (u8) ++ table id bytes`: prefix-free, so one table's keys never run into another's.
pub fn table_key(table: &TableId) -> Vec<u8> {
    let s = table.as_str().as_bytes();
    // Table ids are at most schemas::ids::ID_LEN_MAX (32) bytes: the length fits a u8.
    assert!(
        s.len() <= u8::MAX as usize,
        "table id longer than 255 bytes"
    );
    let mut k = Vec::with_capacity(s.len() + 9);
    k.push(s.len() as u8);
    k.extend_from_slice(s);
    k
}

/// Splits `table key ++ rest`, checking the table id's grammar.
pub fn split_table_key(key: &[u8]) -> Result<(TableId, &[u8]), Error> {
    let len = *key.first().ok_or_else(|| corrupt("empty key"))? as usize;
    let id = key
        .get(1..1 + len)
        .ok_or_else(|| corrupt("key shorter than its table id"))?;
    let id = std::str::from_utf8(id).map_err(|_| corrupt("table id in key is not UTF-8"))?;
    let table = TableId::new(id).map_err(|e| corrupt(&format!("table id in key: {e}")))?;
    Ok((table, &key[1 + len..]))
}

/// `table_key ++ seq (u64 BE)`: one table's keys sort by seq.
pub fn seq_key(table: &TableId, seq: u64) -> Vec<u8> {
    let mut k = table_key(table);
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// i64 to big-endian bytes that sort numerically (sign bit flipped).
pub fn ord_i64(v: i64) -> [u8; 8] {
    ((v as u64) ^ (1 << 63)).to_be_bytes()
}

/// Reads a big-endian u64 of exactly 8 bytes.
pub fn be_u64(b: &[u8]) -> Result<u64, Error> {
    let a: [u8; 8] = b.try_into().map_err(|_| corrupt("expected 8 bytes"))?;
    Ok(u64::from_be_bytes(a))
}

/// The error for a stored value or key that does not decode.
pub fn corrupt(what: &str) -> Error {
    Error::CorruptRecord {
        detail: what.to_string(),
    }
}

/// Little-endian writer.
#[derive(Default)]
pub struct W(pub Vec<u8>);

impl W {
    /// Appends one byte.
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    /// Appends a little-endian u32.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Appends a little-endian u64.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Appends a little-endian i64.
    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Appends the bytes with no length.
    pub fn raw(&mut self, v: &[u8]) -> &mut Self {
        self.0.extend_from_slice(v);
        self
    }
    /// u32 length then the bytes.
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        // Every stored byte string is bounded far below 4 GiB (EVENT_LEN_MAX, id lengths).
        assert!(v.len() <= u32::MAX as usize);
        self.u32(v.len() as u32).raw(v)
    }
}

/// Little-endian reader that fails instead of panicking.
pub struct R<'a> {
    b: &'a [u8],
}

impl<'a> R<'a> {
    /// A reader over `b`, from its start.
    pub fn new(b: &'a [u8]) -> Self {
        R { b }
    }
    /// The next `n` bytes; an error when fewer are left.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        if self.b.len() < n {
            return Err(corrupt("value truncated"));
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Ok(h)
    }
    /// Reads one byte.
    pub fn u8(&mut self) -> Result<u8, Error> {
        Ok(self.take(1)?[0])
    }
    /// Reads a little-endian u32.
    pub fn u32(&mut self) -> Result<u32, Error> {
        let a: [u8; 4] = self.take(4)?.try_into().map_err(|_| corrupt("u32"))?;
        Ok(u32::from_le_bytes(a))
    }
    /// Reads a little-endian u64.
    pub fn u64(&mut self) -> Result<u64, Error> {
        let a: [u8; 8] = self.take(8)?.try_into().map_err(|_| corrupt("u64"))?;
        Ok(u64::from_le_bytes(a))
    }
    /// Reads a little-endian i64.
    pub fn i64(&mut self) -> Result<i64, Error> {
        Ok(self.u64()? as i64)
    }
    /// Reads a 32-byte hash.
    pub fn hash(&mut self) -> Result<Hash32, Error> {
        let a: [u8; 32] = self.take(32)?.try_into().map_err(|_| corrupt("hash"))?;
        Ok(Hash32(a))
    }
    /// Reads a u32 length, then that many bytes.
    pub fn bytes(&mut self) -> Result<&'a [u8], Error> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.b.is_empty()
    }
    /// What is left unread.
    pub fn rest(&self) -> &'a [u8] {
        self.b
    }
}

/// Encodes one batch record.
pub fn encode_record(events: &[StoredEvent]) -> Vec<u8> {
    let size: usize = events.iter().map(|e| 86 + e.bytes.len()).sum();
    let mut w = W(Vec::with_capacity(5 + size));
    w.u8(RECORD_VERSION).u32(events.len() as u32);
    for e in events {
        w.u64(e.seq.0)
            .u64(e.stream_seq)
            .i64(e.received_at_ns)
            .i64(e.occurred_at_ns);
        match e.round {
            Some(r) => w.u8(1).u64(r.0),
            None => w.u8(0).u64(0),
        };
        w.raw(&e.hash.0).bytes(&e.bytes);
    }
    w.0
}

/// Decodes one batch record.
pub fn decode_record(v: &[u8]) -> Result<Vec<StoredEvent>, Error> {
    let mut r = R::new(v);
    let version = r.u8()?;
    if version != RECORD_VERSION {
        return Err(corrupt(&format!("record version {version}")));
    }
    let n = r.u32()? as usize;
    // Each event takes at least 81 bytes: refuse counts the value cannot hold.
    if n > v.len() / 81 {
        return Err(corrupt("event count larger than the record"));
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let seq = Seq(r.u64()?);
        let stream_seq = r.u64()?;
        let received_at_ns = r.i64()?;
        let occurred_at_ns = r.i64()?;
        let flag = r.u8()?;
        let round_no = r.u64()?;
        let round = match flag {
            0 => None,
            1 => Some(RoundId(round_no)),
            _ => return Err(corrupt("round flag")),
        };
        let hash = r.hash()?;
        let bytes = r.bytes()?.to_vec();
        out.push(StoredEvent {
            seq,
            hash,
            stream_seq,
            received_at_ns,
            occurred_at_ns,
            round,
            bytes,
        });
    }
    if !r.is_empty() {
        return Err(corrupt("trailing bytes after the record's events"));
    }
    Ok(out)
}
