//! The bodies of the HTTP API of `roundledger serve` (crate `api`): what the web UI, the CLI's
//! `--server` mode and any other client read and send. They cross a process boundary and so are
//! defined once, here (docs/STYLE.md, wire types once), and versioned by `API_VERSION` (the
//! `/v1/` prefix of every path).
//!
//! Invariants: every list is a page (`offset`, `limit`, `total`) whose `limit` the server
//! caps; times are UTC nanoseconds (`*_ns`); money is integer minor units; finding codes
//! are the stable strings of `schemas::findings`. Adding a field is compatible; removing or
//! renaming one needs a new API version.
//!
//! With the `openapi` feature the types also describe themselves for the server's OpenAPI
//! document (utoipa); this crate stays free of it otherwise.

use crate::config::{PayLine, RuleSet, TableConfig};
use crate::event::Event;
use crate::ids::{BoxNo, Hash32, Money, PoolId, RoundId, Seq, TableId};
use crate::report::{Finding, RoundReport, Severity, Verdict};
use serde::{Deserialize, Serialize};

/// The version in the path of every endpoint (`/v1/...`).
pub const API_VERSION: u32 = 1;

#[cfg(feature = "openapi")]
use utoipa::ToSchema;

/// Who may read what. Tokens carry exactly one role (server config file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Rounds, replay, findings, disputes, cases, evidence.
    Surveillance,
    /// Finance summaries (drop, fills, credits, win), tables, jackpot pools.
    Finance,
    /// Everything, including the audit log.
    Admin,
}

impl Role {
    /// The role's stable name, as tokens and the audit log write it.
    pub fn name(self) -> &'static str {
        match self {
            Role::Surveillance => "surveillance",
            Role::Finance => "finance",
            Role::Admin => "admin",
        }
    }
}

/// The caller, as the server knows it from the bearer token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct WhoAmI {
    /// The token's name.
    pub name: String,
    /// What the token may do.
    pub role: Role,
    /// The property's IANA time zone: where people read times (`serve --time-zone`).
    pub time_zone: String,
    /// Whether this server ingests: false on `serve --no-ingest`, whose live feed carries
    /// nothing new.
    #[serde(default)]
    pub ingesting: bool,
    /// The gaming day in progress now by the server's day rule (YYYY-MM-DD): the day a
    /// page shows when none is asked for. Absent when the clock is outside the rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gaming_day: Option<String>,
    /// The surveillance recorder's clock less the property's, milliseconds (`serve
    /// --recorder-offset-ms`): pages show each event's time on the recorder beside its
    /// own. Absent when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorder_offset_ms: Option<i64>,
    /// How long a table may hold events before ingest calls it stuck, seconds (`serve
    /// --stuck-after`). Absent on a server that does not ingest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stuck_after_s: Option<u64>,
}

/// Every error body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ApiError {
    /// What went wrong, in words.
    pub error: String,
}

/// `GET /v1/status`: how far the server has read the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ServerStatus {
    /// Tables with at least one stored event.
    pub tables: u64,
    /// Events the ledger holds.
    pub events_stored: u64,
    /// Events the round index has replayed. It stays below `events_stored` once
    /// retention removed a day: `tables_indexing` says when lists are complete.
    pub events_indexed: u64,
    /// Rounds the index has replayed.
    pub rounds_indexed: u64,
    /// Tables the read model has not indexed to their chain head; every table while it
    /// rebuilds after a retention removal. Lists and reports are complete at 0.
    pub tables_indexing: u64,
}

/// A table as the API lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct TableInfo {
    /// The table.
    pub table: TableId,
    /// The rule set of its last configuration; `None` before any.
    pub rule_set: Option<RuleSet>,
    /// The seq of its chain head.
    pub head_seq: Seq,
    /// The hash of its chain head.
    pub head_hash: Hash32,
    /// Rounds replayed so far by the server's index.
    pub rounds: u64,
    /// Rounds whose verdict is disputed.
    pub disputed: u64,
    /// Rounds whose verdict is irregular.
    pub irregular: u64,
    /// Rounds whose verdict is void.
    pub void: u64,
    /// Why the table is fenced as damaged (`check: detail`), when it is: its new events
    /// are kept as `table_fenced` quarantine entries until it is unfenced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fenced: Option<String>,
}

/// One round in a list: enough to find it and to know whether to open it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct RoundRow {
    /// The table.
    pub table: TableId,
    /// The round.
    pub round: RoundId,
    /// The rule set in force; `None` when no configuration precedes it.
    pub rule_set: Option<RuleSet>,
    /// Device time of the round's first event, UTC ns.
    pub opened_at_ns: i64,
    /// Device time of its `RoundClosed`, UTC ns; `None` while open.
    pub closed_at_ns: Option<i64>,
    /// The seq of the round's first event.
    pub first_seq: Seq,
    /// The seq of the round's last event.
    pub last_seq: Seq,
    /// The replay's verdict.
    pub verdict: Verdict,
    /// Boxes with a settlement line (boxes in play).
    pub boxes: Vec<BoxNo>,
    /// How many box lines are disputed.
    pub disputes: u32,
    /// How many findings the replay made.
    pub findings: u32,
    /// The worst severity among the findings; `None` without findings.
    pub worst_severity: Option<Severity>,
    /// Sum of `recorded - expected` over the round's disputes.
    pub difference: Money,
    /// The round is still being played: it is listed from its first stored event, but no
    /// `RoundClosed` is stored yet, so nothing is decided: verdict `clean`, no disputes,
    /// no findings, no boxes and `closed_at_ns` null until it closes.
    #[serde(default)]
    pub in_progress: bool,
    /// The dealer in place when the round began (the table's last `DealerChanged` before
    /// it); `None` when none was named.
    #[serde(default)]
    pub dealer: Option<String>,
}

