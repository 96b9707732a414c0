//! One round of play: a state machine fed the round's events in sequence order, and the
//! analysis that turns what it saw into findings, a `RoundInput`, a settlement (by
//! `rules::settle`, never our own) and disputes.
//!
//! The machine accepts anything: an event out of place is recorded, never refused. Checks
//! that need the whole round (deal order, card counts, exposures, shuffle commitment) run
//! once, when the round is finished.

mod reconstruct;

use schemas::chain::deck_commitment;
use schemas::findings::{lookup, FindingKind};
use schemas::report::{Dispute, Finding, RoundReport, Verdict};
use schemas::settle::{BoxInput, RoundInput, Settlement};
use schemas::{
    Announcement, BetKind, BoxNo, Card, CardTarget, Choice, DealingMode, Event, EventBody, Hash32,
    Money, PayLine, PlayerOption, PoolId, RoundId, RuleSet, Ruling, Seq, Stake, TableConfig,
    TableId,
};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Where a round stands (CSP6 §1.16, §3.2-§3.14): the phases of the state machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Events of the round before "Place your Bets" (a shuffle, a pool display).
    Opening,
    /// "Place your Bets" announced.
    BetsOpen,
    /// "No more Bets" announced; no card dealt yet.
    BetsClosed,
    /// A card has been dealt.
    Dealing,
    /// A decision is recorded for a box.
    Decisions,
    /// The dealer's hand is revealed: the outcome is established.
    DealerRevealed,
    /// A payout is recorded.
    Settlement,
    /// `RoundClosed` seen.
    Closed,
}

/// The state of a round after one event, for `replay --step`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepView {
    /// Seq of the event just applied.
    pub seq: Seq,
    /// The event's type tag ("card_dealt").
    pub event: &'static str,
    /// The round's phase after the event.
    pub phase: Phase,
    /// Bets on the layout per box and kind (after "No more Bets": as they stood then).
    pub bets: BTreeMap<BoxNo, BTreeMap<BetKind, Stake>>,
    /// Cards per box, in the order dealt.
    pub cards: BTreeMap<BoxNo, Vec<Card>>,
    /// The dealer's cards, in the order dealt.
    pub dealer: Vec<Card>,
    /// Burnt cards, in the order dealt.
    pub burn: Vec<Card>,
    /// Each box's decision; the first decision for a box stands.
    pub decisions: BTreeMap<BoxNo, Choice>,
    /// BET / Play stakes placed with the decisions.
    pub plays: BTreeMap<BoxNo, Money>,
    /// Recorded payouts so far per box and line.
    pub paid: BTreeMap<BoxNo, BTreeMap<PayLine, Money>>,
    /// Whether a void announcement or a void ruling so far voids the round.
    /// Void-causing faults are judged at the end and show in the report only.
    pub void: bool,
    /// Codes of the findings the machine has made so far (the whole-round checks run at
    /// the end and are in the report).
    pub findings: Vec<String>,
}

/// What the table knew before the round began: pool values shown and a pending shuffle.
#[derive(Debug, Clone, Default)]
pub(crate) struct TableContext {
    pub pool_shown: BTreeMap<String, Money>,
    pub shuffle: Option<(Seq, Option<Hash32>)>,
}

/// Bets by box and kind: the amount in minor units and the seq that placed it.
type ByBox = BTreeMap<BoxNo, BTreeMap<BetKind, (i64, Seq)>>;

/// What the whole-round checks decide: the round void, or single hands invalidated
/// (their bets returned) with the clause that says so.
#[derive(Debug, Default)]
struct Voiding {
    void: bool,
    invalidated: BTreeMap<BoxNo, String>,
}

#[derive(Debug, Clone)]
struct Dealt {
    seq: Seq,
    to: CardTarget,
    card: Card,
    face_up: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct RoundState {
    table: TableId,
    pub round: RoundId,
    config: Option<Arc<TableConfig>>,
    first_seq: Seq,
    last_seq: Seq,
    opened_at_ns: i64,
    closed_at_ns: Option<i64>,
    pub closed: Option<Seq>,
    phase: Phase,
    nmb: Option<Seq>,
    bets: BTreeMap<(BoxNo, BetKind), (Stake, Seq)>,
    bets_at_nmb: BTreeMap<(BoxNo, BetKind), (Stake, Seq)>,
    decisions: BTreeMap<BoxNo, (Choice, Option<Money>, Seq)>,
    deal: Vec<Dealt>,
    exposures: Vec<(Seq, CardTarget, Card, bool)>,
    examinations: Vec<(Seq, BoxNo, BoxNo)>,
    rulings: Vec<(Seq, Ruling)>,
    paid: BTreeMap<(BoxNo, PayLine), (Money, Vec<Seq>)>,
    pool_shown: Option<Money>,
    magic_card: Option<Card>,
    lucky_box: Option<BoxNo>,
    lucky_dealer: bool,
    void_by: Vec<(Seq, String)>,
    interruptions: Vec<(Seq, bool)>,
    jackpot_faults: Vec<(Seq, bool)>,
    shuffle: Option<(Seq, Option<Hash32>)>,
    reveal: Option<(Seq, Vec<Card>, Hash32)>,
    players_seen: bool,
    outcome_established: bool,
    findings: Vec<Finding>,
}

fn stake_value(s: Stake) -> i64 {
    match s {
        Stake::Chips(m) => m.0,
        Stake::Credits(c) => i64::from(c),
    }
}

fn stake_add(a: Stake, b: Stake) -> Stake {
    match (a, b) {
        (Stake::Chips(x), Stake::Chips(y)) => Stake::Chips(x + y), // saturating (Money)
        (Stake::Credits(x), Stake::Credits(y)) => Stake::Credits(x.saturating_add(y)),
        // Mixed units on one bet: the later stake stands; the units are the device's error.
        (_, b) => b,
    }
}

/// The kind the BET / Play decision stakes settle on.
fn play_kind(rs: RuleSet) -> BetKind {
    match rs {
        RuleSet::Csp6 | RuleSet::Mlp3 | RuleSet::Ssp4 => BetKind::Bet,
        RuleSet::Cs51 | RuleSet::Tcp3 => BetKind::Play,
    }
}

/// BET = 2 x Ante (CSP6 §3.12.2, SSP4 §1.1.2, CS51 ¶7); Play = Ante (TCP3 §3.12.2).
fn play_multiple(rs: RuleSet) -> i64 {
    match rs {
        RuleSet::Tcp3 => 1,
        _ => 2,
    }
}

/// Rule sets whose manual-shoe deal starts with a burnt card (CSP6/MLP3/TCP3 §3.10).
fn burns(rs: RuleSet, dealing: DealingMode) -> bool {
    dealing == DealingMode::ManualShoe
        && matches!(rs, RuleSet::Csp6 | RuleSet::Mlp3 | RuleSet::Tcp3)
}

impl RoundState {
    pub(crate) fn new(
        table: TableId,
        round: RoundId,
        config: Option<Arc<TableConfig>>,
        first_seq: Seq,
        opened_at_ns: i64,
        pool_shown: &BTreeMap<String, Money>,
        shuffle: Option<(Seq, Option<Hash32>)>,
    ) -> RoundState {
        let pool_shown = config
            .as_ref()
            .and_then(|c| c.jackpot.as_ref())
            .and_then(|j| pool_shown.get(j.pool.as_str()).copied());
        RoundState {
            table,
            round,
            config,
            first_seq,
            last_seq: first_seq,
            opened_at_ns,
            closed_at_ns: None,
            closed: None,
            phase: Phase::Opening,
            nmb: None,
            bets: BTreeMap::new(),
            bets_at_nmb: BTreeMap::new(),
            decisions: BTreeMap::new(),
            deal: Vec::new(),
            exposures: Vec::new(),
            examinations: Vec::new(),
            rulings: Vec::new(),
            paid: BTreeMap::new(),
            pool_shown,
            magic_card: None,
            lucky_box: None,
            lucky_dealer: false,
            void_by: Vec::new(),
            interruptions: Vec::new(),
            jackpot_faults: Vec::new(),
            shuffle,
            reveal: None,
            players_seen: false,
            outcome_established: false,
            findings: Vec::new(),
        }
    }

