#!/usr/bin/env bash
# Runs every client's tests, examples and scratch-project installs against one live holdfast
# server. Starts a private redis-server and the servers on free loopback ports with the tests'
# launcher (test/support/launch-cli.ts), which stops them by PID when this script exits.
#   bash clients/test-clients.sh                 every language
#   HOLDFAST_CLIENTS="go rust" bash clients/test-clients.sh    only these
# Each language's steps are in clients/LANGUAGE/steps.sh, sourced here. They may use:
#   $addr, $tls_addr       the plain server, and the mutual-TLS server with one API key
#   $certs, ${tls_flags[@]}, $api_key   its CA and client certificate, the flags naming them, the key
#   $redis_url, $logs, $example_name     the servers' Redis, a scratch folder, a unique lock-name part
#   $signed_addr, $fence_keys_file, $fence_keys_url   a third server that signs fences (its key made
#                          by `holdfast fence-key new`), its JWK set file and its GET /fence-keys URL
#   step TITLE CMD...      runs CMD as one counted step
#   expected=TEXT step TITLE refused CMD...   passes when CMD fails saying TEXT on stderr
# Nothing is installed in the repository: each scratch-project install works in a folder of its
# own outside it, with a fresh HOME, through its language's own package tool.
set -euo pipefail
cd "$(dirname "$0")/.."
START_TIMEOUT_S=20

say() { echo "test-clients: $*" >&2; }
die() { say "$*"; exit 1; }

read -r -a languages <<<"${HOLDFAST_CLIENTS:-ts python go java rust}"
for language in "${languages[@]}"; do
  [ -f "clients/$language/steps.sh" ] || die "no client named $language (HOLDFAST_CLIENTS)"
done
for tool in node redis-server; do
  command -v "$tool" >/dev/null || die "$tool is missing"
done
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

# The third server signs every grant's fence with a key made as an operator makes one; the JWK
# set `fence-key new` printed is the file guards are given, and the server publishes the same.
fence_keys_file="$logs/fence-keys.json"
node dist/src/cli.js fence-key new --out "$logs/fence-signing.pem" >"$fence_keys_file" 2>"$logs/fence-key.err" ||
  die "holdfast fence-key new failed: $(cat "$logs/fence-key.err")"
signed_server_flags="$(printf '["--fence-signing-key","%s","--http-listen","127.0.0.1:0"]' "$logs/fence-signing.pem")"

# A private redis-server (recorded as new to holdfast, so no quarantine) and the servers on it,
# started by the tests' own launcher (test/support/server.ts); it prints what it started.
node node_modules/typescript/bin/tsc -p test/support/tsconfig.json
coproc LAUNCH { exec node test/support/dist/test/support/launch-cli.js --logs "$logs" '[]' "$tls_server_flags" "$signed_server_flags"; }
launch_pid=$LAUNCH_PID
ready=""
while read -r -t $((START_TIMEOUT_S * 3)) key value <&"${LAUNCH[0]}"; do
  case "$key" in
    redis) redis_url="$value" ;;
    server-0) addr="$value" ;;
    server-0-pid) server_pid="$value" ;;
    server-1) tls_addr="$value" ;;
    server-1-pid) tls_server_pid="$value" ;;
    server-2) signed_addr="$value" ;;
    server-2-pid) signed_server_pid="$value" ;;
    server-2-http) fence_keys_url="http://127.0.0.1:$value/fence-keys" ;;
    ready) ready=1 && break ;;
  esac
done
if [ -z "$ready" ] || [ -z "${fence_keys_url:-}" ]; then
  cat "$logs"/server-*.log >&2 2>/dev/null || true
  die "the servers did not start"
fi
tls_flags=(--tls-ca "$certs/ca.crt" --tls-cert "$certs/client.crt" --tls-key "$certs/client.key")
say "server on $addr, mutual-TLS server with an API key on $tls_addr, fence-signing server on $signed_addr (redis at $redis_url)"
export HOLDFAST_ADDR="$addr" HOLDFAST_REDIS_URL="$redis_url"
export HOLDFAST_SIGNED_ADDR="$signed_addr" HOLDFAST_FENCE_KEYS_FILE="$fence_keys_file" HOLDFAST_FENCE_KEYS_URL="$fence_keys_url"

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
refused() { ! "$@" 2>"$logs/refused.err" && grep -q "$expected" "$logs/refused.err"; }
for language in "${languages[@]}"; do
  # shellcheck source=/dev/null
  source "clients/$language/steps.sh"
done
if [ -z "${HOLDFAST_CLIENTS:-}" ]; then
  step "npm run package: every client's artifact at one version, with SHA256SUMS" bash scripts/test-package.sh
fi

for pid in $server_pid $tls_server_pid $signed_server_pid; do
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
