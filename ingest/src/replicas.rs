//! Replicas: several ledger nodes consume the same stream, each through its own durable
//! consumer, each checking every chain and signature itself. This module compares them.
//!
//! Each node (`serve --node-id`) puts its table heads into the JetStream KV bucket
//! `subjects::REPLICA_BUCKET`, key `heads.<node>.<table>`, value `{"seq":..,"hash":".."}`,
//! and watches every other node's keys. A peer's head (seq, hash) is judged against this
//! node's own chain at that seq: its head when the seqs are equal, its stored event when
//! this node is further on. A different hash at the same seq is `replica_diverged`: an
//! alert on `alerts.<table>.replica_diverged`, a metric, and `/ready` degraded. A peer
//! ahead of this node is not judged until this node reaches its seq.
//!
//! No node trusts another's ledger: the check only compares, it never copies or repairs.
//! Ledger reads run on `spawn_blocking`; every wait is bounded by the check interval.

use crate::alerts::Raised;
use crate::replica_seals::SealDiverged;
use crate::replica_settings::SettingsDiffer;
use async_nats::jetstream::{self, kv};
use futures::StreamExt;
use ledger::Ledger;
use schemas::api::{AlertKind, NotReady};
use schemas::metrics::{family, sample, Kind};
use schemas::{subjects, Hash32, TableId};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often a node publishes its heads and compares its peers' (`serve
/// --replica-check-ms`). Divergence is seen within about two intervals.
pub const REPLICA_CHECK_EVERY: Duration = Duration::from_secs(1);
/// Most diverged tables `/ready` names one by one; the rest are counted.
pub const READY_NAMED_MAX: usize = 8;

/// A table whose replicas disagree at one seq.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diverged {
    /// The table.
    pub table: TableId,
    /// The lowest seq at which a peer's hash differs from this node's.
    pub seq: u64,
    /// This node first, then every peer whose hash differs there.
    pub nodes: Vec<String>,
    /// The hashes, in words.
    pub detail: String,
}

/// What the replica check last found; cheap to clone (shared with `/metrics`, `/ready`).
#[derive(Debug, Clone, Default)]
pub struct Replicas(Arc<Mutex<Found>>);

#[derive(Debug, Default)]
struct Found {
    /// The node id, once the check runs.
    node: Option<String>,
    /// Peers seen in the bucket.
    peers: usize,
    /// Diverged tables, by table.
    diverged: BTreeMap<TableId, Diverged>,
    /// Days sealed differently, by day (`replica_seals`).
    seals_diverged: BTreeMap<String, SealDiverged>,
    /// Peers whose admission settings differ, by peer (`replica_settings`).
    settings_differ: BTreeMap<String, Vec<&'static str>>,
}

impl Replicas {
    fn lock(&self) -> std::sync::MutexGuard<'_, Found> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The diverged tables, by table.
    pub fn diverged(&self) -> Vec<Diverged> {
        self.lock().diverged.values().cloned().collect()
    }

    /// Replaces the findings; returns the divergences that are new (to alert on).
    fn replace(&self, node: &str, peers: usize, now: Vec<Diverged>) -> Vec<Diverged> {
        let mut found = self.lock();
        found.node = Some(node.to_string());
        found.peers = peers;
        let keyed = now.into_iter().map(|d| (d.table.clone(), d));
        let fresh = replace_keyed(&mut found.diverged, keyed.collect());
        fresh.into_iter().map(|(_, d)| d).collect()
    }

    /// Replaces the seal findings; returns the days that are new (to alert on).
    pub(crate) fn replace_seals(&self, now: Vec<SealDiverged>) -> Vec<SealDiverged> {
        let keyed = now.into_iter().map(|d| (d.day.clone(), d));
        let fresh = replace_keyed(&mut self.lock().seals_diverged, keyed.collect());
        fresh.into_iter().map(|(_, d)| d).collect()
    }

