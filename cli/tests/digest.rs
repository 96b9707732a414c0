//! `roundledger digest` and `roundledger verify --against` end to end on a real ledger
//! directory: a digest taken, the ledger grown (still extends), a digest naming a different
//! head (rewritten history: exit 1, named), a digest whose root does not recompute (exit 2).

use proofs::digest::{Digest, DigestHead};
use schemas::codec::{self, WireFormat};
use schemas::*;
use std::path::Path;

mod common;
use common::roundledger;

const T0_NS: i64 = 1_767_225_600_000_000_000;

/// Appends events `from..from+n` of table `t` (chain continuing from the ledger's head).
fn append(dir: &Path, t: &str, n: u64) {
    let l = ledger::Ledger::open(dir).expect("open");
    let table = TableId::new(t).expect("id");
    let head = l
        .reader()
        .head(&table)
        .unwrap_or(ChainHead::empty(table.clone()));
    let mut prev = head.hash;
    let mut batch = Vec::new();
    for seq in head.seq.0 + 1..=head.seq.0 + n {
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
        batch.push(ledger::Incoming {
            bytes,
            subject_table: Some(table.clone()),
            stream_seq: seq,
            received_at_ns: T0_NS,
            provenance: Default::default(),
        });
    }
    for o in l.writer().append_batch(&batch).expect("append") {
        assert!(matches!(o, ledger::Appended::Stored { .. }), "{o:?}");
    }
    l.flush().expect("flush");
}

/// A ledger in `tmp` of two tables: CSP-01 with 20 events, MLP-02 with 7.
fn two_tables(tmp: &Path) -> std::path::PathBuf {
    let dir = tmp.join("ledger");
    append(&dir, "CSP-01", 20);
    append(&dir, "MLP-02", 7);
    dir
}

