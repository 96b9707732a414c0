//! `roundledger verify` covers everything stored, on real ledger directories: held events
//! (a table with only held events is listed; a damaged one is named at its seq), the value
//! log's recovery copies (the last 100 bytes of the last segment cut), and the API's
//! journals (a line edited; a journal cut back or rewritten, against an earlier digest).

use ::api::journal::Journal;
use ledger::store::{Op, SledStore, Space, Store};
use schemas::codec::{self, WireFormat};
use schemas::*;
use std::path::Path;

mod common;
use common::roundledger;

const T0_NS: i64 = 1_767_225_600_000_000_000;

/// Events `1..=n` of table `t`, chained, with their bytes.
fn chain(t: &str, n: u64) -> Vec<Vec<u8>> {
    let table = TableId::new(t).expect("id");
    let mut prev = Hash32::ZERO;
    (1..=n)
        .map(|seq| {
            let e = Event {
                v: WIRE_VERSION,
                table: table.clone(),
                device: DeviceId::new("ctl-1").expect("id"),
                seq: Seq(seq),
                prev,
                occurred_at_ns: T0_NS + seq as i64,
                round: Some(RoundId(1)),
                body: EventBody::Announced {
                    announcement: Announcement::PlaceYourBets,
                },
            };
            let bytes = codec::encode(&e, WireFormat::Bincode);
            prev = event_hash(&prev, &bytes);
            bytes
        })
        .collect()
}

/// Appends `events` of `t` (in this order) to the ledger at `dir`, flushed.
fn append(dir: &Path, t: &str, events: &[Vec<u8>], first_stream: u64) {
    let l = ledger::Ledger::open(dir).expect("open");
    let table = TableId::new(t).expect("id");
    let batch: Vec<_> = events
        .iter()
        .enumerate()
        .map(|(i, bytes)| ledger::Incoming {
            bytes: bytes.clone(),
            subject_table: Some(table.clone()),
            stream_seq: first_stream + i as u64,
            received_at_ns: T0_NS,
            provenance: Default::default(),
        })
        .collect();
    l.writer().append_batch(&batch).expect("append");
    l.flush().expect("flush");
}

/// A ledger with CSP-01 at seq 6 and HLD-01 holding only seqs 3..=5 (1 and 2 never came).
fn with_held(tmp: &Path) -> std::path::PathBuf {
    let dir = tmp.join("ledger");
    append(&dir, "CSP-01", &chain("CSP-01", 6), 1);
    append(&dir, "HLD-01", &chain("HLD-01", 5)[2..], 100);
    dir
}

fn run(args: &[&str], code: i32) -> String {
    let out = roundledger(args);
    assert_eq!(out.status.code(), Some(code), "{args:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn held_key(t: &str, seq: u64) -> Vec<u8> {
    ledger::record::seq_key(&TableId::new(t).expect("id"), seq)
}

#[test]
fn a_table_with_only_held_events_is_listed_and_a_damaged_one_named() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = with_held(tmp.path());
    let d = dir.to_str().expect("utf-8");
    let bytes: u64 = chain("HLD-01", 5)[2..].iter().map(|b| b.len() as u64).sum();
    let text = run(&["verify", "--ledger", d], 0);
    assert!(
        text.contains(&format!(
            "HLD-01       ok   held 3 events, seq 3..=5, {bytes} bytes, the oldest received at {T0_NS} ns"
        )),
        "{text}"
    );
    let out = roundledger(&["verify", "--ledger", d, "--json"]);
    let lines: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("json");
    let held = lines
        .iter()
        .find(|l| l["table"] == "HLD-01")
        .expect("listed");
    assert_eq!(held["held"]["events"], 3);
    assert_eq!(held["held"]["first_seq"], 3);

    // Seq 4's held bytes edited (one byte of its event), through a real store commit.
    let store = SledStore::open(&dir).expect("store");
    let key = held_key("HLD-01", 4);
    let mut v = store.get(Space::Pending, &key).expect("get").expect("held");
    let last = v.len() - 1;
    v[last] ^= 0x01;
    store
        .commit(vec![Op::Put(Space::Pending, key, v)])
        .expect("commit");
    store.flush().expect("flush");
    drop(store);
    let text = run(&["verify", "--ledger", d], 1);
    assert!(
        text.contains("HLD-01       BAD  held 3 events, seq 3..=5")
            && text.contains("first bad held event: seq 4: "),
        "{text}"
    );
    assert!(text.contains("verification FAILED"), "{text}");
}

