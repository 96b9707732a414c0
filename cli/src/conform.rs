//! `roundledger conform`: checks one table's events against the device maker's spec
//! (schemas/DEVICES.md) and prints every departure as it happens.
//!
//! Each message goes through the ledger's own append path, in a temporary ledger: decode,
//! subject, clock, closed table, chain link and seq order, exactly as ingest judges them.
//! Each stored event then goes to the replayer, round by round: its findings cite the
//! rule set's clause and quote the rule book (`readside::clauses`). There is no second
//! rule engine here.
//!
//! Sources (`conform_source`): live, core NATS subscriptions to the table's events and
//! checkpoints from now; or a file of message lines (subject, headers, bytes), bare event
//! lines or a ledger export. Where the source carries headers, the temporary ledger
//! requires signed events and keeps checkpoints as `serve` does, trusting the admins of
//! `conform_keys`; at the end it names what no kept checkpoint attests.
//!
//! Exit codes: 0 nothing departed from the grammar, 1 something did, 2 error.

use crate::bus::BusArgs;
use crate::conform_keys::Keys;
use crate::Outcome;
use anyhow::{bail, Context, Result};
use ledger::attest::CheckpointOutcome;
use ledger::{Appended, Incoming, Ledger, Provenance, Refused};
use schemas::report::{RoundReport, Verdict};
use schemas::{codec, TableId};
use serde::Serialize;
use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;

/// Most event type names kept to name the event a finding cites.
const EVENT_NAMES_MAX: usize = 65_536;
/// Most messages of a file in one ledger call: one commit each, as ingest batches.
pub const BATCH_LEN_MAX: usize = 1024;
/// The clause `conform`'s own lines cite.
const DEVICES_CLAUSE: &str = "schemas/DEVICES.md §5";

#[derive(clap::Args)]
pub struct Args {
    /// Watch this NATS server live (`nats://` or `tls://`).
    #[arg(
        long,
        value_name = "URL",
        required_unless_present = "file",
        conflicts_with = "file"
    )]
    nats: Option<String>,
    /// The table to watch (required with --nats; with --file, its first event's table).
    #[arg(long)]
    table: Option<String>,
    /// Check recorded messages offline: message lines, event lines or a ledger export.
    #[arg(long, value_name = "FILE")]
    file: Option<PathBuf>,
    /// An admin key the House trusts to enroll devices (hex; repeatable). Without it,
    /// conform trusts every admin whose enrollment signature verifies, and says so.
    #[arg(long = "admin-key", value_name = "HEX")]
    admin_keys: Vec<String>,
    #[command(flatten)]
    bus: BusArgs,
    /// Stop after this many rounds are reported (live).
    #[arg(long, value_name = "N")]
    rounds: Option<u64>,
    /// One JSON object a line instead of text.
    #[arg(long)]
    json: bool,
}

/// One thing `conform` reports: a departure from the grammar, or a round's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Line {
    /// `refused` (the ledger would quarantine it, or keep it without effect), `held` (a gap
    /// before it), `missing` (never arrived, or never attested), `finding`, `round` (a
    /// round's verdict), `attested` (a checkpoint kept) or `duplicate`. The last three are
    /// not departures.
    pub kind: &'static str,
    pub table: String,
    /// The line of the file it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round: Option<u64>,
    /// The event's type (`card_dealt`), when it decodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<&'static str>,
    /// The quarantine reason, the finding code or the verdict.
    pub code: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clause: Option<String>,
    pub text: String,
    /// The clause in the rule book's words.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub words: Vec<String>,
}

impl Line {
    /// Whether the line is a departure from the grammar. A round's verdict is not one: a
    /// round that is not clean has its findings.
    pub fn departs(&self) -> bool {
        !matches!(self.kind, "round" | "duplicate" | "attested")
    }
}

/// An event or a checkpoint.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Event,
    Checkpoint,
}

/// One message as it arrived; a source without stream seqs or arrival times gives `None`.
pub struct Message {
    pub bytes: Vec<u8>,
    pub kind: Kind,
    /// The table token of its subject (`Some(None)`: not a valid table); `None` when the
    /// source names no subject: the checker's table.
    pub subject_table: Option<Option<TableId>>,
    pub stream_seq: Option<u64>,
    pub received_at_ns: Option<i64>,
    pub provenance: Provenance,
    /// Its line in the file.
    pub line: Option<usize>,
}

