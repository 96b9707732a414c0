//! The house edges of configured pay tables, kept in the read model (space `EDGE`) by
//! rule set and pay-table digest (`rules::edge::pricing_key`).
//!
//! - The indexer records each configuration it sees whose pay tables reprice a line
//!   (`want`), unpriced. It never prices: TCP3 Ante/Play settles 407 M deals, a five-card
//!   game 1 M rounds, and indexing must not wait seconds for either.
//! - `price_next` prices one unpriced configuration. The server's pricing worker calls it
//!   in the background; `roundledger readmodel price-edges` calls it offline.
//! - With a pricer lease (`serve --node-id`), one node prices and shares each record
//!   (`shared_name`, `adopt`); the others adopt it instead of pricing it themselves.
//! - A report loads the book (`EdgeBook::load`) and looks up each handle's edge: a line
//!   whose edge is not priced yet is pending, never 0 and never the default.
//!
//! Invariants: a priced record is a function of its rule set and pay tables alone, so it
//! is kept across restarts and rebuilds (`Model::clear`) and left out of `verify`'s
//! comparison; at most `EDGE_RECORDS_MAX` records.

use crate::model::{self, space, Model, ModelError};
pub use rules::edge::Budget;
use rules::edge::{line_repriced, price_configured, PricedEdge};
use schemas::{PayLine, RuleSet, TableConfig};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Most configurations the book keeps. Past it a new configuration is not recorded: its
/// repriced lines stay pending, and a warning says why.
pub const EDGE_RECORDS_MAX: usize = 256;

/// One configuration's edges: the configuration (to price it) and, once priced, the edge
/// of every line of its rule set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EdgeRecord {
    /// The first `TableOpened` configuration seen with these pay tables.
    pub config: TableConfig,
    /// Every line's edge; `None` until priced.
    pub priced: Option<Vec<PricedEdge>>,
}

/// What a report knows of one handle's edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeLookup {
    /// The edge (ppb) and the variance of one unit's net (ppm).
    Known {
        /// The house edge, ppb of the stake.
        edge_ppb: i64,
        /// The variance of one unit's net, ppm of the unit squared.
        variance_ppm: u64,
    },
    /// The line has no edge: a jackpot bet, or the BET/Play priced in its Ante.
    NoEdge,
    /// A configured pay table decides it and it is not priced yet.
    Pending,
}

/// The key of a configuration's record: the space, the rule set's code, then the digest.
pub fn key(rule_set: RuleSet, digest: &[u8; 32]) -> Vec<u8> {
    let mut k = vec![space::EDGE];
    k.extend_from_slice(rule_set.code().as_bytes());
    k.push(0);
    k.extend_from_slice(digest);
    k
}

/// The pay-table identity a handle carries: the digest in hex, `None` for the defaults.
pub fn identity(config: &TableConfig) -> Option<String> {
    rules::edge::pricing_key(config).map(hex::encode)
}

/// Records `config` unpriced unless the book has its pay tables or is full. Written at
/// once, outside the pass's batch: a record is a function of the configuration, so an
/// early one is harmless, and it never overwrites a priced one.
pub fn want(model: &Model, config: &TableConfig) -> Result<(), ModelError> {
    let Some(digest) = rules::edge::pricing_key(config) else {
        return Ok(());
    };
    let k = key(config.rule_set, &digest);
    if model.db.get(&k)?.is_some() {
        return Ok(());
    }
    let held = model.db.scan_prefix(&[space::EDGE]).fwd().count();
    if held >= EDGE_RECORDS_MAX {
        tracing::warn!(
            "the edge book holds {EDGE_RECORDS_MAX} configurations: {} {} stays pending",
            config.rule_set.code(),
            hex::encode(digest)
        );
        return Ok(());
    }
    let record = EdgeRecord {
        config: config.clone(),
        priced: None,
    };
    // Lost to another writer: the record is there, which is all `want` asks.
    model.db.insert_if_absent(&k, model::seal(&k, &record))?;
    Ok(())
}

