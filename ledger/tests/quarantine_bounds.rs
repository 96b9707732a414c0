//! Refusals are bounded: past a source's entries per window, its bytes in all, every
//! source's entries per window, or the quarantine's total, refusals are counted against
//! (source, reason) with the stream seqs that keep their bytes and a digest of them, not
//! stored. Other sources and later windows are unaffected; a redelivery is not counted
//! twice; a fenced table's events are kept apart; the counts survive a reopen; `verify`
//! holds. A refusal costs about its own bytes on disk.

mod common;

use common::{incoming, table};
use ledger::quarantine::{Bound, Overflow, SOURCE_ENTRIES_PER_MINUTE_MAX};
use ledger::quarantine_limits::{charge, QuarantineLimits};
use ledger::{reason, Appended, Incoming, Ledger, Refused};

/// Distinct undecodable messages sent in the flood's minute, beyond the bound.
const PAST: u64 = 250;

/// Distinct bytes no decoder reads: a flood of different garbage.
fn garbage(n: u64) -> Vec<u8> {
    format!("not an event #{n}").into_bytes()
}

fn flood(t: &schemas::TableId, from_stream_seq: u64, count: u64, minute: i64) -> Vec<Incoming> {
    (0..count)
        .map(|i| {
            let mut m = incoming(t, garbage(from_stream_seq + i), from_stream_seq + i);
            m.received_at_ns += minute * 60_000_000_000;
            m
        })
        .collect()
}

/// The overflow counter the test expects for `msgs`, computed from the definition.
fn expected(msgs: &[Incoming]) -> Overflow {
    msgs.iter()
        .fold(Overflow::default(), |o, m| o.add(m.stream_seq, &m.bytes))
}

#[test]
fn a_flood_of_distinct_refusals_is_counted_past_the_bound() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (t, other) = (table("FLOOD-1"), table("CALM-1"));
    let l = Ledger::open(dir.path()).expect("open");
    let n = SOURCE_ENTRIES_PER_MINUTE_MAX + PAST;
    let msgs = flood(&t, 1, n, 0);
    let mut out = Vec::new();
    for call in msgs.chunks(500) {
        out.extend(l.writer().append_batch(call).expect("append"));
    }
    let stored = out
        .iter()
        .filter(|o| matches!(o, Appended::Refused(Refused::Quarantined { .. })))
        .count();
    assert_eq!(stored as u64, SOURCE_ENTRIES_PER_MINUTE_MAX);
    let past = Appended::Refused(Refused::Overflowed {
        reason: reason::UNDECODABLE,
        bound: Bound::SourceRate,
    });
    assert!(
        out[stored..].iter().all(|o| *o == past),
        "the rest overflow"
    );
    let key = (t.as_str().to_string(), reason::UNDECODABLE.to_string());
    let counted = l.reader().quarantine_overflows()[&key];
    assert_eq!(counted, expected(&msgs[stored..]));
    assert_eq!(counted.count, PAST);
    assert_eq!(counted.first_stream_seq, msgs[stored].stream_seq);
    // Another source in the same minute, and the flooding source a minute later: stored.
    let calm = l
        .writer()
        .append_batch(&flood(&other, 10_000, 3, 0))
        .expect("append");
    assert!(calm
        .iter()
        .all(|o| matches!(o, Appended::Refused(Refused::Quarantined { .. }))));
    let later = l
        .writer()
        .append_batch(&flood(&t, 20_000, 2, 1))
        .expect("append");
    assert!(later
        .iter()
        .all(|o| matches!(o, Appended::Refused(Refused::Quarantined { .. }))));
    // A redelivery of a counted message is not counted again.
    let again = l
        .writer()
        .append_batch(&msgs[n as usize - 1..])
        .expect("append");
    assert_eq!(again, vec![past]);
    assert_eq!(l.reader().quarantine_overflows()[&key].count, PAST);
    l.flush().expect("flush");
    drop(l);
    let l = Ledger::open(dir.path()).expect("reopen");
    assert_eq!(l.reader().quarantine_overflows()[&key], counted);
    assert_eq!(
        l.reader().quarantine().expect("quarantine").len() as u64,
        SOURCE_ENTRIES_PER_MINUTE_MAX + 5
    );
    let report = l.verifier().verify().expect("verify");
    assert!(report.is_ok(), "{report:?}");
}

/// Bytes of every file under `dir`, as the file system counts them.
fn dir_bytes(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut n = 0;
    for e in std::fs::read_dir(dir).expect("read dir") {
        let e = e.expect("entry");
        let m = e.metadata().expect("metadata");
        n += if m.is_dir() {
            dir_bytes(&e.path())
        } else {
            m.blocks() * 512
        };
    }
    n
}