impl Message {
    /// An event message with no subject, headers or line.
    pub fn event(bytes: Vec<u8>) -> Message {
        Message {
            bytes,
            kind: Kind::Event,
            subject_table: None,
            stream_seq: None,
            received_at_ns: None,
            provenance: Provenance::Unsigned,
            line: None,
        }
    }
}

/// The checker: a temporary ledger and the table's replayer.
pub struct Checker {
    ledger: Ledger,
    _dir: tempfile::TempDir,
    table: Option<TableId>,
    replayer: Option<replayer::TableReplayer>,
    /// The last seq given to the replayer.
    fed: u64,
    /// (seq, event type) of recent stored events, oldest first.
    names: VecDeque<(u64, &'static str)>,
    next_stream_seq: u64,
    keys: Keys,
    /// Whether the source carries headers: signatures and checkpoints are checked.
    signed: bool,
    pub rounds: u64,
    pub departures: u64,
}

impl Checker {
    /// A checker for `table`, or for the table of the first event that decodes; `admins`
    /// pins the trusted admin keys (`--admin-key`).
    pub fn new(table: Option<TableId>, admins: Vec<schemas::attest::PublicKey>) -> Result<Checker> {
        let dir = tempfile::tempdir().context("a temporary ledger directory")?;
        let ledger = Ledger::open(dir.path().join("ledger")).context("a temporary ledger")?;
        Ok(Checker {
            ledger,
            _dir: dir,
            replayer: table.clone().map(replayer::TableReplayer::new),
            table,
            fed: 0,
            names: VecDeque::new(),
            next_stream_seq: 1,
            keys: Keys::new(admins),
            signed: false,
            rounds: 0,
            departures: 0,
        })
    }

    /// The table checked, once known.
    pub fn table(&self) -> Option<TableId> {
        self.table.clone()
    }

    /// The source carries headers: the ledger requires signed events from now on, and the
    /// end names what no kept checkpoint attests.
    pub fn carries_signatures(&mut self) {
        self.signed = true;
    }

    /// Checks one event message with no headers (tests).
    #[cfg(test)]
    pub fn message(&mut self, bytes: Vec<u8>) -> Result<Vec<Line>> {
        self.messages(vec![Message::event(bytes)])
    }

    /// Checks messages in one ledger call (at most `BATCH_LEN_MAX`), as ingest takes a
    /// batch: admissions in input order, then checkpoints, then the rounds they completed.
    pub fn messages(&mut self, batch: Vec<Message>) -> Result<Vec<Line>> {
        assert!(batch.len() <= BATCH_LEN_MAX, "the caller bounds a batch");
        let (mut events, mut meta) = (Vec::new(), Vec::new());
        let (mut checkpoints, mut at) = (Vec::new(), Vec::new());
        for m in batch {
            let (kind, line) = (m.kind, m.line);
            let event = match kind {
                Kind::Event => codec::decode(&m.bytes).ok().map(|(e, _)| e),
                Kind::Checkpoint => None,
            };
            if let (None, Some(e)) = (&self.table, &event) {
                self.table = Some(e.table.clone());
                self.replayer = Some(replayer::TableReplayer::new(e.table.clone()));
            }
            if kind == Kind::Checkpoint {
                let head_seq = schemas::attest::Checkpoint::decode(&m.bytes).ok();
                at.push((line, head_seq.map(|c| c.head_seq.0)));
                checkpoints.push(self.incoming(m, None));
                continue;
            }
            let incoming = self.incoming(m, event.as_ref());
            let table = event
                .as_ref()
                .map(|e| e.table.clone())
                .or(self.table.clone());
            let problems = table.map_or_else(Vec::new, |t| {
                self.keys.check(&t, event.as_ref(), &incoming.provenance)
            });
            events.push(incoming);
            meta.push((event, line, problems));
        }
        self.sync_trust()?;
        let out = self.ledger.writer().append(&events, &checkpoints)?;
        let mut lines = Vec::new();
        for (o, (event, line, problems)) in out.events.iter().zip(&meta) {
            lines.extend(self.admission_line(o, event.as_ref(), *line)?);
            for (code, text) in problems {
                lines.push(self.line_of("refused", event.as_ref(), *line, code, text.clone()));
            }
        }
        for (o, (line, head_seq)) in out.checkpoints.iter().zip(at) {
            lines.extend(self.checkpoint_line(o, line, head_seq)?);
        }
        lines.extend(self.feed_stored()?);
        self.count(&lines);
        Ok(lines)
    }

