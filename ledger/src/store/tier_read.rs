//! Reading records from day files: the store's side of the archive tier.
//!
//! A table's day is decoded whole and kept among the `FRAMES_CACHED` most recently used,
//! so a scan of a day's records decompresses its frame once, even while other readers
//! (verify's threads, the API's requests) scan other tables. Memory is bounded by that many
//! tables' days.

use super::reads::ReadCounter;
use super::tier_ref::{decode_pointer, file_name, TierEntry, TierState, DIR};
use super::{ArrivalFact, Space};
use crate::record::{be_u64, corrupt, encode_record, split_table_key};
use crate::{error::Error, record::StoredEvent};
use schemas::seal::DaySeal;
use schemas::{Seq, TableId};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One table's day, decoded and checked against the seal.
struct Loaded {
    day: String,
    table: TableId,
    first_seq: u64,
    events: Vec<StoredEvent>,
}

/// Tables' days kept decoded: one per reader thread of `schemas::parallel`, and more.
pub const FRAMES_CACHED: usize = 4;

/// Decodes of one table's day a read tries while removals overlap them.
const LOADS_MAX: usize = 8;

/// Most arrival facts kept (48 bytes each: 192 MB). The arrival walk needs one frame's
/// facts per table at a time: a day of a floor's tables fits, with room for tables whose
/// days drift apart within one call.
pub const FACTS_CACHED_MAX: usize = 4_000_000;

/// What the arrival chain hashes of one table's archived day. The arrival walk visits
/// every table of a day call by call; these are kept where whole frames would not fit.
struct TableFacts {
    day: String,
    table: TableId,
    first_seq: u64,
    facts: Vec<ArrivalFact>,
}

/// Resolves tier pointers into record bytes for `SledStore`.
pub struct TierReader {
    dir: PathBuf,
    /// The most recently used last.
    cache: Mutex<Vec<Arc<Loaded>>>,
    /// Bumped by `forgetting` under the cache's lock: a frame decoded across it may be of
    /// a day removed meanwhile, so it is not cached.
    generation: std::sync::atomic::AtomicU64,
    /// Frames decoded since open: what the cache did not spare.
    frames_loaded: std::sync::atomic::AtomicU64,
    /// Tables' days of arrival facts, the most recently used last.
    facts: Mutex<Vec<Arc<TableFacts>>>,
    /// The store's read counts: catalog entries, seals and day files read here.
    reads: Arc<ReadCounter>,
}

impl TierReader {
    /// A reader of the tier under `ledger_dir`, with an empty cache.
    pub fn new(ledger_dir: &Path, reads: Arc<ReadCounter>) -> TierReader {
        TierReader {
            dir: ledger_dir.join(DIR),
            cache: Mutex::new(Vec::with_capacity(FRAMES_CACHED + 1)),
            generation: Default::default(),
            frames_loaded: Default::default(),
            facts: Mutex::new(Vec::new()),
            reads,
        }
    }

