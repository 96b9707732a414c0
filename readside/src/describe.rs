//! One line per event in the rule books' words, for timelines (API, web UI, CLI).

use schemas::{EventBody, Money};

/// One line per event, in the rule books' words.
pub fn describe(b: &EventBody) -> String {
    use schemas::{Announcement, CardTarget, Stake};
    let target = |t: &CardTarget| match t {
        CardTarget::Burn => "burnt card".to_string(),
        CardTarget::Box(b) => format!("box {}", b.0),
        CardTarget::Dealer => "dealer".to_string(),
    };
    let stake = |s: &Stake| match s {
        Stake::Chips(m) => m.to_string(),
        Stake::Credits(c) => format!("{c} credits"),
    };
    match b {
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
            format!(
                "card {position}: {card} to {}{}",
                target(to),
                if *face_up { " face up" } else { "" }
            )
        }
        EventBody::CardExposed {
            at,
            card,
            players_had_seen,
        } => format!(
            "card {card} EXPOSED at {}{}",
            target(at),
            if *players_had_seen {
                " (players had seen their cards)"
            } else {
                ""
            }
        ),
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
        } => {
            format!(
                "box {}: {kind:?} {} rejected ({reason})",
                box_no.0,
                stake(s)
            )
        }
        EventBody::BetChanged {
            box_no,
            kind,
            from,
            to,
        } => {
            format!(
                "box {}: {kind:?} changed {} -> {}",
                box_no.0,
                stake(from),
                stake(to)
            )
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
        } => format!(
            "box {}: {choice:?}{}",
            box_no.0,
            stake.map(|m| format!(" {m}")).unwrap_or_default()
        ),
        EventBody::HandRevealed { box_no, cards } => {
            format!("box {} reveals {}", box_no.0, cards_text(cards))
        }
        EventBody::DealerRevealed { cards } => format!("dealer reveals {}", cards_text(cards)),
        EventBody::PaidOut { box_no, line, net } => format!(
            "box {} {}: dealer records {}",
            box_no.0,
            line.name(),
            signed(*net)
        ),
        EventBody::JackpotShown { pool, value } => format!("jackpot {pool} shows {value}"),
        EventBody::JackpotHit {
            pool,
            box_no,
            amount,
        } => format!("jackpot {pool} hit by box {}: {amount}", box_no.0),
        EventBody::StaffDecision { staff, ruling } => format!("staff {staff}: {ruling:?}"),
        EventBody::DealerChanged { dealer } => format!("dealer {dealer} takes the table"),
        other => other.type_name().replace('_', " "),
    }
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