/// A refusal is on disk once: its value-log copy, sled holding a 21-byte pointer. Large
/// messages in sled itself cost 2.6 to 70 times their bytes (sled rewrites whole leaves).
#[test]
fn a_refusal_costs_about_its_own_bytes_on_disk() {
    if common::skip_unless_sled("the bound is sled's and the value log's growth") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let t = table("FLOOD-1");
    let l = Ledger::open(dir.path()).expect("open");
    l.flush().expect("flush");
    let before = dir_bytes(dir.path());
    let (len, n) = (60_000usize, 150u64);
    for i in 0..n {
        let mut bytes = garbage(i);
        bytes.resize(len, b'x');
        let mut m = incoming(&t, bytes, i + 1);
        // Two seconds apart: 30 a minute, within the source's bytes per minute.
        m.received_at_ns += i as i64 * 2_000_000_000;
        let out = l.writer().append_batch(&[m]).expect("append");
        assert!(matches!(
            out[0],
            Appended::Refused(Refused::Quarantined { .. })
        ));
        l.flush().expect("flush");
    }
    drop(l);
    let grown = dir_bytes(dir.path()) - before;
    // sled grows its file a 512 KiB segment at a time: one or two may be new.
    let bound = n * (len as u64 + ledger::quarantine::ENTRY_COST_BYTES) + (1 << 20);
    assert!(
        grown <= bound,
        "{n} refusals of {len} bytes grew the ledger by {grown} bytes, over {bound}"
    );
    let l = Ledger::open(dir.path()).expect("reopen");
    let e = l
        .reader()
        .quarantine_entry(n - 1)
        .expect("read")
        .expect("entry");
    assert_eq!(e.bytes.len(), len);
    assert!(l.verifier().verify().expect("verify").is_ok());
}

/// An entry's one copy is its bytes: damage to it stops no open and no append, and
/// `verify` names the quarantine.
#[test]
fn a_damaged_entry_copy_is_named_by_verify_and_stops_nothing() {
    if common::skip_unless_sled("a damaged quarantine copy in the value log") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let t = table("FLOOD-1");
    let l = Ledger::open(dir.path()).expect("open");
    l.writer()
        .append_batch(&flood(&t, 1, 3, 0))
        .expect("append");
    l.flush().expect("flush");
    drop(l);
    let raw = common::Raw::open(dir.path());
    let stored = raw
        .sled()
        .tree
        .get(common::Raw::key(
            ledger::store::Space::Quarantine,
            &1u64.to_be_bytes(),
        ))
        .expect("get")
        .expect("entry 1");
    let p = ledger::valuelog::Pointer::decode(&stored).expect("sled holds a pointer");
    raw.close();
    let path = ledger::valuelog::segment_path(dir.path(), p.segment);
    let mut bytes = std::fs::read(&path).expect("segment");
    let last =
        (p.offset + ledger::valuelog::ENTRY_HEADER_LEN as u64 + u64::from(p.len) - 1) as usize;
    bytes[last] ^= 0x01;
    std::fs::write(&path, bytes).expect("write");
    let l = Ledger::open(dir.path()).expect("a damaged entry stops no open");
    let more = l
        .writer()
        .append_batch(&flood(&t, 100, 1, 0))
        .expect("append goes on");
    assert!(matches!(
        more[0],
        Appended::Refused(Refused::Quarantined { id: 3, .. })
    ));
    let report = l.verifier().verify().expect("verify");
    assert!(
        matches!(&report.quarantine, ledger::QuarantineVerdict::Bad { problem } if problem.contains("quarantine")),
        "{:?}",
        report.quarantine
    );
}

/// Small limits, so each is reached in a few hundred messages.
fn small_limits() -> QuarantineLimits {
    QuarantineLimits {
        window_ns: 1_000_000_000,
        source_entries_per_window: 50,
        source_bytes_per_window: 1 << 20,
        all_entries_per_window: 120,
        all_bytes_per_window: 8 << 20,
        source_bytes_max: 100 * charge(PADDED_LEN),
        total_bytes_max: 250 * charge(PADDED_LEN),
    }
}

/// The length `spread` pads its garbage to.
const PADDED_LEN: usize = 32;

