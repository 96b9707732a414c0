//! House edges per bet kind, for theoretical win (handle x edge). Every figure settles
//! rounds through `settle`, so it uses the engine's pay tables and clauses.
//!
//! - TCP3 Ante/Play (Q-6-4 strategy) and Pair Plus: exhaustive over every deal.
//! - The five-card games: a seeded Monte Carlo, with the standard error of its mean. The
//!   draws come from a fixed generator, so a figure is a function of its seed.
//! - SSP4's Selection (Magic Card, Lucky Player, Lucky Dealer): exact per pick.
//! - A BET/PLAY win cap: its cost at a given Ante, by a stratified Monte Carlo over the
//!   hand classes whose win exceeds it.
//!
//! An edge is the player's expected loss per unit of the bet it is relative to: the Ante
//! for the main game (BET/Play included), the side bet's own stake otherwise. Progressive
//! bets are left out: their edge depends on the pool.

use crate::{eval3, eval5, settle};
use schemas::settle::{BoxInput, RoundInput};
use schemas::{
    BetKind, BoxNo, Card, Choice, Money, PayLine, PayTable, PayTableName, RuleSet, TableConfig,
};
use serde::{Deserialize, Serialize};

/// Stake of the bet an edge is relative to, minor units (a round number for exact sums).
const UNIT_MINOR: i64 = 100;
/// Most rounds one Monte Carlo run may settle.
pub const MONTE_CARLO_ROUNDS_MAX: u64 = 1_000_000_000;

/// One bet kind's house edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeFigure {
    /// The rule set whose bet this is.
    pub rule_set: RuleSet,
    /// "Ante and BET/Play", "Pair Plus", "5+1 Bonus".
    pub bet: &'static str,
    /// Deals settled: every deal once (exact) or the draws (Monte Carlo).
    pub rounds: u64,
    /// The player's net over all rounds, minor units, with `UNIT_MINOR` staked per round.
    pub net_minor: i128,
    /// Sum of each round's net squared (minor units squared), for the standard error.
    pub net_squared: i128,
    /// True when every deal was settled once; false for a Monte Carlo estimate.
    pub exact: bool,
}

impl EdgeFigure {
    /// The house edge in parts per million of the unit staked (positive: the house wins).
    pub fn edge_ppm(&self) -> i64 {
        assert!(self.rounds > 0);
        let per_million =
            -self.net_minor * 1_000_000 / (i128::from(self.rounds) * i128::from(UNIT_MINOR));
        per_million as i64
    }

    /// The house edge in parts per billion of the unit staked, toward zero: what
    /// theoretical win is priced with (an exact figure's cut is under 1 minor unit per
    /// 10^7 units of handle).
    pub fn edge_ppb(&self) -> i64 {
        assert!(self.rounds > 0);
        let per_billion =
            -self.net_minor * 1_000_000_000 / (i128::from(self.rounds) * i128::from(UNIT_MINOR));
        i64::try_from(per_billion).expect("an edge within +-9.2 x 10^9 ppb")
    }

    /// The standard error of `edge_ppm` (0 when exact). Statistics, not money: f64.
    pub fn std_error_ppm(&self) -> u64 {
        if self.exact || self.rounds < 2 {
            return 0;
        }
        let n = self.rounds as f64;
        let mean = self.net_minor as f64 / n;
        let variance = (self.net_squared as f64 / n - mean * mean).max(0.0) * n / (n - 1.0);
        let se_minor = (variance / n).sqrt();
        (se_minor / UNIT_MINOR as f64 * 1_000_000.0).round() as u64
    }

    /// The variance of one unit's net, in ppm of the unit squared: what a confidence
    /// interval of a win needs (variance of a win = sum of stakes squared x this).
    pub fn variance_ppm(&self) -> u64 {
        assert!(self.rounds > 0);
        let n = i128::from(self.rounds);
        let unit_sq = i128::from(UNIT_MINOR) * i128::from(UNIT_MINOR);
        // n * sum(x^2) - sum(x)^2 over n^2, per unit squared, times 10^6.
        let spread = n * self.net_squared - self.net_minor * self.net_minor;
        let ppm = spread * 1_000_000 / (n * n * unit_sq);
        u64::try_from(ppm.max(0)).unwrap_or(u64::MAX)
    }
}

/// A bet line's house edge as theoretical win uses it, for the seeds' own pay tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeConst {
    /// The rule set whose line this is.
    pub rule_set: RuleSet,
    /// The line whose stake the edge is per unit of: the Ante for the main game.
    pub line: schemas::PayLine,
    /// The house edge, in parts per billion of the unit staked (positive: the house wins).
    pub edge_ppb: i64,
    /// The variance of one unit's net, ppm of the unit squared.
    pub variance_ppm: u64,
    /// The 95% error bound of the edge, ppm (0: exact).
    pub error_ppm: u64,
    /// How the figure was computed: exhaustive, or Monte Carlo with its rounds and seed.
    pub method: &'static str,
}

