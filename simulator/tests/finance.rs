//! The simulated chip tray balances shift by shift, and each injected finance error
//! breaks exactly its identity by exactly the amount `expected` lists.
//!
//! The identities are computed here from the published events alone, as a report would:
//! counted closing = opening + fills − credits + tray win − buy-ins − markers, with the
//! tray win −Σ `PaidOut.net` + Σ `JackpotHit.amount`; the next opening equals the closing;
//! the count result of a shift's drop box equals its buy-ins and markers.

use schemas::count::CountResult;
use schemas::{Event, EventBody, Finance, Money};
use simulator::{
    FaultPlan, FinanceFaultKind, FinanceLink, FinanceRecord, Floor, InjectedFault, ShiftClock,
    VarianceKind,
};
use std::collections::BTreeMap;

const HOUR_NS: i64 = 3_600_000_000_000;

fn clock() -> ShiftClock {
    ShiftClock::new(0, HOUR_NS).unwrap()
}

/// One table's run: its events, its finance record and its injected round faults.
struct Run {
    events: Vec<Event>,
    finance: FinanceRecord,
    injected: Vec<InjectedFault>,
}

fn run(tables: usize, seed: u64, plan: FaultPlan, rounds: u64) -> Vec<Run> {
    let mut floor = Floor::new(tables, seed, plan).unwrap().with_shifts(clock());
    let mut out = Vec::new();
    for t in &mut floor.tables {
        let mut events: Vec<Event> = t
            .opening_events()
            .unwrap()
            .into_iter()
            .map(|p| p.event)
            .collect();
        let mut injected = Vec::new();
        for _ in 0..rounds {
            let r = t.play_round().unwrap();
            events.extend(r.events.into_iter().map(|p| p.event));
            injected.extend(r.injected);
        }
        events.extend(t.closing_events().unwrap().into_iter().map(|p| p.event));
        let finance = t.take_finance();
        out.push(Run {
            events,
            finance,
            injected,
        });
    }
    out
}

/// One shift as the events show it.
#[derive(Debug, Default)]
struct Shift {
    index: i64,
    opening: Money,
    fills: Money,
    credits: Money,
    tray_win: Money,
    jackpot: Money,
    buy_ins: Money,
    markers: Money,
    closing: Money,
    closing_seq: u64,
    next_opening: Option<Money>,
    drop_box_id: String,
}

impl Shift {
    /// opening + fills − credits + tray win − buy-ins − markers.
    fn expected_closing(&self) -> Money {
        self.opening + self.fills - self.credits + self.tray_win - self.buy_ins - self.markers
    }
}

impl Shift {
    /// A movement of the shift's tray or drop box, as the event records it.
    fn take(&mut self, body: &EventBody) {
        match body {
            EventBody::Finance { entry } => match entry {
                Finance::Fill { amount, .. } => self.fills = self.fills + *amount,
                Finance::Credit { amount, .. } => self.credits = self.credits + *amount,
                Finance::CashBuyIn { amount } => self.buy_ins = self.buy_ins + *amount,
                Finance::Marker { amount, .. } => self.markers = self.markers + *amount,
                other => panic!("not a movement: {other:?}"),
            },
            EventBody::PaidOut { net, .. } => self.tray_win = self.tray_win - *net,
            EventBody::JackpotHit { amount, .. } => {
                self.tray_win = self.tray_win + *amount;
                self.jackpot = self.jackpot + *amount;
            }
            _ => {}
        }
    }
}

/// The shifts of one table's events, each checked to hold its events in its span.
fn shifts(events: &[Event]) -> Vec<Shift> {
    let mut out: Vec<Shift> = Vec::new();
    let mut cur: Option<Shift> = None;
    for e in events {
        if let Some(s) = cur.as_ref() {
            let span = clock().span(s.index);
            let at = e.occurred_at_ns;
            assert!(
                span.contains(at),
                "seq {} outside shift {}",
                e.seq.0,
                s.index
            );
        }
        let EventBody::Finance { entry } = &e.body else {
            if let Some(s) = cur.as_mut() {
                s.take(&e.body);
            }
            continue;
        };
        match entry {
            Finance::OpeningInventory { total, counts, .. } => {
                let value = counts.iter().map(|c| c.denomination.0 * i64::from(c.chips));
                assert_eq!(total.0, value.sum::<i64>(), "a count totals its chips");
                if let Some(last) = out.last_mut() {
                    last.next_opening = Some(*total);
                }
                assert!(cur.is_none(), "a shift opens after the last closed");
                cur = Some(Shift {
                    index: clock().index_of(e.occurred_at_ns),
                    opening: *total,
                    ..Shift::default()
                });
            }
            Finance::ClosingInventory { total, .. } => {
                let s = cur.as_mut().expect("a shift is open");
                s.closing = *total;
                s.closing_seq = e.seq.0;
            }
            Finance::DropBoxRemoved { drop_box_id } => {
                let mut s = cur.take().expect("a shift is open");
                assert_eq!(drop_box_id, &format!("{}/{}", e.table, s.index));
                s.drop_box_id = drop_box_id.clone();
                out.push(s);
            }
            Finance::ChipInventory { .. } => panic!("the tray path counts by shift only"),
            _ => cur.as_mut().expect("finance inside a shift").take(&e.body),
        }
    }
    assert!(cur.is_none(), "the last shift closed with the table");
    out
}

