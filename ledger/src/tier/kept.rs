//! What a retention removal keeps of a day: the round-less events whose state later days
//! still stand on. Per table, its last `TableOpened` (the config in force), its last
//! `DealerChanged`, its last round-less `JackpotShown` per pool, and every key event.
//!
//! They stay in the day's tier entry, byte for byte, so a later round still replays under
//! its config and its bundle still cites its config and enrollment. `stored_event` finds
//! them where the day's records are gone. `verify` checks each one's hash from its bytes.

pub use crate::store::tier_ref::{export_line, kept_stored, KeptEvent};

use super::TierEntry;
use crate::faces::Tier;
use crate::{error::Error, owner::Ledger, record::StoredEvent};
use schemas::seal::DaySeal;
use schemas::{EventBody, TableId};
use std::collections::BTreeMap;

/// Most events one removal keeps.
pub const KEPT_EVENTS_MAX: usize = 4_096;

/// Which kept slot an event fills: later events of a slot replace earlier ones.
fn slot(seq: u64, body: &EventBody, round: Option<schemas::RoundId>) -> Option<String> {
    Some(match body {
        EventBody::TableOpened { .. } => "config".into(),
        EventBody::DealerChanged { .. } => "dealer".into(),
        EventBody::JackpotShown { pool, .. } if round.is_none() => format!("pool/{pool}"),
        b if schemas::attest::KeyEvent::of(b).is_some() => format!("key/{seq}"),
        _ => return None,
    })
}

impl Ledger {
    /// The events a removal of `seal`'s day keeps, read before its file goes.
    pub(crate) fn events_to_keep(&self, seal: &DaySeal) -> Result<Vec<KeptEvent>, Error> {
        let mut out = Vec::new();
        for t in seal.tables.iter().filter(|t| t.events > 0) {
            let mut slots: BTreeMap<String, KeptEvent> = BTreeMap::new();
            for e in self.events(&t.table, t.first_seq.0..=t.last_seq.0) {
                let e = e?;
                let Ok((event, _)) = schemas::codec::decode(&e.bytes) else {
                    continue;
                };
                if let Some(s) = slot(e.seq.0, &event.body, event.round) {
                    slots.insert(s, export_line(&t.table, &e));
                }
            }
            out.extend(slots.into_values());
            if out.len() > KEPT_EVENTS_MAX {
                return Err(Error::Tier(format!(
                    "day {}: more than {KEPT_EVENTS_MAX} events to keep",
                    seal.day
                )));
            }
        }
        out.sort_by(|a, b| (&a.table, a.seq).cmp(&(&b.table, b.seq)));
        Ok(out)
    }

    /// The kept event at `seq` of `table` in removed `day`, if the removal kept it.
    pub(crate) fn kept_event(
        &self,
        day: &str,
        table: &TableId,
        seq: u64,
    ) -> Result<Option<StoredEvent>, Error> {
        let Some(entry) = self.tier().tier_entry(day)? else {
            return Ok(None);
        };
        let found = entry
            .kept
            .iter()
            .find(|k| &k.table == table && k.seq == seq);
        found
            .map(|k| kept_stored(k).map_err(|e| crate::record::corrupt(&e)))
            .transpose()
    }
}

impl Tier<'_> {
    /// Every event the removal of `day` kept of `table`, in seq order.
    pub fn kept_events(&self, day: &str, table: &TableId) -> Result<Vec<StoredEvent>, Error> {
        let entry: Option<TierEntry> = self.tier_entry(day)?;
        let kept = entry.map(|e| e.kept).unwrap_or_default();
        kept.iter()
            .filter(|k| &k.table == table)
            .map(|k| kept_stored(k).map_err(|e| crate::record::corrupt(&e)))
            .collect()
    }
}
