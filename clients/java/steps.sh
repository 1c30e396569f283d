# The Java client's steps of clients/test-clients.sh (sourced there; see its header for the
# variables and the step/refused helpers). Maven fetches what it needs into ~/.m2/repository.
step "java tests (mvn verify)" mvn -B -ntp -f clients/java/pom.xml verify
step "java example" clients/java/example.sh --addr "$addr" "java-$example_name"
step "java example over mutual TLS with an API key" \
  clients/java/example.sh --addr "$tls_addr" "${tls_flags[@]}" --api-key "$api_key" "javatls-$example_name"
# Negative control: the same example with an unknown key.
expected=UNAUTHENTICATED step "java example with an unknown key is refused" \
  refused clients/java/example.sh --addr "$tls_addr" "${tls_flags[@]}" --api-key "hf_not-$api_key" "javano-$example_name"
step "java client installs from its release files and runs from outside the tree" clients/java/test-install.sh "$addr"
