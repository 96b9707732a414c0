//! The quarantine chain: one hash over every quarantine entry in id order, so that an entry
//! edited, removed, added or moved in the store is seen by `verify`, as a table's records
//! are by its chain. Entries are written once and never rewritten (the crate's append-only
//! invariant) and always under an id above every stored one (`append::quarantine`,
//! `Ledger::restore_quarantined`), so the chain only ever extends, and each commit that
//! quarantines writes the new head in the same atomic commit as its entries. A signed purge
//! (`crate::purge`) removes the oldest entries; the chain then starts from its cut
//! (`crate::purge_mark`), the count and hash after them:
//!
//! ```text
//! chain(0) = 32 zero bytes
//! chain(n) = BLAKE3-keyed(key = BLAKE3("roundledger/quarantine/v1"),
//!                         chain(n - 1) || id u64 BE || len(value) u64 BE || value)
//! ```
//!
//! over the n-th entry by id, `value` its stored bytes (`QuarantineEntry::encode`, which
//! holds the message verbatim with its reason, subject, stream seq and receive time). The
//! head (`HEAD_KEY` in `Space::Meta`) is `entries u64 BE || chain(entries)`: 40 bytes.
//!
//! What the chain covers: each entry's stored value, so its reason, receive time and bytes.
//! What it does not: the repeat counters beside the entries (`Repeat`, in `Space::Meta`). A
//! message refused again with the same bytes and reason is counted against its first
//! entry, not stored again; those counts are operating counters, like the meta counters,
//! not proofs, and a commit the store loses loses its counts with it.
//!
//! The step is `proofs::digest::quarantine_next` (formats in schemas/README.md). Like a
//! table's head, the quarantine head does not stop someone who rewrites the entries and the
//! head together: a digest held by an outside party does, since version 3 names the
//! quarantine's head (`crate::digest`).

use crate::error::Error;
use crate::record::{be_u64, corrupt, R, W};
use crate::store::{Space, Store};
use schemas::{Hash32, TableId};
use std::collections::BTreeMap;

/// What a quarantine entry costs on disk beyond its message's bytes, at most: its reason
/// and text (`quarantine::QUARANTINE_TEXT_LEN_MAX`), subject, stream seq and receive time, the value
/// log's headers, and sled's key and pointer with sled's own overhead (measured in
/// BENCHMARKS.md). The byte bounds count each entry as its message plus this.
pub const ENTRY_COST_BYTES: u64 = 1024;

/// One quarantined message, bytes verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuarantineEntry {
    /// Its id: quarantine order, from 0, never reused.
    pub id: u64,
    /// Stable snake_case code (see `crate::types::reason`).
    pub reason: String,
    /// Why it was refused, in words, for the operator.
    pub text: String,
    /// The table its subject named; `None` when the subject named no valid table.
    pub subject_table: Option<TableId>,
    /// JetStream stream sequence of the delivery.
    pub stream_seq: u64,
    /// When the House received it, UTC ns.
    pub received_at_ns: i64,
    /// The message bytes exactly as received.
    pub bytes: Vec<u8>,
    /// Refusals of the same bytes for the same reason after this one, counted beside the
    /// entry (`quarantine::Repeat`), not part of its stored value nor of the chain. Filled
    /// by the reads that list entries; 0 from `decode`.
    pub repeats: u64,
}

