//! Settlement of one round: one code path for the five rule sets, driven by the
//! `RuleTable` of the round's rule set. Every line cites the clause that decided it.

use crate::eval::{best5of6, eval3, eval5, tcp3_jackpot_class, Hand};
use crate::table::{lookup, rule_table, Qualifier, RuleTable};
use crate::SettleError;
use schemas::settle::{
    BoxInput, BoxSettlement, JackpotPayment, Outcome, RoundInput, Settlement, SettlementLine,
    SettlementNote, VoidHand, MONEY_INPUT_MAX,
};
use schemas::{
    BetKind, BoxNo, Card, Choice, HandClass, Money, PayLine, PayRow, Pays, RuleSet, TableConfig,
};

/// Whether the dealer's hand qualifies (CSP6 §1.14: Ace and King or better; TCP3: Queen
/// high or better). `cards` must be a full hand of the rule set.
pub fn dealer_qualifies(rule_set: RuleSet, cards: &[Card]) -> bool {
    match evaluate(rule_set, cards) {
        Some(h) => qualifies(rule_table(rule_set).qualifier, &h),
        None => false,
    }
}

/// Evaluates a full hand of the rule set (3 cards for TCP3, 5 for the others).
pub fn evaluate(rule_set: RuleSet, cards: &[Card]) -> Option<Hand> {
    match (rule_set.hand_len(), cards) {
        (3, [a, b, c]) => Some(eval3(&[*a, *b, *c])),
        (5, [a, b, c, d, e]) => Some(eval5(&[*a, *b, *c, *d, *e])),
        _ => None,
    }
}

fn qualifies(q: Qualifier, h: &Hand) -> bool {
    match q {
        Qualifier::AceKing => {
            h.class() != HandClass::HighCard || (h.top_rank() == 14 && h.second_rank() == 13)
        }
        Qualifier::QueenHigh => h.class() != HandClass::HighCard || h.top_rank() >= 12,
    }
}

fn err(field: impl Into<String>, message: impl Into<String>) -> SettleError {
    SettleError {
        field: field.into(),
        message: message.into(),
    }
}

/// Bet kinds each rule set takes.
fn kinds_of(rt: &RuleTable) -> Vec<BetKind> {
    let mut k = vec![BetKind::Ante, rt.main_kind];
    k.extend_from_slice(rt.jackpot_kinds);
    if !rt.pair_plus.is_empty() {
        k.push(BetKind::PairPlus);
    }
    if !rt.bonus.is_empty() {
        k.push(BetKind::Bonus);
    }
    k
}

/// Settles one round. Bad input (a field that cannot describe a real round) is an error
/// naming the field; the irregularities of section 5 are settlements, not errors.
pub fn settle(input: &RoundInput) -> Result<Settlement, SettleError> {
    let mut rt = rule_table(input.game);
    if let Some(config) = &input.config {
        if config.rule_set != input.game {
            return Err(err(
                "config.rule_set",
                format!("{} but game is {}", config.rule_set, input.game),
            ));
        }
        rt = rt.with_config(config);
    }
    validate(input, &rt)?;
    let mut boxes: Vec<&BoxInput> = input.boxes.iter().collect();
    boxes.sort_by_key(|b| b.box_no);
    let mut ctx = Ctx::new(input, &rt);

    if input.void {
        let out = boxes
            .iter()
            .map(|b| ctx.returned_box(b, &rt.cite(rt.clauses.void), VOID_ROUND_WHY))
            .collect();
        return Ok(ctx.finish(None, false, out));
    }

    let dealer = evaluate(input.game, &input.dealer);
    // validate() guarantees a full dealer hand when the round is not void.
    let dealer = dealer.ok_or_else(|| err("dealer", "not a full hand"))?;
    let dealer_qualifies = qualifies(rt.qualifier, &dealer);

    let mut out: Vec<BoxSettlement> = Vec::with_capacity(boxes.len());
    // TCP3 §4.7: boxes with an Ante whose hand is one of the top two jackpot hands.
    let mut envy_sources: Vec<(BoxNo, Money)> = Vec::new();
    for b in &boxes {
        let settled = ctx.settle_box(b, &dealer, dealer_qualifies);
        if let Some(amount) = ctx.envy_source(b) {
            envy_sources.push((b.box_no, amount));
        }
        out.push(settled);
    }
    if !envy_sources.is_empty() {
        add_envy_lines(&rt, &envy_sources, &mut out);
    }
    Ok(ctx.finish(Some(dealer.class()), dealer_qualifies, out))
}

/// The credit value of SSP4 jackpot wagers: the round's, else its configuration's, else 0.
fn credit_value_of(input: &RoundInput) -> Money {
    input
        .credit_value
        .or(input
            .config
            .as_ref()
            .and_then(|c| c.jackpot.as_ref())
            .map(|j| j.credit_value))
        .unwrap_or(Money::ZERO)
}

/// What settles nothing: a box with no bet (it does not take part: SSP4 §3.4, elsewhere
/// §3.6), and an SSP4 Lucky Player on an area with no Player jackpot wager (§4.4).
fn notes(rt: &RuleTable, input: &RoundInput) -> Vec<SettlementNote> {
    // Runs once per round of a replay: no allocation when there is nothing to note.
    let take_part = if rt.rule_set == RuleSet::Ssp4 {
        "3.4"
    } else {
        "3.6"
    };
    let mut out: Vec<SettlementNote> = input
        .boxes
        .iter()
        .filter(|b| b.bets.values().all(|v| *v <= 0))
        .map(|b| SettlementNote {
            box_no: Some(b.box_no),
            clause: rt.cite(take_part),
            explanation: format!("box {} has no bet: nothing to settle", b.box_no.0),
        })
        .collect();
    out.sort_by_key(|n| n.box_no);
    let Some(lucky) = input.lucky_box.filter(|_| rt.selection.is_some()) else {
        return out;
    };
    let wager = input
        .boxes
        .iter()
        .find(|b| b.box_no == lucky)
        .map(|b| b.bets.get(&BetKind::JackpotPlayer).copied().unwrap_or(0) > 0);
    let why = match wager {
        Some(true) => return out,
        Some(false) => "has no Player jackpot wager",
        None => "is empty",
    };
    out.push(SettlementNote {
        box_no: Some(lucky),
        clause: rt.cite("4.4"),
        explanation: format!(
            "the Lucky Player is betting area {}, which {why}: the award pays nobody",
            lucky.0
        ),
    });
    out
}