impl EdgeConst {
    /// The edge in parts per million, toward zero: for display.
    pub const fn edge_ppm(&self) -> i64 {
        self.edge_ppb / 1_000
    }
}

/// The house edges of the default pay tables (rules/RULES.md "House edges"). The
/// five-card games' edges are one Monte Carlo (40 M rounds, seed 2026), their variances
/// one of 2 M; MLP3 and SSP4 settle their main game as CSP6. `tests/exhaustive.rs`
/// recomputes every figure.
pub const DEFAULT_EDGES: [EdgeConst; 7] = [
    stud(RuleSet::Csp6, 53_190, 72),
    stud(RuleSet::Mlp3, 53_190, 72),
    stud(RuleSet::Ssp4, 53_190, 72),
    EdgeConst {
        rule_set: RuleSet::Cs51,
        line: schemas::PayLine::Ante,
        edge_ppb: 53_410_000,
        variance_ppm: CS51_MAIN_VARIANCE_PPM,
        error_ppm: 710,
        method: "Monte Carlo, 40,000,000 rounds, seed 2026",
    },
    EdgeConst {
        rule_set: RuleSet::Cs51,
        line: schemas::PayLine::Bonus,
        edge_ppb: 86_460_000,
        variance_ppm: CS51_BONUS_VARIANCE_PPM,
        error_ppm: 1_720,
        method: "Monte Carlo, 40,000,000 rounds, seed 2026",
    },
    EdgeConst {
        rule_set: RuleSet::Tcp3,
        line: schemas::PayLine::Ante,
        edge_ppb: TCP3_ANTE_PLAY_EDGE_PPB,
        variance_ppm: TCP3_ANTE_PLAY_VARIANCE_PPM,
        error_ppm: 0,
        method: "exact: all 407,170,400 deals, Q-6-4 strategy",
    },
    EdgeConst {
        rule_set: RuleSet::Tcp3,
        line: schemas::PayLine::PairPlus,
        edge_ppb: TCP3_PAIR_PLUS_EDGE_PPB,
        variance_ppm: TCP3_PAIR_PLUS_VARIANCE_PPM,
        error_ppm: 0,
        method: "exact: all 22,100 hands",
    },
];

const STUD_MAIN_VARIANCE_PPM: u64 = 5_110_606;
const CS51_MAIN_VARIANCE_PPM: u64 = 5_005_290;
const CS51_BONUS_VARIANCE_PPM: u64 = 27_097_638;
/// Exact: -(-1,373,378,000) x 10^9 / (407,170,400 deals x 100), toward zero.
const TCP3_ANTE_PLAY_EDGE_PPB: i64 = 33_729_809;
const TCP3_ANTE_PLAY_VARIANCE_PPM: u64 = 2_687_149;
/// Exact over all 22,100 hands, toward zero.
const TCP3_PAIR_PLUS_EDGE_PPB: i64 = 55_746_606;
const TCP3_PAIR_PLUS_VARIANCE_PPM: u64 = 8_110_919;

const fn stud(rule_set: RuleSet, edge_ppm: i64, error_ppm_tenths: u64) -> EdgeConst {
    EdgeConst {
        rule_set,
        line: schemas::PayLine::Ante,
        edge_ppb: edge_ppm * 1_000,
        variance_ppm: STUD_MAIN_VARIANCE_PPM,
        error_ppm: error_ppm_tenths * 10,
        method: "Monte Carlo, 40,000,000 rounds, seed 2026 (A-K-J-8-3 strategy)",
    }
}

/// The default pay tables' edge of a line, if it has one (jackpot bets do not).
pub fn default_edge(rule_set: RuleSet, line: schemas::PayLine) -> Option<&'static EdgeConst> {
    DEFAULT_EDGES
        .iter()
        .find(|e| e.rule_set == rule_set && e.line == line)
}

/// The 22,100 three-card hands, each with its card mask.
fn three_card_hands() -> Vec<([Card; 3], u64)> {
    let deck: Vec<Card> = Card::deck().collect();
    let mut out = Vec::with_capacity(22_100);
    for a in 0..52 {
        for b in a + 1..52 {
            for c in b + 1..52 {
                let mask = (1u64 << a) | (1u64 << b) | (1u64 << c);
                out.push(([deck[a], deck[b], deck[c]], mask));
            }
        }
    }
    assert_eq!(out.len(), 22_100);
    out
}

