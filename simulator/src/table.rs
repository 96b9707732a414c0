//! One simulated table: a pure, deterministic generator of its chain of events. The same
//! table id, configuration, seed and fault plan always give byte-identical events.
//!
//! No clock, no I/O: timestamps come from a simulated device clock that starts at a seeded
//! instant and advances by realistic gaps; randomness comes from ChaCha8 seeded by the
//! caller. Payouts are the rules engine's (`rules::settle`), never computed here.

use crate::expected::{self, FaultKind, FinanceFaultKind};
use crate::faults::{FaultPlan, InjectedFault};
use crate::keys::DeviceKey;
use crate::players::{Decider, DecisionView, ErrorProneDealer, HoldSkew};
use crate::Error;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use schemas::attest::{Checkpoint, CheckpointState};
use schemas::chain::{deck_commitment, event_hash};
use schemas::provenance::EventSignature;
use schemas::settle::{BoxInput, RoundInput, Settlement};
use schemas::{
    codec, Announcement, BetKind, BoxNo, Card, CardTarget, Choice, DealingMode, DeviceId, Event,
    EventBody, Hash32, JackpotConfig, Money, PayLine, RoundId, RuleSet, Ruling, Seq, StaffId,
    Stake, TableConfig, TableId, WireFormat, WIRE_VERSION,
};
use std::collections::BTreeMap;

mod finance;

pub use finance::FinanceRecord;

/// 2026-01-01T00:00:00Z in ns: the simulated clock starts within the day after it.
const EPOCH_2026_NS: i64 = 1_767_225_600_000_000_000;
/// Device time a dealer deals before the next one takes the table.
pub const DEALER_ROTATION_NS: i64 = 20 * 60 * 1_000_000_000;
/// Dealers on a table's roster, taking the table in turn.
pub const DEALER_ROSTER_LEN: u64 = 4;
/// The gap before a `DealerChanged`: fixed, so the rotation draws nothing from the
/// game's generator and leaves its cards and bets as the seed made them.
const DEALER_CHANGE_GAP_NS: i64 = 1_000_000;

/// The table's dealers: a roster numbered from the seed, and whose turn it is.
#[derive(Debug, Clone)]
struct Dealers {
    /// The first roster number: `D-<first + turn % DEALER_ROSTER_LEN>`.
    first: u64,
    /// Dealers who took the table so far.
    turns: u64,
    /// When the dealer in place took the table (device time).
    since_ns: i64,
}

/// One event as published: the decoded event and its exact wire bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// The event, decoded.
    pub event: Event,
    /// The event's exact wire bytes, JSON or bincode.
    pub bytes: Vec<u8>,
    /// The controller's signature of `bytes`, sent in the message's headers
    /// (`schemas::provenance`); `None` when the table signs no events.
    pub signature: Option<EventSignature>,
}

impl Published {
    /// The chain hash of this event (blake3 over its `prev` and its exact bytes).
    pub fn hash(&self) -> Hash32 {
        event_hash(&self.event.prev, &self.bytes)
    }
}

/// The events of one round (and the finance events before it) and the faults in them.
#[derive(Debug, Clone)]
pub struct PlayedRound {
    /// The round.
    pub round: RoundId,
    /// The events in publish order; finance events before the round come first.
    pub events: Vec<Published>,
    /// The round faults injected in these events.
    pub injected: Vec<InjectedFault>,
}

/// The table's devices, each with its own id on the table's chain.
struct Devices {
    dealer: DeviceId,
    dealing: DeviceId,
    bets: DeviceId,
    jackpot: DeviceId,
    cage: DeviceId,
}

fn device(s: &str) -> DeviceId {
    DeviceId::new(s).expect("built-in device id is valid")
}

/// A simulated table. Call `opening_events`, then `play_round` as often as wanted, then
/// `closing_events`.
///
/// A round: [finance event] `ShuffleCompleted` (with a deck commitment in shuffler mode),
/// "Place your Bets", `JackpotShown` (tables with a pool), `BetPlaced` per box and kind,
/// "No more Bets", SSP4 selections, `CardDealt` (burnt card first in manual-shoe mode for
/// CSP6/MLP3/TCP3), `Decided` per Ante box, `DealerRevealed`, the result (SSP4 "No hand"),
/// `HandRevealed` for boxes still in, `PaidOut` for every box and line of
/// `rules::settle`'s result (net 0 lines included), `JackpotHit`/`JackpotReset`,
/// `DeckRevealed` (shuffler), `RoundClosed`.
///
/// Jackpot pool: the table shows its pool before each round; after the round the pool is
/// the settlement's `pool_after` plus, for each jackpot stake accepted at "No more Bets"
/// (none in a void round), `stake * contribution_bp / 10000` rounded down per stake (SSP4:
/// credits times the credit value). Each table keeps its own view of its pool: tables
/// sharing a linked pool (MLP3) do not see each other's contributions yet.
pub struct TableSim {
    table: TableId,
    config: TableConfig,
    faults: FaultPlan,
    wire: WireFormat,
    /// The game: shuffles, players, bets, decisions, the clock.
    rng: ChaCha8Rng,
    /// Whether and where to inject faults, drawn apart from the game so that a fault plan
    /// does not change the cards and bets of the rounds it leaves alone.
    fault_rng: ChaCha8Rng,
    devices: Devices,
    seq: u64,
    prev: Hash32,
    /// Decides boxes' plays in place of the table's strategy (a cheat, for tests).
    decider: Option<Box<dyn Decider>>,
    /// A dealer of the roster who pays wrongly more often.
    error_prone: Option<ErrorProneDealer>,
    /// A shift whose dealer settles every line off the pay table.
    hold_skew: Option<HoldSkew>,
    /// How many shifts the table has opened.
    shifts_opened: u64,
    clock_ns: i64,
    next_round: u64,
    /// This table's view of its jackpot pool: the value it shows before a round.
    pool: Money,
    /// The chip tray, the shift and its drop box (`finance`).
    cage: finance::Cage,
    dealers: Dealers,
    state: State,
    /// The key the table's controller (the dealer terminal, which publishes the chain)
    /// signs events and checkpoints with, and the admin's enrollment of it, which the
    /// chain records when the table opens.
    key: DeviceKey,
    /// How many times a simulated key was rotated (`rotate_key`).
    key_generation: u32,
    /// Whether the controller signs each event it publishes (`schemas::provenance`).
    sign_events: bool,
    /// Whether the chain has enrolled the controller: until then its events also carry
    /// the admin's enrollment of its key in a header.
    signer_enrolled: bool,
    /// The last `TableOpened` published (seq, hash): the config in force that v2
    /// checkpoints sign.
    config_at: Option<(Seq, Hash32)>,
    /// The enrollment of `signer` (seq, hash), which v2 checkpoints sign.
    signer_enrolled_at: Option<(Seq, Hash32)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    New,
    Open,
    Closed,
}

/// A box's bets as they stand at "No more Bets" (stakes in minor units; SSP4 jackpot
/// wagers in credits).
struct BoxBets {
    box_no: BoxNo,
    bets: BTreeMap<BetKind, i64>,
}

impl BoxBets {
    fn ante(&self) -> Option<i64> {
        self.bets.get(&BetKind::Ante).copied()
    }
}

struct DealtCard {
    to: CardTarget,
    card: Card,
    face_up: bool,
}

/// The faults one round carries, decided before it is played.
struct RoundFaults {
    late_bet: bool,
    skipped_burn: bool,
    duplicate_card: bool,
    exposed_card: bool,
    wrong_card_count: bool,
    swapped_hands: bool,
    wrong_payout: bool,
    missing_round_close: bool,
    jackpot_hit: bool,
}