/// TCP3 §4.7: every box with a live jackpot bet wins the Envy Bonus of the other boxes'
/// top jackpot hands. `out` holds the settled boxes in box order.
fn add_envy_lines(rt: &RuleTable, envy_sources: &[(BoxNo, Money)], out: &mut [BoxSettlement]) {
    for settled in out.iter_mut() {
        let has_jackpot_bet = settled
            .lines
            .iter()
            .any(|l| l.line == PayLine::Progressive && l.outcome != Outcome::Returned);
        if !has_jackpot_bet {
            continue;
        }
        let others: Vec<&(BoxNo, Money)> = envy_sources
            .iter()
            .filter(|(w, _)| *w != settled.box_no)
            .collect();
        let envy: Money = others.iter().map(|(_, m)| *m).sum();
        if envy.0 > 0 {
            let from: Vec<String> = others.iter().map(|(w, _)| format!("box {}", w.0)).collect();
            settled.lines.push(SettlementLine {
                line: PayLine::Envy,
                stake: Money::ZERO,
                outcome: Outcome::Win,
                net: envy,
                clause: rt.cite("4.7"),
                explanation: format!(
                    "Envy Bonus {envy} for the top jackpot hand of {}",
                    from.join(", ")
                ),
            });
        }
    }
}

/// Sets of boxes and of cards as bit masks: validation runs once per round of a replay,
/// where ordered sets cost more than the rest of it.
struct BoxSet([u64; 4]);

impl BoxSet {
    /// Adds `b`; false if it was there already.
    fn insert(&mut self, b: BoxNo) -> bool {
        let (word, bit) = (usize::from(b.0 / 64), 1u64 << (b.0 % 64));
        let fresh = self.0[word] & bit == 0;
        self.0[word] |= bit;
        fresh
    }
}

/// Cards by code (0..52, `Card::code`).
struct CardSet(u64);

impl CardSet {
    /// Adds `c`; false if it was there already.
    fn insert(&mut self, c: Card) -> bool {
        let bit = 1u64 << c.code();
        let fresh = self.0 & bit == 0;
        self.0 |= bit;
        fresh
    }
}

/// Refuses a round no table could deal: its boxes and bets, then the dealer's hand and
/// the cards of a round that is not void.
fn validate(input: &RoundInput, rt: &RuleTable) -> Result<(), SettleError> {
    validate_boxes(input, rt)?;
    if input.void {
        return Ok(());
    }
    validate_dealer(input, rt)?;
    validate_cards(input)
}

/// Each box is numbered once, and its bets are non-negative, of the rule set, and in
/// credits only with a positive credit value.
fn validate_boxes(input: &RoundInput, rt: &RuleTable) -> Result<(), SettleError> {
    let allowed = kinds_of(rt);
    let credit_value = credit_value_of(input);
    let mut seen_boxes = BoxSet([0; 4]);
    for (i, b) in input.boxes.iter().enumerate() {
        if b.box_no.0 == 0 || !seen_boxes.insert(b.box_no) {
            return Err(err(
                format!("boxes[{i}].box"),
                format!("box {} is 0 or listed twice", b.box_no.0),
            ));
        }
        for (kind, amount) in &b.bets {
            // Built only for an error: this runs for every bet of every round replayed.
            let field = || format!("boxes[{i}].bets.{}", kind.line().name());
            if *amount < 0 {
                return Err(err(field(), format!("negative stake {amount}")));
            }
            if !allowed.contains(kind) && *amount > 0 {
                return Err(err(
                    field(),
                    format!("{} has no {} bet", input.game, kind.line().name()),
                ));
            }
        }
        let credits = [BetKind::JackpotPlayer, BetKind::JackpotDealer]
            .iter()
            .any(|k| b.bets.get(k).copied().unwrap_or(0) > 0);
        if credits && credit_value.0 <= 0 {
            return Err(err(
                "credit_value",
                "jackpot wagers in credits need a positive credit value",
            ));
        }
    }
    Ok(())
}

/// The dealer has a full hand, and the up card is one of it.
fn validate_dealer(input: &RoundInput, rt: &RuleTable) -> Result<(), SettleError> {
    if input.dealer.len() != rt.hand_len {
        return Err(err(
            "dealer",
            format!(
                "{} deals the dealer {} cards, got {} (a wrong count voids the round: set \"void\")",
                input.game,
                rt.hand_len,
                input.dealer.len()
            ),
        ));
    }
    if let Some(up) = input.dealer_up {
        if !input.dealer.contains(&up) {
            return Err(err(
                "dealer_up",
                format!("{up} is not one of the dealer's cards"),
            ));
        }
    }
    Ok(())
}

/// No card appears twice in the round, the dealer's first, then the boxes' in order.
fn validate_cards(input: &RoundInput) -> Result<(), SettleError> {
    let mut seen = CardSet(0);
    for (j, c) in input.dealer.iter().enumerate() {
        if !seen.insert(*c) {
            return Err(err(
                format!("dealer[{j}]"),
                format!("card {c} appears twice"),
            ));
        }
    }
    for (i, b) in input.boxes.iter().enumerate() {
        for (j, c) in b.cards.iter().enumerate() {
            if !seen.insert(*c) {
                return Err(err(
                    format!("boxes[{i}].cards[{j}]"),
                    format!("card {c} appears twice in the round"),
                ));
            }
        }
    }
    Ok(())
}

const INVALIDATED_WHY: &str = "the hand is invalidated: its bets are returned";
const VOID_ROUND_WHY: &str = "the round is void: every bet is returned";

fn wrong_card_count_why(rt: &RuleTable, b: &BoxInput) -> String {
    format!(
        "{} cards dealt to the box instead of {}: the hand is invalidated and its bets returned",
        b.cards.len(),
        rt.hand_len
    )
}