#[test]
fn a_cut_recovery_copy_is_named() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = with_held(tmp.path());
    let d = dir.to_str().expect("utf-8");
    let text = run(&["verify", "--ledger", d], 0);
    assert!(
        text.contains("recovery copies ok: 3 sled entries match their copies"),
        "{text}"
    );
    // The last commit held HLD-01's events: its last entries are their copies.
    let segment = ledger::valuelog::segment_path(&dir, 0);
    let len = std::fs::metadata(&segment).expect("stat").len();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&segment)
        .expect("open");
    file.set_len(len - 100).expect("cut");
    drop(file);
    let text = run(&["verify", "--ledger", d], 1);
    assert!(
        text.contains(&format!(
            "recovery copies BAD: the value log ends at segment 0 offset {}, before the end sled's last commit recorded (segment 0 offset {len})",
            len - 100
        )),
        "{text}"
    );
    assert!(
        text.contains(
            "recovery copies BAD: held event table HLD-01 seq 5: no recovery copy in the value log"
        ),
        "{text}"
    );
    // The chains themselves still verify: only the copies are damaged.
    assert!(text.contains("CSP-01       ok   6 events"), "{text}");
}

/// Appends `n` audit entries to the ledger's audit log, as the server does.
fn audit(dir: &Path, n: u64) {
    let api_dir = ledger::journals::api_dir(dir);
    std::fs::create_dir_all(&api_dir).expect("api dir");
    let j = Journal::open(&::api::audit_path(&api_dir), |_, _| Ok(())).expect("journal");
    for _ in 0..n {
        j.append(|n| serde_json::json!({ "n": n, "route": "/v1/rounds" }))
            .expect("append");
    }
}

fn audit_lines(dir: &Path) -> Vec<String> {
    let path = ::api::audit_path(&ledger::journals::api_dir(dir));
    let text = std::fs::read_to_string(path).expect("read");
    text.lines().map(str::to_string).collect()
}

fn write_audit(dir: &Path, lines: &[String]) {
    let path = ::api::audit_path(&ledger::journals::api_dir(dir));
    std::fs::write(
        path,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .expect("write");
}

#[test]
fn a_journal_cut_back_or_rewritten_is_named_against_a_digest() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = with_held(tmp.path());
    let d = dir.to_str().expect("utf-8");
    audit(&dir, 5);
    let text = run(&["verify", "--ledger", d], 0);
    assert!(
        text.contains("journal audit.jsonl ok: 5 lines chained"),
        "{text}"
    );
    assert!(
        text.contains("journal cases.jsonl ok: none written"),
        "{text}"
    );
    let digest = tmp.path().join("digest.json");
    let f = digest.to_str().expect("utf-8");
    run(&["digest", "--ledger", d, "--out", f], 0);
    let taken =
        proofs::digest::Digest::from_json(&std::fs::read(&digest).expect("read")).expect("digest");
    assert_eq!(taken.version, 4);
    assert_eq!(taken.journals[0].name, "audit.jsonl");
    assert_eq!(taken.journals[0].entries, 5);
    audit(&dir, 1);
    let text = run(&["verify", "--ledger", d, "--against", f], 0);
    assert!(
        text.contains("audit.jsonl  ok   extends: digest line count 5, now 6"),
        "{text}"
    );

    // Cut back to 3 lines: each line still chains, so verify alone passes.
    let lines = audit_lines(&dir);
    write_audit(&dir, &lines[..3]);
    run(&["verify", "--ledger", d], 0);
    let text = run(&["verify", "--ledger", d, "--against", f], 1);
    assert!(
        text.contains("audit.jsonl  BAD  truncated: digest line count 5, the journal holds 3"),
        "{text}"
    );

    // Rewritten from line 2 with the chain recomputed: again only the digest sees it.
    let mut chain = proofs::journal::JournalChain::default();
    let mut rewritten = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let mut line: proofs::journal::JournalLine = serde_json::from_str(l).expect("line");
        if i == 1 {
            line.entry = line.entry.replace("/v1/rounds", "/v1/cases");
        }
        line.prev = hex::encode(chain.head);
        line.hash = hex::encode(proofs::journal::line_hash(
            &chain.head,
            line.entry.as_bytes(),
        ));
        let text = serde_json::to_string(&line).expect("json");
        chain.push(text.as_bytes()).expect("chains");
        rewritten.push(text);
    }
    write_audit(&dir, &rewritten);
    run(&["verify", "--ledger", d], 0);
    let text = run(&["verify", "--ledger", d, "--against", f], 1);
    assert!(
        text.contains("audit.jsonl  BAD  rewritten: after 5 lines the digest has "),
        "{text}"
    );

    // Line 2 edited without the chain: verify alone names the line.
    let mut edited = lines.clone();
    edited[1] = edited[1].replace("/v1/rounds", "/v1/cases");
    write_audit(&dir, &edited);
    let text = run(&["verify", "--ledger", d], 1);
    assert!(
        text.contains("journal audit.jsonl BAD at line 2: hash does not match the entry"),
        "{text}"
    );
    let text = run(&["verify", "--ledger", d, "--against", f], 1);
    assert!(
        text.contains("audit.jsonl  BAD  chain broken at line 2"),
        "{text}"
    );
}

/// Copies `from` into `to`, leaving out the value log: sled's own files.
fn copy_sled_files(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let p = e.expect("entry").path();
        let name = p.file_name().expect("name").to_owned();
        if name == std::ffi::OsStr::new(ledger::valuelog::DIR) {
            continue;
        }
        if p.is_dir() {
            copy_sled_files(&p, &to.join(&name));
        } else {
            std::fs::copy(&p, to.join(&name)).expect("copy");
        }
    }
}

