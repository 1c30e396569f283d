#!/usr/bin/env bash
# Installs the Java client as clients/java/README.md says and runs the page's first program from a
# scratch directory outside the repository, against a live server:
#   clients/java/test-install.sh HOST:PORT
# package.sh's jar and pom go into a Maven repository of the scratch's own (a fresh HOME's
# ~/.m2/repository) by the page's install:install-file command; the page's pom.xml, FirstLock
# program and run commands (the blocks after <!-- install-files -->, <!-- install-pom -->,
# <!-- install-example --> and <!-- install-run -->) then run there: against HOST:PORT they must
# print a fencing token, and against a port where nothing listens exactly one line naming the
# address, without a stack trace (negative control: an uncaught failure is caught by that check).
# To spare the registry, the repository is first seeded with a copy of what Maven downloaded into
# $HOLDFAST_MAVEN_CACHE (default: the caller's ~/.m2/repository), less any holdfast artifact.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$(dirname "$here")")"
readme="$here/README.md"
addr="${1:?usage: test-install.sh HOST:PORT}"
cache="${HOLDFAST_MAVEN_CACHE:-$HOME/.m2/repository}"

fail() { echo "test-install: $*" >&2; exit 1; }
# The fenced block that follows the line <!-- $1 --> in the README.
block() {
  awk -v marker="<!-- $1 -->" '$0 == marker { found = 1; next }
    found && /^```/ { if (inside) exit; inside = 1; next }
    found && inside { print }' "$readme"
}
install_files="$(block install-files)" pom="$(block install-pom)" program="$(block install-example)" run="$(block install-run)"
if [ -z "$install_files" ] || [ -z "$pom" ] || [ -z "$run" ]; then
  fail "a marked block of README.md is missing"
fi
grep -q 'class FirstLock' <<<"$program" || fail "no FirstLock program in README.md"
grep -q '127.0.0.1:50051' <<<"$run" || fail "the run block of README.md names no 127.0.0.1:50051 to replace"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
case "$scratch/" in "$repo"/*) fail "$scratch is inside the repository" ;; esac
"$here/package.sh" "$scratch/files"

# A clean user from here on: a fresh HOME, no Maven options from this shell. Java takes user.home
# from the password file, not from HOME, so Maven is told (its settings and repository live there).
export HOME="$scratch/home"
export MAVEN_OPTS="-Duser.home=$HOME -Djansi.noreset=true" # noreset: no ANSI codes from Maven 3.8 in the output
unset MAVEN_ARGS MAVEN_CONFIG
m2="$HOME/.m2/repository"
mkdir -p "$m2" "$scratch/project/src/main/java"
if [ -d "$cache" ]; then
  tar -C "$cache" --exclude=./dev/holdfast -cf - . | tar -C "$m2" -xf -
fi
(cd "$scratch/files" && bash -euo pipefail -c "$install_files")
pom_file="$(cd "$scratch/files" && ls holdfast-client-*.pom)"
version="${pom_file#holdfast-client-}" version="${version%.pom}"
[ -f "$m2/dev/holdfast/holdfast-client/$version/holdfast-client-$version.jar" ] || fail "install-file put no $version jar in $m2"

cd "$scratch/project"
printf '%s\n' "$pom" >pom.xml
printf '%s\n' "$program" >src/main/java/FirstLock.java
# The negative control's program: the same failure, not caught.
cat >src/main/java/Uncaught.java <<'EOF'
public class Uncaught {
  public static void main(String[] args) throws Exception {
    try (holdfast.HoldfastClient client = holdfast.HoldfastClient.connect(args[0])) {
      client.inspect("first-lock");
    }
  }
}
EOF

# Passes when FILE is one line naming ADDR, with no stack trace.
one_line_naming() {
  [ "$(wc -l <"$1")" -eq 1 ] && grep -qF "$2" "$1" && ! grep -q $'^\tat ' "$1"
}

bash -euo pipefail -c "${run//127.0.0.1:50051/$addr}" >out.txt 2>err.txt || { cat out.txt err.txt >&2; fail "the page's program failed against $addr"; }
cat out.txt
grep -q '^holding first-lock with fencing token [1-9]' out.txt || { cat err.txt >&2; fail "no fencing token printed"; }

# The program again (the run block's java line: it is built), at a port nothing listens on.
dead="127.0.0.1:$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
java_line="$(grep '^java ' <<<"$run")"
if bash -euo pipefail -c "${java_line//127.0.0.1:50051/$dead}" >out.txt 2>err.txt; then
  fail "the page's program exited 0 against $dead, where nothing listens"
fi
one_line_naming err.txt "$dead" || { cat err.txt >&2; fail "against $dead it did not print one line naming the address"; }
echo "test-install: with nothing at $dead: $(cat err.txt)"

java -cp "target/classes:$(cat classpath.txt)" Uncaught "$dead" >/dev/null 2>control.txt || true
if one_line_naming control.txt "$dead"; then
  fail "the one-line check passes an uncaught failure too (negative control)"
fi
echo "test-install: the installed jar held a lock from $scratch"
