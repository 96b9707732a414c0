//! The decision analytics in the read model: a simulated table with a hole-carding player
//! is indexed through a real ledger, and the model lists the box's signal with its rounds;
//! the same table played honestly lists none; a model indexed with analytics off says its
//! signals are not computed. A tail restarted every 150 rounds resumes each statistic
//! from the model and lists exactly the signals of one uninterrupted tail.

#[path = "common/sim.rs"]
mod sim;

use analytics::{cheats, Evaluator, TestSetting};
use readside::index::{catch_up_with, Tail};
use readside::model::Model;
use schemas::{BoxNo, Choice};
use simulator::{Decider, DecisionView, FaultPlan, Floor};

/// Sees the dealer's first hole card with the up card, and plays on both.
struct HoleCarder {
    box_no: BoxNo,
    ev: Evaluator,
}

impl Decider for HoleCarder {
    fn decide(&mut self, v: &DecisionView) -> Option<Choice> {
        (v.box_no == self.box_no)
            .then(|| cheats::hole_carder(&mut self.ev, v.cards, v.dealer))
            .flatten()
    }
}

const CHEAT_BOX: BoxNo = BoxNo(3);

/// One table (the floor's first, CSP6) playing `rounds` rounds into a fresh ledger.
fn table(rounds: u64, seed: u64, cheat: bool) -> (tempfile::TempDir, ledger::Ledger) {
    table_with(rounds, seed, cheat, |_, _| {})
}

/// `table`, calling `after` with each step (0 opens, then one a round) once it is stored.
fn table_with(
    rounds: u64,
    seed: u64,
    cheat: bool,
    mut after: impl FnMut(u64, &ledger::Ledger),
) -> (tempfile::TempDir, ledger::Ledger) {
    let (dir, ledger) = sim::ledger();
    let mut floor = Floor::new(1, seed, FaultPlan::none())
        .unwrap()
        .without_event_signatures();
    let t = floor.tables.remove(0);
    let rs = t.config().rule_set;
    let mut t = match cheat {
        true => t.with_decider(Box::new(HoleCarder {
            box_no: CHEAT_BOX,
            ev: Evaluator::new(rs),
        })),
        false => t,
    };
    let mut stream_seq = 0u64;
    for step in 0..=rounds + 1 {
        let published = match step {
            0 => t.opening_events().unwrap(),
            s if s <= rounds => t.play_round().unwrap().events,
            _ => t.closing_events().unwrap(),
        };
        let mut incoming = |bytes: Vec<u8>, table: &schemas::TableId, at_ns: i64| {
            stream_seq += 1;
            ledger::Incoming {
                subject_table: Some(table.clone()),
                stream_seq,
                received_at_ns: at_ns,
                bytes,
                provenance: Default::default(),
            }
        };
        let events: Vec<_> = published
            .into_iter()
            .map(|p| incoming(p.bytes, &p.event.table, p.event.occurred_at_ns))
            .collect();
        let c = t.checkpoint().unwrap();
        let checkpoints = vec![incoming(c.to_bincode(), &c.table, c.signed_at_ns)];
        ledger.writer().append(&events, &checkpoints).unwrap();
        after(step, &ledger);
    }
    ledger.flush().unwrap();
    (dir, ledger)
}

fn indexed(ledger: &ledger::Ledger, on: bool) -> Model {
    let model = Model::temporary(&ledger::days::DayRule::new("06:00", "UTC").unwrap()).unwrap();
    let mut tail = match on {
        true => Tail::with_analytics(TestSetting::default()),
        false => Tail::default(),
    };
    catch_up_with(ledger, &model, &mut tail).unwrap();
    model
}

