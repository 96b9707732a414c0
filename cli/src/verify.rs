//! `roundledger verify`: recomputes every hash of every table's chain from genesis (a
//! ledger directory) or from the export's anchors (an export file), and names the first bad
//! position per table. Exit 0 when every chain verifies, 1 when one does not.
//!
//! With `--against DIGEST_FILE` (a digest written earlier by `roundledger digest`) it also
//! proves the ledger still extends that digest: every table of the digest is present,
//! verifies from genesis to its current head, and holds the digest's hash at the digest's
//! seq (schemas/README.md §6); `--json` then prints the consistency proof. With an export,
//! it checks the export holds the digest's hash (and receipt, for ranges from seq 1) at
//! every digest seq it covers: the history handed over is the one digested. `--signer KEY`
//! also requires the digest to be signed with that public key (`digest --sign-key`), so
//! that a digest whose time or root was edited, or one the House never signed, is refused.
//!
//! With `--day D` it verifies one sealed gaming day only (`crate::day::verify_day`),
//! through the opened ledger.
//!
//! A ledger directory is read through the bare store, not `Ledger::open`, so a ledger
//! whose heads or quarantine no longer parse is still verified and reported. Beside the
//! tables it reports held events per table, the value log's recovery copies and the API's
//! journals (`<ledger>/api`), each a `Section`; against a version 4 digest it also checks
//! the journals' heads and names each rewritten table's first altered event. When the
//! ledger verifies and has a read model, the model is checked too (`readmodel check`): a
//! difference is a finding.

use crate::source::SourceArgs;
use crate::Outcome;
use anyhow::{Context, Result};
use ledger::store::SledStore;
use ledger::TableVerdict;
use proofs::digest::{Digest, ExportTableCheck, TableConsistency};
use schemas::attest::PublicKey;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    source: SourceArgs,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
    /// A digest file (`roundledger digest`): also prove the ledger still extends it, or
    /// that the export holds the history it recorded.
    #[arg(long)]
    against: Option<PathBuf>,
    /// With --against: the House's digest public key (64 hex); refuse a digest it did not
    /// sign.
    #[arg(long, requires = "against", value_name = "PUBLIC_KEY")]
    signer: Option<String>,
    /// Verify one sealed gaming day (YYYY-MM-DD) of a ledger: each table's range from its
    /// anchor, against the seal and the checkpoints in range. Reads only that day.
    #[arg(long, conflicts_with_all = ["against", "export"])]
    day: Option<String>,
    /// With --day: the House's seal public key (64 hex); refuse a seal it did not sign.
    #[arg(long, requires = "day", value_name = "PUBLIC_KEY")]
    seal_key_pub: Option<String>,
}

pub fn run(args: Args) -> Result<Outcome> {
    if let Some(day) = &args.day {
        let dir = args
            .source
            .ledger
            .as_deref()
            .context("--day needs --ledger DIR")?;
        let key = args
            .seal_key_pub
            .as_deref()
            .map(crate::keygen::public_key)
            .transpose()?;
        return crate::day::verify_day(dir, day, key, args.json);
    }
    let signer = args
        .signer
        .as_deref()
        .map(|hex| {
            PublicKey::from_hex(hex.trim()).map_err(|e| {
                anyhow::anyhow!("--signer: not a public key of 64 hex characters ({e})")
            })
        })
        .transpose()?;
    let digest = args
        .against
        .as_deref()
        .map(|file| read_digest(file, signer))
        .transpose()?;
    match (&args.source.ledger, &args.source.export, digest) {
        (Some(dir), None, Some(d)) => against(dir, &d, args.json),
        (None, Some(file), Some(d)) => export_against(file, &d, args.json),
        (Some(dir), None, None) => verify_ledger(dir, args.json),
        (None, Some(file), None) => verify_export_file(file, args.json),
        _ => anyhow::bail!("say what to verify: --ledger DIR or --export FILE"),
    }
}

