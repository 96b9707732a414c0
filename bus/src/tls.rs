//! The bus's CA and its server certificate.
//!
//! Two ways to make them:
//! - `generate_tls`: a throwaway CA whose key is discarded, and a loopback server
//!   certificate (tests, the demo, cluster routes).
//! - `init_tls` and `rotate_server_cert`: an operator's bus (`roundledger bus init`,
//!   `bus rotate-tls`). The server certificate names the hosts and addresses devices
//!   connect to. The CA key is kept (`ca-key.pem`, 0600) so that a new server
//!   certificate can be issued under the same CA: clients keep their `ca.pem`.

use crate::{Error, Result};
use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use std::fs;
use std::io::Write;
use std::net::IpAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Most names and addresses one server certificate holds.
pub const SERVER_NAMES_MAX: usize = 64;
/// The CA key file an operator's bus keeps beside `ca.pem`.
const CA_KEY_FILE: &str = "ca-key.pem";
/// The names and addresses of the server certificate, one a line.
const NAMES_FILE: &str = "server-names.txt";

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

impl TlsFiles {
    /// The files' places in `dir`.
    pub fn in_dir(dir: &Path) -> TlsFiles {
        TlsFiles {
            ca_cert: dir.join("ca.pem"),
            server_cert: dir.join("server.pem"),
            server_key: dir.join("server-key.pem"),
        }
    }
}

/// The host names and IP addresses a server certificate is valid for (its SANs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerNames {
    /// DNS names, as clients write them in their url.
    pub hosts: Vec<String>,
    /// IP addresses, as clients write them in their url.
    pub ips: Vec<IpAddr>,
}

impl ServerNames {
    /// `localhost` and `127.0.0.1`: a bus on one machine.
    pub fn loopback() -> ServerNames {
        ServerNames {
            hosts: vec!["localhost".into()],
            ips: vec![IpAddr::from([127, 0, 0, 1])],
        }
    }

    /// Every name, hosts first, as the certificate lists them.
    pub fn all(&self) -> Vec<String> {
        let ips = self.ips.iter().map(|ip| ip.to_string());
        self.hosts.iter().cloned().chain(ips).collect()
    }

    fn check(&self) -> Result<()> {
        let n = self.hosts.len() + self.ips.len();
        let bad = |why: String| Error::ServerNames { why };
        if n == 0 || n > SERVER_NAMES_MAX {
            return Err(bad(format!(
                "{n} server names: give 1 to {SERVER_NAMES_MAX}"
            )));
        }
        for h in &self.hosts {
            let ok = !h.is_empty()
                && h.len() <= 253
                && h.parse::<IpAddr>().is_err()
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
            if !ok {
                return Err(bad(format!(
                    "{h:?} is not a host name (letters, digits, '-' and '.'; an address goes in --ip)"
                )));
            }
        }
        Ok(())
    }

    fn read(dir: &Path) -> Result<ServerNames> {
        let path = dir.join(NAMES_FILE);
        let text = fs::read_to_string(&path).map_err(|source| Error::Io {
            op: "reading",
            path,
            source,
        })?;
        let mut names = ServerNames {
            hosts: Vec::new(),
            ips: Vec::new(),
        };
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            match line.parse::<IpAddr>() {
                Ok(ip) => names.ips.push(ip),
                Err(_) => names.hosts.push(line.to_string()),
            }
        }
        Ok(names)
    }
}

/// Writes `ca.pem`, `server.pem` and `server-key.pem` (0600) into `dir`: a new CA (its key
/// is discarded, so it signs nothing else) and a server certificate for `127.0.0.1` and
/// `localhost`, valid for server and client auth, so cluster routes can verify each other.
pub fn generate_tls(dir: &Path) -> Result<TlsFiles> {
    let ca_key = KeyPair::generate().map_err(cert_err)?;
    let ca_cert = ca_certificate(&ca_key)?;
    let files = TlsFiles::in_dir(dir);
    write_file(&files.ca_cert, &ca_cert.pem(), 0o644)?;
    write_server(&files, &ServerNames::loopback(), &ca_cert, &ca_key)?;
    Ok(files)
}

/// An operator's bus: a new CA, kept with its key (`ca-key.pem`, 0600), and a server
/// certificate for `names`, all in `dir`.
pub fn init_tls(dir: &Path, names: &ServerNames) -> Result<TlsFiles> {
    names.check()?;
    let ca_key = KeyPair::generate().map_err(cert_err)?;
    let ca_cert = ca_certificate(&ca_key)?;
    let files = TlsFiles::in_dir(dir);
    write_file(&dir.join(CA_KEY_FILE), &ca_key.serialize_pem(), 0o600)?;
    write_file(&files.ca_cert, &ca_cert.pem(), 0o644)?;
    write_server(&files, names, &ca_cert, &ca_key)?;
    Ok(files)
}

