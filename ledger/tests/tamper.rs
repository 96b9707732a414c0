//! Tamper evidence: a ledger is filled and closed, then its records are
//! rewritten, deleted, inserted or reordered directly with the raw sled API and the value
//! log beside it (what an attacker with file access, or a storage bug, could do). `verify`
//! must name the first bad position of the damaged table, and a digest taken before the
//! damage must catch what `verify` alone cannot (a truncation with a rewritten head, a
//! removed table).
//!
//! Layout: tables T-A, T-B, T-C with 30 events each, appended 10 per call, so each table
//! has three records, keyed by their first seq: 1, 11, 21. Damage is done to T-B.

mod common;

use common::{
    chain_from, fill, forge_head, incoming, rechain_arrival, reindex_rounds, table, Raw, T0_NS,
};
use ledger::digest::{check_store_against, digest_store};
use ledger::record::{decode_record, encode_record, seq_key, table_key};
use ledger::store::Space;
use ledger::valuelog::{self, Pointer};
use ledger::{
    verify_arrival_within, verify_store, Appended, ArrivalVerdict, Ledger, QuarantineVerdict,
    Refused, TableVerdict, VerifyProblem, VerifyReport,
};
use proofs::digest::{Digest, TableConsistency};
use schemas::{ChainHead, Hash32, Seq, TableId};
use std::collections::BTreeMap;
use std::path::Path;

const EVENTS: u64 = 30;

fn tb() -> TableId {
    table("T-B")
}

/// A filled, closed ledger; its digest (taken through the open ledger) and T-B's hashes.
fn filled() -> (tempfile::TempDir, Digest, Vec<Hash32>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let l = Ledger::open(dir.path()).expect("open");
    let hashes = fill(&l, &[table("T-A"), tb(), table("T-C")], EVENTS, 10);
    let report = l.verifier().verify().expect("verify");
    assert!(report.is_ok(), "{report:?}");
    let digest = l.verifier().digest(T0_NS).expect("digest");
    assert_eq!(digest.events, 3 * EVENTS);
    drop(l);
    let hb = hashes.into_iter().find(|(t, _)| *t == tb()).expect("T-B").1;
    (dir, digest, hb)
}

/// Verifies the directory twice: through `Ledger::open` + `verify` when the ledger still
/// opens, and through `verify_store` on the bare store; both must agree. Returns the
/// store-level report.
fn verify_dir(dir: &Path) -> VerifyReport {
    let store = common::open_store(dir);
    let (report, _) = verify_store(store.as_ref(), None, &BTreeMap::new()).expect("verify_store");
    drop(store);
    if let Ok(l) = Ledger::open(dir) {
        let through_ledger = l.verifier().verify().expect("verify");
        // The two name the same first bad positions (the ledger's problem may name its
        // in-memory head where the store-level check names the persisted one).
        assert_eq!(
            positions(&through_ledger),
            positions(&report),
            "Verifier::verify and verify_store disagree"
        );
    }
    report
}

fn positions(r: &VerifyReport) -> Vec<(TableId, Result<ChainHead, u64>)> {
    r.tables
        .iter()
        .map(|v| match v {
            TableVerdict::Ok { head, .. } => (head.table.clone(), Ok(head.clone())),
            TableVerdict::Bad { table, seq, .. } => (table.clone(), Err(*seq)),
        })
        .collect()
}

fn verdict<'a>(r: &'a VerifyReport, t: &TableId) -> &'a TableVerdict {
    r.tables
        .iter()
        .find(|v| match v {
            TableVerdict::Ok { head, .. } => &head.table == t,
            TableVerdict::Bad { table, .. } => table == t,
        })
        .unwrap_or_else(|| panic!("no verdict for {t} in {r:?}"))
}

/// T-B's first bad position and problem; the other tables must still verify.
fn first_bad(r: &VerifyReport) -> (u64, VerifyProblem) {
    for t in ["T-A", "T-C"] {
        assert!(
            matches!(
                verdict(r, &table(t)),
                TableVerdict::Ok { events: EVENTS, .. }
            ),
            "{t} is untouched: {r:?}"
        );
    }
    match verdict(r, &tb()) {
        TableVerdict::Bad { seq, problem, .. } => (*seq, problem.clone()),
        ok => panic!("T-B was tampered with and still verifies: {ok:?}"),
    }
}

/// Appends `n` more events to T-B through the ledger (stream seqs from `first_stream`), flushed.
fn grow_tb(l: &Ledger, n: u64, first_stream: u64) {
    let head = l.reader().head(&tb()).expect("head");
    let batch: Vec<_> = chain_from(&tb(), head.seq.0 + 1, head.hash, n)
        .into_iter()
        .enumerate()
        .map(|(i, (_, b))| common::incoming(&tb(), b, first_stream + i as u64))
        .collect();
    l.writer().append_batch(&batch).expect("append");
    l.flush().expect("flush");
}

fn record_key(first: u64) -> Vec<u8> {
    seq_key(&tb(), first)
}

/// Rewrites T-B's record starting at `first` through `f` on its decoded events.
fn rewrite_record(raw: &Raw, first: u64, f: impl FnOnce(&mut Vec<ledger::StoredEvent>)) {
    let v = raw.get(Space::Batch, &record_key(first)).expect("record");
    let mut events = decode_record(&v).expect("decode record");
    f(&mut events);
    raw.put(Space::Batch, &record_key(first), encode_record(&events));
}

fn tamper(dir: &Path, f: impl FnOnce(&Raw)) {
    let raw = Raw::open(dir);
    f(&raw);
    raw.close();
}

/// Every table's chain verifies.
fn every_table_verifies(r: &VerifyReport) {
    assert!(
        r.tables
            .iter()
            .all(|t| matches!(t, TableVerdict::Ok { .. })),
        "{r:?}"
    );
}

/// Every table's chain verifies, and only the arrival chain names the edit (`why`).
fn caught_by_the_arrival_chain_only(dir: &Path, why: &str) {
    let r = verify_dir(dir);
    every_table_verifies(&r);
    match &r.arrival {
        ArrivalVerdict::Bad { problem, .. } => assert!(problem.contains(why), "{problem}"),
        ok => panic!("the arrival chain did not see it: {ok:?}"),
    }
}

/// The arrival chain is bad at `call_id`, and its problem says `why`.
fn bad_at(verdict: &ArrivalVerdict, call_id: u64, why: &str) {
    match verdict {
        ArrivalVerdict::Bad {
            call_id: at,
            problem,
        } => {
            assert_eq!(*at, call_id, "{problem}");
            assert!(problem.contains(why), "{problem}");
        }
        ok => panic!("the arrival chain did not see it: {ok:?}"),
    }
}

fn against(dir: &Path, digest: &Digest) -> Vec<TableConsistency> {
    let store = common::open_store(dir);
    let c = check_store_against(store.as_ref(), digest, T0_NS + 1).expect("check");
    assert_eq!(c.ok, c.tables.iter().all(TableConsistency::is_ok));
    c.tables
}

fn tb_consistency(cs: &[TableConsistency]) -> TableConsistency {
    for c in cs {
        let t = c.table();
        if *t == tb() {
            return c.clone();
        } else {
            assert!(c.is_ok(), "untouched table {t}: {c:?}");
        }
    }
    panic!("T-B not in {cs:?}")
}

