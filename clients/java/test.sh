#!/usr/bin/env bash
# Builds the Java client and runs its tests against real `ziggurat serve` processes:
# `mvn verify` = unit tests (mvn test), the starter bot's fat jar, then the tests that run
# that jar (*IT). Dependencies, protoc and protoc-gen-grpc-java come from Maven Central and
# are cached in ~/.m2.
#
# The main classes and the fat jar are random-bot --build's: `mvn package` of these sources,
# taken from the build cache outside the clone when src/main, pom.xml, the protos, the JDK and
# Maven are unchanged (see random-bot). mvn verify then compiles and runs the tests against
# them, without generating, compiling and shading main again (protoc.skip, maven.main.skip,
# ziggurat.shade.skip): that was 20 of its 60 s on a fresh clone, done twice with random-bot's.
set -euo pipefail
cd "$(dirname "$0")"
for tool in java mvn; do
  if ! command -v "$tool" >/dev/null; then
    echo "clients/java/test.sh: $tool not found (install a JDK ≥ 17 and Maven ≥ 3.8)" >&2
    exit 1
  fi
done
export ZIGGURAT="${ZIGGURAT:-$(cd ../.. && pwd)/.venv/bin/ziggurat}"
env -u ZIGGURAT_STARTER_BOT_PREBUILT ./random-bot --build
# Maven's JVM and the test JVMs it forks are short-lived: C1 alone compiles what they run soon
# enough, and C2's compiler threads cost more than they save (on the idle 2-core CI machine,
# 31.5 CPU s instead of 35-42 for this script). MAVEN_OPTS, or ZIGGURAT_JAVA_TEST_JVM_OPTIONS for
# the test JVMs, set by the caller replace these options.
export MAVEN_OPTS="${MAVEN_OPTS:--XX:TieredStopAtLevel=1 -XX:+UseSerialGC}"
mvn --batch-mode --no-transfer-progress -Dstyle.color=never \
  -DargLine="${ZIGGURAT_JAVA_TEST_JVM_OPTIONS:--XX:TieredStopAtLevel=1 -XX:+UseSerialGC}" \
  -Dprotoc.skip=true -Dmaven.main.skip=true -Dziggurat.shade.skip=true verify
