//! Building a table's shift row (`schemas::finance::ShiftRow`) from what the tail reads.
//!
//! - A reported round adds to the shift of its first event. It adds to the part of the
//!   dealer in place when it began too. Its handle names the pay tables in force when it
//!   began; a report prices it (`edges`), so indexing never waits for pricing.
//! - A finance event adds to the shift of its device time. An opening count made just
//!   before a shift change goes to the shift after it. A closing count or drop box
//!   removal just after one goes to the shift before it. A count farther from a change
//!   stays in the shift that holds it.
//! - A shift's opening is its first opening count, its closing its last (by device time):
//!   so a gaming day's first opening and last closing are the same under any shift layout.
//! - Parts of one shift read in different passes merge into the same row.
//!
//! Invariant: merging parts in seq order gives the row one pass over all of them gives,
//! so an incremental model equals a fresh rebuild (`verify`).

use ledger::days::{DayRule, ShiftBounds};
use schemas::finance::{
    DealerPart, DisputedRound, DropBoxRef, Handle, ShiftRow, Slip, Tray, TrayCount,
    DEALERS_PER_SHIFT_MAX, DISPUTED_ROUNDS_MAX, DROP_BOXES_MAX, MORE_DEALERS, NO_DEALER,
};
use schemas::report::RoundReport;
use schemas::{BetKind, BoxNo, Finance, Money, PayLine, RuleSet, Seq, TableId};
use std::collections::BTreeMap;

/// Jackpot lines: a win on one is paid by the jackpot system as far as the pool pays it
/// (`Settlement::jackpot_payments`), and from the tray beyond that (a fixed award).
pub const JACKPOT_LINES: [PayLine; 3] = [
    PayLine::Progressive,
    PayLine::JackpotPlayer,
    PayLine::JackpotDealer,
];

/// The last shift looked up: most times fall in it, so a lookup seldom reads the zone.
#[derive(Debug, Default)]
pub struct ShiftCache {
    last: Option<ShiftBounds>,
}

impl ShiftCache {
    /// The shift holding `at_ns`.
    pub fn shift_of(&mut self, rule: &DayRule, at_ns: i64) -> Result<ShiftBounds, ledger::Error> {
        if let Some(s) = &self.last {
            if (s.starts_at_ns..s.ends_at_ns).contains(&at_ns) {
                return Ok(s.clone());
            }
        }
        let s = rule.shift_of(at_ns)?;
        self.last = Some(s.clone());
        Ok(s)
    }
}

/// An empty row of `table`'s shift `s`.
pub fn empty_row(table: &TableId, s: &ShiftBounds) -> ShiftRow {
    ShiftRow {
        table: Some(table.clone()),
        shift: s.name(),
        starts_at_ns: s.starts_at_ns,
        ends_at_ns: s.ends_at_ns,
        ..ShiftRow::default()
    }
}

/// The shift a finance event belongs to under `rule`.
pub fn finance_shift(
    rule: &DayRule,
    cache: &mut ShiftCache,
    entry: &Finance,
    at_ns: i64,
) -> Result<ShiftBounds, ledger::Error> {
    match entry {
        Finance::OpeningInventory { .. } => rule.opening_shift(at_ns),
        // The box leaves at the shift change: it holds the ending shift's drop.
        Finance::ClosingInventory { .. } | Finance::DropBoxRemoved { .. } => {
            rule.closing_shift(at_ns)
        }
        _ => cache.shift_of(rule, at_ns),
    }
}

/// Adds one finance event (`seq`, device time `at_ns`) to its shift's row.
pub fn add_finance(row: &mut ShiftRow, entry: &Finance, seq: Seq, at_ns: i64) {
    let slip = |no: &str, amount: Money| Slip {
        no: no.to_string(),
        amount,
        seq,
        at_ns,
    };
    let count = |total: Money, counts: &[schemas::ChipCount], by: &str| TrayCount {
        total,
        counts: counts.to_vec(),
        counted_by: by.to_string(),
        seq,
        at_ns,
    };
    match entry {
        Finance::ClosingInventory { .. } | Finance::DropBoxRemoved { .. } => {}
        // A later opening count starts another shift of play: it ends what came before.
        Finance::OpeningInventory { .. } => note_play(row, None, at_ns),
        _ => note_play(row, Some(at_ns), at_ns),
    }
    match entry {
        Finance::CashBuyIn { amount } => row.buy_ins.add(slip("", *amount)),
        Finance::Marker { amount, marker_no } => row.markers.add(slip(marker_no, *amount)),
        Finance::Fill { amount, slip_no } => row.fills.add(slip(slip_no, *amount)),
        Finance::Credit { amount, slip_no } => row.credits.add(slip(slip_no, *amount)),
        Finance::OpeningInventory {
            counts,
            total,
            counted_by,
        } => keep_opening(&mut row.opening, &count(*total, counts, counted_by)),
        Finance::ClosingInventory {
            counts,
            total,
            counted_by,
        } => keep_closing(&mut row.closing, &count(*total, counts, counted_by)),
        Finance::DropBoxRemoved { drop_box_id } => {
            if row.drop_boxes.len() < DROP_BOXES_MAX {
                row.drop_boxes.push(DropBoxRef {
                    drop_box_id: drop_box_id.clone(),
                    seq,
                    at_ns,
                });
            }
        }
        // A count in the middle of a shift: kept in the ledger, no part of a report.
        Finance::ChipInventory { .. } => {}
    }
}

