//! Who may speak on the bus, from the command line.
//!
//! - `roundledger bus init|issue|revoke|rotate-tls --dir DIR`: the operator's bus
//!   directory. It holds the TLS files, the roster of principals, `nats-auth.conf` (the
//!   fragment the roster renders) and `nats.conf`, which includes it. `issue` writes one
//!   principal's credentials (owner-only); `revoke` removes it from the fragment;
//!   `rotate-tls` issues a new server certificate under the same CA. Each applies with one
//!   reload, never a restart: `nats-server --signal reload=DIR/nats-server.pid`.
//! - `roundledger enroll`: the admin's offline signature of a device key's enrollment
//!   (the `Rl-Enrollment` header value). The admin key never reaches the server.
//! - `BusArgs`, `DeviceBusArgs`: how `serve` and `simulate` connect (credentials, CA).

use crate::Outcome;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// How a service connects to the bus: its credentials and the bus's CA.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct BusArgs {
    /// This process's bus credentials (`roundledger bus issue` writes them).
    #[arg(long, value_name = "FILE")]
    pub nats_creds: Option<PathBuf>,
    /// The CA certificate of the bus's TLS (implied by a `tls://` URL: then required).
    #[arg(long, value_name = "FILE")]
    pub nats_ca: Option<PathBuf>,
}

impl BusArgs {
    pub fn access(&self) -> bus::Access {
        bus::Access {
            credentials: self.nats_creds.clone(),
            ca_file: self.nats_ca.clone(),
        }
    }
}

/// How simulated table devices connect: one credentials file per table.
#[cfg(feature = "devtools")]
#[derive(clap::Args, Debug, Clone, Default)]
pub struct DeviceBusArgs {
    /// A directory with each table's device credentials as `<table>.json`.
    #[arg(long, value_name = "DIR")]
    pub nats_creds_dir: Option<PathBuf>,
    /// The CA certificate of the bus's TLS.
    #[arg(long, value_name = "FILE")]
    pub nats_ca: Option<PathBuf>,
}

#[cfg(feature = "devtools")]
impl DeviceBusArgs {
    pub fn access(&self) -> simulator::DeviceAccess {
        simulator::DeviceAccess {
            creds_dir: self.nats_creds_dir.clone(),
            ca_file: self.nats_ca.clone(),
        }
    }
}

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Create DIR: a CA (its key kept in `tls/ca-key.pem`, owner-only), a server
    /// certificate for the --name and --ip given (else localhost and 127.0.0.1), an empty
    /// roster, `nats-auth.conf`, and a `nats.conf` that includes it.
    Init {
        #[arg(long)]
        dir: PathBuf,
        #[command(flatten)]
        names: NameArgs,
    },
    /// A new server key and certificate under the same CA: clients keep their `ca.pem`.
    /// Then reload: `nats-server --signal reload=DIR/nats-server.pid`.
    RotateTls {
        #[arg(long)]
        dir: PathBuf,
        #[command(flatten)]
        names: NameArgs,
    },
    /// Issue credentials to one principal: DIR/creds/NAME.json (owner-only).
    Issue {
        #[arg(long)]
        dir: PathBuf,
        /// The principal's name (letters, digits, `-`, `_`): a table id for a device.
        #[arg(long)]
        name: String,
        /// device (one table's events), ingest, or observer (heads and alerts only).
        #[arg(long)]
        role: RoleArg,
        /// The device's table (default: its name).
        #[arg(long)]
        table: Option<String>,
    },
    /// Revoke a principal: it leaves `nats-auth.conf`; reload the server to apply.
    Revoke {
        #[arg(long)]
        dir: PathBuf,
        #[arg(long)]
        name: String,
    },
}

