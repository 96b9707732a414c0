//! What `readmodel check` compares: a model's rows against a fresh rebuild's, less what
//! depends on when or in what order rounds were indexed.
//!
//! - Cursors, the edge book and hold watches are the indexer's own progress: skipped.
//! - Alarms judged against the whole floor (`dealer_errors`) or once a price lands
//!   (`hold_outside`) are raised at a round that depends on indexing order and pricing
//!   time. They are compared by what they name (the dealer; the table and shift), not by
//!   the round that raised them. A dealer row is compared with its alarm's place left out.
//!
//! Everything else must be equal byte for byte.

use crate::dealers::DealerRow;
use crate::model::{decode, key_text, signal_row, space, Model, ModelError};
use crate::signals::SignalRow;
use schemas::api::AlertKind;
use std::cell::RefCell;
use std::collections::BTreeSet;

/// What one stored entry is for the comparison.
pub(crate) enum Part {
    /// Not compared.
    Skip,
    /// Compared by key, with these bytes.
    Compare(Vec<u8>),
    /// Compared by what it names.
    Alarm(String),
}

/// The name of an alarm whose raising round depends on indexing order or pricing time.
fn ordered_alarm(row: &SignalRow) -> Option<String> {
    AlertKind::of_signal(&row.kind)?.raised_once_per(&row.table, &row.subject)
}

/// The part an entry plays in the comparison.
pub(crate) fn part(k: &[u8], v: &[u8]) -> Result<Part, ModelError> {
    match k.first().copied() {
        Some(space::CURSOR) | Some(space::EDGE) | Some(space::HOLD_WATCH) => Ok(Part::Skip),
        Some(space::SIGNAL) => {
            let row = signal_row(k, v)?;
            Ok(ordered_alarm(&row).map_or_else(|| Part::Compare(v.to_vec()), Part::Alarm))
        }
        Some(space::DEALER) => {
            let mut row: DealerRow = decode(k, v)?;
            let alarmed = row.alarmed_at.take().is_some();
            let mut bytes = serde_json::to_vec(&row)
                .map_err(|e| ModelError::Corrupt(format!("a dealer row: {e}")))?;
            bytes.push(u8::from(alarmed));
            Ok(Part::Compare(bytes))
        }
        _ => Ok(Part::Compare(v.to_vec())),
    }
}

/// The entries compared by key, in key order; alarms go into `alarms`.
pub(crate) fn rows<'a>(
    entries: impl Iterator<Item = crate::kv::EntryResult> + 'a,
    alarms: &'a RefCell<BTreeSet<String>>,
) -> impl Iterator<Item = Result<(Vec<u8>, Vec<u8>), ModelError>> + 'a {
    entries.filter_map(move |kv| {
        let (k, v) = match kv {
            Ok(kv) => kv,
            Err(e) => return Some(Err(e.into())),
        };
        match part(&k, &v) {
            Ok(Part::Skip) => None,
            Ok(Part::Compare(bytes)) => Some(Ok((k, bytes))),
            Ok(Part::Alarm(name)) => {
                alarms.borrow_mut().insert(name);
                None
            }
            Err(e) => Some(Err(e)),
        }
    })
}

/// The alarms one side names and the other does not.
pub(crate) fn alarm_differences(mine: &BTreeSet<String>, fresh: &BTreeSet<String>) -> Vec<String> {
    let extra = mine
        .difference(fresh)
        .map(|a| format!("alarm {a}: not in a fresh rebuild"));
    let missing = fresh
        .difference(mine)
        .map(|a| format!("alarm {a}: missing (a fresh rebuild has it)"));
    extra.chain(missing).collect()
}

