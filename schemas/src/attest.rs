//! Device identity and signed checkpoints: who may vouch for a chain, and their vouching.
//!
//! Every table device holds an ed25519 key. A key becomes valid for a chain when an
//! `EventBody::DeviceEnrolled` event in that chain carries an admin's signature over the
//! enrollment (`enrollment_message`); a later enrollment of the same device replaces its
//! key (rotation) and `EventBody::DeviceRevoked` ends it. Each event a device sends is
//! signed for admission (`provenance`); what proves the chain to outsiders is the signed
//! *checkpoint*, the chain head as the device knows it (`checkpoint_message`), published on
//! `tables.<table>.checkpoints` at every round close and every few hundred events. A
//! checkpoint that verifies against an enrolled key and the stored chain attests every
//! event up to its seq; later events are "not yet attested" until the next one.
//!
//! The signed messages are fixed byte layouts (domain tag, length-prefixed ids, big-endian
//! integers), never a serialisation of a Rust type, so a verifier in any language can
//! rebuild them from schemas/README.md §5. Pure: no I/O, no clock, no randomness.

use crate::codec::EVENT_LEN_MAX;
use crate::event::WIRE_VERSION;
use crate::ids::{DeviceId, Hash32, Seq, TableId};
pub use crate::keys::{PublicKey, Signature};
use bincode::{Decode, Encode};
use ed25519_dalek::Signer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Domain tag of a checkpoint signature (head only).
pub const CHECKPOINT_DOMAIN: &[u8] = b"roundledger/checkpoint/v1";
/// Domain tag of a checkpoint signature over the head and the chain's state there.
pub const CHECKPOINT_V2_DOMAIN: &[u8] = b"roundledger/checkpoint/v2";
/// Domain tag of an admin's signature over an enrollment or revocation.
pub const ENROLL_DOMAIN: &[u8] = b"roundledger/enroll/v1";

/// A private signing key: device and admin keys in the simulator and tools. Never crosses
/// a process boundary and is not serialisable.
pub struct SigningKey(ed25519_dalek::SigningKey);

impl SigningKey {
    /// The key whose secret is these 32 bytes (e.g. derived from a seed or read from a
    /// key file).
    pub fn from_secret(secret: [u8; 32]) -> SigningKey {
        SigningKey(ed25519_dalek::SigningKey::from_bytes(&secret))
    }
    /// A key derived deterministically from a label (simulator and demo only: anybody who
    /// knows the label knows the key).
    pub fn derive_for_simulation(label: &str) -> SigningKey {
        let h = blake3::derive_key("roundledger/simulated-key/v1", label.as_bytes());
        SigningKey::from_secret(h)
    }
    /// The public key that verifies its signatures.
    pub fn public(&self) -> PublicKey {
        PublicKey(self.0.verifying_key().to_bytes())
    }
    /// Signs `message` (ed25519, deterministic).
    pub fn sign(&self, message: &[u8]) -> Signature {
        Signature(self.0.sign(message).to_bytes())
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SigningKey(public {})", self.public())
    }
}

/// Whether `signature` is `key`'s signature of `message`. Any malformed key or signature
/// is simply `false`.
pub fn verify(key: &PublicKey, message: &[u8], signature: &Signature) -> bool {
    let Ok(vk) = ed25519_dalek::VerifyingKey::from_bytes(&key.0) else {
        return false;
    };
    let sig = ed25519_dalek::Signature::from_bytes(&signature.0);
    // `verify_strict` refuses weak keys and non-canonical signatures: one valid encoding
    // per signature, so a signature cannot be altered into another valid one.
    vk.verify_strict(message, &sig).is_ok()
}

/// Signatures batch-verified at most at once: bounds `verify_many`'s working memory and
/// what one bad signature costs (the batch is then checked one by one).
pub const VERIFY_BATCH_MAX: usize = 64;

