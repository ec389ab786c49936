#!/usr/bin/env bash
# Builds and tests the TypeScript client (run by scripts/test): node_modules (`npm ci` from
# package-lock.json; packages come from npm's default cache ~/.npm when warm) and dist/ (tsc)
# as random-bot --build makes them, taken from the build cache outside the clone when their
# inputs have not changed (a fresh clone then installs and compiles nothing: see random-bot),
# the committed generated code checked against a fresh generation, then `node --test` against
# real `ziggurat serve` processes (ZIGGURAT, default ../../.venv/bin/ziggurat).
set -euo pipefail
cd "$(dirname "$0")"
command -v npm >/dev/null || { echo "clients/typescript/test.sh: needs Node.js >= 20 and npm on PATH" >&2; exit 1; }
../../scripts/bootstrap
# dist/ is a clean `tsc -p .` of src, examples and test (the cache's entries are built from
# nothing, so no output of a deleted source lingers), the same as rm -rf dist && npm run build.
env -u ZIGGURAT_STARTER_BOT_PREBUILT ./random-bot --build
fresh=$(mktemp -d)
trap 'rm -rf "$fresh"' EXIT
./gen.sh "$fresh"
if ! diff -r "$fresh/src/gen" src/gen; then
  echo "clients/typescript/src/gen is stale: run clients/typescript/gen.sh and commit the result" >&2
  exit 1
fi
node --test --test-concurrency=1 dist/test/*.test.js