/// SSP4 §4.3, §4.4: the jackpot system's selections for a round.
#[derive(Default)]
struct Ssp4Picks {
    magic_card: Option<Card>,
    lucky_box: Option<BoxNo>,
    lucky_dealer: bool,
}

/// What the steps of one round share: its game, its faults, what happened so far, and
/// its events and injected faults.
struct RoundCtx {
    round: RoundId,
    rs: RuleSet,
    hand_len: usize,
    /// Manual-shoe dealing: one card at a time.
    manual: bool,
    /// A burnt card comes first (manual shoe in CSP6, MLP3 and TCP3).
    burns: bool,
    faults: RoundFaults,
    /// The pool shown before the bets.
    shown_pool: Money,
    boxes: Vec<BoxBets>,
    picks: Ssp4Picks,
    /// The box dealt one card short (an injected fault).
    short_box: Option<BoxNo>,
    hands: BTreeMap<BoxNo, Vec<Card>>,
    dealer_cards: Vec<Card>,
    void: bool,
    decisions: BTreeMap<BoxNo, Choice>,
    /// The BET or Play stake of each box that plays.
    play_stakes: BTreeMap<BoxNo, (BetKind, i64)>,
    out: Vec<Published>,
    injected: Vec<InjectedFault>,
}

impl RoundCtx {
    /// How many cards box `b` gets: one short for the short box.
    fn cards_for(&self, b: BoxNo) -> usize {
        if Some(b) == self.short_box {
            self.hand_len - 1
        } else {
            self.hand_len
        }
    }

    /// Player cards are dealt face up only in CS51.
    fn player_face_up(&self) -> bool {
        self.rs == RuleSet::Cs51
    }

    /// Whether the dealer's card `k` (from 0) is face up: the last one, except in TCP3.
    fn dealer_up(&self, k: usize) -> bool {
        self.rs != RuleSet::Tcp3 && k == self.hand_len - 1
    }

    /// CSP6 §3.10, TCP3 §3.10: one card at a time, box 1..n then the dealer, repeated.
    fn deal_one_at_a_time(&self, shoe: &mut Shoe, cards: &mut Vec<DealtCard>) {
        for pass in 0..self.hand_len {
            for b in &self.boxes {
                if pass < self.cards_for(b.box_no) {
                    cards.push(DealtCard {
                        to: CardTarget::Box(b.box_no),
                        card: shoe.draw(),
                        face_up: self.player_face_up(),
                    });
                }
            }
            cards.push(DealtCard {
                to: CardTarget::Dealer,
                card: shoe.draw(),
                face_up: self.dealer_up(pass),
            });
        }
    }

    /// Each box as the rules engine settles it, with its BET or Play stake.
    fn box_inputs(&self) -> Vec<BoxInput> {
        self.boxes
            .iter()
            .map(|b| {
                let mut bets = b.bets.clone();
                if let Some(&(kind, amount)) = self.play_stakes.get(&b.box_no) {
                    bets.insert(kind, amount);
                }
                BoxInput {
                    box_no: b.box_no,
                    cards: self.hands.get(&b.box_no).cloned().unwrap_or_default(),
                    decision: self.decisions.get(&b.box_no).copied(),
                    bets,
                    invalidated: (Some(b.box_no) == self.short_box && !self.void)
                        .then(|| invalidated_clause(self.rs)),
                }
            })
            .collect()
    }
}

/// A round's shuffled deck and, in shuffler mode, the salt of its commitment.
struct Shuffled {
    deck: Vec<Card>,
    salt: Option<Hash32>,
}

/// The shuffled deck as the dealer deals from it. `TableSim::new` ensures it holds enough
/// cards for any deal.
struct Shoe<'a> {
    deck: &'a [Card],
    next: usize,
}

impl Shoe<'_> {
    fn draw(&mut self) -> Card {
        let card = self.deck[self.next];
        self.next += 1;
        card
    }

    fn take(&mut self, n: usize) -> Vec<Card> {
        let cards = self.deck[self.next..self.next + n].to_vec();
        self.next += n;
        cards
    }
}

/// The cards of a deal in order, and where faults changed it.
struct DealPlan {
    cards: Vec<DealtCard>,
    /// The position of the duplicated card.
    duplicate_at: Option<usize>,
    /// The positions of the exposed cards.
    exposed: Vec<usize>,
}

/// Refuses a configuration the simulator cannot deal from one 52-card deck, or one with
/// no Ante limit of positive amounts.
fn check_config(table: &TableId, config: &TableConfig) -> Result<(), Error> {
    let hand = config.rule_set.hand_len();
    // Burnt card, every box, the dealer, and one spare for a duplicated card.
    let needed = 1 + (config.boxes as usize + 1) * hand + 1;
    if config.boxes == 0 || needed > 52 {
        return Err(Error::Config(format!(
            "table {table}: {} boxes of {} cards cannot be dealt from one deck",
            config.boxes, hand
        )));
    }
    let ante = config.limit(BetKind::Ante).ok_or_else(|| {
        Error::Config(format!("table {table}: no Ante limit in the configuration"))
    })?;
    if ante.min.0 <= 0 || ante.max < ante.min {
        return Err(Error::Config(format!(
            "table {table}: Ante limit {}..{} is not a range of positive amounts",
            ante.min, ante.max
        )));
    }
    Ok(())
}

impl TableSim {
    /// A table that will play `config` with randomness from `seed` and faults from
    /// `faults`. Refuses configurations it cannot deal from one 52-card deck or that have
    /// no Ante limit.
    pub fn new(
        table: TableId,
        config: TableConfig,
        seed: u64,
        faults: FaultPlan,
    ) -> Result<TableSim, Error> {
        check_config(&table, &config)?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let fault_rng = ChaCha8Rng::seed_from_u64(seed ^ 0xFA01_7FA0_17FA_017F);
        let clock_ns = EPOCH_2026_NS + rng.gen_range(0..86_400_000_000_000i64);
        let pool = config.jackpot.as_ref().map_or(Money::ZERO, |j| j.reset);
        let dealing = match config.dealing {
            DealingMode::ManualShoe => "shoe",
            DealingMode::Shuffler => "shuffler",
            DealingMode::Rng => "rng",
        };
        Ok(TableSim {
            config,
            faults,
            wire: WireFormat::Bincode,
            rng,
            fault_rng,
            devices: Devices {
                dealer: crate::keys::controller(),
                dealing: device(dealing),
                bets: device("bet-sensors"),
                jackpot: device("jackpot-controller"),
                cage: device("cage-terminal"),
            },
            seq: 0,
            prev: Hash32::ZERO,
            decider: None,
            error_prone: None,
            hold_skew: None,
            shifts_opened: 0,
            clock_ns,
            next_round: 1,
            pool,
            cage: finance::Cage::new(seed),
            dealers: Dealers {
                first: seed % 9_000 + 1_000,
                turns: 0,
                since_ns: clock_ns,
            },
            state: State::New,
            key: DeviceKey::simulated(&table, 0),
            key_generation: 0,
            sign_events: true,
            signer_enrolled: false,
            config_at: None,
            signer_enrolled_at: None,
            table,
        })
    }

    /// This table with `decider` choosing boxes' plays where it answers.
    pub fn with_decider(mut self, decider: Box<dyn Decider>) -> TableSim {
        self.decider = Some(decider);
        self
    }

