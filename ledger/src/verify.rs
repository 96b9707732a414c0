//! `verify`: recomputes every hash from genesis per table over the stored bytes and reports,
//! per table, either the verified head or the FIRST bad position and why. Detects modified,
//! deleted, inserted and reordered records (seq continuity, key/record agreement, hashes,
//! prev links, the persisted and in-memory heads), and each table's receipt over the stream
//! seqs and receive times no event hash covers (`crate::arrival`), against the one its
//! persisted head holds. Then recomputes the arrival chain over every append call: which
//! records each call stored, in what order, with what stream seqs and receive times, and
//! that no record is stored outside the calls. Then the quarantine chain over the
//! quarantine entries (`crate::quarantine`). Per table, too, the kept checkpoints and the
//! key register against the chain's key events (`crate::attest::AttestationCheck`): no hash
//! of the chain covers them, and they say what is attested. Tables are
//! independent chains, so they are verified on one thread per core
//! (`schemas::parallel::map_tables`); the report lists them in table order whatever the
//! threads. A day removed by retention (`crate::tier::removed`) is skipped: the chain goes
//! on from the head its seal proves, and its records' receipts and arrival hashes are
//! taken as stored.
//!
//! It cannot detect the removal of a table's newest records together with a matching
//! rewrite of its head and of the arrival chain, nor a whole table removed so: that needs a
//! digest handed to an outside party earlier (`digest`, `proofs::digest`), which
//! `verify --against` checks. Nor events forged beyond a table's head with its head, its
//! receipt and the arrival chain all rewritten to match (no hash here is keyed): a digest
//! shows that as growth; what vouches for a table's newest events is the device's signed
//! checkpoint (`crate::attest`, "not yet attested" until one covers them), which this
//! checks against the device's enrolled key, so forging one needs a device's or an
//! admin's private key.

use crate::error::Error;
use crate::faces::Verifier;
use crate::held_check::HeldReport;
use crate::quarantine::QuarantineVerdict;
use crate::read::decode_head;
use crate::record::{self, be_u64, split_table_key, table_key};
use crate::store::{Space, Store};
use crate::tier::removed::{Removed, RemovedRange};
use schemas::{chain::event_hash, codec, ChainHead, Hash32, TableId, GENESIS};
use std::collections::BTreeMap;

/// The verdict on the whole ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// One verdict per table, in table order.
    pub tables: Vec<TableVerdict>,
    /// The arrival chain over the append calls (`crate::arrival`).
    pub arrival: ArrivalVerdict,
    /// The quarantine chain over the quarantine entries (`crate::quarantine`).
    pub quarantine: QuarantineVerdict,
    /// Held events per table (`crate::held_check`).
    pub held: HeldReport,
    /// Days removed by retention (`crate::tier::removed`): each table's chain goes on
    /// from the head its seal proves.
    pub removed: Removed,
    /// Store reads that failed outside any one table's chain (listing the tables, the
    /// held events), each with what it stopped. A corrupt sled page fails here and in the
    /// verdicts of the tables it holds, never the whole report.
    pub store_errors: Vec<String>,
}

impl VerifyReport {
    /// Whether everything verifies: tables, arrival, quarantine and held events.
    pub fn is_ok(&self) -> bool {
        self.tables
            .iter()
            .all(|t| matches!(t, TableVerdict::Ok { .. }))
            && matches!(self.arrival, ArrivalVerdict::Ok { .. })
            && matches!(self.quarantine, QuarantineVerdict::Ok { .. })
            && self.held.is_ok()
            && self.removed.is_ok()
            && self.store_errors.is_empty()
    }

    /// What fails, in a few words: "2 of 16 tables, the arrival chain".
    pub fn failures(&self) -> String {
        let bad = self
            .tables
            .iter()
            .filter(|t| !matches!(t, TableVerdict::Ok { .. }))
            .count();
        let mut parts = Vec::new();
        if bad > 0 {
            parts.push(format!("{bad} of {} tables", self.tables.len()));
        }
        if !matches!(self.arrival, ArrivalVerdict::Ok { .. }) {
            parts.push("the arrival chain".to_string());
        }
        if !matches!(self.quarantine, QuarantineVerdict::Ok { .. }) {
            parts.push("the quarantine chain".to_string());
        }
        if !self.held.is_ok() {
            parts.push(format!("held events of {} tables", self.held.failed()));
        }
        if !self.removed.is_ok() {
            parts.push("removals by retention".to_string());
        }
        if !self.store_errors.is_empty() {
            parts.push(format!("{} store reads", self.store_errors.len()));
        }
        parts.join(", ")
    }
}

/// The verdict on the arrival chain: the stream seqs and receive times of the events, and
/// which call stored which records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArrivalVerdict {
    /// Every chained call's hash recomputes from its records and the last is the stored
    /// head. `legacy` calls were written before the chain existed (no hash).
    Ok {
        /// Calls whose arrival hash recomputes.
        calls: u64,
        /// Calls written before the chain existed, with no hash to check.
        legacy: u64,
        /// The last chained call and its hash.
        head: Option<(u64, Hash32)>,
    },
    /// The first call (by call id) whose arrival does not verify, and why.
    Bad {
        /// The call's id.
        call_id: u64,
        /// What does not verify.
        problem: String,
    },
}

