//! Credentials (one principal's secret) and the roster (every principal's public key).

use crate::role::{validate_name, Role};
use crate::{Error, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// One principal's credential: its name, role and nkey seed. Keep the file private: the
/// seed is the secret. `Debug` redacts it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    /// The principal's name, unique on the floor.
    pub name: String,
    /// What the principal may publish and read.
    pub role: Role,
    /// The nkey seed (secret): signs the server's connection challenge.
    pub nkey_seed: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("name", &self.name)
            .field("role", &self.role)
            .field("nkey_seed", &"<redacted>")
            .finish()
    }
}

impl Credentials {
    /// A new user nkey for `name` in `role`.
    pub fn issue(name: &str, role: Role) -> Result<Credentials> {
        validate_name(name)?;
        let key = nkeys::KeyPair::new_user();
        let nkey_seed = key.seed().map_err(|source| Error::Nkey {
            name: name.to_string(),
            source,
        })?;
        Ok(Credentials {
            name: name.to_string(),
            role,
            nkey_seed,
        })
    }

    /// The user public key (`U...`) the server's config names.
    pub fn public_key(&self) -> Result<String> {
        let key = nkeys::KeyPair::from_seed(&self.nkey_seed).map_err(|source| Error::Nkey {
            name: self.name.clone(),
            source,
        })?;
        Ok(key.public_key())
    }

    /// Writes the credential as JSON, readable and writable by its owner only (0600).
    pub fn save(&self, path: &Path) -> Result<()> {
        write_json(path, self, 0o600)
    }

    /// Reads a credential and checks its name and seed.
    pub fn load(path: &Path) -> Result<Credentials> {
        let creds: Credentials = read_json(path, "credentials")?;
        validate_name(&creds.name)?;
        let public_key = creds.public_key()?;
        if !public_key.starts_with('U') {
            return Err(Error::BadName {
                name: creds.name,
                why: "its nkey is not a user key",
            });
        }
        Ok(creds)
    }
}

/// A principal as the server knows it: no secret, only the public key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// The principal's name.
    pub name: String,
    /// What the principal may publish and read.
    pub role: Role,
    /// The nkey public key the server checks.
    pub public_key: String,
    /// When the user was revoked (ns since the Unix epoch); revoked users stay listed.
    pub revoked_at_ns: Option<i64>,
}

/// Every principal the server knows, revoked ones included (a record of who had access).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Roster {
    /// Every principal, in the order added.
    pub users: Vec<User>,
}

impl Roster {
    /// Adds the principal. A user of the same name is replaced: issuing again rotates the
    /// key, and the old key is refused once the server reloads.
    pub fn add(&mut self, creds: &Credentials) -> Result<()> {
        validate_name(&creds.name)?;
        let user = User {
            name: creds.name.clone(),
            role: creds.role.clone(),
            public_key: creds.public_key()?,
            revoked_at_ns: None,
        };
        self.users.retain(|u| u.name != creds.name);
        self.users.push(user);
        Ok(())
    }

    /// Marks the user revoked now (system clock). Already revoked: unchanged.
    pub fn revoke(&mut self, name: &str) -> Result<()> {
        let user = self
            .users
            .iter_mut()
            .find(|u| u.name == name)
            .ok_or_else(|| Error::NoSuchUser {
                name: name.to_string(),
            })?;
        if user.revoked_at_ns.is_none() {
            let now_ns = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
            user.revoked_at_ns = Some(now_ns);
        }
        Ok(())
    }

    /// Users that may connect.
    pub fn active(&self) -> impl Iterator<Item = &User> {
        self.users.iter().filter(|u| u.revoked_at_ns.is_none())
    }

    /// Reads a roster file.
    pub fn load(path: &Path) -> Result<Roster> {
        read_json(path, "roster")
    }

    /// Writes the roster (0600: it tells who may connect).
    pub fn save(&self, path: &Path) -> Result<()> {
        write_json(path, self, 0o600)
    }
}

/// Writes JSON to a temporary sibling created with `mode`, then renames it over `path`:
/// a reader sees the old file or the new one, and the secret is never world-readable.
fn write_json<T: Serialize>(path: &Path, value: &T, mode: u32) -> Result<()> {
    let io = |op, source| Error::Io {
        op,
        path: path.to_path_buf(),
        source,
    };
    let json = serde_json::to_vec_pretty(value).map_err(|source| Error::Json {
        what: "serializable",
        path: path.to_path_buf(),
        source,
    })?;
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp = Path::new(&tmp_name);
    let _ = fs::remove_file(tmp);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(tmp)
        .map_err(|e| io("creating", e))?;
    f.write_all(&json)
        .and_then(|()| f.sync_all())
        .map_err(|e| io("writing", e))?;
    fs::rename(tmp, path).map_err(|e| io("renaming into", e))
}

fn read_json<T: DeserializeOwned>(path: &Path, what: &'static str) -> Result<T> {
    let bytes = fs::read(path).map_err(|source| Error::Io {
        op: "reading",
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|source| Error::Json {
        what,
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn credentials_round_trip_private_and_redacted() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("obs.json");
        let c = Credentials::issue("obs", Role::Observer).unwrap();
        assert!(c.nkey_seed.starts_with("SU"));
        assert!(c.public_key().unwrap().starts_with('U'));
        assert!(!format!("{c:?}").contains(&c.nkey_seed));
        c.save(&p).unwrap();
        let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(Credentials::load(&p).unwrap(), c);
        assert!(Credentials::issue("a.b", Role::Observer).is_err());
    }

    #[test]
    fn revoked_users_stay_listed_but_inactive() {
        let mut r = Roster::default();
        let a = Credentials::issue("a", Role::Ingest).unwrap();
        let b = Credentials::issue("b", Role::Observer).unwrap();
        r.add(&a).unwrap();
        r.add(&b).unwrap();
        r.revoke("a").unwrap();
        assert!(r.revoke("nobody").is_err());
        let active: Vec<&str> = r.active().map(|u| u.name.as_str()).collect();
        assert_eq!(active, ["b"]);
        assert_eq!(r.users.len(), 2);
        // Issuing again rotates the key and restores access.
        let a2 = Credentials::issue("a", Role::Ingest).unwrap();
        r.add(&a2).unwrap();
        assert_eq!(r.active().count(), 2);
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("roster.json");
        r.save(&p).unwrap();
        assert_eq!(Roster::load(&p).unwrap(), r);
    }
}
