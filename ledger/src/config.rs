//! The per-table config index (`Space::Config`): `table key ++ seq (BE)` -> the chain hash
//! of each `TableOpened` event, written in the same commit as the event. Recovery appends
//! lost records again through the same path, so it rebuilds the index with them. A ledger
//! written before the index has it built once at open (`build_if_missing`).
//!
//! It answers "which configuration is in force at seq N" in one backwards seek
//! (`Reader::config_at`), for round views, evidence bundles and the check of the state a
//! v2 checkpoint signs.

use crate::call::Call;
use crate::faces::Reader;
use crate::record::{self, be_u64, seq_key, split_table_key, table_key};
use crate::store::{Op, Space};
use crate::{error::Error, owner::Ledger};
use schemas::{Event, EventBody, Hash32, Seq, TableId};

/// `Space::Meta` key present once every table's config index is complete.
pub const CONFIG_INDEX_KEY: &[u8] = b"config_index/v1";

/// Events read per commit while building the index of an older ledger.
const BUILD_EVENTS_PER_COMMIT_MAX: usize = 65_536;

/// Called for every event the append path stores, with its chain hash.
pub(crate) fn on_stored(call: &mut Call, event: &Event, hash: &Hash32) {
    if !matches!(event.body, EventBody::TableOpened { .. }) {
        return;
    }
    call.ops.push(Op::Put(
        Space::Config,
        seq_key(&event.table, event.seq.0),
        hash.0.to_vec(),
    ));
    call.configs
        .entry(event.table.clone())
        .or_default()
        .insert(event.seq.0, *hash);
}

pub(crate) fn decode_hash(v: &[u8]) -> Result<Hash32, Error> {
    let bytes: [u8; 32] = v
        .try_into()
        .map_err(|_| record::corrupt("config index: a hash is not 32 bytes"))?;
    Ok(Hash32(bytes))
}

impl Ledger {
    /// `config_at` as the call sees it: this call's `TableOpened` events first.
    pub(crate) fn config_in_call(
        &self,
        call: &Call,
        table: &TableId,
        seq: u64,
    ) -> Result<Option<(Seq, Hash32)>, Error> {
        let in_call = call
            .configs
            .get(table)
            .and_then(|m| m.range(..=seq).next_back());
        match in_call {
            Some((s, h)) => Ok(Some((Seq(*s), *h))),
            None => self.reader().config_at(table, seq),
        }
    }

    /// Builds the config index of a ledger written before it, once: every table's chain is
    /// read and each `TableOpened` indexed. Puts are idempotent, so a crash part way only
    /// means the next open builds it again.
    pub(crate) fn build_config_index_if_missing(&self) -> Result<u64, Error> {
        if self.store.get(Space::Meta, CONFIG_INDEX_KEY)?.is_some() {
            return Ok(0);
        }
        let heads: Vec<_> = self.lock().heads.values().cloned().collect();
        let mut indexed = 0u64;
        for head in heads {
            let mut ops = Vec::new();
            for (n, e) in self.events(&head.table, 1..=head.seq.0).enumerate() {
                let e = e?;
                let decoded = schemas::codec::decode(&e.bytes).ok();
                if decoded.is_some_and(|(ev, _)| matches!(ev.body, EventBody::TableOpened { .. })) {
                    ops.push(Op::Put(
                        Space::Config,
                        seq_key(&head.table, e.seq.0),
                        e.hash.0.to_vec(),
                    ));
                    indexed += 1;
                }
                if (n + 1) % BUILD_EVENTS_PER_COMMIT_MAX == 0 && !ops.is_empty() {
                    self.store.commit(std::mem::take(&mut ops))?;
                }
            }
            if !ops.is_empty() {
                self.store.commit(ops)?;
            }
        }
        self.store.commit(vec![Op::Put(
            Space::Meta,
            CONFIG_INDEX_KEY.to_vec(),
            Vec::new(),
        )])?;
        self.store.flush()?;
        tracing::info!(indexed, "built the config index of an older ledger");
        Ok(indexed)
    }
}

impl Reader<'_> {
    /// The configuration in force at `seq` of `table`: the seq and chain hash of the last
    /// `TableOpened` at or before `seq`. One backwards seek, whatever the chain's length.
    pub fn config_at(&self, table: &TableId, seq: u64) -> Result<Option<(Seq, Hash32)>, Error> {
        let tk = table_key(table);
        let Some(k) = self
            .store
            .last_key_at_or_before(Space::Config, &tk, &seq_key(table, seq))?
        else {
            return Ok(None);
        };
        let (_, rest) = split_table_key(&k)?;
        let at = be_u64(rest)?;
        let v = self
            .store
            .get(Space::Config, &k)?
            .ok_or_else(|| record::corrupt("config index: a key without a value"))?;
        assert!(at <= seq, "the store seeks at or before the key");
        Ok(Some((Seq(at), decode_hash(&v)?)))
    }
}

/// `verify`'s check of a table's config index against the `TableOpened` events its records
/// hold (`configs`: seq -> hash), seqs `skip` names aside: the first disagreement, with
/// the seq to name. A store written before the index (no `CONFIG_INDEX_KEY`:
/// `Ledger::open` builds it) is not checked.
pub(crate) fn check_index(
    store: &dyn crate::store::Store,
    table: &TableId,
    configs: &std::collections::BTreeMap<u64, Hash32>,
    skip: impl Fn(u64) -> bool,
) -> Result<Option<(u64, String)>, Error> {
    if store.get(Space::Meta, CONFIG_INDEX_KEY)?.is_none() {
        return Ok(None);
    }
    let tk = table_key(table);
    let mut end = tk.clone();
    end.extend_from_slice(&[0xff; 9]);
    let mut stored = std::collections::BTreeMap::new();
    for kv in store.range(Space::Config, &tk, Some(&end)) {
        let (k, v) = kv?;
        let (Some(Ok(seq)), Ok(hash)) = (k.get(tk.len()..).map(be_u64), decode_hash(&v)) else {
            return Ok(Some((1, "a config index entry is unreadable".to_string())));
        };
        stored.insert(seq, hash);
    }
    let seqs: std::collections::BTreeSet<u64> =
        stored.keys().chain(configs.keys()).copied().collect();
    for seq in seqs.into_iter().filter(|s| !skip(*s)) {
        let (index, records) = (stored.get(&seq), configs.get(&seq));
        if index != records {
            let say = |h: Option<&Hash32>| h.map_or("none".to_string(), |h| h.to_hex());
            return Ok(Some((
                seq.max(1),
                format!(
                    "at seq {seq} the index has {}, the records' TableOpened {}",
                    say(index),
                    say(records)
                ),
            )));
        }
    }
    Ok(None)
}
