//! Sample events shared by the schemas tests: one of every kind.

use schemas::*;

fn ev(seq: u64, body: EventBody) -> Event {
    Event {
        v: WIRE_VERSION,
        table: TableId::new("T1").unwrap(),
        device: DeviceId::new("shoe-1").unwrap(),
        seq: Seq(seq),
        prev: Hash32([seq as u8; 32]),
        occurred_at_ns: 1_763_800_000_000_000_000,
        round: Some(RoundId(7)),
        body,
    }
}

pub fn one_of_each() -> Vec<Event> {
    let c = |s: &str| Card::parse(s).unwrap();
    let config = TableConfig {
        rule_set: RuleSet::Csp6,
        rules_version: "Version 6".into(),
        currency: "SGD".into(),
        boxes: 7,
        dealing: DealingMode::ManualShoe,
        limits: vec![BetLimit {
            kind: BetKind::Ante,
            min: Money(2500),
            max: Money(500_000),
        }],
        pay_tables: vec![PayTable {
            name: PayTableName::Jackpot,
            rows: vec![PayRow {
                hand: HandClass::RoyalFlush,
                pays: Pays::PoolBasisPoints(10_000),
                envy: None,
            }],
        }],
        bet_win_cap: Some(Money(10_000_000)),
        jackpot: Some(JackpotConfig {
            pool: PoolId::new("csp-1").unwrap(),
            linked: false,
            reset: Money(1_000_000),
            contribution_bp: 2000,
            credit_value: Money(0),
        }),
    };
    let pool = PoolId::new("csp-1").unwrap();
    let bodies = vec![
        EventBody::TableOpened { config },
        EventBody::TableClosed,
        EventBody::ShuffleCompleted {
            deck_commitment: Some(Hash32([1; 32])),
        },
        EventBody::DeckRevealed {
            order: vec![c("As"), c("Td")],
            salt: Hash32([2; 32]),
        },
        EventBody::Announced {
            announcement: Announcement::PlaceYourBets,
        },
        EventBody::Announced {
            announcement: Announcement::Result {
                text: "Pair of Kings".into(),
            },
        },
        EventBody::CardDealt {
            to: CardTarget::Box(BoxNo(3)),
            card: c("2c"),
            face_up: false,
            position: 4,
        },
        EventBody::CardExposed {
            at: CardTarget::Dealer,
            card: c("Kh"),
            players_had_seen: false,
        },
        EventBody::HandExamined {
            player_box: BoxNo(1),
            hand_box: BoxNo(2),
        },
        EventBody::BetPlaced {
            box_no: BoxNo(1),
            kind: BetKind::Ante,
            stake: Stake::Chips(Money(1000)),
        },
        EventBody::BetRejected {
            box_no: BoxNo(1),
            kind: BetKind::Ante,
            stake: Stake::Chips(Money(1)),
            reason: "under minimum".into(),
        },
        EventBody::BetChanged {
            box_no: BoxNo(1),
            kind: BetKind::JackpotPlayer,
            from: Stake::Credits(1),
            to: Stake::Credits(2),
        },
        EventBody::BetWithdrawn {
            box_no: BoxNo(1),
            kind: BetKind::Bonus,
            stake: Stake::Chips(Money(500)),
        },
        EventBody::Decided {
            box_no: BoxNo(1),
            choice: Choice::Play,
            stake: Some(Money(2000)),
        },
        EventBody::HandRevealed {
            box_no: BoxNo(1),
            cards: vec![c("Ah"), c("Kh"), c("Qh"), c("Jh"), c("Th")],
        },
        EventBody::DealerRevealed {
            cards: vec![c("2s")],
        },
        EventBody::PaidOut {
            box_no: BoxNo(1),
            line: PayLine::Bet,
            net: Money(-2000),
        },
        EventBody::JackpotShown {
            pool: pool.clone(),
            value: Money(5_000_000),
        },
        EventBody::JackpotHit {
            pool: pool.clone(),
            box_no: BoxNo(1),
            amount: Money(20_000),
        },
        EventBody::JackpotReset {
            pool: pool.clone(),
            value: Money(1_000_000),
        },
        EventBody::JackpotFault {
            pool: pool.clone(),
            description: "display offline".into(),
        },
        EventBody::JackpotRestored { pool },
        EventBody::MagicCardSelected { card: c("2h") },
        EventBody::LuckyPlayerSelected { box_no: BoxNo(4) },
        EventBody::LuckyDealerSelected,
        EventBody::StaffDecision {
            staff: StaffId::new("PS-0042").unwrap(),
            ruling: Ruling::PlayerOption {
                box_no: BoxNo(2),
                option: PlayerOption::ReturnBets,
            },
        },
        EventBody::TechnicalInterruption {
            description: "power failure".into(),
        },
        EventBody::RoundClosed,
        EventBody::Finance {
            entry: Finance::ChipInventory {
                counts: vec![ChipCount {
                    denomination: Money(2500),
                    chips: 40,
                }],
                total: Money(100_000),
            },
        },
        key_event(schemas::attest::KeyAction::Enroll),
        key_event(schemas::attest::KeyAction::Revoke),
        EventBody::DealerChanged {
            dealer: StaffId::new("D-0117").unwrap(),
        },
    ];
    bodies
        .into_iter()
        .enumerate()
        .map(|(i, b)| ev(i as u64 + 1, b))
        .collect()
}

/// A key-register event signed by a test admin: `device_enrolled` or `device_revoked`.
fn key_event(action: schemas::attest::KeyAction) -> EventBody {
    use schemas::attest::{key_event_body, SigningKey};
    key_event_body(
        &SigningKey::derive_for_simulation("vector admin"),
        &TableId::new("CSP-01").unwrap(),
        DeviceId::new("ctl-1").unwrap(),
        SigningKey::derive_for_simulation("vector device").public(),
        action,
    )
}
