#!/usr/bin/env python3
"""A sealed day's Parquet read by DuckDB, as an analyst would: per-table totals in SQL.

Usage: python3 tests/parquet/day_totals.py DIR DAY
Prints one JSON object keyed by table id: rounds, handle, wins, jackpots and finance
sums, all integer minor units. cli/tests/parquet.rs compares them with
`roundledger report --day DAY --group-by table --json`. Needs `pip install duckdb`.
"""
import json
import sys

import duckdb


def main():
    folder, day = sys.argv[1], sys.argv[2]
    f = lambda table: f"'{folder}/{day}.{table}.parquet'"
    con = duckdb.connect()
    out = {}
    rounds = con.execute(f"""
        SELECT table_id, count(*), sum(handle_minor), sum(win_rules_minor),
               sum(win_recorded_minor), sum(jackpot_paid_recorded_minor), sum(findings)
        FROM read_parquet({f('rounds')}) GROUP BY table_id ORDER BY table_id""").fetchall()
    for t, n, handle, win_rules, win_recorded, jackpots, findings in rounds:
        out[t] = {
            "rounds": n, "handle": int(handle or 0), "win_rules": int(win_rules or 0),
            "win_recorded": int(win_recorded or 0), "jackpot_paid_recorded": int(jackpots or 0),
            "findings": int(findings or 0),
        }
    lines = con.execute(f"""
        SELECT table_id, sum(CASE WHEN counts_in_handle THEN stake_minor ELSE 0 END),
               sum(win_rules_minor), sum(win_recorded_minor)
        FROM read_parquet({f('bet_lines')}) GROUP BY table_id""").fetchall()
    for t, handle, win_rules, win_recorded in lines:
        out.setdefault(t, {}).update({"lines_handle": int(handle), "lines_win_rules": int(win_rules),
                                      "lines_win_recorded": int(win_recorded)})
    findings = con.execute(f"""
        SELECT table_id, count(*) FROM read_parquet({f('findings')}) GROUP BY table_id""").fetchall()
    for t, n in findings:
        out.setdefault(t, {})["finding_rows"] = n
    finance = con.execute(f"""
        SELECT table_id, kind, sum(amount_minor) FROM read_parquet({f('finance_lines')})
        WHERE kind IN ('cash_buy_in', 'marker', 'fill', 'credit') GROUP BY table_id, kind""").fetchall()
    for t, kind, amount in finance:
        out.setdefault(t, {})[kind] = int(amount)
    # Decisions: each on a round of the day's `rounds`, each judged or saying why not.
    decisions = con.execute(f"""
        SELECT d.table_id, count(*), count(r.round_no),
               count(*) FILTER (WHERE d.verdict IN ('optimal', 'off_strategy')),
               count(*) FILTER (WHERE d.verdict = 'off_strategy')
        FROM read_parquet({f('decisions')}) d
        LEFT JOIN read_parquet({f('rounds')}) r USING (table_id, round_no)
        GROUP BY d.table_id""").fetchall()
    for t, n, on_rounds, judged, off in decisions:
        out.setdefault(t, {}).update({"decision_rows": n, "decisions_on_rounds": on_rounds,
                                      "decisions_judged": judged, "decisions_off_strategy": off})
    # The column types a reader sees: money Int64, times UTC timestamps.
    types = {r[0]: r[1] for r in con.execute(
        f"DESCRIBE SELECT * FROM read_parquet({f('rounds')})").fetchall()}
    out["_types"] = {k: types[k] for k in ("opened_at", "win_rules_minor", "round_no")}
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