/// Every chain of a ledger on its bare store, its held events and the value log's recovery
/// copies, then its read model when the rest verifies.
fn verify_ledger(dir: &std::path::Path, json: bool) -> Result<Outcome> {
    let store =
        SledStore::open(dir).with_context(|| format!("opening the ledger at {}", dir.display()))?;
    let (report, _) = ledger::verify_store(&store, None, &BTreeMap::new()).context("verifying")?;
    // A store read that fails here (a corrupt sled page) is a finding beside the tables'
    // verdicts, not an abort that hides them.
    let copies = copies_or_problem(&store);
    // Sections beside the tables' verdicts, in order; each is ok or names what fails.
    let journals = ledger::journals::read_journals(&ledger::journals::api_dir(dir), |_| None)
        .context("reading the API's journals")?;
    let sections = vec![copies_section(&copies), journals_section(&journals)];
    if json {
        print_json_report(&report, &sections, &store)?;
    } else {
        print!("{}", render_report(&report));
        for s in &sections {
            print!("{}", s.text);
        }
        if let Some(line) = unreferenced_or_failed(&store) {
            println!("{line}");
        }
    }
    // The read model is checked against a ledger that verifies; sled allows one open
    // handle, so the bare store closes first.
    drop(store);
    let (mut lines, resyncs_ok) = crate::tables::resync_lines(dir);
    let (disputes, undisputed) = crate::tables::dispute_lines(dir);
    lines.extend(disputes);
    for line in lines {
        if json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
    let ok = report.is_ok() && sections.iter().all(|s| s.ok) && resyncs_ok;
    let model_ok = !ok || crate::readmodel::verify_part(dir, json)?;
    // A disputed seq (two signed events) is a finding, though every chain verifies.
    Ok(if ok && model_ok && undisputed {
        Outcome::Clean
    } else {
        Outcome::Findings
    })
}

/// The value log against sled, or, when the store fails (a corrupt sled page), a finding
/// that says it was not checked.
fn copies_or_problem(store: &SledStore) -> ledger::copies::CopiesReport {
    ledger::copies::check_copies(store).unwrap_or_else(|e| {
        let mut c = ledger::copies::CopiesReport::default();
        c.logged.problem(format!(
            "the value log and its copies were not checked: the store failed: {e}"
        ));
        c
    })
}

/// The JSON form: the array of table verdicts on stdout. A broken arrival or quarantine
/// chain fails the exit code and is named on stderr, as is the value log's state.
fn print_json_report(
    report: &ledger::VerifyReport,
    sections: &[Section],
    store: &SledStore,
) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(&report_json(report))?);
    if !matches!(report.arrival, ledger::ArrivalVerdict::Ok { .. }) {
        eprintln!("{}", arrival_line(&report.arrival));
    }
    if !matches!(report.quarantine, ledger::QuarantineVerdict::Ok { .. }) {
        eprintln!("{}", quarantine_line(&report.quarantine));
    }
    for s in sections.iter().filter(|s| !s.ok) {
        eprint!("{}", s.text);
    }
    if !report.removed.is_ok() {
        eprint!("{}", removed_lines(&report.removed));
    }
    if let Some(line) = unreferenced_or_failed(store) {
        eprintln!("{line}");
    }
    for e in &report.store_errors {
        eprintln!("store BAD: {e}");
    }
    Ok(())
}

/// A part of the ledger's verification beside the tables: its lines and whether it holds.
struct Section {
    ok: bool,
    text: String,
}

/// The API's journals (`ledger::journals`): each one's own chain and its head.
fn journals_section(journals: &[ledger::journals::JournalState]) -> Section {
    let mut text = String::new();
    for j in journals {
        text += &match (&j.problem, j.present) {
            (Some((line, p)), _) => format!("journal {} BAD at line {line}: {p}", j.name),
            (None, false) => format!("journal {} ok: none written", j.name),
            (None, true) => format!(
                "journal {} ok: {} chained, head {}",
                j.name,
                counted(j.chain.lines, ("line", "lines")),
                j.chain.head_hash()
            ),
        };
        if j.torn_tail_bytes > 0 {
            text += &format!(
                " ({} bytes of an unfinished last line, which the server cuts at its next start)",
                j.torn_tail_bytes
            );
        }
        text.push('\n');
    }
    Section {
        ok: journals.iter().all(|j| j.problem.is_none()),
        text,
    }
}

