//! Gaming days: their bounds in the property's time zone, each table's seq range per day,
//! and the House's signed day seals (`schemas::seal`), kept in `Space::Seal`.
//!
//! A day runs from its local start time (e.g. 06:00) on its date to the same time on the
//! next date, in one IANA time zone, so a day across a DST change lasts 23 or 25 hours.
//! An event belongs to the day of its arrival (`received_at_ns`, the stream timestamp): a
//! table's day ends just before the first seq, from the day's first, that arrived at or
//! after the day's end. So each table's day is a contiguous seq range, and the next day
//! starts right after it. Rounds belong to the day of their first event.
//!
//! Seals are made in day order, each naming the previous one's digest. A day's range
//! starts after the previous seal's range, so ranges cover every event once. An event
//! appended after the seal belongs to a later day, even if it arrived earlier (a gap
//! filled late). A seal is never made again differently: sealing a sealed day must give
//! the same content, or it is refused.

use crate::faces::{Reader, Verifier, Writer};
use crate::record::{self, seq_key};
use crate::store::{Op, Space};
use crate::{error::Error, owner::Ledger};
use schemas::attest::{PublicKey, SigningKey};
use schemas::seal::{check_day_name, DaySeal, SealContent, SealedTable, SEAL_TABLES_MAX};
use schemas::{Hash32, Seq, TableId, GENESIS};

/// The day start `--help` states when none is given.
pub const DAY_START_DEFAULT: &str = "06:00";
/// The time zone `--help` states when none is given.
pub const TIME_ZONE_DEFAULT: &str = "UTC";
/// Most seals one listing returns.
pub const SEALS_LIST_MAX: usize = 366;
/// Most kept checkpoints one table's day holds for `verify_day`.
pub const DAY_CHECKPOINTS_MAX: usize = 1_000_000;

/// The property's gaming day: its local start time and its time zone.
#[derive(Debug, Clone)]
pub struct DayRule {
    start_hour: i8,
    start_minute: i8,
    time_zone_name: String,
    time_zone: jiff::tz::TimeZone,
    /// Local shift start times, minutes after midnight; the first is the day start.
    shift_starts_min: Vec<u16>,
}

mod shifts;
pub use shifts::{ShiftBounds, SHIFTS_MAX};

/// One gaming day's bounds, UTC ns: `[starts_at_ns, ends_at_ns)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayBounds {
    /// The gaming day's local date, `YYYY-MM-DD`.
    pub day: String,
    /// The day's start, UTC ns (inclusive).
    pub starts_at_ns: i64,
    /// The day's end, UTC ns (exclusive): the next day's start.
    pub ends_at_ns: i64,
}

impl DayRule {
    /// `day_start` is local `HH:MM`; `time_zone` an IANA name (`Asia/Singapore`).
    pub fn new(day_start: &str, time_zone: &str) -> Result<DayRule, Error> {
        let Some((start_hour, start_minute)) = shifts::parse_hh_mm(day_start) else {
            return Err(Error::Day(format!(
                "day start {day_start:?}: not HH:MM with HH 00-23 and MM 00-59"
            )));
        };
        if time_zone.len() > schemas::seal::TIME_ZONE_LEN_MAX {
            return Err(Error::Day(format!(
                "time zone name {time_zone:?} is too long"
            )));
        }
        let zone = jiff::tz::TimeZone::get(time_zone)
            .map_err(|e| Error::Day(format!("time zone {time_zone:?}: {e}")))?;
        Ok(DayRule {
            start_hour,
            start_minute,
            time_zone_name: time_zone.to_string(),
            time_zone: zone,
            shift_starts_min: vec![start_hour as u16 * 60 + start_minute as u16],
        })
    }

    /// The IANA name of the rule's time zone.
    pub fn time_zone(&self) -> &str {
        &self.time_zone_name
    }

    /// The bounds of the day named by its local date. A start time a DST gap skips is
    /// taken just after the gap; one a fold repeats, at its first occurrence.
    pub fn bounds(&self, day: &str) -> Result<DayBounds, Error> {
        check_day_name(day).map_err(Error::Day)?;
        let date: jiff::civil::Date = day
            .parse()
            .map_err(|e| Error::Day(format!("day {day:?}: {e}")))?;
        let next = date
            .tomorrow()
            .map_err(|e| Error::Day(format!("day {day:?}: {e}")))?;
        let starts_at_ns = self.start_on(date)?;
        let ends_at_ns = self.start_on(next)?;
        assert!(ends_at_ns > starts_at_ns, "a day ends after it starts");
        Ok(DayBounds {
            day: date.to_string(),
            starts_at_ns,
            ends_at_ns,
        })
    }

