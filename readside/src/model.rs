//! The read model: what lists and lookups are served from, kept on disk in a `Store` of its
//! own (`kv`, in `<ledger>/readmodel/store/`), separate from the ledger so that it can be
//! deleted and rebuilt without touching a stored event.
//!
//! One key space, each model space a key prefix byte, so that one pass is one commit:
//! rows of rounds by (table, round); rounds by (time, table, round), (table, time, round)
//! and (table, box, round); findings by time, (table, time), (code, time) and (severity,
//! time); disputes by time and (table, time); per-table status, configuration seqs,
//! finance per (shift start, table) (`shiftrow`); per-table cursors; the edges of
//! configured pay tables (`edges`); the version, the day rule and the counts. Times are
//! the rounds' opening device times (UTC ns); keys are big-endian so the store's order
//! is numeric.
//!
//! Invariants:
//! - Derived only from the ledger: `index::pass` writes it, one commit per pass with
//!   the cursors, so a crash loses or double-counts nothing.
//! - Every value is sealed: a keyed BLAKE3 over its key and bytes. A value that fails its
//!   seal, or an index key that does not match its row, is an integrity error, never served.
//! - A model of another `MODEL_VERSION`, or built under another day rule (its shifts
//!   cut the finance rows), is refused at open (`ModelError::Version`): rebuild it.
//! - Blocking (the store): call from `spawn_blocking`. A query reads the keys of its range in
//!   order and the rows of its page only. A whole list (no time, box or verdict filter)
//!   reads only its page's keys: its total is a kept count. A filtered list's total
//!   counts the keys of its range; a verdict, or a box without a table, reads their rows.

use crate::dealers::DealerRow;
use crate::keystr::push_str;
use crate::kv::{prefix_end, EntryResult, ModelKv};
use crate::row::Digest;
use crate::signals::{Coverage, SignalRow};
use ledger::days::DayRule;
use schemas::api::{DisputeRow, RoundRow};
use schemas::finance::ShiftRow;
use schemas::report::{Finding, Severity, Verdict};
use schemas::{BoxNo, RoundId, RuleSet, TableId};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::ops::Bound;
use std::path::{Path, PathBuf};

/// The on-disk format's version; a model of another version is rebuilt or refused. 7: the
/// model lives in a `Store` of its own (`kv`), in `<model dir>/store`. 8: decision signals
/// and their coverage (`signals`). 9: dealer quality counters (`dealers`). 10: the
/// dealers' floor row. 11: hold watches per table and `hold_outside` signals (`holds`).
/// 12: dealers' dealing time over stints. 13: hold watches name shifts given up unjudged.
/// 14: a cursor keeps its table's last dealer change, so analytics resumed after a
/// restart know the dealer.
pub const MODEL_VERSION: u32 = 14;
/// Bytes of the keyed BLAKE3 seal before each value.
pub const SEAL_BYTES: usize = 16;
/// Most findings or disputes of one round the model keys (their index is a `u16`).
pub const ROUND_ISSUES_MAX: usize = u16::MAX as usize;
const SEAL_CONTEXT: &str = "roundledger readmodel v1 row seal";

/// The spaces: the first byte of every key.
pub(crate) mod space {
    pub const VERSION: u8 = b'v';
    pub const META: u8 = b'm';
    pub const ROUND: u8 = b'r';
    pub const BY_TIME: u8 = b't';
    pub const TABLE_TIME: u8 = b'T';
    pub const BY_BOX: u8 = b'b';
    pub const FINDING: u8 = b'f';
    pub const FINDING_TABLE: u8 = b'F';
    pub const FINDING_CODE: u8 = b'c';
    pub const FINDING_SEVERITY: u8 = b's';
    pub const DISPUTE: u8 = b'd';
    pub const DISPUTE_TABLE: u8 = b'D';
    pub const STATUS: u8 = b'S';
    pub const CONFIG: u8 = b'g';
    pub const FINANCE_SHIFT: u8 = b'w';
    pub const RULE: u8 = b'x';
    pub const CURSOR: u8 = b'k';
    pub const EDGE: u8 = b'e';
    pub const SIGNAL: u8 = b'a';
    pub const ANALYTICS: u8 = b'A';
    pub const DEALER: u8 = b'q';
    pub const DEALER_FLOOR: u8 = b'Q';
    pub const HOLD_WATCH: u8 = b'h';
    pub const STREAM: u8 = crate::streams::SPACE;
}

/// Why the model could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The store could not open the model's directory.
    #[error("read model at {path}: {source}")]
    Open {
        /// The model's directory.
        path: PathBuf,
        /// The store's error.
        #[source]
        source: ledger::Error,
    },
    /// The store failed reading or writing.
    #[error("read model: {0}")]
    Store(#[from] ledger::Error),
    /// The model is of another `MODEL_VERSION` or day rule: rebuild it.
    #[error(
        "read model is version {found}, this build reads version {}",
        MODEL_VERSION
    )]
    Version {
        /// What the model records: its version in hex, "missing", or its other day rule.
        found: String,
    },
    /// A value fails its seal or an index key does not match its row; the value names it.
    #[error("read model: {0} fails its check (roundledger readmodel rebuild)")]
    Corrupt(String),
}

impl From<ModelError> for crate::ReadError {
    fn from(e: ModelError) -> crate::ReadError {
        match e {
            ModelError::Corrupt(_) | ModelError::Version { .. } => {
                crate::ReadError::Integrity(e.to_string())
            }
            _ => crate::ReadError::Internal(e.to_string()),
        }
    }
}

