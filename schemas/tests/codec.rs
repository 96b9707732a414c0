//! Both wire forms round-trip every kind of event, and decoding bad bytes fails cleanly.

use schemas::codec::{self, WireFormat};
use schemas::*;

mod common;
use common::one_of_each;

#[test]
fn every_event_round_trips_in_both_forms() {
    for e in one_of_each() {
        for f in [WireFormat::Bincode, WireFormat::Json] {
            let bytes = codec::encode(&e, f);
            let (back, got) =
                codec::decode(&bytes).unwrap_or_else(|err| panic!("{}: {err}", e.body.type_name()));
            assert_eq!(got, f);
            assert_eq!(back, e);
        }
    }
}

#[test]
fn json_form_is_readable() {
    let e = &one_of_each()[9];
    let j = String::from_utf8(codec::to_json(e)).unwrap();
    assert!(
        j.contains(
            r#""body":{"type":"bet_placed","box_no":1,"kind":"ante","stake":{"chips":1000}}"#
        ),
        "{j}"
    );
}

#[test]
fn bad_bytes_are_errors_not_panics() {
    let good = codec::to_bincode(&one_of_each()[6]);
    assert_eq!(codec::decode(&[]), Err(DecodeError::Empty));
    assert!(matches!(
        codec::decode(&[2, 0, 0]),
        Err(DecodeError::Version(2))
    ));
    assert!(matches!(
        codec::decode(b"{not json"),
        Err(DecodeError::Json(_))
    ));
    let mut long = good.clone();
    long.push(0);
    assert!(matches!(
        codec::decode(&long),
        Err(DecodeError::TrailingBytes { extra: 1 })
    ));
    for cut in 0..good.len() {
        assert!(codec::decode(&good[..cut]).is_err());
    }
    assert!(matches!(
        codec::decode(&vec![1u8; codec::EVENT_LEN_MAX + 1]),
        Err(DecodeError::TooLarge { .. })
    ));
    // A table id that would break the NATS subject is refused in the bincode form too.
    let mut e = one_of_each()[0].clone();
    e.table = serde_json::from_str::<TableId>("\"ok\"").unwrap();
    let mut bytes = codec::to_bincode(&e);
    let i = bytes.windows(2).position(|w| w == b"ok").unwrap();
    bytes[i] = b'.';
    assert!(matches!(
        codec::decode(&bytes),
        Err(DecodeError::Id { field: "table", .. })
    ));
}

/// `EVENT_KINDS` is the catalogue: each sample's kind sits at its bincode variant index,
/// and the samples cover every kind (a new variant needs a sample and a name).
#[test]
fn event_kinds_are_the_catalogue_in_tag_order() {
    let samples = common::one_of_each();
    let mut seen = std::collections::BTreeSet::new();
    for e in &samples {
        let tag = codec::body_tag(&codec::to_bincode(e)).expect("a tag") as usize;
        assert_eq!(EVENT_KINDS.get(tag), Some(&e.body.type_name()), "{e:?}");
        seen.insert(tag);
    }
    assert_eq!(seen.len(), EVENT_KINDS.len(), "one sample of every kind");
}

/// A kind beyond the catalogue is named by our decoder, in either form.
#[test]
fn an_unknown_kind_is_named_in_either_form() {
    let mut e = common::one_of_each().remove(0);
    e.body = EventBody::RoundClosed;
    let mut bytes = codec::to_bincode(&e);
    let last = bytes.len() - 1;
    bytes[last] = 250; // RoundClosed has no fields: the last byte is its variant index.
    match codec::decode(&bytes) {
        Err(codec::DecodeError::UnknownKind { kind }) => assert_eq!(kind, "250"),
        other => panic!("{other:?}"),
    }
    let json = String::from_utf8(codec::to_json(&e))
        .expect("utf-8")
        .replace("\"round_closed\"", "\"card_teleported\"");
    match codec::decode(json.as_bytes()) {
        Err(codec::DecodeError::UnknownKind { kind }) => assert_eq!(kind, "card_teleported"),
        other => panic!("{other:?}"),
    }
    // A known kind with a broken field stays undecodable, not unknown.
    let broken = String::from_utf8(codec::to_json(&e))
        .expect("utf-8")
        .replace("\"seq\":", "\"seq\":\"x\",\"_\":");
    assert!(matches!(
        codec::decode(broken.as_bytes()),
        Err(codec::DecodeError::Json(_))
    ));
}
