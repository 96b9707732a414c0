//! Device keys and signed checkpoints (see `schemas::attest` for the signed bytes).
//!
//! - **Enrollment** is an event in the chain (`DeviceEnrolled` / `DeviceRevoked`), so it is
//!   stored like any event once the chain accepts it. It takes effect only if its admin
//!   signature verifies against one of the ledger's trusted admin keys
//!   (`Writer::trust_admin_keys`); otherwise it stays in the chain as evidence, takes no
//!   effect, and is counted as the alert `enrollment_refused`. The key register
//!   (`Space::DeviceKey`) is derived from those events and written in the same atomic
//!   commit as them.
//! - **Checkpoints** are separate messages (`tables.<table>.checkpoints`), never part of
//!   the chain, so refusing one never breaks the chain it speaks of. A checkpoint is kept
//!   (`Space::Checkpoint`) only if it decodes, came on its table's subject, was signed by
//!   a currently enrolled, unrevoked key of that device on that table, and names a seq
//!   and hash the stored chain has. Anything else is quarantined verbatim with one of the
//!   reasons below, counted and logged at error level (an alert).
//!
//! Everything up to the highest kept checkpoint of a table is *attested*; later events
//! are "not yet attested" until the next checkpoint arrives (`Reader::attestation`).

use crate::call::Call;
use crate::faces::{Reader, Writer};
use crate::record::{self, be_u64, split_table_key, table_key, W};
use crate::refuse::quarantine;
use crate::store::{Op, Space};
use crate::types::Incoming;
pub use crate::types::{Attestation, CheckpointOutcome, DeviceKey};
pub(crate) use crate::types::{Attested, KeyRegister, Trust};
use crate::{error::Error, owner::Ledger, owner::State};
use schemas::attest::{Checkpoint, KeyAction, KeyEvent, PublicKey, VERIFY_BATCH_MAX};
use schemas::{DeviceId, Event, Hash32, Seq, TableId};
use std::collections::{BTreeMap, BTreeSet};

/// Stable reason codes of refused checkpoints and enrollments (stored; never rename).
pub mod reason {
    /// The checkpoint bytes do not decode.
    pub const CHECKPOINT_UNDECODABLE: &str = "checkpoint_undecodable";
    /// The checkpoint names another table than its subject.
    pub const CHECKPOINT_WRONG_SUBJECT: &str = "checkpoint_wrong_subject";
    /// The checkpoint's device has never been enrolled on the table.
    pub const UNKNOWN_DEVICE: &str = "unknown_device";
    /// The checkpoint's device key is revoked.
    pub const REVOKED_DEVICE: &str = "revoked_device";
    /// The checkpoint's signature does not verify under the device's key.
    pub const BAD_SIGNATURE: &str = "bad_signature";
    /// The checkpoint names a seq the ledger does not have yet.
    pub const CHECKPOINT_BEYOND_HEAD: &str = "checkpoint_beyond_head";
    /// The checkpoint's hash differs from the stored chain at its seq: the device and the
    /// ledger disagree about history.
    pub const CHECKPOINT_MISMATCH: &str = "checkpoint_mismatch";
    /// A v2 checkpoint's signed state is false: the config it names is not the last
    /// `TableOpened` at or before its head, or the enrollment it names is not the one in
    /// force for its key.
    pub const CHECKPOINT_STATE_MISMATCH: &str = "checkpoint_state_mismatch";
    /// Counter (not a quarantine: the event is in the chain) of enrollment or revocation
    /// events that take no effect: the admin signature does not verify against a trusted
    /// admin key, the enrollment names a key the device held before (revoked or replaced:
    /// a replay of its old, genuinely signed enrollment), or the revocation names a key
    /// that is not the device's current one.
    pub const ENROLLMENT_REFUSED: &str = "enrollment_refused";

    /// The counters that are not quarantine reasons, so cannot be recounted from the
    /// quarantine at open: kept in `Space::Meta` under `counter_key`, written in the same
    /// commit as the events they count.
    pub const PERSISTED_COUNTERS: &[&str] = &[ENROLLMENT_REFUSED];

    /// The `Space::Meta` key of a persisted counter.
    pub fn counter_key(name: &str) -> Vec<u8> {
        [b"counter/".as_slice(), name.as_bytes()].concat()
    }
}

/// Most keys one device may retire on one chain (`DeviceKey::retired`); an enrollment
/// beyond it takes no effect (give the device a new id). A key a day for eleven years.
pub const RETIRED_KEYS_MAX: usize = 4096;

/// A kept checkpoint as stored: the message exactly as the device published it, decoded,
/// with the ingest-side fields stored beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptCheckpoint {
    /// The checkpoint as decoded from `bytes`.
    pub checkpoint: Checkpoint,
    /// The exact bytes as received (bincode or JSON).
    pub bytes: Vec<u8>,
    /// JetStream stream sequence of the delivery.
    pub stream_seq: u64,
    /// When the House received it, UTC ns.
    pub received_at_ns: i64,
    /// The seq of the enrollment of the key the ledger verified the signature with, as
    /// its key register held it then: the event an evidence bundle cites. `None` for a
    /// checkpoint kept before the ledger recorded it.
    pub key_enrolled_seq: Option<Seq>,
}

fn device_key_key(table: &TableId, device: &DeviceId) -> Vec<u8> {
    let mut k = table_key(table);
    k.extend_from_slice(device.as_str().as_bytes());
    k
}

