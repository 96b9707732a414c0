//! Access control: bearer tokens from the server's config file, each with a name and one
//! role, and the policy of which role may use which part of the API.
//!
//! Invariants: there is no open access: a request without a known token gets 401 (the
//! demo makes its own tokens and prints them); the policy is one table (`allowed`) keyed by
//! the area a path belongs to, and a path that belongs to no area is admin-only; tokens are
//! kept only as BLAKE3 hashes in memory.
//!
//! Config file (JSON, `serve --config FILE`):
//! `{"tokens": [{"name": "ana", "role": "surveillance", "token": "<at least 16 chars>"}],
//!   "count_keys": [{"name": "count team B", "key": "<ed25519 public key, hex>"}]}`.

use schemas::api::Role;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Shortest token accepted in a config file.
pub const TOKEN_LEN_MIN: usize = 16;
/// Most tokens in a config file.
pub const TOKENS_MAX: usize = 10_000;

/// One token as configured: the person it names, their role, and the token itself or
/// (as `roundledger tokens add` writes it, so the file holds no secret) its BLAKE3 hash.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// The person the token names, as the audit log records them: 1 to 64 bytes.
    pub name: String,
    /// The role whose rights the token carries (`allowed`).
    pub role: Role,
    /// The token itself: at least `TOKEN_LEN_MIN` bytes, no whitespace; empty when
    /// `token_hash` is given.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub token: String,
    /// The token's BLAKE3 hash as 64 hex digits, given in place of `token`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_hash: Option<String>,
}

/// The server's access configuration file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AccessConfig {
    /// Every token the server accepts: at least one, at most `TOKENS_MAX`.
    pub tokens: Vec<TokenConfig>,
    /// The count room's keys whose signed counts the server takes (`POST /v1/counts`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub count_keys: Vec<CountKeyConfig>,
}

/// A trusted count key: whose it is and its ed25519 public key (hex).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CountKeyConfig {
    /// Whose key it is, such as a count team.
    pub name: String,
    /// The ed25519 public key as 64 hex digits (32 bytes).
    pub key: String,
}

impl AccessConfig {
    /// The trusted count keys by key; a key that is not 32 bytes of hex is an error.
    pub fn count_keys(&self) -> Result<BTreeMap<schemas::attest::PublicKey, String>, ConfigError> {
        let mut out = BTreeMap::new();
        for k in &self.count_keys {
            let key = schemas::attest::PublicKey::from_hex(&k.key)
                .map_err(|e| ConfigError::Invalid(format!("count key of {}: {e}", k.name)))?;
            out.insert(key, k.name.clone());
        }
        Ok(out)
    }
}

/// Why the access configuration is unusable.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The access file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The access file's path.
        path: String,
        /// The I/O failure.
        #[source]
        source: std::io::Error,
    },
    /// The access file is not JSON of the expected shape.
    #[error("parsing {path}: {source}")]
    Parse {
        /// The access file's path.
        path: String,
        /// The JSON error, with its line and column.
        #[source]
        source: serde_json::Error,
    },
    /// The file parses but breaks a rule; the text names the rule.
    #[error("{0}")]
    Invalid(String),
}

impl AccessConfig {
    /// Reads and parses the access file at `path`; `Tokens::new` checks its tokens.
    pub fn load(path: &Path) -> Result<AccessConfig, ConfigError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: p.clone(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| ConfigError::Parse { path: p, source })
    }
}

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The name of the caller's token (`TokenConfig::name`).
    pub name: String,
    /// The caller's role, which `allowed` checks.
    pub role: Role,
}

/// Token hash -> caller.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    by_hash: BTreeMap<[u8; 32], Caller>,
}

impl Tokens {
    /// The tokens of `config`; refuses none, more than `TOKENS_MAX`, a bad name, a weak
    /// token or a token used twice.
    pub fn new(config: &AccessConfig) -> Result<Tokens, ConfigError> {
        if config.tokens.is_empty() {
            return Err(ConfigError::Invalid(
                "no tokens: nobody could use the API".into(),
            ));
        }
        if config.tokens.len() > TOKENS_MAX {
            return Err(ConfigError::Invalid(format!(
                "{} tokens, at most {TOKENS_MAX}",
                config.tokens.len()
            )));
        }
        let mut by_hash = BTreeMap::new();
        for t in &config.tokens {
            if t.name.is_empty() || t.name.len() > 64 {
                return Err(ConfigError::Invalid(
                    "token names are 1-64 characters".into(),
                ));
            }
            let caller = Caller {
                name: t.name.clone(),
                role: t.role,
            };
            if by_hash.insert(token_key(t)?, caller).is_some() {
                return Err(ConfigError::Invalid(format!(
                    "token of {} is used twice",
                    t.name
                )));
            }
        }
        Ok(Tokens { by_hash })
    }