/// A one-box round of `rs` with `bets` (kind, minor units), under `config`'s pay tables
/// (`None`: the seed's).
pub fn one_box_round(
    rs: RuleSet,
    config: Option<&TableConfig>,
    dealer: &[Card],
    cards: &[Card],
    decision: Option<Choice>,
    bets: &[(BetKind, i64)],
) -> RoundInput {
    RoundInput {
        game: rs,
        config: config.cloned(),
        dealer: dealer.to_vec(),
        dealer_up: None,
        pool: Money(0),
        reset: Money(0),
        credit_value: None,
        magic_card: None,
        lucky_box: None,
        lucky_dealer: false,
        void: false,
        boxes: vec![BoxInput {
            box_no: BoxNo(1),
            cards: cards.to_vec(),
            decision,
            bets: bets.iter().copied().collect(),
            invalidated: None,
        }],
    }
}

/// The box's net over `lines`, minor units.
pub fn box_net(input: &RoundInput, lines: &[schemas::PayLine]) -> i64 {
    let s = settle(input).unwrap_or_else(|e| panic!("an edge round settles: {e}"));
    s.boxes[0]
        .lines
        .iter()
        .filter(|l| lines.contains(&l.line))
        .map(|l| l.net.0)
        .sum()
}

/// The lines of the main game: a raise or fold moves only these.
pub const MAIN_LINES: [schemas::PayLine; 4] = [
    schemas::PayLine::Ante,
    schemas::PayLine::Bet,
    schemas::PayLine::Play,
    schemas::PayLine::AnteBonus,
];

/// TCP3 Ante and Play with the Q-6-4 strategy (play Q-6-4 or better, fold the rest), Ante
/// Bonus included: every player hand against every dealer hand of the other 49 cards.
pub fn tcp3_ante_play_exact() -> EdgeFigure {
    tcp3_ante_play_sample(None, 1)
}

/// `tcp3_ante_play_exact` under `config`'s pay tables (`None`: the seed's).
pub fn tcp3_ante_play_exact_for(config: Option<&TableConfig>) -> EdgeFigure {
    tcp3_ante_play_sample(config, 1)
}

/// TCP3 Ante and Play over every `stride`-th player hand (in the order of
/// `three_card_hands`), each against every dealer hand of the other 49 cards. Stride 1 is
/// every deal (exact); a larger one is a smaller exhaustive sample, for tests. Deals with
/// the same two hand values settle alike, so one of each is settled and counted.
pub fn tcp3_ante_play_sample(config: Option<&TableConfig>, stride: usize) -> EdgeFigure {
    assert!((1..=22_100).contains(&stride), "stride {stride}");
    let hands = three_card_hands();
    let values: Vec<crate::Hand> = hands.iter().map(|(c, _)| eval3(c)).collect();
    let mut distinct = values.clone();
    distinct.sort();
    distinct.dedup();
    let n = distinct.len();
    let index: Vec<usize> = values
        .iter()
        .map(|v| distinct.binary_search(v).expect("listed"))
        .collect();
    // counts[p * n + d]: deals with player value p and dealer value d; rep: one such deal.
    let mut counts = vec![0u64; n * n];
    let mut rep = vec![u32::MAX; n * n];
    for (p, (_, pm)) in hands.iter().enumerate().step_by(stride) {
        for (d, (_, dm)) in hands.iter().enumerate() {
            if pm & dm == 0 {
                let k = index[p] * n + index[d];
                counts[k] += 1;
                if rep[k] == u32::MAX {
                    rep[k] = (p * hands.len() + d) as u32;
                }
            }
        }
    }
    let threshold = eval3(&[card("Qc"), card("6d"), card("4h")]);
    let mut fig = figure(RuleSet::Tcp3, "Ante and Play (Q-6-4)", stride == 1);
    for (k, &count) in counts.iter().enumerate().filter(|(_, c)| **c > 0) {
        let (p, d) = (rep[k] as usize / hands.len(), rep[k] as usize % hands.len());
        let play = values[p] >= threshold;
        let (decision, bets) = match play {
            true => (
                Choice::Play,
                vec![(BetKind::Ante, UNIT_MINOR), (BetKind::Play, UNIT_MINOR)],
            ),
            false => (Choice::Fold, vec![(BetKind::Ante, UNIT_MINOR)]),
        };
        let r = one_box_round(
            RuleSet::Tcp3,
            config,
            &hands[d].0,
            &hands[p].0,
            Some(decision),
            &bets,
        );
        fig.add(box_net(&r, &MAIN_LINES), count);
    }
    let players = 22_100_u64.div_ceil(stride as u64);
    assert_eq!(fig.rounds, players * 18_424, "every deal counted once");
    fig
}

/// TCP3 Pair Plus alone: every player hand (the dealer's does not matter, §4.2).
pub fn tcp3_pair_plus_exact() -> EdgeFigure {
    tcp3_pair_plus_exact_for(None)
}