    fn rule_set(&self) -> Option<RuleSet> {
        self.config.as_ref().map(|c| c.rule_set)
    }

    /// Records a finding of `kind`, if the kind applies to the rule set.
    fn find(
        &mut self,
        kind: FindingKind,
        seqs: Vec<Seq>,
        box_no: Option<BoxNo>,
        explanation: String,
    ) {
        let Some(rs) = self.rule_set() else { return };
        let Some(row) = lookup(rs, kind) else { return };
        self.findings.push(Finding {
            code: row.code.to_string(),
            clause: row.clause_text(),
            severity: kind.severity(),
            seqs,
            box_no,
            explanation,
        });
    }

    /// Whether a commitment waits for its `DeckRevealed`.
    pub(crate) fn awaits_reveal(&self) -> bool {
        matches!(self.shuffle, Some((_, Some(_)))) && self.reveal.is_none()
    }

    /// Feeds one event of this round.
    pub(crate) fn apply(&mut self, seq: Seq, ev: &Event) {
        self.last_seq = self.last_seq.max(seq);
        if let Some(closed) = self.closed {
            self.apply_after_close(closed, seq, ev);
            return;
        }
        match &ev.body {
            EventBody::Announced { announcement } => self.announced(seq, announcement),
            EventBody::ShuffleCompleted { deck_commitment } => {
                self.shuffle = Some((seq, *deck_commitment));
            }
            EventBody::DeckRevealed { order, salt } => {
                self.reveal = Some((seq, order.clone(), *salt));
            }
            EventBody::CardDealt {
                to, card, face_up, ..
            } => self.card_dealt(seq, *to, *card, *face_up),
            EventBody::CardExposed {
                at,
                card,
                players_had_seen,
            } => {
                if *players_had_seen {
                    self.players_seen = true;
                }
                self.exposures.push((seq, *at, *card, *players_had_seen));
            }
            EventBody::HandExamined {
                player_box,
                hand_box,
            } => {
                self.players_seen = true;
                self.examinations.push((seq, *player_box, *hand_box));
            }
            EventBody::BetPlaced {
                box_no,
                kind,
                stake,
            } => self.bet_placed(seq, *box_no, *kind, *stake),
            EventBody::BetRejected { .. } => {}
            EventBody::BetChanged {
                box_no,
                kind,
                from,
                to,
            } => self.bet_changed(seq, *box_no, *kind, (*from, *to)),
            EventBody::BetWithdrawn {
                box_no,
                kind,
                stake,
            } => self.bet_withdrawn(seq, *box_no, *kind, *stake),
            EventBody::Decided {
                box_no,
                choice,
                stake,
            } => self.decided(seq, *box_no, *choice, *stake),
            body => self.apply_outcome(seq, ev, body),
        }
    }

    /// Feeds the events of the outcome, the jackpot, staff and the end of the round.
    fn apply_outcome(&mut self, seq: Seq, ev: &Event, body: &EventBody) {
        match body {
            EventBody::HandRevealed { .. } => {
                self.players_seen = true;
            }
            EventBody::DealerRevealed { .. } => {
                self.players_seen = true;
                self.outcome_established = true;
                self.phase = self.phase.max(Phase::DealerRevealed);
            }
            EventBody::PaidOut { box_no, line, net } => self.paid_out(seq, *box_no, *line, *net),
            EventBody::JackpotShown { pool, value } => self.jackpot_shown(pool, *value),
            EventBody::JackpotHit { .. }
            | EventBody::JackpotReset { .. }
            | EventBody::JackpotRestored { .. } => {}
            EventBody::JackpotFault { .. } => self.jackpot_faults.push((seq, self.players_seen)),
            EventBody::MagicCardSelected { card } => self.magic_card = Some(*card),
            EventBody::LuckyPlayerSelected { box_no } => self.lucky_box = Some(*box_no),
            EventBody::LuckyDealerSelected => self.lucky_dealer = true,
            EventBody::StaffDecision { staff, ruling } => {
                if let Ruling::VoidRound { clause, reason } = ruling {
                    self.void_by.push((
                        seq,
                        format!("{staff} declared the round void ({clause}: {reason})"),
                    ));
                }
                self.rulings.push((seq, ruling.clone()));
            }
            EventBody::TechnicalInterruption { .. } => {
                self.interruptions.push((seq, self.outcome_established));
            }
            EventBody::RoundClosed => {
                self.closed = Some(seq);
                self.closed_at_ns = Some(ev.occurred_at_ns);
                self.phase = Phase::Closed;
            }
            // Table, finance, key-register and dealer events do not change a round.
            EventBody::TableOpened { .. }
            | EventBody::TableClosed
            | EventBody::Finance { .. }
            | EventBody::DeviceEnrolled { .. }
            | EventBody::DeviceRevoked { .. }
            | EventBody::DealerChanged { .. } => {}
            // `apply` handles these itself; they never reach here.
            EventBody::Announced { .. }
            | EventBody::ShuffleCompleted { .. }
            | EventBody::DeckRevealed { .. }
            | EventBody::CardDealt { .. }
            | EventBody::CardExposed { .. }
            | EventBody::HandExamined { .. }
            | EventBody::BetPlaced { .. }
            | EventBody::BetRejected { .. }
            | EventBody::BetChanged { .. }
            | EventBody::BetWithdrawn { .. }
            | EventBody::Decided { .. } => {}
        }
    }

    /// After `RoundClosed` only the deck reveal is taken; anything else is a finding.
    fn apply_after_close(&mut self, closed: Seq, seq: Seq, ev: &Event) {
        if let EventBody::DeckRevealed { order, salt } = &ev.body {
            self.reveal = Some((seq, order.clone(), *salt));
            return;
        }
        self.find(
            FindingKind::EventAfterRoundClosed,
            vec![closed, seq],
            None,
            format!(
                "a {} event arrived after the round closed; it is not applied",
                ev.body.type_name()
            ),
        );
    }

    fn announced(&mut self, seq: Seq, announcement: &Announcement) {
        match announcement {
            Announcement::PlaceYourBets => {
                if self.phase == Phase::Opening {
                    self.phase = Phase::BetsOpen;
                }
            }
            Announcement::NoMoreBets => {
                if self.nmb.is_none() {
                    self.nmb = Some(seq);
                    self.bets_at_nmb = self.bets.clone();
                    self.phase = self.phase.max(Phase::BetsClosed);
                }
            }
            Announcement::NoHand | Announcement::Result { .. } => {}
            Announcement::Void => self
                .void_by
                .push((seq, "the dealer announced a void".into())),
        }
    }

    fn card_dealt(&mut self, seq: Seq, to: CardTarget, card: Card, face_up: bool) {
        if face_up && matches!(to, CardTarget::Box(_)) && self.rule_set() == Some(RuleSet::Cs51) {
            self.players_seen = true; // CS51: the player's cards are dealt face up
        }
        self.deal.push(Dealt {
            seq,
            to,
            card,
            face_up,
        });
        self.phase = self.phase.max(Phase::Dealing);
    }

