//! A fresh ledger for tables the simulator plays: it trusts the simulator's admin key,
//! which enrolls the tables' device keys.

/// A ledger in a new temporary directory (kept while the `TempDir` lives).
pub fn ledger() -> (tempfile::TempDir, ledger::Ledger) {
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger::Ledger::open(dir.path().join("ledger")).unwrap();
    ledger
        .writer()
        .trust_admin_keys([simulator::admin_key().public()])
        .unwrap();
    (dir, ledger)
}