    /// The ledger's message; `stream_seq` and `received_at_ns` default to a counter and
    /// the event's own time (no clock check) when the source has none.
    fn incoming(&mut self, m: Message, event: Option<&schemas::Event>) -> Incoming {
        let stream_seq = m.stream_seq.unwrap_or(self.next_stream_seq);
        self.next_stream_seq = stream_seq + 1;
        let received_at_ns = m
            .received_at_ns
            .or(event.map(|e| e.occurred_at_ns))
            .unwrap_or(0);
        Incoming {
            bytes: m.bytes,
            subject_table: m.subject_table.unwrap_or_else(|| self.table.clone()),
            stream_seq,
            received_at_ns,
            provenance: m.provenance,
        }
    }

    /// Gives the ledger the admin keys `conform_keys` trusts, and the requirement.
    fn sync_trust(&mut self) -> Result<()> {
        if self.signed && !self.ledger.reader().requires_signed_events() {
            self.ledger.writer().require_signed_events()?;
        }
        if self.ledger.reader().trusted_admin_keys() != *self.keys.trusted() {
            self.ledger
                .writer()
                .trust_admin_keys(self.keys.trusted().clone())?;
        }
        Ok(())
    }

    /// Ends the input. The rounds still open are reported, unless events before them never
    /// arrived: then the gap is `missing` and the rounds `incomplete`, not judged. Where
    /// the source carries signatures, what no kept checkpoint attests is `missing` too.
    pub fn finish(&mut self) -> Result<Vec<Line>> {
        let reports = self.replayer.take().map(|r| r.finish()).unwrap_or_default();
        let gap = self.table.as_ref().and_then(|t| {
            self.ledger
                .reader()
                .gaps()
                .into_iter()
                .find(|g| &g.table == t)
        });
        let mut lines = Vec::new();
        match &gap {
            None => lines.extend(reports.iter().flat_map(|r| self.round_lines(r))),
            Some(g) => {
                let text = format!(
                    "seq {}..={} never arrived; seq {}..={} are held ({} events), not judged",
                    g.missing_from.0,
                    g.missing_to.0,
                    g.missing_to.0 + 1,
                    g.held_last.0,
                    g.held
                );
                let mut l = self.line_of("missing", None, None, "gap", text);
                l.seq = Some(g.missing_from.0);
                lines.push(l);
                lines.extend(reports.iter().map(|r| incomplete_line(r, g.missing_from.0)));
            }
        }
        if let (true, Some(t)) = (self.signed, &self.table) {
            if let Some((code, text)) = crate::conform_keys::unattested(&self.ledger, t, &self.keys)
            {
                lines.push(self.line_of("missing", None, None, code, text));
            }
        }
        self.count(&lines);
        Ok(lines)
    }

    fn count(&mut self, lines: &[Line]) {
        self.departures += lines.iter().filter(|l| l.departs()).count() as u64;
        self.rounds += lines.iter().filter(|l| l.kind == "round").count() as u64;
    }

    /// A line of `conform`'s own about the message `event` (line `line` of a file).
    fn line_of(
        &self,
        kind: &'static str,
        event: Option<&schemas::Event>,
        line: Option<usize>,
        code: &str,
        text: String,
    ) -> Line {
        Line {
            kind,
            table: self.table_name(),
            line,
            seq: event.map(|e| e.seq.0),
            round: event.and_then(|e| e.round.map(|r| r.0)),
            event: event.map(|e| e.body.type_name()),
            code: code.to_string(),
            clause: Some(DEVICES_CLAUSE.into()),
            text,
            words: Vec::new(),
        }
    }

