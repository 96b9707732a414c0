//! An N-node JetStream cluster on loopback, owned by one guard: for the fault test that
//! stops a node of a replicated (R3) stream during load.
//!
//! Each node has its own directory (config file, log, ports file, JetStream store under
//! `js/`), its own client port, monitoring port and route (cluster) port, and a config
//! file naming it (`server_name`), its store (`jetstream { store_dir }`) and the cluster
//! (`cluster { name, listen, routes }`, every node's route port, its own included as
//! nats-server expects for a JetStream cluster).
//!
//! Invariants:
//! - Everything listens on 127.0.0.1 only. Client and monitoring ports are picked by each
//!   server (`-1`) and read from its ports file. Route ports cannot be: every node's
//!   `routes` must name them before any node starts. So they are reserved from the OS
//!   (bind port 0, read it, release it) just before the nodes start; if another process
//!   takes one in between, that node exits with "address already in use", and the whole
//!   cluster is started again on fresh ports (at most `START_ATTEMPTS` times).
//! - `start` returns only once every node agrees on one JetStream meta leader that sees
//!   every other node current (bounded by `META_LEADER_TIMEOUT`): a stream with
//!   `num_replicas = N` can be created at once.
//! - A node restarts on its own store, route port and (when still free) client port, so
//!   clients holding `url()` and the other nodes' routes find it again.
//! - Dropping the guard kills every node (SIGKILL) and reaps it; the temporary directory
//!   is removed with it. Every wait is bounded.
//!
//! - Secured (`start_secured`): clients need TLS and an issued credential (one roster,
//!   in every node's config); routes use TLS and verify each other's certificate with
//!   the cluster's CA. `issue` and `revoke` reload every running node.
//!
//! It must never use a shell, never signal a process it did not start, and never leave a
//! node running after the guard is gone.

use crate::monitor::http_get;
use crate::secure::{self, FloorAccess, Security};
use crate::{find_binary, kill9_and_reap, spawn_and_wait, Dir, Error};
use std::ffi::OsString;
use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The cluster's name (`cluster { name }`), as stream info reports it.
pub const CLUSTER_NAME: &str = "roundledger";
/// Longest wait for the cluster to agree on a JetStream meta leader.
pub const META_LEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest wait for a node to exit after a graceful stop before it is killed.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// Times the whole cluster is started on fresh route ports when one was taken.
const START_ATTEMPTS: u32 = 3;
/// Most nodes a cluster may have (a loopback test cluster; 3 or 5 in practice).
const NODES_MAX: usize = 9;
/// JetStream limits of each node: small, the machine is shared with other tests.
const MAX_MEMORY_STORE: &str = "64MB";
const MAX_FILE_STORE: &str = "1GB";

/// One node: its name, directory, ports and process.
struct Node {
    name: String,
    dir: PathBuf,
    cluster_port: u16,
    /// The client port, once the node has started (kept for restarts).
    port: Option<u16>,
    monitor_port: Option<u16>,
    child: Option<Child>,
}

/// A running JetStream cluster of N `nats-server` nodes on loopback. Stop a node with
/// `kill9` or `stop`, bring it back with `restart`; drop kills them all.
pub struct NatsCluster {
    bin: PathBuf,
    dir: Dir,
    nodes: Vec<Node>,
    /// Cluster ports of every node (each config's `routes`).
    route_ports: Vec<u16>,
    security: Option<Security>,
}

impl NatsCluster {
    /// Starts `nodes` nodes in a new temporary directory (removed on drop) and waits
    /// until they have a JetStream meta leader.
    pub fn start(nodes: usize) -> Result<NatsCluster, Error> {
        Self::start_mode(nodes, false)
    }

    /// Starts a secured cluster: client TLS, route TLS verified with one CA, and auth on
    /// clients from one roster (empty: `issue` principals).
    pub fn start_secured(nodes: usize) -> Result<NatsCluster, Error> {
        Self::start_mode(nodes, true)
    }