impl QuarantineEntry {
    /// The entry as the API and the CLI show it, with the first `preview` bytes of the
    /// message in hex (`usize::MAX`: all of them).
    pub fn row(self, preview: usize) -> schemas::api::QuarantineRow {
        schemas::api::QuarantineRow {
            id: self.id,
            bytes_len: self.bytes.len() as u64,
            bytes_hex: hex::encode(&self.bytes[..self.bytes.len().min(preview)]),
            reason: self.reason,
            text: self.text,
            subject_table: self.subject_table,
            stream_seq: self.stream_seq,
            received_at_ns: self.received_at_ns,
            repeats: self.repeats,
        }
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut w = W::default();
        w.bytes(self.reason.as_bytes()).bytes(self.text.as_bytes());
        match &self.subject_table {
            Some(t) => w.u8(1).bytes(t.as_str().as_bytes()),
            None => w.u8(0),
        };
        w.u64(self.stream_seq)
            .i64(self.received_at_ns)
            .bytes(&self.bytes);
        w.0
    }
    pub(crate) fn decode(id: u64, v: &[u8]) -> Result<QuarantineEntry, Error> {
        let mut r = R::new(v);
        let s = |b: &[u8]| String::from_utf8(b.to_vec()).map_err(|_| corrupt("quarantine text"));
        let reason = s(r.bytes()?)?;
        let text = s(r.bytes()?)?;
        let subject_table = match r.u8()? {
            0 => None,
            _ => Some(
                TableId::new(s(r.bytes()?)?)
                    .map_err(|e| corrupt(&format!("quarantine table: {e}")))?,
            ),
        };
        Ok(QuarantineEntry {
            id,
            reason,
            text,
            subject_table,
            stream_seq: r.u64()?,
            received_at_ns: r.i64()?,
            bytes: r.bytes()?.to_vec(),
            repeats: 0,
        })
    }
}

/// `Space::Meta` key of the quarantine head.
pub const HEAD_KEY: &[u8] = b"quarantine_head";

/// How many of the newest quarantine entries a redelivery is recognised against
/// (`RecentQuarantine`). NATS redelivers only messages still pending, and ingest bounds them
/// (`ack_pending_max`, checked against this), so a redelivered message was quarantined at
/// most that many entries ago.
pub const QUARANTINE_RECENT_MAX: usize = 65_536;

/// Longest reason text an entry keeps, in bytes; a longer one is cut (`refuse`).
pub const QUARANTINE_TEXT_LEN_MAX: usize = 256;

/// What makes two deliveries the same message: its stream seq and its bytes.
pub(crate) type DeliveryKey = (u64, Hash32);

pub(crate) fn delivery_key(stream_seq: u64, bytes: &[u8]) -> DeliveryKey {
    (stream_seq, Hash32(*blake3::hash(bytes).as_bytes()))
}

/// The newest quarantine entries by delivery, so that a message delivered again (NATS
/// redelivers what was not acked: after a crash between the flush and the ack, after
/// `ack_wait`) is acknowledged without a second entry: quarantine entries are written once,
/// like events. Bounded: the oldest is forgotten beyond `QUARANTINE_RECENT_MAX`.
/// The quarantine's part of the ledger's state: its chain, its counts and its bounds.
pub(crate) struct QuarantineState {
    /// Entries stored.
    pub(crate) entries: u64,
    /// The id the next entry takes.
    pub(crate) next_id: u64,
    /// The quarantine chain's head, as committed.
    pub(crate) head: QuarantineHead,
    /// The newest entries by delivery (a redelivery is not quarantined again).
    pub(crate) recent: RecentQuarantine,
    /// The newest entries by content, with their repeat counters.
    pub(crate) refusals: RecentRefusals,
    /// Entries and charged bytes per source and in all in the current window of bus time.
    pub(crate) window: Window,
    /// Charged bytes of every entry but `table_fenced` ones (`quarantine_limits::charge`).
    pub(crate) bytes: u64,
    /// Charged bytes per source, `table_fenced` entries apart.
    pub(crate) by_source: SourceBytes,
    /// Charged bytes of `table_fenced` entries: kept apart, never refused by a limit.
    pub(crate) fenced_bytes: u64,
    /// The limits in force (`quarantine_limits`).
    pub(crate) limits: schemas::limits::QuarantineLimits,
    /// Where purges have cut the quarantine so far (`purge`).
    pub(crate) purge_mark: crate::purge_mark::PurgeMark,
    /// The id purges asked for: entries below it go.
    pub(crate) purge_target: u64,
    /// Refusals beyond a bound, counted by (source, reason).
    pub(crate) overflows: BTreeMap<(String, String), Overflow>,
    /// The newest overflowed deliveries (by bound), so a redelivery is not counted twice.
    /// In memory only: after a reopen a redelivery is judged anew.
    pub(crate) recent_overflowed: RecentQuarantine,
}

