//! Golden tests (docs/STYLE.md, golden tests): tests/golden/<name>.events.jsonl (a table chain,
//! one JSON event per line) beside <name>.report.json (the expected reports, pretty JSON).
//! `check_all` replays every scenario and compares byte for byte. `BLESS=1` rewrites both
//! files: the events from the scenario code below (the scenarios are written here so that each
//! one reads as what happens at the table), the reports from the replay. A blessed report is
//! reviewed by hand before it is committed: the clean scenarios carry the payouts of
//! ../shared/seeds/EXAMPLES.md (computed independently of our rules engine), so a clean verdict
//! there means the engine and the replayer agree with the worked examples.

use replayer::{read_jsonl, replay_table, reports_json};
use schemas::chain::{deck_commitment, event_hash};
use schemas::codec::to_json;
use schemas::findings::{lookup, FindingKind};
use schemas::report::Verdict;
use schemas::{
    Announcement, BetKind, BetLimit, BoxNo, Card, CardTarget, Choice, DealingMode, DeviceId, Event,
    EventBody, Hash32, JackpotConfig, Money, PayLine, PoolId, RoundId, RuleSet, Ruling, Seq,
    StaffId, Stake, TableConfig, TableId,
};

use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn c(s: &str) -> Card {
    Card::parse(s).unwrap()
}
fn cards(s: &[&str]) -> Vec<Card> {
    s.iter().map(|x| c(x)).collect()
}

/// Builds a table chain with real hashes over the JSON form.
struct Chain {
    table: TableId,
    seq: u64,
    prev: Hash32,
    t_ns: i64,
    round: Option<RoundId>,
    events: Vec<Event>,
}

impl Chain {
    fn new(table: &str) -> Chain {
        Chain {
            table: TableId::new(table).unwrap(),
            seq: 0,
            prev: Hash32::ZERO,
            t_ns: 1_780_000_000_000_000_000,
            round: None,
            events: Vec::new(),
        }
    }
    fn e(&mut self, body: EventBody) -> Seq {
        self.seq += 1;
        self.t_ns += 1_000_000_000;
        let ev = Event {
            v: 1,
            table: self.table.clone(),
            device: DeviceId::new("dealer-terminal").unwrap(),
            seq: Seq(self.seq),
            prev: self.prev,
            occurred_at_ns: self.t_ns,
            round: self.round,
            body,
        };
        self.prev = event_hash(&self.prev, &to_json(&ev));
        self.events.push(ev);
        Seq(self.seq)
    }
    fn announce(&mut self, a: Announcement) {
        self.e(EventBody::Announced { announcement: a });
    }
    fn jsonl(&self) -> String {
        let mut s = String::new();
        for e in &self.events {
            s.push_str(&String::from_utf8(to_json(e)).unwrap());
            s.push('\n');
        }
        s
    }
}

fn config(rs: RuleSet, dealing: DealingMode, reset: i64) -> TableConfig {
    let jackpot = (rs != RuleSet::Cs51).then(|| JackpotConfig {
        pool: PoolId::new(format!("{}-PJ", rs.code())).unwrap(),
        linked: rs == RuleSet::Mlp3,
        reset: Money(reset),
        contribution_bp: 2_500,
        credit_value: Money(if rs == RuleSet::Ssp4 { 100 } else { 0 }),
    });
    TableConfig {
        rule_set: rs,
        rules_version: "seed".into(),
        currency: "SGD".into(),
        boxes: if rs == RuleSet::Cs51 { 1 } else { 7 },
        dealing,
        limits: Vec::new(),
        pay_tables: Vec::new(),
        bet_win_cap: None,
        jackpot,
    }
}

/// One box of a scripted round.
#[derive(Clone)]
struct Bx {
    no: u8,
    cards: Vec<Card>,
    bets: Vec<(BetKind, i64)>,
    decision: Option<(Choice, Option<i64>)>,
}

fn bx(no: u8, c: &[&str], bets: &[(BetKind, i64)], decision: Option<Choice>) -> Bx {
    Bx {
        no,
        cards: cards(c),
        bets: bets.to_vec(),
        decision: decision.map(|d| (d, None)),
    }
}

/// A scripted round: what the devices report, with hooks to inject faults.
#[derive(Clone)]
struct Script {
    round: u64,
    rs: RuleSet,
    dealing: DealingMode,
    pool: i64,
    dealer: Vec<Card>,
    boxes: Vec<Bx>,
    /// Burnt card (manual shoe CSP6/MLP3/TCP3); `None` = skipped.
    burn: Option<Card>,
    shuffle: bool,
    commit: bool,
    /// Dealer's recorded net per box and line.
    paid: Vec<(u8, PayLine, i64)>,
    magic: Option<Card>,
    close: bool,
    /// Events after "No more Bets" and before the deal.
    after_nmb: Vec<EventBody>,
    /// Events after the deal, before decisions.
    after_deal: Vec<EventBody>,
    /// Events after decisions, before the dealer reveals.
    after_decisions: Vec<EventBody>,
    /// Deal override: (target, card) in the order dealt, replacing the computed deal.
    deal: Option<Vec<(CardTarget, Card)>>,
    /// Deck order to reveal instead of the deal itself (swapped hands etc).
    reveal: Option<Vec<Card>>,
    /// Reveal exactly this deck (not completed to 52 cards).
    reveal_raw: Option<Vec<Card>>,
    /// Commit to the deck but never reveal it.
    no_reveal: bool,
    /// Which of the dealer's cards (1-based) is dealt face up; the last when `None`.
    dealer_up: Option<usize>,
}

fn script(
    rs: RuleSet,
    dealer: &[&str],
    pool: i64,
    boxes: Vec<Bx>,
    paid: &[(u8, PayLine, i64)],
) -> Script {
    let dealing = if rs == RuleSet::Cs51 {
        DealingMode::Rng
    } else {
        DealingMode::ManualShoe
    };
    let dealer = cards(dealer);
    let used: Vec<Card> = dealer
        .iter()
        .chain(boxes.iter().flat_map(|b| b.cards.iter()))
        .copied()
        .collect();
    let burn = (dealing == DealingMode::ManualShoe && rs != RuleSet::Ssp4)
        .then(|| Card::deck().find(|c| !used.contains(c)).unwrap());
    Script {
        round: 1,
        rs,
        dealing,
        pool,
        dealer,
        boxes,
        burn,
        shuffle: true,
        commit: false,
        paid: paid.to_vec(),
        magic: None,
        close: true,
        after_nmb: Vec::new(),
        after_deal: Vec::new(),
        after_decisions: Vec::new(),
        deal: None,
        reveal: None,
        reveal_raw: None,
        no_reveal: false,
        dealer_up: None,
    }
}