    /// What the ledger did with the message, when it was not simply stored.
    fn admission_line(
        &self,
        outcome: &Appended,
        event: Option<&schemas::Event>,
        at: Option<usize>,
    ) -> Result<Option<Line>> {
        let base = |kind, code: &str, text: String| self.line_of(kind, event, at, code, text);
        let line = match outcome {
            Appended::Stored { .. } => None,
            Appended::Duplicate { seq, .. } => Some(base(
                "duplicate",
                "duplicate",
                format!("seq {} again with the same bytes: stored once", seq.0),
            )),
            Appended::Held {
                missing_from,
                missing_to,
                ..
            } => Some(base(
                "held",
                "gap",
                format!(
                    "held: seq {}..={} have not arrived",
                    missing_from.0, missing_to.0
                ),
            )),
            Appended::Refused(r) => {
                let (code, text) = self.refusal(r)?;
                Some(base("refused", &code, text))
            }
            Appended::Admin { kind, .. } => Some(base(
                "admin",
                "admin_act",
                format!("an admin act ({kind}), not a device event"),
            )),
        };
        Ok(line)
    }

    /// The reason and text of a refusal.
    fn refusal(&self, r: &Refused) -> Result<(String, String)> {
        Ok(match r {
            Refused::Quarantined { id, reason } | Refused::Repeated { id, reason } => {
                let text = self
                    .ledger
                    .reader()
                    .quarantine_entry(*id)?
                    .map_or_else(String::new, |e| e.text);
                ((*reason).to_string(), text)
            }
            Refused::QuarantinedBefore { id } => (
                "repeat".into(),
                format!("the same message as refused entry {id}"),
            ),
            Refused::Overflowed { reason, .. } => {
                ((*reason).to_string(), "past a quarantine bound".into())
            }
        })
    }

    /// What the ledger did with a checkpoint (line `at` of a file).
    fn checkpoint_line(
        &self,
        o: &CheckpointOutcome,
        at: Option<usize>,
        head_seq: Option<u64>,
    ) -> Result<Option<Line>> {
        let (kind, code, text) = match o {
            CheckpointOutcome::Kept { seq, .. } => (
                "attested",
                "checkpoint".to_string(),
                format!("checkpoint kept: seq 1..={} attested", seq.0),
            ),
            CheckpointOutcome::Duplicate { .. } => return Ok(None),
            CheckpointOutcome::Refused(r) => {
                let (code, text) = self.refusal(r)?;
                ("refused", code, text)
            }
        };
        let seq = head_seq;
        let mut l = self.line_of(kind, None, at, &code, text);
        l.seq = seq;
        l.event = Some("checkpoint");
        Ok(Some(l))
    }

    /// Gives the replayer every event stored since the last call, in seq order.
    fn feed_stored(&mut self) -> Result<Vec<Line>> {
        let (Some(table), Some(_)) = (self.table.clone(), self.replayer.as_ref()) else {
            return Ok(Vec::new());
        };
        let head = self.ledger.reader().head(&table).map_or(0, |h| h.seq.0);
        let mut lines = Vec::new();
        if head <= self.fed {
            return Ok(lines);
        }
        let stored: Vec<ledger::StoredEvent> = self
            .ledger
            .reader()
            .events(&table, self.fed + 1..=head)
            .collect::<Result<_, _>>()?;
        for s in stored {
            // Stored bytes decoded once already: they decode again.
            let (event, _) = codec::decode(&s.bytes).context("a stored event")?;
            self.remember(s.seq.0, event.body.type_name());
            let reports = match self.replayer.as_mut() {
                Some(r) => r.push(s.seq, &event),
                None => Vec::new(),
            };
            self.fed = s.seq.0;
            for r in &reports {
                lines.extend(self.round_lines(r));
            }
        }
        Ok(lines)
    }

    fn remember(&mut self, seq: u64, name: &'static str) {
        if self.names.len() == EVENT_NAMES_MAX {
            self.names.pop_front();
        }
        self.names.push_back((seq, name));
    }

    fn name_of(&self, seq: u64) -> Option<&'static str> {
        let i = self.names.binary_search_by_key(&seq, |n| n.0).ok()?;
        Some(self.names[i].1)
    }

