//! Day seals across ledger nodes. Each node seals its own ledger, so two nodes' seals of
//! one day differ in signature, signing time and the previous seal's digest. What must
//! not differ is what they seal: the day, its bounds and each table's range. Each node
//! puts a digest of that content under `seals.<node>.<day>` in the replica bucket, with
//! each table's event count, and compares its peers' with its own seal of the same day.
//!
//! A difference is `replica_diverged` for that day (alert, metric, `/ready`), naming the
//! nodes and the tables whose counts differ. A day only one node has sealed is judged
//! when the other seals it. Only the newest `SEALS_COMPARED_MAX` seals are put and kept.

use crate::alerts::Raised;
use async_nats::jetstream::kv;
use ledger::Ledger;
use schemas::api::AlertKind;
use schemas::seal::DaySeal;
use schemas::{Hash32, TableId};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Replica checks between two looks at this node's seals (a day is sealed once a day).
pub const SEAL_CHECK_TICKS: u32 = 10;

/// Seals of this node put in the bucket and compared: the newest month.
pub const SEALS_COMPARED_MAX: usize = 31;
/// Most differing tables a finding names; the rest are counted.
pub const SEAL_TABLES_NAMED_MAX: usize = 8;

/// What the bucket holds of one node's seal of one day.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct SealValue {
    /// `DaySeal::content_digest`.
    pub content: Hash32,
    /// Each sealed table's events in the day.
    pub tables: BTreeMap<TableId, u64>,
}

impl SealValue {
    /// The value of `seal`: what any node sealing the same ledger would put.
    pub(crate) fn of(seal: &DaySeal) -> SealValue {
        SealValue {
            content: seal.content_digest(),
            tables: seal
                .tables
                .iter()
                .map(|t| (t.table.clone(), t.events))
                .collect(),
        }
    }
}

/// `seals.<node>.<day>`.
pub(crate) fn seal_key(node: &str, day: &str) -> String {
    format!("seals.{node}.{day}")
}

/// The node and day of a `seals.<node>.<day>` key.
pub(crate) fn parse_seal_key(key: &str) -> Option<(String, String)> {
    let (node, day) = key.strip_prefix("seals.")?.split_once('.')?;
    let is_day = day.len() == 10 && day.bytes().all(|b| b.is_ascii_digit() || b == b'-');
    is_day.then(|| (node.to_string(), day.to_string()))
}

/// Peers' seals as last seen: (node, day) -> value.
pub(crate) type PeerSeals = BTreeMap<(String, String), SealValue>;

/// A day the nodes sealed differently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealDiverged {
    /// The gaming day.
    pub day: String,
    /// This node first, then every peer whose seal differs.
    pub nodes: Vec<String>,
    /// Tables whose event counts differ (or that one seal lacks); empty when only the
    /// day's bounds or the ranges' hashes differ.
    pub tables: Vec<TableId>,
}

impl SealDiverged {
    /// The finding in words.
    pub fn detail(&self) -> String {
        let mut named: Vec<&str> = self
            .tables
            .iter()
            .take(SEAL_TABLES_NAMED_MAX)
            .map(TableId::as_str)
            .collect();
        let more = self.tables.len().saturating_sub(SEAL_TABLES_NAMED_MAX);
        let more = format!("and {more} more");
        if self.tables.len() > SEAL_TABLES_NAMED_MAX {
            named.push(&more);
        }
        let what = match named.is_empty() {
            true => "the day's bounds or a range's hashes differ".to_string(),
            false => format!("tables {}", named.join(", ")),
        };
        format!(
            "day {} sealed differently by nodes {}: {what}",
            self.day,
            self.nodes.join(", ")
        )
    }
}

/// The seal side of the replica check: peers' seals from the watch, this node's newest.
#[derive(Debug, Default)]
pub(crate) struct SealState {
    peers: PeerSeals,
    own: BTreeMap<String, SealValue>,
    /// What this watch has put, by day.
    put: BTreeMap<String, SealValue>,
    ticks: u32,
}

