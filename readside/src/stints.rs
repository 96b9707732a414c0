//! A dealer's dealing time in the read model: each counted round's stint part
//! (`analytics::pace`), kept in its dealer's row as round rows are written.
//!
//! Invariants:
//! - A dealer row's `dealing_ns` and `stints` are the sums of the parts of the model's
//!   counted round rows that name the dealer.
//! - A round's part depends only on it and the table's round just before it. Writing a
//!   round takes back and adds its own part and the next round's, so the sums are exact
//!   in any order of indexing and after any rewrite.
//! - A write costs O(1): two more round rows read, at most four parts moved.

use crate::dealers::{counted, DealerRow};
use crate::row::Digest;
use analytics::pace::{stint_part, RoundSpan, StintPart};

/// A change to a dealer's dealing time: one round's stint part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StintChange {
    /// The dealer whose row changes.
    pub dealer: String,
    /// The round's part.
    pub part: StintPart,
}

/// The stint parts writing a round changes: those to take back, then those to add.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Restint {
    /// Parts the model holds that no longer hold.
    pub take: Vec<StintChange>,
    /// Parts that hold once the round is written.
    pub add: Vec<StintChange>,
}

/// A counted round's span; `None` without a close.
fn span_of(d: &Digest) -> Option<RoundSpan> {
    Some(RoundSpan {
        opened_at_ns: d.row.opened_at_ns,
        closed_at_ns: d.row.closed_at_ns?,
    })
}

/// The stint part of round `d`, given the table's round before it (`None` when absent);
/// `None` for a round not counted or without a close, which adds no time.
pub fn stint_of(d: &Digest, before: Option<&Digest>) -> Option<StintChange> {
    if let Some(b) = before {
        assert_eq!(b.row.table, d.row.table, "the round before is the table's");
        assert_eq!(b.row.round.0 + 1, d.row.round.0, "the round just before");
    }
    let dealer = counted(d)?;
    let span = span_of(d)?;
    let prev = before
        .filter(|b| counted(b) == Some(dealer))
        .and_then(span_of);
    Some(StintChange {
        dealer: dealer.to_owned(),
        part: stint_part(prev, span),
    })
}

/// Whether writing `new` over `old` can change any stint part: a round's part and its
/// successor's depend only on its dealer and span, when it is counted and closed. A
/// round in progress, like an absent one, moves nothing.
pub fn stint_moves(old: Option<&Digest>, new: &Digest) -> bool {
    let key = |d: &Digest| Some((counted(d)?.to_owned(), span_of(d)?));
    old.and_then(key) != key(new)
}

/// The parts writing `new` over `old` changes: `new`'s own (after `before`) and the
/// part of `after`, the table's next round, which depends on it.
pub fn restint(
    old: Option<&Digest>,
    new: &Digest,
    before: Option<&Digest>,
    after: Option<&Digest>,
) -> Restint {
    if let Some(o) = old {
        assert_eq!(
            (&o.row.table, o.row.round),
            (&new.row.table, new.row.round),
            "the same round rewritten"
        );
    }
    let mut r = Restint::default();
    r.take.extend(old.and_then(|o| stint_of(o, before)));
    r.take.extend(after.and_then(|a| stint_of(a, old)));
    r.add.extend(stint_of(new, before));
    r.add.extend(after.and_then(|a| stint_of(a, Some(new))));
    r
}

/// Adds a round's stint part to its dealer's row.
pub fn stint_add(row: &mut DealerRow, c: &StintChange) {
    assert_eq!(row.dealer, c.dealer, "the row's dealer");
    row.dealing_ns = row.dealing_ns.saturating_add(c.part.dealing_ns);
    row.stints += u64::from(c.part.starts);
}

/// Takes a round's stint part back from its dealer's row.
pub fn stint_take(row: &mut DealerRow, c: &StintChange) {
    assert_eq!(row.dealer, c.dealer, "the row's dealer");
    assert!(
        row.dealing_ns >= c.part.dealing_ns && row.stints >= u64::from(c.part.starts),
        "a stint part taken back was added"
    );
    row.dealing_ns -= c.part.dealing_ns;
    row.stints -= u64::from(c.part.starts);
}

