//! The API's own records replicated through JetStream (issue 43): two `roundledger serve
//! --node-id` on one real `nats-server -js`, each with its own ledger and API directory.
//!
//! A case and notes written through either node read back through the other; a close
//! sent to both at once is taken once, by stream order, alike on both; a node stopped
//! while a count is entered applies it when it comes back; bad input and a record the
//! stream refuses are answered with a clear error and kept on neither node.

mod common;

use async_nats::jetstream;
use common::serve::{get, listening, post, start_access, wait_for, Serve};
use schemas::attest::SigningKey;
use schemas::count::{CountResult, SignedCount};
use schemas::*;
use serde_json::{json, Value};
use std::path::Path;

const TOKEN: &str = "ops-admin-token-0000000001";
const TABLE: &str = "T-A";
const BOX_ID: &str = "T-A/box/1";

fn counter() -> SigningKey {
    SigningKey::from_secret([5; 32])
}

/// Starts serve as ledger node `node` under `root`, trusting the counter's key.
fn start_node(root: &Path, node: &str, url: &str) -> (Serve, String) {
    let (s, api, _) = start_keyed(root, node, url, None);
    (s, api)
}

/// `start_node` with this seal key file, its API and metrics addresses.
fn start_keyed(root: &Path, node: &str, url: &str, key: Option<&Path>) -> (Serve, String, String) {
    let dir = root.join(node);
    std::fs::create_dir_all(&dir).expect("node dir");
    let access = json!({
        "tokens": [{"name": "ops", "role": "admin", "token": TOKEN}],
        "count_keys": [{"name": "count team B", "key": counter().public().to_hex()}],
    });
    let mut extra = format!("node-id = {node:?}\n");
    if let Some(k) = key {
        extra.push_str(&format!("seal-key = {:?}\n", k.display().to_string()));
    }
    let (s, log) = start_access(&dir, url, &access, &extra, &[]);
    let (api, metrics) = listening(&log);
    (s, api, metrics)
}

/// Two events of T-A: round 1 announced, then its drop box removed `ago_ns` before now.
async fn publish_table(url: &str, ago_ns: i64) {
    let js = jetstream::new(async_nats::connect(url).await.expect("connect"));
    let t = TableId::new(TABLE).expect("id");
    let now_ns = ingest::system_clock_ns();
    let bodies = [
        (
            Some(RoundId(1)),
            EventBody::Announced {
                announcement: Announcement::PlaceYourBets,
            },
        ),
        (
            None,
            EventBody::Finance {
                entry: Finance::DropBoxRemoved {
                    drop_box_id: BOX_ID.into(),
                },
            },
        ),
    ];
    let mut prev = Hash32::ZERO;
    for (i, (round, body)) in bodies.into_iter().enumerate() {
        let bytes = codec::to_bincode(&Event {
            v: WIRE_VERSION,
            table: t.clone(),
            device: DeviceId::new("ctl-1").expect("id"),
            seq: Seq(i as u64 + 1),
            prev,
            occurred_at_ns: now_ns - ago_ns,
            round,
            body,
        });
        prev = chain::event_hash(&prev, &bytes);
        js.publish(subjects::events_subject(&t), bytes.into())
            .await
            .expect("publish")
            .await
            .expect("stream ack");
    }
}

/// The seq of the last record on each case subject: `records.case.new`, `records.case.1`.
fn last_case_records(rt: &tokio::runtime::Runtime, url: &str) -> Vec<u64> {
    rt.block_on(async {
        let js = jetstream::new(async_nats::connect(url).await.expect("connect"));
        let s = js
            .get_stream(schemas::records::RECORDS_STREAM)
            .await
            .expect("records stream");
        let mut seqs = Vec::new();
        for subject in ["records.case.new", "records.case.1"] {
            let m = s
                .get_last_raw_message_by_subject(subject)
                .await
                .expect("last");
            seqs.push(m.sequence);
        }
        seqs
    })
}

