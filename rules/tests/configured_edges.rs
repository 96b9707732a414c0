//! The edges of configured pay tables (`rules::edge::price_configured`), each checked
//! against a figure computed here another way. Built at opt-level 3 in the test profile.
//!
//! - TCP3 Ante/Play: the seed's table and a changed Ante Bonus, exact over every deal;
//!   the change checked by its closed form, and a smaller exhaustive sample by a
//!   settlement written here from TCP3 §3.13, §4.1 and §4.3.
//! - A five-card game's Main table by Monte Carlo with a reduced round count, inside its
//!   error bound of a reference value.

use rules::edge::{price_configured, tcp3_ante_play_sample, Budget, PricedEdge};
use schemas::{
    Card, DealingMode, HandClass, PayLine, PayRow, PayTable, PayTableName, Pays, RuleSet,
    TableConfig,
};

/// Stake of one unit in `rules::edge`, minor units.
const UNIT_MINOR: i128 = 100;
/// Dealer hands of the 49 cards a player's three leave: C(49, 3).
const DEALER_HANDS: i128 = 18_424;
/// All TCP3 deals: 22,100 player hands x 18,424 dealer hands.
const TCP3_DEALS: i128 = 22_100 * DEALER_HANDS;
/// The player's net over every deal under the seed's tables, minor units (exhaustive.rs).
const SEED_NET_MINOR: i128 = -1_373_378_000;

fn config(rule_set: RuleSet, pay_tables: Vec<PayTable>) -> TableConfig {
    TableConfig {
        rule_set,
        rules_version: "test".into(),
        currency: "SGD".into(),
        boxes: 7,
        dealing: DealingMode::Shuffler,
        limits: Vec::new(),
        pay_tables,
        bet_win_cap: None,
        jackpot: None,
    }
}

fn table(name: PayTableName, rows: &[(HandClass, u32)]) -> PayTable {
    let rows = rows
        .iter()
        .map(|&(hand, x)| PayRow {
            hand,
            pays: Pays::ToOne(x),
            envy: None,
        })
        .collect();
    PayTable { name, rows }
}

/// TCP3 §4.3 Ante Bonus: straight flush, three of a kind, straight (to 1).
fn ante_bonus(sf: u32, trips: u32, straight: u32) -> PayTable {
    use HandClass::*;
    let rows = [
        (StraightFlush, sf),
        (ThreeOfAKind, trips),
        (Straight, straight),
    ];
    table(PayTableName::AnteBonus, &rows)
}

fn edge_of(edges: &[PricedEdge], line: PayLine) -> &PricedEdge {
    edges.iter().find(|e| e.line == line).expect("priced")
}

/// Edge in ppm as `EdgeFigure::edge_ppm` has it: toward zero.
fn ppm(net_minor: i128, rounds: i128) -> i64 {
    (-net_minor * 1_000_000 / (rounds * UNIT_MINOR)) as i64
}

#[test]
fn tcp3_the_seed_ante_bonus_configured_prices_at_the_known_edge() {
    let c = config(RuleSet::Tcp3, vec![ante_bonus(5, 4, 1)]);
    let edges = price_configured(&c, &Budget::CONFIGURED);
    let e = edge_of(&edges, PayLine::Ante);
    assert_eq!(ppm(SEED_NET_MINOR, TCP3_DEALS), 33_729);
    assert_eq!((e.edge_ppm, e.error_ppm), (33_729, 0), "3.373%, exact");
    assert!(e.method.starts_with("exact"), "{}", e.method);
    // Pair Plus is not configured: it keeps the seed's exact edge.
    assert_eq!(edge_of(&edges, PayLine::PairPlus).edge_ppm, 55_746);
}

/// An Ante Bonus of 4/3/1 in place of 5/4/1 (TCP3 §4.3). Every straight or better is
/// played (Q-6-4) and the bonus does not depend on the dealer, so each straight flush
/// and each three of a kind pays one unit less against each of its 18,424 dealer hands.
#[test]
fn tcp3_a_changed_ante_bonus_is_priced_exactly() {
    let c = config(RuleSet::Tcp3, vec![ante_bonus(4, 3, 1)]);
    let edges = price_configured(&c, &Budget::CONFIGURED);
    let e = edge_of(&edges, PayLine::Ante);
    let (straight_flushes, threes) = (48, 52);
    let less = (straight_flushes + threes) * DEALER_HANDS * UNIT_MINOR;
    let want = ppm(SEED_NET_MINOR - less, TCP3_DEALS);
    assert_eq!(want, 38_254, "3.825%");
    assert_eq!((e.edge_ppm, e.error_ppm), (want, 0));
}

/// The lowest hands of the Q-6-4 strategy and of a qualifying dealer (TCP3 §3.13).
struct Thresholds {
    play_from: rules::Hand,
    qualifies_from: rules::Hand,
}

