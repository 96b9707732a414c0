//! Retention acts (`remove_day`) waiting on this node: the day is not archived here yet.
//!
//! A node that had not archived the day when the act arrived keeps the act pending in
//! `Space::Meta`, durable and bounded (`PENDING_MAX`). When the day is archived here
//! (`archive move`, serve's archiver), `Tier::apply_pending_removals` applies it with
//! the act's own stream time as "now", so the result is the peers' result. An act that
//! then does not apply (another seal content) is NOT applied for good: its log line says
//! so once, and the act is no longer pending. The act's admin log line shows each step,
//! with its time.

use crate::admin::{encode, LogLine, ADMIN_LOG_PREFIX};
use crate::faces::Tier;
use crate::store::{Op, Space};
use crate::{error::Error, owner::Ledger};

/// `Space::Meta` key prefix of a pending act: the rest is its log line's key suffix
/// (stream seq, message hash); the value is the day.
pub const PENDING_PREFIX: &[u8] = b"admin_pending/";
/// Most acts pending at once; one more is NOT applied, and says so.
pub const PENDING_MAX: usize = 1_000;

/// An instant for people: RFC 3339, UTC.
fn at(ns: i64) -> String {
    jiff::Timestamp::from_nanosecond(i128::from(ns))
        .map_or_else(|_| format!("{ns} ns"), |t| t.to_string())
}

/// The pending acts, in stream order: (key suffix, day), at most `PENDING_MAX + 1`.
fn pending(store: &dyn crate::store::Store) -> Result<Vec<(Vec<u8>, String)>, Error> {
    let mut out = Vec::new();
    for kv in store.range(Space::Meta, PENDING_PREFIX, None) {
        let (k, v) = kv?;
        if !k.starts_with(PENDING_PREFIX) || out.len() > PENDING_MAX {
            break;
        }
        let day = String::from_utf8(v)
            .map_err(|_| crate::record::corrupt("a pending admin act's day"))?;
        out.push((k[PENDING_PREFIX.len()..].to_vec(), day));
    }
    Ok(out)
}

impl Ledger {
    /// Keeps the act of `line` pending for `day` (its op goes into `ops`, committed with
    /// the log line); the outcome in words.
    pub(crate) fn hold_pending(&self, day: &str, line: &LogLine, ops: &mut Vec<Op>) -> String {
        let held = match pending(self.store.as_ref()) {
            Ok(p) => p.len(),
            Err(e) => return format!("NOT applied on this node: the pending acts: {e}"),
        };
        if held >= PENDING_MAX {
            tracing::error!(%day, held, "admin act remove_day NOT applied: too many pending");
            return format!(
                "NOT applied on this node: day {day} is not archived here, and {held} acts are pending already"
            );
        }
        let suffix = crate::admin::line_key(line)[ADMIN_LOG_PREFIX.len()..].to_vec();
        let key = [PENDING_PREFIX, &suffix].concat();
        ops.push(Op::Put(Space::Meta, key, day.as_bytes().to_vec()));
        format!(
            "PENDING on this node since {}: day {day} is not in this node's archive tier yet; applied when it is, as of the act's stream time",
            at(line.received_at_ns)
        )
    }
}

impl Tier<'_> {
    /// Applies each pending act whose day is archived here now, at the act's stream time;
    /// `now_ns` only dates the log line. Returns each applied act's outcome.
    pub fn apply_pending_removals(&self, now_ns: i64) -> Result<Vec<String>, Error> {
        let mut done = Vec::new();
        for (suffix, day) in pending(self.store.as_ref())? {
            if self.tier_entry(&day)?.is_none() {
                continue;
            }
            let pending_key = [PENDING_PREFIX, &suffix].concat();
            let log_key = [ADMIN_LOG_PREFIX, &suffix].concat();
            let mut ops = vec![Op::Remove(Space::Meta, pending_key)];
            if let Some(v) = self.store.get(Space::Meta, &log_key)? {
                let mut line: LogLine = serde_json::from_slice(&v)
                    .map_err(|e| crate::record::corrupt(&format!("an admin log line: {e}")))?;
                let result = match self.remove_day(&day, &line) {
                    Ok(r) => r,
                    Err(e) => format!("NOT applied on this node, for good: {e}"),
                };
                line.outcome = format!(
                    "{}; then at {}, the day archived here: {result}",
                    line.outcome,
                    at(now_ns)
                );
                tracing::warn!(kind = %line.kind, admin = %line.admin, outcome = %line.outcome, "admin act done after pending");
                ops.push(Op::Put(Space::Meta, log_key, encode(&line)));
                done.push(line.outcome);
            }
            self.store.commit(ops)?;
        }
        if !done.is_empty() {
            self.store.flush()?;
        }
        Ok(done)
    }

    /// The days with a pending act, in stream order.
    pub fn pending_removals(&self) -> Result<Vec<String>, Error> {
        Ok(pending(self.store.as_ref())?
            .into_iter()
            .map(|(_, d)| d)
            .collect())
    }
}
