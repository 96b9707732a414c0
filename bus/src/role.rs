//! Roles and the subjects each may use.

use crate::{Error, Result};
use schemas::subjects;
use schemas::TableId;
use serde::{Deserialize, Serialize};

/// Longest principal name: it is part of an inbox subject and of file names.
pub const NAME_LEN_MAX: usize = 64;

/// What a principal is for. Serialized tagged: `{"kind":"device","table":"T1"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Role {
    /// A table's devices: publish its events and checkpoints, read its durable head.
    Device {
        /// The one table it speaks for.
        table: TableId,
    },
    /// The ingest service: owns the stream and its durable consumer, publishes heads and
    /// alerts; never publishes on a table's subjects.
    Ingest,
    /// Read-only tools: heads, alerts, day seals and stream info.
    Observer,
}

/// Subjects a principal may publish on and subscribe to (nats-server `allow` lists).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permissions {
    /// Subjects it may publish on.
    pub publish_allow: Vec<String>,
    /// Subjects it may subscribe to.
    pub subscribe_allow: Vec<String>,
}

/// `_INBOX_<name>`: the principal's own reply prefix (async-nats `custom_inbox_prefix`).
pub fn inbox_prefix(name: &str) -> String {
    format!("_INBOX_{name}")
}

/// Refuses a name that could not be a subject token or file name.
pub fn validate_name(name: &str) -> Result<()> {
    let bad = |why| {
        Err(Error::BadName {
            name: name.to_string(),
            why,
        })
    };
    if name.is_empty() {
        return bad("empty");
    }
    if name.len() > NAME_LEN_MAX {
        return bad("longer than 64 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return bad("only A-Z, a-z, 0-9, '_' and '-' are allowed");
    }
    Ok(())
}

/// The least privilege `role` needs. `name` gives the inbox; validate it first.
pub fn permissions(role: &Role, name: &str) -> Permissions {
    let inbox = format!("{}.>", inbox_prefix(name));
    let stream_info = format!("$JS.API.STREAM.INFO.{}", subjects::STREAM);
    let (publish, mut subscribe): (Vec<String>, Vec<String>) = match role {
        Role::Device { table } => (
            vec![
                subjects::events_subject(table),
                subjects::checkpoints_subject(table),
                "$JS.API.INFO".to_string(),
                // `js.get_stream(STREAM)`: a device waits for the stream before publishing.
                stream_info,
            ],
            vec![subjects::head_subject(table)],
        ),
        Role::Ingest => (ingest_publish(), Vec::new()),
        Role::Observer => (
            observer_publish(stream_info),
            vec![
                subjects::HEADS_WILDCARD.to_string(),
                "alerts.>".to_string(),
                subjects::SEALS_WILDCARD.to_string(),
            ],
        ),
    };
    subscribe.push(inbox);
    Permissions {
        publish_allow: publish,
        subscribe_allow: subscribe,
    }
}

/// Observer: stream and consumer info, and reads of the replica and lease buckets
/// (`roundledger cluster status`): their streams' info and list, direct gets, and the
/// ordered consumer that lists keys. Nothing it sends changes a bucket.
fn observer_publish(stream_info: String) -> Vec<String> {
    let mut allow = vec![
        "$JS.API.INFO".to_string(),
        stream_info,
        format!("$JS.API.CONSUMER.INFO.{}.*", subjects::STREAM),
        "$JS.API.STREAM.NAMES".to_string(),
    ];
    let lease = |duty: &str| format!("roundledger_lease_{duty}");
    for bucket in [
        subjects::REPLICA_BUCKET.to_string(),
        lease("sealer"),
        lease("alerts"),
        lease("pricer"),
        subjects::EDGES_BUCKET.to_string(),
    ] {
        let kv = format!("KV_{bucket}");
        allow.extend([
            format!("$JS.API.STREAM.INFO.{kv}"),
            format!("$JS.API.STREAM.MSG.GET.{kv}"),
            format!("$JS.API.DIRECT.GET.{kv}"),
            format!("$JS.API.DIRECT.GET.{kv}.>"),
            format!("$JS.API.CONSUMER.CREATE.{kv}"),
            format!("$JS.API.CONSUMER.CREATE.{kv}.>"),
            format!("$JS.API.CONSUMER.DELETE.{kv}.*"),
            format!("$JS.FC.{kv}.>"),
        ]);
    }
    allow
}

/// Ingest: the JetStream API calls of `ingest::pipeline` and its benchmark, on the one
/// stream only, acks, heads, alerts and day seals.
fn ingest_publish() -> Vec<String> {
    let s = subjects::STREAM;
    let mut allow = vec![
        "$JS.API.INFO".to_string(),
        // ensure_stream: info, create or update.
        format!("$JS.API.STREAM.INFO.{s}"),
        format!("$JS.API.STREAM.CREATE.{s}"),
        format!("$JS.API.STREAM.UPDATE.{s}"),
        // read_back_one: a message by sequence, direct or through the leader.
        format!("$JS.API.STREAM.MSG.GET.{s}"),
        format!("$JS.API.DIRECT.GET.{s}"),
        format!("$JS.API.DIRECT.GET.{s}.>"),
        // ensure_consumer (old and new create forms), info, fetch; the benchmark deletes.
        format!("$JS.API.CONSUMER.CREATE.{s}"),
        format!("$JS.API.CONSUMER.CREATE.{s}.>"),
        format!("$JS.API.CONSUMER.DURABLE.CREATE.{s}.*"),
        format!("$JS.API.CONSUMER.INFO.{s}.*"),
        format!("$JS.API.CONSUMER.DELETE.{s}.*"),
        format!("$JS.API.CONSUMER.MSG.NEXT.{s}.*"),
        format!("$JS.ACK.{s}.>"),
        subjects::HEADS_WILDCARD.to_string(),
        "alerts.>".to_string(),
        subjects::SEALS_WILDCARD.to_string(),
        // Admin acts (`schemas::admin`): the admin's signature, not the bus, decides them.
        subjects::ADMIN_SUBJECT.to_string(),
    ];
    allow.extend(ingest_buckets());
    allow.extend(records_stream());
    // The leases (`ingest::lease::DUTIES`) and the edges bucket (`ingest::edges`):
    // each bucket's stream, create, update and read.
    let leases = ["sealer", "alerts", "pricer"].map(|d| format!("roundledger_lease_{d}"));
    for bucket in leases
        .iter()
        .map(String::as_str)
        .chain([subjects::EDGES_BUCKET])
    {
        allow.extend([
            format!("$JS.API.STREAM.INFO.KV_{bucket}"),
            format!("$JS.API.STREAM.CREATE.KV_{bucket}"),
            format!("$JS.API.STREAM.MSG.GET.KV_{bucket}"),
            format!("$JS.API.DIRECT.GET.KV_{bucket}"),
            format!("$JS.API.DIRECT.GET.KV_{bucket}.>"),
            format!("$KV.{bucket}.>"),
        ]);
    }
    allow
}

/// A ledger node's replica check (`ingest::replicas`): the KV bucket's stream, its puts,
/// and the ordered consumer of its watch (created, recreated, flow control). The day
/// bucket (`ingest::day_store`): its stream, puts, reads of info and objects (direct gets
/// and an ordered consumer), for the sealer's publisher and a rebuild.
fn ingest_buckets() -> Vec<String> {
    let kv = format!("KV_{}", subjects::REPLICA_BUCKET);
    let obj = format!("OBJ_{}", subjects::DAY_BUCKET);
    vec![
        format!("$JS.API.STREAM.INFO.{kv}"),
        format!("$JS.API.STREAM.CREATE.{kv}"),
        format!("$KV.{}.>", subjects::REPLICA_BUCKET),
        format!("$JS.API.CONSUMER.CREATE.{kv}"),
        format!("$JS.API.CONSUMER.CREATE.{kv}.>"),
        format!("$JS.API.CONSUMER.DELETE.{kv}.*"),
        format!("$JS.FC.{kv}.>"),
        format!("$JS.API.STREAM.INFO.{obj}"),
        format!("$JS.API.STREAM.CREATE.{obj}"),
        format!("$O.{}.>", subjects::DAY_BUCKET),
        format!("$JS.API.STREAM.MSG.GET.{obj}"),
        format!("$JS.API.DIRECT.GET.{obj}"),
        format!("$JS.API.DIRECT.GET.{obj}.>"),
        format!("$JS.API.CONSUMER.CREATE.{obj}"),
        format!("$JS.API.CONSUMER.CREATE.{obj}.>"),
        format!("$JS.API.CONSUMER.DELETE.{obj}.*"),
        format!("$JS.FC.{obj}.>"),
    ]
}

/// The API's records stream (`ingest::records`): its stream, publishes on `records.>`,
/// and the ordered pull consumer every node applies it through. Only ledger nodes hold
/// this role, so only their APIs may add a case entry or a count.
fn records_stream() -> Vec<String> {
    let r = schemas::records::RECORDS_STREAM;
    vec![
        format!("$JS.API.STREAM.INFO.{r}"),
        format!("$JS.API.STREAM.CREATE.{r}"),
        format!("$JS.API.STREAM.UPDATE.{r}"),
        schemas::records::RECORDS_WILDCARD.to_string(),
        format!("$JS.API.CONSUMER.CREATE.{r}"),
        format!("$JS.API.CONSUMER.CREATE.{r}.>"),
        format!("$JS.API.CONSUMER.DELETE.{r}.*"),
        format!("$JS.API.CONSUMER.MSG.NEXT.{r}.*"),
        format!("$JS.FC.{r}.>"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_subject_safe() {
        assert!(validate_name("dev-T1_a").is_ok());
        for bad in ["", "a.b", "a*", "a>", "a b", "é", &"x".repeat(65)] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_device_speaks_only_for_its_table() {
        let t = TableId::new("A").unwrap();
        let p = permissions(&Role::Device { table: t }, "dev1");
        assert!(p.publish_allow.contains(&"tables.A.events".to_string()));
        assert!(p
            .publish_allow
            .contains(&"tables.A.checkpoints".to_string()));
        assert!(p
            .publish_allow
            .iter()
            .all(|s| !s.contains('>') && !s.contains('*')));
        assert_eq!(p.subscribe_allow, ["ledger.A.head", "_INBOX_dev1.>"]);
    }

    #[test]
    fn ingest_never_speaks_for_a_table() {
        let p = permissions(&Role::Ingest, "ingest");
        assert!(p.publish_allow.iter().all(|s| !s.starts_with("tables.")));
        assert!(p.publish_allow.contains(&"alerts.>".to_string()));
        assert_eq!(p.subscribe_allow, ["_INBOX_ingest.>"]);
        assert!(p.publish_allow.contains(&"seals.*".to_string()));
        assert!(p.publish_allow.contains(&"records.>".to_string()));
        for other in [
            Role::Observer,
            Role::Device {
                table: TableId::new("A").unwrap(),
            },
        ] {
            let p = permissions(&other, "x");
            assert!(
                p.publish_allow.iter().all(|s| !s.starts_with("records")),
                "only ledger nodes publish records"
            );
        }
    }

    #[test]
    fn only_ingest_publishes_seals_and_observers_read_them() {
        let t = TableId::new("A").unwrap();
        let device = permissions(&Role::Device { table: t }, "dev1");
        let observer = permissions(&Role::Observer, "obs");
        assert!(device
            .publish_allow
            .iter()
            .all(|s| !s.starts_with("seals.")));
        assert!(observer
            .publish_allow
            .iter()
            .all(|s| !s.starts_with("seals.")));
        assert!(observer.subscribe_allow.contains(&"seals.*".to_string()));
    }

    #[test]
    fn roles_serialize_tagged() {
        let r = Role::Device {
            table: TableId::new("T1").unwrap(),
        };
        let j = serde_json::to_string(&r).unwrap();
        assert_eq!(j, r#"{"kind":"device","table":"T1"}"#);
        assert_eq!(serde_json::from_str::<Role>(&j).unwrap(), r);
        assert_eq!(
            serde_json::to_string(&Role::Observer).unwrap(),
            r#"{"kind":"observer"}"#
        );
    }
}