impl QuarantineState {
    /// Puts `limits` in force; a window of another length starts counting again.
    pub(crate) fn set_limits(&mut self, limits: schemas::limits::QuarantineLimits) {
        if self.limits.window_ns != limits.window_ns {
            self.window = Default::default();
        }
        self.limits = limits;
    }
}

#[derive(Default)]
pub(crate) struct RecentQuarantine {
    ids: std::collections::HashMap<DeliveryKey, u64>,
    order: std::collections::VecDeque<DeliveryKey>,
}

impl RecentQuarantine {
    pub(crate) fn get(&self, key: &DeliveryKey) -> Option<u64> {
        self.ids.get(key).copied()
    }

    /// Adds an entry (entries come in id order).
    pub(crate) fn insert(&mut self, key: DeliveryKey, id: u64) {
        if self.ids.insert(key, id).is_none() {
            self.order.push_back(key);
            if self.order.len() > QUARANTINE_RECENT_MAX {
                if let Some(old) = self.order.pop_front() {
                    self.ids.remove(&old);
                }
            }
        }
        debug_assert_eq!(self.ids.len(), self.order.len());
    }
}
/// How many of the newest quarantine entries a repeat is recognised against
/// (`RecentRefusals`): the same bounded memory as `QUARANTINE_RECENT_MAX`. A flood repeats
/// one message, so its entry stays among the newest while the flood lasts.
pub const REPEATS_RECENT_MAX: usize = 65_536;

/// `Space::Meta` key prefix of an entry's repeat counter: `prefix ++ id (BE)`.
pub const REPEAT_KEY_PREFIX: &[u8] = b"quarantine_repeat/";

/// The `Space::Meta` key of entry `id`'s repeat counter.
pub fn repeat_key(id: u64) -> Vec<u8> {
    [REPEAT_KEY_PREFIX, &id.to_be_bytes()].concat()
}

/// What makes a refusal a repeat of an entry: its reason code and the BLAKE3 of its bytes.
pub(crate) type ContentKey = (String, Hash32);

/// How often an entry's message was refused again after the entry was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repeat {
    /// Refusals after the first (the entry itself is not counted).
    pub count: u64,
    /// The stream seq of the last refusal counted (the entry's own while `count` is 0).
    /// Ingest appends in stream order, so one at or below it was counted already: it is a
    /// redelivery (`Refused::QuarantinedBefore`). A redelivery refused now for another
    /// reason (the chain moved on since) matches no entry's content: it is judged anew.
    pub last_stream_seq: u64,
}

impl Repeat {
    /// The stored form: `count u64 BE || last stream seq u64 BE`.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut v = self.count.to_be_bytes().to_vec();
        v.extend_from_slice(&self.last_stream_seq.to_be_bytes());
        v
    }

    pub(crate) fn decode(v: &[u8]) -> Result<Repeat, Error> {
        if v.len() != 16 {
            return Err(crate::record::corrupt("quarantine repeat counter length"));
        }
        Ok(Repeat {
            count: be_u64(&v[..8])?,
            last_stream_seq: be_u64(&v[8..])?,
        })
    }
}

/// The stored repeat counters by entry id (each entry's first refusal is not counted).
pub(crate) fn stored_repeats(
    store: &dyn Store,
) -> Result<std::collections::BTreeMap<u64, Repeat>, Error> {
    let mut end = REPEAT_KEY_PREFIX.to_vec();
    end.extend_from_slice(&[0xff; 9]);
    let mut out = std::collections::BTreeMap::new();
    for kv in store.range(Space::Meta, REPEAT_KEY_PREFIX, Some(&end)) {
        let (k, v) = kv?;
        let id = be_u64(k.get(REPEAT_KEY_PREFIX.len()..).unwrap_or(&[]))?;
        out.insert(id, Repeat::decode(&v)?);
    }
    Ok(out)
}

