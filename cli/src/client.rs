//! A minimal blocking HTTP/1.1 client for the CLI's `--server URL --token T` mode (replay,
//! audit, export, evidence, counts against a running `roundledger serve`), on std's
//! `TcpStream`: `https://` through rustls (`serve --tls-cert`), or plain `http://`;
//! `Connection: close`, fixed-length and chunked bodies, a body size cap and timeouts.
//! Several URLs (the nodes of one floor) fail over when a connection fails.

use anyhow::{bail, Context, Result};
use serde::de::DeserializeOwned;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

/// Largest response body accepted.
pub const BODY_LEN_MAX: usize = 1 << 30;
/// Connect and read timeout.
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// Most `--server` URLs one command takes.
pub const SERVERS_MAX: usize = 16;
/// How long one connection attempt waits before the next URL is tried.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// `--server URL --token T`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ServerArgs {
    /// A running `roundledger serve` (https://host:port, or http:// on loopback) to read
    /// from instead of a ledger. Several, comma-separated or repeated: the ledger nodes
    /// of one floor. A request goes to the first that accepts a connection.
    #[arg(long, value_delimiter = ',', value_name = "URL")]
    pub server: Vec<String>,
    /// Bearer token for --server (or the ROUNDLEDGER_TOKEN environment variable).
    #[arg(long)]
    pub token: Option<String>,
    /// The CA certificate (PEM) an https:// server's certificate chains to (default: the
    /// system's roots).
    #[arg(long, value_name = "FILE")]
    pub ca: Option<std::path::PathBuf>,
}

/// The servers to call, in the order given: each request tries them from the one that
/// answered last, and moves on when a connection fails (never after a request was sent).
pub struct Client {
    targets: Vec<Target>,
    token: String,
    /// The index of the target that accepted the last connection.
    current: std::sync::atomic::AtomicUsize,
}

/// One `--server` URL.
struct Target {
    url: String,
    host: String,
    port: u16,
    /// Set for https://.
    tls: Option<Arc<rustls::ClientConfig>>,
}

/// Whether `host` (a URL's host) is a loopback address: `localhost`, 127.0.0.0/8 or
/// `[::1]`. Any other name could resolve anywhere, so it is not.
fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A connection's byte stream, plain or TLS.
trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

impl Client {
    pub fn from_args(a: &ServerArgs) -> Result<Option<Client>> {
        if a.server.is_empty() {
            return Ok(None);
        }
        if a.server.len() > SERVERS_MAX {
            bail!("--server: at most {SERVERS_MAX} URLs");
        }
        let token = a
            .token
            .clone()
            .or_else(|| std::env::var("ROUNDLEDGER_TOKEN").ok())
            .context("--server needs --token T (or ROUNDLEDGER_TOKEN)")?;
        let targets = a
            .server
            .iter()
            .map(|url| Target::parse(url.trim(), a.ca.as_deref()))
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(Client {
            targets,
            token,
            current: Default::default(),
        }))
    }

    /// A connection to the first target that takes one, from the last that did; the
    /// target too. Each failure is named when none does.
    fn connect(&self) -> Result<(Box<dyn Stream>, &Target)> {
        use std::sync::atomic::Ordering;
        let n = self.targets.len();
        let from = self.current.load(Ordering::Relaxed);
        let mut failures = Vec::new();
        for i in 0..n {
            let at = (from + i) % n;
            let t = &self.targets[at];
            match t.connect() {
                Ok(s) => {
                    if !failures.is_empty() {
                        eprintln!("--server: {}; using {}", failures.join("; "), t.url);
                    }
                    self.current.store(at, Ordering::Relaxed);
                    return Ok((s, t));
                }
                Err(e) => failures.push(format!("{} unreachable ({e:#})", t.url)),
            }
        }
        bail!("no --server answered: {}", failures.join("; "))
    }

    /// GET `path` (with query) and return the body; non-2xx is an error with the server's
    /// message.
    pub fn get_bytes(&self, path: &str) -> Result<Vec<u8>> {
        self.call("GET", path, None)
    }

    /// POST `body` as JSON to `path` and return the answer's JSON.
    pub fn post<T: DeserializeOwned>(&self, path: &str, body: &impl serde::Serialize) -> Result<T> {
        let json = serde_json::to_vec(body)?;
        let answer = self.call("POST", path, Some(&json))?;
        serde_json::from_slice(&answer).with_context(|| format!("POST {path}: unexpected body"))
    }

    /// One request; non-2xx is an error with the server's message.
    fn call(&self, method: &str, path: &str, body: Option<&[u8]>) -> Result<Vec<u8>> {
        let (mut s, target) = self.connect()?;
        let sent = match body {
            Some(b) => format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                b.len()
            ),
            None => String::new(),
        };
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nAccept: application/json\r\n{sent}Connection: close\r\n\r\n",
            target.host, self.token
        )?;
        s.write_all(body.unwrap_or_default())?;
        let what = format!("{method} {path}");
        let (status, body) = read_response(BufReader::new(s), &what)?;
        if !(200..300).contains(&status) {
            let msg = serde_json::from_slice::<schemas::api::ApiError>(&body)
                .map(|e| e.error)
                .unwrap_or_else(|_| String::from_utf8_lossy(&body).into_owned());
            bail!("{what}: {status}: {msg}");
        }
        Ok(body)
    }

    pub fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T> {
        let body = self.get_bytes(path)?;
        serde_json::from_slice(&body).with_context(|| format!("GET {path}: unexpected body"))
    }
}