impl Script {
    fn computed_deal(&self) -> Vec<(CardTarget, Card)> {
        let n = self.rs.hand_len();
        let mut d = Vec::new();
        if let Some(b) = self.burn {
            d.push((CardTarget::Burn, b));
        }
        let dealt: Vec<&Bx> = self.boxes.iter().filter(|b| !b.cards.is_empty()).collect();
        if self.dealing == DealingMode::ManualShoe {
            for k in 0..n {
                for b in &dealt {
                    if let Some(card) = b.cards.get(k) {
                        d.push((CardTarget::Box(BoxNo(b.no)), *card));
                    }
                }
                if let Some(card) = self.dealer.get(k) {
                    d.push((CardTarget::Dealer, *card));
                }
            }
            for card in self.dealer.iter().skip(n) {
                d.push((CardTarget::Dealer, *card));
            }
        } else {
            for b in &dealt {
                for card in &b.cards {
                    d.push((CardTarget::Box(BoxNo(b.no)), *card));
                }
            }
            for card in &self.dealer {
                d.push((CardTarget::Dealer, *card));
            }
        }
        d
    }

    fn play(&self, ch: &mut Chain) {
        ch.round = Some(RoundId(self.round));
        let deal = self.deal.clone().unwrap_or_else(|| self.computed_deal());
        let mut deck: Vec<Card> = self
            .reveal
            .clone()
            .unwrap_or_else(|| deal.iter().map(|d| d.1).collect());
        for card in Card::deck() {
            if !deck.contains(&card) && deck.len() < 52 {
                deck.push(card);
            }
        }
        if let Some(raw) = &self.reveal_raw {
            deck = raw.clone();
        }
        let salt = Hash32([7; 32]);
        if self.shuffle {
            let deck_commitment = self.commit.then(|| deck_commitment(&salt, &deck));
            ch.e(EventBody::ShuffleCompleted { deck_commitment });
        }
        ch.announce(Announcement::PlaceYourBets);
        if self.rs != RuleSet::Cs51 {
            ch.e(EventBody::JackpotShown {
                pool: PoolId::new(format!("{}-PJ", self.rs.code())).unwrap(),
                value: Money(self.pool),
            });
        }
        for b in &self.boxes {
            for &(kind, amount) in &b.bets {
                let stake = if kind.in_credits() {
                    Stake::Credits(amount as u32)
                } else {
                    Stake::Chips(Money(amount))
                };
                ch.e(EventBody::BetPlaced {
                    box_no: BoxNo(b.no),
                    kind,
                    stake,
                });
            }
        }
        ch.announce(Announcement::NoMoreBets);
        for body in &self.after_nmb {
            ch.e(body.clone());
        }
        if let Some(m) = self.magic {
            ch.e(EventBody::MagicCardSelected { card: m });
        }
        let n_dealer = deal.iter().filter(|d| d.0 == CardTarget::Dealer).count();
        let mut dealer_i = 0;
        for (i, (to, card)) in deal.iter().enumerate() {
            let face_up = match to {
                CardTarget::Box(_) => self.rs == RuleSet::Cs51,
                CardTarget::Dealer => {
                    dealer_i += 1;
                    self.rs != RuleSet::Tcp3 && dealer_i == self.dealer_up.unwrap_or(n_dealer)
                }
                CardTarget::Burn => false,
            };
            ch.e(EventBody::CardDealt {
                to: *to,
                card: *card,
                face_up,
                position: (i + 1) as u16,
            });
        }
        for body in &self.after_deal {
            ch.e(body.clone());
        }
        for b in &self.boxes {
            if let Some((choice, stake)) = b.decision {
                let ante = b
                    .bets
                    .iter()
                    .find(|x| x.0 == BetKind::Ante)
                    .map_or(0, |x| x.1);
                let stake = (choice == Choice::Play).then(|| {
                    Money(stake.unwrap_or(ante * if self.rs == RuleSet::Tcp3 { 1 } else { 2 }))
                });
                ch.e(EventBody::Decided {
                    box_no: BoxNo(b.no),
                    choice,
                    stake,
                });
            }
        }
        for body in &self.after_decisions {
            ch.e(body.clone());
        }
        ch.e(EventBody::DealerRevealed {
            cards: self.dealer.clone(),
        });
        for &(b, line, net) in &self.paid {
            ch.e(EventBody::PaidOut {
                box_no: BoxNo(b),
                line,
                net: Money(net),
            });
        }
        if self.commit && !self.no_reveal {
            ch.e(EventBody::DeckRevealed { order: deck, salt });
        }
        if self.close {
            ch.e(EventBody::RoundClosed);
        }
    }
}

fn staff() -> StaffId {
    StaffId::new("PS0042").unwrap()
}

use BetKind::{Ante, Bonus, JackpotDealer, JackpotPlayer, PairPlus, Progressive};
use PayLine as L;

