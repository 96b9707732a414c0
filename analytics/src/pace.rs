//! A dealer's pace: dealing time summed over stints, and rounds per hour of it.
//!
//! A stint is a dealer's run of a table's rounds with no pause over `STINT_GAP_MAX_NS`
//! between one round's close and the next round's opening. Its time runs from its first
//! round's opening to its last round's close. Each round adds its part: from the
//! previous round's close when it continues the stint, else from its own opening.
//!
//! Invariants:
//! - A round's part depends only on the round and the table's round before it, so a
//!   read model can take it back exactly when either changes.
//! - A part is never negative and at most `STINT_GAP_MAX_NS`: a round that stays open
//!   longer than that is a pause at the table, not dealing.
//! - Time is integer ns; rounds per hour are integer thousandths.

/// The longest pause between a dealer's rounds at one table within one stint: 20
/// minutes, a dealer's usual break. A longer pause starts a new stint.
pub const STINT_GAP_MAX_NS: i64 = 20 * 60 * 1_000_000_000;

/// The least dealing time for which rounds per hour are given: 30 minutes. Below it a
/// few rounds' spans would decide the rate.
pub const DEALING_NS_MIN: i64 = 30 * 60 * 1_000_000_000;

/// A round's opening and close, UTC ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoundSpan {
    /// When the round opened.
    pub opened_at_ns: i64,
    /// When it closed.
    pub closed_at_ns: i64,
}

/// What one round adds to its dealer's dealing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StintPart {
    /// Dealing time it adds, ns: 0 to `STINT_GAP_MAX_NS`.
    pub dealing_ns: i64,
    /// Whether it starts a stint.
    pub starts: bool,
}

/// The part of `this` round, given the table's round before it when that round was the
/// same dealer's (`same_dealer_before`; `None` otherwise or when unknown).
pub fn stint_part(same_dealer_before: Option<RoundSpan>, this: RoundSpan) -> StintPart {
    let continues = same_dealer_before
        .filter(|p| this.opened_at_ns.saturating_sub(p.closed_at_ns) <= STINT_GAP_MAX_NS);
    let from_ns = match continues {
        Some(p) => p.closed_at_ns,
        None => this.opened_at_ns,
    };
    let earliest_ns = this.closed_at_ns.saturating_sub(STINT_GAP_MAX_NS);
    let dealing_ns = this
        .closed_at_ns
        .saturating_sub(from_ns.max(earliest_ns))
        .max(0);
    let part = StintPart {
        dealing_ns,
        starts: continues.is_none(),
    };
    assert!(
        (0..=STINT_GAP_MAX_NS).contains(&part.dealing_ns),
        "a round's part is bounded"
    );
    part
}

/// Rounds per hour of `dealing_ns`, in thousandths, rounded down; `None` below
/// `DEALING_NS_MIN`.
pub fn rounds_per_hour_milli(rounds: u64, dealing_ns: i64) -> Option<u64> {
    if dealing_ns < DEALING_NS_MIN {
        return None;
    }
    let hour_milli_ns: u128 = 3_600_000_000_000 * 1_000;
    let x = u128::from(rounds) * hour_milli_ns / dealing_ns.unsigned_abs() as u128;
    Some(u64::try_from(x).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN_NS: i64 = 60_000_000_000;

    fn span(opened_min: i64, closed_min: i64) -> RoundSpan {
        RoundSpan {
            opened_at_ns: opened_min * MIN_NS,
            closed_at_ns: closed_min * MIN_NS,
        }
    }

    #[test]
    fn a_stint_runs_from_its_first_opening_to_its_last_close() {
        // Rounds 0-2, 3-5, 6-8 minutes: one stint of 8 minutes.
        let a = stint_part(None, span(0, 2));
        let b = stint_part(Some(span(0, 2)), span(3, 5));
        let c = stint_part(Some(span(3, 5)), span(6, 8));
        assert_eq!((a.dealing_ns, a.starts), (2 * MIN_NS, true));
        assert_eq!((b.dealing_ns, b.starts), (3 * MIN_NS, false));
        assert_eq!(a.dealing_ns + b.dealing_ns + c.dealing_ns, 8 * MIN_NS);
    }

    #[test]
    fn a_pause_over_the_bound_starts_a_new_stint() {
        // 20 minutes between close and opening continue; 21 start anew.
        let on = stint_part(Some(span(0, 2)), span(22, 23));
        assert_eq!((on.dealing_ns, on.starts), (20 * MIN_NS, false));
        let anew = stint_part(Some(span(0, 2)), span(23, 24));
        assert_eq!((anew.dealing_ns, anew.starts), (MIN_NS, true));
        // Another dealer's round before: a new stint however short the pause.
        assert!(stint_part(None, span(2, 3)).starts);
    }

    #[test]
    fn odd_clocks_and_long_rounds_stay_within_bounds() {
        // A round closing before the previous one closed adds nothing.
        assert_eq!(
            stint_part(Some(span(0, 10)), span(1, 5)).dealing_ns,
            0,
            "no negative time"
        );
        // A round open for 3 hours counts 20 minutes, alone or continuing.
        assert_eq!(stint_part(None, span(0, 180)).dealing_ns, 20 * MIN_NS);
        assert_eq!(
            stint_part(Some(span(0, 1)), span(2, 180)).dealing_ns,
            20 * MIN_NS
        );
        // Extreme times saturate rather than wrap.
        let far = RoundSpan {
            opened_at_ns: i64::MIN,
            closed_at_ns: i64::MAX,
        };
        assert_eq!(stint_part(None, far).dealing_ns, STINT_GAP_MAX_NS);
        assert!(stint_part(Some(far), far).dealing_ns >= 0);
    }

    #[test]
    fn rounds_per_hour_are_null_below_the_least_dealing_time() {
        assert_eq!(rounds_per_hour_milli(40, 29 * MIN_NS), None);
        assert_eq!(rounds_per_hour_milli(30, 30 * MIN_NS), Some(60_000));
        // 100 rounds in 90 minutes: 66.666 an hour, rounded down.
        assert_eq!(rounds_per_hour_milli(100, 90 * MIN_NS), Some(66_666));
        assert_eq!(rounds_per_hour_milli(0, 60 * MIN_NS), Some(0));
    }
}
