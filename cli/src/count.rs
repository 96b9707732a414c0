//! `roundledger count`: the count room's results. `add` signs one drop box's count with
//! the counter's key and sends it to a running server; `import` does the same for every
//! row of a CSV file, after checking them all (a bad row sends nothing); `list` prints the
//! standing counts from a ledger directory or a server. Amounts are in major units with at
//! most two decimals (`1234.50`), kept as integer minor units.

use crate::client::{Client, ServerArgs};
use crate::Outcome;
use anyhow::{bail, Context, Result};
use schemas::count::{CountEntry, CountResult, SignedCount};
use schemas::{Money, TableId};
use std::path::{Path, PathBuf};

/// Most rows one import takes.
pub const IMPORT_ROWS_MAX: usize = 10_000;
/// The CSV header `import` expects.
pub const IMPORT_HEADER: &str = "table,drop_box_id,cash,markers,counted_by,counted_at";

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: CountCommand,
}

#[derive(clap::Subcommand)]
enum CountCommand {
    /// Sign one drop box's count and send it to the server (finance or admin token).
    Add(AddArgs),
    /// Sign and send every row of a CSV file (header: table,drop_box_id,cash,markers,
    /// counted_by,counted_at with counted_at in RFC 3339).
    Import(ImportArgs),
    /// The standing count of each drop box, newest first.
    List(ListArgs),
}

#[derive(clap::Args)]
struct Signer {
    /// The counter's key file (`roundledger keygen`); the server trusts its public key
    /// (`count_keys` in its access file).
    #[arg(long, value_name = "FILE")]
    sign_key: PathBuf,
    #[command(flatten)]
    server: ServerArgs,
}

#[derive(clap::Args)]
struct AddArgs {
    #[arg(long)]
    table: String,
    /// The drop box's id, as its `drop_box_removed` event names it.
    #[arg(long = "box", value_name = "ID")]
    drop_box_id: String,
    /// Cash found, in major units (`1234.50`).
    #[arg(long)]
    cash: String,
    /// Marker copies found, at face value, in major units.
    #[arg(long, default_value = "0")]
    markers: String,
    /// Who counted, as the count sheet names them.
    #[arg(long)]
    counted_by: String,
    /// When it was counted (RFC 3339; default now).
    #[arg(long)]
    counted_at: Option<String>,
    #[command(flatten)]
    signer: Signer,
}

#[derive(clap::Args)]
struct ImportArgs {
    file: PathBuf,
    #[command(flatten)]
    signer: Signer,
}

#[derive(clap::Args)]
struct ListArgs {
    /// A ledger directory (its API directory `<ledger>/api` holds the counts).
    #[arg(long, conflicts_with = "server")]
    ledger: Option<PathBuf>,
    #[arg(long)]
    table: Option<String>,
    #[arg(long, default_value_t = 50)]
    limit: usize,
    #[command(flatten)]
    server: ServerArgs,
}

pub fn run(a: Args) -> Result<Outcome> {
    match a.command {
        CountCommand::Add(a) => add(a),
        CountCommand::Import(a) => import(a),
        CountCommand::List(a) => list(a),
    }
}

fn add(a: AddArgs) -> Result<Outcome> {
    let count = CountResult {
        table: TableId::new(a.table.clone()).context("--table")?,
        drop_box_id: a.drop_box_id,
        cash: parse_amount(&a.cash).context("--cash")?,
        markers: parse_amount(&a.markers).context("--markers")?,
        counted_at_ns: match &a.counted_at {
            Some(t) => parse_time_ns(t).context("--counted-at")?,
            None => now_ns(),
        },
        counted_by: a.counted_by,
    };
    send(&a.signer, vec![count])
}

fn import(a: ImportArgs) -> Result<Outcome> {
    let text = std::fs::read_to_string(&a.file)
        .with_context(|| format!("reading {}", a.file.display()))?;
    let counts = parse_csv(&text).with_context(|| format!("{}", a.file.display()))?;
    send(&a.signer, counts)
}

/// Signs every count (each checked first), then sends them one by one.
fn send(s: &Signer, counts: Vec<CountResult>) -> Result<Outcome> {
    let client = Client::from_args(&s.server)?.context("count needs --server URL")?;
    let key = crate::keygen::read_signing_key(&s.sign_key)?;
    let at_ns = now_ns();
    let signed = counts
        .into_iter()
        .enumerate()
        .map(|(i, c)| SignedCount::sign(&key, c, at_ns).with_context(|| format!("count {}", i + 1)))
        .collect::<Result<Vec<_>>>()?;
    for s in signed {
        let e: CountEntry = client.post("/v1/counts", &s)?;
        let c = &e.signed.count;
        println!(
            "counted {} {}: cash {} markers {} (journal line {})",
            c.table, c.drop_box_id, c.cash, c.markers, e.n
        );
    }
    Ok(Outcome::Clean)
}