    /// This table with one dealer of its roster paying wrongly at `dealer.wrong_payout`
    /// per round (the fault plan's rate, if higher, still applies).
    pub fn with_error_prone_dealer(mut self, dealer: ErrorProneDealer) -> TableSim {
        self.error_prone = Some(dealer);
        self
    }

    /// This table with one shift's lines settled off the pay table (`HoldSkew`).
    pub fn with_hold_skew(mut self, skew: HoldSkew) -> TableSim {
        self.hold_skew = Some(skew);
        self
    }

    /// The skew of the shift the table is in, if it is the rigged one.
    fn skew_now(&self) -> Option<HoldSkew> {
        self.hold_skew.filter(|s| s.shift_no == self.shifts_opened)
    }

    /// The wrong-payout rate of this round: the fault plan's, or the error-prone dealer's
    /// while that dealer deals.
    fn wrong_payout_rate(&self) -> f64 {
        let plan = self.faults.rate(FaultKind::WrongPayout);
        let place = self
            .dealers
            .turns
            .checked_sub(1)
            .map(|t| t % DEALER_ROSTER_LEN);
        match self.error_prone {
            Some(d) if place == Some(d.roster_place) => plan.max(d.wrong_payout.clamp(0.0, 1.0)),
            _ => plan,
        }
    }

    /// Moves the device clock so the table's first event happens at `start_ns` (UTC ns),
    /// keeping everything else as the seed made it. The ledger quarantines events whose
    /// device time is far from their arrival time, so live runs (demo, `simulate`) start
    /// the clock near the wall clock; tests keep the seeded 2026-01-01 start. Call before
    /// the first event.
    pub fn with_clock_start(mut self, start_ns: i64) -> TableSim {
        assert_eq!(self.seq, 0, "the clock moves only before the first event");
        self.clock_ns = start_ns;
        self
    }

    /// Signs with `key` (a real device key and its admin's enrollment, for this table)
    /// in place of the key derived from a public label. Call before the first event.
    pub fn with_device_key(mut self, key: DeviceKey) -> Result<TableSim, Error> {
        if self.seq != 0 {
            return Err(Error::State {
                table: self.table.clone(),
                message: "the device key changes only before the first event".into(),
            });
        }
        if !key
            .enrollment()
            .verifies(&self.table, &crate::keys::controller())
        {
            return Err(Error::Config(format!(
                "table {}: the device key's enrollment is not for this table",
                self.table
            )));
        }
        self.key = key;
        Ok(self)
    }

    /// Signs no events (seeding a ledger directly, benchmarks of the unsigned path). A
    /// ledger that requires signed events refuses such a table's events.
    pub fn without_event_signatures(mut self) -> TableSim {
        self.sign_events = false;
        self
    }

    /// Publishes in `wire` (bincode by default; JSON exercises the other wire form).
    pub fn with_wire_format(mut self, wire: WireFormat) -> TableSim {
        self.wire = wire;
        self
    }

    /// The table's id.
    pub fn table(&self) -> &TableId {
        &self.table
    }

    /// The table's configuration.
    pub fn config(&self) -> &TableConfig {
        &self.config
    }

    /// The wire form this table publishes: JSON or bincode.
    pub fn wire_format(&self) -> WireFormat {
        self.wire
    }

    /// The sequence number of the last event produced (0 before the first).
    pub fn last_seq(&self) -> Seq {
        Seq(self.seq)
    }

    /// How many events a run of this table publishes (`publish_floor`: the opening,
    /// `rounds` rounds, the closing), generated here apart from any publishing: what a
    /// ledger that took the run must hold.
    pub fn events_in_a_run(mut self, rounds: u64) -> Result<u64, Error> {
        let mut n = self.opening_events()?.len();
        for _ in 0..rounds {
            n += self.play_round()?.events.len();
        }
        n += self.closing_events()?.len();
        Ok(n as u64)
    }

    /// The table opens with its configuration (`TableOpened`), the controller's key
    /// enrolled, and the opener's count of the tray.
    pub fn opening_events(&mut self) -> Result<Vec<Published>, Error> {
        if self.state != State::New {
            return Err(Error::State {
                table: self.table.clone(),
                message: "the table is already open".into(),
            });
        }
        let mut out = Vec::new();
        let body = EventBody::TableOpened {
            config: self.config.clone(),
        };
        self.emit(&mut out, None, Dev::Dealer, body, (0, 1));
        self.enroll_signer(&mut out);
        self.change_dealer(&mut out);
        self.open_shift(&mut out);
        self.state = State::Open;
        Ok(out)
    }

    /// The controller's checkpoint key is rotated between rounds: the admin enrolls a new
    /// key in the chain, which replaces the old one, and later checkpoints are signed with
    /// it. Checkpoints signed before stay valid for the heads they signed.
    /// Only a simulated key rotates here: a real one needs an admin's new enrollment.
    pub fn rotate_key(&mut self) -> Result<Vec<Published>, Error> {
        self.require_open()?;
        if !self.key.is_simulated() {
            return Err(Error::State {
                table: self.table.clone(),
                message: "a real device key rotates only with an admin's new enrollment".into(),
            });
        }
        self.key_generation += 1;
        self.key = DeviceKey::simulated(&self.table, self.key_generation);
        let mut out = Vec::new();
        self.enroll_signer(&mut out);
        Ok(out)
    }

    /// The next dealer of the roster takes the table (`DealerChanged`, round-less).
    fn change_dealer(&mut self, out: &mut Vec<Published>) {
        let d = &mut self.dealers;
        let no = d.first + d.turns % DEALER_ROSTER_LEN;
        d.turns += 1;
        // 1,000 to 9,999 plus at most 3: four digits, a valid id.
        let dealer = StaffId::new(format!("D-{no:04}")).expect("D-nnnn is an id");
        let body = EventBody::DealerChanged { dealer };
        self.emit_after(out, None, Dev::Dealer, body, DEALER_CHANGE_GAP_NS);
        self.dealers.since_ns = self.clock_ns;
    }

    /// The controller's checkpoint key, enrolled by the admin in the chain itself.
    fn enroll_signer(&mut self, out: &mut Vec<Published>) {
        let body = self.key.enrolled_body(&self.table);
        let seq = self.emit(out, None, Dev::Dealer, body, (0, 1));
        self.signer_enrolled = true;
        self.signer_enrolled_at = Some((seq, self.prev));
    }

    /// The controller's signature of an event's bytes, with the admin's enrollment of its
    /// key until the chain holds that enrollment (tests sign altered bytes with it).
    pub fn sign(&self, bytes: &[u8]) -> Option<EventSignature> {
        if !self.sign_events {
            return None;
        }
        let device = &self.devices.dealer;
        let mut s = EventSignature::sign(self.key.signer(), &self.table, device, bytes);
        if !self.signer_enrolled {
            s.enrollment = Some(self.key.enrollment());
        }
        Some(s)
    }

    /// The controller's signed checkpoint of the chain as published so far (publish it on
    /// `tables.<table>.checkpoints` after the events it covers). `None` before any event.
    /// Version 2 (with the chain's state) once the table is open and its key enrolled.
    pub fn checkpoint(&self) -> Option<Checkpoint> {
        if self.seq == 0 {
            return None;
        }
        let (table, device) = (self.table.clone(), self.devices.dealer.clone());
        let head = (Seq(self.seq), self.prev);
        Some(match (self.config_at, self.signer_enrolled_at) {
            (Some((config_seq, config_hash)), Some((key_seq, key_hash))) => {
                let state = CheckpointState {
                    config_seq,
                    config_hash,
                    key_seq,
                    key_hash,
                };
                let head = (table, device, head.0, head.1);
                Checkpoint::sign_v2(self.key.signer(), head, self.clock_ns, state)
            }
            _ => Checkpoint::sign(
                self.key.signer(),
                table,
                device,
                head.0,
                head.1,
                self.clock_ns,
            ),
        })
    }