#[test]
fn untouched_ledger_verifies_and_extends_its_digest() {
    let (dir, digest, _) = filled();
    let r = verify_dir(dir.path());
    assert!(r.is_ok(), "{r:?}");
    let cs = against(dir.path(), &digest);
    assert!(cs.iter().all(TableConsistency::is_ok), "{cs:?}");
    // And after growth: append more to T-B through the ledger, still extends.
    let l = Ledger::open(dir.path()).expect("open");
    grow_tb(&l, 5, 1_000);
    let c = l
        .verifier()
        .check_against(&digest, T0_NS + 2)
        .expect("check");
    assert!(c.ok, "{c:?}");
    assert!(matches!(
        tb_consistency(&c.tables),
        TableConsistency::Extends {
            digest_seq: EVENTS,
            head_seq: 35,
            ..
        }
    ));
    assert_eq!(c.now.events, 3 * EVENTS + 5);
}

/// An export the ledger writes verifies, without sled, to the summary the ledger returned;
/// its receipts (recomputed from the export's stream seqs and receive times) are the ones
/// the digest names, so the export checks against the digest.
/// An export's bound holds whatever the range resolves to: a round range as wide as u64
/// covers the whole table and is refused like `All`, before a byte is written (the API
/// holds an export in memory and bounds it so).
#[test]
fn an_export_bound_holds_for_round_ranges_too() {
    let (dir, _, _) = filled();
    let l = Ledger::open(dir.path()).expect("open");
    let every_round = |table: Option<TableId>, max| ledger::ExportSelection {
        range: match table {
            Some(_) => ledger::ExportRange::Rounds(0..=u64::MAX),
            None => ledger::ExportRange::All,
        },
        table,
        events_max: Some(max),
    };
    let mut out = Vec::new();
    let refused = l
        .reader()
        .export(&every_round(Some(tb()), EVENTS - 1), &mut out)
        .expect_err("more events than allowed");
    assert!(
        matches!(refused, ledger::Error::ExportTooLarge { events, max } if max == EVENTS - 1 && events > max),
        "{refused}"
    );
    assert!(
        out.is_empty(),
        "nothing is written before the bound is checked"
    );
    let refused = l
        .reader()
        .export(&every_round(None, 3 * EVENTS - 1), &mut out)
        .expect_err("every table is over the bound");
    assert!(
        matches!(refused, ledger::Error::ExportTooLarge { events, .. } if events == 3 * EVENTS)
    );
    assert!(out.is_empty());
    // At the bound, the export is whole.
    let all = l
        .reader()
        .export(&every_round(None, 3 * EVENTS), &mut out)
        .expect("at the bound");
    assert_eq!(all.events, 3 * EVENTS);
    out.clear();
    let one = l
        .reader()
        .export(&every_round(Some(tb()), EVENTS), &mut out)
        .expect("one table at the bound");
    assert!(one.events > 0 && one.events <= EVENTS, "{one:?}");
}

#[test]
fn an_export_carries_the_receipts_the_digest_names() {
    let (dir, digest, _) = filled();
    let l = Ledger::open(dir.path()).expect("open");
    let mut out = Vec::new();
    let all = ledger::ExportSelection {
        table: None,
        range: ledger::ExportRange::All,
        events_max: None,
    };
    let written = l.reader().export(&all, &mut out).expect("export");
    let (read, found) =
        proofs::export::verify_export_at(&out[..], &digest.seqs()).expect("the export verifies");
    assert_eq!(read, written);
    assert_eq!(read.receipts.len(), 3);
    for h in &digest.tables {
        assert_eq!(
            read.receipts.get(&h.table).copied(),
            h.receipt,
            "{}",
            h.table
        );
        assert_eq!(found[&h.table].receipt, h.receipt, "{}", h.table);
    }
    let check = proofs::digest::check_export(&digest, &found);
    assert!(check.ok && check.covered == 3, "{check:?}");
}

#[test]
fn modified_event_bytes_are_named_at_their_seq() {
    let (dir, digest, _) = filled();
    tamper(dir.path(), |raw| {
        rewrite_record(raw, 11, |evs| {
            let e = &mut evs[4]; // seq 15
            let last = e.bytes.len() - 1;
            e.bytes[last / 2] ^= 0x01;
        })
    });
    let (seq, problem) = first_bad(&verify_dir(dir.path()));
    assert_eq!(seq, 15, "{problem}");
    assert!(
        matches!(
            problem,
            VerifyProblem::HashMismatch { .. }
                | VerifyProblem::PrevMismatch { .. }
                | VerifyProblem::Undecodable(_)
                | VerifyProblem::FieldMismatch { .. }
        ),
        "{problem}"
    );
    assert!(matches!(
        tb_consistency(&against(dir.path(), &digest)),
        TableConsistency::ChainBroken { seq: 15, .. }
    ));
}

#[test]
fn modified_event_with_recomputed_hash_breaks_the_next_link() {
    let (dir, _, _) = filled();
    tamper(dir.path(), |raw| {
        rewrite_record(raw, 11, |evs| {
            // Replace seq 15 by a different, valid event with the right prev, and store its
            // honest hash: only the next event's prev can tell.
            let prev = evs[3].hash;
            let (_, bytes) = chain_from(&tb(), 15, prev, 1).remove(0);
            let mut forged = bytes.clone();
            // A different valid event: same chain position, a JSON re-encoding of it.
            let (ev, _) = schemas::codec::decode(&bytes).expect("decode");
            if forged[0] == b'{' {
                forged = schemas::codec::to_bincode(&ev);
            } else {
                forged = schemas::codec::to_json(&ev);
            }
            evs[4].hash = schemas::event_hash(&prev, &forged);
            evs[4].bytes = forged;
        })
    });
    let (seq, problem) = first_bad(&verify_dir(dir.path()));
    assert_eq!(seq, 16, "{problem}");
    assert!(
        matches!(problem, VerifyProblem::PrevMismatch { .. }),
        "{problem}"
    );
}

#[test]
fn deleted_middle_record_is_named_at_its_first_seq() {
    let (dir, digest, _) = filled();
    tamper(dir.path(), |raw| raw.remove(Space::Batch, &record_key(11)));
    let (seq, problem) = first_bad(&verify_dir(dir.path()));
    assert_eq!(seq, 11);
    assert_eq!(
        problem,
        VerifyProblem::SeqDiscontinuity {
            expected: 11,
            found: 21
        }
    );
    assert!(!against(dir.path(), &digest).iter().all(|c| c.is_ok()));
}

#[test]
fn deleted_last_record_disagrees_with_the_head() {
    let (dir, _, _) = filled();
    tamper(dir.path(), |raw| raw.remove(Space::Batch, &record_key(21)));
    let (seq, problem) = first_bad(&verify_dir(dir.path()));
    assert_eq!(seq, 21);
    assert!(
        matches!(
            problem,
            VerifyProblem::HeadMismatch {
                records_seq: 20,
                head_seq: 30,
                ..
            }
        ),
        "{problem}"
    );
}

/// The attack `verify` alone cannot see (documented in verify.rs): the newest records are
/// removed and the head rewritten to match, the arrival chain too. The digest handed out
/// before catches it.
#[test]
fn truncation_with_a_rewritten_head_is_caught_by_the_digest() {
    let (dir, digest, hb) = filled();
    tamper(dir.path(), |raw| {
        raw.remove(Space::Batch, &record_key(21));
        forge_head(raw, &tb(), 20, hb[19]);
        reindex_rounds(raw);
    });
    caught_by_the_arrival_chain_only(dir.path(), "a record it lists is missing");
    tamper(dir.path(), rechain_arrival);
    let r = verify_dir(dir.path());
    assert!(
        r.is_ok(),
        "a consistent truncation verifies on its own: {r:?}"
    );
    assert_eq!(
        tb_consistency(&against(dir.path(), &digest)),
        TableConsistency::Truncated {
            table: tb(),
            digest_seq: 30,
            head_seq: 20
        }
    );
}

