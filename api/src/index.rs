//! The server's in-memory round index: a tail of the ledger that replays every table's
//! chain once, in order, and keeps per round what lists need (verdict, disputes, findings,
//! boxes, times), per table the seqs of its configuration events, finance totals, and its
//! chain verification status (every hash recomputed from the stored bytes as it is read).
//! New rounds and findings go to the live feed.
//!
//! Invariants: derived only from the ledger (events are the ground truth: restart rebuilds
//! it); the tail reads sled on a blocking thread (`spawn_blocking`), never on the async
//! runtime; readers take a short read lock and never wait for a replay; each pass reads at
//! most `INDEX_EVENTS_PER_PASS` events so a huge ledger is indexed in steps. A round
//! appears when the replayer reports it: when the next round of its table begins or the
//! table closes (a `DeckRevealed` after `RoundClosed` still belongs to it).

use schemas::api::{ChainStatus, FeedItem, FinanceSummary, FindingRow, FindingView, RoundRow};
use schemas::report::{Dispute, Finding, RoundReport, Verdict};
use schemas::{chain::event_hash, EventBody, Finance, Hash32, Money, RuleSet, Seq, TableId};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::RwLock;

/// Most events one indexing pass reads (over all tables) before publishing what it found.
pub const INDEX_EVENTS_PER_PASS: u64 = 500_000;
/// Events read from sled per call while indexing.
pub const INDEX_CHUNK_EVENTS: u64 = 16_384;

/// What the index keeps of one round.
#[derive(Debug, Clone)]
pub struct Digest {
    pub row: RoundRow,
    pub disputes: Vec<Dispute>,
    pub findings: Vec<Finding>,
}

/// One table's part of the index.
#[derive(Debug, Clone, Default)]
pub struct TableIdx {
    pub rule_set: Option<RuleSet>,
    pub rounds: BTreeMap<u64, Digest>,
    /// Seqs of `TableOpened` events.
    pub configs: BTreeSet<u64>,
    pub finance: FinanceSummary,
    pub verified_through: u64,
    pub problem: Option<String>,
    pub disputed: u64,
    pub irregular: u64,
    pub void: u64,
}

/// The whole index.
#[derive(Debug, Default)]
pub struct Index {
    pub tables: BTreeMap<TableId, TableIdx>,
    /// (opened_at_ns, table, round): every round in device-time order.
    pub by_time: BTreeSet<(i64, TableId, u64)>,
    pub events_indexed: u64,
}

impl Index {
    pub fn digest(&self, table: &TableId, round: u64) -> Option<&Digest> {
        self.tables.get(table)?.rounds.get(&round)
    }

    pub fn chain_status(&self, table: &TableId, head_seq: Seq, head_hash: Hash32) -> ChainStatus {
        let t = self.tables.get(table);
        let through = t.map_or(0, |t| t.verified_through);
        let problem = t.and_then(|t| t.problem.clone());
        ChainStatus {
            table: table.clone(),
            head_seq,
            head_hash,
            verified_through: Seq(through),
            ok: problem.is_none() && through == head_seq.0,
            problem,
        }
    }
}

/// The tail's own state: one replayer per table and where it stands. Only the indexing
/// task touches it.
#[derive(Debug, Default)]
pub struct Tail {
    tables: BTreeMap<TableId, TableTail>,
}

#[derive(Debug)]
struct TableTail {
    replayer: replayer::TableReplayer,
    next_seq: u64,
    prev: Hash32,
    /// Last seq verified.
    checked: u64,
    /// Still verifying (no problem found yet).
    verifying: bool,
}

/// The row a list shows for a report.
pub fn row_of(r: &RoundReport) -> RoundRow {
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
        difference: Money(r.disputes.iter().map(|d| d.difference.0).sum()),
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
    }
}

/// What one pass found, applied to the index under one short write lock.
#[derive(Default)]
struct PassOut {
    reports: Vec<RoundReport>,
    tables: BTreeMap<TableId, TableDelta>,
    events: u64,
}

#[derive(Default)]
struct TableDelta {
    configs: Vec<(u64, RuleSet)>,
    finance: FinanceSummary,
    verified_through: u64,
    problem: Option<String>,
}

/// One indexing pass: reads what is new in the ledger (at most `INDEX_EVENTS_PER_PASS`
/// events), replays it, updates `index` and returns the feed items. Returns `true` in
/// `.1` when it stopped at the limit (more to read). Blocking: sled.
pub fn pass(
    ledger: &ledger::Ledger,
    tail: &mut Tail,
    index: &RwLock<Index>,
) -> Result<(Vec<FeedItem>, bool), ledger::Error> {
    let mut out = PassOut::default();
    let mut more = false;
    for head in ledger.heads() {
        let t = tail
            .tables
            .entry(head.table.clone())
            .or_insert_with(|| TableTail {
                replayer: replayer::TableReplayer::new(head.table.clone()),
                next_seq: 1,
                prev: Hash32::ZERO,
                checked: 0,
                verifying: true,
            });
        let delta = out.tables.entry(head.table.clone()).or_default();
        while t.next_seq <= head.seq.0 {
            if out.events >= INDEX_EVENTS_PER_PASS {
                more = true;
                break;
            }
            let to = head.seq.0.min(t.next_seq + INDEX_CHUNK_EVENTS - 1);
            for stored in ledger.events(&head.table, t.next_seq..=to) {
                let stored = stored?;
                out.events += 1;
                index_event(&head.table, t, delta, &stored, &mut out.reports);
            }
            t.next_seq = to + 1;
        }
        if t.verifying {
            delta.verified_through = t.checked;
        }
    }
    Ok((apply(index, out), more))
}