/// One entry a repeat is counted against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub id: u64,
    pub repeat: Repeat,
}

/// The newest quarantine entries by content (reason and bytes), with their repeat counters,
/// so that a message refused again under another stream seq is counted, not stored again.
/// Bounded: the oldest entry is forgotten beyond `REPEATS_RECENT_MAX` (a repeat of it is
/// stored as a new entry).
#[derive(Default)]
pub(crate) struct RecentRefusals {
    by_content: std::collections::HashMap<ContentKey, Refusal>,
    order: std::collections::VecDeque<ContentKey>,
}

impl RecentRefusals {
    pub(crate) fn get(&self, key: &ContentKey) -> Option<Refusal> {
        self.by_content.get(key).copied()
    }

    /// Adds a new entry (entries come in id order) or updates a known one's counter in
    /// place (a repeat does not make its entry newer).
    pub(crate) fn insert(&mut self, key: ContentKey, refusal: Refusal) {
        if self.by_content.insert(key.clone(), refusal).is_none() {
            self.order.push_back(key);
            if self.order.len() > REPEATS_RECENT_MAX {
                if let Some(old) = self.order.pop_front() {
                    self.by_content.remove(&old);
                }
            }
        }
        debug_assert_eq!(self.by_content.len(), self.order.len());
    }

    /// Forgets the entries a purge removed (ids below `below_id`) and renames those it
    /// moved (`moved`: old id -> new id).
    pub(crate) fn forget_below(
        &mut self,
        below_id: u64,
        moved: &std::collections::HashMap<u64, u64>,
    ) {
        self.by_content.retain(|_, r| {
            if let Some(new_id) = moved.get(&r.id) {
                r.id = *new_id;
            }
            r.id >= below_id
        });
        let kept = &self.by_content;
        self.order.retain(|k| kept.contains_key(k));
        debug_assert_eq!(self.by_content.len(), self.order.len());
    }
}

/// How many entries the chain covers and its hash after the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuarantineHead {
    /// Entries the chain covers, counted from the first.
    pub entries: u64,
    /// The chain's hash after the last covered entry; zeros for none.
    pub hash: Hash32,
}

impl QuarantineHead {
    /// The head of no entry.
    pub const EMPTY: QuarantineHead = QuarantineHead {
        entries: 0,
        hash: Hash32::ZERO,
    };

    /// The head after the entry `id` with stored bytes `value`
    /// (`proofs::digest::quarantine_next`).
    pub fn next(&self, id: u64, value: &[u8]) -> QuarantineHead {
        QuarantineHead {
            entries: self.entries + 1,
            hash: proofs::digest::quarantine_next(&self.hash, id, value),
        }
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut v = self.entries.to_be_bytes().to_vec();
        v.extend_from_slice(&self.hash.0);
        v
    }

    pub(crate) fn decode(v: &[u8]) -> Result<QuarantineHead, Error> {
        if v.len() != 40 {
            return Err(crate::record::corrupt(&format!(
                "quarantine head of {} bytes, not 40",
                v.len()
            )));
        }
        let mut hash = [0u8; 32];
        hash.copy_from_slice(&v[8..]);
        Ok(QuarantineHead {
            entries: be_u64(&v[..8])?,
            hash: Hash32(hash),
        })
    }
}

/// The stored quarantine head, `None` when none was written (no entry yet, or only entries
/// written before the chain existed).
pub(crate) fn stored_head(store: &dyn Store) -> Result<Option<QuarantineHead>, Error> {
    store
        .get(Space::Meta, HEAD_KEY)?
        .map(|v| QuarantineHead::decode(&v))
        .transpose()
}