/// Sets the records stream's largest message, as an operator's mistake would.
fn set_record_len_max(rt: &tokio::runtime::Runtime, url: &str, len: i32) {
    rt.block_on(async {
        let js = jetstream::new(async_nats::connect(url).await.expect("connect"));
        let mut config = ingest::records::stream_config();
        config.max_message_size = len;
        js.update_stream(config).await.expect("update");
    });
}

/// The case `id` as `api` serves it, once it has `entries` entries.
fn case_with(api: &str, id: u64, entries: usize) -> Value {
    wait_for(
        &format!("{api} serves case {id} with {entries} entries"),
        || {
            let (status, body) = get(api, &format!("/v1/cases/{id}"), Some(TOKEN));
            let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            let n = v["entries"].as_array().map_or(0, Vec::len);
            (status == 200 && n == entries, (status, body))
        },
    );
    let (_, body) = get(api, &format!("/v1/cases/{id}"), Some(TOKEN));
    serde_json::from_str(&body).expect("case")
}

/// Both nodes have stored T-A's two events and indexed round 1.
fn wait_stored(apis: &[&str]) {
    for api in apis {
        wait_for(&format!("{api} indexed round 1"), || {
            let (status, body) = get(api, &format!("/v1/tables/{TABLE}/rounds/1"), Some(TOKEN));
            (status == 200, (status, body))
        });
    }
}

/// A case opened on A and noted on A and B reads the same on both; a note that hides
/// text and a case on a round that does not exist are refused before the stream.
fn cases_go_through_the_stream(rt: &tokio::runtime::Runtime, url: &str, a: &str, b: &str) {
    let opened = json!({"table": TABLE, "round": 1, "title": "short pay"});
    let (status, body) = post(a, "/v1/cases", TOKEN, &opened);
    assert_eq!(status, 201, "{body}");
    let (status, body) = post(a, "/v1/cases/1/notes", TOKEN, &json!({"text": "seen on A"}));
    assert_eq!(status, 200, "{body}");
    let (status, body) = post(b, "/v1/cases/1/notes", TOKEN, &json!({"text": "seen on B"}));
    assert_eq!(status, 200, "B catches up before judging the note: {body}");
    let on_a = case_with(a, 1, 3);
    let on_b = case_with(b, 1, 3);
    assert_eq!(on_a, on_b, "one case on both nodes");
    assert_eq!(
        (on_b["table"].as_str(), on_b["round"].as_u64()),
        (Some(TABLE), Some(1))
    );
    let seqs: Vec<u64> = on_b["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            e["stream_seq"]
                .as_u64()
                .expect("each entry names its stream seq")
        })
        .collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "in stream order: {seqs:?}"
    );
    let before = last_case_records(rt, url);
    let (status, body) = post(
        b,
        "/v1/cases",
        TOKEN,
        &json!({"table": TABLE, "round": 9, "title": "no such round"}),
    );
    assert_eq!(
        status, 404,
        "a case lands only on a round that exists: {body}"
    );
    let (status, body) = post(b, "/v1/cases/1/notes", TOKEN, &json!({"text": "bell\u{7}"}));
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        last_case_records(rt, url),
        before,
        "bad input never reaches the stream"
    );
    for api in [a, b] {
        let (_, body) = get(api, "/v1/cases", Some(TOKEN));
        let page: Value = serde_json::from_str(&body).expect("page");
        assert_eq!(page["total"], 1, "{api}: {body}");
    }
}

/// A close sent to both nodes at once: exactly one is taken, the other is 409, and both
/// nodes hold the same decision.
fn a_race_is_decided_by_stream_order(a: &str, b: &str) {
    let send = |api: String, decision: &'static str| {
        std::thread::spawn(move || {
            post(
                &api,
                "/v1/cases/1/close",
                TOKEN,
                &json!({"decision": decision}),
            )
        })
    };
    let (ta, tb) = (
        send(a.to_string(), "paid by A"),
        send(b.to_string(), "paid by B"),
    );
    let (ra, rb) = (ta.join().expect("A"), tb.join().expect("B"));
    let mut statuses = [ra.0, rb.0];
    statuses.sort();
    assert_eq!(statuses, [200, 409], "{ra:?} {rb:?}");
    let won = if ra.0 == 200 {
        "paid by A"
    } else {
        "paid by B"
    };
    for api in [a, b] {
        let v = case_with(api, 1, 4);
        assert_eq!(
            (v["open"].as_bool(), v["decision"].as_str()),
            (Some(false), Some(won)),
            "{api}"
        );
    }
}