impl Model {
    /// The first `max` differences between two models, each naming its key. Reads both
    /// whole. What depends on indexing order or pricing time is left out or compared by
    /// what it names (this module).
    pub fn differences(&self, other: &Model, max: usize) -> Result<Vec<String>, ModelError> {
        use std::cell::RefCell;
        let (mine, fresh) = (RefCell::default(), RefCell::default());
        let mut a = rows(self.entries(), &mine).peekable();
        let mut b = rows(other.entries(), &fresh).peekable();
        let mut out = Vec::new();
        while out.len() < max {
            let (x, y) = match (a.peek(), b.peek()) {
                (None, None) => break,
                (Some(Err(_)), _) | (_, Some(Err(_))) => {
                    a.next().transpose()?;
                    b.next().transpose()?;
                    continue;
                }
                (x, y) => (
                    x.and_then(|r| r.as_ref().ok()).cloned(),
                    y.and_then(|r| r.as_ref().ok()).cloned(),
                ),
            };
            match (x, y) {
                (Some((kx, vx)), Some((ky, vy))) if kx == ky => {
                    if vx != vy {
                        out.push(format!("{}: the value differs", key_text(&kx)));
                    }
                    a.next();
                    b.next();
                }
                (Some((kx, _)), Some((ky, _))) if kx < ky => {
                    out.push(format!("{}: not in a fresh rebuild", key_text(&kx)));
                    a.next();
                }
                (Some((kx, _)), None) => {
                    out.push(format!("{}: not in a fresh rebuild", key_text(&kx)));
                    a.next();
                }
                (_, Some((ky, _))) => {
                    let text = format!("{}: missing (a fresh rebuild has it)", key_text(&ky));
                    out.push(text);
                    b.next();
                }
                (None, None) => break,
            }
        }
        drop((a, b));
        let alarms = alarm_differences(&mine.into_inner(), &fresh.into_inner());
        out.extend(alarms.into_iter().take(max.saturating_sub(out.len())));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dealers::DisputedRound;
    use crate::model::{seal, signal_key};

    fn signal(table: &str, kind: &str, round: u64, subject: &str) -> SignalRow {
        SignalRow {
            table: table.into(),
            round,
            kind: kind.into(),
            subject: subject.into(),
            box_no: None,
            dealer: None,
            statistic_milli: 3_200,
            threshold_milli: 3_090,
            false_alarms_milli_per_1000_rounds: 1_000,
            run_rounds: 150,
            moved: Vec::new(),
            hold: None,
        }
    }

    fn part_of(row: &SignalRow) -> Part {
        let k = signal_key(row);
        part(&k, &seal(&k, row)).expect("a stored signal reads")
    }

    fn name(p: Part) -> Option<String> {
        match p {
            Part::Alarm(n) => Some(n),
            _ => None,
        }
    }

    #[test]
    fn a_dealer_alarm_is_named_by_its_dealer_whatever_its_table_and_round() {
        let live = name(part_of(&signal("T-1", "dealer_errors", 404, "dealer D-2")));
        let fresh = name(part_of(&signal("T-2", "dealer_errors", 372, "dealer D-2")));
        assert_eq!(live, Some("dealer_errors dealer D-2".into()));
        assert_eq!(live, fresh);
        let hold = name(part_of(&signal(
            "T-1",
            "hold_outside",
            90,
            "shift 2026-11-25/1",
        )));
        assert_eq!(hold, Some("hold_outside T-1 shift 2026-11-25/1".into()));
        let other = part_of(&signal("T-1", "hole_card_play", 90, "box 3"));
        assert!(
            matches!(other, Part::Compare(_)),
            "decision signals stay by key"
        );
    }

    #[test]
    fn a_dealer_row_is_compared_without_its_alarms_place() {
        let at = |table: &str, round| DisputedRound {
            table: table.into(),
            round,
            box_no: 1,
            text: "short pay".into(),
        };
        let bytes = |row: &DealerRow| {
            let k = [space::DEALER, b'D'];
            match part(&k, &seal(&k, row)).expect("a dealer row reads") {
                Part::Compare(b) => b,
                _ => panic!("a dealer row is compared by key"),
            }
        };
        let mut a = DealerRow {
            dealer: "D-2".into(),
            rounds: 300,
            ..DealerRow::default()
        };
        let mut b = a.clone();
        let quiet = bytes(&a);
        a.alarmed_at = Some(at("T-1", 404));
        b.alarmed_at = Some(at("T-2", 372));
        assert_eq!(bytes(&a), bytes(&b), "the place of one alarm");
        assert_ne!(bytes(&a), quiet, "an alarm against none still differs");
        b.rounds += 1;
        assert_ne!(bytes(&a), bytes(&b), "every count still compared");
    }

    #[test]
    fn alarms_one_side_names_are_differences() {
        let mine = BTreeSet::from(["dealer_errors: dealer D-2".to_string()]);
        let fresh = BTreeSet::from(["hold_outside: T-1 shift 2026-11-25/1".to_string()]);
        let d = alarm_differences(&mine, &fresh);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d[0].contains("not in a fresh rebuild") && d[1].contains("missing"));
        assert!(alarm_differences(&mine, &mine).is_empty());
    }
}