    /// Tables' days decoded since open.
    pub fn frames_loaded(&self) -> u64 {
        self.frames_loaded
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Where day files are.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs `commit` (a day's removal) with both caches locked, then empties them: no
    /// read is served a cached day between the commit and the emptying. A decode under
    /// way meanwhile is not cached; its reader reads the catalog again.
    pub fn forgetting<T>(&self, commit: impl FnOnce() -> T) -> T {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let mut facts = self.facts.lock().unwrap_or_else(|p| p.into_inner());
        let out = commit();
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        cache.clear();
        facts.clear();
        out
    }

    /// The record `key` names, rebuilt from its day file.
    pub fn record(&self, tree: &sled::Tree, key: &[u8], pointer: &[u8]) -> Result<Vec<u8>, Error> {
        let (day, count) =
            decode_pointer(pointer).ok_or_else(|| corrupt("tier pointer does not decode"))?;
        let (table, rest) = split_table_key(key)?;
        let first = be_u64(rest)?;
        let loaded = self.loaded(tree, &day, &table)?;
        let from = first.checked_sub(loaded.first_seq);
        let slice = from.and_then(|f| {
            loaded
                .events
                .get(f as usize..(f as usize).checked_add(count as usize)?)
        });
        match slice {
            Some(events) if count > 0 => Ok(encode_record(events)),
            _ => Err(corrupt(&format!(
                "day file {day}: table {table} has no seqs {first}+{count}"
            ))),
        }
    }

    /// A table's day, from the cache or decoded. A decode that a removal overlapped is
    /// done again: the catalog it checked may say "removed" now (at most `LOADS_MAX`).
    fn loaded(&self, tree: &sled::Tree, day: &str, table: &TableId) -> Result<Arc<Loaded>, Error> {
        let is = |l: &Arc<Loaded>| l.day == day && &l.table == table;
        for _ in 0..LOADS_MAX {
            let generation = {
                let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(at) = cache.iter().position(is) {
                    let l = cache.remove(at);
                    cache.push(l.clone());
                    return Ok(l);
                }
                self.generation.load(std::sync::atomic::Ordering::Acquire)
            };
            // Decoded outside the lock: other readers' hits do not wait for it.
            let l = Arc::new(self.load(tree, day, table)?);
            self.frames_loaded
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if self.cache_if_current(l.clone(), generation) {
                return Ok(l);
            }
        }
        Err(corrupt(&format!(
            "day {day}: the archive tier changed during each of {LOADS_MAX} reads of table {table}"
        )))
    }

    /// Caches `l`, decoded at `generation`, unless a removal ran since: then `false`.
    fn cache_if_current(&self, l: Arc<Loaded>, generation: u64) -> bool {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if self.generation.load(std::sync::atomic::Ordering::Acquire) != generation {
            return false;
        }
        cache.retain(|c| !(c.day == l.day && c.table == l.table));
        cache.push(l);
        if cache.len() > FRAMES_CACHED {
            cache.remove(0);
        }
        true
    }

    /// The arrival facts of the record `key` names (its tier `pointer`), from its table's
    /// day, decoded once while it stays among the `FACTS_CACHED_MAX` most recent.
    pub fn arrival_facts(
        &self,
        tree: &sled::Tree,
        key: &[u8],
        pointer: &[u8],
    ) -> Result<Vec<ArrivalFact>, Error> {
        let (day, count) =
            decode_pointer(pointer).ok_or_else(|| corrupt("tier pointer does not decode"))?;
        let (table, rest) = split_table_key(key)?;
        let first = be_u64(rest)?;
        let t = self.table_facts(tree, &day, &table)?;
        let from = first.checked_sub(t.first_seq).map(|f| f as usize);
        let slice = from.and_then(|f| t.facts.get(f..f.checked_add(count as usize)?));
        match slice {
            Some(s) if count > 0 => Ok(s.to_vec()),
            _ => Err(corrupt(&format!(
                "day file {day}: table {table} has no seqs {first}+{count}"
            ))),
        }
    }

    fn table_facts(
        &self,
        tree: &sled::Tree,
        day: &str,
        table: &TableId,
    ) -> Result<Arc<TableFacts>, Error> {
        let is = |t: &Arc<TableFacts>| t.day == day && &t.table == table;
        let mut cache = self.facts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(at) = cache.iter().position(is) {
            let t = cache.remove(at);
            cache.push(t.clone());
            return Ok(t);
        }
        let (seal, mut file, bad) = self.open_day(tree, day, table)?;
        let (span, events) =
            archive::read_table_from(&mut file, table.as_str()).map_err(|e| bad(e.to_string()))?;
        check_span(&seal, &span).map_err(&bad)?;
        let facts = events.iter().map(|e| ArrivalFact {
            hash: e.hash,
            stream_seq: e.stream_seq,
            received_at_ns: e.received_at_ns,
        });
        let t = Arc::new(TableFacts {
            day: day.into(),
            table: table.clone(),
            first_seq: span.first_seq,
            facts: facts.collect(),
        });
        cache.push(t.clone());
        let mut kept: usize = cache.iter().map(|t| t.facts.len()).sum();
        while kept > FACTS_CACHED_MAX && cache.len() > 1 {
            kept -= cache.remove(0).facts.len();
        }
        Ok(t)
    }

    /// An archived day's seal and open file, and how to name a fault in it. A day removed
    /// by retention is `RetentionRemoved` for `table`.
    fn open_day(
        &self,
        tree: &sled::Tree,
        day: &str,
        table: &TableId,
    ) -> Result<(DaySeal, std::fs::File, impl Fn(String) -> Error), Error> {
        let entry = self
            .counted_get(tree, Space::Tier, day.as_bytes())?
            .map(|v| TierEntry::decode(&v))
            .transpose()?
            .ok_or_else(|| corrupt(&format!("day {day} is not in the tier catalog")))?;
        if entry.state == TierState::Removed {
            return Err(Error::RetentionRemoved {
                day: day.into(),
                table: table.clone(),
            });
        }
        let seal = self
            .counted_get(tree, Space::Seal, day.as_bytes())?
            .ok_or_else(|| corrupt(&format!("archived day {day} has no seal")))?;
        let seal = DaySeal::from_json(&seal).map_err(|e| corrupt(&format!("seal: {e}")))?;
        let path = self.dir.join(file_name(day));
        let bad = move |what: String| Error::CorruptRecord {
            detail: format!("day file {}: {what}", path.display()),
        };
        let file = std::fs::File::open(self.dir.join(file_name(day)));
        let file = file.map_err(|e| bad(e.to_string()))?;
        self.reads.day_file();
        Ok((seal, file, bad))
    }

    /// A point read of `tree`, counted in the store's reads.
    fn counted_get(
        &self,
        tree: &sled::Tree,
        space: Space,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>, Error> {
        let v = sled_get(tree, space, key)?;
        if v.is_some() {
            self.reads.entry(space);
        }
        Ok(v)
    }

    /// Reads one table's frame and ties it to the seal: range, anchor and head.
    fn load(&self, tree: &sled::Tree, day: &str, table: &TableId) -> Result<Loaded, Error> {
        let (seal, mut file, bad) = self.open_day(tree, day, table)?;
        let (span, events) =
            archive::read_table_from(&mut file, table.as_str()).map_err(|e| bad(e.to_string()))?;
        check_span(&seal, &span).map_err(&bad)?;
        let events = events
            .into_iter()
            .map(stored)
            .collect::<Result<Vec<_>, String>>()
            .map_err(bad)?;
        Ok(Loaded {
            day: day.into(),
            table: table.clone(),
            first_seq: span.first_seq,
            events,
        })
    }
}

/// A frame's span against the seal's range of its table.
pub(crate) fn check_span(seal: &DaySeal, span: &archive::TableSpan) -> Result<(), String> {
    let t = seal
        .tables
        .iter()
        .find(|t| t.table.as_str() == span.table)
        .ok_or_else(|| format!("table {} is not in the seal", span.table))?;
    if (t.first_seq.0, t.last_seq.0) != (span.first_seq, span.last_seq) {
        return Err(format!(
            "table {}: range {}..={}, the seal says {}..={}",
            span.table, span.first_seq, span.last_seq, t.first_seq.0, t.last_seq.0
        ));
    }
    if t.anchor_hash != span.anchor || t.head_hash != span.head {
        return Err(format!(
            "table {}: anchor or head differs from the seal's",
            span.table
        ));
    }
    Ok(())
}

/// A day file's event as the ledger stores it: device time and round from its bytes.
pub(crate) fn stored(e: archive::DayEvent) -> Result<StoredEvent, String> {
    let (event, _) = schemas::codec::decode(&e.bytes)
        .map_err(|err| format!("seq {}: does not decode: {err}", e.seq))?;
    Ok(StoredEvent {
        seq: Seq(e.seq),
        hash: e.hash,
        stream_seq: e.stream_seq,
        received_at_ns: e.received_at_ns,
        occurred_at_ns: event.occurred_at_ns,
        round: event.round,
        bytes: e.bytes,
    })
}

fn sled_get(tree: &sled::Tree, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
    let mut k = vec![space.prefix()];
    k.extend_from_slice(key);
    tree.get(k)
        .map(|v| v.map(|v| v.to_vec()))
        .map_err(|e| Error::Store {
            op: "get",
            detail: e.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(day: &str) -> Arc<Loaded> {
        Arc::new(Loaded {
            day: day.into(),
            table: TableId::new("T1").expect("a table id"),
            first_seq: 1,
            events: Vec::new(),
        })
    }

    fn cached(r: &TierReader) -> usize {
        r.cache.lock().expect("not poisoned").len()
    }

    /// A decode overlapped by a removal's commit must not be served from the cache
    /// later: the day it read may be removed by then.
    #[test]
    fn a_frame_decoded_across_a_forget_is_not_cached() {
        let dir = tempfile::tempdir().expect("tempdir");
        let r = TierReader::new(dir.path(), Arc::default());
        let before = r.generation.load(std::sync::atomic::Ordering::Acquire);
        assert!(r.cache_if_current(frame("2026-11-26"), before));
        assert_eq!(cached(&r), 1);
        assert_eq!(r.forgetting(|| "committed"), "committed");
        assert_eq!(cached(&r), 0, "a removal drops what is cached");
        assert!(
            !r.cache_if_current(frame("2026-11-26"), before),
            "decoded before the removal"
        );
        assert_eq!(cached(&r), 0);
        let now = r.generation.load(std::sync::atomic::Ordering::Acquire);
        assert!(r.cache_if_current(frame("2026-11-27"), now));
        assert_eq!(cached(&r), 1);
    }
}
