//! The archiver: `serve --archive-after-days N` moves each sealed day N days past its end
//! into a day file, then compacts the value log (`ledger::tier::pass`). It runs beside
//! ingest and the API. Reads go on throughout; appends wait only while a segment's live
//! bytes are written again.
//!
//! Invariants: sled and file I/O run on the blocking pool only. A pass moves one day; a
//! stop gives up the day file being written at the next table, so a stop waits seconds,
//! not a day's compression. A failed pass is logged and tried again at
//! the next check; it never stops ingest. Looking for due days reads the seals only:
//! compaction runs after a move, not on every check. After a day moves, `after_move`
//! (the CLI's Parquet writer) runs for it; its failure is logged, and the day stays moved.
//! Then, and at each check, retention acts pending on this node whose day is archived
//! now are applied (`ledger::admin_pending`), each at its own stream time.

use crate::blocking;
use crate::Error;
use ledger::Ledger;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often the archiver looks for a day to move.
pub const ARCHIVE_CHECK_EVERY: Duration = Duration::from_secs(600);

const DAY_NS: i64 = 86_400_000_000_000;

/// How the archiver runs.
#[derive(Clone)]
pub struct ArchiverConfig {
    /// Days after a sealed day's end before it moves.
    pub after_days: u32,
    /// How often to look for a day to move.
    pub check_every: Duration,
    /// UTC ns now (`crate::system_clock_ns` in production).
    pub clock: fn() -> i64,
    /// Run on the blocking pool for each day moved, e.g. to write its Parquet files.
    pub after_move: Option<AfterMove>,
}

/// What runs after a day moves: given the ledger and the day, a line to log or an error.
pub type AfterMove = Arc<dyn Fn(&Ledger, &str) -> Result<String, String> + Send + Sync>;

/// Runs until `shutdown`; returns the days moved.
pub async fn run(
    config: ArchiverConfig,
    ledger: Arc<Ledger>,
    shutdown: impl Future<Output = ()>,
) -> Result<u64, Error> {
    let age_ns = i64::from(config.after_days).saturating_mul(DAY_NS);
    let stop = Arc::new(AtomicBool::new(false));
    let mut moved = 0u64;
    tokio::pin!(shutdown);
    loop {
        let pass = move_one(&config, &ledger, age_ns, stop.clone());
        let more = tokio::select! {
            r = pass => r,
            _ = &mut shutdown => {
                // The pass in flight gives up at its next table; nothing half-done stays.
                stop.store(true, Ordering::Relaxed);
                return Ok(moved);
            }
        };
        let more = match more {
            Ok(more) => {
                moved += u64::from(more);
                more
            }
            Err(e) => {
                tracing::error!(error = %e, "archive pass failed; trying again later");
                false
            }
        };
        let wait = if more {
            Duration::ZERO
        } else {
            config.check_every
        };
        tokio::select! {
            _ = &mut shutdown => return Ok(moved),
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// Moves the oldest due day, if any, and compacts; whether one moved.
async fn move_one(
    config: &ArchiverConfig,
    ledger: &Arc<Ledger>,
    age_ns: i64,
    stop: Arc<AtomicBool>,
) -> Result<bool, Error> {
    let now_ns = (config.clock)();
    let l = ledger.clone();
    let due = blocking(move || l.tier().days_to_archive(now_ns, age_ns)).await?;
    if due.is_empty() {
        apply_pending(ledger, now_ns).await?;
        return Ok(false);
    }
    let l = ledger.clone();
    let pass = blocking(move || l.tier().archive_pass(now_ns, age_ns, 1, &stop)).await?;
    let c = &pass.compaction;
    for (entry, plan) in &pass.moved {
        tracing::info!(
            day = %entry.day,
            events = entry.events,
            file_bytes = entry.file_len,
            wire_bytes = plan.wire_bytes,
            "day archived"
        );
    }
    tracing::info!(
        segments_retired = c.retired.len() as u64 + c.leftovers_removed,
        bytes_freed = c.bytes_freed,
        appends_held_ms_max = c.lock_held_ms_max,
        kept_live = c.kept_live,
        "value log compacted"
    );
    for why in &c.kept_damaged {
        tracing::error!(%why, "a value-log segment is damaged: kept (run verify)");
    }
    if let Some(after) = &config.after_move {
        for (entry, _) in &pass.moved {
            after_move(after.clone(), ledger.clone(), entry.day.clone()).await;
        }
    }
    apply_pending(ledger, now_ns).await?;
    Ok(!pass.moved.is_empty())
}

/// Applies the retention acts pending on this node whose day is archived now (the
/// ledger logs each outcome).
async fn apply_pending(ledger: &Arc<Ledger>, now_ns: i64) -> Result<(), Error> {
    let l = ledger.clone();
    blocking(move || l.tier().apply_pending_removals(now_ns)).await?;
    Ok(())
}

/// Runs `after` for `day` on the blocking pool and logs its outcome.
async fn after_move(after: AfterMove, ledger: Arc<Ledger>, day: String) {
    let d = day.clone();
    match tokio::task::spawn_blocking(move || after(&ledger, &d)).await {
        Ok(Ok(done)) => tracing::info!(%day, %done, "after the move"),
        Ok(Err(why)) => {
            tracing::error!(%day, %why, "after the move: failed; the day stays archived")
        }
        Err(e) => tracing::error!(%day, error = %e, "after the move: the task failed"),
    }
}
