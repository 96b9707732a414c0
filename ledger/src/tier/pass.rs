//! One archiving pass, as `archive move` and `serve --archive-after-days` run it: the
//! sealed days old enough move into day files, oldest first, then compaction frees the
//! value log they emptied.

use super::compact::Compaction;
use super::{ArchivePlan, TierEntry};
use crate::error::Error;
use crate::faces::Tier;
use std::sync::atomic::AtomicBool;

/// What one pass did.
#[derive(Debug, Clone)]
pub struct ArchivePass {
    /// The days moved, oldest first: each day's catalog entry and its checked plan.
    pub moved: Vec<(TierEntry, ArchivePlan)>,
    /// Days old enough still hot, beyond the pass's bound.
    pub days_left: usize,
    /// The compaction after the moves.
    pub compaction: Compaction,
}

impl Tier<'_> {
    /// Moves every sealed, hot day whose end is at least `age_ns` before `now_ns`, at most
    /// `days_max` of them, then compacts. A day that fails to move stops the pass; the
    /// days moved before it stay moved. Once `stop` is set, a day being written is given
    /// up (`archive_write_until`).
    pub fn archive_pass(
        &self,
        now_ns: i64,
        age_ns: i64,
        days_max: usize,
        stop: &AtomicBool,
    ) -> Result<ArchivePass, Error> {
        let days = self.days_to_archive(now_ns, age_ns)?;
        let mut moved = Vec::new();
        for day in days.iter().take(days_max) {
            moved.push(self.archive_move_until(day, stop)?);
        }
        Ok(ArchivePass {
            days_left: days.len().saturating_sub(days_max),
            moved,
            compaction: self.compact_values()?,
        })
    }
}
