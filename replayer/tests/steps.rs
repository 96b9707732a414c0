//! `steps` (for `replay --step`) and `replay_round` on a golden scenario's events.

use replayer::{read_jsonl, replay_round, steps, Phase};
use schemas::{BetKind, BoxNo, Card, Choice, Event, EventBody, Money, Seq, Stake};

fn scenario(name: &str) -> Vec<(Seq, Event)> {
    let path = format!(
        "{}/tests/golden/{name}.events.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).unwrap();
    read_jsonl(&text)
        .unwrap()
        .into_iter()
        .map(|e| (e.seq, e))
        .collect()
}

#[test]
fn step_views_follow_the_round() {
    let events = scenario("csp6_late_bets");
    let config = match &events[0].1.body {
        EventBody::TableOpened { config } => config.clone(),
        other => panic!("first event is {other:?}"),
    };
    let round: Vec<(Seq, Event)> = events[1..].to_vec();
    let views = steps(&config, &round);
    assert_eq!(views.len(), round.len());
    // Phases never go back, and the round ends closed.
    assert!(views.windows(2).all(|w| w[0].phase <= w[1].phase));
    assert_eq!(views.last().unwrap().phase, Phase::Closed);
    // After "No more Bets" the bets shown are those that stood then: the late BetChanged
    // (box 1 Ante to 2000) and the late withdrawal (box 2) do not change them.
    let last = views.last().unwrap();
    assert_eq!(
        last.bets[&BoxNo(1)][&BetKind::Ante],
        Stake::Chips(Money(1000))
    );
    assert_eq!(
        last.bets[&BoxNo(2)][&BetKind::Ante],
        Stake::Chips(Money(1000))
    );
    assert!(!last.bets[&BoxNo(2)].contains_key(&BetKind::Progressive));
    assert_eq!(last.cards[&BoxNo(1)].len(), 5);
    assert_eq!(last.dealer.len(), 5);
    assert_eq!(last.burn.len(), 1);
    assert_eq!(last.decisions[&BoxNo(1)], Choice::Play);
    assert_eq!(last.decisions[&BoxNo(2)], Choice::Fold);
    assert_eq!(last.plays[&BoxNo(1)], Money(2000));
    assert_eq!(last.dealer[4], Card::parse("3h").unwrap());
    // The late bets are findings as soon as they happen.
    let first_late = views.iter().position(|v| !v.findings.is_empty()).unwrap();
    assert_eq!(views[first_late].event, "bet_placed");
    assert_eq!(last.findings.len(), 3);
    // The JSON form exists for the CLI.
    assert!(serde_json::to_string(&views)
        .unwrap()
        .contains("\"phase\":\"closed\""));

    let report = replay_round(&config, &round);
    let codes: Vec<&str> = report.findings.iter().map(|f| f.code.as_str()).collect();
    assert!(
        codes.contains(&"CSP6-5.11-bet-after-no-more-bets"),
        "{codes:?}"
    );
    assert!(
        codes.contains(&"CSP6-5.11-bet-withdrawn-after-no-more-bets"),
        "{codes:?}"
    );
    assert_eq!(report.first_seq, round[0].0);
    assert_eq!(report.last_seq, round.last().unwrap().0);
}
