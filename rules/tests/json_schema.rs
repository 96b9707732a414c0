//! The input and output of `roundledger settle` as JSON Schema, committed under
//! schemas/json/ and kept equal to the Rust types (`BLESS=1` rewrites them). Every worked
//! example's round (tests/data/examples.md) validates against the input schema, and its
//! settlement against the output schema.

fn committed(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../schemas/json")
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
        "schemas/json/{name} is stale: run BLESS=1 cargo test -p rules --test json_schema"
    );
}

#[test]
fn settle_schemas_are_committed_and_examples_validate() {
    let input = serde_json::to_value(schemars::schema_for!(schemas::settle::RoundInput)).unwrap();
    let output = serde_json::to_value(schemars::schema_for!(schemas::settle::Settlement)).unwrap();
    check_committed("settle-input.schema.json", &input);
    check_committed("settle-output.schema.json", &output);
    let input_v = jsonschema::validator_for(&input).unwrap();
    let output_v = jsonschema::validator_for(&output).unwrap();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/examples.md");
    let text = std::fs::read_to_string(path).unwrap();
    let mut n = 0;
    for chunk in text.split("```json").skip(1) {
        let v: serde_json::Value =
            serde_json::from_str(chunk.split("```").next().unwrap().trim()).unwrap();
        let round = &v["round"];
        let errors: Vec<String> = input_v.iter_errors(round).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
        let parsed: schemas::settle::RoundInput = serde_json::from_value(round.clone()).unwrap();
        let out = serde_json::to_value(rules::settle(&parsed).unwrap()).unwrap();
        let errors: Vec<String> = output_v.iter_errors(&out).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
        n += 1;
    }
    assert_eq!(n, 14);
    // A misspelt field is refused by the schema as by the parser.
    let mut bad = serde_json::from_str::<serde_json::Value>(
        text.split("```json")
            .nth(1)
            .unwrap()
            .split("```")
            .next()
            .unwrap()
            .trim(),
    )
    .unwrap()["round"]
        .clone();
    bad["dealr"] = bad["dealer"].clone();
    assert!(!input_v.is_valid(&bad));
}
