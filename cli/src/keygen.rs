//! `roundledger keygen --out FILE`: a fresh ed25519 key: an admin's (`enroll`, `serve
//! --admin-key`), a table device's (`simulate --device-keys`), or one for signing digests
//! (`digest --sign-key FILE`). The file holds the 32-byte secret as 64 hex characters, readable by
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
    let key = write_new_key(&args.out)?;
    eprintln!(
        "wrote the secret key to {}; its public key:",
        args.out.display()
    );
    println!("{}", key.public());
    Ok(Outcome::Clean)
}

/// The environment setting that lets keys derived from public labels be used (`serve
/// --trust-simulated-admin`, `simulate --simulated-keys`): tests only. Anybody can sign
/// with such a key, so a server trusting it lets any bus principal enroll any key.
pub const TEST_ONLY_ENV: &str = "ROUNDLEDGER_TEST_ONLY_SIMULATED_KEYS";

/// Refuses `flag` unless `TEST_ONLY_ENV` is `1`.
pub fn simulated_keys_allowed(flag: &str) -> Result<()> {
    anyhow::ensure!(
        std::env::var(TEST_ONLY_ENV).as_deref() == Ok("1"),
        "{flag} uses the simulated admin key, which anybody can sign with: tests only, never \
         a floor. Set {TEST_ONLY_ENV}=1 to run a test with it; otherwise make real keys \
         (`roundledger keygen`, `roundledger enroll`; README)"
    );
    Ok(())
}

/// Writes a fresh key to `path` (which must not exist), owner-only, and returns it.
pub fn write_new_key(path: &Path) -> Result<SigningKey> {
    anyhow::ensure!(!path.exists(), "{} already exists", path.display());
    let secret = crate::tokens::random_token()?;
    crate::tokens::write_private(path, format!("{secret}\n").as_bytes())?;
    read_signing_key(path)
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
