#!/usr/bin/env bash
# Installs what the browser test needs, if missing: Debian's chromium and npm's
# playwright-core (pinned in tests/browser/package-lock.json). Exits non-zero only when
# chromium cannot be installed (the browser test then skips, loudly).
set -euo pipefail
cd "$(dirname "$0")/.."
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$CHROMIUM" ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup-browser: installing Debian's chromium" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >&2 || true
fi
if [ ! -d tests/browser/node_modules/playwright-core ] && command -v npm >/dev/null 2>&1; then
  echo "setup-browser: installing playwright-core" >&2
  (cd tests/browser && npm ci --no-audit --no-fund) >&2
fi
[ -x "$CHROMIUM" ]