    /// A change before "No more Bets" replaces the stake; after it, it is a finding.
    fn bet_changed(&mut self, seq: Seq, box_no: BoxNo, kind: BetKind, (from, to): (Stake, Stake)) {
        let Some(nmb) = self.nmb else {
            self.bets.insert((box_no, kind), (to, seq));
            return;
        };
        let withdrawn = stake_value(to) < stake_value(from);
        let (k, what) = if withdrawn {
            (FindingKind::BetWithdrawnAfterNoMoreBets, "reduced")
        } else {
            (FindingKind::BetAfterNoMoreBets, "changed")
        };
        self.find(
            k,
            vec![nmb, seq],
            Some(box_no),
            format!(
                "{kind:?} {what} from {} to {} after \"No more Bets\"; it settles as it stood when bets closed",
                stake_value(from),
                stake_value(to)
            ),
        );
    }

    /// A withdrawal before "No more Bets" removes the bet; after it, it is a finding.
    fn bet_withdrawn(&mut self, seq: Seq, box_no: BoxNo, kind: BetKind, stake: Stake) {
        let Some(nmb) = self.nmb else {
            self.bets.remove(&(box_no, kind));
            return;
        };
        self.find(
            FindingKind::BetWithdrawnAfterNoMoreBets,
            vec![nmb, seq],
            Some(box_no),
            format!(
                "{kind:?} of {} withdrawn after \"No more Bets\"; it settles as it stood when bets closed",
                stake_value(stake)
            ),
        );
    }

    /// The first decision for a box stands.
    fn decided(&mut self, seq: Seq, box_no: BoxNo, choice: Choice, stake: Option<Money>) {
        self.players_seen = true;
        if !matches!(choice, Choice::Play) {
            self.outcome_established = true; // a fold loses the Ante for good
        }
        self.decisions.entry(box_no).or_insert((choice, stake, seq));
        self.phase = self.phase.max(Phase::Decisions);
    }

    fn paid_out(&mut self, seq: Seq, box_no: BoxNo, line: PayLine, net: Money) {
        self.outcome_established = true;
        let e = self
            .paid
            .entry((box_no, line))
            .or_insert((Money::ZERO, Vec::new()));
        e.0 = e.0 + net;
        e.1.push(seq);
        self.phase = self.phase.max(Phase::Settlement);
    }

    fn jackpot_shown(&mut self, pool: &PoolId, value: Money) {
        let ours = self
            .config
            .as_ref()
            .and_then(|c| c.jackpot.as_ref())
            .is_some_and(|j| &j.pool == pool);
        // The value shown before the deal is the one the round's winners are paid
        // from (RULES-NOTES 7); later displays belong to the pool report.
        if ours && self.deal.is_empty() {
            self.pool_shown = Some(value);
        }
    }

    fn bet_placed(&mut self, seq: Seq, box_no: BoxNo, kind: BetKind, stake: Stake) {
        let Some(nmb) = self.nmb else {
            let e = self.bets.entry((box_no, kind)).or_insert((stake, seq));
            if e.1 != seq {
                *e = (stake_add(e.0, stake), seq);
            }
            return;
        };
        let rs = self.rule_set();
        // The BET / Play placed with a decision after the deal is not a late bet.
        if matches!(kind, BetKind::Bet | BetKind::Play)
            && !self.deal.is_empty()
            && rs.map(play_kind) == Some(kind)
        {
            if let Stake::Chips(m) = stake {
                let e = self
                    .decisions
                    .entry(box_no)
                    .or_insert((Choice::Play, None, seq));
                if e.1.is_none() {
                    e.1 = Some(m);
                }
            }
            return;
        }
        self.find(
            FindingKind::BetAfterNoMoreBets,
            vec![nmb, seq],
            Some(box_no),
            format!(
                "{kind:?} of {} placed after \"No more Bets\"; it is not honoured",
                stake_value(stake)
            ),
        );
    }

    /// A snapshot for `steps`.
    pub(crate) fn view(&self, seq: Seq, event: &'static str) -> StepView {
        let src = if self.nmb.is_some() {
            &self.bets_at_nmb
        } else {
            &self.bets
        };
        let mut bets: BTreeMap<BoxNo, BTreeMap<BetKind, Stake>> = BTreeMap::new();
        for (&(b, k), &(s, _)) in src {
            bets.entry(b).or_default().insert(k, s);
        }
        let mut cards: BTreeMap<BoxNo, Vec<Card>> = BTreeMap::new();
        let (mut dealer, mut burn) = (Vec::new(), Vec::new());
        for d in &self.deal {
            match d.to {
                CardTarget::Box(b) => cards.entry(b).or_default().push(d.card),
                CardTarget::Dealer => dealer.push(d.card),
                CardTarget::Burn => burn.push(d.card),
            }
        }
        let mut paid: BTreeMap<BoxNo, BTreeMap<PayLine, Money>> = BTreeMap::new();
        for (&(b, l), (m, _)) in &self.paid {
            paid.entry(b).or_default().insert(l, *m);
        }
        StepView {
            seq,
            event,
            phase: self.phase,
            bets,
            cards,
            dealer,
            burn,
            decisions: self
                .decisions
                .iter()
                .map(|(&b, &(c, _, _))| (b, c))
                .collect(),
            plays: self
                .decisions
                .iter()
                .filter_map(|(&b, &(_, s, _))| s.map(|s| (b, s)))
                .collect(),
            paid,
            void: !self.void_by.is_empty(),
            findings: self.findings.iter().map(|f| f.code.clone()).collect(),
        }
    }