    /// A fresh message id for sending `id`'s message again (attempt `n`), from the
    /// controller's key (`subjects::resend_msg_id`): nobody else can predict it.
    pub fn resend_msg_id(&self, id: &str, n: u64) -> String {
        schemas::subjects::resend_msg_id(self.key.signer(), id, n)
    }

    /// The table closes: the closer's count, the drop box removed, `TableClosed`. No round can be played afterwards.
    pub fn closing_events(&mut self) -> Result<Vec<Published>, Error> {
        self.require_open()?;
        let mut out = Vec::new();
        self.close_shift(&mut out, None)?;
        self.emit(
            &mut out,
            None,
            Dev::Dealer,
            EventBody::TableClosed,
            (5_000, 60_000),
        );
        self.state = State::Closed;
        Ok(out)
    }

    fn require_open(&self) -> Result<(), Error> {
        match self.state {
            State::Open => Ok(()),
            State::New => Err(Error::State {
                table: self.table.clone(),
                message: "call opening_events before playing".into(),
            }),
            State::Closed => Err(Error::State {
                table: self.table.clone(),
                message: "the table is closed".into(),
            }),
        }
    }

    fn wants(&mut self, kind: FaultKind) -> bool {
        let rate = match kind {
            FaultKind::WrongPayout => self.wrong_payout_rate(),
            _ => self.faults.rate(kind),
        };
        rate > 0.0
            && expected::code(kind, self.config.rule_set).is_some()
            && self.fault_rng.gen_bool(rate)
    }

