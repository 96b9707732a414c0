//! `roundledger bench-api --ledger DIR`: the API's latency for the surveillance officer's
//! main request, one round fetched and replayed (`GET /v1/tables/{t}/rounds/{n}`: locate,
//! read the window from sled, decode, replay, settle, audit-log the read with its fsync,
//! serialise), through the real router in process, on random rounds of a ledger of any
//! size (`roundledger seed` makes ten million events). Prints p50/p90/p99/max.

use crate::Outcome;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// A ledger directory no server holds.
    #[arg(long)]
    ledger: PathBuf,
    /// Requests to time.
    #[arg(long, default_value_t = 2000)]
    requests: usize,
    /// Where the benchmark's audit log goes (a fresh temporary directory by default).
    #[arg(long)]
    api_dir: Option<PathBuf>,
}

/// Most rounds the benchmark draws its requests from.
const BENCH_ROUNDS_MAX: u64 = 1_000_000;
/// Requests made before timing starts.
const WARM_UP: usize = 50;

pub fn run(args: Args) -> Result<Outcome> {
    let ledger = Arc::new(crate::source::open_ledger(&args.ledger)?);
    let tmp = tempfile::tempdir()?;
    let dir = args
        .api_dir
        .clone()
        .unwrap_or_else(|| tmp.path().join("api"));
    let token = crate::tokens::random_token()?;
    let state = app_state(&args, ledger.clone(), &dir, &token)?;
    let stats = ledger.reader().stats();
    let t0 = Instant::now();
    state.index_all().context("indexing")?;
    println!(
        "ledger: {} tables, {} events; index built in {:.1?}",
        stats.tables,
        stats.events,
        t0.elapsed()
    );
    let rounds: Vec<(String, u64)> = state
        .model
        .rounds(&Default::default(), 0, BENCH_ROUNDS_MAX)?
        .items
        .into_iter()
        .map(|r| (r.table.as_str().to_string(), r.round.0))
        .collect();
    anyhow::ensure!(!rounds.is_empty(), "the ledger has no rounds");
    let app = api::router(state);
    let mut lat_us = time_requests(app, &rounds, &token, args.requests)?;
    lat_us.sort_unstable();
    let q = |p: f64| lat_us[((lat_us.len() as f64 * p) as usize).min(lat_us.len() - 1)];
    println!(
        "GET /v1/tables/{{t}}/rounds/{{n}} x {} random rounds of {}: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        lat_us.len(),
        rounds.len(),
        q(0.50) as f64 / 1000.0,
        q(0.90) as f64 / 1000.0,
        q(0.99) as f64 / 1000.0,
        q(1.0) as f64 / 1000.0
    );
    Ok(Outcome::Clean)
}

/// The API's state over `ledger`, with one surveillance token and its audit log in `dir`.
fn app_state(
    args: &Args,
    ledger: Arc<ledger::Ledger>,
    dir: &std::path::Path,
    token: &str,
) -> Result<Arc<api::AppState>> {
    let access = api::auth::AccessConfig {
        tokens: vec![api::auth::TokenConfig {
            name: "bench".into(),
            role: schemas::api::Role::Surveillance,
            token: token.to_string(),
            token_hash: None,
        }],
        count_keys: vec![],
    };
    let (_stop, rx) = tokio::sync::watch::channel(false);
    let model_dir = readside::model::default_dir(&args.ledger);
    api::AppState::new(
        ledger,
        &access,
        dir,
        &model_dir,
        api::system_clock,
        rx,
        api::FinanceSetup::default(),
    )
    .context("starting the API state")
}

/// Latency of `requests` round fetches drawn at random (seeded), microseconds, unsorted.
/// The first `WARM_UP` requests warm the caches and are not timed.
fn time_requests(
    app: axum::Router,
    rounds: &[(String, u64)],
    token: &str,
    requests: usize,
) -> Result<Vec<u64>> {
    use rand::{Rng, SeedableRng};
    use tower::ServiceExt;
    let rt = crate::runtime::runtime()?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(42);
    let mut lat_us: Vec<u64> = Vec::with_capacity(requests);
    rt.block_on(async {
        for i in 0..requests + WARM_UP {
            let (t, r) = &rounds[rng.gen_range(0..rounds.len())];
            let req = axum::http::Request::get(format!("/v1/tables/{t}/rounds/{r}"))
                .header("authorization", format!("Bearer {token}"))
                .body(axum::body::Body::empty())?;
            let start = Instant::now();
            let res = app.clone().oneshot(req).await?;
            let status = res.status();
            let body = axum::body::to_bytes(res.into_body(), 1 << 26).await?;
            let us = start.elapsed().as_micros() as u64;
            anyhow::ensure!(status.is_success(), "{t} round {r}: {status}");
            anyhow::ensure!(!body.is_empty());
            if i >= WARM_UP {
                lat_us.push(us);
            }
        }
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(lat_us)
}