/// The verdict on the quarantine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuarantineVerdict {
    /// The entries chain to the stored head. `unanchored` entries have no stored head to
    /// compare with: written before the chain existed, they are covered from the next
    /// quarantined message on, whose head chains over all of them.
    Ok {
        /// The stored head the entries chain to.
        head: QuarantineHead,
        /// Entries written before the chain existed, covered by later heads.
        unanchored: u64,
    },
    /// The entries do not chain to the stored head, and what was found.
    Bad {
        /// What does not chain, in words.
        problem: String,
    },
}

/// Recomputes the quarantine chain over the stored entries and compares it with the head.
/// When the entries outnumber the head's count and the first `entries` of them chain to it,
/// the entries added since are named; otherwise the head is all there is to compare with.
pub fn verify_quarantine(store: &dyn Store) -> Result<QuarantineVerdict, Error> {
    Ok(verify_quarantine_at(store, None)?.0)
}

/// `verify_quarantine`, and the chain's hash after the first `at` entries if there are
/// that many (what a digest that counted `at` entries must find).
pub fn verify_quarantine_at(
    store: &dyn Store,
    at: Option<u64>,
) -> Result<(QuarantineVerdict, Option<Hash32>), Error> {
    let mark = match crate::purge_mark::load_mark(store) {
        Ok(m) => m,
        Err(e) => {
            let problem = format!("the quarantine's purge mark does not read: {e}");
            return Ok((QuarantineVerdict::Bad { problem }, None));
        }
    };
    // Entries a purge removed are chained into its mark; a digest that counted fewer
    // cannot be checked now.
    let mut hash_at = (at == Some(mark.entries)).then_some(mark.hash);
    let stored = match store.get(Space::Meta, HEAD_KEY)? {
        None => None,
        Some(v) => match QuarantineHead::decode(&v) {
            Ok(h) => Some(h),
            Err(e) => {
                let problem = format!("the quarantine head does not read: {e}");
                return Ok((QuarantineVerdict::Bad { problem }, None));
            }
        },
    };
    let mut chain = QuarantineHead {
        entries: mark.entries,
        hash: mark.hash,
    };
    // The head's count reached with its hash: the entries from `extra_from` on came after.
    let mut prefix_agrees = stored == Some(chain);
    let mut extra_from = None;
    for kv in store.range(Space::Quarantine, &[], None) {
        let (k, v) = kv?;
        let Ok(id) = be_u64(&k) else {
            let problem = format!("a quarantine key of {} bytes is not an id", k.len());
            return Ok((QuarantineVerdict::Bad { problem }, None));
        };
        if id < mark.below_id {
            let problem = format!(
                "quarantine entry {id} is stored below the purge's cut at id {}: added outside the ledger",
                mark.below_id
            );
            return Ok((QuarantineVerdict::Bad { problem }, None));
        }
        if prefix_agrees && extra_from.is_none() {
            extra_from = Some(id);
        }
        chain = chain.next(id, &v);
        if Some(chain.entries) == at {
            hash_at = Some(chain.hash);
        }
        if stored.is_some_and(|h| h == chain) {
            prefix_agrees = true;
        }
    }
    Ok((
        judge_chain(stored, chain, prefix_agrees, extra_from),
        hash_at,
    ))
}

/// The verdict on the chained entries against the stored head.
fn judge_chain(
    stored: Option<QuarantineHead>,
    chain: QuarantineHead,
    prefix_agrees: bool,
    extra_from: Option<u64>,
) -> QuarantineVerdict {
    let Some(head) = stored else {
        return QuarantineVerdict::Ok {
            head: chain,
            unanchored: chain.entries,
        };
    };
    if head == chain {
        return QuarantineVerdict::Ok {
            head,
            unanchored: 0,
        };
    }
    let problem = match extra_from {
        Some(id) if prefix_agrees => format!(
            "the quarantine head covers {}, and {} more from id {id} stored beyond it: added outside the ledger",
            entries(head.entries),
            chain.entries - head.entries
        ),
        _ => format!(
            "the quarantine head says {} chaining to {}; the {} stored chain to {}: an entry was edited, removed or added outside the ledger",
            entries(head.entries), head.hash, entries(chain.entries), chain.hash
        ),
    };
    QuarantineVerdict::Bad { problem }
}

