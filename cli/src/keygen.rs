//! `roundledger keygen --out FILE`: a fresh ed25519 key for signing digests (`digest
//! --sign-key FILE`). The file holds the 32-byte secret as 64 hex characters, readable by
//! its owner only; the public key is printed, to be handed to whoever will check the
//! House's digests (`verify --against DIGEST --signer PUBLIC_KEY`). The secret comes from
//! the operating system's random source, like the API tokens (`tokens`).

use crate::Outcome;
use anyhow::{Context, Result};
use schemas::attest::{PublicKey, SigningKey};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// The key file to write (must not exist).
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: Args) -> Result<Outcome> {
    anyhow::ensure!(!args.out.exists(), "{} already exists", args.out.display());
    let secret = crate::tokens::random_token()?;
    crate::tokens::write_private(&args.out, format!("{secret}\n").as_bytes())?;
    let key = read_signing_key(&args.out)?;
    eprintln!(
        "wrote the secret key to {}; its public key:",
        args.out.display()
    );
    println!("{}", key.public());
    Ok(Outcome::Clean)
}

/// Reads a key file written by `keygen`. Refuses a file that others can read (as ssh
/// does: whoever reads it can sign digests in the House's name) and anything but 64 hex
/// characters.
pub fn read_signing_key(path: &Path) -> Result<SigningKey> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .with_context(|| format!("reading the key file {}", path.display()))?
            .permissions()
            .mode();
        anyhow::ensure!(
            mode & 0o077 == 0,
            "key file {} has permissions {:o}: it must be readable by its owner only (chmod 600)",
            path.display(),
            mode & 0o777
        );
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the key file {}", path.display()))?;
    let mut secret = [0u8; 32];
    hex::decode_to_slice(text.trim(), &mut secret).map_err(|e| {
        anyhow::anyhow!(
            "key file {}: not a secret key of 64 hex characters ({e})",
            path.display()
        )
    })?;
    Ok(SigningKey::from_secret(secret))
}

/// Parses a `--seal-key-pub` value.
pub fn public_key(hex: &str) -> Result<PublicKey> {
    PublicKey::from_hex(hex.trim())
        .map_err(|e| anyhow::anyhow!("--seal-key-pub: not a public key of 64 hex characters ({e})"))
}
