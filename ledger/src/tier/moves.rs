//! Moving a sealed day into the archive tier, in steps a crash can stop anywhere:
//! write and sync the day file (`archive_write`), read it back and match every record
//! (`archive_check`), then one atomic commit repoints the records (`archive_commit`).

use super::{encode_pointer, file_name, TierEntry, TierState, DAY_RECORDS_MAX};
use crate::faces::Tier;
use crate::record::{decode_record, encode_record, seq_key, table_key};
use crate::store::tier_read::{check_span, stored};
use crate::store::{Op, Space};
use crate::{error::Error, owner::Ledger};
use schemas::seal::{DaySeal, SealedTable};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

/// A day file written, synced and named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayFile {
    /// The gaming day, `YYYY-MM-DD`.
    pub day: String,
    /// The file's path.
    pub path: PathBuf,
    /// The file's length in bytes.
    pub len: u64,
    /// BLAKE3 of the whole file, lowercase hex.
    pub blake3: String,
}

/// What a checked day file lets a move repoint.
#[derive(Debug, Clone)]
pub struct ArchivePlan {
    /// The day file checked.
    pub file: DayFile,
    /// The digest of the day's seal, lowercase hex.
    pub seal_digest: String,
    /// Records the file rebuilds byte for byte: key and event count.
    pub records: Vec<(Vec<u8>, u32)>,
    /// Events in those records.
    pub events: u64,
    /// Records that straddle the day's bounds: they stay hot.
    pub straddling: u64,
    /// The events' wire bytes, for the compression ratio.
    pub wire_bytes: u64,
}

fn tier_err(day: &str, what: impl std::fmt::Display) -> Error {
    Error::Tier(format!("day {day}: {what}"))
}

impl Ledger {
    fn sealed(&self, day: &str) -> Result<DaySeal, Error> {
        self.reader()
            .day_seal(day)?
            .ok_or_else(|| tier_err(day, "not sealed: seal it first"))
    }

    /// The sealed day's file in memory, one table's events read at a time; gives up
    /// between tables once `stop` is set.
    pub(crate) fn day_file_bytes(
        &self,
        seal: &DaySeal,
        stop: &AtomicBool,
    ) -> Result<Vec<u8>, Error> {
        let day = seal.day.as_str();
        let mut writer = archive::DayWriter::new(day, &seal.to_json());
        for t in seal.tables.iter().filter(|t| t.events > 0) {
            if stop.load(Ordering::Relaxed) {
                return Err(tier_err(day, "stopped before the file was written"));
            }
            writer
                .add(&self.table_day(t)?)
                .map_err(|e| tier_err(day, e))?;
        }
        writer.finish().map_err(|e| tier_err(day, e))
    }

    /// One table's sealed range as a day file's input.
    fn table_day(&self, t: &SealedTable) -> Result<archive::TableDay, Error> {
        let mut events = Vec::with_capacity(t.events.min(1 << 16) as usize);
        for e in self.events(&t.table, t.first_seq.0..=t.last_seq.0) {
            let e = e?;
            events.push(archive::DayEvent {
                seq: e.seq.0,
                hash: e.hash,
                stream_seq: e.stream_seq,
                received_at_ns: e.received_at_ns,
                bytes: e.bytes,
            });
        }
        if events.len() as u64 != t.events {
            return Err(Error::Tier(format!(
                "table {}: {} events read, the seal says {}",
                t.table,
                events.len(),
                t.events
            )));
        }
        Ok(archive::TableDay {
            table: t.table.as_str().into(),
            anchor: t.anchor_hash,
            events,
        })
    }
}