/// `key, enrolled_seq, revoked flag [, revoked_seq], retired count (u32), retired keys`
/// (the retired keys added later: a value without them reads as none retired).
fn encode_device_key(d: &DeviceKey) -> Vec<u8> {
    let mut w = W::default();
    w.raw(&d.key.0).u64(d.enrolled_seq.0);
    match d.revoked_seq {
        Some(s) => w.u8(1).u64(s.0),
        None => w.u8(0),
    };
    assert!(d.retired.len() <= RETIRED_KEYS_MAX, "bounded by on_stored");
    w.u32(d.retired.len() as u32);
    for k in &d.retired {
        w.raw(&k.0);
    }
    w.0
}

/// A table's key register entries in device order; `None` for an entry that does not read.
fn table_device_keys<'a>(
    store: &'a dyn crate::store::Store,
    table: &TableId,
) -> impl Iterator<Item = Result<Option<(DeviceId, DeviceKey)>, Error>> + 'a {
    let from = table_key(table);
    let mut to = from.clone();
    to.push(0xff);
    let prefix_len = from.len();
    store
        .range(Space::DeviceKey, &from, Some(&to))
        .map(move |kv| {
            let (k, v) = kv?;
            let device = std::str::from_utf8(&k[prefix_len..])
                .ok()
                .and_then(|s| DeviceId::new(s).ok());
            Ok(device.zip(decode_device_key(&v).ok()))
        })
}

fn decode_device_key(v: &[u8]) -> Result<DeviceKey, Error> {
    let mut r = record::R::new(v);
    let key = PublicKey(r.hash()?.0);
    let enrolled_seq = Seq(r.u64()?);
    let revoked_seq = match r.u8()? {
        0 => None,
        1 => Some(Seq(r.u64()?)),
        _ => return Err(record::corrupt("device key revocation flag")),
    };
    let mut retired = Vec::new();
    if !r.is_empty() {
        let n = r.u32()? as usize;
        if n > RETIRED_KEYS_MAX {
            return Err(record::corrupt("device key: too many retired keys"));
        }
        for _ in 0..n {
            retired.push(PublicKey(r.hash()?.0));
        }
    }
    Ok(DeviceKey {
        key,
        enrolled_seq,
        revoked_seq,
        retired,
    })
}

/// A kept checkpoint's record: `received_at_ns, stream_seq, len-prefixed bytes,
/// key_enrolled_seq` (the last field added later: a record without it still reads).
fn encode_checkpoint(
    received_at_ns: i64,
    stream_seq: u64,
    bytes: &[u8],
    key_enrolled_seq: Seq,
) -> Vec<u8> {
    let mut w = W::default();
    w.i64(received_at_ns)
        .u64(stream_seq)
        .bytes(bytes)
        .u64(key_enrolled_seq.0);
    w.0
}

/// A kept checkpoint's record as stored: its arrival and its exact bytes.
pub(crate) struct CheckpointRecord {
    pub(crate) received_at_ns: i64,
    pub(crate) stream_seq: u64,
    /// The checkpoint's exact bytes, as the device signed them.
    pub(crate) bytes: Vec<u8>,
    /// The seq of the enrollment of the key that signed it (absent in older records).
    pub(crate) key_enrolled_seq: Option<Seq>,
}

/// Decodes a kept checkpoint's record.
pub(crate) fn decode_checkpoint(v: &[u8]) -> Result<CheckpointRecord, Error> {
    let mut r = record::R::new(v);
    let (received_at_ns, stream_seq, bytes) = (r.i64()?, r.u64()?, r.bytes()?.to_vec());
    let key_enrolled_seq = if r.is_empty() {
        None
    } else {
        Some(Seq(r.u64()?))
    };
    if !r.is_empty() {
        return Err(record::corrupt("checkpoint record: trailing bytes"));
    }
    Ok(CheckpointRecord {
        received_at_ns,
        stream_seq,
        bytes,
        key_enrolled_seq,
    })
}

/// A kept checkpoint's record, decoded.
fn kept_checkpoint(v: &[u8]) -> Result<KeptCheckpoint, Error> {
    let CheckpointRecord {
        received_at_ns,
        stream_seq,
        bytes,
        key_enrolled_seq,
    } = decode_checkpoint(v)?;
    let checkpoint = Checkpoint::decode(&bytes).map_err(|e| record::corrupt(&e.to_string()))?;
    Ok(KeptCheckpoint {
        checkpoint,
        bytes,
        stream_seq,
        received_at_ns,
        key_enrolled_seq,
    })
}

/// `Space::Meta` key of the trusted admin keys: 32 bytes each, in key order.
pub const ADMIN_KEYS_KEY: &[u8] = b"admin_keys";

fn encode_admin_keys(keys: &BTreeSet<PublicKey>) -> Vec<u8> {
    keys.iter().flat_map(|k| k.0).collect()
}

/// The trusted admin keys as the last `trust_admin_keys` kept them; none for a ledger that
/// never had any (or written before they were kept).
pub(crate) fn load_admin_keys(
    store: &dyn crate::store::Store,
) -> Result<BTreeSet<PublicKey>, Error> {
    let Some(v) = store.get(Space::Meta, ADMIN_KEYS_KEY)? else {
        return Ok(BTreeSet::new());
    };
    if v.len() % 32 != 0 {
        return Err(record::corrupt(&format!(
            "trusted admin keys: {} bytes, not a whole number of 32-byte keys",
            v.len()
        )));
    }
    Ok(v.chunks_exact(32)
        .map(|c| PublicKey(c.try_into().expect("chunks of 32")))
        .collect())
}