/// Rewriting the newest event with its hash and the head: again only the digest sees it.
#[test]
fn rewritten_newest_event_with_its_head_is_caught_by_the_digest() {
    let (dir, digest, hb) = filled();
    let mut new_hash = Hash32::ZERO;
    tamper(dir.path(), |raw| {
        rewrite_record(raw, 21, |evs| {
            let (ev, _) = schemas::codec::decode(&evs[9].bytes).expect("decode");
            let mut ev = ev;
            ev.occurred_at_ns += 1;
            let bytes = schemas::codec::to_bincode(&ev);
            new_hash = schemas::event_hash(&hb[28], &bytes);
            evs[9].hash = new_hash;
            evs[9].occurred_at_ns = ev.occurred_at_ns;
            evs[9].bytes = bytes;
        });
        forge_head(raw, &tb(), 30, new_hash);
        reindex_rounds(raw);
    });
    caught_by_the_arrival_chain_only(dir.path(), "differs from the recomputed");
    tamper(dir.path(), rechain_arrival);
    assert!(verify_dir(dir.path()).is_ok());
    assert_eq!(
        tb_consistency(&against(dir.path(), &digest)),
        TableConsistency::HashDiffers {
            table: tb(),
            digest_seq: 30,
            digest_hash: hb[29],
            ledger_hash: new_hash
        }
    );
}

/// The attack the receipts exist for: the events stay, but the House's record of when and
/// in what order they arrived changes (T-B's seq 15 moved after every other table's events,
/// as if its hand had come last). With the head's receipt and the arrival chain rebuilt,
/// `verify` sees nothing; the digest's receipt for T-B does.
#[test]
fn rewritten_arrival_with_every_hash_rebuilt_is_caught_by_the_digest() {
    let (dir, digest, hb) = filled();
    let moved = |raw: &Raw| {
        rewrite_record(raw, 11, |evs| {
            evs[4].stream_seq = 1_000;
            evs[4].received_at_ns += 5_000_000_000;
        })
    };
    tamper(dir.path(), moved);
    let r = verify_dir(dir.path());
    assert!(
        matches!(
            first_bad(&r),
            (
                EVENTS,
                VerifyProblem::ReceiptMismatch {
                    head_seq: EVENTS,
                    ..
                }
            )
        ),
        "{r:?}"
    );
    bad_at(&r.arrival, 1, "differs from the recomputed");

    tamper(dir.path(), |raw| forge_head(raw, &tb(), EVENTS, hb[29]));
    caught_by_the_arrival_chain_only(dir.path(), "differs from the recomputed");
    tamper(dir.path(), rechain_arrival);
    assert!(verify_dir(dir.path()).is_ok(), "every stored hash agrees");

    let digest_receipt = digest
        .tables
        .iter()
        .find(|h| h.table == tb())
        .and_then(|h| h.receipt)
        .expect("a version 2 digest names T-B's receipt");
    match tb_consistency(&against(dir.path(), &digest)) {
        TableConsistency::ReceiptDiffers {
            table,
            digest_seq: EVENTS,
            digest_receipt: d,
            ledger_receipt: Some(now),
        } => {
            assert_eq!((table, d), (tb(), digest_receipt));
            assert_ne!(now, digest_receipt);
        }
        other => panic!("the digest missed the rewritten arrival: {other:?}"),
    }
}

/// A check against an earlier digest is at least as strict as `verify`: arrival rewritten
/// after the digest (T-B's seq 35, with the head's receipt forged to match) leaves every
/// table extending the digest, but the arrival chain no longer verifies, so the check
/// fails and says why: `verify --against` never passes a ledger plain `verify` fails.
#[test]
fn a_broken_arrival_chain_fails_the_check_against_an_earlier_digest() {
    let (dir, digest, _) = filled();
    let l = Ledger::open(dir.path()).expect("open");
    grow_tb(&l, 10, 100);
    let head = l.reader().head(&tb()).expect("head");
    assert_eq!(head.seq.0, EVENTS + 10);
    drop(l);
    tamper(dir.path(), |raw| {
        rewrite_record(raw, EVENTS + 1, |evs| {
            evs[4].stream_seq = 5_000;
            evs[4].received_at_ns += 1_000_000_000;
        })
    });
    tamper(dir.path(), |raw| {
        forge_head(raw, &tb(), head.seq.0, head.hash)
    });
    caught_by_the_arrival_chain_only(dir.path(), "differs from the recomputed");

    let store = common::open_store(dir.path());
    let c = check_store_against(store.as_ref(), &digest, T0_NS + 1).expect("check");
    assert!(
        c.tables.iter().all(TableConsistency::is_ok),
        "the digest's events are untouched: {:?}",
        c.tables
    );
    assert!(!c.ok, "{c:?}");
    assert!(
        c.arrival_problem
            .as_deref()
            .is_some_and(|p| p.contains("differs from the recomputed")),
        "{c:?}"
    );
}

/// A table the digest does not list (new since) whose chain does not verify fails the
/// check against the digest, as it fails plain `verify`.
#[test]
fn a_broken_table_new_since_the_digest_fails_the_check() {
    let (dir, digest, _) = filled();
    // The digest as if taken before T-B existed.
    let older = Digest::new(
        digest.tables.iter().filter(|h| h.table != tb()).cloned(),
        T0_NS,
    )
    .with_quarantine(digest.quarantine.expect("version 3 names the quarantine"));
    tamper(dir.path(), |raw| {
        rewrite_record(raw, 11, |evs| {
            let e = &mut evs[4];
            let middle = (e.bytes.len() - 1) / 2;
            e.bytes[middle] ^= 1;
        })
    });
    let report = verify_dir(dir.path());
    assert!(
        matches!(verdict(&report, &tb()), TableVerdict::Bad { seq: 15, .. }),
        "{report:?}"
    );

    let store = common::open_store(dir.path());
    let c = check_store_against(store.as_ref(), &older, T0_NS + 1).expect("check");
    assert!(c.tables.iter().all(TableConsistency::is_ok), "{c:?}");
    assert!(!c.ok, "{c:?}");
    assert_eq!(
        c.broken_new_tables
            .iter()
            .map(|b| (b.table.clone(), b.seq))
            .collect::<Vec<_>>(),
        vec![(tb(), 15)]
    );
    assert!(!c.new_tables.contains(&tb()));
}

/// Every head as written before receipts: `seq ++ hash`, its receipt cut off.
fn heads_without_receipts(raw: &Raw) {
    for k in raw.keys(Space::Head) {
        let v = raw.get(Space::Head, &k).expect("head");
        assert_eq!(v.len(), 72, "seq, hash, receipt");
        raw.put(Space::Head, &k, v[..40].to_vec());
    }
}

