//! What compaction (`tier::compact`) needs of the value log: its closed segments, what
//! still points into each, their recovery copies, and the removal of a retired one.
//!
//! A segment is closed when it is below both the segment of the last commit's end and the
//! log's last segment: nothing is appended to it again, and recovery never scans it.
//!
//! Invariants:
//! - A segment is removed only once its retirement is durable in sled
//!   (`RETIRED_KEY_PREFIX`), and only if no record of `Space::Batch` and no quarantine
//!   entry still points into it.
//! - Damage that may hide entries (an entry inside the file failing its checksum) makes
//!   `segment_copies` an error: a segment is never retired on a partial read. Bytes a
//!   crash cut short only end a segment (`valuelog`), so they hide nothing.

use super::{decode_put_copy, full_key, store_err, SledStore, Space, Unreferenced, PUT_COPY_TAG};
use crate::error::Error;
use crate::valuelog::{segment_file_name, Found, Pointer};
use serde::{Deserialize, Serialize};

/// `Space::Meta` key prefix of a retired segment: `prefix ++ segment (u32 BE)`.
pub const RETIRED_KEY_PREFIX: &[u8] = b"retired_segment/";

/// Most records one segment's relocation lists (a 1 GiB segment of 100-byte records).
pub const SEGMENT_RECORDS_MAX: usize = 12_000_000;

/// The `Space::Meta` key of a retired segment.
pub fn retired_key(segment: u32) -> Vec<u8> {
    let mut k = RETIRED_KEY_PREFIX.to_vec();
    k.extend_from_slice(&segment.to_be_bytes());
    k
}

/// A closed segment and what still points into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentUse {
    /// The segment's number.
    pub segment: u32,
    /// Its file's length in bytes.
    pub file_bytes: u64,
    /// Records of `Space::Batch` that point into it.
    pub live_records: u64,
    /// Their entries' bytes, headers included.
    pub live_record_bytes: u64,
    /// Its retirement is committed; the file outlived it (a crash before the removal).
    pub retired: bool,
}

/// A retired segment, as `Space::Meta` keeps it (JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetiredSegment {
    /// The segment's number.
    pub segment: u32,
    /// Its file's length when retired, in bytes.
    pub file_bytes: u64,
    /// Records written again at the log's tail.
    pub records_moved: u64,
    /// Recovery copies written again at the log's tail.
    pub copies_moved: u64,
    /// The bytes written again, headers included.
    pub bytes_moved: u64,
}

impl RetiredSegment {
    /// The stored form: JSON.
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a retired segment serializes")
    }

    /// The inverse of `encode`.
    pub fn decode(v: &[u8]) -> Result<RetiredSegment, Error> {
        serde_json::from_slice(v)
            .map_err(|e| crate::record::corrupt(&format!("retired segment: {e}")))
    }
}

/// The error of a store without a value log asked about a segment.
pub fn no_value_log(segment: u32) -> Error {
    Error::Store {
        op: "compact",
        detail: format!("segment {segment}: this store has no value log"),
    }
}

/// Segments below this are closed (module doc).
fn closed_below(store: &SledStore) -> Result<u32, Error> {
    let committed = store.referenced_end()?.0;
    let last = store.values.end()?.map_or(0, |(s, _)| s);
    Ok(committed.min(last))
}

/// Every value-log pointer of `Space::Batch`, with its key, in key order.
fn batch_pointers(
    store: &SledStore,
) -> impl Iterator<Item = Result<(Vec<u8>, Pointer), Error>> + '_ {
    store.sled_range(Space::Batch, &[], None).filter_map(|kv| {
        match kv.map_err(store_err("range")) {
            Err(e) => Some(Err(e)),
            Ok((k, v)) => Pointer::decode(&v).map(|p| Ok((k[1..].to_vec(), p))),
        }
    })
}

/// Every value-log pointer of `Space::Quarantine` (entries whose bytes are their copies),
/// with its key, in key order.
fn quarantine_pointers(
    store: &SledStore,
) -> impl Iterator<Item = Result<(Vec<u8>, Pointer), Error>> + '_ {
    store
        .sled_range(Space::Quarantine, &[], None)
        .filter_map(|kv| match kv.map_err(store_err("range")) {
            Err(e) => Some(Err(e)),
            Ok((k, v)) => Pointer::decode(&v).map(|p| Ok((k[1..].to_vec(), p))),
        })
}

