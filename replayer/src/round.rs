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
    BetsOpen,
    /// "No more Bets" announced; no card dealt yet.
    BetsClosed,
    Dealing,
    Decisions,
    DealerRevealed,
    Settlement,
    Closed,
}

/// The state of a round after one event, for `replay --step`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepView {
    pub seq: Seq,
    /// The event's type tag ("card_dealt").
    pub event: &'static str,
    pub phase: Phase,
    /// Bets on the layout per box and kind (after "No more Bets": as they stood then).
    pub bets: BTreeMap<BoxNo, BTreeMap<BetKind, Stake>>,
    /// Cards per box, in the order dealt.
    pub cards: BTreeMap<BoxNo, Vec<Card>>,
    pub dealer: Vec<Card>,
    pub burn: Vec<Card>,
    pub decisions: BTreeMap<BoxNo, Choice>,
    /// BET / Play stakes placed with the decisions.
    pub plays: BTreeMap<BoxNo, Money>,
    /// Recorded payouts so far per box and line.
    pub paid: BTreeMap<BoxNo, BTreeMap<PayLine, Money>>,
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
            // Table, finance and key-register events do not change a round; the events
            // `apply` handles itself never reach here.
            _ => {}
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

    /// Runs the whole-round checks, settles and judges. `closed_normally` is false when
    /// the round was cut off (next round began, end of input) without `RoundClosed`.
    pub(crate) fn finish(mut self) -> RoundReport {
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
        let mut void = !self.void_by.is_empty();
        let mut invalidated: BTreeMap<BoxNo, String> = BTreeMap::new();
        // Bets as they stood at "No more Bets" (§5.21); the state is consumed here.
        let bets_src = if self.nmb.is_some() {
            std::mem::take(&mut self.bets_at_nmb)
        } else {
            std::mem::take(&mut self.bets)
        };
        let mut by_box: BTreeMap<BoxNo, BTreeMap<BetKind, (i64, Seq)>> = BTreeMap::new();
        for (&(b, k), &(s, q)) in &bets_src {
            if stake_value(s) != 0 {
                by_box.entry(b).or_default().insert(k, (stake_value(s), q));
            }
        }

        // ---- Bets: limits (§5.1, §5.2), jackpot without Ante (§5.4) --------------------
        for (&b, bets) in &by_box {
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
        let side_kinds = [
            BetKind::Progressive,
            BetKind::JackpotPlayer,
            BetKind::JackpotDealer,
            BetKind::Bonus,
        ];
        let mut returned_side: BTreeSet<(BoxNo, BetKind)> = BTreeSet::new();
        for (&b, bets) in &by_box {
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

        // ---- The deal -------------------------------------------------------------------
        self.check_deal(&config, &by_box, &mut void, &mut invalidated);

        // ---- Jackpot faults (§5.17, §5.18), technical interruptions (§5.7) --------------
        for (q, seen) in self.jackpot_faults.clone() {
            if seen {
                self.find(FindingKind::JackpotFaultAfterCardsSeen, vec![q], None,
                    "the jackpot system failed after players had seen their cards: play continues and jackpot bets are paid on the amount registered before the fault".into());
            } else {
                void = true;
                self.find(FindingKind::JackpotFaultBeforeCardsSeen, vec![q], None,
                    "the jackpot system failed before any player saw their cards: the round is void".into());
            }
        }
        for (q, established) in self.interruptions.clone() {
            if established {
                self.find(FindingKind::TechnicalInterruptionOutcomeEstablished, vec![q], None,
                    "technical interruption after an outcome was established: the round continues to its conclusion".into());
            } else {
                void = true;
                self.find(FindingKind::TechnicalInterruptionVoid, vec![q], None,
                    "technical interruption before any bet had conclusively won or lost: the round is void".into());
            }
        }

        // ---- Examinations (§3.7, §5.19) -------------------------------------------------
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
            let ruling = self.rulings.iter().find_map(|(rq, r)| match r {
                Ruling::ExaminationIntent {
                    player_box,
                    hand_box,
                    intentional,
                } if *player_box == player && *hand_box == hand => Some((*rq, *intentional)),
                _ => None,
            });
            match ruling {
                Some((_, true)) => {
                    invalidated.insert(hand, format!("{rs} {}", clause_of(rs, FindingKind::ExtraHandExamined)));
                }
                Some((_, false)) => {}
                None => self.find(FindingKind::ExaminationRulingMissing, vec![q], Some(hand),
                    "no pit ruling on whether the extra examination was intentional; the hand is kept".into()),
            }
        }

        // ---- 5.10 player options ---------------------------------------------------------
        for (_, r) in &self.rulings {
            if let Ruling::PlayerOption {
                box_no,
                option: PlayerOption::ReturnBets,
            } = r
            {
                invalidated.insert(*box_no, format!("{rs} 5.10.3"));
            }
        }

        // ---- Void declared ---------------------------------------------------------------
        if !self.void_by.is_empty() {
            let seqs = self.void_by.iter().map(|v| v.0).collect();
            let why: Vec<&str> = self.void_by.iter().map(|v| v.1.as_str()).collect();
            self.find(
                FindingKind::RoundVoid,
                seqs,
                None,
                format!("{}; every bet is returned", why.join("; ")),
            );
        }

        // ---- Decisions and the settlement input -----------------------------------------
        let pk = play_kind(rs);
        let mut boxes = Vec::new();
        let mut cards_of: BTreeMap<BoxNo, Vec<Card>> = BTreeMap::new();
        let mut dealer = Vec::new();
        let mut dealer_up = None;
        for d in &self.deal {
            match d.to {
                CardTarget::Box(b) => cards_of.entry(b).or_default().push(d.card),
                CardTarget::Dealer => {
                    dealer.push(d.card);
                    if d.face_up && dealer_up.is_none() {
                        dealer_up = Some(d.card);
                    }
                }
                CardTarget::Burn => {}
            }
        }
        let decisions = std::mem::take(&mut self.decisions);
        for (&b, bets) in &by_box {
            let mut bet_map: BTreeMap<BetKind, i64> = bets
                .iter()
                .filter(|(k, _)| !returned_side.contains(&(b, **k)))
                .map(|(k, (a, _))| (*k, *a))
                .collect();
            if bet_map.is_empty() {
                continue;
            }
            let ante = bet_map.get(&BetKind::Ante).copied();
            let mut decision = decisions.get(&b).map(|d| d.0);
            if let (Some(ante), Some((Choice::Play, stake, q))) = (ante, decisions.get(&b)) {
                let required = ante.saturating_mul(play_multiple(rs));
                let placed = stake.map_or(required, |m| m.0);
                if placed != required {
                    self.find(FindingKind::BetNotRequiredMultiple, vec![*q], Some(b), format!(
                        "{pk:?} of {placed} where the rules require {required} ({} x the Ante of {ante})", play_multiple(rs)));
                }
                bet_map.insert(pk, placed);
            }
            if ante.is_some() && decision.is_none() && !void && !invalidated.contains_key(&b) {
                self.find(FindingKind::DecisionMissing, vec![self.last_seq], Some(b),
                    "no decision recorded for a box with an Ante: settled as a Fold (walked away, §5.5)".into());
                decision = Some(Choice::WalkAway);
            }
            boxes.push(BoxInput {
                box_no: b,
                cards: cards_of.remove(&b).unwrap_or_default(),
                decision,
                bets: bet_map,
                invalidated: invalidated.get(&b).cloned(),
            });
        }
        let input = RoundInput {
            game: rs,
            config: Some(TableConfig::clone(&config)),
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
        };
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
        for d in &disputes {
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
        }
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
        RoundReport {
            table: self.table,
            round: self.round,
            rule_set: Some(rs),
            first_seq: self.first_seq,
            last_seq: self.last_seq,
            opened_at_ns: self.opened_at_ns,
            closed_at_ns: self.closed_at_ns,
            verdict,
            settlement,
            disputes,
            findings: self.findings,
            reconstruction,
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
                clause: "DESIGN invariant 7".into(),
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

    fn check_deal(
        &mut self,
        config: &TableConfig,
        by_box: &BTreeMap<BoxNo, BTreeMap<BetKind, (i64, Seq)>>,
        void: &mut bool,
        invalidated: &mut BTreeMap<BoxNo, String>,
    ) {
        let rs = config.rule_set;
        let hand_len = rs.hand_len();
        if self.deal.is_empty() {
            return;
        }
        // Taken out for the checks (which record findings on `self`), put back at the end.
        let deal = std::mem::take(&mut self.deal);
        let first_card = deal[0].seq;

        // Shuffle before the round (§5.8.5).
        match self.shuffle {
            None => {
                *void = true;
                self.find(
                    FindingKind::NoShuffle,
                    vec![first_card],
                    None,
                    "no shuffle is recorded before this round's deal: the round is void".into(),
                );
            }
            Some((sq, commitment)) => {
                if let Some((rq, order, salt)) = self.reveal.take() {
                    self.check_reveal(&deal, sq, commitment, rq, &order, &salt, void);
                    self.reveal = Some((rq, order, salt));
                } else if commitment.is_some() {
                    self.find(FindingKind::ShuffleCommitmentNotRevealed, vec![sq], None,
                        "the shuffle committed to a deck order that was never revealed: the deal cannot be checked against it".into());
                }
            }
        }

        // Same card twice (§5.8.1), more cards than the deck (§5.8.4).
        // Indexed by card code: one slot per card of the deck.
        let mut seen: [Option<Seq>; 52] = [None; 52];
        for d in &deal {
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

        // Burnt card (§5.9) and deal order (§3.10 / §3.11).
        let needs_burn = burns(rs, config.dealing);
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
        let max_n = count.values().copied().max().unwrap_or(0);
        let round_robin: Vec<CardTarget> = (0..max_n)
            .flat_map(|pass| {
                box_counts
                    .iter()
                    .filter(move |(_, n)| *n > pass)
                    .map(|(b, _)| CardTarget::Box(*b))
                    .chain((dealer_n > pass).then_some(CardTarget::Dealer))
            })
            .collect();
        let sets: Vec<CardTarget> = box_counts
            .iter()
            .flat_map(|(b, n)| std::iter::repeat_n(CardTarget::Box(*b), *n))
            .chain(std::iter::repeat_n(CardTarget::Dealer, dealer_n))
            .collect();
        let actual: Vec<CardTarget> = targets.iter().map(|t| t.0).collect();
        let ok = match config.dealing {
            DealingMode::ManualShoe => actual == round_robin,
            DealingMode::Shuffler => actual == sets,
            DealingMode::Rng => actual == sets || actual == round_robin,
        };
        if !ok {
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
                vec![targets[i].1],
                None,
                format!(
                    "card {} of the deal (after any burnt card) went to {}; §{} requires {}",
                    i + 1,
                    target_name(actual[i]),
                    clause_of(rs, order_kind),
                    expect
                        .get(i)
                        .map_or_else(|| "no card".to_string(), |t| target_name(*t))
                ),
            );
        }
        for (b, n) in &box_counts {
            if !by_box.contains_key(b) {
                self.find(
                    order_kind,
                    vec![targets
                        .iter()
                        .find(|t| t.0 == CardTarget::Box(*b))
                        .map_or(first_card, |t| t.1)],
                    Some(*b),
                    format!("{n} cards dealt to box {}, which has no bet", b.0),
                );
            }
        }

        // Card counts (§5.8.7 dealer: void; §5.15 player: hand invalidated).
        if dealer_n != hand_len {
            let reconstructed = self
                .rulings
                .iter()
                .any(|(_, r)| matches!(r, Ruling::Reconstruction { allowed: true, .. }));
            if !reconstructed {
                *void = true;
            }
            self.find(FindingKind::DealerCardCount, vec![targets.last().map_or(first_card, |t| t.1)], None, format!(
                "the dealer received {dealer_n} cards instead of {hand_len}: the round is void unless reconstructed"));
        }
        for (&b, _) in by_box.iter() {
            let n = count.get(&Tk::of(CardTarget::Box(b))).copied().unwrap_or(0);
            if n != hand_len {
                invalidated.insert(
                    b,
                    format!("{rs} {}", clause_of(rs, FindingKind::PlayerCardCount)),
                );
                let q = targets
                    .iter()
                    .rev()
                    .find(|t| t.0 == CardTarget::Box(b))
                    .map_or(first_card, |t| t.1);
                self.find(FindingKind::PlayerCardCount, vec![q], Some(b), format!(
                    "box {} received {n} cards instead of {hand_len}: its hand is invalidated and its bets returned", b.0));
            }
        }

        self.check_dealer_up_card(config, &deal);

        // Exposed cards (§5.8.2, §5.12, §5.16; SSP4 §5.4).
        let dealer_face_up_allowed = usize::from(rs != RuleSet::Tcp3);
        let mut exposed: Vec<(Seq, CardTarget, Card, bool)> = std::mem::take(&mut self.exposures);
        for d in &deal {
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
        } else {
            for (q, at, card, seen) in exposed {
                match at {
                    CardTarget::Dealer => self.find(FindingKind::DealerCardExposed, vec![q], None, format!(
                        "the dealer's {card} was exposed while dealt: it is used as the face-up card")),
                    _ => {
                        let bx = match at { CardTarget::Box(b) => Some(b), _ => None };
                        let when = if seen { "after players had seen their cards: the round continues" } else { "before players saw their cards: a dealing error (§5.10 options)" };
                        self.find(FindingKind::CardExposed, vec![q], bx, format!("{card} exposed during the deal {when}"));
                    }
                }
            }
        }
        self.deal = deal;
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

    #[allow(clippy::too_many_arguments)]
    fn check_reveal(
        &mut self,
        deal: &[Dealt],
        shuffle_seq: Seq,
        commitment: Option<Hash32>,
        reveal_seq: Seq,
        order: &[Card],
        salt: &Hash32,
        void: &mut bool,
    ) {
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
        if matches {
            return;
        }
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
