//! The server's in-memory round index: a tail of the ledger that replays every table's
//! chain once, in order, and keeps per round what lists need (verdict, disputes, findings,
//! boxes, times), per table the seqs of its configuration events, finance totals, and its
//! chain verification status (every hash recomputed from the stored bytes as it is read).
//! New rounds and findings go to the live feed.
//!
//! Invariants: derived only from the ledger (events are the ground truth: restart rebuilds
//! it); the tail reads sled on a blocking thread (`spawn_blocking`), never on the async
//! runtime; readers take a short read lock and never wait for a replay; each pass reads at
//! most `INDEX_EVENTS_PER_PASS` events so a huge ledger is indexed in steps.
//!
//! A round is listed from its first stored event. The replayer reports a round only when
//! the next round of its table begins or the table closes (a `DeckRevealed` after
//! `RoundClosed` still belongs to it), so until then the index keeps its own row of the
//! round: `in_progress` (nothing decided; its boxes those bet on so far, so a search by box
//! finds it) until `RoundClosed` is stored, then the report of
//! its replay window as read so far (what the round view shows, `rounds::load`), which the
//! replayer's report replaces when it comes. That early replay is done once per pass and
//! only for rounds still unreported at the end of the pass (the newest round of a table),
//! so indexing a large ledger replays each round once.

use schemas::api::{ChainStatus, FeedItem, FinanceSummary, FindingRow, FindingView, RoundRow};
use schemas::report::{Dispute, Finding, RoundReport, Verdict};
use schemas::{
    chain::event_hash, EventBody, Finance, Hash32, Money, RoundId, RuleSet, Seq, TableId,
};
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

    /// A table's chain status: how far the index verified it, with what the ledger says of
    /// its attestation and its first gap.
    pub fn chain_status(
        &self,
        (table, head_seq, head_hash): (&TableId, Seq, Hash32),
        attested_through: Option<Seq>,
        gap: Option<schemas::api::GapView>,
    ) -> ChainStatus {
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
            attested_through,
            gap,
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
    /// The last `TableOpened`: (seq, rule set).
    config: Option<(u64, RuleSet)>,
    /// Seq of the last event that belongs to a round.
    last_round_seq: Option<u64>,
    /// The newest round id seen.
    newest_round: Option<u64>,
    /// Rounds with stored events that the replayer has not reported yet.
    pending: BTreeMap<u64, Pending>,
}

/// A round the replayer has not reported yet (see the module doc).
#[derive(Debug)]
struct Pending {
    /// The in-progress row: first and last seq, opening time, rule set.
    row: RoundRow,
    /// The last seq of the round before it: its replay window starts after it.
    prev_last: Option<u64>,
    config_seq: Option<u64>,
    /// `RoundClosed` is stored.
    closed: bool,
    /// Changed since the end of the last pass.
    changed: bool,
    /// What the feed was last told about it (`None`: nothing yet).
    announced: Option<RoundRow>,
}

impl Pending {
    fn new(table: &TableId, round: u64, seq: u64, at_ns: i64, t: &TableTail) -> Pending {
        Pending {
            row: RoundRow {
                table: table.clone(),
                round: RoundId(round),
                rule_set: t.config.map(|(_, rs)| rs),
                opened_at_ns: at_ns,
                closed_at_ns: None,
                first_seq: Seq(seq),
                last_seq: Seq(seq),
                verdict: Verdict::Clean,
                boxes: Vec::new(),
                disputes: 0,
                findings: 0,
                worst_severity: None,
                difference: Money::ZERO,
                in_progress: true,
            },
            prev_last: t.last_round_seq,
            config_seq: t.config.map(|(s, _)| s),
            closed: false,
            changed: true,
            announced: None,
        }
    }
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
        difference: r.disputes.iter().map(|d| d.difference).sum(),
        in_progress: false,
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

/// What one pass found, applied to the index under one short write lock.
#[derive(Default)]
struct PassOut {
    reports: Vec<RoundReport>,
    /// Rows of rounds the replayer has not reported yet, and whether to announce them.
    early: Vec<(Digest, bool)>,
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
                config: None,
                last_round_seq: None,
                newest_round: None,
                pending: BTreeMap::new(),
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
        early_rows(ledger, t, &mut out.early);
    }
    Ok((apply(index, out), more))
}

/// The rows of the rounds the replayer has not reported yet that changed in this pass: in
/// progress, or (closed) the report of the window read so far. Blocking: sled.
fn early_rows(ledger: &ledger::Ledger, t: &mut TableTail, out: &mut Vec<(Digest, bool)>) {
    let read_through = t.next_seq.saturating_sub(1);
    for p in t.pending.values_mut().filter(|p| p.changed) {
        p.changed = false;
        let report = if p.closed {
            let located = crate::rounds::Located {
                first_seq: p.row.first_seq.0,
                last_seq: p.row.last_seq.0,
                prev_last: p.prev_last,
                next_first: Some(read_through + 1),
                config_seq: p.config_seq,
            };
            match crate::rounds::load(ledger, &p.row.table, p.row.round.0, located) {
                Ok(l) => Some(l.report),
                Err(e) => {
                    // Listed as in progress until the replayer reports it.
                    tracing::warn!(
                        "table {} round {}: early replay: {e}",
                        p.row.table,
                        p.row.round.0
                    );
                    None
                }
            }
        } else {
            None
        };
        let digest = match report {
            Some(r) => Digest {
                row: row_of(&r),
                disputes: r.disputes,
                findings: r.findings,
            },
            None => Digest {
                row: p.row.clone(),
                disputes: Vec::new(),
                findings: Vec::new(),
            },
        };
        // Announce a round when it appears and when its report changes, not every event.
        let announce = match &p.announced {
            None => true,
            Some(a) => !digest.row.in_progress && !same_outcome(a, &digest.row),
        };
        if announce {
            p.announced = Some(digest.row.clone());
        }
        out.push((digest, announce));
    }
}

