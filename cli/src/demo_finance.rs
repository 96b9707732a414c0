//! The demo's finance: the count room enters each drop box's count through the API,
//! signed with a count key the demo trusts, and finance reads the report of the floor's
//! gaming days, with the injected finance errors found among its variances.

use crate::client::{Client, ServerArgs};
use anyhow::{Context, Result};
use api::auth::{AccessConfig, CountKeyConfig};
use schemas::attest::SigningKey;
use schemas::count::{CountEntry, CountResult, SignedCount};
use std::path::Path;

/// A fresh count key, trusted in `access` and in its file at `path`.
pub fn trust_count_key(path: &Path, access: &mut AccessConfig) -> Result<SigningKey> {
    let mut secret = [0u8; 32];
    hex::decode_to_slice(crate::tokens::random_token()?, &mut secret)?;
    let key = SigningKey::from_secret(secret);
    access.count_keys.push(CountKeyConfig {
        name: "demo count room".into(),
        key: key.public().to_hex(),
    });
    crate::tokens::save(path, access)?;
    Ok(key)
}

/// A client of the demo's own server as `token`.
pub fn client(url: &str, token: &str) -> Result<Client> {
    let args = ServerArgs {
        server: vec![url.trim_end_matches('/').to_string()],
        token: Some(token.to_string()),
        ca: None,
    };
    Client::from_args(&args)?.context("a server URL")
}

/// Signs and enters every count through `POST /v1/counts`; how many were journaled. Call
/// after the server has indexed the boxes' removals: it binds each count to one.
pub fn enter_counts(client: &Client, key: &SigningKey, counts: &[CountResult]) -> Result<usize> {
    let signed_at_ns = crate::when::now_ns()?;
    for c in counts {
        let signed = SignedCount::sign(key, c.clone(), signed_at_ns)?;
        let _: CountEntry = client
            .post("/v1/counts", &signed)
            .with_context(|| format!("entering the count of {}", c.drop_box_id))?;
    }
    Ok(counts.len())
}

/// The property's day as the demo's floor changes shift: a day from the first shift
/// start (`--shift-start`, UTC), split every `--shift-every` when that divides a day.
pub fn day_rule(shift_start: &str, shift_every_s: u64) -> Result<ledger::days::DayRule> {
    const DAY_S: u64 = 86_400;
    let rule = ledger::days::DayRule::new(shift_start, "UTC").context("--shift-start")?;
    if shift_every_s == 0 || !DAY_S.is_multiple_of(shift_every_s) || DAY_S / shift_every_s > 6 {
        return Ok(rule);
    }
    let (h, m) = shift_start.split_once(':').context("--shift-start HH:MM")?;
    let start_min = h.parse::<u64>()? * 60 + m.parse::<u64>()?;
    let starts: Vec<String> = (0..DAY_S / shift_every_s)
        .map(|k| (start_min + k * shift_every_s / 60) % 1440)
        .map(|min| format!("{:02}:{:02}", min / 60, min % 60))
        .collect();
    Ok(rule.with_shifts(&starts.join(","))?)
}

/// The finance report of the floor's gaming days, printed, and the injected finance
/// errors looked up among its variances; whether each was found.
pub fn summary(
    client: &Client,
    days: (&str, &str),
    expected: &[simulator::FinanceVariance],
) -> Result<bool> {
    let path = format!(
        "/v1/reports?from_day={}&to_day={}&group_by=table",
        days.0, days.1
    );
    let report: schemas::finance::FinanceReport = client.get(&path)?;
    println!(
        "\nfinance, gaming days {} to {} ({}), from GET {path}:",
        days.0, days.1, report.day_rule
    );
    print!("{}", table_lines(&report));
    let mut missed = Vec::new();
    let mut together = Vec::new();
    for v in expected.iter().filter(|v| cause_of(v.kind).is_some()) {
        if report.variances.iter().any(|r| shows(r, v)) {
            continue;
        }
        match shown_together(&report, expected, v) {
            Some(line) => together.push(line),
            None => missed.push(format!("{} {:?} {}", v.table, v.kind, v.amount)),
        }
    }
    let injected = expected
        .iter()
        .filter(|v| cause_of(v.kind).is_some())
        .count();
    let jackpots: schemas::Money = expected
        .iter()
        .filter(|v| v.kind == simulator::VarianceKind::JackpotPaid)
        .map(|v| v.amount)
        .sum();
    println!(
        "injected finance errors: {injected}; found in the report with their cause and amount: {}; jackpots paid by the jackpot system: {} injected or dealt, {} reported",
        injected - missed.len() - together.len(),
        jackpots,
        report.total.jackpot_paid_recorded
    );
    for t in &together {
        println!("  found together: {t}");
    }
    for m in &missed {
        println!("  NOT FOUND: {m}");
    }
    Ok(missed.is_empty())
}

/// Which count an injected error moves: the tray (a fill without its slip, a miscounted
/// closer) or the drop box (a short drop). `None` for payout errors and jackpots.
fn count_moved(kind: simulator::VarianceKind) -> Option<&'static str> {
    use simulator::VarianceKind as K;
    match kind {
        K::MissingFillSlip | K::MiscountedCloser => Some("tray"),
        K::ShortDrop => Some("drop"),
        K::Overpayment | K::Underpayment | K::JackpotPaid => None,
    }
}