    /// Runs the whole-round checks, settles and judges. A failed assertion of our own code
    /// (the rules engine's money check, the report's invariants) does not end the replay:
    /// the round is reported with one `RL-internal-error` finding and the fold goes on.
    pub(crate) fn finish(self) -> RoundReport {
        let shell = ReportShell {
            table: self.table.clone(),
            round: self.round,
            rule_set: self.config.as_ref().map(|c| c.rule_set),
            first_seq: self.first_seq,
            last_seq: self.last_seq,
            opened_at_ns: self.opened_at_ns,
            closed_at_ns: self.closed_at_ns,
        };
        // Nothing of `self` is seen after a panic: the round state is dropped with it.
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.judge_round())) {
            Ok(report) => report,
            Err(payload) => shell.internal_error(panic_text(payload.as_ref())),
        }
    }

    /// `finish` without its guard. `closed` is None when the round was cut off (next
    /// round began, end of input) without `RoundClosed`.
    fn judge_round(mut self) -> RoundReport {
        #[cfg(test)]
        inject::fail_if_asked(self.round);
        let Some(config) = self.config.clone() else {
            return self.report_without_config();
        };
        let rs = config.rule_set;
        if self.closed.is_none() {
            let last = self.last_seq;
            self.find(
                FindingKind::RoundNeverClosed,
                vec![self.first_seq, last],
                None,
                "the round has no \"round closed\" event: settlement was never completed on the record".into(),
            );
        }
        let mut voiding = Voiding {
            void: !self.void_by.is_empty(),
            invalidated: BTreeMap::new(),
        };
        let by_box = self.take_bets();
        self.check_limits(&config, &by_box);
        let returned_side = self.check_side_bets(&by_box);
        self.check_deal(&config, &by_box, &mut voiding);
        self.check_faults(&mut voiding.void);
        self.check_examinations(rs, &mut voiding.invalidated);
        self.apply_player_options(rs, &mut voiding.invalidated);
        self.report_void();
        let boxes = self.box_inputs(rs, &by_box, &returned_side, &voiding);
        let input = self.settlement_input(&config, boxes, voiding.void);
        self.judge(config, input)
    }

    /// Bets as they stood at "No more Bets" (§5.21), by box, zero stakes left out. The
    /// state is consumed here.
    fn take_bets(&mut self) -> ByBox {
        let bets_src = if self.nmb.is_some() {
            std::mem::take(&mut self.bets_at_nmb)
        } else {
            std::mem::take(&mut self.bets)
        };
        let mut by_box: ByBox = BTreeMap::new();
        for (&(b, k), &(s, q)) in &bets_src {
            if stake_value(s) != 0 {
                by_box.entry(b).or_default().insert(k, (stake_value(s), q));
            }
        }
        by_box
    }

    // ---- Bets: limits (§5.1, §5.2), jackpot without Ante (§5.4) --------------------

    fn check_limits(&mut self, config: &TableConfig, by_box: &ByBox) {
        for (&b, bets) in by_box {
            for (&k, &(amount, q)) in bets {
                if let Some(l) = config.limit(k) {
                    if amount > l.max.0 {
                        self.find(FindingKind::OverMaximum, vec![q], Some(b), format!(
                            "{k:?} of {amount} is over the table maximum {}; it settles at the maximum (RULES-NOTES 21)", l.max.0));
                    } else if amount < l.min.0 {
                        self.find(FindingKind::UnderMinimum, vec![q], Some(b), format!(
                            "{k:?} of {amount} is under the table minimum {}; it settles as placed (RULES-NOTES 21)", l.min.0));
                    }
                }
            }
        }
    }

    /// Side bets on a box without an Ante: returned, each a finding.
    fn check_side_bets(&mut self, by_box: &ByBox) -> BTreeSet<(BoxNo, BetKind)> {
        let side_kinds = [
            BetKind::Progressive,
            BetKind::JackpotPlayer,
            BetKind::JackpotDealer,
            BetKind::Bonus,
        ];
        let mut returned_side: BTreeSet<(BoxNo, BetKind)> = BTreeSet::new();
        for (&b, bets) in by_box {
            if bets.contains_key(&BetKind::Ante) {
                continue;
            }
            for k in side_kinds {
                if let Some(&(amount, q)) = bets.get(&k) {
                    returned_side.insert((b, k));
                    self.find(
                        FindingKind::JackpotBetWithoutAnte,
                        vec![q],
                        Some(b),
                        format!(
                            "{k:?} of {amount} without an Ante on the box; the stake is returned"
                        ),
                    );
                }
            }
        }
        returned_side
    }

    // ---- Jackpot faults (§5.17, §5.18), technical interruptions (§5.7) --------------

    fn check_faults(&mut self, void: &mut bool) {
        for (q, seen) in self.jackpot_faults.clone() {
            if seen {
                self.find(FindingKind::JackpotFaultAfterCardsSeen, vec![q], None,
                    "the jackpot system failed after players had seen their cards: play continues and jackpot bets are paid on the amount registered before the fault".into());
            } else {
                *void = true;
                self.find(FindingKind::JackpotFaultBeforeCardsSeen, vec![q], None,
                    "the jackpot system failed before any player saw their cards: the round is void".into());
            }
        }
        for (q, established) in self.interruptions.clone() {
            if established {
                self.find(FindingKind::TechnicalInterruptionOutcomeEstablished, vec![q], None,
                    "technical interruption after an outcome was established: the round continues to its conclusion".into());
            } else {
                *void = true;
                self.find(FindingKind::TechnicalInterruptionVoid, vec![q], None,
                    "technical interruption before any bet had conclusively won or lost: the round is void".into());
            }
        }
    }

    // ---- Examinations (§3.7, §5.19) -------------------------------------------------

    fn check_examinations(&mut self, rs: RuleSet, invalidated: &mut BTreeMap<BoxNo, String>) {
        let mut first_seen: BTreeMap<BoxNo, BoxNo> = BTreeMap::new();
        for (q, player, hand) in self.examinations.clone() {
            let first = *first_seen.entry(player).or_insert(hand);
            if first == hand {
                continue;
            }
            self.find(
                FindingKind::ExtraHandExamined,
                vec![q],
                Some(hand),
                format!(
                    "the player of box {} examined the hand of box {} after examining box {}",
                    player.0, hand.0, first.0
                ),
            );
            match self.examination_ruling(player, hand) {
                Some(true) => {
                    invalidated.insert(hand, format!("{rs} {}", clause_of(rs, FindingKind::ExtraHandExamined)));
                }
                Some(false) => {}
                None => self.find(FindingKind::ExaminationRulingMissing, vec![q], Some(hand),
                    "no pit ruling on whether the extra examination was intentional; the hand is kept".into()),
            }
        }
    }

    /// The pit's ruling on whether `player` examined `hand` intentionally, if any.
    fn examination_ruling(&self, player: BoxNo, hand: BoxNo) -> Option<bool> {
        self.rulings.iter().find_map(|(_, r)| match r {
            Ruling::ExaminationIntent {
                player_box,
                hand_box,
                intentional,
            } if *player_box == player && *hand_box == hand => Some(*intentional),
            _ => None,
        })
    }

    // ---- 5.10 player options ---------------------------------------------------------

    fn apply_player_options(&self, rs: RuleSet, invalidated: &mut BTreeMap<BoxNo, String>) {
        for (_, r) in &self.rulings {
            if let Ruling::PlayerOption {
                box_no,
                option: PlayerOption::ReturnBets,
            } = r
            {
                invalidated.insert(*box_no, format!("{rs} 5.10.3"));
            }
        }
    }

    // ---- Void declared ---------------------------------------------------------------

    fn report_void(&mut self) {
        if self.void_by.is_empty() {
            return;
        }
        let seqs = self.void_by.iter().map(|v| v.0).collect();
        let why: Vec<&str> = self.void_by.iter().map(|v| v.1.as_str()).collect();
        let explanation = format!("{}; every bet is returned", why.join("; "));
        self.find(FindingKind::RoundVoid, seqs, None, explanation);
    }

    // ---- Decisions and the settlement input -----------------------------------------

    /// Each box with bets, its cards and decision; the decisions are consumed here.
    fn box_inputs(
        &mut self,
        rs: RuleSet,
        by_box: &ByBox,
        returned_side: &BTreeSet<(BoxNo, BetKind)>,
        voiding: &Voiding,
    ) -> Vec<BoxInput> {
        let mut cards_of: BTreeMap<BoxNo, Vec<Card>> = BTreeMap::new();
        for d in &self.deal {
            if let CardTarget::Box(b) = d.to {
                cards_of.entry(b).or_default().push(d.card);
            }
        }
        let decisions = std::mem::take(&mut self.decisions);
        let mut boxes = Vec::new();
        for (&b, bets) in by_box {
            let bet_map: BTreeMap<BetKind, i64> = bets
                .iter()
                .filter(|(k, _)| !returned_side.contains(&(b, **k)))
                .map(|(k, (a, _))| (*k, *a))
                .collect();
            if bet_map.is_empty() {
                continue;
            }
            let (bet_map, decision) = self.box_decision(rs, b, bet_map, decisions.get(&b), voiding);
            boxes.push(BoxInput {
                box_no: b,
                cards: cards_of.remove(&b).unwrap_or_default(),
                decision,
                bets: bet_map,
                invalidated: voiding.invalidated.get(&b).cloned(),
            });
        }
        boxes
    }

    /// The box's decision and its BET / Play stake (§3.12.2); a missing decision on a box
    /// with an Ante settles as walked away (§5.5).
    fn box_decision(
        &mut self,
        rs: RuleSet,
        b: BoxNo,
        mut bet_map: BTreeMap<BetKind, i64>,
        decided: Option<&(Choice, Option<Money>, Seq)>,
        voiding: &Voiding,
    ) -> (BTreeMap<BetKind, i64>, Option<Choice>) {
        let pk = play_kind(rs);
        let ante = bet_map.get(&BetKind::Ante).copied();
        let mut decision = decided.map(|d| d.0);
        if let (Some(ante), Some((Choice::Play, stake, q))) = (ante, decided) {
            let required = ante.saturating_mul(play_multiple(rs));
            let placed = stake.map_or(required, |m| m.0);
            if placed != required {
                self.find(FindingKind::BetNotRequiredMultiple, vec![*q], Some(b), format!(
                    "{pk:?} of {placed} where the rules require {required} ({} x the Ante of {ante})", play_multiple(rs)));
            }
            bet_map.insert(pk, placed);
        }
        if ante.is_some()
            && decision.is_none()
            && !voiding.void
            && !voiding.invalidated.contains_key(&b)
        {
            self.find(FindingKind::DecisionMissing, vec![self.last_seq], Some(b),
                "no decision recorded for a box with an Ante: settled as a Fold (walked away, §5.5)".into());
            decision = Some(Choice::WalkAway);
        }
        (bet_map, decision)
    }

    /// The rules engine's input: the dealer's cards, the jackpot draw and `boxes`.
    fn settlement_input(
        &self,
        config: &TableConfig,
        boxes: Vec<BoxInput>,
        void: bool,
    ) -> RoundInput {
        let rs = config.rule_set;
        let mut dealer = Vec::new();
        let mut dealer_up = None;
        for d in self.deal.iter().filter(|d| d.to == CardTarget::Dealer) {
            dealer.push(d.card);
            if d.face_up && dealer_up.is_none() {
                dealer_up = Some(d.card);
            }
        }
        RoundInput {
            game: rs,
            config: Some(TableConfig::clone(config)),
            dealer,
            dealer_up: if rs == RuleSet::Cs51 { dealer_up } else { None },
            pool: self.pool_shown.unwrap_or_default(),
            reset: config.jackpot.as_ref().map_or(Money::ZERO, |j| j.reset),
            credit_value: None,
            magic_card: self.magic_card,
            lucky_box: self.lucky_box,
            lucky_dealer: self.lucky_dealer,
            void,
            boxes,
        }
    }

    // ---- Settlement and verdict ------------------------------------------------------

    /// Settles `input` by the rules engine, compares with what was paid and gives the
    /// report its verdict.
    fn judge(mut self, config: Arc<TableConfig>, input: RoundInput) -> RoundReport {
        let void = input.void;
        let settlement = match rules::settle(&input) {
            Ok(s) => Some(s),
            Err(e) => {
                if !void {
                    self.find(
                        FindingKind::SettlementImpossible,
                        vec![self.last_seq],
                        None,
                        format!("the rules engine cannot settle the round as recorded: {e}"),
                    );
                }
                None
            }
        };
        let disputes = self.disputes(settlement.as_ref(), void, &input);
        let reconstruction = self.reconstruction(&config, &input);
        self.report_disputes(&disputes, settlement.as_ref());
        self.findings.sort_by(|a, b| {
            (a.seqs.first(), &a.code, a.box_no).cmp(&(b.seqs.first(), &b.code, b.box_no))
        });
        let verdict = if void {
            Verdict::Void
        } else if !disputes.is_empty() {
            Verdict::Disputed
        } else if !self.findings.is_empty() {
            Verdict::Irregular
        } else {
            Verdict::Clean
        };
        let report = RoundReport {
            table: self.table,
            round: self.round,
            rule_set: Some(config.rule_set),
            first_seq: self.first_seq,
            last_seq: self.last_seq,
            opened_at_ns: self.opened_at_ns,
            closed_at_ns: self.closed_at_ns,
            verdict,
            settlement,
            disputes,
            findings: self.findings,
            reconstruction,
        };
        assert_report(&report);
        report
    }

    /// One finding per payout that differs from the rules' net.
    fn report_disputes(&mut self, disputes: &[Dispute], settlement: Option<&Settlement>) {
        for d in disputes {
            let row_clause = settlement.and_then(|s| row_clause(s, d.box_no, d.line));
            let seqs = self
                .paid
                .get(&(d.box_no, d.line))
                .map(|p| p.1.clone())
                .unwrap_or_else(|| vec![self.last_seq]);
            let how = if d.difference.0 > 0 {
                "overpaid"
            } else {
                "underpaid"
            };
            self.find(
                FindingKind::PayoutDiffers,
                seqs,
                Some(d.box_no),
                format!(
                    "{} line: the rules give {}, the dealer recorded {}: {how} by {}",
                    d.line.name(),
                    d.expected,
                    d.recorded,
                    Money(d.difference.0.saturating_abs())
                ),
            );
            // The finding cites what its settlement rows cite (CSP6 §4.2 for a progressive
            // line, not the code's §4.1); the stable code stays as stored.
            if let (Some(clause), Some(f)) = (row_clause, self.findings.last_mut()) {
                f.clause = clause;
            }
        }
    }

    fn report_without_config(self) -> RoundReport {
        RoundReport {
            table: self.table,
            round: self.round,
            rule_set: None,
            first_seq: self.first_seq,
            last_seq: self.last_seq,
            opened_at_ns: self.opened_at_ns,
            closed_at_ns: self.closed_at_ns,
            verdict: Verdict::Irregular,
            settlement: None,
            disputes: Vec::new(),
            findings: vec![Finding {
                code: crate::CONFIG_MISSING.to_string(),
                clause: crate::CONFIG_MISSING_CLAUSE.into(),
                severity: schemas::report::Severity::Critical,
                seqs: vec![self.first_seq],
                box_no: None,
                explanation: "no table configuration (table opened event) precedes the round: the rules in force are unknown".into(),
            }],
            reconstruction: None,
        }
    }

    /// Recomputed net vs recorded net per (box, line); lines 0 on both sides are skipped.
    /// A void round's expected nets are all 0 (every bet returned, §5.22) even when the
    /// rules engine cannot settle it.
    fn disputes(
        &self,
        settlement: Option<&Settlement>,
        void: bool,
        input: &RoundInput,
    ) -> Vec<Dispute> {
        let mut expected: BTreeMap<(BoxNo, PayLine), Money> = BTreeMap::new();
        match settlement {
            Some(s) => {
                for (b, lines) in s.net() {
                    for (l, m) in lines {
                        expected.insert((b, l), m);
                    }
                }
            }
            None if void => {
                for b in &input.boxes {
                    for k in b.bets.keys() {
                        expected.insert((b.box_no, k.line()), Money::ZERO);
                    }
                }
            }
            None => return Vec::new(),
        }
        let keys: BTreeSet<(BoxNo, PayLine)> =
            expected.keys().chain(self.paid.keys()).copied().collect();
        keys.into_iter()
            .filter_map(|k| {
                let e = expected.get(&k).copied().unwrap_or_default();
                let r = self.paid.get(&k).map_or(Money::ZERO, |p| p.0);
                (e != r).then_some(Dispute {
                    box_no: k.0,
                    line: k.1,
                    expected: e,
                    recorded: r,
                    difference: r - e,
                })
            })
            .collect()
    }

    // ---- The deal -------------------------------------------------------------------

    /// Checks the deal as a whole: shuffle, card set, burnt card, order, counts, exposures.
    fn check_deal(&mut self, config: &TableConfig, by_box: &ByBox, voiding: &mut Voiding) {
        if self.deal.is_empty() {
            return;
        }
        // Taken out for the checks (which record findings on `self`), put back at the end.
        let deal = std::mem::take(&mut self.deal);
        self.check_shuffle(&deal, &mut voiding.void);
        self.check_card_set(&deal, &mut voiding.void);
        let shape = DealShape::of(&deal);
        let order_kind = self.check_burn(config, &deal);
        self.check_deal_order(config, &shape, order_kind);
        for (b, n) in &shape.box_counts {
            if !by_box.contains_key(b) {
                self.find(
                    order_kind,
                    vec![shape.first_to(CardTarget::Box(*b))],
                    Some(*b),
                    format!("{n} cards dealt to box {}, which has no bet", b.0),
                );
            }
        }
        self.check_card_counts(config.rule_set, &shape, by_box, voiding);
        self.check_dealer_up_card(config, &deal);
        self.check_exposures(config.rule_set, &deal, &mut voiding.void);
        self.deal = deal;
    }

    /// Shuffle before the round (§5.8.5) and its commitment, when one was made.
    fn check_shuffle(&mut self, deal: &[Dealt], void: &mut bool) {
        match self.shuffle {
            None => {
                *void = true;
                self.find(
                    FindingKind::NoShuffle,
                    vec![deal[0].seq],
                    None,
                    "no shuffle is recorded before this round's deal: the round is void".into(),
                );
            }
            Some((sq, commitment)) => {
                if let Some(reveal) = self.reveal.take() {
                    self.check_reveal(deal, (sq, commitment), &reveal, void);
                    self.reveal = Some(reveal);
                } else if commitment.is_some() {
                    self.find(FindingKind::ShuffleCommitmentNotRevealed, vec![sq], None,
                        "the shuffle committed to a deck order that was never revealed: the deal cannot be checked against it".into());
                }
            }
        }
    }

    /// Same card twice (§5.8.1), more cards than the deck (§5.8.4).
    fn check_card_set(&mut self, deal: &[Dealt], void: &mut bool) {
        // Indexed by card code: one slot per card of the deck.
        let mut seen: [Option<Seq>; 52] = [None; 52];
        for d in deal {
            if let Some(prev) = seen[usize::from(d.card.code())] {
                *void = true;
                let bx = match d.to {
                    CardTarget::Box(b) => Some(b),
                    _ => None,
                };
                self.find(
                    FindingKind::DuplicateCard,
                    vec![prev, d.seq],
                    bx,
                    format!(
                        "{} was dealt twice: a card not of the set; the round is void",
                        d.card
                    ),
                );
            } else {
                seen[usize::from(d.card.code())] = Some(d.seq);
            }
        }
        if deal.len() > 52 {
            *void = true;
            self.find(
                FindingKind::DeckExhausted,
                vec![deal[52].seq],
                None,
                format!(
                    "{} cards dealt from a deck of 52: the round is void",
                    deal.len()
                ),
            );
        }
    }

    /// Burnt card (§5.9): missing, or not first. Returns the finding kind for deal order
    /// faults of this dealing mode.
    fn check_burn(&mut self, config: &TableConfig, deal: &[Dealt]) -> FindingKind {
        let first_card = deal[0].seq;
        let needs_burn = burns(config.rule_set, config.dealing);
        let burn_at = deal.iter().position(|d| d.to == CardTarget::Burn);
        if needs_burn && burn_at.is_none() {
            self.find(FindingKind::BurnCardMissing, vec![first_card], None,
                "the dealer did not discard the burnt card before the deal: the round must be reconstructed, or void if players saw their cards (§5.9)".into());
            let ruled = self.rulings.iter().any(|(_, r)| {
                matches!(r, Ruling::Reconstruction { .. } | Ruling::VoidRound { .. })
            });
            if !ruled {
                self.find(FindingKind::ReconstructionRulingMissing, vec![first_card], None,
                    "no House ruling on reconstruction or void after the missing burnt card; settled as dealt".into());
            }
        }
        let order_kind = if config.dealing == DealingMode::ManualShoe {
            FindingKind::DealOrderShoe
        } else {
            FindingKind::DealOrderShuffler
        };
        if let Some(i) = burn_at {
            if i != 0 && needs_burn {
                self.find(
                    order_kind,
                    vec![deal[i].seq],
                    None,
                    "the burnt card was not the first card of the deal".into(),
                );
            }
        }
        order_kind
    }

    /// Deal order (§3.10 / §3.11): round robin from a shoe, complete sets from a shuffler,
    /// either from an RNG.
    fn check_deal_order(
        &mut self,
        config: &TableConfig,
        shape: &DealShape,
        order_kind: FindingKind,
    ) {
        let round_robin = shape.round_robin();
        let sets = shape.sets();
        let actual: Vec<CardTarget> = shape.targets.iter().map(|t| t.0).collect();
        let ok = match config.dealing {
            DealingMode::ManualShoe => actual == round_robin,
            DealingMode::Shuffler => actual == sets,
            DealingMode::Rng => actual == sets || actual == round_robin,
        };
        if ok {
            return;
        }
        let expect = if config.dealing == DealingMode::ManualShoe {
            &round_robin
        } else {
            &sets
        };
        let i = actual
            .iter()
            .zip(expect)
            .position(|(a, e)| a != e)
            .unwrap_or(0);
        self.find(
            order_kind,
            vec![shape.targets[i].1],
            None,
            format!(
                "card {} of the deal (after any burnt card) went to {}; §{} requires {}",
                i + 1,
                target_name(actual[i]),
                clause_of(config.rule_set, order_kind),
                expect
                    .get(i)
                    .map_or_else(|| "no card".to_string(), |t| target_name(*t))
            ),
        );
    }

    /// Card counts (§5.8.7 dealer: void; §5.15 player: hand invalidated).
    fn check_card_counts(
        &mut self,
        rs: RuleSet,
        shape: &DealShape,
        by_box: &ByBox,
        voiding: &mut Voiding,
    ) {
        let hand_len = rs.hand_len();
        let dealer_n = shape.dealer_n;
        if dealer_n != hand_len {
            let reconstructed = self
                .rulings
                .iter()
                .any(|(_, r)| matches!(r, Ruling::Reconstruction { allowed: true, .. }));
            if !reconstructed {
                voiding.void = true;
            }
            let q = shape.targets.last().map_or(shape.first_card, |t| t.1);
            self.find(FindingKind::DealerCardCount, vec![q], None, format!(
                "the dealer received {dealer_n} cards instead of {hand_len}: the round is void unless reconstructed"));
        }
        for (&b, _) in by_box.iter() {
            let n = shape
                .count
                .get(&Tk::of(CardTarget::Box(b)))
                .copied()
                .unwrap_or(0);
            if n != hand_len {
                voiding.invalidated.insert(
                    b,
                    format!("{rs} {}", clause_of(rs, FindingKind::PlayerCardCount)),
                );
                let q = shape
                    .targets
                    .iter()
                    .rev()
                    .find(|t| t.0 == CardTarget::Box(b))
                    .map_or(shape.first_card, |t| t.1);
                self.find(FindingKind::PlayerCardCount, vec![q], Some(b), format!(
                    "box {} received {n} cards instead of {hand_len}: its hand is invalidated and its bets returned", b.0));
            }
        }
    }

    /// Exposed cards (§5.8.2, §5.12, §5.16; SSP4 §5.4): two or more void the round.
    fn check_exposures(&mut self, rs: RuleSet, deal: &[Dealt], void: &mut bool) {
        let exposed = self.exposed_cards(rs, deal);
        let counts_for_void: Vec<&(Seq, CardTarget, Card, bool)> = exposed
            .iter()
            .filter(|e| {
                if rs == RuleSet::Ssp4 {
                    true
                } else {
                    !e.3 && e.1 != CardTarget::Dealer
                }
            })
            .collect();
        if counts_for_void.len() >= 2 {
            *void = true;
            let seqs = counts_for_void.iter().map(|e| e.0).collect();
            let cards: Vec<String> = counts_for_void.iter().map(|e| e.2.to_string()).collect();
            let why = if rs == RuleSet::Ssp4 {
                "two or more cards exposed during the deal"
            } else {
                "two or more cards exposed during the deal before any player saw their cards"
            };
            self.find(
                FindingKind::TwoCardsExposedVoid,
                seqs,
                None,
                format!("{why} ({}): the round is void", cards.join(", ")),
            );
            return;
        }
        for (q, at, card, seen) in exposed {
            match at {
                CardTarget::Dealer => self.find(
                    FindingKind::DealerCardExposed,
                    vec![q],
                    None,
                    format!(
                    "the dealer's {card} was exposed while dealt: it is used as the face-up card"),
                ),
                _ => {
                    let bx = match at {
                        CardTarget::Box(b) => Some(b),
                        _ => None,
                    };
                    let when = if seen {
                        "after players had seen their cards: the round continues"
                    } else {
                        "before players saw their cards: a dealing error (§5.10 options)"
                    };
                    self.find(
                        FindingKind::CardExposed,
                        vec![q],
                        bx,
                        format!("{card} exposed during the deal {when}"),
                    );
                }
            }
        }
    }

    /// The recorded exposures (consumed here) plus cards dealt face up that should not
    /// have been, in sequence order.
    fn exposed_cards(&mut self, rs: RuleSet, deal: &[Dealt]) -> Vec<(Seq, CardTarget, Card, bool)> {
        let dealer_face_up_allowed = usize::from(rs != RuleSet::Tcp3);
        let mut exposed: Vec<(Seq, CardTarget, Card, bool)> = std::mem::take(&mut self.exposures);
        for d in deal {
            let wrongly_up = match d.to {
                CardTarget::Box(_) => d.face_up && rs != RuleSet::Cs51,
                CardTarget::Burn => d.face_up,
                CardTarget::Dealer => false,
            };
            if wrongly_up && !exposed.iter().any(|e| e.2 == d.card) {
                exposed.push((d.seq, d.to, d.card, false));
            }
        }
        let dealer_up: Vec<&Dealt> = deal
            .iter()
            .filter(|d| d.to == CardTarget::Dealer && d.face_up)
            .collect();
        for d in dealer_up.iter().skip(dealer_face_up_allowed) {
            if !exposed.iter().any(|e| e.2 == d.card) {
                exposed.push((d.seq, d.to, d.card, false));
            }
        }
        exposed.sort_by_key(|e| e.0);
        exposed
    }

    /// CSP6 §3.10 (MLP3 the same) and SSP4 §3.7: the last card dealt to the dealer is the
    /// face-up one. A shuffler's set may have any card up (CSP6 §3.11.2). A dealer card
    /// exposed while dealt becomes the face-up card instead (§5.16): not checked then.
    fn check_dealer_up_card(&mut self, config: &TableConfig, deal: &[Dealt]) {
        let rs = config.rule_set;
        let applies = match rs {
            RuleSet::Csp6 | RuleSet::Mlp3 => config.dealing == DealingMode::ManualShoe,
            RuleSet::Ssp4 => true,
            RuleSet::Cs51 | RuleSet::Tcp3 => false,
        };
        if !applies || self.exposures.iter().any(|e| e.1 == CardTarget::Dealer) {
            return;
        }
        let dealer: Vec<&Dealt> = deal.iter().filter(|d| d.to == CardTarget::Dealer).collect();
        let Some(last) = dealer.last() else {
            return;
        };
        let clause = clause_of(rs, FindingKind::DealerUpCardNotLast);
        let (at, why) = match dealer.iter().position(|d| d.face_up) {
            Some(i) if dealer[i].seq != last.seq => (
                dealer[i].seq,
                format!(
                    "the dealer's card {} (card {} of {}) was dealt face up; §{clause} turns up the last",
                    dealer[i].card,
                    i + 1,
                    dealer.len()
                ),
            ),
            Some(_) => return,
            None => (
                last.seq,
                format!("none of the dealer's cards was dealt face up; §{clause} turns up the last"),
            ),
        };
        self.find(FindingKind::DealerUpCardNotLast, vec![at], None, why);
    }

    /// Checks the revealed deck against the shuffle's commitment, then the deal against
    /// the deck: a short or foreign deck voids, a different deal is a finding.
    fn check_reveal(
        &mut self,
        deal: &[Dealt],
        (shuffle_seq, commitment): (Seq, Option<Hash32>),
        (reveal_seq, order, salt): &(Seq, Vec<Card>, Hash32),
        void: &mut bool,
    ) {
        let reveal_seq = *reveal_seq;
        if let Some(c) = commitment {
            if deck_commitment(salt, order) != c {
                self.find(FindingKind::ShuffleCommitmentMismatch, vec![shuffle_seq, reveal_seq], None,
                    "the revealed deck order and salt do not match the shuffle's commitment: the deal cannot be trusted".into());
                return;
            }
        }
        let distinct: BTreeSet<Card> = order.iter().copied().collect();
        if order.len() != 52 || distinct.len() != 52 {
            *void = true;
            self.find(FindingKind::DeckShortageOrExcess, vec![reveal_seq], None, format!(
                "the revealed deck holds {} cards, {} distinct, not the 52 of one deck: the round is void", order.len(), distinct.len()));
        }
        for d in deal {
            if !distinct.contains(&d.card) {
                *void = true;
                self.find(
                    FindingKind::ForeignCard,
                    vec![d.seq],
                    None,
                    format!("{} is not in the revealed deck: the round is void", d.card),
                );
            }
        }
        let matches =
            deal.iter().zip(order).all(|(d, c)| d.card == *c) && deal.len() <= order.len();
        if !matches {
            self.check_deck_order(deal, order, reveal_seq);
        }
    }

    /// A deal that differs from the deck order: complete hands swapped (§5.8.6), or not.
    fn check_deck_order(&mut self, deal: &[Dealt], order: &[Card], reveal_seq: Seq) {
        // Intended hands: the same targets, taking the cards in deck order.
        let mut intended: BTreeMap<Tk, BTreeSet<Card>> = BTreeMap::new();
        let mut actual: BTreeMap<Tk, BTreeSet<Card>> = BTreeMap::new();
        // A duplicated card (its own finding) is left out of the dealt hands, so that hands
        // moved as a whole are still recognised around it.
        let mut dealt_before: BTreeSet<Card> = BTreeSet::new();
        for (d, c) in deal.iter().zip(order) {
            intended.entry(Tk::of(d.to)).or_default().insert(*c);
            let hand = actual.entry(Tk::of(d.to)).or_default();
            if dealt_before.insert(d.card) {
                hand.insert(d.card);
            }
        }
        let wrong: Vec<Tk> = actual
            .iter()
            .filter(|(t, hand)| !intended.get(t).is_some_and(|i| hand.is_subset(i)))
            .map(|(t, _)| *t)
            .collect();
        let permutation = !wrong.is_empty()
            && wrong.iter().all(|t| {
                let hand = &actual[t];
                wrong
                    .iter()
                    .any(|u| u != t && intended.get(u).is_some_and(|i| hand.is_subset(i)))
            });
        let first = deal
            .iter()
            .zip(order)
            .find(|(d, c)| d.card != **c)
            .map_or(reveal_seq, |(d, _)| d.seq);
        if permutation {
            let names: Vec<String> = wrong
                .iter()
                .map(|t| match t.0 {
                    1 => format!("box {}", t.1),
                    2 => "dealer".into(),
                    _ => "burn".into(),
                })
                .collect();
            self.find(FindingKind::HandsSwapped, vec![first, reveal_seq], None, format!(
                "complete hands went to the wrong places ({}) compared with the committed deck order; the deal can be reconstructed by moving complete hands (§5.8.6)", names.join(", ")));
        } else {
            self.find(
                FindingKind::DealDiffersFromDeckOrder,
                vec![first, reveal_seq],
                None,
                "the cards dealt are not the committed deck order".into(),
            );
        }
    }
}