    /// The day that holds the instant `at_ns`.
    pub fn day_of(&self, at_ns: i64) -> Result<String, Error> {
        let ts = jiff::Timestamp::from_nanosecond(i128::from(at_ns))
            .map_err(|e| Error::Day(format!("instant {at_ns}: {e}")))?;
        let local = ts.to_zoned(self.time_zone.clone()).date();
        // The local date or the one before it; checked against the bounds, DST included.
        for date in [Ok(local), local.yesterday()] {
            let date = date.map_err(|e| Error::Day(e.to_string()))?;
            let b = self.bounds(&date.to_string())?;
            if (b.starts_at_ns..b.ends_at_ns).contains(&at_ns) {
                return Ok(b.day);
            }
        }
        Err(Error::Day(format!("no gaming day holds instant {at_ns}")))
    }

    /// The day before `day`.
    pub fn previous_day(&self, day: &str) -> Result<String, Error> {
        let b = self.bounds(day)?;
        self.day_of(b.starts_at_ns - 1)
    }

    fn start_on(&self, date: jiff::civil::Date) -> Result<i64, Error> {
        let zoned = date
            .at(self.start_hour, self.start_minute, 0, 0)
            .to_zoned(self.time_zone.clone())
            .map_err(|e| Error::Day(format!("{date} in {}: {e}", self.time_zone_name)))?;
        i64::try_from(zoned.timestamp().as_nanosecond())
            .map_err(|_| Error::Day(format!("{date} is beyond the ns range")))
    }
}

/// Each table's range of one day, as the ledger holds it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayRanges {
    /// The day's bounds under the ledger's day rule.
    pub bounds: DayBounds,
    /// Tables with events at or before the day's end, in table order.
    pub tables: Vec<SealedTable>,
    /// The previous day's seal, where the ranges start.
    pub previous: Option<DaySeal>,
    /// Events read to find the ranges.
    pub events_read: u64,
}

/// What `Writer::seal_day` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sealed {
    /// A new seal, stored and flushed.
    Made(DaySeal),
    /// The day was sealed before with the same content: that seal.
    Existing(DaySeal),
}

impl Sealed {
    /// The seal, made now or before.
    pub fn seal(&self) -> &DaySeal {
        match self {
            Sealed::Made(s) | Sealed::Existing(s) => s,
        }
    }
}

/// Where a table's scan stopped: the first seq that arrived at or after the instant (or
/// the head + 1), and the hash of the event before it, if the scan read it.
struct Stop {
    seq: u64,
    hash_before: Option<Hash32>,
}

impl Ledger {
    /// The first seq at or after `from` whose event arrived at or after `at_ns`, or the
    /// head + 1; counts the events read into `read`.
    fn first_arrived(
        &self,
        table: &TableId,
        from: u64,
        at_ns: i64,
        read: &mut u64,
    ) -> Result<Stop, Error> {
        let mut stop = Stop {
            seq: from,
            hash_before: None,
        };
        for e in self.events(table, from..=u64::MAX) {
            let e = e?;
            *read += 1;
            if e.seq.0 != stop.seq {
                return Err(record::corrupt(&format!(
                    "table {table}: seq {} is stored where {} belongs (run verify)",
                    e.seq.0, stop.seq
                )));
            }
            if e.received_at_ns >= at_ns {
                return Ok(stop);
            }
            stop.seq += 1;
            stop.hash_before = Some(e.hash);
        }
        Ok(stop)
    }

    /// The stored hash at `seq`, `GENESIS` at 0.
    fn hash_at(&self, table: &TableId, seq: u64, read: &mut u64) -> Result<Hash32, Error> {
        if seq == 0 {
            return Ok(GENESIS);
        }
        *read += 1;
        match self.reader().stored_event(table, seq)? {
            Some(e) => Ok(e.hash),
            None => Err(record::corrupt(&format!(
                "table {table} has no event at seq {seq} below its head"
            ))),
        }
    }