    /// A line per finding of the round, then its verdict.
    fn round_lines(&self, r: &RoundReport) -> Vec<Line> {
        let mut lines: Vec<Line> = r
            .findings
            .iter()
            .map(|f| {
                let seq = f.seqs.first().map(|s| s.0);
                Line {
                    kind: "finding",
                    table: r.table.to_string(),
                    line: None,
                    seq,
                    round: Some(r.round.0),
                    event: seq.and_then(|s| self.name_of(s)),
                    code: f.code.clone(),
                    clause: Some(f.clause.clone()),
                    text: f.explanation.clone(),
                    words: readside::clauses::wording_of_code(&f.code).to_vec(),
                }
            })
            .collect();
        lines.push(Line {
            kind: "round",
            table: r.table.to_string(),
            line: None,
            seq: Some(r.last_seq.0),
            round: Some(r.round.0),
            event: None,
            code: verdict_code(r.verdict).into(),
            clause: None,
            text: format!(
                "round {} (seq {}..={}): {} finding(s), {} dispute(s)",
                r.round.0,
                r.first_seq.0,
                r.last_seq.0,
                r.findings.len(),
                r.disputes.len()
            ),
            words: Vec::new(),
        });
        lines
    }

    fn table_name(&self) -> String {
        self.table
            .as_ref()
            .map_or_else(|| "?".into(), |t| t.to_string())
    }
}

/// An open round cut by a gap: not judged (`Checker::finish`).
fn incomplete_line(r: &RoundReport, missing_from: u64) -> Line {
    Line {
        kind: "round",
        table: r.table.to_string(),
        line: None,
        seq: Some(r.last_seq.0),
        round: Some(r.round.0),
        event: None,
        code: "incomplete".into(),
        clause: None,
        text: format!(
            "round {} (seq {}..): incomplete, not judged: seq {missing_from} never arrived",
            r.round.0, r.first_seq.0
        ),
        words: Vec::new(),
    }
}

fn verdict_code(v: Verdict) -> &'static str {
    match v {
        Verdict::Clean => "clean",
        Verdict::Irregular => "irregular",
        Verdict::Disputed => "disputed",
        Verdict::Void => "void",
    }
}