    /// Replaces the settings findings; returns the peers that are new (to alert on).
    pub(crate) fn replace_settings(&self, now: Vec<SettingsDiffer>) -> Vec<SettingsDiffer> {
        replace_keyed(&mut self.lock().settings_differ, now)
    }

    /// The days sealed differently, by day.
    pub fn seals_diverged(&self) -> Vec<SealDiverged> {
        self.lock().seals_diverged.values().cloned().collect()
    }

    /// The replica families for `/metrics`; nothing when this node has no node id.
    pub fn render(&self, out: &mut String) {
        let found = self.lock();
        let Some(node) = &found.node else {
            return;
        };
        let name = "roundledger_replica_peers";
        family(
            out,
            name,
            Kind::Gauge,
            "Other ledger nodes seen in the bucket.",
        );
        sample(out, name, &[("node", node)], found.peers);
        let name = "roundledger_replica_diverged";
        family(
            out,
            name,
            Kind::Gauge,
            "1 for each table whose replicas hold different hashes at one seq.",
        );
        for d in found.diverged.values() {
            let (seq, nodes) = (d.seq.to_string(), d.nodes.join(","));
            let labels = [
                ("table", d.table.as_str()),
                ("seq", &seq),
                ("nodes", &nodes),
            ];
            sample(out, name, &labels, 1);
        }
        let name = "roundledger_replica_diverged_tables";
        family(out, name, Kind::Gauge, "Tables whose replicas disagree.");
        sample(out, name, &[], found.diverged.len());
        let name = "roundledger_replica_seal_diverged";
        family(
            out,
            name,
            Kind::Gauge,
            "1 for each gaming day the nodes sealed differently.",
        );
        for d in found.seals_diverged.values() {
            let nodes = d.nodes.join(",");
            sample(out, name, &[("day", d.day.as_str()), ("nodes", &nodes)], 1);
        }
        let name = "roundledger_replica_settings_differ";
        family(
            out,
            name,
            Kind::Gauge,
            "1 for each peer whose admission settings differ from this node's.",
        );
        for (peer, what) in &found.settings_differ {
            let what = what.join(",");
            sample(
                out,
                name,
                &[("peer", peer.as_str()), ("settings", &what)],
                1,
            );
        }
    }

    /// `/ready`'s `replica_diverged` check: fails while any table or sealed day diverges.
    pub fn not_ready(&self) -> Option<NotReady> {
        let found = self.lock();
        let tables = found
            .diverged
            .values()
            .map(|d| format!("{} seq {} ({})", d.table, d.seq, d.nodes.join(", ")));
        let days = found
            .seals_diverged
            .values()
            .map(|d| format!("day {} sealed differently ({})", d.day, d.nodes.join(", ")));
        let settings = found
            .settings_differ
            .iter()
            .map(|(peer, what)| format!("settings differ from {peer}: {}", what.join(", ")));
        let all: Vec<String> = tables.chain(days).chain(settings).collect();
        if all.is_empty() {
            return None;
        }
        let mut named: Vec<String> = all.iter().take(READY_NAMED_MAX).cloned().collect();
        if all.len() > READY_NAMED_MAX {
            named.push(format!("and {} more", all.len() - READY_NAMED_MAX));
        }
        Some(NotReady {
            check: "replica_diverged".into(),
            detail: named.join("; "),
        })
    }
}

/// Replaces `map` with `now`; returns the findings that are new or changed (to alert on).
fn replace_keyed<K: Ord + Clone, V: PartialEq + Clone>(
    map: &mut BTreeMap<K, V>,
    now: Vec<(K, V)>,
) -> Vec<(K, V)> {
    let fresh = now
        .iter()
        .filter(|(k, v)| map.get(k) != Some(v))
        .cloned()
        .collect();
    *map = now.into_iter().collect();
    fresh
}

/// A head as the bucket holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct HeadValue {
    seq: u64,
    hash: Hash32,
}

/// `heads.<node>.<table>`.
fn head_key(node: &str, table: &TableId) -> String {
    format!("heads.{node}.{table}")
}

