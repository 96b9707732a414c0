//! The edge pricer's bucket: with `serve --node-id`, only the pricer lease's holder
//! prices configured pay tables, and puts each priced record into the KV bucket
//! `roundledger_edges`; every node takes them from it (`api::pricer` gives them meaning).
//!
//! A value is stamped with the lease it was put under: a first line
//! `lease <revision> <node>`, then the record's bytes. `take` checks the stamp with
//! `lease::accepts_stamp` before it answers the bytes, so a record put by a node that
//! lost the lease is refused, and a new holder puts it again under its own lease.
//!
//! Invariants: a put goes out only after `Lease::confirm`; at most `EDGE_VALUE_LEN_MAX`
//! bytes a value; keys are `<rule set>.<digest hex>` (`readside::edges::shared_name`).

use crate::lease::{self, Lease, Shared};
use async_nats::jetstream::{self, kv};
use std::time::Duration;

/// The KV bucket of priced edges, one key per pay-table configuration.
pub const EDGES_BUCKET: &str = schemas::subjects::EDGES_BUCKET;
/// The duty whose lease decides who prices (`lease::DUTIES`).
pub const PRICER_DUTY: &str = "pricer";
/// Largest value the bucket takes: a record is a configuration and a few lines' figures.
pub const EDGE_VALUE_LEN_MAX: usize = 256 * 1024;

/// This node's handle on the bucket and on the pricer lease, kept while it lives.
pub struct EdgeBus {
    js: jetstream::Context,
    store: kv::Store,
    lease: Shared,
    /// The task keeping the lease; taken away at `release`, so it takes nothing again.
    keeper: std::sync::Mutex<Option<lease::Keeper>>,
}

impl EdgeBus {
    /// Connects as `access`, opens (or creates) the bucket and the pricer lease of `node`
    /// (`ttl`, `replicas`), and starts keeping the lease.
    pub async fn connect(
        url: &str,
        access: &bus::Access,
        node: &str,
        ttl: Duration,
        replicas: usize,
    ) -> Result<EdgeBus, crate::Error> {
        let js = jetstream::new(bus::connect(url, access).await?);
        // Tried again while a server is down or a leader is elected, as ingest's set-up.
        let store =
            crate::pipeline::retrying("setting up the edges bucket", || open_bucket(&js, replicas))
                .await?;
        let opening = || Lease::open(&js, PRICER_DUTY, node, ttl, replicas);
        let held = crate::pipeline::retrying("opening the pricer lease", opening).await?;
        let lease: Shared = std::sync::Arc::new(tokio::sync::Mutex::new(held));
        let keeper = lease::keep(lease.clone());
        Ok(EdgeBus {
            js,
            store,
            lease,
            keeper: std::sync::Mutex::new(Some(keeper)),
        })
    }

    /// Whether this node holds the pricer lease (by its last renewal).
    pub async fn holds(&self) -> bool {
        self.lease.lock().await.holds()
    }

    /// Puts `bytes` under `key`, stamped with the lease confirmed just before. Refused
    /// when this node does not hold the lease, or the bucket refuses it.
    pub async fn put(&self, key: &str, bytes: &[u8]) -> Result<(), String> {
        if bytes.len() + 64 > EDGE_VALUE_LEN_MAX {
            return Err(format!("{} bytes is past the bucket's limit", bytes.len()));
        }
        let mut held = self.lease.lock().await;
        let Some(revision) = held.confirm().await else {
            return Err("this node does not hold the pricer lease".into());
        };
        let mut value = format!("lease {revision} {}\n", held.node()).into_bytes();
        value.extend_from_slice(bytes);
        drop(held);
        self.store
            .put(key, value.into())
            .await
            .map(|_| ())
            .map_err(|e| format!("the edges bucket: {e}"))
    }

    /// The bytes under `key` once its stamp is accepted; `Ok(None)` when there are none.
    /// `Err` says why a value is refused or could not be read.
    pub async fn take(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        let value = self
            .store
            .get(key)
            .await
            .map_err(|e| format!("the edges bucket: {e}"))?;
        let Some(value) = value else {
            return Ok(None);
        };
        let (stamp, bytes) = parse_stamp(&value)?;
        lease::accepts_stamp(&self.js, PRICER_DUTY, &stamp.node, stamp.revision).await?;
        Ok(Some(bytes.to_vec()))
    }

    /// Gives the lease up (a clean stop), so another node takes it at once. The keeper
    /// stops first: it would take the lease again at its next tick.
    pub async fn release(&self) {
        let keeper = self.keeper.lock().unwrap_or_else(|p| p.into_inner()).take();
        drop(keeper);
        self.lease.lock().await.release().await;
    }
}

/// The edges bucket, created when missing (`replicas` replicas).
async fn open_bucket(js: &jetstream::Context, replicas: usize) -> Result<kv::Store, crate::Error> {
    if let Ok(s) = js.get_key_value(EDGES_BUCKET).await {
        return Ok(s);
    }
    js.create_key_value(kv::Config {
        bucket: EDGES_BUCKET.to_string(),
        description: "roundledger: priced edges of configured pay tables".into(),
        history: 1,
        max_value_size: EDGE_VALUE_LEN_MAX as i32,
        num_replicas: replicas,
        storage: jetstream::stream::StorageType::File,
        ..Default::default()
    })
    .await
    .map_err(|e| crate::Error::nats("create the edges bucket", e))
}

/// The lease a value was put under.
#[derive(Debug, PartialEq, Eq)]
struct Stamp {
    revision: u64,
    node: String,
}

/// Splits a value into its stamp and its record's bytes.
fn parse_stamp(value: &[u8]) -> Result<(Stamp, &[u8]), String> {
    let cut = value.iter().position(|&b| b == b'\n');
    let Some(cut) = cut.filter(|&c| c <= 128) else {
        return Err("a value without its lease stamp".into());
    };
    let line = std::str::from_utf8(&value[..cut]).map_err(|_| "a stamp not UTF-8")?;
    let mut words = line.split(' ');
    let (Some("lease"), Some(rev), Some(node), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err(format!("a stamp {line:?} not `lease <revision> <node>`"));
    };
    let revision = rev
        .parse()
        .map_err(|_| format!("a stamp's revision {rev:?}"))?;
    let stamp = Stamp {
        revision,
        node: node.to_string(),
    };
    Ok((stamp, &value[cut + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_reads_back_and_a_bad_one_is_refused() {
        let (stamp, bytes) = parse_stamp(b"lease 7 node-a\n{\"x\":1}").unwrap();
        assert_eq!(
            stamp,
            Stamp {
                revision: 7,
                node: "node-a".into()
            }
        );
        assert_eq!(bytes, b"{\"x\":1}");
        for bad in [
            &b"{\"x\":1}"[..],
            b"lease x node-a\n{}",
            b"lease 7\n{}",
            b"lease 7 a b\n{}",
            b"lock 7 a\n{}",
        ] {
            assert!(
                parse_stamp(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
