//! The replayer's golden TCP3 round `clean_tcp3_fold_and_pair_plus_only`, re-chained at
//! any time: box 1 folds, losing Ante 10.00 and Pair Plus 5.00 (TCP3 §3.12.1); box 2's
//! flush wins Pair Plus 5.00 at 4 to 1 (TCP3 §4.2). The tray takes in 15.00 and pays
//! out 20.00 a round.

use super::Chain;
use schemas::{Event, EventBody, HandClass, Money, PayRow, PayTable, PayTableName, Pays};

const TCP3: &str = "clean_tcp3_fold_and_pair_plus_only";
/// What the flush's Pair Plus pays when the round is paid as the rules say.
pub const FLUSH_PAID: i64 = 2_000;

/// The golden round's event bodies, `TableOpened` first.
pub fn bodies() -> Vec<EventBody> {
    let path = format!(
        "{}/../replayer/tests/golden/{TCP3}.events.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Event>(l).unwrap().body)
        .collect()
}

/// The golden table's configuration, with `pay_tables` in place of the seed's.
pub fn opened(pay_tables: Vec<PayTable>) -> EventBody {
    let Some(EventBody::TableOpened { mut config }) = bodies().into_iter().next() else {
        panic!("the golden round opens its table");
    };
    config.pay_tables = pay_tables;
    EventBody::TableOpened { config }
}

/// Plays the golden round on `c` from `at_ns`, a second per event; the flush's payout is
/// `flush_paid`.
pub fn play(c: &mut Chain, at_ns: i64, flush_paid: i64) {
    c.round += 1;
    let r = c.round;
    for (i, mut body) in bodies().into_iter().skip(1).enumerate() {
        if let EventBody::PaidOut { net, .. } = &mut body {
            if net.0 == FLUSH_PAID {
                *net = Money(flush_paid);
            }
        }
        c.push(at_ns + i as i64 * 1_000_000_000, Some(r), body);
    }
}

/// Pair Plus paying a straight 6 to 1 where the seed pays 5 to 1 (TCP3 §4.2).
pub fn generous_pair_plus() -> PayTable {
    let row = |hand, x| PayRow {
        hand,
        pays: Pays::ToOne(x),
        envy: None,
    };
    PayTable {
        name: PayTableName::PairPlus,
        rows: vec![
            row(HandClass::StraightFlush, 40),
            row(HandClass::ThreeOfAKind, 30),
            row(HandClass::Straight, 6),
            row(HandClass::Flush, 4),
            row(HandClass::OnePair, 1),
        ],
    }
}
