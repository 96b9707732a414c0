//! Leases: one ledger node at a time holds a singleton duty (`DUTIES`), through a
//! JetStream KV key. No home-made consensus: the bucket's compare-and-set does the work.
//!
//! The bucket `roundledger_lease_<duty>` keeps one value per key for `ttl` (its
//! `max_age`). A node takes the duty by creating the key (refused while another holds
//! it), and keeps it by updating the key at the revision it last wrote. An update at a
//! stale revision is refused: the node lost the duty and steps down. A holder that cannot
//! renew stops counting itself a holder once `ttl` has passed since its last renewal, so
//! a node paused past its TTL publishes nothing on waking.
//!
//! Before a singleton publication the holder calls `confirm`: a renewal at its revision.
//! The publication goes out only when it succeeds, carrying the new revision and the node
//! (`headers`). A receiver checks them before it accepts the publication (`accepts`): the
//! node must hold the lease still, so what a node sends after losing it is refused.
//!
//! Takeover bound: the key expires `ttl` after the holder's last renewal (plus the
//! server's expiry sweep); a node trying every `ttl / 3` then takes it.

use crate::Error;
use async_nats::jetstream::{self, kv};
use std::time::{Duration, Instant};

/// Shortest TTL a lease may have: the server expires keys on a timer, not instantly.
pub const LEASE_TTL_MIN: Duration = Duration::from_secs(1);
/// The default TTL (`serve --lease-ttl`).
pub const LEASE_TTL_DEFAULT: Duration = Duration::from_secs(15);

/// The duties held under a lease: the sealer's publication of seals, the alert
/// publisher's of alerts, and the edge pricer's of priced edges (`bus` lets ingest's
/// role use exactly these buckets).
pub const DUTIES: [&str; 3] = ["sealer", "alerts", "pricer"];

/// The header a singleton publication carries: the lease revision it was confirmed at.
pub const LEASE_REVISION_HEADER: &str = "Roundledger-Lease-Revision";
/// ...and the node that held the lease then.
pub const LEASE_NODE_HEADER: &str = "Roundledger-Lease-Node";

/// A lease shared by the task that keeps it and the ones that publish under it.
pub type Shared = std::sync::Arc<tokio::sync::Mutex<Lease>>;

/// The bucket of `duty`'s lease.
pub fn bucket_name(duty: &str) -> String {
    format!("roundledger_lease_{duty}")
}

/// One node's handle on one duty's lease.
pub struct Lease {
    store: kv::Store,
    duty: String,
    node: String,
    /// Replicas of the buckets it creates (the stream's).
    replicas: usize,
    /// This process's claims' value: the node, its pid and its open time. A restarted
    /// node does not take its earlier life's claim for its own, so it never publishes
    /// an item twice.
    incarnation: String,
    ttl: Duration,
    /// The revision this node last wrote, while it counts itself the holder.
    revision: Option<u64>,
    /// When that write was acknowledged.
    renewed_at: Instant,
}

impl Lease {
    /// The lease of `duty` for `node`, its bucket created when missing (`replicas`
    /// replicas, keys kept for `ttl`). Holds nothing yet.
    pub async fn open(
        js: &jetstream::Context,
        duty: &str,
        node: &str,
        ttl: Duration,
        replicas: usize,
    ) -> Result<Lease, Error> {
        if ttl < LEASE_TTL_MIN {
            return Err(Error::Config(format!("lease ttl {ttl:?} is under 1 s")));
        }
        for name in [duty, node] {
            bus::validate_name(name).map_err(|e| Error::Config(format!("lease: {e}")))?;
        }
        let bucket = bucket_name(duty);
        let store = match js.get_key_value(&bucket).await {
            Ok(s) => s,
            Err(_) => js
                .create_key_value(kv::Config {
                    bucket,
                    description: format!("roundledger: the node that holds {duty}"),
                    history: 1,
                    max_age: ttl,
                    num_replicas: replicas,
                    storage: jetstream::stream::StorageType::File,
                    ..Default::default()
                })
                .await
                .map_err(|e| Error::nats("create lease bucket", e))?,
        };
        Ok(Lease {
            store,
            duty: duty.to_string(),
            node: node.to_string(),
            incarnation: format!("{node}/{}/{}", std::process::id(), crate::system_clock_ns()),
            replicas,
            ttl,
            revision: None,
            renewed_at: Instant::now(),
        })
    }

