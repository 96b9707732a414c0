//! The one way roundledger clients connect: open, or with a credential and TLS.

use crate::creds::Credentials;
use crate::role::inbox_prefix;
use crate::{Error, Result};
use async_nats::{ConnectErrorKind, ConnectOptions, ServerAddr};
use std::path::PathBuf;

/// What a client needs to connect. `Default` is open: no credential, no TLS (a server
/// started without a roster).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// A `Credentials` JSON file: authenticate with its nkey, reply on its own inbox.
    pub credentials: Option<PathBuf>,
    /// The CA (PEM) that signed the server's certificate: TLS is then required.
    pub ca_file: Option<PathBuf>,
}

/// Connects to `url`, one server or a comma-separated list (`nats://` or `tls://`), as
/// `access` says. Errors name the url and tell refused authorization, TLS and an
/// unreachable server apart.
pub async fn connect(url: &str, access: &Access) -> Result<async_nats::Client> {
    connect_with(url, access, ConnectOptions::new()).await
}

/// `connect` starting from the caller's options (event callback, name, timeouts).
pub async fn connect_with(
    url: &str,
    access: &Access,
    options: ConnectOptions,
) -> Result<async_nats::Client> {
    let servers = parse_servers(url)?;
    let (options, principal) = apply(access, options)?;
    let options = if url.contains("tls://") {
        options.require_tls(true)
    } else {
        options
    };
    options.connect(servers).await.map_err(|e| {
        let (url, detail) = (url.to_string(), e.to_string());
        match e.kind() {
            ConnectErrorKind::AuthorizationViolation | ConnectErrorKind::Authentication => {
                Error::AuthorizationRefused {
                    url,
                    principal,
                    detail,
                }
            }
            ConnectErrorKind::Tls => Error::Tls { url, detail },
            ConnectErrorKind::Io if is_tls_failure(&e) => Error::Tls { url, detail },
            ConnectErrorKind::Io | ConnectErrorKind::TimedOut | ConnectErrorKind::Dns => {
                Error::Unreachable { url, detail }
            }
            _ => Error::Connect { url, detail },
        }
    })
}

/// Adds the credential (nkey, inbox prefix, name) and the CA to `options`. Returns them
/// with the principal's name for errors (`anonymous` without a credential).
fn apply(access: &Access, mut options: ConnectOptions) -> Result<(ConnectOptions, String)> {
    let mut principal = "anonymous".to_string();
    if let Some(path) = &access.credentials {
        let creds = Credentials::load(path)?;
        options = options
            .nkey(creds.nkey_seed.clone())
            .custom_inbox_prefix(inbox_prefix(&creds.name))
            .name(&creds.name);
        principal = format!("principal {:?}", creds.name);
    }
    if let Some(ca) = &access.ca_file {
        options = options.add_root_certificates(ca.clone()).require_tls(true);
    }
    Ok((options, principal))
}

/// Whether an IO error came from the TLS handshake: rustls reports a refused certificate
/// or a broken handshake as an `InvalidData` IO error.
fn is_tls_failure(e: &async_nats::ConnectError) -> bool {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::InvalidData {
                return true;
            }
        }
        source = s.source();
    }
    false
}

fn parse_servers(url: &str) -> Result<Vec<ServerAddr>> {
    let servers: Vec<ServerAddr> = url
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<ServerAddr>().map_err(|e| Error::Url {
                url: url.to_string(),
                why: format!("{s:?}: {e}"),
            })
        })
        .collect::<Result<_>>()?;
    if servers.is_empty() {
        return Err(Error::Url {
            url: url.to_string(),
            why: "no server".to_string(),
        });
    }
    Ok(servers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_lists_parse() {
        assert_eq!(
            parse_servers("nats://127.0.0.1:1, tls://127.0.0.1:2")
                .unwrap()
                .len(),
            2
        );
        assert!(matches!(parse_servers(" , "), Err(Error::Url { .. })));
        assert!(matches!(
            parse_servers("http://x:1"),
            Err(Error::Url { .. })
        ));
    }
}
