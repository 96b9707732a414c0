//! COMMANDS.md names every command the binary has, so the reference cannot fall behind.

use std::process::Command;

/// The command names `roundledger --help` lists, without `help`.
fn commands() -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_roundledger"))
        .arg("--help")
        .output()
        .expect("run roundledger --help");
    let text = String::from_utf8(out.stdout).expect("utf-8 help");
    let listed = text
        .split("Commands:")
        .nth(1)
        .expect("a Commands: section")
        .split("\n\n")
        .next()
        .expect("the list");
    listed
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

#[test]
fn commands_md_names_every_command() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../COMMANDS.md");
    let doc = std::fs::read_to_string(path).expect("COMMANDS.md");
    let names = commands();
    assert!(names.len() >= 20, "too few commands parsed: {names:?}");
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| !doc.contains(&format!("| `{n}")))
        .collect();
    assert!(
        missing.is_empty(),
        "COMMANDS.md lacks a row for: {missing:?}"
    );
}