/// The key register and attestations, read at open.
pub(crate) fn load(store: &dyn crate::store::Store) -> Result<(KeyRegister, Attested), Error> {
    let mut devices = BTreeMap::new();
    for kv in store.range(Space::DeviceKey, &[], None) {
        let (k, v) = kv?;
        let (table, rest) = split_table_key(&k)?;
        let device = std::str::from_utf8(rest)
            .ok()
            .and_then(|s| DeviceId::new(s).ok())
            .ok_or_else(|| record::corrupt("device key id"))?;
        devices.insert((table, device), decode_device_key(&v)?);
    }
    Ok((devices, load_attested(store)?))
}

/// The highest kept checkpoint of each table: one seek per table, so opening a ledger
/// costs the same whatever its history.
fn load_attested(store: &dyn crate::store::Store) -> Result<Attested, Error> {
    let mut attested = BTreeMap::new();
    let mut from: Vec<u8> = Vec::new();
    while let Some(kv) = store.range(Space::Checkpoint, &from, None).next() {
        let (first, _) = kv?;
        let (table, _) = split_table_key(&first)?;
        let prefix = crate::record::table_key(&table);
        let mut last = prefix.clone();
        last.extend_from_slice(&u64::MAX.to_be_bytes());
        let key = store
            .last_key_at_or_before(Space::Checkpoint, &prefix, &last)?
            .ok_or_else(|| record::corrupt("checkpoint key vanished during open"))?;
        let value = store
            .get(Space::Checkpoint, &key)?
            .ok_or_else(|| record::corrupt("checkpoint value vanished during open"))?;
        let (_, rest) = split_table_key(&key)?;
        let seq = be_u64(rest)?;
        let CheckpointRecord {
            received_at_ns,
            bytes,
            ..
        } = decode_checkpoint(&value)?;
        let c = Checkpoint::decode(&bytes).map_err(|e| record::corrupt(&e.to_string()))?;
        let attestation = Attestation {
            table: table.clone(),
            seq: Seq(seq),
            hash: c.head_hash,
            device: c.device,
            received_at_ns,
        };
        assert!(
            attested.insert(table, attestation).is_none(),
            "each table is seen once"
        );
        // The next table's keys start after every key of this one.
        from = last;
        from.push(0);
    }
    Ok(attested)
}

/// What a trusted key event of `seq` does to the device's register entry (`current`): the
/// new entry, or why it takes no effect.
fn key_event_effect(
    current: Option<&DeviceKey>,
    action: KeyAction,
    key: &PublicKey,
    seq: Seq,
) -> Result<DeviceKey, &'static str> {
    match (action, current) {
        (KeyAction::Enroll, Some(d))
            if d.retired.contains(key) || (d.key == *key && d.revoked_seq.is_some()) =>
        {
            Err("the device held this key before and it was revoked or replaced (a replayed enrollment?)")
        }
        (KeyAction::Enroll, Some(d)) if d.key != *key && d.retired.len() >= RETIRED_KEYS_MAX => {
            Err("the device has retired too many keys on this chain; enroll it under a new id")
        }
        (KeyAction::Enroll, current) => {
            let mut retired = current.map_or_else(Vec::new, |d| d.retired.clone());
            if let Some(d) = current.filter(|d| d.key != *key) {
                retired.push(d.key);
            }
            Ok(DeviceKey {
                key: *key,
                enrolled_seq: seq,
                revoked_seq: None,
                retired,
            })
        }
        (KeyAction::Revoke, Some(d)) if d.key != *key => {
            Err("it names a key that is not the device's current one (a replayed revocation?)")
        }
        // The first revocation stands: a later one would move where the key's validity
        // ended.
        (KeyAction::Revoke, Some(d)) if d.revoked_seq.is_some() => {
            Err("the key is already revoked (a replayed revocation?)")
        }
        (KeyAction::Revoke, current) => Ok(DeviceKey {
            key: *key,
            enrolled_seq: current.map_or(Seq(0), |d| d.enrolled_seq),
            revoked_seq: Some(seq),
            retired: current.map_or_else(Vec::new, |d| d.retired.clone()),
        }),
    }
}

/// Called for every event the append path stores: applies enrollments and revocations.
pub(crate) fn on_stored(state: &crate::owner::State, call: &mut Call, event: &Event) {
    let Some(key_event) = KeyEvent::of(&event.body) else {
        return;
    };
    let KeyEvent {
        device,
        key,
        admin,
        action,
        ..
    } = key_event;
    let k = (event.table.clone(), device.clone());
    let effect = if !state.trust.admin_keys.contains(admin) {
        Err("not signed by an admin key the ledger trusts")
    } else if !key_event.admin_signature_verifies(&event.table) {
        Err("its admin signature does not verify")
    } else {
        // Enrolled in this call or an earlier one (the register before this call).
        let current = call.devices.get(&k).or_else(|| state.trust.devices.get(&k));
        key_event_effect(current, action, key, event.seq)
    };
    let entry = match effect {
        Ok(entry) => entry,
        Err(why) => {
            tracing::error!(
                table = %event.table, seq = event.seq.0, %device, %admin, ?action,
                "ALERT: key {action:?} takes no effect: {why}"
            );
            *call
                .counters
                .entry(reason::ENROLLMENT_REFUSED.to_string())
                .or_insert(0) += 1;
            return;
        }
    };
    tracing::info!(table = %event.table, seq = event.seq.0, %device, ?action, "device key register changed");
    call.ops.push(Op::Put(
        Space::DeviceKey,
        device_key_key(&event.table, device),
        encode_device_key(&entry),
    ));
    call.devices.insert(k, entry);
}

