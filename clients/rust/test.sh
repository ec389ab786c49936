#!/usr/bin/env bash
# Builds the Rust client and runs its tests (cargo test) against real `ziggurat serve`
# processes. Dependencies come from crates.io as pinned by Cargo.lock; protoc comes from the
# protoc-bin-vendored crate. Compiled dependencies are cached in $CARGO_TARGET_DIR (default
# ~/.cache/ziggurat/rust-target), shared by every checkout on the machine. The crate itself is
# compiled again in each fresh clone (about 20 s of this script there): cargo judges it by mtimes,
# and its test binaries hold the clone's path (env!("CARGO_MANIFEST_DIR"), read when they run),
# a change cargo does not see, so binaries from another clone must not be reused (random-bot
# caches the starter bot's binary, which holds no such path, on its own).
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v cargo >/dev/null; then
  echo "clients/rust/test.sh: cargo not found (install Rust ≥ 1.88 with rustup)" >&2
  exit 1
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ziggurat/rust-target}"
export ZIGGURAT="${ZIGGURAT:-$(cd ../.. && pwd)/.venv/bin/ziggurat}"
cargo fetch --locked
if cargo fmt --version >/dev/null 2>&1; then cargo fmt --check; fi
if cargo clippy --version >/dev/null 2>&1; then
  cargo clippy --locked --all-targets -j "${CARGO_BUILD_JOBS:-2}" -- -D warnings
fi
cargo test --locked -j "${CARGO_BUILD_JOBS:-2}" -- --test-threads "${ZIGGURAT_TEST_WORKERS:-2}"