/// The EXAMPLES.md rounds, as scripts with the worked nets as the dealer's payouts.
fn examples() -> Vec<(&'static str, Script, i64)> {
    let p = Some(Choice::Play);
    let f = Some(Choice::Fold);
    vec![
        (
            "csp6_dealer_not_qualifying",
            script(
                RuleSet::Csp6,
                &["Ah", "Qd", "9c", "6s", "3h"],
                0,
                vec![bx(1, &["7c", "7d", "Kh", "5s", "2d"], &[(Ante, 1000)], p)],
                &[(1, L::Ante, 1000), (1, L::Bet, 0)],
            ),
            0,
        ),
        (
            "csp6_flush_beats_qualifier",
            script(
                RuleSet::Csp6,
                &["Ac", "Kd", "8c", "6s", "3h"],
                0,
                vec![bx(1, &["2h", "6h", "9h", "Jh", "Kh"], &[(Ante, 1000)], p)],
                &[(1, L::Ante, 1000), (1, L::Bet, 10000)],
            ),
            0,
        ),
        (
            "csp6_royal_capped",
            script(
                RuleSet::Csp6,
                &["As", "Kd", "8c", "6s", "3h"],
                0,
                vec![bx(1, &["Ah", "Kh", "Qh", "Jh", "Th"], &[(Ante, 50000)], p)],
                &[(1, L::Ante, 50000), (1, L::Bet, 10000000)],
            ),
            0,
        ),
        (
            "csp6_folded_flush_no_jackpot",
            script(
                RuleSet::Csp6,
                &["As", "Kd", "8c", "6s", "3h"],
                5000000,
                vec![bx(
                    1,
                    &["2h", "6h", "9h", "Jh", "Kh"],
                    &[(Ante, 1000), (Progressive, 100)],
                    f,
                )],
                &[(1, L::Ante, -1000), (1, L::Progressive, -100)],
            ),
            1000000,
        ),
        (
            "csp6_full_house_loses_wins_jackpot",
            script(
                RuleSet::Csp6,
                &["Ks", "Kc", "Kd", "4s", "4h"],
                5000000,
                vec![bx(
                    1,
                    &["9s", "9c", "9d", "5s", "5h"],
                    &[(Ante, 1000), (Progressive, 100)],
                    p,
                )],
                &[
                    (1, L::Ante, -1000),
                    (1, L::Bet, -2000),
                    (1, L::Progressive, 19900),
                ],
            ),
            1000000,
        ),
        (
            "csp6_stand_off",
            script(
                RuleSet::Csp6,
                &["Ac", "Kd", "8c", "6s", "3h"],
                0,
                vec![bx(1, &["Ah", "Kc", "8d", "6h", "3c"], &[(Ante, 1000)], p)],
                &[(1, L::Ante, 0), (1, L::Bet, 0)],
            ),
            0,
        ),
        (
            "mlp3_folded_quads_win_jackpot",
            script(
                RuleSet::Mlp3,
                &["As", "Kd", "8c", "6s", "3h"],
                5000000,
                vec![bx(
                    1,
                    &["4h", "4d", "4c", "4s", "Kh"],
                    &[(Ante, 1000), (Progressive, 100)],
                    f,
                )],
                &[(1, L::Ante, -1000), (1, L::Progressive, 39900)],
            ),
            1000000,
        ),
        (
            "mlp3_two_major_winners",
            script(
                RuleSet::Mlp3,
                &["2s", "7d", "8c", "Js", "3h"],
                100000000,
                vec![
                    bx(
                        1,
                        &["Ah", "Kh", "Qh", "Jh", "Th"],
                        &[(Ante, 1000), (Progressive, 100)],
                        p,
                    ),
                    bx(2, &["9c", "8d", "7s", "6s", "5c"], &[(Ante, 1000)], p),
                    bx(
                        3,
                        &["9d", "Td", "Jd", "Qd", "Kd"],
                        &[(Ante, 1000), (Progressive, 100)],
                        p,
                    ),
                ],
                &[
                    (1, L::Ante, 1000),
                    (1, L::Bet, 0),
                    (1, L::Progressive, 99999900),
                    (2, L::Ante, 1000),
                    (2, L::Bet, 0),
                    (3, L::Ante, 1000),
                    (3, L::Bet, 0),
                    (3, L::Progressive, 499900),
                ],
            ),
            5000000,
        ),
        (
            "ssp4_credits_magic_card",
            {
                let mut s = script(
                    RuleSet::Ssp4,
                    &["5d", "5c", "Js", "Jd", "2h"],
                    5000000,
                    vec![
                        bx(
                            1,
                            &["8s", "8h", "8d", "Kc", "Kd"],
                            &[(Ante, 1000), (JackpotPlayer, 2), (JackpotDealer, 1)],
                            p,
                        ),
                        bx(
                            2,
                            &["Ac", "Qc", "9h", "6d", "3s"],
                            &[(Ante, 1000), (JackpotDealer, 3)],
                            f,
                        ),
                    ],
                    &[
                        (1, L::Ante, 1000),
                        (1, L::Bet, 14000),
                        (1, L::JackpotPlayer, 20000),
                        (1, L::JackpotDealer, 500),
                        (2, L::Ante, -1000),
                        (2, L::JackpotDealer, 1500),
                    ],
                );
                s.magic = Some(c("2h"));
                s
            },
            1000000,
        ),
        (
            "cs51_bonus_pays_on_fold",
            script(
                RuleSet::Cs51,
                &["2c", "9d", "Tc", "4s", "7h"],
                0,
                vec![bx(
                    1,
                    &["7c", "7d", "Kh", "5s", "2d"],
                    &[(Ante, 1000), (Bonus, 500)],
                    f,
                )],
                &[(1, L::Ante, -1000), (1, L::Bonus, 3500)],
            ),
            0,
        ),
        (
            "tcp3_a23_lowest_straight",
            script(
                RuleSet::Tcp3,
                &["Kc", "Qd", "Jh"],
                0,
                vec![bx(1, &["As", "2d", "3c"], &[(Ante, 1000)], p)],
                &[
                    (1, L::Ante, -1000),
                    (1, L::Play, -1000),
                    (1, L::AnteBonus, 1000),
                ],
            ),
            0,
        ),
        (
            "tcp3_fold_and_pair_plus_only",
            script(
                RuleSet::Tcp3,
                &["Qc", "8d", "5h"],
                0,
                vec![
                    bx(1, &["6s", "6d", "2c"], &[(Ante, 1000), (PairPlus, 500)], f),
                    bx(2, &["2h", "7h", "Jh"], &[(PairPlus, 500)], None),
                ],
                &[
                    (1, L::Ante, -1000),
                    (1, L::PairPlus, -500),
                    (2, L::PairPlus, 2000),
                ],
            ),
            0,
        ),
        (
            "tcp3_mini_royal_spades_envy",
            script(
                RuleSet::Tcp3,
                &["Jc", "8d", "5h"],
                2000000,
                vec![
                    bx(
                        1,
                        &["As", "Ks", "Qs"],
                        &[(Ante, 1000), (Progressive, 100)],
                        p,
                    ),
                    bx(2, &["9c", "9d", "2h"], &[(Ante, 1000)], p),
                    bx(
                        3,
                        &["4c", "7d", "Th"],
                        &[(Ante, 1000), (Progressive, 100)],
                        f,
                    ),
                ],
                &[
                    (1, L::Ante, 1000),
                    (1, L::Play, 0),
                    (1, L::AnteBonus, 5000),
                    (1, L::Progressive, 1999900),
                    (2, L::Ante, 1000),
                    (2, L::Play, 0),
                    (2, L::AnteBonus, 0),
                    (3, L::Ante, -1000),
                    (3, L::Progressive, -100),
                    (3, L::Envy, 25000),
                ],
            ),
            500000,
        ),
    ]
}

/// A plain CSP6 round (dealer qualifies with A-K, box 1 flush wins, box 2 folds).
fn base_csp6() -> Script {
    script(
        RuleSet::Csp6,
        &["Ac", "Kd", "8c", "6s", "3h"],
        0,
        vec![
            bx(
                1,
                &["2h", "6h", "9h", "Jh", "Kh"],
                &[(Ante, 1000)],
                Some(Choice::Play),
            ),
            bx(
                2,
                &["7c", "4d", "Ts", "5s", "2d"],
                &[(Ante, 1000)],
                Some(Choice::Fold),
            ),
        ],
        &[(1, L::Ante, 1000), (1, L::Bet, 10000), (2, L::Ante, -1000)],
    )
}

