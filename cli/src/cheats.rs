//! `simulate --hole-carder`, `--card-sharers`, `--error-prone-dealer`, `--hold-skew`: the
//! cheats, the careless dealer and the rigged shift the decision analytics must find,
//! placed on the simulated floor.

use analytics::{cheats, Evaluator};
use anyhow::{bail, Context, Result};
use schemas::{BoxNo, Choice};
use simulator::{Decider, DecisionView, ErrorProneDealer, HoldSkew, TableSim};

/// The cheats of one table, by box.
struct TableCheats {
    hole_carders: Vec<BoxNo>,
    /// The first box of each sharing pair (it and the next box share).
    sharers: Vec<BoxNo>,
    ev: Evaluator,
}

impl Decider for TableCheats {
    fn decide(&mut self, v: &DecisionView) -> Option<Choice> {
        if self.hole_carders.contains(&v.box_no) {
            return cheats::hole_carder(&mut self.ev, v.cards, v.dealer);
        }
        let partner = self.sharers.iter().find_map(|f| match v.box_no.0 {
            b if b == f.0 => Some(BoxNo(b + 1)),
            b if b == f.0 + 1 => Some(*f),
            _ => None,
        })?;
        cheats::card_sharer(&mut self.ev, v.cards, v.hands.get(&partner)?, v.dealer)
    }
}

/// `N:BOX`: table number N (from 1) and a box.
fn table_box(s: &str, flag: &str) -> Result<(usize, BoxNo)> {
    let (n, b) = s
        .split_once(':')
        .with_context(|| format!("{flag} {s:?}: expected TABLE:BOX"))?;
    let n: usize = n
        .parse()
        .with_context(|| format!("{flag} {s:?}: table number"))?;
    let b: u8 = b
        .parse()
        .with_context(|| format!("{flag} {s:?}: box number"))?;
    if n == 0 || b == 0 {
        bail!("{flag} {s:?}: tables and boxes count from 1");
    }
    Ok((n, BoxNo(b)))
}

/// `N:PLACE:RATE`: table number, the dealer's place in the roster (0-3), wrong payouts
/// per round while that dealer deals.
fn error_prone(s: &str) -> Result<(usize, ErrorProneDealer)> {
    let flag = "--error-prone-dealer";
    let parts: Vec<&str> = s.split(':').collect();
    let [n, place, rate] = parts[..] else {
        bail!("{flag} {s:?}: expected TABLE:PLACE:RATE, e.g. 3:1:0.2");
    };
    let n: usize = n
        .parse()
        .with_context(|| format!("{flag} {s:?}: table number"))?;
    let roster_place: u64 = place
        .parse()
        .with_context(|| format!("{flag} {s:?}: place"))?;
    let wrong_payout: f64 = rate
        .parse()
        .with_context(|| format!("{flag} {s:?}: rate"))?;
    if n == 0
        || roster_place >= simulator::table::DEALER_ROSTER_LEN
        || !(0.0..=1.0).contains(&wrong_payout)
    {
        bail!("{flag} {s:?}: table from 1, place 0 to 3, rate 0 to 1");
    }
    Ok((
        n,
        ErrorProneDealer {
            roster_place,
            wrong_payout,
        },
    ))
}

/// `N:SHIFT:PCT`: table number, the table's shift (from 1), percent of each line's due
/// amount the dealer settles in the players' favour (-100 to 100, not 0).
fn hold_skew(s: &str) -> Result<(usize, HoldSkew)> {
    let flag = "--hold-skew";
    let parts: Vec<&str> = s.split(':').collect();
    let [n, shift, pct] = parts[..] else {
        bail!("{flag} {s:?}: expected TABLE:SHIFT:PCT, e.g. 1:2:60");
    };
    let n: usize = n
        .parse()
        .with_context(|| format!("{flag} {s:?}: table number"))?;
    let shift_no: u64 = shift
        .parse()
        .with_context(|| format!("{flag} {s:?}: shift"))?;
    let pct: i64 = pct
        .parse()
        .with_context(|| format!("{flag} {s:?}: percent"))?;
    if n == 0 || shift_no == 0 || pct == 0 || pct.abs() > HoldSkew::PCT_MAX {
        bail!("{flag} {s:?}: table and shift from 1, percent -100 to 100 and not 0");
    }
    Ok((n, HoldSkew { shift_no, pct }))
}