/// One table's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableVerdict {
    /// The table's chain verifies from genesis to its head.
    Ok {
        /// The head recomputed from the records; it matches the persisted head.
        head: ChainHead,
        /// Events checked.
        events: u64,
        /// The receipt at the head, recomputed from the records (`crate::arrival`).
        receipt: Hash32,
        /// Whether the persisted head holds a receipt (and it matched). False for heads
        /// written before receipts: only the arrival chain and digests cover them then.
        receipt_in_head: bool,
        /// Kept checkpoints verified: each names the chain's hash at its seq and is signed
        /// by the key the chain enrolled for its device (`crate::attest::AttestationCheck`).
        checkpoints: u64,
        /// The highest seq a verified checkpoint names (0: none): events after it are not
        /// yet attested.
        attested_seq: u64,
    },
    /// `seq` is the first position that does not verify.
    Bad {
        /// The table concerned.
        table: TableId,
        /// The first seq that does not verify.
        seq: u64,
        /// What is wrong there.
        problem: VerifyProblem,
    },
}

/// Why a position does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyProblem {
    /// The record's bytes do not read.
    #[error("record unreadable: {0}")]
    Unreadable(String),
    /// The record's key names another first seq than its first event.
    #[error("record key says first seq {key_seq}, the record starts at {record_seq}")]
    KeyMismatch {
        /// The first seq in the key.
        key_seq: u64,
        /// The first event's seq.
        record_seq: u64,
    },
    /// A seq is skipped or repeated.
    #[error("expected seq {expected}, found {found}")]
    SeqDiscontinuity {
        /// The seq that comes next in the chain.
        expected: u64,
        /// The seq stored there.
        found: u64,
    },
    /// The stored event bytes do not decode.
    #[error("stored bytes do not decode: {0}")]
    Undecodable(String),
    /// The stored bytes decode to an event of another table or seq.
    #[error("stored bytes are an event of table {table} seq {seq}")]
    WrongEvent {
        /// The table the bytes name.
        table: TableId,
        /// The seq the bytes name.
        seq: u64,
    },
    /// The event's prev is not the previous event's hash.
    #[error("prev {found} does not match the previous event's hash {expected}")]
    PrevMismatch {
        /// The previous event's hash.
        expected: Hash32,
        /// The prev the event names.
        found: Hash32,
    },
    /// The stored hash is not the hash of the stored bytes.
    #[error("stored hash {stored} differs from the recomputed {computed}")]
    HashMismatch {
        /// The hash stored beside the bytes.
        stored: Hash32,
        /// The hash of the bytes.
        computed: Hash32,
    },
    /// A field stored beside the bytes differs from the decoded event.
    #[error("stored {field} differs from the event's bytes")]
    FieldMismatch {
        /// Which field: `occurred_at_ns` or `round`.
        field: &'static str,
    },
    /// The persisted head's receipt differs from the one recomputed over the records.
    #[error("the persisted head's receipt {stored} differs from {computed}, recomputed over the stream seqs and receive times of events 1..={head_seq}: one of them was edited (the arrival chain names the call)")]
    ReceiptMismatch {
        /// The head's seq.
        head_seq: u64,
        /// The receipt in the persisted head.
        stored: Hash32,
        /// The receipt recomputed from the records.
        computed: Hash32,
    },
    #[error(
        "chain ends at seq {records_seq} but the {which} head says seq {head_seq} ({head_hash})"
    )]
    /// The records and a head disagree on where the chain ends.
    HeadMismatch {
        /// Which head: `in-memory` or `persisted`.
        which: &'static str,
        /// The seq the records end at.
        records_seq: u64,
        /// The seq the head names.
        head_seq: u64,
        /// The hash the head names.
        head_hash: Hash32,
    },
    /// The round index (`Space::Round`, `Space::RoundTime`) disagrees with the records.
    /// What evidence windows and the API's round lookups read, so an edit there would
    /// shorten or move a round unseen.
    #[error("round index: {0}")]
    RoundIndex(String),
    /// The config index (`Space::Config`) disagrees with the records' `TableOpened` events.
    /// What round views, bundles and the check of v2 checkpoints read as the config in force.
    #[error("config index: {0}")]
    ConfigIndex(String),
    /// A kept checkpoint or a key register entry that the chain does not bear out
    /// (`crate::attest::AttestationCheck`): what says which events a device vouched for.
    #[error("attestation: {0}")]
    Attestation(String),
    /// The store failed while the table was read (a corrupt sled page, an I/O error). The
    /// verdict's seq is then 0: where in the chain the read failed is not known.
    #[error("the store failed while reading this table (position unknown): {0}")]
    StoreRead(String),
}

impl Verifier<'_> {
    /// Verifies every table's chain. `Err` only for store failures; damage is in the report.
    pub fn verify(&self) -> Result<VerifyReport, Error> {
        let mem = self.lock().heads.clone();
        Ok(verify_store(self.store.as_ref(), Some(&mem), &BTreeMap::new())?.0)
    }
}