/// Heads written before receipts (40 bytes) still verify, without a receipt to compare; the
/// digest recomputes every receipt from the records, so it is the same as before; the next
/// append to such a table writes its head with the receipt, computed from its records.
#[test]
fn heads_written_before_receipts_verify_and_gain_one_at_the_next_append() {
    let (dir, digest, _) = filled();
    tamper(dir.path(), heads_without_receipts);
    let r = verify_dir(dir.path());
    assert!(r.is_ok(), "{r:?}");
    assert!(r.tables.iter().all(|t| matches!(
        t,
        TableVerdict::Ok {
            receipt_in_head: false,
            ..
        }
    )));
    let store = common::open_store(dir.path());
    let again = digest_store(store.as_ref(), digest.created_at_ns).expect("digest");
    drop(store);
    common::closed(dir.path());
    assert_eq!(
        again, digest,
        "receipts come from the records, not the heads"
    );

    let l = Ledger::open(dir.path()).expect("open");
    grow_tb(&l, 2, 2_000);
    assert!(
        l.verifier()
            .check_against(&digest, T0_NS + 3)
            .expect("check")
            .ok
    );
    drop(l);
    common::closed(dir.path());
    let r = verify_dir(dir.path());
    assert!(r.is_ok(), "{r:?}");
    for t in &r.tables {
        let TableVerdict::Ok {
            head,
            receipt_in_head,
            ..
        } = t
        else {
            panic!("{t:?}")
        };
        assert_eq!(*receipt_in_head, head.table == tb(), "{t:?}");
    }
}

/// A head written before receipts whose table's records no longer read: its receipt cannot
/// be computed, and that does not stop appends (to it or to any table). Its head stays in
/// the old form; `verify` names the damage; the other tables gain their receipts.
#[test]
fn a_damaged_table_without_a_receipt_does_not_stop_appends() {
    let (dir, _, _) = filled();
    tamper(dir.path(), |raw| {
        heads_without_receipts(raw);
        raw.remove(Space::Batch, &record_key(11));
    });
    let l = Ledger::open(dir.path()).expect("open");
    grow_tb(&l, 2, 2_000);
    grow_tb(&l, 1, 3_000);
    let ta = table("T-A");
    let head = l.reader().head(&ta).expect("head");
    let batch: Vec<_> = chain_from(&ta, EVENTS + 1, head.hash, 1)
        .into_iter()
        .map(|(_, b)| common::incoming(&ta, b, 4_000))
        .collect();
    assert!(matches!(
        l.writer().append_batch(&batch).expect("append")[..],
        [ledger::Appended::Stored { .. }]
    ));
    l.flush().expect("flush");
    assert_eq!(l.reader().head(&tb()).expect("head").seq.0, EVENTS + 3);
    drop(l);
    common::closed(dir.path());
    let raw = Raw::open(dir.path());
    assert_eq!(
        raw.get(Space::Head, &table_key(&tb())).expect("head").len(),
        40
    );
    assert_eq!(
        raw.get(Space::Head, &table_key(&ta)).expect("head").len(),
        72
    );
    raw.close();
    let r = verify_dir(dir.path());
    assert!(
        matches!(
            verdict(&r, &tb()),
            TableVerdict::Bad {
                seq: 11,
                problem: VerifyProblem::SeqDiscontinuity { .. },
                ..
            }
        ),
        "{r:?}"
    );
    assert!(matches!(
        verdict(&r, &ta),
        TableVerdict::Ok {
            receipt_in_head: true,
            ..
        }
    ));
}

#[test]
fn inserted_record_inside_the_chain_is_named() {
    let (dir, _, _) = filled();
    tamper(dir.path(), |raw| {
        // A copy of seqs 15..=20 under its own key: a second record covering them.
        let v = raw.get(Space::Batch, &record_key(11)).expect("record");
        let evs = decode_record(&v).expect("decode");
        raw.put(Space::Batch, &record_key(15), encode_record(&evs[4..]));
    });
    let (seq, problem) = first_bad(&verify_dir(dir.path()));
    assert_eq!(seq, 21, "{problem}");
    assert_eq!(
        problem,
        VerifyProblem::SeqDiscontinuity {
            expected: 21,
            found: 15
        }
    );
}

/// Well-formed events 31..=35 of T-B that chain correctly onto its head at 30.
fn forged_past_the_head(hb: &[Hash32]) -> Vec<ledger::StoredEvent> {
    chain_from(&tb(), 31, hb[29], 5)
        .into_iter()
        .map(|(e, bytes)| ledger::StoredEvent {
            seq: e.seq,
            hash: schemas::event_hash(&e.prev, &bytes),
            stream_seq: 999,
            received_at_ns: T0_NS,
            occurred_at_ns: e.occurred_at_ns,
            round: e.round,
            bytes,
        })
        .collect()
}

#[test]
fn inserted_events_beyond_the_head_are_named() {
    let (dir, digest, hb) = filled();
    tamper(dir.path(), |raw| {
        // Without touching the head.
        raw.put(
            Space::Batch,
            &record_key(31),
            encode_record(&forged_past_the_head(&hb)),
        );
    });
    let (seq, problem) = first_bad(&verify_dir(dir.path()));
    assert_eq!(seq, 31, "{problem}");
    assert!(
        matches!(
            problem,
            VerifyProblem::HeadMismatch {
                records_seq: 35,
                head_seq: 30,
                ..
            }
        ),
        "{problem}"
    );
    assert!(matches!(
        tb_consistency(&against(dir.path(), &digest)),
        TableConsistency::ChainBroken { seq: 31, .. }
    ));
}

/// The same forged events with the head moved to them (and its receipt recomputed) would
/// look like ordinary growth against an earlier digest. The record is in no append call's
/// arrival entry: the arrival check fails, so a forger must also rewrite the arrival
/// chain (which a digest does not name; device-signed checkpoints cover a table's newest
/// events).
#[test]
fn events_forged_beyond_the_head_with_the_head_moved_are_caught() {
    let (dir, digest, hb) = filled();
    let forged = forged_past_the_head(&hb);
    let last = forged.last().expect("forged").hash;
    tamper(dir.path(), |raw| {
        raw.put(Space::Batch, &record_key(31), encode_record(&forged));
        forge_head(raw, &tb(), 35, last);
        reindex_rounds(raw);
    });
    let r = verify_dir(dir.path());
    every_table_verifies(&r);
    match &r.arrival {
        ArrivalVerdict::Bad { problem, .. } => assert!(
            problem.contains("records are stored, the append calls list")
                && problem.contains("added outside any append call"),
            "{problem}"
        ),
        ok => panic!("the forged record was not seen: {ok:?}"),
    }
    assert!(!r.is_ok());
    let store = common::open_store(dir.path());
    let c = check_store_against(store.as_ref(), &digest, T0_NS + 1).expect("check");
    assert!(!c.ok, "{c:?}");
}

/// Evidence windows and the API's round lookups read the round index, so `verify` checks
/// it. A round's summary shortened (its payouts and close cut
/// off), a round listed that the records do not hold, and a round's entry by start time
/// removed: each is named at the round's first event.
#[test]
fn an_edited_round_index_is_named() {
    use ledger::record::{ord_i64, seq_key};
    let (dir, digest, _) = filled();
    let l = Ledger::open(dir.path()).expect("open");
    let rounds = l.reader().rounds(&tb()).expect("rounds");
    drop(l);
    let long = rounds
        .iter()
        .find(|r| r.last_seq.0 > r.first_seq.0 + 1)
        .expect("a round of several events")
        .clone();
    let key = seq_key(&tb(), long.round.0);

    let shortened = ledger::RoundSummary {
        last_seq: Seq(long.last_seq.0 - 1),
        ..long.clone()
    };
    tamper(dir.path(), |raw| {
        raw.put(Space::Round, &key, shortened.encode())
    });
    let (seq, problem) = first_bad(&verify_dir(dir.path()));
    assert_eq!(seq, long.first_seq.0, "{problem}");
    assert!(
        matches!(&problem, VerifyProblem::RoundIndex(p) if p.contains("the index says round")),
        "{problem}"
    );
    assert!(matches!(
        tb_consistency(&against(dir.path(), &digest)),
        TableConsistency::ChainBroken { .. }
    ));

    let (dir, _, _) = filled();
    tamper(dir.path(), |raw| {
        raw.put(Space::Round, &seq_key(&tb(), 9_999), long.encode())
    });
    let (seq, problem) = first_bad(&verify_dir(dir.path()));
    assert_eq!(seq, long.first_seq.0, "{problem}");
    assert!(problem.to_string().contains("round 9999"), "{problem}");

    let (dir, _, _) = filled();
    tamper(dir.path(), |raw| {
        let mut by_time = ord_i64(long.first_occurred_at_ns).to_vec();
        by_time.extend_from_slice(&key);
        raw.remove(Space::RoundTime, &by_time)
    });
    let (seq, problem) = first_bad(&verify_dir(dir.path()));
    assert_eq!(seq, long.first_seq.0, "{problem}");
    assert!(problem.to_string().contains("by start time"), "{problem}");
}

