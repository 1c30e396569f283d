#!/usr/bin/env bash
# Writes the Java client's release files into OUTDIR: holdfast-client-VERSION.jar (the client, the
# fencing kit and the generated stubs), holdfast-client-VERSION-sources.jar and
# holdfast-client-VERSION.pom (pom.xml as it is: no parent, its dependencies all from the registry),
# which is what `mvn install` puts in a Maven repository. Tests are not run here (steps.sh runs them).
# The files' timestamps are the last commit's, so a commit always packs to the same bytes.
#   clients/java/package.sh OUTDIR
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: clients/java/package.sh OUTDIR" >&2; exit 2; }
mkdir -p "$1"
out="$(cd "$1" && pwd)"
here="$(cd "$(dirname "$0")" && pwd)"
stamp="$(git -C "$here" log -1 --format=%cI HEAD)"

mvn -B -q -f "$here/pom.xml" package -DskipTests -Dproject.build.outputTimestamp="$stamp"
# The one version, from what Maven built (target/holdfast-client-VERSION.jar).
jar="$(find "$here/target" -maxdepth 1 -name 'holdfast-client-*.jar' ! -name '*-sources.jar' -print -quit)"
[ -n "$jar" ] || { echo "package.sh: mvn package wrote no holdfast-client jar" >&2; exit 1; }
name="$(basename "$jar" .jar)"
cp "$jar" "$here/target/$name-sources.jar" "$out/"
cp "$here/pom.xml" "$out/$name.pom"
echo "package.sh: $name.jar, $name-sources.jar and $name.pom in $out" >&2