/// A page of rounds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct RoundPage {
    /// The rows of this page.
    pub items: Vec<RoundRow>,
    /// Rows matching the query, across all pages.
    pub total: u64,
    /// Rows skipped before this page.
    pub offset: u64,
    /// Most rows a page holds.
    pub limit: u64,
}

/// One stored event of a round, with its chain position and a description in the rule
/// books' words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct EventRow {
    /// The event's position in its table's chain.
    pub seq: Seq,
    /// The event's chain hash.
    pub hash: Hash32,
    /// JetStream stream sequence: the House's order of arrival.
    pub stream_seq: u64,
    /// When the House received it, UTC ns.
    pub received_at_ns: i64,
    /// The device clock's time of the event, UTC ns.
    pub occurred_at_ns: i64,
    /// The device that sent it.
    pub device: String,
    /// The event's type tag (`card_dealt`).
    #[serde(rename = "type")]
    pub type_name: String,
    /// What happened, in the rule books' words.
    pub description: String,
    /// The event as decoded.
    pub event: Event,
}

/// One box and line of the settlement: the rules against the dealer's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct SettlementRow {
    /// The betting box.
    #[serde(rename = "box")]
    pub box_no: BoxNo,
    /// The bet line.
    pub line: PayLine,
    /// The player's net result according to the rules.
    pub expected: Money,
    /// What the dealer recorded (`PaidOut`), 0 when nothing was recorded.
    pub recorded: Money,
    /// `recorded - expected`: positive = overpaid.
    pub difference: Money,
    /// The clauses that decide the line.
    pub clauses: Vec<String>,
    /// Why, in plain words.
    pub explanation: String,
}

/// A finding with the text of the clause it cites.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct FindingView {
    /// The finding, its fields at the top level.
    #[serde(flatten)]
    pub finding: Finding,
    /// The clause cited, in human form, with the project's note on why that clause.
    pub clause_text: String,
    /// The cited clause in the rule book's words: verbatim excerpts of the seed rule set
    /// in its order (a sub-clause after its parent's opening words and before its closing
    /// words; a clause followed by its sub-clauses). Empty when unknown.
    #[serde(default)]
    pub clause_wording: Vec<String>,
}

/// One round: events, reconstruction (report), settlement and findings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct RoundDetail {
    /// The round as listed.
    pub row: RoundRow,
    /// The configuration in force (the last `TableOpened` before the round).
    pub config: Option<TableConfig>,
    /// The seq of that `TableOpened`.
    pub config_seq: Option<Seq>,
    /// The replayer's report, re-run on this request from the stored bytes.
    pub report: RoundReport,
    /// The round's events and the table events around it that its replay reads
    /// (shuffle before, deck reveal after).
    pub events: Vec<EventRow>,
    /// One row per box and line.
    pub settlement: Vec<SettlementRow>,
    /// The findings with their clauses.
    pub findings: Vec<FindingView>,
    /// Re-syncs that admitted one of these events after the ledger refused it
    /// (schemas/README.md §5.6): the event is the one its entry kept; an admin let it in.
    #[serde(default)]
    pub resyncs: Vec<ResyncNote>,
}

/// An event an admin admitted by a re-sync: who, when and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ResyncNote {
    /// The seq of the admitted event.
    pub seq: Seq,
    /// The quarantine entry that keeps the refusal.
    pub quarantine_id: u64,
    /// The admin key that signed the re-sync.
    pub admin: crate::attest::PublicKey,
    /// Why, in the admin's words.
    pub note: String,
    /// When the admin signed it, UTC ns.
    pub signed_at_ns: i64,
}

/// The state of the round after one event (video-review step).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct StepState {
    /// Index of the event in the round's event list, from 0.
    pub k: u64,
    /// The event's seq.
    pub seq: Seq,
    /// The event, described.
    pub event: String,
    /// Phase of the round (`bets_open`, `dealing`, `settlement`, ...).
    pub phase: String,
    /// Bets per box and kind, as JSON (`{"1": {"ante": 500}}`).
    pub bets: serde_json::Value,
    /// Cards per box, in the order dealt (`{"1": ["AS", "KH"]}`).
    pub cards: serde_json::Value,
    /// The dealer's cards so far.
    pub dealer: Vec<String>,
    /// The burnt cards so far.
    pub burn: Vec<String>,
    /// Decisions per box, as JSON.
    pub decisions: serde_json::Value,
    /// BET or Play stakes per box, as JSON.
    pub plays: serde_json::Value,
    /// Recorded payouts so far per box and line.
    pub paid: serde_json::Value,
    /// Whether the round is void so far.
    pub void: bool,
    /// Codes of the findings made so far.
    pub findings: Vec<String>,
}

/// Every step of a round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct StepList {
    /// The table.
    pub table: TableId,
    /// The round.
    pub round: RoundId,
    /// One state per event, in order.
    pub steps: Vec<StepState>,
}