/// `CardTarget` ordered for maps: burn, boxes in deal order, dealer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Tk(u8, u8);

impl Tk {
    fn of(t: CardTarget) -> Tk {
        match t {
            CardTarget::Burn => Tk(0, 0),
            CardTarget::Box(b) => Tk(1, b.0),
            CardTarget::Dealer => Tk(2, 0),
        }
    }
}

/// The deal without the burnt card: where each card went, and how many to each place.
struct DealShape {
    /// Place and seq of each card, in the order dealt.
    targets: Vec<(CardTarget, Seq)>,
    count: BTreeMap<Tk, usize>,
    dealer_n: usize,
    /// Cards per box, boxes in deal order.
    box_counts: Vec<(BoxNo, usize)>,
    /// The seq of the first card of the deal, burnt card included.
    first_card: Seq,
}

impl DealShape {
    fn of(deal: &[Dealt]) -> DealShape {
        let targets: Vec<(CardTarget, Seq)> = deal
            .iter()
            .filter(|d| d.to != CardTarget::Burn)
            .map(|d| (d.to, d.seq))
            .collect();
        let mut count: BTreeMap<Tk, usize> = BTreeMap::new();
        for (t, _) in &targets {
            *count.entry(Tk::of(*t)).or_default() += 1;
        }
        let dealer_n = count.get(&Tk::of(CardTarget::Dealer)).copied().unwrap_or(0);
        let box_counts: Vec<(BoxNo, usize)> = count
            .iter()
            .filter_map(|(t, n)| (t.0 == 1).then_some((BoxNo(t.1), *n)))
            .collect();
        DealShape {
            targets,
            count,
            dealer_n,
            box_counts,
            first_card: deal[0].seq,
        }
    }

