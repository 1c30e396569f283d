# The Java client's steps of clients/test-clients.sh (sourced there; see its header for the
# variables and the step/refused helpers). Maven fetches what it needs into ~/.m2/repository.
java_verify_started="$logs/java-verify-started"
: >"$java_verify_started"
step "java tests (mvn verify)" mvn -B -ntp -f clients/java/pom.xml verify
# java_ran CLASS: the verify above (not an earlier one) ran CLASS's tests, none skipped or failed.
java_ran() {
  local f="clients/java/target/surefire-reports/TEST-holdfast.$1.xml"
  [ "$f" -nt "$java_verify_started" ] && grep -Eq 'tests="[1-9][0-9]*"' "$f" && grep -q 'skipped="0"' "$f" && grep -q 'failures="0"' "$f" && grep -q 'errors="0"' "$f"
}
# Real deadlocks on $addr (detection on by default): the cycles ran, not skipped.
step "java deadlocks end to end ran (DeadlockTest)" java_ran DeadlockTest
step "java example" clients/java/example.sh --addr "$addr" "java-$example_name"
step "java example over mutual TLS with an API key" \
  clients/java/example.sh --addr "$tls_addr" "${tls_flags[@]}" --api-key "$api_key" "javatls-$example_name"
# Negative control: the same example with an unknown key.
expected=UNAUTHENTICATED step "java example with an unknown key is refused" \
  refused clients/java/example.sh --addr "$tls_addr" "${tls_flags[@]}" --api-key "hf_not-$api_key" "javano-$example_name"
step "java client installs from its release files and runs from outside the tree" clients/java/test-install.sh "$addr"
# With a server that signs fences (exported once the server signs), the end-to-end test of signed
# fences must have run in the verify above, not been skipped.
if [ -n "${HOLDFAST_SIGNED_ADDR:-}" ]; then
  step "java signed fences end to end ran (SignedFenceLiveTest)" java_ran SignedFenceLiveTest
fi