/// One disputed line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct DisputeRow {
    /// The table.
    pub table: TableId,
    /// The round.
    pub round: RoundId,
    /// Device time of the round's first event, UTC ns.
    pub opened_at_ns: i64,
    /// The round's verdict.
    pub verdict: Verdict,
    /// The betting box.
    #[serde(rename = "box")]
    pub box_no: BoxNo,
    /// The bet line.
    pub line: PayLine,
    /// The player's net result according to the rules.
    pub expected: Money,
    /// What the dealer recorded.
    pub recorded: Money,
    /// `recorded - expected`: positive = overpaid.
    pub difference: Money,
}

/// A page of disputed lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct DisputePage {
    /// The rows of this page.
    pub items: Vec<DisputeRow>,
    /// Rows matching the query, across all pages.
    pub total: u64,
    /// Rows skipped before this page.
    pub offset: u64,
    /// Most rows a page holds.
    pub limit: u64,
}

/// One finding of one round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct FindingRow {
    /// The table.
    pub table: TableId,
    /// The round.
    pub round: RoundId,
    /// Device time of the round's first event, UTC ns.
    pub opened_at_ns: i64,
    /// The finding, its fields at the top level.
    #[serde(flatten)]
    pub finding: FindingView,
}

/// A page of findings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct FindingPage {
    /// The rows of this page.
    pub items: Vec<FindingRow>,
    /// Rows matching the query, across all pages.
    pub total: u64,
    /// Rows skipped before this page.
    pub offset: u64,
    /// Most rows a page holds.
    pub limit: u64,
}

/// A table's chain as the server has verified it while indexing: every hash recomputed
/// from the stored bytes, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ChainStatus {
    /// The table.
    pub table: TableId,
    /// The seq of its chain head.
    pub head_seq: Seq,
    /// The hash of its chain head.
    pub head_hash: Hash32,
    /// Last seq whose hash, prev link and seq were recomputed and matched.
    pub verified_through: Seq,
    /// Whether the chain verifies through its head and the table is not fenced.
    pub ok: bool,
    /// The first problem, naming the seq.
    pub problem: Option<String>,
    /// The highest seq a device-signed checkpoint covers (verified, and kept by the ledger);
    /// `None` before the table's first. Events after it are not yet attested.
    pub attested_through: Option<Seq>,
    /// The table's first gap: events held beyond it until the missing ones arrive.
    pub gap: Option<GapView>,
    /// Why the table is fenced as damaged (`check: detail`), when it is (then `ok` is
    /// false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fenced: Option<String>,
    /// Seqs with two signed events, the stored one and another quarantined as a `fork`: a
    /// stolen device key or a faulty device. Then `ok` is false.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disputed: Vec<DisputedSeq>,
}

/// A seq of a chain with two events: the one stored, and another the quarantine holds as
/// a `fork`. On a ledger that requires signatures both passed the signature check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct DisputedSeq {
    /// The table.
    pub table: TableId,
    /// The seq with two events.
    pub seq: Seq,
    /// The stored event's hash; `None` while the seq is not stored (held).
    pub stored: Option<Hash32>,
    /// The quarantine entry holding the other event.
    pub quarantine_id: u64,
    /// The other event's hash.
    pub quarantined: Hash32,
}

/// Events missing from a table's chain while later ones are held (never skipped).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct GapView {
    /// The first missing seq.
    pub missing_from: Seq,
    /// The last missing seq.
    pub missing_to: Seq,
    /// Events held beyond the gap.
    pub held: u64,
    /// Receive time of the oldest held event (UTC ns): missing since then.
    pub since_ns: i64,
    /// The highest held seq; the lowest is `missing_to` + 1.
    pub held_last: Seq,
    /// Message bytes of the held events.
    pub held_bytes: u64,
    /// The quarantined event inside the gap the chain waits for, if the ledger finds one
    /// among its newest quarantine entries. `None`: the events never arrived.
    pub blocked_by: Option<GapBlocker>,
}

/// A refused event that a table's held events depend on (RUNBOOK.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct GapBlocker {
    /// The refused event's seq.
    pub seq: Seq,
    /// Its quarantine entry.
    pub quarantine_id: u64,
    /// Its stable quarantine reason code.
    pub reason: String,
}

/// One quarantined message: what the ledger refused to chain, kept verbatim with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct QuarantineRow {
    /// The entry's id, in quarantine order from 0.
    pub id: u64,
    /// Stable reason code (`undecodable`, `fork`, `checkpoint_bad_signature`, ...).
    pub reason: String,
    /// The reason in words.
    pub text: String,
    /// The table its subject named, if it named a valid one.
    pub subject_table: Option<TableId>,
    /// JetStream stream sequence and receive time of the message.
    pub stream_seq: u64,
    /// When the House received it, UTC ns.
    pub received_at_ns: i64,
    /// The message's length in bytes.
    pub bytes_len: u64,
    /// The message's bytes in hex: the first `QUARANTINE_PREVIEW_BYTES` in a list, all of
    /// them from `/v1/quarantine/{id}`.
    pub bytes_hex: String,
    /// How often the same bytes were refused for the same reason after this entry, under
    /// later stream seqs: counted here, not stored again. An operating counter beside the
    /// quarantine chain, not covered by it. Absent (0) from servers before it.
    #[serde(default)]
    pub repeats: u64,
}

/// Bytes of each message a quarantine list shows (`QuarantineRow::bytes_hex`).
pub const QUARANTINE_PREVIEW_BYTES: usize = 64;

/// The quarantine chain's head: how many entries it covers and its hash after the last
/// (what `verify` checks and a digest names).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct QuarantineHeadView {
    /// Entries the chain covers.
    pub entries: u64,
    /// The chain's hash after the last entry.
    pub hash: Hash32,
}

