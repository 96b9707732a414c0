#!/usr/bin/env bash
# The demo: a floor of simulated tables publishes rounds over a real NATS JetStream into
# the ledger, then the ledger is verified and audited. Installs nats-server if missing.
# It prints the web UI's address and a fresh token per role; run from a terminal it keeps
# serving the web UI after the audit until Ctrl-C (`roundledger demo --serve`).
# Extra arguments go to `roundledger demo` (see `roundledger demo --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
NATS_SERVER_BIN=$(scripts/setup.sh)
export NATS_SERVER_BIN
serve=()
if [ -t 0 ] && [ -t 1 ]; then serve=(--serve); fi
cargo run --release --locked -p roundledger -- demo "${serve[@]}" "$@"