    /// Stores and flushes a new seal, under the append lock: the store's commits then never
    /// interleave (each moves the value log's recorded end), and of two sealers of one day
    /// only the first stores its seal.
    pub(crate) fn store_seal(&self, seal: DaySeal) -> Result<Sealed, Error> {
        let _state = self.lock();
        if let Some(stored) = self.reader().day_seal(&seal.day)? {
            if stored.content() == seal.content() {
                return Ok(Sealed::Existing(stored));
            }
            return Err(Error::Seal {
                day: seal.day,
                why: "it was sealed meanwhile with other content".into(),
            });
        }
        let key = seal_key(&seal.day);
        self.store
            .commit(vec![Op::Put(Space::Seal, key, seal.to_json())])?;
        self.flush()?;
        Ok(Sealed::Made(seal))
    }

    /// Seals are made in day order: the last sealed day must be the day before.
    fn check_seal_order(&self, rule: &DayRule, day: &str) -> Result<(), Error> {
        let Some(last) = self.reader().day_seals(None, 1)?.into_iter().next() else {
            return Ok(());
        };
        let before = rule.previous_day(day)?;
        if last.day == before {
            return Ok(());
        }
        let why = if last.day.as_str() > day {
            format!(
                "day {} is sealed already; seals are made in day order",
                last.day
            )
        } else {
            format!("the last sealed day is {}; seal {before} first", last.day)
        };
        Err(Error::Seal {
            day: day.into(),
            why,
        })
    }

    /// Puts back a seal the store lost (recovery), unless the day holds one.
    pub(crate) fn restore_seal(&self, key: &[u8], value: &[u8]) -> Result<bool, Error> {
        let seal = decode_seal(value)?;
        if seal_key(&seal.day) != key || self.store.get(Space::Seal, key)?.is_some() {
            return Ok(false);
        }
        self.store
            .commit(vec![Op::Put(Space::Seal, key.to_vec(), value.to_vec())])?;
        Ok(true)
    }
}

impl Writer<'_> {
    /// Seals `day` with the House's key once it has ended (`now_ns` at or after its end):
    /// stores the seal and flushes. The previous day must be sealed, unless no day is.
    pub fn seal_day(
        &self,
        rule: &DayRule,
        day: &str,
        key: &SigningKey,
        now_ns: i64,
    ) -> Result<Sealed, Error> {
        let bounds = rule.bounds(day)?;
        let refuse = |why: String| {
            Err(Error::Seal {
                day: day.into(),
                why,
            })
        };
        if now_ns < bounds.ends_at_ns {
            return refuse(format!("the day ends at {} ns, not yet", bounds.ends_at_ns));
        }
        let existing = self.reader().day_seal(&bounds.day)?;
        if existing.is_none() {
            self.check_seal_order(rule, &bounds.day)?;
        }
        let ranges = self.reader().day_ranges(rule, &bounds.day)?;
        let content = SealContent {
            day: bounds.day.clone(),
            time_zone: rule.time_zone().to_string(),
            starts_at_ns: bounds.starts_at_ns,
            ends_at_ns: bounds.ends_at_ns,
            tables: ranges.tables,
            previous: ranges.previous.as_ref().map(DaySeal::digest),
        };
        if let Some(seal) = existing {
            if seal.content() == content {
                return Ok(Sealed::Existing(seal));
            }
            return refuse(format!(
                "it is sealed as {} and the ledger now gives other content; a seal is never made again differently",
                seal.digest()
            ));
        }
        let seal = content.sign(key, now_ns);
        seal.verify(Some(&key.public())).map_err(|e| Error::Seal {
            day: day.into(),
            why: e.to_string(),
        })?;
        self.store_seal(seal)
    }
}