/// Verifies every table's chain in a store, without loading the ledger's state (so a
/// ledger whose heads or quarantine no longer parse can still be verified): the persisted
/// heads, and `mem` (the in-memory heads of an open ledger) when given, must agree with the
/// records. Also returns the hash and the receipt the store holds at each `(table, seq)` of
/// `hashes_at` whose table verifies up to that seq (for the digest consistency check).
pub fn verify_store(
    store: &dyn Store,
    mem: Option<&BTreeMap<TableId, ChainHead>>,
    hashes_at: &BTreeMap<TableId, u64>,
) -> Result<(VerifyReport, BTreeMap<TableId, AtSeq>), Error> {
    let mut store_errors = Vec::new();
    let (tables, bad_keys) = list_tables(store, mem, &mut store_errors);
    let mut removed = crate::tier::removed::removed_days(store)?;
    // Tables are independent chains: spread over the cores, verdicts kept in table order.
    let tables: Vec<_> = tables.into_iter().collect();
    let verdicts = schemas::parallel::map_tables(
        &tables,
        schemas::parallel::default_workers(),
        |(table, (m, persisted))| {
            let want = hashes_at.get(table).copied();
            let heads = Heads {
                mem: m.clone(),
                check_mem: mem.is_some(),
                persisted: persisted.clone(),
            };
            verify_table(store, table, heads, removed.ranges(table), want)
                .or_else(|e| store_read_failed(table, e))
        },
    );
    let mut out = Vec::with_capacity(tables.len());
    let mut found = BTreeMap::new();
    for ((table, _), verdict) in tables.into_iter().zip(verdicts) {
        let (verdict, at) = verdict?;
        if let Some(h) = at {
            found.insert(table, h);
        }
        out.push(verdict);
    }
    out.extend(bad_keys);
    let (arrival, removed_calls) = arrival_or_problem(store);
    removed.calls_unchecked = removed_calls;
    let quarantine =
        crate::quarantine::verify_quarantine(store).unwrap_or_else(|e| QuarantineVerdict::Bad {
            problem: format!("the store failed while reading the quarantine: {e}"),
        });
    let heads: BTreeMap<TableId, u64> = out
        .iter()
        .filter_map(|t| match t {
            TableVerdict::Ok { head, .. } => Some((head.table.clone(), head.seq.0)),
            TableVerdict::Bad { .. } => None,
        })
        .collect();
    let held = crate::held_check::verify_held(store, &heads).unwrap_or_else(|e| {
        store_errors.push(format!("held events not checked: {e}"));
        HeldReport::default()
    });
    Ok((
        VerifyReport {
            tables: out,
            arrival,
            quarantine,
            held,
            removed,
            store_errors,
        },
        found,
    ))
}

/// The arrival chain's verdict and the calls it left unchecked; a store that fails while
/// reading it makes the verdict bad, naming the failure.
fn arrival_or_problem(store: &dyn Store) -> (ArrivalVerdict, u64) {
    arrival_within(store, ARRIVAL_WAITING_MAX).unwrap_or_else(|e| {
        let problem = format!("the store failed while reading the arrival index: {e}");
        (
            ArrivalVerdict::Bad {
                call_id: 0,
                problem,
            },
            0,
        )
    })
}

/// Each table of a store and what it holds of it: its in-memory head (when `mem` is
/// given) and its persisted head. Keys that do not read are verdicts of their own.
type Listed = BTreeMap<TableId, (Option<ChainHead>, Option<PersistedHead>)>;

/// A table whose read failed in the store: a verdict of its own, so the other tables'
/// verdicts still stand.
fn store_read_failed(table: &TableId, e: Error) -> Result<(TableVerdict, Option<AtSeq>), Error> {
    let verdict = TableVerdict::Bad {
        table: table.clone(),
        seq: 0,
        problem: VerifyProblem::StoreRead(e.to_string()),
    };
    Ok((verdict, None))
}

/// Tables = those with a persisted head, those in memory, and those with records. A store
/// read that fails ends that listing, named in `store_errors`: the tables found so far are
/// still verified.
fn list_tables(
    store: &dyn Store,
    mem: Option<&BTreeMap<TableId, ChainHead>>,
    store_errors: &mut Vec<String>,
) -> (Listed, Vec<TableVerdict>) {
    let mut tables: Listed = BTreeMap::new();
    for (t, h) in mem.into_iter().flatten() {
        tables.entry(t.clone()).or_default().0 = Some(h.clone());
    }
    let mut bad_keys: Vec<TableVerdict> = Vec::new();
    for kv in store.range(Space::Head, &[], None) {
        let (k, v) = match kv {
            Ok(kv) => kv,
            Err(e) => {
                store_errors.push(format!("listing the tables' heads stopped: {e}"));
                break;
            }
        };
        match split_table_key(&k) {
            Ok((t, [])) => {
                // An unreadable persisted head reads as "no head": reported as a mismatch.
                let h = decode_head(t.clone(), &v)
                    .unwrap_or_else(|_| (ChainHead::empty(t.clone()), None));
                tables.entry(t).or_default().1 = Some(h);
            }
            Ok(_) => bad_keys.push(bad_key(crate::record::corrupt(
                "head key has trailing bytes",
            ))),
            Err(e) => bad_keys.push(bad_key(e)),
        }
    }
    let mut last_table: Option<TableId> = None;
    for k in store.keys(Space::Batch, &[], None) {
        let k = match k {
            Ok(k) => k,
            Err(e) => {
                store_errors.push(format!("listing the tables' records stopped: {e}"));
                break;
            }
        };
        match split_table_key(&k) {
            Ok((t, _)) => {
                if last_table.as_ref() != Some(&t) {
                    tables.entry(t.clone()).or_default();
                    last_table = Some(t);
                }
            }
            Err(e) => bad_keys.push(bad_key(e)),
        }
    }
    (tables, bad_keys)
}

/// Most arrival entries `verify_arrival` holds (keys only) while it waits for an earlier
/// call's entry. Entries come out of call order only after a read-back, by a few calls; a
/// call missing for this many means its entry is gone.
pub const ARRIVAL_WAITING_MAX: usize = 65_536;

/// Recomputes the arrival chain (`crate::arrival`) over every call, in call-id order. Entries
/// are keyed by their smallest stream seq, which follows call order except after a read-back,
/// so an entry that comes early waits (its key only) until the calls before it are checked.
pub fn verify_arrival(store: &dyn Store) -> Result<ArrivalVerdict, Error> {
    verify_arrival_within(store, ARRIVAL_WAITING_MAX)
}

/// `verify_arrival` holding at most `waiting_max` entries that came before their turn
/// (0: none may; entries in call order never wait).
pub fn verify_arrival_within(
    store: &dyn Store,
    waiting_max: usize,
) -> Result<ArrivalVerdict, Error> {
    Ok(arrival_within(store, waiting_max)?.0)
}

