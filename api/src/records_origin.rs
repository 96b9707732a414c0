//! Which records stream this node applied: the stream's creation time (stream info
//! `created`), kept in `<api dir>/records-stream-created` beside the journals that hold
//! the applied seq. A stream deleted and made again starts its seqs over; when it was
//! written past this node's applied seq, only its creation time tells it apart.
//!
//! Invariants: the time is written once, synced, before the first record of a stream is
//! applied; a stream of another creation time is never followed (`records::run_applier`
//! stops, `/ready` names `records`). File I/O runs on the blocking pool.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The file's name in the API directory.
pub const ORIGIN_FILE: &str = "records-stream-created";

/// The kept creation time, read once.
pub struct Origin {
    path: PathBuf,
    kept_ns: Mutex<Option<i64>>,
}

impl Origin {
    /// The origin kept in `state_dir`; read at the first `judge`.
    pub fn new(state_dir: &Path) -> Origin {
        Origin {
            path: state_dir.join(ORIGIN_FILE),
            kept_ns: Mutex::new(None),
        }
    }

    /// Whether the stream created at `created_ns` is the one this node applied. The first
    /// time, with nothing kept, it keeps `created_ns`. Blocking: the file.
    pub fn judge(&self, created_ns: i64) -> Result<(), String> {
        let mut kept = self.kept_ns.lock().unwrap_or_else(|p| p.into_inner());
        let known = match *kept {
            Some(k) => k,
            None => {
                let k = self.read_or_keep(created_ns)?;
                *kept = Some(k);
                k
            }
        };
        if known == created_ns {
            return Ok(());
        }
        Err(format!(
            "the records stream was created at {created_ns} ns but this node applied one \
             created at {known} ns: the stream was lost or made again (RUNBOOK: the \
             records stream lost)"
        ))
    }

    /// The kept time, or `created_ns` written and synced when none is kept.
    fn read_or_keep(&self, created_ns: i64) -> Result<i64, String> {
        let unreadable = |e: String| {
            format!(
                "{}: {e} (RUNBOOK: the records stream lost)",
                self.path.display()
            )
        };
        match std::fs::read_to_string(&self.path) {
            Ok(text) => text.trim().parse().map_err(|e| unreadable(format!("{e}"))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                write_synced(&self.path, &created_ns.to_string()).map_err(unreadable)?;
                tracing::info!(created_ns, "kept the records stream's creation time");
                Ok(created_ns)
            }
            Err(e) => Err(unreadable(e.to_string())),
        }
    }
}

/// Writes `text` to `path` through a synced temporary file and a rename.
fn write_synced(path: &Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp).map_err(|e| e.to_string())?;
    f.write_all(text.as_bytes()).map_err(|e| e.to_string())?;
    f.sync_all().map_err(|e| e.to_string())?;
    std::fs::rename(&tmp, path).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_of_another_creation_time_is_refused_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let o = Origin::new(dir.path());
        o.judge(100).unwrap();
        o.judge(100).unwrap();
        let err = o.judge(200).unwrap_err();
        assert!(err.contains("lost or made again"), "{err}");
        let reopened = Origin::new(dir.path());
        assert!(reopened.judge(200).is_err(), "kept on disk");
        reopened.judge(100).unwrap();
        std::fs::write(dir.path().join(ORIGIN_FILE), "not a time").unwrap();
        let err = Origin::new(dir.path()).judge(100).unwrap_err();
        assert!(err.contains(ORIGIN_FILE), "{err}");
    }
}