#[cfg(test)]
mod tests {
    use super::*;
    use analytics::pace::STINT_GAP_MAX_NS;
    use schemas::api::RoundRow;
    use schemas::report::Verdict;
    use schemas::{Money, RoundId, Seq, TableId};
    use std::collections::BTreeMap;

    const MIN_NS: i64 = 60_000_000_000;

    fn digest(table: &str, round: u64, dealer: &str, opened_min: i64, len_min: i64) -> Digest {
        Digest {
            row: RoundRow {
                table: TableId::new(table).unwrap(),
                round: RoundId(round),
                rule_set: None,
                opened_at_ns: opened_min * MIN_NS,
                closed_at_ns: Some((opened_min + len_min) * MIN_NS),
                first_seq: Seq(1),
                last_seq: Seq(2),
                verdict: Verdict::Clean,
                boxes: Vec::new(),
                disputes: 0,
                findings: 0,
                worst_severity: None,
                difference: Money::ZERO,
                in_progress: false,
                dealer: Some(dealer.to_owned()),
            },
            disputes: Vec::new(),
            findings: Vec::new(),
        }
    }

    /// Round rows and dealer rows, written as the read model's tail writes them.
    #[derive(Default)]
    struct Model {
        rounds: BTreeMap<(String, u64), Digest>,
        dealers: BTreeMap<String, DealerRow>,
    }

    impl Model {
        fn put(&mut self, d: Digest) {
            let (t, r) = (d.row.table.to_string(), d.row.round.0);
            let old = self.rounds.get(&(t.clone(), r)).cloned();
            if stint_moves(old.as_ref(), &d) {
                let before = self.rounds.get(&(t.clone(), r - 1));
                let after = self.rounds.get(&(t.clone(), r + 1));
                let moves = restint(old.as_ref(), &d, before, after);
                for c in &moves.take {
                    stint_take(self.dealers.get_mut(&c.dealer).unwrap(), c);
                }
                for c in &moves.add {
                    let row = self.dealers.entry(c.dealer.clone()).or_default();
                    row.dealer.clone_from(&c.dealer);
                    stint_add(row, c);
                }
            }
            self.rounds.insert((t, r), d);
        }

        fn pace(&self, dealer: &str) -> (i64, u64) {
            self.dealers
                .get(dealer)
                .map_or((0, 0), |r| (r.dealing_ns, r.stints))
        }
    }

    /// Each dealer's (dealing ns, stints) recounted from whole runs: a run is a table's
    /// consecutive closed rounds of one dealer with no pause over the bound; it lasts
    /// from its first opening to its last close. The rounds here are short, so no cap.
    fn recount(rounds: &BTreeMap<(String, u64), Digest>) -> BTreeMap<String, (i64, u64)> {
        let mut out: BTreeMap<String, (i64, u64)> = BTreeMap::new();
        let mut run: Option<(String, String, u64, i64, i64)> = None;
        let mut close = |run: &Option<(String, String, u64, i64, i64)>| {
            if let Some((_, dealer, _, first, last)) = run {
                let e = out.entry(dealer.clone()).or_default();
                e.0 += last - first;
                e.1 += 1;
            }
        };
        for ((t, r), d) in rounds {
            let counted = !d.row.in_progress && d.row.closed_at_ns.is_some();
            let dealer = d.row.dealer.clone().unwrap_or_default();
            let goes_on = run.as_ref().is_some_and(|(rt, rd, rr, _, last)| {
                rt == t
                    && *rd == dealer
                    && rr + 1 == *r
                    && d.row.opened_at_ns - last <= STINT_GAP_MAX_NS
            });
            if counted && goes_on {
                let run = run.as_mut().unwrap();
                run.2 = *r;
                run.4 = d.row.closed_at_ns.unwrap();
                continue;
            }
            close(&run);
            run = counted.then(|| {
                let closed = d.row.closed_at_ns.unwrap();
                (t.clone(), dealer, *r, d.row.opened_at_ns, closed)
            });
        }
        close(&run);
        out
    }