/// The counts of the whole model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    /// Ledger events the index has read, over all tables.
    pub events_indexed: u64,
    /// Rounds in the model, over all tables.
    pub rounds: u64,
    /// The ledger's count of days removed by retention when the model last read it
    /// (`ledger::Tier::removals`): a higher count means rows of a removed day may stay.
    #[serde(default)]
    pub removals_seen: u64,
}

/// One table's status: what `/v1/tables` and `/v1/chain` show.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableStatus {
    /// The rule set of the configuration in force; `None` before any `TableOpened`.
    pub rule_set: Option<RuleSet>,
    /// The highest seq up to which the chain verifies from genesis.
    pub verified_through: u64,
    /// Why the chain stops verifying after `verified_through`, if it does.
    pub problem: Option<String>,
    /// Rounds of the table in the model.
    pub rounds: u64,
    /// Rounds whose verdict is disputed.
    pub disputed: u64,
    /// Rounds whose verdict is irregular.
    pub irregular: u64,
    /// Rounds whose verdict is void.
    pub void: u64,
}

/// A finding as the finding spaces keep it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingRec {
    /// The table of the round.
    pub table: TableId,
    /// The round the finding is about.
    pub round: RoundId,
    /// The round's opening device time, UTC nanoseconds: the key's time.
    pub opened_at_ns: i64,
    /// The finding as the replayer reported it.
    pub finding: Finding,
}

/// A page of a list: the items in it and how many match in all.
#[derive(Debug, Clone)]
pub struct Page<T> {
    /// The items of this page, in the list's order.
    pub items: Vec<T>,
    /// Items that match the filter in all pages.
    pub total: u64,
}

impl<T> Page<T> {
    fn empty() -> Page<T> {
        Page {
            items: Vec::new(),
            total: 0,
        }
    }
}

/// Which rounds a list wants.
#[derive(Debug, Clone, Default)]
pub struct RoundFilter {
    /// Only rounds of this table.
    pub table: Option<TableId>,
    /// Only rounds opened at or after this time, UTC nanoseconds.
    pub from_ns: Option<i64>,
    /// Only rounds opened before this time, UTC nanoseconds (exclusive).
    pub to_ns: Option<i64>,
    /// Only rounds where this box played.
    pub box_no: Option<BoxNo>,
    /// Only rounds with this verdict.
    pub verdict: Option<Verdict>,
}

/// Which findings or disputes a list wants (code and severity: findings only).
#[derive(Debug, Clone, Default)]
pub struct IssueFilter {
    /// Only issues of rounds of this table.
    pub table: Option<TableId>,
    /// Only issues of rounds opened at or after this time, UTC nanoseconds.
    pub from_ns: Option<i64>,
    /// Only issues of rounds opened before this time, UTC nanoseconds (exclusive).
    pub to_ns: Option<i64>,
    /// Only findings with this stable code.
    pub code: Option<String>,
    /// Only findings of this severity.
    pub severity: Option<Severity>,
}

/// The model's directory in a ledger directory: `<ledger>/readmodel`.
pub fn default_dir(ledger_dir: &Path) -> PathBuf {
    ledger_dir.join("readmodel")
}

/// The name of an entry of `dir` besides `kv::STORE_DIR`, if any: what a model of an older
/// layout left. `None` for a missing or empty directory.
fn older_layout(dir: &Path) -> Option<String> {
    let entries = std::fs::read_dir(dir).ok()?;
    entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|name| name != crate::kv::STORE_DIR)
}

/// The read model: its store (`kv`), and the day rule its shift rows are cut by.
pub struct Model {
    pub(crate) db: ModelKv,
    path: Option<PathBuf>,
    rule: DayRule,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Model({:?})", self.path)
    }
}

impl Model {
    /// Opens (or creates) the model at `dir` under `rule`. Refuses a model of another
    /// version or day rule.
    pub fn open(dir: &Path, rule: &DayRule) -> Result<Model, ModelError> {
        Model::init(Model::open_db(dir)?, Some(dir.to_path_buf()), Some(rule))
    }

    /// Opens the model at `dir` under the day rule it was built with (`verify` compares
    /// it to a fresh rebuild under the same rule).
    pub fn open_as_built(dir: &Path) -> Result<Model, ModelError> {
        Model::init(Model::open_db(dir)?, Some(dir.to_path_buf()), None)
    }

    /// Opens the model's store. A directory holding anything besides `kv::STORE_DIR` is
    /// a model of an older layout (version 6 or before, sled files at its top):
    /// `ModelError::Version`, so that callers delete and rebuild it.
    fn open_db(dir: &Path) -> Result<ModelKv, ModelError> {
        if let Some(other) = older_layout(dir) {
            return Err(ModelError::Version {
                found: format!("6 or older ({other} beside the store)"),
            });
        }
        ModelKv::open(dir).map_err(|source| ModelError::Open {
            path: dir.to_path_buf(),
            source,
        })
    }

    /// A model in a temporary directory, removed on drop (rebuilds to compare).
    pub fn temporary(rule: &DayRule) -> Result<Model, ModelError> {
        Model::init(ModelKv::temporary()?, None, Some(rule))
    }

    /// The day rule its shift rows are cut by.
    pub fn rule(&self) -> &DayRule {
        &self.rule
    }

