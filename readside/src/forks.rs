//! Disputed seqs: where a chain has two signed events, the stored one and another the
//! quarantine holds as a `fork` (a stolen device key, or a faulty device). `table status`
//! (from a ledger or through `/v1/chain`), `verify` and the web UI's banner read them here.

use ledger::Ledger;
use schemas::api::DisputedSeq;

/// Most disputed seqs read: past it the newest are listed (a flood of forks is the
/// quarantine's to bound, not a list's to hold).
pub const DISPUTED_MAX: u64 = 1_000;

/// Every fork in the quarantine (the newest `DISPUTED_MAX`), as the stored event and the
/// other, in table and seq order. An entry whose bytes do not decode is left out: the
/// ledger never called it a fork of a seq.
pub fn disputed(l: &Ledger) -> Result<Vec<DisputedSeq>, crate::ReadError> {
    let (_, forks) =
        l.reader()
            .quarantine_page(Some(ledger::reason::FORK), None, 0, DISPUTED_MAX)?;
    let mut out = Vec::new();
    for q in forks {
        let Ok((event, _)) = schemas::codec::decode(&q.bytes) else {
            continue;
        };
        let stored = l
            .reader()
            .events(&event.table, event.seq.0..=event.seq.0)
            .next()
            .transpose()?
            .map(|e| e.hash);
        out.push(DisputedSeq {
            quarantined: schemas::event_hash(&event.prev, &q.bytes),
            table: event.table,
            seq: event.seq,
            stored,
            quarantine_id: q.id,
        });
    }
    out.sort_by(|a, b| (&a.table, a.seq, a.quarantine_id).cmp(&(&b.table, b.seq, b.quarantine_id)));
    Ok(out)
}
