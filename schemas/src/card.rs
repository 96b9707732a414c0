//! Playing cards as a validated type: `"As"`, `"Td"`, `"2c"` in JSON, one byte in bincode.

use bincode::{de::Decoder, enc::Encoder, error::DecodeError, error::EncodeError, Decode, Encode};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Card rank, 2..=14 (Ace is 14; the rules engine treats it as 1 only inside A-2-3(-4-5)
/// straights, CSP6 §3.1.1, TCP3 §3.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rank(u8);

impl Rank {
    /// The lowest rank.
    pub const TWO: Rank = Rank(2);
    /// Ten.
    pub const TEN: Rank = Rank(10);
    /// Jack.
    pub const JACK: Rank = Rank(11);
    /// Queen.
    pub const QUEEN: Rank = Rank(12);
    /// King.
    pub const KING: Rank = Rank(13);
    /// Ace, the highest rank.
    pub const ACE: Rank = Rank(14);

    /// The rank of value 2..=14; `None` otherwise.
    pub fn new(value: u8) -> Option<Rank> {
        (2..=14).contains(&value).then_some(Rank(value))
    }
    /// 2..=14.
    pub fn value(self) -> u8 {
        self.0
    }
    /// The rank's symbol: `2`-`9`, `T`, `J`, `Q`, `K`, `A`.
    pub fn symbol(self) -> char {
        b"23456789TJQKA"[(self.0 - 2) as usize] as char
    }
    /// The rank of a symbol, either case; `None` for any other character.
    pub fn from_symbol(c: char) -> Option<Rank> {
        let i = "23456789TJQKA".find(c.to_ascii_uppercase())?;
        Some(Rank(i as u8 + 2))
    }
}

/// Suit. All suits rank equally (CSP6 §3.1.1); the order here is only for encoding:
/// clubs, diamonds, hearts, spades.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Suit {
    /// Clubs, code 0.
    Clubs = 0,
    /// Diamonds, code 1.
    Diamonds = 1,
    /// Hearts, code 2.
    Hearts = 2,
    /// Spades, code 3.
    Spades = 3,
}

impl Suit {
    /// Every suit, in encoding order.
    pub const ALL: [Suit; 4] = [Suit::Clubs, Suit::Diamonds, Suit::Hearts, Suit::Spades];
    /// The suit's symbol: `c`, `d`, `h` or `s`.
    pub fn symbol(self) -> char {
        ['c', 'd', 'h', 's'][self as usize]
    }
    /// The suit of a symbol; `None` for any other character.
    pub fn from_symbol(c: char) -> Option<Suit> {
        Some(match c {
            'c' => Suit::Clubs,
            'd' => Suit::Diamonds,
            'h' => Suit::Hearts,
            's' => Suit::Spades,
            _ => return None,
        })
    }
}

/// One card of a standard 52-card deck. Code = (rank - 2) * 4 + suit, so 0 = `2c` and
/// 51 = `As`; the code is the card's bincode form (one byte).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Card(u8);

/// Why a card was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CardError {
    /// Text that is not a rank symbol followed by a suit symbol.
    #[error("card {0:?} is not a rank (2-9, T, J, Q, K, A) followed by a suit (c, d, h, s)")]
    Text(String),
    /// A code outside 0..52.
    #[error("card code {0} is outside 0..52")]
    Code(u8),
}

