//! Admin acts (`schemas::admin`) in the append path: each is taken at its point of the
//! stream, in order with every table's events, and its signature is checked here, by
//! this node, against the admin keys it trusts. So every replica applies the same acts at
//! the same points (docs/DESIGN.md, every ledger node is a replica of the stream).
//!
//! - `clock_skew` takes effect inside the call: the events after it are judged by it.
//! - `quarantine_limits` take effect from the next call (a call ends at each act).
//! - `quarantine_purge` sets its target inside the call; the removal runs in steps after
//!   (`purge`).
//! - `unfence` runs after the call's commit (`Deferred`), through `Writer::unfence`;
//!   `Writer::append` ends a call at each admin act, so nothing after one is judged
//!   before it took effect.
//! - `remove_day` runs after the call's commit too, through `Tier::retention_remove`, its
//!   "now" the act's stream timestamp, so every node decides alike. It deletes the day's
//!   Parquet files beside the day file as well. A node where the day is not archived yet
//!   keeps the act pending (`admin_pending`) and applies it when the day is archived, at
//!   the same "now". A node that cannot apply it (another seal content, a day younger than
//!   its retention) logs the act as NOT applied, naming why: a replica never differs
//!   silently.
//! - An act that does not check out (malformed, an untrusted key, a bad signature, out of
//!   range) is quarantined as `admin_refused`, verbatim: evidence, never applied.
//!
//! Every act taken is logged in `Space::Meta` under `ADMIN_LOG_PREFIX`, its stream seq
//! and its message's hash (one JSON object: the act as received, its signer, and what
//! it did). A redelivery finds its line and is not taken again.

use crate::call::Call;
use crate::faces::{Reader, Verifier};
use crate::refuse::quarantine;
use crate::store::{Op, Space};
use crate::types::{reason, Appended, Incoming, Outcomes};
use crate::{error::Error, owner::Ledger};
use schemas::admin::{Act, AdminAct, AdminError};

/// `Space::Meta` key prefix of the admin log (`log_key`).
pub const ADMIN_LOG_PREFIX: &[u8] = b"admin_log/";
/// Most admin log lines one `Reader::admin_log` listing returns.
pub const ADMIN_LOG_LIST_MAX: usize = 10_000;

pub use crate::types::AdminLogLine as LogLine;
use crate::types::DeferredAct as Deferred;

/// `prefix ++ stream seq (u64 BE) ++ the first 8 bytes of BLAKE3 over the message`: a
/// redelivery finds its line; another message at a reused stream seq (a stream made
/// again) does not.
fn log_key(stream_seq: u64, wire: &[u8]) -> Vec<u8> {
    let mut k = ADMIN_LOG_PREFIX.to_vec();
    k.extend_from_slice(&stream_seq.to_be_bytes());
    k.extend_from_slice(&blake3::hash(wire).as_bytes()[..8]);
    k
}

/// A log line's key, from the message it keeps.
pub(crate) fn line_key(line: &LogLine) -> Vec<u8> {
    log_key(
        line.stream_seq,
        &hex::decode(&line.wire_hex).unwrap_or_default(),
    )
}

pub(crate) fn encode(line: &LogLine) -> Vec<u8> {
    serde_json::to_vec(line).expect("an admin log line serializes")
}

/// Where `Writer::append` ends a call: just after the first admin act, when more follows.
pub(crate) fn cut(events: &[Incoming]) -> Option<usize> {
    let i = events
        .iter()
        .position(|m| schemas::admin::is_admin_act(&m.bytes))?;
    (i + 1 < events.len()).then_some(i + 1)
}

impl Ledger {
    /// Takes or refuses the admin act `msg` (the append path's hook).
    pub(crate) fn admin_act(
        &self,
        state: &crate::owner::State,
        call: &mut Call,
        msg: &Incoming,
        parsed: Option<Result<AdminAct, AdminError>>,
    ) -> Result<Appended, Error> {
        let act = match parsed {
            Some(Ok(a)) => a,
            Some(Err(e)) => return Ok(refuse(state, call, msg, e.to_string())),
            None => return Ok(refuse(state, call, msg, "not an admin act".into())),
        };
        let kind = act.body.act.kind();
        let key = log_key(msg.stream_seq, &msg.bytes);
        let again = call.deferred.iter().any(|d| line_key(&d.line) == key);
        if again || self.store.get(Space::Meta, &key)?.is_some() {
            return Ok(Appended::Admin { kind, first: false });
        }
        if !state.trust.admin_keys.contains(&act.admin) {
            let why = format!("admin key {} is not trusted", act.admin);
            return Ok(refuse(state, call, msg, why));
        }
        if !act.signature_verifies() {
            let why = "the admin signature does not verify".to_string();
            return Ok(refuse(state, call, msg, why));
        }
        let line = LogLine {
            stream_seq: msg.stream_seq,
            received_at_ns: msg.received_at_ns,
            kind: kind.to_string(),
            table: None,
            admin: act.admin.to_hex(),
            note: act.body.note.clone(),
            outcome: String::new(),
            wire_hex: hex::encode(&msg.bytes),
        };
        if let Err(why) = self.take(state, call, &act.body.act, line, key) {
            return Ok(refuse(state, call, msg, why));
        }
        Ok(Appended::Admin { kind, first: true })
    }

