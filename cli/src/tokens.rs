//! `roundledger tokens --out FILE`: writes a server access configuration with one fresh
//! random token per role (surveillance, finance, admin) and prints them, for a demo or a
//! first install (`demo` writes one the same way). Tokens come from the operating system's
//! random source (/dev/urandom); the file is readable by its owner only.

use crate::Outcome;
use anyhow::{Context, Result};
use std::io::Read;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// The config file to write (must not exist).
    #[arg(long)]
    out: PathBuf,
}

/// 32 random bytes as hex.
pub fn random_token() -> Result<String> {
    let mut b = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .context("reading /dev/urandom")?;
    Ok(hex::encode(b))
}

pub fn run(args: Args) -> Result<Outcome> {
    let tokens = write_config(&args.out)?;
    println!("wrote {} with one token per role:", args.out.display());
    print!("{}", render(&tokens));
    Ok(Outcome::Clean)
}

/// One token of an access configuration: (role, token).
pub type RoleToken = (&'static str, String);

/// Writes a fresh access configuration to `path` (which must not exist), readable by its
/// owner only, with one token per role (named after the role); returns the tokens.
pub fn write_config(path: &Path) -> Result<Vec<RoleToken>> {
    anyhow::ensure!(!path.exists(), "{} already exists", path.display());
    let mut tokens = Vec::new();
    for role in ["surveillance", "finance", "admin"] {
        tokens.push((role, random_token()?));
    }
    let config = serde_json::json!({
        "tokens": tokens
            .iter()
            .map(|(role, token)| serde_json::json!({"name": role, "role": role, "token": token}))
            .collect::<Vec<_>>()
    });
    write_private(path, serde_json::to_string_pretty(&config)?.as_bytes())?;
    Ok(tokens)
}

/// Writes a new file (refusing one that exists) readable by its owner only: access
/// configurations and key files.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    std::io::Write::write_all(&mut file, bytes)
        .with_context(|| format!("writing {}", path.display()))
}

/// The tokens, one line each: `  <role> <token>`.
pub fn render(tokens: &[RoleToken]) -> String {
    tokens
        .iter()
        .map(|(role, token)| format!("  {role:<13} {token}\n"))
        .collect()
}
