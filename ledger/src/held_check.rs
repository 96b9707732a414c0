//! The check of held events (`Space::Pending`): what waits beyond a gap is stored too, so
//! `verify` reports it per table and checks each event as far as its stored form allows.
//!
//! Each held event must decode, be the event its key names (table and seq), carry the hash
//! its bytes and prev give, and lie beyond its table's head (a held event at or below the
//! head should have been appended or quarantined). The held form keeps no signature: a
//! signed event's signature was checked when it arrived, and is checked again by the
//! append when the gap fills. A table may hold events and have no record yet.
//!
//! Reads the pending space once, in key order; memory is one table's summary at a time.

use crate::record::{be_u64, split_table_key};
use crate::store::{Space, Store};
use crate::types::decode_held;
use crate::{error::Error, limits::PENDING_BYTES_MAX, limits::PENDING_PER_TABLE_MAX};
use schemas::{chain::event_hash, codec, TableId};
use std::collections::BTreeMap;

/// One table's held events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldTable {
    /// The table whose events wait beyond a gap.
    pub table: TableId,
    /// How many events the table holds.
    pub events: u64,
    /// The lowest held seq.
    pub first_seq: u64,
    /// The highest held seq.
    pub last_seq: u64,
    /// The held events' own bytes (as received).
    pub bytes: u64,
    /// The earliest receive time among them (UTC ns): how long the table has waited.
    pub since_ns: i64,
    /// The first held event that does not check, and why; `None` when all do.
    pub problem: Option<HeldProblem>,
}

/// Why a held event does not check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldProblem {
    /// The held event's seq.
    pub seq: u64,
    /// Why it does not check.
    pub detail: String,
}

/// Every table's held events, in table order, and the pending keys that do not read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeldReport {
    /// Tables with held events, in table order.
    pub tables: Vec<HeldTable>,
    /// Pending-space keys that do not read as (table, seq), hex.
    pub bad_keys: Vec<String>,
}

impl HeldReport {
    /// Whether every key reads and every held event checks.
    pub fn is_ok(&self) -> bool {
        self.bad_keys.is_empty() && self.tables.iter().all(|t| t.problem.is_none())
    }

    /// Tables whose held events do not all check.
    pub fn failed(&self) -> usize {
        self.tables.iter().filter(|t| t.problem.is_some()).count() + self.bad_keys.len()
    }
}

/// Checks every held event against `heads` (each verified table's head seq; a table not in
/// it has no verified head, and only its events' own form is checked).
pub fn verify_held(store: &dyn Store, heads: &BTreeMap<TableId, u64>) -> Result<HeldReport, Error> {
    let mut report = HeldReport::default();
    let mut bytes_all = 0u64;
    for kv in store.range(Space::Pending, &[], None) {
        let (k, v) = kv?;
        let (table, seq) = match split_table_key(&k).and_then(|(t, s)| Ok((t, be_u64(s)?))) {
            Ok(ts) => ts,
            Err(e) => {
                report
                    .bad_keys
                    .push(format!("pending key {}: {e}", hex::encode(&k)));
                continue;
            }
        };
        if report.tables.last().map(|t| &t.table) != Some(&table) {
            report.tables.push(HeldTable {
                table: table.clone(),
                events: 0,
                first_seq: seq,
                last_seq: seq,
                bytes: 0,
                since_ns: i64::MAX,
                problem: None,
            });
        }
        let t = report.tables.last_mut().expect("pushed above");
        let checked = check_held(&table, seq, heads.get(&table).copied(), &v);
        t.events += 1;
        t.last_seq = seq;
        if let Ok((len, received_at_ns)) = &checked {
            t.bytes += len;
            bytes_all += len;
            t.since_ns = t.since_ns.min(*received_at_ns);
        }
        if t.problem.is_none() {
            t.problem = checked.err().map(|detail| HeldProblem { seq, detail });
            if t.problem.is_none() && t.events > PENDING_PER_TABLE_MAX as u64 {
                t.problem = Some(HeldProblem {
                    seq,
                    detail: format!("more than {PENDING_PER_TABLE_MAX} held events"),
                });
            }
        }
    }
    if bytes_all > PENDING_BYTES_MAX as u64 {
        report.bad_keys.push(format!(
            "held events hold {bytes_all} bytes, beyond the bound of {PENDING_BYTES_MAX}"
        ));
    }
    Ok(report)
}

/// One held event's checks: its length and receive time, or why it does not check.
fn check_held(
    table: &TableId,
    seq: u64,
    head_seq: Option<u64>,
    stored: &[u8],
) -> Result<(u64, i64), String> {
    let held = decode_held(stored).map_err(|e| format!("held record unreadable: {e}"))?;
    let (event, _) =
        codec::decode(&held.bytes).map_err(|e| format!("held bytes do not decode: {e}"))?;
    if event.table != *table || event.seq.0 != seq {
        return Err(format!(
            "held bytes are an event of table {} seq {}",
            event.table, event.seq.0
        ));
    }
    let computed = event_hash(&event.prev, &held.bytes);
    if computed != held.hash {
        return Err(format!(
            "stored hash {} differs from the recomputed {computed}",
            held.hash
        ));
    }
    if let Some(head) = head_seq.filter(|h| seq <= *h) {
        return Err(format!(
            "held at seq {seq}, at or below the head seq {head}: it should have left the held events"
        ));
    }
    Ok((held.bytes.len() as u64, held.received_at_ns))
}