fn count_of<'a>(counts: &'a [CountResult], id: &str) -> &'a CountResult {
    counts
        .iter()
        .find(|c| c.drop_box_id == id)
        .expect("every box is counted")
}

/// Σ of the variances of `kind` in shift `index`.
fn variance(r: &Run, kind: VarianceKind, index: i64) -> Money {
    r.finance
        .variances
        .iter()
        .filter(|v| v.kind == kind && v.shift.index == index)
        .map(|v| v.amount)
        .sum()
}

#[test]
fn a_clean_floor_balances_every_shift_three_ways() {
    let runs = run(5, 29, FaultPlan::none(), 240);
    let (mut checked, mut fills, mut credits) = (0, Money::ZERO, Money::ZERO);
    for r in &runs {
        assert!(r
            .finance
            .variances
            .iter()
            .all(|v| v.kind == VarianceKind::JackpotPaid));
        let s = shifts(&r.events);
        assert!(
            s.len() >= 3,
            "four hours of play change shift, got {}",
            s.len()
        );
        assert_eq!(r.finance.counts.len(), s.len(), "one count per box");
        for (k, sh) in s.iter().enumerate() {
            assert_eq!(
                sh.closing,
                sh.expected_closing(),
                "{} shift {}",
                r.events[0].table,
                sh.index
            );
            if k + 1 < s.len() {
                assert_eq!(sh.next_opening, Some(sh.closing));
                assert_eq!(s[k + 1].index, sh.index + 1, "boundaries every hour");
            }
            let c = count_of(&r.finance.counts, &sh.drop_box_id);
            assert_eq!((c.cash, c.markers), (sh.buy_ins, sh.markers));
            assert_eq!(sh.jackpot, variance(r, VarianceKind::JackpotPaid, sh.index));
            fills = fills + sh.fills;
            credits = credits + sh.credits;
            checked += 1;
        }
    }
    assert!(checked >= 15, "{checked} shifts");
    assert!(fills.0 > 0 && credits.0 > 0, "the trays ran low and high");
}

#[test]
fn a_missing_fill_slip_shows_as_an_inventory_variance_kept_by_the_next_opener() {
    let plan = FaultPlan::none().with_finance(FinanceFaultKind::MissingFillSlip, 0.5);
    let runs = run(5, 30, plan, 240);
    let mut seen = 0;
    for r in &runs {
        let s = shifts(&r.events);
        for (k, sh) in s.iter().enumerate() {
            let v = variance(r, VarianceKind::MissingFillSlip, sh.index);
            assert_eq!(sh.closing - sh.expected_closing(), v);
            if k + 1 < s.len() {
                assert_eq!(
                    sh.next_opening,
                    Some(sh.closing),
                    "the chips are really there"
                );
            }
            let c = count_of(&r.finance.counts, &sh.drop_box_id);
            assert_eq!(c.drop(), sh.buy_ins + sh.markers);
            seen += usize::from(v.0 > 0);
        }
        for v in &r.finance.variances {
            if v.kind == VarianceKind::MissingFillSlip {
                assert!(matches!(v.link, FinanceLink::Round { .. }));
            }
        }
    }
    assert!(seen > 0, "some fill lost its slip");
}

