//! Linked jackpot pool replay across tables in the House's order (MLP3 §4.5.2, RULES-NOTES
//! 6, 7, 9): contributions, hits, resets and every display compared with the recomputed
//! pool.

use replayer::replay_pool;
use schemas::{
    Announcement, BetKind, BoxNo, DealingMode, DeviceId, Event, EventBody, Hash32, JackpotConfig,
    Money, PoolId, RoundId, RuleSet, Seq, Stake, TableConfig, TableId,
};

fn cfg() -> TableConfig {
    TableConfig {
        rule_set: RuleSet::Mlp3,
        rules_version: "Version 3".into(),
        currency: "SGD".into(),
        boxes: 7,
        dealing: DealingMode::Shuffler,
        limits: Vec::new(),
        pay_tables: Vec::new(),
        bet_win_cap: None,
        jackpot: Some(JackpotConfig {
            pool: PoolId::new("LINK").unwrap(),
            linked: true,
            reset: Money(5_000_000),
            contribution_bp: 2_500,
            credit_value: Money::ZERO,
        }),
    }
}

fn ev(table: &str, seq: u64, round: Option<u64>, body: EventBody) -> Event {
    Event {
        v: 1,
        table: TableId::new(table).unwrap(),
        device: DeviceId::new("d").unwrap(),
        seq: Seq(seq),
        prev: Hash32::ZERO,
        occurred_at_ns: 0,
        round: round.map(RoundId),
        body,
    }
}

fn pool() -> PoolId {
    PoolId::new("LINK").unwrap()
}

#[test]
fn linked_pool_across_tables_in_house_order() {
    let bet = |b: u8| EventBody::BetPlaced {
        box_no: BoxNo(b),
        kind: BetKind::Progressive,
        stake: Stake::Chips(Money(100)),
    };
    let nmb = EventBody::Announced {
        announcement: Announcement::NoMoreBets,
    };
    let events = vec![
        ev("A", 1, None, EventBody::TableOpened { config: cfg() }),
        ev("B", 1, None, EventBody::TableOpened { config: cfg() }),
        ev(
            "A",
            2,
            Some(1),
            EventBody::JackpotShown {
                pool: pool(),
                value: Money(10_000_000),
            },
        ),
        ev("A", 3, Some(1), bet(1)),
        ev("A", 4, Some(1), bet(2)),
        ev(
            "B",
            2,
            Some(1),
            EventBody::JackpotShown {
                pool: pool(),
                value: Money(10_000_000),
            },
        ),
        ev("B", 3, Some(1), bet(1)),
        ev("A", 5, Some(1), nmb.clone()),
        ev("B", 4, Some(1), nmb.clone()),
        // Placed after "No more Bets": not accepted, no contribution.
        ev("B", 5, Some(1), bet(3)),
        // Two major wins across tables, B's hand reached the log first (MLP3 4.5.2): B is
        // paid 100% and the pool resets; A's 10% is of the reset pool.
        ev(
            "B",
            6,
            Some(1),
            EventBody::JackpotHit {
                pool: pool(),
                box_no: BoxNo(1),
                amount: Money(10_000_000),
            },
        ),
        ev(
            "B",
            7,
            Some(1),
            EventBody::JackpotReset {
                pool: pool(),
                value: Money(5_000_000),
            },
        ),
        ev(
            "A",
            6,
            Some(1),
            EventBody::JackpotHit {
                pool: pool(),
                box_no: BoxNo(2),
                amount: Money(500_000),
            },
        ),
        ev("A", 7, Some(1), EventBody::RoundClosed),
        ev("B", 8, Some(1), EventBody::RoundClosed),
        // 5,000,000 - 500,000 + 3 contributions of 25 = 4,500,075; the display is 75 short.
        ev(
            "A",
            8,
            Some(2),
            EventBody::JackpotShown {
                pool: pool(),
                value: Money(4_500_000),
            },
        ),
        ev(
            "B",
            9,
            Some(2),
            EventBody::JackpotShown {
                pool: pool(),
                value: Money(4_500_000),
            },
        ),
    ];
    let report = replay_pool(&events);
    let p = &report.pools[&pool()];
    assert_eq!(p.tables.len(), 2);
    assert_eq!(p.start, Money(10_000_000));
    assert_eq!(p.contributing_stakes, 3);
    assert_eq!(p.contributions, Money(75));
    assert_eq!(p.resets, 1);
    let order: Vec<(&str, u32, i64, i64)> = p
        .wins
        .iter()
        .map(|w| (w.table.as_str(), w.order, w.pool_before.0, w.pool_after.0))
        .collect();
    assert_eq!(
        order,
        vec![("B", 1, 10_000_000, 0), ("A", 2, 5_000_000, 4_500_000)]
    );
    assert_eq!(p.mismatches.len(), 1, "{:?}", p.mismatches);
    let m = &p.mismatches[0];
    assert_eq!(
        (m.table.as_str(), m.shown, m.recomputed, m.difference),
        ("A", Money(4_500_000), Money(4_500_075), Money(-75))
    );
    assert_eq!(m.code, "MLP3-4.5.2-jackpot-shown-differs");
    assert_eq!(p.displays_checked, 3);
    assert_eq!(p.end, Money(4_500_000));
}

#[test]
fn void_round_contributes_nothing() {
    let events = vec![
        ev("A", 1, None, EventBody::TableOpened { config: cfg() }),
        ev(
            "A",
            2,
            Some(1),
            EventBody::JackpotShown {
                pool: pool(),
                value: Money(1_000),
            },
        ),
        ev(
            "A",
            3,
            Some(1),
            EventBody::BetPlaced {
                box_no: BoxNo(1),
                kind: BetKind::Progressive,
                stake: Stake::Chips(Money(100)),
            },
        ),
        ev(
            "A",
            4,
            Some(1),
            EventBody::Announced {
                announcement: Announcement::Void,
            },
        ),
        ev("A", 5, Some(1), EventBody::RoundClosed),
        ev(
            "A",
            6,
            Some(2),
            EventBody::JackpotShown {
                pool: pool(),
                value: Money(1_025),
            },
        ),
    ];
    let p = &replay_pool(&events).pools[&pool()];
    assert_eq!(p.contributions, Money(0));
    assert_eq!(p.mismatches.len(), 1);
    assert_eq!(p.mismatches[0].difference, Money(25));
}