    /// One card per place per pass, boxes in order, then the dealer.
    fn round_robin(&self) -> Vec<CardTarget> {
        let max_n = self.count.values().copied().max().unwrap_or(0);
        (0..max_n)
            .flat_map(|pass| {
                self.box_counts
                    .iter()
                    .filter(move |(_, n)| *n > pass)
                    .map(|(b, _)| CardTarget::Box(*b))
                    .chain((self.dealer_n > pass).then_some(CardTarget::Dealer))
            })
            .collect()
    }

    /// Each place's complete set in turn, boxes in order, then the dealer.
    fn sets(&self) -> Vec<CardTarget> {
        self.box_counts
            .iter()
            .flat_map(|(b, n)| std::iter::repeat_n(CardTarget::Box(*b), *n))
            .chain(std::iter::repeat_n(CardTarget::Dealer, self.dealer_n))
            .collect()
    }

    /// The seq of the first card dealt to `to`, or of the deal's first card.
    fn first_to(&self, to: CardTarget) -> Seq {
        self.targets
            .iter()
            .find(|t| t.0 == to)
            .map_or(self.first_card, |t| t.1)
    }
}

fn target_name(t: CardTarget) -> String {
    match t {
        CardTarget::Box(b) => format!("box {}", b.0),
        CardTarget::Dealer => "the dealer".into(),
        CardTarget::Burn => "the burnt card".into(),
    }
}

