//! `roundledger export --parquet --day D` end to end on a seeded ledger with sealed days:
//! the day's Parquet read back by the parquet crate's reader and by DuckDB (Python) gives
//! the per-table totals `roundledger report --day D --group-by table` gives. Writing the
//! day again changes nothing; a file with other content is refused, then replaced only
//! with --replace.
//!
//! The DuckDB half needs python3 with `duckdb` (`scripts/setup.sh --tests`). Without it
//! that test says SKIPPED on stderr and passes, unless ROUNDLEDGER_REQUIRE_PYTHON is set.

mod common;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt32Type};
use arrow_array::{Array, RecordBatch};
use common::roundledger;
use ledger::days::DayRule;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Per table id, named totals in minor units (or counts).
type Totals = BTreeMap<String, BTreeMap<String, i64>>;

fn text(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A ledger seeded three days ago with `tables` tables of `rounds` rounds, its three
/// gaming days (from 00:00 UTC) sealed: its directory and the days.
fn sealed_ledger(tmp: &Path, tables: &str, rounds: &str) -> (PathBuf, Vec<String>) {
    let dir = tmp.join("ledger");
    let d = dir.to_str().unwrap();
    let out = roundledger(&[
        "seed",
        "--ledger",
        d,
        "--tables",
        tables,
        "--rounds",
        rounds,
        "--close",
        "--days-ago",
        "3",
        "--shift-start",
        "00:00",
        "--shift-every",
        "3600",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let key = tmp.join("seal.key");
    let k = key.to_str().unwrap();
    assert_eq!(roundledger(&["keygen", "--out", k]).status.code(), Some(0));
    let rule = DayRule::new("00:00", "UTC").unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    let mut days = vec![rule.day_of(now - 3 * 86_400_000_000_000).unwrap()];
    for _ in 0..2 {
        let end = rule.bounds(days.last().unwrap()).unwrap().ends_at_ns;
        days.push(rule.day_of(end).unwrap());
    }
    for day in &days {
        let args = ["day", "seal", "--ledger", d, "--day", day, "--seal-key", k];
        let o = roundledger(&args);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    (dir, days)
}

/// `report --day D --group-by table --json`, as totals per table.
fn report_totals(d: &str, day: &str) -> Totals {
    let out = roundledger(&[
        "report",
        "--ledger",
        d,
        "--day",
        day,
        "--group-by",
        "table",
        "--json",
    ]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("report json");
    let mut totals = Totals::new();
    for g in v["groups"].as_array().unwrap() {
        let n = |k: &str| g[k].as_i64().unwrap_or_else(|| panic!("{k} in {g}"));
        let handle: i64 = g["handle"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["stake"].as_i64().unwrap())
            .sum();
        let t = totals
            .entry(g["key"].as_str().unwrap().to_string())
            .or_default();
        for (name, x) in [
            ("rounds", n("rounds")),
            ("handle", handle),
            ("win_rules", n("win_rules")),
            ("win_recorded", n("win_recorded")),
            ("jackpot_paid_recorded", n("jackpot_paid_recorded")),
            ("cash_buy_in", n("buy_ins")),
            ("marker", n("markers")),
            ("fill", n("fills")),
            ("credit", n("credits")),
        ] {
            t.insert(name.to_string(), x);
        }
    }
    totals.retain(|_, t| t["rounds"] > 0);
    totals
}

/// Every batch of a Parquet file, read by the parquet crate's reader.
fn read(path: &Path) -> Vec<RecordBatch> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .with_batch_size(1000)
        .build()
        .unwrap();
    reader.map(|b| b.unwrap()).collect()
}

fn file(dir: &Path, day: &str, table: &str) -> PathBuf {
    dir.join(format!("{day}.{table}.parquet"))
}

/// Adds `column` (Int64, nulls as 0) of each row into `name` of the row's table.
fn add_i64(totals: &mut Totals, batches: &[RecordBatch], column: &str, name: &str) {
    for b in batches {
        let ids = b.column_by_name("table_id").unwrap().as_string::<i32>();
        let xs = b
            .column_by_name(column)
            .unwrap()
            .as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            let t = totals.entry(ids.value(i).to_string()).or_default();
            let x = if xs.is_null(i) { 0 } else { xs.value(i) };
            *t.entry(name.to_string()).or_default() += x;
        }
    }
}

/// The day's totals from its Parquet files, by the parquet crate's reader.
fn parquet_totals(dir: &Path, day: &str) -> Totals {
    let rounds = read(&file(dir, day, "rounds"));
    let mut totals = Totals::new();
    for b in &rounds {
        let ids = b.column_by_name("table_id").unwrap().as_string::<i32>();
        for i in 0..b.num_rows() {
            let t = totals.entry(ids.value(i).to_string()).or_default();
            *t.entry("rounds".into()).or_default() += 1;
        }
    }
    add_i64(&mut totals, &rounds, "handle_minor", "handle");
    add_i64(&mut totals, &rounds, "win_rules_minor", "win_rules");
    add_i64(&mut totals, &rounds, "win_recorded_minor", "win_recorded");
    add_i64(
        &mut totals,
        &rounds,
        "jackpot_paid_recorded_minor",
        "jackpot_paid_recorded",
    );
    let finance = read(&file(dir, day, "finance_lines"));
    for b in &finance {
        let ids = b.column_by_name("table_id").unwrap().as_string::<i32>();
        let kinds = b.column_by_name("kind").unwrap().as_string::<i32>();
        let xs = b
            .column_by_name("amount_minor")
            .unwrap()
            .as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            let kind = kinds.value(i);
            if ["cash_buy_in", "marker", "fill", "credit"].contains(&kind) {
                let t = totals.entry(ids.value(i).to_string()).or_default();
                *t.entry(kind.to_string()).or_default() += xs.value(i);
            }
        }
    }
    for t in totals.values_mut() {
        for k in ["cash_buy_in", "marker", "fill", "credit"] {
            t.entry(k.to_string()).or_default();
        }
    }
    totals.retain(|_, t| t.get("rounds").copied().unwrap_or_default() > 0);
    totals
}

/// Bet lines add up to their rounds, and findings rows to the rounds' counts.
fn lines_add_up(dir: &Path, day: &str) {
    let (mut by_round, mut by_line) = (Totals::new(), Totals::new());
    let rounds = read(&file(dir, day, "rounds"));
    add_i64(&mut by_round, &rounds, "win_rules_minor", "win_rules");
    add_i64(&mut by_round, &rounds, "win_recorded_minor", "win_recorded");
    let lines = read(&file(dir, day, "bet_lines"));
    add_i64(&mut by_line, &lines, "win_rules_minor", "win_rules");
    add_i64(&mut by_line, &lines, "win_recorded_minor", "win_recorded");
    assert_eq!(by_line, by_round, "bet lines add up to their rounds");
    let findings: usize = read(&file(dir, day, "findings"))
        .iter()
        .map(|b| b.num_rows())
        .sum();
    let counted: u64 = rounds
        .iter()
        .flat_map(|b| {
            let c = b
                .column_by_name("findings")
                .unwrap()
                .as_primitive::<UInt32Type>();
            c.values().iter().map(|x| u64::from(*x)).collect::<Vec<_>>()
        })
        .sum();
    assert_eq!(findings as u64, counted, "one findings row per finding");
}

fn export(d: &str, day: &str, extra: &[&str]) -> std::process::Output {
    roundledger(&[&["export", "--parquet", "--ledger", d, "--day", day], extra].concat())
}

#[test]
fn a_sealed_day_as_parquet_reads_back_with_the_reports_totals() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, days) = sealed_ledger(tmp.path(), "3", "150");
    let d = dir.to_str().unwrap();
    let archive = dir.join("archive");
    let mut rounds_seen = 0;
    for day in &days {
        let out = export(d, day, &[]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ours = parquet_totals(&archive, day);
        assert_eq!(
            ours,
            report_totals(d, day),
            "day {day}: parquet against report"
        );
        lines_add_up(&archive, day);
        rounds_seen += ours.values().map(|t| t["rounds"]).sum::<i64>();
    }
    assert_eq!(rounds_seen, 3 * 150, "every round in one day's file");
    let day = &days[0];
    schema_as_documented(&file(&archive, day, "rounds"));
    again_unchanged_other_refused_then_replaced(d, &archive, day);
    archived_then_removed(tmp.path(), d, &archive, &days);
}

/// An archived day gives the same bytes; retention removes its Parquet with its day
/// file, and its export is then refused.
fn archived_then_removed(tmp: &Path, d: &str, archive: &Path, days: &[String]) {
    let moved = roundledger(&["archive", "move", "--ledger", d, "--older-than-days", "0"]);
    assert_eq!(moved.status.code(), Some(0), "{}", text(&moved));
    // The archiver writes each day it moves; these were written already, the same.
    let lines = text(&moved);
    let written: Vec<&str> = lines
        .lines()
        .filter(|l| l.starts_with("Parquet of day"))
        .collect();
    assert_eq!(written.len(), days.len(), "{lines}");
    assert!(
        written
            .iter()
            .all(|l| l.matches("(unchanged)").count() == 5),
        "{lines}"
    );
    let out = export(d, &days[0], &[]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out).matches("unchanged").count(), 5, "{}", text(&out));
    let admin = common::simulated_admin_key(tmp);
    let done = roundledger(&[
        "archive",
        "remove",
        "--ledger",
        d,
        "--day",
        &days[0],
        "--retention-days",
        "1",
        "--admin-key",
        admin.to_str().unwrap(),
    ]);
    assert_eq!(
        done.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    for t in [
        "rounds",
        "bet_lines",
        "findings",
        "finance_lines",
        "decisions",
    ] {
        assert!(
            !file(archive, &days[0], t).exists(),
            "{t} of the removed day"
        );
        assert!(file(archive, &days[1], t).exists(), "{t} of the next day");
    }
    assert_eq!(
        text(&done).matches(".parquet removed by retention").count(),
        5
    );
    let gone = export(d, &days[0], &[]);
    assert_eq!(
        gone.status.code(),
        Some(2),
        "no events to write: {}{}",
        text(&gone),
        String::from_utf8_lossy(&gone.stderr)
    );
}

/// The reader sees UTC ns timestamps, Int64 money and the seal in the metadata.
fn schema_as_documented(path: &Path) {
    let f = std::fs::File::open(path).unwrap();
    let b = ParquetRecordBatchReaderBuilder::try_new(f).unwrap();
    let schema = b.schema();
    assert_eq!(
        schema
            .field_with_name("opened_at")
            .unwrap()
            .data_type()
            .to_string(),
        "Timestamp(ns, \"UTC\")"
    );
    assert_eq!(
        schema
            .field_with_name("win_rules_minor")
            .unwrap()
            .data_type(),
        &arrow_schema::DataType::Int64
    );
    let kv = b.metadata().file_metadata().key_value_metadata().unwrap();
    assert!(kv.iter().any(|k| k.key == "roundledger.seal"), "{kv:?}");
}

fn again_unchanged_other_refused_then_replaced(d: &str, archive: &Path, day: &str) {
    let rounds = file(archive, day, "rounds");
    let before = std::fs::read(&rounds).unwrap();
    let out = export(d, day, &[]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out).matches("unchanged").count(), 5, "{}", text(&out));
    let other = file(archive, day, "findings");
    std::fs::copy(&other, &rounds).unwrap();
    let out = export(d, day, &[]);
    assert_eq!(out.status.code(), Some(2), "other content is refused");
    assert!(String::from_utf8_lossy(&out.stderr).contains("exists with other content"));
    assert_eq!(
        std::fs::read(&rounds).unwrap(),
        std::fs::read(&other).unwrap(),
        "kept"
    );
    let out = export(d, day, &["--replace"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out).contains("REPLACED"), "{}", text(&out));
    assert_eq!(
        std::fs::read(&rounds).unwrap(),
        before,
        "the same bytes as written first"
    );
    let leftovers: Vec<_> = std::fs::read_dir(archive)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// Whether python3 can import duckdb; says SKIPPED loudly when not.
fn duckdb_ready() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import duckdb"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("ROUNDLEDGER_REQUIRE_PYTHON").is_none(),
            "python3 with duckdb is required (ROUNDLEDGER_REQUIRE_PYTHON)"
        );
        eprintln!("SKIPPED: python3 with duckdb not found (scripts/setup.sh --tests)");
    }
    ok
}

