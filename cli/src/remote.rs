//! `replay`, `audit` and `export` against a running server (`--server URL --token T`), so
//! investigators need not stop it: the same output as on a ledger directory, built from
//! the API's bodies (`schemas::api`). The server replays; this side only renders.

use crate::client::{enc, Client};
use crate::summary::{AuditSummary, DisputedRound, Filter};
use anyhow::{Context, Result};
use schemas::api::{
    DisputePage, DisputeRow, FindingPage, RoundDetail, RoundPage, StepList, TableInfo,
};
use schemas::{RoundId, TableId};
use std::collections::BTreeMap;

/// Page size the CLI asks for (the server's maximum).
const PAGE: u64 = 500;

/// A round and (with `step`) its steps, from the server: the API's own bodies.
pub fn replay(
    c: &Client,
    table: &TableId,
    round: u64,
    step: bool,
) -> Result<(RoundDetail, Option<StepList>)> {
    let path = format!("/v1/tables/{}/rounds/{round}", enc(table.as_str()));
    let d: RoundDetail = c.get(&path)?;
    let steps = if step {
        Some(c.get(&format!("{path}/steps"))?)
    } else {
        None
    };
    Ok((d, steps))
}

fn pages<T>(c: &Client, base: &str, mut each: impl FnMut(T) -> (u64, u64)) -> Result<()>
where
    T: serde::de::DeserializeOwned,
{
    let mut offset = 0;
    loop {
        let sep = if base.contains('?') { '&' } else { '?' };
        let page: T = c.get(&format!("{base}{sep}limit={PAGE}&offset={offset}"))?;
        let (got, total) = each(page);
        offset += got;
        if got == 0 || offset >= total {
            return Ok(());
        }
    }
}

/// A gaming day or one of its shifts, for the server to turn into bounds by its day
/// rule (`api::search`).
#[derive(Debug, Clone, Copy, Default)]
pub struct When<'a> {
    pub day: Option<&'a str>,
    pub shift: Option<&'a str>,
}

/// Rounds with findings, and disputed rounds with their lines, as the lists give them.
type Codes = BTreeMap<(TableId, RoundId), Vec<String>>;
type Disputed = BTreeMap<(TableId, RoundId), DisputedRound>;

/// The audit summary from the server's replay of every round.
pub fn audit(c: &Client, f: &Filter, when: When<'_>) -> Result<AuditSummary> {
    let mut s = AuditSummary::default();
    let tables: Vec<TableInfo> = c.get("/v1/tables")?;
    let wanted: Vec<&TableInfo> = tables
        .iter()
        .filter(|t| f.table.is_empty() || f.table.iter().any(|x| x == t.table.as_str()))
        .collect();
    s.tables = wanted.len() as u64;
    s.events = wanted.iter().map(|t| t.head_seq.0).sum();
    let mut codes = Codes::new();
    let mut disputed = Disputed::new();
    for t in wanted {
        let q = list_query(t, f, when);
        pages(c, &format!("/v1/rounds?{q}"), |p: RoundPage| {
            // A round still being played has no verdict yet: it is audited once it closes.
            for r in p.items.iter().filter(|r| !r.in_progress) {
                s.rounds += 1;
                *s.verdicts.entry(r.verdict).or_default() += 1;
            }
            (p.items.len() as u64, p.total)
        })?;
        pages(c, &format!("/v1/findings?{q}"), |p: FindingPage| {
            for x in &p.items {
                let code = x.finding.finding.code.clone();
                *s.findings_by_code.entry(code.clone()).or_default() += 1;
                codes
                    .entry((x.table.clone(), x.round))
                    .or_default()
                    .push(code);
            }
            (p.items.len() as u64, p.total)
        })?;
        pages(c, &format!("/v1/disputes?{q}"), |p: DisputePage| {
            for x in &p.items {
                s.net_difference += x.difference.0;
                add_dispute(&mut disputed, x);
            }
            (p.items.len() as u64, p.total)
        })?;
    }
    finish(&mut s, codes, disputed);
    Ok(s)
}

/// The query of one table's lists: its id and the time, day or shift asked for.
fn list_query(t: &TableInfo, f: &Filter, when: When<'_>) -> String {
    let mut q = format!("table={}", enc(t.table.as_str()));
    if let Some(x) = f.from {
        q.push_str(&format!("&from_ns={x}"));
    }
    if let Some(x) = f.to {
        q.push_str(&format!("&to_ns={x}"));
    }
    if let Some(d) = when.day {
        q.push_str(&format!("&day={}", enc(d)));
    }
    if let Some(s) = when.shift {
        q.push_str(&format!("&shift={}", enc(s)));
    }
    q
}

/// Files one disputed line under its round.
fn add_dispute(disputed: &mut Disputed, x: &DisputeRow) {
    disputed
        .entry((x.table.clone(), x.round))
        .or_insert_with(|| DisputedRound {
            table: x.table.clone(),
            round: x.round,
            verdict: x.verdict,
            disputes: Vec::new(),
        })
        .disputes
        .push(schemas::report::Dispute {
            box_no: x.box_no,
            line: x.line,
            expected: x.expected,
            recorded: x.recorded,
            difference: x.difference,
        });
}

/// Orders each round's lines; rounds with findings but no dispute are irregular.
fn finish(s: &mut AuditSummary, codes: Codes, mut disputed: Disputed) {
    for d in disputed.values_mut() {
        d.disputes.sort_by_key(|x| (x.box_no, x.line));
    }
    for (k, mut c) in codes {
        if !disputed.contains_key(&k) {
            c.reverse();
            s.irregular_rounds.push((k.0, k.1, c));
        }
    }
    s.disputed_rounds = disputed.into_values().collect();
}

/// Writes the server's export of a table (or round range) to `out`.
pub fn export(
    c: &Client,
    table: Option<&str>,
    rounds: Option<&str>,
    out: &std::path::Path,
) -> Result<u64> {
    let mut q = Vec::new();
    if let Some(t) = table {
        q.push(format!("table={}", enc(t)));
    }
    if let Some(r) = rounds {
        q.push(format!("rounds={}", enc(r)));
    }
    let body = c.get_bytes(&format!("/v1/export?{}", q.join("&")))?;
    std::fs::write(out, &body).with_context(|| format!("writing {}", out.display()))?;
    proofs::export::verify_export(std::io::BufReader::new(&body[..]))
        .context("the server's export does not verify")
        .map(|s| s.events)
}
