//! A table's chip tray, by denomination: what the dealer holds, takes in and pays out.
//!
//! Pure and allocation-free on the per-round path: the counts are a fixed array over
//! `DENOMINATIONS`. The tray's total always equals the sum of its counts (asserted after
//! every move). Amounts are whole chips of the smallest denomination; any other amount is
//! refused with `TrayError::NotChips`, never rounded.

use schemas::{ChipCount, Money};

/// The chip denominations of a tray, in minor units, smallest first (1 to 1,000 SGD).
pub const DENOMINATIONS: [i64; 6] = [100, 500, 2_500, 10_000, 50_000, 100_000];

/// How many denominations a tray holds.
pub const DENOMINATION_LEN: usize = DENOMINATIONS.len();

/// The tray's par: the chips of each denomination it opens with and is filled or
/// credited back to.
pub const PAR_CHIPS: [u32; DENOMINATION_LEN] = [200, 200, 200, 200, 100, 100];

/// A denomination below `par / LOW_DIVISOR` chips calls for a fill.
const LOW_DIVISOR: u32 = 4;

/// A denomination above `par * HIGH_MULTIPLE` chips calls for a credit.
const HIGH_MULTIPLE: u32 = 2;

/// Most chips of one denomination a tray holds: a move beyond it is refused.
pub const CHIPS_PER_DENOMINATION_MAX: u32 = 1_000_000;

/// Chips by denomination (index into `DENOMINATIONS`).
pub type Chips = [u32; DENOMINATION_LEN];

/// Why a tray move could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TrayError {
    /// The amount is not a multiple of the smallest chip.
    #[error("{amount} is not a whole number of {} chips", Money(DENOMINATIONS[0]))]
    NotChips {
        /// The amount, minor units.
        amount: Money,
    },
    /// The amount is negative.
    #[error("{amount} is negative: a tray moves positive amounts")]
    Negative {
        /// The amount, minor units.
        amount: Money,
    },
    /// The tray lacks the chips to pay the amount exactly.
    #[error("the tray holds too few chips to pay {amount} exactly")]
    Short {
        /// The amount, minor units.
        amount: Money,
    },
    /// A denomination would pass `CHIPS_PER_DENOMINATION_MAX` chips.
    #[error("a denomination would exceed {CHIPS_PER_DENOMINATION_MAX} chips")]
    Full,
}

/// A chip tray: its counts and their total.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tray {
    chips: Chips,
    total: Money,
}

impl Default for Tray {
    fn default() -> Tray {
        Tray::at_par()
    }
}

impl Tray {
    /// A tray holding `PAR_CHIPS`: the opening inventory of a table.
    pub fn at_par() -> Tray {
        let mut t = Tray {
            chips: [0; DENOMINATION_LEN],
            total: Money::ZERO,
        };
        t.add(&PAR_CHIPS).expect("par fits in a tray");
        t
    }

    /// The tray's total, in minor units.
    pub fn total(&self) -> Money {
        self.total
    }

    /// The chip counts by denomination (index into `DENOMINATIONS`).
    pub fn chips(&self) -> &Chips {
        &self.chips
    }

    /// The counts as an inventory event records them.
    pub fn counts(&self) -> Vec<ChipCount> {
        to_counts(&self.chips)
    }

    /// Chips that come in (a lost stake): `amount` in the fewest chips.
    pub fn take_in(&mut self, amount: Money) -> Result<(), TrayError> {
        self.add(&fewest_chips(amount)?)
    }

    /// Chips that go out (a payout, chips sold): the largest chips the tray holds first.
    /// `Short` when the tray cannot make `amount` exactly; the tray is then unchanged.
    pub fn pay_out(&mut self, amount: Money) -> Result<(), TrayError> {
        let out = self.change_for(amount)?;
        self.remove(&out);
        Ok(())
    }

    /// The chips `pay_out(amount)` would take, without taking them.
    pub fn change_for(&self, amount: Money) -> Result<Chips, TrayError> {
        let mut left = whole_chips(amount)?;
        let mut out = [0u32; DENOMINATION_LEN];
        for i in (0..DENOMINATION_LEN).rev() {
            let n = (left / DENOMINATIONS[i]).min(i64::from(self.chips[i]));
            out[i] = n as u32;
            left -= n * DENOMINATIONS[i];
        }
        match left {
            0 => Ok(out),
            _ => Err(TrayError::Short { amount }),
        }
    }

    /// Adds chips (a fill, chips taken in).
    pub fn add(&mut self, chips: &Chips) -> Result<(), TrayError> {
        let mut next = self.chips;
        for (n, add) in next.iter_mut().zip(chips) {
            *n = n
                .checked_add(*add)
                .filter(|v| *v <= CHIPS_PER_DENOMINATION_MAX)
                .ok_or(TrayError::Full)?;
        }
        self.chips = next;
        self.total = self.total + value(chips);
        self.check();
        Ok(())
    }

    /// Removes chips the tray holds (a credit, a payout).
    fn remove(&mut self, chips: &Chips) {
        for (n, take) in self.chips.iter_mut().zip(chips) {
            assert!(*n >= *take, "the tray removes only chips it holds");
            *n -= *take;
        }
        self.total = self.total - value(chips);
        self.check();
    }

    /// Removes chips the tray holds, as a credit returns them.
    pub fn credit(&mut self, chips: &Chips) {
        self.remove(chips);
    }