/// Widens the row's span of play to `[first_ns, last_ns]`.
fn note_play(row: &mut ShiftRow, first_ns: Option<i64>, last_ns: i64) {
    if let Some(f) = first_ns {
        row.first_play_at_ns = Some(row.first_play_at_ns.map_or(f, |x| x.min(f)));
    }
    row.last_play_at_ns = Some(row.last_play_at_ns.map_or(last_ns, |x| x.max(last_ns)));
}

/// Keeps the earlier opening count, by (device time, seq): a shift opens with its first
/// count, so a count later in it never replaces that one, whatever order passes read them.
pub fn keep_opening(held: &mut Option<TrayCount>, c: &TrayCount) {
    if held
        .as_ref()
        .is_none_or(|h| (c.at_ns, c.seq) < (h.at_ns, h.seq))
    {
        *held = Some(c.clone());
    }
}

/// Keeps the later closing count, by (device time, seq): a shift closes with its last.
pub fn keep_closing(held: &mut Option<TrayCount>, c: &TrayCount) {
    if held
        .as_ref()
        .is_none_or(|h| (c.at_ns, c.seq) > (h.at_ns, h.seq))
    {
        *held = Some(c.clone());
    }
}

/// What the index knows of a round beside its report, as it stood when the round began.
#[derive(Debug, Clone, Copy)]
pub struct RoundCtx<'a> {
    /// Its configuration set its own pay tables.
    pub custom_pay: bool,
    /// The identity of the pay tables in force (`edges::identity`; `None`: the seed's).
    pub pay_tables: Option<&'a str>,
    /// The rule set of the configuration in force, which `pay_tables` belongs to.
    pub rule_set: Option<RuleSet>,
    /// The dealer in place (`None`: none named).
    pub dealer: Option<&'a str>,
}

/// Adds a reported round to its shift's row and to its dealer's part: handle and
/// theoretical win, the tray as recorded and as the rules say, and the round if it is
/// disputed.
pub fn add_round(row: &mut ShiftRow, r: &RoundReport, ctx: &RoundCtx) {
    row.rounds += 1;
    note_play(
        row,
        Some(r.opened_at_ns),
        r.closed_at_ns.unwrap_or(r.opened_at_ns),
    );
    row.rule_set = r.rule_set.or(row.rule_set);
    row.pay_tables_configured |= ctx.custom_pay;
    let at = dealer_part(row, ctx.dealer.unwrap_or(NO_DEALER));
    row.dealers[at].rounds += 1;
    let Some(s) = &r.settlement else {
        return;
    };
    let share = share_of(r, s, ctx);
    for h in &share.handle {
        add_handle(&mut row.handle, h);
        add_handle(&mut row.dealers[at].handle, h);
    }
    row.recorded.merge(&share.recorded);
    row.rules.merge(&share.rules);
    row.dealers[at].recorded.merge(&share.recorded);
    row.dealers[at].rules.merge(&share.rules);
    if share.disputed {
        row.disputed_count += 1;
        row.dealers[at].disputed_count += 1;
        if row.disputed.len() < DISPUTED_ROUNDS_MAX {
            row.disputed.push(DisputedRound {
                round: r.round,
                recorded: share.paid,
                due: share.due,
            });
        }
    }
}

/// Takes back what `add_round` added for `r` under `ctx`, before the same round is added
/// again from a newer report (an early count replaced). Its play times stay: they are the
/// round's own and do not change between reports.
pub fn take_round(row: &mut ShiftRow, r: &RoundReport, ctx: &RoundCtx) {
    let at = dealer_part(row, ctx.dealer.unwrap_or(NO_DEALER));
    assert!(
        row.rounds > 0,
        "take_round: the round was added to this row"
    );
    assert!(
        row.dealers[at].rounds > 0,
        "take_round: and to its dealer's part"
    );
    row.rounds -= 1;
    row.dealers[at].rounds -= 1;
    let Some(s) = &r.settlement else {
        return;
    };
    let share = share_of(r, s, ctx);
    for h in &share.handle {
        take_handle(&mut row.handle, h);
        take_handle(&mut row.dealers[at].handle, h);
    }
    take_tray(&mut row.recorded, &share.recorded);
    take_tray(&mut row.rules, &share.rules);
    take_tray(&mut row.dealers[at].recorded, &share.recorded);
    take_tray(&mut row.dealers[at].rules, &share.rules);
    if share.disputed {
        assert!(
            row.disputed_count > 0,
            "take_round: its dispute was counted"
        );
        row.disputed_count -= 1;
        row.dealers[at].disputed_count -= 1;
        row.disputed.retain(|d| d.round != r.round);
    }
}