impl Tier<'_> {
    /// The day's entry in the tier catalog, if it left the hot tier.
    pub fn tier_entry(&self, day: &str) -> Result<Option<TierEntry>, Error> {
        self.store
            .get(Space::Tier, day.as_bytes())?
            .map(|v| TierEntry::decode(&v))
            .transpose()
    }

    /// Every entry of the tier catalog, in day order.
    pub fn tier_entries(&self) -> Result<Vec<TierEntry>, Error> {
        let mut out = Vec::new();
        for kv in self.store.range(Space::Tier, &[], None) {
            out.push(TierEntry::decode(&kv?.1)?);
        }
        Ok(out)
    }

    /// Sealed days still hot whose end is at least `age_ns` before `now_ns`, oldest first.
    pub fn days_to_archive(&self, now_ns: i64, age_ns: i64) -> Result<Vec<String>, Error> {
        let mut out = Vec::new();
        // Every sealed day up to the mark is cataloged (`super::catalog`).
        let from = self.hot_seals_from()?;
        for kv in self.store.range(Space::Seal, &from, None) {
            let (k, v) = kv?;
            let seal = DaySeal::from_json(&v)
                .map_err(|e| crate::record::corrupt(&format!("stored seal: {e}")))?;
            let old = seal.ends_at_ns.saturating_add(age_ns) <= now_ns;
            if old && self.store.get(Space::Tier, &k)?.is_none() {
                out.push(seal.day);
            }
        }
        Ok(out)
    }

    /// Step 1: writes the day file (a temp file, fsynced, then renamed and the directory
    /// fsynced). One table's events are in memory at a time.
    pub fn archive_write(&self, day: &str) -> Result<DayFile, Error> {
        self.archive_write_until(day, &AtomicBool::new(false))
    }

    /// `archive_write` that gives up between tables once `stop` is set (a server
    /// stopping): nothing is committed, and the next move starts the day again.
    pub fn archive_write_until(&self, day: &str, stop: &AtomicBool) -> Result<DayFile, Error> {
        let seal = self.sealed(day)?;
        if self.tier_entry(day)?.is_some() {
            return Err(tier_err(day, "already in the archive tier"));
        }
        let dir = self
            .store
            .tier_dir()
            .ok_or_else(|| tier_err(day, "no tier"))?;
        std::fs::create_dir_all(&dir)?;
        let bytes = self.day_file_bytes(&seal, stop)?;
        let path = dir.join(file_name(day));
        let tmp = dir.join(format!("{}.partial", file_name(day)));
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)?;
        std::fs::File::open(&dir)?.sync_all()?;
        Ok(DayFile {
            day: day.into(),
            path,
            len: bytes.len() as u64,
            blake3: blake3::hash(&bytes).to_hex().to_string(),
        })
    }
}

impl Ledger {
    /// Lists the table's records inside the sealed range, each rebuilt from `events`.
    fn match_records(
        &self,
        t: &SealedTable,
        events: &[crate::record::StoredEvent],
        plan: &mut ArchivePlan,
    ) -> Result<(), Error> {
        let tk = table_key(&t.table);
        let from = self
            .store
            .last_key_at_or_before(Space::Batch, &tk, &seq_key(&t.table, t.first_seq.0))?
            .unwrap_or_else(|| seq_key(&t.table, t.first_seq.0));
        let to = seq_key(&t.table, t.last_seq.0.saturating_add(1));
        for kv in self.store.range(Space::Batch, &from, Some(&to)) {
            let (k, v) = kv?;
            let rec = decode_record(&v)?;
            let (Some(first), Some(last)) = (rec.first(), rec.last()) else {
                return Err(crate::record::corrupt("an empty record"));
            };
            if first.seq < t.first_seq || last.seq > t.last_seq {
                plan.straddling += 1;
                continue;
            }
            assert!(
                first.seq <= last.seq,
                "tier move: a record's events run in seq order"
            );
            let at = (first.seq.0 - t.first_seq.0) as usize;
            let rebuilt = events.get(at..at + rec.len()).map(encode_record);
            if rebuilt.as_deref() != Some(v.as_slice()) {
                return Err(Error::Tier(format!(
                    "table {} seq {}: the day file does not rebuild the record",
                    t.table, first.seq.0
                )));
            }
            plan.events += rec.len() as u64;
            plan.wire_bytes += rec.iter().map(|e| e.bytes.len() as u64).sum::<u64>();
            let count = u32::try_from(rec.len()).expect("a record holds at most 1024 events");
            plan.records.push((k, count));
        }
        Ok(())
    }
}