impl Ledger {
    /// Decides one checkpoint at its place in the call (after the events that came
    /// before it in the stream): its ops go into `call`, its outcome into `cps`.
    pub(crate) fn decide_checkpoint(
        &self,
        state: &State,
        call: &mut Call,
        cps: &mut CallCheckpoints,
        msg: &Incoming,
    ) -> Result<(), Error> {
        let decoded = Checkpoint::decode(&msg.bytes);
        let signed = signatures_verify(
            &mut self.key_cache(),
            state,
            call,
            std::slice::from_ref(&decoded),
        );
        let checked = Checked {
            decoded,
            signed: signed[0],
        };
        let outcome = self.one_checkpoint(
            state,
            call,
            &mut cps.attested,
            &mut cps.kept_now,
            msg,
            checked,
        )?;
        cps.out.push(outcome);
        Ok(())
    }

    fn one_checkpoint(
        &self,
        state: &State,
        call: &mut Call,
        attested: &mut BTreeMap<TableId, Attestation>,
        kept_now: &mut BTreeSet<Vec<u8>>,
        msg: &Incoming,
        checked: Checked,
    ) -> Result<CheckpointOutcome, Error> {
        let refuse = |call: &mut Call, code: &'static str, text: String| {
            tracing::error!(reason = code, %text, "ALERT: checkpoint refused");
            quarantine(state, call, msg, code, text).into()
        };
        let c = match checked.decoded {
            Ok(c) => c,
            Err(e) => return Ok(refuse(call, reason::CHECKPOINT_UNDECODABLE, e.to_string())),
        };
        let dk = match self.checkpoint_problem(state, call, msg, &c, checked.signed)? {
            Ok(dk) => dk,
            Err((code, text)) => return Ok(refuse(call, code, text)),
        };
        let key = record::seq_key(&c.table, c.head_seq.0);
        // Nothing above the table's highest kept checkpoint is in the store, so only a
        // checkpoint at or below it is looked up.
        let at_or_below_kept = state
            .trust
            .attested
            .get(&c.table)
            .is_some_and(|a| c.head_seq <= a.seq);
        let seen = kept_now.contains(&key)
            || (at_or_below_kept && self.store.get(Space::Checkpoint, &key)?.is_some());
        if seen {
            return Ok(CheckpointOutcome::Duplicate {
                table: c.table,
                seq: c.head_seq,
            });
        }
        kept_now.insert(key.clone());
        let kept = encode_checkpoint(
            msg.received_at_ns,
            msg.stream_seq,
            &msg.bytes,
            dk.enrolled_seq,
        );
        call.ops.push(Op::Put(Space::Checkpoint, key, kept));
        let a = Attestation {
            table: c.table.clone(),
            seq: c.head_seq,
            hash: c.head_hash,
            device: c.device,
            received_at_ns: msg.received_at_ns,
        };
        if attested.get(&c.table).is_none_or(|old| old.seq < a.seq) {
            attested.insert(c.table.clone(), a);
        }
        Ok(CheckpointOutcome::Kept {
            table: c.table,
            seq: c.head_seq,
        })
    }

    /// Why a decoded checkpoint is refused (its reason code and words), or the enrolled
    /// key it verified under: subject, fence, enrollment, signature, head and state.
    fn checkpoint_problem(
        &self,
        state: &State,
        call: &mut Call,
        msg: &Incoming,
        c: &Checkpoint,
        signed: bool,
    ) -> Result<Result<DeviceKey, (&'static str, String)>, Error> {
        if msg.subject_table.as_ref() != Some(&c.table) {
            let text = format!("checkpoint of table {} on another table's subject", c.table);
            return Ok(Err((reason::CHECKPOINT_WRONG_SUBJECT, text)));
        }
        if let Some(f) = state.fenced.get(&c.table) {
            let text = crate::fence::fenced_text(&c.table, f, None, true);
            return Ok(Err((crate::types::reason::TABLE_FENCED, text)));
        }
        let Some(dk) = call.device_key(state, &c.table, &c.device).cloned() else {
            let (d, t) = (&c.device, &c.table);
            let text = format!("device {d} has no enrolled key on table {t}");
            return Ok(Err((reason::UNKNOWN_DEVICE, text)));
        };
        if let Some(r) = dk.revoked_seq {
            let text = format!(
                "device {}'s key {} was revoked at seq {}",
                c.device, dk.key, r.0
            );
            return Ok(Err((reason::REVOKED_DEVICE, text)));
        }
        if !signed {
            let (d, k) = (&c.device, &dk.key);
            let text = format!("signature does not verify with device {d}'s enrolled key {k}");
            return Ok(Err((reason::BAD_SIGNATURE, text)));
        }
        let head = call.head(state, &c.table).map_or(0, |h| h.seq.0);
        if c.head_seq.0 == 0 || c.head_seq.0 > head {
            let text = format!(
                "checkpoint at seq {} but the stored chain of {} ends at {head}",
                c.head_seq.0, c.table
            );
            return Ok(Err((reason::CHECKPOINT_BEYOND_HEAD, text)));
        }
        let stored_hash = self.hash_in_call(state, call, &c.table, c.head_seq.0)?;
        if stored_hash != c.head_hash {
            let text = format!(
                "device {} signed hash {} at seq {}, the stored chain has {}",
                c.device, c.head_hash, c.head_seq.0, stored_hash
            );
            return Ok(Err((reason::CHECKPOINT_MISMATCH, text)));
        }
        if let Some(text) = self.state_claim_problem(state, call, c, &dk)? {
            return Ok(Err((reason::CHECKPOINT_STATE_MISMATCH, text)));
        }
        Ok(Ok(dk))
    }
}