/// The node and table of a `heads.<node>.<table>` key.
fn parse_head_key(key: &str) -> Option<(String, TableId)> {
    let rest = key.strip_prefix("heads.")?;
    let (node, table) = rest.split_once('.')?;
    Some((node.to_string(), TableId::new(table).ok()?))
}

/// How a peer's head compares with this node's chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The same hash at that seq.
    Agrees,
    /// A different hash at that seq: this node's hash.
    Differs(Hash32),
    /// This node has not reached that seq (or cannot read it): judged later.
    NotYet,
}

/// Judges a peer's head (`peer_seq`, `peer_hash`) against this node's head and, when
/// this node is further on, its stored hash at the peer's seq (`own_at`).
pub fn judge(
    own_head: Option<(u64, Hash32)>,
    own_at: impl FnOnce(u64) -> Option<Hash32>,
    peer_seq: u64,
    peer_hash: Hash32,
) -> Verdict {
    let Some((own_seq, own_hash)) = own_head else {
        return Verdict::NotYet;
    };
    let own = if own_seq == peer_seq {
        Some(own_hash)
    } else if own_seq > peer_seq {
        own_at(peer_seq)
    } else {
        None
    };
    match own {
        None => Verdict::NotYet,
        Some(h) if h == peer_hash => Verdict::Agrees,
        Some(h) => Verdict::Differs(h),
    }
}

/// Peers' heads as last seen: (node, table) -> head.
type PeerHeads = BTreeMap<(String, TableId), HeadValue>;

/// Compares every peer head with this node's ledger: the diverged tables, lowest seq first
/// within a table, every disagreeing peer named.
fn compare(ledger: &Ledger, node: &str, peers: &PeerHeads) -> Vec<Diverged> {
    let mut found: BTreeMap<TableId, Diverged> = BTreeMap::new();
    for ((peer, table), head) in peers {
        let own_head = ledger.reader().head(table).map(|h| (h.seq.0, h.hash));
        let own_at = |seq| {
            ledger
                .reader()
                .stored_event(table, seq)
                .ok()
                .flatten()
                .map(|e| e.hash)
        };
        let Verdict::Differs(own) = judge(own_head, own_at, head.seq, head.hash) else {
            continue;
        };
        let detail = format!(
            "seq {}: node {node} has {own}, node {peer} has {}",
            head.seq, head.hash
        );
        let entry = found.entry(table.clone()).or_insert_with(|| Diverged {
            table: table.clone(),
            seq: head.seq,
            nodes: vec![node.to_string()],
            detail: String::new(),
        });
        if head.seq < entry.seq {
            entry.seq = head.seq;
        }
        entry.nodes.push(peer.clone());
        entry.detail = if entry.detail.is_empty() {
            detail
        } else {
            format!("{}; {detail}", entry.detail)
        };
    }
    found.into_values().collect()
}

/// What the check needs: this node, its ledger, the bus, where findings go.
pub(crate) struct Check {
    pub node: String,
    pub ledger: Arc<Ledger>,
    pub client: async_nats::Client,
    pub replicas: Replicas,
    pub every: Duration,
    pub stream_replicas: usize,
}

/// The bucket, created when missing (one value per key, the bucket's replicas as the
/// stream's).
pub(crate) async fn bucket(js: &jetstream::Context, replicas: usize) -> Result<kv::Store, String> {
    if let Ok(store) = js.get_key_value(subjects::REPLICA_BUCKET).await {
        return Ok(store);
    }
    js.create_key_value(kv::Config {
        bucket: subjects::REPLICA_BUCKET.to_string(),
        description: "roundledger: each ledger node's table heads".to_string(),
        history: 1,
        num_replicas: replicas,
        storage: jetstream::stream::StorageType::File,
        ..Default::default()
    })
    .await
    .map_err(|e| e.to_string())
}