/// A record with no event, slipped in before the first (key seq 0): it adds nothing to
/// the chain, and passed as seq 0 until review found it; now named at seq 1.
#[test]
fn an_inserted_empty_record_is_named() {
    let (dir, _, _) = filled();
    tamper(dir.path(), |raw| {
        raw.put(Space::Batch, &record_key(0), encode_record(&[]))
    });
    let (seq, problem) = first_bad(&verify_dir(dir.path()));
    assert_eq!(seq, 1);
    assert!(
        matches!(&problem, VerifyProblem::Unreadable(why) if why.contains("no event")),
        "{problem:?}"
    );
}

#[test]
fn swapped_records_are_named() {
    let (dir, _, _) = filled();
    tamper(dir.path(), |raw| {
        let a = raw.get(Space::Batch, &record_key(11)).expect("11");
        let b = raw.get(Space::Batch, &record_key(21)).expect("21");
        raw.put(Space::Batch, &record_key(11), b);
        raw.put(Space::Batch, &record_key(21), a);
    });
    let (seq, problem) = first_bad(&verify_dir(dir.path()));
    assert_eq!(seq, 11);
    assert_eq!(
        problem,
        VerifyProblem::KeyMismatch {
            key_seq: 11,
            record_seq: 21
        }
    );
}

#[test]
fn reordered_events_inside_a_record_are_named() {
    let (dir, _, _) = filled();
    tamper(dir.path(), |raw| {
        rewrite_record(raw, 11, |evs| evs.swap(1, 2))
    });
    let (seq, problem) = first_bad(&verify_dir(dir.path()));
    assert_eq!(seq, 12);
    assert_eq!(
        problem,
        VerifyProblem::SeqDiscontinuity {
            expected: 12,
            found: 13
        }
    );
}

#[test]
fn reordered_event_bodies_with_renumbered_seqs_are_named() {
    let (dir, _, _) = filled();
    tamper(dir.path(), |raw| {
        rewrite_record(raw, 11, |evs| {
            // Swap what is stored at 12 and 13 but keep the record's seq column in order.
            let (a, b) = (evs[1].clone(), evs[2].clone());
            evs[1] = ledger::StoredEvent { seq: Seq(12), ..b };
            evs[2] = ledger::StoredEvent { seq: Seq(13), ..a };
        })
    });
    let (seq, problem) = first_bad(&verify_dir(dir.path()));
    assert_eq!(seq, 12);
    assert!(
        matches!(problem, VerifyProblem::WrongEvent { seq: 13, .. }),
        "{problem}"
    );
}

#[test]
fn removed_table_is_missing_against_the_digest() {
    let (dir, digest, _) = filled();
    tamper(dir.path(), |raw| {
        for first in [1, 11, 21] {
            raw.remove(Space::Batch, &record_key(first));
        }
        raw.remove(Space::Head, &table_key(&tb()));
    });
    caught_by_the_arrival_chain_only(dir.path(), "a record it lists is missing");
    tamper(dir.path(), rechain_arrival);
    let r = verify_dir(dir.path());
    assert!(r.is_ok(), "the remaining tables verify: {r:?}");
    assert_eq!(r.tables.len(), 2);
    assert_eq!(
        tb_consistency(&against(dir.path(), &digest)),
        TableConsistency::Missing {
            table: tb(),
            digest_seq: 30
        }
    );
}

#[test]
fn unreadable_head_is_reported_even_though_the_ledger_no_longer_opens() {
    let (dir, _, _) = filled();
    tamper(dir.path(), |raw| {
        raw.put(Space::Head, &table_key(&tb()), b"garbage".to_vec())
    });
    assert!(
        Ledger::open(dir.path()).is_err(),
        "an unreadable head stops the ledger from opening"
    );
    let (seq, problem) = first_bad(&verify_dir(dir.path()));
    assert_eq!(seq, 1, "{problem}");
    assert!(
        matches!(problem, VerifyProblem::HeadMismatch { head_seq: 0, .. }),
        "{problem}"
    );
}

/// Every single-bit flip at every byte of a stored record, checked with `verify_store` on
/// the raw tree. Every flip in what the table's chain covers (seq, device time, round,
/// hash, the event bytes, the record framing) is detected at or before the damaged event's
/// seq. Flips in the two ingest-side fields it does not cover (stream seq, receive time)
/// are caught twice (`ledger::arrival`): the table's receipt no longer matches its head's
/// (named at the head, the receipt covering every seq), and the arrival chain names the call.
#[test]
fn every_byte_flip_in_a_record_is_detected() {
    let (dir, _, _) = filled();
    let raw = Raw::open(dir.path());
    let key = record_key(11);
    let original = raw.get(Space::Batch, &key).expect("record");
    let events = decode_record(&original).expect("decode");
    // Byte ranges of each event inside the record: header is 5 bytes, each event is
    // 8 seq, 8 stream seq, 8 received, 8 occurred, 1 flag, 8 round, 32 hash, 4 len, bytes.
    let mut spans = Vec::new();
    let mut at = 5usize;
    for e in &events {
        spans.push((at, e.seq.0));
        at += 77 + e.bytes.len();
    }
    assert_eq!(at, original.len());
    let owner = |i: usize| -> (u64, usize) {
        let (start, seq) = spans
            .iter()
            .rev()
            .find(|(s, _)| *s <= i)
            .copied()
            .unwrap_or((0, 11));
        (seq, i.saturating_sub(start))
    };
    let (mut detected, mut by_arrival) = (0u32, 0u32);
    for i in 0..original.len() {
        for bit in [0x01u8, 0x80] {
            let mut v = original.clone();
            v[i] ^= bit;
            raw.put(Space::Batch, &key, v);
            let (r, _) = verify_store(&raw, None, &BTreeMap::new()).expect("verify");
            let (seq, off) = if i < 5 { (11, 0) } else { owner(i) };
            let arrival_field = i >= 5 && (8..24).contains(&off);
            match verdict(&r, &tb()) {
                TableVerdict::Bad {
                    seq: bad,
                    problem: VerifyProblem::ReceiptMismatch { head_seq, .. },
                    ..
                } => {
                    assert!(
                        arrival_field,
                        "byte {i} bit {bit:#x} (event {seq}, offset {off}): only a stream seq or receive time moves the receipt alone"
                    );
                    assert_eq!((*bad, *head_seq), (EVENTS, EVENTS), "named at the head");
                    match &r.arrival {
                        ArrivalVerdict::Bad { problem, .. } => assert!(
                            problem.contains("differs from the recomputed"),
                            "byte {i}: {problem}"
                        ),
                        ok => panic!("byte {i} bit {bit:#x}: the arrival chain missed it: {ok:?}"),
                    }
                    by_arrival += 1;
                }
                TableVerdict::Bad { seq: bad, .. } => {
                    assert!(!arrival_field, "byte {i}: {r:?}");
                    assert!(
                        (11..=seq).contains(bad),
                        "byte {i} bit {bit:#x} (event {seq}): first bad {bad}"
                    );
                    detected += 1;
                }
                TableVerdict::Ok { .. } => {
                    panic!("byte {i} bit {bit:#x} (event {seq}, offset {off}) went undetected")
                }
            }
        }
    }
    raw.put(Space::Batch, &key, original);
    eprintln!(
        "record of {} bytes: {detected} flips detected by the table's chain, {by_arrival} in the arrival fields by its receipt and the arrival chain",
        events.iter().map(|e| e.bytes.len()).sum::<usize>()
    );
    assert_eq!(by_arrival, 10 * 16 * 2);
    assert!(detected > 1000);
}