/// `tcp3_pair_plus_exact` under `config`'s pay tables (`None`: the seed's).
pub fn tcp3_pair_plus_exact_for(config: Option<&TableConfig>) -> EdgeFigure {
    let hands = three_card_hands();
    let mut fig = figure(RuleSet::Tcp3, "Pair Plus", true);
    for (cards, mask) in &hands {
        // Any dealer hand of the other cards: Pair Plus pays on the player's alone.
        let dealer = &hands
            .iter()
            .find(|(_, m)| m & mask == 0)
            .expect("49 cards left")
            .0;
        let r = one_box_round(
            RuleSet::Tcp3,
            config,
            dealer,
            cards,
            None,
            &[(BetKind::PairPlus, UNIT_MINOR)],
        );
        fig.add(box_net(&r, &[schemas::PayLine::PairPlus]), 1);
    }
    fig
}

fn card(s: &str) -> Card {
    Card::parse(s).expect("a card")
}

fn figure(rule_set: RuleSet, bet: &'static str, exact: bool) -> EdgeFigure {
    EdgeFigure {
        rule_set,
        bet,
        rounds: 0,
        net_minor: 0,
        net_squared: 0,
        exact,
    }
}

impl EdgeFigure {
    /// Counts `count` rounds that each netted `net_minor`.
    fn add(&mut self, net_minor: i64, count: u64) {
        let (net, count) = (i128::from(net_minor), i128::from(count));
        self.net_minor += net * count;
        self.net_squared += net * net * count;
        self.rounds += count as u64;
    }
}

/// splitmix64: a small, fixed generator, so a Monte Carlo figure depends only on its seed.
/// `analytics` samples with it too.
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// The first `n` cards of a shuffled deck (partial Fisher-Yates).
    pub fn deal(&mut self, deck: &mut [Card; 52], n: usize) {
        for i in 0..n {
            let j = i + (self.next_u64() % (52 - i) as u64) as usize;
            deck.swap(i, j);
        }
    }
}

/// The five-card games' strategy: raise with a pair or better, or a high card of A-K-J-8-3
/// or better (the usual basic strategy); fold the rest.
fn stud_plays(cards: &[Card; 5], threshold: crate::Hand) -> bool {
    eval5(cards) >= threshold
}

/// The main game (Ante and BET/Play) of a five-card game, and CS51's 5+1 Bonus, by Monte
/// Carlo over `rounds` deals drawn from `seed`.
pub fn stud_monte_carlo(rs: RuleSet, rounds: u64, seed: u64) -> Vec<EdgeFigure> {
    stud_monte_carlo_for(rs, None, rounds, seed)
}

/// `stud_monte_carlo` under `config`'s pay tables (`None`: the seed's).
pub fn stud_monte_carlo_for(
    rs: RuleSet,
    config: Option<&TableConfig>,
    rounds: u64,
    seed: u64,
) -> Vec<EdgeFigure> {
    assert!(rs != RuleSet::Tcp3, "TCP3 is exact: tcp3_ante_play_exact");
    assert!(rounds > 0 && rounds <= MONTE_CARLO_ROUNDS_MAX);
    let threshold = eval5(&["Ad", "Kc", "Jh", "8s", "3d"].map(card));
    let main_kind = match rs {
        RuleSet::Cs51 => BetKind::Play,
        _ => BetKind::Bet,
    };
    let mut main = figure(rs, "Ante and BET/Play (raise A-K-J-8-3 or better)", false);
    let mut bonus = figure(rs, "5+1 Bonus", false);
    let mut rng = SplitMix(seed);
    let mut deck: [Card; 52] = std::array::from_fn(|i| Card::deck().nth(i).expect("52 cards"));
    for _ in 0..rounds {
        rng.deal(&mut deck, 10);
        let player: [Card; 5] = std::array::from_fn(|i| deck[i]);
        let dealer = &deck[5..10];
        let mut bets = vec![(BetKind::Ante, UNIT_MINOR)];
        let decision = match stud_plays(&player, threshold) {
            true => {
                bets.push((main_kind, 2 * UNIT_MINOR));
                Choice::Play
            }
            false => Choice::Fold,
        };
        if rs == RuleSet::Cs51 {
            bets.push((BetKind::Bonus, UNIT_MINOR));
        }
        let r = one_box_round(rs, config, dealer, &player, Some(decision), &bets);
        main.add(box_net(&r, &MAIN_LINES), 1);
        if rs == RuleSet::Cs51 {
            bonus.add(box_net(&r, &[schemas::PayLine::Bonus]), 1);
        }
    }
    match rs {
        RuleSet::Cs51 => vec![main, bonus],
        _ => vec![main],
    }
}