    /// Whether this node counts itself the holder: it wrote the key less than `ttl` ago.
    pub fn holds(&self) -> bool {
        self.revision.is_some() && self.renewed_at.elapsed() < self.ttl
    }

    /// This node's id.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The revision this node holds the lease at, if it holds it.
    pub fn revision(&self) -> Option<u64> {
        self.revision.filter(|_| self.holds())
    }

    /// Renews the lease when held, else tries to take it. Whether this node holds it now.
    pub async fn tick(&mut self) -> bool {
        if self.revision.is_some() {
            return self.renew().await;
        }
        match self
            .store
            .create(&self.duty, self.node.clone().into())
            .await
        {
            Ok(rev) => {
                tracing::info!(duty = %self.duty, node = %self.node, revision = rev, "lease taken");
                self.revision = Some(rev);
                self.renewed_at = Instant::now();
                true
            }
            Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => self.resume().await,
            Err(e) => {
                tracing::warn!(duty = %self.duty, error = %e, "lease not taken");
                false
            }
        }
    }

    /// Takes the lease back when the key names this node: this node held it before a
    /// restart, and no other took it since. Whether it holds it now.
    async fn resume(&mut self) -> bool {
        let Ok(Some(e)) = self.store.entry(&self.duty).await else {
            return false;
        };
        if e.operation != kv::Operation::Put || e.value != self.node.as_bytes() {
            return false;
        }
        let started = Instant::now();
        match self
            .store
            .update(&self.duty, self.node.clone().into(), e.revision)
            .await
        {
            Ok(rev) => {
                tracing::info!(duty = %self.duty, node = %self.node, revision = rev, "lease taken");
                self.revision = Some(rev);
                self.renewed_at = started;
                true
            }
            Err(_) => false,
        }
    }

    /// Gives the lease up (a clean stop): the key is deleted, so another node takes it
    /// at its next tick instead of after the TTL.
    pub async fn release(&mut self) {
        let Some(rev) = self.revision.take() else {
            return;
        };
        let deleted = self
            .store
            .delete_expect_revision(&self.duty, Some(rev))
            .await;
        match deleted {
            Ok(()) => tracing::info!(duty = %self.duty, node = %self.node, "lease released"),
            Err(e) => tracing::warn!(duty = %self.duty, error = %e, "lease not released"),
        }
    }

    /// Updates the key at the held revision. A refusal, or no answer before the TTL ran
    /// out, steps this node down.
    async fn renew(&mut self) -> bool {
        let Some(rev) = self.revision else {
            return false;
        };
        if !self.holds() {
            self.step_down("not renewed within its ttl");
            return false;
        }
        let started = Instant::now();
        match self
            .store
            .update(&self.duty, self.node.clone().into(), rev)
            .await
        {
            // Counted from before the request: the server's clock ran from at least then.
            Ok(next) if self.renewed_at.elapsed() < self.ttl => {
                self.revision = Some(next);
                self.renewed_at = started;
                true
            }
            Ok(_) => {
                self.step_down("renewed only after its ttl");
                false
            }
            Err(e) => {
                if e.kind() == kv::UpdateErrorKind::WrongLastRevision {
                    self.step_down("another node holds it");
                } else {
                    tracing::warn!(duty = %self.duty, error = %e, "lease not renewed");
                }
                self.holds()
            }
        }
    }

    /// Renews, then answers the revision a singleton publication must carry; `None` means
    /// this node does not hold the lease and must publish nothing.
    pub async fn confirm(&mut self) -> Option<u64> {
        if self.revision.is_none() || !self.renew().await {
            return None;
        }
        self.revision()
    }

    fn step_down(&mut self, why: &str) {
        tracing::warn!(duty = %self.duty, node = %self.node, why, "lease lost: stepping down");
        self.revision = None;
    }

    /// How often a node should call `tick`: a third of the TTL.
    pub fn tick_every(&self) -> Duration {
        self.ttl / 3
    }

    /// The headers of a publication confirmed at `revision` (`confirm`).
    pub fn headers(&self, revision: u64) -> async_nats::HeaderMap {
        let mut h = async_nats::HeaderMap::new();
        h.insert(LEASE_REVISION_HEADER, revision.to_string().as_str());
        h.insert(LEASE_NODE_HEADER, self.node.as_str());
        h
    }
}

