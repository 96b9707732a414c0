//! The check of the value log's event records against sled: no event the value log holds
//! whole is missing from its table's chain.
//!
//! Why: sled 0.34 can roll back to an earlier state and lose flushed commits
//! (RELIABILITY.md). Recovery at open appends again what the value log holds past sled's
//! last commit (`crate::recover`), but an event it cannot append (beyond a gap left by a
//! damaged entry, say) or a record never scanned would otherwise be lost with every chain
//! still verifying. So `verify` reads every record in the value log, referenced or not, and
//! names by table and seq each event the chain does not hold with the same hash.
//!
//! Checked per record: a record sled points at, or whose key reads back the same bytes
//! (a relocated or archived copy), holds nothing missing. Otherwise each of its events is
//! looked up in its table's chain: absent, or present with another hash, is a problem,
//! unless retention removed that seq (`crate::tier::removed`). Damage inside a segment is a
//! problem too: what it held cannot be known. A write cut short is not: it was never
//! acknowledged (`valuelog`).
//!
//! Memory: one record of sled's at a time, and the removed ranges when first needed.

use crate::record::{decode_record, seq_key, table_key};
use crate::store::{SledStore, Space, Store};
use crate::tier::removed::Removed;
use crate::valuelog::{segment_file_name, Pointer};
use crate::{error::Error, record::StoredEvent};
use schemas::TableId;

/// Problems named in one report at most; the rest are counted.
pub const LOGGED_PROBLEMS_MAX: usize = 100;

/// What the check of the value log's records found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoggedReport {
    /// Records read from the value log.
    pub records: u64,
    /// Of them, records sled does not point at with the same bytes (older copies,
    /// recovered ones): their events were looked up one by one.
    pub unreferenced: u64,
    /// Events in those records, looked up in their tables' chains.
    pub events_looked_up: u64,
    /// What does not check, in the order found (at most `LOGGED_PROBLEMS_MAX`).
    pub problems: Vec<String>,
    /// Problems beyond those named.
    pub problems_more: u64,
}

impl LoggedReport {
    /// Whether every event the value log holds is in its table's chain, and no entry is
    /// damaged.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty() && self.problems_more == 0
    }

    /// Adds a problem, named or counted.
    pub fn problem(&mut self, p: String) {
        if self.problems.len() < LOGGED_PROBLEMS_MAX {
            self.problems.push(p);
        } else {
            self.problems_more += 1;
        }
    }
}

/// Checks records of the value log, one at a time, against sled.
pub struct LoggedCheck<'a> {
    store: &'a SledStore,
    /// The last sled record read: its key's table and its events.
    cached: Option<(TableId, Vec<StoredEvent>)>,
    /// Ranges removed by retention, read when an event is first not found.
    removed: Option<Removed>,
    /// The report so far.
    pub report: LoggedReport,
}

