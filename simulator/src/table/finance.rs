//! A table's cage side: its chip tray through the rounds, buy-ins and markers, fills and
//! credits, shift changes (the closer's and the opener's counts, the drop box removed),
//! the count room's results, and the finance errors a fault plan injects.
//!
//! The tray moves by what the dealer recorded: a lost stake comes in, a recorded payout
//! goes out (an injected overpayment leaves the tray), jackpot payments come from the
//! jackpot system. So over a shift, with no finance error, the counted closing equals
//! opening + fills − credits + tray win − buy-ins − markers, where the tray win is
//! −Σ `PaidOut.net` + Σ `JackpotHit.amount`.

use super::{Dev, Published, RoundCtx, TableSim};
use crate::expected::{FinanceFaultKind, FinanceLink, FinanceVariance, VarianceKind};
use crate::shift::{ShiftClock, ShiftSpan, CLOSING_LEAD_NS, SHIFT_CHANGE_WINDOW_NS};
use crate::tray::{self, Chips, Tray, TrayError, DENOMINATIONS, DENOMINATION_LEN};
use crate::Error;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use schemas::count::{CountResult, COUNT_TEXT_LEN_MAX};
use schemas::settle::Settlement;
use schemas::{BetKind, BoxNo, Card, CardTarget, EventBody, Finance, Money, PayLine, RoundId};
use schemas::{Rank, Seq, Suit};

/// The count room counts a box this long after its removal (simulated clock).
const COUNT_DELAY_NS: i64 = 2 * 3_600_000_000_000;

/// Mixed into the table's seed for the cage's generator.
const CAGE_SEED_SALT: u64 = 0xCA6E_CA6E_CA6E_CA6E;

/// Chance per round gap that a player buys chips.
const BUY_IN_CHANCE: f64 = 0.08;

/// Most chips of one denomination a closer miscounts.
const MISCOUNT_CHIPS_MAX: u32 = 5;

/// Most cash, in 100.00 notes, a short drop lacks.
const SHORT_DROP_NOTES_MAX: i64 = 5;

/// What a table's cage produced since it was last taken (`TableSim::take_finance`): the
/// count room's results and the injected finance errors as a report must show them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct FinanceRecord {
    /// The count room's results.
    pub counts: Vec<CountResult>,
    /// The injected finance errors as a report must show them.
    pub variances: Vec<FinanceVariance>,
}

impl FinanceRecord {
    /// Appends `other`'s counts and variances to this record.
    pub fn extend(&mut self, other: FinanceRecord) {
        self.counts.extend(other.counts);
        self.variances.extend(other.variances);
    }
}

/// The cage side of a table: its tray, its shift and the drop box of that shift.
pub(super) struct Cage {
    /// The cage's own randomness (buy-ins, event gaps), apart from the game's, so that
    /// what a fault does to the tray does not change the cards and bets of later rounds.
    rng: ChaCha8Rng,
    tray: Tray,
    clock: Option<ShiftClock>,
    shift: ShiftSpan,
    drop_cash: Money,
    drop_markers: Money,
    fills: u32,
    credits: u32,
    markers: u32,
    record: FinanceRecord,
}

impl Cage {
    pub(super) fn new(seed: u64) -> Cage {
        Cage {
            rng: ChaCha8Rng::seed_from_u64(seed ^ CAGE_SEED_SALT),
            tray: Tray::at_par(),
            clock: None,
            shift: ShiftSpan {
                index: 0,
                starts_at_ns: i64::MIN,
                ends_at_ns: i64::MAX,
            },
            drop_cash: Money::ZERO,
            drop_markers: Money::ZERO,
            fills: 0,
            credits: 0,
            markers: 0,
            record: FinanceRecord::default(),
        }
    }
}

impl TableSim {
    /// Changes shift at `clock`'s boundaries: the closer counts the tray, the drop box is
    /// removed, the opener counts (`Finance::ClosingInventory`, `DropBoxRemoved`,
    /// `OpeningInventory`). Without it the table's session is one shift. Call before the
    /// first event.
    pub fn with_shifts(mut self, clock: ShiftClock) -> TableSim {
        assert_eq!(self.seq, 0, "shifts are set before the first event");
        self.cage.clock = Some(clock);
        self
    }

    /// The chip tray as it stands.
    pub fn tray(&self) -> &Tray {
        &self.cage.tray
    }

    /// The shift the table is in.
    pub fn shift(&self) -> ShiftSpan {
        self.cage.shift
    }

    /// Takes the count results and finance errors recorded so far (call after rounds and
    /// after `closing_events`; the record is empty afterwards).
    pub fn take_finance(&mut self) -> FinanceRecord {
        std::mem::take(&mut self.cage.record)
    }

