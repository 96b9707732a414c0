//! Rebuilding a lost ledger from sealed days: a day file (crate `archive`) checked
//! against its signed seal, then imported as if ingested, and the seal stored.
//!
//! Import goes through `append_batch`, so every chain, index, receipt and key register
//! is built by the one append path. Each event keeps its stream seq and receive time from
//! the file. The seal, signed by the House's key, vouches for the events: they are
//! imported unsigned, so a ledger rebuilds before `require_signed_events` is set.
//!
//! Invariants:
//! - A day is checked whole (signature, every frame against the seal) before any of it
//!   is appended.
//! - Days import in order: a day starts where the last stored seal ends, and each
//!   table's range starts at the table's head.
//! - After a day, each table's head is the seal's head; only then is the seal stored.
//! - A failed import leaves part of a day: the caller imports into a fresh directory and
//!   discards it on error (`roundledger node rebuild`).

use crate::{Appended, Error, Incoming, Provenance, Reader, Writer, APPEND_BATCH_LEN_MAX};
use schemas::attest::PublicKey;
use schemas::seal::{DaySeal, SealedTable};
use schemas::TableId;
use schemas::GENESIS;
use std::sync::atomic::AtomicBool;

/// What a checked day file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedDay {
    /// The day's seal, from the file's header, its signature checked.
    pub seal: DaySeal,
    /// Events in the day, all tables.
    pub events: u64,
    /// The highest stream seq among the day's events; `None` for a day without events.
    pub last_stream_seq: Option<u64>,
    /// On import: the seal names another node's seal of the day before than the one
    /// imported (`Writer::import_day`).
    pub previous_from_other_node: bool,
}

fn refuse(day: &str, why: impl std::fmt::Display) -> Error {
    Error::Import {
        day: day.to_string(),
        why: why.to_string(),
    }
}

/// Checks a day file alone: its seal's signature under `seal_key`, then every table's
/// frame against the seal (range, anchor, head, count). Reads every frame once.
pub fn check_day_file(file: &[u8], seal_key: &PublicKey) -> Result<CheckedDay, Error> {
    let seal = seal_of(file)?;
    let day = seal.day.clone();
    seal.verify(Some(seal_key))
        .map_err(|e| refuse(&day, format!("its seal does not verify: {e}")))?;
    let mut checked = CheckedDay {
        seal,
        events: 0,
        last_stream_seq: None,
        previous_from_other_node: false,
    };
    for t in checked.seal.tables.iter().filter(|t| t.events > 0) {
        let events = table_events(file, &day, t)?;
        let top = events.iter().map(|e| e.stream_seq).max();
        checked.last_stream_seq = checked.last_stream_seq.max(top);
        checked.events += events.len() as u64;
    }
    Ok(checked)
}

/// The seal a day file's header carries, unchecked.
pub fn seal_of(file: &[u8]) -> Result<DaySeal, Error> {
    let unnamed = |why: String| refuse("(unknown)", why);
    let (header, _) =
        archive::read_header(file).map_err(|e| unnamed(format!("not a day file: {e}")))?;
    let bytes = hex::decode(&header.seal)
        .map_err(|e| refuse(&header.day, format!("the header's seal is not hex: {e}")))?;
    let seal = DaySeal::from_json(&bytes)
        .map_err(|e| refuse(&header.day, format!("the header's seal: {e}")))?;
    if seal.day != header.day {
        return Err(refuse(
            &header.day,
            format!("the header's seal is of day {}", seal.day),
        ));
    }
    Ok(seal)
}

/// One table's events from the file, tied to its sealed range.
fn table_events(file: &[u8], day: &str, t: &SealedTable) -> Result<Vec<archive::DayEvent>, Error> {
    let table = t.table.as_str();
    let (span, events) = archive::read_table(file, table)
        .map_err(|e| refuse(day, format!("its file does not match its seal: {e}")))?;
    let bad = |what: &str| refuse(day, format!("table {table}: {what} differs from the seal"));
    if (span.first_seq, span.last_seq) != (t.first_seq.0, t.last_seq.0) {
        return Err(bad("the seq range"));
    }
    if span.anchor != t.anchor_hash {
        return Err(bad("the anchor"));
    }
    if span.head != t.head_hash {
        return Err(bad("the head"));
    }
    if events.len() as u64 != t.events {
        return Err(bad("the event count"));
    }
    Ok(events)
}

impl Reader<'_> {
    /// The sealed `day`'s file (schemas/ARCHIVE.md) in memory, from the hot tier.
    pub fn day_file(&self, day: &str) -> Result<Vec<u8>, Error> {
        let seal = self
            .day_seal(day)?
            .ok_or_else(|| refuse(day, "it is not sealed"))?;
        self.day_file_bytes(&seal, &AtomicBool::new(false))
    }
}

