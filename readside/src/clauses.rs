//! The rule books' words of the clauses that finding codes cite (`schemas::findings`), so a
//! finding can be read beside the clause it breaks.
//!
//! The table is data: `readside/clauses.json`, generated from the seed rule sets
//! (../shared/seeds: the five rule-set texts, RULES-NOTES.md for `RN<n>`, the CS51 "How To
//! Play" bullets for `HTP<n>`) by `BLESS=1 cargo test -p readside --test clauses`, which also
//! fails when the committed file no longer matches the seeds. Each clause is a list of
//! verbatim excerpts in the order of the rule book: a sub-clause comes after its parent's
//! opening words (and before the parent's closing words, where it has them), a clause with
//! sub-clauses is followed by them. "Verbatim" means equal to the seed text once runs of
//! whitespace are collapsed and markdown emphasis (`**`) is dropped: the seeds are PDF
//! extractions whose line breaks fall mid-sentence.
//!
//! Invariants: read-only data embedded in the binary; a clause missing from the table has
//! no wording (never an error).

use schemas::RuleSet;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The committed table (see the module doc).
pub const CLAUSES_JSON: &str = include_str!("../clauses.json");

/// The file `readside/clauses.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClauseFile {
    /// How the file was made.
    pub about: String,
    /// Every cited clause's wording.
    pub clauses: Vec<ClauseWording>,
}

/// One cited clause in the rule book's words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClauseWording {
    /// The rule set whose book the clause is in.
    pub rule_set: RuleSet,
    /// As finding codes cite it: "5.8.2", "RN24", "HTP4".
    pub clause: String,
    /// The seed file it is taken from.
    pub source: String,
    /// Verbatim excerpts, in the rule book's order.
    pub wording: Vec<String>,
}

fn table() -> &'static BTreeMap<(RuleSet, String), Vec<String>> {
    static TABLE: OnceLock<BTreeMap<(RuleSet, String), Vec<String>>> = OnceLock::new();
    TABLE.get_or_init(|| match serde_json::from_str::<ClauseFile>(CLAUSES_JSON) {
        Ok(f) => f
            .clauses
            .into_iter()
            .map(|c| ((c.rule_set, c.clause), c.wording))
            .collect(),
        Err(e) => {
            // The test suite parses this file; a broken one only loses the wording.
            tracing::error!("readside/clauses.json does not parse: {e}");
            BTreeMap::new()
        }
    })
}

/// The wording of `clause` of `rule_set` (as cited in a finding code); empty when the
/// table does not have it.
pub fn wording(rule_set: RuleSet, clause: &str) -> &'static [String] {
    table()
        .get(&(rule_set, clause.to_string()))
        .map_or(&[], |w| w.as_slice())
}

/// The wording of the clause a finding code cites; empty for an unknown code.
pub fn wording_of_code(code: &str) -> &'static [String] {
    schemas::findings::by_code(code).map_or(&[], |c| wording(c.rule_set, c.clause))
}