    /// A shift starts: the opener's count of the tray. A table opening within the shift
    /// change window waits for the change, so no shift of a minute has a count of its own.
    pub(super) fn open_shift(&mut self, out: &mut Vec<Published>) {
        if let Some(c) = self.cage.clock {
            let ends_at_ns = c.span_at(self.clock_ns).ends_at_ns;
            if self.clock_ns.saturating_add(SHIFT_CHANGE_WINDOW_NS) >= ends_at_ns {
                self.clock_ns = ends_at_ns;
            }
        }
        let at = self.clock_ns;
        self.shifts_opened += 1;
        self.cage.shift = match self.cage.clock {
            Some(c) => c.span_at(at),
            None => ShiftSpan {
                index: 0,
                starts_at_ns: at,
                ends_at_ns: i64::MAX,
            },
        };
        let entry = Finance::OpeningInventory {
            counts: self.cage.tray.counts(),
            total: self.cage.tray.total(),
            counted_by: format!("opener of shift {}", self.cage.shift.index),
        };
        self.emit_cage(out, entry, (1_000, 5_000));
    }

    /// Between rounds: a shift change when the boundary is near, a player buying chips
    /// now and then, a fill or a credit when the tray runs low or high.
    pub(super) fn between_rounds(
        &mut self,
        out: &mut Vec<Published>,
        next: RoundId,
    ) -> Result<(), Error> {
        let end = self.cage.shift.ends_at_ns;
        if self.cage.clock.is_some() && self.clock_ns.saturating_add(SHIFT_CHANGE_WINDOW_NS) >= end
        {
            self.close_shift(out, Some(end))?;
            self.clock_ns = self.clock_ns.max(end);
            self.open_shift(out);
        }
        if self.cage.rng.gen_bool(BUY_IN_CHANCE) {
            self.buy_in(out, next)?;
        }
        if let Some(chips) = self.cage.tray.fill_needed() {
            self.fill(out, chips, next)?;
        }
        if let Some(chips) = self.cage.tray.credit_needed() {
            self.credit(out, chips);
        }
        Ok(())
    }

    /// A shift ends (at `boundary`, or now when the table closes): the closer's count,
    /// the drop box removed, and the count room's result for it.
    pub(super) fn close_shift(
        &mut self,
        out: &mut Vec<Published>,
        boundary: Option<i64>,
    ) -> Result<(), Error> {
        if let Some(b) = boundary {
            self.clock_ns = self.clock_ns.max(b - CLOSING_LEAD_NS);
        }
        let (chips, miscount) = self.closer_count();
        let shift = self.cage.shift.index;
        let entry = Finance::ClosingInventory {
            counts: tray::to_counts(&chips),
            total: tray::value(&chips),
            counted_by: format!("closer of shift {shift}"),
        };
        let seq = self.emit_cage(out, entry, (1_000, 5_000));
        if let Some(amount) = miscount {
            let link = FinanceLink::Closing { seq };
            self.record(VarianceKind::MiscountedCloser, amount, link);
        }
        let drop_box_id = format!("{}/{shift}", self.table);
        if drop_box_id.len() > COUNT_TEXT_LEN_MAX {
            return Err(Error::Config(format!(
                "drop box id {drop_box_id:?} is longer than {COUNT_TEXT_LEN_MAX} bytes"
            )));
        }
        let entry = Finance::DropBoxRemoved {
            drop_box_id: drop_box_id.clone(),
        };
        self.emit_cage(out, entry, (1_000, 5_000));
        self.count_box(drop_box_id);
        Ok(())
    }

    /// The closer's count: the tray, or with an injected miscount one denomination off by
    /// a few chips (and the value it is off by).
    fn closer_count(&mut self) -> (Chips, Option<Money>) {
        let mut chips = *self.cage.tray.chips();
        if !self.wants_finance(FinanceFaultKind::MiscountedCloser) {
            return (chips, None);
        }
        let i = self.fault_rng.gen_range(0..DENOMINATION_LEN);
        let k = self.fault_rng.gen_range(1..=MISCOUNT_CHIPS_MAX);
        let over = chips[i] < k || self.fault_rng.gen_bool(0.5);
        let value = i64::from(k) * DENOMINATIONS[i];
        if over {
            chips[i] += k;
            (chips, Some(Money(value)))
        } else {
            chips[i] -= k;
            (chips, Some(Money(-value)))
        }
    }

