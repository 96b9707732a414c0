//! The demo's finance: the count room enters each drop box's count through the API,
//! signed with a count key the demo trusts, and finance reads the report of the floor's
//! gaming days, with the injected finance errors found among its variances.

use crate::client::{Client, ServerArgs};
use anyhow::{Context, Result};
use api::auth::{AccessConfig, CountKeyConfig};
use schemas::attest::SigningKey;
use schemas::count::{CountEntry, CountResult, SignedCount};
use std::path::Path;

/// A fresh count key, trusted in `access` and in its file at `path`.
pub fn trust_count_key(path: &Path, access: &mut AccessConfig) -> Result<SigningKey> {
    let mut secret = [0u8; 32];
    hex::decode_to_slice(crate::tokens::random_token()?, &mut secret)?;
    let key = SigningKey::from_secret(secret);
    access.count_keys.push(CountKeyConfig {
        name: "demo count room".into(),
        key: key.public().to_hex(),
    });
    crate::tokens::save(path, access)?;
    Ok(key)
}

/// A client of the demo's own server as `token`.
pub fn client(url: &str, token: &str) -> Result<Client> {
    let args = ServerArgs {
        server: Some(url.trim_end_matches('/').to_string()),
        token: Some(token.to_string()),
        ca: None,
    };
    Client::from_args(&args)?.context("a server URL")
}

/// Signs and enters every count through `POST /v1/counts`; how many were journaled.
pub fn enter_counts(client: &Client, key: &SigningKey, counts: &[CountResult]) -> Result<usize> {
    let signed_at_ns = crate::digest::now_ns()?;
    for c in counts {
        let signed = SignedCount::sign(key, c.clone(), signed_at_ns)?;
        let _: CountEntry = client
            .post("/v1/counts", &signed)
            .with_context(|| format!("entering the count of {}", c.drop_box_id))?;
    }
    Ok(counts.len())
}
