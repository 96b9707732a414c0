//! HTTPS for the API: a rustls server configuration from PEM files (`serve --tls-cert
//! FILE --tls-key FILE`). Tokens cross the network only inside TLS.
//!
//! Invariants: TLS 1.2 and 1.3 only (rustls offers nothing older); HTTP/1.1 by ALPN, the
//! one protocol the connection loop speaks.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;

/// Why the TLS files are unusable.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A certificate or key file could not be read or holds no usable PEM.
    #[error("{path}: {detail}")]
    File {
        /// The file's path.
        path: String,
        /// What is wrong with the file.
        detail: String,
    },
    /// rustls refused the certificate chain or key.
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// The server configuration of a certificate chain and its private key (PEM).
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let file_err = |p: &Path, e: &dyn std::fmt::Display| TlsError::File {
        path: p.display().to_string(),
        detail: e.to_string(),
    };
    let chain = CertificateDer::pem_file_iter(cert)
        .map_err(|e| file_err(cert, &e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_err(cert, &e))?;
    if chain.is_empty() {
        return Err(file_err(cert, &"no certificate in the file"));
    }
    let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| file_err(key, &e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
