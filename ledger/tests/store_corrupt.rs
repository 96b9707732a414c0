//! A corrupt sled page is loud, never a silent pass or an abort (issue 40, item 2):
//! `verify_store` gives a verdict per table around it. The fault is injected by
//! `ledger::faulty::FaultyStore` around the real sled store, failing the reads of chosen
//! keys with sled's own words ("Read corrupted data at file offset").

mod common;

use common::{closed, fill, table};
use ledger::faulty::FaultyStore;
use ledger::record::table_key;
use ledger::store::Space;
use ledger::{verify_store, ArrivalVerdict, TableVerdict, VerifyProblem};
use std::collections::BTreeMap;
use std::path::Path;

/// Three tables of 30 events, closed.
fn ledger(dir: &Path) -> Vec<schemas::TableId> {
    let tables = vec![table("SC-A"), table("SC-B"), table("SC-C")];
    let l = ledger::Ledger::open(dir).expect("open");
    fill(&l, &tables, 30, 10);
    drop(l);
    closed(dir);
    tables
}

/// The verdict of `t` in a report's tables.
fn verdict<'a>(tables: &'a [TableVerdict], t: &schemas::TableId) -> &'a TableVerdict {
    tables
        .iter()
        .find(|v| match v {
            TableVerdict::Ok { head, .. } => head.table == *t,
            TableVerdict::Bad { table, .. } => table == t,
        })
        .expect("a verdict for every table")
}

#[test]
fn a_corrupt_page_of_one_tables_records_fails_that_table_and_no_other() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tables = ledger(dir.path());
    let (store, switch) = FaultyStore::open(dir.path()).expect("store");
    switch.corrupt(Some((Space::Batch, table_key(&tables[1]))));
    let (report, _) = verify_store(&store, None, &BTreeMap::new()).expect("a report, not an abort");
    assert!(!report.is_ok());
    assert!(matches!(
        verdict(&report.tables, &tables[0]),
        TableVerdict::Ok { events: 30, .. }
    ));
    assert!(matches!(
        verdict(&report.tables, &tables[2]),
        TableVerdict::Ok { events: 30, .. }
    ));
    match verdict(&report.tables, &tables[1]) {
        TableVerdict::Bad {
            problem: VerifyProblem::StoreRead(detail),
            ..
        } => assert!(detail.contains("Read corrupted data"), "{detail}"),
        other => panic!("SC-B must fail by the store's read: {other:?}"),
    }
    // Listing the tables stopped at SC-B's records: said, and the heads still list SC-C.
    assert!(
        report
            .store_errors
            .iter()
            .any(|e| e.contains("listing the tables' records stopped")),
        "{:?}",
        report.store_errors
    );
    assert!(
        report.failures().contains("1 of 3 tables"),
        "{}",
        report.failures()
    );
}

#[test]
fn a_corrupt_page_of_heads_or_the_arrival_index_is_named_and_the_chains_still_verify() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tables = ledger(dir.path());
    let (store, switch) = FaultyStore::open(dir.path()).expect("store");

    switch.corrupt(Some((Space::Arrival, Vec::new())));
    let (report, _) = verify_store(&store, None, &BTreeMap::new()).expect("report");
    assert!(!report.is_ok());
    assert!(
        matches!(&report.arrival, ArrivalVerdict::Bad { problem, .. } if problem.contains("Read corrupted data")),
        "{:?}",
        report.arrival
    );
    assert!(report
        .tables
        .iter()
        .all(|t| matches!(t, TableVerdict::Ok { .. })));

    switch.corrupt(Some((Space::Head, table_key(&tables[2]))));
    let (report, _) = verify_store(&store, None, &BTreeMap::new()).expect("report");
    assert!(!report.is_ok());
    assert!(
        report
            .store_errors
            .iter()
            .any(|e| e.contains("listing the tables' heads stopped")),
        "{:?}",
        report.store_errors
    );
    assert!(matches!(
        verdict(&report.tables, &tables[0]),
        TableVerdict::Ok { .. }
    ));
    assert!(
        matches!(
            verdict(&report.tables, &tables[2]),
            TableVerdict::Bad { .. }
        ),
        "SC-C's head does not read: {:?}",
        report.tables
    );

    switch.corrupt(None);
    let (report, _) = verify_store(&store, None, &BTreeMap::new()).expect("report");
    assert!(report.is_ok(), "{report:?}");
}

/// `Reader::store_read_failures` (what `table status --ledger` runs) names each space whose
/// pages do not read, and nothing once they do.
#[test]
fn a_full_read_of_the_index_names_a_corrupt_page_in_any_space() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tables = ledger(dir.path());
    let (store, switch) = FaultyStore::open(dir.path()).expect("store");
    let l = ledger::Ledger::with_store(Box::new(store)).expect("open");
    assert!(l.reader().store_read_failures().is_empty());
    switch.corrupt(Some((Space::Round, table_key(&tables[1]))));
    let failures = l.reader().store_read_failures();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0].contains("Round space: a read failed after a key of table SC-A")
            && failures[0].contains("Read corrupted data"),
        "{failures:?}"
    );
    switch.corrupt(Some((Space::Batch, Vec::new())));
    let failures = l.reader().store_read_failures();
    assert!(
        failures[0].contains("Batch space: a read failed at its first key"),
        "{failures:?}"
    );
}
