//! Tamper evidence at the file level: bytes of the ledger's files (sled's
//! own and the value log's segments) are flipped after the ledger is closed. sled checksums
//! its log and the value log checksums each entry, so the outcome is one of: the store
//! refuses to open, `verify` names a bad position, or the digest taken before the damage no
//! longer extends. Never: the damage passes unnoticed.

mod common;

use common::{chain, copy_dir, fill, incoming, table, T0_NS};
use ledger::digest::check_store_against;
use ledger::store::SledStore;
use ledger::{verify_store, Ledger};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("read_dir") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    hay.windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect()
}

/// What became of a damaged directory.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    OpenRefused(String),
    VerifyBad(String),
    DigestBroken(String),
    /// sled lost commits, and `Ledger::open` appended their records again from the value
    /// log: the ledger verifies and extends the digest once more.
    Recovered(String),
    Unnoticed,
    /// The chains are whole, but the ledger, once opened, no longer holds the quarantine
    /// entries or held events it held: first-hand data lost.
    FirstHandLost(String),
    Panicked(String),
}

/// What a ledger holds besides its chains that nothing else can rebuild: its quarantine
/// entries and held events (`store::RECOVERED_SPACES`).
type FirstHand = (Vec<ledger::QuarantineEntry>, Vec<ledger::Gap>);

fn first_hand(l: &Ledger) -> FirstHand {
    (
        l.reader().quarantine().expect("quarantine"),
        l.reader().gaps(),
    )
}

/// After the chains were judged whole (untouched, or recovered): whether opening the
/// ledger gives back every quarantine entry and held event as they were.
fn first_hand_kept(dir: &Path, outcome: Outcome, expected: &FirstHand) -> Outcome {
    let l = match Ledger::open(dir) {
        Ok(l) => l,
        Err(e) => return Outcome::OpenRefused(e.to_string()),
    };
    let found = first_hand(&l);
    if &found == expected {
        outcome
    } else {
        Outcome::FirstHandLost(format!("{found:?}"))
    }
}

fn judge(dir: &Path, digest: &proofs::digest::Digest, expected: Option<&FirstHand>) -> Outcome {
    let d = dir.to_path_buf();
    let digest = digest.clone();
    let expected = expected.cloned();
    let r = std::panic::catch_unwind(move || {
        let outcome = judge_chains(&d, &digest);
        match (&outcome, &expected) {
            (Outcome::Unnoticed | Outcome::Recovered(_), Some(e)) => {
                first_hand_kept(&d, outcome, e)
            }
            _ => outcome,
        }
    });
    r.unwrap_or_else(|p| {
        Outcome::Panicked(
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default(),
        )
    })
}

/// The chains on the bare store, then, if only the digest check fails, after an open.
fn judge_chains(d: &Path, digest: &proofs::digest::Digest) -> Outcome {
    {
        let store = match SledStore::open(d) {
            Ok(s) => s,
            Err(e) => return Outcome::OpenRefused(e.to_string()),
        };
        let (report, _) = match verify_store(&store, None, &BTreeMap::new()) {
            Ok(r) => r,
            Err(e) => return Outcome::VerifyBad(format!("store error: {e}")),
        };
        if !report.is_ok() {
            return Outcome::VerifyBad(format!("{}: {:?}", report.failures(), report.tables));
        }
        let broken = match check_store_against(&store, digest, T0_NS) {
            Ok(c) if c.ok => return Outcome::Unnoticed,
            Ok(c) => format!("{:?}", c.tables),
            Err(e) => format!("store error: {e}"),
        };
        drop(store);
        recovered(d, digest).unwrap_or(Outcome::DigestBroken(broken))
    }
}

/// After the digest check failed on the bare store: whether opening the ledger appended
/// lost commits again from the value log, so that it verifies and extends `digest`.
fn recovered(dir: &Path, digest: &proofs::digest::Digest) -> Option<Outcome> {
    let l = Ledger::open(dir).ok()?;
    let found = l.recovered().clone();
    // Since digests name the quarantine, a rollback of a commit that only quarantined is
    // seen by the digest check too: what was put back counts, not only events.
    if found.found() == 0 {
        return None;
    }
    let whole =
        l.verifier().verify().ok()?.is_ok() && l.verifier().check_against(digest, T0_NS).ok()?.ok;
    whole.then(|| Outcome::Recovered(format!("{found:?}")))
}

/// Flips one byte in the middle of every copy of a stored event's bytes in the ledger's
/// files.
#[test]
fn flipped_event_bytes_in_sled_files_are_noticed() {
    if common::skip_unless_sled("byte flips in sled's files") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let tables = [table("F-A"), table("F-B")];
    let l = Ledger::open(dir.path()).expect("open");
    fill(&l, &tables, 40, 10);
    let digest = l.verifier().digest(T0_NS).expect("digest");
    let target = l
        .reader()
        .stored_event(&tables[1], 16)
        .expect("read")
        .expect("seq 16");
    drop(l);
    assert_eq!(
        target.bytes[0], b'{',
        "seq 16 is a JSON event: distinctive bytes"
    );
    let mut copies = 0;
    let mut in_value_log = 0;
    for f in files(dir.path()) {
        let mut data = std::fs::read(&f).expect("read");
        let at = find_all(&data, &target.bytes);
        for i in &at {
            data[i + target.bytes.len() / 2] ^= 0x20;
        }
        if !at.is_empty() {
            eprintln!("{}: {} copies of the event flipped", f.display(), at.len());
            copies += at.len();
            if f.starts_with(dir.path().join(ledger::valuelog::DIR)) {
                in_value_log += at.len();
            }
            std::fs::write(&f, &data).expect("write");
        }
    }
    assert!(
        copies > 0,
        "the event's bytes are stored verbatim in the ledger's files"
    );
    assert_eq!(
        in_value_log, 1,
        "records are written once, to the value log (sled holds pointers)"
    );
    let outcome = judge(dir.path(), &digest, None);
    eprintln!("outcome: {outcome:?}");
    assert!(
        matches!(
            outcome,
            Outcome::OpenRefused(_) | Outcome::VerifyBad(_) | Outcome::DigestBroken(_)
        ),
        "{outcome:?}"
    );
}

