//! Re-syncs (`schemas::resync`): an admin-signed decision that a table held behind a
//! quarantined event continues with that event. The append path applies one in its call:
//! the entry's exact bytes are appended at the head + 1 (their original stream seq and
//! receive time kept), the held events behind follow, and the re-sync is kept in
//! `Space::Resync`. The quarantine entry stays. A re-sync that does not check out is
//! itself quarantined (`resync_refused`), never applied.
//!
//! Kept in its own space, not the chain: the chain stays the device's events, whole, so
//! every verifier of chains, exports and bundles checks it unchanged. `verify` checks each
//! kept re-sync against the chain and the quarantine (`Verifier::check_resyncs`).

use crate::append::{push_event, release_held};
use crate::call::Call;
use crate::faces::{Reader, Verifier};
use crate::read::QuarantineEntry;
use crate::record::{self, seq_key, split_table_key, R, W};
use crate::refuse::quarantine;
use crate::store::{Op, Space};
use crate::types::{reason, Appended, Incoming};
use crate::{error::Error, owner::Ledger};
use schemas::resync::{Resync, ResyncError};
use schemas::{chain::event_hash, codec, ChainHead, Event, TableId};

/// Most re-syncs one `Reader::resyncs` listing returns.
pub const RESYNC_LIST_MAX: usize = 10_000;

/// A kept re-sync and where it arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptResync {
    /// The re-sync as decoded.
    pub resync: Resync,
    /// JetStream stream sequence of its delivery.
    pub stream_seq: u64,
    /// When the House received it, UTC ns.
    pub received_at_ns: i64,
}

/// The event a re-sync admits, checked, and its new head.
struct Admitted {
    event: Event,
    head: ChainHead,
    entry: QuarantineEntry,
}

impl Ledger {
    /// Applies or refuses the re-sync `msg` (the append path's hook).
    pub(crate) fn resync(
        &self,
        state: &crate::owner::State,
        call: &mut Call,
        msg: &Incoming,
        parsed: Result<Resync, ResyncError>,
    ) -> Result<Appended, Error> {
        let r = match parsed {
            Ok(r) => r,
            Err(e) => return Ok(refuse(state, call, msg, e.to_string())),
        };
        if let Some(kept) = self.store.get(Space::Resync, &seq_key(&r.table, r.seq.0))? {
            if decode(&kept)?.resync == r {
                // Delivered again after it was applied.
                return Ok(Appended::Duplicate {
                    table: r.table,
                    seq: r.seq,
                });
            }
        }
        if call.recovering && self.chained_by_recovery(state, call, &r)? {
            // Recovery chained the event before this re-sync from the same lost commit:
            // keep the re-sync, the record of why it is there.
            let kept = KeptResync {
                stream_seq: msg.stream_seq,
                received_at_ns: msg.received_at_ns,
                resync: r,
            };
            let key = seq_key(&kept.resync.table, kept.resync.seq.0);
            call.ops.push(Op::Put(Space::Resync, key, encode(&kept)));
            return Ok(Appended::Duplicate {
                table: kept.resync.table,
                seq: kept.resync.seq,
            });
        }
        let admitted = match self.admit(state, call, msg, &r)? {
            Ok(a) => a,
            Err(why) => return Ok(refuse(state, call, msg, why)),
        };
        let table = r.table.clone();
        let stored = Appended::Stored {
            table: table.clone(),
            seq: r.seq,
            hash: admitted.head.hash,
        };
        let original = Incoming {
            bytes: admitted.entry.bytes,
            subject_table: Some(table.clone()),
            stream_seq: admitted.entry.stream_seq,
            received_at_ns: admitted.entry.received_at_ns,
            provenance: Default::default(),
        };
        push_event(state, call, &admitted.event, admitted.head, &original);
        let kept = KeptResync {
            resync: r,
            stream_seq: msg.stream_seq,
            received_at_ns: msg.received_at_ns,
        };
        call.ops.push(Op::Put(
            Space::Resync,
            seq_key(&table, kept.resync.seq.0),
            encode(&kept),
        ));
        tracing::warn!(%table, seq = kept.resync.seq.0, admin = %kept.resync.admin, entry = kept.resync.quarantine_id, "re-sync applied: a quarantined event admitted by an admin");
        release_held(state, call, &table);
        Ok(stored)
    }