    /// Two tables, two dealers, pauses within and over the bound, a round in progress.
    /// A round and the pause before it stay within the bound, so no part is capped.
    fn floor() -> Vec<Digest> {
        let mut out = Vec::new();
        let mut at_min = 0;
        for r in 1..=40u64 {
            let dealer = if (r / 10) % 2 == 0 { "D-1" } else { "D-2" };
            let pause_min = match r % 7 {
                0 => 25,
                3 => 17,
                _ => 1,
            };
            out.push(digest("T-1", r, dealer, at_min, 2));
            out.push(digest(
                "T-2",
                r,
                if dealer == "D-1" { "D-2" } else { "D-1" },
                at_min + 1440,
                3,
            ));
            at_min += 2 + pause_min;
        }
        out[17].row.in_progress = true;
        out[17].row.closed_at_ns = None;
        out
    }

    /// A fixed pseudo-random order of `n` indices from `seed` (xorshift, Fisher-Yates).
    fn order(n: usize, seed: u64) -> Vec<usize> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut idx: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            idx.swap(i, (x % (i as u64 + 1)) as usize);
        }
        idx
    }

    #[test]
    fn rounds_in_order_sum_their_stints() {
        let mut m = Model::default();
        floor().into_iter().for_each(|d| m.put(d));
        let want = recount(&m.rounds);
        assert_eq!(m.pace("D-1"), want["D-1"]);
        assert_eq!(m.pace("D-2"), want["D-2"]);
        // Each dealer deals 20 rounds a table; long pauses split their runs.
        assert!(want["D-1"].1 >= 4, "{want:?}");
    }

    #[test]
    fn any_order_and_rewrites_give_the_same_sums() {
        let rounds = floor();
        for seed in 0..200u64 {
            let mut m = Model::default();
            for i in order(rounds.len(), seed) {
                m.put(rounds[i].clone());
            }
            let want = recount(&m.rounds);
            for dealer in ["D-1", "D-2"] {
                assert_eq!(m.pace(dealer), want[dealer], "seed {seed}, {dealer}");
            }
            // Rewrites: another dealer, a later close, a round back in progress, then
            // the round in progress decided.
            let i = order(rounds.len(), seed + 1000)[0];
            let mut d = rounds[i].clone();
            d.row.dealer = Some("D-3".into());
            m.put(d);
            let mut d = rounds[(i + 5) % rounds.len()].clone();
            d.row.closed_at_ns = d.row.closed_at_ns.map(|c| c + MIN_NS);
            m.put(d);
            let mut d = rounds[(i + 9) % rounds.len()].clone();
            d.row.in_progress = true;
            m.put(d);
            let mut d = rounds[17].clone();
            d.row.in_progress = false;
            d.row.closed_at_ns = Some(d.row.opened_at_ns + 2 * MIN_NS);
            m.put(d);
            let want = recount(&m.rounds);
            for dealer in ["D-1", "D-2", "D-3"] {
                let w = want.get(dealer).copied().unwrap_or((0, 0));
                assert_eq!(m.pace(dealer), w, "seed {seed}, {dealer} after rewrites");
            }
        }
    }

    #[test]
    fn a_rewrite_that_keeps_dealer_and_span_moves_nothing() {
        let a = digest("T-1", 4, "D-1", 10, 2);
        let mut b = a.clone();
        b.row.verdict = Verdict::Irregular;
        assert!(!stint_moves(Some(&a), &b));
        assert!(stint_moves(None, &b));
        let mut c = a.clone();
        c.row.closed_at_ns = None;
        assert!(stint_moves(Some(&a), &c));
        // A round first written in progress moves nothing; decided, it does.
        let mut open = a.clone();
        open.row.in_progress = true;
        assert!(!stint_moves(None, &open));
        assert!(stint_moves(Some(&open), &a));
    }
}