fn clause_of(rs: RuleSet, kind: FindingKind) -> &'static str {
    lookup(rs, kind).map_or("", |r| r.clause)
}

/// A report's postconditions: its seqs in order, each dispute a real difference of paid
/// against due, one per box and line, with a payout finding, and a verdict its contents
/// imply. Cheap (one pass over disputes and findings), so on in release.
fn assert_report(r: &RoundReport) {
    assert!(
        r.first_seq <= r.last_seq,
        "round {}: seqs out of order",
        r.round.0
    );
    let mut lines = BTreeSet::new();
    for d in &r.disputes {
        assert_ne!(
            d.expected, d.recorded,
            "a dispute without a difference: {d:?}"
        );
        if let Some(diff) = d.recorded.0.checked_sub(d.expected.0) {
            assert_eq!(d.difference.0, diff, "difference is paid minus due: {d:?}");
        }
        assert!(
            lines.insert((d.box_no, d.line)),
            "two disputes of one line: {d:?}"
        );
    }
    let payout_code = r
        .rule_set
        .and_then(|rs| lookup(rs, FindingKind::PayoutDiffers))
        .map(|row| row.code);
    if let Some(code) = payout_code {
        let payout_findings = r.findings.iter().filter(|f| f.code == code).count();
        assert_eq!(payout_findings, r.disputes.len(), "one finding per dispute");
    }
    match r.verdict {
        Verdict::Disputed => assert!(!r.disputes.is_empty()),
        Verdict::Clean => assert!(r.disputes.is_empty() && r.findings.is_empty()),
        Verdict::Irregular => assert!(r.disputes.is_empty() && !r.findings.is_empty()),
        Verdict::Void => {}
    }
}

