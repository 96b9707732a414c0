//! `roundledger report`: finance reports (`readside::finance`) from a ledger directory
//! (its read model, brought to the ledger's heads) or a running server (`--server`), as
//! a table in the property's local time and currency units, as CSV (`--csv`) or JSON.
//!
//! Drops come from the count journal (`<ledger>/api/counts.jsonl`, `readside::counts`);
//! a box without a count reads "not yet counted", never a zero drop.

use crate::args::{DayArgs, PitArgs};
use crate::client::{enc, Client, ServerArgs};
use crate::Outcome;
use anyhow::{bail, Context, Result};
use readside::finance::{GroupBy, Pit, Query, Span};
use readside::model::{self, Model, ModelError};
use schemas::finance::{FinanceReport, ReportGroup};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// A ledger directory no server holds open.
    #[arg(long, conflicts_with = "server")]
    ledger: Option<PathBuf>,
    #[command(flatten)]
    server: ServerArgs,
    /// One shift, e.g. 2026-11-25/2.
    #[arg(long)]
    shift: Option<String>,
    /// One gaming day, YYYY-MM-DD.
    #[arg(long)]
    day: Option<String>,
    /// Month to date, through this day.
    #[arg(long)]
    mtd: Option<String>,
    /// Year to date, through this day.
    #[arg(long)]
    ytd: Option<String>,
    /// With --to-day: a range of gaming days, both included.
    #[arg(long, requires = "to_day")]
    from_day: Option<String>,
    #[arg(long, requires = "from_day")]
    to_day: Option<String>,
    /// table, pit, game, shift, day or dealer (the dealer in place when each round began).
    #[arg(long, default_value = "table")]
    group_by: String,
    /// Only this table.
    #[arg(long)]
    table: Option<String>,
    /// Only this pit's tables.
    #[arg(long)]
    only_pit: Option<String>,
    /// CSV for the accounting system.
    #[arg(long, conflicts_with = "json")]
    csv: bool,
    /// The report as JSON.
    #[arg(long)]
    json: bool,
    /// Each jackpot pool's liability over --day instead (opening, contributions, hits,
    /// closing, against the controller's display).
    #[arg(long, requires = "day")]
    jackpots: bool,
    #[command(flatten)]
    day_rule: DayArgs,
    #[command(flatten)]
    pits: PitArgs,
}

impl Args {
    /// The span and its query-string form.
    fn span(&self) -> Result<(Span, String)> {
        let given = [
            self.shift
                .clone()
                .map(|s| (Span::Shift(s.clone()), format!("shift={}", enc(&s)))),
            self.day
                .clone()
                .map(|d| (Span::Day(d.clone()), format!("day={}", enc(&d)))),
            self.mtd
                .clone()
                .map(|d| (Span::MonthToDate(d.clone()), format!("mtd={}", enc(&d)))),
            self.ytd
                .clone()
                .map(|d| (Span::YearToDate(d.clone()), format!("ytd={}", enc(&d)))),
            self.from_day
                .clone()
                .zip(self.to_day.clone())
                .map(|(a, b)| {
                    let q = format!("from_day={}&to_day={}", enc(&a), enc(&b));
                    (Span::Days { from: a, to: b }, q)
                }),
        ];
        let mut it = given.into_iter().flatten();
        match (it.next(), it.next()) {
            (Some(s), None) => Ok(s),
            _ => bail!("give one of --shift, --day, --mtd, --ytd, or --from-day with --to-day"),
        }
    }
}

pub fn run(args: Args) -> Result<Outcome> {
    if args.jackpots {
        return jackpots(&args);
    }
    let (span, span_query) = args.span()?;
    let group_by = GroupBy::parse(&args.group_by).map_err(anyhow::Error::msg)?;
    let table = args
        .table
        .as_deref()
        .map(schemas::TableId::new)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--table: {e}"))?;
    let (report, rule) = match (&args.ledger, Client::from_args(&args.server)?) {
        (Some(dir), None) => {
            let q = Query {
                span,
                group_by,
                table,
                pit: args.only_pit.clone(),
            };
            from_ledger(dir, &args.day_rule, &args.pits.pits()?, &q)?
        }
        (None, Some(c)) => {
            let mut path = format!("/v1/reports?{span_query}&group_by={}", enc(&args.group_by));
            for (k, v) in [("table", &args.table), ("pit", &args.only_pit)] {
                if let Some(v) = v {
                    path.push_str(&format!("&{k}={}", enc(v)));
                }
            }
            let r: FinanceReport = c.get(&path)?;
            let rule = server_rule(&args.day_rule, &r.day_rule)?;
            (r, rule)
        }
        _ => bail!("say where: --ledger DIR or --server URL"),
    };
    if args.csv {
        print!("{}", readside::finance::to_csv(&report));
    } else if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report, &rule);
    }
    Ok(
        match report.total.hold_alarm || report.variances_total > 0 {
            true => Outcome::Findings,
            false => Outcome::Clean,
        },
    )
}