#[test]
fn digest_then_verify_against_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = two_tables(tmp.path());
    let d = dir.to_str().expect("utf-8");
    let file = tmp.path().join("digest.json");
    let f = file.to_str().expect("utf-8");

    let out = roundledger(&["digest", "--ledger", d, "--out", f]);
    assert_eq!(out.status.code(), Some(0));
    let digest = Digest::from_json(&std::fs::read(&file).expect("read")).expect("valid digest");
    assert_eq!(digest.events, 27);
    assert_eq!(digest.tables.len(), 2);

    // Grown since: still extends.
    append(&dir, "CSP-01", 5);
    append(&dir, "TCP-05", 3);
    let out = roundledger(&["verify", "--ledger", d, "--against", f]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("extends: digest seq 20, now seq 25"),
        "{text}"
    );
    assert!(text.contains("TCP-05       new"), "{text}");

    // The JSON proof.
    let out = roundledger(&["verify", "--ledger", d, "--against", f, "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let proof: proofs::digest::Consistency =
        serde_json::from_slice(&out.stdout).expect("consistency JSON");
    assert!(proof.ok);
    assert_eq!(proof.now.events, 35);
    assert_eq!(proof.digest_root, digest.root);

    // A digest that recorded another head at seq 7 of MLP-02 (a well-formed digest of a
    // different history): the ledger does not extend it, and says where.
    let edited = |f: &dyn Fn(&mut DigestHead)| {
        let heads = digest.tables.iter().map(|h| {
            let mut h = h.clone();
            f(&mut h);
            h
        });
        Digest::new(heads, digest.created_at_ns)
    };
    let other = edited(&|h| {
        if h.table.as_str() == "MLP-02" {
            h.head = Hash32([7; 32]);
        }
    });
    // `verify --against` that digest: the exit code, stdout and stderr.
    let against = |digest: &Digest, name: &str| {
        let file = tmp.path().join(name);
        std::fs::write(&file, digest.to_json()).expect("write");
        let out = roundledger(&[
            "verify",
            "--ledger",
            d,
            "--against",
            file.to_str().expect("utf-8"),
        ]);
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let (code, text, _) = against(&other, "other.json");
    assert_eq!(code, Some(1));
    assert!(
        text.contains("MLP-02       BAD  rewritten: at seq 7"),
        "{text}"
    );
    assert!(text.contains("CSP-01       ok"), "{text}");

    // The same events with another arrival recorded for MLP-02 (the digest's receipt of
    // its stream seqs and receive times differs): exit 1, named.
    let moved = edited(&|h| {
        if h.table.as_str() == "MLP-02" {
            h.receipt = Some(Hash32([7; 32]));
        }
    });
    let (code, text, _) = against(&moved, "moved.json");
    assert_eq!(code, Some(1));
    assert!(
        text.contains("MLP-02       BAD  arrival rewritten: events 1..=7 are the digest's"),
        "{text}"
    );
    assert!(text.contains("CSP-01       ok"), "{text}");

    // A version 1 digest (before receipts and the quarantine) of the same heads still
    // checks, and says what it cannot check. (`edited` builds version 2 digests, without
    // the quarantine: they check too.)
    let v1 = edited(&|h| h.receipt = None);
    assert_eq!((digest.version, v1.version), (4, 1));
    let (code, text, _) = against(&v1, "v1.json");
    assert_eq!(code, Some(0));
    assert!(
        text.contains("version 1 has no receipts: the events are checked against it, their stream seqs and receive times are not"),
        "{text}"
    );
    assert!(
        text.contains("version 1 does not name the quarantine"),
        "{text}"
    );
    assert!(text.contains("the ledger extends the digest"), "{text}");

    // A digest whose root was edited: refused as invalid (exit 2), naming the root.
    let mut forged = digest.clone();
    forged.tables[0].seq = 25;
    forged.events += 5;
    let (code, _, stderr) = against(&forged, "forged.json");
    assert_eq!(code, Some(2));
    assert!(stderr.contains("Merkle root"), "{stderr}");
}

/// `keygen`, `digest --sign-key` and `verify --against --signer`: the House's signature
/// binds the digest's time; an edited time, another signer, an unsigned digest where a
/// signer is required, and a key file others can read are each refused, by name.
#[test]
fn a_signed_digest_binds_its_time_and_names_its_signer() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("ledger");
    append(&dir, "CSP-01", 12);
    let d = dir.to_str().expect("utf-8");
    let path = |name: &str| tmp.path().join(name).to_str().expect("utf-8").to_string();
    let (key, signed, unsigned) = (
        path("house.key"),
        path("signed.json"),
        path("unsigned.json"),
    );
    // Runs the CLI, expects `code`, and returns what it printed (stdout, stderr).
    let run = |args: &[&str], code: i32| {
        let out = roundledger(args);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {out:?}");
        let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
        (text(&out.stdout), text(&out.stderr))
    };

    let (public, _) = run(&["keygen", "--out", &key], 0);
    let public = public.trim().to_string();
    let public_key = schemas::attest::PublicKey::from_hex(&public).expect("a public key");
    let mode = std::fs::metadata(&key)
        .expect("key file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(run(&["keygen", "--out", &key], 2)
        .1
        .contains("already exists"));

    let (_, err) = run(
        &[
            "digest",
            "--ledger",
            d,
            "--out",
            &signed,
            "--sign-key",
            &key,
        ],
        0,
    );
    assert!(err.contains(&format!("signed by {public}")), "{err}");
    let digest = Digest::from_json(&std::fs::read(&signed).expect("read")).expect("valid digest");
    assert_eq!(
        digest.signature.as_ref().map(|s| s.signer),
        Some(public_key)
    );
    assert_eq!(digest.events, 12);

    let verify = ["verify", "--ledger", d, "--against"];
    fn with<'a>(verify: &[&'a str], file: &'a str, more: &[&'a str]) -> Vec<&'a str> {
        [verify, &[file], more].concat()
    }
    let (text, _) = run(&with(&verify, &signed, &["--signer", &public]), 0);
    assert!(
        text.contains(&format!("signed by {public}: the signature verifies")),
        "{text}"
    );
    let (json, _) = run(&with(&verify, &signed, &["--signer", &public, "--json"]), 0);
    let proof: proofs::digest::Consistency = serde_json::from_str(&json).expect("consistency JSON");
    assert_eq!(proof.digest_signer, Some(public_key));
    assert!(proof.ok);

    // Its time moved a day back: the root still recomputes, the signature does not.
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&signed).expect("read")).expect("JSON");
    v["created_at_ns"] = (digest.created_at_ns - 86_400_000_000_000).into();
    let moved = path("moved.json");
    std::fs::write(&moved, serde_json::to_vec_pretty(&v).expect("JSON")).expect("write");
    let (_, err) = run(&with(&verify, &moved, &[]), 2);
    assert!(
        err.contains(&format!("signature does not verify with signer {public}")),
        "{err}"
    );

    // Another House's key expected.
    let other = schemas::attest::SigningKey::from_secret([9; 32])
        .public()
        .to_hex();
    let (_, err) = run(&with(&verify, &signed, &["--signer", &other]), 2);
    let says = format!("signed by {public}, not by the expected signer {other}");
    assert!(err.contains(&says), "{err}");

    // Unsigned: accepted and said so, unless a signer is required.
    run(&["digest", "--ledger", d, "--out", &unsigned], 0);
    assert!(run(&with(&verify, &unsigned, &[]), 0)
        .0
        .contains("not signed"));
    assert!(run(&with(&verify, &unsigned, &["--signer", &public]), 2)
        .1
        .contains("is not signed"));

    // A key file others can read, and one that holds no key, sign nothing.
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let (out, err) = run(&["digest", "--ledger", d, "--sign-key", &key], 2);
    assert!(err.contains("readable by its owner only"), "{err}");
    assert!(out.is_empty(), "no digest written");
    let junk = path("junk.key");
    std::fs::write(&junk, "not a key\n").expect("write");
    std::fs::set_permissions(&junk, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let (_, err) = run(&["digest", "--ledger", d, "--sign-key", &junk], 2);
    assert!(err.contains("64 hex characters"), "{err}");
}