/// The arrival chain's own damage: an index entry removed, the stored head removed, and
/// entries from before the chain existed (no hash) ahead of chained ones, which verify.
#[test]
fn arrival_chain_names_a_removed_entry_and_accepts_entries_older_than_itself() {
    use ledger::arrival::{decode_entry, HEAD_KEY};
    let (dir, _, _) = filled();
    let ok = verify_dir(dir.path());
    let ArrivalVerdict::Ok {
        calls,
        legacy: 0,
        head: Some((last, _)),
    } = ok.arrival
    else {
        panic!("{:?}", ok.arrival)
    };
    assert_eq!((calls, last), (3, 2), "three append calls, numbered 0 to 2");

    let keys = Raw::open(dir.path()).keys(Space::Arrival);
    let entry = |raw: &Raw, k: &[u8]| raw.get(Space::Arrival, k).expect("entry");
    let (second, head) = {
        let raw = Raw::open(dir.path());
        let second = entry(&raw, &keys[1]);
        let head = raw.get(Space::Meta, HEAD_KEY).expect("head");
        raw.close();
        (second, head)
    };
    // Entries in call order never wait, however small the bound.
    let within = |bound| {
        let store = common::open_store(dir.path());
        verify_arrival_within(store.as_ref(), bound).expect("verify arrival")
    };
    assert!(matches!(within(0), ArrivalVerdict::Ok { calls: 3, .. }));

    tamper(dir.path(), |raw| raw.remove(Space::Arrival, &keys[1]));
    bad_at(
        &verify_dir(dir.path()).arrival,
        1,
        "no arrival entry for call 1, though call 2 has one",
    );
    // Past the bound on entries waiting for their turn (`ARRIVAL_WAITING_MAX` in `verify`),
    // the missing call is named at once instead of at the end of the scan.
    bad_at(
        &within(0),
        1,
        "no arrival entry for call 1 before 1 later calls' entries",
    );
    assert!(matches!(within(1), ArrivalVerdict::Bad { call_id: 1, .. }));
    tamper(dir.path(), |raw| {
        raw.put(Space::Arrival, &keys[1], second.clone());
        raw.remove(Space::Meta, HEAD_KEY);
    });
    bad_at(
        &verify_dir(dir.path()).arrival,
        2,
        "no arrival head is stored",
    );

    // The first call's entry as a ledger written before the chain left it: no hash. The
    // chain then starts at call 1, from zeros, so call 1's stored hash (chained on call
    // 0's) no longer follows: a hash stripped from an entry is seen at the next call.
    tamper(dir.path(), |raw| {
        raw.put(Space::Meta, HEAD_KEY, head.clone());
        let first = entry(raw, &keys[0]);
        raw.put(Space::Arrival, &keys[0], first[..first.len() - 32].to_vec());
        assert!(decode_entry(&entry(raw, &keys[0])).unwrap().hash.is_none());
    });
    bad_at(
        &verify_dir(dir.path()).arrival,
        1,
        "differs from the recomputed",
    );
    // A hashless entry after a chained one is refused.
    tamper(dir.path(), |raw| {
        let third = entry(raw, &keys[2]);
        raw.put(Space::Arrival, &keys[2], third[..third.len() - 32].to_vec());
    });
    let r = verify_dir(dir.path());
    assert!(!r.is_ok());
    // A ledger from before the chain: no entry has a hash and no head is stored.
    tamper(dir.path(), |raw| {
        let second = entry(raw, &keys[1]);
        raw.put(
            Space::Arrival,
            &keys[1],
            second[..second.len() - 32].to_vec(),
        );
        raw.remove(Space::Meta, HEAD_KEY);
    });
    let r = verify_dir(dir.path());
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(
        r.arrival,
        ArrivalVerdict::Ok {
            calls: 0,
            legacy: 3,
            head: None
        }
    );
}

/// Verifying the untouched ledger through `Verifier::verify` checks the in-memory heads too.
#[test]
fn heads_agree_after_reopen() {
    let (dir, _, hb) = filled();
    let l = Ledger::open(dir.path()).expect("open");
    assert_eq!(
        l.reader().head(&tb()),
        Some(ChainHead {
            table: tb(),
            seq: Seq(30),
            hash: hb[29]
        })
    );
    let d = digest_store_of(&l);
    assert_eq!(d.tables.len(), 3);
}

fn digest_store_of(l: &Ledger) -> Digest {
    l.verifier().digest(T0_NS).expect("digest")
}

#[test]
fn digest_is_refused_for_a_damaged_ledger() {
    let (dir, _, _) = filled();
    tamper(dir.path(), |raw| raw.remove(Space::Batch, &record_key(11)));
    let store = common::open_store(dir.path());
    let e = digest_store(store.as_ref(), T0_NS).expect_err("refused");
    assert!(e.to_string().contains("does not verify"), "{e}");
}

/// Where T-B's record `first` lies in the value log.
fn record_pointer(dir: &Path, first: u64) -> Pointer {
    let raw = Raw::open(dir);
    let stored = raw
        .sled()
        .tree
        .get(Raw::key(Space::Batch, &record_key(first)))
        .expect("get")
        .expect("record");
    raw.close();
    Pointer::decode(&stored).expect("records are in the value log")
}

/// The value log cut short inside T-B's last record (a lost tail, a careless copy): the
/// record is named, at its first seq; the tables whose records survive still verify.
#[test]
fn a_value_log_cut_short_is_named_at_the_first_record_it_lost() {
    if common::skip_unless_sled("a value log cut short") {
        return;
    }
    let (dir, digest, _) = filled();
    let p = record_pointer(dir.path(), 21);
    let seg = valuelog::segment_path(dir.path(), p.segment);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&seg)
        .and_then(|f| f.set_len(p.offset + 10))
        .expect("truncate");
    let r = verify_dir(dir.path());
    assert!(matches!(
        verdict(&r, &table("T-A")),
        TableVerdict::Ok { events: EVENTS, .. }
    ));
    // Appended 10 per call, every table in each call: T-C's last record comes after
    // T-B's in the log, so it is gone too.
    for t in [tb(), table("T-C")] {
        match verdict(&r, &t) {
            TableVerdict::Bad {
                seq: 21,
                problem: VerifyProblem::Unreadable(why),
                ..
            } => assert!(why.contains("runs past the segment's end"), "{t}: {why}"),
            other => panic!("{t}: {other:?}"),
        }
    }
    assert!(!against(dir.path(), &digest).iter().all(|c| c.is_ok()));
}

