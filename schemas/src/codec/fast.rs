//! A direct reader of the bincode form for the events of a round, the bulk of every chain.
//!
//! Replay decodes every stored event, and the generic bincode decoder spent about 40% of
//! replay time on them (zeroed buffers and a UTF-8 pass per string, limit accounting per
//! byte). This reader walks the same bytes with the same rules (bincode 2.0.1,
//! `config::standard()`: little endian, variable-length integers, enum tags as `u32`,
//! option and bool tags as one byte) and builds the same `Event`.
//!
//! It is an accelerator, never a second definition of the wire form: it answers `None`
//! for anything it is not sure of (a table configuration, finance entries, variants added
//! later, any malformed or unusual input, any message over `FAST_LEN_MAX`), and the caller
//! then decodes with bincode as before, so errors and everything rare are bincode's. Where
//! it answers `Some`, bincode gives the same event from the same bytes: tests in `codec`
//! compare the two on every variant and on mutated messages.
//!
//! Why `FAST_LEN_MAX` keeps bincode's limit out of the picture: bincode counts bytes read
//! against `EVENT_LEN_MAX` plus, while a `Vec` is read, its declared length times the size
//! of its element. The variants read here only hold byte strings and `Vec<Card>` (one
//! byte per element), so the count stays under twice the message length, far below
//! `EVENT_LEN_MAX` for messages of at most `FAST_LEN_MAX` bytes.

use crate::card::Card;
use crate::config::{BetKind, PayLine};
use crate::event::{
    Announcement, CardTarget, Choice, Event, EventBody, PlayerOption, Ruling, Stake, WIRE_VERSION,
};
use crate::ids::{BoxNo, DeviceId, Hash32, Money, PoolId, RoundId, Seq, StaffId, TableId};

/// Longest message read here; longer ones (table configurations) go to bincode.
pub(super) const FAST_LEN_MAX: usize = 1024;

