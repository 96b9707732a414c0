//! Where `conform`'s messages come from: a file (message lines with their subject and
//! headers, bare event lines, or a ledger export), or a live core NATS subscription to a
//! table's events and checkpoints (schemas/DEVICES.md §13).

use crate::bus::BusArgs;
use crate::conform::{Checker, Kind, Message, Printer, BATCH_LEN_MAX};
use anyhow::{bail, Context, Result};
use ledger::Provenance;
use schemas::{subjects, TableId};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

/// Longest line read from a file: an export line holds an event in hex.
const LINE_LEN_MAX: usize = proofs::export::EXPORT_LINE_LEN_MAX;
/// Most headers on one message line.
const HEADERS_MAX: usize = 32;

/// One message as a device published it: `{"subject", "headers", "bytes"}`, `bytes` the
/// body in lowercase hex (DEVICES.md §13).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageLine {
    subject: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    bytes: String,
}

/// The signature headers of a message, as ingest reads them.
pub fn provenance<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Provenance {
    match schemas::provenance::EventSignature::from_headers(get) {
        Ok(Some(s)) => Provenance::Signed(s),
        Ok(None) => Provenance::Unsigned,
        Err(why) => Provenance::Malformed(why),
    }
}

/// What a subject is: an event or a checkpoint, and the table token when it is valid.
fn subject_kind(subject: &str) -> Option<(Kind, Option<TableId>)> {
    let (kind, token) = match subjects::table_of_subject(subject) {
        Some(t) => (Kind::Event, t),
        None => (
            Kind::Checkpoint,
            subjects::table_of_checkpoint_subject(subject)?,
        ),
    };
    Some((kind, TableId::new(token).ok()))
}

/// The form of a file, known from its first line.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    Export,
    Messages,
    Events,
}

/// A file of message lines, bare event lines (each line's exact bytes are the message) or
/// a ledger export. Each line is one message; a blank line is skipped.
pub fn check_file(path: &Path, mut checker: Checker, out: &mut Printer) -> Result<Checker> {
    let f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut reader = std::io::BufReader::new(f);
    let (mut form, mut batch) = (None, Vec::new());
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
        let f = *form.get_or_insert_with(|| form_of(line, &mut checker));
        if f == Form::Export && is_export_header(line) {
            continue;
        }
        let m = file_message(line, f, n).with_context(|| format!("{}:{n}", path.display()))?;
        batch.push(m);
        if batch.len() == BATCH_LEN_MAX {
            out.print(&checker.messages(std::mem::take(&mut batch))?)?;
        }
    }
    out.print(&checker.messages(batch)?)?;
    let lines = checker.finish()?;
    out.print(&lines)?;
    Ok(checker)
}

/// The file's form from its first line; message lines turn on the signature checks.
fn form_of(line: &[u8], checker: &mut Checker) -> Form {
    if is_export_header(line) {
        return Form::Export;
    }
    if serde_json::from_slice::<MessageLine>(line).is_ok() {
        checker.carries_signatures();
        return Form::Messages;
    }
    Form::Events
}

/// Line `n` of a file in form `form`.
fn file_message(line: &[u8], form: Form, n: usize) -> Result<Message> {
    let mut m = Message::event(line.to_vec());
    m.line = Some(n);
    m.stream_seq = Some(n as u64);
    match form {
        Form::Events => {}
        Form::Export => {
            let e: proofs::export::ExportEvent =
                serde_json::from_slice(line).context("not an export event line")?;
            m.bytes = hex::decode(&e.bytes).context("bytes are not hex")?;
            m.stream_seq = Some(e.stream_seq);
            m.received_at_ns = Some(e.received_at_ns);
        }
        Form::Messages => {
            let l: MessageLine = serde_json::from_slice(line)
                .context("not a message line {\"subject\",\"headers\",\"bytes\"}")?;
            if l.headers.len() > HEADERS_MAX {
                bail!("more than {HEADERS_MAX} headers");
            }
            let Some((kind, table)) = subject_kind(&l.subject) else {
                bail!(
                    "subject {:?} is neither tables.<T>.events nor tables.<T>.checkpoints",
                    l.subject
                );
            };
            m.bytes = hex::decode(&l.bytes).context("bytes are not hex")?;
            m.kind = kind;
            m.subject_table = Some(table);
            m.provenance = provenance(|name| l.headers.get(name).map(String::as_str));
        }
    }
    Ok(m)
}

