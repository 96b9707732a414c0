//! `roundledger quarantine purge`: signs the admin act `quarantine_purge`
//! (`schemas::admin`) and publishes it on `admin.acts`, where every ledger node takes it at
//! its point of the stream and removes the entries below `--below-id` in steps (a fenced
//! table's are kept). RUNBOOK.md says when to use it. Exit 0 once published (or written),
//! 2 on error.

use crate::Outcome;
use anyhow::Result;
use schemas::admin::Act;

#[derive(clap::Args)]
pub struct PurgeArgs {
    /// Entries with a lower id are removed (`roundledger quarantine` lists ids).
    #[arg(long, value_name = "ID")]
    below_id: u64,
    #[command(flatten)]
    sign: crate::admin::SignArgs,
}

pub fn run(args: PurgeArgs) -> Result<Outcome> {
    let act = crate::admin::send(
        &args.sign,
        Act::QuarantinePurge {
            below_id: args.below_id,
        },
    )?;
    println!(
        "quarantine purge of the entries below id {}: signed by {}, {}",
        args.below_id,
        act.admin,
        crate::admin::sent_where(&args.sign)
    );
    Ok(Outcome::Clean)
}
