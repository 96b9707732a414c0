//! The edge pricer: prices configured pay tables in the background (`readside::edges`).
//!
//! One node alone (no `EdgeShare`) prices every configuration itself. With a share
//! (`serve --node-id`, wired to `ingest::edges`), only the pricer lease's holder prices;
//! it puts each priced record into the shared bucket, and every node, the holder too,
//! adopts from it the records it holds unpriced. So all nodes show the same figures and
//! one node spends the CPU. A new holder puts again what it holds priced under its own
//! lease, and prices what no accepted value covers.
//!
//! Invariants: an adopted record is checked against its key and its rule set's lines
//! (`readside::edges::adopt`) after the share checked its lease stamp; a refused value is
//! logged once per configuration and counted, and the node goes on.

use crate::Shared;
use futures::future::BoxFuture;
use readside::edges::{self, EdgeRecord};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// The shared bucket of priced edges as the pricer uses it (`ingest::edges` behind
/// `serve`), so the API does not depend on NATS.
pub trait EdgeShare: Send + Sync {
    /// Whether this node holds the pricer lease now.
    fn holds(&self) -> BoxFuture<'_, bool>;
    /// Puts a priced record's bytes under `name`, stamped with the lease confirmed just
    /// before; why not when this node lost the lease or the bucket refused.
    fn put(&self, name: String, bytes: Vec<u8>) -> BoxFuture<'_, Result<(), String>>;
    /// The bytes under `name` once their lease stamp is accepted; `None` when absent.
    fn take(&self, name: String) -> BoxFuture<'_, Result<Option<Vec<u8>>, String>>;
    /// Gives the lease up (a clean stop).
    fn release(&self) -> BoxFuture<'_, ()>;
}

/// The share `serve` hands in (`ApiConfig::edges`).
#[derive(Clone)]
pub struct EdgeLink(pub Arc<dyn EdgeShare>);

impl std::fmt::Debug for EdgeLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EdgeLink")
    }
}

/// The pricer's share, when several nodes price as one, and what it did since start.
#[derive(Default)]
pub struct Pricer {
    share: OnceLock<Arc<dyn EdgeShare>>,
    priced: AtomicU64,
    adopted: AtomicU64,
    refused: AtomicU64,
}

impl Pricer {
    /// Sets the share once (`ApiConfig::edges`); false if one was set before.
    pub fn link(&self, share: Arc<dyn EdgeShare>) -> bool {
        self.share.set(share).is_ok()
    }

    /// Configurations this node priced itself since start.
    pub fn priced(&self) -> u64 {
        self.priced.load(Ordering::Relaxed)
    }

    /// Configurations this node adopted from the share since start.
    pub fn adopted(&self) -> u64 {
        self.adopted.load(Ordering::Relaxed)
    }

    /// Shared values this node refused since start (once per configuration).
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

/// Runs `f` on the model on the blocking pool; `None` (logged) when it fails.
async fn on_model<T: Send + 'static>(
    st: &Shared,
    what: &str,
    f: impl FnOnce(&readside::model::Model) -> Result<T, String> + Send + 'static,
) -> Option<T> {
    let model = st.model.clone();
    match tokio::task::spawn_blocking(move || f(&model)).await {
        Ok(Ok(v)) => Some(v),
        Ok(Err(e)) => {
            tracing::error!("{what}: {e}");
            None
        }
        Err(e) => {
            tracing::error!("{what} task: {e}");
            None
        }
    }
}

/// Prices the next unpriced configuration here. Its key, or `None` when none waits or
/// pricing failed (logged).
async fn price_here(st: &Shared) -> Option<Vec<u8>> {
    let budget = edges::Budget::CONFIGURED;
    let key = on_model(st, "pricing configured pay tables", move |m| {
        edges::price_next(m, &budget).map_err(|e| e.to_string())
    })
    .await??;
    st.pricer.priced.fetch_add(1, Ordering::Relaxed);
    Some(key)
}

/// What one node's sharing remembers between rounds.
#[derive(Default)]
struct Sharing {
    /// Keys this node put or found accepted while it holds the lease.
    shared: BTreeSet<Vec<u8>>,
    /// Keys whose refused value was logged and counted.
    refused: BTreeSet<Vec<u8>>,
}

