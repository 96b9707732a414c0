//! The ledger digest: the ledger's state handed to an outside party, and the checks that a
//! later ledger still extends it (a transparency log's consistency check, per table chain).
//! Pure: no I/O, no clock (the caller supplies `created_at_ns`), so an auditor can check a
//! digest and a proof without sled, in Rust or from schemas/README.md §6.
//!
//! A digest lists every table's chain head (table, head seq, head hash, receipt), the
//! quarantine chain's head (entries, hash), the total event count (the sum of the head
//! seqs: each chain holds events 1..=seq) and a Merkle root over the heads and the
//! quarantine. The receipt covers what the events' own chain cannot: the JetStream
//! stream seq and receive time ingest stored beside each event, which decide the House's
//! order across tables (linked jackpots). It is a chain per table in seq order, so it does
//! not depend on how ingest grouped events into calls (recovery regroups them):
//!
//! ```text
//! receipt(t, 0) = 32 zero bytes
//! receipt(t, s) = BLAKE3-keyed(key = BLAKE3("roundledger/receipt/v1"),
//!                              receipt(t, s - 1) || stream seq u64 BE || received_at_ns i64 BE)
//! leaf(t)    = BLAKE3("roundledger/digest-leaf/v2" || len(table) u8 || table || seq u64 BE
//!                     || head || receipt(t, seq))
//! quarantine(0) = 32 zero bytes
//! quarantine(n) = BLAKE3-keyed(key = BLAKE3("roundledger/quarantine/v1"),
//!                              quarantine(n - 1) || id u64 BE || len u64 BE || entry bytes)
//! leaf(q)    = BLAKE3("roundledger/digest-quarantine/v1" || entries u64 BE || quarantine(entries))
//! node(l, r) = BLAKE3("roundledger/digest-node/v1" || l || r)
//! root([])   = BLAKE3("roundledger/digest-empty/v1")
//! root([x])  = x
//! root(xs)   = node(root(xs[..k]), root(xs[k..]))  with k the largest power of two < len(xs)
//! ```
//!
//! with the tables' leaves in ascending byte order of the table id, then the quarantine's
//! (RFC 6962's tree shape, with domain tags instead of its one-byte prefixes). The
//! quarantine chain runs over the ledger's quarantine entries in id order, each entry's
//! stored bytes holding the refused message verbatim with its reason. An inclusion proof (the sibling hashes from a
//! leaf up to the root) shows one table's head is in a digest without the other tables.
//! Version 2 digests (written before the quarantine was named) have no quarantine leaf;
//! version 1 digests (written before receipts) also have no receipt and the leaf
//! `BLAKE3("roundledger/digest-leaf/v1" || len || table || seq || head)`. Both still check.
//!
//! The root binds the heads and the count but not the time. A digest may therefore carry
//! the House's ed25519 signature over all three (`signed_message`): then nobody holding
//! the file can move its time or swap its root without the signature failing, and the
//! House cannot disown a digest it signed. `check` refuses a signature that does not
//! verify; whether an unsigned digest, or one signed by another key, is acceptable is the
//! reader's decision (`verify --against FILE --signer KEY`).
//!
//! Invariants: every check here returns a list of problems or an error, never panics, and
//! never accepts a digest whose root, count or order does not recompute.

// The receipt chain is part of the digest's format; its callers name it here too.
pub use crate::receipt::{receipt_next, RECEIPT_DOMAIN};
use schemas::attest::{PublicKey, Signature, SigningKey};
use schemas::ids::{Hash32, TableId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The `format` field of a digest file.
pub const DIGEST_FORMAT: &str = "roundledger-digest";
/// The digest format version this crate writes (4: leaves carry receipts, a leaf names the
/// quarantine, and one leaf per API journal follows). It reads 1 to 3 too.
pub const DIGEST_VERSION: u32 = 4;
/// The version of digests written before the API's journals were named: still read and
/// checked.
pub const DIGEST_VERSION_NO_JOURNALS: u32 = 3;
/// The version of digests written before the quarantine was named: still read and checked.
pub const DIGEST_VERSION_NO_QUARANTINE: u32 = 2;
/// The version of digests written before receipts: still read and checked.
pub const DIGEST_VERSION_NO_RECEIPTS: u32 = 1;
/// The `format` field of a consistency proof (`verify --against`'s JSON output).
pub const CONSISTENCY_FORMAT: &str = "roundledger-consistency";
/// Domain tag of a version 1 leaf (one table's head, no receipt). 26 bytes.
pub const LEAF_DOMAIN: &[u8] = b"roundledger/digest-leaf/v1";
/// Domain tag of a version 2 leaf (one table's head and receipt). 26 bytes.
pub const LEAF_DOMAIN_V2: &[u8] = b"roundledger/digest-leaf/v2";
/// Domain tag of the quarantine's leaf (version 3). 32 bytes.
pub const QUARANTINE_LEAF_DOMAIN: &[u8] = b"roundledger/digest-quarantine/v1";
/// Domain tag of a version 4 leaf (one table's head, receipt and anchors). 26 bytes.
pub const LEAF_DOMAIN_V3: &[u8] = b"roundledger/digest-leaf/v3";
/// Anchors just below the head: every seq from head - 1 down to head - this.
pub const ANCHORS_RECENT: u64 = 8;
/// Most anchors of one table (the recent ones, then head - 2^k for k from 4 up).
pub const ANCHORS_MAX: usize = 64;
/// Domain tag of a journal's leaf (version 4). 29 bytes.
pub const JOURNAL_LEAF_DOMAIN: &[u8] = b"roundledger/digest-journal/v1";
/// Most journals one digest names.
pub const DIGEST_JOURNALS_MAX: usize = 16;
/// Longest journal name (a file name in the API's directory).
pub const JOURNAL_NAME_LEN_MAX: usize = 64;
/// The quarantine chain's key is the BLAKE3 hash of this tag. 25 bytes.
pub const QUARANTINE_DOMAIN: &[u8] = b"roundledger/quarantine/v1";
/// Domain tag of an inner node. 26 bytes.
pub const NODE_DOMAIN: &[u8] = b"roundledger/digest-node/v1";
/// Domain tag of the root of a ledger with no table. 27 bytes.
pub const EMPTY_DOMAIN: &[u8] = b"roundledger/digest-empty/v1";
/// Domain tag of the House's signature over a digest (`Digest::signed_message`). 31 bytes.
pub const SIGN_DOMAIN: &[u8] = b"roundledger/digest-signature/v1";
/// Most tables in one digest (a resort has hundreds; all of Macau ~6,000).
pub const DIGEST_TABLES_MAX: usize = 1_000_000;
/// Longest inclusion proof: the tree's depth for `DIGEST_TABLES_MAX` leaves is 20.
pub const PROOF_LEN_MAX: usize = 64;

/// One table's chain head as recorded in a digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DigestHead {
    /// The table id.
    pub table: TableId,
    /// The head seq: the chain holds events 1..=seq.
    pub seq: u64,
    /// The hash of the event at `seq` (64 zeros would mean an empty chain; never listed).
    pub head: Hash32,
    /// `receipt(table, seq)`: the stream seqs and receive times of events 1..=seq. Present
    /// in every head of a version 2 digest, in none of a version 1 digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<Hash32>,
    /// Version 4: the chain's hashes at `anchor_seqs(seq)`, in that order, so a check
    /// against the digest can name the first altered event (`locate_altered`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anchors: Vec<Hash32>,
}

/// A ledger digest (JSON, one object). `root` and `events` are derived from `tables` and
/// are checked by `Digest::check`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Digest {
    /// Always `DIGEST_FORMAT`.
    pub format: String,
    /// The digest format version, 1 to `DIGEST_VERSION`; it decides the leaves' form.
    pub version: u32,
    /// When the digest was taken: UTC nanoseconds, from the exporting process's clock.
    pub created_at_ns: i64,
    /// Total events in the ledger's chains: the sum of the head seqs.
    pub events: u64,
    /// Merkle root over the heads (see the module doc).
    pub root: Hash32,
    /// Every table with at least one event, ascending by table id bytes.
    pub tables: Vec<DigestHead>,
    /// The quarantine chain's head (versions 3 and 4; none in versions 1 and 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quarantine: Option<QuarantineAnchor>,
    /// The API's journals' heads, ascending by name (version 4 only; a journal never
    /// written has 0 entries).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub journals: Vec<JournalAnchor>,
    /// The House's signature over the root, the count and the time, if it signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<DigestSignature>,
}

/// The quarantine as a digest names it: how many entries the quarantine chain covers and
/// its hash after the last (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuarantineAnchor {
    /// Quarantine entries the chain covers.
    pub entries: u64,
    /// `quarantine(entries)`: the chain's hash after the last entry; zeros for none.
    pub hash: Hash32,
}

/// One of the API's journals as a digest names it: its file name, how many lines its
/// chain covers and the hash of the last (`crate::journal`; 64 zeros for none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JournalAnchor {
    /// The journal's file name, at most `JOURNAL_NAME_LEN_MAX` bytes.
    pub name: String,
    /// Lines the journal's chain covers.
    pub entries: u64,
    /// The hash of the last line; zeros for none.
    pub hash: Hash32,
}

/// Who signed a digest, and the signature (ed25519 over `Digest::signed_message`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DigestSignature {
    /// The signer's public key: the House's digest key, published to whoever receives
    /// its digests.
    pub signer: PublicKey,
    /// The ed25519 signature over `Digest::signed_message`.
    pub signature: Signature,
}