    fn code(&self, kind: FaultKind) -> &'static str {
        // `wants` only lets through kinds that have a code for this rule set.
        expected::code(kind, self.config.rule_set).unwrap_or("unknown")
    }

    /// Plays one round of play (preceded by the cage's events between rounds: a shift
    /// change, a buy-in, a fill or a credit) and returns its events with a valid chain,
    /// and the faults injected into it.
    pub fn play_round(&mut self) -> Result<PlayedRound, Error> {
        self.require_open()?;
        let mut ctx = self.begin_round()?;
        let shuffled = self.shuffle(&mut ctx);
        self.take_bets(&mut ctx);
        self.select_ssp4(&mut ctx, shuffled.deck[0]);
        let plan = self.plan_deal(&mut ctx, &shuffled.deck);
        self.emit_deal(&mut ctx, &plan);
        self.declare_void(&mut ctx, &plan)?;
        if !ctx.void {
            self.decide(&mut ctx);
        }
        let settlement = self.settle(&ctx)?;
        if !ctx.void {
            self.reveal(&mut ctx, &settlement);
        }
        self.pay_out(&mut ctx, &settlement)?;
        self.settle_jackpot(&mut ctx, &settlement);
        self.close_round(&mut ctx, shuffled);
        Ok(PlayedRound {
            round: ctx.round,
            events: ctx.out,
            injected: ctx.injected,
        })
    }

    /// Starts a round: its id, the cage's events between rounds, and its faults.
    fn begin_round(&mut self) -> Result<RoundCtx, Error> {
        let round = RoundId(self.next_round);
        self.next_round += 1;
        let rs = self.config.rule_set;
        let mut out = Vec::new();
        self.between_rounds(&mut out, round)?;
        if self.clock_ns - self.dealers.since_ns >= DEALER_ROTATION_NS {
            self.change_dealer(&mut out);
        }
        let manual = self.config.dealing == DealingMode::ManualShoe;
        let burns = manual && matches!(rs, RuleSet::Csp6 | RuleSet::Mlp3 | RuleSet::Tcp3);
        let faults = self.draw_faults(burns);
        Ok(RoundCtx {
            round,
            rs,
            hand_len: rs.hand_len(),
            manual,
            burns,
            faults,
            shown_pool: Money::ZERO,
            boxes: Vec::new(),
            picks: Ssp4Picks::default(),
            short_box: None,
            hands: BTreeMap::new(),
            dealer_cards: Vec::new(),
            void: false,
            decisions: BTreeMap::new(),
            play_stakes: BTreeMap::new(),
            out,
            injected: Vec::new(),
        })
    }

    /// Which faults this round carries, decided up front from the fault generator.
    fn draw_faults(&mut self, burns: bool) -> RoundFaults {
        let shuffler = self.config.dealing == DealingMode::Shuffler;
        let manual = self.config.dealing == DealingMode::ManualShoe;
        // The draws happen in this order: it fixes the fault generator's sequence.
        RoundFaults {
            late_bet: self.wants(FaultKind::LateBet),
            skipped_burn: burns && self.wants(FaultKind::SkippedBurn),
            duplicate_card: self.wants(FaultKind::DuplicateCard),
            exposed_card: self.wants(FaultKind::ExposedCard),
            wrong_card_count: self.wants(FaultKind::WrongCardCount),
            swapped_hands: shuffler && self.wants(FaultKind::SwappedHands),
            wrong_payout: self.wants(FaultKind::WrongPayout),
            missing_round_close: self.wants(FaultKind::MissingRoundClose),
            jackpot_hit: self.jackpot_hit_applies(manual)
                && self.wants_finance(FinanceFaultKind::JackpotHit),
        }
    }

    /// A fresh single deck every round (one deck of 52, CSP6 §2.2.1). The shuffler commits
    /// to its order; the order is revealed after settlement.
    fn shuffle(&mut self, ctx: &mut RoundCtx) -> Shuffled {
        let mut deck: Vec<Card> = Card::deck().collect();
        deck.shuffle(&mut self.rng);
        let commitment = if self.config.dealing == DealingMode::Shuffler {
            let mut salt = [0u8; 32];
            self.rng.fill(&mut salt);
            let salt = Hash32(salt);
            Some((salt, deck_commitment(&salt, &deck)))
        } else {
            None
        };
        let body = EventBody::ShuffleCompleted {
            deck_commitment: commitment.map(|(_, c)| c),
        };
        self.emit_round(ctx, Dev::Dealing, body, (5_000, 25_000));
        Shuffled {
            deck,
            salt: commitment.map(|(s, _)| s),
        }
    }

    /// "Place your Bets", the pool shown, every box's bets, "No more Bets", a late bet.
    fn take_bets(&mut self, ctx: &mut RoundCtx) {
        self.announce(&mut ctx.out, ctx.round, Announcement::PlaceYourBets);
        ctx.shown_pool = self.pool;
        if let Some(pool) = self.config.jackpot.as_ref().map(|j| j.pool.clone()) {
            let body = EventBody::JackpotShown {
                pool,
                value: ctx.shown_pool,
            };
            self.emit_round(ctx, Dev::Jackpot, body, (200, 1_000));
        }
        ctx.boxes = self.place_bets();
        for b in &ctx.boxes {
            for (&kind, &amount) in &b.bets {
                let body = EventBody::BetPlaced {
                    box_no: b.box_no,
                    kind,
                    stake: stake(kind, amount),
                };
                self.emit(&mut ctx.out, Some(ctx.round), Dev::Bets, body, (500, 4_000));
            }
        }
        self.announce(&mut ctx.out, ctx.round, Announcement::NoMoreBets);
        if ctx.faults.late_bet {
            if let Some(f) = self.late_bet(&mut ctx.out, ctx.round, &ctx.boxes) {
                ctx.injected.push(f);
            }
        }
    }

    /// SSP4 §4.3, §4.4: the jackpot system's selections for the round.
    fn select_ssp4(&mut self, ctx: &mut RoundCtx, first_card: Card) {
        if ctx.rs != RuleSet::Ssp4 {
            return;
        }
        if self.rng.gen_bool(0.3) {
            let c = Card::deck()
                .nth(self.rng.gen_range(0..52))
                .unwrap_or(first_card);
            ctx.picks.magic_card = Some(c);
            let body = EventBody::MagicCardSelected { card: c };
            self.emit_round(ctx, Dev::Jackpot, body, (200, 1_000));
        }
        if self.rng.gen_bool(0.1) {
            let b = BoxNo(self.rng.gen_range(1..=self.config.boxes));
            ctx.picks.lucky_box = Some(b);
            let body = EventBody::LuckyPlayerSelected { box_no: b };
            self.emit_round(ctx, Dev::Jackpot, body, (200, 1_000));
        }
        if self.rng.gen_bool(0.05) {
            ctx.picks.lucky_dealer = true;
            let body = EventBody::LuckyDealerSelected;
            self.emit_round(ctx, Dev::Jackpot, body, (200, 1_000));
        }
    }

    /// The cards of the deal in order, with the deal's faults: a box dealt short, a
    /// skipped burnt card, swapped hands, a duplicated card, exposed cards.
    fn plan_deal(&mut self, ctx: &mut RoundCtx, deck: &[Card]) -> DealPlan {
        ctx.short_box = self.short_box(ctx);
        let mut shoe = Shoe { deck, next: 0 };
        let mut cards = Vec::new();
        if ctx.burns {
            if ctx.faults.skipped_burn {
                ctx.injected.push(InjectedFault::SkippedBurn {
                    round: ctx.round,
                    code: self.code(FaultKind::SkippedBurn),
                });
            } else {
                cards.push(DealtCard {
                    to: CardTarget::Burn,
                    card: shoe.draw(),
                    face_up: false,
                });
            }
        }
        if ctx.manual {
            ctx.deal_one_at_a_time(&mut shoe, &mut cards);
            if ctx.faults.jackpot_hit {
                self.rig_jackpot(ctx, &mut cards);
            }
        } else {
            self.deal_sets(ctx, &mut shoe, &mut cards);
        }
        debug_assert!(shoe.next <= deck.len());
        let duplicate_at = if ctx.faults.duplicate_card {
            self.duplicate_card(&mut cards)
        } else {
            None
        };
        let exposed = if ctx.faults.exposed_card {
            self.exposed_cards(ctx.rs, &cards)
        } else {
            Vec::new()
        };
        DealPlan {
            cards,
            duplicate_at,
            exposed,
        }
    }

    /// The box dealt one card short, if that fault is injected.
    fn short_box(&mut self, ctx: &mut RoundCtx) -> Option<BoxNo> {
        if !ctx.faults.wrong_card_count {
            return None;
        }
        let b = ctx.boxes[self.fault_rng.gen_range(0..ctx.boxes.len())].box_no;
        ctx.injected.push(InjectedFault::WrongCardCount {
            round: ctx.round,
            box_no: b,
            dealt: (ctx.hand_len - 1) as u8,
            required: ctx.hand_len as u8,
            code: self.code(FaultKind::WrongCardCount),
        });
        Some(b)
    }

    /// CSP6 §3.11 (shuffler) and the RNG game: a complete set per box, box 1 first, then
    /// the dealer's set.
    fn deal_sets(&mut self, ctx: &mut RoundCtx, shoe: &mut Shoe, cards: &mut Vec<DealtCard>) {
        let mut sets: Vec<(BoxNo, Vec<Card>)> = Vec::new();
        for b in &ctx.boxes {
            sets.push((b.box_no, shoe.take(ctx.cards_for(b.box_no))));
        }
        if ctx.faults.swapped_hands {
            self.swap_hands(ctx, &mut sets);
        }
        for (b, set) in sets {
            for card in set {
                cards.push(DealtCard {
                    to: CardTarget::Box(b),
                    card,
                    face_up: ctx.player_face_up(),
                });
            }
        }
        for k in 0..ctx.hand_len {
            cards.push(DealtCard {
                to: CardTarget::Dealer,
                card: shoe.draw(),
                face_up: ctx.dealer_up(k),
            });
        }
    }

    /// Swaps the complete sets of two boxes (neither dealt short), if there are two.
    fn swap_hands(&mut self, ctx: &mut RoundCtx, sets: &mut [(BoxNo, Vec<Card>)]) {
        let swappable: Vec<usize> = (0..sets.len())
            .filter(|&i| Some(sets[i].0) != ctx.short_box)
            .collect();
        if swappable.len() < 2 {
            return;
        }
        let picked: Vec<usize> = swappable
            .choose_multiple(&mut self.fault_rng, 2)
            .copied()
            .collect();
        let (i, j) = (picked[0].min(picked[1]), picked[0].max(picked[1]));
        let ci = std::mem::take(&mut sets[i].1);
        let cj = std::mem::replace(&mut sets[j].1, ci);
        sets[i].1 = cj;
        ctx.injected.push(InjectedFault::SwappedHands {
            round: ctx.round,
            a: sets[i].0,
            b: sets[j].0,
            code: self.code(FaultKind::SwappedHands),
        });
    }

    /// A duplicated card: a box card replaced by one already dealt this round. Returns
    /// its position in the deal.
    fn duplicate_card(&mut self, cards: &mut [DealtCard]) -> Option<usize> {
        let candidates: Vec<usize> = (0..cards.len())
            .filter(|&i| {
                matches!(cards[i].to, CardTarget::Box(_))
                    && cards[..i].iter().any(|d| d.to != CardTarget::Burn)
            })
            .collect();
        let &i = candidates.choose(&mut self.fault_rng)?;
        let earlier: Vec<Card> = cards[..i]
            .iter()
            .filter(|d| d.to != CardTarget::Burn)
            .map(|d| d.card)
            .collect();
        let &c = earlier.choose(&mut self.fault_rng)?;
        cards[i].card = c;
        Some(i)
    }

    /// The box cards exposed (two in SSP4, else one), none if too few were dealt. They are
    /// recorded just before the last card of the deal.
    fn exposed_cards(&mut self, rs: RuleSet, cards: &[DealtCard]) -> Vec<usize> {
        let box_cards: Vec<usize> = (0..cards.len().saturating_sub(1))
            .filter(|&i| matches!(cards[i].to, CardTarget::Box(_)))
            .collect();
        let n = if rs == RuleSet::Ssp4 { 2 } else { 1 };
        if box_cards.len() < n {
            return Vec::new();
        }
        box_cards
            .choose_multiple(&mut self.fault_rng, n)
            .copied()
            .collect()
    }

    /// Publishes the deal card by card, the exposed cards before the last, and records the
    /// hands.
    fn emit_deal(&mut self, ctx: &mut RoundCtx, plan: &DealPlan) {
        for (i, d) in plan.cards.iter().enumerate() {
            if i + 1 == plan.cards.len() {
                self.emit_exposed(ctx, plan);
            }
            let body = EventBody::CardDealt {
                to: d.to,
                card: d.card,
                face_up: d.face_up,
                position: (i + 1) as u16,
            };
            let seq = self.emit_round(ctx, Dev::Dealing, body, (400, 1_500));
            if plan.duplicate_at == Some(i) {
                ctx.injected.push(InjectedFault::DuplicateCard {
                    round: ctx.round,
                    to: d.to,
                    card: d.card,
                    seq,
                    code: self.code(FaultKind::DuplicateCard),
                });
            }
            match d.to {
                CardTarget::Box(b) => ctx.hands.entry(b).or_default().push(d.card),
                CardTarget::Dealer => ctx.dealer_cards.push(d.card),
                CardTarget::Burn => {}
            }
        }
    }

    /// `CardExposed` for each exposed card; the first is the injected fault.
    fn emit_exposed(&mut self, ctx: &mut RoundCtx, plan: &DealPlan) {
        for (k, &e) in plan.exposed.iter().enumerate() {
            let (at, card) = (plan.cards[e].to, plan.cards[e].card);
            let body = EventBody::CardExposed {
                at,
                card,
                // §5.12: players had seen their cards; SSP4 §5.4: no matter.
                players_had_seen: ctx.rs != RuleSet::Ssp4,
            };
            let seq = self.emit_round(ctx, Dev::Dealer, body, (300, 2_000));
            if k == 0 {
                ctx.injected.push(InjectedFault::ExposedCard {
                    round: ctx.round,
                    at,
                    card,
                    seq,
                    code: self.code(FaultKind::ExposedCard),
                });
            }
        }
    }

    /// A duplicated card (a card not of the set, §5.8.1) or two exposed SSP4 cards (§5.4)
    /// void the round: the pit declares it and every bet is returned (§5.22).
    fn declare_void(&mut self, ctx: &mut RoundCtx, plan: &DealPlan) -> Result<(), Error> {
        let rs = ctx.rs;
        let clause = if plan.duplicate_at.is_some() {
            match rs {
                RuleSet::Ssp4 => "SSP4 5.1".to_string(),
                RuleSet::Cs51 => "CS51 How To Play".to_string(),
                _ => format!("{rs} 5.8.1"),
            }
        } else if rs == RuleSet::Ssp4 && plan.exposed.len() >= 2 {
            "SSP4 5.4".to_string()
        } else {
            return Ok(());
        };
        ctx.void = true;
        let staff = StaffId::new(format!("PS{:04}", self.rng.gen_range(1..10_000)))
            .map_err(|e| Error::Config(format!("staff id: {e}")))?;
        let body = EventBody::StaffDecision {
            staff,
            ruling: Ruling::VoidRound {
                clause,
                reason: "irregular deal noticed by the dealer".into(),
            },
        };
        self.emit_round(ctx, Dev::Dealer, body, (10_000, 60_000));
        self.announce(&mut ctx.out, ctx.round, Announcement::Void);
        Ok(())
    }

    /// Each Ante box's decision, by a simple sensible strategy.
    fn decide(&mut self, ctx: &mut RoundCtx) {
        let rs = ctx.rs;
        for b in &ctx.boxes {
            let Some(ante) = b.ante() else { continue }; // TCP3 Pair Plus only (§3.14)
            if Some(b.box_no) == ctx.short_box {
                continue; // invalidated hand (§5.15): no decision
            }
            let cards = ctx.hands.get(&b.box_no).map(Vec::as_slice).unwrap_or(&[]);
            let view = DecisionView {
                rule_set: rs,
                box_no: b.box_no,
                cards,
                dealer: &ctx.dealer_cards,
                hands: &ctx.hands,
            };
            let cheat = self.decider.as_mut().and_then(|d| d.decide(&view));
            let plays = if rs == RuleSet::Tcp3 {
                tcp3_plays(cards)
            } else {
                stud_plays(cards)
            };
            let choice = if let Some(choice) = cheat {
                choice
            } else if plays {
                Choice::Play
            } else if self.rng.gen_bool(0.02) {
                Choice::WalkAway // a Fold (CSP6 §5.5)
            } else {
                Choice::Fold
            };
            let stake = (choice == Choice::Play).then(|| {
                let (kind, amount) = play_stake(rs, ante);
                ctx.play_stakes.insert(b.box_no, (kind, amount));
                Money(amount)
            });
            ctx.decisions.insert(b.box_no, choice);
            let body = EventBody::Decided {
                box_no: b.box_no,
                choice,
                stake,
            };
            let gap_ms = (2_000, 15_000);
            self.emit(&mut ctx.out, Some(ctx.round), Dev::Dealer, body, gap_ms);
        }
    }

    /// The round's settlement by the rules engine.
    fn settle(&self, ctx: &RoundCtx) -> Result<Settlement, Error> {
        let input = RoundInput {
            game: ctx.rs,
            config: Some(self.config.clone()),
            dealer: ctx.dealer_cards.clone(),
            dealer_up: None,
            pool: ctx.shown_pool,
            reset: self
                .config
                .jackpot
                .as_ref()
                .map_or(Money::ZERO, |j| j.reset),
            credit_value: None,
            magic_card: ctx.picks.magic_card,
            lucky_box: ctx.picks.lucky_box,
            lucky_dealer: ctx.picks.lucky_dealer,
            void: ctx.void,
            boxes: ctx.box_inputs(),
        };
        rules::settle(&input).map_err(|source| Error::Settle {
            table: self.table.clone(),
            round: ctx.round,
            source,
        })
    }

    /// The dealer's hand, the result, and the hands of the boxes still in.
    fn reveal(&mut self, ctx: &mut RoundCtx, settlement: &Settlement) {
        let body = EventBody::DealerRevealed {
            cards: ctx.dealer_cards.clone(),
        };
        self.emit_round(ctx, Dev::Dealer, body, (1_000, 4_000));
        let announcement = result_announcement(ctx.rs, settlement);
        self.announce(&mut ctx.out, ctx.round, announcement);
        for b in &ctx.boxes {
            let folded = matches!(
                ctx.decisions.get(&b.box_no),
                Some(Choice::Fold | Choice::WalkAway | Choice::RefuseToReveal)
            );
            if folded || Some(b.box_no) == ctx.short_box {
                continue;
            }
            let cards = ctx.hands.get(&b.box_no).cloned().unwrap_or_default();
            let body = EventBody::HandRevealed {
                box_no: b.box_no,
                cards,
            };
            self.emit(
                &mut ctx.out,
                Some(ctx.round),
                Dev::Dealer,
                body,
                (500, 2_000),
            );
        }
    }

    /// What the dealer pays: the rules' result on every line, one line possibly wrong.
    /// The chips move through the tray first (a fill comes before the payouts it needs).
    fn pay_out(&mut self, ctx: &mut RoundCtx, settlement: &Settlement) -> Result<(), Error> {
        let net = settlement.net();
        let lines: Vec<(BoxNo, PayLine, Money)> = net
            .iter()
            .flat_map(|(&b, l)| l.iter().map(move |(&line, &m)| (b, line, m)))
            .collect();
        let wrong = if ctx.faults.wrong_payout && !lines.is_empty() {
            Some(self.wrong_payout(&ctx.boxes, &lines))
        } else {
            None
        };
        let mut recorded = lines.clone();
        if let Some((w, r)) = wrong {
            recorded[w].2 = r;
        }
        if let Some(skew) = self.skew_now() {
            for (r, l) in recorded.iter_mut().zip(&lines) {
                r.2 = r.2 + Money(skew.recorded_minor(l.2 .0) - l.2 .0);
            }
        }
        self.tray_round(ctx, &recorded, settlement)?;
        for (&(box_no, line, expected), &(_, _, recorded)) in lines.iter().zip(&recorded) {
            let body = EventBody::PaidOut {
                box_no,
                line,
                net: recorded,
            };
            let seq = self.emit_round(ctx, Dev::Dealer, body, (1_000, 5_000));
            if recorded != expected {
                self.record_wrong_payout(ctx, expected, recorded, seq);
                ctx.injected.push(InjectedFault::WrongPayout {
                    round: ctx.round,
                    box_no,
                    line,
                    expected,
                    recorded,
                    seq,
                    code: self.code(FaultKind::WrongPayout),
                });
            }
        }
        Ok(())
    }

    /// The line paid wrongly (its index in `lines`) and the amount recorded for it.
    fn wrong_payout(
        &mut self,
        boxes: &[BoxBets],
        lines: &[(BoxNo, PayLine, Money)],
    ) -> (usize, Money) {
        assert!(!lines.is_empty(), "a wrong payout needs a line to pay");
        let i = self.fault_rng.gen_range(0..lines.len());
        let ante = boxes
            .iter()
            .find(|b| b.box_no == lines[i].0)
            .and_then(BoxBets::ante)
            .unwrap_or(1_000);
        let magnitudes = [100, 500, 1_000, 2_500, 5_000, ante.max(100)];
        let m = magnitudes[self.fault_rng.gen_range(0..magnitudes.len())];
        let delta = if self.fault_rng.gen_bool(0.5) { m } else { -m };
        (i, Money(lines[i].2 .0 + delta))
    }

    /// Jackpot controller: hits, resets, and the pool for the next round.
    fn settle_jackpot(&mut self, ctx: &mut RoundCtx, settlement: &Settlement) {
        let Some(j) = self.config.jackpot.clone() else {
            return;
        };
        for p in &settlement.jackpot_payments {
            let body = EventBody::JackpotHit {
                pool: j.pool.clone(),
                box_no: p.box_no,
                amount: p.amount,
            };
            let seq = self.emit_round(ctx, Dev::Jackpot, body, (500, 3_000));
            self.record_jackpot(ctx.round, p.amount, seq);
            if p.amount == p.pool_before && p.pool_after == j.reset {
                let body = EventBody::JackpotReset {
                    pool: j.pool.clone(),
                    value: j.reset,
                };
                self.emit_round(ctx, Dev::Jackpot, body, (500, 3_000));
            }
        }
        self.pool = settlement.pool_after;
        if !ctx.void {
            self.add_contributions(&j, &ctx.boxes);
        }
    }

    /// Adds the contribution of each accepted jackpot stake, rounded down per stake.
    fn add_contributions(&mut self, j: &JackpotConfig, boxes: &[BoxBets]) {
        for b in boxes {
            for (&kind, &amount) in &b.bets {
                let chips = match kind {
                    BetKind::Progressive => amount,
                    BetKind::JackpotPlayer | BetKind::JackpotDealer => amount * j.credit_value.0,
                    _ => continue,
                };
                self.pool = self.pool + Money(chips * i64::from(j.contribution_bp) / 10_000);
            }
        }
    }

    /// The deck's order (shuffler), then `RoundClosed` unless its omission is injected.
    fn close_round(&mut self, ctx: &mut RoundCtx, shuffled: Shuffled) {
        if let Some(salt) = shuffled.salt {
            let body = EventBody::DeckRevealed {
                order: shuffled.deck,
                salt,
            };
            self.emit_round(ctx, Dev::Dealing, body, (200, 1_000));
        }
        if ctx.faults.missing_round_close {
            ctx.injected.push(InjectedFault::MissingRoundClose {
                round: ctx.round,
                code: self.code(FaultKind::MissingRoundClose),
            });
        } else {
            self.emit_round(ctx, Dev::Dealer, EventBody::RoundClosed, (500, 2_000));
        }
    }

    /// `emit` for an event of the round `ctx` plays.
    fn emit_round(
        &mut self,
        ctx: &mut RoundCtx,
        dev: Dev,
        body: EventBody,
        gap_ms: (u64, u64),
    ) -> Seq {
        self.emit(&mut ctx.out, Some(ctx.round), dev, body, gap_ms)
    }

    /// Occupied boxes and their bets as they stand at "No more Bets".
    fn place_bets(&mut self) -> Vec<BoxBets> {
        let rs = self.config.rule_set;
        let n = self.config.boxes as usize;
        let players = self.rng.gen_range(1..=n);
        let mut chosen: Vec<u8> = rand::seq::index::sample(&mut self.rng, n, players)
            .into_iter()
            .map(|i| i as u8 + 1)
            .collect();
        chosen.sort_unstable();
        let has_jackpot = self.config.jackpot.is_some();
        let mut out = Vec::new();
        for b in chosen {
            let mut bets = BTreeMap::new();
            let pair_plus_only = rs == RuleSet::Tcp3
                && self.config.limit(BetKind::PairPlus).is_some()
                && self.rng.gen_bool(0.1);
            if pair_plus_only {
                if let Some(a) = self.amount(BetKind::PairPlus) {
                    bets.insert(BetKind::PairPlus, a);
                }
            } else {
                if let Some(a) = self.amount(BetKind::Ante) {
                    bets.insert(BetKind::Ante, a);
                }
                let sides: &[(BetKind, f64)] = match rs {
                    RuleSet::Csp6 | RuleSet::Mlp3 => &[(BetKind::Progressive, 0.35)],
                    RuleSet::Ssp4 => &[
                        (BetKind::JackpotPlayer, 0.4),
                        (BetKind::JackpotDealer, 0.25),
                    ],
                    RuleSet::Cs51 => &[(BetKind::Bonus, 0.4)],
                    RuleSet::Tcp3 => &[(BetKind::PairPlus, 0.4), (BetKind::Progressive, 0.3)],
                };
                for &(kind, p) in sides {
                    let jackpot_bet = matches!(
                        kind,
                        BetKind::Progressive | BetKind::JackpotPlayer | BetKind::JackpotDealer
                    );
                    if jackpot_bet && !has_jackpot {
                        continue;
                    }
                    if self.rng.gen_bool(p) {
                        if let Some(a) = self.amount(kind) {
                            bets.insert(kind, a);
                        }
                    }
                }
            }
            if !bets.is_empty() {
                out.push(BoxBets {
                    box_no: BoxNo(b),
                    bets,
                });
            }
        }
        out
    }

    /// A stake for `kind` within the table's limit, in chip-like steps of the minimum
    /// (credits for SSP4 jackpot wagers). `None` when the table has no limit for it.
    fn amount(&mut self, kind: BetKind) -> Option<i64> {
        let l = self.config.limit(kind)?;
        let (min, max) = (l.min.0, l.max.0);
        if kind.in_credits() {
            return Some(self.rng.gen_range(min.max(1)..=max.max(min.max(1))));
        }
        const STEPS: [i64; 12] = [1, 1, 1, 2, 2, 4, 5, 10, 20, 40, 100, 200];
        let m = STEPS[self.rng.gen_range(0..STEPS.len())];
        Some((min * m).min(max).max(min))
    }

    /// A bet recorded after "No more Bets": a side bet the box did not have, else the Ante
    /// increased by its minimum.
    fn late_bet(
        &mut self,
        out: &mut Vec<Published>,
        round: RoundId,
        boxes: &[BoxBets],
    ) -> Option<InjectedFault> {
        let with_ante: Vec<&BoxBets> = boxes.iter().filter(|b| b.ante().is_some()).collect();
        let b = *with_ante.choose(&mut self.fault_rng)?;
        let side = match self.config.rule_set {
            RuleSet::Csp6 | RuleSet::Mlp3 | RuleSet::Tcp3 => BetKind::Progressive,
            RuleSet::Ssp4 => BetKind::JackpotPlayer,
            RuleSet::Cs51 => BetKind::Bonus,
        };
        let (kind, body) = match self.config.limit(side) {
            Some(l) if !b.bets.contains_key(&side) => (
                side,
                EventBody::BetPlaced {
                    box_no: b.box_no,
                    kind: side,
                    stake: stake(side, l.min.0),
                },
            ),
            _ => {
                let ante = b.ante().unwrap_or(0);
                let step = self.config.limit(BetKind::Ante).map_or(100, |l| l.min.0);
                (
                    BetKind::Ante,
                    EventBody::BetChanged {
                        box_no: b.box_no,
                        kind: BetKind::Ante,
                        from: Stake::Chips(Money(ante)),
                        to: Stake::Chips(Money(ante + step)),
                    },
                )
            }
        };
        let seq = self.emit(out, Some(round), Dev::Bets, body, (300, 2_000));
        Some(InjectedFault::LateBet {
            round,
            box_no: b.box_no,
            kind,
            seq,
            code: self.code(FaultKind::LateBet),
        })
    }

    fn announce(&mut self, out: &mut Vec<Published>, round: RoundId, a: Announcement) {
        let body = EventBody::Announced { announcement: a };
        self.emit(out, Some(round), Dev::Dealer, body, (1_000, 4_000));
    }

    /// Appends the next event of the chain: advances the clock by a gap drawn from
    /// `gap_ms` (milliseconds), encodes, links to the previous event's hash.
    fn emit(
        &mut self,
        out: &mut Vec<Published>,
        round: Option<RoundId>,
        dev: Dev,
        body: EventBody,
        gap_ms: (u64, u64),
    ) -> Seq {
        let gap_ns = gap_ns(&mut self.rng, gap_ms);
        self.emit_after(out, round, dev, body, gap_ns)
    }

    /// Appends the next event of the chain `gap_ns` after the previous one.
    fn emit_after(
        &mut self,
        out: &mut Vec<Published>,
        round: Option<RoundId>,
        dev: Dev,
        body: EventBody,
        gap_ns: i64,
    ) -> Seq {
        self.clock_ns += gap_ns;
        self.seq += 1;
        let device = match dev {
            Dev::Dealer => &self.devices.dealer,
            Dev::Dealing => &self.devices.dealing,
            Dev::Bets => &self.devices.bets,
            Dev::Jackpot => &self.devices.jackpot,
            Dev::Cage => &self.devices.cage,
        }
        .clone();
        let event = Event {
            v: WIRE_VERSION,
            table: self.table.clone(),
            device,
            seq: Seq(self.seq),
            prev: self.prev,
            occurred_at_ns: self.clock_ns,
            round,
            body,
        };
        let bytes = codec::encode(&event, self.wire);
        self.prev = event_hash(&self.prev, &bytes);
        if matches!(event.body, EventBody::TableOpened { .. }) {
            self.config_at = Some((Seq(self.seq), self.prev));
        }
        let signature = self.sign(&bytes);
        out.push(Published {
            event,
            bytes,
            signature,
        });
        Seq(self.seq)
    }
}