/// Runs the replica check until aborted: publishes this node's changed heads, follows the
/// peers' through a watch, compares every interval and hands new divergences to `publish`.
pub(crate) async fn watch<F, Fut>(check: Check, publish: F)
where
    F: Fn(Vec<Raised>) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let js = jetstream::new(check.client.clone());
    let mut tick = tokio::time::interval(check.every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut peers = PeerHeads::new();
    let mut seals = crate::replica_seals::SealState::default();
    let mut settings = crate::replica_settings::SettingsState::default();
    let mut sent: BTreeMap<TableId, HeadValue> = BTreeMap::new();
    loop {
        tick.tick().await;
        let store = match bucket(&js, check.stream_replicas).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "replica bucket not reachable; checking later");
                continue;
            }
        };
        let mut updates = match store.watch_with_history(">").await {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!(error = %e, "replica watch failed; checking later");
                continue;
            }
        };
        sent.clear();
        seals.resend();
        settings.resend();
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                entry = updates.next() => match entry {
                    Some(Ok(e)) => {
                        follow(&check.node, &mut peers, &e);
                        seals.follow(&check.node, &e);
                        settings.follow(&check.node, &e);
                        continue;
                    }
                    Some(Err(e)) => { tracing::warn!(error = %e, "replica watch"); break; }
                    None => break,
                },
            }
            if let Err(e) = put_heads(&check, &store, &mut sent).await {
                tracing::warn!(error = %e, "replica heads not published");
            }
            let mut raised = judge_peers(&check, &peers).await;
            raised.extend(judge_seals(&check, &mut seals, &store).await);
            raised.extend(judge_settings(&check, &mut settings, &store).await);
            if !raised.is_empty() {
                publish(raised).await;
            }
        }
    }
}

/// The seal side of a check (`replica_seals`): alerts of the days newly diverged.
async fn judge_seals(
    check: &Check,
    seals: &mut crate::replica_seals::SealState,
    store: &kv::Store,
) -> Vec<Raised> {
    let Some(found) = seals.tick(&check.node, &check.ledger, store).await else {
        return Vec::new();
    };
    let fresh = check.replicas.replace_seals(found);
    fresh
        .iter()
        .flat_map(crate::replica_seals::raised)
        .collect()
}

/// The settings side of a check (`replica_settings`): alerts of peers newly set apart.
async fn judge_settings(
    check: &Check,
    settings: &mut crate::replica_settings::SettingsState,
    store: &kv::Store,
) -> Vec<Raised> {
    let Some(found) = settings.tick(&check.node, &check.ledger, store).await else {
        return Vec::new();
    };
    let fresh = check.replicas.replace_settings(found);
    let node = check.node.as_str();
    fresh
        .iter()
        .map(|d| crate::replica_settings::raised(node, d))
        .collect()
}

/// Records one bucket entry of a peer (this node's own keys are skipped).
fn follow(node: &str, peers: &mut PeerHeads, e: &kv::Entry) {
    let Some((peer, table)) = parse_head_key(&e.key) else {
        return;
    };
    if peer != node {
        crate::replica_kv::apply(peers, (peer, table), e);
    }
}

/// Puts every head that changed since the last put.
async fn put_heads(
    check: &Check,
    store: &kv::Store,
    sent: &mut BTreeMap<TableId, HeadValue>,
) -> Result<(), String> {
    for h in check.ledger.reader().heads() {
        let v = HeadValue {
            seq: h.seq.0,
            hash: h.hash,
        };
        if sent.get(&h.table) == Some(&v) {
            continue;
        }
        let json = serde_json::to_vec(&v).map_err(|e| e.to_string())?;
        store
            .put(head_key(&check.node, &h.table), json.into())
            .await
            .map_err(|e| e.to_string())?;
        sent.insert(h.table.clone(), v);
    }
    Ok(())
}

