#!/usr/bin/env bash
# The web UI's browser test (tests/browser/ui.test.js) in headless Chromium. Installs
# Debian's chromium and npm's playwright-core (tests/browser/package-lock.json) when
# missing, and nats-server (scripts/setup.sh) for the live feed part. Skips, loudly, only
# when chromium cannot be installed; fails otherwise.
# Screenshots and the downloaded evidence bundle: target/browser-test/.
set -euo pipefail
cd "$(dirname "$0")/.."

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
export CHROMIUM
scripts/setup-browser.sh || true
if [ ! -x "$CHROMIUM" ]; then
  echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
  echo "!!! browser-test SKIPPED: chromium could not be installed ($CHROMIUM missing) !!!" >&2
  echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
  exit 0
fi
# The live part publishes rounds over a real nats-server into the running server.
NATS_SERVER_BIN=${NATS_SERVER_BIN:-$(scripts/setup.sh)}
export NATS_SERVER_BIN
# scripts/test.sh passes the binary its `cargo test` built; run alone, this builds it.
if [[ -z ${ROUNDLEDGER_BIN:-} ]]; then
  cargo build -p roundledger --locked >&2
  ROUNDLEDGER_BIN="${CARGO_TARGET_DIR:-target}/debug/roundledger"
fi
CHROMIUM="$CHROMIUM" ROUNDLEDGER_BIN="$ROUNDLEDGER_BIN" node tests/browser/ui.test.js