/// A new server key and certificate in `dir`, signed by the kept CA: for `names`, or for
/// the names of the certificate it replaces. `ca.pem` is unchanged, so every client goes
/// on trusting the server. Returns the names the new certificate holds.
pub fn rotate_server_cert(dir: &Path, names: Option<&ServerNames>) -> Result<ServerNames> {
    let key_path = dir.join(CA_KEY_FILE);
    let pem = fs::read_to_string(&key_path).map_err(|source| Error::Io {
        op: "reading the CA key (made by `bus init`)",
        path: key_path.clone(),
        source,
    })?;
    let ca_key = KeyPair::from_pem(&pem).map_err(cert_err)?;
    let names = match names {
        Some(n) => n.clone(),
        None => ServerNames::read(dir)?,
    };
    names.check()?;
    // The same subject and key as `ca.pem`: what the new certificate names as its issuer.
    let ca_cert = ca_certificate(&ca_key)?;
    write_server(&TlsFiles::in_dir(dir), &names, &ca_cert, &ca_key)?;
    Ok(names)
}

fn cert_err(source: rcgen::Error) -> Error {
    Error::Cert { source }
}

/// The CA's certificate for `key`: the same subject and key identifier whenever it is made.
fn ca_certificate(key: &KeyPair) -> Result<Certificate> {
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(cert_err)?;
    ca.distinguished_name
        .push(DnType::CommonName, "roundledger bus CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    ca.self_signed(key).map_err(cert_err)
}

/// A new server key and a certificate for `names` signed by the CA, written with the names.
fn write_server(
    files: &TlsFiles,
    names: &ServerNames,
    ca_cert: &Certificate,
    ca_key: &KeyPair,
) -> Result<()> {
    let server_key = KeyPair::generate().map_err(cert_err)?;
    let mut server = CertificateParams::new(names.all()).map_err(cert_err)?;
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
        .signed_by(&server_key, ca_cert, ca_key)
        .map_err(cert_err)?;
    // The key first: a certificate never sits beside a key that is not its own for long.
    write_file(&files.server_key, &server_key.serialize_pem(), 0o600)?;
    write_file(&files.server_cert, &server_cert.pem(), 0o644)?;
    let dir = files.server_cert.parent().unwrap_or(Path::new("."));
    let list: String = names.all().iter().map(|n| format!("{n}\n")).collect();
    write_file(&dir.join(NAMES_FILE), &list, 0o644)
}

/// Writes `text` to a new file beside `path` and renames it into place: a reader (a
/// reloading nats-server) sees the old file or the new one, never a part.
fn write_file(path: &Path, text: &str, mode: u32) -> Result<()> {
    let io = |op, source| Error::Io {
        op,
        path: path.to_path_buf(),
        source,
    };
    let tmp = path.with_extension("tmp");
    let _ = fs::remove_file(&tmp);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .map_err(|e| io("creating", e))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| io("writing", e))?;
    fs::rename(&tmp, path).map_err(|e| io("renaming into place", e))
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
        assert!(!d.path().join(CA_KEY_FILE).exists(), "a throwaway CA's key");
    }

    #[test]
    fn rotation_keeps_the_ca_and_the_names_unless_given() {
        let d = tempfile::tempdir().unwrap();
        let names = ServerNames {
            hosts: vec!["bus.floor.example".into()],
            ips: vec!["10.1.2.3".parse().unwrap()],
        };
        let f = init_tls(d.path(), &names).unwrap();
        let mode = fs::metadata(d.path().join(CA_KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let (ca, cert) = (read(&f.ca_cert), read(&f.server_cert));
        assert_eq!(rotate_server_cert(d.path(), None).unwrap(), names);
        assert_eq!(read(&f.ca_cert), ca, "clients keep their CA file");
        assert_ne!(read(&f.server_cert), cert, "a new certificate");
        let more = ServerNames {
            hosts: vec![],
            ips: vec!["127.0.0.2".parse().unwrap()],
        };
        assert_eq!(rotate_server_cert(d.path(), Some(&more)).unwrap(), more);
        assert_eq!(ServerNames::read(d.path()).unwrap(), more);
    }

    #[test]
    fn bad_names_are_refused() {
        let d = tempfile::tempdir().unwrap();
        for hosts in [
            vec![],
            vec!["a b".to_string()],
            vec!["10.0.0.1".to_string()],
        ] {
            let names = ServerNames { hosts, ips: vec![] };
            assert!(init_tls(d.path(), &names).is_err(), "{names:?}");
        }
        let e = rotate_server_cert(d.path(), None).unwrap_err();
        assert!(e.to_string().contains("bus init"), "{e}");
    }

    fn read(p: &Path) -> String {
        fs::read_to_string(p).unwrap()
    }
}