/// The value log's recovery copies (`ledger::copies`).
fn copies_section(c: &ledger::copies::CopiesReport) -> Section {
    let counts: Vec<String> = c
        .copies
        .iter()
        .map(|(noun, n)| format!("{n} {noun}"))
        .collect();
    let mut text = if c.is_ok() {
        format!(
            "recovery copies ok: {} sled entries match their copies in the value log{}\n",
            c.entries_checked,
            if counts.is_empty() {
                String::new()
            } else {
                format!(" (copies read: {})", counts.join(", "))
            }
        )
    } else {
        String::new()
    };
    for p in &c.problems {
        text += &format!("recovery copies BAD: {p}\n");
    }
    if c.problems_more > 0 {
        text += &format!("recovery copies BAD: {} more problems\n", c.problems_more);
    }
    text += &logged_lines(&c.logged);
    if !c.all_ok() {
        for t in &c.torn {
            text += &format!("value log: bytes that are not a whole entry: {t}\n");
        }
    }
    Section {
        ok: c.all_ok(),
        text,
    }
}

/// The value log's records against the chains (`ledger::logged`).
fn logged_lines(l: &ledger::logged::LoggedReport) -> String {
    // Without counts: compaction and archiving change how many copies the log holds, not
    // what verifies.
    let mut text = if l.is_ok() {
        "value log records ok: every event the value log holds whole is in its table's chain\n"
            .to_string()
    } else {
        String::new()
    };
    for p in &l.problems {
        text += &format!("value log BAD: {p}\n");
    }
    if l.problems_more > 0 {
        text += &format!("value log BAD: {} more problems\n", l.problems_more);
    }
    text
}

/// The human form of a ledger's verification: a line per table, the arrival and quarantine
/// chains, and the verdict.
fn render_report(report: &ledger::VerifyReport) -> String {
    let mut o = String::new();
    for t in &report.tables {
        let removed = match t {
            TableVerdict::Ok { head, .. } => !report.removed.ranges(&head.table).is_empty(),
            TableVerdict::Bad { .. } => false,
        };
        o += &table_line(t, removed);
        o.push('\n');
    }
    o += &format!(
        "{}\n{}\n",
        arrival_line(&report.arrival),
        quarantine_line(&report.quarantine)
    );
    o += &held_lines(&report.held);
    o += &removed_lines(&report.removed);
    for e in &report.store_errors {
        o += &format!("store BAD: {e}\n");
    }
    let legacy = report
        .tables
        .iter()
        .filter(|t| match t {
            TableVerdict::Ok {
                receipt_in_head: false,
                head,
                ..
            } => report.removed.ranges(&head.table).is_empty(),
            _ => false,
        })
        .count();
    if legacy > 0 {
        o += &format!("{legacy} tables' heads were written before receipts, so there is no stored receipt to compare (a digest recomputes every receipt from the records); each gains one at its table's next append\n");
    }
    let verdict = if report.is_ok() {
        "every chain verifies"
    } else {
        "verification FAILED"
    };
    o += &format!("{} tables: {verdict}\n", report.tables.len());
    o
}

/// Days removed by retention: a line per day, then one per table its seal proves.
fn removed_lines(r: &ledger::tier::removed::Removed) -> String {
    let mut o = String::new();
    for d in &r.days {
        match &d.problem {
            Some(p) => o += &format!("day {} removed by retention BAD: {p}\n", d.day),
            None => {
                o += &format!(
                    "day {} removed by retention: act signed by admin key {}; its seal proves {}\n",
                    d.day,
                    d.admin,
                    counted(d.tables.len() as u64, ("table head", "table heads"))
                );
                for t in &d.tables {
                    o += &format!(
                        "  {:<12} seq {}..={} removed, head {} proven by the seal; chain checked on from it\n",
                        t.table.as_str(),
                        t.first_seq,
                        t.last_seq,
                        t.head_hash
                    );
                }
            }
        }
    }
    // A ledger that never removed a day says nothing of it.
    if r.days.is_empty() && r.journal == Default::default() {
        return o;
    }
    o += &journal_line(&r.journal);
    if !r.days.is_empty() {
        o += &format!(
            "removed days: receipts are not recomputed past them; {} append calls are taken by their stored arrival hash\n",
            r.calls_unchecked
        );
    }
    o
}

