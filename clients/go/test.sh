#!/usr/bin/env bash
# Builds and tests the Go client (run by scripts/test): dependencies from go.sum via the Go
# module proxy (cached in the default GOMODCACHE/GOCACHE, so warm runs download nothing),
# gofmt, go vet, the committed generated code checked against a fresh generation, then
# `go test` against real `ziggurat serve` processes (ZIGGURAT, default ../../.venv/bin/ziggurat).
set -euo pipefail
cd "$(dirname "$0")"
command -v go >/dev/null || { echo "clients/go/test.sh: needs Go >= 1.24 on PATH" >&2; exit 1; }
../../scripts/bootstrap
# -trimpath (as random-bot builds): the clone's path is then no part of what Go's build cache
# (~/.cache/go-build) keys compiled packages by, so vet, build and test reuse what another clone
# compiled from the same sources (CI's fresh clone otherwise compiles every package of this
# module again; the starter bot itself usually comes from random-bot's cache without a build).
GOFLAGS="$(go env GOFLAGS) -trimpath"
export GOFLAGS
go mod download
go mod verify >/dev/null
unformatted=$(gofmt -l cmd ziggurat)
if [ -n "$unformatted" ]; then echo "gofmt needed: $unformatted" >&2; exit 1; fi
go vet ./...
go build ./...
fresh=$(mktemp -d)
trap 'rm -rf "$fresh"' EXIT
./gen.sh "$fresh"
if ! diff -r "$fresh/zigguratv1" zigguratv1; then
  echo "clients/go/zigguratv1 is stale: run clients/go/gen.sh and commit the result" >&2
  exit 1
fi
# -count=1: the results depend on the server (Python), which Go's test cache cannot see.
go test -count=1 -timeout 15m ./...