/// The boxes whose hands `settle` voids, in box order, with the clause and explanation
/// their returned lines carry: a void round (§5.22), an `invalidated` hand, or a hand of
/// the wrong card count (CSP6 §5.15). The settlement itself only shows returned lines.
pub fn void_hands(input: &RoundInput) -> Vec<VoidHand> {
    let rt = rule_table(input.game);
    let mut boxes: Vec<&BoxInput> = input.boxes.iter().collect();
    boxes.sort_by_key(|b| b.box_no);
    let void = |b: &BoxInput, clause: String, explanation: String| VoidHand {
        box_no: b.box_no,
        clause,
        explanation,
    };
    boxes
        .into_iter()
        .filter_map(|b| {
            if input.void {
                Some(void(b, rt.cite(rt.clauses.void), VOID_ROUND_WHY.into()))
            } else if let Some(clause) = &b.invalidated {
                Some(void(b, clause.clone(), INVALIDATED_WHY.into()))
            } else if b.cards.len() != rt.hand_len {
                let clause = rt.cite(rt.clauses.wrong_card_count);
                Some(void(b, clause, wrong_card_count_why(&rt, b)))
            } else {
                None
            }
        })
        .collect()
}

/// The pay calculator's bounds on its input, beyond what `settle` needs: every amount at
/// most `MONEY_INPUT_MAX` (credits times the credit value too), no negative pool, reset or
/// credit value, and a `lucky_box` that is one of the table's betting areas (with a
/// configuration; any box number from 1 without one). The replayer does not
/// apply them: a recorded round is settled as recorded and its oddities become disputes.
pub fn check_bounds(input: &RoundInput) -> Result<(), SettleError> {
    let credit_value = credit_value_of(input);
    check_amount("pool", input.pool.0)?;
    check_amount("reset", input.reset.0)?;
    if let Some(v) = input.credit_value {
        check_amount("credit_value", v.0)?;
    }
    if let Some(config) = &input.config {
        check_config(config)?;
    }
    for (i, b) in input.boxes.iter().enumerate() {
        for (kind, units) in &b.bets {
            let field = || format!("boxes[{i}].bets.{}", kind.line().name());
            check_amount_with(field, *units)?;
            if kind.in_credits() {
                let money = i128::from(*units) * i128::from(credit_value.0);
                if money > i128::from(MONEY_INPUT_MAX) {
                    let why = format!(
                        "{units} credits at {credit_value} is {money} minor units, over the \
                         input maximum {MONEY_INPUT_MAX}"
                    );
                    return Err(err(field(), why));
                }
            }
        }
    }
    // SSP4 §4.4: the system selects a betting area, occupied or not; an empty one pays
    // nobody (a note says so). Only an area the table does not have is refused.
    if let Some(lucky) = input.lucky_box {
        if rule_table(input.game).selection.is_none() {
            return Err(err(
                "lucky_box",
                format!("{} has no Lucky Player", input.game),
            ));
        }
        let areas = input.config.as_ref().map_or(u8::MAX, |c| c.boxes);
        if lucky.0 == 0 || lucky.0 > areas {
            let why = format!(
                "betting area {} is not one of the table's 1..={areas}",
                lucky.0
            );
            return Err(err("lucky_box", why));
        }
    }
    Ok(())
}

fn check_config(config: &TableConfig) -> Result<(), SettleError> {
    for (i, l) in config.limits.iter().enumerate() {
        check_amount_with(|| format!("config.limits[{i}].min"), l.min.0)?;
        check_amount_with(|| format!("config.limits[{i}].max"), l.max.0)?;
    }
    if let Some(cap) = config.bet_win_cap {
        check_amount("config.bet_win_cap", cap.0)?;
    }
    if let Some(j) = &config.jackpot {
        check_amount("config.jackpot.reset", j.reset.0)?;
        check_amount("config.jackpot.credit_value", j.credit_value.0)?;
    }
    Ok(())
}

fn check_amount(field: &str, amount: i64) -> Result<(), SettleError> {
    check_amount_with(|| field.to_string(), amount)
}

/// Refuses a negative amount or one over `MONEY_INPUT_MAX`; `field` is built only then.
fn check_amount_with(field: impl Fn() -> String, amount: i64) -> Result<(), SettleError> {
    if amount < 0 {
        return Err(err(field(), format!("negative amount {amount}")));
    }
    if amount > MONEY_INPUT_MAX {
        let why = format!("{amount} minor units is over the input maximum {MONEY_INPUT_MAX}");
        return Err(err(field(), why));
    }
    Ok(())
}

struct Ctx<'a> {
    rt: &'a RuleTable,
    config: Option<&'a TableConfig>,
    credit_value: Money,
    reset: Money,
    pool: Money,
    payments: Vec<JackpotPayment>,
    input: &'a RoundInput,
}

/// One award on a jackpot wager.
struct Award {
    pays: Pays,
    clause: String,
    what: String,
    hand: Option<HandClass>,
}

/// What the pay lines of one box share: the box, its hand, the dealer's hand, its Ante
/// and whether the player folded.
struct BoxCtx<'b> {
    b: &'b BoxInput,
    hand: Hand,
    dealer: &'b Hand,
    dealer_qualifies: bool,
    /// The Ante settled, and what was placed when over the table's maximum (§5.1.1).
    ante: Money,
    ante_placed: Option<Money>,
    /// The clause of the player's fold, walk away or refusal; empty for a play.
    fold_clause: &'static str,
    folded: bool,
    /// Why a fold recorded on a box without an Ante does not apply, or empty.
    fold_ignored: String,
    /// The clause citation of a stake over the table's maximum.
    over_max: String,
}

impl BoxCtx<'_> {
    fn has_ante(&self) -> bool {
        self.ante.0 > 0
    }

    /// The note a line carries when its stake was over the table's maximum (§5.1.1).
    fn excess_note(&self, placed: Option<Money>, settled: Money) -> String {
        match placed {
            Some(p) => format!(
                " ({} over the table maximum returned, {})",
                p - settled,
                self.over_max
            ),
            None => String::new(),
        }
    }
}