/// A pointer moved to another record's entry (same table, same length would be needed to
/// pass the header check): the entry's header and checksum name the mismatch.
#[test]
fn a_pointer_to_another_entry_is_named() {
    if common::skip_unless_sled("a forged value-log pointer") {
        return;
    }
    let (dir, _, _) = filled();
    let p11 = record_pointer(dir.path(), 11);
    let p21 = record_pointer(dir.path(), 21);
    tamper(dir.path(), |raw| {
        let forged = Pointer {
            offset: p21.offset,
            segment: p21.segment,
            ..p11
        };
        raw.sled()
            .tree
            .insert(Raw::key(Space::Batch, &record_key(11)), forged.encode())
            .expect("insert");
    });
    let (seq, problem) = first_bad(&verify_dir(dir.path()));
    assert_eq!(seq, 11);
    match problem {
        VerifyProblem::Unreadable(why) => assert!(why.contains("is not the pointer's"), "{why}"),
        other => panic!("{other:?}"),
    }
}

/// Ledgers written before the value log kept their records inline in sled. Such a record
/// (here T-B's record 11, put back inline) still reads, verifies and extends the digest.
#[test]
fn a_record_stored_inline_in_sled_still_reads() {
    if common::skip_unless_sled("a record inline in sled") {
        return;
    }
    let (dir, digest, hb) = filled();
    tamper(dir.path(), |raw| {
        let record = raw.get(Space::Batch, &record_key(11)).expect("record");
        assert_eq!(record[0], ledger::record::RECORD_VERSION);
        raw.sled()
            .tree
            .insert(Raw::key(Space::Batch, &record_key(11)), record)
            .expect("insert");
    });
    let r = verify_dir(dir.path());
    assert!(r.is_ok(), "{r:?}");
    assert!(against(dir.path(), &digest).iter().all(|c| c.is_ok()));
    let l = Ledger::open(dir.path()).expect("open");
    let e = l
        .reader()
        .stored_event(&tb(), 15)
        .expect("read")
        .expect("seq 15");
    assert_eq!(e.hash, hb[14]);
}

/// The filled ledger with three quarantined messages (undecodable bytes on T-B's subject),
/// ids 0..=2, written by two calls; the quarantine chain verifies over all three.
fn with_quarantine() -> tempfile::TempDir {
    let (dir, _, _) = filled();
    let l = Ledger::open(dir.path()).expect("open");
    let junk = |n: u64| incoming(&tb(), format!("junk {n}").into_bytes(), 1_000 + n);
    for batch in [vec![junk(0), junk(1)], vec![junk(2)]] {
        for o in l.writer().append_batch(&batch).expect("append") {
            assert!(
                matches!(o, Appended::Refused(Refused::Quarantined { .. })),
                "{o:?}"
            );
        }
    }
    l.flush().expect("flush");
    assert_eq!(
        quarantine_ok(&l.verifier().verify().expect("verify")),
        (3, 0)
    );
    drop(l);
    dir
}

/// (entries, unanchored) of a quarantine that verifies.
fn quarantine_ok(r: &VerifyReport) -> (u64, u64) {
    every_table_verifies(r);
    match &r.quarantine {
        QuarantineVerdict::Ok { head, unanchored } => (head.entries, *unanchored),
        bad => panic!("{bad:?}"),
    }
}

/// The quarantine is named, and only it: every table's chain still verifies, and no
/// digest is given of the ledger.
fn quarantine_bad(dir: &Path, why: &str) {
    let r = verify_dir(dir);
    every_table_verifies(&r);
    match &r.quarantine {
        QuarantineVerdict::Bad { problem } => assert!(problem.contains(why), "{problem}"),
        ok => panic!("the quarantine was tampered with and still verifies: {ok:?}"),
    }
    assert!(!r.is_ok());
    let store = common::open_store(dir);
    match digest_store(store.as_ref(), T0_NS) {
        Err(ledger::digest::DigestRefused::DoesNotVerify { report }) => {
            assert_eq!(report.failures(), "the quarantine chain")
        }
        other => panic!("{other:?}"),
    }
}

fn quarantine_key(id: u64) -> [u8; 8] {
    id.to_be_bytes()
}

/// Puts a copy of the quarantine entry at id `from` at id `to`, as stored (sled only).
fn copy_quarantine_entry(raw: &Raw, from: u64, to: u64) {
    let v = raw
        .get(Space::Quarantine, &quarantine_key(from))
        .unwrap_or_else(|| panic!("entry {from}"));
    raw.put(Space::Quarantine, &quarantine_key(to), v);
}

/// An entry edited in sled (one byte of the kept message) is named by `verify`, and the
/// ledger opened afterwards does not chain over it: quarantining another message extends
/// the committed head, so the edit stays visible.
#[test]
fn an_edited_quarantine_entry_is_named_and_not_chained_over() {
    let dir = with_quarantine();
    tamper(dir.path(), |raw| {
        let mut v = raw
            .get(Space::Quarantine, &quarantine_key(1))
            .expect("entry 1");
        *v.last_mut().expect("bytes") ^= 1;
        raw.put(Space::Quarantine, &quarantine_key(1), v);
    });
    quarantine_bad(dir.path(), "edited, removed or added outside the ledger");
    let l = Ledger::open(dir.path()).expect("open");
    let more = incoming(&tb(), b"junk 3".to_vec(), 1_003);
    assert!(matches!(
        l.writer().append_batch(&[more]).expect("append")[0],
        Appended::Refused(Refused::Quarantined { id: 3, .. })
    ));
    l.flush().expect("flush");
    drop(l);
    quarantine_bad(dir.path(), "the 4 entries stored chain to");
}

/// An entry removed from sled is named.
#[test]
fn a_removed_quarantine_entry_is_named() {
    let dir = with_quarantine();
    tamper(dir.path(), |raw| {
        raw.remove(Space::Quarantine, &quarantine_key(0))
    });
    quarantine_bad(dir.path(), "says 3 entries");
}

/// An entry added to sled beyond the head is named, with where the additions start; one
/// slipped in between two entries is named as a change within the head's entries.
#[test]
fn an_added_quarantine_entry_is_named() {
    let dir = with_quarantine();
    tamper(dir.path(), |raw| {
        copy_quarantine_entry(raw, 2, 7);
    });
    quarantine_bad(dir.path(), "1 more from id 7 stored beyond it");

    let dir = with_quarantine();
    tamper(dir.path(), |raw| {
        // Ids 0..=2 are taken: move entry 2 to id 3 and put a copy of entry 0 at id 2.
        copy_quarantine_entry(raw, 2, 3);
        copy_quarantine_entry(raw, 0, 2);
    });
    quarantine_bad(dir.path(), "the 4 entries stored chain to");
}

/// An entry put at the last possible id leaves no next id: opening the ledger refuses,
/// naming it, and `verify` names the entry.
#[test]
fn a_quarantine_entry_at_the_last_id_is_refused_at_open() {
    let dir = with_quarantine();
    tamper(dir.path(), |raw| {
        copy_quarantine_entry(raw, 2, u64::MAX);
    });
    let refused = Ledger::open(dir.path()).err().expect("open refuses");
    assert!(
        refused.to_string().contains("last possible id"),
        "{refused}"
    );
    quarantine_bad(dir.path(), "more from id 18446744073709551615");
}

