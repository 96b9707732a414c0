//! What the CLI's integration tests share: running the built binary with its output logged.
//! Each test binary uses part of it.
#![allow(dead_code)]

pub mod serve;

use std::process::{Command, Output};

/// Runs the built `roundledger` with `args` and echoes the command and its output to the
/// test log (shown on failure).
pub fn roundledger(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_roundledger"))
        .args(args)
        .output()
        .expect("running roundledger");
    eprintln!(
        "$ roundledger {}\n--- stdout\n{}--- stderr\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
