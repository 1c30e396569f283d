#!/usr/bin/env bash
# Builds and runs the Java client with javac against Debian's jars, no Maven and no network:
#   clients/java/java.sh build                      compile gen/, src/, examples/ and test/ into build/
#                                                   (skipped while build/ is newer than them)
#   clients/java/java.sh test [ARGS...]             build, then the JUnit 5 tests (HOLDFAST_ADDR: a live server);
#                                                   ARGS go to JUnit's console launcher, e.g.
#                                                   --include-classname '.*Fenc.*' for the fencing kit
#   clients/java/java.sh example ARGS...            build, then examples/HoldExample.java
#   clients/java/java.sh jar                        build the client (not the tests), then print the path
#                                                   of build/holdfast-client.jar (the client, the fencing
#                                                   kit and the generated stubs)
#   clients/java/java.sh classpath                  build the client, then print the jar's classpath: the
#                                                   jar and the Debian jars classpath.txt lists (their one list)
# Jars (run time: classpath.txt): libgrpc-java, libprotobuf-java, libguava-java, libnetty-java,
# libperfmark-java, libgoogle-gson-java, libgeronimo-annotation-1.3-spec-java (javax.annotation.Generated,
# which the stubs name, at compile time only), junit5 (its console launcher runs the tests),
# libpostgresql-jdbc-java (the fencing kit's PostgreSQL tests), openjdk-17-jdk-headless,
# and for TLS libnetty-tcnative-java and libnetty-tcnative-jni: Debian's netty has no JDK ALPN, so
# gRPC over TLS needs netty's OpenSSL binding. Debian names its library libnetty-tcnative.so, while
# netty 4.1.48 loads netty_tcnative, and the library checks its own file name: build/native gets a
# copy under the name netty looks for (a symbolic link is refused).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
jars=/usr/share/java
build="$here/build"
export HOLDFAST_REPO_ROOT="${HOLDFAST_REPO_ROOT:-$(dirname "$(dirname "$here")")}"

classpath=""
while read -r jar; do
  case "$jar" in '' | '#'*) continue ;; esac
  [ -f "$jars/$jar.jar" ] || continue # failureaccess ships inside Debian's guava
  classpath+="$jars/$jar.jar:"
done <"$here/classpath.txt"
for jar in grpc-api grpc-stub protobuf netty-codec-http2 geronimo-annotation-1.3-spec; do
  [ -f "$jars/$jar.jar" ] || { echo "java.sh: $jars/$jar.jar is missing (see the header for the packages)" >&2; exit 1; }
done
junit="$jars/junit-platform-console-standalone.jar"
postgresql="$jars/postgresql.jar" # the fencing kit's PostgreSQL store tests (libpostgresql-jdbc-java)
tcnative="$(ls /usr/lib/*/jni/libnetty-tcnative.so 2>/dev/null | head -1)"
java_flags=(-Djava.library.path="$build/native")

# Compiles the client (gen/, src/), its jar and the examples unless build/ is newer than them.
compile() {
  if [ -f "$build/stamp" ] && [ -z "$(find "$here/gen" "$here/src" "$here/examples" "$here/classpath.txt" -newer "$build/stamp" -print -quit)" ]; then
    return
  fi
  command -v javac >/dev/null || { echo "java.sh: javac is missing: apt-get install openjdk-17-jdk-headless" >&2; exit 1; }
  rm -rf "$build"
  mkdir -p "$build/main" "$build/examples"
  # -nowarn: the generated stubs use APIs protobuf 3.21 marks deprecated.
  javac -nowarn --release 11 -encoding UTF-8 -d "$build/main" -cp "$classpath$jars/geronimo-annotation-1.3-spec.jar" \
    $(find "$here/gen" "$here/src" -name '*.java')
  (cd "$here/src" && find . -type f ! -name '*.java' -exec cp --parents {} "$build/main/" \;) # fence-record-1.lua
  javac --release 11 -encoding UTF-8 -d "$build/examples" -cp "$build/main:$classpath" $(find "$here/examples" -name '*.java')
  jar --create --file "$build/holdfast-client.jar" -C "$build/main" .
  mkdir -p "$build/native"
  [ -z "$tcnative" ] || cp "$tcnative" "$build/native/libnetty_tcnative.so"
  touch "$build/stamp"
}

# Compiles the tests unless build/test is newer than them and the client.
compile_tests() {
  compile
  if [ -f "$build/test-stamp" ] && [ -z "$(find "$here/test" "$build/stamp" -newer "$build/test-stamp" -print -quit)" ]; then
    return
  fi
  [ -f "$junit" ] || { echo "java.sh: $junit is missing: apt-get install junit5" >&2; exit 1; }
  rm -rf "$build/test"
  mkdir -p "$build/test"
  javac --release 11 -encoding UTF-8 -Xlint:all,-try -Werror -d "$build/test" -cp "$build/main:$classpath$junit" \
    $(find "$here/test" -name '*.java')
  touch "$build/test-stamp"
}

case "${1:-}" in
  build) compile_tests ;;
  test)
    compile_tests
    shift
    test_classpath="$build/main:$build/test:$classpath$postgresql"
    # holdfast.test.classpath: for the tests that start a Java process of their own (KleppmannTest).
    java "${java_flags[@]}" -Dholdfast.test.classpath="$test_classpath" -jar "$junit" --disable-banner \
      --disable-ansi-colors --details=tree --fail-if-no-tests --class-path "$test_classpath" \
      --scan-class-path "$build/test" "$@"
    ;;
  example)
    compile
    shift
    java "${java_flags[@]}" -cp "$build/examples:$build/holdfast-client.jar:${classpath%:}" holdfast.examples.HoldExample "$@"
    ;;
  jar)
    compile
    echo "$build/holdfast-client.jar"
    ;;
  classpath)
    compile
    echo "$build/holdfast-client.jar:${classpath%:}"
    ;;
  *)
    echo "usage: clients/java/java.sh build|test|example|jar|classpath ARGS..." >&2
    exit 2
    ;;
esac
