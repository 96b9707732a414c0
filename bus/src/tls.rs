//! A throwaway CA and a loopback server certificate.

use crate::{Error, Result};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// PEM files: the CA clients trust, and the server's certificate and private key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The CA certificate every client trusts.
    pub ca_cert: PathBuf,
    /// The server's certificate, signed by the CA.
    pub server_cert: PathBuf,
    /// The server's private key (0600).
    pub server_key: PathBuf,
}

/// Writes `ca.pem`, `server.pem` and `server-key.pem` (0600) into `dir`: a new CA (its key
/// is discarded, so it signs nothing else) and a server certificate for `127.0.0.1` and
/// `localhost`, valid for server and client auth, so cluster routes can verify each other.
pub fn generate_tls(dir: &Path) -> Result<TlsFiles> {
    let cert_err = |source| Error::Cert { source };
    let ca_key = KeyPair::generate().map_err(cert_err)?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(cert_err)?;
    ca.distinguished_name
        .push(DnType::CommonName, "roundledger bus CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca.self_signed(&ca_key).map_err(cert_err)?;

    let server_key = KeyPair::generate().map_err(cert_err)?;
    let mut server = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .map_err(cert_err)?;
    server
        .distinguished_name
        .push(DnType::CommonName, "roundledger bus server");
    server.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    server.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let server_cert = server
        .signed_by(&server_key, &ca_cert, &ca_key)
        .map_err(cert_err)?;

    let files = TlsFiles {
        ca_cert: dir.join("ca.pem"),
        server_cert: dir.join("server.pem"),
        server_key: dir.join("server-key.pem"),
    };
    write_file(&files.ca_cert, &ca_cert.pem(), 0o644)?;
    write_file(&files.server_cert, &server_cert.pem(), 0o644)?;
    write_file(&files.server_key, &server_key.serialize_pem(), 0o600)?;
    Ok(files)
}

fn write_file(path: &Path, text: &str, mode: u32) -> Result<()> {
    let io = |op, source| Error::Io {
        op,
        path: path.to_path_buf(),
        source,
    };
    let _ = fs::remove_file(path);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| io("creating", e))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| io("writing", e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn writes_pem_files_with_a_private_key() {
        let d = tempfile::tempdir().unwrap();
        let f = generate_tls(d.path()).unwrap();
        let ca = fs::read_to_string(&f.ca_cert).unwrap();
        assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"), "{ca}");
        let key = fs::read_to_string(&f.server_key).unwrap();
        assert!(key.contains("PRIVATE KEY"));
        let mode = fs::metadata(&f.server_key).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
