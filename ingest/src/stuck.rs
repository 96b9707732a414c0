//! Tables that stop advancing: a watcher raises `TableStuck` for each table whose oldest
//! held event is older than `IngestConfig::stuck_after`, with the held range, its bytes,
//! its age and the quarantined event it waits for, if the ledger names one.
//!
//! It runs on a timer, not per batch: a stuck table receives nothing that would wake a
//! batch. The ledger reads run on `spawn_blocking` (the ledger must never block a runtime
//! thread).

use crate::alerts::Raised;
use ledger::{Blocker, Gap, Ledger};
use schemas::api::AlertKind;
use std::sync::Arc;
use std::time::Duration;

/// The longest wait between two checks; shorter when `stuck_after` is shorter.
pub const STUCK_CHECK_EVERY_MAX: Duration = Duration::from_secs(10);
/// Most tables one check raises an alert for; the rest wait for the next check.
pub const STUCK_ALERTS_PER_CHECK_MAX: usize = 256;

/// How often to check for `stuck_after`: a quarter of it, within 100 ms and
/// `STUCK_CHECK_EVERY_MAX`.
pub(crate) fn check_every(stuck_after: Duration) -> Duration {
    (stuck_after / 4).clamp(Duration::from_millis(100), STUCK_CHECK_EVERY_MAX)
}

/// The alerts of the tables held for longer than `stuck_after` at `now_ns`.
pub(crate) fn stuck_alerts(ledger: &Ledger, now_ns: i64, stuck_after: Duration) -> Vec<Raised> {
    let after_ns = i64::try_from(stuck_after.as_nanos()).unwrap_or(i64::MAX);
    let mut gaps = ledger.reader().stuck(now_ns.saturating_sub(after_ns));
    gaps.truncate(STUCK_ALERTS_PER_CHECK_MAX);
    let blockers = ledger.reader().gap_blockers(&gaps);
    gaps.into_iter()
        .map(|gap| {
            let blocker = match &blockers {
                Ok(found) => Ok(found.get(&gap.table)),
                Err(e) => Err(e),
            };
            Raised {
                kind: AlertKind::TableStuck,
                stream_seq: 0,
                detail: describe(&gap, blocker, now_ns),
                table: gap.table,
            }
        })
        .collect()
}

/// The alert's words: the missing and held ranges, the held bytes, the age and the
/// blocking refusal (or why it was not read).
pub(crate) fn describe(
    gap: &Gap,
    blocker: Result<Option<&Blocker>, &ledger::Error>,
    now_ns: i64,
) -> String {
    let age_s = now_ns.saturating_sub(gap.since_ns) / 1_000_000_000;
    let blocker = match blocker {
        Ok(Some(b)) => format!(
            "; seq {} refused as {} (quarantine entry {})",
            b.seq.0, b.reason, b.quarantine_id
        ),
        Ok(None) => "; no refused event in the gap among the newest quarantine entries".into(),
        Err(e) => format!("; quarantine not read: {e}"),
    };
    format!(
        "missing seq {}..={}; held seq {}..={} ({} {}, {} bytes) for {age_s} s{blocker}",
        gap.missing_from.0,
        gap.missing_to.0,
        gap.missing_to.0 + 1,
        gap.held_last.0,
        gap.held,
        if gap.held == 1 { "event" } else { "events" },
        gap.held_bytes,
    )
}

/// Checks every `check_every(stuck_after)` and hands each check's alerts to `publish`.
/// Runs until aborted.
pub(crate) async fn watch<F, Fut>(
    ledger: Arc<Ledger>,
    clock: fn() -> i64,
    stuck_after: Duration,
    publish: F,
) where
    F: Fn(Vec<Raised>) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut tick = tokio::time::interval(check_every(stuck_after));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let l = ledger.clone();
        let found =
            tokio::task::spawn_blocking(move || stuck_alerts(&l, clock(), stuck_after)).await;
        match found {
            Ok(raised) if !raised.is_empty() => publish(raised).await,
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "stuck table check failed"),
        }
    }
}

/// The watcher's task, aborted when dropped: every return of `run` ends it.
pub(crate) struct Watcher(pub tokio::task::JoinHandle<()>);

impl Drop for Watcher {
    fn drop(&mut self) {
        self.0.abort();
    }
}
