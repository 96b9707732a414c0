//! What an audit covers (`Filter`) and what it found (`AuditSummary`). The local audit
//! (`audit`) fills a summary by replaying; the remote one (`remote`) fills it from a
//! server's lists. Both print it the same way.
//!
//! Invariant: merging per-table summaries in table order gives the same summary on any
//! number of threads.

use schemas::report::{Dispute, RoundReport, Verdict};
use schemas::{Money, RoundId, TableId};
use serde::Serialize;
use std::collections::BTreeMap;

/// Which rounds to audit.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Filter {
    /// Only this table (repeat for several).
    #[arg(long)]
    pub table: Vec<String>,
    /// Only rounds opened at or after this time (device time): RFC 3339, UTC ns, or a
    /// wall time `2026-11-25 14:00` in --time-zone, else the server's zone, else TZ.
    #[arg(long = "from", id = "from", value_name = "TIME")]
    pub from_text: Option<String>,
    /// Only rounds opened before this time (as --from).
    #[arg(long = "to", id = "to", value_name = "TIME")]
    pub to_text: Option<String>,
    /// `--from` as UTC ns, once read (`resolve`).
    #[arg(skip)]
    pub from: Option<i64>,
    /// `--to` as UTC ns, once read (`resolve`).
    #[arg(skip)]
    pub to: Option<i64>,
}

impl Filter {
    /// Reads `--from` and `--to`, a wall time in `zone`; an unreadable one names its flag.
    pub fn resolve(&mut self, zone: &jiff::tz::TimeZone) -> anyhow::Result<()> {
        use anyhow::Context;
        let read = |t: &Option<String>, flag: &str| {
            t.as_deref()
                .map(|s| crate::when::parse_in(s, zone).with_context(|| format!("--{flag} {s:?}")))
                .transpose()
        };
        self.from = read(&self.from_text, "from")?;
        self.to = read(&self.to_text, "to")?;
        Ok(())
    }

    /// Whether `t` is one of the tables asked for (all, when none is named).
    pub fn wants_table(&self, t: &TableId) -> bool {
        self.table.is_empty() || self.table.iter().any(|x| x == t.as_str())
    }
    /// Whether `r` opened in the time range asked for.
    pub fn wants_round(&self, r: &RoundReport) -> bool {
        self.from.is_none_or(|f| r.opened_at_ns >= f) && self.to.is_none_or(|t| r.opened_at_ns < t)
    }
}

/// One disputed round.
#[derive(Debug, Clone, Serialize)]
pub struct DisputedRound {
    pub table: TableId,
    pub round: RoundId,
    pub verdict: Verdict,
    pub disputes: Vec<Dispute>,
}

/// What an audit found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AuditSummary {
    pub tables: u64,
    pub rounds: u64,
    pub events: u64,
    pub verdicts: BTreeMap<Verdict, u64>,
    pub findings_by_code: BTreeMap<String, u64>,
    pub disputed_rounds: Vec<DisputedRound>,
    /// Rounds with findings but no dispute: (table, round, codes).
    pub irregular_rounds: Vec<(TableId, RoundId, Vec<String>)>,
    /// Sum of `recorded - expected` over all disputes: what the house overpaid (positive)
    /// or underpaid (negative), minor units.
    pub net_difference: i64,
}

impl AuditSummary {
    pub fn clean(&self) -> bool {
        self.disputed_rounds.is_empty() && self.findings_by_code.is_empty()
    }

    /// Adds another part's summary after this one (parts in table order keep the lists
    /// in table order).
    pub fn merge(&mut self, other: AuditSummary) {
        self.tables += other.tables;
        self.rounds += other.rounds;
        self.events += other.events;
        for (v, n) in other.verdicts {
            *self.verdicts.entry(v).or_default() += n;
        }
        for (code, n) in other.findings_by_code {
            *self.findings_by_code.entry(code).or_default() += n;
        }
        self.disputed_rounds.extend(other.disputed_rounds);
        self.irregular_rounds.extend(other.irregular_rounds);
        self.net_difference = self.net_difference.saturating_add(other.net_difference);
    }

    /// Counts one replayed round: its verdict, its findings and its disputes.
    pub fn add(&mut self, r: &RoundReport) {
        self.rounds += 1;
        *self.verdicts.entry(r.verdict).or_default() += 1;
        for f in &r.findings {
            *self.findings_by_code.entry(f.code.clone()).or_default() += 1;
        }
        if !r.disputes.is_empty() {
            let difference: Money = r.disputes.iter().map(|d| d.difference).sum();
            self.net_difference = self.net_difference.saturating_add(difference.0);
            self.disputed_rounds.push(DisputedRound {
                table: r.table.clone(),
                round: r.round,
                verdict: r.verdict,
                disputes: r.disputes.clone(),
            });
        } else if !r.findings.is_empty() {
            let codes = r.findings.iter().map(|f| f.code.clone()).collect();
            self.irregular_rounds
                .push((r.table.clone(), r.round, codes));
        }
    }
}