/// Whether two rows of one round say the same (its events may have grown).
fn same_outcome(a: &RoundRow, b: &RoundRow) -> bool {
    a.in_progress == b.in_progress
        && a.verdict == b.verdict
        && a.closed_at_ns == b.closed_at_ns
        && a.disputes == b.disputes
        && a.findings == b.findings
        && a.difference == b.difference
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
        EventBody::TableOpened { config } => {
            delta.configs.push((seq, config.rule_set));
            t.config = Some((seq, config.rule_set));
        }
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
    track_pending(table, t, seq, &event);
    for r in t.replayer.push(Seq(seq), &event) {
        t.pending.remove(&r.round.0);
        reports.push(r);
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

/// Keeps the rows of rounds the replayer has not reported: a round newer than any seen
/// starts one; its events extend it; `RoundClosed` closes it; a round-less deck reveal
/// after it changes its replay.
fn track_pending(table: &TableId, t: &mut TableTail, seq: u64, event: &schemas::Event) {
    match event.round {
        Some(RoundId(r)) => {
            if t.newest_round.is_none_or(|n| r > n) {
                t.newest_round = Some(r);
                let p = Pending::new(table, r, seq, event.occurred_at_ns, t);
                t.pending.insert(r, p);
            }
            if let Some(p) = t.pending.get_mut(&r) {
                p.row.last_seq = Seq(seq);
                p.changed = true;
                note_box_in_play(&mut p.row.boxes, &event.body);
                if matches!(event.body, EventBody::RoundClosed) && !p.closed {
                    p.closed = true;
                    p.row.closed_at_ns = Some(event.occurred_at_ns);
                }
            }
            t.last_round_seq = Some(seq);
        }
        None => {
            if matches!(event.body, EventBody::DeckRevealed { .. }) {
                if let Some(p) = t.pending.values_mut().next_back() {
                    p.changed = true;
                }
            }
        }
    }
}

fn apply(index: &RwLock<Index>, out: PassOut) -> Vec<FeedItem> {
    let mut feed = Vec::new();
    let mut guard = index.write().unwrap_or_else(|p| p.into_inner());
    let ix: &mut Index = &mut guard;
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
        let t = ix.tables.entry(r.table.clone()).or_default();
        match r.verdict {
            Verdict::Disputed => t.disputed += 1,
            Verdict::Irregular => t.irregular += 1,
            Verdict::Void => t.void += 1,
            Verdict::Clean => {}
        }
        t.finance.rounds += 1;
        if let Some(s) = &r.settlement {
            let net: Money = s.boxes.iter().flat_map(|b| &b.lines).map(|l| l.net).sum();
            t.finance.win_rules = t.finance.win_rules - net;
        }
        let digest = Digest {
            row: row_of(&r),
            disputes: r.disputes,
            findings: r.findings,
        };
        // The early report of a closed round already announced the same outcome.
        let announced = put(ix, digest.clone()).is_some_and(|old| {
            !old.row.in_progress
                && same_outcome(&old.row, &digest.row)
                && old.findings == digest.findings
        });
        if !announced {
            announce(&digest, &mut feed);
        }
    }
    for (digest, announce_it) in out.early {
        put(ix, digest.clone());
        if announce_it {
            announce(&digest, &mut feed);
        }
    }
    feed
}

/// Puts a round's digest in the index (replacing an earlier one); returns the earlier one.
fn put(ix: &mut Index, d: Digest) -> Option<Digest> {
    let (table, round, at) = (d.row.table.clone(), d.row.round.0, d.row.opened_at_ns);
    let old = ix
        .tables
        .entry(table.clone())
        .or_default()
        .rounds
        .insert(round, d);
    if let Some(o) = &old {
        if o.row.opened_at_ns != at {
            ix.by_time
                .remove(&(o.row.opened_at_ns, table.clone(), round));
        }
    }
    ix.by_time.insert((at, table, round));
    old
}

/// The feed items of a round: its findings, then the round.
fn announce(d: &Digest, feed: &mut Vec<FeedItem>) {
    for f in &d.findings {
        feed.push(FeedItem::Finding {
            finding: FindingRow {
                table: d.row.table.clone(),
                round: d.row.round,
                opened_at_ns: d.row.opened_at_ns,
                finding: finding_view(f),
            },
        });
    }
    feed.push(FeedItem::Round {
        round: d.row.clone(),
    });
}