/// Two errors on one count in one shift of one table (two tray errors, or two short
/// drops) move that count by their sum: counts cannot tell them apart. The line that
/// says so when the report shows that sum for the table; `None` when it does not.
fn shown_together(
    report: &schemas::finance::FinanceReport,
    expected: &[simulator::FinanceVariance],
    v: &simulator::FinanceVariance,
) -> Option<String> {
    let count = count_moved(v.kind)?;
    let partners: Vec<&simulator::FinanceVariance> = expected
        .iter()
        .filter(|o| o.table == v.table && o.shift == v.shift && count_moved(o.kind) == Some(count))
        .collect();
    let sum: schemas::Money = partners.iter().map(|o| o.amount).sum();
    if partners.len() < 2
        || !report
            .variances
            .iter()
            .any(|r| r.table == v.table && r.amount == sum)
    {
        return None;
    }
    let each: Vec<String> = partners
        .iter()
        .map(|o| format!("{:?} {}", o.kind, o.amount))
        .collect();
    Some(format!(
        "{} {}: one shift's {count} moved by their sum {sum}, shown as one variance (counts cannot split it)",
        v.table,
        each.join(" and ")
    ))
}

/// Whether the report's variance `r` shows the injected error `v`: a payout error as
/// its shift's rules-vs-recorded variance linking its round; a tray or drop error by its
/// cause and amount (a miscount in a table's last shift, with no next opening to tell
/// the cause, as an unexplained tray variance).
fn shows(r: &schemas::finance::Variance, v: &simulator::FinanceVariance) -> bool {
    use schemas::finance::Cause;
    use simulator::{FinanceLink, VarianceKind as K};
    if r.table != v.table {
        return false;
    }
    match (v.kind, &v.link) {
        (K::Overpayment | K::Underpayment, FinanceLink::Round { round, .. }) => {
            matches!(r.cause, Cause::Overpayment | Cause::Underpayment)
                && r.links.iter().any(|l| l.round == Some(*round))
        }
        (K::MiscountedCloser | K::MissingFillSlip, _) => {
            r.amount == v.amount
                && (Some(r.cause) == cause_of(v.kind) || r.cause == Cause::UnexplainedInventory)
        }
        _ => r.amount == v.amount && Some(r.cause) == cause_of(v.kind),
    }
}

/// The report's cause for an injected error's kind (a jackpot paid is no variance).
fn cause_of(kind: simulator::VarianceKind) -> Option<schemas::finance::Cause> {
    use schemas::finance::Cause;
    use simulator::VarianceKind as K;
    Some(match kind {
        K::MissingFillSlip => Cause::MissingFillSlip,
        K::MiscountedCloser => Cause::MiscountedCloser,
        K::ShortDrop => Cause::ShortDrop,
        K::Overpayment => Cause::Overpayment,
        K::Underpayment => Cause::Underpayment,
        K::JackpotPaid => return None,
    })
}

/// One line per table, the total, and each variance with its cause.
fn table_lines(r: &schemas::finance::FinanceReport) -> String {
    let opt = |m: Option<schemas::Money>| m.map_or("not counted".into(), |m| m.to_string());
    let hold = |bp: Option<i64>| bp.map_or("-".into(), percent);
    let mut out = format!(
        "  {:<9} {:>7} {:>12} {:>12} {:>12} {:>12} {:>7} {:>9}  variances\n",
        "table", "rounds", "drop", "win acct", "win rec", "win rules", "hold", "theo hold"
    );
    for g in r.groups.iter().chain(std::iter::once(&r.total)) {
        out += &format!(
            "  {:<9} {:>7} {:>12} {:>12} {:>12} {:>12} {:>7} {:>9}  {}{}\n",
            if std::ptr::eq(g, &r.total) {
                "total"
            } else {
                g.key.as_str()
            },
            g.rounds,
            opt(g.drop),
            opt(g.win_accounting),
            g.win_recorded.to_string(),
            g.win_rules.to_string(),
            hold(g.hold_bp),
            hold(g.hold_theoretical_bp),
            g.variances,
            if g.hold_alarm { " HOLD ALARM" } else { "" }
        );
    }
    for v in &r.variances {
        out += &format!(
            "  {} {} {:?} {}: {}\n",
            v.shift, v.table, v.cause, v.amount, v.text
        );
    }
    out
}

/// Basis points as a percentage with two decimals: 1234 is `12.34%`.
fn percent(bp: i64) -> String {
    let sign = if bp < 0 { "-" } else { "" };
    let a = bp.unsigned_abs();
    format!("{sign}{}.{:02}%", a / 100, a % 100)
}

/// The first and last gaming day of the tables' device times in `ledger`.
pub fn days_of(ledger: &ledger::Ledger, rule: &ledger::days::DayRule) -> Result<(String, String)> {
    let (mut first, mut last) = (i64::MAX, i64::MIN);
    for h in ledger.reader().heads() {
        let one = ledger.reader().stored_event(&h.table, 1)?;
        let head = ledger.reader().stored_event(&h.table, h.seq.0)?;
        for e in one.iter().chain(head.iter()) {
            let (ev, _) = schemas::codec::decode(&e.bytes)?;
            first = first.min(ev.occurred_at_ns);
            last = last.max(ev.occurred_at_ns);
        }
    }
    anyhow::ensure!(first <= last, "no events stored");
    Ok((rule.day_of(first)?, rule.day_of(last)?))
}