/// A page of the quarantine, newest first, with the counts per reason and the chain head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct QuarantinePage {
    /// The rows of this page.
    pub items: Vec<QuarantineRow>,
    /// Entries matching the query.
    pub total: u64,
    /// Rows skipped before this page.
    pub offset: u64,
    /// Most rows a page holds.
    pub limit: u64,
    /// Every quarantined message counted by reason code (the whole quarantine, unfiltered).
    pub by_reason: std::collections::BTreeMap<String, u64>,
    /// The quarantine chain's head.
    pub head: QuarantineHeadView,
    /// Refusals past a quarantine bound, counted, not stored (whole quarantine, unfiltered).
    #[serde(default)]
    pub overflow: Vec<OverflowRow>,
}

/// Refusals of one source and reason past a quarantine bound: counted, not stored. The
/// stream keeps their bytes at the stream seqs named; `digest` chains each one's stream
/// seq and BLAKE3 (schemas/README.md, quarantine bounds).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct OverflowRow {
    /// The subject's table, or `-` when the message had none.
    pub source: String,
    /// The stable reason code.
    pub reason: String,
    /// Refusals counted.
    pub count: u64,
    /// Their bytes in total.
    pub bytes: u64,
    /// The stream seq of the first refusal counted.
    pub first_stream_seq: u64,
    /// The stream seq of the last refusal counted.
    pub last_stream_seq: u64,
    /// BLAKE3 chain over each refusal's stream seq and hash.
    pub digest: Hash32,
}

/// A jackpot pool replayed across tables in arrival order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct PoolView {
    /// The pool.
    pub pool: PoolId,
    /// Tables that contributed to, displayed or hit the pool, sorted.
    pub tables: Vec<TableId>,
    /// The first value shown (or reset), where the recomputation starts.
    pub start: Money,
    /// Contributions of rounds not void, each rounded down (RULES-NOTES 6).
    pub contributions: Money,
    /// Jackpot stakes that contributed.
    pub contributing_stakes: u64,
    /// Jackpots paid.
    pub wins: u64,
    /// Their total, minor units.
    pub paid: Money,
    /// `JackpotReset` events applied.
    pub resets: u64,
    /// Displays compared with a recomputed value.
    pub displays_checked: u64,
    /// The last value a table showed.
    pub last_shown: Option<Money>,
    /// The recomputed value after the last event.
    pub recomputed: Money,
    /// Displays that differ from the recomputed value.
    pub mismatches: Vec<PoolMismatchRow>,
}

/// A shown pool value that differs from the recomputed one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct PoolMismatchRow {
    /// The finding code of the displaying table's rule set.
    pub code: String,
    /// The displaying table.
    pub table: TableId,
    /// The seq of the `JackpotShown` event.
    pub seq: Seq,
    /// The value displayed, minor units.
    pub shown: Money,
    /// The value the replay recomputed, minor units.
    pub recomputed: Money,
    /// `shown - recomputed`.
    pub difference: Money,
}

/// Finance totals of one table from its finance and payout events.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct FinanceSummary {
    /// The table; `None` for a sum over tables.
    pub table: Option<TableId>,
    /// Cash exchanged for chips at the table, as the buy-in events record it. Not the
    /// drop: the drop is what the count room counts in the boxes (`ReportGroup::drop`).
    pub cash_buy_ins: Money,
    /// Chips issued against markers.
    pub markers: Money,
    /// Chips brought from the cage.
    pub fills: Money,
    /// Chips returned to the cage.
    pub credits: Money,
    /// The house's result from the dealer's recorded payouts: minus the players' net.
    pub win_recorded: Money,
    /// The house's result if every round had been paid as the rules say.
    pub win_rules: Money,
    /// Rounds counted.
    pub rounds: u64,
}

/// What a case entry does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum CaseAction {
    /// A case opens on one round.
    Opened {
        /// The round's table.
        table: TableId,
        /// The round.
        round: RoundId,
        /// The case's title.
        title: String,
    },
    /// A note on the case.
    Note {
        /// The note.
        text: String,
    },
    /// The case closes with a decision.
    Closed {
        /// The decision, in words.
        decision: String,
    },
    /// Who works the case now (a person's name).
    Assigned {
        /// Who works it.
        to: String,
    },
    /// A closed case opened again, with why.
    Reopened {
        /// Why it opens again.
        reason: String,
    },
}

/// One append-only case entry: who, when, what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct CaseEntry {
    /// The case.
    pub case_id: u64,
    /// When the entry was made (server clock), UTC ns.
    pub at_ns: i64,
    /// Who made it (token name).
    pub author: String,
    /// Their role then.
    pub role: Role,
    /// What it does, its fields at the top level.
    #[serde(flatten)]
    pub action: CaseAction,
    /// The records stream's sequence of the record this entry applies (`records`);
    /// absent on a server without the stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_seq: Option<u64>,
}

/// A case as folded from its entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct CaseView {
    /// The case's id, from 1.
    pub id: u64,
    /// The round's table.
    pub table: TableId,
    /// The round.
    pub round: RoundId,
    /// The case's title.
    pub title: String,
    /// Whether the case is open.
    pub open: bool,
    /// The decision of its last `Closed` entry, if closed.
    pub decision: Option<String>,
    /// Who works it, from its last `Assigned` entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<String>,
    /// Every entry, oldest first.
    pub entries: Vec<CaseEntry>,
}