impl Reader<'_> {
    /// Each table's range of `day` under `rule`, starting after the previous day's seal
    /// when there is one. Reads the day's events and one beyond per table.
    pub fn day_ranges(&self, rule: &DayRule, day: &str) -> Result<DayRanges, Error> {
        let bounds = rule.bounds(day)?;
        let previous = self.day_seal(&rule.previous_day(day)?)?;
        if let Some(p) = &previous {
            if p.ends_at_ns != bounds.starts_at_ns || p.time_zone != rule.time_zone() {
                return Err(Error::Day(format!(
                    "day {} was sealed in {} ending at {} ns; day {day} starts at {} ns in {}: the gaming day rule changed",
                    p.day, p.time_zone, p.ends_at_ns, bounds.starts_at_ns, rule.time_zone()
                )));
            }
        }
        let heads = self.heads();
        if heads.len() > SEAL_TABLES_MAX {
            return Err(Error::Day(format!(
                "{} tables, more than a seal's {SEAL_TABLES_MAX}",
                heads.len()
            )));
        }
        let mut read = 0u64;
        let mut tables = Vec::new();
        for head in heads {
            let t = &head.table;
            let first = match &previous {
                Some(p) => p.table(t).map_or(1, |r| r.last_seq.0 + 1),
                None => {
                    self.first_arrived(t, 1, bounds.starts_at_ns, &mut read)?
                        .seq
                }
            };
            let stop = self.first_arrived(t, first, bounds.ends_at_ns, &mut read)?;
            let last = stop.seq - 1;
            if last == 0 {
                continue;
            }
            let anchor_hash = self.hash_at(t, first - 1, &mut read)?;
            let head_hash = match stop.hash_before {
                Some(h) if last >= first => h,
                _ => anchor_hash,
            };
            tables.push(SealedTable {
                table: t.clone(),
                first_seq: Seq(first),
                last_seq: Seq(last),
                anchor_hash,
                head_hash,
                events: last + 1 - first,
            });
        }
        Ok(DayRanges {
            bounds,
            tables,
            previous,
            events_read: read,
        })
    }

    /// The seal of `day`, if it is sealed.
    pub fn day_seal(&self, day: &str) -> Result<Option<DaySeal>, Error> {
        self.store
            .get(Space::Seal, &seal_key(day))?
            .map(|v| decode_seal(&v))
            .transpose()
    }

    /// Seals newest first, of days before `before` when given; at most `limit`
    /// (capped by `SEALS_LIST_MAX`).
    pub fn day_seals(&self, before: Option<&str>, limit: usize) -> Result<Vec<DaySeal>, Error> {
        let limit = limit.min(SEALS_LIST_MAX);
        let mut out = Vec::new();
        // Starts at `before`: the seals after it are not read, however many.
        let seals = self
            .store
            .range_back_before(Space::Seal, before.map(str::as_bytes))
            .take(limit);
        for kv in seals {
            out.push(decode_seal(&kv?.1)?);
        }
        Ok(out)
    }
}

/// `Space::Seal` key of a day: its name, so keys sort by date.
fn seal_key(day: &str) -> Vec<u8> {
    day.as_bytes().to_vec()
}

fn decode_seal(v: &[u8]) -> Result<DaySeal, Error> {
    DaySeal::from_json(v).map_err(|e| record::corrupt(&format!("stored seal: {e}")))
}

/// One problem `verify_day` found, at a table's seq where it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayProblem {
    /// The table concerned; `None` for a problem of the seal as a whole.
    pub table: Option<TableId>,
    /// The seq concerned, where there is one.
    pub seq: Option<u64>,
    /// What does not check, in words.
    pub what: String,
}

/// The verdict on one sealed day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayVerdict {
    /// The stored seal checked.
    pub seal: DaySeal,
    /// The seal's digest, which the next day's seal names.
    pub digest: Hash32,
    /// What does not check; empty when the day verifies.
    pub problems: Vec<DayProblem>,
    /// Events read: the day's, plus each table's anchor.
    pub events_read: u64,
    /// Kept checkpoints checked against the recomputed chain.
    pub checkpoints: u64,
    /// The day's records were removed by a signed retention act (`tier::retention`):
    /// only the seal is checked, and it still proves each table's head.
    pub removed_by_retention: bool,
}

impl DayVerdict {
    /// Whether the day verifies: no problems.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Kept checkpoints of one table's range: (seq, the hash it signs).
type RangeCheckpoints = std::collections::BTreeMap<u64, Hash32>;

impl Ledger {
    /// The head a removed day's seal gives the table, where `t`'s range starts after it.
    fn sealed_head(&self, day: &str, t: &SealedTable) -> Result<Hash32, Error> {
        let seal = self.reader().day_seal(day)?;
        let before = seal.as_ref().and_then(|s| s.table(&t.table));
        match before {
            Some(b) if b.last_seq.0 + 1 == t.first_seq.0 => Ok(b.head_hash),
            _ => Err(Error::Day(format!(
                "table {}: no seal of removed day {day} ends at seq {}",
                t.table,
                t.first_seq.0 - 1
            ))),
        }
    }

    /// Whether the seal's `previous` names the stored seal of the day before it.
    fn previous_link_problem(&self, seal: &DaySeal) -> Result<Option<String>, Error> {
        let before = self
            .reader()
            .day_seals(Some(&seal.day), 1)?
            .into_iter()
            .next();
        Ok(match (seal.previous, before) {
            (None, None) => None,
            (Some(d), Some(b)) if b.digest() == d && b.ends_at_ns == seal.starts_at_ns => None,
            (Some(d), Some(b)) => Some(format!(
                "the seal names previous {d}; the seal before it is day {} with digest {}",
                b.day,
                b.digest()
            )),
            (Some(d), None) => Some(format!("the seal names previous {d}, which is not stored")),
            (None, Some(b)) => Some(format!(
                "the seal names no previous seal, yet day {} is sealed before it",
                b.day
            )),
        })
    }