/// `verify` of each `(key, message, signature)`, for many at once: ed25519 batch
/// verification takes about half the CPU per signature (BENCHMARKS.md), so ingest and
/// `verify` check a call's checkpoints together. `keys` holds the keys decompressed by
/// earlier calls and takes this call's (the ledger keeps one across its appends).
///
/// Verdicts are deterministic (the batch's coefficients are derived from its contents) and
/// equal `verify`'s for every signature not crafted by the key's holder: weak (small-order)
/// keys are refused as `verify` refuses them, and a batch that fails is checked one by one,
/// so a bad signature never hides a good one nor passes because of one. What batch
/// verification cannot promise is that a key's holder, who can sign anything anyway, never
/// makes a signature with a small-order part that the batch accepts and `verify` refuses;
/// `roundledger verify` checks kept checkpoints one by one against the key and names such a
/// checkpoint.
pub fn verify_many(keys: &mut KeyCache, items: &[(&PublicKey, &[u8], &Signature)]) -> Vec<bool> {
    let mut verdicts = vec![false; items.len()];
    let mut candidates: Vec<(usize, ed25519_dalek::VerifyingKey)> = Vec::new();
    for (i, (key, _, _)) in items.iter().enumerate() {
        if let Some(vk) = keys.get(key) {
            candidates.push((i, vk));
        }
    }
    for chunk in candidates.chunks(VERIFY_BATCH_MAX) {
        let messages: Vec<&[u8]> = chunk.iter().map(|(i, _)| items[*i].1).collect();
        let signatures: Vec<ed25519_dalek::Signature> = chunk
            .iter()
            .map(|(i, _)| ed25519_dalek::Signature::from_bytes(&items[*i].2 .0))
            .collect();
        let vks: Vec<ed25519_dalek::VerifyingKey> = chunk.iter().map(|(_, vk)| *vk).collect();
        let all_good = ed25519_dalek::verify_batch(&messages, &signatures, &vks).is_ok();
        for (k, (i, vk)) in chunk.iter().enumerate() {
            verdicts[*i] = all_good || vk.verify_strict(messages[k], &signatures[k]).is_ok();
        }
    }
    verdicts
}

/// Most keys a `KeyCache` holds; when full it is emptied and fills again. A floor's devices
/// number in the hundreds, so a full cache means keys are churning, not a floor's.
pub const KEY_CACHE_LEN_MAX: usize = 4096;

/// Public keys decompressed and checked for `verify_many`, by their bytes, so that each
/// key's ~5 us of decompression (about a quarter of a batched signature check here;
/// BENCHMARKS.md) is paid once, not once per call: a floor's few device keys sign every
/// checkpoint. A key that does not decompress, or is weak (small order), is held as `None`:
/// refused again without the work. Only ever looked up, never iterated, so what it holds
/// changes no verdict and no order. Bounded by `KEY_CACHE_LEN_MAX`.
#[derive(Debug, Default)]
pub struct KeyCache {
    keys: std::collections::HashMap<[u8; 32], Option<ed25519_dalek::VerifyingKey>>,
}

impl KeyCache {
    /// `key`, decompressed, if it is a valid key that is not weak.
    fn get(&mut self, key: &PublicKey) -> Option<ed25519_dalek::VerifyingKey> {
        if let Some(vk) = self.keys.get(&key.0) {
            return *vk;
        }
        if self.keys.len() >= KEY_CACHE_LEN_MAX {
            self.keys.clear();
        }
        let vk = ed25519_dalek::VerifyingKey::from_bytes(&key.0)
            .ok()
            .filter(|vk| !vk.is_weak());
        self.keys.insert(key.0, vk);
        debug_assert!(self.keys.len() <= KEY_CACHE_LEN_MAX);
        vk
    }

    /// Keys held now.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// `len(id) u8 || id`: how every signed message names a table or a device.
pub(crate) fn push_id(out: &mut Vec<u8>, id: &str) {
    // Ids are at most 32 bytes (ids.rs), so one length byte always suffices.
    debug_assert!(id.len() <= 32);
    out.push(id.len() as u8);
    out.extend_from_slice(id.as_bytes());
}

/// What an enrollment action does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyAction {
    /// Makes `key` the device's key on the chain.
    Enroll = 0,
    /// Ends the device's key on the chain.
    Revoke = 1,
}