#[test]
fn duckdb_reads_a_sealed_day_with_the_reports_totals() {
    if !duckdb_ready() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (dir, days) = sealed_ledger(tmp.path(), "2", "120");
    let d = dir.to_str().unwrap();
    let out_dir = tmp.path().join("parquet");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/parquet/day_totals.py");
    let mut tables_compared = 0;
    for day in &days {
        let out = export(d, day, &["--out", out_dir.to_str().unwrap()]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let py = Command::new("python3")
            .arg(&script)
            .args([out_dir.to_str().unwrap(), day])
            .output()
            .expect("running day_totals.py");
        eprintln!("{}{}", text(&py), String::from_utf8_lossy(&py.stderr));
        assert!(py.status.success(), "day_totals.py failed");
        let mut v: serde_json::Value = serde_json::from_slice(&py.stdout).unwrap();
        let types = v.as_object_mut().unwrap().remove("_types").unwrap();
        // DuckDB 1.x says TIMESTAMP WITH TIME ZONE, 2.x TIMESTAMPTZ_NS (keeping the ns).
        let ts = types["opened_at"].as_str().unwrap();
        assert!(ts.contains("TZ") || ts.contains("TIME ZONE"), "{types}");
        assert_eq!(types["win_rules_minor"], "BIGINT", "{types}");
        let report = report_totals(d, day);
        for (table, want) in &report {
            let got = &v[table];
            for (k, x) in want {
                assert_eq!(
                    got[k].as_i64().unwrap_or(0),
                    *x,
                    "day {day} table {table} {k}: {got}"
                );
            }
            // The lines and the findings agree with their rounds, in SQL too.
            assert_eq!(got["lines_handle"], got["handle"], "{got}");
            assert_eq!(got["lines_win_rules"], got["win_rules"], "{got}");
            assert_eq!(got["lines_win_recorded"], got["win_recorded"], "{got}");
            assert_eq!(
                got["finding_rows"].as_i64().unwrap_or(0),
                got["findings"].as_i64().unwrap(),
                "{got}"
            );
            // Every decision sits on a round of the day; the simulated players play the
            // computed strategy, so most are judged optimal.
            let decisions = got["decision_rows"].as_i64().unwrap_or(0);
            assert!(decisions > 0, "{got}");
            assert_eq!(
                got["decisions_on_rounds"].as_i64(),
                Some(decisions),
                "{got}"
            );
            let judged = got["decisions_judged"].as_i64().unwrap();
            assert!(judged > 0 && judged <= decisions, "{got}");
            tables_compared += 1;
        }
    }
    assert!(tables_compared >= 2, "the report named no table");
}
