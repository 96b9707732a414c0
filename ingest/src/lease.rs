//! Leases: one ledger node at a time holds a singleton duty (the sealer), through a
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
//! The publication goes out only when it succeeds, carrying the new revision.
//!
//! Takeover bound: the key expires `ttl` after the holder's last renewal (plus the
//! server's expiry sweep); a node trying every `ttl / 3` then takes it.

use crate::Error;
use async_nats::jetstream::{self, kv};
use std::time::{Duration, Instant};

/// Shortest TTL a lease may have: the server expires keys on a timer, not instantly.
pub const LEASE_TTL_MIN: Duration = Duration::from_secs(1);

/// The bucket of `duty`'s lease.
pub fn bucket_name(duty: &str) -> String {
    format!("roundledger_lease_{duty}")
}

/// One node's handle on one duty's lease.
pub struct Lease {
    store: kv::Store,
    duty: String,
    node: String,
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
            ttl,
            revision: None,
            renewed_at: Instant::now(),
        })
    }

    /// Whether this node counts itself the holder: it wrote the key less than `ttl` ago.
    pub fn holds(&self) -> bool {
        self.revision.is_some() && self.renewed_at.elapsed() < self.ttl
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
            Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => false,
            Err(e) => {
                tracing::warn!(duty = %self.duty, error = %e, "lease not taken");
                false
            }
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
}