impl Writer<'_> {
    /// Sets the admin keys whose signatures enroll and revoke device keys, and keeps them
    /// (durably, in `Space::Meta`) as the ones the ledger trusts until the next call. Call
    /// before ingest starts: enrollments are judged when they are appended.
    ///
    /// Why kept: an open that finds commits the store lost appends their events again
    /// (`recover`) before any caller could say whom to trust; it judges their enrollments
    /// with the keys kept here, as they were judged the first time, instead of refusing
    /// them for good. The keys are public; they decide nothing until events are appended.
    pub fn trust_admin_keys(&self, keys: impl IntoIterator<Item = PublicKey>) -> Result<(), Error> {
        let keys = keys.into_iter().collect::<BTreeSet<_>>();
        let mut state = self.lock();
        if state.trust.admin_keys == keys && self.store.get(Space::Meta, ADMIN_KEYS_KEY)?.is_some()
        {
            return Ok(());
        }
        self.store.commit(vec![Op::Put(
            Space::Meta,
            ADMIN_KEYS_KEY.to_vec(),
            encode_admin_keys(&keys),
        )])?;
        self.store.flush()?;
        state.trust.admin_keys = keys;
        Ok(())
    }

    /// Verifies and keeps checkpoint messages (in arrival order); what cannot be kept is
    /// quarantined verbatim. Call after appending the events that arrived before them, or
    /// append both together (`Writer::append`). Nothing is durable until `flush`.
    pub fn append_checkpoints(&self, batch: &[Incoming]) -> Result<Vec<CheckpointOutcome>, Error> {
        Ok(self.append(&[], batch)?.checkpoints)
    }
}

impl Reader<'_> {
    /// The admin keys the ledger trusts (`trust_admin_keys`, kept across opens).
    pub fn trusted_admin_keys(&self) -> BTreeSet<PublicKey> {
        self.lock().trust.admin_keys.clone()
    }

    /// The key register entry of `device` on `table`'s chain.
    pub fn device_key(&self, table: &TableId, device: &DeviceId) -> Option<DeviceKey> {
        self.lock()
            .trust
            .devices
            .get(&(table.clone(), device.clone()))
            .cloned()
    }

    /// The highest kept checkpoint of `table`: events above its seq are not yet attested.
    pub fn attestation(&self, table: &TableId) -> Option<Attestation> {
        self.lock().trust.attested.get(table).cloned()
    }

    /// The first kept checkpoint of `table` whose head is at or after `seq`: the one that
    /// attests the event at `seq` with the shortest chain (evidence bundles). `None` when
    /// `seq` is not yet attested.
    pub fn checkpoint_at_or_after(
        &self,
        table: &TableId,
        seq: u64,
    ) -> Result<Option<KeptCheckpoint>, Error> {
        let from = record::seq_key(table, seq);
        // Every checkpoint key of the table is `table_key ++ 8 bytes`: this sorts after all.
        let mut to = table_key(table);
        to.extend_from_slice(&[0xff; 9]);
        let Some(kv) = self.store.range(Space::Checkpoint, &from, Some(&to)).next() else {
            return Ok(None);
        };
        let (_, v) = kv?;
        kept_checkpoint(&v).map(Some)
    }

    /// The last kept checkpoint of `table` whose head is at or before `seq`: the signed
    /// anchor of an evidence bundle's chain segment. One backwards seek.
    pub fn checkpoint_at_or_before(
        &self,
        table: &TableId,
        seq: u64,
    ) -> Result<Option<KeptCheckpoint>, Error> {
        let at = record::seq_key(table, seq);
        let Some(k) =
            self.store
                .last_key_at_or_before(Space::Checkpoint, &table_key(table), &at)?
        else {
            return Ok(None);
        };
        let v = self
            .store
            .get(Space::Checkpoint, &k)?
            .ok_or_else(|| record::corrupt("kept checkpoint: a key without a value"))?;
        kept_checkpoint(&v).map(Some)
    }
}

impl Ledger {
    /// The chain hash of `table`'s event at `seq` (at most the head), as the call sees it.
    fn hash_in_call(
        &self,
        state: &State,
        call: &Call,
        table: &TableId,
        seq: u64,
    ) -> Result<Hash32, Error> {
        match call.known_hash(state, table, seq) {
            Some(h) => Ok(h),
            None => Ok(self
                .reader()
                .stored_event(table, seq)?
                .ok_or_else(|| record::corrupt("event missing below the head"))?
                .hash),
        }
    }

    /// Why the state a v2 checkpoint signs is false, if it is: its config must be the last
    /// `TableOpened` at or before the head, and its enrollment the one in force for the
    /// signing key (`dk`, the register entry the signature verified with).
    fn state_claim_problem(
        &self,
        state: &State,
        call: &Call,
        c: &Checkpoint,
        dk: &DeviceKey,
    ) -> Result<Option<String>, Error> {
        let Some(s) = &c.state else {
            return Ok(None);
        };
        let config = self.config_in_call(call, &c.table, c.head_seq.0)?;
        if config != Some((s.config_seq, s.config_hash)) {
            return Ok(Some(format!(
                "device {} signed config seq {} hash {} in force at seq {}, the chain has {}",
                c.device,
                s.config_seq.0,
                s.config_hash,
                c.head_seq.0,
                config.map_or("none".to_string(), |(q, h)| format!("seq {} hash {h}", q.0))
            )));
        }
        let key_hash = if s.key_seq == dk.enrolled_seq && s.key_seq <= c.head_seq {
            Some(self.hash_in_call(state, call, &c.table, s.key_seq.0)?)
        } else {
            None
        };
        if key_hash != Some(s.key_hash) {
            return Ok(Some(format!(
                "device {} signed its key's enrollment at seq {} hash {}, the key register has seq {} for key {}",
                c.device, s.key_seq.0, s.key_hash, dk.enrolled_seq.0, dk.key
            )));
        }
        Ok(None)
    }
}

