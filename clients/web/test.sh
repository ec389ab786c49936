#!/usr/bin/env bash
# The web client's checks, run by scripts/test: install the npm dependencies from
# package-lock.json, typecheck, check that the built assets committed in the Python package
# are exactly what the sources build to, then the browser tests in Debian's chromium
# (installed by scripts/ensure-chromium.sh when missing) against a real `ziggurat serve`.
# Screenshots of every step land in clients/web/test-output/ (gitignored).
set -euo pipefail
cd "$(dirname "$0")"
./scripts/ensure-chromium.sh
lock_sum=$(sha256sum package-lock.json | cut -d" " -f1)
if [ ! -f node_modules/.lock-sha256 ] || [ "$(cat node_modules/.lock-sha256)" != "$lock_sum" ]; then
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_sum" > node_modules/.lock-sha256
fi
export PATH="$PWD/node_modules/.bin:$PATH"
echo "== web: typecheck"; tsc --noEmit -p .
echo "== web: built assets up to date"; node build.mjs --check
echo "== web: generated protobuf code up to date"
gen=$(mktemp -d)
trap 'rm -rf "$gen"' EXIT
../../.venv/bin/buf generate --template buf.gen.yaml --output "$gen" ../../proto
diff -r "$gen/src/gen" src/gen
rm -rf test-output
echo "== web: browser tests (chromium)"
node --test --test-concurrency=1 tests/
