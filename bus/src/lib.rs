//! Who may speak on the bus: each process that reaches NATS is a principal with its own
//! nkey credential, a role, and the subjects that role may publish and subscribe to.
//!
//! - `Role` and `permissions`: least privilege per role. A device speaks only for its
//!   table; ingest owns the stream and the consumer, publishes day seals, but never speaks
//!   for a table; an observer only reads heads, alerts, day seals and stream info.
//! - `Credentials`: a principal's name, role and nkey seed, a JSON file written mode 0600.
//! - `Roster` and `server_config`: every principal the server knows, and the
//!   nats-server `authorization` (and `tls`) config derived from it. Revoking marks a user;
//!   the next config leaves it out, and a server reload closes its connections.
//! - `generate_tls`: a CA and a loopback server certificate (tests, demo, cluster routes).
//! - `connect` with an `Access`: the one way clients connect, open or secured.
//!
//! Invariants:
//! - A seed is never logged or printed: `Credentials`' `Debug` redacts it.
//! - Every principal has its own inbox prefix (`_INBOX_<name>`) and may subscribe only
//!   there for replies, so no principal reads another's replies.
//! - Names are 1 to 64 characters of `[A-Za-z0-9_-]`: never a subject wildcard or dot.
//! - A config never has an empty user list (nats-server would then accept anyone): with
//!   no active user it holds one placeholder key whose seed is discarded and that may do
//!   nothing.
//!
//! It must never weaken a role's permissions to make a client work: a client that needs
//! more says so here, in `permissions`, with a reason.

mod config;
mod connect;
mod creds;
mod role;
mod tls;

pub use config::{server_config, tls_block};
pub use connect::{connect, connect_with, Access};
pub use creds::{Credentials, Roster, User};
pub use role::{inbox_prefix, permissions, validate_name, Permissions, Role, NAME_LEN_MAX};
pub use tls::{generate_tls, TlsFiles};

use std::path::PathBuf;

/// Why a credential, roster, certificate or connection could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("principal name {name:?} is not allowed: {why}")]
    BadName { name: String, why: &'static str },
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not valid {what} JSON: {source}")]
    Json {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("nkey of principal {name:?}: {source}")]
    Nkey {
        name: String,
        #[source]
        source: nkeys::error::Error,
    },
    #[error("generating TLS certificates: {source}")]
    Cert {
        #[source]
        source: rcgen::Error,
    },
    #[error("no principal {name:?} in the roster")]
    NoSuchUser { name: String },
    #[error("bad server url {url:?}: {why}")]
    Url { url: String, why: String },
    #[error("{url}: the server refused authorization for {principal} (unknown, revoked or missing credentials): {detail}")]
    AuthorizationRefused {
        url: String,
        principal: String,
        detail: String,
    },
    #[error("{url}: TLS failed (is the CA file right, and does the url need tls://?): {detail}")]
    Tls { url: String, detail: String },
    #[error("{url}: unreachable: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("{url}: connecting failed: {detail}")]
    Connect { url: String, detail: String },
}

/// This crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
