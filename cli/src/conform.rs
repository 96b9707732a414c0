//! `roundledger conform`: checks one table's events against the device maker's spec
//! (schemas/DEVICES.md) and prints every departure as it happens.
//!
//! Each message goes through the ledger's own append path, in a temporary ledger: decode,
//! subject, clock, closed table, chain link and seq order, exactly as ingest judges them.
//! Each stored event then goes to the replayer, round by round: its findings cite the
//! rule set's clause and quote the rule book (`readside::clauses`). There is no second
//! rule engine here.
//!
//! Sources: live, a core NATS subscription to `tables.<table>.events` from now; or a file
//! of recorded events (JSON lines, one event a line, or a ledger export).
//!
//! It checks no signatures: it does not know which admin keys the House trusts.
//! Exit codes: 0 nothing departed from the grammar, 1 something did, 2 error.

use crate::bus::BusArgs;
use crate::Outcome;
use anyhow::{bail, Context, Result};
use ledger::{Appended, Incoming, Ledger, Refused};
use schemas::report::{RoundReport, Verdict};
use schemas::{codec, subjects, TableId};
use serde::Serialize;
use std::collections::VecDeque;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

/// Most event type names kept to name the event a finding cites.
const EVENT_NAMES_MAX: usize = 65_536;
/// Most messages of a file in one ledger call: one commit each, as ingest batches.
const BATCH_LEN_MAX: usize = 1024;
/// Longest line read from a file: an export line holds an event in hex.
const LINE_LEN_MAX: usize = proofs::export::EXPORT_LINE_LEN_MAX;

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
    /// Check recorded events offline: JSON lines (one event a line) or a ledger export.
    #[arg(long, value_name = "FILE")]
    file: Option<PathBuf>,
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
    /// `refused` (the ledger would quarantine it), `held` (a gap before it), `finding`,
    /// `round` (a round's verdict) or `duplicate` (the same event again: not a departure).
    pub kind: &'static str,
    pub table: String,
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
        !matches!(self.kind, "round" | "duplicate")
    }
}

/// One message as it arrived; a source without stream seqs or arrival times gives `None`.
pub struct Message {
    pub bytes: Vec<u8>,
    pub stream_seq: Option<u64>,
    pub received_at_ns: Option<i64>,
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
    pub rounds: u64,
    pub departures: u64,
}