/// `verify_arrival_within`, and how many calls it took on trust: every record they list
/// was removed by retention, so only their stored hash links the chain on.
fn arrival_within(store: &dyn Store, waiting_max: usize) -> Result<(ArrivalVerdict, u64), Error> {
    let mut chain = ArrivalCheck::default();
    let problem = match chain_calls(store, &mut chain, waiting_max)? {
        Some(p) => Some((chain.next, p)),
        None => match head_problem(store, &chain)? {
            Some(p) => Some(p),
            None => unlisted_records(store, &chain)?,
        },
    };
    let verdict = match problem {
        Some((call_id, problem)) => ArrivalVerdict::Bad { call_id, problem },
        None => ArrivalVerdict::Ok {
            calls: chain.calls,
            legacy: chain.legacy,
            head: chain.last,
        },
    };
    Ok((verdict, chain.removed))
}

/// Chains every append call's arrival entry in call-id order (keys come in key order, so
/// at most `waiting_max` wait for an earlier call); the first problem, if any.
fn chain_calls(
    store: &dyn Store,
    chain: &mut ArrivalCheck,
    waiting_max: usize,
) -> Result<Option<String>, Error> {
    let mut waiting: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    for k in store.keys(Space::Arrival, &[], None) {
        let k = k?;
        let id = match crate::arrival::call_id_of_key(&k) {
            Ok(id) => id,
            Err(e) => return Ok(Some(format!("an arrival key is unreadable: {e}"))),
        };
        waiting.insert(id, k);
        while let Some(k) = waiting.remove(&chain.next) {
            if let Some(problem) = chain.call(store, &k)? {
                return Ok(Some(problem));
            }
            chain.next += 1;
        }
        if waiting.len() > waiting_max {
            return Ok(Some(format!(
                "no arrival entry for call {} before {} later calls' entries: the call's index entry was removed",
                chain.next,
                waiting.len()
            )));
        }
    }
    Ok(waiting.keys().next().map(|later| {
        format!(
            "no arrival entry for call {}, though call {later} has one: the call's index entry was removed",
            chain.next
        )
    }))
}

/// The stored arrival head against the chain's last call.
fn head_problem(store: &dyn Store, chain: &ArrivalCheck) -> Result<Option<(u64, String)>, Error> {
    let stored = store
        .get(Space::Meta, crate::arrival::HEAD_KEY)?
        .map(|v| crate::arrival::decode_head(&v));
    Ok(match (stored, chain.last) {
        (None, None) => None,
        (Some(Ok(s)), Some(last)) if s == last => None,
        (Some(Ok((id, h))), Some((last_id, last_h))) => Some((
            last_id,
            format!("the stored arrival head is call {id} {h}, the chain ends at call {last_id} {last_h}"),
        )),
        (Some(Ok((id, h))), None) => Some((
            id,
            format!("the stored arrival head is call {id} {h}, but no call is chained"),
        )),
        (Some(Err(e)), _) => Some((chain.next, format!("the stored arrival head is unreadable: {e}"))),
        (None, Some((last_id, _))) => Some((
            last_id,
            "calls are chained but no arrival head is stored".to_string(),
        )),
    })
}

/// Every record must be one an append call listed: a record added beside the calls
/// (events forged beyond a table's head, its head and receipt rewritten to match) is
/// otherwise in no hash but its own chain's. Each listed record exists
/// (`ArrivalCheck::call`), so equal counts mean none is unlisted. A ledger from before
/// the arrival index has no entries at all, and nothing to compare.
fn unlisted_records(
    store: &dyn Store,
    chain: &ArrivalCheck,
) -> Result<Option<(u64, String)>, Error> {
    if chain.calls + chain.legacy == 0 {
        return Ok(None);
    }
    let mut stored = 0u64;
    for k in store.keys(Space::Batch, &[], None) {
        k?;
        stored += 1;
    }
    Ok((stored != chain.records).then(|| {
        let how = if stored > chain.records { "added" } else { "removed" };
        let problem = format!(
            "{stored} records are stored, the append calls list {}: records were {how} outside any append call",
            chain.records
        );
        (chain.next, problem)
    }))
}

/// The arrival chain as far as it is checked.
struct ArrivalCheck {
    /// The call id expected next (calls that store events are numbered from 0).
    next: u64,
    prev: Hash32,
    calls: u64,
    legacy: u64,
    last: Option<(u64, Hash32)>,
    /// Records the entries checked so far list (legacy entries' too).
    records: u64,
    /// Calls with a record removed by retention: their stored hash is taken as it is.
    removed: u64,
}

impl Default for ArrivalCheck {
    fn default() -> ArrivalCheck {
        ArrivalCheck {
            next: 0,
            prev: Hash32::ZERO,
            calls: 0,
            legacy: 0,
            last: None,
            records: 0,
            removed: 0,
        }
    }
}

impl ArrivalCheck {
    /// Checks call `self.next`, whose entry has key `k`: `Some(problem)` if it does not
    /// verify.
    fn call(&mut self, store: &dyn Store, k: &[u8]) -> Result<Option<String>, Error> {
        let Some(v) = store.get(Space::Arrival, k)? else {
            return Ok(Some(
                "its arrival entry vanished while verifying".to_string(),
            ));
        };
        let entry = match crate::arrival::decode_entry(&v) {
            Ok(e) => e,
            Err(e) => return Ok(Some(format!("its arrival entry is unreadable: {e}"))),
        };
        self.records += entry.records.len() as u64;
        let Some(stored) = entry.hash else {
            if self.last.is_some() {
                return Ok(Some(
                    "its arrival entry has no hash, after chained calls".to_string(),
                ));
            }
            self.legacy += 1;
            return Ok(None);
        };
        let mut hasher = crate::arrival::ArrivalHasher::new(&self.prev, self.next);
        let mut events = 0u64;
        let mut removed = false;
        for key in &entry.records {
            let facts = match store.arrival_facts(key) {
                Ok(Some(facts)) => facts,
                Err(Error::RetentionRemoved { .. }) => {
                    removed = true;
                    continue;
                }
                Ok(None) => return Ok(Some("a record it lists is missing".to_string())),
                Err(e) => return Ok(Some(format!("a record it lists is unreadable: {e}"))),
            };
            for f in &facts {
                hasher.event(&f.hash, f.stream_seq, f.received_at_ns);
                events += 1;
            }
        }
        let computed = if removed {
            self.removed += 1;
            stored
        } else {
            hasher.finish()
        };
        if computed != stored {
            return Ok(Some(format!(
                "arrival hash {stored} differs from the recomputed {computed}: a stream seq or receive time of its {events} events, or which records it lists, was changed"
            )));
        }
        self.prev = computed;
        self.calls += 1;
        self.last = Some((self.next, computed));
        Ok(None)
    }
}