/// Issue 47: recorded SSP4 rounds whose jackpot wins come from a small or empty pool (reset
/// 0), and a Lucky Player on an empty area. The dealer's payouts are computed by hand
/// (SSP4 §3.12, §4.1-4.5, RULES-NOTES 2, 3, 8), so a clean verdict is agreement.
fn ssp4_small_pools() -> Vec<(&'static str, Script)> {
    let (p, f) = (Some(Choice::Play), Some(Choice::Fold));
    let straight_flush = ["8h", "6h", "5h", "4h", "7h"];
    let full_house = ["2c", "2h", "2s", "3c", "3d"];
    let sf_box = |jackpot: i64| {
        bx(
            1,
            &straight_flush,
            &[(Ante, 1000), (JackpotPlayer, jackpot)],
            p,
        )
    };
    // §4.2: 10% of 0 is 0; §4.3: the Magic Card 5 to 1 on 1.00. Bet: 50 to 1 on 2,000.
    let mut magic = script(
        RuleSet::Ssp4,
        &full_house,
        0,
        vec![sf_box(1)],
        &[
            (1, L::Ante, 1000),
            (1, L::Bet, 100000),
            (1, L::JackpotPlayer, 500),
        ],
    );
    magic.magic = Some(c("4h"));
    // §3.9: the fold loses the Ante; §4.2: 10% of 9 is 0; §4.4.1: Lucky Dealer 5 to 1.
    let mut dealer = script(
        RuleSet::Ssp4,
        &["9c", "Tc", "Jc", "Qc", "Kc"],
        9,
        vec![bx(
            1,
            &["2d", "5h", "8s", "Jd", "Ah"],
            &[(Ante, 1000), (JackpotDealer, 1)],
            f,
        )],
        &[(1, L::Ante, -1000), (1, L::JackpotDealer, 500)],
    );
    dealer.after_nmb = vec![EventBody::LuckyDealerSelected];
    // RN8: box 1 takes the whole pool (stake a contribution), the reset is 0, so box 2's
    // Royal Flush is paid 0.00 and its Lucky Player 5 to 1. §3.12: Antes 1 to 1.
    let royal = |no: u8, suit: &str| {
        let hand: Vec<String> = ["A", "K", "Q", "J", "T"]
            .iter()
            .map(|r| format!("{r}{suit}"))
            .collect();
        let hand: Vec<&str> = hand.iter().map(String::as_str).collect();
        bx(no, &hand, &[(Ante, 1000), (JackpotPlayer, 1)], p)
    };
    let mut royals = script(
        RuleSet::Ssp4,
        &["2c", "3d", "5h", "7s", "9c"],
        5000000,
        vec![royal(1, "s"), royal(2, "h")],
        &[
            (1, L::Ante, 1000),
            (1, L::JackpotPlayer, 4999900),
            (2, L::Ante, 1000),
            (2, L::JackpotPlayer, 500),
        ],
    );
    royals.after_nmb = vec![EventBody::LuckyPlayerSelected { box_no: BoxNo(2) }];
    // §4.4: the Lucky Player is area 6, where nobody sits: it pays nobody. Box 1's
    // Straight Flush takes 10% of 10.00, its stake a contribution: net 0.
    let mut empty = script(
        RuleSet::Ssp4,
        &full_house,
        1000,
        vec![sf_box(1)],
        &[(1, L::Ante, 1000), (1, L::Bet, 100000)],
    );
    empty.after_nmb = vec![EventBody::LuckyPlayerSelected { box_no: BoxNo(6) }];
    vec![
        ("clean_ssp4_empty_pool_magic_card", magic),
        ("clean_ssp4_lucky_dealer_pool_of_9", dealer),
        ("clean_ssp4_two_royal_flushes_reset_0", royals),
        ("clean_ssp4_lucky_player_on_an_empty_area", empty),
    ]
}

fn void_paid(s: &mut Script) {
    s.paid = Vec::new();
}