impl SealState {
    /// Records one bucket entry of a peer's seal; other keys and this node's are skipped.
    pub(crate) fn follow(&mut self, node: &str, e: &kv::Entry) {
        let Some((peer, day)) = parse_seal_key(&e.key) else {
            return;
        };
        if peer != node {
            crate::replica_kv::apply(&mut self.peers, (peer, day), e);
        }
    }

    /// A new watch: put every seal again.
    pub(crate) fn resend(&mut self) {
        self.put.clear();
        self.ticks = 0;
    }

    /// Every `SEAL_CHECK_TICKS` checks (the first at once): reads this node's newest seals,
    /// puts those not yet put, compares the peers'; every divergence found, or `None` on
    /// the checks in between.
    pub(crate) async fn tick(
        &mut self,
        node: &str,
        ledger: &Arc<Ledger>,
        store: &kv::Store,
    ) -> Option<Vec<SealDiverged>> {
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks % SEAL_CHECK_TICKS != 1 {
            return None;
        }
        let ledger = ledger.clone();
        let read = tokio::task::spawn_blocking(move || {
            ledger.reader().day_seals(None, SEALS_COMPARED_MAX)
        });
        match read.await {
            Ok(Ok(seals)) => {
                self.own = seals
                    .iter()
                    .map(|s| (s.day.clone(), SealValue::of(s)))
                    .collect();
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "this node's seals unreadable; compared later")
            }
            Err(e) => tracing::error!(error = %e, "reading this node's seals failed"),
        }
        self.put_own(node, store).await;
        Some(compare(&self.own, node, &self.peers))
    }

    async fn put_own(&mut self, node: &str, store: &kv::Store) {
        for (day, v) in &self.own {
            if self.put.get(day) == Some(v) {
                continue;
            }
            let json = serde_json::to_vec(v).expect("a seal value serializes");
            if let Err(e) = store.put(seal_key(node, day), json.into()).await {
                tracing::warn!(error = %e, day, "replica seal not published; tried again later");
                return;
            }
            self.put.insert(day.clone(), v.clone());
        }
    }
}

/// The alerts of one divergence: one for each table named, or one on the node's own
/// alert subject when only the bounds differ.
pub(crate) fn raised(d: &SealDiverged) -> Vec<Raised> {
    let node_table = TableId::new(crate::health::INGEST_ALERT_TABLE).expect("a valid id");
    let tables: Vec<TableId> = match d.tables.is_empty() {
        true => vec![node_table],
        false => d
            .tables
            .iter()
            .take(SEAL_TABLES_NAMED_MAX)
            .cloned()
            .collect(),
    };
    tables
        .into_iter()
        .map(|table| Raised {
            table,
            kind: AlertKind::ReplicaDiverged,
            stream_seq: 0,
            detail: d.detail(),
        })
        .collect()
}

/// Compares each peer's seal with this node's seal of the same day.
pub(crate) fn compare(
    own: &BTreeMap<String, SealValue>,
    node: &str,
    peers: &PeerSeals,
) -> Vec<SealDiverged> {
    let mut found: BTreeMap<String, SealDiverged> = BTreeMap::new();
    for ((peer, day), theirs) in peers {
        let Some(mine) = own.get(day) else {
            continue;
        };
        if mine.content == theirs.content {
            continue;
        }
        let entry = found.entry(day.clone()).or_insert_with(|| SealDiverged {
            day: day.clone(),
            nodes: vec![node.to_string()],
            tables: Vec::new(),
        });
        entry.nodes.push(peer.clone());
        for t in differing_tables(mine, theirs) {
            if !entry.tables.contains(&t) {
                entry.tables.push(t);
            }
        }
        entry.tables.sort();
    }
    found.into_values().collect()
}