/// Prices the first unpriced configuration within `budget` and stores its edges. Returns
/// its key, or `None` when every one is priced. Slow (seconds): a background task.
pub fn price_next(model: &Model, budget: &Budget) -> Result<Option<Vec<u8>>, ModelError> {
    let mut todo = None;
    for kv in model.db.scan_prefix(&[space::EDGE]) {
        let (k, v) = kv?;
        let r: EdgeRecord = model::decode(&k, &v)?;
        if r.priced.is_none() {
            todo = Some((k.to_vec(), r));
            break;
        }
    }
    let Some((k, mut record)) = todo else {
        return Ok(None);
    };
    let started = std::time::Instant::now();
    record.priced = Some(price_configured(&record.config, budget));
    tracing::info!(
        "priced the edges of {} pay tables {} in {:.1?}",
        record.config.rule_set.code(),
        model::key_text(&k),
        started.elapsed()
    );
    model.db.insert(&k, model::seal(&k, &record))?;
    model.db.flush()?;
    Ok(Some(k))
}

/// The name a record is shared under between nodes (`<rule set>.<digest hex>`), from
/// its model key; `None` for a key that is not an edge record's.
pub fn shared_name(k: &[u8]) -> Option<String> {
    let rest = k.strip_prefix(&[space::EDGE])?;
    let (code, digest) = rest.split_at(rest.len().checked_sub(33)?);
    let digest = digest.strip_prefix(&[0])?;
    let code = std::str::from_utf8(code).ok()?;
    Some(format!("{code}.{}", hex::encode(digest)))
}

/// Every record with its key, at most `EDGE_RECORDS_MAX`. Blocking: the store.
pub fn held(model: &Model) -> Result<Vec<(Vec<u8>, EdgeRecord)>, ModelError> {
    let mut out = Vec::new();
    for kv in model.db.scan_prefix(&[space::EDGE]) {
        if out.len() >= EDGE_RECORDS_MAX {
            break;
        }
        let (k, v) = kv?;
        let record: EdgeRecord = model::decode(&k, &v)?;
        out.push((k.to_vec(), record));
    }
    Ok(out)
}

/// Why a record another node priced is not adopted.
#[derive(Debug, thiserror::Error)]
pub enum AdoptError {
    /// The record is not the one its key names, or it is not priced.
    #[error("refused: {0}")]
    Refused(String),
    /// The store failed.
    #[error(transparent)]
    Model(#[from] ModelError),
}

/// Stores `record`, priced by another node, under `k` when this node holds it unpriced.
/// Whether it was stored. The record must be priced, and its configuration's pricing
/// key must be the one `k` names: a record never lands under another's key.
pub fn adopt(model: &Model, k: &[u8], record: &EdgeRecord) -> Result<bool, AdoptError> {
    let Some(priced) = &record.priced else {
        return Err(AdoptError::Refused("the record is not priced".into()));
    };
    let digest = rules::edge::pricing_key(&record.config);
    if digest.map(|d| key(record.config.rule_set, &d)).as_deref() != Some(k) {
        return Err(AdoptError::Refused(format!(
            "its configuration is not the one {} names",
            model::key_text(k)
        )));
    }
    let rs = record.config.rule_set;
    let lines = rules::edge::DEFAULT_EDGES
        .iter()
        .filter(|e| e.rule_set == rs);
    if !lines.map(|e| e.line).eq(priced.iter().map(|e| e.line)) {
        return Err(AdoptError::Refused(format!(
            "its priced lines are not {}'s",
            rs.code()
        )));
    }
    let Some(v) = model.db.get(k).map_err(ModelError::from)? else {
        return Ok(false);
    };
    let mine: EdgeRecord = model::decode(k, &v)?;
    if mine.priced.is_some() {
        return Ok(false);
    }
    let sealed = model::seal(k, record);
    model.db.insert(k, sealed).map_err(ModelError::from)?;
    model.db.flush().map_err(ModelError::from)?;
    Ok(true)
}

/// Prices every unpriced configuration, at most `EDGE_RECORDS_MAX`. Returns how many.
pub fn price_all(model: &Model, budget: &Budget) -> Result<usize, ModelError> {
    let mut n = 0;
    while n < EDGE_RECORDS_MAX && price_next(model, budget)?.is_some() {
        n += 1;
    }
    Ok(n)
}

/// The book as a report reads it: every record, by key.
#[derive(Debug, Default)]
pub struct EdgeBook {
    records: BTreeMap<Vec<u8>, EdgeRecord>,
}

impl EdgeBook {
    /// Reads every record (at most `EDGE_RECORDS_MAX`). Blocking: the store.
    pub fn load(model: &Model) -> Result<EdgeBook, ModelError> {
        let mut records = BTreeMap::new();
        for kv in model.db.scan_prefix(&[space::EDGE]) {
            let (k, v) = kv?;
            records.insert(k.to_vec(), model::decode(&k, &v)?);
        }
        Ok(EdgeBook { records })
    }