/// What node A answered is in B's floor log, naming node a; B's own log has none of it.
fn accesses_on_a_are_in_the_floor_log_of_b(a: &str, b: &str) {
    let (status, _) = get(a, "/v1/tables/T-A/rounds/1", Some(TOKEN));
    assert_eq!(status, 200);
    let looked = |log: &Value| {
        log["items"].as_array().map_or(0, |items| {
            let hits = items.iter().filter(|e| {
                e["node"] == "a" && e["path"] == "/v1/tables/T-A/rounds/1" && e["status"] == 200
            });
            hits.count()
        })
    };
    let floor = wait_for("B's floor log has A's look at round 1", || {
        let (_, body) = get(b, "/v1/audit?scope=floor&limit=1000", Some(TOKEN));
        let log: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        (looked(&log) >= 1, log)
    });
    assert!(
        floor["items"][0]["stream_seq"].as_u64().is_some(),
        "{floor}"
    );
    let (_, body) = get(b, "/v1/audit?limit=1000", Some(TOKEN));
    let own: Value = serde_json::from_str(&body).expect("log");
    assert_eq!(looked(&own), 0, "B's own log holds only what B answered");
    let (status, body) = get(b, "/v1/audit?scope=everyone", Some(TOKEN));
    assert_eq!(status, 400, "{body}");
}

/// A count signed by the counter, counted `ago_ns` before now.
fn signed_count(ago_ns: i64, cash_minor: i64) -> SignedCount {
    let now_ns = ingest::system_clock_ns();
    let c = CountResult {
        table: TableId::new(TABLE).expect("id"),
        drop_box_id: BOX_ID.into(),
        cash: Money(cash_minor),
        markers: Money(0),
        counted_at_ns: now_ns - ago_ns,
        counted_by: "count team B".into(),
    };
    SignedCount::sign(&counter(), c, now_ns).expect("sign")
}

/// The standing counts `api` lists.
fn counts_on(api: &str) -> Vec<Value> {
    let (status, body) = get(api, "/v1/counts", Some(TOKEN));
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).expect("counts")
}

#[test]
fn cases_and_counts_written_through_one_node_are_on_the_other() {
    let nats = natsd::NatsServer::start().expect("nats-server");
    let url = nats.url();
    let root = tempfile::tempdir().expect("tempdir");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (_a, a) = start_node(root.path(), "a", &url);
    let (mut node_b, b) = start_node(root.path(), "b", &url);
    rt.block_on(publish_table(&url, 60_000_000_000));
    wait_stored(&[&a, &b]);
    cases_go_through_the_stream(&rt, &url, &a, &b);
    a_race_is_decided_by_stream_order(&a, &b);
    accesses_on_a_are_in_the_floor_log_of_b(&a, &b);

    assert!(node_b.stop(), "B stops cleanly");
    let count = serde_json::to_value(signed_count(30_000_000_000, 150_000)).expect("json");
    // The box's removal is the table's second event: A's read model may index it a
    // moment after round 1. Until then the answer is 503 "indexing", never a refusal.
    let (status, body) = wait_for("A's read model holds the box removal", || {
        let (status, body) = post(&a, "/v1/counts", TOKEN, &count);
        (status != 503 || !body.contains("indexing"), (status, body))
    });
    assert_eq!(status, 201, "{body}");
    let mut forged = count.clone();
    forged["count"]["cash"] = json!(999_999);
    let (status, body) = post(&a, "/v1/counts", TOKEN, &forged);
    assert_eq!(status, 400, "a count whose signature fails: {body}");
    let (mut node_b, b) = start_node(root.path(), "b", &url);
    let got = wait_for("B applies the count it missed", || {
        let c = counts_on(&b);
        (c.len() == 1, c)
    });
    assert_eq!(got, counts_on(&a), "the same standing count on both");
    assert_eq!(got[0]["signed"]["count"]["cash"], 150_000);
    a_record_the_stream_refuses_is_kept_nowhere(&rt, &url, &a, &b);
    assert!(node_b.stop(), "B stops cleanly");
    a_lost_stream_stops_every_write(&rt, &url, root.path(), &a);
}

