//! What the store needs of the archive tier: the tier pointer's layout, a day's catalog
//! entry and its signed removal. The move and retention logic live in `crate::tier`.

use crate::record::StoredEvent;
use schemas::admin::{Act, AdminAct};
use schemas::attest::{PublicKey, Signature, SigningKey};
use schemas::{Seq, TableId};
use serde::{Deserialize, Serialize};

/// First byte of a tier pointer. Value-log pointers start with `valuelog::POINTER_TAG`,
/// inline records with `record::RECORD_VERSION`: the three never meet.
pub const POINTER_TAG: u8 = 0xA4;
const _: () = assert!(POINTER_TAG != crate::valuelog::POINTER_TAG);
const _: () = assert!(POINTER_TAG != crate::record::RECORD_VERSION);
/// `POINTER_TAG ++ day (10 ASCII bytes, YYYY-MM-DD) ++ event count (u32 BE)`.
pub const POINTER_LEN: usize = 1 + 10 + 4;
/// The directory of day files inside a ledger directory.
pub const DIR: &str = "archive";

/// Where a day's records are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TierState {
    /// In the day file.
    Archived,
    /// Removed by retention: the seal alone still proves the day's heads.
    Removed,
}

/// A day's entry in `Space::Tier`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierEntry {
    /// The gaming day, `YYYY-MM-DD`.
    pub day: String,
    /// Whether the day's records are in its file or removed.
    pub state: TierState,
    /// The file's name inside `archive/`.
    pub file: String,
    /// The file's length in bytes.
    pub file_len: u64,
    /// BLAKE3 of the whole file, lowercase hex.
    pub file_blake3: String,
    /// The seal's digest, lowercase hex.
    pub seal_digest: String,
    /// Records repointed into the file, and their events.
    pub records: u64,
    /// Events in those records.
    pub events: u64,
    /// The signed removal, once removed (`retention`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removal: Option<Removal>,
    /// What the removal kept of the day (`tier::kept`), in (table, seq) order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<KeptEvent>,
}

impl TierEntry {
    /// The stored form in `Space::Tier`: JSON.
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a tier entry serializes")
    }

    /// Reads a stored entry; a corrupt-record error when it does not parse.
    pub fn decode(v: &[u8]) -> Result<TierEntry, crate::error::Error> {
        serde_json::from_slice(v).map_err(|e| crate::record::corrupt(&format!("tier entry: {e}")))
    }
}

/// The pointer of a record of `count` events inside `day`'s file.
pub fn encode_pointer(day: &str, count: u32) -> Vec<u8> {
    assert_eq!(day.len(), 10, "a day is YYYY-MM-DD");
    let mut v = Vec::with_capacity(POINTER_LEN);
    v.push(POINTER_TAG);
    v.extend_from_slice(day.as_bytes());
    v.extend_from_slice(&count.to_be_bytes());
    v
}

/// Whether a stored Batch value is a tier pointer.
pub fn is_pointer(v: &[u8]) -> bool {
    v.len() == POINTER_LEN && v[0] == POINTER_TAG
}

/// The day and event count of a tier pointer.
pub fn decode_pointer(v: &[u8]) -> Option<(String, u32)> {
    if !is_pointer(v) {
        return None;
    }
    let day = std::str::from_utf8(&v[1..11]).ok()?.to_string();
    let count = u32::from_be_bytes([v[11], v[12], v[13], v[14]]);
    Some((day, count))
}

/// The day file's name for `day`.
pub fn file_name(day: &str) -> String {
    format!("{day}.rlday")
}

/// The domain of a removal's signed bytes.
const REMOVAL_DOMAIN: &[u8] = b"roundledger/retention-removal/v1\n";

/// A signed removal, kept in the day's tier entry for ever.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Removal {
    /// The gaming day removed, `YYYY-MM-DD`.
    pub day: String,
    /// The digest of the day's seal, lowercase hex.
    pub seal_digest: String,
    /// BLAKE3 of the removed day file, lowercase hex.
    pub file_blake3: String,
    /// The retention period the admin applied, in days.
    pub retention_days: u32,
    /// When the admin signed the removal, UTC ns.
    pub removed_at_ns: i64,
    /// The admin key that signed, 64 hex.
    pub admin: String,
    /// Ed25519 over `message`, 128 hex; or, with `act`, the admin act's signature.
    pub signature: String,
    /// The signed admin act `remove_day` (`schemas::admin`) it came by, its wire bytes in
    /// hex. Absent for a removal signed locally (`archive remove`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub act: Option<String>,
}