    /// The chips a fill brings when a denomination runs low: every denomination below
    /// par back to par. `None` when no denomination is low.
    pub fn fill_needed(&self) -> Option<Chips> {
        let low = (0..DENOMINATION_LEN).any(|i| self.chips[i] < PAR_CHIPS[i] / LOW_DIVISOR);
        low.then(|| self.to_par())
    }

    /// The chips a fill brings so that `amount` can be paid: every denomination below
    /// par back to par, and `amount` in the fewest chips.
    pub fn fill_to_pay(&self, amount: Money) -> Result<Chips, TrayError> {
        let mut chips = self.to_par();
        for (c, extra) in chips.iter_mut().zip(fewest_chips(amount)?) {
            *c += extra;
        }
        Ok(chips)
    }

    /// The chips a credit returns when a denomination runs high: every denomination
    /// above par back to par. `None` when no denomination is high.
    pub fn credit_needed(&self) -> Option<Chips> {
        let high = (0..DENOMINATION_LEN).any(|i| self.chips[i] > PAR_CHIPS[i] * HIGH_MULTIPLE);
        high.then(|| {
            let mut out = [0u32; DENOMINATION_LEN];
            for i in 0..DENOMINATION_LEN {
                out[i] = self.chips[i].saturating_sub(PAR_CHIPS[i]);
            }
            out
        })
    }

    fn to_par(&self) -> Chips {
        let mut out = [0u32; DENOMINATION_LEN];
        for i in 0..DENOMINATION_LEN {
            out[i] = PAR_CHIPS[i].saturating_sub(self.chips[i]);
        }
        out
    }

    /// The tray's total is the value of its counts.
    fn check(&self) {
        assert_eq!(self.total, value(&self.chips), "tray total == its counts");
    }
}

/// The value of `chips`, in minor units.
pub fn value(chips: &Chips) -> Money {
    Money(
        chips
            .iter()
            .zip(DENOMINATIONS)
            .map(|(&n, d)| i64::from(n) * d)
            .sum(),
    )
}

/// Chips as an inventory event lists them, every denomination, smallest first.
pub fn to_counts(chips: &Chips) -> Vec<ChipCount> {
    chips
        .iter()
        .zip(DENOMINATIONS)
        .map(|(&n, d)| ChipCount {
            denomination: Money(d),
            chips: n,
        })
        .collect()
}

/// `amount` in the fewest chips (largest first).
pub fn fewest_chips(amount: Money) -> Result<Chips, TrayError> {
    let mut left = whole_chips(amount)?;
    let mut out = [0u32; DENOMINATION_LEN];
    for i in (0..DENOMINATION_LEN).rev() {
        let n = left / DENOMINATIONS[i];
        out[i] = u32::try_from(n)
            .ok()
            .filter(|v| *v <= CHIPS_PER_DENOMINATION_MAX)
            .ok_or(TrayError::Full)?;
        left -= n * DENOMINATIONS[i];
    }
    Ok(out)
}

/// `amount` when it is a non-negative whole number of the smallest chip.
fn whole_chips(amount: Money) -> Result<i64, TrayError> {
    if amount.0 < 0 {
        return Err(TrayError::Negative { amount });
    }
    if amount.0 % DENOMINATIONS[0] != 0 {
        return Err(TrayError::NotChips { amount });
    }
    Ok(amount.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_par_tray_totals_its_counts() {
        let t = Tray::at_par();
        assert_eq!(t.total(), Money(17_620_000));
        assert_eq!(t.counts().len(), DENOMINATION_LEN);
        assert_eq!(t.fill_needed(), None);
        assert_eq!(t.credit_needed(), None);
    }

    #[test]
    fn chips_in_and_out_move_the_total_by_the_amount() {
        let mut t = Tray::at_par();
        t.take_in(Money(12_600)).unwrap();
        assert_eq!(t.total(), Money(17_632_600));
        t.pay_out(Money(37_500)).unwrap();
        assert_eq!(t.total(), Money(17_595_100));
        assert_eq!(
            t.take_in(Money(150)),
            Err(TrayError::NotChips { amount: Money(150) })
        );
        assert_eq!(
            t.pay_out(Money(-100)),
            Err(TrayError::Negative {
                amount: Money(-100)
            })
        );
    }

    #[test]
    fn a_short_tray_is_filled_to_pay_and_then_credited_back_to_par() {
        let mut t = Tray::at_par();
        let big = Money(100_000_000);
        assert_eq!(t.pay_out(big), Err(TrayError::Short { amount: big }));
        assert_eq!(t, Tray::at_par(), "a refused payout moves nothing");
        let fill = t.fill_to_pay(big).unwrap();
        t.add(&fill).unwrap();
        t.pay_out(big).unwrap();
        assert_eq!(t.total(), Tray::at_par().total());
        t.take_in(Money(30_000_000)).unwrap();
        let credit = t.credit_needed().expect("1,000 chips run high");
        t.credit(&credit);
        assert_eq!(t, Tray::at_par());
    }

    #[test]
    fn a_low_denomination_calls_for_a_fill_to_par() {
        let mut t = Tray::at_par();
        t.pay_out(Money(100 * 199)).unwrap();
        // 19,900 is paid largest first: 1 of 10,000, 3 of 2,500, 4 of 500, 4 of 100.
        assert_eq!(t.chips()[0], 196);
        let mut u = Tray::at_par();
        u.pay_out(Money(100_000 * 80)).unwrap();
        let fill = u.fill_needed().expect("20 of 100 chips is low");
        assert_eq!(fill, [0, 0, 0, 0, 0, 80]);
        assert_eq!(value(&fill), Money(8_000_000));
    }
}
