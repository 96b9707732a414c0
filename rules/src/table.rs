//! The five rule sets as data: pay tables, what qualifies the dealer, what a fold keeps,
//! the BET/Play multiple, caps and the clause that decides each step. `settle` is one code
//! path driven by a `RuleTable`; a table's configuration replaces pay tables, the cap and
//! the jackpot reset (`RuleTable::with_config`).

use schemas::{
    BetKind, HandClass, Money, PayLine, PayRow, PayTable, PayTableName, Pays, RuleSet, TableConfig,
};

/// What the dealer needs to qualify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Qualifier {
    /// An Ace and a King or better (CSP6 §1.14, SSP4 §3.12, CS51).
    AceKing,
    /// Queen high or better (TCP3).
    QueenHigh,
}

/// Clause numbers of one rule set, cited by every settlement line.
#[derive(Debug, Clone, Copy)]
pub struct Clauses {
    /// A fold loses the Ante (CSP6 §3.12.1).
    pub fold: &'static str,
    /// The dealer does not qualify (CSP6 §3.13).
    pub not_qualifying: &'static str,
    /// The player's hand beats the qualifying dealer's (CSP6 §3.14.1).
    pub player_wins: &'static str,
    /// The qualifying dealer's hand beats the player's (CSP6 §3.14.2).
    pub player_loses: &'static str,
    /// Equal hands stand off (CSP6 §3.14.3).
    pub stand_off: &'static str,
    /// The BET/Play pay table (CSP6 §4.1).
    pub main_pays: &'static str,
    /// The cap on a box's BET win (CSP6 §4.1.1).
    pub cap: &'static str,
    /// The jackpot pay table (CSP6 §4.2).
    pub jackpot_pays: &'static str,
    /// What a fold does to a jackpot bet (CSP6 §3.12.1).
    pub fold_jackpot: &'static str,
    /// A BET/Play over the required multiple of the Ante (CSP6 §5.3.1).
    pub multiple_over: &'static str,
    /// A BET/Play under the required multiple of the Ante (CSP6 §5.3.2).
    pub multiple_under: &'static str,
    /// A stake over the table maximum (CSP6 §5.1.1).
    pub over_max: &'static str,
    /// A jackpot bet placed without an Ante (CSP6 §5.4).
    pub jackpot_without_ante: &'static str,
    /// A player who walks away, or leaves an Ante undecided (CSP6 §5.5).
    pub walk_away: &'static str,
    /// A player who refuses to reveal the hand (CSP6 §4.3).
    pub refuse_to_reveal: &'static str,
    /// A void round returns every stake (CSP6 §5.22).
    pub void: &'static str,
    /// A hand with the wrong number of cards (CSP6 §5.15).
    pub wrong_card_count: &'static str,
    /// Several boxes win a major jackpot in one round (CSP6 §4.5.1).
    pub several_major_winners: &'static str,
}

/// One rule set's rules as data.
#[derive(Debug, Clone)]
pub struct RuleTable {
    /// The rule set these rules are.
    pub rule_set: RuleSet,
    /// Cards in a hand.
    pub hand_len: usize,
    /// The bet placed to stay in (BET or Play) and its multiple of the Ante.
    pub main_kind: BetKind,
    /// The required BET/Play as a multiple of the Ante (CSP6 §5.3).
    pub main_multiple: i64,
    /// What the dealer needs to qualify.
    pub qualifier: Qualifier,
    /// BET/PLAY pay table when the dealer qualifies and loses (CSP6 §4.1).
    pub main: Vec<PayRow>,
    /// Progressive jackpot pay table; for SSP4 it serves the player's and the dealer's hand.
    pub jackpot: Vec<PayRow>,
    /// Bet kinds settled on the jackpot table.
    pub jackpot_kinds: &'static [BetKind],
    /// A folded hand keeps its jackpot eligibility (MLP3 §3.12.1; SSP4 by RULES-NOTES 10).
    pub fold_keeps_jackpot: bool,
    /// TCP3 §3.12.1: a fold also loses the Pair Plus.
    pub fold_loses_pair_plus: bool,
    /// TCP3 Pair Plus pay table; empty for the other rule sets.
    pub pair_plus: Vec<PayRow>,
    /// TCP3 Ante Bonus pay table; empty for the other rule sets.
    pub ante_bonus: Vec<PayRow>,
    /// CS51 5+1 Bonus.
    pub bonus: Vec<PayRow>,
    /// SSP4 §4.5 Magic Card / Lucky Player / Lucky Dealer.
    pub selection: Option<Pays>,
    /// Cap on the win of the BET of one box (CSP6/MLP3 §4.1.1).
    pub bet_win_cap: Option<Money>,
    /// The clause numbers each settlement line cites.
    pub clauses: Clauses,
}