impl Removal {
    /// The exact bytes an admin signs.
    pub fn message(&self) -> Vec<u8> {
        let mut m = REMOVAL_DOMAIN.to_vec();
        let fields = format!(
            "{}\n{}\n{}\n{}\n{}\n",
            self.day, self.seal_digest, self.file_blake3, self.retention_days, self.removed_at_ns
        );
        m.extend_from_slice(fields.as_bytes());
        m
    }

    /// The removal of the archived `entry`, signed by `admin` at `at_ns`.
    pub fn sign(entry: &TierEntry, retention_days: u32, admin: &SigningKey, at_ns: i64) -> Removal {
        let mut r = Removal {
            day: entry.day.clone(),
            seal_digest: entry.seal_digest.clone(),
            file_blake3: entry.file_blake3.clone(),
            retention_days,
            removed_at_ns: at_ns,
            admin: admin.public().to_hex(),
            signature: String::new(),
            act: None,
        };
        r.signature = admin.sign(&r.message()).to_hex();
        r
    }

    /// The removal an admin act orders for the archived `entry`, taken at `at_ns`. The
    /// seal digest and the file's BLAKE3 are this node's own; the act names the seal's
    /// content (`act_seal_content`), which `verify` holds against the seal.
    pub fn from_act(entry: &TierEntry, act: &AdminAct, at_ns: i64) -> Option<Removal> {
        let Act::RemoveDay {
            day,
            retention_days,
            ..
        } = &act.body.act
        else {
            return None;
        };
        Some(Removal {
            day: day.clone(),
            seal_digest: entry.seal_digest.clone(),
            file_blake3: entry.file_blake3.clone(),
            retention_days: *retention_days,
            removed_at_ns: at_ns,
            admin: act.admin.to_hex(),
            signature: act.signature.to_hex(),
            act: Some(hex::encode(act.to_wire())),
        })
    }

    /// The admin key, if the signature verifies under it.
    pub fn signer(&self) -> Option<PublicKey> {
        if self.act.is_some() {
            return self.act_signer();
        }
        let key = PublicKey::from_hex(&self.admin).ok()?;
        let sig = Signature::from_hex(&self.signature).ok()?;
        schemas::attest::verify(&key, &self.message(), &sig).then_some(key)
    }
}

impl Removal {
    /// The admin act it came by, if it came by one and that reads.
    fn admin_act(&self) -> Option<AdminAct> {
        let wire = hex::decode(self.act.as_ref()?).ok()?;
        AdminAct::from_wire(&wire)?.ok()
    }

    /// The seal content its admin act names, lowercase hex; `None` for a local removal.
    pub fn act_seal_content(&self) -> Option<String> {
        match self.admin_act()?.body.act {
            Act::RemoveDay { seal_content, .. } => Some(seal_content),
            _ => None,
        }
    }

    /// The admin act's key, if the act verifies and orders this day's removal.
    fn act_signer(&self) -> Option<PublicKey> {
        let act = self.admin_act()?;
        let same = matches!(&act.body.act, Act::RemoveDay { day, retention_days, .. }
            if *day == self.day && *retention_days == self.retention_days);
        let named = act.admin.to_hex() == self.admin && act.signature.to_hex() == self.signature;
        (same && named && act.signature_verifies()).then_some(act.admin)
    }
}

/// One kept event, as the ledger stored it: the line an export writes for it.
pub type KeptEvent = proofs::export::ExportEvent;

/// A stored event as an export line (and a kept event): exact bytes in hex.
pub fn export_line(table: &TableId, e: &StoredEvent) -> KeptEvent {
    KeptEvent {
        table: table.clone(),
        seq: e.seq.0,
        hash: e.hash,
        stream_seq: e.stream_seq,
        received_at_ns: e.received_at_ns,
        bytes: hex::encode(&e.bytes),
    }
}

/// A kept event stored again; `Err` when its bytes do not decode or do not hash to it.
pub fn kept_stored(k: &KeptEvent) -> Result<StoredEvent, String> {
    let bytes = hex::decode(&k.bytes).map_err(|e| format!("not hex: {e}"))?;
    let (event, _) = schemas::codec::decode(&bytes).map_err(|e| e.to_string())?;
    let ok = event.table == k.table
        && event.seq.0 == k.seq
        && schemas::event_hash(&event.prev, &bytes) == k.hash;
    if !ok {
        return Err(format!(
            "table {} seq {}: its bytes are not the kept event",
            k.table, k.seq
        ));
    }
    Ok(StoredEvent {
        seq: Seq(k.seq),
        hash: k.hash,
        stream_seq: k.stream_seq,
        received_at_ns: k.received_at_ns,
        occurred_at_ns: event.occurred_at_ns,
        round: event.round,
        bytes,
    })
}