#[test]
fn a_miscounted_closer_breaks_the_closing_and_the_next_opener_counts_right() {
    let plan = FaultPlan::none().with_finance(FinanceFaultKind::MiscountedCloser, 0.5);
    let runs = run(5, 31, plan, 240);
    let mut seen = 0;
    for r in &runs {
        let s = shifts(&r.events);
        for (k, sh) in s.iter().enumerate() {
            let v = variance(r, VarianceKind::MiscountedCloser, sh.index);
            assert_eq!(sh.closing - sh.expected_closing(), v);
            if k + 1 < s.len() {
                assert_eq!(sh.next_opening, Some(sh.expected_closing()));
            }
            if v.0 != 0 {
                seen += 1;
                let link = r
                    .finance
                    .variances
                    .iter()
                    .find(|x| x.shift.index == sh.index);
                let link = link.map(|x| x.link.clone());
                assert_eq!(
                    link,
                    Some(FinanceLink::Closing {
                        seq: schemas::Seq(sh.closing_seq)
                    })
                );
            }
        }
    }
    assert!(seen > 0, "some closer miscounted");
}

#[test]
fn a_short_drop_breaks_only_the_count() {
    let plan = FaultPlan::none().with_finance(FinanceFaultKind::ShortDrop, 0.5);
    let runs = run(5, 32, plan, 240);
    let mut seen = 0;
    for r in &runs {
        for sh in shifts(&r.events) {
            assert_eq!(sh.closing, sh.expected_closing());
            let c = count_of(&r.finance.counts, &sh.drop_box_id);
            let v = variance(r, VarianceKind::ShortDrop, sh.index);
            assert_eq!(c.drop() - (sh.buy_ins + sh.markers), v);
            if v.0 != 0 {
                seen += 1;
                assert!(r.finance.variances.iter().any(|x| x.link
                    == FinanceLink::DropBox {
                        drop_box_id: sh.drop_box_id.clone()
                    }));
            }
        }
    }
    assert!(seen > 0, "some drop came up short");
}

#[test]
fn an_overpayment_leaves_the_tray_and_shows_against_the_rules() {
    let runs = run(5, 33, FaultPlan::payout_errors(0.05), 240);
    let (mut over, mut under) = (0, 0);
    for r in &runs {
        for sh in shifts(&r.events) {
            // The tray balances against what the dealer recorded ...
            assert_eq!(sh.closing, sh.expected_closing());
        }
        // ... and each wrong payout is a recorded − rules variance of its amount.
        let wrong: Vec<&InjectedFault> = r.injected.iter().collect();
        let listed: Vec<_> = r
            .finance
            .variances
            .iter()
            .filter(|v| {
                matches!(
                    v.kind,
                    VarianceKind::Overpayment | VarianceKind::Underpayment
                )
            })
            .collect();
        assert_eq!(wrong.len(), listed.len());
        for (f, v) in wrong.iter().zip(&listed) {
            let InjectedFault::WrongPayout {
                round,
                expected,
                recorded,
                seq,
                ..
            } = f
            else {
                panic!("only payout errors were injected");
            };
            assert_eq!(v.amount, *expected - *recorded);
            assert_eq!(
                v.link,
                FinanceLink::Round {
                    round: *round,
                    seq: *seq
                }
            );
            let paid = r.events.iter().find(|e| e.seq == *seq).unwrap();
            assert!(v.shift.contains(paid.occurred_at_ns));
            match v.kind {
                VarianceKind::Overpayment => over += 1,
                _ => under += 1,
            }
        }
    }
    assert!(over > 0 && under > 0, "{over} overpaid, {under} underpaid");
}

#[test]
fn a_jackpot_hit_is_paid_by_the_pool_not_the_tray() {
    let plan = FaultPlan::none().with_finance(FinanceFaultKind::JackpotHit, 0.2);
    // Table 1 is CSP6 from a manual shoe; table 2 MLP3 from a shuffler (no forced hits).
    let runs = run(2, 34, plan, 120);
    assert_eq!(runs[0].events[0].table.as_str(), "CSP6-01");
    let mut hits = BTreeMap::new();
    for r in &runs {
        for sh in shifts(&r.events) {
            assert_eq!(sh.closing, sh.expected_closing(), "no tray variance");
            assert_eq!(sh.jackpot, variance(r, VarianceKind::JackpotPaid, sh.index));
        }
        for v in &r.finance.variances {
            assert_eq!(v.kind, VarianceKind::JackpotPaid);
            let FinanceLink::Round { seq, .. } = v.link else {
                panic!("a hit links its round")
            };
            let hit = r.events.iter().find(|e| e.seq == seq).unwrap();
            assert!(matches!(hit.body, EventBody::JackpotHit { amount, .. } if amount == v.amount));
            *hits.entry(r.events[0].table.to_string()).or_insert(0) += 1;
        }
    }
    assert!(hits.get("CSP6-01").copied().unwrap_or(0) >= 5, "{hits:?}");
}