/// Why a digest file is not a well-formed digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DigestError {
    /// The file is not JSON of a digest; the value is the parser's message.
    #[error("not JSON of a digest: {0}")]
    Json(String),
    /// The `format` field is not `DIGEST_FORMAT`.
    #[error("format {found:?} is not {DIGEST_FORMAT:?}")]
    Format {
        /// The `format` field read.
        found: String,
    },
    /// A version this build does not read; the value is the version read.
    #[error("digest version {0} (this build reads versions {DIGEST_VERSION_NO_RECEIPTS} to {DIGEST_VERSION})")]
    Version(u32),
    /// The quarantine is missing from a version 3 or 4 digest, or present in an older one.
    #[error("a version {version} digest {}", if *.version >= DIGEST_VERSION_NO_JOURNALS { "needs the quarantine" } else { "names no quarantine" })]
    Quarantine {
        /// The digest's version.
        version: u32,
    },
    /// A head lacks a receipt its version needs, or has one version 1 cannot have.
    #[error("table {table}: a version {version} digest {}", if *.version == DIGEST_VERSION_NO_RECEIPTS { "has no receipts" } else { "needs a receipt in every head" })]
    Receipt {
        /// The digest's version.
        version: u32,
        /// The table whose head is wrong.
        table: TableId,
    },
    /// The journals are missing, repeated, out of order or too long-named for the version.
    #[error("a version {version} digest {}", if *.version == DIGEST_VERSION { "needs its journals, each once, in name order, with short names" } else { "names no journal" })]
    Journals {
        /// The digest's version.
        version: u32,
    },
    /// A head's anchors do not match `anchor_seqs` for its version.
    #[error("table {table}: a version {version} digest {}", if *.version == DIGEST_VERSION { "needs one anchor per seq of anchor_seqs" } else { "has no anchors" })]
    Anchors {
        /// The digest's version.
        version: u32,
        /// The table whose head is wrong.
        table: TableId,
    },
    /// More tables than `DIGEST_TABLES_MAX`; the value is the count.
    #[error("{0} tables exceed the limit of {DIGEST_TABLES_MAX}")]
    TooManyTables(usize),
    /// The tables are not in strictly ascending byte order of their ids.
    #[error("tables are not in strictly ascending order at {table} (index {index})")]
    Order {
        /// The position of the first table out of order, from 0.
        index: usize,
        /// That table's id.
        table: TableId,
    },
    /// A table is listed with head seq 0.
    #[error("table {table} has head seq 0: empty chains are not listed")]
    EmptyChain {
        /// The table id.
        table: TableId,
    },
    /// `events` is not the sum of the head seqs.
    #[error("events {stated} differs from the sum of the head seqs {computed}")]
    EventCount {
        /// The `events` field read.
        stated: u64,
        /// The sum of the head seqs.
        computed: u64,
    },
    /// `root` is not the Merkle root recomputed over the leaves.
    #[error("root {stated} differs from the recomputed Merkle root {computed}")]
    Root {
        /// The `root` field read.
        stated: Hash32,
        /// The recomputed root.
        computed: Hash32,
    },
    /// The House's signature does not verify with the signer's key.
    #[error("the signature does not verify with signer {signer}: the root, count or time was altered, or the signature forged")]
    Signature {
        /// The key the digest names as signer.
        signer: PublicKey,
    },
}

/// The seqs a version 4 head anchors, descending: head - 1 to head - `ANCHORS_RECENT`, then
/// head - 2^k for k = 4, 5, ..., all at least 1. Dense where rewrites are likely; a
/// table of 10^9 events has 8 + 26 anchors.
pub fn anchor_seqs(head_seq: u64) -> Vec<u64> {
    let recent = (1..=ANCHORS_RECENT).filter_map(|i| head_seq.checked_sub(i));
    let far = (4..64).filter_map(|k| head_seq.checked_sub(1u64 << k));
    let seqs: Vec<u64> = recent.chain(far).filter(|s| *s >= 1).collect();
    assert!(seqs.len() <= ANCHORS_MAX && seqs.windows(2).all(|w| w[0] > w[1]));
    seqs
}

/// The leaf hash of one table's head in a version 4 digest: version 2's fields, then the
/// anchors.
pub fn leaf_hash_v3(h: &DigestHead) -> Hash32 {
    let t = h.table.as_str().as_bytes();
    let mut x = blake3::Hasher::new();
    x.update(LEAF_DOMAIN_V3);
    x.update(&[u8::try_from(t.len()).expect("table ids are short")]);
    x.update(t);
    x.update(&h.seq.to_be_bytes());
    x.update(&h.head.0);
    x.update(&h.receipt.unwrap_or(Hash32::ZERO).0);
    for a in &h.anchors {
        x.update(&a.0);
    }
    Hash32(*x.finalize().as_bytes())
}

/// Where the first altered event of a rewritten table lies: after `matches_seq` (the
/// highest anchor at or below which the ledger holds the digest's hashes; 0 when none)
/// and at or before `differs_seq` (the lowest anchor that differs). Exact when the two
/// are neighbours. A hash covers every event before it, so differences only grow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FirstAltered {
    /// The rewritten table.
    pub table: TableId,
    /// The lowest seq the first altered event can have: `matches_seq + 1`.
    pub first_seq: u64,
    /// The highest seq it can have: `differs_seq`.
    pub last_seq: u64,
}

/// Locates the first altered event of `d`'s table from the ledger's hashes at
/// `anchor_seqs(d.seq)` (`now`, in that order; `None` where it holds none) and at `d.seq`
/// (which differs). `None` for a digest without anchors.
pub fn locate_altered(d: &DigestHead, now: &[Option<Hash32>]) -> Option<FirstAltered> {
    if d.anchors.is_empty() && d.seq > 1 {
        return None;
    }
    let seqs = anchor_seqs(d.seq);
    let mut differs = d.seq;
    let mut matches = 0;
    for ((seq, want), got) in seqs.iter().zip(&d.anchors).zip(now) {
        if *got == Some(*want) {
            matches = *seq;
            break;
        }
        differs = *seq;
    }
    Some(FirstAltered {
        table: d.table.clone(),
        first_seq: matches + 1,
        last_seq: differs,
    })
}

/// The leaf hash of one API journal's head (version 4).
pub fn journal_leaf_hash(j: &JournalAnchor) -> Hash32 {
    let mut h = blake3::Hasher::new();
    h.update(JOURNAL_LEAF_DOMAIN);
    let name = j.name.as_bytes();
    h.update(&[u8::try_from(name.len()).expect("journal names are short")]);
    h.update(name);
    h.update(&j.entries.to_be_bytes());
    h.update(&j.hash.0);
    Hash32(*h.finalize().as_bytes())
}

/// The leaf hash of one table's head: version 2's with a receipt, version 1's without.
pub fn leaf_hash(h: &DigestHead) -> Hash32 {
    let t = h.table.as_str().as_bytes();
    let mut x = blake3::Hasher::new();
    x.update(match h.receipt {
        Some(_) => LEAF_DOMAIN_V2,
        None => LEAF_DOMAIN,
    });
    // Table ids are 1..=32 bytes (ids::ID_LEN_MAX): the length fits a u8.
    x.update(&[t.len() as u8]);
    x.update(t);
    x.update(&h.seq.to_be_bytes());
    x.update(&h.head.0);
    if let Some(r) = &h.receipt {
        x.update(&r.0);
    }
    Hash32(*x.finalize().as_bytes())
}

/// The quarantine's leaf: `BLAKE3(QUARANTINE_LEAF_DOMAIN || entries u64 BE || hash)`.
pub fn quarantine_leaf_hash(q: &QuarantineAnchor) -> Hash32 {
    let mut x = blake3::Hasher::new();
    x.update(QUARANTINE_LEAF_DOMAIN);
    x.update(&q.entries.to_be_bytes());
    x.update(&q.hash.0);
    Hash32(*x.finalize().as_bytes())
}

/// One step of the quarantine chain (module doc): the hash after the entry `id` whose
/// stored bytes are `value`, given the hash before it.
pub fn quarantine_next(prev: &Hash32, id: u64, value: &[u8]) -> Hash32 {
    static KEY: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();
    let key = KEY.get_or_init(|| *blake3::hash(QUARANTINE_DOMAIN).as_bytes());
    let mut x = blake3::Hasher::new_keyed(key);
    x.update(&prev.0);
    x.update(&id.to_be_bytes());
    x.update(&(value.len() as u64).to_be_bytes());
    x.update(value);
    Hash32(*x.finalize().as_bytes())
}

/// The hash of an inner node.
pub fn node_hash(left: &Hash32, right: &Hash32) -> Hash32 {
    let mut x = blake3::Hasher::new();
    x.update(NODE_DOMAIN);
    x.update(&left.0);
    x.update(&right.0);
    Hash32(*x.finalize().as_bytes())
}

/// The root of a tree with no leaf.
pub fn empty_root() -> Hash32 {
    Hash32(*blake3::hash(EMPTY_DOMAIN).as_bytes())
}

/// Largest power of two strictly below `n` (n >= 2).
fn split(n: usize) -> usize {
    let mut k = 1;
    while k * 2 < n {
        k *= 2;
    }
    k
}

/// The Merkle root over leaf hashes, in order.
pub fn merkle_root(leaves: &[Hash32]) -> Hash32 {
    match leaves.len() {
        0 => empty_root(),
        1 => leaves[0],
        n => {
            let k = split(n);
            node_hash(&merkle_root(&leaves[..k]), &merkle_root(&leaves[k..]))
        }
    }
}