/// bincode's variable-length integer markers (bincode 2.0.1 `varint` module).
const SINGLE_BYTE_MAX: u8 = 250;
const U16_BYTE: u8 = 251;
const U32_BYTE: u8 = 252;
const U64_BYTE: u8 = 253;

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let s = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(s)
    }
    fn u8(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }
    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }
    /// A varint of at most `max_marker`'s width (`U16_BYTE` for u16, `U32_BYTE` for u32,
    /// `U64_BYTE` for u64), exactly as bincode reads it (non-minimal forms included).
    fn varint(&mut self, max_marker: u8) -> Option<u64> {
        let m = self.u8()?;
        match m {
            0..=SINGLE_BYTE_MAX => Some(u64::from(m)),
            U16_BYTE => Some(u64::from(u16::from_le_bytes(self.array()?))),
            U32_BYTE if max_marker >= U32_BYTE => {
                Some(u64::from(u32::from_le_bytes(self.array()?)))
            }
            U64_BYTE if max_marker >= U64_BYTE => Some(u64::from_le_bytes(self.array()?)),
            _ => None,
        }
    }
    fn u16(&mut self) -> Option<u16> {
        u16::try_from(self.varint(U16_BYTE)?).ok()
    }
    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.varint(U32_BYTE)?).ok()
    }
    fn u64(&mut self) -> Option<u64> {
        self.varint(U64_BYTE)
    }
    /// Zigzag over a u64 varint (bincode `varint_decode_i64`).
    fn i64(&mut self) -> Option<i64> {
        let n = self.u64()?;
        Some(if n % 2 == 0 {
            (n / 2) as i64
        } else {
            !(n / 2) as i64
        })
    }
    fn bool(&mut self) -> Option<bool> {
        match self.u8()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
    /// The tag of an `Option`: one byte, 0 or 1.
    fn is_some(&mut self) -> Option<bool> {
        self.bool()
    }
    fn tag(&mut self) -> Option<u32> {
        self.u32()
    }
    fn len(&mut self) -> Option<usize> {
        usize::try_from(self.u64()?).ok()
    }
    fn str(&mut self) -> Option<&'a str> {
        let n = self.len()?;
        std::str::from_utf8(self.take(n)?).ok()
    }
    fn string(&mut self) -> Option<String> {
        self.str().map(str::to_string)
    }
    fn money(&mut self) -> Option<Money> {
        self.i64().map(Money)
    }
    fn box_no(&mut self) -> Option<BoxNo> {
        self.u8().map(BoxNo)
    }
    fn card(&mut self) -> Option<Card> {
        Card::from_code(self.u8()?).ok()
    }
    fn cards(&mut self) -> Option<Vec<Card>> {
        let n = self.len()?;
        self.take(n)?
            .iter()
            .map(|&c| Card::from_code(c).ok())
            .collect()
    }
    fn hash(&mut self) -> Option<Hash32> {
        self.array().map(Hash32)
    }
    fn pool(&mut self) -> Option<PoolId> {
        // `PoolId::new` checks the id grammar, which bincode does not: an id it refuses is
        // left to bincode, which decodes it as before.
        PoolId::new(self.str()?).ok()
    }
    fn target(&mut self) -> Option<CardTarget> {
        Some(match self.tag()? {
            0 => CardTarget::Burn,
            1 => CardTarget::Box(self.box_no()?),
            2 => CardTarget::Dealer,
            _ => return None,
        })
    }
    fn bet_kind(&mut self) -> Option<BetKind> {
        BetKind::ALL
            .get(usize::try_from(self.tag()?).ok()?)
            .copied()
    }
    fn pay_line(&mut self) -> Option<PayLine> {
        const ALL: [PayLine; 10] = [
            PayLine::Ante,
            PayLine::Bet,
            PayLine::Play,
            PayLine::PairPlus,
            PayLine::Progressive,
            PayLine::JackpotPlayer,
            PayLine::JackpotDealer,
            PayLine::Bonus,
            PayLine::AnteBonus,
            PayLine::Envy,
        ];
        ALL.get(usize::try_from(self.tag()?).ok()?).copied()
    }
    fn stake(&mut self) -> Option<Stake> {
        Some(match self.tag()? {
            0 => Stake::Chips(self.money()?),
            1 => Stake::Credits(self.u32()?),
            _ => return None,
        })
    }
    fn choice(&mut self) -> Option<Choice> {
        Some(match self.tag()? {
            0 => Choice::Play,
            1 => Choice::Fold,
            2 => Choice::WalkAway,
            3 => Choice::RefuseToReveal,
            _ => return None,
        })
    }
    fn announcement(&mut self) -> Option<Announcement> {
        Some(match self.tag()? {
            0 => Announcement::PlaceYourBets,
            1 => Announcement::NoMoreBets,
            2 => Announcement::NoHand,
            3 => Announcement::Result {
                text: self.string()?,
            },
            4 => Announcement::Void,
            _ => return None,
        })
    }
    fn ruling(&mut self) -> Option<Ruling> {
        Some(match self.tag()? {
            0 => Ruling::IrregularityDeclared {
                clause: self.string()?,
                note: self.string()?,
            },
            1 => Ruling::VoidRound {
                clause: self.string()?,
                reason: self.string()?,
            },
            2 => Ruling::PlayerOption {
                box_no: self.box_no()?,
                option: match self.tag()? {
                    0 => PlayerOption::Continue,
                    1 => PlayerOption::ContinueReconstructed,
                    2 => PlayerOption::ReturnBets,
                    _ => return None,
                },
            },
            3 => Ruling::CardOrder {
                cards: self.cards()?,
            },
            4 => Ruling::ExaminationIntent {
                player_box: self.box_no()?,
                hand_box: self.box_no()?,
                intentional: self.bool()?,
            },
            5 => Ruling::Reconstruction {
                allowed: self.bool()?,
                note: self.string()?,
            },
            6 => Ruling::ShiftManager {
                decision: self.string()?,
            },
            _ => return None,
        })
    }

    /// `EventBody` in declaration order (its position is its bincode tag). Tag 0
    /// (`TableOpened`), 27 (`Finance`) and later variants are left to bincode.
    fn body(&mut self) -> Option<EventBody> {
        match self.tag()? {
            tag @ 1..=7 => self.table_and_cards(tag),
            tag @ 8..=15 => self.bets_and_payouts(tag),
            tag @ 16..=26 => self.jackpots_and_staff(tag),
            _ => None,
        }
    }

    /// The body of the table, the shuffle, announcements and cards (tags 1-7), read in the catalogue's order.
    fn table_and_cards(&mut self, tag: u32) -> Option<EventBody> {
        Some(match tag {
            1 => EventBody::TableClosed,
            2 => EventBody::ShuffleCompleted {
                deck_commitment: if self.is_some()? {
                    Some(self.hash()?)
                } else {
                    None
                },
            },
            3 => EventBody::DeckRevealed {
                order: self.cards()?,
                salt: self.hash()?,
            },
            4 => EventBody::Announced {
                announcement: self.announcement()?,
            },
            5 => EventBody::CardDealt {
                to: self.target()?,
                card: self.card()?,
                face_up: self.bool()?,
                position: self.u16()?,
            },
            6 => EventBody::CardExposed {
                at: self.target()?,
                card: self.card()?,
                players_had_seen: self.bool()?,
            },
            7 => EventBody::HandExamined {
                player_box: self.box_no()?,
                hand_box: self.box_no()?,
            },
            _ => return None,
        })
    }

    /// The body of bets, decisions, reveals and payouts (tags 8-15), read in the catalogue's order.
    fn bets_and_payouts(&mut self, tag: u32) -> Option<EventBody> {
        Some(match tag {
            8 => EventBody::BetPlaced {
                box_no: self.box_no()?,
                kind: self.bet_kind()?,
                stake: self.stake()?,
            },
            9 => EventBody::BetRejected {
                box_no: self.box_no()?,
                kind: self.bet_kind()?,
                stake: self.stake()?,
                reason: self.string()?,
            },
            10 => EventBody::BetChanged {
                box_no: self.box_no()?,
                kind: self.bet_kind()?,
                from: self.stake()?,
                to: self.stake()?,
            },
            11 => EventBody::BetWithdrawn {
                box_no: self.box_no()?,
                kind: self.bet_kind()?,
                stake: self.stake()?,
            },
            12 => EventBody::Decided {
                box_no: self.box_no()?,
                choice: self.choice()?,
                stake: if self.is_some()? {
                    Some(self.money()?)
                } else {
                    None
                },
            },
            13 => EventBody::HandRevealed {
                box_no: self.box_no()?,
                cards: self.cards()?,
            },
            14 => EventBody::DealerRevealed {
                cards: self.cards()?,
            },
            15 => EventBody::PaidOut {
                box_no: self.box_no()?,
                line: self.pay_line()?,
                net: self.money()?,
            },
            _ => return None,
        })
    }

    /// The body of jackpots, selections, staff and the round closing (tags 16-26), read in the catalogue's order.
    fn jackpots_and_staff(&mut self, tag: u32) -> Option<EventBody> {
        Some(match tag {
            16 => EventBody::JackpotShown {
                pool: self.pool()?,
                value: self.money()?,
            },
            17 => EventBody::JackpotHit {
                pool: self.pool()?,
                box_no: self.box_no()?,
                amount: self.money()?,
            },
            18 => EventBody::JackpotReset {
                pool: self.pool()?,
                value: self.money()?,
            },
            19 => EventBody::JackpotFault {
                pool: self.pool()?,
                description: self.string()?,
            },
            20 => EventBody::JackpotRestored { pool: self.pool()? },
            21 => EventBody::MagicCardSelected { card: self.card()? },
            22 => EventBody::LuckyPlayerSelected {
                box_no: self.box_no()?,
            },
            23 => EventBody::LuckyDealerSelected,
            24 => EventBody::StaffDecision {
                // Grammar checked as for `PoolId` above.
                staff: StaffId::new(self.str()?).ok()?,
                ruling: self.ruling()?,
            },
            25 => EventBody::TechnicalInterruption {
                description: self.string()?,
            },
            26 => EventBody::RoundClosed,
            _ => return None,
        })
    }
}

