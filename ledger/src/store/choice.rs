//! Which `Store` a ledger directory opens on: sled, unless the test switch says redb.
//!
//! The switch is the environment variable `ROUNDLEDGER_TEST_STORE` (`sled`, the default, or
//! `redb`). It exists so that the whole test suite can run on the second store
//! (`scripts/test.sh` runs the ledger's and readside's tests so). Production never sets it.
//!
//! A directory holds one kind of store. Opening it as the other kind is refused with a clear
//! error, never answered with a new empty store beside the old one.

use super::redb_store::{RedbStore, REDB_FILE};
use super::{SledStore, Store};
use crate::error::Error;
use std::path::Path;

/// The environment variable that picks the store tests open.
pub const TEST_STORE_VAR: &str = "ROUNDLEDGER_TEST_STORE";

/// A kind of `Store`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// sled 0.34 with the value log (`SledStore`): what production runs.
    Sled,
    /// redb 2.x (`RedbStore`): the second store.
    Redb,
}

/// sled's own file in a directory it opened.
const SLED_FILE: &str = "db";

impl StoreKind {
    /// The kind `ROUNDLEDGER_TEST_STORE` names; sled when it is unset or empty.
    pub fn from_env() -> Result<StoreKind, Error> {
        match std::env::var(TEST_STORE_VAR).as_deref() {
            Err(_) | Ok("") | Ok("sled") => Ok(StoreKind::Sled),
            Ok("redb") => Ok(StoreKind::Redb),
            Ok(other) => Err(Error::Store {
                op: "open",
                detail: format!("{TEST_STORE_VAR}={other:?}: expected \"sled\" or \"redb\""),
            }),
        }
    }

    /// The kind a directory already holds, if it holds one.
    pub fn found_in(dir: &Path) -> Option<StoreKind> {
        if dir.join(REDB_FILE).exists() {
            Some(StoreKind::Redb)
        } else if dir.join(SLED_FILE).exists() {
            Some(StoreKind::Sled)
        } else {
            None
        }
    }

    /// Opens (or creates) a store of this kind in `dir`; refuses a directory holding the
    /// other kind.
    pub fn open(self, dir: &Path) -> Result<Box<dyn Store>, Error> {
        if let Some(found) = StoreKind::found_in(dir).filter(|k| *k != self) {
            return Err(Error::Store {
                op: "open",
                detail: format!(
                    "{} holds a {found:?} store, asked to open it as {self:?} ({TEST_STORE_VAR})",
                    dir.display()
                ),
            });
        }
        Ok(match self {
            StoreKind::Sled => Box::new(SledStore::open(dir)?),
            StoreKind::Redb => Box::new(RedbStore::open(dir)?),
        })
    }
}

/// Opens the store `ROUNDLEDGER_TEST_STORE` names in `dir` (sled when unset).
pub fn open_store(dir: &Path) -> Result<Box<dyn Store>, Error> {
    StoreKind::from_env()?.open(dir)
}

/// Whether the tests run on sled: tests of sled or the value log themselves skip, loudly,
/// when they do not. Prints the skip, with `what` the test was for.
pub fn skip_unless_sled(what: &str) -> bool {
    match StoreKind::from_env() {
        Ok(StoreKind::Sled) => false,
        kind => {
            eprintln!("SKIPPED (sled-specific, {TEST_STORE_VAR} = {kind:?}): {what}");
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_of_one_kind_is_refused_as_the_other() {
        let dir = tempfile::tempdir().expect("tempdir");
        drop(StoreKind::Redb.open(dir.path()).expect("redb"));
        assert_eq!(StoreKind::found_in(dir.path()), Some(StoreKind::Redb));
        let err = StoreKind::Sled.open(dir.path()).err().expect("refused");
        assert!(err.to_string().contains("holds a Redb store"), "{err}");
        let other = tempfile::tempdir().expect("tempdir");
        drop(StoreKind::Sled.open(other.path()).expect("sled"));
        assert_eq!(StoreKind::found_in(other.path()), Some(StoreKind::Sled));
        let err = StoreKind::Redb.open(other.path()).err().expect("refused");
        assert!(err.to_string().contains("holds a Sled store"), "{err}");
    }
}