/// Entries written before the quarantine chain existed have no head: they verify as
/// unanchored, and the next quarantined message writes a head that chains over all of them.
#[test]
fn quarantine_entries_written_before_the_chain_are_anchored_by_the_next() {
    let dir = with_quarantine();
    tamper(dir.path(), |raw| {
        raw.remove(Space::Meta, ledger::quarantine::HEAD_KEY)
    });
    assert_eq!(quarantine_ok(&verify_dir(dir.path())), (3, 3));
    let l = Ledger::open(dir.path()).expect("open");
    let more = incoming(&tb(), b"junk 3".to_vec(), 1_003);
    l.writer().append_batch(&[more]).expect("append");
    l.flush().expect("flush");
    drop(l);
    assert_eq!(quarantine_ok(&verify_dir(dir.path())), (4, 0));
}

/// Rewrites the quarantine head over the entries stored now, as someone covering an edit
/// would.
fn rechain_quarantine(raw: &Raw) {
    let mut head = ledger::QuarantineHead::EMPTY;
    for k in raw.keys(Space::Quarantine) {
        let v = raw.get(Space::Quarantine, &k).expect("entry");
        head = head.next(u64::from_be_bytes(k.try_into().expect("id")), &v);
    }
    let mut v = head.entries.to_be_bytes().to_vec();
    v.extend_from_slice(&head.hash.0);
    raw.put(Space::Meta, ledger::quarantine::HEAD_KEY, v);
}

/// An edit of the quarantine with its head rewritten to match passes `verify`; a digest
/// taken before (version 3: it names the quarantine's head) names it: `hash_differs` for an
/// entry edited, `truncated` for the newest removed. Entries added since extend it.
#[test]
fn a_quarantine_rewritten_with_its_head_is_caught_by_the_digest() {
    use proofs::digest::QuarantineConsistency;
    let dir = with_quarantine();
    let digest = {
        let store = common::open_store(dir.path());
        digest_store(store.as_ref(), T0_NS).expect("digest")
    };
    assert_eq!(digest.version, 3);
    let q = digest.quarantine.expect("named");
    assert_eq!(q.entries, 3);
    let quarantine_against = |dir: &Path| {
        let store = common::open_store(dir);
        let c = check_store_against(store.as_ref(), &digest, T0_NS + 1).expect("check");
        assert!(c.tables.iter().all(TableConsistency::is_ok), "{c:?}");
        assert_eq!(c.ok, c.quarantine.as_ref().is_some_and(|q| q.is_ok()));
        c.quarantine.expect("the digest names the quarantine")
    };

    // Grown since: extends.
    let l = Ledger::open(dir.path()).expect("open");
    l.writer()
        .append_batch(&[incoming(&tb(), b"junk 3".to_vec(), 1_003)])
        .expect("append");
    l.flush().expect("flush");
    drop(l);
    assert_eq!(
        quarantine_against(dir.path()),
        QuarantineConsistency::Extends {
            digest_entries: 3,
            entries: 4
        }
    );

    // Entry 1 edited, the head rewritten: verify passes, the digest names it.
    tamper(dir.path(), |raw| {
        let mut v = raw
            .get(Space::Quarantine, &quarantine_key(1))
            .expect("entry 1");
        *v.last_mut().expect("bytes") ^= 1;
        raw.put(Space::Quarantine, &quarantine_key(1), v);
        rechain_quarantine(raw);
    });
    assert_eq!(quarantine_ok(&verify_dir(dir.path())), (4, 0));
    assert!(matches!(
        quarantine_against(dir.path()),
        QuarantineConsistency::HashDiffers {
            digest_entries: 3,
            ..
        }
    ));

    // The newest two removed, the head rewritten: truncated.
    let dir = with_quarantine();
    tamper(dir.path(), |raw| {
        raw.remove(Space::Quarantine, &quarantine_key(2));
        raw.remove(Space::Quarantine, &quarantine_key(1));
        rechain_quarantine(raw);
    });
    assert_eq!(quarantine_ok(&verify_dir(dir.path())), (1, 0));
    assert_eq!(
        quarantine_against(dir.path()),
        QuarantineConsistency::Truncated {
            digest_entries: 3,
            entries: 1
        }
    );
}

/// `Store::range_back` (pages of the quarantine read from the newest) gives every entry in
/// descending key order: sled's backward iterator and the trait's default alike.
#[test]
fn range_back_gives_the_quarantine_newest_first() {
    use ledger::store::Store;
    let dir = with_quarantine();
    let forward: Vec<(Vec<u8>, Vec<u8>)> = {
        let store = common::open_store(dir.path());
        let back: Vec<_> = store
            .range_back(Space::Quarantine)
            .collect::<Result<_, _>>()
            .expect("read");
        let mut forward: Vec<_> = store
            .range(Space::Quarantine, &[], None)
            .collect::<Result<_, _>>()
            .expect("read");
        assert_eq!(forward.len(), 3);
        forward.reverse();
        assert_eq!(back, forward, "sled's");
        forward
    };
    let raw = Raw::open(dir.path());
    let back: Vec<_> = raw
        .range_back(Space::Quarantine)
        .collect::<Result<_, _>>()
        .expect("read");
    assert_eq!(back, forward, "the default's");
}

/// T-B's events 25 to 30 rewritten from 25 on, every hash, link, head, round index and the
/// arrival chain rebuilt: `verify` passes, and a version 4 digest taken before names the
/// first altered event (25), not only the digest's seq (30), from its anchors. An edit at
/// 21 lies beyond the recent anchors (29 to 22; then 14): named as the range 15..=22.
#[test]
fn a_version_4_digest_names_the_first_altered_event() {
    for (first, want) in [(25u64, (25u64, 25u64)), (21, (15, 22))] {
        let (dir, _, hb) = filled();
        let digest = {
            let store = common::open_store(dir.path());
            let d = digest_store(store.as_ref(), T0_NS).expect("digest");
            let api = dir.path().join("api");
            ledger::digest::to_version_4(store.as_ref(), d, &api).expect("version 4")
        };
        assert_eq!(digest.version, 4);
        let mut new_head = Hash32::ZERO;
        tamper(dir.path(), |raw| {
            rewrite_record(raw, 21, |evs| {
                let mut prev = hb[19];
                for e in evs.iter_mut() {
                    if e.seq.0 < first {
                        // Untouched: its bytes as stored (the fill's wire forms vary).
                        prev = e.hash;
                        continue;
                    }
                    let (mut ev, _) = schemas::codec::decode(&e.bytes).expect("decode");
                    if ev.seq.0 == first {
                        ev.occurred_at_ns += 1;
                    }
                    ev.prev = prev;
                    let bytes = schemas::codec::to_bincode(&ev);
                    prev = schemas::event_hash(&prev, &bytes);
                    e.hash = prev;
                    e.occurred_at_ns = ev.occurred_at_ns;
                    e.bytes = bytes;
                }
                new_head = prev;
            });
            forge_head(raw, &tb(), 30, new_head);
            reindex_rounds(raw);
            rechain_arrival(raw);
        });
        assert!(verify_dir(dir.path()).is_ok(), "the rewrite passes verify");
        let store = common::open_store(dir.path());
        let c = check_store_against(store.as_ref(), &digest, T0_NS + 1).expect("check");
        assert!(matches!(
            tb_consistency(&c.tables),
            TableConsistency::HashDiffers { digest_seq: 30, .. }
        ));
        assert_eq!(
            c.first_altered,
            vec![proofs::digest::FirstAltered {
                table: tb(),
                first_seq: want.0,
                last_seq: want.1,
            }],
            "edit at {first}"
        );
    }
}
