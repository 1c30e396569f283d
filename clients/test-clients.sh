#!/usr/bin/env bash
# Runs the Python, Go and Java clients' tests and examples against one live holdfast server.
# Starts a private redis-server and the servers on free loopback ports with the tests' launcher
# (test/support/launch-cli.ts), which stops them by PID when this script exits.
# Installs nothing in the repository (clients/ts/test-install.sh installs the SDK tarball into a
# scratch project, from the npm registry): it needs node_modules (npm ci), redis-server, Debian's python3-grpcio and
# python3-protobuf and python3-venv (for /usr/bin/python3, or $PYTHON; the fencing kit's tests: python3-redis,
# python3-psycopg2, python3-uvicorn, postgresql), golang-go, golang-google-grpc-dev,
# golang-google-protobuf-dev, golang-github-golang-protobuf-1-5-dev, golang-github-gomodule-redigo-dev
# and golang-github-lib-pq-dev, and the Java packages
# clients/java/java.sh lists (openjdk-17-jdk-headless, libgrpc-java, junit5, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-/usr/bin/python3}"
START_TIMEOUT_S=20

say() { echo "test-clients: $*" >&2; }
die() { say "$*"; exit 1; }

for tool in node redis-server go javac "$PYTHON"; do
  command -v "$tool" >/dev/null || die "$tool is missing"
done
"$PYTHON" -c 'import grpc, google.protobuf' 2>/dev/null || die "$PYTHON cannot import grpc: install python3-grpcio python3-protobuf"
[ -d node_modules ] || die "node_modules is missing: run npm ci first"

# Build the SDK package and the server when dist/ is missing or older than any source file.
if [ ! -f dist/src/cli.js ] || [ -n "$(find src clients/ts -name '*.ts' -not -path '*/dist/*' -newer dist/src/cli.js -print -quit)" ]; then
  say "building the SDK package and the server"
  npm run --silent build
fi

logs="$(mktemp -d)" launch_pid=""
cleanup() {
  if [ -n "$launch_pid" ]; then
    kill "$launch_pid" 2>/dev/null || true # it stops the servers and redis-server by PID
    wait "$launch_pid" 2>/dev/null || true
  fi
  rm -rf "$logs"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The second server has mutual TLS (certificates from test/support/make-certs.sh) and one API
# key, for the namespace "clients".
certs="$logs/certs"
bash test/support/make-certs.sh "$certs"
api_key="hf_$(openssl rand -hex 24)"
printf 'api-keys:\n  - { name: clients-test, sha256: %s, namespace: clients, role: lock }\n' \
  "$(printf %s "$api_key" | sha256sum | cut -d' ' -f1)" >"$certs/holdfast.yaml"
tls_server_flags="$(printf '["--tls-cert","%s","--tls-key","%s","--tls-client-ca","%s","--config","%s"]' \
  "$certs/server.crt" "$certs/server.key" "$certs/ca.crt" "$certs/holdfast.yaml")"

# A private redis-server (recorded as new to holdfast, so no quarantine) and both servers on it,
# started by the tests' own launcher (test/support/server.ts); it prints what it started.
node node_modules/typescript/bin/tsc -p test/support/tsconfig.json
coproc LAUNCH { exec node test/support/dist/test/support/launch-cli.js --logs "$logs" '[]' "$tls_server_flags"; }
launch_pid=$LAUNCH_PID
ready=""
while read -r -t $((START_TIMEOUT_S * 3)) key value <&"${LAUNCH[0]}"; do
  case "$key" in
    redis) redis_url="$value" ;;
    server-0) addr="$value" ;;
    server-0-pid) server_pid="$value" ;;
    server-1) tls_addr="$value" ;;
    server-1-pid) tls_server_pid="$value" ;;
    ready) ready=1 && break ;;
  esac
done
if [ -z "$ready" ]; then
  cat "$logs"/server-*.log >&2 2>/dev/null || true
  die "the servers did not start"
fi
tls_flags=(--tls-ca "$certs/ca.crt" --tls-cert "$certs/client.crt" --tls-key "$certs/client.key")
say "server on $addr, mutual-TLS server with an API key on $tls_addr (redis at $redis_url)"
export HOLDFAST_ADDR="$addr" HOLDFAST_REDIS_URL="$redis_url"