    fn init(
        db: ModelKv,
        path: Option<PathBuf>,
        rule: Option<&DayRule>,
    ) -> Result<Model, ModelError> {
        let version = MODEL_VERSION.to_be_bytes();
        match db.get(&[space::VERSION])? {
            Some(v) if v.as_ref() == version => {}
            Some(v) => {
                return Err(ModelError::Version {
                    found: hex::encode(v),
                })
            }
            None if db.is_empty()? => {
                db.insert(&[space::VERSION], version.to_vec())?;
                let rule = rule.cloned().unwrap_or_else(default_rule);
                let k = [space::RULE];
                db.insert(&k, seal(&k, &rule.spec()))?;
            }
            None => {
                return Err(ModelError::Version {
                    found: "missing".into(),
                })
            }
        }
        let built: String = match db.get(&[space::RULE])? {
            Some(v) => decode(&[space::RULE], &v)?,
            None => return Err(ModelError::Corrupt("the day rule record".into())),
        };
        if let Some(r) = rule.filter(|r| r.spec() != built) {
            return Err(ModelError::Version {
                found: format!("built under day rule {built:?}, not {:?}", r.spec()),
            });
        }
        let rule = DayRule::from_spec(&built)
            .map_err(|e| ModelError::Corrupt(format!("the day rule record: {e}")))?;
        let model = Model { db, path, rule };
        // The small records a start reads must pass their seals: else rebuild or refuse.
        model.meta()?;
        for kv in model.db.scan_prefix(&[space::CURSOR]) {
            let (k, v) = kv?;
            unseal(&k, &v)?;
        }
        Ok(model)
    }

    /// Deletes every record and starts an empty model of this version. The edge book
    /// stays: its priced edges are a function of the pay tables alone.
    pub fn clear(&self) -> Result<(), ModelError> {
        let mut edges = Vec::new();
        for kv in self.db.scan_prefix(&[space::EDGE]) {
            let (k, v) = kv?;
            // A record that fails its seal goes with the rest: it is priced again.
            if unseal(&k, &v).is_ok() {
                edges.push((k, v));
            }
        }
        self.db.clear()?;
        for (k, v) in edges {
            self.db.insert(&k, v)?;
        }
        self.db
            .insert(&[space::VERSION], MODEL_VERSION.to_be_bytes().to_vec())?;
        let k = [space::RULE];
        self.db.insert(&k, seal(&k, &self.rule.spec()))?;
        self.db.flush()?;
        Ok(())
    }

    /// Makes every write durable.
    pub fn flush(&self) -> Result<(), ModelError> {
        self.db.flush()?;
        Ok(())
    }

    /// The counts of the whole model; zeros for a model never written.
    pub fn meta(&self) -> Result<Meta, ModelError> {
        Ok(self.get(&[space::META])?.unwrap_or_default())
    }

    /// The ledger's removal count the model was written at; `None` for a model never
    /// written (new or cleared).
    pub fn removals_seen(&self) -> Result<Option<u64>, ModelError> {
        let meta: Option<Meta> = self.get(&[space::META])?;
        Ok(meta.map(|m| m.removals_seen))
    }

    /// A round's row, disputes and findings.
    pub fn digest(&self, table: &TableId, round: u64) -> Result<Option<Digest>, ModelError> {
        let d: Option<Digest> = self.get(&round_key(table, round))?;
        if let Some(d) = &d {
            if d.row.table != *table || d.row.round.0 != round {
                return Err(ModelError::Corrupt(format!("round row {table}/{round}")));
            }
        }
        Ok(d)
    }

    /// One table's status; `None` for a table the model has not seen.
    pub fn status(&self, table: &TableId) -> Result<Option<TableStatus>, ModelError> {
        self.get(&table_key(space::STATUS, table))
    }

    /// Every table's status, in table order (one row per table, not per round).
    pub fn statuses(&self) -> Result<Vec<(TableId, TableStatus)>, ModelError> {
        let mut out = Vec::new();
        for kv in self.db.scan_prefix(&[space::STATUS]) {
            let (k, v) = kv?;
            let s: TableStatus = decode(&k, &v)?;
            let table = table_of(&k[1..])
                .ok_or_else(|| ModelError::Corrupt(format!("status key {}", hex::encode(&k))))?;
            out.push((table, s));
        }
        Ok(out)
    }

    /// The seq of the configuration in force at `seq`: the last `TableOpened` at or before.
    pub fn config_at(&self, table: &TableId, seq: u64) -> Result<Option<u64>, ModelError> {
        let lo = table_key(space::CONFIG, table);
        let mut hi = lo.clone();
        hi.extend_from_slice(&seq.to_be_bytes());
        match self
            .db
            .range(Bound::Included(lo), Bound::Included(hi))
            .last()
        {
            None => Ok(None),
            Some(kv) => {
                let (k, _) = kv?;
                Ok(Some(be_u64_at(&k, k.len() - 8)?))
            }
        }
    }

    /// Every table's shift rows whose shift starts in `from_ns..to_ns`, by start, then
    /// table. One range scan: a day of 50 tables and 3 shifts reads 150 rows.
    pub fn shift_rows(&self, from_ns: i64, to_ns: i64) -> Result<Vec<ShiftRow>, ModelError> {
        let lo = shift_key(from_ns, None);
        let hi = shift_key(to_ns, None);
        let mut out = Vec::new();
        for kv in self.db.range(Bound::Included(lo), Bound::Excluded(hi)) {
            let (k, v) = kv?;
            let row: ShiftRow = decode(&k, &v)?;
            let table = row.table.as_ref().map(|t| t.as_str());
            if shift_key(row.starts_at_ns, row.table.as_ref()) != k || table.is_none() {
                return Err(ModelError::Corrupt(format!("shift row {}", key_text(&k))));
            }
            out.push(row);
        }
        Ok(out)
    }