/// `Store::value_segments` for sled: one pass over the record pointers.
pub(super) fn value_segments(store: &SledStore) -> Result<Vec<SegmentUse>, Error> {
    let below = closed_below(store)?;
    let mut out: Vec<SegmentUse> = Vec::new();
    for (segment, file_bytes) in store.values.segments()? {
        if segment >= below {
            break;
        }
        let retired = store
            .tree
            .get(full_key(Space::Meta, &retired_key(segment)))
            .map_err(store_err("get"))?
            .is_some();
        out.push(SegmentUse {
            segment,
            file_bytes,
            live_records: 0,
            live_record_bytes: 0,
            retired,
        });
    }
    for kp in batch_pointers(store) {
        let (_, p) = kp?;
        if let Ok(i) = out.binary_search_by_key(&p.segment, |u| u.segment) {
            out[i].live_records += 1;
            out[i].live_record_bytes += crate::valuelog::ENTRY_HEADER_LEN as u64 + u64::from(p.len);
        }
    }
    Ok(out)
}

/// `Store::segment_records` for sled.
pub(super) fn segment_records(store: &SledStore, segment: u32) -> Result<Vec<Vec<u8>>, Error> {
    check_closed(store, segment)?;
    let mut keys = Vec::new();
    for kp in batch_pointers(store) {
        let (k, p) = kp?;
        if p.segment == segment {
            if keys.len() >= SEGMENT_RECORDS_MAX {
                return Err(compact_err(
                    segment,
                    "more records than one relocation lists",
                ));
            }
            keys.push(k);
        }
    }
    Ok(keys)
}

/// `Store::segment_copies` for sled: the segment's entries, read in order.
pub(super) fn segment_copies(store: &SledStore, segment: u32) -> Result<Vec<Unreferenced>, Error> {
    check_closed(store, segment)?;
    let mut out = Vec::new();
    for found in store.values.entries_in(segment)? {
        match found? {
            Found::Entry(_, v) if v.first() == Some(&PUT_COPY_TAG) => {
                out.push(decode_put_copy(&v)?);
            }
            Found::Entry(..) => {}
            Found::Torn { cut: true, .. } => break,
            Found::Torn { detail, cut: false } => {
                return Err(compact_err(
                    segment,
                    format!("damaged, kept: {detail} (run verify)"),
                ));
            }
        }
    }
    Ok(out)
}

/// `Store::remove_segment` for sled.
pub(super) fn remove_segment(store: &SledStore, segment: u32) -> Result<u64, Error> {
    check_closed(store, segment)?;
    let retired = store
        .tree
        .get(full_key(Space::Meta, &retired_key(segment)))
        .map_err(store_err("get"))?;
    if retired.is_none() {
        return Err(compact_err(segment, "not retired"));
    }
    let into = |kp: &Result<(Vec<u8>, Pointer), Error>| {
        kp.as_ref().map_or(true, |(_, p)| p.segment == segment)
    };
    if let Some(kp) = batch_pointers(store).find(into) {
        let (k, _) = kp?;
        return Err(compact_err(
            segment,
            format!("record {} still points into it", hex::encode(k)),
        ));
    }
    if let Some(kp) = quarantine_pointers(store).find(into) {
        let (k, _) = kp?;
        return Err(compact_err(
            segment,
            format!("quarantine entry {} still points into it", hex::encode(k)),
        ));
    }
    store.values.remove_segment(segment)
}

fn check_closed(store: &SledStore, segment: u32) -> Result<(), Error> {
    if segment >= closed_below(store)? {
        return Err(compact_err(
            segment,
            "not closed: appends may still reach it",
        ));
    }
    Ok(())
}

fn compact_err(segment: u32, what: impl std::fmt::Display) -> Error {
    Error::Tier(format!(
        "value segment {}: {what}",
        segment_file_name(segment)
    ))
}