/// The cheats asked for, as flags give them.
pub struct Cheats<'a> {
    pub hole_carders: &'a [String],
    pub card_sharers: &'a [String],
    pub error_prone_dealers: &'a [String],
    pub hold_skews: &'a [String],
}

/// Places the cheats on `tables`, the floor's tables `first`, `first + 1`, ...
pub fn place(tables: Vec<TableSim>, first: usize, c: &Cheats) -> Result<Vec<TableSim>> {
    let holes = c
        .hole_carders
        .iter()
        .map(|s| table_box(s, "--hole-carder"))
        .collect::<Result<Vec<_>>>()?;
    let pairs = c
        .card_sharers
        .iter()
        .map(|s| table_box(s, "--card-sharers"))
        .collect::<Result<Vec<_>>>()?;
    let prone = c
        .error_prone_dealers
        .iter()
        .map(|s| error_prone(s))
        .collect::<Result<Vec<_>>>()?;
    let skews = c
        .hold_skews
        .iter()
        .map(|s| hold_skew(s))
        .collect::<Result<Vec<_>>>()?;
    let last = first + tables.len();
    let named = holes
        .iter()
        .map(|h| h.0)
        .chain(pairs.iter().map(|p| p.0))
        .chain(prone.iter().map(|p| p.0))
        .chain(skews.iter().map(|p| p.0));
    for n in named {
        if n < first || n >= last {
            bail!(
                "table {n} is not on this floor (tables {first} to {})",
                last - 1
            );
        }
    }
    let mut out = Vec::with_capacity(tables.len());
    for (i, mut t) in tables.into_iter().enumerate() {
        let n = first + i;
        let hole_carders: Vec<BoxNo> = holes.iter().filter(|h| h.0 == n).map(|h| h.1).collect();
        let sharers: Vec<BoxNo> = pairs.iter().filter(|p| p.0 == n).map(|p| p.1).collect();
        if !hole_carders.is_empty() || !sharers.is_empty() {
            let ev = Evaluator::new(t.config().rule_set);
            t = t.with_decider(Box::new(TableCheats {
                hole_carders,
                sharers,
                ev,
            }));
        }
        if let Some((_, d)) = prone.iter().find(|p| p.0 == n) {
            t = t.with_error_prone_dealer(*d);
        }
        if let Some((_, k)) = skews.iter().find(|p| p.0 == n) {
            t = t.with_hold_skew(*k);
        }
        out.push(t);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_read_or_refused_with_the_reason() {
        assert_eq!(table_box("3:2", "--hole-carder").unwrap(), (3, BoxNo(2)));
        for bad in ["3", "0:1", "3:0", "x:1", "3:300"] {
            assert!(table_box(bad, "--hole-carder").is_err(), "{bad}");
        }
        let (n, d) = error_prone("2:1:0.25").unwrap();
        assert_eq!((n, d.roster_place, d.wrong_payout), (2, 1, 0.25));
        for bad in ["2:1", "2:4:0.1", "2:1:1.5", "0:1:0.1"] {
            assert!(error_prone(bad).is_err(), "{bad}");
        }
        let (n, k) = hold_skew("1:2:-60").unwrap();
        assert_eq!((n, k.shift_no, k.pct), (1, 2, -60));
        for bad in ["1:2", "0:2:60", "1:0:60", "1:2:0", "1:2:101", "1:2:x"] {
            assert!(hold_skew(bad).is_err(), "{bad}");
        }
    }
}
