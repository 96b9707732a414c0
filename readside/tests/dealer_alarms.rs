//! Dealer alarms in the read model: a simulated table whose roster holds an error-prone
//! dealer is indexed through a real ledger with the decision analytics on. That dealer
//! raises one `dealer_errors` signal, linking to their disputed rounds; the other
//! dealers, a clean floor and a model indexed with analytics off raise none.

use analytics::TestSetting;
use readside::index::{catch_up_with, Tail};
use readside::model::Model;
use readside::signals::SignalRow;
use simulator::{ErrorProneDealer, FaultPlan, Floor};

/// One table (the floor's first) playing `rounds` rounds into a fresh ledger, a pass of
/// the tail after each `pass_every` rounds.
fn table(
    rounds: u64,
    seed: u64,
    prone: Option<ErrorProneDealer>,
    mut pass: impl FnMut(&ledger::Ledger),
) -> (tempfile::TempDir, ledger::Ledger) {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger::Ledger::open(dir.path().join("ledger")).unwrap();
    ledger
        .writer()
        .trust_admin_keys([simulator::admin_key().public()])
        .unwrap();
    let mut floor = Floor::new(1, seed, FaultPlan::payout_errors(0.01))
        .unwrap()
        .without_event_signatures();
    let mut t = floor.tables.remove(0);
    if let Some(p) = prone {
        t = t.with_error_prone_dealer(p);
    }
    let mut stream_seq = 0u64;
    for step in 0..=rounds + 1 {
        let published = match step {
            0 => t.opening_events().unwrap(),
            s if s <= rounds => t.play_round().unwrap().events,
            _ => t.closing_events().unwrap(),
        };
        let events: Vec<_> = published
            .into_iter()
            .map(|p| {
                stream_seq += 1;
                ledger::Incoming {
                    subject_table: Some(p.event.table.clone()),
                    stream_seq,
                    received_at_ns: p.event.occurred_at_ns,
                    bytes: p.bytes,
                    provenance: Default::default(),
                }
            })
            .collect();
        ledger.writer().append(&events, &[]).unwrap();
        if step % 97 == 0 {
            ledger.flush().unwrap();
            pass(&ledger);
        }
    }
    ledger.flush().unwrap();
    pass(&ledger);
    (dir, ledger)
}

fn rule() -> ledger::days::DayRule {
    ledger::days::DayRule::new("06:00", "UTC").unwrap()
}

fn dealer_signals(model: &Model) -> Vec<SignalRow> {
    let all = model.signals(None, usize::MAX).unwrap();
    all.into_iter()
        .filter(|s| s.kind == "dealer_errors")
        .collect()
}

const PRONE: ErrorProneDealer = ErrorProneDealer {
    roster_place: 1,
    wrong_payout: 0.15,
};

#[test]
fn an_error_prone_dealer_raises_one_signal_and_the_others_none() {
    let model = Model::temporary(&rule()).unwrap();
    // Passes between rounds, each from a new tail: a restarted server judges on.
    let (_dir, ledger) = table(800, 5, Some(PRONE), |l| {
        let mut tail = Tail::with_analytics(TestSetting::default());
        catch_up_with(l, &model, &mut tail).unwrap();
    });
    let rows = model.dealers(10).unwrap();
    assert_eq!(rows.len(), 4, "four dealers on the roster: {rows:?}");
    let worst = rows.iter().max_by_key(|r| r.disputed_rounds).unwrap();
    let signals = dealer_signals(&model);
    assert_eq!(signals.len(), 1, "{signals:?}");
    let s = &signals[0];
    assert_eq!(s.dealer.as_deref(), Some(worst.dealer.as_str()));
    assert_eq!(s.subject, format!("dealer {}", worst.dealer));
    assert!(s.statistic_milli >= s.threshold_milli, "{s:?}");
    assert!(s.run_rounds >= readside::dealers::RATE_ROUNDS_MIN);
    assert_eq!(s.false_alarms_milli_per_1000_rounds, 1_000);
    // It links to disputed rounds the model lists, each of them the dealer's.
    assert!(!s.moved.is_empty());
    for m in &s.moved {
        let t = schemas::TableId::new(m.table.clone().unwrap_or(s.table.clone())).unwrap();
        let d = model.digest(&t, m.round).unwrap().expect("a listed round");
        assert!(!d.disputes.is_empty(), "round {} is disputed", m.round);
        assert_eq!(d.row.dealer.as_deref(), Some(worst.dealer.as_str()));
        assert!(m.text.contains("where"), "{}", m.text);
    }
    // A rebuild in one pass raises the same dealer's signal, once.
    let fresh = Model::temporary(&rule()).unwrap();
    let mut tail = Tail::with_analytics(TestSetting::default());
    catch_up_with(&ledger, &fresh, &mut tail).unwrap();
    let again = dealer_signals(&fresh);
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0].dealer, s.dealer);
    let (raised, dropped) = tail.take_raised();
    assert_eq!(dropped, 0);
    assert_eq!(
        raised.iter().filter(|r| r.kind == "dealer_errors").count(),
        1,
        "the publisher is handed it once"
    );
}

#[test]
fn a_clean_floor_and_analytics_off_raise_no_dealer_signal() {
    let model = Model::temporary(&rule()).unwrap();
    let (_dir, ledger) = table(800, 9, None, |l| {
        let mut tail = Tail::with_analytics(TestSetting::default());
        catch_up_with(l, &model, &mut tail).unwrap();
    });
    let rows = model.dealers(10).unwrap();
    assert!(rows.iter().any(|r| r.disputed_rounds > 0), "{rows:?}");
    assert_eq!(dealer_signals(&model), Vec::new());
    // The error-prone table indexed with analytics off: its dealer counts, no signal.
    let (_dir, ledger_prone) = table(800, 5, Some(PRONE), |_| {});
    let off = Model::temporary(&rule()).unwrap();
    catch_up_with(&ledger_prone, &off, &mut Tail::default()).unwrap();
    assert!(off
        .dealers(10)
        .unwrap()
        .iter()
        .any(|r| r.disputed_rounds > 20));
    assert_eq!(dealer_signals(&off), Vec::new());
    drop(ledger);
}
