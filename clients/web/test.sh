#!/usr/bin/env bash
# The web client's checks, run by scripts/test: install the npm dependencies from
# package-lock.json, typecheck, check that the built assets committed in the Python package
# are exactly what the sources build to, then the browser tests in Debian's chromium
# (installed by scripts/ensure-chromium.sh when missing) against a real `ziggurat serve`.
# Screenshots of every step land in clients/web/test-output/ (gitignored).
set -euo pipefail
cd "$(dirname "$0")"
./scripts/ensure-chromium.sh
# node_modules comes from a cache outside the clone, ${ZIGGURAT_BUILD_CACHE:-~/.cache/ziggurat/
# builds}/web/node_modules-KEY, KEY hashing package.json, package-lock.json, node's and npm's
# versions and the platform (clients/build-cache.sh, as for the TypeScript starter bot): a fresh
# clone links it into place in a tenth of a second instead of running npm ci (5 s); a changed
# KEY installs once into the cache.
cache=${ZIGGURAT_BUILD_CACHE:-$HOME/.cache/ziggurat/builds}/web
launcher=clients/web/test.sh
# shellcheck source=../build-cache.sh
. ../build-cache.sh
deps_key=$(node_modules_key package.json package-lock.json)
current node_modules "$deps_key" || node_modules_from_cache "$deps_key" : package.json package-lock.json
export PATH="$PWD/node_modules/.bin:$PATH"
echo "== web: typecheck"; tsc --noEmit -p .
echo "== web: built assets up to date"; node build.mjs --check
# src/gen is a symbolic link to the TypeScript client's generated code (one copy for both):
# clients/typescript/test.sh checks that it is fresh.
[ -L src/gen ] && [ -f src/gen/ziggurat/v1/match_service_pb.ts ] || { echo "src/gen must link to ../../typescript/src/gen" >&2; exit 1; }
rm -rf test-output
# Two test files at a time: each mostly waits (on its browser, its server, the timers the
# tests are about), about half a core for one file at a time.
echo "== web: browser tests (chromium)"
node --test --test-concurrency="${ZIGGURAT_WEB_TEST_CONCURRENCY:-2}" tests/