    /// Takes a checked act into `call`: its effect inside the call and its log line, or
    /// its deferred effect. `Err` says why the act is out of range.
    fn take(
        &self,
        state: &crate::owner::State,
        call: &mut Call,
        act: &Act,
        mut line: LogLine,
        key: Vec<u8>,
    ) -> Result<(), String> {
        match act {
            Act::ClockSkew { max_ns } if *max_ns <= 0 => {
                return Err(format!("clock skew limit {max_ns} ns: must be above 0"));
            }
            Act::ClockSkew { max_ns } => {
                call.ops.push(Op::Put(
                    Space::Meta,
                    crate::settings::CLOCK_SKEW_KEY.to_vec(),
                    (*max_ns as u64).to_be_bytes().to_vec(),
                ));
                call.clock_skew_max_ns = *max_ns;
                line.outcome = format!("clock skew limit {max_ns} ns from here on");
                tracing::warn!(max_ns, admin = %line.admin, "admin act: clock skew limit set");
                call.ops.push(Op::Put(Space::Meta, key, encode(&line)));
            }
            Act::QuarantinePurge { below_id } => {
                let target = self.order_purge(state, call, *below_id);
                line.outcome = format!(
                    "quarantine entries below id {target} removed in steps (asked {below_id}); fenced tables' kept"
                );
                tracing::warn!(below_id, target, admin = %line.admin, "admin act: quarantine purge ordered");
                call.ops.push(Op::Put(Space::Meta, key, encode(&line)));
            }
            Act::QuarantineLimits { limits } => {
                limits.check()?;
                call.ops.push(crate::quarantine_limits::limits_op(limits));
                call.quarantine_limits = Some(*limits);
                line.outcome = format!("quarantine limits from here on: {limits:?}");
                tracing::warn!(?limits, admin = %line.admin, "admin act: quarantine limits set");
                call.ops.push(Op::Put(Space::Meta, key, encode(&line)));
            }
            Act::Unfence { table } => {
                line.table = Some(table.to_string());
                let act = act.clone();
                call.deferred.push(Deferred { act, line });
            }
            Act::RemoveDay { .. } => {
                let act = act.clone();
                call.deferred.push(Deferred { act, line });
            }
        }
        Ok(())
    }

    /// Runs the effects of the admin acts the last call took, logs each, and flushes:
    /// an act is durable before anything after it is appended. A refused effect (a table
    /// still damaged) is logged as such; it stops nothing.
    pub(crate) fn run_deferred(&self, outcomes: &Outcomes) -> Result<(), Error> {
        let deferred = std::mem::take(&mut self.lock().admin_deferred);
        let took_any = outcomes
            .events
            .iter()
            .any(|o| matches!(o, Appended::Admin { first: true, .. }));
        for Deferred { act, mut line } in deferred {
            let mut ops = Vec::new();
            line.outcome = self.effect(&act, &line, &mut ops);
            tracing::warn!(kind = %line.kind, admin = %line.admin, outcome = %line.outcome, "admin act done");
            ops.push(Op::Put(Space::Meta, line_key(&line), encode(&line)));
            self.store.commit(ops)?;
        }
        if took_any {
            self.flush()?;
        }
        Ok(())
    }