/// A checkpoint message decoded, and whether its signature verifies with the key its
/// device has enrolled (`false` when it has none).
struct Checked {
    decoded: Result<Checkpoint, schemas::attest::CheckpointDecodeError>,
    signed: bool,
}

/// Whether each decoded checkpoint's signature verifies with its device's enrolled key, all
/// checked at once (`verify_many`: about half the CPU of one by one, and a call's
/// checkpoints are a quarter of ingest's CPU at a floor's rate; BENCHMARKS.md), with the
/// keys the ledger has decompressed before (`keys`).
fn signatures_verify(
    keys: &mut schemas::attest::KeyCache,
    state: &State,
    call: &Call,
    decoded: &[Result<Checkpoint, schemas::attest::CheckpointDecodeError>],
) -> Vec<bool> {
    let mut signed = vec![false; decoded.len()];
    let mut items = Vec::with_capacity(decoded.len());
    let mut messages = Vec::with_capacity(decoded.len());
    let mut at = Vec::with_capacity(decoded.len());
    for (i, c) in decoded.iter().enumerate() {
        let Ok(c) = c else { continue };
        if let Some(dk) = call.device_key(state, &c.table, &c.device) {
            messages.push(c.signed_message());
            items.push((&dk.key, &c.signature));
            at.push(i);
        }
    }
    let items: Vec<_> = items
        .iter()
        .zip(&messages)
        .map(|((key, signature), message)| (*key, message.as_slice(), *signature))
        .collect();
    for (i, ok) in at
        .into_iter()
        .zip(schemas::attest::verify_many(keys, &items))
    {
        signed[i] = ok;
    }
    signed
}

/// A call's checkpoints as they are decided: one outcome per message, the highest kept
/// per table (for the state once the call commits), and the keys kept (a checkpoint
/// delivered twice in one call is kept once).
pub(crate) struct CallCheckpoints {
    out: Vec<CheckpointOutcome>,
    attested: BTreeMap<TableId, Attestation>,
    kept_now: BTreeSet<Vec<u8>>,
}

impl CallCheckpoints {
    pub(crate) fn new(len: usize) -> CallCheckpoints {
        CallCheckpoints {
            out: Vec::with_capacity(len),
            attested: BTreeMap::new(),
            kept_now: BTreeSet::new(),
        }
    }

    /// How many are decided so far.
    pub(crate) fn decided(&self) -> usize {
        self.out.len()
    }

    pub(crate) fn finish(self) -> (Vec<CheckpointOutcome>, BTreeMap<TableId, Attestation>) {
        (self.out, self.attested)
    }
}

/// A kept checkpoint whose signature `AttestationCheck` has yet to check.
struct PendingSignature {
    seq: u64,
    device: DeviceId,
    key: PublicKey,
    message: Vec<u8>,
    signature: schemas::attest::Signature,
}

/// A key event of a chain as `verify` saw it: (device, key, action, whether its admin
/// signature verifies).
type SeenKeyEvent = (DeviceId, PublicKey, KeyAction, bool);

/// What `verify` checks of one table's attestation, fed the verified chain in seq order.
/// The chain's own hashes do not cover the key register or the kept checkpoints, and they
/// decide what is "attested": an edited register entry or a kept checkpoint slipped into
/// the store would vouch for events no device signed. So every kept checkpoint must name
/// the hash the chain has at its seq and be signed by the key that the chain's enrollment
/// event at its `key_enrolled_seq` enrolled for its device; every register entry must be
/// the key an admin-signed enrollment in the chain enrolled (and revoked, if it says so),
/// and every key it lists as retired one the chain enrolled for that device.
///
/// Not checked: whether the enrolling admin key was trusted when the event was appended
/// (the ledger keeps only the keys trusted now); the signature itself is.
///
/// Signatures are checked `VERIFY_BATCH_MAX` at a time (`verify_many`): a checkpoint whose
/// signature fails is named when its batch is settled, which may be after the pass found a
/// later problem; `settle` before reporting anything, and a failed signature comes first,
/// as it would have one at a time.
pub(crate) struct AttestationCheck<'a> {
    table: &'a TableId,
    checkpoints: std::iter::Peekable<crate::store::KvIter<'a>>,
    /// Key events of the chain so far, by seq (a few per table).
    key_events: BTreeMap<u64, SeenKeyEvent>,
    /// Their chain hashes, by seq: what a v2 checkpoint's state names.
    key_hashes: BTreeMap<u64, Hash32>,
    /// The last `TableOpened` so far (seq, hash): the config in force.
    config: Option<(u64, Hash32)>,
    /// Checkpoints whose signature is still to be checked, in seq order; at most
    /// `VERIFY_BATCH_MAX`.
    pending: Vec<PendingSignature>,
    /// The chain's keys, decompressed once for all its batches.
    keys: schemas::attest::KeyCache,
    /// Kept checkpoints verified so far, and the highest seq one named.
    pub(crate) verified: u64,
    pub(crate) attested_seq: u64,
    /// Seq ranges removed by retention (`skip_removed`): what lies there is not recomputed.
    removed: Vec<(u64, u64)>,
    /// Keys the register lists as retired when a removal was skipped.
    removed_retired: BTreeSet<(DeviceId, PublicKey)>,
    /// Kept checkpoints inside removed ranges, not checked.
    pub(crate) removed_checkpoints: u64,
}