impl Writer<'_> {
    /// Checks `file` (`check_day_file`) and imports it: each table's events appended as
    /// ingested, each head then held to the seal's, then the seal stored.
    pub fn import_day(&self, file: &[u8], seal_key: &PublicKey) -> Result<CheckedDay, Error> {
        let mut checked = check_day_file(file, seal_key)?;
        self.check_follows(&checked.seal)?;
        checked.previous_from_other_node = self.names_other_previous(&checked.seal)?;
        let seal = &checked.seal;
        for t in seal.tables.iter().filter(|t| t.events > 0) {
            self.check_table_starts(&seal.day, t)?;
            let events = table_events(file, &seal.day, t)?;
            self.import_table(&seal.day, &t.table, &events)?;
        }
        self.flush()?;
        for t in &seal.tables {
            let head = self.reader().head(&t.table);
            let (seq, hash) = head.map_or((0, GENESIS), |h| (h.seq.0, h.hash));
            if (seq, hash) != (t.last_seq.0, t.head_hash) {
                return Err(refuse(
                    &seal.day,
                    format!(
                        "table {}: head {seq} after import, the seal says {}",
                        t.table, t.last_seq.0
                    ),
                ));
            }
        }
        match self.store_seal(seal.clone())? {
            crate::days::Sealed::Made(_) => Ok(checked),
            crate::days::Sealed::Existing(_) => Err(refuse(&seal.day, "it was sealed already")),
        }
    }

    /// The seal follows the last stored seal: it names that seal and starts at its end.
    fn check_follows(&self, seal: &DaySeal) -> Result<(), Error> {
        let day = seal.day.as_str();
        if self.reader().day_seal(day)?.is_some() {
            return Err(refuse(day, "this ledger holds its seal already"));
        }
        let last = self.reader().day_seals(None, 1)?.into_iter().next();
        match (&last, seal.previous) {
            (None, None) => Ok(()),
            (None, Some(_)) => Err(refuse(
                day,
                "its seal follows an earlier day's seal, which was not imported: an earlier day is missing",
            )),
            (Some(l), None) => Err(refuse(
                day,
                format!("its seal names no previous day, but day {} is imported", l.day),
            )),
            (Some(l), Some(_)) if l.ends_at_ns != seal.starts_at_ns || l.time_zone != seal.time_zone => {
                Err(refuse(
                    day,
                    format!("its seal does not follow day {}'s: a day between them is missing", l.day),
                ))
            }
            (Some(_), Some(_)) => Ok(()),
        }
    }

    /// Whether `seal` names another seal of the day before than the one stored: each node
    /// signs its own seals, so after a sealer takeover the bucket's days come from two
    /// nodes. Continuity is then held by the bounds and every table's head, and
    /// `verify_day` names the link.
    fn names_other_previous(&self, seal: &DaySeal) -> Result<bool, Error> {
        let before = self
            .reader()
            .day_seals(Some(&seal.day), 1)?
            .into_iter()
            .next();
        Ok(matches!((before, seal.previous), (Some(b), Some(p)) if b.digest() != p))
    }

    /// A table's sealed range starts right after its head: no seq is skipped.
    fn check_table_starts(&self, day: &str, t: &SealedTable) -> Result<(), Error> {
        let (seq, hash) = self
            .reader()
            .head(&t.table)
            .map_or((0, GENESIS), |h| (h.seq.0, h.hash));
        if seq + 1 != t.first_seq.0 || hash != t.anchor_hash {
            return Err(refuse(
                day,
                format!(
                    "table {} starts at seq {} but the ledger's head is seq {seq}: a day is missing",
                    t.table, t.first_seq.0
                ),
            ));
        }
        Ok(())
    }

    /// Appends one table's checked events in calls of at most `APPEND_BATCH_LEN_MAX`;
    /// every one must be stored.
    fn import_table(
        &self,
        day: &str,
        table: &TableId,
        events: &[archive::DayEvent],
    ) -> Result<(), Error> {
        for chunk in events.chunks(APPEND_BATCH_LEN_MAX) {
            let batch: Vec<Incoming> = chunk
                .iter()
                .map(|e| Incoming {
                    bytes: e.bytes.clone(),
                    subject_table: Some(table.clone()),
                    stream_seq: e.stream_seq,
                    received_at_ns: e.received_at_ns,
                    provenance: Provenance::Unsigned,
                })
                .collect();
            let outcomes = self.append_batch(&batch)?;
            for (e, o) in chunk.iter().zip(&outcomes) {
                if !matches!(o, Appended::Stored { seq, .. } if seq.0 == e.seq) {
                    return Err(refuse(
                        day,
                        format!("table {table} seq {}: not stored on import ({o:?})", e.seq),
                    ));
                }
            }
        }
        Ok(())
    }
}