fn take_tray(tray: &mut Tray, o: &Tray) {
    tray.taken_in = tray.taken_in - o.taken_in;
    tray.paid_out = tray.paid_out - o.paid_out;
    tray.jackpot_paid = tray.jackpot_paid - o.jackpot_paid;
}

/// Takes `h` back from `handle`; an entry left with no bets goes.
fn take_handle(handle: &mut Vec<Handle>, h: &Handle) {
    let key = handle_key(h);
    let Ok(i) = handle.binary_search_by(|x| handle_key(x).cmp(&key)) else {
        panic!("take_handle: {key:?} was added before");
    };
    let x = &mut handle[i];
    assert!(
        x.bets >= h.bets,
        "take_handle: no more bets taken than added"
    );
    x.stake = x.stake - h.stake;
    x.stake_squared = x.stake_squared.saturating_sub(h.stake_squared);
    x.bets -= h.bets;
    if x.bets == 0 {
        handle.remove(i);
    }
}

/// One round's part of a shift: a handle entry per bet, its trays and its nets.
struct Share {
    handle: Vec<Handle>,
    recorded: Tray,
    rules: Tray,
    disputed: bool,
    /// The players' net as recorded and as due.
    paid: Money,
    due: Money,
}

fn share_of(r: &RoundReport, s: &schemas::settle::Settlement, ctx: &RoundCtx) -> Share {
    let bet_lines: Vec<PayLine> = BetKind::ALL.iter().map(|k| k.line()).collect();
    let mut stakes: BTreeMap<(BoxNo, PayLine), Money> = BTreeMap::new();
    for b in &s.boxes {
        for l in b.lines.iter().filter(|l| bet_lines.contains(&l.line)) {
            stakes.entry((b.box_no, l.line)).or_insert(l.stake);
        }
    }
    // Pay tables configured for another rule set than the round's do not apply to it.
    let pay_tables = ctx.pay_tables.filter(|_| ctx.rule_set == Some(s.game));
    let handle = stakes
        .into_iter()
        .map(|((_, line), stake)| Handle {
            rule_set: s.game,
            line,
            pay_tables: pay_tables.map(str::to_string),
            stake,
            stake_squared: u128::from(stake.0.unsigned_abs()).pow(2),
            bets: 1,
        })
        .collect();
    let Nets { due, recorded } = nets(r);
    let (mut rules, mut tray) = (Tray::default(), Tray::default());
    add_tray(&mut rules, &due, &pool_split(&due, s));
    add_tray(&mut tray, &recorded, &pool_split(&recorded, s));
    Share {
        handle,
        recorded: tray,
        rules,
        disputed: !r.disputes.is_empty(),
        paid: recorded.values().copied().sum(),
        due: due.values().copied().sum(),
    }
}

/// A round's players' nets per (box, line): as the rules say, and as recorded.
pub struct Nets {
    /// Nets as the rules settle them, in minor units.
    pub due: BTreeMap<(BoxNo, PayLine), Money>,
    /// Nets as the dealer recorded them, in minor units.
    pub recorded: BTreeMap<(BoxNo, PayLine), Money>,
}

/// The nets of a report: the settlement's, with each dispute's recorded amount in
/// place of the rules' on its line.
pub fn nets(r: &RoundReport) -> Nets {
    let due: BTreeMap<(BoxNo, PayLine), Money> = r
        .settlement
        .iter()
        .flat_map(|s| s.net())
        .flat_map(|(b, lines)| lines.into_iter().map(move |(l, m)| ((b, l), m)))
        .collect();
    let mut recorded = due.clone();
    for d in &r.disputes {
        recorded.insert((d.box_no, d.line), d.recorded);
    }
    Nets { due, recorded }
}

/// The pool's part of each (box, line) net: a box's pool awards
/// (`Settlement::jackpot_payments`) go to its first jackpot line in (box, line) order.
/// Finance and the day's Parquet take nets apart by this one rule.
pub fn pool_split(
    nets: &BTreeMap<(BoxNo, PayLine), Money>,
    s: &schemas::settle::Settlement,
) -> BTreeMap<(BoxNo, PayLine), Money> {
    let mut pool: BTreeMap<BoxNo, Money> = BTreeMap::new();
    for p in &s.jackpot_payments {
        let paid = pool.entry(p.box_no).or_insert(Money::ZERO);
        *paid = *paid + p.amount;
    }
    let mut out = BTreeMap::new();
    for (box_no, line) in nets.keys() {
        if JACKPOT_LINES.contains(line) {
            if let Some(paid) = pool.remove(box_no) {
                out.insert((*box_no, *line), paid);
            }
        }
    }
    out
}