/// A page of cases.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct CasePage {
    /// The rows of this page.
    pub items: Vec<CaseView>,
    /// Cases matching the query.
    pub total: u64,
    /// Rows skipped before this page.
    pub offset: u64,
    /// Most rows a page holds.
    pub limit: u64,
}

/// `POST /v1/cases`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct OpenCase {
    /// The round's table.
    #[cfg_attr(feature = "openapi", schema(value_type = String, pattern = "^[A-Za-z0-9_-]{1,32}$"))]
    pub table: TableId,
    /// The round.
    #[cfg_attr(feature = "openapi", schema(value_type = u64, minimum = 0))]
    pub round: RoundId,
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 2000,
            pattern = r"^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]*[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069\t\n\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]*$"
        )
    )]
    /// The case's title.
    pub title: String,
}

/// `POST /v1/cases/{id}/notes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AddNote {
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 2000,
            pattern = r"^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]*[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069\t\n\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]*$"
        )
    )]
    /// The note.
    pub text: String,
}

/// `POST /v1/cases/{id}/close`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CloseCase {
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 2000,
            pattern = r"^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]*[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069\t\n\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]*$"
        )
    )]
    /// The decision, in words.
    pub decision: String,
}

/// `POST /v1/cases/{id}/assign`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AssignCase {
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 64,
            pattern = r"^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]*[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069\t\n\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]*$"
        )
    )]
    /// Who works the case now.
    pub to: String,
}

/// `POST /v1/cases/{id}/reopen`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ReopenCase {
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 2000,
            pattern = r"^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]*[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069\t\n\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]*$"
        )
    )]
    /// Why the case opens again.
    pub reason: String,
}

/// One request as the audit log records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct AuditEntry {
    /// Position in the log, from 1.
    pub id: u64,
    /// When the request arrived (server clock), UTC ns.
    pub at_ns: i64,
    /// The token's name; `anonymous` when no valid token was given.
    pub who: String,
    /// The token's role; `None` without a valid token.
    pub role: Option<Role>,
    /// The HTTP method.
    pub method: String,
    /// The request path.
    pub path: String,
    /// The query string, without the `?`, credential values redacted.
    pub query: String,
    /// The answer's HTTP status. Absent on the entry a request that changes something
    /// (not GET) gets before it runs: no change is made unless that entry is written.
    pub status: Option<u16>,
    /// On the answer to such a request: the id of the entry written when it arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received: Option<u64>,
    /// The client's IP address, as the connection gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The ledger node that served the request (`serve --node-id`), in the floor's log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The records stream's sequence of this entry, in the floor's log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_seq: Option<u64>,
}

/// A page of the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct AuditPage {
    /// The rows of this page.
    pub items: Vec<AuditEntry>,
    /// Entries matching the query.
    pub total: u64,
    /// Rows skipped before this page.
    pub offset: u64,
    /// Most rows a page holds.
    pub limit: u64,
}

/// One message of the live feed (server-sent events, `GET /v1/feed`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FeedItem {
    /// A round replayed.
    Round {
        /// The round as listed.
        round: RoundRow,
    },
    /// A finding made.
    Finding {
        /// The finding with its round.
        finding: FindingRow,
    },
}

#[cfg(feature = "openapi")]
mod openapi {
    //! How the types with a hand-written JSON form appear in the OpenAPI document: ids,
    //! money and hashes as their JSON primitives, cards and keys as patterned strings. The
    //! report, event and configuration types derive theirs (`utoipa::ToSchema`, reading
    //! their serde attributes), so the document describes them field by field.
    use super::*;
    use crate::attest::{PublicKey, Signature};
    use crate::card::Card;
    use crate::ids::{DeviceId, StaffId};
    use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
    use utoipa::openapi::RefOr;
    use utoipa::{PartialSchema, ToSchema};

    fn prim(t: Type, description: &str, pattern: Option<&str>) -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(t)
            .description(Some(description))
            .pattern(pattern)
            .into()
    }

    macro_rules! primitive {
        ($($ty:ty => $t:expr, $d:expr $(, $pattern:expr)?;)*) => {$(
            impl PartialSchema for $ty {
                fn schema() -> RefOr<Schema> {
                    prim($t, $d, [$($pattern)?].first().copied())
                }
            }
            impl ToSchema for $ty {}
        )*};
    }

    primitive! {
        TableId => Type::String, "table id", ID_PATTERN;
        DeviceId => Type::String, "device id", ID_PATTERN;
        StaffId => Type::String, "staff id", ID_PATTERN;
        PoolId => Type::String, "jackpot pool id", ID_PATTERN;
        RoundId => Type::Integer, "round number";
        Seq => Type::Integer, "sequence number in the table's chain";
        BoxNo => Type::Integer, "betting box, from 1";
        Money => Type::Integer, "money in minor units";
        Hash32 => Type::String, "32 bytes, lowercase hex", "^[0-9a-f]{64}$";
        PublicKey => Type::String, "ed25519 public key, lowercase hex", "^[0-9a-f]{64}$";
        Signature => Type::String, "ed25519 signature, lowercase hex", "^[0-9a-f]{128}$";
        Card => Type::String, "a card: rank 2-9, T, J, Q, K, A then suit c, d, h, s (\"As\", \"Td\")", "^([2-9TJQKA]|10)[cdhs]$";
    }

    /// Ids: 1 to 32 of `[A-Za-z0-9_-]` (schemas/README.md §1).
    const ID_PATTERN: &str = "^[A-Za-z0-9_-]{1,32}$";
}