fn to1(hand: HandClass, x: u32) -> PayRow {
    PayRow {
        hand,
        pays: Pays::ToOne(x),
        envy: None,
    }
}
fn for1(hand: HandClass, x: u32) -> PayRow {
    PayRow {
        hand,
        pays: Pays::ForOne(x),
        envy: None,
    }
}
fn fixed(hand: HandClass, cents: i64) -> PayRow {
    PayRow {
        hand,
        pays: Pays::Fixed(Money(cents)),
        envy: None,
    }
}
fn pool(hand: HandClass, bp: u32) -> PayRow {
    PayRow {
        hand,
        pays: Pays::PoolBasisPoints(bp),
        envy: None,
    }
}

/// CSP6/MLP3/SSP4 §4.1 BET table; "One Pair or Less" pays 1 to 1.
fn stud_main() -> Vec<PayRow> {
    use HandClass::*;
    vec![
        to1(RoyalFlush, 250),
        to1(StraightFlush, 50),
        to1(FourOfAKind, 20),
        to1(FullHouse, 7),
        to1(Flush, 5),
        to1(Straight, 4),
        to1(ThreeOfAKind, 3),
        to1(TwoPairs, 2),
        to1(OnePair, 1),
        to1(HighCard, 1),
    ]
}

/// CS51 PLAY table (RULES-NOTES 13): the stud table with a Royal Flush at 100 to 1.
fn cs51_main() -> Vec<PayRow> {
    let mut rows = stud_main();
    rows[0] = to1(HandClass::RoyalFlush, 100);
    rows
}

const STUD_CLAUSES: Clauses = Clauses {
    fold: "3.12.1",
    not_qualifying: "3.13",
    player_wins: "3.14.1",
    player_loses: "3.14.2",
    stand_off: "3.14.3",
    main_pays: "4.1",
    cap: "4.1.1",
    jackpot_pays: "4.2",
    fold_jackpot: "3.12.1",
    multiple_over: "5.3.1",
    multiple_under: "5.3.2",
    over_max: "5.1.1",
    jackpot_without_ante: "5.4",
    walk_away: "5.5",
    refuse_to_reveal: "4.3",
    void: "5.22",
    wrong_card_count: "5.15",
    several_major_winners: "4.5.1",
};

/// The default rule table of a rule set, from the seed (CS51 from RULES-NOTES 13).
pub fn rule_table(rule_set: RuleSet) -> RuleTable {
    match rule_set {
        RuleSet::Csp6 => csp6_table(),
        RuleSet::Mlp3 => mlp3_table(),
        RuleSet::Ssp4 => ssp4_table(),
        RuleSet::Cs51 => cs51_table(),
        RuleSet::Tcp3 => tcp3_table(),
    }
}

/// What the five-card games share (CSP6 §3-§4): a BET at twice the Ante, an Ace-King
/// qualifier, the stud pay table; no side bets, no cap. Each rule set changes what differs.
fn stud_base(rule_set: RuleSet) -> RuleTable {
    RuleTable {
        rule_set,
        hand_len: 5,
        main_kind: BetKind::Bet,
        main_multiple: 2,
        qualifier: Qualifier::AceKing,
        main: stud_main(),
        jackpot: vec![],
        jackpot_kinds: &[],
        fold_keeps_jackpot: false,
        fold_loses_pair_plus: false,
        pair_plus: vec![],
        ante_bonus: vec![],
        bonus: vec![],
        selection: None,
        bet_win_cap: None,
        clauses: STUD_CLAUSES,
    }
}

