//! Cases: a surveillance officer opens a case on a round, adds notes, closes it with a
//! decision. Stored as append-only entries (author from the token, time from the server's
//! clock) in the `cases.jsonl` journal; the case views are a fold over the entries, rebuilt
//! when the server starts.
//!
//! Invariants: entries are never changed or removed; a note or a close on a closed or
//! unknown case is refused (409/404), so a closed case's record ends with its decision;
//! text lengths are capped (`CASE_TEXT_LEN_MAX`), and so are a case's entries
//! (`CASE_ENTRIES_MAX`, the last place kept for the close, so a case can always be closed);
//! a list copies only its page; blocking (file I/O) on `spawn_blocking`.

use crate::auth::Caller;
use crate::journal::{Journal, JournalError};
use schemas::api::{CaseAction, CaseEntry, CaseView};
use schemas::{RoundId, TableId};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

/// Longest title, note or decision, in characters (as JSON Schema counts them): at most
/// 8,000 bytes of UTF-8.
pub const CASE_TEXT_LEN_MAX: usize = 2_000;

/// Most entries of one case (its opening, notes and close): every view of the case holds
/// them all, so without a bound one case could grow the server's memory and every answer
/// naming it without limit.
pub const CASE_ENTRIES_MAX: usize = 1_000;

/// Why a case change was refused.
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    /// No case has this id.
    #[error("case {0} does not exist")]
    Unknown(u64),
    /// The case is closed: it takes no notes, assignment or close until reopened.
    #[error("case {0} is closed")]
    Closed(u64),
    /// The case is open, so it cannot be reopened.
    #[error("case {0} is open")]
    Open(u64),
    /// The request breaks a rule, such as a text too long; the text names it.
    #[error("{0}")]
    Invalid(String),
    /// The case holds its most entries: close it and open another.
    #[error("case {id} holds {entries} entries, the most a case takes before its close; close it and open another")]
    Full {
        /// The case's id.
        id: u64,
        /// Entries the case holds, at its limit (`CASE_ENTRIES_MAX`).
        entries: usize,
    },
    /// The case journal could not be written.
    #[error(transparent)]
    Journal(#[from] JournalError),
}

/// The cases and their journal.
pub struct Cases {
    journal: Journal,
    views: Mutex<BTreeMap<u64, CaseView>>,
    /// `CASE_ENTRIES_MAX` (smaller in tests).
    entries_max: usize,
    /// The highest records stream sequence among the entries read at open.
    last_stream_seq: u64,
}

fn fold(views: &mut BTreeMap<u64, CaseView>, e: &CaseEntry) -> Result<(), String> {
    match &e.action {
        CaseAction::Opened {
            table,
            round,
            title,
        } => {
            if views.contains_key(&e.case_id) {
                return Err(format!("case {} opened twice", e.case_id));
            }
            views.insert(
                e.case_id,
                CaseView {
                    id: e.case_id,
                    table: table.clone(),
                    round: *round,
                    title: title.clone(),
                    open: true,
                    decision: None,
                    assignee: None,
                    entries: vec![e.clone()],
                },
            );
        }
        _ => {
            let v = views
                .get_mut(&e.case_id)
                .ok_or_else(|| format!("entry for unknown case {}", e.case_id))?;
            let reopening = matches!(e.action, CaseAction::Reopened { .. });
            if v.open == reopening {
                let state = if v.open { "open" } else { "closed" };
                return Err(format!("case {} is {state}", e.case_id));
            }
            match &e.action {
                CaseAction::Closed { decision } => {
                    v.open = false;
                    v.decision = Some(decision.clone());
                }
                CaseAction::Reopened { .. } => {
                    v.open = true;
                    v.decision = None;
                }
                CaseAction::Assigned { to } => v.assignee = Some(to.clone()),
                CaseAction::Opened { .. } | CaseAction::Note { .. } => {}
            }
            v.entries.push(e.clone());
        }
    }
    Ok(())
}