/// The inclusion proof of leaf `index`: sibling hashes from the leaf up to the root.
/// `None` if `index` is out of range.
pub fn inclusion_proof(leaves: &[Hash32], index: usize) -> Option<Vec<Hash32>> {
    if index >= leaves.len() {
        return None;
    }
    let mut path = Vec::new();
    let (mut lo, mut hi, mut idx) = (0usize, leaves.len(), index);
    // Walk down recording the sibling subtree of each split, then reverse (leaf first).
    while hi - lo > 1 {
        let k = split(hi - lo);
        if idx < k {
            path.push(merkle_root(&leaves[lo + k..hi]));
            hi = lo + k;
        } else {
            path.push(merkle_root(&leaves[lo..lo + k]));
            lo += k;
            idx -= k;
        }
    }
    path.reverse();
    Some(path)
}

/// Checks an inclusion proof: that `leaf` at `index` of a tree of `size` leaves has root
/// `root`. RFC 9162 §2.1.3.2's algorithm.
pub fn verify_inclusion(
    leaf: &Hash32,
    index: u64,
    size: u64,
    proof: &[Hash32],
    root: &Hash32,
) -> bool {
    if index >= size || proof.len() > PROOF_LEN_MAX {
        return false;
    }
    let (mut fn_, mut sn) = (index, size - 1);
    let mut r = *leaf;
    for p in proof {
        if sn == 0 {
            return false;
        }
        if fn_ & 1 == 1 || fn_ == sn {
            r = node_hash(p, &r);
            while fn_ & 1 == 0 && fn_ != 0 {
                fn_ >>= 1;
                sn >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    sn == 0 && r == *root
}

impl Digest {
    /// Builds the digest of these heads (any order; empty chains are left out): version 2
    /// when every head has a receipt, version 1 when none has (digests of other tools and
    /// of old vectors). Heads with and without receipts together are a caller's bug.
    pub fn new(heads: impl IntoIterator<Item = DigestHead>, created_at_ns: i64) -> Digest {
        let by_table: BTreeMap<Vec<u8>, DigestHead> = heads
            .into_iter()
            .filter(|h| h.seq > 0)
            // Anchors belong to version 4 (`with_anchors_and_journals`).
            .map(|h| DigestHead {
                anchors: Vec::new(),
                ..h
            })
            .map(|h| (h.table.as_str().as_bytes().to_vec(), h))
            .collect();
        let tables: Vec<DigestHead> = by_table.into_values().collect();
        let with_receipts = tables.iter().filter(|h| h.receipt.is_some()).count();
        assert!(
            with_receipts == 0 || with_receipts == tables.len(),
            "a digest's heads all have receipts or none has"
        );
        let version = if with_receipts == 0 && !tables.is_empty() {
            DIGEST_VERSION_NO_RECEIPTS
        } else {
            DIGEST_VERSION_NO_QUARANTINE
        };
        let leaves: Vec<Hash32> = tables.iter().map(leaf_hash).collect();
        Digest {
            format: DIGEST_FORMAT.to_string(),
            version,
            created_at_ns,
            events: tables.iter().fold(0u64, |a, h| a.saturating_add(h.seq)),
            root: merkle_root(&leaves),
            tables,
            quarantine: None,
            journals: Vec::new(),
            signature: None,
        }
    }

    /// The same digest naming the quarantine too: version 3, its root over the tables'
    /// leaves and then the quarantine's. The heads must carry receipts.
    pub fn with_quarantine(mut self, quarantine: QuarantineAnchor) -> Digest {
        assert!(
            self.version != DIGEST_VERSION_NO_RECEIPTS,
            "a version 3 digest's heads carry receipts"
        );
        self.version = DIGEST_VERSION_NO_JOURNALS;
        self.quarantine = Some(quarantine);
        self.root = merkle_root(&self.leaves());
        self.signature = None;
        self
    }

    /// What the House signs: `SIGN_DOMAIN || version u32 BE || created_at_ns i64 BE ||
    /// events u64 BE || tables u64 BE || root`. The root binds every head, so this binds
    /// the whole digest.
    pub fn signed_message(&self) -> Vec<u8> {
        let mut m = Vec::with_capacity(SIGN_DOMAIN.len() + 4 + 8 + 8 + 8 + 32);
        m.extend_from_slice(SIGN_DOMAIN);
        m.extend_from_slice(&self.version.to_be_bytes());
        m.extend_from_slice(&self.created_at_ns.to_be_bytes());
        m.extend_from_slice(&self.events.to_be_bytes());
        m.extend_from_slice(&(self.tables.len() as u64).to_be_bytes());
        m.extend_from_slice(&self.root.0);
        m
    }

    /// The digest signed with `key` (replacing any signature it had).
    pub fn signed(mut self, key: &SigningKey) -> Digest {
        self.signature = Some(DigestSignature {
            signer: key.public(),
            signature: key.sign(&self.signed_message()),
        });
        self
    }

    /// Parses and checks a digest file's bytes.
    pub fn from_json(bytes: &[u8]) -> Result<Digest, DigestError> {
        let d: Digest =
            serde_json::from_slice(bytes).map_err(|e| DigestError::Json(e.to_string()))?;
        d.check()?;
        Ok(d)
    }

    /// The digest as pretty JSON with a final newline.
    pub fn to_json(&self) -> Vec<u8> {
        let mut v =
            serde_json::to_vec_pretty(self).expect("JSON encoding of a Digest is infallible");
        v.push(b'\n');
        v
    }

    /// What the version decides: the quarantine, the anchors, the journals, the receipts.
    fn check_version_fields(&self) -> Result<(), DigestError> {
        if self.quarantine.is_some() != (self.version >= DIGEST_VERSION_NO_JOURNALS) {
            return Err(DigestError::Quarantine {
                version: self.version,
            });
        }
        let anchored = |h: &DigestHead| match self.version {
            DIGEST_VERSION => h.anchors.len() == anchor_seqs(h.seq).len(),
            _ => h.anchors.is_empty(),
        };
        if let Some(h) = self.tables.iter().find(|h| !anchored(h)) {
            return Err(DigestError::Anchors {
                version: self.version,
                table: h.table.clone(),
            });
        }
        if !self.journals_well_formed() {
            return Err(DigestError::Journals {
                version: self.version,
            });
        }
        let receipts = self.version != DIGEST_VERSION_NO_RECEIPTS;
        if let Some(h) = self.tables.iter().find(|h| h.receipt.is_some() != receipts) {
            return Err(DigestError::Receipt {
                version: self.version,
                table: h.table.clone(),
            });
        }
        Ok(())
    }

    /// Checks what is derived: format, version, order, count and root.
    pub fn check(&self) -> Result<(), DigestError> {
        if self.format != DIGEST_FORMAT {
            return Err(DigestError::Format {
                found: self.format.clone(),
            });
        }
        if !(DIGEST_VERSION_NO_RECEIPTS..=DIGEST_VERSION).contains(&self.version) {
            return Err(DigestError::Version(self.version));
        }
        if self.tables.len() > DIGEST_TABLES_MAX {
            return Err(DigestError::TooManyTables(self.tables.len()));
        }
        self.check_version_fields()?;
        for (i, w) in self.tables.windows(2).enumerate() {
            if w[0].table.as_str().as_bytes() >= w[1].table.as_str().as_bytes() {
                return Err(DigestError::Order {
                    index: i + 1,
                    table: w[1].table.clone(),
                });
            }
        }
        if let Some(h) = self.tables.iter().find(|h| h.seq == 0) {
            return Err(DigestError::EmptyChain {
                table: h.table.clone(),
            });
        }
        let computed = self
            .tables
            .iter()
            .fold(0u64, |a, h| a.saturating_add(h.seq));
        if computed != self.events {
            return Err(DigestError::EventCount {
                stated: self.events,
                computed,
            });
        }
        let computed = merkle_root(&self.leaves());
        if computed != self.root {
            return Err(DigestError::Root {
                stated: self.root,
                computed,
            });
        }
        if let Some(s) = &self.signature {
            if !schemas::attest::verify(&s.signer, &self.signed_message(), &s.signature) {
                return Err(DigestError::Signature { signer: s.signer });
            }
        }
        Ok(())
    }

    /// The leaf hashes: the tables' in table order, then the quarantine's (version 3), then
    /// the journals' in name order (version 4).
    pub fn leaves(&self) -> Vec<Hash32> {
        let table_leaf = if self.version == DIGEST_VERSION {
            leaf_hash_v3
        } else {
            leaf_hash
        };
        self.tables
            .iter()
            .map(table_leaf)
            .chain(self.quarantine.as_ref().map(quarantine_leaf_hash))
            .chain(self.journals.iter().map(journal_leaf_hash))
            .collect()
    }

    /// The same digest naming each table's anchors (`anchors(head)`, the chain's hashes at
    /// `anchor_seqs(head.seq)`) and the API's journals too: version 4. It must name the
    /// quarantine already (`with_quarantine`).
    pub fn with_anchors_and_journals(
        mut self,
        anchors: impl Fn(&DigestHead) -> Vec<Hash32>,
        mut journals: Vec<JournalAnchor>,
    ) -> Digest {
        assert!(
            self.version == DIGEST_VERSION_NO_JOURNALS,
            "a version 4 digest names the quarantine"
        );
        for h in &mut self.tables {
            h.anchors = anchors(h);
            assert_eq!(h.anchors.len(), anchor_seqs(h.seq).len(), "{}", h.table);
        }
        journals.sort_by(|a, b| a.name.cmp(&b.name));
        self.version = DIGEST_VERSION;
        self.journals = journals;
        assert!(self.journals_well_formed(), "journals: {:?}", self.journals);
        self.root = merkle_root(&self.leaves());
        self.signature = None;
        self
    }

    /// Version 4 names 1 to `DIGEST_JOURNALS_MAX` journals, each once, ascending by name,
    /// with names of 1 to `JOURNAL_NAME_LEN_MAX` bytes; earlier versions name none.
    fn journals_well_formed(&self) -> bool {
        if self.version != DIGEST_VERSION {
            return self.journals.is_empty();
        }
        let names_ok = self
            .journals
            .iter()
            .all(|j| (1..=JOURNAL_NAME_LEN_MAX).contains(&j.name.len()));
        let ordered = self.journals.windows(2).all(|w| w[0].name < w[1].name);
        (1..=DIGEST_JOURNALS_MAX).contains(&self.journals.len()) && names_ok && ordered
    }

    /// The inclusion proof of one table's head, if the table is listed.
    pub fn inclusion(&self, table: &TableId) -> Option<InclusionProof> {
        let index = self.tables.iter().position(|h| &h.table == table)?;
        let leaves = self.leaves();
        Some(InclusionProof {
            head: self.tables[index].clone(),
            index: index as u64,
            size: leaves.len() as u64,
            path: inclusion_proof(&leaves, index)?,
            root: self.root,
        })
    }
}

/// That one table's head is in the digest with `root`, without the other tables.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InclusionProof {
    /// The table's head the proof is about.
    pub head: DigestHead,
    /// The leaf's position among the digest's tables (0-based).
    pub index: u64,
    /// The number of leaves in the digest: its tables, and the quarantine in version 3.
    pub size: u64,
    /// Sibling hashes from the leaf up to the root.
    pub path: Vec<Hash32>,
    /// The digest's root the path leads to.
    pub root: Hash32,
}

impl InclusionProof {
    /// That the proof puts its head in the digest `digest`, which the reader trusts (it
    /// checked it, or its signature): the digest's root and its number of leaves, never
    /// the proof's own: against the root and size it carries, a proof of leaf 0 of a
    /// six-leaf tree would also verify with sizes 5, 7 and 8.
    pub fn verify(&self, digest: &Digest) -> bool {
        let size = digest.leaves().len() as u64;
        self.root == digest.root
            && self.size == size
            && verify_inclusion(
                &leaf_hash(&self.head),
                self.index,
                size,
                &self.path,
                &digest.root,
            )
    }
}

/// What the current ledger says about one table of a digest: the inputs of the
/// consistency check, gathered by whoever holds the ledger (or an export of it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableNow {
    /// The current head seq (0 if the table is gone).
    pub head_seq: u64,
    /// The hash the ledger now holds at the digest's seq, if it holds that seq.
    pub hash_at_digest_seq: Option<Hash32>,
    /// The table's receipt at the digest's seq, if it holds that seq.
    pub receipt_at_digest_seq: Option<Hash32>,
    /// `None` if the chain verifies from genesis to its current head; else the first bad
    /// seq and why.
    pub chain_problem: Option<(u64, String)>,
    /// The table's last range removed by retention that starts at or below the digest's
    /// seq, if any. The receipt from seq 1 cannot be recomputed past it.
    pub removed: Option<RemovedSpan>,
}

/// One table's events of a gaming day removed by retention; its seal proves its head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemovedSpan {
    /// The gaming day, YYYY-MM-DD.
    pub day: String,
    /// The day's first seq of the table.
    pub first_seq: u64,
    /// The day's last seq of the table.
    pub last_seq: u64,
}