/// An enrollment or a revocation on a chain, its fields borrowed from the event.
#[derive(Debug, Clone, Copy)]
pub struct KeyEvent<'a> {
    /// The device concerned.
    pub device: &'a DeviceId,
    /// The device key enrolled or revoked.
    pub key: &'a PublicKey,
    /// The admin key that signed the action.
    pub admin: &'a PublicKey,
    /// The admin's signature over `enrollment_message`.
    pub signature: &'a Signature,
    /// Enroll or revoke.
    pub action: KeyAction,
}

impl<'a> KeyEvent<'a> {
    /// The key event `body` is, if it is one.
    pub fn of(body: &'a crate::event::EventBody) -> Option<KeyEvent<'a>> {
        use crate::event::EventBody;
        let (device, key, admin, signature, action) = match body {
            EventBody::DeviceEnrolled {
                device,
                key,
                admin,
                signature,
            } => (device, key, admin, signature, KeyAction::Enroll),
            EventBody::DeviceRevoked {
                device,
                key,
                admin,
                signature,
            } => (device, key, admin, signature, KeyAction::Revoke),
            _ => return None,
        };
        Some(KeyEvent {
            device,
            key,
            admin,
            signature,
            action,
        })
    }

    /// Whether the admin signature of this key event on `table`'s chain verifies. Whether
    /// that admin is one to trust is the caller's question (the ledger's trusted keys when
    /// appending, the pinned ones when checking a bundle).
    pub fn admin_signature_verifies(&self, table: &TableId) -> bool {
        verify(
            self.admin,
            &enrollment_message(table, self.device, self.key, self.action),
            self.signature,
        )
    }
}

/// The chain event by which `admin` enrolls or revokes `key` for `device` on `table`'s
/// chain: `DeviceEnrolled` or `DeviceRevoked`, signed over `enrollment_message`.
pub fn key_event_body(
    admin: &SigningKey,
    table: &TableId,
    device: DeviceId,
    key: PublicKey,
    action: KeyAction,
) -> crate::event::EventBody {
    use crate::event::EventBody;
    let signature = admin.sign(&enrollment_message(table, &device, &key, action));
    let admin = admin.public();
    match action {
        KeyAction::Enroll => EventBody::DeviceEnrolled {
            device,
            key,
            admin,
            signature,
        },
        KeyAction::Revoke => EventBody::DeviceRevoked {
            device,
            key,
            admin,
            signature,
        },
    }
}

/// The bytes an admin signs to enroll or revoke `key` for `device` on `table`'s chain:
/// `"roundledger/enroll/v1" || len(table) u8 || table || len(device) u8 || device || key
/// (32) || action (0 enroll, 1 revoke)`.
pub fn enrollment_message(
    table: &TableId,
    device: &DeviceId,
    key: &PublicKey,
    action: KeyAction,
) -> Vec<u8> {
    let mut m = Vec::with_capacity(ENROLL_DOMAIN.len() + 2 + 64 + 33);
    m.extend_from_slice(ENROLL_DOMAIN);
    push_id(&mut m, table.as_str());
    push_id(&mut m, device.as_str());
    m.extend_from_slice(&key.0);
    m.push(action as u8);
    m
}

/// The bytes a device signs for a checkpoint: `"roundledger/checkpoint/v1" || len(table)
/// u8 || table || len(device) u8 || device || head seq (u64 BE) || head hash (32) ||
/// signed_at_ns (i64 BE)`.
pub fn checkpoint_message(
    table: &TableId,
    device: &DeviceId,
    head_seq: Seq,
    head_hash: &Hash32,
    signed_at_ns: i64,
) -> Vec<u8> {
    let mut m = Vec::with_capacity(CHECKPOINT_DOMAIN.len() + 2 + 64 + 48);
    m.extend_from_slice(CHECKPOINT_DOMAIN);
    push_id(&mut m, table.as_str());
    push_id(&mut m, device.as_str());
    m.extend_from_slice(&head_seq.0.to_be_bytes());
    m.extend_from_slice(&head_hash.0);
    m.extend_from_slice(&signed_at_ns.to_be_bytes());
    m
}

/// The chain's state at a checkpoint's head, as the device signs it (checkpoint v2): the
/// `TableOpened` event in force at the head, and the `DeviceEnrolled` event that enrolled
/// the signing key and is still in force. The ledger keeps a checkpoint only if both are
/// true; evidence bundles cite them instead of carrying the chain back to them.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Encode, Decode, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointState {
    /// Seq of the last `TableOpened` at or before the head.
    pub config_seq: Seq,
    /// Its chain hash.
    pub config_hash: Hash32,
    /// Seq of the `DeviceEnrolled` event that enrolled the signing key.
    pub key_seq: Seq,
    /// Its chain hash.
    pub key_hash: Hash32,
}

