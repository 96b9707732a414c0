//! A signed purge frees a full quarantine: refused past its total, then purged in steps,
//! refusals are kept again. The chain of the entries that stay verifies from the cut, a
//! digest taken at the cut still checks, a fenced table's entries are moved past the cut
//! and its unfence still appends them, and a purge not signed by a trusted admin is
//! itself quarantined, never applied. A purge delivered again is not taken twice.

mod common;

use common::{incoming, table};
use ledger::purge::PURGE_STEP_ENTRIES;
use ledger::quarantine::Bound;
use ledger::quarantine_limits::{charge, QuarantineLimits};
use ledger::{reason, Appended, Incoming, Ledger, Refused};
use schemas::admin::{Act, AdminAct, AdminBody};
use schemas::attest::SigningKey;

const PURGE_KIND: &str = "quarantine_purge";

const LEN: usize = 40;

fn garbage(t: &schemas::TableId, n: u64) -> Incoming {
    let mut bytes = format!("not an event #{n}").into_bytes();
    bytes.resize(LEN, b'.');
    let mut m = incoming(t, bytes, n);
    // One per millisecond of bus time: the rate limits below are generous.
    m.received_at_ns += n as i64 * 1_000_000;
    m
}

/// Room for `total` entries, every other limit out of the way.
fn limits(total: u64) -> QuarantineLimits {
    QuarantineLimits {
        window_ns: 60_000_000_000,
        source_entries_per_window: 1 << 40,
        source_bytes_per_window: 1 << 40,
        all_entries_per_window: 1 << 40,
        all_bytes_per_window: 1 << 40,
        source_bytes_max: total * charge(LEN),
        total_bytes_max: total * charge(LEN),
    }
}

/// The admin act, as it arrives on `admin.acts` (no table subject).
fn purge_msg(admin: &SigningKey, below_id: u64, seq: u64) -> Incoming {
    let body = AdminBody {
        act: Act::QuarantinePurge { below_id },
        note: "case 9".into(),
        signed_at_ns: 1,
    };
    let wire = AdminAct::sign(admin, body).expect("sign").to_wire();
    let mut m = incoming(&table("ANY-1"), wire, seq);
    m.subject_table = None;
    m.received_at_ns += seq as i64 * 1_000_000;
    m
}

fn run_purge(l: &Ledger) -> u64 {
    let mut steps = 0;
    while l.writer().purge_step().expect("step").is_some() {
        steps += 1;
    }
    steps
}

#[test]
fn a_purge_frees_a_full_quarantine_and_what_stays_verifies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (admin, stranger) = (
        SigningKey::from_secret([7; 32]),
        SigningKey::from_secret([8; 32]),
    );
    let l = Ledger::open(dir.path()).expect("open");
    l.writer()
        .trust_admin_keys([admin.public()])
        .expect("admin");
    let total = PURGE_STEP_ENTRIES as u64 + 1_000;
    l.writer()
        .set_quarantine_limits(&limits(total))
        .expect("limits");
    let (flood, fenced) = (table("FLOOD-1"), table("FENCED-1"));
    // A fenced table's events first, so the purge must move them.
    l.writer()
        .fence_after_read_error(&fenced, ledger::Error::BadSetting("test".into()));
    let events: Vec<Incoming> = common::chain(&fenced, 3)
        .into_iter()
        .enumerate()
        .map(|(i, (_, b))| incoming(&fenced, b, 1 + i as u64))
        .collect();
    l.writer().append_batch(&events).expect("fenced");
    let msgs: Vec<Incoming> = (10..10 + total + 50).map(|n| garbage(&flood, n)).collect();
    let out: Vec<Appended> = msgs
        .chunks(1_000)
        .flat_map(|c| l.writer().append_batch(c).expect("append"))
        .collect();
    let past = |o: &&Appended| {
        matches!(
            o,
            Appended::Refused(Refused::Overflowed {
                bound: Bound::SourceTotal | Bound::Total,
                ..
            })
        )
    };
    assert_eq!(out.iter().filter(past).count(), 50, "the total is reached");
    l.flush().expect("flush");
    let digest_at_cut = l.reader().quarantine_head();
    // An untrusted purge is kept as evidence, not taken.
    let forged = l
        .writer()
        .append_batch(&[purge_msg(&stranger, 5_000, 100_000)])
        .expect("append");
    assert!(
        matches!(&forged[0], Appended::Refused(Refused::Overflowed { reason: r, .. } | Refused::Quarantined { reason: r, .. }) if *r == reason::ADMIN_REFUSED),
        "{forged:?}"
    );
    assert!(!l.reader().purge_pending());
    // The admin's purge of every entry so far, delivered twice.
    let below = digest_at_cut.entries;
    let act = purge_msg(&admin, below, 100_001);
    let taken = l
        .writer()
        .append_batch(&[act.clone(), act])
        .expect("append");
    assert_eq!(
        taken[0],
        Appended::Admin {
            kind: PURGE_KIND,
            first: true
        }
    );
    assert_eq!(
        taken[1],
        Appended::Admin {
            kind: PURGE_KIND,
            first: false
        }
    );
    assert!(run_purge(&l) >= 2, "in steps");
    let (mark, target) = l.reader().purge_progress();
    assert_eq!((mark.below_id, target), (below, below));
    assert_eq!(mark.entries, below);
    assert_eq!(
        mark.hash, digest_at_cut.hash,
        "the cut's hash is the chain's"
    );
    assert_eq!(
        mark.purged_entries,
        below - 3,
        "the fenced table's three stay"
    );
    let usage = l.reader().quarantine_usage();
    assert_eq!(usage.bytes, 0);
    assert!(usage.fenced_bytes > 0);
    // Refusals are kept again.
    let again = l
        .writer()
        .append_batch(&[garbage(&flood, 200_000)])
        .expect("append");
    assert!(
        matches!(again[0], Appended::Refused(Refused::Quarantined { .. })),
        "{again:?}"
    );
    let left = l.reader().quarantine().expect("entries");
    assert_eq!(left.len(), 4);
    assert!(left[..3]
        .iter()
        .all(|e| e.reason == reason::TABLE_FENCED && e.id >= below));
    l.flush().expect("flush");
    drop(l);
    let l = Ledger::open(dir.path()).expect("reopen");
    assert_eq!(l.reader().quarantine_usage().bytes, charge(LEN));
    let report = l.verifier().verify().expect("verify");
    assert!(report.is_ok(), "{report:?}");
    let log = l.reader().admin_log().expect("log");
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].kind, PURGE_KIND);
    assert!(l.verifier().check_admin_log().expect("check").is_empty());
    // The fenced table's kept events still come back when it is unfenced.
    let unfenced = l.writer().unfence(&fenced, "test", 1).expect("unfence");
    assert_eq!(unfenced.stored, 3);
}