/// Adopts the shared value of `k`, which this node holds unpriced, when there is one
/// and it is accepted. Whether it was adopted.
async fn adopt_one(st: &Shared, share: &dyn EdgeShare, k: &[u8], seen: &mut Sharing) -> bool {
    let Some(name) = edges::shared_name(k) else {
        return false;
    };
    let bytes = match share.take(name.clone()).await {
        Ok(Some(b)) => b,
        Ok(None) => return false,
        Err(why) => {
            refuse(st, seen, k, &name, &why);
            return false;
        }
    };
    let record: EdgeRecord = match serde_json::from_slice(&bytes) {
        Ok(r) => r,
        Err(e) => {
            refuse(st, seen, k, &name, &format!("unreadable: {e}"));
            return false;
        }
    };
    let key = k.to_vec();
    let adopted = on_model(st, "adopting a priced edge", move |m| {
        edges::adopt(m, &key, &record).map_err(|e| e.to_string())
    })
    .await;
    match adopted {
        Some(true) => {
            tracing::info!(edges = %name, "adopted the priced edges of the pricer lease's holder");
            st.pricer.adopted.fetch_add(1, Ordering::Relaxed);
            true
        }
        Some(false) => false,
        None => {
            refuse(st, seen, k, &name, "its record does not match its key");
            false
        }
    }
}

/// Logs and counts a refused shared value, once per configuration.
fn refuse(st: &Shared, seen: &mut Sharing, k: &[u8], name: &str, why: &str) {
    if seen.refused.insert(k.to_vec()) {
        st.pricer.refused.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(edges = %name, "a shared priced edge refused, waiting for the lease's holder: {why}");
    }
}

/// The holder's part: puts each record it holds priced that no accepted value covers.
async fn share_held(share: &dyn EdgeShare, held: &[(Vec<u8>, EdgeRecord)], seen: &mut Sharing) {
    for (k, record) in held.iter().filter(|(_, r)| r.priced.is_some()) {
        let Some(name) = edges::shared_name(k) else {
            continue;
        };
        if seen.shared.contains(k) {
            continue;
        }
        if !matches!(share.take(name.clone()).await, Ok(Some(_))) {
            // Our own record types always serialise.
            let bytes = serde_json::to_vec(record).expect("edge records serialise");
            if let Err(e) = share.put(name.clone(), bytes).await {
                tracing::warn!(edges = %name, "a priced edge not shared: {e}");
                return;
            }
            tracing::info!(edges = %name, "shared the priced edges");
        }
        seen.shared.insert(k.clone());
    }
}

/// One round with a share: adopt what the bucket holds for this node's unpriced records;
/// the holder also shares what it holds priced and prices the next. Whether more waits.
async fn share_round(st: &Shared, share: &dyn EdgeShare, seen: &mut Sharing) -> bool {
    let Some(held) = on_model(st, "reading the edge book", |m| {
        edges::held(m).map_err(|e| e.to_string())
    })
    .await
    else {
        return false;
    };
    for (k, _) in held.iter().filter(|(_, r)| r.priced.is_none()) {
        adopt_one(st, share, k, seen).await;
    }
    if !share.holds().await {
        seen.shared.clear();
        return false;
    }
    share_held(share, &held, seen).await;
    // A record adopted above is priced now: `price_next` takes the next one.
    if price_here(st).await.is_none() {
        return false;
    }
    true
}

/// Prices configured pay tables in the background until `stop` is set: one
/// configuration at a time on the blocking pool, so indexing and requests never wait for
/// it. With a share, as the module says. A report shows a line "theoretical pending"
/// until its pay tables are priced.
pub async fn run_pricer(state: Shared, mut stop: tokio::sync::watch::Receiver<bool>) {
    let share = state.pricer.share.get().cloned();
    let mut seen = Sharing::default();
    loop {
        let more = match &share {
            None => price_here(&state).await.is_some(),
            Some(s) => share_round(&state, s.as_ref(), &mut seen).await,
        };
        if *stop.borrow() {
            break;
        }
        if !more {
            tokio::select! {
                _ = tokio::time::sleep(crate::PRICE_POLL) => {}
                _ = stop.wait_for(|s| *s) => break,
            }
        }
    }
    if let Some(s) = share {
        s.release().await;
    }
}