/// `verify` reads the store as it is: what the value log holds beyond sled's last commit
/// is told, not repaired (opening the ledger appends such records again).
#[test]
fn verify_tells_of_value_log_entries_beyond_the_last_commit() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("ledger");
    append(&dir, "CSP-01", 5);
    let d = dir.to_str().expect("utf-8");
    let out = roundledger(&["verify", "--ledger", d]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("value log:"),
        "nothing beyond the last commit"
    );

    // A record and a copied quarantine entry no commit references, then half an entry
    // header.
    let values = ledger::valuelog::ValueLog::open(&dir).expect("value log");
    let put = ledger::store::encode_put_copy(
        ledger::store::Space::Quarantine,
        &7u64.to_be_bytes(),
        b"an entry",
    );
    let p = values.append(&[b"a record", &put]).expect("append")[1];
    drop(values);
    let segment = ledger::valuelog::segment_path(&dir, 0);
    let mut data = std::fs::read(&segment).expect("read");
    data.extend_from_slice(&[1, 2, 3]);
    std::fs::write(&segment, &data).expect("write");

    let out = roundledger(&["verify", "--ledger", d]);
    assert_eq!(out.status.code(), Some(0), "every chain still verifies");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("arrival order ok: "), "{text}");
    assert!(
        text.contains("value log: 1 record, 1 quarantine entry beyond sled's last commit"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "not a whole entry at value segment 00000000.seg offset {}",
            p.end().1
        )),
        "{text}"
    );
    // With --json the array of verdicts is unchanged and the same line goes to stderr.
    let out = roundledger(&["verify", "--ledger", d, "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let verdicts: Vec<serde_json::Value> =
        serde_json::from_slice(&out.stdout).expect("an array of verdicts");
    assert!(verdicts.iter().all(|v| v["ok"] == true), "{verdicts:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("value log: 1 record, 1 quarantine entry beyond sled's last commit"),
        "{err}"
    );
}

/// `verify --export FILE --against DIGEST`: a whole export holds the digested history,
/// receipts included; an export whose stream seq was edited still verifies on its own (no
/// event hash covers it) and is named by the digest's receipt; an export that holds no
/// digest seq (a table new since) proves nothing (exit 1, said so).
#[test]
fn an_export_is_checked_against_a_digest() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = two_tables(tmp.path());
    let d = dir.to_str().expect("utf-8");
    let path = |name: &str| tmp.path().join(name).to_str().expect("utf-8").to_string();
    let digest = path("digest.json");
    assert_eq!(
        roundledger(&["digest", "--ledger", d, "--out", &digest])
            .status
            .code(),
        Some(0)
    );
    append(&dir, "CSP-01", 3);
    append(&dir, "TCP-05", 4);
    let whole = path("whole.jsonl");
    assert_eq!(
        roundledger(&["export", "--ledger", d, "--out", &whole])
            .status
            .code(),
        Some(0)
    );
    let check = |export: &str| {
        let out = roundledger(&["verify", "--export", export, "--against", &digest]);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, text) = check(&whole);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("CSP-01       ok   agrees at digest seq 20, receipt too"),
        "{text}"
    );
    assert!(
        text.contains("the export agrees with the digest on the 2 tables it covers"),
        "{text}"
    );

    // MLP-02's seq 3 arrived later than recorded: the export's own chains still verify.
    let lines: Vec<String> = std::fs::read_to_string(&whole)
        .expect("read")
        .lines()
        .map(|line| {
            let mut v: serde_json::Value = serde_json::from_str(line).expect("json");
            if v["table"] == "MLP-02" && v["seq"] == 3 {
                v["stream_seq"] = 9_999.into();
            }
            v.to_string()
        })
        .collect();
    let moved = path("moved.jsonl");
    std::fs::write(&moved, lines.join("\n") + "\n").expect("write");
    let alone = roundledger(&["verify", "--export", &moved]);
    assert_eq!(alone.status.code(), Some(0), "no event hash covers it");
    let (code, text) = check(&moved);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("MLP-02       BAD  arrival rewritten: events 1..=7 are the digest's"),
        "{text}"
    );
    assert!(text.contains("CSP-01       ok"), "{text}");

    // A table the digest does not list.
    let part = path("part.jsonl");
    let out = roundledger(&["export", "--ledger", d, "--table", "TCP-05", "--out", &part]);
    assert_eq!(out.status.code(), Some(0));
    let (code, text) = check(&part);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("nothing proven"), "{text}");
}

