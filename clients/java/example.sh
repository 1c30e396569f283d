#!/usr/bin/env bash
# Runs examples/HoldExample.java, which the Maven build compiles with the tests, against a server:
#   clients/java/example.sh --addr HOST:PORT [--tls-ca F --tls-cert F --tls-key F] [--api-key K] NAME
# (the API key may come from HOLDFAST_API_KEY instead: arguments show in ps).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# test-compile: the client, the examples and target/test-classpath.txt (the dependencies' jars).
mvn -B -q -f "$here/pom.xml" test-compile
exec java -cp "$here/target/test-classes:$here/target/classes:$(cat "$here/target/test-classpath.txt")" \
  holdfast.examples.HoldExample "$@"