/// The BET/Play a played hand settles on, against the required multiple of the Ante.
struct MainStake {
    stake: Money,
    /// Why the settled stake differs from the one placed, or empty.
    note: String,
    /// The clause of a stake over or under the required multiple.
    clause: Option<&'static str>,
}

/// One jackpot bet of a box, on the hand it is judged by.
struct Wager {
    kind: BetKind,
    stake: Money,
    /// The excess note of a stake over the table's maximum, or empty.
    note: String,
    class: HandClass,
    /// "player's" or "dealer's": whose hand the bet is on.
    whose: &'static str,
}

fn line(
    line: PayLine,
    stake: Money,
    outcome: Outcome,
    net: Money,
    clause: String,
    explanation: String,
) -> SettlementLine {
    // Our own invariant: the outcome and the net agree.
    match outcome {
        Outcome::Returned | Outcome::StandOff => assert_eq!(net, Money::ZERO, "{explanation}"),
        Outcome::Lose => assert!(net.0 <= 0, "{explanation}"),
        Outcome::Win => {}
    }
    SettlementLine {
        line,
        stake,
        outcome,
        net,
        clause,
        explanation,
    }
}

fn multiply(stake: Money, x: u32) -> Money {
    Money(stake.0.saturating_mul(i64::from(x)))
}

impl<'a> Ctx<'a> {
    /// A round's settlement context: the credit value and the reset of its jackpot pool
    /// come from the round, else from its configuration.
    fn new(input: &'a RoundInput, rt: &'a RuleTable) -> Ctx<'a> {
        let jackpot_config = input.config.as_ref().and_then(|c| c.jackpot.as_ref());
        let reset = if input.reset.0 > 0 {
            input.reset
        } else {
            jackpot_config.map(|j| j.reset).unwrap_or(Money::ZERO)
        };
        Ctx {
            rt,
            config: input.config.as_ref(),
            credit_value: credit_value_of(input),
            reset,
            pool: input.pool,
            payments: Vec::new(),
            input,
        }
    }
}