/// The server's day rule, as its report states it. Flags that say another are refused:
/// the server splits its days by its own rule.
fn server_rule(flags: &DayArgs, spec: &str) -> Result<ledger::days::DayRule> {
    let rule = ledger::days::DayRule::from_spec(spec)
        .with_context(|| format!("the server's day rule {spec:?}"))?;
    let said = flags.over(Some(&rule))?;
    if flags.given() && said.spec() != rule.spec() {
        bail!(
            "the server's day rule is `{spec}`; the flags say `{}`. The server's rule is \
             set where it runs (`serve --shifts`)",
            said.spec()
        );
    }
    Ok(rule)
}

/// The report from a ledger directory: its read model opened under the ledger's day rule
/// (rebuilt when it was built under another), brought to the heads; drops from the count
/// journal.
fn from_ledger(
    dir: &Path,
    flags: &DayArgs,
    pits: &[Pit],
    q: &Query,
) -> Result<(FinanceReport, ledger::days::DayRule)> {
    let ledger = crate::source::open_ledger(dir)?;
    let rule = &flags.rule_of(&ledger)?;
    readside::finance::refuse_future(rule, &q.span, crate::when::now_ns()?)?;
    readside::retained::refuse_removed(&ledger, &q.span)?;
    let mdir = model::default_dir(dir);
    let m = match Model::open(&mdir, rule) {
        Err(ModelError::Version { found }) => {
            eprintln!("read model: {found}: rebuilding it under {}", rule.spec());
            std::fs::remove_dir_all(&mdir)
                .with_context(|| format!("deleting the read model at {}", mdir.display()))?;
            Model::open(&mdir, rule)?
        }
        m => m?,
    };
    // A day removed by retention since the model was built: its rows go, as serve does,
    // and the rebuild judges decisions as the model's passes did.
    let analytics = readside::index::analytics_of(&m)?;
    if let Err(e) = readside::index::removals_unseen(&ledger, &m) {
        eprintln!("{e}: rebuilding the read model");
        m.clear()?;
    }
    readside::index::catch_up_as(&ledger, &m, analytics)
        .context("bringing the read model to the heads")?;
    let book = readside::counts::CountBook::read(&ledger::journals::api_dir(dir))?;
    let t0 = std::time::Instant::now();
    let boxes = readside::finance::drop_boxes(&m, q)?;
    let counts = book.results(boxes.iter());
    let r = readside::finance::report(&m, pits, &counts, q)?;
    // On stderr, so --csv and --json stay clean: what BENCHMARKS.md records.
    eprintln!(
        "report from the read model in {:.1?}: {} table shifts, {} boxes counted, {} not yet",
        t0.elapsed(),
        r.total.table_shifts,
        r.total.boxes_counted,
        r.total.boxes_not_counted
    );
    Ok((r, rule.clone()))
}

fn print_report(r: &FinanceReport, rule: &ledger::days::DayRule) {
    println!(
        "finance report, {}: {} to {} ({}), by {}",
        r.span,
        rule.local_text(r.starts_at_ns),
        rule.local_text(r.ends_at_ns),
        r.day_rule,
        r.group_by
    );
    println!(
        "{:<16} {:>7} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>8} {:>17} {:>12} {:>25}",
        "group",
        "rounds",
        "drop",
        "win acct",
        "win rec",
        "win rules",
        "jackpots",
        "theo win",
        "hold %",
        "handle hold %",
        "variances",
        "95% interval"
    );
    for g in r.groups.iter().chain(std::iter::once(&r.total)) {
        print_group(g);
    }
    if r.no_play {
        println!("no table played in {}: no figure here is a result", r.span);
    }
    for why in &r.total.not_known {
        println!("not known: {why}");
    }
    println!("variances: {}", r.variances_total);
    for v in &r.variances {
        let cause = serde_json::to_value(v.cause).ok();
        let cause = cause.as_ref().and_then(|c| c.as_str()).unwrap_or("?");
        println!("  {} {} {cause} {}: {}", v.table, v.shift, v.amount, v.text);
        for l in &v.links {
            let at = l.seq.map(|s| format!(" seq {}", s.0)).unwrap_or_default();
            println!("      {}{at}: {}", l.kind, l.text);
        }
    }
}