/// Tables whose counts differ between two seals, or that only one holds.
fn differing_tables(a: &SealValue, b: &SealValue) -> Vec<TableId> {
    let all: std::collections::BTreeSet<&TableId> =
        a.tables.keys().chain(b.tables.keys()).collect();
    all.into_iter()
        .filter(|t| a.tables.get(*t) != b.tables.get(*t))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(content: u8, tables: &[(&str, u64)]) -> SealValue {
        SealValue {
            content: Hash32([content; 32]),
            tables: tables
                .iter()
                .map(|(t, n)| (TableId::new(*t).unwrap(), *n))
                .collect(),
        }
    }

    #[test]
    fn keys_round_trip_and_other_keys_are_not_seals() {
        let k = seal_key("n-2", "2026-11-28");
        assert_eq!(
            parse_seal_key(&k),
            Some(("n-2".into(), "2026-11-28".into()))
        );
        assert_eq!(parse_seal_key("heads.n1.T-A"), None);
        assert_eq!(parse_seal_key("seals.n1.T-A"), None);
        assert_eq!(parse_seal_key("seals.n1"), None);
    }

    #[test]
    fn equal_content_agrees_and_a_difference_names_its_tables() {
        let own = BTreeMap::from([
            ("2026-11-27".to_string(), value(1, &[("A", 10), ("B", 5)])),
            ("2026-11-28".to_string(), value(2, &[("A", 10)])),
        ]);
        let peers = PeerSeals::from([
            (
                ("n2".into(), "2026-11-27".into()),
                value(1, &[("A", 10), ("B", 5)]),
            ),
            (
                ("n2".into(), "2026-11-28".into()),
                value(3, &[("A", 11), ("C", 1)]),
            ),
            (("n3".into(), "2026-11-28".into()), value(4, &[("A", 10)])),
            (("n3".into(), "2026-11-29".into()), value(9, &[("A", 1)])),
        ]);
        let found = compare(&own, "n1", &peers);
        assert_eq!(found.len(), 1, "{found:?}");
        let d = &found[0];
        assert_eq!(d.day, "2026-11-28");
        assert_eq!(d.nodes, ["n1", "n2", "n3"]);
        let names: Vec<&str> = d.tables.iter().map(TableId::as_str).collect();
        assert_eq!(names, ["A", "C"]);
        assert!(d.detail().contains("tables A, C"), "{}", d.detail());
    }

    #[test]
    fn bounds_that_differ_with_equal_counts_are_named_as_such() {
        let own = BTreeMap::from([("2026-11-28".to_string(), value(1, &[("A", 10)]))]);
        let peers = PeerSeals::from([(("n2".into(), "2026-11-28".into()), value(2, &[("A", 10)]))]);
        let found = compare(&own, "n1", &peers);
        assert!(found[0].tables.is_empty());
        assert!(
            found[0].detail().contains("bounds"),
            "{}",
            found[0].detail()
        );
    }

    #[test]
    fn the_content_digest_ignores_what_differs_per_node() {
        use schemas::attest::SigningKey;
        use schemas::seal::{SealContent, SealedTable};
        let content = SealContent {
            day: "2026-11-28".into(),
            time_zone: "UTC".into(),
            starts_at_ns: 0,
            ends_at_ns: 86_400_000_000_000,
            tables: vec![SealedTable {
                table: TableId::new("A").unwrap(),
                first_seq: schemas::Seq(1),
                last_seq: schemas::Seq(3),
                anchor_hash: schemas::chain::GENESIS,
                head_hash: Hash32([7; 32]),
                events: 3,
            }],
            previous: Some(Hash32([1; 32])),
        };
        let a = content.clone().sign(&SigningKey::from_secret([1; 32]), 5);
        let other = SealContent {
            previous: Some(Hash32([2; 32])),
            ..content.clone()
        };
        let b = other.sign(&SigningKey::from_secret([1; 32]), 6);
        assert_eq!(SealValue::of(&a), SealValue::of(&b));
        let later = SealContent {
            ends_at_ns: 1,
            ..content
        };
        let c = later.sign(&SigningKey::from_secret([1; 32]), 5);
        assert_ne!(SealValue::of(&a).content, SealValue::of(&c).content);
    }
}