    /// The records, by key.
    pub fn records(&self) -> impl Iterator<Item = &EdgeRecord> {
        self.records.values()
    }

    /// The edge of `line` of `rule_set` under the pay tables `identity` names (`None`:
    /// the defaults).
    pub fn lookup(&self, rule_set: RuleSet, identity: Option<&str>, line: PayLine) -> EdgeLookup {
        let default = || match rules::edge::default_edge(rule_set, line) {
            Some(e) => EdgeLookup::Known {
                edge_ppb: e.edge_ppb,
                variance_ppm: e.variance_ppm,
            },
            None => EdgeLookup::NoEdge,
        };
        let no_default = rules::edge::default_edge(rule_set, line).is_none();
        let Some(id) = identity.filter(|_| !no_default) else {
            return default();
        };
        let digest: Option<[u8; 32]> = hex::decode(id).ok().and_then(|d| d.try_into().ok());
        let Some(r) = digest.and_then(|d| self.records.get(&key(rule_set, &d))) else {
            return EdgeLookup::Pending;
        };
        if !line_repriced(rule_set, &r.config.pay_tables, line) {
            return default();
        }
        match &r.priced {
            None => EdgeLookup::Pending,
            Some(edges) => match edges.iter().find(|e| e.line == line) {
                Some(e) => EdgeLookup::Known {
                    edge_ppb: e.edge_ppb,
                    variance_ppm: e.variance_ppm,
                },
                None => EdgeLookup::NoEdge,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemas::{HandClass, PayRow, PayTable, PayTableName, Pays};

    /// A TCP3 configuration whose Pair Plus pays a straight `straight` to 1.
    fn config(straight: u32) -> TableConfig {
        let json = r#"{"rule_set":"TCP3","rules_version":"seed","currency":"SGD","boxes":7,
            "dealing":"manual_shoe","limits":[],"pay_tables":[],"jackpot":null}"#;
        let mut c: TableConfig = serde_json::from_str(json).unwrap();
        let rows = [(HandClass::Straight, straight), (HandClass::OnePair, 1)];
        c.pay_tables = vec![PayTable {
            name: PayTableName::PairPlus,
            rows: rows
                .iter()
                .map(|&(hand, x)| PayRow {
                    hand,
                    pays: Pays::ToOne(x),
                    envy: None,
                })
                .collect(),
        }];
        c
    }

    /// A record priced elsewhere lands only under its own key, whole, and only where
    /// this node holds it unpriced; a priced one is never replaced.
    #[test]
    fn a_record_priced_elsewhere_is_adopted_only_under_its_own_key() {
        let rule = ledger::days::DayRule::new("06:00", "UTC").unwrap();
        let model = Model::temporary(&rule).unwrap();
        let (six, seven) = (config(6), config(7));
        want(&model, &six).unwrap();
        let (k6, _) = held(&model).unwrap().remove(0);
        let name = shared_name(&k6).unwrap();
        assert!(name.starts_with("TCP3.") && name.len() == 5 + 64, "{name}");
        let budget = Budget::CONFIGURED;
        let priced = |c: &TableConfig| EdgeRecord {
            config: c.clone(),
            priced: Some(price_configured(c, &budget)),
        };
        let other = priced(&seven);
        assert!(matches!(
            adopt(&model, &k6, &other),
            Err(AdoptError::Refused(_))
        ));
        let mut short = priced(&six);
        short.priced.as_mut().unwrap().pop();
        assert!(matches!(
            adopt(&model, &k6, &short),
            Err(AdoptError::Refused(_))
        ));
        let unpriced = EdgeRecord {
            config: six.clone(),
            priced: None,
        };
        assert!(matches!(
            adopt(&model, &k6, &unpriced),
            Err(AdoptError::Refused(_))
        ));
        assert!(
            held(&model).unwrap()[0].1.priced.is_none(),
            "nothing landed"
        );
        assert!(adopt(&model, &k6, &priced(&six)).unwrap());
        assert_eq!(held(&model).unwrap()[0].1, priced(&six));
        let mut again = priced(&six);
        again.priced.as_mut().unwrap()[0].edge_ppb += 1;
        assert!(
            !adopt(&model, &k6, &again).unwrap(),
            "a priced record stays"
        );
        assert_eq!(held(&model).unwrap()[0].1, priced(&six));
    }
}