/// Every edge figure: TCP3 exactly, the others by Monte Carlo (`rounds`, `seed`).
pub fn all_edges(rounds: u64, seed: u64) -> Vec<EdgeFigure> {
    let mut out = Vec::new();
    for rs in [RuleSet::Csp6, RuleSet::Mlp3, RuleSet::Ssp4, RuleSet::Cs51] {
        out.extend(stud_monte_carlo(rs, rounds, seed));
    }
    out.push(tcp3_ante_play_exact());
    out.push(tcp3_pair_plus_exact());
    out
}

/// Rounds of the Monte Carlo that prices a configured pay table of a five-card game: about
/// one second in a release build, a 95% error bound near 0.45% of the unit.
pub const CONFIGURED_MONTE_CARLO_ROUNDS: u64 = 1_000_000;
/// The seed of that Monte Carlo: a configured table's edge is a function of its pay tables.
pub const CONFIGURED_MONTE_CARLO_SEED: u64 = 2026;

/// How much work pricing a configuration may do. `Budget::CONFIGURED` is what the read
/// model's pricing uses; tests pass smaller ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Rounds of a five-card game's Monte Carlo.
    pub monte_carlo_rounds: u64,
    /// The Monte Carlo's seed.
    pub seed: u64,
    /// TCP3 Ante/Play settles every `tcp3_player_stride`-th player hand (1: every deal).
    pub tcp3_player_stride: usize,
}

impl Budget {
    /// What a configured table is priced with: TCP3 exactly, the others by 1 M rounds.
    pub const CONFIGURED: Budget = Budget {
        monte_carlo_rounds: CONFIGURED_MONTE_CARLO_ROUNDS,
        seed: CONFIGURED_MONTE_CARLO_SEED,
        tcp3_player_stride: 1,
    };
}

/// A line's edge as pricing a configuration gives it: what the read model stores.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PricedEdge {
    /// The line whose stake the edge is per unit of: the Ante for the main game.
    pub line: PayLine,
    /// The house edge, in parts per billion of the unit staked (positive: the house wins).
    pub edge_ppb: i64,
    /// The variance of one unit's net, ppm of the unit squared.
    pub variance_ppm: u64,
    /// The 95% error bound of the edge, ppm (0: exact).
    pub error_ppm: u64,
    /// How the figure was computed.
    pub method: String,
}

impl PricedEdge {
    /// The edge in parts per million, toward zero: for display.
    pub fn edge_ppm(&self) -> i64 {
        self.edge_ppb / 1_000
    }

    fn of_const(e: &EdgeConst) -> PricedEdge {
        PricedEdge {
            line: e.line,
            edge_ppb: e.edge_ppb,
            variance_ppm: e.variance_ppm,
            error_ppm: e.error_ppm,
            method: e.method.to_string(),
        }
    }

    fn of_figure(line: PayLine, f: &EdgeFigure, method: String) -> PricedEdge {
        PricedEdge {
            line,
            edge_ppb: f.edge_ppb(),
            variance_ppm: f.variance_ppm(),
            error_ppm: 2 * f.std_error_ppm(),
            method,
        }
    }
}

/// The pay tables that decide a line's edge: a configured one among them reprices it.
fn deciding_tables(rule_set: RuleSet, line: PayLine) -> &'static [PayTableName] {
    match (rule_set, line) {
        (RuleSet::Tcp3, PayLine::Ante) => &[PayTableName::Main, PayTableName::AnteBonus],
        (RuleSet::Tcp3, PayLine::PairPlus) => &[PayTableName::PairPlus],
        (RuleSet::Cs51, PayLine::Bonus) => &[PayTableName::Bonus],
        (_, PayLine::Ante) => &[PayTableName::Main],
        _ => &[],
    }
}

/// Whether `pay_tables` reprice `line` of `rule_set`: one of them decides its edge.
pub fn line_repriced(rule_set: RuleSet, pay_tables: &[PayTable], line: PayLine) -> bool {
    let deciding = deciding_tables(rule_set, line);
    pay_tables.iter().any(|t| deciding.contains(&t.name))
}

/// The identity of `config`'s pay tables for pricing: BLAKE3 of their JSON, when one of
/// them reprices a line with a default edge; `None` when the defaults stand.
pub fn pricing_key(config: &TableConfig) -> Option<[u8; 32]> {
    let rs = config.rule_set;
    let repriced = DEFAULT_EDGES
        .iter()
        .filter(|e| e.rule_set == rs)
        .any(|e| line_repriced(rs, &config.pay_tables, e.line));
    repriced.then(|| pay_digest(config))
}

