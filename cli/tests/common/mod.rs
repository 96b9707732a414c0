//! What the CLI's integration tests share: running the built binary with its output logged.
//! Each test binary uses part of it.
#![allow(dead_code)]

pub mod alerts;
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

/// The test-only setting that lets `serve --trust-simulated-admin` and `simulate
/// --simulated-keys` run.
pub const TEST_ONLY_SIMULATED_KEYS: (&str, &str) = ("ROUNDLEDGER_TEST_ONLY_SIMULATED_KEYS", "1");

/// Real keys as an operator makes them, through the CLI: an admin key `dir/admin.key`
/// (`keygen`) and per table a device key and the admin's enrollment of it (`keygen`,
/// `enroll`) in `dir/device-keys/`. Returns the admin's public key (hex) and that
/// directory, for `serve --admin-key` and `simulate --device-keys`.
pub fn device_keys(dir: &std::path::Path, tables: &[&str]) -> (String, std::path::PathBuf) {
    let keys = dir.join("device-keys");
    std::fs::create_dir_all(&keys).unwrap();
    let public = |path: &std::path::Path| {
        let out = roundledger(&["keygen", "--out", path.to_str().unwrap()]);
        assert!(out.status.success(), "keygen");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let admin_file = dir.join("admin.key");
    let admin = public(&admin_file);
    for table in tables {
        let device = public(&keys.join(format!("{table}.key")));
        let out = roundledger(&[
            "enroll",
            "--admin-key",
            admin_file.to_str().unwrap(),
            "--table",
            table,
            "--device",
            "dealer-terminal",
            "--device-key",
            &device,
        ]);
        assert!(out.status.success(), "enroll");
        std::fs::write(keys.join(format!("{table}.enrollment")), &out.stdout).unwrap();
    }
    (admin, keys)
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