/// What an operator alert is about. Published on `alerts.<table>.<kind>` (`as_str`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum AlertKind {
    /// A different event at a stored seq: two branches of one chain, or a rewound device.
    Fork,
    /// An event refused because its table's device did not sign it (unsigned, an unknown
    /// signer, a signature that does not verify): someone else speaks for the table.
    RefusedPublisher,
    /// More events stored than the newest device-signed checkpoint covers, beyond a bound.
    AttestationStalled,
    /// Refusals past a quarantine bound: counted, not stored; their bytes stay in the stream.
    QuarantineBound,
    /// A table fenced as damaged: its new events are quarantined as `table_fenced`.
    TableFenced,
    /// Ingest stopped acknowledging on a write error (a full disk): it retries by itself.
    IngestPaused,
    /// Writes succeed again after `IngestPaused`: ingest goes on.
    IngestResumed,
    /// A table holds events beyond a gap for longer than a bound: it has stopped advancing
    /// (RUNBOOK.md).
    TableStuck,
    /// Another ledger node holds a different hash at the same seq of this table
    /// (`ingest::replicas`): one of the replicas is damaged.
    ReplicaDiverged,
    /// A decision statistic crossed its threshold: decisions that fit the dealer's hidden
    /// cards (`DecisionSignal`, read model with `serve --decision-analytics`).
    HoleCardPlay,
    /// A decision statistic crossed its threshold: neighbouring boxes whose decisions fit
    /// each other's cards.
    CardSharing,
    /// A dealer's disputed rounds are improbably many for the rest of the floor's rate:
    /// the one-sided Poisson tail is below 0.001 (`DecisionSignal`, kind `dealer_errors`).
    DealerErrors,
    /// A closed table shift's recorded win lies outside its theoretical win's interval
    /// (`DecisionSignal` with `hold`, kind `hold_outside`).
    HoldOutside,
}

impl AlertKind {
    /// The stable name: the alert subject's last token and the JSON form.
    pub fn as_str(self) -> &'static str {
        match self {
            AlertKind::Fork => "fork",
            AlertKind::RefusedPublisher => "refused_publisher",
            AlertKind::AttestationStalled => "attestation_stalled",
            AlertKind::QuarantineBound => "quarantine_bound",
            AlertKind::TableFenced => "table_fenced",
            AlertKind::IngestPaused => "ingest_paused",
            AlertKind::IngestResumed => "ingest_resumed",
            AlertKind::TableStuck => "table_stuck",
            AlertKind::ReplicaDiverged => "replica_diverged",
            AlertKind::HoleCardPlay => "hole_card_play",
            AlertKind::CardSharing => "card_sharing",
            AlertKind::DealerErrors => "dealer_errors",
            AlertKind::HoldOutside => "hold_outside",
        }
    }

    /// What a signal of this kind names once for the floor, when the round that raises it
    /// depends on indexing order (`dealer_errors`) or on when a price lands
    /// (`hold_outside`): such a signal goes out once per name, whatever its round. The
    /// name is stable: the alert publisher keeps its hash.
    pub fn raised_once_per(self, table: &str, subject: &str) -> Option<String> {
        match self {
            AlertKind::DealerErrors => Some(format!("{} {subject}", self.as_str())),
            AlertKind::HoldOutside => Some(format!("{} {table} {subject}", self.as_str())),
            _ => None,
        }
    }

    /// The kind of a decision signal's `kind` (`DecisionSignal::kind`), if it names one.
    pub fn of_signal(kind: &str) -> Option<AlertKind> {
        [
            AlertKind::HoleCardPlay,
            AlertKind::CardSharing,
            AlertKind::DealerErrors,
            AlertKind::HoldOutside,
        ]
        .into_iter()
        .find(|k| k.as_str() == kind)
    }
}

/// Something an operator must look at now: raised by ingest, published on NATS
/// (`subjects::alerts_subject`) and listed at `GET /v1/alerts`. Repeats of one kind on
/// one table within a window count into one alert.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Alert {
    /// The table concerned.
    pub table: TableId,
    /// What kind of alert.
    pub kind: AlertKind,
    /// Occurrences in this alert's window, the first included.
    pub count: u64,
    /// The stream seq of the latest occurrence (0 when none is a message).
    pub last_stream_seq: u64,
    /// What happened, in words: the quarantine reason and text, or the attestation lag.
    pub detail: String,
    /// When the window opened (UTC ns, ingest's clock).
    pub raised_at_ns: i64,
    /// When the latest occurrence was counted (UTC ns).
    pub last_at_ns: i64,
    /// For a decision signal's alert: the statistic, whose decisions, and the rounds that
    /// moved it. Absent from every other kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<DecisionSignal>,
}

/// The newest alerts first (`GET /v1/alerts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct AlertList {
    /// The alerts, newest first.
    pub alerts: Vec<Alert>,
}

/// One decision that moved a signal's statistic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct SignalMove {
    /// Its round.
    pub round: u64,
    /// Its box.
    pub box_no: u8,
    /// What it added to the statistic, in thousandths.
    pub by_milli: i64,
    /// What the player saw, chose, and what the hidden cards were; for `dealer_errors`,
    /// the round's payout errors.
    pub text: String,
    /// The round's table when it is not the signal's (a dealer deals at many tables).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
}