/// The CSP6 rule table, from the seed.
fn csp6_table() -> RuleTable {
    use HandClass::*;
    RuleTable {
        jackpot: vec![
            pool(RoyalFlush, 10_000),
            pool(StraightFlush, 1_000),
            fixed(FourOfAKind, 50_000),
            fixed(FullHouse, 20_000),
            fixed(Flush, 10_000),
        ],
        jackpot_kinds: &[BetKind::Progressive],
        bet_win_cap: Some(Money(10_000_000)),
        ..stud_base(RuleSet::Csp6)
    }
}

/// The MLP3 rule table, from the seed.
fn mlp3_table() -> RuleTable {
    use HandClass::*;
    RuleTable {
        jackpot: vec![
            pool(RoyalFlush, 10_000),
            pool(StraightFlush, 1_000),
            for1(FourOfAKind, 400),
            for1(FullHouse, 80),
            for1(Flush, 40),
            for1(Straight, 20),
        ],
        fold_keeps_jackpot: true,
        ..rule_table(RuleSet::Csp6)
    }
    .renamed(RuleSet::Mlp3)
}

/// The SSP4 rule table, from the seed.
fn ssp4_table() -> RuleTable {
    use HandClass::*;
    RuleTable {
        jackpot: vec![
            pool(RoyalFlush, 10_000),
            pool(StraightFlush, 1_000),
            to1(FourOfAKind, 500),
            to1(FullHouse, 100),
            to1(Flush, 50),
        ],
        jackpot_kinds: &[BetKind::JackpotPlayer, BetKind::JackpotDealer],
        fold_keeps_jackpot: true,
        selection: Some(Pays::ToOne(5)),
        clauses: Clauses {
            fold: "3.9",
            not_qualifying: "3.12",
            player_wins: "3.13.1",
            player_loses: "3.13.2",
            stand_off: "3.16",
            main_pays: "4.1.2",
            cap: "4.1.2",
            jackpot_pays: "4.2",
            fold_jackpot: "RULES-NOTES 10",
            multiple_over: "RULES-NOTES 20",
            multiple_under: "RULES-NOTES 20",
            over_max: "RULES-NOTES 21",
            jackpot_without_ante: "3.5",
            walk_away: "RULES-NOTES 23",
            refuse_to_reveal: "RULES-NOTES 23",
            void: "RULES-NOTES 22",
            wrong_card_count: "5.2",
            several_major_winners: "RULES-NOTES 8",
        },
        ..stud_base(RuleSet::Ssp4)
    }
}

/// The CS51 rule table, from the seed.
fn cs51_table() -> RuleTable {
    use HandClass::*;
    RuleTable {
        main_kind: BetKind::Play,
        main: cs51_main(),
        bonus: vec![
            to1(RoyalFlush, 1000),
            to1(StraightFlush, 200),
            to1(FourOfAKind, 100),
            to1(FullHouse, 20),
            to1(Flush, 15),
            to1(Straight, 10),
            to1(ThreeOfAKind, 7),
        ],
        clauses: Clauses {
            fold: "How To Play (fold forfeits the ANTE)",
            not_qualifying: "How To Play (house does not qualify)",
            player_wins: "How To Play (player beats the house)",
            player_loses: "How To Play (house beats the player)",
            stand_off: "How To Play (tie)",
            main_pays: "RULES-NOTES 13",
            cap: "RULES-NOTES 13",
            jackpot_pays: "RULES-NOTES 13",
            fold_jackpot: "RULES-NOTES 14",
            multiple_over: "RULES-NOTES 20",
            multiple_under: "RULES-NOTES 20",
            over_max: "RULES-NOTES 21",
            jackpot_without_ante: "How To Play (5+1 BONUS only after an ANTE)",
            walk_away: "RULES-NOTES 23",
            refuse_to_reveal: "RULES-NOTES 23",
            void: "RULES-NOTES 22",
            wrong_card_count: "RULES-NOTES 22",
            several_major_winners: "RULES-NOTES 8",
        },
        ..stud_base(RuleSet::Cs51)
    }
}