/// Compares the peers' heads on the blocking pool; the alerts of new divergences.
async fn judge_peers(check: &Check, peers: &PeerHeads) -> Vec<Raised> {
    let (l, node, p) = (check.ledger.clone(), check.node.clone(), peers.clone());
    let found = match tokio::task::spawn_blocking(move || compare(&l, &node, &p)).await {
        Ok(f) => f,
        Err(e) => {
            tracing::error!(error = %e, "replica comparison failed");
            return Vec::new();
        }
    };
    let peer_count = peers
        .keys()
        .map(|(n, _)| n)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let fresh = check.replicas.replace(&check.node, peer_count, found);
    fresh
        .into_iter()
        .map(|d| Raised {
            kind: AlertKind::ReplicaDiverged,
            stream_seq: 0,
            detail: format!("nodes {}: {}", d.nodes.join(", "), d.detail),
            table: d.table,
        })
        .collect()
}

/// One table across the nodes, as the bucket shows it (`cluster status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableAgreement {
    /// Every node at the same seq with the same hash.
    Agree,
    /// Nodes at different seqs; those at the highest seq agree. Lagging nodes are judged
    /// by the nodes themselves (their stored events), not from the bucket.
    Behind {
        /// The highest seq, and how far the furthest-behind node is below it.
        head_seq: u64,
        /// Events between the lowest and the highest head.
        lag: u64,
    },
    /// Nodes at the same seq with different hashes: (node, hash) at that seq.
    Diverged {
        /// The seq.
        seq: u64,
        /// Each node at that seq and its hash.
        hashes: Vec<(String, Hash32)>,
    },
}

/// Every node's heads from the bucket: table -> node -> (seq, hash).
pub type NodeHeads = BTreeMap<TableId, BTreeMap<String, (u64, Hash32)>>;

/// How the nodes' heads of one table compare (a divergence at any shared seq wins).
pub fn agreement(heads: &BTreeMap<String, (u64, Hash32)>) -> TableAgreement {
    let mut by_seq: BTreeMap<u64, Vec<(String, Hash32)>> = BTreeMap::new();
    for (node, (seq, hash)) in heads {
        by_seq.entry(*seq).or_default().push((node.clone(), *hash));
    }
    for (seq, hashes) in &by_seq {
        if hashes.iter().any(|(_, h)| *h != hashes[0].1) {
            return TableAgreement::Diverged {
                seq: *seq,
                hashes: hashes.clone(),
            };
        }
    }
    match (by_seq.keys().next(), by_seq.keys().next_back()) {
        (Some(lo), Some(hi)) if lo != hi => TableAgreement::Behind {
            head_seq: *hi,
            lag: hi - lo,
        },
        _ => TableAgreement::Agree,
    }
}

/// Reads every node's heads from the bucket; an empty map when it does not exist. A
/// bucket that exists but cannot be read (no permission, no answer) is an error, never
/// "no nodes".
pub async fn read_heads(js: &jetstream::Context) -> Result<NodeHeads, crate::Error> {
    use jetstream::context::GetStreamErrorKind;
    let kv_stream = format!("KV_{}", subjects::REPLICA_BUCKET);
    match js.get_stream(&kv_stream).await {
        Ok(_) => {}
        Err(e) => match e.kind() {
            GetStreamErrorKind::JetStream(j)
                if j.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND =>
            {
                return Ok(NodeHeads::new());
            }
            _ => return Err(crate::Error::nats("replica bucket", e)),
        },
    }
    let store = js
        .get_key_value(subjects::REPLICA_BUCKET)
        .await
        .map_err(|e| crate::Error::nats("replica bucket", e))?;
    let mut keys = store
        .keys()
        .await
        .map_err(|e| crate::Error::nats("replica bucket keys", e))?;
    let mut heads = NodeHeads::new();
    while let Some(key) = keys.next().await {
        let key = key.map_err(|e| crate::Error::nats("replica bucket keys", e))?;
        let Some((node, table)) = parse_head_key(&key) else {
            continue;
        };
        let value = store
            .get(&key)
            .await
            .map_err(|e| crate::Error::nats("replica bucket get", e))?;
        if let Some(v) = value.and_then(|v| serde_json::from_slice::<HeadValue>(&v).ok()) {
            heads
                .entry(table)
                .or_default()
                .insert(node, (v.seq, v.hash));
        }
    }
    Ok(heads)
}