impl<'a> AttestationCheck<'a> {
    pub(crate) fn new(store: &'a dyn crate::store::Store, table: &'a TableId) -> Self {
        let from = table_key(table);
        let mut to = from.clone();
        to.extend_from_slice(&[0xff; 9]);
        AttestationCheck {
            table,
            checkpoints: store.range(Space::Checkpoint, &from, Some(&to)).peekable(),
            key_events: BTreeMap::new(),
            key_hashes: BTreeMap::new(),
            config: None,
            pending: Vec::with_capacity(VERIFY_BATCH_MAX),
            keys: schemas::attest::KeyCache::default(),
            verified: 0,
            attested_seq: 0,
            removed: Vec::new(),
            removed_retired: BTreeSet::new(),
            removed_checkpoints: 0,
        }
    }

    /// The chain skips seqs `first..=last`, removed by retention; the seal proves their
    /// head. Their kept checkpoints are passed over. The key register's enrollments and
    /// revocations there, and the config index's last entry, stand in for the events.
    pub(crate) fn skip_removed(
        &mut self,
        store: &dyn crate::store::Store,
        first: u64,
        last: u64,
    ) -> Result<(), Error> {
        while self.next_checkpoint_at_most(last)?.is_some() {
            self.removed_checkpoints += 1;
        }
        self.removed.push((first, last));
        let inside = |s: u64| (first..=last).contains(&s);
        let from = table_key(self.table);
        for entry in table_device_keys(store, self.table) {
            let Some((device, d)) = entry? else {
                continue; // `finish` names an unreadable entry.
            };
            if inside(d.enrolled_seq.0) {
                let seen = (device.clone(), d.key, KeyAction::Enroll, true);
                self.key_events.insert(d.enrolled_seq.0, seen);
            }
            if let Some(r) = d.revoked_seq.filter(|r| inside(r.0)) {
                let seen = (device.clone(), d.key, KeyAction::Revoke, true);
                self.key_events.insert(r.0, seen);
            }
            for old in d.retired {
                self.removed_retired.insert((device.clone(), old));
            }
        }
        let at = crate::record::seq_key(self.table, last);
        if let Some(k) = store.last_key_at_or_before(Space::Config, &from, &at)? {
            let seq = be_u64(&k[from.len()..])?;
            if let Some(v) = store.get(Space::Config, &k)?.filter(|_| inside(seq)) {
                self.config = Some((seq, crate::config::decode_hash(&v)?));
            }
        }
        Ok(())
    }

    /// Whether `seq` lies in a range removed by retention.
    fn is_removed(&self, seq: u64) -> bool {
        self.removed.iter().any(|(f, l)| (*f..=*l).contains(&seq))
    }

    /// The chain's event at `seq`, verified, with hash `hash`: the first problem of the
    /// kept checkpoints at that seq, or of an earlier one whose signature batch this
    /// settled, with its seq.
    pub(crate) fn event(
        &mut self,
        seq: u64,
        event: &Event,
        hash: &Hash32,
    ) -> Result<Option<(u64, String)>, Error> {
        let problem = self.checkpoints_at(seq, event, hash)?;
        if let Some(p) = problem {
            return Ok(Some(self.settle().unwrap_or((seq, p))));
        }
        if self.pending.len() >= VERIFY_BATCH_MAX {
            return Ok(self.settle());
        }
        Ok(None)
    }

    /// Checks the signatures not yet checked, all at once: the first that fails (its seq
    /// and the problem), if any. Those that verify count as verified.
    pub(crate) fn settle(&mut self) -> Option<(u64, String)> {
        let pending = std::mem::take(&mut self.pending);
        let items: Vec<_> = pending
            .iter()
            .map(|p| (&p.key, p.message.as_slice(), &p.signature))
            .collect();
        let verdicts = schemas::attest::verify_many(&mut self.keys, &items);
        for (p, signed) in pending.iter().zip(verdicts) {
            if !signed {
                return Some((
                    p.seq,
                    format!(
                        "the kept checkpoint at seq {} is not signed by device {}'s key {}",
                        p.seq, p.device, p.key
                    ),
                ));
            }
            self.verified += 1;
            self.attested_seq = p.seq;
        }
        None
    }

    /// The kept checkpoints at `seq`: the first problem found without their signatures,
    /// which are queued in `pending`.
    fn checkpoints_at(
        &mut self,
        seq: u64,
        event: &Event,
        hash: &Hash32,
    ) -> Result<Option<String>, Error> {
        if let Some(k) = KeyEvent::of(&event.body) {
            let verifies = k.admin_signature_verifies(self.table);
            self.key_events
                .insert(seq, (k.device.clone(), *k.key, k.action, verifies));
            self.key_hashes.insert(seq, *hash);
        }
        if matches!(event.body, schemas::EventBody::TableOpened { .. }) {
            self.config = Some((seq, *hash));
        }
        while let Some((at, v)) = self.next_checkpoint_at_most(seq)? {
            if let Some(problem) = self.check_kept(seq, hash, at, &v) {
                return Ok(Some(problem));
            }
        }
        Ok(None)
    }