impl Card {
    /// The card of `rank` and `suit`.
    pub fn new(rank: Rank, suit: Suit) -> Card {
        Card((rank.0 - 2) * 4 + suit as u8)
    }
    /// The card of a wire code; an error outside 0..52.
    pub fn from_code(code: u8) -> Result<Card, CardError> {
        if code < 52 {
            Ok(Card(code))
        } else {
            Err(CardError::Code(code))
        }
    }
    /// The wire code: `(rank - 2) * 4 + suit`, 0..52.
    pub fn code(self) -> u8 {
        self.0
    }
    /// The card's rank.
    pub fn rank(self) -> Rank {
        Rank(self.0 / 4 + 2)
    }
    /// The card's suit.
    pub fn suit(self) -> Suit {
        Suit::ALL[(self.0 % 4) as usize]
    }
    /// The 52 cards in code order.
    pub fn deck() -> impl Iterator<Item = Card> {
        (0..52).map(Card)
    }
    /// Parses `"As"`, `"Td"`; `"10d"` is read as `"Td"` because dealers write it so, and a
    /// lower-case rank as upper case (`"kh"` is `"Kh"`). Display always prints `"Td"`, `"Kh"`.
    pub fn parse(s: &str) -> Result<Card, CardError> {
        let bad = || CardError::Text(s.to_string());
        // Lengths below are in bytes: a two-byte character ("é") would be cut inside
        // itself, a panic on any JSON event naming such a card.
        if !s.is_ascii() {
            return Err(bad());
        }
        let (r, su) = match s.len() {
            2 => (&s[..1], &s[1..]),
            3 if s.starts_with("10") => ("T", &s[2..]),
            _ => return Err(bad()),
        };
        let rank = Rank::from_symbol(r.chars().next().ok_or_else(bad)?).ok_or_else(bad)?;
        let suit = Suit::from_symbol(su.chars().next().ok_or_else(bad)?).ok_or_else(bad)?;
        Ok(Card::new(rank, suit))
    }
}

impl fmt::Display for Card {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.rank().symbol(), self.suit().symbol())
    }
}
impl fmt::Debug for Card {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
impl std::str::FromStr for Card {
    type Err = CardError;
    fn from_str(s: &str) -> Result<Card, CardError> {
        Card::parse(s)
    }
}
impl Serialize for Card {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}
impl<'de> Deserialize<'de> for Card {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Card::parse(&s).map_err(serde::de::Error::custom)
    }
}
impl Encode for Card {
    fn encode<E: Encoder>(&self, e: &mut E) -> Result<(), EncodeError> {
        self.0.encode(e)
    }
}
impl<C> Decode<C> for Card {
    fn decode<D: Decoder<Context = C>>(d: &mut D) -> Result<Self, DecodeError> {
        let code = u8::decode(d)?;
        Card::from_code(code).map_err(|e| DecodeError::OtherString(e.to_string()))
    }
}
bincode::impl_borrow_decode!(Card);

impl JsonSchema for Card {
    fn schema_name() -> String {
        "Card".into()
    }
    fn json_schema(_: &mut schemars::gen::SchemaGenerator) -> schemars::schema::Schema {
        let mut s = schemars::schema::SchemaObject {
            instance_type: Some(schemars::schema::InstanceType::String.into()),
            ..Default::default()
        };
        // Matches `Card::parse`: "10" and lower-case ranks are read, never printed.
        s.string().pattern = Some("^([2-9TJQKAtjqka]|10)[cdhs]$".into());
        s.metadata().description = Some(
            "A card: rank 2-9, T, J, Q, K, A then suit c, d, h, s (e.g. \"As\", \"Td\"). \
             Also read: \"10\" for T and lower-case ranks (\"10h\", \"kh\"); printed as \"Th\", \"Kh\""
                .into(),
        );
        s.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_card_round_trips_text_and_code() {
        let all: Vec<Card> = Card::deck().collect();
        assert_eq!(all.len(), 52);
        for c in all {
            assert_eq!(Card::parse(&c.to_string()).unwrap(), c);
            assert_eq!(Card::from_code(c.code()).unwrap(), c);
        }
        assert_eq!(Card::parse("As").unwrap().to_string(), "As");
        assert_eq!(Card::parse("10d").unwrap().to_string(), "Td");
        assert_eq!(Card::parse("2c").unwrap().code(), 0);
        assert_eq!(Card::parse("As").unwrap().code(), 51);
    }

    #[test]
    fn bad_cards_are_refused() {
        for s in ["", "A", "1s", "Ax", "Asd", "ZZ", "11h"] {
            assert!(Card::parse(s).is_err(), "{s}");
        }
        assert!(Card::from_code(52).is_err());
    }
}
