//! Every worked example of the seeds' EXAMPLES.md, settled through the engine: the net
//! result per box and line, and the pool after the round's jackpot payments. Lines an
//! example does not list count as 0 (EXAMPLES lists zero lines only sometimes). The
//! examples are read from the in-repo copy, tests/data/examples.md, which one test keeps
//! equal to the seed when the seeds are found.

use schemas::settle::RoundInput;
use schemas::{BoxNo, Money, PayLine};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The in-repo copy of the seeds' EXAMPLES.md.
fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/examples.md")
}

/// The seeds directory: `$ROUNDLEDGER_SEEDS` (relative to the workspace root) if set,
/// else `../shared/seeds` beside the workspace. None when it is not a directory, even
/// when set explicitly, so `ROUNDLEDGER_SEEDS=/nonexistent` runs the tests without seeds.
fn seeds() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = match std::env::var_os("ROUNDLEDGER_SEEDS").filter(|d| !d.is_empty()) {
        Some(d) => root.join(d),
        None => root.join("../shared/seeds"),
    };
    dir.is_dir().then_some(dir)
}

/// Says on stderr, past the test harness's capture, what did not run.
fn skipped(what: &str) {
    let line = format!("SKIPPED (no ../shared/seeds or $ROUNDLEDGER_SEEDS): {what}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

struct Example {
    title: String,
    round: RoundInput,
    net: BTreeMap<u8, BTreeMap<String, i64>>,
    pool_after: i64,
}

fn examples() -> Vec<Example> {
    let path = data();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    let mut title = String::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("```json") {
        if let Some(h) = rest[..i].rfind("\n## ") {
            title = rest[h + 4..].lines().next().unwrap_or_default().to_string();
        }
        let body = &rest[i + 7..];
        let end = body.find("```").unwrap();
        let v: serde_json::Value = serde_json::from_str(body[..end].trim()).unwrap();
        let round: RoundInput = serde_json::from_value(v["round"].clone())
            .unwrap_or_else(|e| panic!("{title}: round does not parse: {e}"));
        let net =
            serde_json::from_value::<BTreeMap<String, BTreeMap<String, i64>>>(v["net"].clone())
                .unwrap()
                .into_iter()
                .map(|(k, v)| (k.parse().unwrap(), v))
                .collect();
        out.push(Example {
            title: title.clone(),
            round,
            net,
            pool_after: v["pool_after"].as_i64().unwrap(),
        });
        rest = &body[end + 3..];
    }
    out
}

fn check(e: &Example) {
    let s = rules::settle(&e.round).unwrap_or_else(|err| panic!("{}: {err}", e.title));
    let got = s.net();
    let mut keys: Vec<(u8, String)> = Vec::new();
    for (b, lines) in &e.net {
        keys.extend(lines.keys().map(|l| (*b, l.clone())));
    }
    for (b, lines) in &got {
        keys.extend(lines.keys().map(|l| (b.0, l.name().to_string())));
    }
    for (b, line) in keys {
        let want = e
            .net
            .get(&b)
            .and_then(|l| l.get(&line))
            .copied()
            .unwrap_or(0);
        let have = got
            .get(&BoxNo(b))
            .and_then(|l| l.iter().find(|(k, _)| k.name() == line).map(|(_, m)| m.0))
            .unwrap_or(0);
        assert_eq!(have, want, "{}: box {b} {line}\n{s:#?}", e.title);
    }
    assert_eq!(s.pool_after, Money(e.pool_after), "{}: pool after", e.title);
    // Every line cites a clause of the round's rule set.
    for b in &s.boxes {
        for l in &b.lines {
            assert!(
                l.clause.starts_with(e.round.game.code()),
                "{}: {:?}",
                e.title,
                l
            );
        }
    }
}

#[test]
fn every_worked_example_settles_as_published() {
    let all = examples();
    assert_eq!(all.len(), 14, "EXAMPLES.md has 14 worked rounds");
    for e in &all {
        check(e);
    }
}

#[test]
fn examples_cover_every_rule_set() {
    let games: std::collections::BTreeSet<_> = examples().iter().map(|e| e.round.game).collect();
    assert_eq!(games.len(), 5);
    let _ = PayLine::Ante;
}

/// The worked examples: the text from the first `##` heading on.
fn body(text: &str) -> &str {
    text.find("\n## ").map_or("", |i| &text[i + 1..])
}

#[test]
fn the_in_repo_examples_are_the_seeds() {
    let Some(seeds) = seeds() else {
        return skipped("in-repo examples not compared with the seed EXAMPLES.md");
    };
    let seed = std::fs::read_to_string(seeds.join("EXAMPLES.md")).unwrap();
    let ours = std::fs::read_to_string(data()).unwrap();
    if std::env::var_os("BLESS").is_some() {
        let header = &ours[..ours.len() - body(&ours).len()];
        std::fs::write(data(), format!("{header}{}", body(&seed))).unwrap();
    }
    assert!(
        body(&std::fs::read_to_string(data()).unwrap()) == body(&seed),
        "rules/tests/data/examples.md differs from {}: rerun with BLESS=1 and review the diff",
        seeds.join("EXAMPLES.md").display()
    );
}
