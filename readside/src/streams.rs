//! The decision statistics' states in the read model (`analytics::CusumState`), so a
//! restart resumes each statistic where the last committed pass left it, never at 0.
//!
//! Invariants:
//! - Written in a pass's commit with the rounds that moved them: a crash loses no round's
//!   evidence and counts none twice.
//! - Floats are kept as their bits: a resumed statistic is exactly the one stored.
//! - A row's key derives from the row; a row under another key is an integrity error.
//! - A pass writes only the statistics its rounds pushed: O(1) a round.

use crate::keystr::push_str;
use analytics::{CusumState, Kind, Moved, StreamKey, Subject};
use schemas::{BoxNo, RoundId, StaffId, TableId};
use serde::{Deserialize, Serialize};

/// The model space of statistic states: the first byte of their keys.
pub(crate) const SPACE: u8 = b'z';

/// One statistic's state as the model keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamRow {
    kind: String,
    /// "box", "pair", "dealer" or "table".
    subject: String,
    table: Option<String>,
    box_no: Option<u8>,
    dealer: Option<String>,
    place: u8,
    tests: u64,
    sum_g_bits: u64,
    sum_g2_bits: u64,
    s_bits: u64,
    rounds: u64,
    moved: Vec<MovedRow>,
}

/// A decision that moved a statistic, as the model keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct MovedRow {
    round: u64,
    box_no: u8,
    by_bits: u64,
    text: String,
}

impl StreamRow {
    /// The row of a statistic's state.
    pub fn of(key: &StreamKey, state: &CusumState) -> StreamRow {
        let (subject, table, box_no, dealer) = match &key.subject {
            Subject::Box(t, b) => ("box", Some(t.to_string()), Some(b.0), None),
            Subject::Pair(t, b) => ("pair", Some(t.to_string()), Some(b.0), None),
            Subject::Dealer(d) => ("dealer", None, None, Some(d.to_string())),
            Subject::Table(t) => ("table", Some(t.to_string()), None, None),
        };
        let moved = state.moved.iter().map(|m| MovedRow {
            round: m.round.0,
            box_no: m.box_no.0,
            by_bits: m.by.to_bits(),
            text: m.text.clone(),
        });
        StreamRow {
            kind: key.kind.code().to_owned(),
            subject: subject.to_owned(),
            table,
            box_no,
            dealer,
            place: key.place,
            tests: state.tests as u64,
            sum_g_bits: state.sum_g.to_bits(),
            sum_g2_bits: state.sum_g2.to_bits(),
            s_bits: state.s.to_bits(),
            rounds: state.rounds,
            moved: moved.collect(),
        }
    }

    /// The model key of this row: space, kind, subject, table or dealer, box, place.
    pub fn key(&self) -> Vec<u8> {
        let mut k = vec![SPACE];
        for s in [&self.kind, &self.subject] {
            push_str(&mut k, s);
        }
        let who = self
            .table
            .as_deref()
            .or(self.dealer.as_deref())
            .unwrap_or("");
        push_str(&mut k, who);
        k.push(self.box_no.unwrap_or(0));
        k.push(self.place);
        k
    }

    /// The statistic this row resumes; `None` for a row no statistic reads.
    pub fn resumed(self) -> Option<(StreamKey, CusumState)> {
        let kind = [Kind::HoleCard, Kind::CardSharing]
            .into_iter()
            .find(|k| k.code() == self.kind)?;
        let table = || TableId::new(self.table.clone()?).ok();
        let box_no = || self.box_no.map(BoxNo);
        let subject = match self.subject.as_str() {
            "box" => Subject::Box(table()?, box_no()?),
            "pair" => Subject::Pair(table()?, box_no()?),
            "dealer" => Subject::Dealer(StaffId::new(self.dealer.clone()?).ok()?),
            "table" => Subject::Table(table()?),
            _ => return None,
        };
        let moved = self.moved.into_iter().map(|m| Moved {
            round: RoundId(m.round),
            box_no: BoxNo(m.box_no),
            by: f64::from_bits(m.by_bits),
            text: m.text,
        });
        let state = CusumState {
            tests: usize::try_from(self.tests).ok()?,
            sum_g: f64::from_bits(self.sum_g_bits),
            sum_g2: f64::from_bits(self.sum_g2_bits),
            s: f64::from_bits(self.s_bits),
            rounds: self.rounds,
            moved: moved.collect(),
        };
        let key = StreamKey {
            kind,
            subject,
            place: self.place,
        };
        Some((key, state))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_comes_back_exactly_under_its_own_key() {
        let t = TableId::new("CSP6-01").unwrap();
        let subjects = [
            Subject::Box(t.clone(), BoxNo(3)),
            Subject::Pair(t.clone(), BoxNo(3)),
            Subject::Dealer(StaffId::new("D-9".to_owned()).unwrap()),
            Subject::Table(t),
        ];
        let state = CusumState {
            tests: 4,
            sum_g: 0.1 + 0.2,
            sum_g2: 1.0 + 1e-17,
            s: std::f64::consts::PI,
            rounds: 17,
            moved: vec![Moved {
                round: RoundId(40),
                box_no: BoxNo(3),
                by: 1.0 / 3.0,
                text: "raised A-Q-4".into(),
            }],
        };
        let mut keys = std::collections::BTreeSet::new();
        for subject in subjects {
            let key = StreamKey {
                kind: Kind::HoleCard,
                subject,
                place: 2,
            };
            let row = StreamRow::of(&key, &state);
            assert!(keys.insert(row.key()), "each statistic its own key");
            let json = serde_json::to_vec(&row).unwrap();
            let back: StreamRow = serde_json::from_slice(&json).unwrap();
            assert_eq!(back.key(), row.key());
            assert_eq!(back.resumed(), Some((key, state.clone())));
        }
    }
}
