//! The tokio runtime of the commands that run async code: the server, the simulator,
//! the demo, a re-sync and the benchmarks. One definition, so each runs on the same
//! number of workers.

use anyhow::{Context, Result};

/// The tokio runtime of the async commands: two workers, the size of the machine this runs
/// on; sled work goes to ingest's own writer thread, not these.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")
}