fn trim_newline(b: &[u8]) -> &[u8] {
    let b = b.strip_suffix(b"\n").unwrap_or(b);
    b.strip_suffix(b"\r").unwrap_or(b)
}

fn is_export_header(line: &[u8]) -> bool {
    serde_json::from_slice::<proofs::export::ExportHeader>(line)
        .is_ok_and(|h| h.format == proofs::export::EXPORT_FORMAT)
}

/// Watches the table's events and checkpoints from now until `rounds` rounds or Ctrl-C.
pub fn check_live(
    url: &str,
    bus: &BusArgs,
    mut checker: Checker,
    rounds: Option<u64>,
    out: &mut Printer,
) -> Result<Checker> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("a runtime")?;
    checker.carries_signatures();
    rt.block_on(watch(url, bus, rounds, &mut checker, out))?;
    if rounds.is_none_or(|n| checker.rounds < n) {
        let lines = checker.finish()?;
        out.print(&lines)?;
    }
    Ok(checker)
}

async fn watch(
    url: &str,
    bus: &BusArgs,
    rounds: Option<u64>,
    checker: &mut Checker,
    out: &mut Printer,
) -> Result<()> {
    use futures::StreamExt;
    let table = checker.table().context("live needs a table")?;
    let client = ::bus::connect(url, &bus.access())
        .await
        .with_context(|| format!("connecting to {url}"))?;
    let events = subjects::events_subject(&table);
    let mut sub = client
        .subscribe(events.clone())
        .await
        .with_context(|| format!("subscribing to {events}"))?;
    let checkpoints = subjects::checkpoints_subject(&table);
    let mut cps = client
        .subscribe(checkpoints.clone())
        .await
        .with_context(|| format!("subscribing to {checkpoints}"))?;
    client.flush().await.context("flushing the subscription")?;
    eprintln!("conform: watching {events} and {checkpoints} on {url}");
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    while rounds.is_none_or(|n| checker.rounds < n) {
        let (msg, kind) = tokio::select! {
            msg = sub.next() => (msg, Kind::Event),
            msg = cps.next() => (msg, Kind::Checkpoint),
            _ = &mut ctrl_c => break,
        };
        let Some(msg) = msg else {
            bail!("a subscription on {url} ended")
        };
        let mut m = Message::event(msg.payload.to_vec());
        m.kind = kind;
        m.received_at_ns = Some(ingest::system_clock_ns());
        m.provenance = provenance(|name| {
            msg.headers
                .as_ref()
                .and_then(|h| h.get(name))
                .map(|v| v.as_str())
        });
        let lines = checker.messages(vec![m])?;
        out.print(&lines)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conform::Line;
    use schemas::attest::{key_event_body, KeyAction, SigningKey};
    use schemas::codec::{self, encode, WireFormat};
    use schemas::provenance::{EventSignature, HeaderEnrollment};
    use schemas::{event_hash, Hash32, Seq};
    use std::path::PathBuf;

    const CLEAN: &str =
        include_str!("../../replayer/tests/golden/clean_csp6_dealer_not_qualifying.events.jsonl");

    /// The clean round's events as message lines of a device that enrolls its key at
    /// seq 2; with `bad_enrollment` the admin's signature there covers another key; line
    /// `forged` is signed by a key the chain never enrolled.
    fn message_file(dir: &Path, bad_enrollment: bool, forged: Option<usize>) -> PathBuf {
        let (admin, key) = (
            SigningKey::from_secret([1; 32]),
            SigningKey::from_secret([7; 32]),
        );
        let thief = SigningKey::from_secret([66; 32]);
        let mut events: Vec<schemas::Event> = CLEAN
            .lines()
            .map(|l| codec::decode(l.as_bytes()).expect("golden").0)
            .collect();
        let (table, device) = (events[0].table.clone(), events[0].device.clone());
        let mut enroll = events[0].clone();
        let signed_key = if bad_enrollment {
            SigningKey::from_secret([9; 32])
        } else {
            SigningKey::from_secret([7; 32])
        };
        enroll.body = key_event_body(
            &admin,
            &table,
            device.clone(),
            signed_key.public(),
            KeyAction::Enroll,
        );
        if let schemas::EventBody::DeviceEnrolled { key: k, .. } = &mut enroll.body {
            *k = key.public();
        }
        events.insert(1, enroll);
        let (mut prev, mut text) = (Hash32::ZERO, String::new());
        for (i, e) in events.iter_mut().enumerate() {
            (e.seq, e.prev) = (Seq(i as u64 + 1), prev);
            let bytes = encode(e, WireFormat::Json);
            prev = event_hash(&e.prev, &bytes);
            let signer = if forged == Some(i + 1) { &thief } else { &key };
            let mut s = EventSignature::sign(signer, &table, &device, &bytes);
            s.enrollment = Some(HeaderEnrollment::sign(
                &admin,
                &table,
                &device,
                key.public(),
            ));
            let headers: BTreeMap<&str, String> = s.to_headers().into_iter().collect();
            let line = serde_json::json!({"subject": subjects::events_subject(&table),
                "headers": headers, "bytes": hex::encode(&bytes)});
            text += &format!("{line}\n");
        }
        let path = dir.join(format!("messages-{bad_enrollment}-{forged:?}.jsonl"));
        std::fs::write(&path, text).expect("write");
        path
    }

    fn conform(path: &Path, admins: Vec<schemas::attest::PublicKey>) -> Vec<Line> {
        let mut out = Printer::new(true);
        out.kept = Some(Vec::new());
        check_file(path, Checker::new(None, admins).expect("checker"), &mut out).expect("file");
        out.kept.expect("kept")
    }

    fn find<'a>(lines: &'a [Line], code: &str) -> &'a Line {
        lines
            .iter()
            .find(|l| l.code == code)
            .unwrap_or_else(|| panic!("{code}: {lines:?}"))
    }

    #[test]
    fn a_bad_enrollment_signature_is_named_at_its_line() {
        let dir = tempfile::tempdir().expect("dir");
        let good = message_file(dir.path(), false, None);
        let lines = conform(&good, Vec::new());
        assert!(lines.iter().all(|l| l.kind != "refused"), "{lines:?}");
        assert_eq!(
            find(&lines, "not_attested").kind,
            "missing",
            "no checkpoint was sent"
        );

        let bad = message_file(dir.path(), true, None);
        let lines = conform(&bad, Vec::new());
        let e = find(&lines, "enrollment_refused");
        assert_eq!(
            (e.line, e.seq, e.event),
            (Some(2), Some(2), Some("device_enrolled"))
        );
        // The header still enrolls the device's own key: the chain is stored, not attested.
        assert!(
            !lines.iter().any(|l| l.code == "signer_unknown"),
            "{lines:?}"
        );
        assert!(find(&lines, "not_attested").text.contains("never attested"));
        // An admin that is not the House's: the enrollment and the header enroll nothing.
        let lines = conform(&good, vec![SigningKey::from_secret([3; 32]).public()]);
        assert!(find(&lines, "enrollment_refused")
            .text
            .contains("--admin-key"));
        assert_eq!(find(&lines, "signer_unknown").line, Some(1));
    }

    #[test]
    fn a_forged_event_is_named_at_its_line_and_what_follows_is_held() {
        let dir = tempfile::tempdir().expect("dir");
        let path = message_file(dir.path(), false, Some(5));
        let lines = conform(&path, vec![SigningKey::from_secret([1; 32]).public()]);
        let s = find(&lines, "signature_invalid");
        assert_eq!((s.kind, s.line, s.seq), ("refused", Some(5), Some(5)));
        assert!(lines.iter().any(|l| l.kind == "held" && l.line == Some(6)));
        let gap = find(&lines, "gap");
        let missing = lines
            .iter()
            .find(|l| l.kind == "missing" && l.code == "gap");
        assert_eq!(missing.map(|l| l.seq), Some(Some(5)), "{gap:?}");
        assert_eq!(find(&lines, "incomplete").kind, "round");
        assert!(
            lines.iter().all(|l| l.kind != "finding"),
            "held events are not judged"
        );
    }

    /// A bare event file: a line that does not decode is named by its line, blank lines
    /// are skipped and still counted.
    #[test]
    fn an_undecodable_line_is_named_by_its_line() {
        let dir = tempfile::tempdir().expect("dir");
        let mut lines: Vec<&str> = CLEAN.lines().collect();
        lines.insert(1, "");
        lines.insert(2, "{not json");
        let path = dir.path().join("events.jsonl");
        std::fs::write(&path, lines.join("\n")).expect("write");
        let out = conform(&path, Vec::new());
        let bad = find(&out, "undecodable");
        assert_eq!((bad.kind, bad.line, bad.seq), ("refused", Some(3), None));
        assert!(
            out.iter().all(|l| l.kind != "held" && l.kind != "missing"),
            "{out:?}"
        );
        assert_eq!(out.last().map(|l| l.code.as_str()), Some("clean"));
    }
}