    fn start_mode(nodes: usize, secured: bool) -> Result<NatsCluster, Error> {
        if !(1..=NODES_MAX).contains(&nodes) {
            return Err(Error::ClusterSize {
                nodes,
                max: NODES_MAX,
            });
        }
        let bin = find_binary()?;
        let mut attempt = 1;
        loop {
            match Self::try_start(bin.clone(), nodes, secured) {
                Ok(cluster) => return Ok(cluster),
                Err(Error::Exited { status, log_tail })
                    if attempt < START_ATTEMPTS && log_tail.contains("address already in use") =>
                {
                    tracing::warn!(attempt, %status, "a reserved route port was taken; starting the cluster again on fresh ports");
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn try_start(bin: PathBuf, n: usize, secured: bool) -> Result<NatsCluster, Error> {
        let tmp = tempfile::Builder::new()
            .prefix("natsd-cluster-")
            .tempdir()
            .map_err(|source| Error::Dir {
                path: std::env::temp_dir(),
                source,
            })?;
        let ports = reserve_ports(n)?;
        let security = secured.then(|| Security::create(tmp.path())).transpose()?;
        let mut nodes = Vec::with_capacity(n);
        for (i, &cluster_port) in ports.iter().enumerate() {
            let dir = tmp.path().join(format!("n{i}"));
            fs::create_dir_all(&dir).map_err(|source| Error::Dir {
                path: dir.clone(),
                source,
            })?;
            let name = format!("n{i}");
            nodes.push(Node {
                name,
                dir,
                cluster_port,
                port: None,
                monitor_port: None,
                child: None,
            });
        }
        // From here on the guard owns the processes: an error drops it and kills them.
        let mut cluster = NatsCluster {
            bin,
            dir: Dir::Temp(tmp),
            nodes,
            route_ports: ports,
            security,
        };
        cluster.write_configs()?;
        for i in 0..n {
            cluster.spawn(i, None)?;
        }
        cluster.wait_meta_leader(META_LEADER_TIMEOUT)?;
        Ok(cluster)
    }

    /// Writes every node's config: its name, store, routes, and when secured the route
    /// TLS and the client authorization and TLS.
    fn write_configs(&self) -> Result<(), Error> {
        for n in &self.nodes {
            let mut text = config_text(
                &n.name,
                &n.dir.join("js"),
                n.cluster_port,
                &self.route_ports,
                self.security.as_ref().map(Security::tls),
            );
            if let Some(s) = &self.security {
                text.push_str(&s.fragment());
            }
            secure::write_config(&n.dir.join("nats-server.conf"), &text)?;
        }
        Ok(())
    }

    /// The roster and TLS files of a secured cluster.
    pub fn security(&self) -> Option<&Security> {
        self.security.as_ref()
    }

    /// Issues a credential for `name` in `role` (`creds/<name>.json`, 0600), adds it to
    /// the roster and reloads every running node. Issuing a name again rotates its key.
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

    /// Revokes `name` and reloads every running node: its connections are closed and it cannot connect
    /// again.
    pub fn revoke(&mut self, name: &str) -> Result<(), Error> {
        secure::change(self, |s| s.revoke(name))
    }

    /// Rewrites every node's config and reloads each running node (a stopped node reads
    /// its config when it restarts).
    pub fn reload(&mut self) -> Result<(), Error> {
        if self.security.is_none() {
            return Err(Error::NotSecured);
        }
        self.write_configs()?;
        for n in &self.nodes {
            let Some(child) = &n.child else { continue };
            secure::reload(&secure::ReloadTarget {
                bin: &self.bin,
                pid: child.id(),
                monitor_port: n.monitor_port,
                log: n.dir.join("nats-server.log"),
            })?;
        }
        Ok(())
    }

    fn scheme(&self) -> &'static str {
        if self.security.is_some() {
            "tls"
        } else {
            "nats"
        }
    }

    /// How many nodes the cluster has (running or not).
    pub fn nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Every node's client url, comma-separated (`nats://127.0.0.1:A,nats://127.0.0.1:B`,
    /// `tls://` when secured):
    /// the form `ingest` and the simulator accept, so a client can connect to, and
    /// reconnect to, any node.
    pub fn url(&self) -> String {
        self.urls().join(",")
    }

    /// Every node's client url, in node order.
    pub fn urls(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter_map(|n| n.port.map(|p| format!("{}://127.0.0.1:{p}", self.scheme())))
            .collect()
    }

    /// One node's client url.
    pub fn node_url(&self, node: usize) -> Result<String, Error> {
        let n = self.node(node)?;
        Ok(format!(
            "{}://127.0.0.1:{}",
            self.scheme(),
            n.port.unwrap_or_default()
        ))
    }

    /// One node's client port (kept across restarts when it was still free).
    pub fn port(&self, node: usize) -> Result<u16, Error> {
        Ok(self.node(node)?.port.unwrap_or_default())
    }

    /// The node's `server_name` (`n0`, `n1`, ...), as stream and consumer info name leaders.
    pub fn server_name(&self, node: usize) -> Result<&str, Error> {
        Ok(&self.node(node)?.name)
    }

    /// The node whose `server_name` is `name`.
    pub fn node_named(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// `http://127.0.0.1:PORT` of a running node's monitoring endpoint.
    pub fn monitoring_url(&self, node: usize) -> Result<Option<String>, Error> {
        let n = self.node(node)?;
        Ok(n.child
            .as_ref()
            .and(n.monitor_port)
            .map(|p| format!("http://127.0.0.1:{p}")))
    }

    /// The node's process id, while it runs.
    pub fn pid(&self, node: usize) -> Result<Option<u32>, Error> {
        Ok(self.node(node)?.child.as_ref().map(Child::id))
    }

    /// The node's JetStream store directory.
    pub fn store_dir(&self, node: usize) -> Result<PathBuf, Error> {
        Ok(self.node(node)?.dir.join("js"))
    }

    /// The directory holding every node's directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Kills the node with SIGKILL (no graceful shutdown, no flush) and reaps it. Its
    /// store, ports and config stay for `restart`.
    pub fn kill9(&mut self, node: usize) -> Result<(), Error> {
        let n = self.node_mut(node)?;
        if let Some(child) = n.child.take() {
            let pid = kill9_and_reap(child)?;
            tracing::info!(pid, node = %n.name, "cluster node killed with SIGKILL");
        }
        Ok(())
    }

    /// Stops the node gracefully (`nats-server --signal quit=PID`: it closes its routes
    /// and clients and flushes its store) and reaps it; killed if still running after
    /// `STOP_TIMEOUT`.
    pub fn stop(&mut self, node: usize) -> Result<(), Error> {
        let bin = self.bin.clone();
        let n = self.node_mut(node)?;
        let Some(mut child) = n.child.take() else {
            return Ok(());
        };
        let pid = child.id();
        let signalled = Command::new(&bin)
            .arg("--signal")
            .arg(format!("quit={pid}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !signalled.as_ref().is_ok_and(|s| s.success()) {
            tracing::warn!(pid, ?signalled, "graceful stop not signalled; killing");
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if signalled.is_ok() && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                _ => {
                    tracing::warn!(pid, "node still running after a graceful stop; killing");
                    kill9_and_reap(child)?;
                    break;
                }
            }
        }
        tracing::info!(pid, node = %n.name, "cluster node stopped");
        Ok(())
    }

    /// Starts the node again on its store, route port and client port (a new client port
    /// if its old one was taken meanwhile: check `url()`), and waits until it follows the
    /// cluster's meta leader. A running node is killed first.
    pub fn restart(&mut self, node: usize) -> Result<(), Error> {
        self.kill9(node)?;
        let old = self.node(node)?.port;
        match self.spawn(node, old) {
            Ok(()) => {}
            Err(e @ Error::Exited { .. }) if old.is_some() => {
                tracing::warn!(node, error = %e, "restart on the same client port failed; using a new port");
                self.spawn(node, None)?;
            }
            Err(e) => return Err(e),
        }
        self.wait_meta_leader(META_LEADER_TIMEOUT)?;
        Ok(())
    }

    fn spawn(&mut self, node: usize, port: Option<u16>) -> Result<(), Error> {
        let bin = self.bin.clone();
        let n = self.node_mut(node)?;
        let port_arg = port.map_or_else(|| "-1".to_string(), |p| p.to_string());
        let args: Vec<OsString> = vec![
            "-c".into(),
            n.dir.join("nats-server.conf").into(),
            "-a".into(),
            "127.0.0.1".into(),
            "-p".into(),
            port_arg.into(),
            "-m".into(),
            "-1".into(),
        ];
        let (child, client, monitor) = spawn_and_wait(&bin, &args, &n.dir)?;
        tracing::info!(pid = child.id(), node = %n.name, port = client, cluster_port = n.cluster_port, "cluster node started");
        n.port = Some(client);
        n.monitor_port = monitor;
        n.child = Some(child);
        Ok(())
    }

    /// Waits until every running node names the same JetStream meta leader and that
    /// leader sees every other running node as current. Returns the leader's node index.
    pub fn wait_meta_leader(&self, timeout: Duration) -> Result<usize, Error> {
        let deadline = Instant::now() + timeout;
        loop {
            let detail = match self.meta_state() {
                Ok(Ok(leader)) => return Ok(leader),
                Ok(Err(why)) => why,
                Err(e) => e.to_string(),
            };
            if Instant::now() >= deadline {
                return Err(Error::NoMetaLeader { timeout, detail });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `Ok(Ok(leader))` when the meta group is settled, `Ok(Err(why))` while it is not.
    fn meta_state(&self) -> Result<Result<usize, String>, Error> {
        let mut leader: Option<String> = None;
        let mut leader_view = None;
        for (i, n) in self.nodes.iter().enumerate() {
            if n.child.is_none() {
                continue;
            }
            let jsz = self.jsz(i, "")?;
            let meta = &jsz["meta_cluster"];
            let Some(l) = meta["leader"].as_str().filter(|l| !l.is_empty()) else {
                return Ok(Err(format!("{} sees no meta leader", n.name)));
            };
            match &leader {
                None => leader = Some(l.to_string()),
                Some(seen) if seen != l => {
                    return Ok(Err(format!("{} names {l}, another node {seen}", n.name)));
                }
                Some(_) => {}
            }
            if n.name == l {
                leader_view = Some(meta.clone());
            }
        }
        let Some(leader) = leader else {
            return Ok(Err("no node is running".to_string()));
        };
        let Some(view) = leader_view else {
            return Ok(Err(format!(
                "the meta leader {leader} is not a running node"
            )));
        };
        for n in self
            .nodes
            .iter()
            .filter(|n| n.child.is_some() && n.name != leader)
        {
            let current = view["replicas"].as_array().is_some_and(|rs| {
                rs.iter()
                    .any(|r| r["name"] == n.name.as_str() && r["current"] == true)
            });
            if !current {
                return Ok(Err(format!(
                    "the meta leader {leader} does not see {} current",
                    n.name
                )));
            }
        }
        match self.node_named(&leader) {
            Some(i) => Ok(Ok(i)),
            None => Ok(Err(format!("meta leader {leader} is not one of ours"))),
        }
    }

    /// The current JetStream meta leader as a running node sees it, if any.
    pub fn meta_leader(&self) -> Result<Option<usize>, Error> {
        for (i, n) in self.nodes.iter().enumerate() {
            if n.child.is_some() {
                let jsz = self.jsz(i, "")?;
                return Ok(jsz["meta_cluster"]["leader"]
                    .as_str()
                    .and_then(|l| self.node_named(l)));
            }
        }
        Ok(None)
    }

    /// The leader of stream `stream` (in the global account) as the running nodes report
    /// it (`/jsz?streams=true`), if one is known.
    pub fn stream_leader(&self, stream: &str) -> Result<Option<usize>, Error> {
        for (i, n) in self.nodes.iter().enumerate() {
            if n.child.is_none() {
                continue;
            }
            let jsz = self.jsz(i, "accounts=true&streams=true")?;
            let accounts = jsz["account_details"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for a in &accounts {
                for s in a["stream_detail"].as_array().into_iter().flatten() {
                    if s["name"] == stream {
                        if let Some(l) = s["cluster"]["leader"].as_str() {
                            if let Some(node) = self.node_named(l) {
                                return Ok(Some(node));
                            }
                        }
                    }
                }
            }
        }
        Ok(None)
    }

    /// A running node's `/jsz` (JetStream) monitoring answer, with `query` (e.g.
    /// `streams=true`), as JSON.
    pub fn jsz(&self, node: usize, query: &str) -> Result<serde_json::Value, Error> {
        let n = self.node(node)?;
        let (Some(port), Some(_)) = (n.monitor_port, n.child.as_ref()) else {
            return Err(Error::Monitor {
                url: format!("node {}", n.name),
                why: "not running or no monitoring port".to_string(),
            });
        };
        let path = if query.is_empty() {
            "/jsz".to_string()
        } else {
            format!("/jsz?{query}")
        };
        let body = http_get(port, &path)?;
        serde_json::from_slice(&body).map_err(|e| Error::Monitor {
            url: format!("http://127.0.0.1:{port}{path}"),
            why: format!("not JSON: {e}"),
        })
    }

    fn node(&self, node: usize) -> Result<&Node, Error> {
        let nodes = self.nodes.len();
        self.nodes
            .get(node)
            .ok_or(Error::NoSuchNode { node, nodes })
    }

    fn node_mut(&mut self, node: usize) -> Result<&mut Node, Error> {
        let nodes = self.nodes.len();
        self.nodes
            .get_mut(node)
            .ok_or(Error::NoSuchNode { node, nodes })
    }
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            if let Err(e) = self.kill9(i) {
                tracing::error!(node = i, error = %e, "stopping a cluster node on drop");
            }
        }
    }
}

/// `n` distinct free loopback ports, from the OS (bound together, then released).
fn reserve_ports(n: usize) -> Result<Vec<u16>, Error> {
    let listeners = (0..n)
        .map(|_| TcpListener::bind(("127.0.0.1", 0)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| Error::ReservePort { source })?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| Error::ReservePort { source })
}

/// A node's config file: its name, store and limits, the cluster's routes, and with
/// `route_tls` TLS on the routes (each side verifies the other with the CA).
fn config_text(
    name: &str,
    store_dir: &Path,
    cluster_port: u16,
    route_ports: &[u16],
    route_tls: Option<&bus::TlsFiles>,
) -> String {
    let routes: Vec<String> = route_ports
        .iter()
        .map(|p| format!("    \"nats-route://127.0.0.1:{p}\""))
        .collect();
    format!(
        "server_name: {name:?}\n\
         jetstream {{\n  store_dir: {store:?}\n  max_memory_store: {MAX_MEMORY_STORE}\n  max_file_store: {MAX_FILE_STORE}\n}}\n\
         cluster {{\n  name: {CLUSTER_NAME:?}\n  listen: \"127.0.0.1:{cluster_port}\"\n  routes: [\n{routes}\n  ]\n{tls}}}\n",
        store = store_dir.display().to_string(),
        routes = routes.join("\n"),
        tls = route_tls.map_or_else(String::new, |t| format!("  tls {}", bus::tls_block(t, true))),
    )
}

impl secure::Guard for NatsCluster {
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
    use crate::port_open;
    use async_nats::jetstream::{self, stream};

    #[test]
    fn config_names_the_node_its_store_and_every_route() {
        let text = config_text(
            "n1",
            Path::new("/tmp/x/n1/js"),
            7002,
            &[7001, 7002, 7003],
            None,
        );
        assert!(text.contains("server_name: \"n1\""), "{text}");
        assert!(text.contains("store_dir: \"/tmp/x/n1/js\""), "{text}");
        assert!(text.contains("listen: \"127.0.0.1:7002\""), "{text}");
        for p in [7001, 7002, 7003] {
            assert!(
                text.contains(&format!("\"nats-route://127.0.0.1:{p}\"")),
                "{text}"
            );
        }
        assert!(
            text.contains(&format!("name: \"{CLUSTER_NAME}\"")),
            "{text}"
        );
    }

    #[test]
    fn cluster_size_is_bounded() {
        assert!(matches!(
            NatsCluster::start(0),
            Err(Error::ClusterSize { nodes: 0, .. })
        ));
        assert!(matches!(
            NatsCluster::start(NODES_MAX + 1),
            Err(Error::ClusterSize { .. })
        ));
    }

    /// Three nodes elect a meta leader; an R3 stream can be created at once through the
    /// multi-server url and keeps accepting publishes with one node killed, then with
    /// another stopped gracefully after the first came back. Drop leaves nothing running.
    #[test]
    fn three_nodes_hold_an_r3_stream_through_a_node_loss() {
        let mut cluster = NatsCluster::start(3).expect("cluster");
        assert_eq!(cluster.nodes(), 3);
        assert_eq!(cluster.url().split(',').count(), 3);
        let leader = cluster.meta_leader().expect("jsz").expect("a meta leader");
        assert!(leader < 3);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let urls = cluster.urls();
        let js = rt.block_on(async {
            let client = async_nats::connect(urls).await.expect("connect");
            jetstream::new(client)
        });
        // A publish in flight when the client's node dies is lost with the connection
        // (no ack comes): a client publishes again under the same message id, and the
        // stream de-duplicates. Bounded: 5 attempts of at most 5 s.
        let publish = |js: &jetstream::Context, n: u32| {
            rt.block_on(async {
                for attempt in 1..=5 {
                    let msg = jetstream::message::PublishMessage::build()
                        .payload(format!("m{n}").into())
                        .message_id(format!("m{n}"));
                    let acked = match js.send_publish("r3.x", msg).await {
                        Ok(ack) => ack.await.map_err(|e| e.to_string()),
                        Err(e) => Err(e.to_string()),
                    };
                    match acked {
                        Ok(ack) => return ack.sequence,
                        Err(e) => eprintln!("publish m{n} attempt {attempt}: {e}"),
                    }
                }
                panic!("publish m{n} never acknowledged");
            })
        };
        let info = rt.block_on(async {
            let mut s = js
                .create_stream(stream::Config {
                    name: "R3".to_string(),
                    subjects: vec!["r3.>".to_string()],
                    storage: stream::StorageType::File,
                    num_replicas: 3,
                    ..Default::default()
                })
                .await
                .expect("create an R3 stream");
            s.info().await.expect("stream info").clone()
        });
        assert_eq!(info.config.num_replicas, 3);
        let ci = info.cluster.expect("cluster info");
        assert_eq!(ci.name.as_deref(), Some(CLUSTER_NAME));
        assert_eq!(ci.replicas.len(), 2, "{ci:?}");
        let stream_leader = cluster.stream_leader("R3").expect("jsz").expect("leader");
        assert_eq!(
            Some(cluster.server_name(stream_leader).expect("name")),
            ci.leader.as_deref()
        );
        assert_eq!(publish(&js, 1), 1);

        // One follower killed: the stream still has a quorum.
        let follower = (stream_leader + 1) % 3;
        let port = cluster.port(follower).expect("port");
        cluster.kill9(follower).expect("kill9");
        assert!(!port_open(port));
        assert_eq!(publish(&js, 2), 2);
        cluster.restart(follower).expect("restart");
        assert_eq!(cluster.port(follower).expect("port"), port);
        // Another node stopped gracefully.
        let other = (stream_leader + 2) % 3;
        cluster.stop(other).expect("stop");
        assert!(cluster.pid(other).expect("pid").is_none());
        assert_eq!(publish(&js, 3), 3);

        let dir = cluster.dir().to_path_buf();
        let ports: Vec<u16> = (0..3).map(|i| cluster.port(i).expect("port")).collect();
        drop(js);
        drop(cluster);
        for p in ports {
            assert!(!port_open(p), "port {p} still open after drop");
        }
        assert!(!dir.exists(), "temp dir {} not removed", dir.display());
    }
}