impl Thresholds {
    fn new() -> Thresholds {
        let eval = |s: [&str; 3]| rules::eval3(&s.map(|c| Card::parse(c).expect("a card")));
        Thresholds {
            play_from: eval(["Qc", "6d", "4h"]),
            qualifies_from: eval(["Qc", "3d", "2h"]),
        }
    }
}

/// TCP3 Ante and Play of one deal with the Q-6-4 strategy, settled here from the rule
/// book, Ante Bonus `bonus` (SF, trips, straight) included. Minor units, Ante of 100.
fn tcp3_net_by_hand(
    t: &Thresholds,
    player: rules::Hand,
    dealer: rules::Hand,
    bonus: [i128; 3],
) -> i128 {
    let Thresholds {
        play_from,
        qualifies_from,
    } = *t;
    if player < play_from {
        return -UNIT_MINOR; // fold: the Ante is lost
    }
    let bonus = match player.class() {
        HandClass::StraightFlush => bonus[0],
        HandClass::ThreeOfAKind => bonus[1],
        HandClass::Straight => bonus[2],
        _ => 0,
    } * UNIT_MINOR;
    let main = match (dealer >= qualifies_from, player.cmp(&dealer)) {
        (false, _) => UNIT_MINOR, // §3.13: Ante 1 to 1, Play returned
        (true, std::cmp::Ordering::Greater) => 2 * UNIT_MINOR,
        (true, std::cmp::Ordering::Less) => -2 * UNIT_MINOR,
        (true, std::cmp::Ordering::Equal) => 0,
    };
    main + bonus
}

/// A smaller exhaustive sample (every 13th player hand against all its dealer hands)
/// under a changed Ante Bonus, settled through the engine and here by hand: the same
/// net to the minor unit.
#[test]
fn tcp3_an_exhaustive_sample_agrees_with_a_settlement_by_hand() {
    let stride = 13;
    let c = config(RuleSet::Tcp3, vec![ante_bonus(10, 6, 2)]);
    let fig = tcp3_ante_play_sample(Some(&c), stride);
    let deck: Vec<Card> = Card::deck().collect();
    let mut hands = Vec::with_capacity(22_100);
    for a in 0..52 {
        for b in a + 1..52 {
            for d in b + 1..52 {
                let mask = (1u64 << a) | (1u64 << b) | (1u64 << d);
                hands.push((rules::eval3(&[deck[a], deck[b], deck[d]]), mask));
            }
        }
    }
    let (mut net, mut rounds) = (0i128, 0u64);
    let t = Thresholds::new();
    for (p, pm) in hands.iter().step_by(stride) {
        for (d, _) in hands.iter().filter(|(_, dm)| dm & pm == 0) {
            net += tcp3_net_by_hand(&t, *p, *d, [10, 6, 2]);
            rounds += 1;
        }
    }
    assert_eq!(rounds, 1_700 * 18_424);
    assert_eq!((fig.rounds, fig.net_minor), (rounds, net));
    assert!(!fig.exact, "a sample");
}

/// CSP6 with CS51's PLAY table (100 to 1 for a royal flush, RULES-NOTES 13) as its Main
/// table, by Monte Carlo with 400,000 rounds: within its own 95% bound, plus the
/// reference's, of CS51's main-game edge (5.341%, 40 M rounds). Drawn from the same seed,
/// the deals are CS51's own, so the two main games agree to the minor unit.
#[test]
fn a_five_card_main_table_is_priced_by_monte_carlo_within_its_bound() {
    use HandClass::*;
    let rows = [
        (RoyalFlush, 100),
        (StraightFlush, 50),
        (FourOfAKind, 20),
        (FullHouse, 7),
        (Flush, 5),
        (Straight, 4),
        (ThreeOfAKind, 3),
        (TwoPairs, 2),
        (OnePair, 1),
        (HighCard, 1),
    ];
    let c = config(RuleSet::Csp6, vec![table(PayTableName::Main, &rows)]);
    let budget = Budget {
        monte_carlo_rounds: 400_000,
        seed: 7,
        tcp3_player_stride: 1,
    };
    let edges = price_configured(&c, &budget);
    let e = edge_of(&edges, PayLine::Ante);
    assert!(e.method.contains("400000 rounds, seed 7"), "{}", e.method);
    assert!(e.error_ppm > 0 && e.error_ppm < 10_000, "{}", e.error_ppm);
    let reference = rules::edge::default_edge(RuleSet::Cs51, PayLine::Ante).expect("listed");
    let bound = e.error_ppm + reference.error_ppm;
    let off = (e.edge_ppm - reference.edge_ppm).unsigned_abs();
    assert!(
        off <= bound,
        "{} against {}: {off} > {bound}",
        e.edge_ppm,
        53_410
    );
    let cs51 = rules::edge::stud_monte_carlo(RuleSet::Cs51, 400_000, 7);
    assert_eq!(
        e.edge_ppm,
        cs51[0].edge_ppm(),
        "the same deals, the same game"
    );
}