impl Ctx<'_> {
    fn finish(
        self,
        dealer_hand: Option<HandClass>,
        dealer_qualifies: bool,
        boxes: Vec<BoxSettlement>,
    ) -> Settlement {
        let settlement = Settlement {
            game: self.input.game,
            dealer_hand,
            dealer_qualifies,
            boxes,
            jackpot_payments: self.payments,
            pool_before: self.input.pool,
            pool_after: self.pool,
            notes: notes(self.rt, self.input),
        };
        assert_conserves_money(&settlement);
        settlement
    }

    fn cite(&self, clause: &str) -> String {
        self.rt.cite(clause)
    }

    /// The stake of a bet in money (credits times the credit value for SSP4 wagers), and
    /// what §5.1.1 settles it at when it exceeds the table's maximum.
    fn stake(&self, b: &BoxInput, kind: BetKind) -> (Money, Option<Money>) {
        let raw = b.bets.get(&kind).copied().unwrap_or(0);
        let capped_units = match self.config.and_then(|c| c.limit(kind)) {
            Some(l) if l.max.0 > 0 && raw > l.max.0 => Some(l.max.0),
            _ => None,
        };
        let to_money = |units: i64| {
            if kind.in_credits() {
                Money(units.saturating_mul(self.credit_value.0))
            } else {
                Money(units)
            }
        };
        let placed = to_money(raw);
        match capped_units {
            Some(max) => (to_money(max), Some(placed)),
            None => (placed, None),
        }
    }

    fn returned_box(&self, b: &BoxInput, clause: &str, why: &str) -> BoxSettlement {
        let lines = b
            .bets
            .keys()
            .filter_map(|k| {
                let (stake, placed) = self.stake(b, *k);
                let stake = placed.unwrap_or(stake);
                (stake.0 > 0).then(|| {
                    line(
                        k.line(),
                        stake,
                        Outcome::Returned,
                        Money::ZERO,
                        clause.to_string(),
                        why.to_string(),
                    )
                })
            })
            .collect();
        BoxSettlement {
            box_no: b.box_no,
            hand: None,
            lines,
        }
    }

    fn envy_source(&self, b: &BoxInput) -> Option<Money> {
        if self.rt.rule_set != RuleSet::Tcp3 || b.invalidated.is_some() || b.cards.len() != 3 {
            return None;
        }
        if self.stake(b, BetKind::Ante).0 .0 <= 0 {
            return None; // §4.8: a Pair-Plus-only box gives no Envy Bonus.
        }
        let class = tcp3_jackpot_class(&[b.cards[0], b.cards[1], b.cards[2]]);
        lookup(&self.rt.jackpot, class).and_then(|r| r.envy)
    }

    fn settle_box(&mut self, b: &BoxInput, dealer: &Hand, dealer_qualifies: bool) -> BoxSettlement {
        let c = self.rt.clauses;
        if let Some(clause) = &b.invalidated {
            return self.returned_box(b, clause, INVALIDATED_WHY);
        }
        let Some(hand) = evaluate(self.rt.rule_set, &b.cards) else {
            let why = wrong_card_count_why(self.rt, b);
            return self.returned_box(b, &self.cite(c.wrong_card_count), &why);
        };
        let bx = self.box_ctx(b, hand, dealer, dealer_qualifies);
        let mut lines = Vec::new();
        self.ante_and_main_lines(&bx, &mut lines);
        self.pair_plus_line(&bx, &mut lines);
        self.bonus_line(&bx, &mut lines);
        for kind in self.rt.jackpot_kinds {
            self.jackpot_lines(&bx, *kind, &mut lines);
        }
        BoxSettlement {
            box_no: b.box_no,
            hand: Some(hand.class()),
            lines,
        }
    }

    /// The box's Ante and what the player decided, shared by its pay lines.
    fn box_ctx<'b>(
        &self,
        b: &'b BoxInput,
        hand: Hand,
        dealer: &'b Hand,
        dealer_qualifies: bool,
    ) -> BoxCtx<'b> {
        let c = self.rt.clauses;
        let (ante, ante_placed) = self.stake(b, BetKind::Ante);
        let has_ante = ante.0 > 0;
        let (fold_clause, decided_fold) = match b.decision {
            Some(Choice::Play) => ("", false),
            Some(Choice::Fold) => (c.fold, true),
            Some(Choice::WalkAway) => (c.walk_away, true),
            Some(Choice::RefuseToReveal) => (c.refuse_to_reveal, true),
            // An Ante with no decision: the player walked away with it pending (§5.5).
            None => (c.walk_away, has_ante),
        };
        // Only a player with an Ante decides (§3.12). TCP3 §3.14: the dealer reveals a
        // Pair Plus only box, so a fold recorded on it does not apply (RN17).
        let fold_ignored = match decided_fold && !has_ante {
            true => format!(
                " (no Ante: the recorded fold does not apply, {})",
                self.cite("3.14")
            ),
            false => String::new(),
        };
        BoxCtx {
            b,
            hand,
            dealer,
            dealer_qualifies,
            ante,
            ante_placed,
            fold_clause,
            folded: decided_fold && has_ante,
            fold_ignored,
            over_max: self.cite(c.over_max),
        }
    }

    // ---- Ante and BET/Play

    /// The Ante and BET/Play lines: a fold, a played hand, or a BET/Play without an Ante.
    fn ante_and_main_lines(&self, bx: &BoxCtx, lines: &mut Vec<SettlementLine>) {
        let main_line = self.rt.main_line();
        let (main_placed, _) = self.stake(bx.b, self.rt.main_kind);
        if !bx.has_ante() {
            if main_placed.0 > 0 {
                lines.push(line(
                    main_line,
                    main_placed,
                    Outcome::Returned,
                    Money::ZERO,
                    self.cite("3.6"),
                    "no Ante on the box: the BET/Play is returned".into(),
                ));
            }
            return;
        }
        if bx.folded {
            self.folded_lines(bx, main_placed, lines);
            return;
        }
        let main = self.main_stake(bx, main_placed);
        if !bx.dealer_qualifies {
            self.not_qualifying_lines(bx, &main, lines);
        } else {
            match bx.hand.cmp(bx.dealer) {
                std::cmp::Ordering::Greater => self.player_wins_lines(bx, &main, lines),
                std::cmp::Ordering::Less => self.player_loses_lines(bx, &main, lines),
                std::cmp::Ordering::Equal => self.stand_off_lines(bx, &main, lines),
            }
        }
        self.ante_bonus_line(bx, lines);
    }

    /// A fold loses the Ante and returns the BET/Play.
    fn folded_lines(&self, bx: &BoxCtx, main_placed: Money, lines: &mut Vec<SettlementLine>) {
        let note = bx.excess_note(bx.ante_placed, bx.ante);
        lines.push(line(
            PayLine::Ante,
            bx.ante,
            Outcome::Lose,
            -bx.ante,
            self.cite(bx.fold_clause),
            format!("fold: the Ante is lost{note}"),
        ));
        if main_placed.0 > 0 {
            lines.push(line(
                self.rt.main_line(),
                main_placed,
                Outcome::Returned,
                Money::ZERO,
                self.cite(bx.fold_clause),
                "a folded hand has no BET/Play: returned".into(),
            ));
        }
    }

    /// The BET/Play settled against the required multiple of the Ante (§5.3).
    fn main_stake(&self, bx: &BoxCtx, main_placed: Money) -> MainStake {
        let c = self.rt.clauses;
        let required = Money(bx.ante.0.saturating_mul(self.rt.main_multiple));
        if main_placed > required {
            MainStake {
                stake: required,
                note: format!(
                    " (settled on {required}; {} excess returned)",
                    main_placed - required
                ),
                clause: Some(c.multiple_over),
            }
        } else if main_placed < required {
            MainStake {
                stake: main_placed,
                note: format!(" (less than the required {required}: settled as placed)"),
                clause: Some(c.multiple_under),
            }
        } else {
            MainStake {
                stake: main_placed,
                note: String::new(),
                clause: None,
            }
        }
    }

    /// The BET/Play clause `base`, with the clause of a stake off the required multiple.
    fn cite_main(&self, main: &MainStake, base: &str) -> String {
        match main.clause {
            Some(m) => format!("{}, {m}", self.cite(base)),
            None => self.cite(base),
        }
    }

    /// The dealer does not qualify: the Ante wins 1 to 1, the BET/Play is returned.
    fn not_qualifying_lines(&self, bx: &BoxCtx, main: &MainStake, lines: &mut Vec<SettlementLine>) {
        let c = self.rt.clauses;
        let main_line = self.rt.main_line();
        let note = bx.excess_note(bx.ante_placed, bx.ante);
        lines.push(line(
            PayLine::Ante,
            bx.ante,
            Outcome::Win,
            bx.ante,
            self.cite(c.not_qualifying),
            format!("dealer does not qualify: Ante wins 1 to 1{note}"),
        ));
        lines.push(line(
            main_line,
            main.stake,
            Outcome::Returned,
            Money::ZERO,
            self.cite_main(main, c.not_qualifying),
            format!(
                "dealer does not qualify: {} returned{}",
                main_line.name(),
                main.note
            ),
        ));
    }

    /// The player beats a qualifying dealer: the Ante wins 1 to 1, the BET/Play by the pay
    /// table, capped per box.
    fn player_wins_lines(&self, bx: &BoxCtx, main: &MainStake, lines: &mut Vec<SettlementLine>) {
        let (rt, c) = (self.rt, self.rt.clauses);
        let main_line = rt.main_line();
        let note = bx.excess_note(bx.ante_placed, bx.ante);
        lines.push(line(
            PayLine::Ante,
            bx.ante,
            Outcome::Win,
            bx.ante,
            self.cite(c.player_wins),
            format!("player beats the dealer: Ante wins 1 to 1{note}"),
        ));
        let row = lookup(&rt.main, bx.hand.class());
        let mut win = row
            .map(|r| award_win(r.pays, main.stake))
            .unwrap_or(Money::ZERO);
        let mut how = row
            .map(|r| pays_text(r.pays))
            .unwrap_or_else(|| "nothing".into());
        let mut clause = format!("{}, {}", self.cite_main(main, c.player_wins), c.main_pays);
        if let Some(cap) = rt.bet_win_cap {
            if win > cap {
                how = format!("{how}, capped at {cap} per box");
                clause = format!("{clause}, {}", c.cap);
                win = cap;
            }
        }
        let outcome = if win.0 > 0 {
            Outcome::Win
        } else {
            Outcome::StandOff
        };
        lines.push(line(
            main_line,
            main.stake,
            outcome,
            win,
            clause,
            format!(
                "{} wins {how} on the {}{}",
                bx.hand.class().words(),
                main_line.name(),
                main.note
            ),
        ));
    }

    /// A qualifying dealer beats the player: the Ante and the BET/Play are lost.
    fn player_loses_lines(&self, bx: &BoxCtx, main: &MainStake, lines: &mut Vec<SettlementLine>) {
        let c = self.rt.clauses;
        let main_line = self.rt.main_line();
        let note = bx.excess_note(bx.ante_placed, bx.ante);
        lines.push(line(
            PayLine::Ante,
            bx.ante,
            Outcome::Lose,
            -bx.ante,
            self.cite(c.player_loses),
            format!(
                "the dealer's hand ({}) beats the player's ({}): Ante lost{note}",
                bx.dealer.class().words(),
                bx.hand.class().words()
            ),
        ));
        lines.push(line(
            main_line,
            main.stake,
            Outcome::Lose,
            -main.stake,
            self.cite_main(main, c.player_loses),
            format!(
                "dealer's hand is higher: {} lost{}",
                main_line.name(),
                main.note
            ),
        ));
    }

    /// Equal hands card for card: the Ante and the BET/Play stand off.
    fn stand_off_lines(&self, bx: &BoxCtx, main: &MainStake, lines: &mut Vec<SettlementLine>) {
        let c = self.rt.clauses;
        let main_line = self.rt.main_line();
        let note = bx.excess_note(bx.ante_placed, bx.ante);
        lines.push(line(
            PayLine::Ante,
            bx.ante,
            Outcome::StandOff,
            Money::ZERO,
            self.cite(c.stand_off),
            format!("same ranks card for card: stand off, Ante returned{note}"),
        ));
        lines.push(line(
            main_line,
            main.stake,
            Outcome::StandOff,
            Money::ZERO,
            self.cite_main(main, c.stand_off),
            format!("stand off: {} returned{}", main_line.name(), main.note),
        ));
    }

    /// TCP3 §3.16, §4.3: Ante Bonus on a played hand, whatever the dealer holds.
    fn ante_bonus_line(&self, bx: &BoxCtx, lines: &mut Vec<SettlementLine>) {
        if let Some(row) = lookup(&self.rt.ante_bonus, bx.hand.class()) {
            let win = award_win(row.pays, bx.ante);
            lines.push(line(
                PayLine::AnteBonus,
                Money::ZERO,
                Outcome::Win,
                win,
                self.cite("3.16, 4.3"),
                format!(
                    "Ante Bonus: {} pays {} on the Ante",
                    bx.hand.class().words(),
                    pays_text(row.pays)
                ),
            ));
        }
    }

    // ---- Side bets

    /// TCP3 Pair Plus (§3.12.1, §3.14, §3.16, §4.2).
    fn pair_plus_line(&self, bx: &BoxCtx, lines: &mut Vec<SettlementLine>) {
        let (pp, pp_placed) = self.stake(bx.b, BetKind::PairPlus);
        if pp.0 <= 0 {
            return;
        }
        let class = bx.hand.class();
        let note = bx.excess_note(pp_placed, pp) + &bx.fold_ignored;
        if bx.folded && self.rt.fold_loses_pair_plus {
            lines.push(line(
                PayLine::PairPlus,
                pp,
                Outcome::Lose,
                -pp,
                self.cite(self.rt.clauses.fold),
                format!("fold: the Pair Plus is lost{note}"),
            ));
        } else if let Some(row) = lookup(&self.rt.pair_plus, class) {
            lines.push(line(
                PayLine::PairPlus,
                pp,
                Outcome::Win,
                award_win(row.pays, pp),
                self.cite("3.16, 4.2"),
                format!(
                    "Pair Plus: {} pays {}{note}",
                    class.words(),
                    pays_text(row.pays)
                ),
            ));
        } else {
            lines.push(line(
                PayLine::PairPlus,
                pp,
                Outcome::Lose,
                -pp,
                self.cite("3.16, 4.2"),
                format!("Pair Plus: {} does not pay{note}", class.words()),
            ));
        }
    }

    /// CS51 5+1 Bonus: the player's five and the house's up card, whatever the player
    /// decides and whether or not the house qualifies (RULES-NOTES 13, 14).
    fn bonus_line(&self, bx: &BoxCtx, lines: &mut Vec<SettlementLine>) {
        let (bonus, bonus_placed) = self.stake(bx.b, BetKind::Bonus);
        if bonus.0 <= 0 {
            return;
        }
        let note = bx.excess_note(bonus_placed, bonus);
        if !bx.has_ante() {
            lines.push(line(
                PayLine::Bonus,
                bonus,
                Outcome::Returned,
                Money::ZERO,
                self.cite(self.rt.clauses.jackpot_without_ante),
                "5+1 Bonus without an Ante: returned".into(),
            ));
            return;
        }
        let dealer = &self.input.dealer;
        let up = self.input.dealer_up.unwrap_or(dealer[dealer.len() - 1]);
        let cards = &bx.b.cards;
        let six = [cards[0], cards[1], cards[2], cards[3], cards[4], up];
        let best = best5of6(&six).class();
        let clause = self.cite("5+1 Bonus; RULES-NOTES 13-14");
        lines.push(match lookup(&self.rt.bonus, best) {
            Some(row) => line(
                PayLine::Bonus,
                bonus,
                Outcome::Win,
                award_win(row.pays, bonus),
                clause,
                format!(
                    "5+1 Bonus with the up card {up}: {best:?} pays {}{note}",
                    pays_text(row.pays)
                ),
            ),
            None => line(
                PayLine::Bonus,
                bonus,
                Outcome::Lose,
                -bonus,
                clause,
                format!("5+1 Bonus with the up card {up}: {best:?} does not pay{note}"),
            ),
        });
    }

    // ---- Progressive jackpot bets and SSP4 jackpot wagers

    /// The lines of one jackpot bet: returned without an Ante, lost, or one per award.
    fn jackpot_lines(&mut self, bx: &BoxCtx, kind: BetKind, lines: &mut Vec<SettlementLine>) {
        let (rt, c) = (self.rt, self.rt.clauses);
        let (stake, placed) = self.stake(bx.b, kind);
        if stake.0 <= 0 {
            return;
        }
        if !bx.has_ante() {
            lines.push(line(
                kind.line(),
                stake,
                Outcome::Returned,
                Money::ZERO,
                self.cite(c.jackpot_without_ante),
                "jackpot bet without an Ante: returned".into(),
            ));
            return;
        }
        let eligible = !bx.folded || rt.fold_keeps_jackpot;
        let (class, whose) = match kind {
            BetKind::JackpotDealer => (bx.dealer.class(), "dealer's"),
            _ if rt.rule_set == RuleSet::Tcp3 => {
                let cards = &bx.b.cards;
                (
                    tcp3_jackpot_class(&[cards[0], cards[1], cards[2]]),
                    "player's",
                )
            }
            _ => (bx.hand.class(), "player's"),
        };
        let wager = Wager {
            kind,
            stake,
            note: bx.excess_note(placed, stake),
            class,
            whose,
        };
        let awards = match eligible {
            true => self.jackpot_awards(bx, &wager),
            false => Vec::new(),
        };
        if awards.is_empty() {
            lines.push(self.jackpot_lost_line(&wager, eligible));
        } else {
            self.pay_awards(bx.b, &wager, &awards, lines);
        }
    }

    /// An eligible hand's awards: its pay-table row, then the Magic Card and the Lucky
    /// Player or Lucky Dealer of a rule set with a selection.
    fn jackpot_awards(&self, bx: &BoxCtx, wager: &Wager) -> Vec<Award> {
        let mut awards: Vec<Award> = Vec::new();
        if let Some(row) = lookup(&self.rt.jackpot, wager.class) {
            awards.push(Award {
                pays: row.pays,
                clause: self.cite(self.rt.clauses.jackpot_pays),
                what: format!("{} hand, {}", wager.whose, wager.class.words()),
                hand: Some(wager.class),
            });
        }
        let Some(sel) = self.rt.selection else {
            return awards;
        };
        let magic = self.input.magic_card;
        let dealer_wager = wager.kind == BetKind::JackpotDealer;
        let (magic_hit, lucky, magic_clause, lucky_clause, who) = match dealer_wager {
            true => (
                magic.is_some_and(|m| self.input.dealer.contains(&m)),
                self.input.lucky_dealer,
                "4.3.1, 4.5",
                "4.4.1, 4.5",
                "Lucky Dealer",
            ),
            false => (
                magic.is_some_and(|m| bx.b.cards.contains(&m)),
                self.input.lucky_box == Some(bx.b.box_no),
                "4.3, 4.5",
                "4.4, 4.5",
                "Lucky Player",
            ),
        };
        if magic_hit {
            awards.push(Award {
                pays: sel,
                clause: self.cite(magic_clause),
                what: format!(
                    "Magic Card {} in the {} hand",
                    magic.map(|m| m.to_string()).unwrap_or_default(),
                    wager.whose
                ),
                hand: None,
            });
        }
        if lucky {
            awards.push(Award {
                pays: sel,
                clause: self.cite(lucky_clause),
                what: who.into(),
                hand: None,
            });
        }
        awards
    }

    /// A jackpot bet with no award: a folded hand's stake is lost, an eligible one's is a
    /// contribution.
    fn jackpot_lost_line(&self, wager: &Wager, eligible: bool) -> SettlementLine {
        let c = self.rt.clauses;
        let (clause, why) = if !eligible {
            (
                self.cite(c.fold_jackpot),
                "a folded hand is not eligible for the jackpot: stake lost".to_string(),
            )
        } else {
            (
                self.cite(c.jackpot_pays),
                format!(
                    "{} {} wins no jackpot: the stake is a contribution",
                    wager.whose,
                    wager.class.words()
                ),
            )
        };
        line(
            wager.kind.line(),
            wager.stake,
            Outcome::Lose,
            -wager.stake,
            clause,
            format!("{why}{}", wager.note),
        )
    }

    /// One line per award; the first carries the stake. The stake comes back with an
    /// "X to 1" / "X for 1" award and stays in the pool otherwise (RULES-NOTES 2).
    fn pay_awards(
        &mut self,
        b: &BoxInput,
        wager: &Wager,
        awards: &[Award],
        lines: &mut Vec<SettlementLine>,
    ) {
        let returns_stake = awards
            .iter()
            .find(|a| matches!(a.pays, Pays::ToOne(_) | Pays::ForOne(_)));
        let stake_returned = returns_stake.is_some();
        let back_with = returns_stake.map_or(String::new(), |a| {
            format!(
                "; nothing from the pool: the stake comes back with the {} award",
                a.what
            )
        });
        for (i, a) in awards.iter().enumerate() {
            let win = match a.pays {
                Pays::PoolBasisPoints(bp) => self.pay_from_pool(b, a, wager.class, bp),
                other => award_win(other, wager.stake),
            };
            let keeps_stake = i == 0 && !stake_returned;
            let net = if keeps_stake { win - wager.stake } else { win };
            let outcome = award_outcome(win, net);
            let kept = match (keeps_stake, i == 0 && win.0 == 0) {
                (true, _) => "; the stake is a contribution",
                (false, true) => back_with.as_str(),
                (false, false) => "",
            };
            lines.push(SettlementLine {
                line: wager.kind.line(),
                stake: if i == 0 { wager.stake } else { Money::ZERO },
                outcome,
                net,
                clause: a.clause.clone(),
                explanation: format!(
                    "{}: pays {} ({win}){kept}{}",
                    a.what,
                    pays_text(a.pays),
                    wager.note
                ),
            });
        }
    }

    /// Pays a percentage of the pool and records the payment; a 100% win resets the pool.
    fn pay_from_pool(&mut self, b: &BoxInput, a: &Award, class: HandClass, bp: u32) -> Money {
        let before = self.pool;
        // A configured share over 100% still pays at most the whole pool.
        let amount = Money(before.0.max(0)).basis_points(bp.min(10_000));
        self.pool = if bp >= 10_000 {
            self.reset
        } else {
            before - amount
        };
        self.payments.push(JackpotPayment {
            box_no: b.box_no,
            hand: a.hand.unwrap_or(class),
            amount,
            pool_before: before,
            pool_after: self.pool,
            clause: format!(
                "{}, {}",
                a.clause,
                self.cite(self.rt.clauses.several_major_winners)
            ),
        });
        amount
    }
}