#[test]
fn a_hole_carder_is_listed_with_the_rounds_that_moved_it() {
    let (_dir, ledger) = table(600, 7, true);
    let model = indexed(&ledger, true);
    assert!(model.coverage().unwrap().unwrap().complete);
    let signals = model.signals(None, 100).unwrap();
    let boxed: Vec<_> = signals
        .iter()
        .filter(|s| s.kind == "hole_card_play" && s.box_no == Some(CHEAT_BOX.0))
        .filter(|s| s.subject == format!("box {}", CHEAT_BOX.0))
        .collect();
    assert!(!boxed.is_empty(), "no box signal among {signals:?}");
    let first = boxed[0];
    assert!(first.statistic_milli >= first.threshold_milli);
    assert_eq!(first.false_alarms_milli_per_1000_rounds, 1_000);
    assert!(!first.moved.is_empty());
    assert!(first.moved.iter().all(|m| m.box_no == CHEAT_BOX.0));
    assert!(first.moved.iter().all(|m| m.round <= first.round));
    // Each round it links to is a round the model lists.
    let table = schemas::TableId::new(first.table.clone()).unwrap();
    for r in first.rounds() {
        assert!(model.digest(&table, r).unwrap().is_some(), "round {r}");
    }
    // No honest box of the table is flagged.
    assert!(signals
        .iter()
        .filter_map(|s| s.box_no.filter(|_| s.subject.starts_with("box ")))
        .all(|b| b == CHEAT_BOX.0));
}

#[test]
fn a_restarted_tail_resumes_each_statistic_and_lists_the_same_signals() {
    let model = Model::temporary(&ledger::days::DayRule::new("06:00", "UTC").unwrap()).unwrap();
    let mut restarts = 0;
    let (_dir, ledger) = table_with(600, 7, true, |step, ledger| {
        if step > 0 && step % 150 == 0 {
            ledger.flush().unwrap();
            let mut tail = Tail::with_analytics(TestSetting::default());
            catch_up_with(ledger, &model, &mut tail).unwrap();
            restarts += 1;
        }
    });
    let mut tail = Tail::with_analytics(TestSetting::default());
    catch_up_with(&ledger, &model, &mut tail).unwrap();
    assert_eq!(restarts, 4);
    let once = indexed(&ledger, true);
    let expected = once.signals(None, 1_000).unwrap();
    assert!(expected.iter().any(|s| s.box_no == Some(CHEAT_BOX.0)));
    assert_eq!(model.signals(None, 1_000).unwrap(), expected);
    assert!(model.coverage().unwrap().unwrap().complete);
}

#[test]
fn an_honest_table_lists_no_signal_and_an_unjudged_model_says_so() {
    let (_dir, ledger) = table(600, 7, false);
    let model = indexed(&ledger, true);
    assert!(model.coverage().unwrap().unwrap().complete);
    assert_eq!(model.signals(None, 100).unwrap(), vec![]);
    // Indexed with analytics off: not computed, not "none".
    let off = indexed(&ledger, false);
    assert!(!off.coverage().unwrap().unwrap().complete);
}

/// The figure in BENCHMARKS.md: a round indexed in a pass of its own (as `serve` does),
/// analytics on, with the statistics' states it commits counted:
/// `cargo test -p readside --test signals one_round_a_pass -- --ignored --nocapture`.
#[test]
#[ignore]
fn cost_one_round_a_pass_with_its_statistics_committed() {
    let model = Model::temporary(&ledger::days::DayRule::new("06:00", "UTC").unwrap()).unwrap();
    let mut tail = Tail::with_analytics(TestSetting::default());
    let mut spent = std::time::Duration::ZERO;
    let (_dir, ledger) = table_with(300, 11, false, |_, ledger| {
        let started = std::time::Instant::now();
        catch_up_with(ledger, &model, &mut tail).unwrap();
        spent += started.elapsed();
    });
    let states = model.stream_states(usize::MAX).unwrap();
    println!(
        "one round a pass, analytics on: {:.1} ms a round over 300 CSP6 rounds; {} statistics kept",
        spent.as_secs_f64() * 1000.0 / 302.0,
        states.len()
    );
    drop(ledger);
}

/// The figure in BENCHMARKS.md: the read model's cost a round with the analytics on against
/// off, over one ledger, in one run: `cargo test -p readside --test signals cost --
/// --ignored --nocapture`.
#[test]
#[ignore]
fn cost_a_round_with_analytics_on_and_off() {
    let (_dir, ledger) = table(500, 11, false);
    let mut row = Vec::new();
    for on in [false, true, false, true] {
        let started = std::time::Instant::now();
        let model = indexed(&ledger, on);
        let us = started.elapsed().as_micros() as f64 / 500.0;
        assert_eq!(model.meta().unwrap().rounds, 500);
        row.push(format!("{}: {us:.0} us", if on { "on" } else { "off" }));
    }
    println!(
        "a round indexed (500 rounds, CSP6, 7 boxes): {}",
        row.join(", ")
    );
}