/// A persisted head and its receipt (`None`: written before receipts).
type PersistedHead = (ChainHead, Option<Hash32>);

/// What a table holds at one seq: the event's hash and the receipt after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtSeq {
    /// The event's hash at the seq.
    pub hash: Hash32,
    /// The table's receipt after the event (`crate::arrival`).
    pub receipt: Hash32,
}

/// The verdict for a kept checkpoint found bad at `seq` after the pass went beyond it;
/// what the table holds at `want` only if `want` lies before it.
fn attestation_failed(
    table: &TableId,
    seq: u64,
    problem: String,
    at: Option<AtSeq>,
    want: Option<u64>,
) -> (TableVerdict, Option<AtSeq>) {
    let verdict = TableVerdict::Bad {
        table: table.clone(),
        seq,
        problem: VerifyProblem::Attestation(problem),
    };
    (verdict, at.filter(|_| want.is_some_and(|w| w < seq)))
}

/// A table's heads to check the records against.
struct Heads {
    /// The in-memory head, checked when `check_mem`.
    mem: Option<ChainHead>,
    check_mem: bool,
    persisted: Option<PersistedHead>,
}

/// One table: its verdict, and what it holds at seq `want` if the chain verified up to it.
/// `removed`: the table's ranges removed by retention, which the chain skips.
fn verify_table(
    store: &dyn Store,
    table: &TableId,
    heads: Heads,
    removed: &[RemovedRange],
    want: Option<u64>,
) -> Result<(TableVerdict, Option<AtSeq>), Error> {
    let Heads {
        mem,
        check_mem,
        persisted,
    } = heads;
    let mut pass = Pass::new(table, want, removed);
    let mut attestation = crate::attest::AttestationCheck::new(store, table);
    let stopped = match pass.run(store, &mut attestation)? {
        Err(Stop::Attestation(seq, p)) => {
            return Ok(attestation_failed(table, seq, p, pass.at, want))
        }
        Err(Stop::Bad(seq, p)) => Some((seq, p)),
        Ok(()) => None,
    };
    // Signatures are checked in batches (`AttestationCheck`), so checkpoints before the
    // pass's end or its first problem may still be unchecked: one that fails lies before
    // that problem and is the first bad position, as it would be had each been checked
    // when the pass met it.
    if let Some((seq, p)) = attestation.settle() {
        return Ok(attestation_failed(table, seq, p, pass.at, want));
    }
    let at = pass.at;
    let bad = |(seq, problem): (u64, VerifyProblem)| {
        let verdict = TableVerdict::Bad {
            table: table.clone(),
            seq,
            problem,
        };
        Ok((verdict, at))
    };
    if let Some(stop) = stopped {
        return bad(stop);
    }
    let (persisted_head, stored_receipt) = match persisted {
        Some((h, r)) => (Some(h), r),
        None => (None, None),
    };
    if let Some(stop) = pass.check_heads(mem, check_mem, persisted_head) {
        return bad(stop);
    }
    // A receipt runs from seq 1: past a removed range it cannot be recomputed.
    let stored_receipt = stored_receipt.filter(|_| pass.jumped.is_none());
    if let Some(stop) = pass.check_indexes(store, &mut attestation, stored_receipt)? {
        return bad(stop);
    }
    let last = pass.next - 1;
    let verdict = TableVerdict::Ok {
        head: ChainHead {
            table: table.clone(),
            seq: schemas::Seq(last),
            hash: pass.prev,
        },
        events: last,
        receipt: pass.receipt,
        receipt_in_head: stored_receipt.is_some(),
        checkpoints: attestation.verified,
        attested_seq: attestation.attested_seq,
    };
    Ok((verdict, at))
}

/// Why the pass over a table's records stopped early.
enum Stop {
    /// The first bad position and what is wrong there.
    Bad(u64, VerifyProblem),
    /// A kept checkpoint failed at this seq.
    Attestation(u64, String),
}

/// The pass over one table's records: the chain and receipt so far, and the indexes the
/// append path should have written, rebuilt from the records.
struct Pass<'a> {
    table: &'a TableId,
    want: Option<u64>,
    /// The table's ranges removed by retention, and the last one the chain skipped.
    removed: &'a [RemovedRange],
    jumped: Option<&'a RemovedRange>,
    /// The hash of the last stored event inside the skipped range (a record that
    /// straddles the removed day's end keeps its first events).
    tail: Option<Hash32>,
    prev: Hash32,
    receipt: Hash32,
    /// The next seq the chain must continue with.
    next: u64,
    /// Each round's span in the records.
    rounds: BTreeMap<u64, RoundSpan>,
    /// Each `TableOpened`'s seq and hash.
    configs: BTreeMap<u64, Hash32>,
    /// What the table holds at `want`, once the pass reached it.
    at: Option<AtSeq>,
}