fn entries(n: u64) -> String {
    format!("{n} {}", if n == 1 { "entry" } else { "entries" })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// schemas/vectors/devices-v1.json: a quarantine entry's stored value, written from
    /// schemas/DEVICES.md by Python, and the quarantine chain after it.
    #[test]
    fn quarantine_entry_vector() {
        let text = include_str!("../../schemas/vectors/devices-v1.json");
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        let q = &v["quarantine_entry"];
        let s = |k: &str| q[k].as_str().unwrap().to_string();
        let entry = crate::quarantine::QuarantineEntry {
            id: q["id"].as_u64().unwrap(),
            reason: s("reason"),
            text: s("text"),
            subject_table: Some(schemas::TableId::new(s("subject_table")).unwrap()),
            stream_seq: q["stream_seq"].as_u64().unwrap(),
            received_at_ns: q["received_at_ns"].as_i64().unwrap(),
            bytes: hex::decode(s("bytes_hex")).unwrap(),
            repeats: 0,
        };
        let value = entry.encode();
        assert_eq!(hex::encode(&value), s("value_hex"));
        assert_eq!(
            crate::QuarantineEntry::decode(entry.id, &value).unwrap(),
            entry
        );
        let head = QuarantineHead::EMPTY.next(entry.id, &value);
        assert_eq!(head.hash.to_string(), s("chain_after"));
    }

    /// The step is schemas' `quarantine_next`; the head reads back and refuses other sizes.
    #[test]
    fn the_head_steps_with_the_documented_formula_and_reads_back() {
        let prev = QuarantineHead {
            entries: 4,
            hash: Hash32([3; 32]),
        };
        let next = prev.next(9, b"abc");
        assert_eq!(
            next.hash,
            proofs::digest::quarantine_next(&prev.hash, 9, b"abc")
        );
        assert_eq!(next.entries, 5);
        assert_eq!(QuarantineHead::decode(&next.encode()).unwrap(), next);
        assert!(QuarantineHead::decode(&next.encode()[..39]).is_err());
    }
}

// ---------------------------------------------------------------------------------------
// Bounds: a flood of distinct refusals is counted, not stored.

/// New quarantine entries one source (a table's subject, or none) may add per minute of
/// bus time by default (`QuarantineLimits`). Beyond, its refusals overflow.
pub const SOURCE_ENTRIES_PER_MINUTE_MAX: u64 = 1_000;
/// Charged bytes one source may add to the quarantine per minute by default.
pub const SOURCE_BYTES_PER_MINUTE_MAX: u64 = 4 << 20;
/// Charged bytes of every quarantine entry together by default. Beyond, every refusal
/// overflows until a purge (`purge`).
pub const QUARANTINE_BYTES_MAX: u64 = 8 << 30;
/// Sources a window counts apart; any further ones share one count.
pub const WINDOW_SOURCES_MAX: usize = 4_096;
/// Sources whose total bytes are counted apart; any further ones share one count (`*`).
pub const SOURCES_COUNTED_MAX: usize = 4_096;
/// Overflow counters kept apart by (source, reason); further sources count under `*`.
pub const OVERFLOW_COUNTERS_MAX: usize = 4_096;
/// `Space::Meta` key prefix of an overflow counter: `prefix ++ source ++ 0 ++ reason`.
pub const OVERFLOW_KEY_PREFIX: &[u8] = b"quarantine_overflow/";
/// Domain tag of an overflow counter's digest.
pub const OVERFLOW_DOMAIN: &[u8] = b"roundledger/quarantine-overflow/v1";

/// The source a refusal counts against: its subject's table, or `-` when it has none.
pub(crate) fn source_of(subject_table: Option<&schemas::TableId>) -> String {
    subject_table.map_or_else(|| "-".to_string(), |t| t.as_str().to_string())
}

