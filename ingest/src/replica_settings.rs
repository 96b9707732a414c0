//! Admission settings across ledger nodes. What a node stores depends on more than the
//! stream: the admin keys it trusts, whether events must be signed, and the day rule, each
//! a node's own flag. Nodes set apart admit differently, and their ledgers diverge later.
//! The clock skew limit and the quarantine's limits are admin acts on the stream: a node
//! behind has them later, so they are not compared (a node that refused an act trusts
//! other admin keys, which is compared). Each node puts its settings under `settings.<node>` in the
//! replica bucket and compares its peers'; a difference is `replica_diverged` (alert,
//! metric, `/ready`) naming the peer and the settings, before any event diverges.

use crate::alerts::Raised;
use async_nats::jetstream::kv;
use ledger::Ledger;
use schemas::api::AlertKind;
use schemas::TableId;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What decides a node's admission, as the bucket holds it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Settings {
    /// Trusted admin keys, hex, sorted.
    pub admin_keys: Vec<String>,
    /// Whether events must carry their device's signature.
    pub signed_events: bool,
    /// The day rule's spec; `None` before one is kept.
    pub day_rule: Option<String>,
}

impl Settings {
    /// This node's settings, from its ledger.
    pub(crate) fn of(ledger: &Ledger) -> Result<Settings, ledger::Error> {
        Ok(Settings {
            admin_keys: ledger
                .reader()
                .trusted_admin_keys()
                .iter()
                .map(|k| k.to_hex())
                .collect(),
            signed_events: ledger.reader().requires_signed_events(),
            day_rule: ledger.reader().day_rule()?.map(|r| r.spec()),
        })
    }

    /// The names of the settings that differ from `other`'s.
    pub(crate) fn differences(&self, other: &Settings) -> Vec<&'static str> {
        let checks = [
            ("admin keys", self.admin_keys == other.admin_keys),
            ("signed events", self.signed_events == other.signed_events),
            ("day rule", self.day_rule == other.day_rule),
        ];
        checks
            .into_iter()
            .filter(|(_, same)| !same)
            .map(|(name, _)| name)
            .collect()
    }
}

/// `settings.<node>`.
fn settings_key(node: &str) -> String {
    format!("settings.{node}")
}

/// A peer whose settings differ from this node's: the peer and what differs.
pub type SettingsDiffer = (String, Vec<&'static str>);

/// The settings side of the replica check.
#[derive(Debug, Default)]
pub(crate) struct SettingsState {
    peers: BTreeMap<String, Settings>,
    put: Option<Settings>,
    ticks: u32,
}

impl SettingsState {
    /// Records one bucket entry of a peer's settings; other keys and this node's skipped.
    pub(crate) fn follow(&mut self, node: &str, e: &kv::Entry) {
        let Some(peer) = e.key.strip_prefix("settings.") else {
            return;
        };
        if peer != node {
            crate::replica_kv::apply(&mut self.peers, peer.to_string(), e);
        }
    }

    /// A new watch: put the settings again.
    pub(crate) fn resend(&mut self) {
        self.put = None;
        self.ticks = 0;
    }

    /// Every `SEAL_CHECK_TICKS` checks (the first at once): puts this node's settings when
    /// they changed and compares the peers'; every difference found, or `None` on the
    /// checks in between and when this node's own cannot be read.
    pub(crate) async fn tick(
        &mut self,
        node: &str,
        ledger: &Arc<Ledger>,
        store: &kv::Store,
    ) -> Option<Vec<SettingsDiffer>> {
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks % crate::replica_seals::SEAL_CHECK_TICKS != 1 {
            return None;
        }
        let ledger = ledger.clone();
        let own = match tokio::task::spawn_blocking(move || Settings::of(&ledger)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "this node's settings unreadable; compared later");
                return None;
            }
            Err(e) => {
                tracing::error!(error = %e, "reading this node's settings failed");
                return None;
            }
        };
        if self.put.as_ref() != Some(&own) {
            let json = serde_json::to_vec(&own).expect("settings serialize");
            match store.put(settings_key(node), json.into()).await {
                Ok(_) => self.put = Some(own.clone()),
                Err(e) => {
                    tracing::warn!(error = %e, "replica settings not published; tried again later")
                }
            }
        }
        let found = self
            .peers
            .iter()
            .map(|(peer, s)| (peer.clone(), own.differences(s)))
            .filter(|(_, d)| !d.is_empty())
            .collect();
        Some(found)
    }
}

/// One difference's alert, on the node's own alert subject.
pub(crate) fn raised(node: &str, (peer, what): &SettingsDiffer) -> Raised {
    Raised {
        table: TableId::new(crate::health::INGEST_ALERT_TABLE).expect("a valid id"),
        kind: AlertKind::ReplicaDiverged,
        stream_seq: 0,
        detail: format!(
            "settings of nodes {node} and {peer} differ: {}; they will admit events differently",
            what.join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            admin_keys: vec!["ab".repeat(32)],
            signed_events: true,
            day_rule: Some("06:00 UTC".into()),
        }
    }

    #[test]
    fn each_setting_that_differs_is_named() {
        let a = settings();
        assert!(a.differences(&a.clone()).is_empty());
        let b = Settings {
            signed_events: false,
            day_rule: Some("05:00 UTC".into()),
            ..settings()
        };
        assert_eq!(a.differences(&b), ["signed events", "day rule"]);
        let c = Settings {
            admin_keys: vec![],
            ..settings()
        };
        assert_eq!(a.differences(&c), ["admin keys"]);
    }

    #[test]
    fn a_ledgers_settings_are_read_from_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let l = Ledger::open(dir.path()).expect("open");
        let s = Settings::of(&l).expect("settings");
        assert!(s.admin_keys.is_empty());
        assert_eq!(s.day_rule, None);
        assert!(!s.signed_events);
    }
}