impl<'a> Pass<'a> {
    fn new(table: &'a TableId, want: Option<u64>, removed: &'a [RemovedRange]) -> Pass<'a> {
        Pass {
            table,
            want,
            removed,
            jumped: None,
            tail: None,
            prev: GENESIS,
            receipt: Hash32::ZERO,
            next: 1,
            rounds: BTreeMap::new(),
            configs: BTreeMap::new(),
            at: None,
        }
    }

    /// Reads every record of the table in seq order until the first problem.
    fn run(
        &mut self,
        store: &dyn Store,
        attestation: &mut crate::attest::AttestationCheck,
    ) -> Result<Result<(), Stop>, Error> {
        let tk = table_key(self.table);
        let mut end = tk.clone();
        end.extend_from_slice(&[0xff; 9]);
        for kv in store.range(Space::Batch, &tk, Some(&end)) {
            let events = match kv {
                Ok((k, v)) => match self.record(k.get(tk.len()..).unwrap_or_default(), &v) {
                    Ok(events) => events,
                    Err(p) => return Ok(Err(Stop::Bad(p.0, p.1))),
                },
                // A record whose bytes in the value log are damaged or gone: the chain is
                // unreadable from the first seq not yet verified.
                Err(Error::CorruptRecord { detail }) => {
                    return Ok(Err(Stop::Bad(self.next, VerifyProblem::Unreadable(detail))))
                }
                Err(Error::RetentionRemoved { day, .. }) => {
                    if let Err(p) = self.skip_removed(store, attestation, &day)? {
                        return Ok(Err(Stop::Bad(self.next, p)));
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            for e in events {
                let outcome = match self.jumped {
                    Some(r) if e.seq.0 < self.next && e.seq.0 >= r.first_seq => {
                        self.tail_event(r, &e).map_err(|p| Stop::Bad(e.seq.0, p))
                    }
                    _ => self.event(attestation, &e)?,
                };
                if let Err(stop) = outcome {
                    return Ok(Err(stop));
                }
            }
        }
        Ok(Ok(()))
    }

    /// A record of removed `day`: the chain goes on after the day's range from the head
    /// its seal proves. Later records of the same range pass.
    fn skip_removed(
        &mut self,
        store: &dyn Store,
        attestation: &mut crate::attest::AttestationCheck,
        day: &str,
    ) -> Result<Result<(), VerifyProblem>, Error> {
        let Some(r) = self.removed.iter().find(|r| r.day == day) else {
            let why = format!("its records of day {day} are gone without a valid removal act");
            return Ok(Err(VerifyProblem::Unreadable(why)));
        };
        if self.jumped == Some(r) && self.next == r.last_seq + 1 {
            return Ok(Ok(()));
        }
        if !(r.first_seq..=r.last_seq).contains(&self.next) {
            let why = format!(
                "a record points into removed day {day} (seqs {}..={}) where seq {} belongs",
                r.first_seq, r.last_seq, self.next
            );
            return Ok(Err(VerifyProblem::Unreadable(why)));
        }
        attestation.skip_removed(store, self.next, r.last_seq)?;
        self.prev = r.head_hash;
        self.next = r.last_seq + 1;
        self.jumped = Some(r);
        self.tail = None;
        Ok(Ok(()))
    }

    /// A stored event inside the skipped range: it chains from its own `prev` to the
    /// next, and the range's last event has the sealed head hash.
    fn tail_event(
        &mut self,
        r: &RemovedRange,
        e: &crate::record::StoredEvent,
    ) -> Result<(), VerifyProblem> {
        let event = match codec::decode(&e.bytes) {
            Ok((ev, _)) => ev,
            Err(err) => return Err(VerifyProblem::Undecodable(err.to_string())),
        };
        if event.table != *self.table || event.seq != e.seq {
            return Err(VerifyProblem::WrongEvent {
                table: event.table,
                seq: event.seq.0,
            });
        }
        if let Some(expected) = self.tail.filter(|p| *p != event.prev) {
            let found = event.prev;
            return Err(VerifyProblem::PrevMismatch { expected, found });
        }
        let computed = event_hash(&event.prev, &e.bytes);
        let sealed = e.seq.0 == r.last_seq && computed != r.head_hash;
        if computed != e.hash || sealed {
            let stored = if sealed { r.head_hash } else { e.hash };
            return Err(VerifyProblem::HashMismatch { stored, computed });
        }
        self.tail = Some(computed);
        if matches!(event.body, schemas::EventBody::TableOpened { .. }) {
            self.configs.insert(e.seq.0, e.hash);
        }
        self.note_round(e.seq.0, e);
        Ok(())
    }

    /// A record's events, checked against its key.
    fn record(
        &self,
        key: &[u8],
        value: &[u8],
    ) -> Result<Vec<crate::record::StoredEvent>, (u64, VerifyProblem)> {
        let next = self.next;
        let Ok(key_seq) = be_u64(key) else {
            return Err((next, VerifyProblem::Unreadable("record key".into())));
        };
        let events = record::decode_record(value)
            .map_err(|e| (key_seq.min(next), VerifyProblem::Unreadable(e.to_string())))?;
        // Never written empty (a call writes a record only for a table it stores events
        // of); one slipped in would otherwise pass as seq 0, adding nothing.
        let Some(first) = events.first() else {
            let why = "a record holds no event".to_string();
            return Err((next, VerifyProblem::Unreadable(why)));
        };
        let record_seq = first.seq.0;
        if key_seq != record_seq {
            let problem = VerifyProblem::KeyMismatch {
                key_seq,
                record_seq,
            };
            return Err((key_seq.min(next), problem));
        }
        Ok(events)
    }

    /// One stored event: the chain, attestation, the indexes' view and `want`.
    fn event(
        &mut self,
        attestation: &mut crate::attest::AttestationCheck,
        e: &crate::record::StoredEvent,
    ) -> Result<Result<(), Stop>, Error> {
        let next = self.next;
        // The first bad position is the first seq the stored chain fails to continue
        // with, even when the record holds a lower seq there (a repeat).
        let event = match check_event(self.table, next, &self.prev, e) {
            Ok(event) => event,
            Err(p) => return Ok(Err(Stop::Bad(next, p))),
        };
        if let Some((seq, p)) = attestation.event(next, &event, &e.hash)? {
            return Ok(Err(Stop::Attestation(seq, p)));
        }
        if matches!(event.body, schemas::EventBody::TableOpened { .. }) {
            self.configs.insert(next, e.hash);
        }
        self.prev = e.hash;
        self.receipt = proofs::digest::receipt_next(&self.receipt, e.stream_seq, e.received_at_ns);
        self.note_round(next, e);
        if self.want == Some(next) {
            self.at = Some(AtSeq {
                hash: self.prev,
                receipt: self.receipt,
            });
        }
        self.next += 1;
        Ok(Ok(()))
    }

    /// The event at `seq` in its round's span.
    fn note_round(&mut self, seq: u64, e: &crate::record::StoredEvent) {
        let Some(r) = e.round else {
            return;
        };
        self.rounds
            .entry(r.0)
            .and_modify(|s| {
                s.last_seq = seq;
                s.last_occurred_at_ns = e.occurred_at_ns;
            })
            .or_insert(RoundSpan {
                first_seq: seq,
                last_seq: seq,
                first_occurred_at_ns: e.occurred_at_ns,
                last_occurred_at_ns: e.occurred_at_ns,
            });
    }

    /// The in-memory and persisted heads against the records' last event.
    fn check_heads(
        &self,
        mem: Option<ChainHead>,
        check_mem: bool,
        persisted: Option<ChainHead>,
    ) -> Option<(u64, VerifyProblem)> {
        let last = self.next - 1;
        let heads = [
            ("in-memory", mem, check_mem),
            ("persisted", persisted, true),
        ];
        for (which, h, check) in heads {
            let (head_seq, head_hash) = h.map(|h| (h.seq.0, h.hash)).unwrap_or((0, GENESIS));
            if check && (head_seq != last || head_hash != self.prev) {
                let problem = VerifyProblem::HeadMismatch {
                    which,
                    records_seq: last,
                    head_seq,
                    head_hash,
                };
                return Some((last.min(head_seq) + 1, problem));
            }
        }
        None
    }

    /// The stored receipt, the round and config indexes, and the kept checkpoints.
    fn check_indexes(
        &self,
        store: &dyn Store,
        attestation: &mut crate::attest::AttestationCheck,
        stored_receipt: Option<Hash32>,
    ) -> Result<Option<(u64, VerifyProblem)>, Error> {
        let last = self.next - 1;
        if let Some(stored) = stored_receipt.filter(|s| *s != self.receipt) {
            let problem = VerifyProblem::ReceiptMismatch {
                head_seq: last,
                stored,
                computed: self.receipt,
            };
            return Ok(Some((last, problem)));
        }
        let removed = |seq: u64| {
            self.removed
                .iter()
                .any(|r| (r.first_seq..=r.last_seq).contains(&seq))
        };
        let rounds = RoundsSeen {
            spans: &self.rounds,
            removed: &removed,
        };
        if let Some((seq, p)) = check_round_index(store, self.table, &rounds)? {
            return Ok(Some((seq, VerifyProblem::RoundIndex(p))));
        }
        let configs = &self.configs;
        let skip = |seq: u64| removed(seq) && !configs.contains_key(&seq);
        if let Some((seq, p)) = crate::config::check_index(store, self.table, configs, skip)? {
            return Ok(Some((seq, VerifyProblem::ConfigIndex(p))));
        }
        if let Some((seq, p)) = attestation.finish(store, last)? {
            return Ok(Some((seq, VerifyProblem::Attestation(p))));
        }
        Ok(None)
    }
}

/// A round's first and last event in the records, and their device times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RoundSpan {
    first_seq: u64,
    last_seq: u64,
    first_occurred_at_ns: i64,
    last_occurred_at_ns: i64,
}

impl std::fmt::Display for RoundSpan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "seqs {}..={} (device times {}..={})",
            self.first_seq, self.last_seq, self.first_occurred_at_ns, self.last_occurred_at_ns
        )
    }
}