/// Adds the players' nets per (box, line) to a tray: losses in, wins out, and what each
/// line won from the pool (`from_pool`, `pool_split`) apart: the jackpot system pays it. A
/// jackpot line that won from the pool keeps its stake as a contribution, so its net is
/// the award less the stake: the stake comes into the tray, the award from the jackpot
/// system.
fn add_tray(
    tray: &mut Tray,
    nets: &BTreeMap<(BoxNo, PayLine), Money>,
    from_pool: &BTreeMap<(BoxNo, PayLine), Money>,
) {
    for (key, net) in nets {
        let from_pool = from_pool.get(key).copied().unwrap_or(Money::ZERO);
        tray.jackpot_paid = tray.jackpot_paid + from_pool;
        let tray_part = *net - from_pool;
        if tray_part.0 < 0 {
            tray.taken_in = tray.taken_in - tray_part;
        } else {
            tray.paid_out = tray.paid_out + tray_part;
        }
    }
}

fn handle_key(h: &Handle) -> (&'static str, PayLine, Option<&str>) {
    (h.rule_set.code(), h.line, h.pay_tables.as_deref())
}

/// Adds `h` to `handle`, kept sorted by (rule set, line, pay tables).
fn add_handle(handle: &mut Vec<Handle>, h: &Handle) {
    let key = handle_key(h);
    match handle.binary_search_by(|x| handle_key(x).cmp(&key)) {
        Ok(i) => {
            let x = &mut handle[i];
            x.stake = x.stake + h.stake;
            x.stake_squared = x.stake_squared.saturating_add(h.stake_squared);
            x.bets += h.bets;
        }
        Err(i) => handle.insert(i, h.clone()),
    }
}

/// The index of `dealer`'s part of `row`, added if new: past `DEALERS_PER_SHIFT_MAX`
/// dealers, the shared `MORE_DEALERS` part.
fn dealer_part(row: &mut ShiftRow, dealer: &str) -> usize {
    if let Some(i) = row.dealers.iter().position(|d| d.dealer == dealer) {
        return i;
    }
    let name = match row.dealers.len() < DEALERS_PER_SHIFT_MAX {
        true => dealer,
        false => MORE_DEALERS,
    };
    if let Some(i) = row.dealers.iter().position(|d| d.dealer == name) {
        return i;
    }
    row.dealers.push(DealerPart {
        dealer: name.to_string(),
        ..DealerPart::default()
    });
    assert!(row.dealers.len() <= DEALERS_PER_SHIFT_MAX + 1);
    row.dealers.len() - 1
}

/// Merges `part` (read later) into `row` of the same table and shift.
pub fn merge(row: &mut ShiftRow, part: &ShiftRow) {
    assert_eq!(row.starts_at_ns, part.starts_at_ns, "one shift");
    row.rounds += part.rounds;
    if let Some(last) = part.last_play_at_ns {
        note_play(row, part.first_play_at_ns, last);
    }
    row.rule_set = part.rule_set.or(row.rule_set);
    row.pay_tables_configured |= part.pay_tables_configured;
    for h in &part.handle {
        add_handle(&mut row.handle, h);
    }
    for d in &part.dealers {
        let at = dealer_part(row, &d.dealer);
        let x = &mut row.dealers[at];
        x.rounds += d.rounds;
        x.disputed_count += d.disputed_count;
        x.recorded.merge(&d.recorded);
        x.rules.merge(&d.rules);
        for h in &d.handle {
            add_handle(&mut x.handle, h);
        }
    }
    row.recorded.merge(&part.recorded);
    row.rules.merge(&part.rules);
    row.buy_ins.merge(&part.buy_ins);
    row.markers.merge(&part.markers);
    row.fills.merge(&part.fills);
    row.credits.merge(&part.credits);
    if let Some(c) = &part.opening {
        keep_opening(&mut row.opening, c);
    }
    if let Some(c) = &part.closing {
        keep_closing(&mut row.closing, c);
    }
    let room = DROP_BOXES_MAX.saturating_sub(row.drop_boxes.len());
    row.drop_boxes
        .extend(part.drop_boxes.iter().take(room).cloned());
    let room = DISPUTED_ROUNDS_MAX.saturating_sub(row.disputed.len());
    row.disputed
        .extend(part.disputed.iter().take(room).cloned());
    row.disputed_count += part.disputed_count;
}
