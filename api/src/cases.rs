//! Cases: a surveillance officer opens a case on a round, adds notes, closes it with a
//! decision. Stored as append-only entries (author from the token, time from the server's
//! clock) in the `cases.jsonl` journal; the case views are a fold over the entries, rebuilt
//! when the server starts.
//!
//! Invariants: entries are never changed or removed; a note or a close on a closed or
//! unknown case is refused (409/404), so a closed case's record ends with its decision;
//! text lengths are capped (`CASE_TEXT_LEN_MAX`); blocking (file I/O) on `spawn_blocking`.

use crate::auth::Caller;
use crate::journal::{Journal, JournalError};
use schemas::api::{CaseAction, CaseEntry, CaseView};
use schemas::{RoundId, TableId};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

/// Longest title, note or decision.
pub const CASE_TEXT_LEN_MAX: usize = 8_000;

/// Why a case change was refused.
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    #[error("case {0} does not exist")]
    Unknown(u64),
    #[error("case {0} is closed")]
    Closed(u64),
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Journal(#[from] JournalError),
}

/// The cases and their journal.
pub struct Cases {
    journal: Journal,
    views: Mutex<BTreeMap<u64, CaseView>>,
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
                    entries: vec![e.clone()],
                },
            );
        }
        CaseAction::Note { .. } | CaseAction::Closed { .. } => {
            let v = views
                .get_mut(&e.case_id)
                .ok_or_else(|| format!("entry for unknown case {}", e.case_id))?;
            if !v.open {
                return Err(format!("entry after case {} closed", e.case_id));
            }
            if let CaseAction::Closed { decision } = &e.action {
                v.open = false;
                v.decision = Some(decision.clone());
            }
            v.entries.push(e.clone());
        }
    }
    Ok(())
}

fn check_text(what: &str, s: &str) -> Result<(), CaseError> {
    if s.trim().is_empty() || s.len() > CASE_TEXT_LEN_MAX {
        return Err(CaseError::Invalid(format!(
            "{what}: 1 to {CASE_TEXT_LEN_MAX} characters"
        )));
    }
    Ok(())
}

impl Cases {
    pub fn open(path: &Path) -> Result<Cases, JournalError> {
        let mut views = BTreeMap::new();
        let journal = Journal::open(path, |_, json| {
            let e: CaseEntry = serde_json::from_str(json).map_err(|e| e.to_string())?;
            fold(&mut views, &e)
        })?;
        Ok(Cases {
            journal,
            views: Mutex::new(views),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, CaseView>> {
        self.views.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every case, newest first, optionally only those of one round.
    pub fn list(&self, on: Option<(&TableId, RoundId)>) -> Vec<CaseView> {
        self.lock()
            .values()
            .rev()
            .filter(|c| on.is_none_or(|(t, r)| &c.table == t && c.round == r))
            .cloned()
            .collect()
    }

    pub fn get(&self, id: u64) -> Option<CaseView> {
        self.lock().get(&id).cloned()
    }

    /// Appends one entry (the views lock is held across the write so entries and views
    /// agree and case ids are unique).
    pub fn act(
        &self,
        case_id: Option<u64>,
        action: CaseAction,
        who: &Caller,
        at_ns: i64,
    ) -> Result<CaseView, CaseError> {
        match &action {
            CaseAction::Opened { title, .. } => check_text("title", title)?,
            CaseAction::Note { text } => check_text("note", text)?,
            CaseAction::Closed { decision } => check_text("decision", decision)?,
        }
        let mut views = self.lock();
        let id = match case_id {
            None => views.keys().next_back().map_or(1, |k| k + 1),
            Some(id) => {
                let v = views.get(&id).ok_or(CaseError::Unknown(id))?;
                if !v.open {
                    return Err(CaseError::Closed(id));
                }
                id
            }
        };
        let entry = self.journal.append(|_| CaseEntry {
            case_id: id,
            at_ns,
            author: who.name.clone(),
            role: who.role,
            action,
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