/// Basis points as a percentage with two decimals: -2500 -> "-25.00"; `None` -> "-".
fn percent_bp(bp: Option<i64>) -> String {
    bp.map_or("-".to_string(), |b| {
        let sign = if b < 0 { "-" } else { "" };
        format!("{sign}{}.{:02}", b.abs() / 100, b.abs() % 100)
    })
}

fn print_group(g: &ReportGroup) {
    let opt = |m: Option<schemas::Money>| m.map_or("not counted".to_string(), |m| m.to_string());
    let alarm = if g.hold_alarm { " ALARM" } else { "" };
    // Some bets' configured pay tables are not priced yet: no theoretical figure.
    let (theo, interval) = match g.theoretical_pending {
        true => ("pending".to_string(), "theoretical pending".to_string()),
        false => (
            g.theoretical_win.to_string(),
            format!("{} .. {}", g.win_low, g.win_high),
        ),
    };
    // Per priced handle: actual against theoretical (a dealer's hold; no drop of its own).
    let handle_hold = format!(
        "{}/{}",
        percent_bp(g.hold_handle_bp),
        percent_bp(g.hold_handle_theoretical_bp)
    );
    println!(
        "{:<16} {:>7} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12} {:>8} {:>17} {:>12} {:>25}{alarm}",
        g.key,
        g.rounds,
        opt(g.drop),
        opt(g.win_accounting),
        g.win_recorded.to_string(),
        g.win_rules.to_string(),
        g.jackpot_paid_recorded.to_string(),
        theo,
        percent_bp(g.hold_bp),
        handle_hold,
        g.variances,
        interval,
    );
}

/// The CSV columns of `report --jackpots --csv`.
pub const JACKPOTS_CSV_HEADER: &str =
    "pool,day,opening,contributions,hits,paid,resets,closing,displayed,difference,mismatches";

/// Each pool's liability as CSV: amounts in currency units, empty where not displayed.
fn jackpots_csv(pools: &[schemas::finance::PoolLiability]) -> String {
    let opt = |m: Option<schemas::Money>| m.map(|m| m.to_string()).unwrap_or_default();
    let mut out = format!("{JACKPOTS_CSV_HEADER}\n");
    for p in pools {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{}\n",
            p.pool,
            p.day,
            p.opening,
            p.contributions,
            p.hits,
            p.paid,
            p.resets,
            p.closing,
            opt(p.displayed),
            opt(p.difference),
            p.mismatches
        ));
    }
    out
}

/// `report --jackpots --day D`: each pool's liability over the day. Exit 1 when a pool's
/// display differs from the recomputed pool.
fn jackpots(args: &Args) -> Result<Outcome> {
    let day = args.day.clone().context("--jackpots needs --day")?;
    let (pools, rule): (Vec<schemas::finance::PoolLiability>, _) = match (
        &args.ledger,
        Client::from_args(&args.server)?,
    ) {
        (Some(dir), None) => {
            let ledger = crate::source::open_ledger(dir)?;
            let rule = args.day_rule.rule_of(&ledger)?;
            (readside::jackpot::liability(&ledger, &rule, &day)?, rule)
        }
        (None, Some(c)) => {
            anyhow::ensure!(
                    !args.day_rule.given(),
                    "--server: the server's day rule splits the day; drop --day-start, --time-zone and --shifts"
                );
            let pools = c.get(&format!("/v1/reports/jackpots?day={}", enc(&day)))?;
            (pools, args.day_rule.rule()?)
        }
        _ => bail!("say where: --ledger DIR or --server URL"),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&pools)?);
    } else if args.csv {
        print!("{}", jackpots_csv(&pools));
    } else {
        println!("jackpot liability, day {day} ({})", rule.spec());
        for p in &pools {
            let shown = p.displayed.map_or("-".to_string(), |d| d.to_string());
            println!(
                "{}: opening {} + contributions {} - paid {} ({} hits, {} resets) = closing {}; displayed {shown}",
                p.pool, p.opening, p.contributions, p.paid, p.hits, p.resets, p.closing
            );
        }
    }
    let off = pools
        .iter()
        .any(|p| p.difference.is_some_and(|d| d != schemas::Money::ZERO));
    Ok(if off {
        Outcome::Findings
    } else {
        Outcome::Clean
    })
}