/// `verify` reports the quarantine chain and a digest names it; an entry edited in the
/// store (here through the bare store, as a tool with file access would) fails `verify`
/// (exit 1, named) and `verify --against` the earlier digest, and `digest` refuses the
/// ledger.
#[test]
fn an_edited_quarantine_entry_fails_verify_and_digest() {
    use ledger::store::{Op, SledStore, Space, Store};
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = two_tables(tmp.path());
    let d = dir.to_str().expect("utf-8");
    {
        let l = ledger::Ledger::open(&dir).expect("open");
        let junk = ledger::Incoming {
            bytes: b"not an event".to_vec(),
            subject_table: Some(TableId::new("CSP-01").expect("id")),
            stream_seq: 100,
            received_at_ns: T0_NS,
            provenance: Default::default(),
        };
        assert!(matches!(
            l.writer().append_batch(&[junk]).expect("append")[0],
            ledger::Appended::Refused(ledger::Refused::Quarantined { id: 0, .. })
        ));
        l.flush().expect("flush");
    }
    let out = roundledger(&["verify", "--ledger", d]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("quarantine ok: 1 entry chained, head "),
        "{text}"
    );
    let before = tmp.path().join("before.json");
    let b = before.to_str().expect("utf-8");
    let out = roundledger(&["digest", "--ledger", d, "--out", b]);
    assert_eq!(out.status.code(), Some(0));
    let out = roundledger(&["verify", "--ledger", d, "--against", b]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("quarantine   ok   extends: digest entry count 1, now 1"),
        "{text}"
    );

    {
        let store = SledStore::open(&dir).expect("store");
        let mut entry = store
            .get(Space::Quarantine, &0u64.to_be_bytes())
            .expect("get")
            .expect("entry 0");
        *entry.last_mut().expect("bytes") ^= 0x20;
        store
            .commit(vec![Op::Put(
                Space::Quarantine,
                0u64.to_be_bytes().to_vec(),
                entry,
            )])
            .expect("commit");
        store.flush().expect("flush");
    }
    let out = roundledger(&["verify", "--ledger", d]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("quarantine BAD: the quarantine head says 1 entry chaining to "),
        "{text}"
    );
    assert!(text.contains("verification FAILED"), "{text}");
    let out = roundledger(&["verify", "--ledger", d, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("quarantine BAD"));

    let out = roundledger(&["verify", "--ledger", d, "--against", b]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("quarantine   BAD  chain broken: "), "{text}");
    assert!(
        text.contains("the ledger does NOT extend the digest"),
        "{text}"
    );

    let file = tmp.path().join("digest.json");
    let out = roundledger(&[
        "digest",
        "--ledger",
        d,
        "--out",
        file.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("quarantine BAD"));
    assert!(!file.exists(), "no digest of a damaged ledger");
}