    /// Whether the chain (this call's events included) already holds `r`'s event at its
    /// seq, signed by a trusted admin: recovery re-appended it from the re-sync's record.
    fn chained_by_recovery(
        &self,
        state: &crate::owner::State,
        call: &mut Call,
        r: &Resync,
    ) -> Result<bool, Error> {
        if !state.trust.admin_keys.contains(&r.admin) || !r.signature_verifies() {
            return Ok(false);
        }
        self.load_table(state, call, &r.table);
        if let Some(hash) = call.known_hash(state, &r.table, r.seq.0) {
            return Ok(hash == r.event_hash);
        }
        let stored = self
            .events(&r.table, r.seq.0..=r.seq.0)
            .next()
            .transpose()?;
        Ok(stored.is_some_and(|e| e.seq == r.seq && e.hash == r.event_hash))
    }

    /// Checks `r` against the ledger: subject, trusted admin, signature, head, entry.
    /// `Ok(Err(why))` refuses it.
    fn admit(
        &self,
        state: &crate::owner::State,
        call: &mut Call,
        msg: &Incoming,
        r: &Resync,
    ) -> Result<Result<Admitted, String>, Error> {
        if msg.subject_table.as_ref() != Some(&r.table) {
            return Ok(Err(format!(
                "re-sync of {} on another table's subject",
                r.table
            )));
        }
        if !state.trust.admin_keys.contains(&r.admin) {
            return Ok(Err(format!("admin key {} is not trusted", r.admin)));
        }
        if !r.signature_verifies() {
            return Ok(Err("the admin signature does not verify".into()));
        }
        self.load_table(state, call, &r.table);
        let head = call
            .head(state, &r.table)
            .cloned()
            .unwrap_or_else(|| ChainHead::empty(r.table.clone()));
        if (head.seq, head.hash) != (r.head_seq, r.head_hash) {
            return Ok(Err(format!(
                "stale: the head is seq {} hash {}, the re-sync names seq {} hash {}",
                head.seq.0, head.hash, r.head_seq.0, r.head_hash
            )));
        }
        Ok(self.admitted_entry(r, &head))
    }

    /// The quarantine entry holding `r`'s event: the one it names, or else the newest
    /// entry of its table among the newest `BLOCKER_SCAN_MAX` whose bytes hash to the
    /// event. Entry ids are each node's own: a node that quarantined messages no other
    /// did (`table_fenced`) numbers its later entries differently, and a re-sync read
    /// through another node names that node's id. The event hash is signed; it decides.
    pub(crate) fn resync_entry(&self, r: &Resync) -> Result<Option<QuarantineEntry>, Error> {
        if let Some(e) = self.reader().quarantine_entry(r.quarantine_id)? {
            if event_hash_of(&e.bytes) == Some(r.event_hash) {
                return Ok(Some(e));
            }
        }
        let newest = self.store.range_back(Space::Quarantine);
        for kv in newest.take(crate::hold::BLOCKER_SCAN_MAX) {
            let (k, v) = kv?;
            let e = QuarantineEntry::decode(record::be_u64(&k)?, &v)?;
            if e.subject_table.as_ref() == Some(&r.table)
                && event_hash_of(&e.bytes) == Some(r.event_hash)
            {
                return Ok(Some(e));
            }
        }
        Ok(None)
    }

    /// The quarantine entry of `r`'s event (`resync_entry`), if it follows `head`.
    fn admitted_entry(&self, r: &Resync, head: &ChainHead) -> Result<Admitted, String> {
        let entry = self
            .resync_entry(r)
            .map_err(|e| format!("quarantine entry {}: {e}", r.quarantine_id))?
            .ok_or_else(|| {
                format!(
                    "no quarantine entry {} nor any newer one holds event {}",
                    r.quarantine_id, r.event_hash
                )
            })?;
        let (event, _) = codec::decode(&entry.bytes)
            .map_err(|e| format!("entry {} is not an event: {e}", entry.id))?;
        let hash = event_hash(&event.prev, &entry.bytes);
        if hash != r.event_hash {
            return Err(format!(
                "entry {} hashes to {hash}, not {}",
                entry.id, r.event_hash
            ));
        }
        let new_head = head
            .next_hashed(&event, hash)
            .map_err(|e| format!("entry {} does not follow the head: {e}", entry.id))?;
        Ok(Admitted {
            event,
            head: new_head,
            entry,
        })
    }
}

