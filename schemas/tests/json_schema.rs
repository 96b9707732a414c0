//! The JSON Schema of the JSON wire form is generated from the Rust types and committed
//! under schemas/json/ for device makers; this test keeps the committed file equal to the
//! types (`BLESS=1` rewrites it) and validates real events against it.

mod common;
use common::one_of_each;

fn committed(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("json")
        .join(name)
}

fn check_committed(name: &str, generated: &serde_json::Value) {
    let text = serde_json::to_string_pretty(generated).unwrap() + "\n";
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(committed(name), &text).unwrap();
    }
    let on_disk = std::fs::read_to_string(committed(name)).unwrap_or_default();
    assert!(
        on_disk == text,
        "schemas/json/{name} is stale: run BLESS=1 cargo test -p schemas --test json_schema"
    );
}

#[test]
fn event_schema_is_committed_and_real_events_validate() {
    let schema = serde_json::to_value(schemars::schema_for!(schemas::Event)).unwrap();
    check_committed("event.schema.json", &schema);
    let validator = jsonschema::validator_for(&schema).unwrap();
    for e in one_of_each() {
        let j: serde_json::Value = serde_json::from_slice(&schemas::codec::to_json(&e)).unwrap();
        let errors: Vec<String> = validator.iter_errors(&j).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{}: {errors:?}", e.body.type_name());
    }
    // And the schema refuses what the decoder refuses.
    let mut bad: serde_json::Value =
        serde_json::from_slice(&schemas::codec::to_json(&one_of_each()[6])).unwrap();
    bad["body"]["card"] = "1x".into();
    assert!(!validator.is_valid(&bad));
    bad = serde_json::from_slice(&schemas::codec::to_json(&one_of_each()[6])).unwrap();
    bad["body"]["type"] = "card_teleported".into();
    assert!(!validator.is_valid(&bad));
}
