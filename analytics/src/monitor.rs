//! The decision tests of a floor, round by round: a hole-card statistic per box, dealer
//! and table, and a card-sharing statistic per pair of neighbouring boxes. The events
//! carry no player id, so there is no per-player statistic (`PLAYER_NOT_RECORDED`).

use crate::ev::Evaluator;
use crate::rounds::RoundFacts;
use crate::sequential::{Alarm, Cusum, CusumState, Score, TestSetting};
use crate::verdict::{judge, sharing_score, DecisionVerdict};
use schemas::{BoxNo, RuleSet, StaffId, TableId};
use std::collections::{BTreeMap, BTreeSet};

/// Why there is no per-player statistic.
pub const PLAYER_NOT_RECORDED: &str =
    "not computed: the events record boxes, not players (no player id in the event catalogue)";

/// Most statistics one monitor keeps; rounds of streams beyond it are counted, not tested.
pub const STREAMS_MAX: usize = 200_000;

/// What a statistic tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// Decisions that fit the dealer's hidden cards.
    HoleCard,
    /// Decisions that fit a neighbour's cards.
    CardSharing,
}

impl Kind {
    /// The last token of the alert subject `alerts.<table>.<kind>`.
    pub fn code(self) -> &'static str {
        match self {
            Kind::HoleCard => "hole_card_play",
            Kind::CardSharing => "card_sharing",
        }
    }
}

/// Whose decisions a statistic follows.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Subject {
    /// One box of one table.
    Box(TableId, BoxNo),
    /// Boxes `n` and `n + 1` of one table.
    Pair(TableId, BoxNo),
    /// Every box a dealer dealt to.
    Dealer(StaffId),
    /// Every box of one table.
    Table(TableId),
}

/// One statistic of a monitor: its kind, subject and the place of the hole card it
/// follows (0 for card sharing).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamKey {
    /// What it tests.
    pub kind: Kind,
    /// Whose decisions it follows.
    pub subject: Subject,
    /// The place of the hole card in the dealer's unseen cards.
    pub place: u8,
}

/// An alarm of one statistic.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionAlarm {
    /// The table of the round that raised it.
    pub table: TableId,
    /// What the statistic tests.
    pub kind: Kind,
    /// Whose decisions it follows.
    pub subject: Subject,
    /// The statistic, its threshold and the decisions that moved it.
    pub alarm: Alarm,
}

impl DecisionAlarm {
    /// The alert's NATS subject: `alerts.<table>.<kind>`.
    pub fn alert_subject(&self) -> String {
        format!("alerts.{}.{}", self.table, self.kind.code())
    }
}

/// The decision statistics of a floor.
pub struct Monitor {
    setting: TestSetting,
    evaluators: BTreeMap<RuleSet, Evaluator>,
    /// Per kind, subject and place of the hole card (0 for card sharing).
    streams: BTreeMap<StreamKey, Cusum>,
    /// Statistics pushed since the last `take_changed`.
    changed: BTreeSet<StreamKey>,
    /// Decisions judged.
    pub decisions: u64,
    /// Decisions off the optimal strategy on what the player could see.
    pub off_strategy: u64,
    /// Stream rounds not tested because `STREAMS_MAX` statistics exist.
    pub untracked: u64,
    /// Whether the card-sharing statistics run (two more evaluations per neighbour pair).
    card_sharing: bool,
}

impl Monitor {
    /// A monitor with every statistic at 0.
    pub fn new(setting: TestSetting) -> Monitor {
        setting.threshold(1); // checks the setting once, here
        Monitor {
            setting,
            evaluators: BTreeMap::new(),
            streams: BTreeMap::new(),
            changed: BTreeSet::new(),
            decisions: 0,
            off_strategy: 0,
            untracked: 0,
            card_sharing: true,
        }
    }

    /// This monitor without the card-sharing statistics (the hole-card ones only).
    pub fn without_card_sharing(mut self) -> Monitor {
        self.card_sharing = false;
        self
    }

    /// The largest statistic of `kind` for `subject` over its places, if it has any.
    pub fn statistic(&self, kind: Kind, subject: &Subject) -> Option<f64> {
        let key = |place| StreamKey {
            kind,
            subject: subject.clone(),
            place,
        };
        self.streams
            .range(key(0)..=key(u8::MAX))
            .map(|(_, c)| c.statistic())
            .reduce(f64::max)
    }

    /// The states of the statistics pushed since the last take, in key order: at most
    /// the statistics a round touches, per round pushed.
    pub fn take_changed(&mut self) -> Vec<(StreamKey, CusumState)> {
        std::mem::take(&mut self.changed)
            .into_iter()
            .filter_map(|k| {
                let state = self.streams.get(&k)?.state();
                Some((k, state))
            })
            .collect()
    }