impl Checker {
    /// A checker for `table`, or for the table of the first event that decodes.
    pub fn new(table: Option<TableId>) -> Result<Checker> {
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
            rounds: 0,
            departures: 0,
        })
    }

    /// Checks one message; `stream_seq` and `received_at_ns` default to a counter and the
    /// event's own time (no clock check) when the source has none.
    pub fn message(
        &mut self,
        bytes: Vec<u8>,
        stream_seq: Option<u64>,
        received_at_ns: Option<i64>,
    ) -> Result<Vec<Line>> {
        self.messages(vec![Message {
            bytes,
            stream_seq,
            received_at_ns,
        }])
    }

    /// Checks messages in one ledger call (at most `BATCH_LEN_MAX`), as ingest takes a
    /// batch: admissions in input order, then the rounds they completed.
    pub fn messages(&mut self, batch: Vec<Message>) -> Result<Vec<Line>> {
        assert!(batch.len() <= BATCH_LEN_MAX, "the caller bounds a batch");
        let mut decoded = Vec::with_capacity(batch.len());
        let mut incoming = Vec::with_capacity(batch.len());
        for m in batch {
            let event = codec::decode(&m.bytes).ok().map(|(e, _)| e);
            if let (None, Some(e)) = (&self.table, &event) {
                self.table = Some(e.table.clone());
                self.replayer = Some(replayer::TableReplayer::new(e.table.clone()));
            }
            let stream_seq = m.stream_seq.unwrap_or(self.next_stream_seq);
            self.next_stream_seq = stream_seq + 1;
            let received_at_ns = m
                .received_at_ns
                .or(event.as_ref().map(|e| e.occurred_at_ns))
                .unwrap_or(0);
            incoming.push(Incoming {
                bytes: m.bytes,
                subject_table: self.table.clone(),
                stream_seq,
                received_at_ns,
                provenance: ledger::Provenance::Unsigned,
            });
            decoded.push(event);
        }
        let outcomes = self.ledger.append_batch(&incoming)?;
        let mut lines = Vec::new();
        for (o, event) in outcomes.iter().zip(&decoded) {
            if let Some(l) = self.admission_line(o, event.as_ref())? {
                lines.push(l);
            }
        }
        lines.extend(self.feed_stored()?);
        self.count(&lines);
        Ok(lines)
    }

    /// Ends the input: the rounds still open are reported.
    pub fn finish(&mut self) -> Vec<Line> {
        let reports = self.replayer.take().map(|r| r.finish()).unwrap_or_default();
        let lines: Vec<Line> = reports.iter().flat_map(|r| self.round_lines(r)).collect();
        self.count(&lines);
        lines
    }

    fn count(&mut self, lines: &[Line]) {
        self.departures += lines.iter().filter(|l| l.departs()).count() as u64;
        self.rounds += lines.iter().filter(|l| l.kind == "round").count() as u64;
    }

    /// What the ledger did with the message, when it was not simply stored.
    fn admission_line(
        &self,
        outcome: &Appended,
        event: Option<&schemas::Event>,
    ) -> Result<Option<Line>> {
        let base = |kind, code: String, text: String| Line {
            kind,
            table: self.table_name(),
            seq: event.map(|e| e.seq.0),
            round: event.and_then(|e| e.round.map(|r| r.0)),
            event: event.map(|e| e.body.type_name()),
            code,
            clause: Some("schemas/DEVICES.md §2".into()),
            text,
            words: Vec::new(),
        };
        let line = match outcome {
            Appended::Stored { .. } => None,
            Appended::Duplicate { seq, .. } => Some(base(
                "duplicate",
                "duplicate".into(),
                format!("seq {} again with the same bytes: stored once", seq.0),
            )),
            Appended::Held {
                missing_from,
                missing_to,
                ..
            } => Some(base(
                "held",
                "gap".into(),
                format!(
                    "held: seq {}..={} have not arrived",
                    missing_from.0, missing_to.0
                ),
            )),
            Appended::Refused(Refused::Quarantined { id, reason })
            | Appended::Refused(Refused::Repeated { id, reason }) => {
                let text = self
                    .ledger
                    .quarantine_entry(*id)?
                    .map_or_else(String::new, |e| e.text);
                Some(base("refused", (*reason).to_string(), text))
            }
            Appended::Refused(Refused::QuarantinedBefore { id }) => Some(base(
                "refused",
                "repeat".into(),
                format!("the same message as refused entry {id}"),
            )),
            Appended::Refused(Refused::Overflowed { reason, .. }) => Some(base(
                "refused",
                (*reason).to_string(),
                "past a quarantine bound".into(),
            )),
            Appended::Admin { kind, .. } => Some(base(
                "admin",
                "admin_act".into(),
                format!("an admin act ({kind}), not a device event"),
            )),
        };
        Ok(line)
    }

    /// Gives the replayer every event stored since the last call, in seq order.
    fn feed_stored(&mut self) -> Result<Vec<Line>> {
        let (Some(table), Some(_)) = (self.table.clone(), self.replayer.as_ref()) else {
            return Ok(Vec::new());
        };
        let head = self.ledger.head(&table).map_or(0, |h| h.seq.0);
        let mut lines = Vec::new();
        if head <= self.fed {
            return Ok(lines);
        }
        let stored: Vec<ledger::StoredEvent> = self
            .ledger
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
    let mut out = Printer { json: args.json };
    let checker = match (&args.file, &args.nats) {
        (Some(file), _) => check_file(file, table, &mut out)?,
        (None, Some(url)) => {
            let Some(table) = table else {
                bail!("--nats needs --table: the table whose events to watch");
            };
            check_live(url, &args.bus, table, args.rounds, &mut out)?
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
struct Printer {
    json: bool,
}

impl Printer {
    fn print(&mut self, lines: &[Line]) -> Result<()> {
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
    let event = l.event.map_or_else(String::new, |e| format!(" {e}"));
    let clause = l
        .clause
        .as_deref()
        .map_or_else(String::new, |c| format!(" ({c})"));
    format!(
        "{} seq {seq}{event}: {} {}{clause}: {}",
        l.table, l.kind, l.code, l.text
    )
}

/// A file of JSON lines (each line's exact bytes are the message) or a ledger export.
fn check_file(path: &Path, table: Option<TableId>, out: &mut Printer) -> Result<Checker> {
    let f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut reader = std::io::BufReader::new(f);
    let mut checker = Checker::new(table)?;
    let (mut export, mut batch) = (false, Vec::new());
    let mut buf = Vec::new();
    let mut n = 0usize;
    loop {
        buf.clear();
        let len = std::io::Read::take(&mut reader, LINE_LEN_MAX as u64 + 1)
            .read_until(b'\n', &mut buf)
            .with_context(|| format!("reading {}", path.display()))?;
        if len == 0 {
            break;
        }
        n += 1;
        if len > LINE_LEN_MAX {
            bail!(
                "{}:{n}: line longer than {LINE_LEN_MAX} bytes",
                path.display()
            );
        }
        let line = trim_newline(&buf);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if n == 1 && is_export_header(line) {
            export = true;
            continue;
        }
        batch.push(
            file_message(line, export, n).with_context(|| format!("{}:{n}", path.display()))?,
        );
        if batch.len() == BATCH_LEN_MAX {
            out.print(&checker.messages(std::mem::take(&mut batch))?)?;
        }
    }
    out.print(&checker.messages(batch)?)?;
    let lines = checker.finish();
    out.print(&lines)?;
    Ok(checker)
}

/// Line `n` of a file: an export's event line, or an event's exact bytes.
fn file_message(line: &[u8], export: bool, n: usize) -> Result<Message> {
    if !export {
        return Ok(Message {
            bytes: line.to_vec(),
            stream_seq: Some(n as u64),
            received_at_ns: None,
        });
    }
    let e: proofs::export::ExportEvent =
        serde_json::from_slice(line).context("not an export event line")?;
    Ok(Message {
        bytes: hex::decode(&e.bytes).context("bytes are not hex")?,
        stream_seq: Some(e.stream_seq),
        received_at_ns: Some(e.received_at_ns),
    })
}

fn trim_newline(b: &[u8]) -> &[u8] {
    let b = b.strip_suffix(b"\n").unwrap_or(b);
    b.strip_suffix(b"\r").unwrap_or(b)
}

fn is_export_header(line: &[u8]) -> bool {
    serde_json::from_slice::<proofs::export::ExportHeader>(line)
        .is_ok_and(|h| h.format == proofs::export::EXPORT_FORMAT)
}

/// Watches the table's events subject from now until `rounds` rounds or Ctrl-C.
fn check_live(
    url: &str,
    bus: &BusArgs,
    table: TableId,
    rounds: Option<u64>,
    out: &mut Printer,
) -> Result<Checker> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("a runtime")?;
    let mut checker = Checker::new(Some(table.clone()))?;
    rt.block_on(watch(url, bus, &table, rounds, &mut checker, out))?;
    if rounds.is_none_or(|n| checker.rounds < n) {
        let lines = checker.finish();
        out.print(&lines)?;
    }
    Ok(checker)
}

async fn watch(
    url: &str,
    bus: &BusArgs,
    table: &TableId,
    rounds: Option<u64>,
    checker: &mut Checker,
    out: &mut Printer,
) -> Result<()> {
    use futures::StreamExt;
    let client = ::bus::connect(url, &bus.access())
        .await
        .with_context(|| format!("connecting to {url}"))?;
    let subject = subjects::events_subject(table);
    let mut sub = client
        .subscribe(subject.clone())
        .await
        .with_context(|| format!("subscribing to {subject}"))?;
    client.flush().await.context("flushing the subscription")?;
    eprintln!("conform: watching {subject} on {url}");
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    while rounds.is_none_or(|n| checker.rounds < n) {
        tokio::select! {
            msg = sub.next() => {
                let Some(msg) = msg else { bail!("the subscription to {subject} ended") };
                let now_ns = ingest::system_clock_ns();
                let lines = checker.message(msg.payload.to_vec(), None, Some(now_ns))?;
                out.print(&lines)?;
            }
            _ = &mut ctrl_c => break,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLEAN: &str =
        include_str!("../../replayer/tests/golden/clean_csp6_dealer_not_qualifying.events.jsonl");

    fn check(lines: &[&str]) -> (Checker, Vec<Line>) {
        let mut c = Checker::new(None).unwrap();
        let mut out = Vec::new();
        for l in lines {
            out.extend(c.message(l.as_bytes().to_vec(), None, None).unwrap());
        }
        out.extend(c.finish());
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

    /// DEVICES.md §2: unknown envelope fields and duplicate keys anywhere are refused; an
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
    }
}
