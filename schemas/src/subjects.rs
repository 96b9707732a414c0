//! NATS names, defined once: the stream, the subject of each table's events, the subject
//! of each table's durable head, and the message id used for JetStream de-duplication.

use crate::ids::{Seq, TableId};

/// Every table's durable head (core NATS, not the stream).
pub const HEADS_WILDCARD: &str = "ledger.*.head";
/// The JetStream stream that holds every table's events.
pub const STREAM: &str = "TABLES";
/// The stream's subjects: one per table for events...
pub const EVENTS_WILDCARD: &str = "tables.*.events";
/// ...and one per table for device-signed checkpoints (`attest::Checkpoint`).
pub const CHECKPOINTS_WILDCARD: &str = "tables.*.checkpoints";
/// ...and one for admin acts (`admin::AdminAct`), in order with every table's events.
pub const ADMIN_SUBJECT: &str = "admin.acts";
/// The ingest service's durable pull consumer (a single ledger node).
pub const INGEST_CONSUMER: &str = "ingest";
/// The JetStream KV bucket where ledger nodes publish their heads and seals
/// (`ingest::replicas`).
pub const REPLICA_BUCKET: &str = "roundledger_replicas";
/// The JetStream object store bucket holding each sealed day's file, one object named by
/// the day (`ingest::day_store`): what a lost ledger node rebuilds from.
pub const DAY_BUCKET: &str = "roundledger_days";
/// The JetStream KV bucket where the pricer lease's holder puts each configured pay
/// table's priced edges, for every ledger node to adopt (`ingest::edges`).
pub const EDGES_BUCKET: &str = "roundledger_edges";

/// The durable consumer of a ledger node: `ingest` without a node id (one node, the
/// name every existing ledger resumes from), `ingest-<node_id>` with one.
pub fn ingest_consumer(node_id: Option<&str>) -> String {
    match node_id {
        None => INGEST_CONSUMER.to_string(),
        Some(id) => format!("{INGEST_CONSUMER}-{id}"),
    }
}

/// `tables.<table>.events`: where a table's devices publish.
pub fn events_subject(table: &TableId) -> String {
    format!("tables.{table}.events")
}

/// `tables.<table>.checkpoints`: where a table's controller publishes signed checkpoints.
pub fn checkpoints_subject(table: &TableId) -> String {
    format!("tables.{table}.checkpoints")
}

/// `ledger.<table>.head`: where ingest publishes the table's durable chain head after
/// each flush (JSON `ChainHead`), so a device can trim its outbox.
pub fn head_subject(table: &TableId) -> String {
    format!("ledger.{table}.head")
}

/// Bytes allowed for a message's NATS headers beside its body: the stream's size limit
/// counts them. Devices send at most `Nats-Msg-Id` (a republish's `:r<n>` included) and
/// the signature headers with an enrollment (`provenance`): 583 bytes at the longest ids
/// (a test builds them). The rest is room for headers NATS clients add.
pub const HEADERS_LEN_MAX: usize = 1024;

/// The stream's `max_message_size`: a legal event (`codec::EVENT_LEN_MAX`) with every
/// header a device sends. A body above `EVENT_LEN_MAX` that still fits is stored by the
/// stream and quarantined by the ledger as `oversized`; a larger message is refused by
/// the stream and stays in the device's outbox.
pub const MESSAGE_LEN_MAX: usize = crate::codec::EVENT_LEN_MAX + HEADERS_LEN_MAX;

/// `Nats-Msg-Id` of an event: `<table>:<seq>:<hash>`, where `<hash>` is the first 16 hex
/// digits of BLAKE3 over the message bytes. JetStream drops a repeat of the same bytes
/// within its duplicate window; a corrected event at the same seq, or another sender's
/// bytes, has another id and always reaches the ledger (which recognises duplicates for
/// ever regardless).
pub fn msg_id(table: &TableId, seq: Seq, bytes: &[u8]) -> String {
    let hash = blake3::hash(bytes);
    format!("{table}:{}:{}", seq.0, &hash.to_hex()[..16])
}

/// `Nats-Msg-Id` of a checkpoint: `<table>:checkpoint:<head_seq>:<hash>`, `<hash>` as in
/// `msg_id`. JetStream de-duplicates ids across the whole stream, so an id another
/// principal can predict is one it can claim first, and the checkpoint is then dropped.
/// Bound to the signed bytes, the id is known only to whoever holds those bytes.
pub fn checkpoint_msg_id(table: &TableId, head_seq: Seq, bytes: &[u8]) -> String {
    let hash = blake3::hash(bytes);
    format!("{table}:checkpoint:{}:{}", head_seq.0, &hash.to_hex()[..16])
}

/// Domain tag of a device's signature that makes a fresh message id (`resend_msg_id`).
pub const RESEND_ID_DOMAIN: &[u8] = b"roundledger/resend-msg-id/v1";

/// A fresh `Nats-Msg-Id` for sending `id`'s message again (attempt `n`): `<id>:s<tag>`,
/// `<tag>` the first 16 hex digits of BLAKE3 over the device key's signature of
/// `RESEND_ID_DOMAIN || n (u64 big-endian) || id`. Only the key's holder can compute it,
/// even knowing the bytes: a device whose id was claimed is not claimed again.
pub fn resend_msg_id(key: &crate::attest::SigningKey, id: &str, n: u64) -> String {
    let mut message = Vec::with_capacity(RESEND_ID_DOMAIN.len() + 8 + id.len());
    message.extend_from_slice(RESEND_ID_DOMAIN);
    message.extend_from_slice(&n.to_be_bytes());
    message.extend_from_slice(id.as_bytes());
    let signature = key.sign(&message);
    let tag = blake3::hash(&signature.0);
    format!("{id}:s{}", &tag.to_hex()[..16])
}

