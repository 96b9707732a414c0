//! One rule for the replica bucket's watch (`replicas`, `replica_seals`,
//! `replica_settings`): a peer's key put with a value that reads updates it, deleted or
//! purged removes it, and a value that does not read is logged and changes nothing.

use async_nats::jetstream::kv;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;

/// Applies one watched entry under `key` to `peers`.
pub(crate) fn apply<K: Ord, T: DeserializeOwned>(
    peers: &mut BTreeMap<K, T>,
    key: K,
    e: &kv::Entry,
) {
    match (e.operation, serde_json::from_slice::<T>(&e.value)) {
        (kv::Operation::Put, Ok(v)) => {
            peers.insert(key, v);
        }
        (kv::Operation::Put, Err(err)) => {
            tracing::warn!(key = %e.key, error = %err, "replica bucket value unreadable; ignored");
        }
        _ => {
            peers.remove(&key);
        }
    }
}