fn list(a: ListArgs) -> Result<Outcome> {
    let table = a.table.map(TableId::new).transpose().context("--table")?;
    let entries = match (&a.ledger, Client::from_args(&a.server)?) {
        (Some(dir), _) => local(dir, table.as_ref(), a.limit)?,
        (None, Some(c)) => {
            let q = table.map(|t| format!("&table={t}")).unwrap_or_default();
            c.get(&format!("/v1/counts?limit={}{q}", a.limit.clamp(1, 500)))?
        }
        (None, None) => bail!("count list needs --ledger DIR or --server URL"),
    };
    println!("line  table      drop box                     cash        markers  counted by");
    for e in entries {
        let c = &e.signed.count;
        println!(
            "{:>4}  {:<9}  {:<26}  {:>10}  {:>10}  {}",
            e.n,
            c.table,
            c.drop_box_id,
            c.cash.to_string(),
            c.markers.to_string(),
            c.counted_by
        );
    }
    Ok(Outcome::Clean)
}

fn local(dir: &Path, table: Option<&TableId>, limit: usize) -> Result<Vec<CountEntry>> {
    let book = readside::counts::CountBook::read(&ledger::journals::api_dir(dir))?;
    Ok(book.list(table, limit))
}

/// Parses the import CSV: the header, then one count a row; every bad row is named.
pub fn parse_csv(text: &str) -> Result<Vec<CountResult>> {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default().trim();
    if header != IMPORT_HEADER {
        bail!("line 1: header must be {IMPORT_HEADER:?}, got {header:?}");
    }
    let (mut out, mut bad) = (Vec::new(), Vec::new());
    for (i, line) in lines.enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        match parse_row(line) {
            Ok(c) => out.push(c),
            Err(e) => bad.push(format!("line {}: {e:#}", i + 2)),
        }
    }
    if !bad.is_empty() {
        bail!("{} bad rows, nothing sent:\n{}", bad.len(), bad.join("\n"));
    }
    if out.is_empty() || out.len() > IMPORT_ROWS_MAX {
        bail!("{} rows: 1 to {IMPORT_ROWS_MAX} counts a file", out.len());
    }
    Ok(out)
}

fn parse_row(line: &str) -> Result<CountResult> {
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    let [table, drop_box, cash, markers, by, at] = f.as_slice() else {
        bail!("{} fields, want 6 (no commas inside a field)", f.len());
    };
    let c = CountResult {
        table: TableId::new(table.to_string()).context("table")?,
        drop_box_id: drop_box.to_string(),
        cash: parse_amount(cash).context("cash")?,
        markers: parse_amount(markers).context("markers")?,
        counted_at_ns: parse_time_ns(at).context("counted_at")?,
        counted_by: by.to_string(),
    };
    c.check()?;
    Ok(c)
}

/// `1234`, `1234.5` or `1234.50` major units as minor units; no sign, no float.
pub fn parse_amount(s: &str) -> Result<Money> {
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || (s.contains('.') && !digits(frac)) || frac.len() > 2 || whole.len() > 12 {
        bail!("{s:?} is not an amount like 1234.50");
    }
    let cents = format!("{frac:0<2}").parse::<i64>()?;
    Ok(Money(whole.parse::<i64>()? * 100 + cents))
}

fn parse_time_ns(s: &str) -> Result<i64> {
    let t: jiff::Timestamp = s
        .parse()
        .with_context(|| format!("{s:?} is not RFC 3339"))?;
    i64::try_from(t.as_nanosecond()).context("time out of range")
}

fn now_ns() -> i64 {
    jiff::Timestamp::now().as_nanosecond() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_parse_to_minor_units_and_back() {
        assert_eq!(parse_amount("1234.5").unwrap(), Money(123_450));
        assert_eq!(parse_amount("7").unwrap(), Money(700));
        assert_eq!(Money(123_405).to_string(), "1234.05");
        for bad in ["", "-1", "1.234", "1e3", "1,000", ".5", "12."] {
            assert!(parse_amount(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_import_with_a_bad_row_names_it_and_sends_nothing() {
        let ok = "T-1,T-1/2026-11-25/1,100.00,0,team B,2026-11-25T23:00:00Z";
        let csv = format!("{IMPORT_HEADER}\n{ok}\nT-1,box,abc,0,team B,2026-11-25T23:00:00Z\n");
        let e = format!("{:#}", parse_csv(&csv).unwrap_err());
        assert!(e.contains("line 3") && e.contains("cash"), "{e}");
        let good = parse_csv(&format!("{IMPORT_HEADER}\n{ok}\n")).unwrap();
        assert_eq!(good[0].cash, Money(10_000));
    }
}
