#!/usr/bin/env bash
# Emulates a NATS host's power loss against the release binaries: `serve` and `simulate`
# run, nats-server is killed with SIGKILL, the tail of its newest message block is cut
# (the writes a disk had not taken) and it restarts on the same store. Then the ledger is
# verified. RELIABILITY.md, "Power loss". Usage: scripts/power-loss.sh [CUT_BYTES]
set -euo pipefail
# Simulated keys (public labels) stand in for real device keys: a test-only setting.
export ROUNDLEDGER_TEST_ONLY_SIMULATED_KEYS=1
cd "$(dirname "$0")/.."
CUT=${1:-30000}
RL=target/release/roundledger
[ -x "$RL" ] || cargo build --release -p roundledger
NATS=$(scripts/setup.sh | tail -1)
D=$(mktemp -d)
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
URL=nats://127.0.0.1:$PORT
start_nats() { "$NATS" -a 127.0.0.1 -p "$PORT" -js -sd "$D/js" >>"$D/nats.log" 2>&1 & echo $! >"$D/nats.pid"; sleep 1; }
start_nats
"$RL" serve --ledger "$D/ledger" --nats "$URL" --http 127.0.0.1:0 --trust-simulated-admin >"$D/serve.log" 2>&1 &
SERVE=$!
sleep 2
"$RL" simulate --simulated-keys --nats "$URL" --tables 4 --rounds 150 --rate 4 --seed 11 >"$D/sim.log" 2>&1 &
SIM=$!
sleep 10
kill -9 "$(cat "$D/nats.pid")"
sleep 0.5
MSGS=$(echo "$D"/js/jetstream/\$G/streams/TABLES/msgs)
BLK=$(ls -v "$MSGS"/*.blk | tail -1)
SIZE=$(stat -c %s "$BLK")
echo "power loss: cutting $CUT of $SIZE bytes of $BLK"
truncate -s $((SIZE - CUT)) "$BLK"
rm -f "$MSGS/index.db"
start_nats
grep -E "Restored|past last stream" "$D/nats.log" | tail -2
wait "$SIM"
tail -1 "$D/sim.log"
sleep 8
kill -TERM "$SERVE"
wait "$SERVE" || true
grep "stopped:" "$D/serve.log" | sed 's/\x1b\[[0-9;]*m//g'
kill "$(cat "$D/nats.pid")" 2>/dev/null || true
"$RL" verify --ledger "$D/ledger" | tail -3
echo "kept in $D"
