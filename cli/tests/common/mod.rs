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

/// Writes the simulated admin's key file (mode 0600) into `dir`: a seeded ledger trusts it.
pub fn simulated_admin_key(dir: &std::path::Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let admin = dir.join("admin.key");
    let secret = blake3::derive_key(
        "roundledger/simulated-key/v1",
        b"roundledger simulated admin",
    );
    std::fs::write(&admin, hex::encode(secret)).unwrap();
    std::fs::set_permissions(&admin, std::fs::Permissions::from_mode(0o600)).unwrap();
    admin
}
