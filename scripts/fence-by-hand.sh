#!/usr/bin/env bash
# A damaged table by hand, as an operator meets it: serve and simulate two tables, stop,
# delete the value log's last segment, then serve again while four tables publish.
# Tables 1 and 2 are fenced (`table status`), 3 and 4 are stored. Prints serve's last
# line: events stored and messages of fenced tables kept. Usage: BIN [OUT_DIR].
set -euo pipefail
# Simulated keys (public labels) stand in for real device keys: a test-only setting.
export ROUNDLEDGER_TEST_ONLY_SIMULATED_KEYS=1
BIN=$(realpath "${1:?path to the roundledger binary}")
OUT=${2:-$(mktemp -d)}
mkdir -p "$OUT" && cd "$OUT"
PORT=$((14000 + RANDOM % 1000)); HTTP=$((18000 + RANDOM % 1000))
URL=nats://127.0.0.1:$PORT
nats-server -js -p "$PORT" -sd "$OUT/js" > nats.log 2>&1 & NATS=$!
trap 'kill $NATS' EXIT
sleep 1
"$BIN" serve --ledger L --nats "$URL" --trust-simulated-admin --http "127.0.0.1:$HTTP" > serve1.log 2>&1 & S=$!
"$BIN" simulate --simulated-keys --nats "$URL" --tables 2 --rounds 5 --rate 50 > sim1.log 2>&1
kill -INT $S; wait $S
rm "L/values/$(ls L/values | tail -1)"
"$BIN" serve --ledger L --nats "$URL" --trust-simulated-admin --http "127.0.0.1:$HTTP" > serve2.log 2>&1 & S=$!
sleep 2
timeout 60 "$BIN" simulate --simulated-keys --nats "$URL" --tables 4 --rounds 5 --rate 50 > sim2.log 2>&1 || echo "simulate: tables 1 and 2 never confirmed (fenced)"
kill -INT $S; wait $S || echo "serve exited with $?"
grep "stopped:" serve2.log || tail -2 serve2.log
"$BIN" table status --ledger L || true