    /// Whether the decision analytics judged every round; `None` before the first pass.
    pub fn coverage(&self) -> Result<Option<Coverage>, ModelError> {
        self.get(&[space::ANALYTICS])
    }

    /// The decision signals of one table, or of all, by table then round; at most `max`.
    pub fn signals(
        &self,
        table: Option<&TableId>,
        max: usize,
    ) -> Result<Vec<SignalRow>, ModelError> {
        let prefix = match table {
            Some(t) => table_key(space::SIGNAL, t),
            None => vec![space::SIGNAL],
        };
        let mut out = Vec::new();
        for kv in self.db.scan_prefix(&prefix).fwd().take(max) {
            let (k, v) = kv?;
            out.push(signal_row(&k, &v)?);
        }
        Ok(out)
    }

    /// Tables with a decision signal, in table order, after `after`; at most `max`. Each
    /// table costs one seek, whatever its signals.
    pub fn signal_tables(
        &self,
        after: Option<&TableId>,
        max: usize,
    ) -> Result<Vec<TableId>, ModelError> {
        let hi = prefix_end(&[space::SIGNAL]).expect("a space byte below 0xff");
        let mut from = match after {
            Some(t) => prefix_end(&table_key(space::SIGNAL, t)),
            None => Some(vec![space::SIGNAL]),
        };
        let mut out = Vec::new();
        while let Some(lo) = from.filter(|_| out.len() < max) {
            let range = self
                .db
                .range(Bound::Included(lo), Bound::Excluded(hi.clone()));
            let Some(kv) = range.first() else { break };
            let (k, v) = kv?;
            let row: SignalRow = decode(&k, &v)?;
            let table = TableId::new(row.table.clone()).ok();
            let Some(table) = table.filter(|_| signal_key(&row) == k) else {
                return Err(ModelError::Corrupt(format!("signal {}", key_text(&k))));
            };
            from = prefix_end(&table_key(space::SIGNAL, &table));
            out.push(table);
        }
        Ok(out)
    }

    /// `table`'s decision signals above `after_round` (all without one), by round, kind
    /// and subject; at most `max`.
    pub fn signals_after(
        &self,
        table: &TableId,
        after_round: Option<u64>,
        max: usize,
    ) -> Result<Vec<SignalRow>, ModelError> {
        let prefix = table_key(space::SIGNAL, table);
        let hi = prefix_end(&prefix).expect("a table key ends below 0xff");
        let mut lo = prefix;
        if let Some(r) = after_round {
            let Some(next) = r.checked_add(1) else {
                return Ok(Vec::new());
            };
            lo.extend_from_slice(&next.to_be_bytes());
        }
        let mut out = Vec::new();
        for kv in self
            .db
            .range(Bound::Included(lo), Bound::Excluded(hi))
            .fwd()
            .take(max)
        {
            let (k, v) = kv?;
            out.push(signal_row(&k, &v)?);
        }
        Ok(out)
    }

    /// The decision statistics' states the last pass left (`streams`), at most `max`.
    pub fn stream_states(
        &self,
        max: usize,
    ) -> Result<Vec<(analytics::StreamKey, analytics::CusumState)>, ModelError> {
        let mut out = Vec::new();
        for kv in self.db.scan_prefix(&[space::STREAM]).fwd().take(max) {
            let (k, v) = kv?;
            let row: crate::streams::StreamRow = decode(&k, &v)?;
            let resumed = Some(row).filter(|r| r.key() == k).and_then(|r| r.resumed());
            let Some(state) = resumed else {
                return Err(ModelError::Corrupt(format!("statistic {}", key_text(&k))));
            };
            out.push(state);
        }
        Ok(out)
    }

    /// One dealer's quality counters; `None` for a dealer with no decided round.
    pub fn dealer(&self, dealer: &str) -> Result<Option<DealerRow>, ModelError> {
        self.get(&str_key(space::DEALER, dealer))
    }

    /// The floor's counts over every dealer's decided rounds.
    pub fn dealer_floor(&self) -> Result<crate::dealers::FloorRow, ModelError> {
        Ok(self.get(&[space::DEALER_FLOOR])?.unwrap_or_default())
    }

    /// The first `max` dealers' rows, in key order (shorter ids first), and how many
    /// dealers the model holds (their keys counted, their rows not decoded).
    pub fn dealers_page(&self, max: usize) -> Result<(Vec<DealerRow>, u64), ModelError> {
        let rows = self.dealers(max)?;
        let mut total = 0u64;
        for kv in self.db.scan_prefix(&[space::DEALER]).fwd() {
            kv?;
            total += 1;
        }
        assert!(total >= rows.len() as u64, "a page is part of its whole");
        Ok((rows, total))
    }

    /// Every dealer's quality counters, in key order (shorter ids first); at most `max`.
    pub fn dealers(&self, max: usize) -> Result<Vec<DealerRow>, ModelError> {
        let mut out = Vec::new();
        for kv in self.db.scan_prefix(&[space::DEALER]).fwd().take(max) {
            let (k, v) = kv?;
            let row: DealerRow = decode(&k, &v)?;
            if str_key(space::DEALER, &row.dealer) != k {
                return Err(ModelError::Corrupt(format!("dealer {}", key_text(&k))));
            }
            out.push(row);
        }
        Ok(out)
    }

    pub(crate) fn get<T: DeserializeOwned>(&self, key: &[u8]) -> Result<Option<T>, ModelError> {
        match self.db.get(key)? {
            None => Ok(None),
            Some(v) => decode(key, &v).map(Some),
        }
    }
}