/// The removal journal (`ledger::tier::journal`) in one line.
pub fn journal_line(j: &ledger::tier::journal::JournalVerdict) -> String {
    match (&j.problem, &j.head) {
        (Some((line, p)), _) => format!("removal journal BAD at line {line}: {p}\n"),
        (None, None) => "removal journal ok: none written\n".to_string(),
        (None, Some(head)) => format!(
            "removal journal ok: {} chained, each act signed by a trusted admin key, head {head}\n",
            counted(j.lines, ("line", "lines"))
        ),
    }
}

/// Held events: a line per table holding some, and keys that do not read.
fn held_lines(h: &ledger::held_check::HeldReport) -> String {
    let mut o = String::new();
    if h.tables.is_empty() && h.bad_keys.is_empty() {
        o += "held events: none\n";
    }
    for t in &h.tables {
        o += &format!(
            "{:<12} {} held {}, seq {}..={}, {} bytes, the oldest received at {} ns",
            t.table.as_str(),
            if t.problem.is_some() { "BAD " } else { "ok  " },
            counted(t.events, ("event", "events")),
            t.first_seq,
            t.last_seq,
            t.bytes,
            t.since_ns
        );
        if let Some(p) = &t.problem {
            o += &format!("; first bad held event: seq {}: {}", p.seq, p.detail);
        }
        o.push('\n');
    }
    for k in &h.bad_keys {
        o += &format!("held events BAD: {k}\n");
    }
    o
}

/// The JSON of a ledger's verification: the array of table verdicts, each table's held
/// events beside its verdict, and tables with only held events after them.
fn report_json(report: &ledger::VerifyReport) -> Vec<serde_json::Value> {
    let held_json = |t: &ledger::held_check::HeldTable| {
        serde_json::json!({
            "events": t.events, "first_seq": t.first_seq, "last_seq": t.last_seq,
            "bytes": t.bytes, "since_ns": t.since_ns, "ok": t.problem.is_none(),
            "first_bad_seq": t.problem.as_ref().map(|p| p.seq),
            "problem": t.problem.as_ref().map(|p| p.detail.clone()),
        })
    };
    let mut held: BTreeMap<&schemas::TableId, &ledger::held_check::HeldTable> =
        report.held.tables.iter().map(|t| (&t.table, t)).collect();
    let mut lines: Vec<serde_json::Value> = Vec::with_capacity(report.tables.len());
    for v in &report.tables {
        let table = match v {
            TableVerdict::Ok { head, .. } => &head.table,
            TableVerdict::Bad { table, .. } => table,
        };
        let mut line = verdict_json(v);
        if let Some(h) = held.remove(table) {
            line["held"] = held_json(h);
            line["ok"] = serde_json::Value::Bool(line["ok"] == true && h.problem.is_none());
        }
        lines.push(line);
    }
    for (table, h) in held {
        lines.push(serde_json::json!({
            "table": table, "ok": h.problem.is_none(), "events": 0, "held": held_json(h),
        }));
    }
    lines
}

/// One table's verdict in one line.
/// `removed`: the table has records removed by retention, so no receipt is compared.
fn table_line(t: &TableVerdict, removed: bool) -> String {
    match t {
        TableVerdict::Ok {
            head,
            events,
            receipt_in_head,
            checkpoints,
            attested_seq,
            ..
        } => format!(
            "{:<12} ok   {events} events, head seq {} {}; {checkpoints} signed checkpoints verified, attested to seq {attested_seq}{}",
            head.table.as_str(),
            head.seq.0,
            head.hash,
            if *receipt_in_head {
                ""
            } else if removed {
                " (receipt not recomputed: records removed by retention)"
            } else {
                " (head written before receipts)"
            }
        ),
        TableVerdict::Bad {
            table,
            seq,
            problem,
        } => format!(
            "{:<12} BAD  first bad position: seq {seq}: {problem}",
            table.as_str()
        ),
    }
}

