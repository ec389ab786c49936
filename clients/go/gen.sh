#!/usr/bin/env bash
# Regenerates zigguratv1/ from proto/ziggurat/v1 with buf (from the repository's .venv) and
# the protoc plugins at the versions pinned here, installed with `go install` into .bin/.
# Usage: ./gen.sh [OUTPUT_DIR]   (default: this directory; test.sh generates into a
# temporary directory and compares, so stale committed code fails the tests).
set -euo pipefail
cd "$(dirname "$0")"
PROTOC_GEN_GO=google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC=google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
out=${1:-.}
bin="$PWD/.bin"
mkdir -p "$bin"
for tool in "$PROTOC_GEN_GO" "$PROTOC_GEN_GO_GRPC"; do
  stamp="$bin/.$(basename "${tool%@*}")@${tool#*@}"
  if [ ! -f "$stamp" ]; then
    GOBIN="$bin" go install "$tool"
    touch "$stamp"
  fi
done
../../scripts/bootstrap
PATH="$bin:$PATH" ../../.venv/bin/buf generate --template buf.gen.yaml -o "$out"