    /// The caller a token belongs to.
    pub fn caller(&self, token: &str) -> Option<&Caller> {
        self.by_hash.get(&hash(token))
    }
}

/// Why the `Authorization` header names no single bearer token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BearerError {
    /// No header, another scheme, or a value that is not text.
    Missing,
    /// More than one `Authorization` header: which one counts is ambiguous.
    Ambiguous,
}

/// The bearer token of a request. The scheme name is case-insensitive (RFC 9110
/// 11.1); two `Authorization` headers are refused rather than one picked.
pub fn bearer(headers: &axum::http::HeaderMap) -> Result<&str, BearerError> {
    let mut values = headers.get_all(axum::http::header::AUTHORIZATION).iter();
    let value = values.next().ok_or(BearerError::Missing)?;
    if values.next().is_some() {
        return Err(BearerError::Ambiguous);
    }
    let (scheme, token) = value
        .to_str()
        .ok()
        .and_then(|v| v.split_once(' '))
        .ok_or(BearerError::Missing)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(BearerError::Missing);
    }
    Ok(token.trim())
}

fn hash(token: &str) -> [u8; 32] {
    *blake3::hash(token.as_bytes()).as_bytes()
}

/// A token's hash as an access file keeps it (`token_hash`).
pub fn token_hash_hex(token: &str) -> String {
    hex::encode(hash(token))
}

/// The hash a configured token is looked up by: of `token`, or `token_hash` itself.
fn token_key(t: &TokenConfig) -> Result<[u8; 32], ConfigError> {
    let bad = |why: &str| ConfigError::Invalid(format!("token of {}: {why}", t.name));
    match (&t.token, &t.token_hash) {
        (token, None) => {
            if token.len() < TOKEN_LEN_MIN || token.contains(char::is_whitespace) {
                return Err(bad(&format!(
                    "at least {TOKEN_LEN_MIN} characters, no spaces"
                )));
            }
            Ok(hash(token))
        }
        (token, Some(h)) if token.is_empty() => {
            let mut out = [0u8; 32];
            hex::decode_to_slice(h, &mut out)
                .map_err(|_| bad("token_hash is not 64 hex digits"))?;
            Ok(out)
        }
        _ => Err(bad("give token or token_hash, not both")),
    }
}

/// The parts of the API, for the access policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Area {
    /// Who am I, server status.
    Anyone,
    /// The list of tables (`/v1/tables`).
    Tables,
    /// Rounds: a table's rounds and the round search (`/v1/rounds`).
    Rounds,
    /// The dispute list (`/v1/disputes`).
    Disputes,
    /// The finding list (`/v1/findings`).
    Findings,
    /// Chain status, quarantine and operator alerts.
    Chain,
    /// Jackpot pools, recomputed vs shown (`/v1/pools`).
    Pools,
    /// Finance summaries, reports and the count room's counts.
    Finance,
    /// The live feed of server-sent events (`/v1/feed`).
    Feed,
    /// Reading cases: `GET` on `/v1/cases`.
    CasesRead,
    /// Changing cases: any other method on `/v1/cases`.
    CasesWrite,
    /// Evidence bundles and the export (`/v1/evidence`, `/v1/export`).
    Evidence,
    /// The audit log (`/v1/audit`).
    Audit,
    /// Sealed gaming days.
    Days,
    /// Anything not listed: admin only.
    Other,
}

/// The whole access policy.
pub fn allowed(role: Role, area: Area) -> bool {
    use Area::*;
    match role {
        Role::Admin => true,
        Role::Surveillance => matches!(
            area,
            Anyone
                | Tables
                | Rounds
                | Disputes
                | Findings
                | Chain
                | Pools
                | Feed
                | CasesRead
                | CasesWrite
                | Evidence
                | Days
        ),
        Role::Finance => matches!(area, Anyone | Tables | Finance | Pools | Days),
    }
}