/// An export file checked alone: every chain in it from its anchor.
fn verify_export_file(file: &std::path::Path, json: bool) -> Result<Outcome> {
    let f = std::fs::File::open(file).with_context(|| format!("opening {}", file.display()))?;
    let s = match proofs::export::verify_export(std::io::BufReader::new(f)) {
        Ok(s) => s,
        Err(e) => {
            println!("{}: verification FAILED: {e}", file.display());
            return Ok(Outcome::Findings);
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(Outcome::Clean);
    }
    for t in &s.tables {
        println!(
            "{:<12} ok   seq {}..={} ({} events) anchor {} head {}",
            t.table.as_str(),
            t.from_seq,
            t.to_seq,
            t.events,
            t.anchor,
            t.head
        );
    }
    println!("{}: {} events verify", file.display(), s.events);
    Ok(Outcome::Clean)
}

/// The arrival chain's verdict in one line (`ledger::arrival`).
pub fn arrival_line(v: &ledger::ArrivalVerdict) -> String {
    match v {
        ledger::ArrivalVerdict::Ok {
            calls,
            legacy,
            head,
        } => {
            let mut line = format!("arrival order ok: {calls} append calls chained");
            if let Some((call, hash)) = head {
                line += &format!(", head call {call} {hash}");
            }
            if *legacy > 0 {
                line += &format!(" ({legacy} older calls written before the arrival chain)");
            }
            line
        }
        ledger::ArrivalVerdict::Bad { call_id, problem } => {
            format!("arrival order BAD at append call {call_id}: {problem}")
        }
    }
}

/// `n` and the noun for it: (one, several).
pub fn counted(n: u64, (one, several): (&str, &str)) -> String {
    format!("{n} {}", if n == 1 { one } else { several })
}

/// The quarantine chain's verdict in one line (`ledger::quarantine`).
pub fn quarantine_line(v: &ledger::QuarantineVerdict) -> String {
    match v {
        ledger::QuarantineVerdict::Ok { head, unanchored } => {
            let mut line = format!(
                "quarantine ok: {} chained",
                counted(head.entries, ("entry", "entries"))
            );
            if head.entries > 0 {
                line += &format!(", head {}", head.hash);
            }
            if *unanchored > 0 {
                line += &format!(" ({unanchored} written before the quarantine chain, with no stored head to compare; the next quarantined message anchors them)");
            }
            line
        }
        ledger::QuarantineVerdict::Bad { problem } => format!("quarantine BAD: {problem}"),
    }
}

/// `unreferenced_line`, or the store's failure in its place.
fn unreferenced_or_failed(store: &SledStore) -> Option<String> {
    unreferenced_line(store).unwrap_or_else(|e| {
        Some(format!(
            "value log: not scanned beyond sled's last commit: {e:#}"
        ))
    })
}

/// What the value log holds beyond sled's last commit, if anything: verify's store checks
/// read the store as it is, but opening the ledger (`serve`, `seed`, `audit`, and verify's
/// own re-sync check after them) appends those records again and puts back the rest
/// (`ledger::Recovery`), so an operator is told before that happens.
fn unreferenced_line(store: &SledStore) -> Result<Option<String>> {
    use ledger::store::{Space, Store, Unreferenced};
    let (mut records, mut torn) = (0u64, None);
    let mut damaged: Vec<String> = Vec::new();
    // What each kind is called: one, several.
    let nouns = |space: Space| match space {
        Space::Quarantine => ("quarantine entry", "quarantine entries"),
        Space::Pending => ("held event", "held events"),
        Space::Checkpoint => ("checkpoint", "checkpoints"),
        _ => ("other entry", "other entries"),
    };
    let mut puts: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    for item in store.unreferenced().context("scanning the value log")? {
        match item.context("scanning the value log")? {
            Unreferenced::Record(_) => records += 1,
            Unreferenced::Put { space, .. } => *puts.entry(nouns(space)).or_default() += 1,
            Unreferenced::Torn(at) => torn = Some(at),
            Unreferenced::Damaged(at) => damaged.push(at),
        }
    }
    let mut parts = Vec::new();
    if records > 0 || !puts.is_empty() {
        let mut found = counted(records, ("record", "records"));
        for (noun, n) in puts {
            found.push_str(&format!(", {}", counted(n, noun)));
        }
        parts.push(format!(
            "{found} beyond sled's last commit (a crash before a commit, or commits sled lost); opening the ledger appends them again"
        ));
    }
    if let Some(at) = torn {
        parts.push(format!(
            "bytes that are not a whole entry at {at} (a write cut short)"
        ));
    }
    for at in damaged {
        parts.push(format!(
            "a damaged entry at {at}: opening the ledger recovers the entries after it, not its own"
        ));
    }
    Ok((!parts.is_empty()).then(|| format!("value log: {}", parts.join("; "))))
}

/// Reads and checks a digest file; with `signer`, refuses one that key did not sign.
fn read_digest(file: &Path, signer: Option<PublicKey>) -> Result<Digest> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    // `from_json` already refuses a signature that does not verify.
    let digest = Digest::from_json(&bytes)
        .with_context(|| format!("{} is not a valid digest", file.display()))?;
    let signed_by = digest.signature.as_ref().map(|s| s.signer);
    if let Some(want) = signer {
        match signed_by {
            Some(by) if by == want => {}
            Some(by) => anyhow::bail!(
                "{} is signed by {by}, not by the expected signer {want}",
                file.display()
            ),
            None => anyhow::bail!(
                "{} is not signed; --signer {want} requires the House's signature",
                file.display()
            ),
        }
    }
    Ok(digest)
}