    /// Puts a statistic back as a restart found it (`take_changed`). Past `STREAMS_MAX`
    /// statistics it is left out, as a new one would be.
    pub fn resume(&mut self, key: StreamKey, state: CusumState) {
        if !self.streams.contains_key(&key) && self.streams.len() >= STREAMS_MAX {
            return;
        }
        self.streams.insert(key, Cusum::resume(self.setting, state));
    }

    /// Judges one round's decisions and adds them to every statistic they belong to.
    pub fn push(&mut self, facts: &RoundFacts) -> (Vec<DecisionVerdict>, Vec<DecisionAlarm>) {
        let Some(rs) = facts.rule_set.filter(|_| facts.judgeable()) else {
            return (Vec::new(), Vec::new());
        };
        let ev = self
            .evaluators
            .entry(rs)
            .or_insert_with(|| Evaluator::new(rs));
        let verdicts = judge(ev, facts);
        let sharing = match self.card_sharing {
            true => sharing_scores(ev, facts, &verdicts),
            false => Vec::new(),
        };
        self.decisions += verdicts.len() as u64;
        self.off_strategy += verdicts.iter().filter(|v| v.off_strategy()).count() as u64;
        let places = rs.hand_len() - usize::from(rs != RuleSet::Tcp3);
        let mut alarms = Vec::new();
        let table = &facts.table;
        for place in 0..places {
            let scores: Vec<Score> = verdicts
                .iter()
                .filter_map(|v| {
                    let g = *v.hole_scores.get(place)?;
                    let text = v.explain(&facts.dealer_cards, Some(place));
                    Some(Score {
                        box_no: v.box_no,
                        g,
                        text,
                    })
                })
                .collect();
            let hole = Stream {
                kind: Kind::HoleCard,
                place,
                places,
            };
            for s in &scores {
                let subject = Subject::Box(table.clone(), s.box_no);
                self.feed(facts, hole, subject, std::slice::from_ref(s), &mut alarms);
            }
            self.feed(
                facts,
                hole,
                Subject::Table(table.clone()),
                &scores,
                &mut alarms,
            );
            if let Some(d) = &facts.dealer {
                self.feed(
                    facts,
                    hole,
                    Subject::Dealer(d.clone()),
                    &scores,
                    &mut alarms,
                );
            }
        }
        let share = Stream {
            kind: Kind::CardSharing,
            place: 0,
            places: 1,
        };
        for (first, pair) in sharing {
            let subject = Subject::Pair(table.clone(), first);
            self.feed(facts, share, subject, &pair, &mut alarms);
        }
        (verdicts, alarms)
    }

    fn feed(
        &mut self,
        facts: &RoundFacts,
        stream: Stream,
        subject: Subject,
        scores: &[Score],
        out: &mut Vec<DecisionAlarm>,
    ) {
        if scores.is_empty() {
            return;
        }
        let key = StreamKey {
            kind: stream.kind,
            subject,
            place: stream.place as u8,
        };
        if !self.streams.contains_key(&key) && self.streams.len() >= STREAMS_MAX {
            self.untracked += 1;
            return;
        }
        let setting = self.setting;
        let cusum = self
            .streams
            .entry(key.clone())
            .or_insert_with(|| Cusum::new(setting, stream.places));
        let alarm = cusum.push(facts.round(), scores);
        self.changed.insert(key.clone());
        if let Some(alarm) = alarm {
            out.push(DecisionAlarm {
                table: facts.table.clone(),
                kind: key.kind,
                subject: key.subject,
                alarm,
            });
        }
    }
}

/// Which statistic of a subject a score feeds.
#[derive(Debug, Clone, Copy)]
struct Stream {
    kind: Kind,
    /// The place of the hole card in the dealer's unseen cards (0 for card sharing).
    place: usize,
    /// The statistics the subject runs side by side for this kind.
    places: usize,
}

/// For each pair of neighbouring judged boxes (n, n + 1) whose cards are dealt face down,
/// each box's score had it seen the other's cards.
fn sharing_scores(
    ev: &mut Evaluator,
    facts: &RoundFacts,
    verdicts: &[DecisionVerdict],
) -> Vec<(BoxNo, Vec<Score>)> {
    let mut out = Vec::new();
    if facts.boxes.iter().any(|b| b.face_up) {
        return out; // every player sees every hand (CS51): sharing is no advantage
    }
    for w in verdicts.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        if b.box_no.0 != a.box_no.0 + 1 {
            continue;
        }
        let text = |v: &DecisionVerdict, o: &DecisionVerdict| {
            format!(
                "{}; box {} held {}",
                v.explain(&facts.dealer_cards, None),
                o.box_no.0,
                crate::verdict::cards_text(&o.cards)
            )
        };
        let pair = vec![
            Score {
                box_no: a.box_no,
                g: sharing_score(ev, a, &b.cards),
                text: text(a, b),
            },
            Score {
                box_no: b.box_no,
                g: sharing_score(ev, b, &a.cards),
                text: text(b, a),
            },
        ];
        out.push((a.box_no, pair));
    }
    out
}