/// The day rule of a model that records none: the defaults `--help` states.
fn default_rule() -> DayRule {
    DayRule::new(
        ledger::days::DAY_START_DEFAULT,
        ledger::days::TIME_ZONE_DEFAULT,
    )
    .expect("the default day rule is valid")
}

/// A shift row's key: the shift's start, then its table (none: the range's bound).
pub(crate) fn shift_key(starts_at_ns: i64, table: Option<&TableId>) -> Vec<u8> {
    let mut k = vec![space::FINANCE_SHIFT];
    k.extend_from_slice(&time_key(starts_at_ns));
    if let Some(t) = table {
        push_str(&mut k, t.as_str());
    }
    k
}

// ---- Lists

impl Model {
    /// A page of rounds, newest first. A table's rounds with a box come from the box space
    /// (round order); the rest from the time spaces. Verdict, and a box without a table,
    /// filter the rows of the time range.
    pub fn rounds(
        &self,
        f: &RoundFilter,
        offset: u64,
        limit: u64,
    ) -> Result<Page<RoundRow>, ModelError> {
        let keys = match (&f.table, f.box_no) {
            (Some(t), Some(b)) => {
                let mut p = table_key(space::BY_BOX, t);
                p.push(b.0);
                self.db.scan_prefix(&p)
            }
            (Some(t), None) => self.time_range(table_key(space::TABLE_TIME, t), f.from_ns, f.to_ns),
            (None, _) => self.time_range(vec![space::BY_TIME], f.from_ns, f.to_ns),
        };
        let needs_row = f.verdict.is_some()
            || (f.box_no.is_some() && f.table.is_none())
            || (f.box_no.is_some() && (f.from_ns.is_some() || f.to_ns.is_some()));
        let mut page = Page::empty();
        let whole = f.from_ns.is_none() && f.to_ns.is_none() && f.box_no.is_none();
        // A whole list's count is kept: read only the page's keys.
        let known_total = match (&f.table, whole && f.verdict.is_none()) {
            (_, false) => None,
            (None, true) => Some(self.meta()?.rounds),
            (Some(t), true) => Some(self.status(t)?.map_or(0, |s| s.rounds)),
        };
        let take = if known_total.is_some() {
            offset.saturating_add(limit)
        } else {
            u64::MAX
        };
        for kv in keys.rev().take(usize::try_from(take).unwrap_or(usize::MAX)) {
            let (k, _) = kv?;
            let (table, round) = round_of_key(&k)?;
            let in_page = page.total >= offset && (page.items.len() as u64) < limit;
            if !needs_row && !in_page {
                page.total += 1;
                continue;
            }
            let d = self.digest(&table, round)?.ok_or_else(|| {
                ModelError::Corrupt(format!("key {} has no row", hex::encode(&k)))
            })?;
            check_key_matches(&k, &d.row)?;
            let row = d.row;
            let keep = f.box_no.is_none_or(|b| row.boxes.contains(&b))
                && f.from_ns.is_none_or(|x| row.opened_at_ns >= x)
                && f.to_ns.is_none_or(|x| row.opened_at_ns < x)
                && f.verdict
                    .is_none_or(|v| row.verdict == v && !row.in_progress);
            if keep {
                if page.total >= offset && (page.items.len() as u64) < limit {
                    page.items.push(row);
                }
                page.total += 1;
            }
        }
        if let Some(total) = known_total {
            page.total = total;
        }
        assert!(
            page.items.len() as u64 <= limit,
            "a page holds at most its limit"
        );
        Ok(page)
    }

    /// A page of findings, newest round first, from the most selective space.
    pub fn findings(
        &self,
        f: &IssueFilter,
        offset: u64,
        limit: u64,
    ) -> Result<Page<FindingRec>, ModelError> {
        let code = f.code.as_deref().filter(|c| !c.is_empty());
        let prefix = match (code, &f.table, f.severity) {
            (Some(c), _, _) => str_key(space::FINDING_CODE, c),
            (None, Some(t), _) => table_key(space::FINDING_TABLE, t),
            (None, None, Some(s)) => vec![space::FINDING_SEVERITY, severity_byte(s)],
            (None, None, None) => vec![space::FINDING],
        };
        let keep = |r: &FindingRec| {
            f.table.as_ref().is_none_or(|t| *t == r.table)
                && code.is_none_or(|c| c == r.finding.code)
                && f.severity.is_none_or(|s| r.finding.severity >= s)
        };
        self.issue_page(prefix, f, offset, limit, keep)
    }

    /// A page of disputed lines, newest round first.
    pub fn disputes(
        &self,
        f: &IssueFilter,
        offset: u64,
        limit: u64,
    ) -> Result<Page<DisputeRow>, ModelError> {
        let prefix = match &f.table {
            Some(t) => table_key(space::DISPUTE_TABLE, t),
            None => vec![space::DISPUTE],
        };
        self.issue_page(prefix, f, offset, limit, |_: &DisputeRow| true)
    }

