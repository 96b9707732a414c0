//! The vectors of schemas/DEVICES.md (`vectors/devices-v1.json`), written by an independent
//! Python implementation of the text: the head payload, a version 2 checkpoint's JSON wire
//! form and signature, and a deck commitment. The quarantine entry's stored value is
//! checked in `ledger` (`quarantine_entry_vector`), which owns its encoding.

use schemas::attest::{checkpoint_v2_message, Checkpoint, PublicKey};
use schemas::chain::{deck_commitment, event_hash, ChainHead, GENESIS};
use schemas::{Card, Hash32};

fn vectors() -> serde_json::Value {
    let text = include_str!("../vectors/devices-v1.json");
    serde_json::from_str(text).expect("devices-v1.json parses")
}

fn text(v: &serde_json::Value) -> &str {
    v.as_str().expect("a string")
}

#[test]
fn head_payload_is_chain_head_json() {
    let v = vectors();
    let head: ChainHead =
        serde_json::from_value(v["head"]["payload"].clone()).expect("ChainHead JSON");
    let bytes = hex::decode(text(&v["head"]["event_bytes_hex"])).expect("hex");
    assert_eq!(head.seq.0, 1);
    assert_eq!(head.hash, event_hash(&GENESIS, &bytes));
    assert_eq!(
        serde_json::to_value(&head).expect("serialises"),
        v["head"]["payload"],
        "the head's JSON is exactly the vector's"
    );
}

#[test]
fn checkpoint_v2_json_decodes_and_verifies() {
    let v = &vectors()["checkpoint_v2"];
    let wire = text(&v["wire_json"]);
    let cp = Checkpoint::decode(wire.as_bytes()).expect("a JSON checkpoint decodes");
    let state = cp.state.expect("version 2 has its state");
    let message = checkpoint_v2_message(
        &cp.table,
        &cp.device,
        cp.head_seq,
        &cp.head_hash,
        cp.signed_at_ns,
        &state,
    );
    assert_eq!(hex::encode(&message), text(&v["signed_message_hex"]));
    assert_eq!(cp.signed_message(), message);
    let key = PublicKey::from_hex(text(&v["device_public"])).expect("key");
    assert!(cp.verifies_with(&key), "the Python signature verifies");
}

#[test]
fn deck_commitment_matches() {
    let v = &vectors()["deck_commitment"];
    let salt = Hash32::from_hex(text(&v["salt"])).expect("salt");
    let order: Vec<Card> = v["order"]
        .as_array()
        .expect("order")
        .iter()
        .map(|c| Card::parse(text(c)).expect("card"))
        .collect();
    assert_eq!(order.len(), 52);
    let want = Hash32::from_hex(text(&v["commitment"])).expect("commitment");
    assert_eq!(deck_commitment(&salt, &order), want);
}
