#!/usr/bin/env bash
# Installs the Java client as clients/java/README.md says and runs the page's first program from a
# scratch directory outside the repository, against a live server:
#   clients/java/test-install.sh HOST:PORT
# The program is read from the page itself (the java block after "<!-- install-example -->"), so the
# page and this check cannot drift apart. Fails when it prints no fencing token or when any SLF4J
# line shows on stderr (the classpath must carry one binding or none).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
addr="${1:?usage: test-install.sh HOST:PORT}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

awk '/<!-- install-example -->/ { found = 1; next } found && /^```java/ { inside = 1; next }
  inside && /^```/ { exit } inside { print }' "$here/README.md" >"$scratch/FirstLock.java"
grep -q 'class FirstLock' "$scratch/FirstLock.java" || { echo "test-install: no FirstLock program in README.md" >&2; exit 1; }

# The page's commands, from here on.
"$here/java.sh" jar >/dev/null
CP="$("$here/java.sh" classpath)"
cd "$scratch"
javac -cp "$CP" -d classes FirstLock.java
java -cp "$CP:classes" FirstLock "$addr" >out.txt 2>err.txt || { cat out.txt err.txt >&2; exit 1; }

cat out.txt
grep -q '^holding first-lock with fencing token [0-9]' out.txt || { echo "test-install: no fencing token printed" >&2; cat err.txt >&2; exit 1; }
if grep -q SLF4J err.txt; then
  echo "test-install: SLF4J lines on stderr (more than one binding on the classpath?):" >&2
  cat err.txt >&2
  exit 1
fi
# Negative control: with two SLF4J bindings added (libslf4j-java, which libnetty-java depends on),
# the same run prints the lines the check looks for.
bindings=/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-simple.jar:/usr/share/java/slf4j-nop.jar
java -cp "$CP:$bindings:classes" FirstLock "$addr" >/dev/null 2>control.txt || true
grep -q 'multiple SLF4J bindings' control.txt || { echo "test-install: the SLF4J check sees nothing even with two bindings" >&2; exit 1; }
echo "test-install: the installed jar held a lock from $scratch"