    /// Reads a time range of an issue space newest first. The space matches every filter
    /// but `keep`'s when `keep` always holds, so only the page's values are read.
    fn issue_page<T: DeserializeOwned>(
        &self,
        prefix: Vec<u8>,
        f: &IssueFilter,
        offset: u64,
        limit: u64,
        keep: impl Fn(&T) -> bool,
    ) -> Result<Page<T>, ModelError> {
        let exact = match prefix[0] {
            space::FINDING_CODE => f.table.is_none() && f.severity.is_none(),
            space::FINDING_TABLE => f.severity.is_none(),
            _ => true,
        };
        let mut page = Page::empty();
        for kv in self.time_range(prefix, f.from_ns, f.to_ns).rev() {
            let (k, v) = kv?;
            let in_page = page.total >= offset && (page.items.len() as u64) < limit;
            if exact && !in_page {
                page.total += 1;
                continue;
            }
            let item: T = decode(&k, &v)?;
            if keep(&item) {
                if page.total >= offset && (page.items.len() as u64) < limit {
                    page.items.push(item);
                }
                page.total += 1;
            }
        }
        assert!(
            page.items.len() as u64 <= limit,
            "a page holds at most its limit"
        );
        Ok(page)
    }

    /// The keys of `prefix` whose time (right after the prefix) is in `from_ns..to_ns`.
    fn time_range(
        &self,
        prefix: Vec<u8>,
        from_ns: Option<i64>,
        to_ns: Option<i64>,
    ) -> crate::kv::Range<'_> {
        let mut lo = prefix.clone();
        lo.extend_from_slice(&time_key(from_ns.unwrap_or(i64::MIN)));
        let hi = match to_ns {
            Some(t) => {
                let mut hi = prefix;
                hi.extend_from_slice(&time_key(t));
                Bound::Excluded(hi)
            }
            None => match prefix_end(&prefix) {
                Some(e) => Bound::Excluded(e),
                None => Bound::Unbounded,
            },
        };
        self.db.range(Bound::Included(lo), hi)
    }
}

// ---- Keys and seals

/// A seal: keyed BLAKE3 over the key and the value's bytes.
fn seal_of(key: &[u8], body: &[u8]) -> [u8; SEAL_BYTES] {
    let mut h = blake3::Hasher::new_derive_key(SEAL_CONTEXT);
    h.update(&(key.len() as u64).to_be_bytes());
    h.update(key);
    h.update(body);
    let mut out = [0; SEAL_BYTES];
    out.copy_from_slice(&h.finalize().as_bytes()[..SEAL_BYTES]);
    out
}

/// A value as stored: its seal, then its JSON.
pub(crate) fn seal<T: Serialize>(key: &[u8], value: &T) -> Vec<u8> {
    // Our own record types (no maps with non-string keys, no floats) always serialise.
    let body = serde_json::to_vec(value).expect("model records serialise");
    let mut out = seal_of(key, &body).to_vec();
    out.extend_from_slice(&body);
    out
}

fn unseal<'a>(key: &[u8], v: &'a [u8]) -> Result<&'a [u8], ModelError> {
    let corrupt = || ModelError::Corrupt(format!("the value of key {}", hex::encode(key)));
    if v.len() < SEAL_BYTES {
        return Err(corrupt());
    }
    let (s, body) = v.split_at(SEAL_BYTES);
    if s != seal_of(key, body) {
        return Err(corrupt());
    }
    Ok(body)
}

pub(crate) fn decode<T: DeserializeOwned>(key: &[u8], v: &[u8]) -> Result<T, ModelError> {
    serde_json::from_slice(unseal(key, v)?)
        .map_err(|e| ModelError::Corrupt(format!("the value of key {}: {e}", hex::encode(key))))
}

/// A stored signal row, checked against the key it is stored under.
pub(crate) fn signal_row(k: &[u8], v: &[u8]) -> Result<SignalRow, ModelError> {
    let row: SignalRow = decode(k, v)?;
    if signal_key(&row) != k {
        return Err(ModelError::Corrupt(format!("signal {}", key_text(k))));
    }
    Ok(row)
}

/// A time that sorts as a signed number: the sign bit flipped, big-endian.
pub(crate) fn time_key(v: i64) -> [u8; 8] {
    ((v as u64) ^ (1 << 63)).to_be_bytes()
}

pub(crate) fn str_key(space: u8, s: &str) -> Vec<u8> {
    let mut k = vec![space];
    push_str(&mut k, s);
    k
}

pub(crate) fn table_key(space: u8, table: &TableId) -> Vec<u8> {
    str_key(space, table.as_str())
}

/// A signal's key: its table, round, kind and subject.
pub(crate) fn signal_key(row: &SignalRow) -> Vec<u8> {
    let mut k = str_key(space::SIGNAL, &row.table);
    k.extend_from_slice(&row.round.to_be_bytes());
    push_str(&mut k, &row.kind);
    push_str(&mut k, &row.subject);
    k
}

pub(crate) fn round_key(table: &TableId, round: u64) -> Vec<u8> {
    let mut k = table_key(space::ROUND, table);
    k.extend_from_slice(&round.to_be_bytes());
    k
}

pub(crate) fn severity_byte(s: Severity) -> u8 {
    match s {
        Severity::Info => 0,
        Severity::Warning => 1,
        Severity::Critical => 2,
    }
}