/// The bytes a device signs for a v2 checkpoint: the v1 message under
/// `"roundledger/checkpoint/v2"`, then `config_seq (u64 BE) || config_hash (32) || key_seq
/// (u64 BE) || key_hash (32)`.
pub fn checkpoint_v2_message(
    table: &TableId,
    device: &DeviceId,
    head_seq: Seq,
    head_hash: &Hash32,
    signed_at_ns: i64,
    state: &CheckpointState,
) -> Vec<u8> {
    let v1 = checkpoint_message(table, device, head_seq, head_hash, signed_at_ns);
    let mut m = Vec::with_capacity(v1.len() + 80);
    m.extend_from_slice(CHECKPOINT_V2_DOMAIN);
    m.extend_from_slice(&v1[CHECKPOINT_DOMAIN.len()..]);
    m.extend_from_slice(&state.config_seq.0.to_be_bytes());
    m.extend_from_slice(&state.config_hash.0);
    m.extend_from_slice(&state.key_seq.0.to_be_bytes());
    m.extend_from_slice(&state.key_hash.0);
    debug_assert_eq!(m.len(), v1.len() + 80);
    m
}

/// A device's signed statement "the chain of `table` has `head_hash` at `head_seq`". One
/// NATS message on `tables.<table>.checkpoints`, in the same two wire forms as events
/// (bincode starting with the version byte, or JSON). Not part of the chain itself, so a
/// refused checkpoint never breaks the chain it speaks of.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// Wire version, `WIRE_VERSION`.
    pub v: u8,
    /// The table whose chain it attests.
    pub table: TableId,
    /// The device that signs it.
    pub device: DeviceId,
    /// The seq of the chain head as the device knows it.
    pub head_seq: Seq,
    /// The hash of the event at `head_seq`.
    pub head_hash: Hash32,
    /// Device clock, UTC ns. Informative; never used to order anything.
    pub signed_at_ns: i64,
    /// The device's signature over `checkpoint_message` (or `checkpoint_v2_message`).
    pub signature: Signature,
    /// Version 2: the chain's state at the head, signed with it. Absent in version 1.
    /// In bincode it follows the signature, when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<CheckpointState>,
}

/// A checkpoint's bincode fields before its optional state (version 1 is exactly these).
type CheckpointWire = (u8, TableId, DeviceId, Seq, Hash32, i64, Signature);

/// Why checkpoint bytes could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointDecodeError {
    /// Longer than the checkpoint limit.
    #[error("checkpoint of {len} bytes exceeds the limit of {max}")]
    TooLong {
        /// The message's length in bytes.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// No bytes at all.
    #[error("empty checkpoint")]
    Empty,
    /// A wire version byte other than `WIRE_VERSION`.
    #[error("checkpoint wire version {0} is not {WIRE_VERSION}")]
    Version(u8),
    /// The bincode form does not decode.
    #[error("bincode checkpoint: {0}")]
    Bincode(String),
    /// Bytes left after a whole bincode checkpoint; how many.
    #[error("{0} trailing bytes after the checkpoint")]
    Trailing(usize),
    /// The JSON form does not parse.
    #[error("JSON checkpoint: {0}")]
    Json(String),
}

