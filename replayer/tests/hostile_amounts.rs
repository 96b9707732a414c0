//! Amounts at the ends of i64 from a broken or hostile device: replay stays total (no
//! overflow panic in debug builds, no wrap to a plausible figure in release). Found in
//! review: two `PaidOut` of i64::MAX on one line, two chip stakes of i64::MAX on one bet,
//! and a jackpot shown at i64::MAX each overflowed.

use replayer::{read_jsonl, replay_pool, replay_table};
use schemas::{Event, Seq};
use serde_json::Value;

/// Every golden scenario's events as JSON values.
fn scenarios() -> Vec<(String, Vec<Value>)> {
    let dir = format!("{}/tests/golden", env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !name.ends_with(".events.jsonl") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let events = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        out.push((name, events));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Sets every amount in an event's body to `extreme`; returns whether it had one.
fn set_amounts(body: &mut Value, extreme: i64) -> bool {
    let mut any = false;
    if let Some(map) = body.as_object_mut() {
        for (k, v) in map.iter_mut() {
            match (k.as_str(), v) {
                ("net" | "value" | "amount" | "total" | "stake", v) if v.is_i64() => {
                    *v = Value::from(extreme);
                    any = true;
                }
                ("stake", Value::Object(s)) => {
                    if let Some(c) = s.get_mut("chips") {
                        *c = Value::from(extreme);
                        any = true;
                    }
                }
                _ => {}
            }
        }
    }
    any
}

#[test]
fn extreme_amounts_replay_without_overflow() {
    let mut rounds = 0;
    let mut touched = 0;
    for (name, events) in scenarios() {
        for extreme in [i64::MAX, i64::MIN, i64::MAX / 2 + 1, -(i64::MAX / 2)] {
            // Each event with an amount set to the extreme and sent twice.
            let mut mutated: Vec<Value> = Vec::new();
            for e in &events {
                let mut e = e.clone();
                let twice = set_amounts(&mut e["body"], extreme);
                mutated.push(e.clone());
                if twice {
                    touched += 1;
                    mutated.push(e);
                }
            }
            let text: String = mutated
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    let mut e = e.clone();
                    e["seq"] = Value::from(i as u64 + 1);
                    format!("{e}\n")
                })
                .collect();
            let events: Vec<Event> = read_jsonl(&text).unwrap();
            let Some(first) = events.first() else {
                continue;
            };
            let table = first.table.clone();
            let seqd: Vec<(Seq, Event)> = events.iter().map(|e| (e.seq, e.clone())).collect();
            let reports = std::panic::catch_unwind(|| replay_table(table, &seqd))
                .unwrap_or_else(|_| panic!("{name} at {extreme}: replay panicked"));
            rounds += reports.len();
            std::panic::catch_unwind(|| replay_pool(&events))
                .unwrap_or_else(|_| panic!("{name} at {extreme}: pool replay panicked"));
        }
    }
    assert!(touched > 1_000, "only {touched} amounts set");
    assert!(rounds > 100, "only {rounds} rounds replayed");
}

/// Saturation must not absorb what it marks: with only the recorded payouts at an
/// extreme (the stakes as dealt, so the rules' figures are ordinary), every settled round
/// that recorded a payout is disputed. (It found one more overflow: the dispute's text
/// took the absolute value of a difference of i64::MIN.)
#[test]
fn extreme_recorded_payouts_are_disputed() {
    let mut checked = 0;
    for (name, events) in scenarios() {
        for extreme in [i64::MAX, i64::MIN] {
            let mut paid_rounds = std::collections::BTreeSet::new();
            let mut text = String::new();
            for e in &events {
                let mut e = e.clone();
                if e["body"]["type"] == "paid_out" {
                    e["body"]["net"] = Value::from(extreme);
                    paid_rounds.insert(e["round"].as_u64().unwrap());
                }
                text.push_str(&format!("{e}\n"));
            }
            let events: Vec<Event> = read_jsonl(&text).unwrap();
            let Some(first) = events.first() else {
                continue;
            };
            let seqd: Vec<(Seq, Event)> = events.iter().map(|e| (e.seq, e.clone())).collect();
            for r in replay_table(first.table.clone(), &seqd) {
                // A round the rules cannot settle (CSP6 §5.24) has no figure to compare.
                if paid_rounds.contains(&r.round.0) && r.settlement.is_some() {
                    assert!(
                        !r.disputes.is_empty(),
                        "{name} at {extreme}: round {} recorded payouts of {extreme} and no dispute",
                        r.round.0
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 50, "only {checked} rounds checked");
}
