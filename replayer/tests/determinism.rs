//! Determinism (docs/DESIGN.md, replay is a pure fold): the same events give byte-identical reports
//! twice in this process and once more in a fresh process (this test binary re-run with
//! `REPLAYER_DETERMINISM_OUT` set, which writes its output to that file).

use replayer::{replay_pool, replay_table, reports_json, steps};
use schemas::{Event, RuleSet, Seq, TableId};
use simulator::{default_config, FaultPlan, TableSim};

/// Simulated chains for every rule set, with faults, as (table, events).
fn chains() -> Vec<(TableId, Vec<Event>)> {
    RuleSet::ALL
        .into_iter()
        .enumerate()
        .map(|(i, rs)| {
            let table = TableId::new(format!("DET-{}", rs.code())).unwrap();
            let mut sim = TableSim::new(
                table.clone(),
                default_config(rs),
                77 + i as u64,
                FaultPlan::all(0.1),
            )
            .unwrap();
            let mut events: Vec<Event> = sim
                .opening_events()
                .unwrap()
                .into_iter()
                .map(|p| p.event)
                .collect();
            for _ in 0..40 {
                events.extend(
                    sim.play_round()
                        .unwrap()
                        .events
                        .into_iter()
                        .map(|p| p.event),
                );
            }
            (table, events)
        })
        .collect()
}

/// Everything the replayer outputs for the chains, as one string.
fn output() -> String {
    let mut out = String::new();
    let mut all = Vec::new();
    for (table, events) in chains() {
        let indexed: Vec<(Seq, Event)> = events.iter().map(|e| (e.seq, e.clone())).collect();
        out.push_str(&reports_json(&replay_table(table, &indexed)));
        let config = events.iter().find_map(|e| match &e.body {
            schemas::EventBody::TableOpened { config } => Some(config.clone()),
            _ => None,
        });
        let round2: Vec<(Seq, Event)> = indexed
            .iter()
            .filter(|(_, e)| e.round == Some(schemas::RoundId(2)))
            .cloned()
            .collect();
        if let Some(c) = config {
            out.push_str(&serde_json::to_string(&steps(&c, &round2)).unwrap());
        }
        all.extend(events);
    }
    out.push_str(&serde_json::to_string(&replay_pool(&all)).unwrap());
    out
}

#[test]
fn same_events_same_bytes_in_two_processes() {
    if let Some(path) = std::env::var_os("REPLAYER_DETERMINISM_OUT") {
        std::fs::write(path, output()).unwrap();
        return;
    }
    let first = output();
    let second = output();
    assert!(
        first.len() > 10_000,
        "the replay produced too little to compare"
    );
    assert_eq!(first, second, "two replays in one process differ");

    let path =
        std::env::temp_dir().join(format!("replayer-determinism-{}.json", std::process::id()));
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "same_events_same_bytes_in_two_processes",
            "--test-threads=1",
        ])
        .env("REPLAYER_DETERMINISM_OUT", &path)
        .status()
        .unwrap();
    assert!(status.success(), "the child process failed");
    let child = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(
        first, child,
        "a fresh process replayed the same events differently"
    );
}