/// BLAKE3 of the pay tables' JSON: the key of a configuration's edges.
fn pay_digest(config: &TableConfig) -> [u8; 32] {
    // Our own config types (no floats, string keys) always serialise.
    let json = serde_json::to_vec(&config.pay_tables).expect("pay tables serialise");
    *blake3::hash(&json).as_bytes()
}

/// The edges of every line of `config`'s rule set under its pay tables: the default where
/// no deciding pay table is configured, else the line settled again under `config`'s pay
/// tables (TCP3 exactly, the five-card games by Monte Carlo), within `budget`. Limits, the
/// BET cap and the jackpot are left out: an edge is per unit staked. Slow (seconds):
/// never call it on a path that must answer promptly.
pub fn price_configured(config: &TableConfig, budget: &Budget) -> Vec<PricedEdge> {
    let rs = config.rule_set;
    let pay_only = TableConfig {
        limits: Vec::new(),
        bet_win_cap: None,
        jackpot: None,
        ..config.clone()
    };
    // One Monte Carlo run gives a five-card game's main game and its 5+1 Bonus.
    let mut stud: Option<Vec<EdgeFigure>> = None;
    let mut out = Vec::new();
    for e in DEFAULT_EDGES.iter().filter(|e| e.rule_set == rs) {
        if !line_repriced(rs, &config.pay_tables, e.line) {
            out.push(PricedEdge::of_const(e));
            continue;
        }
        let priced = match (rs, e.line) {
            (RuleSet::Tcp3, PayLine::PairPlus) => {
                let f = tcp3_pair_plus_exact_for(Some(&pay_only));
                PricedEdge::of_figure(e.line, &f, "exact: all 22,100 hands, configured".into())
            }
            (RuleSet::Tcp3, _) => tcp3_priced(&pay_only, budget),
            _ => {
                let figs = stud.get_or_insert_with(|| {
                    let n = budget.monte_carlo_rounds;
                    stud_monte_carlo_for(rs, Some(&pay_only), n, budget.seed)
                });
                let Some(f) = figs.get(usize::from(e.line == PayLine::Bonus)) else {
                    continue;
                };
                let method = format!(
                    "Monte Carlo, {} rounds, seed {}, configured",
                    budget.monte_carlo_rounds, budget.seed
                );
                PricedEdge::of_figure(e.line, f, method)
            }
        };
        out.push(priced);
    }
    out
}

/// TCP3 Ante/Play under `config` within `budget`: exact at stride 1, else a sample.
fn tcp3_priced(config: &TableConfig, budget: &Budget) -> PricedEdge {
    let stride = budget.tcp3_player_stride;
    let f = tcp3_ante_play_sample(Some(config), stride);
    let method = match stride {
        1 => "exact: all 407,170,400 deals, Q-6-4 strategy, configured".to_string(),
        n => format!("exhaustive sample: every {n}th player hand, every dealer hand"),
    };
    PricedEdge::of_figure(PayLine::Ante, &f, method)
}

// ---- SSP4 Selection and the BET cap

/// Most boxes a layout may have for `ssp4_selection_exact`: each needs five cards.
pub const SELECTION_BOXES_MAX: u8 = 9;

/// What SSP4's Selection (§4.3-4.5: Magic Card, Lucky Player, Lucky Dealer, 5 to 1 by
/// default) adds to a jackpot wager in a round where the jackpot system makes that pick,
/// per unit of the wager. Each is exact, through the engine, on a deal with no jackpot
/// hand, as the difference from the same round without the pick. A negative edge: the
/// award is the player's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectionFigures {
    /// A Magic Card drawn uniformly from the 52 cards, on a player-hand wager (§4.3).
    /// The dealer's hand holds five cards too (§4.3.1): the same figure.
    pub magic_card: EdgeFigure,
    /// A Lucky Player drawn uniformly from the layout's `boxes` betting areas (§4.4).
    pub lucky_player: EdgeFigure,
    /// The table's dealer picked as Lucky Dealer, on a dealer-hand wager (§4.4.1).
    pub lucky_dealer: EdgeFigure,
}

