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
    assert_eq!((e.edge_ppm(), e.error_ppm), (33_729, 0), "3.373%, exact");
    assert_eq!(
        e.edge_ppb, 33_729_809,
        "exact to the ppb: the theoretical win's price"
    );
    assert!(e.method.starts_with("exact"), "{}", e.method);
    // Pair Plus is not configured: it keeps the seed's exact edge.
    assert_eq!(edge_of(&edges, PayLine::PairPlus).edge_ppm(), 55_746);
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
    assert_eq!((e.edge_ppm(), e.error_ppm), (want, 0));
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
    let off = (e.edge_ppm() - reference.edge_ppm()).unsigned_abs();
    assert!(
        off <= bound,
        "{} against {}: {off} > {bound}",
        e.edge_ppm(),
        53_410
    );
    let cs51 = rules::edge::stud_monte_carlo(RuleSet::Cs51, 400_000, 7);
    assert_eq!(
        e.edge_ppb,
        cs51[0].edge_ppb(),
        "the same deals, the same game"
    );
}

/// SSP4 §4.3-4.5 at 5 to 1: a hit pays 5 units and returns the stake that would
/// otherwise be a contribution, 6 units against the round without the pick. A Magic
/// Card lies in a given hand 5 times in 52; a Lucky Player is 1 box of 7.
#[test]
fn ssp4_selection_is_priced_exactly_per_pick() {
    let s = rules::edge::ssp4_selection_exact(None, 7);
    let ppm_of = |units_num: i64, den: i64| -units_num * 1_000_000 / den;
    assert_eq!(s.magic_card.edge_ppm(), ppm_of(6 * 5, 52), "-57.69%");
    assert_eq!(s.magic_card.rounds, 52);
    assert_eq!(s.lucky_player.edge_ppm(), ppm_of(6, 7), "-85.71%");
    assert_eq!(s.lucky_dealer.edge_ppm(), -6_000_000);
    assert!(s.magic_card.exact && s.lucky_player.exact);
    // A configured Selection table of 10 to 1: 11 units a hit.
    let c = config(
        RuleSet::Ssp4,
        vec![table(PayTableName::Selection, &[(HandClass::HighCard, 10)])],
    );
    let s = rules::edge::ssp4_selection_exact(Some(&c), 6);
    assert_eq!(s.magic_card.edge_ppm(), ppm_of(11 * 5, 52));
    assert_eq!(s.lucky_player.edge_ppm(), ppm_of(11, 6));
}

/// The share of all 2,598,960 hands of each class, times what its BET win exceeds
/// `cap_minor` by, per unit of `ante_minor`, in ppm: what the cap would cost if the
/// dealer always qualified and lost. The true cost is that times about P(the dealer
/// qualifies), 0.556.
fn cap_cost_if_always_paid(classes: &[(i128, i128)], ante_minor: i128, cap_minor: i128) -> i64 {
    let over: i128 = classes
        .iter()
        .map(|(hands, win)| hands * (win - cap_minor).max(0))
        .sum();
    (over * 1_000_000 / (2_598_960 * ante_minor)) as i64
}

/// SSP4 with a configured BET cap of SGD 10,000 at an Ante of SGD 1,000 (Bet SGD 2,000):
/// royal flush, straight flush, four of a kind and full house win more than the cap.
#[test]
fn a_bet_cap_is_priced_by_a_stratified_monte_carlo() {
    let mut c = config(RuleSet::Ssp4, Vec::new());
    c.bet_win_cap = Some(schemas::Money(1_000_000));
    let ante = schemas::Money(100_000);
    let cost = rules::edge::stud_cap_cost(&c, ante, 20_000, 7);
    use HandClass::*;
    assert_eq!(
        cost.classes,
        [RoyalFlush, StraightFlush, FourOfAKind, FullHouse]
    );
    let bet = 200_000;
    let hands = [
        (4, 250 * bet),
        (36, 50 * bet),
        (624, 20 * bet),
        (3_744, 7 * bet),
    ];
    let most = cap_cost_if_always_paid(&hands, 100_000, 1_000_000);
    assert_eq!(most, 14_965, "1.497% of the Ante at most");
    let (lo, hi) = (most * 50 / 100, most * 60 / 100);
    let err = cost.error_ppm as i64;
    assert!(
        (lo - err..=hi + err).contains(&cost.cost_ppm),
        "{} +- {err} against {lo}..{hi}",
        cost.cost_ppm
    );
    assert!(err > 0 && err < cost.cost_ppm / 10, "{err}");
    // No cap at SSP4 by default: nothing to price, exactly.
    let none = rules::edge::stud_cap_cost(&config(RuleSet::Ssp4, Vec::new()), ante, 10, 7);
    assert_eq!((none.cost_ppm, none.error_ppm), (0, 0));
}

/// Prints the Selection and BET cap rows of RULES.md (run by hand, `--ignored`).
#[test]
#[ignore]
fn print_selection_and_cap_figures() {
    let s = rules::edge::ssp4_selection_exact(None, 7);
    for f in [&s.magic_card, &s.lucky_player, &s.lucky_dealer] {
        eprintln!(
            "{}: edge {} ppm over {} rounds",
            f.bet,
            f.edge_ppm(),
            f.rounds
        );
    }
    let cases = [
        (RuleSet::Csp6, None, 100_000),
        (RuleSet::Csp6, None, 1_000_000),
        (RuleSet::Ssp4, Some(1_000_000), 100_000),
    ];
    for (rs, cap, ante) in cases {
        let mut c = config(rs, Vec::new());
        c.bet_win_cap = cap.map(schemas::Money);
        let cost = rules::edge::stud_cap_cost(&c, schemas::Money(ante), 200_000, 2026);
        eprintln!("{rs:?} cap {cap:?} Ante {ante}: {cost:?}");
    }
}