/// Distinct garbage of `PADDED_LEN` bytes on `t`'s subject, one per `step_ns` of bus time
/// from `at_ns`.
fn spread(t: &schemas::TableId, from: u64, n: u64, at_ns: i64, step_ns: i64) -> Vec<Incoming> {
    (0..n)
        .map(|i| {
            let mut bytes = garbage(from + i);
            bytes.resize(PADDED_LEN, b'.');
            let mut m = incoming(t, bytes, from + i);
            m.received_at_ns += at_ns + i as i64 * step_ns;
            m
        })
        .collect()
}

fn outcomes(l: &Ledger, msgs: &[Incoming]) -> Vec<Appended> {
    msgs.chunks(500)
        .flat_map(|c| l.writer().append_batch(c).expect("append"))
        .collect()
}

fn count_past(out: &[Appended], bound: Bound) -> usize {
    out.iter()
        .filter(
            |o| matches!(o, Appended::Refused(Refused::Overflowed { bound: b, .. }) if *b == bound),
        )
        .count()
}

fn count_kept(out: &[Appended]) -> usize {
    out.iter()
        .filter(|o| matches!(o, Appended::Refused(Refused::Quarantined { .. })))
        .count()
}

/// 2,000 subjects in one window make at most the window's entries in all; one source
/// spread over many windows stops at its own total while another is still kept; the
/// total stops everyone; a fenced table's events are kept past every limit, apart.
#[test]
fn refusals_are_bounded_per_source_in_all_and_fenced_events_stay_apart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let l = Ledger::open(dir.path()).expect("open");
    let limits = small_limits();
    l.writer().set_quarantine_limits(&limits).expect("limits");
    // Many subjects, two messages each, in one window.
    let many: Vec<Incoming> = (0..2_000u64)
        .flat_map(|i| spread(&table(&format!("T-{i}")), 10 * i + 1, 2, 0, 1))
        .collect();
    let out = outcomes(&l, &many);
    assert_eq!(count_kept(&out), 120, "the window's entries in all");
    assert_eq!(count_past(&out, Bound::AllRate), 4_000 - 120);
    // One source, 10 a window for 30 windows: its total stops it at 100.
    let (flood_t, calm_t) = (table("FLOOD-1"), table("CALM-1"));
    let flood = spread(&flood_t, 100_000, 300, 1_000_000_000, 100_000_000);
    let out = outcomes(&l, &flood);
    assert_eq!(count_kept(&out), 100);
    assert_eq!(count_past(&out, Bound::SourceTotal), 200);
    let calm = outcomes(&l, &spread(&calm_t, 200_000, 5, 40_000_000_000, 1));
    assert_eq!(count_kept(&calm), 5, "another source is still kept");
    // The total: 250 charged entries in all. 225 are held; 25 more fit.
    let rest: Vec<Incoming> = (0..10u64)
        .flat_map(|i| {
            spread(
                &table(&format!("U-{i}")),
                300_000 + 10 * i,
                5,
                50_000_000_000 + i as i64 * 1_000_000_000,
                1,
            )
        })
        .collect();
    let out = outcomes(&l, &rest);
    assert_eq!(count_kept(&out), 25);
    assert_eq!(count_past(&out, Bound::Total), 25);
    // A fenced table: its events are kept past the total, charged apart.
    let fenced_t = table("FENCED-1");
    l.writer()
        .fence_after_read_error(&fenced_t, ledger::Error::BadSetting("test".into()));
    let events: Vec<Incoming> = common::chain(&fenced_t, 300)
        .into_iter()
        .enumerate()
        .map(|(i, (_, bytes))| incoming(&fenced_t, bytes, 400_000 + i as u64))
        .collect();
    let out = outcomes(&l, &events);
    assert_eq!(count_kept(&out), 300, "every fenced event is kept");
    let usage = l.reader().quarantine_usage();
    assert_eq!(usage.bytes, 250 * charge(PADDED_LEN));
    assert!(usage.fenced_bytes > 300 * charge(0));
    assert_eq!(usage.by_source[flood_t.as_str()], limits.source_bytes_max);
    l.flush().expect("flush");
    drop(l);
    let l = Ledger::open(dir.path()).expect("reopen");
    assert_eq!(
        l.reader().quarantine_usage(),
        usage,
        "the same usage after a reopen"
    );
    assert_eq!(l.reader().quarantine_limits(), limits);
    assert!(l.verifier().verify().expect("verify").is_ok());
}

