#!/usr/bin/env bash
# Builds and tests the TypeScript client (run by scripts/test): `npm ci` from
# package-lock.json (packages come from npm's default cache ~/.npm when warm; skipped when
# the lock file has not changed since the last install), the committed generated code
# checked against a fresh generation, tsc, then `node --test` against real `ziggurat serve`
# processes (ZIGGURAT, default ../../.venv/bin/ziggurat).
set -euo pipefail
cd "$(dirname "$0")"
command -v npm >/dev/null || { echo "clients/typescript/test.sh: needs Node.js >= 20 and npm on PATH" >&2; exit 1; }
../../scripts/bootstrap
stamp=node_modules/.ziggurat-lock.sha256
want=$(sha256sum package-lock.json | cut -d" " -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  npm ci --no-audit --no-fund
  echo "$want" > "$stamp"
fi
fresh=$(mktemp -d)
trap 'rm -rf "$fresh"' EXIT
./gen.sh "$fresh"
if ! diff -r "$fresh/src/gen" src/gen; then
  echo "clients/typescript/src/gen is stale: run clients/typescript/gen.sh and commit the result" >&2
  exit 1
fi
rm -rf dist
npm run --silent build
node --test --test-concurrency=1 dist/test/*.test.js
