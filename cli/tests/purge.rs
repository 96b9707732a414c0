//! `roundledger quarantine purge` end to end: the message it writes is an admin act signed by
//! the key file's admin, and a ledger trusting that admin takes it and removes the
//! entries below the id; `roundledger quarantine` then lists only the rest. Without a
//! place to send it, the command refuses (exit 2).

mod common;
use common::roundledger;
use schemas::admin::{Act, AdminAct};
use schemas::TableId;

#[test]
fn a_purge_written_by_the_cli_is_taken_by_a_ledger_trusting_its_admin() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = dir.path().join("admin.key");
    let out = roundledger(&["keygen", "--out", key.to_str().unwrap()]);
    assert!(out.status.success());
    let msg = dir.path().join("purge.msg");
    let args = [
        "quarantine",
        "purge",
        "--admin-key",
        key.to_str().unwrap(),
        "--below-id",
        "7",
        "--note",
        "case 3",
    ];
    let nowhere = roundledger(&args);
    assert_eq!(nowhere.status.code(), Some(2), "no --nats and no --out");
    let out = roundledger(&[&args[..], &["--out", msg.to_str().unwrap()]].concat());
    assert!(out.status.success());
    let wire = std::fs::read(&msg).expect("the message");
    let p = AdminAct::from_wire(&wire)
        .expect("an admin act")
        .expect("reads");
    assert!(p.signature_verifies());
    assert_eq!(p.body.act, Act::QuarantinePurge { below_id: 7 });
    assert_eq!(p.body.note, "case 3");

    let ledger_dir = dir.path().join("ledger");
    let l = ledger::Ledger::open(&ledger_dir).expect("open");
    l.writer().trust_admin_keys([p.admin]).expect("trust");
    let t = TableId::new("CSP-01").expect("id");
    let at = |bytes: Vec<u8>, seq: u64| ledger::Incoming {
        bytes,
        subject_table: Some(t.clone()),
        stream_seq: seq,
        received_at_ns: 1_767_225_600_000_000_000 + seq as i64,
        provenance: Default::default(),
    };
    let garbage: Vec<_> = (1..=10u64)
        .map(|i| at(format!("junk {i}").into_bytes(), i))
        .collect();
    l.writer().append_batch(&garbage).expect("refusals");
    let mut act = at(wire, 11);
    act.subject_table = None;
    let taken = l.writer().append_batch(&[act]).expect("the purge");
    assert!(
        matches!(taken[0], ledger::Appended::Admin { first: true, .. }),
        "{taken:?}"
    );
    while l.writer().purge_step().expect("step").is_some() {}
    l.flush().expect("flush");
    drop(l);
    let out = roundledger(&[
        "quarantine",
        "--ledger",
        ledger_dir.to_str().unwrap(),
        "--json",
    ]);
    let page: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let ids: Vec<u64> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, vec![9, 8, 7], "entries 0 to 6 purged");
}

/// `roundledger admin quarantine-limits` signs the whole set of limits (those not given at
/// their defaults) and refuses a set no node would take, writing nothing.
#[test]
fn quarantine_limits_are_signed_whole_and_a_bad_set_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = dir.path().join("admin.key");
    assert!(roundledger(&["keygen", "--out", key.to_str().unwrap()])
        .status
        .success());
    let msg = dir.path().join("limits.msg");
    let base = [
        "admin",
        "quarantine-limits",
        "--admin-key",
        key.to_str().unwrap(),
        "--note",
        "case 4",
        "--out",
        msg.to_str().unwrap(),
    ];
    let bad = roundledger(&[&base[..], &["--source-bytes-max", "99999999999999"]].concat());
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("per-source limit above"));
    assert!(!msg.exists(), "nothing written");
    let ok = roundledger(&[&base[..], &["--source-entries-per-window", "50"]].concat());
    assert!(ok.status.success(), "{ok:?}");
    let act = AdminAct::from_wire(&std::fs::read(&msg).expect("written"))
        .expect("an admin act")
        .expect("reads");
    let Act::QuarantineLimits { limits } = act.body.act else {
        panic!("{:?}", act.body.act)
    };
    assert_eq!(
        limits,
        schemas::limits::QuarantineLimits {
            source_entries_per_window: 50,
            ..Default::default()
        }
    );
}
