//! Rounds as the analytics read them: a table's events folded into each round's cards,
//! decisions, dealer and the replayer's report. O(1) work per event; at most
//! `PENDING_MAX` rounds open at once.

use replayer::TableReplayer;
use schemas::report::{RoundReport, Verdict};
use schemas::{
    BoxNo, Card, CardTarget, Choice, Event, EventBody, RoundId, RuleSet, Seq, StaffId, TableId,
};
use std::collections::BTreeMap;

/// Rounds kept open waiting for their report; older ones are dropped and counted.
pub const PENDING_MAX: usize = 64;

/// One box of a round: its cards and decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoxFacts {
    /// The box.
    pub box_no: BoxNo,
    /// Its cards in deal order.
    pub cards: Vec<Card>,
    /// Its decision, if one was recorded.
    pub decision: Option<Choice>,
    /// Whether its cards were dealt face up (CS51): every player sees them.
    pub face_up: bool,
}

/// One round: what was dealt and decided, who dealt, and the replayer's report.
#[derive(Debug, Clone)]
pub struct RoundFacts {
    /// The table.
    pub table: TableId,
    /// The rule set in force; `None` before any configuration.
    pub rule_set: Option<RuleSet>,
    /// Whether the configuration's pay tables reprice the edges (`rules::edge::pricing_key`).
    pub repriced: bool,
    /// The dealer at the table when the round began; `None` when none was recorded.
    pub dealer: Option<StaffId>,
    /// The dealer's cards in deal order.
    pub dealer_cards: Vec<Card>,
    /// Dealer cards seen before the first decision: dealt face up, or exposed.
    pub dealer_seen: Vec<Card>,
    /// Every box dealt cards, in box order.
    pub boxes: Vec<BoxFacts>,
    /// Cards recorded exposed (`CardExposed`), the dealer's or a box's.
    pub exposed_cards: u32,
    /// The replayer's report of the round.
    pub report: RoundReport,
}

impl RoundFacts {
    /// The round's id.
    pub fn round(&self) -> RoundId {
        self.report.round
    }

    /// Whether the round's decisions can be judged: a known rule set, not void.
    pub fn judgeable(&self) -> bool {
        self.rule_set.is_some() && self.report.verdict != Verdict::Void
    }
}

#[derive(Debug, Default)]
struct Pending {
    dealer: Option<StaffId>,
    dealer_cards: Vec<Card>,
    dealer_seen: Vec<Card>,
    decided: bool,
    exposed_cards: u32,
    boxes: BTreeMap<BoxNo, BoxFacts>,
}

/// Folds one table's events into `RoundFacts`, a round at a time.
pub struct RoundReader {
    table: TableId,
    replayer: TableReplayer,
    dealer: Option<StaffId>,
    pending: BTreeMap<RoundId, Pending>,
    /// Rounds dropped from `pending` unreported (past `PENDING_MAX`).
    pub dropped: u64,
}

impl RoundReader {
    /// A reader of `table`'s chain from its first event.
    pub fn new(table: TableId) -> RoundReader {
        RoundReader {
            replayer: TableReplayer::new(table.clone()),
            table,
            dealer: None,
            pending: BTreeMap::new(),
            dropped: 0,
        }
    }

    /// Takes the chain's next event; returns the rounds it completed.
    pub fn push(&mut self, seq: Seq, event: &Event) -> Vec<RoundFacts> {
        if let EventBody::DealerChanged { dealer } = &event.body {
            self.dealer = Some(dealer.clone());
        }
        if let Some(round) = event.round {
            self.note(round, &event.body);
        }
        let reports = self.replayer.push(seq, event);
        reports.into_iter().map(|r| self.facts(r)).collect()
    }

    /// The configuration in force, as the replayer holds it.
    pub fn config(&self) -> Option<&schemas::TableConfig> {
        self.replayer.config()
    }

    /// The rounds still open at the end of the chain, as the replayer reports them.
    pub fn finish(mut self) -> Vec<RoundFacts> {
        let reports =
            std::mem::replace(&mut self.replayer, TableReplayer::new(self.table.clone())).finish();
        reports.into_iter().map(|r| self.facts(r)).collect()
    }

    fn note(&mut self, round: RoundId, body: &EventBody) {
        if !self.pending.contains_key(&round) && self.pending.len() >= PENDING_MAX {
            self.pending.pop_first();
            self.dropped += 1;
        }
        let dealer = self.dealer.clone();
        let p = self.pending.entry(round).or_insert_with(|| Pending {
            dealer,
            ..Pending::default()
        });
        match body {
            EventBody::CardDealt {
                to, card, face_up, ..
            } => match to {
                CardTarget::Dealer => {
                    p.dealer_cards.push(*card);
                    if *face_up && !p.decided {
                        p.dealer_seen.push(*card);
                    }
                }
                CardTarget::Box(b) => {
                    let bx = p.box_mut(*b);
                    bx.face_up = *face_up && (bx.cards.is_empty() || bx.face_up);
                    bx.cards.push(*card);
                }
                CardTarget::Burn => {}
            },
            EventBody::CardExposed { at, card, .. } => {
                p.exposed_cards = p.exposed_cards.saturating_add(1);
                let dealer = *at == CardTarget::Dealer;
                if dealer && !p.decided && !p.dealer_seen.contains(card) {
                    p.dealer_seen.push(*card);
                }
            }
            EventBody::Decided { box_no, choice, .. } => {
                p.decided = true;
                p.box_mut(*box_no).decision = Some(*choice);
            }
            _ => {}
        }
    }

    fn facts(&mut self, report: RoundReport) -> RoundFacts {
        let p = self.pending.remove(&report.round).unwrap_or_default();
        let config = self.replayer.config();
        RoundFacts {
            table: self.table.clone(),
            rule_set: report.rule_set,
            repriced: config.is_some_and(|c| rules::edge::pricing_key(c).is_some()),
            dealer: p.dealer,
            dealer_cards: p.dealer_cards,
            dealer_seen: p.dealer_seen,
            boxes: p.boxes.into_values().collect(),
            exposed_cards: p.exposed_cards,
            report,
        }
    }
}

impl Pending {
    fn box_mut(&mut self, b: BoxNo) -> &mut BoxFacts {
        self.boxes.entry(b).or_insert_with(|| BoxFacts {
            box_no: b,
            cards: Vec::new(),
            decision: None,
            face_up: false,
        })
    }
}

/// Every round of one table's chain, in order.
pub fn read_table(table: TableId, events: &[(Seq, Event)]) -> Vec<RoundFacts> {
    let mut reader = RoundReader::new(table);
    let mut out = Vec::new();
    for (seq, e) in events {
        out.extend(reader.push(*seq, e));
    }
    out.extend(reader.finish());
    out
}