/// One table's result of the consistency check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum TableConsistency {
    /// The chain verifies from genesis, holds the digest's hash at the digest's seq, and
    /// has grown from `digest_seq` to `head_seq`.
    Extends {
        /// The table id.
        table: TableId,
        /// The head seq the digest records.
        digest_seq: u64,
        /// The ledger's head seq now.
        head_seq: u64,
    },
    /// The table is in the digest and no longer in the ledger.
    Missing {
        /// The table id.
        table: TableId,
        /// The head seq the digest records.
        digest_seq: u64,
    },
    /// The ledger's chain ends before the digest's seq: events were removed.
    Truncated {
        /// The table id.
        table: TableId,
        /// The head seq the digest records.
        digest_seq: u64,
        /// The ledger's head seq now, below `digest_seq`.
        head_seq: u64,
    },
    /// The ledger holds a different event at the digest's seq: history was rewritten.
    HashDiffers {
        /// The table id.
        table: TableId,
        /// The head seq the digest records.
        digest_seq: u64,
        /// The head hash the digest records.
        digest_hash: Hash32,
        /// The hash the ledger holds at `digest_seq` now.
        ledger_hash: Hash32,
    },
    /// The same events, but the stream seqs or receive times stored with events
    /// 1..=`digest_seq` changed since (the House's arrival order was rewritten).
    ReceiptDiffers {
        /// The table id.
        table: TableId,
        /// The head seq the digest records.
        digest_seq: u64,
        /// The receipt the digest records.
        digest_receipt: Hash32,
        /// The ledger's receipt at `digest_seq` now, if it has one.
        ledger_receipt: Option<Hash32>,
    },
    /// As `Extends`, but a day at or before the digest's seq was removed by retention:
    /// the hash is checked, the receipt cannot be recomputed and is not.
    ExtendsReceiptUnchecked {
        /// The table id.
        table: TableId,
        /// The head seq the digest records.
        digest_seq: u64,
        /// The ledger's head seq now.
        head_seq: u64,
        /// The removed day, as the ledger's seal and removal act give it.
        removed: RemovedSpan,
    },
    /// The digest's seq lies inside a day removed by retention, before its sealed head:
    /// its hash is gone, so the digest cannot be checked for this table. Not ok: nothing
    /// is proven.
    InsideRemoved {
        /// The table id.
        table: TableId,
        /// The head seq the digest records.
        digest_seq: u64,
        /// The removed day.
        removed: RemovedSpan,
    },
    /// The chain itself no longer verifies; `seq` is the first bad position.
    ChainBroken {
        /// The table id.
        table: TableId,
        /// The first seq that does not verify.
        seq: u64,
        /// Why it does not verify.
        problem: String,
    },
}

impl TableConsistency {
    /// Whether the table extends the digest.
    pub fn is_ok(&self) -> bool {
        matches!(
            self,
            TableConsistency::Extends { .. } | TableConsistency::ExtendsReceiptUnchecked { .. }
        )
    }

    /// The table this result is about.
    pub fn table(&self) -> &TableId {
        match self {
            TableConsistency::Extends { table, .. }
            | TableConsistency::Missing { table, .. }
            | TableConsistency::Truncated { table, .. }
            | TableConsistency::HashDiffers { table, .. }
            | TableConsistency::ReceiptDiffers { table, .. }
            | TableConsistency::ExtendsReceiptUnchecked { table, .. }
            | TableConsistency::InsideRemoved { table, .. }
            | TableConsistency::ChainBroken { table, .. } => table,
        }
    }
}

/// What the current ledger says about its quarantine: the input of the quarantine's
/// consistency check (version 3 digests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuarantineNow {
    /// How many entries the ledger's quarantine chain covers now.
    pub entries: u64,
    /// The chain's hash after the digest's count of entries, if the ledger holds that many.
    pub hash_at_digest_entries: Option<Hash32>,
    /// `None` if the entries chain to the ledger's quarantine head; else why not.
    pub chain_problem: Option<String>,
}

/// The quarantine's result of the consistency check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum QuarantineConsistency {
    /// The ledger's first `digest_entries` entries chain to the digest's hash, and it holds
    /// `entries` now.
    Extends {
        /// Entries the digest counts.
        digest_entries: u64,
        /// Entries the ledger holds now.
        entries: u64,
    },
    /// Fewer entries than the digest counted: quarantined messages were removed.
    Truncated {
        /// Entries the digest counts.
        digest_entries: u64,
        /// Entries the ledger holds now.
        entries: u64,
    },
    /// The first `digest_entries` entries chain to another hash: one was edited, removed
    /// or inserted since.
    HashDiffers {
        /// Entries the digest counts.
        digest_entries: u64,
        /// The quarantine hash the digest records.
        digest_hash: Hash32,
        /// The ledger's hash after that many entries now.
        ledger_hash: Hash32,
    },
    /// The quarantine no longer chains to its own head.
    ChainBroken {
        /// Why it does not chain.
        problem: String,
    },
}

impl QuarantineConsistency {
    /// Whether the quarantine extends the digest's.
    pub fn is_ok(&self) -> bool {
        matches!(self, QuarantineConsistency::Extends { .. })
    }
}

fn quarantine_consistency(d: &QuarantineAnchor, n: &QuarantineNow) -> QuarantineConsistency {
    if let Some(problem) = &n.chain_problem {
        return QuarantineConsistency::ChainBroken {
            problem: problem.clone(),
        };
    }
    match n.hash_at_digest_entries {
        _ if n.entries < d.entries => QuarantineConsistency::Truncated {
            digest_entries: d.entries,
            entries: n.entries,
        },
        Some(h) if h == d.hash => QuarantineConsistency::Extends {
            digest_entries: d.entries,
            entries: n.entries,
        },
        Some(h) => QuarantineConsistency::HashDiffers {
            digest_entries: d.entries,
            digest_hash: d.hash,
            ledger_hash: h,
        },
        None => QuarantineConsistency::Truncated {
            digest_entries: d.entries,
            entries: n.entries,
        },
    }
}

