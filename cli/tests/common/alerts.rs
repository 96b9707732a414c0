//! What the alert tests share: a subscriber on `alerts.>` of a real nats-server, and
//! checks of each signal's alert against the signal `GET /v1/analytics` lists.

use futures::StreamExt;
use std::path::Path;
use std::time::Duration;

/// The alert kinds that carry a read-model signal.
pub const SIGNAL_KINDS: [&str; 4] = [
    "hole_card_play",
    "card_sharing",
    "dealer_errors",
    "hold_outside",
];
/// How long a drain waits for one more message once everything expected has come.
pub const QUIET: Duration = Duration::from_millis(500);

/// A real nats-server and a subscriber on `alerts.>`, subscribed before anything runs.
pub struct AlertBus {
    pub nats: natsd::NatsServer,
    pub rt: tokio::runtime::Runtime,
    pub sub: async_nats::Subscriber,
    _client: async_nats::Client,
}

impl AlertBus {
    pub fn start() -> AlertBus {
        let nats = natsd::NatsServer::start().expect("nats-server");
        let rt = tokio::runtime::Runtime::new().unwrap();
        let client = rt
            .block_on(async_nats::connect(nats.url()))
            .expect("connect");
        let sub = rt
            .block_on(client.subscribe("alerts.>"))
            .expect("subscribe");
        rt.block_on(client.flush()).expect("flush");
        AlertBus {
            nats,
            rt,
            sub,
            _client: client,
        }
    }

    /// The signal alerts until no message comes for `QUIET`: (subject, JSON).
    pub fn drain(&mut self) -> Vec<(String, serde_json::Value)> {
        self.rt.block_on(drain(&mut self.sub))
    }
}

/// The signal alerts on `sub` until no message comes for `QUIET`: (subject, JSON).
/// Other alerts are left out.
pub async fn drain(sub: &mut async_nats::Subscriber) -> Vec<(String, serde_json::Value)> {
    let mut out = Vec::new();
    while let Ok(Some(m)) = tokio::time::timeout(QUIET, sub.next()).await {
        let v: serde_json::Value = serde_json::from_slice(&m.payload).expect("alert JSON");
        let signal_kind = SIGNAL_KINDS.contains(&v["kind"].as_str().unwrap_or(""));
        assert_eq!(
            signal_kind,
            v.get("signal").is_some(),
            "a signal's alert carries it: {v}"
        );
        if signal_kind {
            out.push((m.subject.to_string(), v));
        }
    }
    out
}

/// Whether serve's log says a table's signals were recognised as published before.
pub fn said_published_before(log: &Path) -> bool {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines().any(|l| l.contains("signals published before"))
}

/// Whether serve's log says the publisher's catch-up from the read model is done.
pub fn caught_up(log: &Path) -> bool {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines().any(|l| l.contains("signal catch-up done"))
}

/// Checks `alert` against the signal the API lists for it.
pub fn matches_signal(subject: &str, alert: &serde_json::Value, signals: &[serde_json::Value]) {
    let s = &alert["signal"];
    assert_eq!(
        subject,
        format!(
            "alerts.{}.{}",
            alert["table"].as_str().unwrap(),
            s["kind"].as_str().unwrap()
        )
    );
    assert_eq!(alert["kind"], s["kind"], "{alert}");
    let listed = signals.iter().find(|l| {
        l["round"] == s["round"] && l["kind"] == s["kind"] && l["subject"] == s["subject"]
    });
    let listed = listed.unwrap_or_else(|| panic!("alert of no listed signal: {alert}"));
    assert_eq!(listed["statistic_milli"], s["statistic_milli"]);
    assert_eq!(listed["moved"], s["moved"], "the rounds that moved it");
    assert_eq!(listed["hold"], s["hold"], "a shift's figures");
    let round = s["round"].as_u64().unwrap().to_string();
    assert!(
        alert["detail"].as_str().unwrap().contains(&round),
        "{alert}"
    );
}

/// Checks that `alerts` are `signals`, each once, each table's in round order.
pub fn each_once_in_round_order(
    alerts: &[(String, serde_json::Value)],
    signals: &[serde_json::Value],
) {
    assert_eq!(alerts.len(), signals.len(), "each signal once: {alerts:?}");
    let mut last_round = std::collections::BTreeMap::new();
    for (subject, a) in alerts {
        matches_signal(subject, a, signals);
        let round = a["signal"]["round"].as_u64().unwrap();
        let before = last_round.insert(a["table"].to_string(), round);
        assert!(
            before.is_none_or(|b| b <= round),
            "out of round order: {alerts:?}"
        );
    }
}
