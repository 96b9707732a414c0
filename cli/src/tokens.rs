//! `roundledger tokens`: the server's access file. `--out FILE` writes a first one with
//! one fresh token per role (a demo or a first install). `add` gives one person a token
//! (printed once; the file keeps only its hash), `revoke` removes it, `list` shows who
//! may call, and `count-key` trusts a counter's key. A running server reloads the file
//! within `api::ACCESS_POLL`. Tokens come from /dev/urandom; the file is owner-only.

use crate::Outcome;
use anyhow::{bail, Context, Result};
use api::auth::{AccessConfig, CountKeyConfig, TokenConfig};
use schemas::api::Role;
use std::io::Read;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// Write a new access file with one token per role (must not exist).
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<TokensCommand>,
}

#[derive(clap::Subcommand)]
enum TokensCommand {
    /// Give a person a token of one role; prints it once, keeps only its hash.
    Add {
        #[arg(long)]
        config: PathBuf,
        /// The person, as the audit log will name them.
        #[arg(long)]
        name: String,
        #[arg(long, value_parser = parse_role)]
        role: Role,
    },
    /// Remove a person's token: refused from the server's next reload of the file.
    Revoke {
        #[arg(long)]
        config: PathBuf,
        #[arg(long)]
        name: String,
    },
    /// Who may call, with each role (tokens are not shown).
    List {
        #[arg(long)]
        config: PathBuf,
    },
    /// Trust a counter's public key for `POST /v1/counts` (replaces one of the same name).
    CountKey {
        #[arg(long)]
        config: PathBuf,
        #[arg(long)]
        name: String,
        /// The ed25519 public key, hex (`roundledger keygen` prints it).
        #[arg(long)]
        key: String,
    },
}

fn parse_role(s: &str) -> Result<Role, String> {
    serde_json::from_value(serde_json::Value::from(s))
        .map_err(|_| format!("{s:?}: surveillance, finance or admin"))
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
    match (args.out, args.command) {
        (Some(out), _) => {
            let tokens = write_config(&out)?;
            println!("wrote {} with one token per role:", out.display());
            print!("{}", render(&tokens));
        }
        (None, Some(c)) => edit(c)?,
        (None, None) => {
            bail!("tokens needs --out FILE or a subcommand (add, revoke, list, count-key)")
        }
    }
    Ok(Outcome::Clean)
}

fn edit(c: TokensCommand) -> Result<()> {
    match c {
        TokensCommand::Add { config, name, role } => {
            let mut a = load(&config)?;
            if a.tokens.iter().any(|t| t.name == name) {
                bail!("{name} already has a token; revoke it first");
            }
            let token = random_token()?;
            a.tokens.push(TokenConfig {
                name: name.clone(),
                role,
                token: String::new(),
                token_hash: Some(api::auth::token_hash_hex(&token)),
            });
            save(&config, &a)?;
            println!("token of {name} ({}), shown once:\n  {token}", role.name());
        }
        TokensCommand::Revoke { config, name } => {
            let mut a = load(&config)?;
            let before = a.tokens.len();
            a.tokens.retain(|t| t.name != name);
            anyhow::ensure!(a.tokens.len() < before, "no token named {name}");
            save(&config, &a)?;
            println!("revoked the token of {name}");
        }
        TokensCommand::List { config } => print!("{}", listing(&load(&config)?)),
        TokensCommand::CountKey { config, name, key } => {
            let mut a = load(&config)?;
            a.count_keys.retain(|k| k.name != name);
            a.count_keys.push(CountKeyConfig {
                name: name.clone(),
                key,
            });
            save(&config, &a)?;
            println!("{name}'s counts are trusted");
        }
    }
    Ok(())
}

fn listing(a: &AccessConfig) -> String {
    let mut out = String::new();
    for t in &a.tokens {
        let kept = if t.token_hash.is_some() {
            "hash"
        } else {
            "token"
        };
        out += &format!("  {:<24} {:<13} ({kept} kept)\n", t.name, t.role.name());
    }
    for k in &a.count_keys {
        out += &format!("  {:<24} count key     {}\n", k.name, k.key);
    }
    out
}

fn load(path: &Path) -> Result<AccessConfig> {
    AccessConfig::load(path).with_context(|| format!("--config {}", path.display()))
}

/// Checks `a` as the server would, then replaces the file whole (a new owner-only file
/// renamed over it), so a reading server never sees half of it.
pub fn save(path: &Path, a: &AccessConfig) -> Result<()> {
    api::auth::Tokens::new(a).context("the changed file would not load")?;
    a.count_keys().context("the changed file would not load")?;
    let tmp = path.with_extension("json.new");
    let _ = std::fs::remove_file(&tmp);
    write_private(&tmp, serde_json::to_string_pretty(a)?.as_bytes())?;
    std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))
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
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", path.display()))
}

/// The tokens, one line each: `  <role> <token>`.
pub fn render(tokens: &[RoleToken]) -> String {
    tokens
        .iter()
        .map(|(role, token)| format!("  {role:<13} {token}\n"))
        .collect()
}