/// What the API's directory says about one journal now: the input of its consistency
/// check (version 4 digests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalNow {
    /// The journal's file name.
    pub name: String,
    /// Lines whose chain verifies now.
    pub entries: u64,
    /// The chain's hash after the digest's count of lines, if the journal holds that many.
    pub hash_at_digest_entries: Option<Hash32>,
    /// `None` if every line chains; else the first bad line and why.
    pub chain_problem: Option<(u64, String)>,
}

/// One journal's result of the consistency check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum JournalConsistency {
    /// The first `digest_entries` lines chain to the digest's hash; it holds `entries` now.
    Extends {
        /// The journal's file name.
        name: String,
        /// Lines the digest counts.
        digest_entries: u64,
        /// Lines the journal holds now.
        entries: u64,
    },
    /// Fewer lines than the digest counted: the journal was cut back.
    Truncated {
        /// The journal's file name.
        name: String,
        /// Lines the digest counts.
        digest_entries: u64,
        /// Lines the journal holds now.
        entries: u64,
    },
    /// The first `digest_entries` lines chain to another hash: a line was rewritten.
    HashDiffers {
        /// The journal's file name.
        name: String,
        /// Lines the digest counts.
        digest_entries: u64,
        /// The hash the digest records.
        digest_hash: Hash32,
        /// The journal's hash after that many lines now.
        journal_hash: Hash32,
    },
    /// The journal no longer chains; `line` is the first bad line.
    ChainBroken {
        /// The journal's file name.
        name: String,
        /// The first line that does not chain, from 1.
        line: u64,
        /// Why it does not chain.
        problem: String,
    },
}

impl JournalConsistency {
    /// Whether the journal extends the digest's.
    pub fn is_ok(&self) -> bool {
        matches!(self, JournalConsistency::Extends { .. })
    }
}

/// Each journal `digest` names against `now` (looked up by name; a journal absent now has
/// no lines). A journal not named but whose chain is broken is reported too.
pub fn check_journals(digest: &Digest, now: &[JournalNow]) -> Vec<JournalConsistency> {
    let mut out = Vec::new();
    for n in now.iter().filter(|n| n.chain_problem.is_some()) {
        let (line, problem) = n.chain_problem.clone().expect("filtered");
        out.push(JournalConsistency::ChainBroken {
            name: n.name.clone(),
            line,
            problem,
        });
    }
    for d in &digest.journals {
        let n = now.iter().find(|n| n.name == d.name);
        if n.is_some_and(|n| n.chain_problem.is_some()) {
            continue;
        }
        let entries = n.map_or(0, |n| n.entries);
        let at = n.and_then(|n| n.hash_at_digest_entries);
        let at = at.or((d.entries == 0).then_some(Hash32::ZERO));
        let name = d.name.clone();
        out.push(match at {
            _ if entries < d.entries => JournalConsistency::Truncated {
                name,
                digest_entries: d.entries,
                entries,
            },
            Some(h) if h == d.hash => JournalConsistency::Extends {
                name,
                digest_entries: d.entries,
                entries,
            },
            Some(h) => JournalConsistency::HashDiffers {
                name,
                digest_entries: d.entries,
                digest_hash: d.hash,
                journal_hash: h,
            },
            None => JournalConsistency::Truncated {
                name,
                digest_entries: d.entries,
                entries,
            },
        });
    }
    out
}

/// The consistency proof: the result of checking a ledger against a digest (JSON, the
/// output of `roundledger verify --against`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Consistency {
    /// Always `CONSISTENCY_FORMAT`.
    pub format: String,
    /// The digest version this build writes (`DIGEST_VERSION`).
    pub version: u32,
    /// The digest checked against (its root, time and size).
    pub digest_root: Hash32,
    /// That digest's `created_at_ns`, UTC nanoseconds.
    pub digest_created_at_ns: i64,
    /// That digest's event count.
    pub digest_events: u64,
    /// Who signed that digest (its signature verified), if anybody did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest_signer: Option<PublicKey>,
    /// The digest of the ledger now: handing it on lets the next check start from it.
    pub now: Digest,
    /// One entry per table of the digest, in its order.
    pub tables: Vec<TableConsistency>,
    /// Tables in the ledger now that the digest did not list and that verify (new since;
    /// not a failure).
    pub new_tables: Vec<TableId>,
    /// Tables the digest did not list whose chain does not verify: no digest names them,
    /// but a ledger that does not verify passes no check (`with_broken_new_tables`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub broken_new_tables: Vec<BrokenTable>,
    /// The quarantine's result, when the digest names it (version 3), or when the quarantine
    /// no longer verifies (`chain_broken`, whatever the digest's version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quarantine: Option<QuarantineConsistency>,
    /// Why the ledger's arrival chain (its append calls' stream seqs and receive times, a
    /// check of the ledger's own) does not verify, if it does not: no digest names it, but
    /// a ledger that does not verify does not pass a check against any digest
    /// (`with_arrival_problem`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival_problem: Option<String>,
    /// The API's journals' results, when the digest names them (version 4), and any
    /// journal whose own chain no longer verifies (`with_journals`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub journals: Vec<JournalConsistency>,
    /// For each rewritten table of a version 4 digest, where its first altered event lies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first_altered: Vec<FirstAltered>,
    /// True when every table of the digest extends, the quarantine when it names one, and
    /// the ledger's own chains verify (quarantine, arrival, tables new since the digest).
    pub ok: bool,
}

/// A table whose chain does not verify, and the first bad position in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrokenTable {
    /// The table id.
    pub table: TableId,
    /// The first seq that does not verify.
    pub seq: u64,
    /// Why it does not verify.
    pub problem: String,
}

impl Consistency {
    /// The check of a ledger with tables the digest does not list and whose chains do not
    /// verify: never ok when there is one, so the check never passes a ledger that plain
    /// `verify` fails.
    pub fn with_broken_new_tables(mut self, broken: Vec<BrokenTable>) -> Consistency {
        if !broken.is_empty() {
            self.ok = false;
        }
        self.broken_new_tables = broken;
        self
    }

    /// The check with the API's journals' results (`check_journals`): not ok when one is
    /// not.
    pub fn with_journals(mut self, journals: Vec<JournalConsistency>) -> Consistency {
        if !journals.iter().all(JournalConsistency::is_ok) {
            self.ok = false;
        }
        self.journals = journals;
        self
    }

    /// The check naming where rewritten tables were first altered (`locate_altered`).
    pub fn with_first_altered(mut self, altered: Vec<FirstAltered>) -> Consistency {
        self.first_altered = altered;
        self
    }

    /// The check of a ledger whose arrival chain does not verify: never ok.
    pub fn with_arrival_problem(mut self, problem: String) -> Consistency {
        self.arrival_problem = Some(problem);
        self.ok = false;
        self
    }
}

/// Checks that the ledger described by `now` (and `lookup`, per digest table, and
/// `quarantine`, for a digest that names the quarantine) extends `digest`. `digest` must
/// already have passed `Digest::check`.
pub fn check_consistency(
    digest: &Digest,
    now: Digest,
    mut lookup: impl FnMut(&DigestHead) -> Option<TableNow>,
    quarantine: &QuarantineNow,
) -> Consistency {
    let mut tables = Vec::with_capacity(digest.tables.len());
    for d in &digest.tables {
        let c = match lookup(d) {
            None => TableConsistency::Missing {
                table: d.table.clone(),
                digest_seq: d.seq,
            },
            Some(n) => consistency_of(d, &n),
        };
        tables.push(c);
    }
    let listed: std::collections::BTreeSet<&TableId> =
        digest.tables.iter().map(|h| &h.table).collect();
    let new_tables = now
        .tables
        .iter()
        .filter(|h| !listed.contains(&h.table))
        .map(|h| h.table.clone())
        .collect();
    // A digest that names no quarantine has nothing to compare it with, but a ledger whose
    // quarantine no longer chains to its own head does not verify, whatever the digest.
    let quarantine = match (&digest.quarantine, &quarantine.chain_problem) {
        (Some(d), _) => Some(quarantine_consistency(d, quarantine)),
        (None, Some(problem)) => Some(QuarantineConsistency::ChainBroken {
            problem: problem.clone(),
        }),
        (None, None) => None,
    };
    let ok = tables.iter().all(TableConsistency::is_ok)
        && quarantine.as_ref().is_none_or(QuarantineConsistency::is_ok);
    Consistency {
        format: CONSISTENCY_FORMAT.to_string(),
        version: DIGEST_VERSION,
        digest_root: digest.root,
        digest_created_at_ns: digest.created_at_ns,
        digest_events: digest.events,
        digest_signer: digest.signature.as_ref().map(|s| s.signer),
        now,
        tables,
        new_tables,
        broken_new_tables: Vec::new(),
        quarantine,
        arrival_problem: None,
        journals: Vec::new(),
        first_altered: Vec::new(),
        ok,
    }
}

fn consistency_of(d: &DigestHead, n: &TableNow) -> TableConsistency {
    let table = d.table.clone();
    // A broken chain at or below the digest's seq is reported as such; a broken chain
    // above it still fails (the ledger must verify to its head), after the hash check.
    if n.head_seq == 0 {
        return TableConsistency::Missing {
            table,
            digest_seq: d.seq,
        };
    }
    if let Some((seq, problem)) = &n.chain_problem {
        return TableConsistency::ChainBroken {
            table,
            seq: *seq,
            problem: problem.clone(),
        };
    }
    if n.head_seq < d.seq {
        return TableConsistency::Truncated {
            table,
            digest_seq: d.seq,
            head_seq: n.head_seq,
        };
    }
    if let Some(r) = &n.removed {
        return removed_consistency(d, n, r);
    }
    match n.hash_at_digest_seq {
        Some(h) if h == d.head => match d.receipt {
            Some(r) if n.receipt_at_digest_seq != Some(r) => TableConsistency::ReceiptDiffers {
                table,
                digest_seq: d.seq,
                digest_receipt: r,
                ledger_receipt: n.receipt_at_digest_seq,
            },
            _ => TableConsistency::Extends {
                table,
                digest_seq: d.seq,
                head_seq: n.head_seq,
            },
        },
        Some(h) => TableConsistency::HashDiffers {
            table,
            digest_seq: d.seq,
            digest_hash: d.head,
            ledger_hash: h,
        },
        None => TableConsistency::Truncated {
            table,
            digest_seq: d.seq,
            head_seq: n.head_seq,
        },
    }
}