/// A decision statistic that crossed its threshold at a round (`GET /v1/analytics`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct DecisionSignal {
    /// The table of the round that raised it.
    pub table: String,
    /// The round at which it crossed.
    pub round: u64,
    /// `hole_card_play`, `card_sharing`, `dealer_errors` or `hold_outside`: the alert
    /// subject's last token.
    pub kind: String,
    /// Whose decisions: `box 3`, `boxes 3-4`, `dealer D-17`, `table`; for
    /// `hold_outside`, `shift 2026-11-25/1` (the gaming day and shift, property time).
    pub subject: String,
    /// The box, for a box's statistic.
    pub box_no: Option<u8>,
    /// The dealer, for a dealer's statistic.
    pub dealer: Option<String>,
    /// The statistic, in thousandths. For `dealer_errors`: the dealer's disputed rounds
    /// per 1,000 rounds.
    pub statistic_milli: i64,
    /// Its threshold, in thousandths. For `dealer_errors`: the rate per 1,000 rounds from
    /// which the tail at the floor's rate falls below 0.001.
    pub threshold_milli: i64,
    /// The setting: false alarms per 1,000 rounds, in thousandths. For `dealer_errors`:
    /// the tail bound per judged round, 0.001 (1,000).
    pub false_alarms_milli_per_1000_rounds: u64,
    /// Rounds since the statistic last stood at 0; for `dealer_errors`, the dealer's
    /// decided rounds.
    pub run_rounds: u64,
    /// The decisions that moved it most, largest first; for `dealer_errors`, the
    /// dealer's latest disputed rounds, newest first; for `hold_outside`, the shift's
    /// largest payout errors.
    pub moved: Vec<SignalMove>,
    /// A `hold_outside` signal's figures: the shift, its wins and interval, its handle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<ShiftHold>,
}

/// A closed table shift's hold against its theoretical win (`hold_outside`). Money in
/// minor units; the interval is the theoretical win plus or minus 3.291 standard
/// deviations of the win, from the handle and each line's variance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ShiftHold {
    /// The shift's name: gaming day and shift number, `2026-11-25/1` (property time).
    pub shift: String,
    /// The shift's start, UTC ns (inclusive).
    pub starts_at_ns: i64,
    /// The shift's end, UTC ns (exclusive).
    pub ends_at_ns: i64,
    /// Rounds that began in the shift.
    pub rounds: u64,
    /// The house's win as the dealers recorded it (tray in less tray out).
    pub actual_win: Money,
    /// Handle times each line's house edge.
    pub theoretical_win: Money,
    /// The interval's low end.
    pub win_low: Money,
    /// The interval's high end.
    pub win_high: Money,
    /// Stakes on lines with an edge (the priced handle).
    pub handle_priced: Money,
    /// The shift's finance report for its table (`/v1/reports?shift=...&table=...`).
    pub finance_link: String,
}

/// A closed table shift the hold alarm gave up unjudged: no figure, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct HoldNotJudged {
    /// The table.
    pub table: String,
    /// The shift's name, `2026-11-25/1`; null when the read model holds no row of it.
    pub shift: Option<String>,
    /// The shift's start, UTC ns (inclusive).
    pub starts_at_ns: i64,
    /// Why it is not judged: `its pay table is not priced yet: ...` (it waits) or `its pay
    /// table was not priced within 16 shifts` (given up).
    pub reason: String,
}

impl DecisionSignal {
    /// The rounds this signal links to: where it crossed, then those that moved it.
    pub fn rounds(&self) -> Vec<u64> {
        let mut out = vec![self.round];
        for m in &self.moved {
            if !out.contains(&m.round) {
                out.push(m.round);
            }
        }
        out
    }

    /// The API paths of its rounds (`/v1/tables/<table>/rounds/<n>`), as `rounds` orders
    /// them; a moved round on another table links to that table.
    pub fn round_links(&self) -> Vec<String> {
        let mut out = vec![format!("/v1/tables/{}/rounds/{}", self.table, self.round)];
        for m in &self.moved {
            let table = m.table.as_deref().unwrap_or(&self.table);
            let link = format!("/v1/tables/{table}/rounds/{}", m.round);
            if !out.contains(&link) {
                out.push(link);
            }
        }
        out
    }
}

/// The decision signals (`GET /v1/analytics`), by table then round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct AnalyticsList {
    /// Whether every round in the read model was judged; `false` means an empty list says
    /// nothing (analytics off for part of the history).
    pub computed: bool,
    /// Why the signals are not known, when `computed` is false.
    pub not_computed_reason: Option<String>,
    /// The setting: false alarms per 1,000 rounds of one statistic, in thousandths.
    pub false_alarms_milli_per_1000_rounds: Option<u64>,
    /// The signals, each with links to its rounds (`/v1/tables/<table>/rounds/<n>`).
    pub signals: Vec<AnalyticsSignal>,
    /// Each dealer's quality against the floor, shorter ids first; at most 10,000
    /// (`dealers_truncated`). The floor's medians are over the dealers listed.
    pub dealers: Vec<DealerQuality>,
    /// Dealers the read model holds, listed or not.
    pub dealers_total: u64,
    /// Whether `dealers` stops at its cap before `dealers_total`: the list is not whole.
    pub dealers_truncated: bool,
    /// Closed shifts the hold alarm has not judged, by table, each with its reason: those
    /// waiting for their pay table's price (judged once it is), then the newest given up
    /// (at most 4 a table; never judged).
    pub holds_not_judged: Vec<HoldNotJudged>,
    /// Every closed shift not judged, listed or not.
    pub holds_not_judged_total: u64,
}