/// What a digest is, in the lines that head a check against it.
fn print_digest(digest: &Digest) {
    println!(
        "digest {} (version {}, {} tables, {} events, taken at {} ns)",
        digest.root,
        digest.version,
        digest.tables.len(),
        digest.events,
        digest.created_at_ns
    );
    if digest.version == proofs::digest::DIGEST_VERSION_NO_RECEIPTS {
        println!("version 1 has no receipts: the events are checked against it, their stream seqs and receive times are not");
    }
    if digest.quarantine.is_none() {
        println!(
            "version {} does not name the quarantine: it is not checked against it",
            digest.version
        );
    }
    if digest.journals.is_empty() {
        println!(
            "version {} does not name the API's journals: they are checked for their own chains only",
            digest.version
        );
    }
    match &digest.signature {
        Some(s) => println!("signed by {}: the signature verifies", s.signer),
        None => println!("not signed: its time and root are only as good as its holder"),
    }
}

/// `verify --ledger DIR --against FILE`.
fn against(dir: &Path, digest: &Digest, json: bool) -> Result<Outcome> {
    let store =
        SledStore::open(dir).with_context(|| format!("opening the ledger at {}", dir.display()))?;
    let c = ledger::digest::check_store_against(&store, digest, crate::when::now_ns()?)
        .context("checking the ledger against the digest")?;
    let api_dir = ledger::journals::api_dir(dir);
    let c = ledger::digest::check_journals_against(&store, c, digest, &api_dir)
        .context("checking the API's journals against the digest")?;
    if json {
        println!("{}", serde_json::to_string_pretty(&c)?);
    } else {
        print_digest(digest);
        print_consistency(&c);
    }
    Ok(if c.ok {
        Outcome::Clean
    } else {
        Outcome::Findings
    })
}

/// The consistency check's result, a line per table, then the quarantine, the arrival
/// chain and the journals, then the verdict.
fn print_consistency(c: &proofs::digest::Consistency) {
    for t in &c.tables {
        println!("{}", table_consistency_line(t));
        let altered = c.first_altered.iter().find(|a| &a.table == t.table());
        if let Some(a) = altered {
            println!("{}", first_altered_line(a));
        }
    }
    for t in &c.new_tables {
        println!("{:<12} new  not in the digest", t.as_str());
    }
    for b in &c.broken_new_tables {
        println!(
            "{:<12} BAD  not in the digest, and its chain does not verify: first bad position seq {}: {}",
            b.table.as_str(),
            b.seq,
            b.problem
        );
    }
    if let Some(q) = &c.quarantine {
        println!("{}", quarantine_consistency_line(q));
    }
    if let Some(problem) = &c.arrival_problem {
        println!(
            "{:<12} BAD  the arrival chain does not verify: {problem}",
            "arrival"
        );
    }
    for j in &c.journals {
        println!("{}", journal_consistency_line(j));
    }
    println!(
        "{}",
        if c.ok {
            "the ledger extends the digest"
        } else {
            "the ledger does NOT extend the digest"
        }
    );
}

