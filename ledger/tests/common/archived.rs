//! A ledger of many small archived gaming days, built through the library: two tables, a
//! few events a day, each day sealed and moved to the archive tier, then one hot day.
//! Shared by `tests/archived_days.rs` and `examples/archived_days.rs`.

use ledger::days::DayRule;
use ledger::{Incoming, Ledger};
use schemas::attest::SigningKey;
use schemas::codec::{self, WireFormat};
use schemas::*;

const MINUTE_NS: i64 = 60 * 1_000_000_000;
/// Events per table per day, unless `Builder::events_per_day` says otherwise.
const EVENTS_PER_DAY: u64 = 3;
/// The tables of the built ledger.
pub const TABLES: [&str; 2] = ["T-A", "T-B"];

/// The ledger's gaming day rule.
pub fn rule() -> DayRule {
    DayRule::new("06:00", "UTC").expect("rule")
}

/// The body of event `seq`, the day's `k`th of `n`: the table's config first (in the
/// oldest archived day, where a replay of any later day reads it), then announcements; the
/// day's last closes its round, so rounds do not pile up open.
fn body(seq: u64, k: u64, n: u64) -> EventBody {
    if seq > 1 && k + 1 == n {
        return EventBody::RoundClosed;
    }
    if seq > 1 {
        return EventBody::Announced {
            announcement: Announcement::PlaceYourBets,
        };
    }
    let config = TableConfig {
        rule_set: RuleSet::Csp6,
        rules_version: "Version 6".into(),
        currency: "SGD".into(),
        boxes: 7,
        dealing: DealingMode::Shuffler,
        limits: Vec::new(),
        pay_tables: Vec::new(),
        bet_win_cap: None,
        jackpot: None,
    };
    EventBody::TableOpened { config }
}

/// The day after `day`.
fn next_day(rule: &DayRule, day: &str) -> String {
    let end = rule.bounds(day).expect("bounds").ends_at_ns;
    rule.day_of(end).expect("next day")
}

/// Chains of each table, carried from day to day.
pub struct Builder {
    rule: DayRule,
    key: SigningKey,
    next: Vec<(TableId, u64, Hash32)>,
    stream_seq: u64,
    day: String,
    events_per_day: u64,
    /// Append calls so far: each call's events of a table are one round.
    calls: u64,
}

impl Builder {
    /// Chains at genesis, the first day 2016-01-01.
    pub fn new() -> Builder {
        let next = TABLES
            .iter()
            .map(|t| (TableId::new(*t).expect("table"), 1, GENESIS))
            .collect();
        Builder {
            rule: rule(),
            key: SigningKey::derive_for_simulation("house-seal"),
            next,
            stream_seq: 0,
            day: "2016-01-01".into(),
            events_per_day: EVENTS_PER_DAY,
            calls: 0,
        }
    }

    /// `n` events a table a day instead of `EVENTS_PER_DAY`, one a minute.
    pub fn events_per_day(mut self, n: u64) -> Builder {
        assert!(
            (1..=1_000).contains(&n),
            "a day of 1 to 1,000 events a table"
        );
        self.events_per_day = n;
        self
    }

    /// Appends the current day's events, in one call, and flushes.
    pub fn append_day(&mut self, l: &Ledger) {
        let start = self.rule.bounds(&self.day).expect("bounds").starts_at_ns;
        let mut batch = Vec::new();
        self.calls += 1;
        for k in 0..self.events_per_day {
            let at = start + (k as i64 + 1) * MINUTE_NS;
            for (table, seq, prev) in self.next.iter_mut() {
                let e = Event {
                    v: WIRE_VERSION,
                    table: table.clone(),
                    device: DeviceId::new("ctl-1").expect("device"),
                    seq: Seq(*seq),
                    prev: *prev,
                    occurred_at_ns: at,
                    round: (*seq > 1).then_some(RoundId(self.calls)),
                    body: body(*seq, k, self.events_per_day),
                };
                let bytes = codec::encode(&e, WireFormat::Bincode);
                *prev = event_hash(prev, &bytes);
                *seq += 1;
                self.stream_seq += 1;
                batch.push(Incoming {
                    bytes,
                    subject_table: Some(table.clone()),
                    stream_seq: self.stream_seq,
                    received_at_ns: at,
                    provenance: Default::default(),
                });
            }
        }
        l.writer().append_batch(&batch).expect("append");
        l.flush().expect("flush");
    }

    /// Seals the current day at its end and goes on to the next; the day sealed.
    pub fn seal_day(&mut self, l: &Ledger) -> String {
        let end = self.rule.bounds(&self.day).expect("bounds").ends_at_ns;
        l.writer()
            .seal_day(&self.rule, &self.day, &self.key, end)
            .expect("seal");
        let sealed = self.day.clone();
        self.day = next_day(&self.rule, &self.day);
        sealed
    }

    /// `days` days appended, sealed and archived, then one day appended, sealed and kept
    /// hot; returns the hot day.
    pub fn build(&mut self, l: &Ledger, days: u32) -> String {
        l.writer().set_day_rule(&self.rule).expect("day rule");
        for _ in 0..days {
            self.append_day(l);
            let day = self.seal_day(l);
            l.tier().archive_move(&day).expect("archive move");
        }
        self.append_day(l);
        self.seal_day(l)
    }
}

impl Default for Builder {
    fn default() -> Builder {
        Builder::new()
    }
}