/// The rounds a pass saw, and which seqs were removed by retention.
struct RoundsSeen<'a> {
    spans: &'a BTreeMap<u64, RoundSpan>,
    removed: &'a dyn Fn(u64) -> bool,
}

/// Compares the table's round index with the rounds its verified records hold: every
/// round summary must be the records' span of that round, none missing, none extra, and
/// each round listed by its start time. A round with events removed by retention is
/// compared by its stored part. The first disagreement, by round, and the seq to name
/// (the round's first event).
fn check_round_index(
    store: &dyn Store,
    table: &TableId,
    seen: &RoundsSeen,
) -> Result<Option<(u64, String)>, Error> {
    let rounds = seen.spans;
    let mut stored = match stored_round_index(store, table, rounds)? {
        Ok(stored) => stored,
        Err(problem) => return Ok(Some(problem)),
    };
    let mut problems = removed_round_problems(&stored, seen);
    // Rounds with events removed by retention are settled above.
    let touched = |s: &RoundSpan| (seen.removed)(s.first_seq) || (seen.removed)(s.last_seq);
    let settled: std::collections::BTreeSet<u64> = stored
        .iter()
        .filter(|(_, s)| touched(s))
        .map(|(r, _)| *r)
        .collect();
    stored.retain(|r, _| !settled.contains(r));
    let unsettled = rounds.iter().filter(|(r, _)| !settled.contains(r));
    for (round, span) in unsettled {
        match stored.get(round) {
            None => problems.push((
                span.first_seq,
                format!("round {round} ({span}) is not in the round index"),
            )),
            Some(s) if s != span => problems.push((
                span.first_seq.min(s.first_seq.max(1)),
                format!("the index says round {round} is {s}, the records {span}"),
            )),
            Some(_) => {
                let mut by_time = record::ord_i64(span.first_occurred_at_ns).to_vec();
                by_time.extend_from_slice(&record::seq_key(table, *round));
                if store.get(Space::RoundTime, &by_time)?.is_none() {
                    problems.push((
                        span.first_seq,
                        format!("round {round} ({span}) is not in the index by start time"),
                    ));
                }
            }
        }
    }
    for (round, s) in &stored {
        if !rounds.contains_key(round) {
            problems.push((
                s.first_seq.max(1),
                format!("the index lists round {round} ({s}), the records hold no event of it"),
            ));
        }
    }
    Ok(problems.into_iter().min_by_key(|(seq, _)| *seq))
}

