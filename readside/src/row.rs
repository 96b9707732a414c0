//! What the read model keeps of one round (`Digest`) and what lists and the round view
//! show of it: the row of a report, a finding with its clause text, the boxes in play
//! before a settlement names them. The tail (`index`) writes them; the round view
//! (`rounds`) and the API's lists read them.
//!
//! Invariant: pure: each is derived from one report or one event alone; no I/O, no clock.

use schemas::api::{FindingView, RoundRow};
use schemas::report::{Dispute, Finding, RoundReport};
use schemas::EventBody;
use serde::{Deserialize, Serialize};

/// What the model keeps of one round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Digest {
    /// The round's list row.
    pub row: RoundRow,
    /// The round's disputes, from its report.
    pub disputes: Vec<Dispute>,
    /// The round's findings, from its report.
    pub findings: Vec<Finding>,
}

/// The row a list shows for a report, with the dealer in place when it began.
pub fn row_of(r: &RoundReport, dealer: Option<&str>) -> RoundRow {
    let boxes = r
        .settlement
        .as_ref()
        .map(|s| s.boxes.iter().map(|b| b.box_no).collect())
        .unwrap_or_default();
    RoundRow {
        table: r.table.clone(),
        round: r.round,
        rule_set: r.rule_set,
        opened_at_ns: r.opened_at_ns,
        closed_at_ns: r.closed_at_ns,
        first_seq: r.first_seq,
        last_seq: r.last_seq,
        verdict: r.verdict,
        boxes,
        disputes: r.disputes.len() as u32,
        findings: r.findings.len() as u32,
        worst_severity: r.findings.iter().map(|f| f.severity).max(),
        difference: r.disputes.iter().map(|d| d.difference).sum(),
        in_progress: false,
        dealer: dealer.map(str::to_string),
    }
}

/// A finding with its clause text from the rule set.
pub fn finding_view(f: &Finding) -> FindingView {
    FindingView {
        finding: f.clone(),
        clause_text: schemas::findings::by_code(&f.code)
            .map(|c| {
                if c.note.is_empty() {
                    c.clause_text()
                } else {
                    format!("{}: {}", c.clause_text(), c.note)
                }
            })
            .unwrap_or_default(),
        clause_wording: crate::clauses::wording_of_code(&f.code).to_vec(),
    }
}

/// Adds the box a bet was placed on to `boxes` (sorted, once each): the boxes in play of a
/// round that has no settlement yet, so that a search by box finds it in progress.
pub fn note_box_in_play(boxes: &mut Vec<schemas::BoxNo>, body: &EventBody) {
    if let EventBody::BetPlaced { box_no, .. } = body {
        if let Err(at) = boxes.binary_search(box_no) {
            boxes.insert(at, *box_no);
        }
    }
}