/// Every key besides the row that a round's digest puts in the model, with its value.
pub(crate) fn index_entries(d: &Digest) -> Vec<(Vec<u8>, Vec<u8>)> {
    assert!(d.findings.len() <= ROUND_ISSUES_MAX && d.disputes.len() <= ROUND_ISSUES_MAX);
    let (t, r, at) = (&d.row.table, d.row.round.0, time_key(d.row.opened_at_ns));
    let tail = |k: &mut Vec<u8>, with_table: bool, i: Option<usize>| {
        k.extend_from_slice(&at);
        if with_table {
            push_str(k, t.as_str());
        }
        k.extend_from_slice(&r.to_be_bytes());
        if let Some(i) = i {
            // Reversed, so a newest-first scan lists a round's items in their order.
            k.extend_from_slice(&(u16::MAX - i as u16).to_be_bytes());
        }
    };
    let mut out = Vec::new();
    let mut k = vec![space::BY_TIME];
    tail(&mut k, true, None);
    out.push((k, Vec::new()));
    let mut k = table_key(space::TABLE_TIME, t);
    tail(&mut k, false, None);
    out.push((k, Vec::new()));
    for b in &d.row.boxes {
        let mut k = table_key(space::BY_BOX, t);
        k.push(b.0);
        k.extend_from_slice(&r.to_be_bytes());
        out.push((k, Vec::new()));
    }
    for (i, f) in d.findings.iter().enumerate() {
        let rec = FindingRec {
            table: t.clone(),
            round: d.row.round,
            opened_at_ns: d.row.opened_at_ns,
            finding: f.clone(),
        };
        let mut keys = vec![vec![space::FINDING], str_key(space::FINDING_CODE, &f.code)];
        let mut kt = table_key(space::FINDING_TABLE, t);
        tail(&mut kt, false, Some(i));
        for level in 0..=severity_byte(f.severity) {
            keys.push(vec![space::FINDING_SEVERITY, level]);
        }
        for mut k in keys {
            tail(&mut k, true, Some(i));
            let v = seal(&k, &rec);
            out.push((k, v));
        }
        let v = seal(&kt, &rec);
        out.push((kt, v));
    }
    dispute_entries(d, &mut out);
    out
}

/// The dispute keys of a round: by time and by (table, time).
fn dispute_entries(d: &Digest, out: &mut Vec<(Vec<u8>, Vec<u8>)>) {
    let (t, r, at) = (&d.row.table, d.row.round.0, time_key(d.row.opened_at_ns));
    for (i, x) in d.disputes.iter().enumerate() {
        let row = DisputeRow {
            table: t.clone(),
            round: d.row.round,
            opened_at_ns: d.row.opened_at_ns,
            verdict: d.row.verdict,
            box_no: x.box_no,
            line: x.line,
            expected: x.expected,
            recorded: x.recorded,
            difference: x.difference,
        };
        let idx = (u16::MAX - i as u16).to_be_bytes();
        let mut k = vec![space::DISPUTE];
        k.extend_from_slice(&at);
        push_str(&mut k, t.as_str());
        k.extend_from_slice(&r.to_be_bytes());
        k.extend_from_slice(&idx);
        let v = seal(&k, &row);
        out.push((k, v));
        let mut k = table_key(space::DISPUTE_TABLE, t);
        k.extend_from_slice(&at);
        k.extend_from_slice(&r.to_be_bytes());
        k.extend_from_slice(&idx);
        let v = seal(&k, &row);
        out.push((k, v));
    }
}

fn table_of(k: &[u8]) -> Option<TableId> {
    let n = *k.first()? as usize;
    let s = std::str::from_utf8(k.get(1..1 + n)?).ok()?;
    TableId::new(s).ok()
}

fn be_u64_at(k: &[u8], at: usize) -> Result<u64, ModelError> {
    k.get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_be_bytes)
        .ok_or_else(|| ModelError::Corrupt(format!("key {}", hex::encode(k))))
}

/// The (table, round) a round-listing key names: time space, table-time space or box space.
fn round_of_key(k: &[u8]) -> Result<(TableId, u64), ModelError> {
    let corrupt = || ModelError::Corrupt(format!("key {}", hex::encode(k)));
    match k.first() {
        Some(&space::BY_TIME) => {
            let t = table_of(k.get(9..).ok_or_else(corrupt)?).ok_or_else(corrupt)?;
            Ok((t.clone(), be_u64_at(k, 10 + t.as_str().len())?))
        }
        Some(&space::TABLE_TIME) | Some(&space::BY_BOX) => {
            let t = table_of(&k[1..]).ok_or_else(corrupt)?;
            Ok((t.clone(), be_u64_at(k, k.len() - 8)?))
        }
        _ => Err(corrupt()),
    }
}

/// A listing key must name its row's time (or box): a changed key is never served.
fn check_key_matches(k: &[u8], row: &RoundRow) -> Result<(), ModelError> {
    let at = time_key(row.opened_at_ns);
    let ok = match k[0] {
        space::BY_TIME => k.get(1..9) == Some(&at[..]),
        space::TABLE_TIME => {
            let n = 2 + row.table.as_str().len();
            k.get(n..n + 8) == Some(&at[..])
        }
        _ => {
            let n = 2 + row.table.as_str().len();
            k.get(n).is_some_and(|b| row.boxes.contains(&BoxNo(*b)))
        }
    };
    if ok {
        Ok(())
    } else {
        Err(ModelError::Corrupt(format!(
            "key {} (its row says otherwise)",
            hex::encode(k)
        )))
    }
}

// ---- Lookups and checks