/// One table's consistency with a digest in one line.
fn table_consistency_line(t: &TableConsistency) -> String {
    match t {
        TableConsistency::Extends { table, digest_seq, head_seq } => format!(
            "{:<12} ok   extends: digest seq {digest_seq}, now seq {head_seq}",
            table.as_str()
        ),
        TableConsistency::Missing { table, digest_seq } => format!(
            "{:<12} BAD  missing: the digest has it at seq {digest_seq}, the ledger does not have it",
            table.as_str()
        ),
        TableConsistency::Truncated { table, digest_seq, head_seq } => format!(
            "{:<12} BAD  truncated: the digest has seq {digest_seq}, the ledger ends at seq {head_seq}",
            table.as_str()
        ),
        TableConsistency::HashDiffers { table, digest_seq, digest_hash, ledger_hash } => format!(
            "{:<12} BAD  rewritten: at seq {digest_seq} the digest has {digest_hash}, the ledger {ledger_hash}",
            table.as_str()
        ),
        TableConsistency::ReceiptDiffers { table, digest_seq, digest_receipt, ledger_receipt } => format!(
            "{:<12} BAD  arrival rewritten: events 1..={digest_seq} are the digest's, their stream seqs or receive times are not (receipt: the digest has {digest_receipt}, the ledger {})",
            table.as_str(),
            ledger_receipt.map_or("none".to_string(), |r| r.to_string())
        ),
        TableConsistency::ChainBroken { table, seq, problem } => format!(
            "{:<12} BAD  chain broken: first bad position seq {seq}: {problem}",
            table.as_str()
        ),
        TableConsistency::ExtendsReceiptUnchecked { table, digest_seq, head_seq, removed } => format!(
            "{:<12} ok   extends: digest seq {digest_seq}, now seq {head_seq}; receipt not checked: seqs {}..={} (day {}) were removed by retention",
            table.as_str(), removed.first_seq, removed.last_seq, removed.day
        ),
        TableConsistency::InsideRemoved { table, digest_seq, removed } => format!(
            "{:<12} BAD  not checkable: digest seq {digest_seq} lies in seqs {}..={} of day {}, removed by retention; only the day's sealed head remains",
            table.as_str(), removed.first_seq, removed.last_seq, removed.day
        ),
    }
}

/// Where a rewritten table was first altered, from the digest's anchors.
fn first_altered_line(a: &proofs::digest::FirstAltered) -> String {
    let name = a.table.as_str();
    if a.first_seq == a.last_seq {
        format!("{name:<12} BAD  first altered event: seq {}", a.first_seq)
    } else {
        format!(
            "{name:<12} BAD  first altered event: between seq {} and seq {} (the digest's anchors hold no seq between)",
            a.first_seq, a.last_seq
        )
    }
}

/// One API journal's consistency with a version 4 digest in one line.
fn journal_consistency_line(j: &proofs::digest::JournalConsistency) -> String {
    use proofs::digest::JournalConsistency as J;
    match j {
        J::Extends { name, digest_entries, entries } => format!(
            "{name:<12} ok   extends: digest line count {digest_entries}, now {entries}"
        ),
        J::Truncated { name, digest_entries, entries } => format!(
            "{name:<12} BAD  truncated: digest line count {digest_entries}, the journal holds {entries}"
        ),
        J::HashDiffers { name, digest_entries, digest_hash, journal_hash } => format!(
            "{name:<12} BAD  rewritten: after {digest_entries} lines the digest has {digest_hash}, the journal {journal_hash}"
        ),
        J::ChainBroken { name, line, problem } => {
            format!("{name:<12} BAD  chain broken at line {line}: {problem}")
        }
    }
}