impl Checkpoint {
    /// Signs the head `(head_seq, head_hash)` of `table` as `device`.
    pub fn sign(
        key: &SigningKey,
        table: TableId,
        device: DeviceId,
        head_seq: Seq,
        head_hash: Hash32,
        signed_at_ns: i64,
    ) -> Checkpoint {
        let signature = key.sign(&checkpoint_message(
            &table,
            &device,
            head_seq,
            &head_hash,
            signed_at_ns,
        ));
        Checkpoint {
            v: WIRE_VERSION,
            table,
            device,
            head_seq,
            head_hash,
            signed_at_ns,
            signature,
            state: None,
        }
    }

    /// Signs the head of `table` and the chain's `state` there as `device` (version 2).
    pub fn sign_v2(
        key: &SigningKey,
        head: (TableId, DeviceId, Seq, Hash32),
        signed_at_ns: i64,
        state: CheckpointState,
    ) -> Checkpoint {
        let (table, device, head_seq, head_hash) = head;
        let mut c = Checkpoint {
            v: WIRE_VERSION,
            table,
            device,
            head_seq,
            head_hash,
            signed_at_ns,
            signature: Signature([0; 64]),
            state: Some(state),
        };
        c.signature = key.sign(&c.signed_message());
        c
    }

    /// Whether the signature is `key`'s over this checkpoint's message.
    pub fn verifies_with(&self, key: &PublicKey) -> bool {
        verify(key, &self.signed_message(), &self.signature)
    }

    /// The bytes the device signed (`checkpoint_message`, or `checkpoint_v2_message` with
    /// a state), for `verify_many`.
    pub fn signed_message(&self) -> Vec<u8> {
        let (t, d, seq, hash, at) = (
            &self.table,
            &self.device,
            self.head_seq,
            &self.head_hash,
            self.signed_at_ns,
        );
        match &self.state {
            None => checkpoint_message(t, d, seq, hash, at),
            Some(state) => checkpoint_v2_message(t, d, seq, hash, at, state),
        }
    }

    /// The bincode wire form: the version 1 fields, then the state when present.
    pub fn to_bincode(&self) -> Vec<u8> {
        let wire: CheckpointWire = (
            self.v,
            self.table.clone(),
            self.device.clone(),
            self.head_seq,
            self.head_hash,
            self.signed_at_ns,
            self.signature,
        );
        // Encoding our own fixed-shape values into a Vec cannot fail.
        let mut out = bincode::encode_to_vec(wire, bincode::config::standard())
            .expect("encoding a checkpoint into a Vec is infallible");
        if let Some(state) = &self.state {
            out.extend(
                bincode::encode_to_vec(state, bincode::config::standard())
                    .expect("encoding a checkpoint state into a Vec is infallible"),
            );
        }
        out
    }

    /// Reads either wire form; never panics, whatever the bytes.
    pub fn decode(bytes: &[u8]) -> Result<Checkpoint, CheckpointDecodeError> {
        if bytes.len() > EVENT_LEN_MAX {
            return Err(CheckpointDecodeError::TooLong {
                len: bytes.len(),
                max: EVENT_LEN_MAX,
            });
        }
        let first = bytes
            .iter()
            .find(|b| !b.is_ascii_whitespace())
            .ok_or(CheckpointDecodeError::Empty)?;
        let c: Checkpoint = if *first == b'{' {
            serde_json::from_slice(bytes).map_err(|e| CheckpointDecodeError::Json(e.to_string()))?
        } else {
            // With the events' limit: bincode sizes a string's buffer from its declared
            // length before reading it, so without one ten bytes declaring 2^62 would
            // abort the process.
            decode_bincode(bytes)?
        };
        if c.v != WIRE_VERSION {
            return Err(CheckpointDecodeError::Version(c.v));
        }
        Ok(c)
    }
}