/// One dealer's quality counts over their decided rounds, and rates against the floor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct DealerQuality {
    /// The dealer's staff id.
    pub dealer: String,
    /// Decided rounds dealt.
    pub rounds: u64,
    /// Rounds with a recorded payout that differs from the rules.
    pub disputed_rounds: u64,
    /// Lines paid more than the rules say, and the total, minor units.
    pub overpaid_lines: u64,
    /// The total overpaid, minor units.
    pub overpaid_minor: i64,
    /// Lines paid less than the rules say.
    pub underpaid_lines: u64,
    /// The total underpaid, minor units (positive).
    pub underpaid_minor: i64,
    /// Rounds whose verdict is irregular.
    pub irregular_rounds: u64,
    /// Findings of an exposed card: one per finding, not per card.
    pub exposure_findings: u64,
    /// The earliest opening of their rounds, UTC ns.
    pub first_opened_at_ns: Option<i64>,
    /// The latest close of their rounds, UTC ns.
    pub last_closed_at_ns: Option<i64>,
    /// Payout error lines (over and under) per 1,000 rounds.
    pub payout_errors: DealerRate,
    /// Disputed rounds per 1,000 rounds.
    pub disputed: DealerRate,
    /// Irregular rounds per 1,000 rounds.
    pub irregular: DealerRate,
    /// Exposed-card findings per 1,000 rounds.
    pub exposures: DealerRate,
    /// Why the rates are null, when they are.
    pub rates_null_reason: Option<String>,
    /// Dealing time summed over stints, ns. A stint is a run of a table's rounds with no
    /// pause over 20 minutes; it runs from its first opening to its last close.
    pub dealing_ns: i64,
    /// Stints dealt.
    pub stints: u64,
    /// Rounds per hour of dealing, against the floor's quartiles.
    pub pace: DealerPace,
}

/// A dealer's rounds per hour of dealing and the floor's quartiles, all in thousandths.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct DealerPace {
    /// The dealer's rounds per hour; null under 30 minutes of dealing.
    pub rounds_per_hour_milli: Option<u64>,
    /// Why it is null, when it is.
    pub null_reason: Option<String>,
    /// The floor's lower quartile over dealers with a rate; null when none has.
    pub floor_p25_milli: Option<u64>,
    /// The floor's median over dealers with a rate; null when none has.
    pub floor_median_milli: Option<u64>,
    /// The floor's upper quartile over dealers with a rate; null when none has.
    pub floor_p75_milli: Option<u64>,
}

/// A dealer's rate per 1,000 rounds and the floor's median, both in thousandths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct DealerRate {
    /// The dealer's rate; null with too few rounds.
    pub milli_per_1000_rounds: Option<u64>,
    /// The median over dealers with enough rounds; null when none has.
    pub floor_median_milli_per_1000_rounds: Option<u64>,
}

/// One signal with the API links to its rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct AnalyticsSignal {
    /// The signal.
    #[serde(flatten)]
    pub signal: DecisionSignal,
    /// Its rounds' paths, the crossing round first.
    pub round_links: Vec<String>,
}

/// One sealed gaming day in a list (`GET /v1/days`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct DayRow {
    /// The day's local date, `YYYY-MM-DD`.
    pub day: String,
    /// The seal's digest: its name.
    pub seal: Hash32,
    /// The property's IANA time zone.
    pub time_zone: String,
    /// The day's start, UTC ns (inclusive).
    pub starts_at_ns: i64,
    /// The day's end, UTC ns (exclusive).
    pub ends_at_ns: i64,
    /// Tables the seal covers.
    pub tables: u64,
    /// Events the seal covers.
    pub events: u64,
    /// When the seal was signed (House clock), UTC ns.
    pub signed_at_ns: i64,
    /// The House's seal key.
    pub signer: crate::attest::PublicKey,
}

impl DayRow {
    /// The row of a seal.
    pub fn of(seal: &crate::seal::DaySeal) -> DayRow {
        DayRow {
            day: seal.day.clone(),
            seal: seal.digest(),
            time_zone: seal.time_zone.clone(),
            starts_at_ns: seal.starts_at_ns,
            ends_at_ns: seal.ends_at_ns,
            tables: seal.tables.len() as u64,
            events: seal.tables.iter().map(|t| t.events).sum(),
            signed_at_ns: seal.signed_at_ns,
            signer: seal.signer,
        }
    }
}

/// Sealed days, newest first: a page before `before` (`GET /v1/days`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct DayPage {
    /// The days of this page, newest first.
    pub items: Vec<DayRow>,
    /// Most rows a page holds.
    pub limit: u64,
}

/// One sealed day with its whole seal (`GET /v1/days/{day}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct DayView {
    /// The seal's digest: its name.
    pub digest: Hash32,
    /// The seal, whole.
    pub seal: crate::seal::DaySeal,
}

/// `GET /ready`: whether the server can do its work now. 200 with `ready: true`, else 503
/// naming each check that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Readiness {
    /// Whether every check passed.
    pub ready: bool,
    /// Empty when ready.
    pub failed: Vec<NotReady>,
    /// Settings in force that no real floor may run with (`serve --trust-simulated-admin`),
    /// named while they are on. They do not fail readiness.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unsafe_settings: Vec<String>,
}

/// One readiness check that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct NotReady {
    /// `nats`, `flush`, `journal:audit` or `journal:cases`.
    pub check: String,
    /// Why it failed, in words.
    pub detail: String,
}