    /// Checks the checkpoint kept at `at` against the chain at `seq` and queues its
    /// signature; the problem, if it does not hold.
    fn check_kept(&mut self, seq: u64, hash: &Hash32, at: u64, v: &[u8]) -> Option<String> {
        let CheckpointRecord {
            bytes,
            key_enrolled_seq,
            ..
        } = match decode_checkpoint(v) {
            Ok(c) => c,
            Err(e) => return Some(format!("the kept checkpoint at seq {at}: {e}")),
        };
        let c = match Checkpoint::decode(&bytes) {
            Ok(c) => c,
            Err(e) => {
                return Some(format!(
                    "the kept checkpoint at seq {at} does not decode: {e}"
                ))
            }
        };
        if at < seq {
            return Some(format!(
                "a checkpoint is kept at seq {at}, which the chain did not reach in order"
            ));
        }
        if c.table != *self.table || c.head_seq.0 != seq || c.head_hash != *hash {
            return Some(format!(
                "the kept checkpoint at seq {seq} names table {} seq {} hash {}, the chain has {hash} there",
                c.table, c.head_seq.0, c.head_hash
            ));
        }
        // The enrollment it was verified against; for a record written before that
        // was kept, the device's latest enrollment so far.
        let enrollment = match key_enrolled_seq {
            Some(e) => self.key_events.get(&e.0).map(|k| (e.0, k)),
            None => self
                .key_events
                .iter()
                .rev()
                .find(|(_, (d, _, a, ok))| *d == c.device && *a == KeyAction::Enroll && *ok)
                .map(|(s, k)| (*s, k)),
        };
        let key = match enrollment {
            Some((_, (d, key, KeyAction::Enroll, true))) if *d == c.device => *key,
            _ => {
                return Some(format!(
                    "the kept checkpoint at seq {seq} of device {} names no admin-signed enrollment of it in the chain (at seq {})",
                    c.device,
                    key_enrolled_seq.map_or("none".to_string(), |s| s.0.to_string())
                ))
            }
        };
        if let Some(p) = self.state_problem(seq, &c, enrollment.map(|(e, _)| e)) {
            return Some(p);
        }
        debug_assert!(
            self.pending.len() < VERIFY_BATCH_MAX,
            "settled at the bound"
        );
        self.pending.push(PendingSignature {
            seq,
            message: c.signed_message(),
            device: c.device,
            key,
            signature: c.signature,
        });
        None
    }

    /// Why a kept v2 checkpoint's signed state is not the chain's so far, if it is not: the
    /// last `TableOpened`, and the enrollment it was verified against (`enrolled_at`).
    fn state_problem(&self, seq: u64, c: &Checkpoint, enrolled_at: Option<u64>) -> Option<String> {
        let s = c.state.as_ref()?;
        let config = self.config.map(|(q, h)| (Seq(q), h));
        let key_hash = self.key_hashes.get(&s.key_seq.0);
        // An enrollment removed by retention has no hash left to compare.
        let key_hash_ok = key_hash == Some(&s.key_hash) || self.is_removed(s.key_seq.0);
        let borne_out = config == Some((s.config_seq, s.config_hash))
            && enrolled_at == Some(s.key_seq.0)
            && key_hash_ok;
        (!borne_out).then(|| {
            format!(
                "the kept checkpoint at seq {seq} signs config seq {} and key enrollment seq {}, which the chain does not bear out",
                s.config_seq.0, s.key_seq.0
            )
        })
    }

    /// The next kept checkpoint if its seq is at most `seq`: (its seq, its record).
    fn next_checkpoint_at_most(&mut self, seq: u64) -> Result<Option<(u64, Vec<u8>)>, Error> {
        let at = match self.checkpoints.peek() {
            None => return Ok(None),
            Some(Err(_)) => {
                return Err(self
                    .checkpoints
                    .next()
                    .and_then(Result::err)
                    .expect("peeked an error"))
            }
            Some(Ok((k, _))) => be_u64(&k[table_key(self.table).len()..])?,
        };
        if at > seq {
            return Ok(None);
        }
        let (_, v) = self.checkpoints.next().expect("peeked")?;
        Ok(Some((at, v)))
    }

    /// After the whole chain (head `last`): a kept checkpoint beyond the head, or a
    /// register entry of this table the chain's key events do not bear out; the seq to
    /// name and the problem.
    pub(crate) fn finish(
        &mut self,
        store: &dyn crate::store::Store,
        last: u64,
    ) -> Result<Option<(u64, String)>, Error> {
        if let Some((at, _)) = self.next_checkpoint_at_most(u64::MAX)? {
            return Ok(Some((
                last + 1,
                format!("a checkpoint is kept at seq {at}, beyond the chain's head {last}"),
            )));
        }
        for entry in table_device_keys(store, self.table) {
            let Some((device, d)) = entry? else {
                return Ok(Some((1, "a key register entry is unreadable".to_string())));
            };
            let bears_out = |seq: u64, key: &PublicKey, action: KeyAction| {
                self.key_events
                    .get(&seq)
                    .is_some_and(|(dv, k, a, ok)| *dv == device && k == key && *a == action && *ok)
            };
            // A revocation of a device never enrolled has no enrollment (seq 0).
            let enrolled =
                d.enrolled_seq.0 == 0 || bears_out(d.enrolled_seq.0, &d.key, KeyAction::Enroll);
            let revoked = d
                .revoked_seq
                .is_none_or(|r| bears_out(r.0, &d.key, KeyAction::Revoke));
            let retired = d.retired.iter().all(|old| {
                self.removed_retired.contains(&(device.clone(), *old))
                    || self.key_events.values().any(|(dv, k, a, ok)| {
                        *dv == device && k == old && *a == KeyAction::Enroll && *ok
                    })
            });
            if !(enrolled && revoked && retired) {
                return Ok(Some((
                    d.enrolled_seq.0.max(1),
                    format!(
                        "the key register says device {device} holds key {} (enrolled at seq {}, revoked at {:?}, {} retired), which the chain's admin-signed key events do not bear out",
                        d.key,
                        d.enrolled_seq.0,
                        d.revoked_seq.map(|s| s.0),
                        d.retired.len()
                    ),
                )));
            }
        }
        Ok(None)
    }
}
