#!/usr/bin/env bash
# Regenerates src/gen/ from proto/ziggurat/v1 with buf and protoc-gen-es from node_modules
# (versions pinned in package-lock.json). Usage: ./gen.sh [OUTPUT_DIR] (default: here;
# test.sh generates into a temporary directory and compares).
set -euo pipefail
cd "$(dirname "$0")"
[ -x node_modules/.bin/protoc-gen-es ] || npm ci --no-audit --no-fund
out=${1:-.}
PATH="$PWD/node_modules/.bin:$PATH" node_modules/.bin/buf generate --template buf.gen.yaml -o "$out"