/// A gap drawn from `gap_ms` (milliseconds), with a sub-millisecond part, in ns.
fn gap_ns(rng: &mut ChaCha8Rng, gap_ms: (u64, u64)) -> i64 {
    let gap = rng.gen_range(gap_ms.0..=gap_ms.1.max(gap_ms.0)) as i64;
    gap * 1_000_000 + rng.gen_range(0..1_000_000)
}

#[derive(Debug, Clone, Copy)]
enum Dev {
    Dealer,
    Dealing,
    Bets,
    Jackpot,
    Cage,
}

fn stake(kind: BetKind, amount: i64) -> Stake {
    if kind.in_credits() {
        Stake::Credits(u32::try_from(amount).unwrap_or(u32::MAX))
    } else {
        Stake::Chips(Money(amount))
    }
}

/// The BET or Play stake a box that plays puts up, by rule set.
fn play_stake(rs: RuleSet, ante: i64) -> (BetKind, i64) {
    match rs {
        RuleSet::Csp6 | RuleSet::Mlp3 | RuleSet::Ssp4 => (BetKind::Bet, 2 * ante),
        RuleSet::Cs51 => (BetKind::Play, 2 * ante),
        RuleSet::Tcp3 => (BetKind::Play, ante),
    }
}

/// The dealer's result: "No hand" when an SSP4 dealer does not qualify (SSP4 §3.12).
fn result_announcement(rs: RuleSet, settlement: &Settlement) -> Announcement {
    if rs == RuleSet::Ssp4 && !settlement.dealer_qualifies {
        return Announcement::NoHand;
    }
    let text = match settlement.dealer_hand {
        Some(h) if settlement.dealer_qualifies => format!("Dealer has {h:?}, qualifies"),
        Some(h) => format!("Dealer has {h:?}, does not qualify"),
        None => "Dealer's hand shown".to_string(),
    };
    Announcement::Result { text }
}

