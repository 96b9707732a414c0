//! One line per event in the rule books' words, for timelines (API, web UI, CLI).

use schemas::{Announcement, CardTarget, EventBody, Money, Stake};

/// One line per event, in the rule books' words.
pub fn describe(b: &EventBody) -> String {
    card_line(b)
        .or_else(|| bet_line(b))
        .or_else(|| result_line(b))
        .unwrap_or_else(|| b.type_name().replace('_', " "))
}

/// Where a card goes, as the rule books name it.
fn target(t: &CardTarget) -> String {
    match t {
        CardTarget::Burn => "burnt card".to_string(),
        CardTarget::Box(b) => format!("box {}", b.0),
        CardTarget::Dealer => "dealer".to_string(),
    }
}

/// A stake in chips (money) or credits.
fn stake(s: &Stake) -> String {
    match s {
        Stake::Chips(m) => m.to_string(),
        Stake::Credits(c) => format!("{c} credits"),
    }
}

/// Announcements, cards dealt, exposed and revealed.
fn card_line(b: &EventBody) -> Option<String> {
    Some(match b {
        EventBody::Announced { announcement } => match announcement {
            Announcement::PlaceYourBets => "\"Place your Bets, please\"".into(),
            Announcement::NoMoreBets => "\"No more Bets\"".into(),
            Announcement::NoHand => "\"No hand\"".into(),
            Announcement::Result { text } => format!("result: {text}"),
            Announcement::Void => "round declared VOID".into(),
        },
        EventBody::CardDealt {
            to,
            card,
            face_up,
            position,
        } => {
            let up = if *face_up { " face up" } else { "" };
            format!("card {position}: {card} to {}{up}", target(to))
        }
        EventBody::CardExposed {
            at,
            card,
            players_had_seen,
        } => {
            let seen = if *players_had_seen {
                " (players had seen their cards)"
            } else {
                ""
            };
            format!("card {card} EXPOSED at {}{seen}", target(at))
        }
        EventBody::HandRevealed { box_no, cards } => {
            format!("box {} reveals {}", box_no.0, cards_text(cards))
        }
        EventBody::DealerRevealed { cards } => format!("dealer reveals {}", cards_text(cards)),
        _ => return None,
    })
}

/// Bets placed, rejected, changed, withdrawn, and players' decisions.
fn bet_line(b: &EventBody) -> Option<String> {
    Some(match b {
        EventBody::BetPlaced {
            box_no,
            kind,
            stake: s,
        } => format!("box {}: {kind:?} {}", box_no.0, stake(s)),
        EventBody::BetRejected {
            box_no,
            kind,
            stake: s,
            reason,
        } => format!(
            "box {}: {kind:?} {} rejected ({reason})",
            box_no.0,
            stake(s)
        ),
        EventBody::BetChanged {
            box_no,
            kind,
            from,
            to,
        } => {
            let (from, to) = (stake(from), stake(to));
            format!("box {}: {kind:?} changed {from} -> {to}", box_no.0)
        }
        EventBody::BetWithdrawn {
            box_no,
            kind,
            stake: s,
        } => format!("box {}: {kind:?} {} withdrawn", box_no.0, stake(s)),
        EventBody::Decided {
            box_no,
            choice,
            stake,
        } => {
            let amount = stake.map(|m| format!(" {m}")).unwrap_or_default();
            format!("box {}: {choice:?}{amount}", box_no.0)
        }
        _ => return None,
    })
}

/// Payouts, jackpots, staff rulings and dealer changes.
fn result_line(b: &EventBody) -> Option<String> {
    Some(match b {
        EventBody::PaidOut { box_no, line, net } => {
            let net = signed(*net);
            format!("box {} {}: dealer records {net}", box_no.0, line.name())
        }
        EventBody::JackpotShown { pool, value } => format!("jackpot {pool} shows {value}"),
        EventBody::JackpotHit {
            pool,
            box_no,
            amount,
        } => format!("jackpot {pool} hit by box {}: {amount}", box_no.0),
        EventBody::StaffDecision { staff, ruling } => format!("staff {staff}: {ruling:?}"),
        EventBody::DealerChanged { dealer } => format!("dealer {dealer} takes the table"),
        _ => return None,
    })
}

fn cards_text(cards: &[schemas::Card]) -> String {
    cards
        .iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `+12.50`, `-3.00`, `0.00`: money with its sign, for differences.
pub fn signed(m: Money) -> String {
    if m.0 > 0 {
        format!("+{m}")
    } else {
        m.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemas::{BetKind, BoxNo, Card, Choice, PayLine, StaffId};

    fn card(s: &str) -> Card {
        Card::parse(s).expect("card")
    }

    #[test]
    fn each_family_of_events_reads_as_the_rule_books_say() {
        let cases = [
            (
                EventBody::CardDealt {
                    to: CardTarget::Box(BoxNo(3)),
                    card: card("Ah"),
                    face_up: true,
                    position: 5,
                },
                "card 5: Ah to box 3 face up",
            ),
            (
                EventBody::BetChanged {
                    box_no: BoxNo(2),
                    kind: BetKind::Ante,
                    from: Stake::Chips(Money(2500)),
                    to: Stake::Credits(4),
                },
                "box 2: Ante changed 25.00 -> 4 credits",
            ),
            (
                EventBody::Decided {
                    box_no: BoxNo(1),
                    choice: Choice::Play,
                    stake: Some(Money(5000)),
                },
                "box 1: Play 50.00",
            ),
            (
                EventBody::PaidOut {
                    box_no: BoxNo(4),
                    line: PayLine::Ante,
                    net: Money(-2500),
                },
                "box 4 ante: dealer records -25.00",
            ),
            (
                EventBody::DealerChanged {
                    dealer: StaffId::new("D-0117").expect("id"),
                },
                "dealer D-0117 takes the table",
            ),
            (EventBody::TableClosed, "table closed"),
        ];
        for (body, want) in cases {
            assert_eq!(describe(&body), want);
        }
    }
}
