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
# versions and the platform (clients/build-cache.sh: an entry appears whole, by one rename). A
# fresh clone links it into place (hard links, a tenth of a second) instead of running npm ci
# (4 s on an idle machine); a changed KEY installs once into the cache. Whether node_modules is
# current is the KEY it holds in .ziggurat-key. The hard links share the cache's files, so
# node_modules is for reading (npm ci replaces files rather than write into them; the one file
# it rewrites, .package-lock.json, is a copy).
deps_key=$({ echo "npm ci --no-audit --no-fund"; node --version; npm --version; uname -sm
  sha256sum package.json package-lock.json; } | sha256sum | cut -c1-64)
if [ "$(cat node_modules/.ziggurat-key 2>/dev/null)" != "$deps_key" ]; then
  cache=${ZIGGURAT_BUILD_CACHE:-$HOME/.cache/ziggurat/builds}/web
  launcher=clients/web/test.sh
  # shellcheck source=../build-cache.sh
  . ../build-cache.sh
  entry=$cache/node_modules-$deps_key
  if ! cached "$entry"; then
    new_entry
    cp package.json package-lock.json "$new/"
    (cd "$new" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$deps_key" > "$new/node_modules/.ziggurat-key"
    store "$new" "$entry"
  fi
  touch -c "$entry"
  rm -rf "node_modules.new.$$"
  cp -al "$entry/node_modules" "node_modules.new.$$" 2>/dev/null ||
    { rm -rf "node_modules.new.$$"; cp -a "$entry/node_modules" "node_modules.new.$$"; }
  if [ -f "node_modules.new.$$/.package-lock.json" ]; then
    cp --remove-destination "$entry/node_modules/.package-lock.json" "node_modules.new.$$/"
  fi
  put_in_place "node_modules.new.$$" node_modules
fi
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