/// SSP4's Selection under `config`'s pay tables (`None`: the seed's), for a layout of
/// `boxes` betting areas. The pick rates are the jackpot system's, not the table's: a
/// theoretical win multiplies each figure by its rate (RULES.md, "House edges").
pub fn ssp4_selection_exact(config: Option<&TableConfig>, boxes: u8) -> SelectionFigures {
    assert!((1..=SELECTION_BOXES_MAX).contains(&boxes), "boxes {boxes}");
    let deal = selection_deal(config, boxes);
    let base = selection_round(config, &deal, None, None, false);
    let base_net = jackpot_nets(&base);
    let mut magic_card = figure(RuleSet::Ssp4, "Selection: Magic Card", true);
    for m in Card::deck() {
        let r = selection_round(config, &deal, Some(m), None, false);
        magic_card.add(jackpot_nets(&r)[0] - base_net[0], 1);
    }
    let mut lucky_player = figure(RuleSet::Ssp4, "Selection: Lucky Player", true);
    for b in 1..=boxes {
        let r = selection_round(config, &deal, None, Some(BoxNo(b)), false);
        for (net, base) in jackpot_nets(&r).iter().zip(&base_net) {
            lucky_player.add(net - base, 1);
        }
    }
    let mut lucky_dealer = figure(RuleSet::Ssp4, "Selection: Lucky Dealer", true);
    let r = selection_round(config, &deal, None, None, true);
    let dealer_net: i64 = box_net(&r, &[PayLine::JackpotDealer]);
    let dealer_base: i64 = box_net(&base, &[PayLine::JackpotDealer]);
    lucky_dealer.add(dealer_net - dealer_base, 1);
    SelectionFigures {
        magic_card,
        lucky_player,
        lucky_dealer,
    }
}

/// Hands for `boxes` boxes and the dealer (the dealer's last), none of them a jackpot
/// hand under `config`: drawn from a fixed seed until one such deal comes up.
fn selection_deal(config: Option<&TableConfig>, boxes: u8) -> Vec<[Card; 5]> {
    let rt = match config {
        Some(c) => crate::rule_table(RuleSet::Ssp4).with_config(c),
        None => crate::rule_table(RuleSet::Ssp4),
    };
    let mut rng = SplitMix(CONFIGURED_MONTE_CARLO_SEED);
    let mut deck: [Card; 52] = std::array::from_fn(|i| Card::deck().nth(i).expect("52 cards"));
    let hands = usize::from(boxes) + 1;
    for _ in 0..10_000 {
        rng.deal(&mut deck, 5 * hands);
        let deal: Vec<[Card; 5]> = (0..hands)
            .map(|h| std::array::from_fn(|i| deck[5 * h + i]))
            .collect();
        if deal
            .iter()
            .all(|h| crate::lookup(&rt.jackpot, eval5(h).class()).is_none())
        {
            return deal;
        }
    }
    panic!("no deal without a jackpot hand in 10,000 draws");
}

/// A round of `deal`: every box an Ante and one credit on each jackpot wager, all
/// playing; the picks as given.
fn selection_round(
    config: Option<&TableConfig>,
    deal: &[[Card; 5]],
    magic_card: Option<Card>,
    lucky_box: Option<BoxNo>,
    lucky_dealer: bool,
) -> RoundInput {
    let (dealer, boxes) = deal.split_last().expect("a dealer hand");
    let bets = [
        (BetKind::Ante, UNIT_MINOR),
        (BetKind::Bet, 2 * UNIT_MINOR),
        (BetKind::JackpotPlayer, 1),
        (BetKind::JackpotDealer, 1),
    ];
    let mut r = one_box_round(
        RuleSet::Ssp4,
        config,
        dealer,
        &boxes[0],
        Some(Choice::Play),
        &bets,
    );
    r.boxes = boxes
        .iter()
        .enumerate()
        .map(|(i, cards)| BoxInput {
            box_no: BoxNo(i as u8 + 1),
            cards: cards.to_vec(),
            decision: Some(Choice::Play),
            bets: bets.iter().copied().collect(),
            invalidated: None,
        })
        .collect();
    r.credit_value = Some(Money(UNIT_MINOR));
    r.magic_card = magic_card;
    r.lucky_box = lucky_box;
    r.lucky_dealer = lucky_dealer;
    r
}

/// Each box's net on its player-hand jackpot wager, minor units, by box.
fn jackpot_nets(input: &RoundInput) -> Vec<i64> {
    let s = settle(input).unwrap_or_else(|e| panic!("a selection round settles: {e}"));
    s.boxes
        .iter()
        .map(|b| {
            b.lines
                .iter()
                .filter(|l| l.line == PayLine::JackpotPlayer)
                .map(|l| l.net.0)
                .sum()
        })
        .collect()
}

/// The rounds all 5-card hands make: C(52, 5).
const FIVE_CARD_HANDS: i128 = 2_598_960;

/// What a BET/PLAY win cap costs the player at an Ante of `ante` minor units: the rise of
/// the main game's edge, ppm of the Ante, with its 95% error bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapCost {
    /// The rise of the edge, ppm of the Ante (0: the cap never binds at this Ante).
    pub cost_ppm: i64,
    /// Twice its standard error (0: exact, no hand class reaches the cap).
    pub error_ppm: u64,
    /// The hand classes whose BET/PLAY win at this Ante exceeds the cap.
    pub classes: Vec<schemas::HandClass>,
}