/// `consistency_of` for a table with a day removed at or before the digest's seq: the
/// hash is checked where the ledger still holds it (the seal holds the day's last).
fn removed_consistency(d: &DigestHead, n: &TableNow, r: &RemovedSpan) -> TableConsistency {
    let table = d.table.clone();
    match n.hash_at_digest_seq {
        Some(h) if h == d.head => TableConsistency::ExtendsReceiptUnchecked {
            table,
            digest_seq: d.seq,
            head_seq: n.head_seq,
            removed: r.clone(),
        },
        Some(h) => TableConsistency::HashDiffers {
            table,
            digest_seq: d.seq,
            digest_hash: d.head,
            ledger_hash: h,
        },
        None if d.seq < r.last_seq => TableConsistency::InsideRemoved {
            table,
            digest_seq: d.seq,
            removed: r.clone(),
        },
        None => TableConsistency::Truncated {
            table,
            digest_seq: d.seq,
            head_seq: n.head_seq,
        },
    }
}

/// The `format` field of an export's check against a digest (`verify --export FILE
/// --against DIGEST --json`).
pub const EXPORT_CHECK_FORMAT: &str = "roundledger-export-check";

/// One digest table checked against an export (`check_export`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ExportTableCheck {
    /// The export holds the digest's hash at the digest's seq; and the digest's receipt
    /// there too when `receipt_checked` (the export's range starts at seq 1 and the digest
    /// is version 2; otherwise the arrival fields cannot be checked).
    Agrees {
        /// The table id.
        table: TableId,
        /// The head seq the digest records.
        digest_seq: u64,
        /// Whether the receipt was compared too.
        receipt_checked: bool,
    },
    /// The export holds another event at the digest's seq.
    HashDiffers {
        /// The table id.
        table: TableId,
        /// The head seq the digest records.
        digest_seq: u64,
        /// The head hash the digest records.
        digest_hash: Hash32,
        /// The export's hash at `digest_seq`.
        export_hash: Hash32,
    },
    /// The same events, other stream seqs or receive times than the digest recorded.
    ReceiptDiffers {
        /// The table id.
        table: TableId,
        /// The head seq the digest records.
        digest_seq: u64,
        /// The receipt the digest records.
        digest_receipt: Hash32,
        /// The receipt recomputed from the export at `digest_seq`.
        export_receipt: Hash32,
    },
    /// The export does not hold this table at the digest's seq: nothing to compare.
    NotCovered {
        /// The table id.
        table: TableId,
        /// The head seq the digest records.
        digest_seq: u64,
    },
}

/// An export checked against a digest: whether the history it hands over is the one the
/// digest recorded, for every table whose digest seq it covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportCheck {
    /// Always `EXPORT_CHECK_FORMAT`.
    pub format: String,
    /// The root of the digest checked against.
    pub digest_root: Hash32,
    /// That digest's `created_at_ns`, UTC nanoseconds.
    pub digest_created_at_ns: i64,
    /// Who signed that digest (its signature verified), if anybody did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest_signer: Option<PublicKey>,
    /// One entry per table of the digest, in its order.
    pub tables: Vec<ExportTableCheck>,
    /// Tables whose digest seq the export holds.
    pub covered: u64,
    /// True when the export covers at least one table and agrees on every one it covers.
    pub ok: bool,
}

/// Checks an export against `digest` (which must have passed `Digest::check`), given what
/// the export holds at each digest table's seq (`export::verify_export_at` with
/// `Digest::seqs`, on an export that verified).
pub fn check_export(
    digest: &Digest,
    found: &BTreeMap<TableId, crate::export::ExportAt>,
) -> ExportCheck {
    let tables: Vec<ExportTableCheck> = digest
        .tables
        .iter()
        .map(|d| {
            let (table, digest_seq) = (d.table.clone(), d.seq);
            let Some(at) = found.get(&d.table) else {
                return ExportTableCheck::NotCovered { table, digest_seq };
            };
            if at.hash != d.head {
                return ExportTableCheck::HashDiffers {
                    table,
                    digest_seq,
                    digest_hash: d.head,
                    export_hash: at.hash,
                };
            }
            match (d.receipt, at.receipt) {
                (Some(digest_receipt), Some(export_receipt))
                    if digest_receipt != export_receipt =>
                {
                    ExportTableCheck::ReceiptDiffers {
                        table,
                        digest_seq,
                        digest_receipt,
                        export_receipt,
                    }
                }
                (dr, er) => ExportTableCheck::Agrees {
                    table,
                    digest_seq,
                    receipt_checked: dr.is_some() && er.is_some(),
                },
            }
        })
        .collect();
    let covered = tables
        .iter()
        .filter(|t| !matches!(t, ExportTableCheck::NotCovered { .. }))
        .count() as u64;
    let agrees = tables.iter().all(|t| {
        matches!(
            t,
            ExportTableCheck::Agrees { .. } | ExportTableCheck::NotCovered { .. }
        )
    });
    ExportCheck {
        format: EXPORT_CHECK_FORMAT.to_string(),
        digest_root: digest.root,
        digest_created_at_ns: digest.created_at_ns,
        digest_signer: digest.signature.as_ref().map(|s| s.signer),
        tables,
        covered,
        ok: covered > 0 && agrees,
    }
}