fn index_event(
    table: &TableId,
    t: &mut TableTail,
    delta: &mut TableDelta,
    stored: &ledger::StoredEvent,
    reports: &mut Vec<RoundReport>,
) {
    let seq = stored.seq.0;
    let decoded = schemas::codec::decode(&stored.bytes);
    let event = match decoded {
        Ok((e, _)) => e,
        Err(e) => {
            if t.verifying {
                t.verifying = false;
                delta.verified_through = seq - 1;
                delta.problem = Some(format!("seq {seq}: stored bytes do not decode: {e}"));
            }
            return;
        }
    };
    if t.verifying {
        let computed = event_hash(&t.prev, &stored.bytes);
        let problem = if seq != t.checked + 1 {
            Some(format!("expected seq {}, found seq {seq}", t.checked + 1))
        } else if event.seq.0 != seq || event.table != *table {
            Some(format!(
                "seq {seq}: the bytes are table {} seq {}",
                event.table, event.seq.0
            ))
        } else if event.prev != t.prev {
            Some(format!(
                "seq {seq}: prev {} does not match the previous hash {}",
                event.prev, t.prev
            ))
        } else if computed != stored.hash {
            Some(format!(
                "seq {seq}: stored hash {} differs from the recomputed {computed}",
                stored.hash
            ))
        } else {
            None
        };
        match problem {
            Some(p) => {
                t.verifying = false;
                delta.verified_through = seq - 1;
                delta.problem = Some(p);
            }
            None => {
                t.prev = computed;
                t.checked = seq;
            }
        }
    }
    match &event.body {
        EventBody::TableOpened { config } => delta.configs.push((seq, config.rule_set)),
        EventBody::Finance { entry } => {
            let f = &mut delta.finance;
            match entry {
                Finance::CashBuyIn { amount } => f.drop = f.drop + *amount,
                Finance::Marker { amount, .. } => f.markers = f.markers + *amount,
                Finance::Fill { amount, .. } => f.fills = f.fills + *amount,
                Finance::Credit { amount, .. } => f.credits = f.credits + *amount,
                Finance::ChipInventory { .. } => {}
            }
        }
        EventBody::PaidOut { net, .. } => {
            delta.finance.win_recorded = delta.finance.win_recorded - *net;
        }
        _ => {}
    }
    reports.extend(t.replayer.push(Seq(seq), &event));
}

fn apply(index: &RwLock<Index>, out: PassOut) -> Vec<FeedItem> {
    let mut feed = Vec::new();
    let mut ix = index.write().unwrap_or_else(|p| p.into_inner());
    ix.events_indexed += out.events;
    for (table, d) in out.tables {
        let t = ix.tables.entry(table).or_default();
        for (seq, rs) in d.configs {
            t.configs.insert(seq);
            t.rule_set = Some(rs);
        }
        let f = &mut t.finance;
        f.drop = f.drop + d.finance.drop;
        f.markers = f.markers + d.finance.markers;
        f.fills = f.fills + d.finance.fills;
        f.credits = f.credits + d.finance.credits;
        f.win_recorded = f.win_recorded + d.finance.win_recorded;
        if t.problem.is_none() {
            t.verified_through = d.verified_through;
            t.problem = d.problem;
        }
    }
    for r in out.reports {
        let row = row_of(&r);
        let t = ix.tables.entry(r.table.clone()).or_default();
        match r.verdict {
            Verdict::Disputed => t.disputed += 1,
            Verdict::Irregular => t.irregular += 1,
            Verdict::Void => t.void += 1,
            Verdict::Clean => {}
        }
        t.finance.rounds += 1;
        if let Some(s) = &r.settlement {
            let net: i64 = s.boxes.iter().flat_map(|b| &b.lines).map(|l| l.net.0).sum();
            t.finance.win_rules = t.finance.win_rules - Money(net);
        }
        t.rounds.insert(
            r.round.0,
            Digest {
                row: row.clone(),
                disputes: r.disputes.clone(),
                findings: r.findings.clone(),
            },
        );
        ix.by_time
            .insert((r.opened_at_ns, r.table.clone(), r.round.0));
        for f in &r.findings {
            feed.push(FeedItem::Finding {
                finding: FindingRow {
                    table: r.table.clone(),
                    round: r.round,
                    opened_at_ns: r.opened_at_ns,
                    finding: finding_view(f),
                },
            });
        }
        feed.push(FeedItem::Round { round: row });
    }
    feed
}