/// splitmix64: a seeded generator with no dependency.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Random single-byte flips anywhere in the ledger's files (seeded; `ROUNDLEDGER_FLIPS` sets the
/// count, default 200; `ROUNDLEDGER_FLIP_SEED` the seed). Each flip is judged on a fresh copy
/// of a closed ledger. A flip that leaves the ledger verifying and extending the earlier
/// digest left every chained byte intact (the chains are hash-bound from genesis): no
/// failure. The failures are a panic, and a silent sled rollback that opening the ledger
/// does not repair (its recovery must append the lost commits again from the value log).
#[test]
fn random_byte_flips_in_sled_files_never_pass_as_a_different_ledger() {
    if common::skip_unless_sled("byte flips in sled's files") {
        return;
    }
    let iters: u64 = std::env::var("ROUNDLEDGER_FLIPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let seed: u64 = std::env::var("ROUNDLEDGER_FLIP_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    eprintln!("random flips: {iters} iterations, seed {seed} (ROUNDLEDGER_FLIP_SEED)");
    let pristine = tempfile::tempdir().expect("tempdir");
    let tables = [table("F-A"), table("F-B")];
    let l = Ledger::open(pristine.path()).expect("open");
    fill(&l, &tables, 40, 10);
    // Besides the chains, a quarantined message and an event held beyond a gap, in the
    // last commit: a rollback that loses it leaves the chains and the digest whole.
    let beyond_gap = chain(&tables[0], 42).pop().expect("seq 42").1;
    let mut garbage = incoming(&tables[1], b"not an event".to_vec(), 999);
    garbage.received_at_ns += 1;
    let out = l
        .writer()
        .append_batch(&[incoming(&tables[0], beyond_gap, 998), garbage])
        .expect("append");
    assert!(matches!(out[0], ledger::Appended::Held { .. }), "{out:?}");
    assert!(
        matches!(
            out[1],
            ledger::Appended::Refused(ledger::Refused::Quarantined { .. })
        ),
        "{out:?}"
    );
    l.flush().expect("flush");
    let digest = l.verifier().digest(T0_NS).expect("digest");
    let expected = first_hand(&l);
    drop(l);
    let all: Vec<(PathBuf, u64)> = files(pristine.path())
        .into_iter()
        .map(|f| {
            let n = std::fs::metadata(&f).expect("meta").len();
            (f, n)
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    let total: u64 = all.iter().map(|(_, n)| n).sum();
    let mut rng = seed;
    let mut counts: BTreeMap<&'static str, u64> = BTreeMap::new();
    for i in 0..iters {
        let work = tempfile::tempdir().expect("tempdir");
        copy_dir(pristine.path(), work.path(), false);
        let mut at = next(&mut rng) % total;
        let (file, _) = all
            .iter()
            .find(|(_, n)| {
                if at < *n {
                    true
                } else {
                    at -= n;
                    false
                }
            })
            .expect("offset inside a file");
        let rel = file.strip_prefix(pristine.path()).expect("rel");
        let target = work.path().join(rel);
        let mut data = std::fs::read(&target).expect("read");
        let bit = 1u8 << (next(&mut rng) % 8);
        data[at as usize] ^= bit;
        std::fs::write(&target, &data).expect("write");
        let outcome = judge(work.path(), &digest, Some(&expected));
        let kind = match &outcome {
            Outcome::OpenRefused(_) => "open refused",
            Outcome::VerifyBad(_) => "verify names a bad position",
            Outcome::DigestBroken(_) => "only the digest check fails (sled rolled back silently)",
            Outcome::Recovered(_) => {
                "sled rolled back; the lost commits were appended again from the value log"
            }
            Outcome::Unnoticed => "no effect on the ledger (a stale or unused byte)",
            Outcome::FirstHandLost(_) => "QUARANTINE OR HELD EVENTS LOST",
            Outcome::Panicked(_) => "PANIC",
        };
        *counts.entry(kind).or_insert(0) += 1;
        // Since recovery: a rollback that sled keeps silent no longer loses the commits
        // it dropped (their records are in the value log), nor, since their copies are
        // there too, the quarantine entries and held events.
        assert!(
            !matches!(
                outcome,
                Outcome::Panicked(_) | Outcome::DigestBroken(_) | Outcome::FirstHandLost(_)
            ),
            "iteration {i} (seed {seed}): flip of bit {bit:#x} at {} offset {at}: {outcome:?}",
            rel.display()
        );
    }
    eprintln!("random flips over {total} bytes of the ledger's files: {counts:?}");
}
