//! A refused message within an append call: kept verbatim in quarantine, counted as a
//! repeat of an earlier entry, or counted past a limit (`quarantine_limits`): its bytes
//! then stay only in the stream, its stream seq and hash in the overflow digest.

use crate::call::Call;
use crate::quarantine::{Bound, ContentKey, Refusal, Repeat, OVERFLOW_COUNTERS_MAX};
use crate::store::{Op, Space};
use crate::types::{Incoming, Refused};

/// Quarantines `msg` for `code` with `text`, unless it is a redelivery, a repeat, or
/// past a bound; the outcome says which.
pub(crate) fn quarantine(
    state: &crate::owner::State,
    call: &mut Call,
    msg: &Incoming,
    code: &'static str,
    text: String,
) -> Refused {
    let delivery = crate::quarantine::delivery_key(msg.stream_seq, &msg.bytes);
    let before = call
        .quarantined_now
        .get(&delivery)
        .copied()
        .or_else(|| state.quarantine.recent.get(&delivery));
    if let Some(id) = before {
        tracing::info!(
            id,
            stream_seq = msg.stream_seq,
            reason = code,
            "delivered again; already quarantined, not again"
        );
        return Refused::QuarantinedBefore { id };
    }
    // Kept apart: a fenced table's messages are kept whatever the limits (module doc of
    // `quarantine_limits`).
    let fenced = code == crate::types::reason::TABLE_FENCED;
    if let Some(bound) = overflowed_before(state, call, &delivery).filter(|_| !fenced) {
        return Refused::Overflowed {
            reason: code,
            bound,
        };
    }
    let content: ContentKey = (code.to_string(), delivery.1);
    if let Some(seen) = repeat_of(state, call, msg, code, &content) {
        return seen;
    }
    if let Some(bound) = past_bound(state, call, msg).filter(|_| !fenced) {
        return overflow(state, call, msg, code, bound);
    }
    let text = bounded_text(text);
    let id = call.next_quarantine_id;
    call.next_quarantine_id += 1;
    let entry = crate::quarantine::QuarantineEntry {
        id,
        reason: code.to_string(),
        text,
        subject_table: msg.subject_table.clone(),
        stream_seq: msg.stream_seq,
        received_at_ns: msg.received_at_ns,
        bytes: msg.bytes.clone(),
        repeats: 0,
    };
    tracing::warn!(id, reason = code, text = %entry.text, stream_seq = msg.stream_seq, "quarantined");
    let value = entry.encode();
    call.quarantine_head = call.quarantine_head.next(id, &value);
    call.ops
        .push(Op::Put(Space::Quarantine, id.to_be_bytes().to_vec(), value));
    *call.counters.entry(code.to_string()).or_insert(0) += 1;
    call.quarantined += 1;
    call.quarantined_now.insert(delivery, id);
    count_entry(state, call, msg, fenced);
    let repeat = Repeat {
        count: 0,
        last_stream_seq: msg.stream_seq,
    };
    call.refused_now.insert(content, Refusal { id, repeat });
    Refused::Quarantined { id, reason: code }
}

/// The bound a recent delivery of the same message went past (NATS delivered it again).
fn overflowed_before(
    state: &crate::owner::State,
    call: &Call,
    delivery: &crate::quarantine::DeliveryKey,
) -> Option<Bound> {
    let code = call
        .overflowed_now
        .get(delivery)
        .copied()
        .or_else(|| state.quarantine.recent_overflowed.get(delivery))?;
    Some(Bound::from_code(code))
}

/// Counts a new entry against its source's window, its source's total and the
/// quarantine's bytes; a fenced table's entry only against the fenced bytes.
fn count_entry(state: &crate::owner::State, call: &mut Call, msg: &Incoming, fenced: bool) {
    let charged = crate::quarantine_limits::charge(msg.bytes.len());
    if fenced {
        call.fenced_bytes += charged;
        return;
    }
    let source = crate::quarantine::source_of(msg.subject_table.as_ref());
    let window = state.quarantine.limits.window_of(msg.received_at_ns);
    call.window.add(window, &source, 1, charged);
    call.quarantine_bytes += charged;
    *call.source_bytes_now.entry(source).or_insert(0) += charged;
}