/// A disagreement: the seq to name, and what is wrong.
type Problem = (u64, String);

/// The table's round index as stored, or the first entry that does not read (with the
/// seq to name).
fn stored_round_index(
    store: &dyn Store,
    table: &TableId,
    rounds: &BTreeMap<u64, RoundSpan>,
) -> Result<Result<BTreeMap<u64, RoundSpan>, Problem>, Error> {
    let tk = table_key(table);
    let mut end = tk.clone();
    end.extend_from_slice(&[0xff; 9]);
    let mut stored: BTreeMap<u64, RoundSpan> = BTreeMap::new();
    for kv in store.range(Space::Round, &tk, Some(&end)) {
        let (k, v) = kv?;
        let round = match k.get(tk.len()..).map(be_u64) {
            Some(Ok(r)) => r,
            _ => return Ok(Err((1, "a round key is unreadable".to_string()))),
        };
        let s = match crate::RoundSummary::decode(schemas::RoundId(round), &v) {
            Ok(s) => s,
            Err(e) => {
                let at = rounds.get(&round).map_or(1, |r| r.first_seq);
                return Ok(Err((
                    at,
                    format!("round {round}'s summary is unreadable: {e}"),
                )));
            }
        };
        let span = RoundSpan {
            first_seq: s.first_seq.0,
            last_seq: s.last_seq.0,
            first_occurred_at_ns: s.first_occurred_at_ns,
            last_occurred_at_ns: s.last_occurred_at_ns,
        };
        stored.insert(round, span);
    }
    Ok(Ok(stored))
}

/// The indexed rounds with events removed by retention whose stored part disagrees with
/// the index.
fn removed_round_problems(
    stored: &BTreeMap<u64, RoundSpan>,
    seen: &RoundsSeen,
) -> Vec<(u64, String)> {
    let mut problems = Vec::new();
    let touched = |s: &RoundSpan| (seen.removed)(s.first_seq) || (seen.removed)(s.last_seq);
    for (round, s) in stored.iter().filter(|(_, s)| touched(s)) {
        let gone = (seen.removed)(s.first_seq) && (seen.removed)(s.last_seq);
        match seen.spans.get(round) {
            None if gone => {}
            Some(span) if part_of(span, s, seen.removed) => {}
            Some(span) => problems.push((
                span.first_seq,
                format!("the index says round {round} is {s}, its stored part {span}"),
            )),
            None => problems.push((
                s.first_seq.max(1),
                format!("the index lists round {round} ({s}), its stored part is missing"),
            )),
        }
    }
    problems
}

/// Whether `span`, a round's stored events, is the part of its indexed span `s` that
/// retention left: each end is the index's, unless the index's end was removed.
fn part_of(span: &RoundSpan, s: &RoundSpan, removed: &dyn Fn(u64) -> bool) -> bool {
    let first = (span.first_seq, span.first_occurred_at_ns)
        == (s.first_seq, s.first_occurred_at_ns)
        || (removed(s.first_seq) && span.first_seq > s.first_seq);
    let last = (span.last_seq, span.last_occurred_at_ns) == (s.last_seq, s.last_occurred_at_ns)
        || (removed(s.last_seq) && span.last_seq < s.last_seq);
    first && last
}

/// The stored event expected at seq `next` after `prev`, decoded, or its problem.
fn check_event(
    table: &TableId,
    next: u64,
    prev: &Hash32,
    e: &crate::record::StoredEvent,
) -> Result<schemas::Event, VerifyProblem> {
    if e.seq.0 != next {
        return Err(VerifyProblem::SeqDiscontinuity {
            expected: next,
            found: e.seq.0,
        });
    }
    let event = match codec::decode(&e.bytes) {
        Ok((ev, _)) => ev,
        Err(err) => return Err(VerifyProblem::Undecodable(err.to_string())),
    };
    if event.table != *table || event.seq.0 != next {
        return Err(VerifyProblem::WrongEvent {
            table: event.table,
            seq: event.seq.0,
        });
    }
    if event.prev != *prev {
        return Err(VerifyProblem::PrevMismatch {
            expected: *prev,
            found: event.prev,
        });
    }
    let computed = event_hash(prev, &e.bytes);
    if computed != e.hash {
        return Err(VerifyProblem::HashMismatch {
            stored: e.hash,
            computed,
        });
    }
    if event.occurred_at_ns != e.occurred_at_ns {
        return Err(VerifyProblem::FieldMismatch {
            field: "occurred_at_ns",
        });
    }
    if event.round != e.round {
        return Err(VerifyProblem::FieldMismatch { field: "round" });
    }
    Ok(event)
}

fn bad_key(e: Error) -> TableVerdict {
    // A key whose table part does not parse: reported under a placeholder table name.
    TableVerdict::Bad {
        table: TableId::new("unreadable-key").expect("a valid id literal"),
        seq: 0,
        problem: VerifyProblem::Unreadable(e.to_string()),
    }
}