/// The outcome of one award line (rules/RULES.md, reading 14). An award that pays
/// something is a win, even a fixed one below the stake it keeps (net < 0). A pool award
/// that pays 0.00 (RULES-NOTES 3: an empty or small pool rounds down to nothing) is a loss
/// when the pool keeps the stake, and a stand off when another award of the same wager
/// returns the stake (SSP4 §1.1.7: it neither wins nor loses).
fn award_outcome(win: Money, net: Money) -> Outcome {
    if win.0 > 0 {
        Outcome::Win
    } else if net.0 == 0 {
        Outcome::StandOff
    } else {
        Outcome::Lose
    }
}

/// What a pay-table row wins on a stake, beyond the stake itself (fixed amounts and pool
/// percentages are computed by the caller).
fn award_win(pays: Pays, stake: Money) -> Money {
    match pays {
        Pays::ToOne(x) => multiply(stake, x),
        Pays::ForOne(x) => multiply(stake, x.saturating_sub(1)),
        Pays::Fixed(m) => m,
        Pays::PoolBasisPoints(_) => Money::ZERO,
    }
}

fn pays_text(p: Pays) -> String {
    match p {
        Pays::ToOne(x) => format!("{x} to 1"),
        Pays::ForOne(x) => format!("{x} for 1"),
        Pays::Fixed(m) => format!("a fixed {m}"),
        Pays::PoolBasisPoints(bp) => format!("{}.{:02}% of the jackpot", bp / 100, bp % 100),
    }
}

