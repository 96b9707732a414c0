//! The config index (`Space::Config`, `Reader::config_at`): the config in force at any seq
//! of a table opened twice, and the index built at open for a ledger written without it.

mod common;

use common::{incoming, table, Raw, T0_NS};
use ledger::config::CONFIG_INDEX_KEY;
use ledger::store::Space;
use ledger::{Ledger, TableVerdict, VerifyProblem};
use schemas::codec::{self, WireFormat};
use schemas::*;

fn config() -> TableConfig {
    TableConfig {
        rule_set: RuleSet::Csp6,
        rules_version: "Version 6".into(),
        currency: "SGD".into(),
        boxes: 7,
        dealing: DealingMode::Shuffler,
        limits: Vec::new(),
        pay_tables: Vec::new(),
        bet_win_cap: None,
        jackpot: None,
    }
}

/// 30 events of `t`, `TableOpened` at seqs 1 and 17; returns their hashes by seq.
fn opened_twice(l: &Ledger, t: &TableId) -> Vec<Hash32> {
    let mut prev = GENESIS;
    let mut hashes = vec![GENESIS];
    let mut batch = Vec::new();
    for seq in 1..=30u64 {
        let body = match seq {
            1 | 17 => EventBody::TableOpened { config: config() },
            _ => EventBody::Announced {
                announcement: Announcement::PlaceYourBets,
            },
        };
        let e = Event {
            v: WIRE_VERSION,
            table: t.clone(),
            device: DeviceId::new("ctl-1").unwrap(),
            seq: Seq(seq),
            prev,
            occurred_at_ns: T0_NS + seq as i64,
            round: None,
            body,
        };
        let bytes = codec::encode(&e, WireFormat::Bincode);
        prev = event_hash(&prev, &bytes);
        hashes.push(prev);
        batch.push(incoming(t, bytes, seq));
        // Two calls: the second opening is indexed in a call of its own.
        if seq == 16 || seq == 30 {
            l.writer().append_batch(&batch).unwrap();
            batch.clear();
        }
    }
    l.flush().unwrap();
    hashes
}

fn assert_configs(l: &Ledger, t: &TableId, h: &[Hash32]) {
    assert_eq!(l.reader().config_at(t, 0).unwrap(), None);
    for seq in 1..=16 {
        assert_eq!(
            l.reader().config_at(t, seq).unwrap(),
            Some((Seq(1), h[1])),
            "seq {seq}"
        );
    }
    for seq in [17, 18, 30, u64::MAX] {
        assert_eq!(
            l.reader().config_at(t, seq).unwrap(),
            Some((Seq(17), h[17])),
            "seq {seq}"
        );
    }
    assert_eq!(l.reader().config_at(&table("OTHER"), 30).unwrap(), None);
}

#[test]
fn the_config_in_force_is_the_last_table_opened_at_or_before_a_seq() {
    let dir = tempfile::tempdir().unwrap();
    let t = table("CFG-01");
    let h = {
        let l = Ledger::open(dir.path()).unwrap();
        let h = opened_twice(&l, &t);
        assert_configs(&l, &t, &h);
        h
    };
    // A ledger written before the index: its entries and mark removed. The next open
    // builds it from the chain.
    common::closed(dir.path());
    let raw = Raw::open(dir.path());
    let keys = raw.keys(Space::Config);
    assert_eq!(keys.len(), 2);
    for k in keys {
        raw.remove(Space::Config, &k);
    }
    raw.remove(Space::Meta, CONFIG_INDEX_KEY);
    raw.close();
    let l = Ledger::open(dir.path()).unwrap();
    assert_configs(&l, &t, &h);
    assert!(l.verifier().verify().unwrap().is_ok());
    drop(l);

    // The second opening's entry edited to name the first's hash: verify names seq 17.
    common::closed(dir.path());
    let raw = Raw::open(dir.path());
    raw.put(
        Space::Config,
        &ledger::record::seq_key(&t, 17),
        h[1].0.to_vec(),
    );
    raw.close();
    let l = Ledger::open(dir.path()).unwrap();
    let report = l.verifier().verify().unwrap();
    let bad = report.tables.iter().find_map(|v| match v {
        TableVerdict::Bad { seq, problem, .. } => Some((*seq, problem.clone())),
        _ => None,
    });
    assert!(
        matches!(&bad, Some((17, VerifyProblem::ConfigIndex(p))) if p.contains("at seq 17")),
        "{bad:?}"
    );
}