/// Which bound a refusal went past. The discriminant is what recent overflows keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// Its source's entries or bytes this window.
    SourceRate = 0,
    /// The quarantine's total bytes.
    Total = 1,
    /// Its source's bytes in all.
    SourceTotal = 2,
    /// Every source's entries or bytes together this window.
    AllRate = 3,
}

impl Bound {
    /// The bound's stable name, as counters and logs show it.
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::SourceRate => "source_rate",
            Bound::Total => "total_bytes",
            Bound::SourceTotal => "source_bytes",
            Bound::AllRate => "all_rate",
        }
    }

    /// The bound whose discriminant is `code`.
    pub(crate) fn from_code(code: u64) -> Bound {
        match code {
            1 => Bound::Total,
            2 => Bound::SourceTotal,
            3 => Bound::AllRate,
            _ => Bound::SourceRate,
        }
    }
}

/// Charged bytes per source, bounded: sources past `SOURCES_COUNTED_MAX` share `*`.
#[derive(Debug, Clone, Default)]
pub(crate) struct SourceBytes {
    bytes: std::collections::HashMap<String, u64>,
}

impl SourceBytes {
    /// The key `source` counts under.
    pub(crate) fn key<'a>(&self, source: &'a str) -> &'a str {
        if self.bytes.len() >= SOURCES_COUNTED_MAX && !self.bytes.contains_key(source) {
            "*"
        } else {
            source
        }
    }

    pub(crate) fn get(&self, source: &str) -> u64 {
        self.bytes.get(self.key(source)).copied().unwrap_or(0)
    }

    /// Adds `bytes` to `source` (negative: a purge took them).
    pub(crate) fn add(&mut self, source: &str, bytes: i128) {
        let key = self.key(source).to_string();
        let b = self.bytes.entry(key).or_default();
        *b = u64::try_from(i128::from(*b) + bytes).unwrap_or(0);
        debug_assert!(self.bytes.len() <= SOURCES_COUNTED_MAX + 1);
    }

    /// Each source's bytes, by source.
    pub(crate) fn all(&self) -> std::collections::BTreeMap<String, u64> {
        self.bytes.iter().map(|(k, v)| (k.clone(), *v)).collect()
    }
}

/// Entries and charged bytes per source, and of all sources, in one window of bus time.
#[derive(Debug, Clone, Default)]
pub(crate) struct Window {
    window: i64,
    used: std::collections::HashMap<String, (u64, u64)>,
    all: (u64, u64),
}

impl Window {
    pub(crate) fn starting(window: i64) -> Window {
        Window {
            window,
            ..Default::default()
        }
    }

    pub(crate) fn window(&self) -> i64 {
        self.window
    }

    fn key<'a>(&self, source: &'a str) -> &'a str {
        if self.used.len() >= WINDOW_SOURCES_MAX && !self.used.contains_key(source) {
            "*"
        } else {
            source
        }
    }

    /// Entries and bytes of `source` in `window`, and of all sources: none for a later
    /// window; a late message counts in the current one, as `add` counts it.
    pub(crate) fn used(&self, window: i64, source: &str) -> ((u64, u64), (u64, u64)) {
        if window > self.window {
            return ((0, 0), (0, 0));
        }
        let one = self.used.get(self.key(source)).copied().unwrap_or_default();
        (one, self.all)
    }

    /// Counts `entries` and `bytes` for `source`; a later window starts anew, and a late
    /// message counts in the current one.
    pub(crate) fn add(&mut self, window: i64, source: &str, entries: u64, bytes: u64) {
        if window > self.window {
            *self = Window::starting(window);
        }
        let key = self.key(source).to_string();
        let u = self.used.entry(key).or_default();
        *u = (u.0 + entries, u.1 + bytes);
        self.all = (self.all.0 + entries, self.all.1 + bytes);
        debug_assert!(self.used.len() <= WINDOW_SOURCES_MAX + 1);
    }

    /// Adds another window's counts (a call's, when it commits).
    pub(crate) fn merge(&mut self, other: &Window) {
        for (source, (entries, bytes)) in &other.used {
            self.add(other.window, source, *entries, *bytes);
        }
    }
}