/// Which area a request belongs to.
pub fn area_of(method: &str, path: &str) -> Area {
    let parts: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    match parts.as_slice() {
        ["v1", "whoami"] | ["v1", "status"] => Area::Anyone,
        ["v1", "tables"] => Area::Tables,
        ["v1", "tables", _, "finance"]
        | ["v1", "finance", ..]
        | ["v1", "reports", ..]
        | ["v1", "counts"] => Area::Finance,
        ["v1", "tables", _, "rounds", ..] | ["v1", "rounds"] => Area::Rounds,
        ["v1", "disputes"] => Area::Disputes,
        ["v1", "findings"] | ["v1", "analytics"] => Area::Findings,
        ["v1", "chain"] | ["v1", "quarantine", ..] | ["v1", "alerts"] => Area::Chain,
        ["v1", "pools"] => Area::Pools,
        ["v1", "feed"] => Area::Feed,
        ["v1", "cases", ..] if method == "GET" => Area::CasesRead,
        ["v1", "cases", ..] => Area::CasesWrite,
        ["v1", "evidence", ..] | ["v1", "export"] => Area::Evidence,
        ["v1", "audit"] => Area::Audit,
        ["v1", "days", ..] => Area::Days,
        _ => Area::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_separates_finance_from_surveillance() {
        let f = |m, p| area_of(m, p);
        assert!(!allowed(Role::Finance, f("GET", "/v1/tables/T/rounds/3")));
        assert!(!allowed(Role::Finance, f("GET", "/v1/cases")));
        assert!(!allowed(Role::Finance, f("GET", "/v1/evidence/T/3")));
        assert!(allowed(Role::Finance, f("GET", "/v1/finance")));
        assert!(!allowed(Role::Surveillance, f("GET", "/v1/finance")));
        for p in [
            "/v1/reports",
            "/v1/reports/jackpots",
            "/v1/finance/rounds/T/3",
        ] {
            assert!(allowed(Role::Finance, f("GET", p)), "{p}");
            assert!(allowed(Role::Admin, f("GET", p)), "{p}");
            assert!(!allowed(Role::Surveillance, f("GET", p)), "{p}");
        }
        assert!(!allowed(Role::Surveillance, f("GET", "/v1/audit")));
        assert!(allowed(Role::Surveillance, f("GET", "/v1/analytics")));
        assert!(!allowed(Role::Finance, f("GET", "/v1/analytics")));
        assert!(allowed(Role::Surveillance, f("POST", "/v1/cases/1/notes")));
        assert!(allowed(Role::Admin, f("GET", "/v1/audit")));
        assert!(allowed(Role::Surveillance, f("GET", "/v1/quarantine")));
        assert!(!allowed(Role::Finance, f("GET", "/v1/quarantine/3")));
        assert_eq!(f("GET", "/v1/something-new"), Area::Other);
        for role in [Role::Surveillance, Role::Finance, Role::Admin] {
            assert!(allowed(role, f("GET", "/v1/days")));
            assert!(allowed(role, f("GET", "/v1/days/2026-11-25")));
        }
        assert!(!allowed(Role::Surveillance, Area::Other));
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive_and_one_header_counts() {
        use axum::http::{header::AUTHORIZATION, HeaderMap, HeaderValue};
        let with = |values: &[&str]| {
            let mut h = HeaderMap::new();
            for v in values {
                h.append(AUTHORIZATION, HeaderValue::from_str(v).unwrap());
            }
            h
        };
        for v in ["Bearer abc", "bearer abc", "BEARER  abc"] {
            assert_eq!(bearer(&with(&[v])), Ok("abc"), "{v}");
        }
        assert_eq!(bearer(&with(&[])), Err(BearerError::Missing));
        assert_eq!(bearer(&with(&["Basic abc"])), Err(BearerError::Missing));
        assert_eq!(bearer(&with(&["Bearerabc"])), Err(BearerError::Missing));
        assert_eq!(
            bearer(&with(&["Bearer abc", "Bearer def"])),
            Err(BearerError::Ambiguous)
        );
    }

    #[test]
    fn weak_and_duplicate_tokens_are_refused() {
        let t = |token: &str| TokenConfig {
            name: "a".into(),
            role: Role::Admin,
            token: token.into(),
            token_hash: None,
        };
        assert!(Tokens::new(&AccessConfig {
            tokens: vec![t("short")],
            count_keys: vec![],
        })
        .is_err());
        assert!(Tokens::new(&AccessConfig {
            tokens: vec![],
            count_keys: vec![],
        })
        .is_err());
        let long = "0123456789abcdef";
        assert!(Tokens::new(&AccessConfig {
            tokens: vec![t(long), t(long)],
            count_keys: vec![],
        })
        .is_err());
        let ok = Tokens::new(&AccessConfig {
            tokens: vec![t(long)],
            count_keys: vec![],
        })
        .unwrap();
        assert_eq!(ok.caller(long).unwrap().role, Role::Admin);
        assert!(ok.caller("0123456789abcdeX").is_none());
    }
}
