//! `roundledger day seal|show`, `verify --day`, `verify-seal` and `audit --day` end to end
//! on real ledger directories.

use ledger::days::DayRule;
use schemas::codec::{self, WireFormat};
use schemas::seal::DaySeal;
use schemas::*;
use std::path::Path;

mod common;
use common::roundledger;

/// 2026-01-01 00:00 UTC: the first event's arrival.
const T0_NS: i64 = 1_767_225_600_000_000_000;
const HOUR_NS: i64 = 3_600_000_000_000;

/// One table, an event every hour for 48 hours from `T0_NS`.
fn two_days(dir: &Path) {
    let l = ledger::Ledger::open(dir).expect("open");
    let table = TableId::new("CSP-01").expect("id");
    let mut prev = GENESIS;
    for seq in 1..=48u64 {
        let at = T0_NS + (seq as i64 - 1) * HOUR_NS;
        let e = Event {
            v: WIRE_VERSION,
            table: table.clone(),
            device: DeviceId::new("ctl-1").expect("id"),
            seq: Seq(seq),
            prev,
            occurred_at_ns: at,
            round: None,
            body: EventBody::Announced {
                announcement: Announcement::PlaceYourBets,
            },
        };
        let bytes = codec::encode(&e, WireFormat::Bincode);
        prev = event_hash(&prev, &bytes);
        let m = ledger::Incoming {
            bytes,
            subject_table: Some(table.clone()),
            stream_seq: seq,
            received_at_ns: at,
            provenance: Default::default(),
        };
        l.writer().append_batch(&[m]).expect("append");
    }
    l.flush().expect("flush");
}

#[test]
fn a_day_is_sealed_shown_and_verified_from_the_command_line() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("ledger");
    two_days(&dir);
    let d = dir.to_str().expect("utf-8");
    let key = tmp.path().join("seal.key");
    let out = roundledger(&["keygen", "--out", key.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let public = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let file = tmp.path().join("seal.json");
    let f = file.to_str().unwrap();
    let rule = ["--day-start", "00:00", "--time-zone", "UTC"];
    let k = key.to_str().unwrap();

    let seal = |day: &str, extra: &[&str]| {
        let mut args = vec!["day", "seal", "--ledger", d, "--day", day, "--seal-key", k];
        args.extend(extra);
        roundledger(&args)
    };
    assert_eq!(
        seal("2026-01-01", &[&rule[..], &["--out", f]].concat())
            .status
            .code(),
        Some(0)
    );
    let sealed = DaySeal::from_json(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(sealed.tables[0].events, 24);
    assert_eq!(
        seal("2026-01-01", &rule).status.code(),
        Some(0),
        "the same seal again"
    );
    let other = ["--day-start", "06:00", "--time-zone", "UTC"];
    assert_eq!(
        seal("2026-01-01", &other).status.code(),
        Some(2),
        "other content refused"
    );
    assert_eq!(seal("2026-01-02", &rule).status.code(), Some(0));

    let out = roundledger(&["day", "show", "2026-01-02", "--ledger", d]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("seq 25..=48 (24 events)"));

    let out = roundledger(&[
        "verify",
        "--ledger",
        d,
        "--day",
        "2026-01-02",
        "--seal-key-pub",
        &public,
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("verifies (25 events read"));

    seal_file_checks(&file, &sealed, &public);
    day_file_checks(tmp.path(), d, &public);
}

/// The second day archived to a day file: it checks alone against its seal and key, and a
/// flipped byte in its frame, or another key, is named.
fn day_file_checks(tmp: &Path, ledger: &str, public: &str) {
    let file = tmp.join("2026-01-02.rlday");
    let f = file.to_str().unwrap();
    let out = roundledger(&[
        "day",
        "archive",
        "--ledger",
        ledger,
        "--day",
        "2026-01-02",
        "--out",
        f,
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let check = |extra: &[&str]| {
        let mut args = vec!["day", "check-archive", f];
        args.extend(extra);
        roundledger(&args)
    };
    let out = check(&["--seal-key-pub", public]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("CSP-01       seq 25..=48 ok"));
    let other = schemas::attest::SigningKey::from_secret([9; 32])
        .public()
        .to_hex();
    let out = check(&["--seal-key-pub", &other]);
    assert_eq!(out.status.code(), Some(1), "another key's seal is refused");
    let mut bytes = std::fs::read(&file).unwrap();
    let (header, _) = archive::read_header(&bytes).unwrap();
    let span = &header.tables[0];
    bytes[(span.frame_offset + span.frame_len / 2) as usize] ^= 0x10;
    std::fs::write(&file, &bytes).unwrap();
    let out = check(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("CSP-01       BAD"));
}

#[test]
fn audit_by_day_covers_every_round_once() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("ledger");
    let d = dir.to_str().unwrap();
    let out = roundledger(&[
        "seed",
        "--ledger",
        d,
        "--tables",
        "3",
        "--rounds",
        "40",
        "--close",
        // Its tables change shift at 00:00 UTC: the ledger keeps days from 00:00.
        "--shift-start",
        "00:00",
    ]);
    assert_eq!(out.status.code(), Some(0));
    // Rounds, disputed rounds and net difference: the days add up to the whole ledger.
    let totals = |args: &[&str]| {
        let out = roundledger(&[&["audit", "--ledger", d, "--json", "--quiet"], args].concat());
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let n = |f: &str| v[f].as_i64().unwrap();
        let disputed = v["disputed_rounds"].as_array().unwrap().len() as i64;
        [n("rounds"), disputed, n("net_difference")]
    };
    let all = totals(&[]);
    assert_eq!(all[0], 120);
    // The seeded floor plays within a day of now: yesterday, today and tomorrow hold it.
    let rule = DayRule::new("00:00", "UTC").unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    let today = rule.day_of(now).unwrap();
    let tomorrow = rule
        .day_of(rule.bounds(&today).unwrap().ends_at_ns)
        .unwrap();
    let days = [rule.previous_day(&today).unwrap(), today, tomorrow];
    let mut by_day = [0i64; 3];
    for day in &days {
        let t = totals(&["--day", day, "--day-start", "00:00"]);
        for (sum, x) in by_day.iter_mut().zip(t) {
            *sum += x;
        }
    }
    assert_eq!(by_day, all);
}

/// `verify-seal` on the seal file: it verifies under its key, not under another, and not
/// once its range is edited.
fn seal_file_checks(file: &Path, sealed: &DaySeal, public: &str) {
    let f = file.to_str().unwrap();
    let out = roundledger(&["verify-seal", f, "--seal-key-pub", public]);
    assert_eq!(out.status.code(), Some(0));
    let wrong = schemas::attest::SigningKey::derive_for_simulation("other")
        .public()
        .to_hex();
    assert_eq!(
        roundledger(&["verify-seal", f, "--seal-key-pub", &wrong])
            .status
            .code(),
        Some(1)
    );
    let mut forged = sealed.clone();
    forged.tables[0].events = 23;
    forged.tables[0].last_seq = Seq(23);
    std::fs::write(file, forged.to_json()).unwrap();
    assert_eq!(roundledger(&["verify-seal", f]).status.code(), Some(1));
}
