#!/usr/bin/env bash
# Builds the Rust client and runs its tests (cargo test) against real `ziggurat serve`
# processes. Dependencies come from crates.io as pinned by Cargo.lock; protoc comes from the
# protoc-bin-vendored crate. Compiled dependencies are cached in $CARGO_TARGET_DIR (default
# ~/.cache/ziggurat/rust-target), shared by every checkout on the machine.
#
# The crate itself is built in a copy of the repository's files at a fixed place outside the
# clone ($ZIGGURAT_BUILD_CACHE/rust-tree, default ~/.cache/ziggurat/builds/rust-tree), kept in
# step by content (clients/mirror_tree.py: what git lists, tracked or new, nothing ignored). Why:
# cargo keys the crate's artifacts by its path and judges them by file times, and its test
# binaries read files by the path they were built at (env!("CARGO_MANIFEST_DIR")), so in every
# fresh clone the crate was compiled again: about 39 CPU s, the largest cost of a warm CI run
# after the browser tests. In the copy an unchanged file keeps its time, and a fresh clone builds
# nothing. Compiler messages therefore name the copy's files: edit the clone's. A lock keeps two
# runs from using the copy at once. ZIGGURAT_RUST_IN_PLACE=1 builds in the clone instead (as
# does a tree that is not a git checkout).
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v cargo >/dev/null; then
  echo "clients/rust/test.sh: cargo not found (install Rust ≥ 1.88 with rustup)" >&2
  exit 1
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/ziggurat/rust-target}"
export ZIGGURAT="${ZIGGURAT:-$(cd ../.. && pwd)/.venv/bin/ziggurat}"
if [ -z "${ZIGGURAT_RUST_IN_PLACE:-}" ] && git -C ../.. rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  tree="${ZIGGURAT_BUILD_CACHE:-$HOME/.cache/ziggurat/builds}/rust-tree"
  mkdir -p "$tree"
  exec 9> "$tree/lock"
  flock 9
  git -C ../.. ls-files -z --cached --others --exclude-standard |
    python3 ../mirror_tree.py ../.. "$tree/repo"
  cd "$tree/repo/clients/rust"
  echo "clients/rust/test.sh: building in $PWD (a copy of this clone, by content)"
fi
cargo fetch --locked
if cargo fmt --version >/dev/null 2>&1; then cargo fmt --check; fi
if cargo clippy --version >/dev/null 2>&1; then
  cargo clippy --locked --all-targets -j "${CARGO_BUILD_JOBS:-2}" -- -D warnings
fi
cargo test --locked -j "${CARGO_BUILD_JOBS:-2}" -- --test-threads "${ZIGGURAT_TEST_WORKERS:-2}"