/// BENCHMARKS.md's disk per refusal: distinct garbage of 200 bytes and 60 KB, within the
/// rate limits, in calls of several sizes; prints the ledger's growth a refusal.
#[test]
#[ignore]
fn disk_per_refusal_benchmark() {
    for (len, n, per_call) in [
        (200, 5_000u64, 1),
        (200, 50_000, 100),
        (200, 50_000, 500),
        (60_000, 500, 1),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let t = table("FLOOD-1");
        let l = Ledger::open(dir.path()).expect("open");
        l.flush().expect("flush");
        let before = dir_bytes(dir.path());
        // Spaced within a source's entries and bytes a minute.
        let step_ns = if len > 1_000 {
            2_000_000_000
        } else {
            60_000_000_000 / 900
        };
        let msgs: Vec<Incoming> = (0..n)
            .map(|i| {
                let mut bytes = garbage(i);
                bytes.resize(len, b'x');
                let mut m = incoming(&t, bytes, i + 1);
                m.received_at_ns += i as i64 * step_ns;
                m
            })
            .collect();
        for c in msgs.chunks(per_call) {
            l.writer().append_batch(c).expect("append");
            l.flush().expect("flush");
        }
        drop(l);
        let grown = dir_bytes(dir.path()) - before;
        println!(
            "{n} refusals of {len} B, {per_call} a call: {} B each ({:.2}x)",
            grown / n,
            grown as f64 / (n * len as u64) as f64
        );
    }
}

/// An admin act on the stream, as `roundledger admin quarantine-limits` sends it.
fn limits_act(admin: &schemas::attest::SigningKey, limits: QuarantineLimits, seq: u64) -> Incoming {
    use schemas::admin::{Act, AdminAct, AdminBody};
    let body = AdminBody {
        act: Act::QuarantineLimits { limits },
        note: "case 12".into(),
        signed_at_ns: 1,
    };
    let mut m = incoming(
        &table("ANY-1"),
        AdminAct::sign(admin, body).expect("sign").to_wire(),
        seq,
    );
    m.subject_table = None;
    m
}

/// The limits travel as an admin act: taken once at their point of the stream (refusals
/// after it are judged by them, those before were not), kept across a reopen, and
/// limits that do not check (a per-source total above the total) or an untrusted key are
/// quarantined as `admin_refused`, changing nothing.
#[test]
fn quarantine_limits_set_by_an_admin_act_judge_what_follows_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let admin = schemas::attest::SigningKey::from_secret([5; 32]);
    let stranger = schemas::attest::SigningKey::from_secret([6; 32]);
    let l = Ledger::open(dir.path()).expect("open");
    l.writer()
        .trust_admin_keys([admin.public()])
        .expect("trust");
    let t = table("FLOOD-1");
    let tight = QuarantineLimits {
        source_entries_per_window: 3,
        ..QuarantineLimits::default()
    };
    let bad = QuarantineLimits {
        source_bytes_max: tight.total_bytes_max + 1,
        ..tight
    };
    let mut msgs = flood(&t, 1, 5, 0);
    msgs.push(limits_act(&stranger, tight, 6));
    msgs.push(limits_act(&admin, bad, 7));
    let act = limits_act(&admin, tight, 8);
    msgs.extend([act.clone(), act]);
    msgs.extend(flood(&t, 10, 5, 0));
    let out = l.writer().append_batch(&msgs).expect("append");
    let kept = |o: &&Appended| matches!(o, Appended::Refused(Refused::Quarantined { .. }));
    assert_eq!(
        out[..5].iter().filter(kept).count(),
        5,
        "before the act: default limits"
    );
    for (i, o) in out[5..7].iter().enumerate() {
        assert!(
            matches!(o, Appended::Refused(Refused::Quarantined { reason: r, .. }) if *r == reason::ADMIN_REFUSED),
            "act {i}: {o:?}"
        );
    }
    assert_eq!(
        out[7],
        Appended::Admin {
            kind: "quarantine_limits",
            first: true
        }
    );
    assert_eq!(
        out[8],
        Appended::Admin {
            kind: "quarantine_limits",
            first: false
        }
    );
    // Seven entries this window already (five refusals, two refused acts of no table's
    // source): the flood's source has had five, past its three.
    assert!(
        out[9..].iter().all(|o| matches!(
            o,
            Appended::Refused(Refused::Overflowed {
                bound: Bound::SourceRate,
                ..
            })
        )),
        "{:?}",
        &out[9..]
    );
    assert_eq!(l.reader().quarantine_limits(), tight);
    l.flush().expect("flush");
    drop(l);
    let l = Ledger::open(dir.path()).expect("reopen");
    assert_eq!(
        l.reader().quarantine_limits(),
        tight,
        "kept across a reopen"
    );
    let log = l.reader().admin_log().expect("log");
    assert_eq!(log.len(), 1);
    assert!(l.verifier().verify().expect("verify").is_ok());
}