/// The server certificate's names and addresses: the ones devices write in their url.
#[derive(clap::Args, Debug, Clone, Default)]
struct NameArgs {
    /// A host name clients connect to (repeatable).
    #[arg(long = "name", value_name = "HOST")]
    hosts: Vec<String>,
    /// An IP address clients connect to (repeatable).
    #[arg(long = "ip", value_name = "ADDR")]
    ips: Vec<std::net::IpAddr>,
}

impl NameArgs {
    /// The names given, or `None` when none is.
    fn names(&self) -> Option<bus::ServerNames> {
        (!self.hosts.is_empty() || !self.ips.is_empty()).then(|| bus::ServerNames {
            hosts: self.hosts.clone(),
            ips: self.ips.clone(),
        })
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum RoleArg {
    Device,
    Ingest,
    Observer,
}

const ROSTER_FILE: &str = "roster.json";
const FRAGMENT_FILE: &str = "nats-auth.conf";
const CONFIG_FILE: &str = "nats.conf";
const PID_FILE: &str = "nats-server.pid";

pub fn run(args: Args) -> Result<Outcome> {
    match args.action {
        Action::Init { dir, names } => init(&dir, names.names()),
        Action::RotateTls { dir, names } => rotate_tls(&dir, names.names()),
        Action::Issue {
            dir,
            name,
            role,
            table,
        } => issue(&dir, &name, role, table),
        Action::Revoke { dir, name } => revoke(&dir, &name),
    }?;
    Ok(Outcome::Clean)
}

fn init(dir: &Path, names: Option<bus::ServerNames>) -> Result<()> {
    anyhow::ensure!(
        !dir.join(ROSTER_FILE).exists(),
        "{} already holds a roster",
        dir.display()
    );
    std::fs::create_dir_all(dir.join("tls"))
        .with_context(|| format!("creating {}", dir.display()))?;
    let dir = &absolute(dir)?;
    let names = names.unwrap_or_else(bus::ServerNames::loopback);
    let tls = bus::init_tls(&dir.join("tls"), &names).context("generating the TLS files")?;
    let roster = bus::Roster::default();
    roster.save(&dir.join(ROSTER_FILE))?;
    write_fragment(dir, &roster)?;
    let conf = dir.join(CONFIG_FILE);
    if !conf.exists() {
        std::fs::write(&conf, server_conf(dir, &names))
            .with_context(|| format!("writing {}", conf.display()))?;
    }
    println!(
        "bus directory {}: CA {} (clients' --nats-ca); server certificate for {}; start the \
         server with `nats-server -c {}`",
        dir.display(),
        tls.ca_cert.display(),
        names.all().join(", "),
        conf.display()
    );
    Ok(())
}

/// `nats.conf`: where the server listens, its store and pid file, and the fragment the
/// roster renders. nats-server reads an include relative to the including file, so both
/// live in the bus directory.
fn server_conf(dir: &Path, names: &bus::ServerNames) -> String {
    let host = names
        .ips
        .first()
        .map_or_else(|| "127.0.0.1".to_string(), |ip| ip.to_string());
    format!(
        "# Written by `roundledger bus init`; edit freely. `bus issue`, `bus revoke` and\n\
         # `bus rotate-tls` rewrite only what {FRAGMENT_FILE} and tls/ hold.\n\
         host: \"{host}\"\nport: 4222\n\
         pid_file: \"{pid}\"\n\
         jetstream {{ store_dir: \"{store}\" }}\n\
         include {FRAGMENT_FILE}\n",
        pid = dir.join(PID_FILE).display(),
        store = dir.join("jetstream").display(),
    )
}

fn rotate_tls(dir: &Path, names: Option<bus::ServerNames>) -> Result<()> {
    let dir = &absolute(dir)?;
    let names = bus::rotate_server_cert(&dir.join("tls"), names.as_ref())
        .context("issuing the new server certificate")?;
    println!(
        "new server certificate for {} under the same CA; apply it: nats-server --signal reload={}",
        names.all().join(", "),
        dir.join(PID_FILE).display()
    );
    Ok(())
}

fn issue(dir: &Path, name: &str, role: RoleArg, table: Option<String>) -> Result<()> {
    let dir = &absolute(dir)?;
    let role = match role {
        RoleArg::Device => {
            let t = table.unwrap_or_else(|| name.to_string());
            let table = schemas::TableId::new(&t).with_context(|| format!("--table {t:?}"))?;
            bus::Role::Device { table }
        }
        RoleArg::Ingest => bus::Role::Ingest,
        RoleArg::Observer => bus::Role::Observer,
    };
    let roster_path = dir.join(ROSTER_FILE);
    let mut roster = bus::Roster::load(&roster_path).with_context(|| {
        format!(
            "{}: run `roundledger bus init` first",
            roster_path.display()
        )
    })?;
    let creds = bus::Credentials::issue(name, role)?;
    let path = dir.join("creds").join(format!("{name}.json"));
    std::fs::create_dir_all(dir.join("creds"))?;
    creds.save(&path)?;
    roster.add(&creds)?;
    roster.save(&roster_path)?;
    write_fragment(dir, &roster)?;
    println!("{}", path.display());
    eprintln!(
        "issued {name}; let it connect: nats-server --signal reload={}",
        dir.join(PID_FILE).display()
    );
    Ok(())
}

fn revoke(dir: &Path, name: &str) -> Result<()> {
    let dir = &absolute(dir)?;
    let roster_path = dir.join(ROSTER_FILE);
    let mut roster = bus::Roster::load(&roster_path)?;
    roster.revoke(name)?;
    roster.save(&roster_path)?;
    write_fragment(dir, &roster)?;
    eprintln!(
        "revoked {name}; apply it, closing its connections: nats-server --signal reload={}",
        dir.join(PID_FILE).display()
    );
    Ok(())
}

fn absolute(dir: &Path) -> Result<PathBuf> {
    dir.canonicalize()
        .with_context(|| format!("the bus directory {}", dir.display()))
}

/// Rewrites `nats-auth.conf` from the roster, with the TLS block of `dir/tls`.
fn write_fragment(dir: &Path, roster: &bus::Roster) -> Result<()> {
    let tls = tls_files(dir);
    let text = bus::server_config(roster, Some(&tls));
    let path = dir.join(FRAGMENT_FILE);
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
}

fn tls_files(dir: &Path) -> bus::TlsFiles {
    let tls = dir.join("tls");
    bus::TlsFiles {
        ca_cert: tls.join("ca.pem"),
        server_cert: tls.join("server.pem"),
        server_key: tls.join("server-key.pem"),
    }
}

/// `roundledger enroll`: an admin's offline signature of a device key's enrollment.
#[derive(clap::Args)]
pub struct EnrollArgs {
    /// The admin's key file (`roundledger keygen`): never given to the server.
    #[arg(long, value_name = "FILE")]
    admin_key: PathBuf,
    /// The table whose chain the device will extend.
    #[arg(long)]
    table: String,
    /// The device id, as in its events' signatures (`Rl-Signer`).
    #[arg(long)]
    device: String,
    /// The device's public key (64 hex characters).
    #[arg(long, value_name = "HEX")]
    device_key: String,
}

/// Prints the `Rl-Enrollment` header value a device sends until its chain enrolls it.
pub fn enroll(args: EnrollArgs) -> Result<Outcome> {
    let admin = crate::keygen::read_signing_key(&args.admin_key)?;
    let table = schemas::TableId::new(&args.table).context("--table")?;
    let device = schemas::DeviceId::new(&args.device).context("--device")?;
    let key = schemas::attest::PublicKey::from_hex(&args.device_key)
        .with_context(|| format!("--device-key {:?}: not 32 bytes of hex", args.device_key))?;
    let e = schemas::provenance::HeaderEnrollment::sign(&admin, &table, &device, key);
    println!("{}", e.to_header());
    Ok(Outcome::Clean)
}