    /// One deferred act's effect, in words; `ops` takes what commits with its log line.
    fn effect(&self, act: &Act, line: &LogLine, ops: &mut Vec<Op>) -> String {
        let by = format!("admin {}: {}", line.admin, line.note);
        match act {
            Act::Unfence { table } => match self.writer().unfence(table, &by, line.received_at_ns) {
                Ok(r) => format!(
                    "unfenced {table}: {} kept entries appended again ({} stored, {} held, {} refused); head seq {}",
                    r.entries, r.stored, r.held, r.refused, r.head_seq
                ),
                Err(e) => format!("not unfenced: {e}"),
            },
            Act::RemoveDay { day, .. } => match self.remove_day(day, line) {
                Ok(done) => done,
                Err(_) if matches!(self.tier().tier_entry(day), Ok(None)) => {
                    self.hold_pending(day, line, ops)
                }
                Err(e) => {
                    tracing::error!(day = %day, error = %e, "admin act remove_day NOT applied on this node");
                    format!("NOT applied on this node: {e}")
                }
            },
            Act::ClockSkew { .. } | Act::QuarantinePurge { .. } | Act::QuarantineLimits { .. } => {
                "taken in its call".to_string()
            }
        }
    }

    /// Removes `day` by the act `line` keeps, at the act's stream time, and the day's
    /// Parquet files beside its day file.
    pub(crate) fn remove_day(&self, day: &str, line: &LogLine) -> Result<String, Error> {
        let act = hex::decode(&line.wire_hex)
            .ok()
            .and_then(|w| AdminAct::from_wire(&w))
            .and_then(Result::ok)
            .ok_or_else(|| Error::Tier("the act's message does not read".into()))?;
        let entry = self
            .tier()
            .tier_entry(day)?
            .ok_or_else(|| Error::Tier(format!("day {day} is not in this node's archive tier")))?;
        if entry.state == crate::tier::TierState::Removed {
            let parquet = self.delete_day_parquet(day)?;
            return Ok(format!(
                "day {day} was removed by retention already; {parquet} Parquet files deleted"
            ));
        }
        let seal = self
            .reader()
            .day_seal(day)?
            .ok_or_else(|| Error::Tier(format!("day {day} has no seal on this node")))?;
        let content = seal.content_digest().to_string();
        if matches!(&act.body.act, Act::RemoveDay { seal_content, .. } if *seal_content != content)
        {
            let why = format!("this node's seal of day {day} seals other content ({content})");
            return Err(Error::Tier(why));
        }
        let removal = crate::tier::retention::Removal::from_act(&entry, &act, line.received_at_ns)
            .ok_or_else(|| Error::Tier("the act is not a remove_day".into()))?;
        let done = self
            .tier()
            .retention_remove(&removal, line.received_at_ns)?;
        debug_assert_eq!(done.state, crate::tier::TierState::Removed);
        let parquet = self.delete_day_parquet(day)?;
        Ok(format!(
            "day {} removed by retention ({} days): file {} and {parquet} Parquet files deleted; seal {} keeps its heads",
            done.day, removal.retention_days, done.file, done.seal_digest
        ))
    }
}

impl Reader<'_> {
    /// The admin log, oldest first (at most `ADMIN_LOG_LIST_MAX` lines).
    pub fn admin_log(&self) -> Result<Vec<LogLine>, Error> {
        let mut out = Vec::new();
        for kv in self.store.range(Space::Meta, ADMIN_LOG_PREFIX, None) {
            let (k, v) = kv?;
            if !k.starts_with(ADMIN_LOG_PREFIX) || out.len() == ADMIN_LOG_LIST_MAX {
                break;
            }
            let line = serde_json::from_slice(&v)
                .map_err(|e| crate::record::corrupt(&format!("an admin log line: {e}")))?;
            out.push(line);
        }
        Ok(out)
    }
}

impl Verifier<'_> {
    /// `verify`'s check of the admin log: each line's message is an admin act of its
    /// kind, signed by an admin this ledger trusts. One line per problem.
    pub fn check_admin_log(&self) -> Result<Vec<String>, Error> {
        let admins = self.reader().trusted_admin_keys();
        let mut problems = Vec::new();
        for line in self.reader().admin_log()? {
            let at = format!("admin act at stream seq {}", line.stream_seq);
            let act = hex::decode(&line.wire_hex)
                .ok()
                .and_then(|w| AdminAct::from_wire(&w))
                .and_then(Result::ok);
            match act {
                None => problems.push(format!("{at}: its message does not read")),
                Some(a) if a.body.act.kind() != line.kind => {
                    problems.push(format!("{at}: the message is not a {}", line.kind))
                }
                Some(a) if !admins.contains(&a.admin) || !a.signature_verifies() => {
                    problems.push(format!("{at}: not signed by a trusted admin"))
                }
                Some(_) => {}
            }
        }
        Ok(problems)
    }
}

fn refuse(state: &crate::owner::State, call: &mut Call, msg: &Incoming, why: String) -> Appended {
    quarantine(state, call, msg, reason::ADMIN_REFUSED, why).into()
}