/// The pay table row a hand would use, for callers that show pay tables.
pub fn main_row(rule_set: RuleSet, class: HandClass) -> Option<PayRow> {
    lookup(&rule_table(rule_set).main, class).cloned()
}

/// Amounts beyond this are more than any table holds; arithmetic on them saturates at
/// i64's bounds, so their settlement is not exact and is not asserted (hostile input).
const EXACT_AMOUNT_MAX: i64 = i64::MAX / 1024;

fn within_exact_range(l: &schemas::settle::SettlementLine) -> bool {
    l.stake.0.unsigned_abs() <= EXACT_AMOUNT_MAX as u64
        && l.net.0.unsigned_abs() <= EXACT_AMOUNT_MAX as u64
}

/// Postcondition of every settlement (rules/RULES.md, reading 14): money is conserved
/// line by line. What the player gets back (stake + net) is never negative; a lost line
/// gives up exactly its stake; a stand off or a return moves nothing (a pool award of
/// 0.00 whose stake another award returns is a stand off); a win gives back something.
/// Jackpot payments come out of the pool one after another: each starts where the one
/// before ended, takes at most what the pool holds, and leaves the rest or the reset
/// after a 100% win. A few integer comparisons a line: left on in release.
fn assert_conserves_money(s: &Settlement) {
    for b in &s.boxes {
        for l in b.lines.iter().filter(|l| within_exact_range(l)) {
            // In i128: amounts saturate at i64's bounds, their sum must not overflow here.
            let back = i128::from(l.stake.0) + i128::from(l.net.0);
            assert!(
                l.stake.0 >= 0,
                "box {:?} {:?}: negative stake {}",
                b.box_no,
                l.line,
                l.stake
            );
            assert!(
                back >= 0,
                "box {:?} {:?}: stake {} net {}: the player gets back less than nothing",
                b.box_no,
                l.line,
                l.stake,
                l.net
            );
            let kept = match l.outcome {
                Outcome::Lose => l.net.0 == -l.stake.0,
                Outcome::StandOff | Outcome::Returned => l.net.0 == 0,
                // Net > 0, or a fixed jackpot award below the stake the pool keeps.
                Outcome::Win => back > 0,
            };
            assert!(
                kept,
                "box {:?} {:?}: {:?} with stake {} and net {}",
                b.box_no, l.line, l.outcome, l.stake, l.net
            );
        }
    }
    let mut pool = s.pool_before;
    for p in &s.jackpot_payments {
        assert!(
            p.amount.0 >= 0,
            "box {:?}: negative jackpot payment {}",
            p.box_no,
            p.amount
        );
        assert_eq!(
            p.pool_before, pool,
            "box {:?}: a payment starts where the last ended",
            p.box_no
        );
        assert_pool_payment(p);
        pool = p.pool_after;
    }
    assert_eq!(
        pool, s.pool_after,
        "the pool ends where the last payment left it"
    );
}

/// One payment from the pool: at most what it holds; the pool keeps the rest, or
/// restarts at its reset after a payment of the whole pool (RULES-NOTES 3, 8).
fn assert_pool_payment(p: &JackpotPayment) {
    let held = i128::from(p.pool_before.0.max(0));
    let (amount, after) = (i128::from(p.amount.0), i128::from(p.pool_after.0));
    let before = i128::from(p.pool_before.0);
    assert!(
        amount <= held,
        "box {:?}: pays {} from a pool of {}",
        p.box_no,
        p.amount,
        p.pool_before
    );
    assert!(
        after == before - amount || amount == held,
        "box {:?}: pool {} less {} left {}",
        p.box_no,
        p.pool_before,
        p.amount,
        p.pool_after
    );
}
