//! Secured mode: a roster of nkey users, TLS files, and the config reload that applies a
//! change to a running server without restarting it.
//!
//! Layout inside the server's (or cluster's) directory: `tls/` (CA, server certificate
//! and key), `creds/<name>.json` (0600), `roster.json`.

use crate::monitor::http_get;
use crate::{log_tail, Error};
use bus::{Access, Credentials, Role, Roster, TlsFiles};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest wait for a reload to take effect.
pub const RELOAD_TIMEOUT: Duration = Duration::from_secs(10);

/// A secured server's (or cluster's) principals and TLS files.
#[derive(Debug, Clone)]
pub struct Security {
    dir: PathBuf,
    roster: Roster,
    tls: TlsFiles,
}

impl Security {
    /// Generates TLS files and an empty roster in `dir`.
    pub(crate) fn create(dir: &Path) -> Result<Security, Error> {
        let tls_dir = dir.join("tls");
        for d in [&tls_dir, &dir.join("creds")] {
            fs::create_dir_all(d).map_err(|source| Error::Dir {
                path: d.clone(),
                source,
            })?;
        }
        let security = Security {
            dir: dir.to_path_buf(),
            roster: Roster::default(),
            tls: bus::generate_tls(&tls_dir)?,
        };
        security.roster.save(&security.roster_path())?;
        Ok(security)
    }

    /// Every principal issued so far, revoked ones included.
    pub fn roster(&self) -> &Roster {
        &self.roster
    }

    /// The CA, server certificate and key.
    pub fn tls(&self) -> &TlsFiles {
        &self.tls
    }

    /// Where the roster is saved.
    pub fn roster_path(&self) -> PathBuf {
        self.dir.join("roster.json")
    }

    /// Where `name`'s credential is saved.
    pub fn creds_path(&self, name: &str) -> PathBuf {
        self.dir.join("creds").join(format!("{name}.json"))
    }

    /// An `Access` with no credential, only the CA: TLS works, authorization does not.
    pub fn anonymous(&self) -> Access {
        Access {
            credentials: None,
            ca_file: Some(self.tls.ca_cert.clone()),
        }
    }

    /// Issues a credential, saves it and the roster. The caller rewrites configs and
    /// reloads.
    pub(crate) fn issue(&mut self, name: &str, role: Role) -> Result<Access, Error> {
        let creds = Credentials::issue(name, role)?;
        let path = self.creds_path(name);
        creds.save(&path)?;
        self.roster.add(&creds)?;
        self.roster.save(&self.roster_path())?;
        Ok(Access {
            credentials: Some(path),
            ca_file: Some(self.tls.ca_cert.clone()),
        })
    }

    /// `issue` for each principal. The caller rewrites configs and reloads once.
    pub(crate) fn issue_all(
        &mut self,
        principals: &[(String, Role)],
    ) -> Result<Vec<Access>, Error> {
        principals
            .iter()
            .map(|(name, role)| self.issue(name, role.clone()))
            .collect()
    }

    /// Principals for a floor: ingest, an observer, and each table's device (named as
    /// its table). The caller rewrites configs and reloads once.
    pub(crate) fn issue_floor(
        &mut self,
        tables: &[schemas::TableId],
    ) -> Result<FloorAccess, Error> {
        let mut principals = vec![
            ("ingest".to_string(), Role::Ingest),
            ("observer".to_string(), Role::Observer),
        ];
        for table in tables {
            let role = Role::Device {
                table: table.clone(),
            };
            principals.push((table.to_string(), role));
        }
        let issued = self.issue_all(&principals)?;
        Ok(FloorAccess {
            ingest: issued[0].clone(),
            observer: issued[1].clone(),
            creds_dir: self.dir.join("creds"),
            ca_file: self.tls.ca_cert.clone(),
        })
    }

    /// Marks `name` revoked and saves the roster. The caller rewrites configs and reloads.
    pub(crate) fn revoke(&mut self, name: &str) -> Result<(), Error> {
        self.roster.revoke(name)?;
        self.roster.save(&self.roster_path())?;
        Ok(())
    }

    /// The client `authorization` and `tls` blocks.
    pub(crate) fn fragment(&self) -> String {
        bus::server_config(&self.roster, Some(&self.tls))
    }
}

/// A secured server or cluster: its roster, and the reload that applies a change of it.
pub(crate) trait Guard {
    fn security_mut(&mut self) -> Option<&mut Security>;
    fn apply(&mut self) -> Result<(), Error>;
}

/// Changes `guard`'s roster with `edit`, then applies the change with one reload.
pub(crate) fn change<G: Guard, T>(
    guard: &mut G,
    edit: impl FnOnce(&mut Security) -> Result<T, Error>,
) -> Result<T, Error> {
    let out = edit(guard.security_mut().ok_or(Error::NotSecured)?)?;
    guard.apply()?;
    Ok(out)
}

/// What a floor's processes need on a secured bus (`issue_floor`).
#[derive(Debug, Clone)]
pub struct FloorAccess {
    /// The ingest service's credentials.
    pub ingest: Access,
    /// Reads heads and alerts (tests, tools).
    pub observer: Access,
    /// Each table's device credentials, as `<table>.json`.
    pub creds_dir: PathBuf,
    /// The bus's CA.
    pub ca_file: PathBuf,
}

/// Writes a config file (0600: it names the key file and every user).
pub(crate) fn write_config(path: &Path, text: &str) -> Result<(), Error> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("conf.tmp");
    let _ = fs::remove_file(&tmp);
    let io = |source| Error::Dir {
        path: path.to_path_buf(),
        source,
    };
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io)?;
    f.write_all(text.as_bytes()).map_err(io)?;
    fs::rename(&tmp, path).map_err(io)
}

/// The process to reload: its pid, monitoring port and log.
pub(crate) struct ReloadTarget<'a> {
    pub bin: &'a Path,
    pub pid: u32,
    pub monitor_port: Option<u16>,
    pub log: PathBuf,
}

/// Signals `nats-server --signal reload=PID` and waits (bounded by `RELOAD_TIMEOUT`)
/// until `/varz` shows a new `config_load_time`: the new users and permissions apply
/// and removed users' connections are closed.
pub(crate) fn reload(t: &ReloadTarget<'_>) -> Result<(), Error> {
    let fail = |why: String| Error::Reload {
        pid: t.pid,
        why,
        log_tail: log_tail(&t.log),
    };
    let port = t
        .monitor_port
        .ok_or_else(|| fail("no monitoring port to confirm the reload".to_string()))?;
    let before = config_load_time(port)?;
    let status = Command::new(t.bin)
        .arg("--signal")
        .arg(format!("reload={}", t.pid))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|source| Error::Signal { pid: t.pid, source })?;
    if !status.success() {
        return Err(fail(format!("--signal reload exited {status}")));
    }
    let deadline = Instant::now() + RELOAD_TIMEOUT;
    loop {
        if config_load_time(port)? != before {
            tracing::info!(pid = t.pid, "nats-server config reloaded");
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(fail(format!(
                "config_load_time still {before} after {RELOAD_TIMEOUT:?}"
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn config_load_time(monitor_port: u16) -> Result<String, Error> {
    let body = http_get(monitor_port, "/varz")?;
    let varz: serde_json::Value = serde_json::from_slice(&body).map_err(|e| Error::Monitor {
        url: format!("http://127.0.0.1:{monitor_port}/varz"),
        why: format!("not JSON: {e}"),
    })?;
    Ok(varz["config_load_time"]
        .as_str()
        .unwrap_or_default()
        .to_string())
}