passed=0 failed=0 failed_titles=() step_number=0
# Each step's output goes to the terminal and to its own file; a failed step's last lines are
# printed again at the end, so the tail of a long run says what failed and why.
step() {
  local title="$1" out started
  shift
  step_number=$((step_number + 1))
  out="$logs/step-$step_number.log" started=$SECONDS
  say "== $title"
  if "$@" > >(tee "$out") 2> >(tee -a "$out" >&2); then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failed_titles+=("$step_number|$title")
    say "FAILED: $title (after $((SECONDS - started)) s)"
  fi
}
example_name="example-$RANDOM$RANDOM"
step "typescript example" node clients/ts/dist/examples/with-lock.js
step "typescript package installs into an empty project" bash clients/ts/test-install.sh
step "python lint (pyflakes)" clients/python/lint.sh
step "python unit tests" "$PYTHON" -m unittest discover -s clients/python/tests -v
step "python example" "$PYTHON" clients/python/examples/example.py --addr "$addr" "py-$example_name"
step "python asyncio example" "$PYTHON" clients/python/examples/async_example.py --addr "$addr" "pyaio-$example_name"
step "python wheel installs offline into a fresh venv, examples run" bash clients/python/test-install.sh "$addr"
step "python fencing example" "$PYTHON" clients/python/examples/fenced_storage.py demo --addr "$addr" "pyfence-$example_name"
step "go lint (gofmt -l, go vet)" clients/go/lint.sh
step "go test" clients/go/go.sh test -count=1 -v ./...
step "go example" clients/go/go.sh run ./examples/hold --addr "$addr" "go-$example_name"
step "go session example" clients/go/go.sh run ./examples/session --addr "$addr" "gosess-$example_name"
step "go client installs offline by its README" clients/go/test-install.sh
step "go fencing example (a stale write refused)" clients/go/go.sh run ./examples/fenced --addr "$addr" "gofence-$example_name"
refused() { ! "$@" 2>"$logs/refused.err" && grep -q "$expected" "$logs/refused.err"; }
step "typescript example over mutual TLS with an API key (from env)" \
  env HOLDFAST_ADDR="$tls_addr" HOLDFAST_TLS_CA="$certs/ca.crt" HOLDFAST_TLS_CERT="$certs/client.crt" \
  HOLDFAST_TLS_KEY="$certs/client.key" HOLDFAST_API_KEY="$api_key" node clients/ts/dist/examples/with-lock.js
step "python example over mutual TLS with an API key" \
  "$PYTHON" clients/python/examples/example.py --addr "$tls_addr" "${tls_flags[@]}" --api-key "$api_key" "pytls-$example_name"
step "go example over mutual TLS with an API key (from HOLDFAST_API_KEY)" \
  env HOLDFAST_API_KEY="$api_key" clients/go/go.sh run ./examples/hold --addr "$tls_addr" "${tls_flags[@]}" "gotls-$example_name"
# Negative controls: the same examples without the client certificate, or without a known key.
expected=UNAVAILABLE step "python example without a client certificate is refused" \
  refused "$PYTHON" clients/python/examples/example.py --addr "$tls_addr" --tls-ca "$certs/ca.crt" --api-key "$api_key" "pyno-$example_name"
expected=UNAUTHENTICATED step "python example with an unknown key is refused" \
  refused "$PYTHON" clients/python/examples/example.py --addr "$tls_addr" "${tls_flags[@]}" --api-key "hf_not-$api_key" "pyno-$example_name"
expected=Unauthenticated step "go example without a key is refused" \
  refused clients/go/go.sh run ./examples/hold --addr "$tls_addr" "${tls_flags[@]}" "gono-$example_name"
step "java tests" clients/java/java.sh test
step "java example" clients/java/java.sh example --addr "$addr" "java-$example_name"
step "java jar installs and runs from outside the tree" clients/java/test-install.sh "$addr"
step "java example over mutual TLS with an API key" \
  clients/java/java.sh example --addr "$tls_addr" "${tls_flags[@]}" --api-key "$api_key" "javatls-$example_name"
expected=UNAUTHENTICATED step "java example with an unknown key is refused" \
  refused clients/java/java.sh example --addr "$tls_addr" "${tls_flags[@]}" --api-key "hf_not-$api_key" "javano-$example_name"

for pid in $server_pid $tls_server_pid; do
  if ! kill -0 "$pid" 2>/dev/null; then
    failed=$((failed + 1))
    say "FAILED: a server died during the run"
  fi
done
if ((failed > 0)); then
  say "server logs:"
  cat "$logs"/server-*.log >&2
  for entry in "${failed_titles[@]}"; do
    say "FAILED: ${entry#*|}; its last lines:"
    tail -n 60 "$logs/step-${entry%%|*}.log" >&2
  done
fi
failed_list="$(printf '%s; ' "${failed_titles[@]#*|}")"
echo "clients: $passed passed, $failed failed${failed_titles[*]:+ (${failed_list%; })}"
((failed == 0))