/// Ticks `lease` every third of its TTL until aborted: takes it when free, renews it when
/// held (`keeper` aborts the task when dropped).
pub fn keep(lease: Shared) -> Keeper {
    Keeper(tokio::spawn(async move {
        let every = lease.lock().await.tick_every();
        loop {
            lease.lock().await.tick().await;
            tokio::time::sleep(every).await;
        }
    }))
}

/// The task of `keep`, aborted when dropped.
pub struct Keeper(tokio::task::JoinHandle<()>);

impl Drop for Keeper {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The replica bucket's key holding the highest stream seq a holder of `duty` published
/// for (`published_through`).
fn published_key(duty: &str) -> String {
    format!("published.{duty}")
}

/// The highest stream seq whose publication a holder of `duty` made; `None` when none is
/// recorded or the bucket cannot be read. A new holder that lags behind the old one
/// publishes nothing at or below it: the old holder did.
pub async fn published_through(js: &jetstream::Context, duty: &str) -> Option<u64> {
    let store = js
        .get_key_value(schemas::subjects::REPLICA_BUCKET)
        .await
        .ok()?;
    let v = store.get(published_key(duty)).await.ok()??;
    std::str::from_utf8(&v).ok()?.parse().ok()
}

/// Records that the holder of `duty` published for stream seq `seq` (raised only).
pub async fn mark_published(js: &jetstream::Context, duty: &str, seq: u64) {
    if published_through(js, duty).await.is_some_and(|s| s >= seq) {
        return;
    }
    let put = match js.get_key_value(schemas::subjects::REPLICA_BUCKET).await {
        Ok(store) => store
            .put(published_key(duty), seq.to_string().into())
            .await
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    if let Err(e) = put {
        tracing::warn!(duty, seq, error = %e, "published stream seq not recorded");
    }
}

/// Claims the one publication `item` of the lease's duty for its node in the replica
/// bucket (created when missing): the first node to create its key publishes it, every
/// other node never does. `Ok(true)` when the claim is this process's (made now, or
/// before a timeout hid the answer); `Ok(false)` when another's; `Err` when the bucket does not answer (try later).
pub async fn claim(js: &jetstream::Context, lease: &Lease, item: &str) -> Result<bool, String> {
    let store = crate::replicas::bucket(js, lease.replicas).await?;
    let key = format!("claimed.{}.{item}", lease.duty);
    let node = lease.incarnation.as_bytes();
    match store.create(&key, node.to_vec().into()).await {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => {
            let holder = store.get(&key).await.map_err(|e| e.to_string())?;
            Ok(holder.as_deref() == Some(node))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Whether a received singleton publication may be accepted: its headers name the node
/// that holds `duty`'s lease now, at a revision no later than the key's. A publication
/// without them, from another node, or after a takeover is refused, with why.
pub async fn accepts(
    js: &jetstream::Context,
    duty: &str,
    headers: Option<&async_nats::HeaderMap>,
) -> Result<(), String> {
    let get = |name| {
        headers
            .and_then(|h| h.get(name))
            .map(|v| v.as_str().to_string())
    };
    let (Some(rev), Some(node)) = (get(LEASE_REVISION_HEADER), get(LEASE_NODE_HEADER)) else {
        return Err("no lease headers".into());
    };
    let rev: u64 = rev.parse().map_err(|_| format!("revision {rev:?}"))?;
    accepts_stamp(js, duty, &node, rev).await
}

/// Whether a publication `node` made at lease revision `revision` may be accepted: `node`
/// holds `duty`'s lease now, at a revision no earlier than `revision`. Else why not.
pub async fn accepts_stamp(
    js: &jetstream::Context,
    duty: &str,
    node: &str,
    revision: u64,
) -> Result<(), String> {
    let store = js
        .get_key_value(bucket_name(duty))
        .await
        .map_err(|e| format!("lease bucket: {e}"))?;
    let entry = store.entry(duty).await.map_err(|e| format!("lease: {e}"))?;
    match entry {
        Some(e) if e.operation == kv::Operation::Put => {
            let holder = String::from_utf8_lossy(&e.value);
            if holder != node {
                return Err(format!("{node} published; {holder} holds the lease"));
            }
            if revision > e.revision {
                return Err(format!(
                    "revision {revision} is past the lease's {}",
                    e.revision
                ));
            }
            Ok(())
        }
        _ => Err("no node holds the lease".into()),
    }
}