/// The quarantine's consistency with a version 3 digest in one line.
fn quarantine_consistency_line(q: &proofs::digest::QuarantineConsistency) -> String {
    use proofs::digest::QuarantineConsistency as Q;
    let name = "quarantine";
    match q {
        Q::Extends { digest_entries, entries } => format!(
            "{name:<12} ok   extends: digest entry count {digest_entries}, now {entries}"
        ),
        Q::Truncated { digest_entries, entries } => format!(
            "{name:<12} BAD  truncated: digest entry count {digest_entries}, the ledger holds {entries}"
        ),
        Q::HashDiffers { digest_entries, digest_hash, ledger_hash } => format!(
            "{name:<12} BAD  rewritten: at entry count {digest_entries} the digest has {digest_hash}, the ledger {ledger_hash}"
        ),
        Q::ChainBroken { problem } => format!("{name:<12} BAD  chain broken: {problem}"),
    }
}

/// `verify --export FILE --against DIGEST`: the export verifies on its own, and holds the
/// digest's hash (and, for ranges from seq 1, its receipt) at each digest seq it covers.
fn export_against(file: &Path, digest: &Digest, json: bool) -> Result<Outcome> {
    let f = std::fs::File::open(file).with_context(|| format!("opening {}", file.display()))?;
    let (summary, found) =
        match proofs::export::verify_export_at(std::io::BufReader::new(f), &digest.seqs()) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{}: BAD: {e}", file.display());
                return Ok(Outcome::Findings);
            }
        };
    let c = proofs::digest::check_export(digest, &found);
    if json {
        println!("{}", serde_json::to_string_pretty(&c)?);
    } else {
        print_digest(digest);
        println!("{}: {} events verify", file.display(), summary.events);
        for t in &c.tables {
            match t {
                ExportTableCheck::Agrees { table, digest_seq, receipt_checked } => println!(
                    "{:<12} ok   agrees at digest seq {digest_seq}{}",
                    table.as_str(),
                    if *receipt_checked { ", receipt too" } else { " (receipt not checked: the export starts after seq 1, or the digest has none)" }
                ),
                ExportTableCheck::HashDiffers { table, digest_seq, digest_hash, export_hash } => println!(
                    "{:<12} BAD  rewritten: at seq {digest_seq} the digest has {digest_hash}, the export {export_hash}",
                    table.as_str()
                ),
                ExportTableCheck::ReceiptDiffers { table, digest_seq, digest_receipt, export_receipt } => println!(
                    "{:<12} BAD  arrival rewritten: events 1..={digest_seq} are the digest's, their stream seqs or receive times are not (receipt: the digest has {digest_receipt}, the export {export_receipt})",
                    table.as_str()
                ),
                ExportTableCheck::NotCovered { table, digest_seq } => println!(
                    "{:<12} --   not in the export at digest seq {digest_seq}",
                    table.as_str()
                ),
            }
        }
        println!(
            "{}",
            match (c.ok, c.covered) {
                (true, n) =>
                    format!("the export agrees with the digest on the {n} tables it covers"),
                (false, 0) =>
                    "the export covers no table at its digest seq: nothing proven".to_string(),
                (false, _) =>
                    "the export does NOT hold the history the digest recorded".to_string(),
            }
        );
    }
    Ok(if c.ok {
        Outcome::Clean
    } else {
        Outcome::Findings
    })
}

fn verdict_json(t: &TableVerdict) -> serde_json::Value {
    match t {
        TableVerdict::Ok {
            head,
            events,
            receipt,
            receipt_in_head,
            checkpoints,
            attested_seq,
        } => serde_json::json!({
            "table": head.table, "ok": true, "events": events, "head_seq": head.seq, "head": head.hash,
            "receipt": receipt, "receipt_in_head": receipt_in_head,
            "checkpoints": checkpoints, "attested_seq": attested_seq,
        }),
        TableVerdict::Bad {
            table,
            seq,
            problem,
        } => serde_json::json!({
            "table": table, "ok": false, "first_bad_seq": seq, "problem": problem.to_string(),
        }),
    }
}