impl<'a> LoggedCheck<'a> {
    /// A check of `store`'s value log records.
    pub fn new(store: &'a SledStore) -> LoggedCheck<'a> {
        LoggedCheck {
            store,
            cached: None,
            removed: None,
            report: LoggedReport::default(),
        }
    }

    /// Damage the scan resynchronised past: what it held cannot be known.
    pub fn damaged(&mut self, detail: &str) {
        self.report.problem(format!(
            "a damaged entry: {detail}; its records cannot be read, and any event in them that no chain holds is lost"
        ));
    }

    /// One record read whole from the value log at `p`.
    pub fn record(&mut self, p: &Pointer, value: &[u8]) -> Result<(), Error> {
        self.report.records += 1;
        let at = || {
            format!(
                "segment {} offset {}",
                segment_file_name(p.segment),
                p.offset
            )
        };
        // Only the first event is read to find the record's key: most records are sled's
        // own, and need nothing more.
        let first = match first_event(value) {
            Ok(first) => first,
            Err(e) => {
                self.report
                    .problem(format!("the record at {} does not decode: {e}", at()));
                return Ok(());
            }
        };
        let Some((seq, bytes)) = first else {
            return Ok(());
        };
        let Some(table) = table_of(bytes) else {
            self.report.problem(format!(
                "the record at {}: its first event does not decode, so its table is unknown",
                at()
            ));
            return Ok(());
        };
        let key = seq_key(&table, seq);
        if self.store.batch_pointer(&key)?.as_deref() == Some(p.encode().as_slice()) {
            return Ok(());
        }
        let events = match decode_record(value) {
            Ok(e) => e,
            Err(e) => {
                self.report
                    .problem(format!("the record at {} does not decode: {e}", at()));
                return Ok(());
            }
        };
        // A relocated or archived copy reads back the same bytes under its key.
        if let Ok(Some(now)) = self.store.get(Space::Batch, &key) {
            if now == value {
                return Ok(());
            }
        }
        self.report.unreferenced += 1;
        for e in &events {
            self.event(&table, e, &at)?;
        }
        Ok(())
    }

    /// One event of an unreferenced record, looked up in its table's chain.
    fn event(
        &mut self,
        table: &TableId,
        e: &StoredEvent,
        at: &dyn Fn() -> String,
    ) -> Result<(), Error> {
        self.report.events_looked_up += 1;
        let seq = e.seq.0;
        let stored = match self.stored_at(table, seq) {
            Ok(s) => s,
            // Retention removed the record: sled's key says so, and the seal keeps the head.
            Err(_) if self.removed_by_retention(table, seq)? => return Ok(()),
            Err(err) => {
                self.report.problem(format!(
                    "table {table} seq {seq}: in the value log whole ({}), and sled's record for it does not read: {err}",
                    at()
                ));
                return Ok(());
            }
        };
        match stored {
            Some(s) if s.hash == e.hash => Ok(()),
            Some(s) => {
                self.report.problem(format!(
                    "table {table} seq {seq}: the value log holds an event with hash {} ({}), the chain one with hash {}",
                    e.hash,
                    at(),
                    s.hash
                ));
                Ok(())
            }
            None if self.removed_by_retention(table, seq)? => Ok(()),
            None => {
                let held = self
                    .store
                    .get(Space::Pending, &seq_key(table, seq))?
                    .is_some();
                let why = if held {
                    "held beyond a gap, not in the chain"
                } else {
                    "not in sled"
                };
                self.report.problem(format!(
                    "table {table} seq {seq}: in the value log whole ({}), {why}",
                    at()
                ));
                Ok(())
            }
        }
    }

    /// The event sled's chain holds at `seq` of `table`, if any.
    fn stored_at(&mut self, table: &TableId, seq: u64) -> Result<Option<StoredEvent>, Error> {
        if let Some((t, events)) = &self.cached {
            if t == table {
                if let Some(e) = events.iter().find(|e| e.seq.0 == seq) {
                    return Ok(Some(e.clone()));
                }
            }
        }
        let Some(key) = self.store.last_key_at_or_before(
            Space::Batch,
            &table_key(table),
            &seq_key(table, seq),
        )?
        else {
            return Ok(None);
        };
        let Some(rec) = self.store.get(Space::Batch, &key)? else {
            return Ok(None);
        };
        let events = decode_record(&rec)?;
        let found = events.iter().find(|e| e.seq.0 == seq).cloned();
        self.cached = Some((table.clone(), events));
        Ok(found)
    }

    /// Whether retention removed `seq` of `table` (its day's records are gone by an act).
    fn removed_by_retention(&mut self, table: &TableId, seq: u64) -> Result<bool, Error> {
        if self.removed.is_none() {
            self.removed = Some(crate::tier::removed::removed_days(self.store)?);
        }
        Ok(self.removed.as_ref().is_some_and(|r| {
            r.ranges(table)
                .iter()
                .any(|range| (range.first_seq..=range.last_seq).contains(&seq))
        }))
    }
}

/// The table an event's bytes name; `None` when they do not decode.
fn table_of(bytes: &[u8]) -> Option<TableId> {
    schemas::codec::decode(bytes)
        .ok()
        .map(|(event, _)| event.table)
}

/// A record's first event: its seq and its bytes (`record::encode_record`'s layout), without
/// decoding the rest. `None`: a record of no events.
fn first_event(value: &[u8]) -> Result<Option<(u64, &[u8])>, Error> {
    let mut r = crate::record::R::new(value);
    let version = r.u8()?;
    if version != crate::record::RECORD_VERSION {
        return Err(crate::record::corrupt(&format!("record version {version}")));
    }
    if r.u32()? == 0 {
        return Ok(None);
    }
    let seq = r.u64()?;
    // Stream seq, receive time, device time, round flag and number, hash.
    r.take(8 + 8 + 8 + 1 + 8 + 32)?;
    Ok(Some((seq, r.bytes()?)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemas::{Hash32, RoundId, Seq};

    /// The first event read alone agrees with the whole record decoded; a record of no
    /// events has none, and another version is refused.
    #[test]
    fn the_first_event_read_alone_is_the_decoded_records_first() {
        let event = |seq: u64, bytes: &[u8]| StoredEvent {
            seq: Seq(seq),
            hash: Hash32([seq as u8; 32]),
            stream_seq: seq + 100,
            received_at_ns: 7,
            occurred_at_ns: 8,
            round: Some(RoundId(3)),
            bytes: bytes.to_vec(),
        };
        let rec = crate::record::encode_record(&[event(41, b"first"), event(42, b"second")]);
        let decoded = decode_record(&rec).expect("decode");
        assert_eq!(
            first_event(&rec).expect("first"),
            Some((decoded[0].seq.0, decoded[0].bytes.as_slice()))
        );
        assert_eq!(
            first_event(&crate::record::encode_record(&[])).expect("empty"),
            None
        );
        let mut other = rec.clone();
        other[0] = 9;
        assert!(first_event(&other).is_err());
        assert!(
            first_event(&rec[..20]).is_err(),
            "cut inside the first event"
        );
    }
}