impl Target {
    /// One URL: https://, or http:// to a loopback host only (the token would go in clear).
    fn parse(url: &str, ca: Option<&std::path::Path>) -> Result<Target> {
        let (rest, tls, default_port) = match url.split_once("://") {
            Some(("https", rest)) => (rest, Some(tls_config(ca)?), 443),
            Some(("http", rest)) => (rest, None, 80),
            _ => bail!("--server {url:?}: an https://host:port or http://host:port URL"),
        };
        let rest = rest.trim_end_matches('/');
        let (host, port) = match rest.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), p.parse().context("--server: port")?),
            None => (rest.to_string(), default_port),
        };
        if tls.is_none() && !is_loopback(&host) {
            bail!(
                "--server {url}: plain http:// to a host that is not loopback would send the \
                 token in clear; use https:// (serve --tls-cert) or a loopback address"
            );
        }
        Ok(Target {
            url: url.to_string(),
            host,
            port,
            tls,
        })
    }

    /// A connection, TLS for https:// with its handshake done, so a node that cannot
    /// finish one is passed over like one that refuses.
    fn connect(&self) -> Result<Box<dyn Stream>> {
        use std::net::ToSocketAddrs;
        let addr = format!("{}:{}", self.host, self.port);
        let mut last = None;
        let mut stream = None;
        for a in addr
            .to_socket_addrs()
            .with_context(|| format!("resolving {addr}"))?
        {
            match TcpStream::connect_timeout(&a, CONNECT_TIMEOUT) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let mut s = match (stream, last) {
            (Some(s), _) => s,
            (None, Some(e)) => return Err(e).with_context(|| format!("connecting to {addr}")),
            (None, None) => bail!("{addr} resolves to no address"),
        };
        s.set_read_timeout(Some(TIMEOUT))?;
        s.set_write_timeout(Some(TIMEOUT))?;
        let Some(config) = &self.tls else {
            return Ok(Box::new(s));
        };
        let name = rustls::pki_types::ServerName::try_from(self.host.clone())
            .with_context(|| format!("--server: {:?} is not a host name", self.host))?;
        let mut conn = rustls::ClientConnection::new(config.clone(), name)?;
        while conn.is_handshaking() {
            conn.complete_io(&mut s)
                .with_context(|| format!("TLS handshake with {addr}"))?;
        }
        Ok(Box::new(rustls::StreamOwned::new(conn, s)))
    }
}

/// A response's status and body (fixed-length, chunked, or to the end), at most
/// `BODY_LEN_MAX` bytes.
fn read_response(mut r: impl BufRead, what: &str) -> Result<(u16, Vec<u8>)> {
    let mut line = String::new();
    r.read_line(&mut line)?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .with_context(|| format!("{what}: bad status line {line:?}"))?;
    let (mut len, mut chunked) = (None, false);
    loop {
        line.clear();
        r.read_line(&mut line)?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
            if k == "content-length" {
                len = Some(v.parse::<usize>().context("content-length")?);
            } else if k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked") {
                chunked = true;
            }
        }
    }
    let mut body = Vec::new();
    match (chunked, len) {
        (true, _) => read_chunked(&mut r, &mut body, what)?,
        (false, Some(n)) if n > BODY_LEN_MAX => bail!("{what}: body of {n} bytes is too large"),
        (false, Some(n)) => {
            body.resize(n, 0);
            r.read_exact(&mut body)?;
        }
        (false, None) => {
            r.take(BODY_LEN_MAX as u64).read_to_end(&mut body)?;
        }
    }
    Ok((status, body))
}

/// A chunked body, into `body`.
fn read_chunked(r: &mut impl BufRead, body: &mut Vec<u8>, what: &str) -> Result<()> {
    let mut line = String::new();
    loop {
        line.clear();
        r.read_line(&mut line)?;
        let n = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
            .context("chunk size")?;
        if n == 0 {
            return Ok(());
        }
        if body.len() + n > BODY_LEN_MAX {
            bail!("{what}: body larger than {BODY_LEN_MAX} bytes");
        }
        let start = body.len();
        body.resize(start + n, 0);
        r.read_exact(&mut body[start..])?;
        line.clear();
        r.read_line(&mut line)?;
    }
}

/// The TLS client configuration: trust `ca` (PEM), or the system's roots.
fn tls_config(ca: Option<&std::path::Path>) -> Result<Arc<rustls::ClientConfig>> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let mut roots = rustls::RootCertStore::empty();
    match ca {
        Some(path) => {
            for cert in CertificateDer::pem_file_iter(path)
                .with_context(|| format!("--ca {}", path.display()))?
            {
                roots.add(cert.with_context(|| format!("--ca {}", path.display()))?)?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            for cert in found.certs {
                let _ = roots.add(cert);
            }
        }
    }
    anyhow::ensure!(!roots.is_empty(), "no trusted CA certificate for https://");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// Percent-encodes a query value.
pub fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(url: &str) -> Result<Option<Client>> {
        Client::from_args(&ServerArgs {
            server: vec![url.into()],
            token: Some("a-token-of-sixteen-chars".into()),
            ca: None,
        })
    }

    #[test]
    fn a_token_goes_over_plain_http_only_to_loopback() {
        for url in [
            "http://127.0.0.1:8640",
            "http://127.0.0.2:8640/",
            "http://localhost:8640",
            "http://[::1]:8640",
        ] {
            assert!(server(url).is_ok_and(|c| c.is_some()), "{url}");
        }
        for url in [
            "http://10.0.0.5:8640",
            "http://0.0.0.0:8640",
            "http://ledger.floor:8640",
            "http://localhost.evil.example:8640",
        ] {
            let err = server(url).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.contains("in clear"), "{url}: {err}");
        }
        assert!(server("https://10.0.0.5:8640").is_ok_and(|c| c.is_some()));
    }
}