/// Every day seal (core NATS): `seals.<day>`.
pub const SEALS_WILDCARD: &str = "seals.*";

/// `seals.<day>`: where ingest's host publishes a gaming day's seal once it is durable
/// (JSON `seal::DaySeal`). `day` is `YYYY-MM-DD`, a valid subject token.
pub fn seal_subject(day: &str) -> String {
    format!("seals.{day}")
}

/// Every operator alert (core NATS): `alerts.<table>.<kind>`.
pub const ALERTS_WILDCARD: &str = "alerts.>";

/// `alerts.<table>.<kind>`: where ingest publishes an operator alert (JSON `api::Alert`).
pub fn alerts_subject(table: &TableId, kind: crate::api::AlertKind) -> String {
    format!("alerts.{table}.{}", kind.as_str())
}

/// The `<table>` token of an events subject, if the subject has the expected shape.
pub fn table_of_subject(subject: &str) -> Option<&str> {
    table_token(subject, ".events")
}

/// The `<table>` token of a checkpoints subject, if the subject has the expected shape.
pub fn table_of_checkpoint_subject(subject: &str) -> Option<&str> {
    table_token(subject, ".checkpoints")
}

fn table_token<'a>(subject: &'a str, suffix: &str) -> Option<&'a str> {
    let rest = subject.strip_prefix("tables.")?;
    let table = rest.strip_suffix(suffix)?;
    (!table.is_empty() && !table.contains('.')).then_some(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_round_trip() {
        let t = TableId::new("CSP-07").unwrap();
        assert_eq!(events_subject(&t), "tables.CSP-07.events");
        assert_eq!(table_of_subject(&events_subject(&t)), Some("CSP-07"));
        assert_eq!(table_of_subject("tables.a.b.events"), None);
        assert_eq!(table_of_subject("tables..events"), None);
        let id = msg_id(&t, Seq(42), b"bytes");
        assert!(id.starts_with("CSP-07:42:"), "{id}");
        assert_eq!(id.len(), "CSP-07:42:".len() + 16);
        assert_ne!(id, msg_id(&t, Seq(42), b"other bytes"));
        assert_eq!(head_subject(&t), "ledger.CSP-07.head");
        assert_eq!(ingest_consumer(None), "ingest");
        assert_eq!(ingest_consumer(Some("n2")), "ingest-n2");
        assert_eq!(seal_subject("2026-11-25"), "seals.2026-11-25");
        assert_eq!(
            table_of_checkpoint_subject(&checkpoints_subject(&t)),
            Some("CSP-07")
        );
        assert_eq!(table_of_subject(&checkpoints_subject(&t)), None);
        assert_eq!(table_of_checkpoint_subject(&events_subject(&t)), None);
    }

    #[test]
    fn checkpoint_ids_are_bound_to_the_bytes_and_resends_to_the_key() {
        use crate::attest::SigningKey;
        let t = TableId::new("MLP3-02").unwrap();
        let id = checkpoint_msg_id(&t, Seq(7), b"checkpoint");
        assert!(id.starts_with("MLP3-02:checkpoint:7:"), "{id}");
        assert_eq!(id.len(), "MLP3-02:checkpoint:7:".len() + 16);
        assert_ne!(id, checkpoint_msg_id(&t, Seq(7), b"checkpoint!"));
        assert_ne!(id, msg_id(&t, Seq(7), b"checkpoint"));
        let key = SigningKey::derive_for_simulation("device");
        let other = SigningKey::derive_for_simulation("another device");
        let resend = resend_msg_id(&key, &id, 1);
        assert!(resend.starts_with(&format!("{id}:s")), "{resend}");
        assert_eq!(resend.len(), id.len() + 2 + 16);
        assert_eq!(resend, resend_msg_id(&key, &id, 1), "deterministic");
        assert_ne!(resend, resend_msg_id(&key, &id, 2));
        assert_ne!(resend, resend_msg_id(&other, &id, 1));
    }

    /// The longest headers a device sends (ids at `ID_LEN_MAX`, seq `u64::MAX`, a
    /// republish suffix, a signature with its enrollment) fit `HEADERS_LEN_MAX`, counted
    /// as NATS puts them on the wire (`NATS/1.0`, `name: value` lines, a blank line).
    #[test]
    fn the_longest_device_headers_fit_the_allowance() {
        use crate::attest::SigningKey;
        use crate::ids::{DeviceId, ID_LEN_MAX};
        use crate::provenance::{EventSignature, HeaderEnrollment};
        let table = TableId::new("T".repeat(ID_LEN_MAX)).unwrap();
        let device = DeviceId::new("D".repeat(ID_LEN_MAX)).unwrap();
        let key = SigningKey::derive_for_simulation("device");
        let admin = SigningKey::derive_for_simulation("admin");
        let mut signature = EventSignature::sign(&key, &table, &device, b"event");
        signature.enrollment = Some(HeaderEnrollment::sign(
            &admin,
            &table,
            &device,
            key.public(),
        ));
        let id = format!("{}:r{}", msg_id(&table, Seq(u64::MAX), b"event"), u64::MAX);
        let mut headers = vec![("Nats-Msg-Id", id)];
        headers.extend(signature.to_headers());
        let wire: usize = "NATS/1.0\r\n".len()
            + headers
                .iter()
                .map(|(n, v)| n.len() + ": ".len() + v.len() + "\r\n".len())
                .sum::<usize>()
            + "\r\n".len();
        assert_eq!(wire, 583, "the figure the constant's comment gives");
        assert!(wire <= HEADERS_LEN_MAX);
    }
}