impl Model {
    /// Where a round sits in its table's chain, from its row and its neighbours' (three
    /// reads); `None` when the model has no row for it.
    pub fn locate(
        &self,
        table: &TableId,
        round: u64,
    ) -> Result<Option<crate::rounds::Located>, ModelError> {
        let Some(d) = self.digest(table, round)? else {
            return Ok(None);
        };
        let neighbour = |kv: Option<EntryResult>| match kv {
            None => Ok(None),
            Some(kv) => {
                let (k, v) = kv?;
                decode::<Digest>(&k, &v).map(Some)
            }
        };
        let start = round_key(table, 0);
        let before = Bound::Excluded(round_key(table, round));
        let prev = neighbour(self.db.range(Bound::Included(start), before).last())?;
        let next = match round.checked_add(1) {
            Some(n) => {
                let end = prefix_end(&table_key(space::ROUND, table));
                let lo = Bound::Included(round_key(table, n));
                let hi = end.map_or(Bound::Unbounded, Bound::Excluded);
                neighbour(self.db.range(lo, hi).first())?
            }
            None => None,
        };
        let first_seq = d.row.first_seq.0;
        Ok(Some(crate::rounds::Located {
            first_seq,
            last_seq: d.row.last_seq.0,
            prev_last: prev.map(|p| p.row.last_seq.0),
            next_first: next.map(|n| n.row.first_seq.0),
            config_seq: self.config_at(table, first_seq)?,
        }))
    }

    /// Every stored entry in key order: what `compare` reads.
    pub(crate) fn entries(&self) -> Box<dyn Iterator<Item = crate::kv::EntryResult> + '_> {
        self.db.iter().fwd()
    }

    /// Copies `from`'s priced edges into this model: a fresh rebuild then judges shifts
    /// against the same prices (`readmodel check`). Prices are a function of pay tables.
    pub fn copy_edges_from(&self, from: &Model) -> Result<(), ModelError> {
        for kv in from.db.scan_prefix(&[space::EDGE]) {
            let (k, v) = kv?;
            self.db.insert(&k, v)?;
        }
        Ok(())
    }
}

/// A key for people: its space's name, then its bytes (printable ones as they are).
pub fn key_text(k: &[u8]) -> String {
    let name = match k.first().copied() {
        Some(space::VERSION) => "version",
        Some(space::META) => "counts",
        Some(space::ROUND) => "round row",
        Some(space::BY_TIME) => "rounds by time",
        Some(space::TABLE_TIME) => "rounds by table and time",
        Some(space::BY_BOX) => "rounds by box",
        Some(space::FINDING) => "findings by time",
        Some(space::FINDING_TABLE) => "findings by table",
        Some(space::FINDING_CODE) => "findings by code",
        Some(space::FINDING_SEVERITY) => "findings by severity",
        Some(space::DISPUTE) => "disputes by time",
        Some(space::DISPUTE_TABLE) => "disputes by table",
        Some(space::STATUS) => "table status",
        Some(space::CONFIG) => "configuration seq",
        Some(space::FINANCE_SHIFT) => "finance shift",
        Some(space::RULE) => "day rule",
        Some(space::CURSOR) => "cursor",
        Some(space::EDGE) => "edge book",
        Some(space::SIGNAL) => "decision signal",
        Some(space::ANALYTICS) => "analytics coverage",
        Some(space::DEALER) => "dealer row",
        Some(space::DEALER_FLOOR) => "dealers' floor row",
        Some(space::HOLD_WATCH) => "hold watch",
        Some(space::STREAM) => "analytics stream state",
        _ => "unknown space",
    };
    let body: String = k
        .iter()
        .skip(1)
        .map(|b| {
            if b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_' {
                (*b as char).to_string()
            } else {
                format!("\\x{b:02x}")
            }
        })
        .collect();
    format!("{name} {body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_keys_sort_as_signed_times() {
        let times = [i64::MIN, -3_600, -1, 0, 1, 3_600, i64::MAX];
        for w in times.windows(2) {
            assert!(time_key(w[0]) < time_key(w[1]), "{w:?}");
        }
    }

    /// A model directory of the older layout (sled's files at its top) is a version to
    /// rebuild; a new one opens on the store the ledger opens, and reopens with its rule.
    #[test]
    fn an_older_layout_is_a_version_to_rebuild_and_a_new_model_is_on_the_chosen_store() {
        let rule = default_rule();
        let old = tempfile::tempdir().expect("tempdir");
        std::fs::write(old.path().join("db"), b"sled").expect("write");
        match Model::open(old.path(), &rule) {
            Err(ModelError::Version { found }) => assert!(found.contains("db beside"), "{found}"),
            other => panic!("expected a version to rebuild, got {other:?}"),
        }
        let dir = tempfile::tempdir().expect("tempdir");
        drop(Model::open(dir.path(), &rule).expect("open"));
        let kind = ledger::store::choice::StoreKind::from_env().expect("kind");
        let found = ledger::store::choice::StoreKind::found_in(&crate::kv::store_dir(dir.path()));
        assert_eq!(found, Some(kind));
        let m = Model::open_as_built(dir.path()).expect("reopen");
        assert_eq!(m.rule().spec(), rule.spec());
        assert_eq!(m.meta().expect("meta"), Meta::default());
    }

    #[test]
    fn a_prefix_ends_after_every_key_it_starts() {
        assert_eq!(prefix_end(&[1, 2]), Some(vec![1, 3]));
        assert_eq!(prefix_end(&[1, 0xff]), Some(vec![2]));
        assert_eq!(prefix_end(&[0xff, 0xff]), None);
    }

    #[test]
    fn a_changed_byte_fails_the_seal_and_a_moved_value_too() {
        let v = seal(b"k1", &Meta::default());
        assert!(decode::<Meta>(b"k1", &v).is_ok());
        let mut changed = v.clone();
        let last = changed.len() - 1;
        changed[last] ^= 1;
        assert!(matches!(
            decode::<Meta>(b"k1", &changed),
            Err(ModelError::Corrupt(_))
        ));
        assert!(
            decode::<Meta>(b"k2", &v).is_err(),
            "a value under another key"
        );
    }
}