/// Issue 40's two faults through the command: sled's files put back to an earlier copy,
/// and one bit flipped in the first value-log entry written after it. `verify` exits 1
/// and names the lost events by table and seq, before the open's recovery and after it;
/// the table written after the damage is not named.
#[test]
fn a_rolled_back_sled_and_a_flipped_value_bit_fail_verify_by_name() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("ledger");
    let a = chain("VC-A", 60);
    for i in 0..3 {
        append(&dir, "VC-A", &a[i * 10..i * 10 + 10], 1 + i as u64 * 10);
    }
    let earlier = tmp.path().join("earlier");
    // A ledger just dropped: its lock is let go once sled's flusher ends.
    SledStore::open(&dir).expect("closed");
    copy_sled_files(&dir, &earlier);
    let kept = std::fs::metadata(ledger::valuelog::segment_path(&dir, 0))
        .expect("segment")
        .len();
    for i in 3..6 {
        append(&dir, "VC-A", &a[i * 10..i * 10 + 10], 1 + i as u64 * 10);
    }
    append(&dir, "VC-B", &chain("VC-B", 10), 100);
    SledStore::open(&dir).expect("closed");
    for e in std::fs::read_dir(&dir).expect("read_dir") {
        let p = e.expect("entry").path();
        if p.file_name() == Some(std::ffi::OsStr::new(ledger::valuelog::DIR)) {
            continue;
        }
        if p.is_dir() {
            std::fs::remove_dir_all(&p).expect("remove");
        } else {
            std::fs::remove_file(&p).expect("remove");
        }
    }
    copy_sled_files(&earlier, &dir);
    // A bit of the value of the first entry written after the copy (VC-A's seqs 31..=40).
    let seg = ledger::valuelog::segment_path(&dir, 0);
    let mut data = std::fs::read(&seg).expect("read");
    data[kept as usize + 60] ^= 0x08;
    std::fs::write(&seg, &data).expect("write");

    let d = dir.to_str().expect("utf-8");
    let before = run(&["verify", "--ledger", d], 1);
    assert!(
        before.contains("value log BAD: a damaged entry: value segment 00000000.seg"),
        "{before}"
    );
    assert!(
        before.contains(
            "value log BAD: table VC-A seq 41: in the value log whole (segment 00000000.seg offset"
        ),
        "{before}"
    );
    assert!(
        before.contains("table VC-B seq 1: "),
        "sled lost it, the open appends it: {before}"
    );

    // verify opens the ledger to read its re-syncs, and that open ran the recovery: VC-B
    // is back whole, VC-A stops before the damaged record.
    let l = ledger::Ledger::open(&dir).expect("open");
    let heads: Vec<(String, u64)> = l
        .reader()
        .heads()
        .iter()
        .map(|h| (h.table.as_str().to_string(), h.seq.0))
        .collect();
    assert_eq!(heads, [("VC-A".to_string(), 30), ("VC-B".to_string(), 10)]);
    drop(l);
    SledStore::open(&dir).expect("closed");
    let after = run(&["verify", "--ledger", d], 1);
    for seq in [41, 60] {
        let want = format!("value log BAD: table VC-A seq {seq}: in the value log whole");
        assert!(
            after.contains(&want) && after.contains("held beyond a gap"),
            "{after}"
        );
    }
    assert!(
        !after.contains("table VC-B seq"),
        "VC-B came back whole: {after}"
    );
}

/// Issue 41: a stolen key's event stored and the device's own quarantined as a `fork`
/// (here: a second event at stored seq 3). Every chain still verifies, but `verify` exits
/// 1 naming both events, and `table status` shows the table DISPUTED.
#[test]
fn a_fork_is_disputed_by_verify_and_table_status() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8");
    let events = chain("FK-01", 5);
    append(dir.path(), "FK-01", &events, 1);
    let out = run(&["verify", "--ledger", d], 0);
    assert!(!out.contains("DISPUTED"), "{out}");
    let (mut e, _) = codec::decode(&events[2]).expect("decode");
    e.occurred_at_ns += 1;
    let other = codec::encode(&e, WireFormat::Bincode);
    append(dir.path(), "FK-01", std::slice::from_ref(&other), 100);
    let stored = event_hash(&e.prev, &events[2]);
    let quarantined = event_hash(&e.prev, &other);
    let out = run(&["verify", "--ledger", d], 1);
    let line = out
        .lines()
        .find(|l| l.starts_with("DISPUTED table FK-01 seq 3:"))
        .unwrap_or_else(|| panic!("no dispute line: {out}"));
    assert!(line.contains(&stored.to_string()), "{line}");
    assert!(line.contains(&quarantined.to_string()), "{line}");
    assert!(out.contains("FK-01"), "{out}");
    let status = run(&["table", "status", "--ledger", d], 1);
    assert!(status.contains("DISPUTED"), "{status}");
    assert!(status.contains("seq 3 (quarantine entry 0)"), "{status}");
}