fn invalidated_clause(rs: RuleSet) -> String {
    match rs {
        RuleSet::Ssp4 => "SSP4 5.2".into(),
        RuleSet::Cs51 => "CS51 How To Play".into(),
        _ => format!("{rs} 5.15"),
    }
}

fn rank_counts(cards: &[Card]) -> [u8; 15] {
    let mut counts = [0u8; 15];
    for c in cards {
        counts[c.rank().value() as usize] += 1;
    }
    counts
}

fn is_flush(cards: &[Card]) -> bool {
    !cards.is_empty() && cards.iter().all(|c| c.suit() == cards[0].suit())
}

/// Distinct ranks in sequence, the Ace also low (A-2-3(-4-5)).
fn is_straight(cards: &[Card]) -> bool {
    let counts = rank_counts(cards);
    if cards.is_empty() || counts.iter().any(|&n| n > 1) {
        return false;
    }
    let ranks: Vec<u8> = cards.iter().map(|c| c.rank().value()).collect();
    let (lo, hi) = (ranks.iter().min(), ranks.iter().max());
    let n = cards.len() as u8;
    match (lo, hi) {
        (Some(&lo), Some(&hi)) if hi - lo == n - 1 => true,
        // A-2-3-4-5 / A-2-3: the Ace counts as 1.
        _ => counts[14] == 1 && (2..=n).all(|r| counts[r as usize] == 1),
    }
}

/// Stud strategy: BET with a pair or better, a straight or flush, or Ace-King high.
pub fn stud_plays(cards: &[Card]) -> bool {
    let counts = rank_counts(cards);
    counts.iter().any(|&n| n >= 2)
        || is_flush(cards)
        || is_straight(cards)
        || (counts[14] > 0 && counts[13] > 0)
}

/// 3 Card Poker strategy: Play with Q-6-4 or better.
pub fn tcp3_plays(cards: &[Card]) -> bool {
    let counts = rank_counts(cards);
    if counts.iter().any(|&n| n >= 2) || is_flush(cards) || is_straight(cards) {
        return true;
    }
    let mut ranks: Vec<u8> = cards.iter().map(|c| c.rank().value()).collect();
    ranks.sort_unstable_by(|a, b| b.cmp(a));
    ranks.as_slice() >= [12u8, 6, 4].as_slice()
}