impl Digest {
    /// Each table's digest seq: what to look up in a ledger or an export.
    pub fn seqs(&self) -> BTreeMap<TableId, u64> {
        self.tables
            .iter()
            .map(|h| (h.table.clone(), h.seq))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a ledger that extends the digest says of each of its tables.
    fn agrees(d: &DigestHead) -> Option<TableNow> {
        Some(TableNow {
            head_seq: d.seq,
            hash_at_digest_seq: Some(d.head),
            receipt_at_digest_seq: d.receipt,
            chain_problem: None,
            removed: None,
        })
    }

    /// A ledger's quarantine for digests that name none (versions 1 and 2): not looked at.
    fn no_quarantine() -> QuarantineNow {
        QuarantineNow {
            entries: 0,
            hash_at_digest_entries: None,
            chain_problem: None,
        }
    }

    fn head(t: &str, seq: u64, b: u8) -> DigestHead {
        DigestHead {
            table: TableId::new(t).unwrap(),
            seq,
            head: Hash32([b; 32]),
            receipt: None,
            anchors: Vec::new(),
        }
    }

    /// A version 2 head: its receipt is derived from `b` too.
    fn head2(t: &str, seq: u64, b: u8) -> DigestHead {
        DigestHead {
            receipt: Some(Hash32([b ^ 0x55; 32])),
            ..head(t, seq, b)
        }
    }

    #[test]
    fn every_inclusion_proof_verifies_and_a_wrong_one_does_not() {
        for n in 1..=17usize {
            let leaves: Vec<Hash32> = (0..n).map(|i| Hash32([i as u8 + 1; 32])).collect();
            let root = merkle_root(&leaves);
            for i in 0..n {
                let p = inclusion_proof(&leaves, i).unwrap();
                assert!(
                    verify_inclusion(&leaves[i], i as u64, n as u64, &p, &root),
                    "n {n} i {i}"
                );
                let other = Hash32([0xEE; 32]);
                assert!(!verify_inclusion(&other, i as u64, n as u64, &p, &root));
                if n > 1 {
                    let j = (i + 1) % n;
                    assert!(
                        !verify_inclusion(&leaves[i], j as u64, n as u64, &p, &root),
                        "n {n} i {i} as {j}"
                    );
                }
            }
            assert!(inclusion_proof(&leaves, n).is_none());
        }
    }

    #[test]
    fn digest_checks_order_count_and_root() {
        let d = Digest::new([head("T2", 5, 2), head("T1", 3, 1), head("T0", 0, 9)], 7);
        assert_eq!(d.tables.len(), 2, "empty chains are left out");
        assert_eq!(d.events, 8);
        d.check().unwrap();
        let back = Digest::from_json(&d.to_json()).unwrap();
        assert_eq!(back, d);
        let mut bad = d.clone();
        bad.events = 9;
        assert!(matches!(bad.check(), Err(DigestError::EventCount { .. })));
        let mut bad = d.clone();
        bad.tables[1].head = Hash32([3; 32]);
        assert!(matches!(bad.check(), Err(DigestError::Root { .. })));
        let mut bad = d.clone();
        bad.tables.swap(0, 1);
        assert!(matches!(bad.check(), Err(DigestError::Order { .. })));
        let mut bad = d;
        bad.format = "x".into();
        assert!(matches!(bad.check(), Err(DigestError::Format { .. })));
    }

    #[test]
    fn consistency_names_each_failure() {
        let then = Digest::new(
            [
                head("A", 3, 1),
                head("B", 4, 2),
                head("C", 5, 3),
                head("D", 6, 4),
                head("E", 2, 5),
            ],
            1,
        );
        let now = Digest::new([head("A", 9, 7), head("F", 1, 8)], 2);
        let c = check_consistency(
            &then,
            now,
            |d| match d.table.as_str() {
                "A" => Some(TableNow {
                    head_seq: 9,
                    hash_at_digest_seq: Some(d.head),
                    receipt_at_digest_seq: d.receipt,
                    chain_problem: None,
                    removed: None,
                }),
                "B" => Some(TableNow {
                    head_seq: 4,
                    hash_at_digest_seq: Some(Hash32([0xAA; 32])),
                    receipt_at_digest_seq: None,
                    chain_problem: None,
                    removed: None,
                }),
                "C" => Some(TableNow {
                    head_seq: 3,
                    hash_at_digest_seq: None,
                    receipt_at_digest_seq: None,
                    chain_problem: None,
                    removed: None,
                }),
                "D" => Some(TableNow {
                    head_seq: 6,
                    hash_at_digest_seq: Some(d.head),
                    receipt_at_digest_seq: None,
                    chain_problem: Some((2, "prev".into())),
                    removed: None,
                }),
                _ => None,
            },
            &no_quarantine(),
        );
        assert!(!c.ok);
        assert!(matches!(
            c.tables[0],
            TableConsistency::Extends { head_seq: 9, .. }
        ));
        assert!(matches!(
            c.tables[1],
            TableConsistency::HashDiffers { digest_seq: 4, .. }
        ));
        assert!(matches!(
            c.tables[2],
            TableConsistency::Truncated {
                head_seq: 3,
                digest_seq: 5,
                ..
            }
        ));
        assert!(matches!(
            c.tables[3],
            TableConsistency::ChainBroken { seq: 2, .. }
        ));
        assert!(matches!(c.tables[4], TableConsistency::Missing { .. }));
        assert_eq!(c.new_tables, vec![TableId::new("F").unwrap()]);
    }

    /// The House's signature binds the time, the count and the root: moving any of them,
    /// or naming another signer, fails `check`; an unsigned digest stays readable.
    #[test]
    fn a_signed_digest_checks_and_any_edit_of_what_it_signs_fails() {
        let house = SigningKey::from_secret([7; 32]);
        let digest = Digest::new(vec![head("A", 3, 1), head("B", 5, 2)], 1_000).signed(&house);
        let json = digest.to_json();
        let read = Digest::from_json(&json).expect("a signed digest reads back");
        assert_eq!(read, digest);
        assert_eq!(read.signature.as_ref().unwrap().signer, house.public());

        let edit = |f: &dyn Fn(&mut serde_json::Value)| {
            let mut v: serde_json::Value = serde_json::from_slice(&json).unwrap();
            f(&mut v);
            Digest::from_json(&serde_json::to_vec(&v).unwrap())
        };
        let signer = house.public();
        // The time moved: only the signature catches it (the root does not bind time).
        assert_eq!(
            edit(&|v| v["created_at_ns"] = 2_000.into()),
            Err(DigestError::Signature { signer })
        );
        // Another key named as the signer.
        let other = SigningKey::from_secret([8; 32]).public();
        assert_eq!(
            edit(&|v| v["signature"]["signer"] = other.to_hex().into()),
            Err(DigestError::Signature { signer: other })
        );
        // One bit of the signature.
        let mut bad = digest.signature.clone().unwrap().signature;
        bad.0[0] ^= 1;
        assert_eq!(
            edit(&|v| v["signature"]["signature"] = bad.to_hex().into()),
            Err(DigestError::Signature { signer })
        );
        // A table dropped with root and count recomputed: a valid unsigned digest, but the
        // House's signature no longer covers it.
        let mut fewer = Digest::new(vec![head("A", 3, 1)], 1_000);
        fewer.signature = digest.signature.clone();
        assert_eq!(fewer.check(), Err(DigestError::Signature { signer }));
        // Without the signature the same edits are a well-formed (unsigned) digest.
        let unsigned = edit(&|v| {
            v.as_object_mut().unwrap().remove("signature");
            v["created_at_ns"] = 2_000.into();
        })
        .expect("an unsigned digest reads");
        assert_eq!(unsigned.signature, None);
        assert!(!String::from_utf8(unsigned.to_json())
            .unwrap()
            .contains("signature"));
        // The consistency proof names who signed the digest it checked against.
        let c = check_consistency(&read, read.clone(), agrees, &no_quarantine());
        assert!(c.ok);
        assert_eq!(c.digest_signer, Some(house.public()));
    }

    /// Version 2 leaves bind the receipt; a version 1 digest still checks; the two kinds of
    /// head do not mix; a changed receipt is named by the consistency check even though
    /// every event is the same.
    #[test]
    fn version_2_binds_receipts_and_version_1_still_checks() {
        let v1 = Digest::new([head("A", 3, 1), head("B", 5, 2)], 7);
        assert_eq!(v1.version, DIGEST_VERSION_NO_RECEIPTS);
        v1.check().unwrap();
        let v2 = Digest::new([head2("A", 3, 1), head2("B", 5, 2)], 7);
        assert_eq!(v2.version, DIGEST_VERSION_NO_QUARANTINE);
        v2.check().unwrap();
        assert_ne!(v1.root, v2.root, "the receipt is in the leaf");
        assert_eq!(Digest::from_json(&v2.to_json()).unwrap(), v2);
        assert_eq!(Digest::new([], 7).version, DIGEST_VERSION_NO_QUARANTINE);

        let mut bad = v2.clone();
        bad.tables[1].receipt = Some(Hash32([0; 32]));
        assert!(matches!(bad.check(), Err(DigestError::Root { .. })));
        let mut bad = v2.clone();
        bad.tables[1].receipt = None;
        assert_eq!(
            bad.check(),
            Err(DigestError::Receipt {
                version: 2,
                table: TableId::new("B").unwrap()
            })
        );
        let mut bad = v1.clone();
        bad.tables[0].receipt = Some(Hash32([0; 32]));
        assert!(matches!(
            bad.check(),
            Err(DigestError::Receipt { version: 1, .. })
        ));
        let mut bad = v1.clone();
        bad.version = 5;
        assert_eq!(bad.check(), Err(DigestError::Version(5)));

        let now = |receipt_of_b: Option<Hash32>| {
            check_consistency(
                &v2,
                v2.clone(),
                |d| {
                    Some(TableNow {
                        head_seq: d.seq,
                        hash_at_digest_seq: Some(d.head),
                        receipt_at_digest_seq: if d.table.as_str() == "B" {
                            receipt_of_b
                        } else {
                            d.receipt
                        },
                        chain_problem: None,
                        removed: None,
                    })
                },
                &no_quarantine(),
            )
        };
        assert!(now(v2.tables[1].receipt).ok);
        let moved = now(Some(Hash32([9; 32])));
        assert!(!moved.ok);
        assert_eq!(
            moved.tables[1],
            TableConsistency::ReceiptDiffers {
                table: TableId::new("B").unwrap(),
                digest_seq: 5,
                digest_receipt: v2.tables[1].receipt.unwrap(),
                ledger_receipt: Some(Hash32([9; 32])),
            }
        );
        assert!(moved.tables[0].is_ok());
        // A version 1 digest has no receipt to compare: its tables extend on their hashes.
        let c = check_consistency(
            &v1,
            v2.clone(),
            |d| {
                Some(TableNow {
                    head_seq: d.seq,
                    hash_at_digest_seq: Some(d.head),
                    receipt_at_digest_seq: Some(Hash32([9; 32])),
                    chain_problem: None,
                    removed: None,
                })
            },
            &no_quarantine(),
        );
        assert!(c.ok, "{c:?}");
    }

    /// An export against a digest: agreement needs the hash at the digest seq, and the
    /// receipt when both have one; a table not covered is neither agreement nor failure,
    /// and an export that covers nothing is not ok.
    #[test]
    fn an_export_is_checked_where_it_covers_the_digest() {
        use crate::export::ExportAt;
        let d = Digest::new([head2("A", 3, 1), head2("B", 5, 2), head2("C", 2, 3)], 7);
        let at = |h: &DigestHead, receipt: Option<Hash32>| ExportAt {
            hash: h.head,
            receipt,
        };
        let mut found = BTreeMap::new();
        found.insert(
            d.tables[0].table.clone(),
            at(&d.tables[0], d.tables[0].receipt),
        );
        found.insert(d.tables[1].table.clone(), at(&d.tables[1], None));
        let c = check_export(&d, &found);
        assert!(c.ok);
        assert_eq!(c.covered, 2);
        assert!(matches!(
            c.tables[..],
            [
                ExportTableCheck::Agrees {
                    receipt_checked: true,
                    ..
                },
                ExportTableCheck::Agrees {
                    receipt_checked: false,
                    ..
                },
                ExportTableCheck::NotCovered { digest_seq: 2, .. }
            ]
        ));
        let mut moved = found.clone();
        moved.get_mut(&d.tables[0].table).unwrap().receipt = Some(Hash32([9; 32]));
        let c = check_export(&d, &moved);
        assert!(!c.ok);
        assert!(matches!(
            c.tables[0],
            ExportTableCheck::ReceiptDiffers { digest_seq: 3, .. }
        ));
        let mut other = found.clone();
        other.get_mut(&d.tables[1].table).unwrap().hash = Hash32([9; 32]);
        let c = check_export(&d, &other);
        assert!(!c.ok);
        assert!(matches!(
            c.tables[1],
            ExportTableCheck::HashDiffers { digest_seq: 5, .. }
        ));
        let none = check_export(&d, &BTreeMap::new());
        assert_eq!((none.ok, none.covered), (false, 0));
    }

    /// Version 3 names the quarantine in a last leaf: the root and the inclusion proofs
    /// cover it, the file must match its version, and the consistency check names each way
    /// the quarantine can fail to extend.
    #[test]
    fn version_3_binds_the_quarantine() {
        let q = QuarantineAnchor {
            entries: 4,
            hash: Hash32([9; 32]),
        };
        let v2 = Digest::new([head2("A", 3, 1), head2("B", 5, 2)], 7);
        let v3 = v2.clone().with_quarantine(q);
        assert_eq!(v3.version, DIGEST_VERSION_NO_JOURNALS);
        assert_eq!(v3.leaves().len(), 3);
        assert_eq!(v3.leaves()[2], quarantine_leaf_hash(&q));
        assert_ne!(v3.root, v2.root);
        v3.check().expect("checks");
        for t in ["A", "B"] {
            let p = v3.inclusion(&TableId::new(t).unwrap()).expect("listed");
            assert_eq!(p.size, 3);
            assert!(p.verify(&v3), "{t}");
            // Only against the digest it came from, and only at its size.
            assert!(!p.verify(&v2), "{t}");
            for size in [2, 4, 8] {
                let resized = InclusionProof { size, ..p.clone() };
                assert!(!resized.verify(&v3), "{t} at size {size}");
            }
        }
        let reread = Digest::from_json(&v3.to_json()).expect("reads back");
        assert_eq!(reread, v3);
        // The quarantine edited, dropped or added without its version: refused.
        let mut edited = v3.clone();
        edited.quarantine = Some(QuarantineAnchor { entries: 3, ..q });
        assert!(matches!(edited.check(), Err(DigestError::Root { .. })));
        let mut dropped = v3.clone();
        dropped.quarantine = None;
        assert!(matches!(
            dropped.check(),
            Err(DigestError::Quarantine { version: 3 })
        ));
        let mut added = v2.clone();
        added.quarantine = Some(q);
        assert!(matches!(
            added.check(),
            Err(DigestError::Quarantine { version: 2 })
        ));

        let check = |n: QuarantineNow| check_consistency(&v3, v3.clone(), agrees, &n);
        let now = |entries, hash: Option<Hash32>, problem: Option<&str>| QuarantineNow {
            entries,
            hash_at_digest_entries: hash,
            chain_problem: problem.map(String::from),
        };
        let c = check(now(6, Some(q.hash), None));
        assert!(c.ok);
        assert_eq!(
            c.quarantine,
            Some(QuarantineConsistency::Extends {
                digest_entries: 4,
                entries: 6
            })
        );
        let c = check(now(3, None, None));
        assert!(!c.ok);
        assert!(matches!(
            c.quarantine,
            Some(QuarantineConsistency::Truncated { entries: 3, .. })
        ));
        let c = check(now(4, Some(Hash32([8; 32])), None));
        assert!(!c.ok);
        assert!(matches!(
            c.quarantine,
            Some(QuarantineConsistency::HashDiffers { .. })
        ));
        let c = check(now(4, Some(q.hash), Some("edited")));
        assert!(!c.ok);
        assert!(matches!(
            c.quarantine,
            Some(QuarantineConsistency::ChainBroken { .. })
        ));
        // A digest that names no quarantine has nothing to compare it with; a quarantine
        // that does not verify fails the check all the same.
        let c = check_consistency(&v2, v2.clone(), agrees, &now(4, None, None));
        assert!(c.ok);
        assert_eq!(c.quarantine, None);
        let c = check_consistency(&v2, v2.clone(), agrees, &now(0, None, Some("edited")));
        assert!(!c.ok);
        assert!(matches!(
            c.quarantine,
            Some(QuarantineConsistency::ChainBroken { .. })
        ));
    }

    /// The quarantine chain's step is the formula of schemas/README.md, byte for byte.
    #[test]
    fn the_quarantine_chain_is_the_documented_formula() {
        let prev = Hash32([3; 32]);
        let key = blake3::hash(b"roundledger/quarantine/v1");
        let mut m = prev.0.to_vec();
        m.extend_from_slice(&9u64.to_be_bytes());
        m.extend_from_slice(&3u64.to_be_bytes());
        m.extend_from_slice(b"abc");
        let by_hand = Hash32(*blake3::keyed_hash(key.as_bytes(), &m).as_bytes());
        assert_eq!(quarantine_next(&prev, 9, b"abc"), by_hand);
        assert_ne!(quarantine_next(&prev, 8, b"abc"), by_hand);
        assert_ne!(quarantine_next(&prev, 9, b"abd"), by_hand);
        assert_ne!(quarantine_next(&prev, 9, b"ab"), by_hand);
    }

    /// The anchor seqs follow their rule, and the first altered event is bounded by the
    /// lowest anchor that differs and the highest that matches.
    #[test]
    fn anchors_bound_the_first_altered_event() {
        assert_eq!(anchor_seqs(1), Vec::<u64>::new());
        assert_eq!(anchor_seqs(5), vec![4, 3, 2, 1]);
        assert_eq!(
            anchor_seqs(67),
            vec![66, 65, 64, 63, 62, 61, 60, 59, 51, 35, 3]
        );
        assert_eq!(anchor_seqs(1_000_000_000).len(), 8 + 26);
        let seqs = anchor_seqs(67);
        let d = DigestHead {
            anchors: seqs.iter().map(|s| Hash32([*s as u8; 32])).collect(),
            ..head2("T", 67, 1)
        };
        // The ledger agrees up to `good`, differs after.
        let now = |good: u64| -> Vec<Option<Hash32>> {
            seqs.iter()
                .map(|s| Some(Hash32([if *s <= good { *s as u8 } else { 0 }; 32])))
                .collect()
        };
        let at = |good| {
            let a = locate_altered(&d, &now(good)).expect("anchored");
            (a.first_seq, a.last_seq)
        };
        assert_eq!(
            at(62),
            (63, 63),
            "the issue's case: 63 altered, 67 digested"
        );
        assert_eq!(at(66), (67, 67));
        assert_eq!(at(40), (36, 51));
        assert_eq!(at(0), (1, 3));
    }

    fn journal(name: &str, entries: u64, byte: u8) -> JournalAnchor {
        JournalAnchor {
            name: name.to_string(),
            entries,
            hash: Hash32([byte; 32]),
        }
    }

    /// Version 4: the journals' leaves follow the quarantine's, the root covers them, the
    /// file must match its version, and the check names each way a journal can fail.
    #[test]
    fn version_4_binds_the_journals() {
        let q = QuarantineAnchor {
            entries: 4,
            hash: Hash32([9; 32]),
        };
        let v3 = Digest::new([head2("A", 3, 1)], 7).with_quarantine(q);
        let js = vec![journal("cases.jsonl", 0, 0), journal("audit.jsonl", 5, 3)];
        let anchors = |h: &DigestHead| {
            let seqs = anchor_seqs(h.seq);
            seqs.iter().map(|s| Hash32([*s as u8; 32])).collect()
        };
        let v4 = v3.clone().with_anchors_and_journals(anchors, js);
        assert_eq!(v4.tables[0].anchors.len(), 2, "seqs 2 and 1");
        assert_eq!(v4.leaves()[0], leaf_hash_v3(&v4.tables[0]));
        let mut moved = v4.clone();
        moved.tables[0].anchors[1] = Hash32([7; 32]);
        assert!(matches!(moved.check(), Err(DigestError::Root { .. })));
        let mut short = v4.clone();
        short.tables[0].anchors.pop();
        assert!(matches!(short.check(), Err(DigestError::Anchors { .. })));
        assert_eq!(v4.version, DIGEST_VERSION);
        assert_eq!(v4.journals[0].name, "audit.jsonl", "in name order");
        assert_eq!(v4.leaves().len(), 4);
        assert_eq!(v4.leaves()[2], journal_leaf_hash(&v4.journals[0]));
        assert_ne!(v4.root, v3.root);
        assert_eq!(Digest::from_json(&v4.to_json()).expect("reads back"), v4);
        let mut edited = v4.clone();
        edited.journals[0].entries = 4;
        assert!(matches!(edited.check(), Err(DigestError::Root { .. })));
        let mut dropped = v4.clone();
        dropped.journals.clear();
        assert_eq!(dropped.check(), Err(DigestError::Journals { version: 4 }));
        let mut added = v3.clone();
        added.journals = v4.journals.clone();
        assert_eq!(added.check(), Err(DigestError::Journals { version: 3 }));

        let now = |entries: u64, at: Option<Hash32>, problem: Option<(u64, String)>| {
            let n = JournalNow {
                name: "audit.jsonl".to_string(),
                entries,
                hash_at_digest_entries: at,
                chain_problem: problem,
            };
            check_journals(&v4, &[n])
        };
        let name = "audit.jsonl".to_string();
        let ok = now(6, Some(Hash32([3; 32])), None);
        assert!(ok.iter().all(JournalConsistency::is_ok), "{ok:?}");
        assert_eq!(ok.len(), 2, "the absent cases journal extends its 0 lines");
        assert_eq!(
            now(3, None, None)[0],
            JournalConsistency::Truncated {
                name: name.clone(),
                digest_entries: 5,
                entries: 3
            }
        );
        assert!(matches!(
            now(5, Some(Hash32([4; 32])), None)[0],
            JournalConsistency::HashDiffers { .. }
        ));
        assert!(matches!(
            &now(1, None, Some((2, "hash".into())))[0],
            JournalConsistency::ChainBroken { line: 2, .. }
        ));
    }
}