fn check_text(what: &str, s: &str) -> Result<(), CaseError> {
    if s.trim().is_empty() || s.chars().count() > CASE_TEXT_LEN_MAX {
        return Err(CaseError::Invalid(format!(
            "{what}: 1 to {CASE_TEXT_LEN_MAX} characters"
        )));
    }
    if let Some(c) = s.chars().find(|c| hides_text(*c)) {
        return Err(CaseError::Invalid(format!(
            "{what}: character U+{:04X} is refused (a control or bidirectional override character)",
            u32::from(c)
        )));
    }
    Ok(())
}

/// An assignee: a person's name as tokens carry it (1 to 64 characters).
fn check_name(to: &str) -> Result<(), CaseError> {
    if to.trim().is_empty() || to.chars().count() > 64 || to.chars().any(hides_text) {
        return Err(CaseError::Invalid(
            "assignee: 1 to 64 printable characters".into(),
        ));
    }
    Ok(())
}

/// A character that can hide or reorder what a reader sees: controls other than line
/// breaks and tabs, and the bidirectional embeddings, overrides and isolates.
fn hides_text(c: char) -> bool {
    (c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}')
}

/// The case id `action` acts on in `views`, or why it may not: `None` opens the next id;
/// a note, close, assignment or reopen needs a case in the right state with room.
fn admit(
    views: &BTreeMap<u64, CaseView>,
    case_id: Option<u64>,
    action: &CaseAction,
    entries_max: usize,
) -> Result<u64, CaseError> {
    let Some(id) = case_id else {
        return Ok(views.keys().next_back().map_or(1, |k| k + 1));
    };
    let v = views.get(&id).ok_or(CaseError::Unknown(id))?;
    let reopening = matches!(action, CaseAction::Reopened { .. });
    if v.open == reopening {
        return Err(if v.open {
            CaseError::Open(id)
        } else {
            CaseError::Closed(id)
        });
    }
    // The last place is the close's (a reopened case can still close).
    let room = match action {
        CaseAction::Closed { .. } => entries_max,
        _ => entries_max - 1,
    };
    if v.entries.len() >= room {
        return Err(CaseError::Full {
            id,
            entries: v.entries.len(),
        });
    }
    Ok(id)
}

/// Checks the text of an action: lengths and characters (`check_text`, `check_name`).
fn check_action(action: &CaseAction) -> Result<(), CaseError> {
    match action {
        CaseAction::Opened { title, .. } => check_text("title", title),
        CaseAction::Note { text } => check_text("note", text),
        CaseAction::Closed { decision } => check_text("decision", decision),
        CaseAction::Assigned { to } => check_name(to),
        CaseAction::Reopened { reason } => check_text("reason", reason),
    }
}

/// One case entry to record: who made it, when, and the records stream's seq if any.
pub struct CaseRecord {
    /// The case acted on; `None` opens a new one.
    pub case_id: Option<u64>,
    /// What it does.
    pub action: CaseAction,
    /// Who made it (token name).
    pub author: String,
    /// Their role then.
    pub role: schemas::api::Role,
    /// When the server took it, UTC ns.
    pub at_ns: i64,
    /// The records stream's sequence, when it came from the stream.
    pub stream_seq: Option<u64>,
}

impl Cases {
    /// Opens the case journal at `path` and rebuilds each case's view from its entries.
    pub fn open(path: &Path) -> Result<Cases, JournalError> {
        let mut views = BTreeMap::new();
        let mut last_stream_seq = 0;
        let journal = Journal::open(path, |_, json| {
            let e: CaseEntry = serde_json::from_str(json).map_err(|e| e.to_string())?;
            last_stream_seq = last_stream_seq.max(e.stream_seq.unwrap_or(0));
            fold(&mut views, &e)
        })?;
        Ok(Cases {
            journal,
            views: Mutex::new(views),
            entries_max: CASE_ENTRIES_MAX,
            last_stream_seq,
        })
    }