/// Refusals of one source and reason beyond a bound: not stored, counted. Their bytes
/// stay in the JetStream stream at the stream seqs named; the digest chains each one's
/// stream seq and BLAKE3, so a copy from the stream can be checked against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow {
    /// Messages counted.
    pub count: u64,
    /// Their bytes in total.
    pub bytes: u64,
    /// The stream seq of the first message counted.
    pub first_stream_seq: u64,
    /// The stream seq of the last message counted.
    pub last_stream_seq: u64,
    /// BLAKE3 chain over each message's stream seq and hash, in count order.
    pub digest: Hash32,
}

impl Overflow {
    /// Counts one more message.
    pub fn add(self, stream_seq: u64, bytes: &[u8]) -> Overflow {
        let mut h = blake3::Hasher::new();
        h.update(OVERFLOW_DOMAIN);
        h.update(&self.digest.0);
        h.update(&stream_seq.to_be_bytes());
        h.update(blake3::hash(bytes).as_bytes());
        Overflow {
            count: self.count + 1,
            bytes: self.bytes + bytes.len() as u64,
            first_stream_seq: if self.count == 0 {
                stream_seq
            } else {
                self.first_stream_seq
            },
            last_stream_seq: stream_seq,
            digest: Hash32(*h.finalize().as_bytes()),
        }
    }

    /// The stored form: four u64 BE, then the digest.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(64);
        for n in [
            self.count,
            self.bytes,
            self.first_stream_seq,
            self.last_stream_seq,
        ] {
            v.extend_from_slice(&n.to_be_bytes());
        }
        v.extend_from_slice(&self.digest.0);
        v
    }

    pub(crate) fn decode(v: &[u8]) -> Result<Overflow, Error> {
        if v.len() != 64 {
            return Err(crate::record::corrupt("quarantine overflow counter length"));
        }
        let mut digest = [0u8; 32];
        digest.copy_from_slice(&v[32..]);
        Ok(Overflow {
            count: be_u64(&v[..8])?,
            bytes: be_u64(&v[8..16])?,
            first_stream_seq: be_u64(&v[16..24])?,
            last_stream_seq: be_u64(&v[24..32])?,
            digest: Hash32(digest),
        })
    }
}

impl Default for Overflow {
    fn default() -> Overflow {
        Overflow {
            count: 0,
            bytes: 0,
            first_stream_seq: 0,
            last_stream_seq: 0,
            digest: Hash32::ZERO,
        }
    }
}

/// The `Space::Meta` key of the overflow counter of (`source`, `reason`).
pub(crate) fn overflow_key(source: &str, reason: &str) -> Vec<u8> {
    [
        OVERFLOW_KEY_PREFIX,
        source.as_bytes(),
        &[0],
        reason.as_bytes(),
    ]
    .concat()
}

/// The stored overflow counters by (source, reason).
pub(crate) fn stored_overflows(
    store: &dyn Store,
) -> Result<std::collections::BTreeMap<(String, String), Overflow>, Error> {
    let mut end = OVERFLOW_KEY_PREFIX.to_vec();
    end.push(0xff);
    let mut out = std::collections::BTreeMap::new();
    for kv in store.range(Space::Meta, OVERFLOW_KEY_PREFIX, Some(&end)) {
        let (k, v) = kv?;
        let rest = k.get(OVERFLOW_KEY_PREFIX.len()..).unwrap_or(&[]);
        let cut = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| crate::record::corrupt("quarantine overflow key"))?;
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        out.insert(
            (text(&rest[..cut]), text(&rest[cut + 1..])),
            Overflow::decode(&v)?,
        );
    }
    Ok(out)
}