/// The check's task, aborted when dropped: every return of `run` ends it.
pub(crate) struct Watcher(pub tokio::task::JoinHandle<()>);

impl Drop for Watcher {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(b: u8) -> Hash32 {
        Hash32([b; 32])
    }

    #[test]
    fn a_peer_is_judged_at_its_own_seq() {
        let never = |_| panic!("no stored read at equal seqs");
        assert_eq!(judge(Some((5, h(1))), never, 5, h(1)), Verdict::Agrees);
        assert_eq!(
            judge(Some((5, h(1))), never, 5, h(2)),
            Verdict::Differs(h(1))
        );
        // This node further on: its stored event at the peer's seq decides.
        assert_eq!(
            judge(Some((9, h(1))), |_| Some(h(3)), 5, h(3)),
            Verdict::Agrees
        );
        assert_eq!(
            judge(Some((9, h(1))), |_| Some(h(4)), 5, h(3)),
            Verdict::Differs(h(4))
        );
        assert_eq!(judge(Some((9, h(1))), |_| None, 5, h(3)), Verdict::NotYet);
        // The peer further on, or a table this node lacks: not judged yet.
        assert_eq!(judge(Some((4, h(1))), never, 5, h(3)), Verdict::NotYet);
        assert_eq!(judge(None, never, 5, h(3)), Verdict::NotYet);
    }

    #[test]
    fn agreement_names_a_split_at_a_shared_seq_before_any_lag() {
        let heads = |v: &[(&str, u64, u8)]| {
            v.iter()
                .map(|(n, s, b)| (n.to_string(), (*s, h(*b))))
                .collect::<BTreeMap<_, _>>()
        };
        assert_eq!(
            agreement(&heads(&[("a", 5, 1), ("b", 5, 1)])),
            TableAgreement::Agree
        );
        assert_eq!(
            agreement(&heads(&[("a", 5, 1), ("b", 3, 9)])),
            TableAgreement::Behind {
                head_seq: 5,
                lag: 2
            }
        );
        let split = agreement(&heads(&[("a", 5, 1), ("b", 5, 2), ("c", 4, 7)]));
        assert_eq!(
            split,
            TableAgreement::Diverged {
                seq: 5,
                hashes: vec![("a".into(), h(1)), ("b".into(), h(2))]
            }
        );
    }

    #[test]
    fn keys_round_trip_and_foreign_keys_are_ignored() {
        let t = TableId::new("CSP-07").expect("id");
        let k = head_key("n-2", &t);
        assert_eq!(k, "heads.n-2.CSP-07");
        assert_eq!(parse_head_key(&k), Some(("n-2".to_string(), t)));
        assert_eq!(parse_head_key("seals.n1.2026-11-28"), None);
        assert_eq!(parse_head_key("heads.n1"), None);
    }

    #[test]
    fn a_divergence_is_new_once_and_ready_names_it() {
        let r = Replicas::default();
        assert!(r.not_ready().is_none());
        let d = Diverged {
            table: TableId::new("T1").expect("id"),
            seq: 7,
            nodes: vec!["n1".into(), "n2".into()],
            detail: "seq 7".into(),
        };
        assert_eq!(r.replace("n1", 1, vec![d.clone()]), vec![d.clone()]);
        assert!(
            r.replace("n1", 1, vec![d.clone()]).is_empty(),
            "raised once"
        );
        let ready = r.not_ready().expect("degraded");
        assert_eq!(ready.check, "replica_diverged");
        assert!(
            ready.detail.contains("T1 seq 7 (n1, n2)"),
            "{}",
            ready.detail
        );
        let mut out = String::new();
        r.render(&mut out);
        assert!(
            out.contains("roundledger_replica_diverged{table=\"T1\",seq=\"7\",nodes=\"n1,n2\"} 1")
        );
        assert!(r.replace("n1", 1, Vec::new()).is_empty());
        assert!(r.not_ready().is_none(), "healed once they agree");
    }
}
