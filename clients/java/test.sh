#!/usr/bin/env bash
# Builds the Java client and runs its tests against real `ziggurat serve` processes:
# `mvn verify` = unit tests (mvn test), the starter bot's fat jar, then the tests that run
# that jar (*IT). Dependencies, protoc and protoc-gen-grpc-java come from Maven Central and
# are cached in ~/.m2.
set -euo pipefail
cd "$(dirname "$0")"
for tool in java mvn; do
  if ! command -v "$tool" >/dev/null; then
    echo "clients/java/test.sh: $tool not found (install a JDK ≥ 17 and Maven ≥ 3.8)" >&2
    exit 1
  fi
done
export ZIGGURAT="${ZIGGURAT:-$(cd ../.. && pwd)/.venv/bin/ziggurat}"
mvn --batch-mode --no-transfer-progress -Dstyle.color=never verify