impl Reader<'_> {
    /// The kept re-syncs of `table` (every table when `None`), in (table, seq) order, at
    /// most `RESYNC_LIST_MAX`.
    pub fn resyncs(&self, table: Option<&TableId>) -> Result<Vec<KeptResync>, Error> {
        let from = table.map(record::table_key).unwrap_or_default();
        let mut out = Vec::new();
        for kv in self.store.range(Space::Resync, &from, None) {
            let (k, v) = kv?;
            let (t, _) = split_table_key(&k)?;
            if table.is_some_and(|want| &t != want) || out.len() == RESYNC_LIST_MAX {
                break;
            }
            out.push(decode(&v)?);
        }
        Ok(out)
    }

    /// The kept re-syncs of `table` whose seq is in `seqs`, in seq order (a round's
    /// window: at most one per seq).
    pub fn resyncs_in(
        &self,
        table: &TableId,
        seqs: std::ops::RangeInclusive<u64>,
    ) -> Result<Vec<KeptResync>, Error> {
        let to = seq_key(table, seqs.end().saturating_add(1));
        let from = seq_key(table, *seqs.start());
        let range = self.store.range(Space::Resync, &from, Some(&to));
        range.map(|kv| decode(&kv?.1)).collect()
    }
}

impl Verifier<'_> {
    /// `verify`'s check of every kept re-sync: its signature by an admin the ledger
    /// trusts, the chain's event at its seq (the hash it names), and its quarantine entry
    /// (the same bytes). One line per problem.
    pub fn check_resyncs(&self) -> Result<Vec<String>, Error> {
        let admins = self.lock().trust.admin_keys.clone();
        let mut problems = Vec::new();
        for kept in self.reader().resyncs(None)? {
            let r = &kept.resync;
            let at = format!("re-sync of {} at seq {}", r.table, r.seq.0);
            if !admins.contains(&r.admin) || !r.signature_verifies() {
                problems.push(format!("{at}: not signed by a trusted admin"));
            }
            let stored = self
                .events(&r.table, r.seq.0..=r.seq.0)
                .next()
                .transpose()?;
            let Some(stored) = stored.filter(|e| e.seq == r.seq) else {
                problems.push(format!("{at}: the chain has no event there"));
                continue;
            };
            if stored.hash != r.event_hash {
                problems.push(format!(
                    "{at}: the chain's event is {}, not {}",
                    stored.hash, r.event_hash
                ));
            }
            // A purge may have removed the entry since: the chain's event above is checked.
            let purged_below = self.reader().purge_progress().0.below_id;
            if r.quarantine_id >= purged_below && self.resync_entry(r)?.is_none() {
                problems.push(format!(
                    "{at}: quarantine entry {} is not that event, nor is any newer entry",
                    r.quarantine_id
                ));
            }
        }
        Ok(problems)
    }
}

/// The chain hash of the event in `bytes`, if they decode to one.
fn event_hash_of(bytes: &[u8]) -> Option<schemas::Hash32> {
    let (event, _) = codec::decode(bytes).ok()?;
    Some(event_hash(&event.prev, bytes))
}

fn refuse(state: &crate::owner::State, call: &mut Call, msg: &Incoming, why: String) -> Appended {
    quarantine(state, call, msg, reason::RESYNC_REFUSED, why).into()
}

fn encode(k: &KeptResync) -> Vec<u8> {
    let mut w = W::default();
    w.u64(k.stream_seq)
        .i64(k.received_at_ns)
        .bytes(&k.resync.to_wire());
    w.0
}

/// The message a kept re-sync was, as recovery appends it again.
pub(crate) fn recovered_message(v: &[u8]) -> Result<Incoming, Error> {
    let kept = decode(v)?;
    Ok(Incoming {
        bytes: kept.resync.to_wire(),
        subject_table: Some(kept.resync.table),
        stream_seq: kept.stream_seq,
        received_at_ns: kept.received_at_ns,
        provenance: Default::default(),
    })
}

fn decode(v: &[u8]) -> Result<KeptResync, Error> {
    let mut r = R::new(v);
    let stream_seq = r.u64()?;
    let received_at_ns = r.i64()?;
    let wire = r.bytes()?;
    let resync = Resync::from_wire(wire)
        .ok_or_else(|| record::corrupt("a kept re-sync lacks its prefix"))?
        .map_err(|e| record::corrupt(&format!("a kept re-sync does not read: {e}")))?;
    Ok(KeptResync {
        resync,
        stream_seq,
        received_at_ns,
    })
}
