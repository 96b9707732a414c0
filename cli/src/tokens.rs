//! `roundledger tokens --out FILE`: writes a server access configuration with one fresh
//! random token per role (surveillance, finance, admin) and prints them, for a demo or a
//! first install. Tokens come from the operating system's random source (/dev/urandom).

use crate::Outcome;
use anyhow::{Context, Result};
use std::io::Read;
use std::path::PathBuf;

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
    anyhow::ensure!(!args.out.exists(), "{} already exists", args.out.display());
    let mut tokens = Vec::new();
    for (name, role) in [
        ("surveillance", "surveillance"),
        ("finance", "finance"),
        ("admin", "admin"),
    ] {
        tokens.push(serde_json::json!({"name": name, "role": role, "token": random_token()?}));
    }
    let config = serde_json::json!({ "tokens": tokens });
    std::fs::write(&args.out, serde_json::to_string_pretty(&config)?)
        .with_context(|| format!("writing {}", args.out.display()))?;
    println!("wrote {} with one token per role:", args.out.display());
    for t in &tokens {
        println!(
            "  {:<13} {}",
            t["role"].as_str().unwrap_or(""),
            t["token"].as_str().unwrap_or("")
        );
    }
    Ok(Outcome::Clean)
}