impl Tier<'_> {
    /// Step 2: reads the synced file back from disk, ties each table to the seal, and
    /// lists the records it rebuilds byte for byte. A record that differs refuses the move.
    pub fn archive_check(&self, file: &DayFile) -> Result<ArchivePlan, Error> {
        let day = file.day.as_str();
        let seal = self.sealed(day)?;
        let bytes_len = std::fs::metadata(&file.path)?.len();
        let hash = hash_file(&file.path)?;
        if bytes_len != file.len || hash != file.blake3 {
            return Err(tier_err(day, "the file on disk is not the one written"));
        }
        let mut f = std::fs::File::open(&file.path)?;
        let (header, _) = archive::read_header_from(&mut f).map_err(|e| tier_err(day, e))?;
        if header.day != day || header.seal != hex::encode(seal.to_json()) {
            return Err(tier_err(day, "the file names another day or seal"));
        }
        let mut plan = ArchivePlan {
            file: file.clone(),
            seal_digest: seal.digest().to_string(),
            records: Vec::new(),
            events: 0,
            straddling: 0,
            wire_bytes: 0,
        };
        for t in seal.tables.iter().filter(|t| t.events > 0) {
            let (span, events) =
                archive::read_table_from(&mut f, t.table.as_str()).map_err(|e| tier_err(day, e))?;
            check_span(&seal, &span).map_err(|e| tier_err(day, e))?;
            let events: Vec<_> = events
                .into_iter()
                .map(stored)
                .collect::<Result<_, String>>()
                .map_err(|e| tier_err(day, e))?;
            self.match_records(t, &events, &mut plan)?;
        }
        if plan.records.len() > DAY_RECORDS_MAX {
            return Err(tier_err(day, "more records than one move may repoint"));
        }
        let sealed_events: u64 = seal.tables.iter().map(|t| t.events).sum();
        assert!(
            plan.events <= sealed_events,
            "tier move: a plan repoints at most the day's sealed events"
        );
        assert_eq!(
            plan_count(&plan),
            plan.events,
            "tier move: the records' event counts add up to the plan's events"
        );
        Ok(plan)
    }

    /// Step 3: one atomic commit points the records into the file and catalogs the day,
    /// then a flush. Before it the day is hot; after it, archived; never both or neither.
    pub fn archive_commit(&self, plan: &ArchivePlan) -> Result<TierEntry, Error> {
        let day = plan.file.day.as_str();
        assert!(
            plan.records.len() <= DAY_RECORDS_MAX,
            "tier move: a commit repoints at most DAY_RECORDS_MAX records"
        );
        assert_eq!(
            plan_count(plan),
            plan.events,
            "tier move: the records' event counts add up to the plan's events"
        );
        let _appends = self.lock();
        if self.tier_entry(day)?.is_some() {
            return Err(tier_err(day, "already in the archive tier"));
        }
        let entry = TierEntry {
            day: day.into(),
            state: TierState::Archived,
            file: file_name(day),
            file_len: plan.file.len,
            file_blake3: plan.file.blake3.clone(),
            seal_digest: plan.seal_digest.clone(),
            records: plan.records.len() as u64,
            events: plan.events,
            removal: None,
            kept: Vec::new(),
        };
        let mut ops: Vec<Op> = plan
            .records
            .iter()
            .map(|(k, n)| Op::Repoint(k.clone(), encode_pointer(day, *n)))
            .collect();
        ops.push(Op::Put(
            Space::Tier,
            day.as_bytes().to_vec(),
            entry.encode(),
        ));
        ops.extend(self.catalog_ops(day)?);
        self.store.commit(ops)?;
        self.store.flush()?;
        debug_assert!(
            self.tier_entry(day)?.as_ref() == Some(&entry),
            "tier move: after the commit the day is cataloged as archived"
        );
        Ok(entry)
    }

    /// The whole move of one sealed day: write, check, commit.
    pub fn archive_move(&self, day: &str) -> Result<(TierEntry, ArchivePlan), Error> {
        self.archive_move_until(day, &AtomicBool::new(false))
    }

    /// `archive_move` that gives up while writing once `stop` is set.
    pub fn archive_move_until(
        &self,
        day: &str,
        stop: &AtomicBool,
    ) -> Result<(TierEntry, ArchivePlan), Error> {
        let file = self.archive_write_until(day, stop)?;
        let plan = self.archive_check(&file)?;
        let entry = self.archive_commit(&plan)?;
        Ok((entry, plan))
    }
}

/// Events the plan's records hold, added up.
fn plan_count(plan: &ArchivePlan) -> u64 {
    plan.records.iter().map(|(_, n)| u64::from(*n)).sum()
}

/// BLAKE3 of a file, read in bounded chunks.
pub(crate) fn hash_file(path: &std::path::Path) -> Result<String, Error> {
    let mut h = blake3::Hasher::new();
    let mut f = std::fs::File::open(path)?;
    std::io::copy(&mut f, &mut h)?;
    Ok(h.finalize().to_hex().to_string())
}