/// What a report needs when judging its round failed.
struct ReportShell {
    table: TableId,
    round: RoundId,
    rule_set: Option<RuleSet>,
    first_seq: Seq,
    last_seq: Seq,
    opened_at_ns: i64,
    closed_at_ns: Option<i64>,
}

impl ReportShell {
    /// The report of a round whose judging failed an assertion: no settlement, one
    /// critical finding naming the failure. The round stays visible and is counted.
    fn internal_error(self, why: String) -> RoundReport {
        RoundReport {
            table: self.table,
            round: self.round,
            rule_set: self.rule_set,
            first_seq: self.first_seq,
            last_seq: self.last_seq,
            opened_at_ns: self.opened_at_ns,
            closed_at_ns: self.closed_at_ns,
            verdict: Verdict::Irregular,
            settlement: None,
            disputes: Vec::new(),
            findings: vec![Finding {
                code: crate::INTERNAL_ERROR.to_string(),
                clause: crate::INTERNAL_ERROR_CLAUSE.into(),
                severity: schemas::report::Severity::Critical,
                seqs: vec![self.first_seq, self.last_seq],
                box_no: None,
                explanation: format!(
                    "the replayer could not judge this round: its own check failed ({why}); \
                     the round is not settled here, report it with its events"
                ),
            }],
            reconstruction: None,
        }
    }
}

/// The message of a panic payload (`panic!` gives a `&str` or a `String`).
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// The clauses of a box's settlement rows of `line`, as a finding shows them ("CSP6 §4.2";
/// several joined by "; "), or None when the settlement has no such row.
fn row_clause(s: &Settlement, box_no: BoxNo, line: PayLine) -> Option<String> {
    let rows = s.boxes.iter().find(|b| b.box_no == box_no)?.lines.iter();
    let mut clauses: Vec<String> = Vec::new();
    for l in rows.filter(|l| l.line == line) {
        let c = finding_form(&l.clause);
        if !clauses.contains(&c) {
            clauses.push(c);
        }
    }
    (!clauses.is_empty()).then(|| clauses.join("; "))
}

/// "CSP6 4.2, 4.5.1" as "CSP6 §4.2, 4.5.1": a § before a clause number that follows the
/// rule set's code; anything else ("CS51 5+1 Bonus; RULES-NOTES 13-14") as it is.
fn finding_form(clause: &str) -> String {
    let Some((code, rest)) = clause.split_once(' ') else {
        return clause.to_string();
    };
    let number = rest.split([',', ';', ' ']).next().unwrap_or("");
    let numeric = !number.is_empty() && number.chars().all(|ch| ch.is_ascii_digit() || ch == '.');
    match numeric {
        true => format!("{code} §{rest}"),
        false => clause.to_string(),
    }
}

/// Test hook: makes judging one round panic, as a failed assertion would.
#[cfg(test)]
pub(crate) mod inject {
    use schemas::RoundId;
    use std::cell::Cell;

    thread_local! {
        static FAIL: Cell<Option<RoundId>> = const { Cell::new(None) };
    }

    /// Judging `round` on this thread panics from now on (None: none does).
    pub(crate) fn fail_round(round: Option<RoundId>) {
        FAIL.with(|f| f.set(round));
    }

    pub(super) fn fail_if_asked(round: RoundId) {
        if FAIL.with(|f| f.get()) == Some(round) {
            panic!("injected failure in round {}", round.0);
        }
    }
}
