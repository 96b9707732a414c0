#!/usr/bin/env bash
# The demo: a floor of simulated tables publishes rounds over a real NATS JetStream into
# the ledger, then the ledger is verified and audited. Installs nats-server if missing.
# Extra arguments go to `roundledger demo` (see `roundledger demo --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
NATS_SERVER_BIN=$(scripts/setup.sh)
export NATS_SERVER_BIN
cargo run --release --locked -p roundledger -- demo "$@"