/// TCP3's clauses for each outcome (TCP3 rule book).
const TCP3_CLAUSES: Clauses = Clauses {
    fold: "3.12.1",
    not_qualifying: "3.13",
    player_wins: "3.15.1",
    player_loses: "3.15.2",
    stand_off: "3.15.3",
    main_pays: "4.1",
    cap: "4.1",
    jackpot_pays: "4.4",
    fold_jackpot: "3.12.1",
    multiple_over: "5.3.1",
    multiple_under: "5.3.2",
    over_max: "5.1.1",
    jackpot_without_ante: "5.4",
    walk_away: "5.5",
    refuse_to_reveal: "4.5",
    void: "5.21",
    wrong_card_count: "5.15",
    // 4.9.1 orders winners across tables; at one table, deal order (RN8).
    several_major_winners: "RULES-NOTES 8",
};

/// The TCP3 rule table, from the seed.
fn tcp3_table() -> RuleTable {
    use HandClass::*;
    RuleTable {
        hand_len: 3,
        main_kind: BetKind::Play,
        main_multiple: 1,
        qualifier: Qualifier::QueenHigh,
        main: [
            StraightFlush,
            ThreeOfAKind,
            Straight,
            Flush,
            OnePair,
            HighCard,
        ]
        .into_iter()
        .map(|h| to1(h, 1))
        .collect(),
        jackpot: vec![
            PayRow {
                hand: MiniRoyalSpades,
                pays: Pays::PoolBasisPoints(10_000),
                envy: Some(Money(25_000)),
            },
            PayRow {
                hand: MiniRoyal,
                pays: Pays::Fixed(Money(125_000)),
                envy: Some(Money(5_000)),
            },
            fixed(StraightFlush, 17_500),
            fixed(ThreeOfAKind, 15_000),
            fixed(Straight, 1_500),
        ],
        jackpot_kinds: &[BetKind::Progressive],
        fold_loses_pair_plus: true,
        pair_plus: vec![
            to1(StraightFlush, 40),
            to1(ThreeOfAKind, 30),
            to1(Straight, 5),
            to1(Flush, 4),
            to1(OnePair, 1),
        ],
        ante_bonus: vec![
            to1(StraightFlush, 5),
            to1(ThreeOfAKind, 4),
            to1(Straight, 1),
        ],
        clauses: TCP3_CLAUSES,
        ..stud_base(RuleSet::Tcp3)
    }
}

impl RuleTable {
    fn renamed(mut self, rule_set: RuleSet) -> RuleTable {
        self.rule_set = rule_set;
        self
    }

    /// This rule set's table with the table configuration's overrides: pay tables that the
    /// table displays instead of the seed's, the BET cap.
    pub fn with_config(mut self, config: &TableConfig) -> RuleTable {
        for PayTable { name, rows } in &config.pay_tables {
            let rows = rows.clone();
            match name {
                PayTableName::Main => self.main = rows,
                PayTableName::Jackpot => self.jackpot = rows,
                PayTableName::PairPlus => self.pair_plus = rows,
                PayTableName::AnteBonus => self.ante_bonus = rows,
                PayTableName::Bonus => self.bonus = rows,
                PayTableName::Selection => self.selection = rows.first().map(|r| r.pays),
            }
        }
        if config.bet_win_cap.is_some() {
            self.bet_win_cap = config.bet_win_cap;
        }
        self
    }

    /// "CSP6 3.13": a clause of this rule set, as settlement lines cite it.
    pub fn cite(&self, clause: &str) -> String {
        // Pushed rather than `format!`ted: every settlement line of a replay cites one.
        let code = self.rule_set.code();
        let mut s = String::with_capacity(code.len() + 1 + clause.len());
        s.push_str(code);
        s.push(' ');
        s.push_str(clause);
        s
    }

    /// The line the BET/Play is settled on.
    pub fn main_line(&self) -> PayLine {
        self.main_kind.line()
    }
}

/// The row of `rows` for `class`, if that hand pays.
pub fn lookup(rows: &[PayRow], class: HandClass) -> Option<&PayRow> {
    rows.iter().find(|r| r.hand == class)
}