fn scenarios() -> Vec<(String, Chain, Vec<&'static str>)> {
    let mut out: Vec<(String, Chain, Vec<&'static str>)> = Vec::new();
    let mut extra: Vec<(String, Chain, Vec<&'static str>)> = Vec::new();
    let mut add =
        |name: &str, configs: Vec<(TableConfig, Vec<Script>)>, expect: Vec<&'static str>| {
            let mut ch = Chain::new(&format!("T-{}", name.len()));
            for (cfg, rounds) in configs {
                ch.round = None;
                ch.e(EventBody::TableOpened { config: cfg });
                for r in rounds {
                    r.play(&mut ch);
                    ch.round = None;
                }
            }
            out.push((name.to_string(), ch, expect));
        };
    for (name, s, reset) in examples() {
        add(
            &format!("clean_{name}"),
            vec![(config(s.rs, s.dealing, reset), vec![s])],
            vec![],
        );
    }
    for (name, s) in ssp4_small_pools() {
        let cfg = config(RuleSet::Ssp4, DealingMode::ManualShoe, 0);
        add(name, vec![(cfg, vec![s])], vec![]);
    }
    let cfg = || config(RuleSet::Csp6, DealingMode::ManualShoe, 0);

    // 5.11: placed, changed and withdrawn after "No more Bets".
    let mut s = base_csp6();
    s.after_nmb = vec![
        EventBody::BetPlaced {
            box_no: BoxNo(2),
            kind: Progressive,
            stake: Stake::Chips(Money(100)),
        },
        EventBody::BetChanged {
            box_no: BoxNo(1),
            kind: Ante,
            from: Stake::Chips(Money(1000)),
            to: Stake::Chips(Money(2000)),
        },
        EventBody::BetWithdrawn {
            box_no: BoxNo(2),
            kind: Ante,
            stake: Stake::Chips(Money(1000)),
        },
    ];
    add(
        "csp6_late_bets",
        vec![(cfg(), vec![s])],
        vec![
            "CSP6-5.11-bet-after-no-more-bets",
            "CSP6-5.11-bet-withdrawn-after-no-more-bets",
        ],
    );

    // SSP4 5.6 / 5.7.
    let mut s = examples()
        .into_iter()
        .find(|e| e.0 == "ssp4_credits_magic_card")
        .unwrap()
        .1;
    s.after_nmb = vec![
        EventBody::BetPlaced {
            box_no: BoxNo(2),
            kind: JackpotPlayer,
            stake: Stake::Credits(5),
        },
        EventBody::BetWithdrawn {
            box_no: BoxNo(1),
            kind: JackpotDealer,
            stake: Stake::Credits(1),
        },
    ];
    add(
        "ssp4_late_bets",
        vec![(
            config(RuleSet::Ssp4, DealingMode::ManualShoe, 1000000),
            vec![s],
        )],
        vec![
            "SSP4-5.6-bet-after-no-more-bets",
            "SSP4-5.7-bet-withdrawn-after-no-more-bets",
        ],
    );

    // 5.3: BET three times the Ante settles on twice (EXAMPLES: 5.3.1).
    let mut s = script(
        RuleSet::Csp6,
        &["Ac", "Kd", "8c", "6s", "3h"],
        0,
        vec![Bx {
            no: 1,
            cards: cards(&["7c", "7d", "Kh", "5s", "2d"]),
            bets: vec![(Ante, 1000)],
            decision: Some((Choice::Play, Some(3000))),
        }],
        &[(1, L::Ante, 1000), (1, L::Bet, 2000)],
    );
    s.round = 1;
    add(
        "csp6_bet_not_twice_ante",
        vec![(cfg(), vec![s])],
        vec!["CSP6-5.3-bet-not-required-multiple"],
    );
    let mut s = examples()
        .into_iter()
        .find(|e| e.0 == "tcp3_a23_lowest_straight")
        .unwrap()
        .1;
    s.boxes[0].decision = Some((Choice::Play, Some(500)));
    s.paid = vec![
        (1, L::Ante, -1000),
        (1, L::Play, -500),
        (1, L::AnteBonus, 1000),
    ];
    add(
        "tcp3_play_under_ante",
        vec![(config(RuleSet::Tcp3, DealingMode::ManualShoe, 0), vec![s])],
        vec!["TCP3-5.3-bet-not-required-multiple"],
    );

    // 5.1 / 5.2 limits.
    let mut lcfg = cfg();
    lcfg.limits = vec![BetLimit {
        kind: Ante,
        min: Money(500),
        max: Money(800),
    }];
    let mut s = base_csp6();
    s.boxes[1].bets = vec![(Ante, 400)];
    // Box 1's Ante of 1000 over the maximum of 800 settles at 800 (§5.1.1); its BET of
    // 2000 is then more than twice that Ante and settles on 1600 (§5.3.1, RULES-NOTES 20):
    // a flush pays 5 to 1 = 8000. Box 2's Ante of 400 under the minimum stands (§5.2.1).
    s.paid = vec![(1, L::Ante, 800), (1, L::Bet, 8000), (2, L::Ante, -400)];
    add(
        "csp6_limits",
        vec![(lcfg, vec![s])],
        vec!["CSP6-5.1-over-maximum", "CSP6-5.2-under-minimum"],
    );

    // 5.4 jackpot bet without Ante (TCP3 Pair Plus box with a progressive bet).
    let mut s = examples()
        .into_iter()
        .find(|e| e.0 == "tcp3_fold_and_pair_plus_only")
        .unwrap()
        .1;
    s.boxes[1].bets.push((Progressive, 100));
    add(
        "tcp3_jackpot_without_ante",
        vec![(
            config(RuleSet::Tcp3, DealingMode::ManualShoe, 500000),
            vec![s],
        )],
        vec!["TCP3-5.4-jackpot-bet-without-ante"],
    );

    // 5.9 burnt card missing, no ruling; and with a void ruling.
    let mut s = base_csp6();
    s.burn = None;
    add(
        "csp6_burn_missing",
        vec![(cfg(), vec![s.clone()])],
        vec![
            "CSP6-5.9-burn-card-missing",
            "CSP6-5.9-reconstruction-ruling-missing",
        ],
    );
    let mut s2 = s.clone();
    s2.after_deal = vec![EventBody::StaffDecision {
        staff: staff(),
        ruling: Ruling::VoidRound {
            clause: "CSP6 5.9".into(),
            reason: "players saw their cards".into(),
        },
    }];
    void_paid(&mut s2);
    add(
        "csp6_burn_missing_void",
        vec![(cfg(), vec![s2])],
        vec!["CSP6-5.9-burn-card-missing", "CSP6-5.22-round-void"],
    );
    let mut s = examples()
        .into_iter()
        .find(|e| e.0 == "tcp3_a23_lowest_straight")
        .unwrap()
        .1;
    s.burn = None;
    add(
        "tcp3_burn_missing",
        vec![(config(RuleSet::Tcp3, DealingMode::ManualShoe, 0), vec![s])],
        vec!["TCP3-5.9-burn-card-missing"],
    );

    // 3.10 / 3.11 deal order.
    let mut s = base_csp6();
    let mut d = s.computed_deal();
    d.swap(2, 3); // box 2's first card after the dealer's
    s.deal = Some(d);
    add(
        "csp6_deal_order_shoe",
        vec![(cfg(), vec![s])],
        vec!["CSP6-3.10-deal-order-wrong"],
    );
    let mut s = base_csp6();
    s.dealing = DealingMode::Shuffler;
    s.burn = None;
    let mut d = s.computed_deal();
    d.swap(4, 5); // last card of box 1 after box 2's first
    s.deal = Some(d);
    add(
        "csp6_deal_order_shuffler",
        vec![(config(RuleSet::Csp6, DealingMode::Shuffler, 0), vec![s])],
        vec!["CSP6-3.11-deal-order-wrong"],
    );

    // 3.10: the dealer's last card is the face-up one (a shuffler's set: any, 3.11.2).
    let mut s = base_csp6();
    s.dealer_up = Some(2);
    add(
        "csp6_dealer_up_card_not_last",
        vec![(cfg(), vec![s])],
        vec!["CSP6-3.10-dealer-up-card-not-last"],
    );
    let mut s = base_csp6();
    s.dealing = DealingMode::Shuffler;
    s.burn = None;
    s.dealer_up = Some(1);
    add(
        "clean_csp6_shuffler_dealer_up_card_first",
        vec![(config(RuleSet::Csp6, DealingMode::Shuffler, 0), vec![s])],
        vec![],
    );

    // 5.8.7 dealer card count (void); 5.15 player card count (invalidated).
    let mut s = base_csp6();
    s.dealer.pop();
    void_paid(&mut s);
    add(
        "csp6_dealer_four_cards",
        vec![(cfg(), vec![s])],
        vec!["CSP6-5.8.7-dealer-card-count-wrong"],
    );
    let mut s = base_csp6();
    s.boxes[1].cards.pop();
    s.boxes[1].decision = None;
    s.paid = vec![(1, L::Ante, 1000), (1, L::Bet, 10000)];
    add(
        "csp6_player_four_cards",
        vec![(cfg(), vec![s])],
        vec!["CSP6-5.15-player-card-count-wrong"],
    );
    let mut s = examples()
        .into_iter()
        .find(|e| e.0 == "ssp4_credits_magic_card")
        .unwrap()
        .1;
    s.boxes[1].cards.pop();
    s.boxes[1].decision = None;
    s.paid.retain(|p| p.0 == 1);
    add(
        "ssp4_player_four_cards",
        vec![(
            config(RuleSet::Ssp4, DealingMode::ManualShoe, 1000000),
            vec![s],
        )],
        vec!["SSP4-5.2-player-card-count-wrong"],
    );

    // 5.8.1 duplicate card with the pit's void; 5.8.4 more than 52 cards.
    let mut s = base_csp6();
    s.boxes[1].cards[4] = c("Kh");
    s.after_deal = vec![EventBody::StaffDecision {
        staff: staff(),
        ruling: Ruling::VoidRound {
            clause: "CSP6 5.8.1".into(),
            reason: "Kh twice".into(),
        },
    }];
    void_paid(&mut s);
    add(
        "csp6_duplicate_card",
        vec![(cfg(), vec![s])],
        vec!["CSP6-5.8.1-duplicate-card", "CSP6-5.22-round-void"],
    );
    let mut s = base_csp6();
    let mut d = s.computed_deal();
    for card in Card::deck() {
        d.push((CardTarget::Dealer, card));
    }
    s.deal = Some(d);
    void_paid(&mut s);
    add(
        "csp6_deck_exhausted",
        vec![(cfg(), vec![s])],
        vec![
            "CSP6-5.8.4-deck-exhausted",
            "CSP6-5.8.1-duplicate-card",
            "CSP6-5.8.7-dealer-card-count-wrong",
        ],
    );

    // Exposed cards: one after players saw (5.12), two before (5.8.2 void), dealer's (5.16),
    // SSP4 two (5.4 void).
    let mut s = base_csp6();
    s.after_deal = vec![EventBody::CardExposed {
        at: CardTarget::Box(BoxNo(2)),
        card: c("Ts"),
        players_had_seen: true,
    }];
    add(
        "csp6_card_exposed_after_seen",
        vec![(cfg(), vec![s])],
        vec!["CSP6-5.12-card-exposed"],
    );
    let mut s = base_csp6();
    s.after_nmb = vec![
        EventBody::CardExposed {
            at: CardTarget::Box(BoxNo(1)),
            card: c("2h"),
            players_had_seen: false,
        },
        EventBody::CardExposed {
            at: CardTarget::Box(BoxNo(2)),
            card: c("7c"),
            players_had_seen: false,
        },
    ];
    void_paid(&mut s);
    add(
        "csp6_two_cards_exposed_void",
        vec![(cfg(), vec![s])],
        vec!["CSP6-5.8.2-two-cards-exposed-void"],
    );
    let mut s = base_csp6();
    s.after_deal = vec![EventBody::CardExposed {
        at: CardTarget::Dealer,
        card: c("Kd"),
        players_had_seen: false,
    }];
    add(
        "csp6_dealer_card_exposed",
        vec![(cfg(), vec![s])],
        vec!["CSP6-5.16-dealer-card-exposed"],
    );
    let mut s = examples()
        .into_iter()
        .find(|e| e.0 == "ssp4_credits_magic_card")
        .unwrap()
        .1;
    s.after_deal = vec![
        EventBody::CardExposed {
            at: CardTarget::Box(BoxNo(1)),
            card: c("8s"),
            players_had_seen: true,
        },
        EventBody::CardExposed {
            at: CardTarget::Box(BoxNo(2)),
            card: c("Ac"),
            players_had_seen: true,
        },
    ];
    void_paid(&mut s);
    add(
        "ssp4_two_cards_exposed_void",
        vec![(
            config(RuleSet::Ssp4, DealingMode::ManualShoe, 1000000),
            vec![s],
        )],
        vec!["SSP4-5.4-two-cards-exposed-void"],
    );

    // 5.8.5 no shuffle (void).
    let mut s = base_csp6();
    s.shuffle = false;
    void_paid(&mut s);
    add(
        "csp6_no_shuffle",
        vec![(cfg(), vec![s])],
        vec!["CSP6-5.8.5-no-shuffle"],
    );
    let mut s = examples()
        .into_iter()
        .find(|e| e.0 == "cs51_bonus_pays_on_fold")
        .unwrap()
        .1;
    s.shuffle = false;
    void_paid(&mut s);
    add(
        "cs51_no_shuffle",
        vec![(config(RuleSet::Cs51, DealingMode::Rng, 0), vec![s])],
        vec!["CS51-HTP1-no-shuffle"],
    );

    // Shuffle commitment: clean, mismatched, hands swapped, deal differs.
    let mlp = || {
        let mut s = examples()
            .into_iter()
            .find(|e| e.0 == "mlp3_two_major_winners")
            .unwrap()
            .1;
        s.dealing = DealingMode::Shuffler;
        s.burn = None;
        s.commit = true;
        s
    };
    let mcfg = || config(RuleSet::Mlp3, DealingMode::Shuffler, 5000000);
    add(
        "clean_mlp3_shuffler_commitment",
        vec![(mcfg(), vec![mlp()])],
        vec![],
    );
    let mut s = mlp();
    // Box 2 and box 3 received each other's sets: the deck says box 2 should have had the
    // K-high straight flush. Settled as dealt, so the payouts stand.
    let d = s.computed_deal();
    let mut order: Vec<Card> = d.iter().map(|x| x.1).collect();
    let (a, b) = (5..10, 10..15);
    let two: Vec<Card> = order[a.clone()].to_vec();
    let three: Vec<Card> = order[b.clone()].to_vec();
    order.splice(a, three);
    order.splice(b, two);
    s.reveal = Some(order);
    add(
        "mlp3_hands_swapped",
        vec![(mcfg(), vec![s])],
        vec!["MLP3-5.8.6-hands-swapped"],
    );
    let mut s = mlp();
    let d = s.computed_deal();
    let mut order: Vec<Card> = d.iter().map(|x| x.1).collect();
    order.swap(0, 19);
    s.reveal = Some(order);
    add(
        "mlp3_deal_differs_from_deck",
        vec![(mcfg(), vec![s])],
        vec!["MLP3-5.8.6-deal-differs-from-deck-order"],
    );
    let mut s = mlp();
    s.no_reveal = true;
    add(
        "mlp3_commitment_not_revealed",
        vec![(mcfg(), vec![s])],
        vec!["MLP3-5.8.5-shuffle-commitment-not-revealed"],
    );
    let mut s = mlp();
    // The revealed deck holds 51 cards and lacks the dealer's last card: void.
    let mut raw: Vec<Card> = s.computed_deal().iter().map(|x| x.1).collect();
    raw.pop();
    for card in Card::deck() {
        if !raw.contains(&card) && card != c("3h") && raw.len() < 51 {
            raw.push(card);
        }
    }
    s.reveal_raw = Some(raw);
    void_paid(&mut s);
    add(
        "mlp3_revealed_deck_short",
        vec![(mcfg(), vec![s])],
        vec![
            "MLP3-5.8.3-deck-shortage-or-excess",
            "MLP3-5.8.1-foreign-card",
        ],
    );
    // The dealer got four cards; the House ruled it reconstructable, so the round is not
    // void, but the rules engine cannot settle a four-card dealer hand.
    let mut s = base_csp6();
    s.dealer.pop();
    s.after_deal = vec![EventBody::StaffDecision {
        staff: staff(),
        ruling: Ruling::Reconstruction {
            allowed: true,
            note: "fifth card to follow".into(),
        },
    }];
    add(
        "csp6_dealer_four_cards_reconstruction_allowed",
        vec![(cfg(), vec![s])],
        vec![
            "CSP6-5.8.7-dealer-card-count-wrong",
            "CSP6-5.24-settlement-impossible",
        ],
    );
    let mut s = mlp();
    s.after_decisions = vec![];
    let mut ch_s = s.clone();
    ch_s.commit = true;
    // A commitment to one order, a reveal of another: tampered record.
    {
        let mut ch = Chain::new("T-commit");
        ch.e(EventBody::TableOpened { config: mcfg() });
        ch.round = Some(RoundId(1));
        ch.e(EventBody::ShuffleCompleted {
            deck_commitment: Some(Hash32([9; 32])),
        });
        ch_s.shuffle = false;
        ch_s.commit = false;
        ch_s.play(&mut ch);
        let last = ch.events.pop().unwrap(); // RoundClosed
        ch.seq -= 1;
        ch.prev = ch
            .events
            .last()
            .map(|e| event_hash(&e.prev, &to_json(e)))
            .unwrap();
        ch.e(EventBody::DeckRevealed {
            order: Card::deck().collect(),
            salt: Hash32([7; 32]),
        });
        ch.e(last.body);
        extra.push((
            "mlp3_commitment_mismatch".into(),
            ch,
            vec!["MLP3-5.8.5-shuffle-commitment-mismatch"],
        ));
    }

    // 5.17 / 5.18 jackpot faults (TCP3 numbers them 5.16 / 5.17).
    let pool = || PoolId::new("CSP6-PJ").unwrap();
    let mut s = base_csp6();
    s.after_nmb = vec![EventBody::JackpotFault {
        pool: pool(),
        description: "controller offline".into(),
    }];
    void_paid(&mut s);
    add(
        "csp6_jackpot_fault_before_seen",
        vec![(cfg(), vec![s])],
        vec!["CSP6-5.17-jackpot-fault-before-cards-seen"],
    );
    let mut s = base_csp6();
    s.after_decisions = vec![EventBody::JackpotFault {
        pool: pool(),
        description: "controller offline".into(),
    }];
    add(
        "csp6_jackpot_fault_after_seen",
        vec![(cfg(), vec![s])],
        vec!["CSP6-5.18-jackpot-fault-after-cards-seen"],
    );
    let mut s = examples()
        .into_iter()
        .find(|e| e.0 == "tcp3_a23_lowest_straight")
        .unwrap()
        .1;
    s.after_nmb = vec![EventBody::JackpotFault {
        pool: PoolId::new("TCP3-PJ").unwrap(),
        description: "offline".into(),
    }];
    void_paid(&mut s);
    add(
        "tcp3_jackpot_fault_before_seen",
        vec![(config(RuleSet::Tcp3, DealingMode::ManualShoe, 0), vec![s])],
        vec!["TCP3-5.16-jackpot-fault-before-cards-seen"],
    );

    // 5.19 a player examines a second hand: without a ruling; ruled intentional.
    let exam = |ruling: bool| {
        let mut s = base_csp6();
        s.after_deal = vec![
            EventBody::HandExamined {
                player_box: BoxNo(1),
                hand_box: BoxNo(1),
            },
            EventBody::HandExamined {
                player_box: BoxNo(1),
                hand_box: BoxNo(2),
            },
        ];
        if ruling {
            s.after_deal.push(EventBody::StaffDecision {
                staff: staff(),
                ruling: Ruling::ExaminationIntent {
                    player_box: BoxNo(1),
                    hand_box: BoxNo(2),
                    intentional: true,
                },
            });
            s.boxes[1].decision = None;
            s.paid = vec![(1, L::Ante, 1000), (1, L::Bet, 10000)];
        }
        s
    };
    add(
        "csp6_extra_hand_examined",
        vec![(cfg(), vec![exam(false)])],
        vec![
            "CSP6-5.19-extra-hand-examined",
            "CSP6-5.19-examination-ruling-missing",
        ],
    );
    add(
        "csp6_extra_hand_examined_intentional",
        vec![(cfg(), vec![exam(true)])],
        vec!["CSP6-5.19-extra-hand-examined"],
    );

    // 5.7 technical interruption without / with an established outcome.
    let mut s = base_csp6();
    s.after_nmb = vec![EventBody::TechnicalInterruption {
        description: "power failure".into(),
    }];
    void_paid(&mut s);
    add(
        "csp6_interruption_void",
        vec![(cfg(), vec![s])],
        vec!["CSP6-5.7.2-technical-interruption-void"],
    );
    let mut s = base_csp6();
    s.after_decisions = vec![EventBody::TechnicalInterruption {
        description: "power failure".into(),
    }];
    add(
        "csp6_interruption_outcome_established",
        vec![(cfg(), vec![s])],
        vec!["CSP6-5.7.1-technical-interruption-outcome-established"],
    );

    // 5.5 no decision recorded: a Fold.
    let mut s = base_csp6();
    s.boxes[1].decision = None;
    add(
        "csp6_decision_missing",
        vec![(cfg(), vec![s])],
        vec!["CSP6-5.5-decision-missing"],
    );

    // Void announced by the dealer, bets returned.
    let mut s = base_csp6();
    s.after_deal = vec![EventBody::Announced {
        announcement: Announcement::Void,
    }];
    void_paid(&mut s);
    add(
        "csp6_void_announced",
        vec![(cfg(), vec![s])],
        vec!["CSP6-5.22-round-void"],
    );

    // Round never closed, followed by a clean round; an event after a round closed.
    let mut s1 = base_csp6();
    s1.close = false;
    let mut s2 = base_csp6();
    s2.round = 2;
    add(
        "csp6_round_never_closed",
        vec![(cfg(), vec![s1, s2])],
        vec!["CSP6-1.16-round-never-closed"],
    );
    {
        let mut ch = Chain::new("T-late");
        ch.e(EventBody::TableOpened { config: cfg() });
        base_csp6().play(&mut ch);
        ch.e(EventBody::PaidOut {
            box_no: BoxNo(2),
            line: L::Ante,
            net: Money(1000),
        });
        extra.push((
            "csp6_event_after_close".into(),
            ch,
            vec!["CSP6-1.16-event-after-round-closed"],
        ));
    }

    // Disputes: one overpaid, one underpaid line, and a line paid that the rules do not pay.
    let mut s = base_csp6();
    s.paid = vec![
        (1, L::Ante, 1000),
        (1, L::Bet, 8000),
        (2, L::Ante, 0),
        (2, L::Progressive, 500),
    ];
    add(
        "csp6_wrong_payouts",
        vec![(cfg(), vec![s])],
        vec!["CSP6-4.1-payout-differs"],
    );
    let mut s = examples()
        .into_iter()
        .find(|e| e.0 == "cs51_bonus_pays_on_fold")
        .unwrap()
        .1;
    s.paid = vec![(1, L::Ante, -1000), (1, L::Bonus, 2500)];
    add(
        "cs51_wrong_payout",
        vec![(config(RuleSet::Cs51, DealingMode::Rng, 0), vec![s])],
        vec!["CS51-RN13-payout-differs"],
    );

    // Several at once: late bet, exposed card after seen, a wrong payout, a missing decision.
    let mut s = base_csp6();
    s.boxes.push(bx(
        3,
        &["Qs", "Qd", "4c", "9s", "8d"],
        &[(Ante, 2000)],
        None,
    ));
    let mut d = s.computed_deal();
    d.retain(|x| x.0 != CardTarget::Box(BoxNo(3)));
    s.deal = None;
    let _ = d;
    s.after_nmb = vec![EventBody::BetPlaced {
        box_no: BoxNo(1),
        kind: Progressive,
        stake: Stake::Chips(Money(100)),
    }];
    s.after_deal = vec![EventBody::CardExposed {
        at: CardTarget::Box(BoxNo(1)),
        card: c("Kh"),
        players_had_seen: true,
    }];
    s.paid = vec![
        (1, L::Ante, 1000),
        (1, L::Bet, 12000),
        (2, L::Ante, -1000),
        (3, L::Ante, -2000),
    ];
    add(
        "csp6_several_at_once",
        vec![(cfg(), vec![s])],
        vec![
            "CSP6-5.11-bet-after-no-more-bets",
            "CSP6-5.12-card-exposed",
            "CSP6-5.5-decision-missing",
            "CSP6-4.1-payout-differs",
        ],
    );

    // A configuration change between rounds: round 2 is judged by the new limits.
    let mut lcfg = cfg();
    lcfg.limits = vec![BetLimit {
        kind: Ante,
        min: Money(2000),
        max: Money(500000),
    }];
    let mut s2 = base_csp6();
    s2.round = 2;
    add(
        "csp6_config_change_between_rounds",
        vec![(cfg(), vec![base_csp6()]), (lcfg, vec![s2])],
        vec!["CSP6-5.2-under-minimum"],
    );
    out.extend(extra);
    out
}

#[test]
fn golden_scenarios() {
    let bless = std::env::var_os("BLESS").is_some();
    let d = dir();
    std::fs::create_dir_all(&d).unwrap();
    let mut failures = Vec::new();
    let scen = scenarios();
    for (name, chain, expect) in &scen {
        let events_path = d.join(format!("{name}.events.jsonl"));
        let report_path = d.join(format!("{name}.report.json"));
        if bless {
            std::fs::write(&events_path, chain.jsonl()).unwrap();
        }
        let text = std::fs::read_to_string(&events_path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (run with BLESS=1 to create)",
                events_path.display()
            )
        });
        let events = read_jsonl(&text).unwrap();
        let table = events[0].table.clone();
        let indexed: Vec<(Seq, Event)> = events.into_iter().map(|e| (e.seq, e)).collect();
        let reports = replay_table(table, &indexed);
        let json = reports_json(&reports) + "\n";
        // The scenario's intent, checked whatever the blessed file says: every expected
        // code is found, and a scenario expecting nothing is clean.
        let found: Vec<&str> = reports
            .iter()
            .flat_map(|r| r.findings.iter().map(|f| f.code.as_str()))
            .collect();
        for code in expect {
            if !found.contains(code) {
                failures.push(format!("{name}: expected finding {code}, found {found:?}"));
            }
        }
        if expect.is_empty() && reports.iter().any(|r| r.verdict != Verdict::Clean) {
            failures.push(format!(
                "{name}: expected clean rounds, got {:?}",
                reports
                    .iter()
                    .map(|r| (r.verdict, &r.findings))
                    .collect::<Vec<_>>()
            ));
        }
        if bless {
            std::fs::write(&report_path, &json).unwrap();
        } else {
            let want = std::fs::read_to_string(&report_path).unwrap_or_else(|e| {
                panic!(
                    "{}: {e} (run with BLESS=1 to create)",
                    report_path.display()
                )
            });
            if want != json {
                failures.push(format!(
                    "{name}: report differs from {} (BLESS=1 to rewrite after review)",
                    report_path.display()
                ));
            }
        }
    }
    // No stray scenario files.
    let names: Vec<String> = scen.iter().map(|s| s.0.clone()).collect();
    for entry in std::fs::read_dir(&d).unwrap() {
        let f = entry.unwrap().file_name().into_string().unwrap();
        let stem = f.split('.').next().unwrap().to_string();
        if !names.contains(&stem) {
            failures.push(format!("stray golden file {f}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every finding kind the replayer can raise has a golden scenario for at least one rule
/// set (kinds raised only by the pool replay are covered in tests/pool.rs).
#[test]
fn every_round_finding_kind_has_a_scenario() {
    let codes: Vec<&str> = scenarios().iter().flat_map(|s| s.2.clone()).collect();
    let untested: Vec<FindingKind> = FindingKind::ALL
        .into_iter()
        .filter(|k| !matches!(k, FindingKind::JackpotShownDiffers))
        .filter(|k| {
            !RuleSet::ALL
                .iter()
                .any(|rs| lookup(*rs, *k).is_some_and(|r| codes.contains(&r.code)))
        })
        .collect();

    assert!(
        untested.is_empty(),
        "finding kinds without a golden scenario: {untested:?}"
    );
}

/// "CSP6 4.2, 4.5.1" as a finding cites it: "CSP6 §4.2, 4.5.1".
fn cited(clause: &str) -> String {
    match clause.split_once(' ') {
        Some((code, rest)) if rest.starts_with(|c: char| c.is_ascii_digit()) => {
            let number = rest.split([',', ';', ' ']).next().unwrap_or("");
            if number.chars().all(|c| c.is_ascii_digit() || c == '.') {
                return format!("{code} §{rest}");
            }
            clause.to_string()
        }
        _ => clause.to_string(),
    }
}

/// Issue 46 item 5: for every pay line of every worked example (each rule set, each line
/// kind they pay), a payout off by 1.00 is a finding citing the clauses of that line's
/// settlement rows, not the finding code's own clause.
#[test]
fn a_payout_finding_cites_the_clause_of_its_settlement_rows() {
    let mut seen: Vec<(RuleSet, PayLine)> = Vec::new();
    for (name, s, reset) in examples()
        .into_iter()
        .chain(ssp4_small_pools().into_iter().map(|(n, s)| (n, s, 0)))
    {
        for i in 0..s.paid.len() {
            let mut wrong = s.clone();
            wrong.paid[i].2 += 100;
            let (b, line, _) = wrong.paid[i];
            let mut ch = Chain::new("T-CLAUSE");
            ch.e(EventBody::TableOpened {
                config: config(s.rs, s.dealing, reset),
            });
            wrong.play(&mut ch);
            let ev: Vec<(Seq, Event)> = ch.events.iter().map(|e| (e.seq, e.clone())).collect();
            let report = &replay_table(ch.table.clone(), &ev)[0];
            let rows: Vec<String> = report
                .settlement
                .as_ref()
                .unwrap()
                .boxes
                .iter()
                .filter(|x| x.box_no == BoxNo(b))
                .flat_map(|x| x.lines.iter().filter(|l| l.line == line))
                .map(|l| cited(&l.clause))
                .fold(Vec::new(), |mut v, c| {
                    if !v.contains(&c) {
                        v.push(c);
                    }
                    v
                });
            let prefix = format!("{} line:", line.name());
            let finding = report
                .findings
                .iter()
                .find(|f| f.box_no == Some(BoxNo(b)) && f.explanation.starts_with(&prefix))
                .unwrap_or_else(|| panic!("{name} box {b} {line:?}: no finding"));
            assert!(
                finding.code.ends_with("payout-differs"),
                "{name}: {finding:?}"
            );
            if rows.is_empty() {
                continue; // a line the rules do not pay at all: the code's clause stays
            }
            assert_eq!(finding.clause, rows.join("; "), "{name} box {b} {line:?}");
            if !seen.contains(&(s.rs, line)) {
                seen.push((s.rs, line));
            }
        }
    }
    // The progressive line of CSP6 cites the jackpot table (§4.2), not the BET's §4.1.
    assert!(seen.contains(&(RuleSet::Csp6, PayLine::Progressive)));
    assert!(seen.len() >= 12, "{seen:?}");
}