pub fn run(args: Args) -> Result<Outcome> {
    let table = args
        .table
        .as_deref()
        .map(|t| TableId::new(t).with_context(|| format!("--table {t:?}")))
        .transpose()?;
    let admins = args
        .admin_keys
        .iter()
        .map(|h| {
            schemas::attest::PublicKey::from_hex(h)
                .with_context(|| format!("--admin-key {h:?}: not 32 bytes of hex"))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut out = Printer::new(args.json);
    let checker = match (&args.file, &args.nats) {
        (Some(file), _) => {
            let checker = Checker::new(table, admins)?;
            crate::conform_source::check_file(file, checker, &mut out)?
        }
        (None, Some(url)) => {
            let Some(table) = table else {
                bail!("--nats needs --table: the table whose events to watch");
            };
            let checker = Checker::new(Some(table), admins)?;
            crate::conform_source::check_live(url, &args.bus, checker, args.rounds, &mut out)?
        }
        (None, None) => bail!("give --nats URL --table T, or --file FILE"),
    };
    eprintln!(
        "conform: {} round(s), {} departure(s)",
        checker.rounds, checker.departures
    );
    Ok(if checker.departures == 0 {
        Outcome::Clean
    } else {
        Outcome::Findings
    })
}

/// Prints lines as text or JSON, flushing each: a person or a script watches them live.
pub struct Printer {
    json: bool,
    /// When set, lines are kept here instead of printed (tests).
    pub kept: Option<Vec<Line>>,
}

impl Printer {
    pub fn new(json: bool) -> Printer {
        Printer { json, kept: None }
    }

    pub fn print(&mut self, lines: &[Line]) -> Result<()> {
        if let Some(kept) = self.kept.as_mut() {
            kept.extend_from_slice(lines);
            return Ok(());
        }
        let mut w = std::io::stdout().lock();
        for l in lines {
            if self.json {
                serde_json::to_writer(&mut w, l)?;
                writeln!(w)?;
            } else {
                writeln!(w, "{}", text_line(l))?;
                for words in &l.words {
                    writeln!(w, "    \"{words}\"")?;
                }
            }
        }
        w.flush()?;
        Ok(())
    }
}

fn text_line(l: &Line) -> String {
    let seq = l.seq.map_or_else(|| "-".into(), |s| s.to_string());
    let at = l.line.map_or_else(String::new, |n| format!("line {n}: "));
    let event = l.event.map_or_else(String::new, |e| format!(" {e}"));
    let clause = l
        .clause
        .as_deref()
        .map_or_else(String::new, |c| format!(" ({c})"));
    format!(
        "{at}{} seq {seq}{event}: {} {}{clause}: {}",
        l.table, l.kind, l.code, l.text
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLEAN: &str =
        include_str!("../../replayer/tests/golden/clean_csp6_dealer_not_qualifying.events.jsonl");

    fn check(lines: &[&str]) -> (Checker, Vec<Line>) {
        let mut c = Checker::new(None, Vec::new()).unwrap();
        let mut out = Vec::new();
        for l in lines {
            out.extend(c.message(l.as_bytes().to_vec()).unwrap());
        }
        out.extend(c.finish().unwrap());
        (c, out)
    }

    #[test]
    fn a_clean_round_departs_in_nothing() {
        let lines: Vec<&str> = CLEAN.lines().collect();
        let (c, out) = check(&lines);
        assert_eq!((c.rounds, c.departures), (1, 0), "{out:?}");
        assert_eq!(out.last().map(|l| l.code.as_str()), Some("clean"));
    }

    fn refusals(first: &str, line: &str) -> Vec<String> {
        let (_, out) = check(&[first, line]);
        out.into_iter()
            .filter(|l| l.kind == "refused")
            .map(|l| l.code)
            .collect()
    }

    /// DEVICES.md §5: unknown envelope fields and duplicate keys anywhere are refused; an
    /// unknown field inside `body` is ignored (kept under the hash, with no effect).
    #[test]
    fn json_refuses_unknown_envelope_fields_and_duplicate_keys() {
        let first = CLEAN.lines().next().unwrap();
        let second = CLEAN.lines().nth(1).unwrap();
        let edit = |from: &str, to: &str| {
            let out = second.replace(from, to);
            assert_ne!(out, second);
            out
        };
        let refused = ["undecodable".to_string()];
        let envelope = edit(r#""v":1,"#, r#""v":1,"x":2,"#);
        assert_eq!(refusals(first, &envelope), refused);
        let twice = edit(r#""round":1"#, r#""round":1,"round":1"#);
        assert_eq!(refusals(first, &twice), refused);
        let body_twice = edit(
            r#""deck_commitment":null"#,
            r#""deck_commitment":null,"deck_commitment":null"#,
        );
        assert_eq!(refusals(first, &body_twice), refused);
        let body_unknown = edit(
            r#""deck_commitment":null"#,
            r#""deck_commitment":null,"x":1"#,
        );
        assert!(refusals(first, &body_unknown).is_empty());
    }

    #[test]
    fn a_broken_link_is_refused_and_what_follows_is_held() {
        let mut lines: Vec<String> = CLEAN.lines().map(str::to_string).collect();
        lines[2] = lines[2].replace(r#""prev":"9"#, r#""prev":"8"#);
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let (c, out) = check(&refs);
        assert_eq!(out[0].code, "prev_mismatch", "{out:?}");
        assert_eq!(out[0].seq, Some(3));
        let held = out.iter().filter(|l| l.kind == "held").count();
        assert_eq!(held, lines.len() - 3, "every later event waits for seq 3");
        assert!(c.departures > 1);
        // Seq 3 is missing, the rest held: the open round is not judged on half its events.
        let missing: Vec<&Line> = out.iter().filter(|l| l.kind == "missing").collect();
        assert_eq!(missing.len(), 1, "{out:?}");
        assert_eq!((missing[0].code.as_str(), missing[0].seq), ("gap", Some(3)));
        assert!(
            out.iter().all(|l| l.kind != "finding"),
            "no finding on held events: {out:?}"
        );
        assert_eq!(out.last().map(|l| l.code.as_str()), Some("incomplete"));
    }
}