    /// The kept checkpoints whose seq lies in the table's range.
    fn range_checkpoints(&self, t: &SealedTable) -> Result<RangeCheckpoints, Error> {
        let mut out = RangeCheckpoints::new();
        if t.events == 0 {
            return Ok(out);
        }
        let from = seq_key(&t.table, t.first_seq.0);
        let to = seq_key(&t.table, t.last_seq.0 + 1);
        for kv in self.store.range(Space::Checkpoint, &from, Some(&to)) {
            let (k, v) = kv?;
            let (_, seq) = record::split_table_key(&k)?;
            let seq = record::be_u64(seq)?;
            let bytes = crate::attest::decode_checkpoint(&v)?.bytes;
            let c = schemas::attest::Checkpoint::decode(&bytes)
                .map_err(|e| record::corrupt(&e.to_string()))?;
            out.insert(seq, c.head_hash);
            if out.len() > DAY_CHECKPOINTS_MAX {
                return Err(Error::Day(format!(
                    "table {} holds more than {DAY_CHECKPOINTS_MAX} checkpoints in one day",
                    t.table
                )));
            }
        }
        Ok(out)
    }

    /// Recomputes one table's range from its anchor: the first problem, if any.
    fn verify_range(
        &self,
        seal: &DaySeal,
        t: &SealedTable,
        checkpoints: &RangeCheckpoints,
        read: &mut u64,
    ) -> Result<Option<DayProblem>, Error> {
        let at = |seq: u64, what: String| {
            Ok(Some(DayProblem {
                table: Some(t.table.clone()),
                seq: Some(seq),
                what,
            }))
        };
        let anchor = match self.hash_at(&t.table, t.first_seq.0 - 1, read) {
            Ok(h) => h,
            // The day before was removed by retention: its seal gives the anchor.
            Err(Error::RetentionRemoved { day, .. }) => self.sealed_head(&day, t)?,
            Err(e) => return at(t.first_seq.0 - 1, format!("the anchor does not read: {e}")),
        };
        if anchor != t.anchor_hash {
            let what = format!("anchor hash {anchor} is not the sealed {}", t.anchor_hash);
            return at(t.first_seq.0 - 1, what);
        }
        let mut prev = anchor;
        let mut next = t.first_seq.0;
        for e in self.events(&t.table, t.first_seq.0..=t.last_seq.0) {
            let e = match e {
                Ok(e) => e,
                Err(err) => return at(next, format!("unreadable: {err}")),
            };
            *read += 1;
            if let Some(what) = event_problem(&t.table, &e, next, &prev, seal.ends_at_ns) {
                return at(next, what);
            }
            if checkpoints.get(&next).is_some_and(|h| *h != e.hash) {
                return at(next, "a kept checkpoint signs another hash here".into());
            }
            prev = e.hash;
            next += 1;
        }
        if next != t.last_seq.0 + 1 {
            return at(next, format!("missing: the range ends at {}", t.last_seq.0));
        }
        if prev != t.head_hash {
            let what = format!("head hash {prev} is not the sealed {}", t.head_hash);
            return at(t.last_seq.0, what);
        }
        Ok(None)
    }
}

impl Reader<'_> {
    /// The last seq and head hash `day`'s seal gives `table`, if it sealed any of it.
    pub fn sealed_head_at(
        &self,
        day: &str,
        table: &TableId,
    ) -> Result<Option<(u64, Hash32)>, Error> {
        let seal = self.day_seal(day)?;
        let t = seal.as_ref().and_then(|s| s.table(table));
        Ok(t.filter(|t| t.events > 0)
            .map(|t| (t.last_seq.0, t.head_hash)))
    }
}