/// The records stream deleted: it comes back empty and its seqs start over. Neither the
/// running node nor a restarted one writes on it or says it is ready; nothing is skipped.
fn a_lost_stream_stops_every_write(rt: &tokio::runtime::Runtime, url: &str, root: &Path, a: &str) {
    rt.block_on(async {
        let js = jetstream::new(async_nats::connect(url).await.expect("connect"));
        js.delete_stream(schemas::records::RECORDS_STREAM)
            .await
            .expect("delete the records stream");
    });
    let (_b, b) = start_node(root, "b", url);
    let (_, body) = wait_for("the restarted B is not ready, naming records", || {
        let (status, body) = get(&b, "/ready", None);
        (status == 503 && body.contains("records"), (status, body))
    });
    assert!(body.contains("lost or made again"), "{body}");
    let note = json!({"text": "after the stream was lost"});
    for api in [a, b.as_str()] {
        let (status, body) = post(api, "/v1/cases/1/notes", TOKEN, &note);
        assert_eq!(status, 503, "{api}: {body}");
        assert!(body.contains("lost or made again"), "{api}: {body}");
        assert_eq!(
            case_with(api, 1, 5)["open"],
            true,
            "{api}: the case unchanged"
        );
    }
}

/// With the stream's largest message below a note's record, the note is a 503 that says
/// nothing was kept, and the case is unchanged on both nodes.
fn a_record_the_stream_refuses_is_kept_nowhere(
    rt: &tokio::runtime::Runtime,
    url: &str,
    a: &str,
    b: &str,
) {
    let (status, body) = post(
        a,
        "/v1/cases/1/reopen",
        TOKEN,
        &json!({"reason": "patron came back"}),
    );
    assert_eq!(status, 200, "{body}");
    set_record_len_max(rt, url, 64);
    let (status, body) = post(
        b,
        "/v1/cases/1/notes",
        TOKEN,
        &json!({"text": "this note is longer than the stream takes"}),
    );
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("nothing was kept"), "{body}");
    set_record_len_max(rt, url, schemas::records::RECORD_LEN_MAX as i32);
    for api in [a, b] {
        let v = case_with(api, 1, 5);
        assert_eq!(v["open"], true, "{api}");
    }
}

/// The secret of the nodes' seal key: every node of the floor runs with one key file.
const NODE_SECRET: [u8; 32] = [9; 32];

fn node_key() -> SigningKey {
    SigningKey::from_secret(NODE_SECRET)
}

/// Writes the nodes' key to `<root>/seal.key`, readable by its owner only.
fn key_file(root: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = root.join("seal.key");
    std::fs::write(&path, hex::encode(NODE_SECRET)).expect("key file");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    path
}