    /// The count room's result for the box just removed; an injected short drop lacks
    /// some cash. The next shift's box starts empty.
    fn count_box(&mut self, drop_box_id: String) {
        let mut cash = self.cage.drop_cash;
        if cash.0 > 0 && self.wants_finance(FinanceFaultKind::ShortDrop) {
            let notes = self.fault_rng.gen_range(1..=SHORT_DROP_NOTES_MAX);
            let short = Money((notes * 10_000).min(cash.0));
            cash = cash - short;
            let link = FinanceLink::DropBox {
                drop_box_id: drop_box_id.clone(),
            };
            self.record(VarianceKind::ShortDrop, -short, link);
        }
        self.cage.record.counts.push(CountResult {
            table: self.table.clone(),
            drop_box_id,
            cash,
            markers: self.cage.drop_markers,
            counted_at_ns: self.clock_ns.saturating_add(COUNT_DELAY_NS),
            counted_by: "count team".into(),
        });
        self.cage.drop_cash = Money::ZERO;
        self.cage.drop_markers = Money::ZERO;
    }

    /// A player buys chips for cash (the cash goes to the drop box) or on a marker (its
    /// copy goes to the drop box); the chips leave the tray.
    fn buy_in(&mut self, out: &mut Vec<Published>, next: RoundId) -> Result<(), Error> {
        let cash = self.cage.rng.gen_bool(0.8);
        let amount = if cash {
            Money(10_000 * self.cage.rng.gen_range(1..=50))
        } else {
            Money(100_000 * self.cage.rng.gen_range(1..=20))
        };
        self.pay_from_tray(out, amount, next)?;
        let entry = if cash {
            self.cage.drop_cash = self.cage.drop_cash + amount;
            Finance::CashBuyIn { amount }
        } else {
            self.cage.markers += 1;
            self.cage.drop_markers = self.cage.drop_markers + amount;
            let marker_no = format!("M-{}-{:05}", self.table, self.cage.markers);
            Finance::Marker { amount, marker_no }
        };
        self.emit_cage(out, entry, (10_000, 60_000));
        Ok(())
    }

    /// Pays `amount` from the tray, calling a fill first when the tray cannot make it.
    fn pay_from_tray(
        &mut self,
        out: &mut Vec<Published>,
        amount: Money,
        round: RoundId,
    ) -> Result<(), Error> {
        match self.cage.tray.change_for(amount) {
            Ok(_) => {}
            Err(TrayError::Short { .. }) => {
                let chips = self
                    .cage
                    .tray
                    .fill_to_pay(amount)
                    .map_err(|e| self.tray_error(e))?;
                self.fill(out, chips, round)?;
            }
            Err(e) => return Err(self.tray_error(e)),
        }
        self.cage
            .tray
            .pay_out(amount)
            .map_err(|e| self.tray_error(e))
    }

    /// Chips from the cage: a `Fill` with its slip, or with an injected missing slip the
    /// chips alone.
    fn fill(
        &mut self,
        out: &mut Vec<Published>,
        chips: Chips,
        round: RoundId,
    ) -> Result<(), Error> {
        self.cage.tray.add(&chips).map_err(|e| self.tray_error(e))?;
        let amount = tray::value(&chips);
        if self.wants_finance(FinanceFaultKind::MissingFillSlip) {
            let link = FinanceLink::Round {
                round,
                seq: self.last_seq(),
            };
            self.record(VarianceKind::MissingFillSlip, amount, link);
            return Ok(());
        }
        self.cage.fills += 1;
        let slip_no = format!("F-{}-{:05}", self.table, self.cage.fills);
        let entry = Finance::Fill { amount, slip_no };
        self.emit_cage(out, entry, (30_000, 120_000));
        Ok(())
    }

    /// Chips back to the cage: a `Credit` with its slip.
    fn credit(&mut self, out: &mut Vec<Published>, chips: Chips) {
        self.cage.tray.credit(&chips);
        self.cage.credits += 1;
        let slip_no = format!("C-{}-{:05}", self.table, self.cage.credits);
        let amount = tray::value(&chips);
        let entry = Finance::Credit { amount, slip_no };
        self.emit_cage(out, entry, (30_000, 120_000));
    }

