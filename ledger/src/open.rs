//! Opening a ledger: load the state from the store, recover what the last commit missed,
//! then fence the tables that do not read.

use crate::error::Error;
use crate::owner::{Ledger, State};
use crate::quarantine::QuarantineEntry;
use crate::read::decode_head;
use crate::record::{be_u64, corrupt, split_table_key};
use crate::store::{Space, Store};
use crate::types::{decode_held, Held, Recovery};
use schemas::{ChainHead, Hash32, TableId};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

impl Ledger {
    /// Opens or creates the ledger in `path` on sled (redb when the test switch
    /// `ROUNDLEDGER_TEST_STORE` says so, `store::choice`). `Error::Locked` if another
    /// process (or another `Ledger` in this process) holds it.
    pub fn open(path: impl AsRef<Path>) -> Result<Ledger, Error> {
        Ledger::with_store(crate::store::choice::open_store(path.as_ref())?)
    }

    /// Opens a ledger on any `Store`: loads heads, held events and quarantine counters,
    /// then appends again any records the store wrote but holds no commit for (`recover`).
    pub fn with_store(store: Box<dyn Store>) -> Result<Ledger, Error> {
        let state = load_state(store.as_ref())?;
        let mut ledger = Ledger {
            store,
            state: Mutex::new(state),
            verifying_keys: Mutex::new(schemas::attest::KeyCache::default()),
            recovered: Recovery::default(),
            events_decoded: Default::default(),
        };
        ledger.recovered = ledger.recover_unreferenced()?;
        ledger.build_config_index_if_missing()?;
        ledger.fence_damaged_tables();
        Ok(ledger)
    }
}

/// The ledger's in-memory state, read from the store at open.
pub(crate) fn load_state(store: &dyn Store) -> Result<State, Error> {
    let (heads, receipts) = load_heads(store)?;
    let (pending, pending_bytes) = load_pending(store)?;
    let q = load_quarantine(store)?;
    let mut counters = q.counters;
    let meta = |k: &[u8]| -> Result<u64, Error> {
        store
            .get(Space::Meta, k)?
            .map(|v| be_u64(&v))
            .transpose()
            .map(|o| o.unwrap_or(0))
    };
    for name in crate::attest::reason::PERSISTED_COUNTERS {
        let n = meta(&crate::attest::reason::counter_key(name))?;
        if n > 0 {
            counters.insert(name.to_string(), n);
        }
    }
    let (devices, attested) = crate::attest::load(store)?;
    Ok(State {
        heads,
        receipts,
        receiptless: Default::default(),
        held: crate::types::HeldEvents {
            by_table: pending,
            bytes: pending_bytes,
        },
        counters,
        quarantine: q.state,
        next_call_id: meta(b"call_id")?,
        bytes_total: meta(b"bytes_total")?,
        arrival_head: match store.get(Space::Meta, crate::arrival::HEAD_KEY)? {
            Some(v) => crate::arrival::decode_head(&v)?.1,
            None => Hash32::ZERO,
        },
        trust: crate::attest::Trust {
            admin_keys: crate::attest::load_admin_keys(store)?,
            require_signed: crate::provenance::load_required(store)?,
            devices,
            attested,
        },
        clock_skew_max_ns: crate::settings::load_clock_skew_max_ns(store)?,
        admin_deferred: Vec::new(),
        closed: BTreeMap::new(),
        fenced: BTreeMap::new(),
    })
}

/// Every table's head, and its receipt where kept.
type HeadsAndReceipts = (BTreeMap<TableId, ChainHead>, BTreeMap<TableId, Hash32>);

/// Every table's head and, where kept, its receipt.
fn load_heads(store: &dyn Store) -> Result<HeadsAndReceipts, Error> {
    let mut heads = BTreeMap::new();
    let mut receipts = BTreeMap::new();
    for kv in store.range(Space::Head, &[], None) {
        let (k, v) = kv?;
        let (table, rest) = split_table_key(&k)?;
        if !rest.is_empty() {
            return Err(corrupt("head key"));
        }
        let (head, receipt) = decode_head(table.clone(), &v)?;
        if let Some(r) = receipt {
            receipts.insert(table.clone(), r);
        }
        heads.insert(table, head);
    }
    Ok((heads, receipts))
}

/// Held events by table and seq.
type HeldByTable = BTreeMap<TableId, BTreeMap<u64, Held>>;