/// A note on case 1 as node `node` would publish it, with `signature` as its header.
async fn publish_note(js: &jetstream::Context, node: &str, n: u64, signer: Option<&SigningKey>) {
    let m = schemas::records::RecordMsg {
        v: schemas::records::RECORD_VERSION,
        node: Some(node.into()),
        id: format!("{node}:forged:{n}"),
        record: schemas::records::Record::Case {
            case_id: Some(1),
            at_ns: ingest::system_clock_ns(),
            author: "ops".into(),
            role: schemas::api::Role::Admin,
            action: schemas::api::CaseAction::Note {
                text: format!("written past the nodes {n}"),
            },
        },
    };
    let bytes = serde_json::to_vec(&m).expect("json");
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Nats-Msg-Id", m.id.as_str());
    if let Some(k) = signer {
        let sig = k.sign(&schemas::records::record_signed_message(&bytes));
        headers.insert(
            schemas::records::RECORD_SIGNATURE_HEADER,
            sig.to_hex().as_str(),
        );
    }
    js.publish_with_headers(m.subject(), headers, bytes.into())
        .await
        .expect("publish")
        .await
        .expect("stored");
}

/// A counter or gauge of a scrape (0 when absent).
fn metric(addr: &str, name: &str) -> f64 {
    common::serve::scrape(addr)
        .get(name)
        .copied()
        .unwrap_or(0.0)
}

/// Records signed by the nodes' key: a note published with the nodes' credential but
/// no signature, or one signed by another key, is applied on neither node, counted, and
/// the next good note is applied on both. Then the stream is deleted, made again and
/// written past what B applied, with notes signed by the nodes' key: A, running, and B,
/// restarted, both refuse it, naming `records` in `/ready`.
#[test]
fn forged_records_and_a_stream_made_again_are_refused() {
    let nats = natsd::NatsServer::start().expect("nats-server");
    let url = nats.url();
    let root = tempfile::tempdir().expect("tempdir");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let key = key_file(root.path());
    let (_a, a, a_metrics) = start_keyed(root.path(), "a", &url, Some(&key));
    let (mut node_b, b, b_metrics) = start_keyed(root.path(), "b", &url, Some(&key));
    rt.block_on(publish_table(&url, 60_000_000_000));
    wait_stored(&[&a, &b]);
    let opened = json!({"table": TABLE, "round": 1, "title": "short pay"});
    let (status, body) = post(&a, "/v1/cases", TOKEN, &opened);
    assert_eq!(status, 201, "{body}");
    let js =
        rt.block_on(async { jetstream::new(async_nats::connect(&url).await.expect("connect")) });
    let stranger = SigningKey::from_secret([4; 32]);
    rt.block_on(publish_note(&js, "a", 1, None));
    rt.block_on(publish_note(&js, "b", 2, Some(&stranger)));
    let (status, body) = post(&b, "/v1/cases/1/notes", TOKEN, &json!({"text": "good"}));
    assert_eq!(status, 200, "{body}");
    for (api, m) in [(&a, &a_metrics), (&b, &b_metrics)] {
        let v = case_with(api, 1, 2);
        assert_eq!(v["entries"][1]["text"], "good", "{api}: {v}");
        assert_eq!(metric(m, "roundledger_records_refused_total"), 2.0, "{api}");
    }

    let applied = metric(&b_metrics, "roundledger_records_applied_seq") as u64;
    assert!(
        applied >= 4,
        "B applied the case, the two forged notes and the note"
    );
    assert!(node_b.stop(), "B stops cleanly");
    rt.block_on(async {
        js.delete_stream(schemas::records::RECORDS_STREAM)
            .await
            .expect("delete");
        js.create_stream(ingest::records::stream_config())
            .await
            .expect("made again");
        for n in 0..applied + 3 {
            publish_note(&js, "a", 100 + n, Some(&node_key())).await;
        }
    });
    let (_b, b, _) = start_keyed(root.path(), "b", &url, Some(&key));
    for api in [&a, &b] {
        let (_, body) = wait_for(&format!("{api} is not ready, naming records"), || {
            let (status, body) = get(api, "/ready", None);
            (status == 503 && body.contains("records"), (status, body))
        });
        assert!(body.contains("lost or made again"), "{api}: {body}");
        let (status, body) = post(api, "/v1/cases/1/notes", TOKEN, &json!({"text": "late"}));
        assert_eq!(status, 503, "{api}: {body}");
        assert_eq!(case_with(api, 1, 2)["open"], true, "{api}: nothing applied");
    }
}
