#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this). Installs nats-server if
# missing, then: formatting, clippy with warnings as errors, the purity gate (the rules
# engine and the replayer never depend on tokio, sled or async-nats), and every test of
# the workspace, including the end-to-end tests against a real nats-server, the browser
# test and schemathesis against the running server. The checks against the seed rule
# books run when the seeds are found ($ROUNDLEDGER_SEEDS, relative to the repository
# root, else ../shared/seeds); without them those tests say SKIPPED and pass, and a NOTE
# at the end says so.
set -euo pipefail
cd "$(dirname "$0")/.."

NATS_SERVER_BIN=$(scripts/setup.sh --tests)
export NATS_SERVER_BIN

echo "== cargo fmt --check"
cargo fmt --all --check

echo "== cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== the deployed binary: no demo, simulator or benches (--no-default-features)"
cargo clippy -p roundledger --no-default-features --locked -- -D warnings

echo "== purity gate: rules, replayer and analytics do no I/O"
for crate in rules replayer analytics; do
  tree=$(cargo tree -p "$crate" -e normal --locked --prefix none)
  if bad=$(grep -E '^(tokio|sled|async-nats|axum) ' <<<"$tree"); then
    echo "purity gate: $crate depends on: $bad" >&2
    exit 1
  fi
done
echo "rules, replayer and analytics depend on none of tokio, sled, async-nats, axum"

echo "== module loops: no crate's modules import each other in a circle; none of ledger's import upward"
python3 scripts/module-loops.py

echo "== dependencies: licenses, sources, bans (DEPENDENCIES.md)"
python3 scripts/deps-check.py

echo "== cargo test"
cargo test --workspace --locked
# The CLI's integration tests made cargo build its binary, with the test build's features:
# the browser test and schemathesis run it rather than build it again (2.4 min in CI).
target_dir=${CARGO_TARGET_DIR:-target}
[[ $target_dir = /* ]] || target_dir="$PWD/$target_dir"
ROUNDLEDGER_BIN="$target_dir/debug/roundledger"
[[ -x $ROUNDLEDGER_BIN ]] || { echo "cargo test built no $ROUNDLEDGER_BIN" >&2; exit 1; }
export ROUNDLEDGER_BIN

echo "== the ledger's, readside's and the API's tests on the second store (redb, ledger::store::choice)"
ROUNDLEDGER_TEST_STORE=redb cargo test -p ledger -p readside -p api --locked

echo "== test vectors with an independent BLAKE3 and ed25519 (Python)"
if python3 -c 'import blake3, nacl.signing' 2>/dev/null; then
  python3 schemas/vectors/check_vectors.py
else
  echo "SKIPPED: python3 blake3/pynacl missing (scripts/setup.sh --tests installs them)"
fi

echo "== browser test: the web UI in headless Chromium (screenshots in target/browser-test/)"
scripts/browser-test.sh

echo "== schemathesis: every check against the running server, as admin and as finance"
scripts/schemathesis.sh

seeds=${ROUNDLEDGER_SEEDS:-../shared/seeds}
if [[ ! -d $seeds ]]; then
  echo "NOTE: $seeds not found: the checks against the rule books were skipped" \
    "(set ROUNDLEDGER_SEEDS to run them)"
fi