/// The bincode form: the version 1 fields, then a state if bytes remain (version 2).
fn decode_bincode(bytes: &[u8]) -> Result<Checkpoint, CheckpointDecodeError> {
    let bad = |e: bincode::error::DecodeError| CheckpointDecodeError::Bincode(e.to_string());
    let (wire, used): (CheckpointWire, usize) =
        bincode::decode_from_slice(bytes, crate::codec::bincode_config()).map_err(bad)?;
    let (v, table, device, head_seq, head_hash, signed_at_ns, signature) = wire;
    let state = if used == bytes.len() {
        None
    } else {
        let (state, more): (CheckpointState, usize) =
            bincode::decode_from_slice(&bytes[used..], crate::codec::bincode_config())
                .map_err(bad)?;
        if used + more != bytes.len() {
            return Err(CheckpointDecodeError::Trailing(bytes.len() - used - more));
        }
        Some(state)
    };
    Ok(Checkpoint {
        v,
        table,
        device,
        head_seq,
        head_hash,
        signed_at_ns,
        signature,
        state,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids() -> (TableId, DeviceId) {
        (
            TableId::new("CSP-01").unwrap(),
            DeviceId::new("ctl-1").unwrap(),
        )
    }

    /// `verify_many` gives `verify`'s verdict for each signature: across batch bounds,
    /// with bad signatures among good ones (a failed batch is checked one by one), with
    /// several keys, and for a weak key a forged signature would pass a bare batch check.
    #[test]
    fn verify_many_agrees_with_verify_one_by_one() {
        let keys: Vec<SigningKey> = (0..3)
            .map(|k| SigningKey::derive_for_simulation(&format!("many {k}")))
            .collect();
        let n = VERIFY_BATCH_MAX * 2 + 5;
        let messages: Vec<Vec<u8>> = (0..n).map(|i| format!("head {i}").into_bytes()).collect();
        let mut signed: Vec<(PublicKey, Signature)> = (0..n)
            .map(|i| {
                let k = &keys[i % keys.len()];
                (k.public(), k.sign(&messages[i]))
            })
            .collect();
        // A signature of another message, one by another key, a flipped bit, and a
        // non-canonical s (all 0xff): each fails alone, in batches that are otherwise good.
        signed[3].1 = keys[0].sign(b"another head");
        signed[VERIFY_BATCH_MAX + 2].0 = keys[2].public(); // signed by keys[0]
        signed[VERIFY_BATCH_MAX + 7].1 .0[5] ^= 1;
        signed[n - 1].1 .0[32..].fill(0xff);
        let items: Vec<(&PublicKey, &[u8], &Signature)> = signed
            .iter()
            .zip(&messages)
            .map(|((k, sig), m)| (k, m.as_slice(), sig))
            .collect();
        let one_by_one: Vec<bool> = items.iter().map(|(k, m, s)| verify(k, m, s)).collect();
        let bad: Vec<usize> = (0..n).filter(|i| !one_by_one[*i]).collect();
        assert_eq!(bad, [3, VERIFY_BATCH_MAX + 2, VERIFY_BATCH_MAX + 7, n - 1]);
        assert_eq!(verify_many(&mut KeyCache::default(), &items), one_by_one);
        assert_eq!(
            verify_many(&mut KeyCache::default(), &[]),
            Vec::<bool>::new()
        );

        // The identity point as a key (small order: a "weak" key). With it, R = B and
        // s = 1 satisfy the verification equation for any message, so a bare batch check
        // accepts the forgery; `verify` refuses weak keys and so must `verify_many`.
        let weak = PublicKey({
            let mut b = [0u8; 32];
            b[0] = 1;
            b
        });
        let mut forged = [0u8; 64];
        // The base point B, compressed (y = 4/5): 0x58 then 31 bytes of 0x66.
        forged[0] = 0x58;
        forged[1..32].fill(0x66);
        forged[32] = 1;
        let forged = Signature(forged);
        let message = b"any head at all";
        let bare = ed25519_dalek::verify_batch(
            &[message.as_slice()],
            &[ed25519_dalek::Signature::from_bytes(&forged.0)],
            &[ed25519_dalek::VerifyingKey::from_bytes(&weak.0).unwrap()],
        );
        assert!(bare.is_ok(), "the forgery passes a bare batch check");
        assert!(!verify(&weak, message, &forged));
        let good = &items[0];
        assert_eq!(
            verify_many(
                &mut KeyCache::default(),
                &[(&weak, message, &forged), *good]
            ),
            [false, true]
        );
    }

    /// A cache kept across calls (as the ledger keeps one) gives every call the verdicts a
    /// fresh one gives: a weak key is refused again once cached, and a full cache empties
    /// and goes on verifying.
    #[test]
    fn a_key_cache_kept_across_calls_changes_no_verdict_and_stays_bounded() {
        let signer = SigningKey::derive_for_simulation("cached");
        let other = SigningKey::derive_for_simulation("cached other");
        let message = b"head 7".as_slice();
        let good = signer.sign(message);
        let by_other = other.sign(message);
        let mut weak = [0u8; 32];
        weak[0] = 1; // the identity point: small order
        let weak = PublicKey(weak);
        let not_a_point = PublicKey([0xff; 32]);
        let (key, other_key) = (signer.public(), other.public());
        let items = [
            (&key, message, &good),
            (&key, message, &by_other),
            (&weak, message, &good),
            (&not_a_point, message, &good),
            (&other_key, message, &by_other),
        ];
        let want = [true, false, false, false, true];
        let mut cache = KeyCache::default();
        for _ in 0..3 {
            assert_eq!(verify_many(&mut cache, &items), want);
        }
        assert_eq!(
            cache.len(),
            4,
            "each distinct key decompressed once, bad ones too"
        );

        for k in 0..KEY_CACHE_LEN_MAX {
            let mut b = [0u8; 32];
            b[..8].copy_from_slice(&(k as u64).to_le_bytes());
            b[31] = 0x40;
            cache.get(&PublicKey(b));
            assert!(cache.len() <= KEY_CACHE_LEN_MAX);
        }
        assert!(cache.len() < KEY_CACHE_LEN_MAX, "a full cache was emptied");
        assert_eq!(verify_many(&mut cache, &items), want);
    }

    #[test]
    fn checkpoint_signs_and_verifies_in_both_wire_forms() {
        let (t, d) = ids();
        let key = SigningKey::derive_for_simulation("device CSP-01/ctl-1");
        let c = Checkpoint::sign(&key, t, d, Seq(42), Hash32([9; 32]), 1_700_000_000_000);
        assert!(c.verifies_with(&key.public()));
        let other = SigningKey::derive_for_simulation("someone else");
        assert!(!c.verifies_with(&other.public()));
        let b = Checkpoint::decode(&c.to_bincode()).unwrap();
        assert_eq!(b, c);
        let j = Checkpoint::decode(&serde_json::to_vec(&c).unwrap()).unwrap();
        assert_eq!(j, c);
        // Any change to what was signed breaks it.
        let mut moved = c.clone();
        moved.head_seq = Seq(43);
        assert!(!moved.verifies_with(&key.public()));
        let mut rehashed = c.clone();
        rehashed.head_hash.0[0] ^= 1;
        assert!(!rehashed.verifies_with(&key.public()));
        let mut resigned = c;
        resigned.signature.0[10] ^= 0x40;
        assert!(!resigned.verifies_with(&key.public()));
    }

    /// A v2 checkpoint signs its state too; both wire forms carry it, a v1 one still reads
    /// as v1, and any change to the state breaks the signature.
    #[test]
    fn checkpoint_v2_signs_the_state_in_both_wire_forms() {
        let (t, d) = ids();
        let key = SigningKey::derive_for_simulation("device CSP-01/ctl-1");
        let state = CheckpointState {
            config_seq: Seq(1),
            config_hash: Hash32([1; 32]),
            key_seq: Seq(2),
            key_hash: Hash32([2; 32]),
        };
        let head = (t.clone(), d.clone(), Seq(42), Hash32([9; 32]));
        let c = Checkpoint::sign_v2(&key, head, 1_700_000_000_000, state);
        assert!(c.verifies_with(&key.public()));
        assert!(c.signed_message().starts_with(CHECKPOINT_V2_DOMAIN));
        assert_eq!(Checkpoint::decode(&c.to_bincode()).unwrap(), c);
        assert_eq!(
            Checkpoint::decode(&serde_json::to_vec(&c).unwrap()).unwrap(),
            c
        );
        let v1 = Checkpoint::sign(&key, t, d, Seq(42), Hash32([9; 32]), 1_700_000_000_000);
        assert_eq!(Checkpoint::decode(&v1.to_bincode()).unwrap().state, None);
        for edit in 0..4 {
            let mut forged = c.clone();
            let s = forged.state.as_mut().unwrap();
            match edit {
                0 => s.config_seq = Seq(0),
                1 => s.config_hash.0[3] ^= 1,
                2 => s.key_seq = Seq(3),
                _ => s.key_hash.0[0] ^= 1,
            }
            assert!(!forged.verifies_with(&key.public()), "edit {edit}");
        }
        let mut stripped = c;
        stripped.state = None;
        assert!(!stripped.verifies_with(&key.public()));
        let mut trailing = v1.to_bincode();
        trailing.push(7);
        assert!(Checkpoint::decode(&trailing).is_err());
    }

    #[test]
    fn enrollment_binds_table_device_key_and_action() {
        let (t, d) = ids();
        let admin = SigningKey::derive_for_simulation("admin");
        let dev = SigningKey::derive_for_simulation("dev").public();
        let m = enrollment_message(&t, &d, &dev, KeyAction::Enroll);
        let s = admin.sign(&m);
        assert!(verify(&admin.public(), &m, &s));
        let revoke = enrollment_message(&t, &d, &dev, KeyAction::Revoke);
        assert!(!verify(&admin.public(), &revoke, &s));
        let t2 = TableId::new("CSP-02").unwrap();
        assert!(!verify(
            &admin.public(),
            &enrollment_message(&t2, &d, &dev, KeyAction::Enroll),
            &s
        ));
    }

    #[test]
    fn garbage_never_panics() {
        for len in 0..200 {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + len) as u8).collect();
            let _ = Checkpoint::decode(&bytes);
        }
        assert!(!verify(&PublicKey([0xff; 32]), b"x", &Signature([0; 64])));
    }

    /// A checkpoint's table id declaring a length of 2^64-1 (or 2^62) must not panic
    /// ("capacity overflow") or abort before any byte of it is read. Every varint length
    /// marker, at every declared size, is an error.
    #[test]
    fn a_declared_length_beyond_the_message_is_refused_not_allocated() {
        let mut hostile = vec![
            vec![1, 0xFD, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
            vec![1, 0xFD, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x3F],
            vec![1, 0xFC, 0xFF, 0xFF, 0xFF, 0x7F],
            vec![1, 0xFB, 0xFF, 0xFF],
        ];
        for marker in 0xFBu8..=0xFF {
            for fill in [0x00, 0x01, 0x3F, 0x7F, 0xFF] {
                hostile.push([vec![1, marker], vec![fill; 16]].concat());
            }
        }
        for bytes in hostile {
            assert!(
                matches!(
                    Checkpoint::decode(&bytes),
                    Err(CheckpointDecodeError::Bincode(_))
                ),
                "{bytes:02x?}"
            );
        }
    }
}