    /// The round's chips through the tray, before the payouts are recorded: lost stakes
    /// in, recorded payouts out, less what the jackpot system pays (`settlement`'s
    /// jackpot payments). A fill comes first when the tray cannot pay.
    pub(super) fn tray_round(
        &mut self,
        ctx: &mut RoundCtx,
        recorded: &[(BoxNo, PayLine, Money)],
        settlement: &Settlement,
    ) -> Result<(), Error> {
        let (mut paid, mut lost) = (Money::ZERO, Money::ZERO);
        for &(_, _, net) in recorded {
            if net.0 > 0 {
                paid = paid + net;
            } else {
                lost = lost - net;
            }
        }
        let jackpot: Money = settlement.jackpot_payments.iter().map(|p| p.amount).sum();
        let by_pool = Money(jackpot.0.min(paid.0));
        let tray_in = lost + (jackpot - by_pool);
        let tray_out = paid - by_pool;
        // The tray wins what the players lost, less what it paid, the jackpot kept apart.
        assert_eq!(
            tray_in - tray_out,
            lost - paid + jackpot,
            "tray win conserved"
        );
        self.cage
            .tray
            .take_in(tray_in)
            .map_err(|e| self.tray_error(e))?;
        self.pay_from_tray(&mut ctx.out, tray_out, ctx.round)
    }

    /// Records a wrong payout as a report shows it: recorded win − rules win.
    pub(super) fn record_wrong_payout(
        &mut self,
        ctx: &RoundCtx,
        expected: Money,
        recorded: Money,
        seq: Seq,
    ) {
        let kind = if recorded.0 > expected.0 {
            VarianceKind::Overpayment
        } else {
            VarianceKind::Underpayment
        };
        let link = FinanceLink::Round {
            round: ctx.round,
            seq,
        };
        self.record(kind, expected - recorded, link);
    }

    /// Records a jackpot paid by the jackpot system (`JackpotHit` at `seq`).
    pub(super) fn record_jackpot(&mut self, round: RoundId, amount: Money, seq: Seq) {
        let link = FinanceLink::Round { round, seq };
        self.record(VarianceKind::JackpotPaid, amount, link);
    }

    fn record(&mut self, kind: VarianceKind, amount: Money, link: FinanceLink) {
        self.cage.record.variances.push(FinanceVariance {
            table: self.table.clone(),
            shift: self.cage.shift,
            kind,
            amount,
            link,
        });
    }

    /// Whether to inject finance error `kind` now (a draw only when its rate is not 0).
    pub(super) fn wants_finance(&mut self, kind: FinanceFaultKind) -> bool {
        let rate = self.faults.finance_rate(kind);
        rate > 0.0 && self.fault_rng.gen_bool(rate)
    }

    /// Appends a cage event (no round) after a gap drawn from `gap_ms` by the cage.
    fn emit_cage(&mut self, out: &mut Vec<Published>, entry: Finance, gap_ms: (u64, u64)) -> Seq {
        let gap = super::gap_ns(&mut self.cage.rng, gap_ms);
        self.emit_after(out, None, Dev::Cage, EventBody::Finance { entry }, gap)
    }

    fn tray_error(&self, e: TrayError) -> Error {
        Error::State {
            table: self.table.clone(),
            message: format!("chip tray: {e}"),
        }
    }

    /// Whether this table can be dealt a forced jackpot hit: CSP6 or MLP3 with a pool,
    /// dealing from a manual shoe (no deck commitment to contradict).
    pub(super) fn jackpot_hit_applies(&self, manual: bool) -> bool {
        manual
            && self.config.jackpot.is_some()
            && matches!(
                self.config.rule_set,
                schemas::RuleSet::Csp6 | schemas::RuleSet::Mlp3
            )
    }

    /// Deals a straight flush (not royal: 10% of the pool) to a box with an Ante and a
    /// Progressive bet, swapping cards within the deal so no card appears twice.
    pub(super) fn rig_jackpot(&mut self, ctx: &RoundCtx, cards: &mut [super::DealtCard]) {
        let eligible: Vec<BoxNo> = ctx
            .boxes
            .iter()
            .filter(|b| b.ante().is_some() && b.bets.contains_key(&BetKind::Progressive))
            .map(|b| b.box_no)
            .filter(|b| Some(*b) != ctx.short_box)
            .collect();
        if eligible.is_empty() {
            return;
        }
        let target = eligible[self.fault_rng.gen_range(0..eligible.len())];
        let suit = Suit::ALL[self.fault_rng.gen_range(0..Suit::ALL.len())];
        let high = self.fault_rng.gen_range(6u8..=13);
        let hand = (0..5u8).filter_map(|k| Rank::new(high - k).map(|r| Card::new(r, suit)));
        let spots: Vec<usize> = (0..cards.len())
            .filter(|&i| cards[i].to == CardTarget::Box(target))
            .collect();
        for (&p, want) in spots.iter().zip(hand) {
            match cards.iter().position(|d| d.card == want) {
                Some(q) => {
                    let c = cards[p].card;
                    cards[q].card = c;
                    cards[p].card = want;
                }
                None => cards[p].card = want,
            }
        }
    }
}
