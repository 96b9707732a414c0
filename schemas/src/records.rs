//! The API's own records on the bus: a case entry, a count or an access entry, as one node publishes it
//! on the records stream and every node applies it (`api::records`). JSON on the wire.
//!
//! Invariants: a record names the node that took it and carries an id unique to that
//! node's request (`Nats-Msg-Id`, so a retried publish is stored once); a record is at
//! most `RECORD_LEN_MAX` bytes, which the stream enforces too.

use crate::api::{AuditEntry, CaseAction, Role};
use crate::count::SignedCount;
use serde::{Deserialize, Serialize};

/// The JetStream stream that holds the API's records, in one order for every node.
pub const RECORDS_STREAM: &str = "roundledger_records";
/// The stream's subjects: `records.<kind>.<id>`.
pub const RECORDS_WILDCARD: &str = "records.>";
/// Largest record in bytes, headers included: the stream's `max_message_size`. A case's
/// longest text is 8,000 bytes of UTF-8; a count is under 2 KiB.
pub const RECORD_LEN_MAX: usize = 64 * 1024;
/// The version of the record format.
pub const RECORD_VERSION: u16 = 1;
/// The header carrying a record's signature: a ledger node's key (its seal key) over
/// `record_signed_message` of the payload's exact bytes, lowercase hex.
pub const RECORD_SIGNATURE_HEADER: &str = "Roundledger-Record-Sig";
/// The domain a record's signature is made in: it never verifies as another message.
pub const RECORD_DOMAIN: &[u8] = b"roundledger/record/v1";

/// What a node signs for a record whose payload is `bytes`: the domain, then the bytes
/// as stored. Nothing is re-encoded to verify it.
pub fn record_signed_message(bytes: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(RECORD_DOMAIN.len() + bytes.len());
    m.extend_from_slice(RECORD_DOMAIN);
    m.extend_from_slice(bytes);
    m
}

/// One record as the stream carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordMsg {
    /// `RECORD_VERSION`.
    pub v: u16,
    /// The ledger node whose API took the request (`serve --node-id`); `None` on a
    /// single node.
    pub node: Option<String>,
    /// Unique per request of that node: the stream's de-duplication id.
    pub id: String,
    /// What is recorded.
    pub record: Record,
}

/// What one record adds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Record {
    /// A case entry: `case_id` is `None` for an opening (the id comes from stream order).
    Case {
        /// The case acted on; `None` opens a new one.
        case_id: Option<u64>,
        /// When the server took it, UTC ns.
        at_ns: i64,
        /// Who made it (token name).
        author: String,
        /// Their role then.
        role: Role,
        /// What it does.
        action: CaseAction,
    },
    /// A count room's signed count, entered by finance.
    Count {
        /// The count as signed.
        signed: SignedCount,
        /// The API caller who entered it (token name).
        entered_by: String,
        /// When the server took it, UTC ns.
        entered_at_ns: i64,
    },
    /// One entry of a node's access journal (its audit log), for the floor's log.
    Access {
        /// The entry as the node wrote it, its `node` set.
        entry: AuditEntry,
    },
}

impl RecordMsg {
    /// The subject it is published on: `records.case.<id or new>`, `records.count.<table>`.
    pub fn subject(&self) -> String {
        match &self.record {
            Record::Case { case_id, .. } => match case_id {
                Some(id) => format!("records.case.{id}"),
                None => "records.case.new".to_string(),
            },
            Record::Count { signed, .. } => format!("records.count.{}", signed.count.table),
            Record::Access { .. } => {
                format!(
                    "records.access.{}",
                    self.node.as_deref().unwrap_or("single")
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_and_names_its_subject() {
        let m = RecordMsg {
            v: RECORD_VERSION,
            node: Some("n1".into()),
            id: "n1:5:1".into(),
            record: Record::Case {
                case_id: Some(3),
                at_ns: 9,
                author: "sam".into(),
                role: Role::Surveillance,
                action: CaseAction::Note {
                    text: "seen".into(),
                },
            },
        };
        let json = serde_json::to_vec(&m).unwrap();
        assert_eq!(serde_json::from_slice::<RecordMsg>(&json).unwrap(), m);
        assert_eq!(m.subject(), "records.case.3");
        let mut extra: serde_json::Value = serde_json::from_slice(&json).unwrap();
        extra["surprise"] = 1.into();
        assert!(serde_json::from_value::<RecordMsg>(extra).is_err());
    }
}