impl Verifier<'_> {
    /// Verifies one sealed day: the seal's signature (by `signer` when given) and its
    /// link to the previous seal; per table, the chain recomputed from the anchor over the
    /// range, against the seal and the kept checkpoints in range. Reads only the day.
    pub fn verify_day(&self, day: &str, signer: Option<&PublicKey>) -> Result<DayVerdict, Error> {
        let Some(seal) = self.reader().day_seal(day)? else {
            return Err(Error::Seal {
                day: day.into(),
                why: "not sealed".into(),
            });
        };
        let mut v = DayVerdict {
            digest: seal.digest(),
            seal: seal.clone(),
            problems: Vec::new(),
            events_read: 0,
            checkpoints: 0,
            removed_by_retention: false,
        };
        let problem = |what: String| DayProblem {
            table: None,
            seq: None,
            what,
        };
        if let Err(e) = seal.verify(signer) {
            v.problems.push(problem(e.to_string()));
        }
        if let Some(p) = self.previous_link_problem(&seal)? {
            v.problems.push(problem(p));
        }
        if let Some(entry) = self.tier().tier_entry(day)? {
            if entry.state == crate::tier::TierState::Removed {
                v.removed_by_retention = true;
                if let Some(p) = crate::tier::removed::entry_problem(&entry, &seal) {
                    v.problems.push(problem(p));
                }
                return Ok(v);
            }
        }
        for t in &seal.tables {
            let checkpoints = self.range_checkpoints(t)?;
            v.checkpoints += checkpoints.len() as u64;
            if let Some(p) = self.verify_range(&seal, t, &checkpoints, &mut v.events_read)? {
                v.problems.push(p);
            }
        }
        Ok(v)
    }
}

/// What is wrong with the stored event expected at `seq` after `prev`, if anything.
fn event_problem(
    table: &TableId,
    e: &crate::record::StoredEvent,
    seq: u64,
    prev: &Hash32,
    ends_at_ns: i64,
) -> Option<String> {
    if e.seq.0 != seq {
        return Some(format!("seq {} is stored where {seq} belongs", e.seq.0));
    }
    let computed = schemas::event_hash(prev, &e.bytes);
    if computed != e.hash {
        return Some(format!(
            "stored hash {} is not the recomputed {computed}: the bytes changed",
            e.hash
        ));
    }
    let event = match schemas::codec::decode(&e.bytes) {
        Ok((event, _)) => event,
        Err(err) => return Some(format!("does not decode: {err}")),
    };
    if event.table != *table || event.seq.0 != seq || event.prev != *prev {
        return Some("its table, seq or prev link is not its place in the chain".into());
    }
    if e.received_at_ns >= ends_at_ns {
        return Some(format!(
            "arrived at {} ns, at or after the day's end",
            e.received_at_ns
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR_NS: i64 = 3600 * 1_000_000_000;

    #[test]
    fn a_day_across_a_dst_change_lasts_23_or_25_hours() {
        let ny = DayRule::new("06:00", "America/New_York").unwrap();
        let spring = ny.bounds("2026-03-07").unwrap();
        assert_eq!(spring.ends_at_ns - spring.starts_at_ns, 23 * HOUR_NS);
        let autumn = ny.bounds("2026-10-31").unwrap();
        assert_eq!(autumn.ends_at_ns - autumn.starts_at_ns, 25 * HOUR_NS);
        let plain = ny.bounds("2026-11-25").unwrap();
        assert_eq!(plain.ends_at_ns - plain.starts_at_ns, 24 * HOUR_NS);
        // 06:00 EST is 11:00 UTC.
        let eleven = jiff::Timestamp::from_second(plain.starts_at_ns / 1_000_000_000).unwrap();
        assert_eq!(eleven.to_string(), "2026-11-25T11:00:00Z");
    }

    #[test]
    fn every_instant_has_one_day() {
        let sg = DayRule::new("06:00", "Asia/Singapore").unwrap();
        let b = sg.bounds("2026-11-25").unwrap();
        assert_eq!(sg.day_of(b.starts_at_ns).unwrap(), "2026-11-25");
        assert_eq!(sg.day_of(b.ends_at_ns - 1).unwrap(), "2026-11-25");
        assert_eq!(sg.day_of(b.ends_at_ns).unwrap(), "2026-11-26");
        assert_eq!(sg.day_of(b.starts_at_ns - 1).unwrap(), "2026-11-24");
        assert_eq!(sg.previous_day("2026-03-01").unwrap(), "2026-02-28");
    }

    #[test]
    fn bad_rules_and_days_are_refused() {
        assert!(DayRule::new("6:00", "UTC").is_err());
        assert!(DayRule::new("24:00", "UTC").is_err());
        assert!(DayRule::new("06:00", "Mars/Olympus").is_err());
        let utc = DayRule::new("00:00", "UTC").unwrap();
        assert!(utc.bounds("2026-02-30").is_err());
        assert!(utc.bounds("2026-1-30").is_err());
    }
}
