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
//! - `generate_tls`: a CA and a loopback server certificate (tests, demo, cluster routes);
//!   `init_tls` and `rotate_server_cert`: an operator's CA and a server certificate for the
//!   hosts and addresses devices connect to, renewed under the same CA.
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

#![warn(missing_docs)]

mod config;
mod connect;
mod creds;
mod role;
mod tls;

pub use config::{server_config, tls_block};
pub use connect::{connect, connect_with, Access};
pub use creds::{Credentials, Roster, User};
pub use role::{inbox_prefix, permissions, validate_name, Permissions, Role, NAME_LEN_MAX};
pub use tls::{
    generate_tls, init_tls, rotate_server_cert, ServerNames, TlsFiles, SERVER_NAMES_MAX,
};

use std::path::PathBuf;

/// Why a credential, roster, certificate or connection could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A principal's name has characters or a length the bus refuses.
    #[error("principal name {name:?} is not allowed: {why}")]
    BadName {
        /// The name.
        name: String,
        /// The rule it breaks.
        why: &'static str,
    },
    /// A file could not be read or written.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A file is not the JSON it should be.
    #[error("{path} is not valid {what} JSON: {source}")]
    Json {
        /// What the file should hold.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A principal's nkey could not be made or read.
    #[error("nkey of principal {name:?}: {source}")]
    Nkey {
        /// The principal.
        name: String,
        /// The nkeys crate's error.
        #[source]
        source: nkeys::error::Error,
    },
    /// TLS certificates could not be generated.
    #[error("generating TLS certificates: {source}")]
    Cert {
        /// The generator's error.
        #[source]
        source: rcgen::Error,
    },
    /// A server certificate's names are unusable.
    #[error("server certificate names: {why}")]
    ServerNames {
        /// What is wrong with them.
        why: String,
    },
    /// The roster has no principal of that name.
    #[error("no principal {name:?} in the roster")]
    NoSuchUser {
        /// The name asked for.
        name: String,
    },
    /// A server url the client cannot use.
    #[error("bad server url {url:?}: {why}")]
    Url {
        /// The url.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// The server refused the principal's credentials.
    #[error("{url}: the server refused authorization for {principal} (unknown, revoked or missing credentials): {detail}")]
    AuthorizationRefused {
        /// The server.
        url: String,
        /// The principal.
        principal: String,
        /// What the server said.
        detail: String,
    },
    /// The TLS handshake failed.
    #[error("{url}: TLS failed (is the CA file right, and does the url need tls://?): {detail}")]
    Tls {
        /// The server.
        url: String,
        /// What the TLS layer said.
        detail: String,
    },
    /// No server answered at the url.
    #[error("{url}: unreachable: {detail}")]
    Unreachable {
        /// The server.
        url: String,
        /// What the network said.
        detail: String,
    },
    /// Connecting failed for another reason.
    #[error("{url}: connecting failed: {detail}")]
    Connect {
        /// The server.
        url: String,
        /// What the client said.
        detail: String,
    },
}

/// This crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