/// The event in `bytes` (the whole message), when this reader is sure of it; `None`
/// leaves the message to bincode. Ids come out grammar-checked (`TableId::new`), so a
/// message whose table or device id `codec::check` would refuse is left to bincode too.
/// The variant index of the event body, read past the event's header with no other
/// check. `None` if the bytes end first. Classifies a message bincode refused.
pub(super) fn body_tag(bytes: &[u8]) -> Option<u32> {
    let mut r = Reader { bytes, at: 0 };
    r.u8()?;
    r.str()?;
    r.str()?;
    r.u64()?;
    r.hash()?;
    r.i64()?;
    if r.is_some()? {
        r.u64()?;
    }
    r.tag()
}

pub(super) fn event(bytes: &[u8]) -> Option<Event> {
    if bytes.len() > FAST_LEN_MAX {
        return None;
    }
    let mut r = Reader { bytes, at: 0 };
    let v = r.u8()?;
    if v != WIRE_VERSION {
        return None;
    }
    let table = TableId::new(r.str()?).ok()?;
    let device = DeviceId::new(r.str()?).ok()?;
    let seq = Seq(r.u64()?);
    let prev = r.hash()?;
    let occurred_at_ns = r.i64()?;
    let round = if r.is_some()? {
        Some(RoundId(r.u64()?))
    } else {
        None
    };
    let body = r.body()?;
    // bincode refuses trailing bytes (`DecodeError::TrailingBytes`): leave them to it.
    if r.at != bytes.len() {
        return None;
    }
    Some(Event {
        v,
        table,
        device,
        seq,
        prev,
        occurred_at_ns,
        round,
        body,
    })
}