    /// The highest records stream sequence among the entries at open (0: none).
    pub fn last_stream_seq(&self) -> u64 {
        self.last_stream_seq
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, CaseView>> {
        self.views.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every case, newest first, optionally only those of one round.
    pub fn list(&self, on: Option<(&TableId, RoundId)>) -> Vec<CaseView> {
        self.page(
            |c| on.is_none_or(|(t, r)| &c.table == t && c.round == r),
            0,
            u64::MAX,
        )
        .1
    }

    /// How many cases `wanted` picks, and `limit` of them after skipping `offset`, newest
    /// first; only the page is copied.
    pub fn page(
        &self,
        wanted: impl Fn(&CaseView) -> bool,
        offset: u64,
        limit: u64,
    ) -> (u64, Vec<CaseView>) {
        let views = self.lock();
        let mut total = 0u64;
        let mut items = Vec::new();
        for c in views.values().rev().filter(|c| wanted(c)) {
            if total >= offset && (items.len() as u64) < limit {
                items.push(c.clone());
            }
            total += 1;
        }
        (total, items)
    }

    /// The case journal (its failures, for `/metrics` and `/ready`).
    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// The case with this id, if there is one.
    pub fn get(&self, id: u64) -> Option<CaseView> {
        self.lock().get(&id).cloned()
    }

    /// Whether `action` on `case_id` would be taken now, without recording it: the check
    /// a node makes before it publishes a record. Stream order still decides at apply.
    pub fn precheck(&self, case_id: Option<u64>, action: &CaseAction) -> Result<(), CaseError> {
        check_action(action)?;
        admit(&self.lock(), case_id, action, self.entries_max).map(|_| ())
    }

    /// Appends one entry made by `who` at `at_ns`, with no records stream.
    pub fn act(
        &self,
        case_id: Option<u64>,
        action: CaseAction,
        who: &Caller,
        at_ns: i64,
    ) -> Result<CaseView, CaseError> {
        self.record(CaseRecord {
            case_id,
            action,
            author: who.name.clone(),
            role: who.role,
            at_ns,
            stream_seq: None,
        })
    }

    /// Appends one entry after the same checks as `precheck`, judged on the views now
    /// (the views lock is held across the write so entries and views agree and case ids
    /// are unique). Applied in stream order, every node decides alike.
    pub fn record(&self, r: CaseRecord) -> Result<CaseView, CaseError> {
        check_action(&r.action)?;
        let mut views = self.lock();
        let id = admit(&views, r.case_id, &r.action, self.entries_max)?;
        let entry = self.journal.append(|_| CaseEntry {
            case_id: id,
            at_ns: r.at_ns,
            author: r.author,
            role: r.role,
            action: r.action,
            stream_seq: r.stream_seq,
        })?;
        fold(&mut views, &entry).map_err(CaseError::Invalid)?;
        views.get(&id).cloned().ok_or(CaseError::Unknown(id))
    }
}

/// Reads the cases of a ledger's API directory without a server (for `roundledger
/// evidence`): an absent journal means no cases.
pub fn read_cases(
    path: &Path,
    table: &TableId,
    round: RoundId,
) -> Result<Vec<CaseView>, JournalError> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    Ok(Cases::open(path)?.list(Some((table, round))))
}

/// Case fixtures of the crate's unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// The surveillance officer of the unit tests.
    pub(crate) fn sam() -> Caller {
        Caller {
            name: "sam.surveillance".into(),
            role: schemas::api::Role::Surveillance,
        }
    }