/// The cost of `config`'s BET/PLAY win cap (or its rule set's default) at `ante`, by a
/// stratified Monte Carlo. Only a hand whose BET/PLAY win exceeds the cap can lose to it.
/// Each such class's share of the 2,598,960 hands is exact; `samples` deals per class,
/// drawn from `seed`, settle through the engine with the cap and without, and the mean
/// difference per class is weighted by that share.
pub fn stud_cap_cost(config: &TableConfig, ante: Money, samples: u64, seed: u64) -> CapCost {
    let rs = config.rule_set;
    assert!(rs != RuleSet::Tcp3, "TCP3 has no BET cap");
    assert!(ante.0 > 0 && samples > 0 && samples <= MONTE_CARLO_ROUNDS_MAX);
    let rt = crate::rule_table(rs).with_config(config);
    let stake = Money(ante.0.saturating_mul(rt.main_multiple));
    let Some(cap) = rt.bet_win_cap else {
        return CapCost {
            cost_ppm: 0,
            error_ppm: 0,
            classes: Vec::new(),
        };
    };
    let classes: Vec<schemas::HandClass> = rt
        .main
        .iter()
        .filter(|row| row_win(row.pays, stake) > i128::from(cap.0))
        .map(|row| row.hand)
        .collect();
    let by_class = hands_of(&classes);
    let capped = TableConfig {
        limits: Vec::new(),
        jackpot: None,
        ..config.clone()
    };
    let uncapped = TableConfig {
        bet_win_cap: Some(Money(i64::MAX)),
        ..capped.clone()
    };
    let mut rng = SplitMix(seed);
    let (mut cost, mut variance) = (0i128, 0f64);
    for hands in &by_class {
        let mut fig = figure(rs, "BET cap", false);
        for _ in 0..samples {
            let player = hands[(rng.next_u64() % hands.len() as u64) as usize];
            let dealer = dealer_around(&mut rng, &player);
            let bets = [(BetKind::Ante, ante.0), (rt.main_kind, stake.0)];
            let net = |c: &TableConfig| {
                box_net(
                    &one_box_round(rs, Some(c), &dealer, &player, Some(Choice::Play), &bets),
                    &MAIN_LINES,
                )
            };
            fig.add(net(&capped) - net(&uncapped), 1);
        }
        // The class's share of all hands times its mean loss to the cap, summed.
        let share = hands.len() as i128;
        cost += -fig.net_minor * share * 1_000_000;
        let n = fig.rounds as f64;
        let mean = fig.net_minor as f64 / n;
        let var = (fig.net_squared as f64 / n - mean * mean).max(0.0) / n;
        variance += (share as f64 / FIVE_CARD_HANDS as f64).powi(2) * var;
    }
    let per = FIVE_CARD_HANDS * i128::from(samples) * i128::from(ante.0);
    let error = 2.0 * variance.sqrt() / ante.0 as f64 * 1_000_000.0;
    CapCost {
        cost_ppm: (cost / per) as i64,
        error_ppm: error.round() as u64,
        classes,
    }
}

/// A row's win on `stake` beyond the stake, as `settle` pays it (pool rows: none).
fn row_win(pays: schemas::Pays, stake: Money) -> i128 {
    let stake = i128::from(stake.0);
    match pays {
        schemas::Pays::ToOne(x) => stake * i128::from(x),
        schemas::Pays::ForOne(x) => stake * i128::from(x.saturating_sub(1)),
        schemas::Pays::Fixed(m) => i128::from(m.0),
        schemas::Pays::PoolBasisPoints(_) => 0,
    }
}

/// Every 5-card hand of each of `classes`, by class, in `classes`' order.
fn hands_of(classes: &[schemas::HandClass]) -> Vec<Vec<[Card; 5]>> {
    let mut out = vec![Vec::new(); classes.len()];
    if classes.is_empty() {
        return out;
    }
    let d: Vec<Card> = Card::deck().collect();
    for a in 0..52 {
        for b in a + 1..52 {
            for c in b + 1..52 {
                for e in c + 1..52 {
                    for f in e + 1..52 {
                        let h = [d[a], d[b], d[c], d[e], d[f]];
                        let class = eval5(&h).class();
                        if let Some(i) = classes.iter().position(|x| *x == class) {
                            out[i].push(h);
                        }
                    }
                }
            }
        }
    }
    out
}

/// Five dealer cards drawn uniformly from the 47 the player's hand leaves.
fn dealer_around(rng: &mut SplitMix, player: &[Card; 5]) -> [Card; 5] {
    let mut rest: Vec<Card> = Card::deck().filter(|c| !player.contains(c)).collect();
    assert_eq!(rest.len(), 47);
    for i in 0..5 {
        let j = i + (rng.next_u64() % (47 - i) as u64) as usize;
        rest.swap(i, j);
    }
    std::array::from_fn(|i| rest[i])
}
