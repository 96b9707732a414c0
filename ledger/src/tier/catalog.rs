//! The archive tier's catalog by range: what the ledger keeps so that counting archived
//! days and finding the days still to archive read nothing per archived day.
//!
//! Two `Space::Meta` keys, written in the commit that catalogs a day (`archive_commit`):
//! - `TIER_DAYS_KEY`: days in the catalog (u64 BE).
//! - `TIER_THROUGH_KEY`: a day such that every sealed day up to it is in the catalog.
//!   Days to archive are looked for among the seals after it only.
//!
//! A ledger cataloged before these keys has neither: its first reads scan as before, and
//! its next move writes both, from one scan.

use crate::faces::Tier;
use crate::store::{Op, Space};
use crate::{error::Error, owner::Ledger};

/// `Space::Meta` key of the count of days in the tier catalog.
pub const TIER_DAYS_KEY: &[u8] = b"tier_days";
/// `Space::Meta` key of the day through which every sealed day is in the catalog.
pub const TIER_THROUGH_KEY: &[u8] = b"tier_through";

impl Ledger {
    /// Days in the catalog, counted key by key: for a ledger without `TIER_DAYS_KEY`.
    fn tier_days_scanned(&self) -> Result<u64, Error> {
        let mut n = 0;
        for k in self.store.keys(Space::Tier, &[], None) {
            k?;
            n += 1;
        }
        Ok(n)
    }

    /// The first seal key to look at for days still hot: just after `TIER_THROUGH_KEY`'s
    /// day, or the first seal when there is none.
    pub(crate) fn hot_seals_from(&self) -> Result<Vec<u8>, Error> {
        Ok(match self.store.get(Space::Meta, TIER_THROUGH_KEY)? {
            Some(mut day) => {
                day.push(0);
                day
            }
            None => Vec::new(),
        })
    }

    /// The ops that keep the count and the day through which all are cataloged, for the
    /// commit that catalogs `day`. Called under the append lock, before that commit.
    pub(crate) fn catalog_ops(&self, day: &str) -> Result<Vec<Op>, Error> {
        let count = self.tier().tier_day_count()? + 1;
        let mut through: Option<Vec<u8>> = self.store.get(Space::Meta, TIER_THROUGH_KEY)?;
        let from = match &through {
            Some(d) => [d.as_slice(), &[0]].concat(),
            None => Vec::new(),
        };
        // Seals after the mark, in day order, while each is `day` or already cataloged.
        for kv in self.store.keys(Space::Seal, &from, None) {
            let k = kv?;
            let cataloged = k == day.as_bytes() || self.store.get(Space::Tier, &k)?.is_some();
            if !cataloged {
                break;
            }
            through = Some(k);
        }
        let mut ops = vec![Op::Put(
            Space::Meta,
            TIER_DAYS_KEY.to_vec(),
            count.to_be_bytes().to_vec(),
        )];
        if let Some(t) = through {
            ops.push(Op::Put(Space::Meta, TIER_THROUGH_KEY.to_vec(), t));
        }
        Ok(ops)
    }
}

impl Tier<'_> {
    /// Days in the tier catalog (archived or removed): one read of the kept count.
    pub fn tier_day_count(&self) -> Result<u64, Error> {
        match self.store.get(Space::Meta, TIER_DAYS_KEY)? {
            Some(v) => crate::record::be_u64(&v),
            None => self.tier_days_scanned(),
        }
    }
}