/// Held events per table and seq, and their bytes in all.
fn load_pending(store: &dyn Store) -> Result<(HeldByTable, usize), Error> {
    let mut pending = HeldByTable::new();
    let mut pending_bytes = 0;
    for kv in store.range(Space::Pending, &[], None) {
        let (k, v) = kv?;
        let (table, rest) = split_table_key(&k)?;
        let held = decode_held(&v)?;
        pending_bytes += held.bytes.len();
        pending
            .entry(table)
            .or_default()
            .insert(be_u64(rest)?, held);
    }
    Ok((pending, pending_bytes))
}

/// What the quarantine's entries give the state at open.
struct QuarantineLoad {
    counters: BTreeMap<String, u64>,
    state: crate::quarantine::QuarantineState,
}

/// The quarantine's state before its entries are read: its limits, purge and overflows.
fn empty_quarantine(store: &dyn Store) -> Result<crate::quarantine::QuarantineState, Error> {
    Ok(crate::quarantine::QuarantineState {
        entries: 0,
        next_id: 0,
        head: crate::quarantine::QuarantineHead::EMPTY,
        recent: Default::default(),
        refusals: Default::default(),
        window: Default::default(),
        bytes: 0,
        by_source: Default::default(),
        fenced_bytes: 0,
        limits: crate::quarantine_limits::load_limits(store)?,
        purge_mark: crate::purge_mark::load_mark(store)?,
        purge_target: crate::purge_mark::load_target(store)?,
        overflows: crate::quarantine::stored_overflows(store)?,
        recent_overflowed: Default::default(),
    })
}

fn load_quarantine(store: &dyn Store) -> Result<QuarantineLoad, Error> {
    let mut counters = BTreeMap::new();
    let mut q = empty_quarantine(store)?;
    let repeats = crate::quarantine::stored_repeats(store)?;
    // The entries a purge removed are chained into its mark: the rest continue from it.
    q.head = crate::quarantine::QuarantineHead {
        entries: q.purge_mark.entries,
        hash: q.purge_mark.hash,
    };
    q.next_id = q.purge_mark.below_id;
    for k in store.keys(Space::Quarantine, &[], None) {
        let k = k?;
        let id = be_u64(&k)?;
        // Past every stored id, readable or not: a new entry never takes a stored key.
        q.next_id = id
            .checked_add(1)
            .ok_or_else(|| crate::record::corrupt("a quarantine entry has the last possible id"))?;
        // An entry whose copy in the value log does not read stops no open: `verify` names
        // it (the quarantine chain), and the rest of the ledger goes on.
        let v = match store.get(Space::Quarantine, &k) {
            Ok(Some(v)) => v,
            Ok(None) => continue,
            Err(e) => {
                tracing::error!(id, error = %e, "a quarantine entry does not read (run verify)");
                q.entries += 1;
                continue;
            }
        };
        let e = QuarantineEntry::decode(id, &v)?;
        let delivery = crate::quarantine::delivery_key(e.stream_seq, &e.bytes);
        q.recent.insert(delivery, id);
        let repeat = repeats
            .get(&id)
            .copied()
            .unwrap_or(crate::quarantine::Repeat {
                count: 0,
                last_stream_seq: e.stream_seq,
            });
        // A later entry of the same content (stored once the first had left the recent
        // ones) takes its place, as it did when it was stored.
        let refusal = crate::quarantine::Refusal { id, repeat };
        q.refusals.insert((e.reason.clone(), delivery.1), refusal);
        *counters.entry(e.reason.clone()).or_insert(0) += 1;
        q.entries += 1;
        let charged = crate::quarantine_limits::charge(e.bytes.len());
        if e.reason == crate::types::reason::TABLE_FENCED {
            q.fenced_bytes += charged;
        } else {
            q.bytes += charged;
            let source = crate::quarantine::source_of(e.subject_table.as_ref());
            q.by_source.add(&source, i128::from(charged));
        }
        q.head = q.head.next(id, &v);
    }
    // The stored head, not the one the entries give: appends extend what was committed, so
    // an entry edited in the store stays seen by `verify` instead of being chained over.
    // Entries written before the chain have no head: the next commit anchors them all.
    q.head = crate::quarantine::stored_head(store)?.unwrap_or(q.head);
    Ok(QuarantineLoad { counters, state: q })
}