/// The bound a new entry for `msg` would go past, if any: the total first, then its
/// source's total, its source's window, and every source's window.
fn past_bound(state: &crate::owner::State, call: &Call, msg: &Incoming) -> Option<Bound> {
    let limits = &state.quarantine.limits;
    let charged = crate::quarantine_limits::charge(msg.bytes.len());
    if call.quarantine_bytes + charged > limits.total_bytes_max {
        return Some(Bound::Total);
    }
    let source = crate::quarantine::source_of(msg.subject_table.as_ref());
    let held = state.quarantine.by_source.get(&source)
        + call.source_bytes_now.get(&source).copied().unwrap_or(0);
    if held + charged > limits.source_bytes_max {
        return Some(Bound::SourceTotal);
    }
    let window = limits.window_of(msg.received_at_ns);
    let ((e0, b0), (all_e0, all_b0)) = state.quarantine.window.used(window, &source);
    let ((e1, b1), (all_e1, all_b1)) = call.window.used(window, &source);
    if e0 + e1 + 1 > limits.source_entries_per_window
        || b0 + b1 + charged > limits.source_bytes_per_window
    {
        return Some(Bound::SourceRate);
    }
    let over_all = all_e0 + all_e1 + 1 > limits.all_entries_per_window
        || all_b0 + all_b1 + charged > limits.all_bytes_per_window;
    over_all.then_some(Bound::AllRate)
}

/// A refusal past a bound: counted against its (source, reason), bytes left in the
/// stream. A redelivery of one counted already is not counted again.
fn overflow(
    state: &crate::owner::State,
    call: &mut Call,
    msg: &Incoming,
    code: &'static str,
    bound: Bound,
) -> Refused {
    let mut key = (
        crate::quarantine::source_of(msg.subject_table.as_ref()),
        code.to_string(),
    );
    // Counters are bounded too: past the limit, new sources share one per reason.
    let known =
        call.overflow_now.contains_key(&key) || state.quarantine.overflows.contains_key(&key);
    if !known && state.quarantine.overflows.len() + call.overflow_now.len() >= OVERFLOW_COUNTERS_MAX
    {
        key.0 = "*".to_string();
    }
    let before = call
        .overflow_now
        .get(&key)
        .or_else(|| state.quarantine.overflows.get(&key))
        .copied()
        .unwrap_or_default();
    let delivery = crate::quarantine::delivery_key(msg.stream_seq, &msg.bytes);
    call.overflowed_now.insert(delivery, bound as u64);
    let after = before.add(msg.stream_seq, &msg.bytes);
    if after.count.is_power_of_two() {
        tracing::warn!(source = %key.0, reason = code, bound = bound.as_str(), count = after.count, stream_seq = msg.stream_seq, "refused past a quarantine bound: counted, bytes left in the stream");
    }
    // Written once per counter at the call's commit (`Call::take_ops`), not per message.
    call.overflow_now.insert(key, after);
    Refused::Overflowed {
        reason: code,
        bound,
    }
}

/// A refusal whose reason and bytes equal a recent entry's: a repeat, counted against that
/// entry, or, at or below the stream seq last counted, a redelivery of a counted one.
/// `None` when no recent entry has that content.
fn repeat_of(
    state: &crate::owner::State,
    call: &mut Call,
    msg: &Incoming,
    code: &'static str,
    content: &ContentKey,
) -> Option<Refused> {
    let mut r = call
        .refused_now
        .get(content)
        .copied()
        .or_else(|| state.quarantine.refusals.get(content))?;
    if msg.stream_seq <= r.repeat.last_stream_seq {
        tracing::info!(
            id = r.id,
            stream_seq = msg.stream_seq,
            "repeat delivered again; counted before"
        );
        return Some(Refused::QuarantinedBefore { id: r.id });
    }
    r.repeat.count += 1;
    r.repeat.last_stream_seq = msg.stream_seq;
    // Logged once per power of two: a flood must not flood the log too.
    if r.repeat.count.is_power_of_two() {
        tracing::warn!(
            id = r.id,
            reason = code,
            repeats = r.repeat.count,
            stream_seq = msg.stream_seq,
            "refused again; counted against its entry"
        );
    }
    call.refused_now.insert(content.clone(), r);
    Some(Refused::Repeated {
        id: r.id,
        reason: code,
    })
}

/// `text` cut to `QUARANTINE_TEXT_LEN_MAX` bytes at a character boundary, marked `…`: an
/// entry's cost beyond its message stays a small constant.
fn bounded_text(mut text: String) -> String {
    use crate::quarantine::QUARANTINE_TEXT_LEN_MAX;
    if text.len() <= QUARANTINE_TEXT_LEN_MAX {
        return text;
    }
    let mut cut = QUARANTINE_TEXT_LEN_MAX - '…'.len_utf8();
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push('…');
    text
}