    /// Opens a case on `round` of table T-01 as `sam`.
    pub(crate) fn open_on(cases: &Cases, round: u64, title: &str) -> CaseView {
        let opened = CaseAction::Opened {
            table: TableId::new("T-01").unwrap(),
            round: RoundId(round),
            title: title.into(),
        };
        cases.act(None, opened, &sam(), 1).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{open_on, sam};
    use super::*;

    /// A case takes notes up to its bound less one place, which stays for its close; the
    /// refusal names the case; the bound holds after a restart (views are rebuilt).
    #[test]
    fn a_case_takes_a_bounded_number_of_entries_and_can_always_be_closed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cases.jsonl");
        let mut cases = Cases::open(&path).unwrap();
        cases.entries_max = 5;
        let sam = sam();
        open_on(&cases, 3, "short pay");
        let note = || CaseAction::Note {
            text: "looked again".into(),
        };
        for _ in 0..3 {
            cases.act(Some(1), note(), &sam, 2).unwrap();
        }
        let err = cases.act(Some(1), note(), &sam, 3).unwrap_err();
        assert!(
            matches!(err, CaseError::Full { id: 1, entries: 4 }),
            "{err}"
        );
        drop(cases);
        let mut cases = Cases::open(&path).unwrap();
        cases.entries_max = 5;
        assert!(matches!(
            cases.act(Some(1), note(), &sam, 3),
            Err(CaseError::Full { .. })
        ));
        let closed = CaseAction::Closed {
            decision: "paid correctly".into(),
        };
        let v = cases.act(Some(1), closed, &sam, 4).unwrap();
        assert_eq!((v.entries.len(), v.open), (5, false));
    }

    #[test]
    fn text_that_hides_or_reorders_what_a_reader_sees_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cases = Cases::open(&dir.path().join("cases.jsonl")).unwrap();
        open_on(&cases, 1, "short pay");
        for bad in [
            "nul\0here",
            "a\u{202E}gnp.exe",
            "isolate\u{2066}x",
            "bell\u{7}",
        ] {
            let note = CaseAction::Note { text: bad.into() };
            let e = cases.act(Some(1), note, &sam(), 2).unwrap_err();
            assert!(matches!(e, CaseError::Invalid(_)), "{bad:?}: {e}");
        }
        let fine = CaseAction::Note {
            text: "two lines\nand a tab\tare fine".into(),
        };
        cases.act(Some(1), fine, &sam(), 3).unwrap();
    }

    #[test]
    fn a_case_is_assigned_closed_reopened_and_closed_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cases.jsonl");
        let cases = Cases::open(&path).unwrap();
        open_on(&cases, 1, "short pay");
        let to = |n: &str| CaseAction::Assigned { to: n.into() };
        let v = cases.act(Some(1), to("ana"), &sam(), 2).unwrap();
        assert_eq!(v.assignee.as_deref(), Some("ana"));
        let reopen = || CaseAction::Reopened {
            reason: "patron came back".into(),
        };
        assert!(matches!(
            cases.act(Some(1), reopen(), &sam(), 3),
            Err(CaseError::Open(1))
        ));
        let close = || CaseAction::Closed {
            decision: "paid".into(),
        };
        cases.act(Some(1), close(), &sam(), 4).unwrap();
        assert!(matches!(
            cases.act(Some(1), to("bo"), &sam(), 5),
            Err(CaseError::Closed(1))
        ));
        let v = cases.act(Some(1), reopen(), &sam(), 6).unwrap();
        assert!(v.open && v.decision.is_none());
        cases.act(Some(1), close(), &sam(), 7).unwrap();
        drop(cases);
        let v = Cases::open(&path).unwrap().get(1).unwrap();
        assert_eq!(
            (v.open, v.entries.len(), v.assignee.as_deref()),
            (false, 5, Some("ana"))
        );
    }

    #[test]
    fn a_page_of_cases_is_counted_over_every_match() {
        let dir = tempfile::tempdir().unwrap();
        let cases = Cases::open(&dir.path().join("cases.jsonl")).unwrap();
        for n in 1..=7u64 {
            open_on(&cases, n % 2, &format!("case {n}"));
        }
        let (total, page) = cases.page(|c| c.round == RoundId(1), 1, 2);
        assert_eq!(total, 4, "rounds 1, 3, 5, 7");
        let ids: Vec<u64> = page.iter().map(|c| c.id).collect();
        assert_eq!(ids, [5, 3], "newest first, after skipping one");
        assert_eq!(cases.list(None).len(), 7);
    }
}
