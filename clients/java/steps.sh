# The Java client's steps of clients/test-clients.sh (sourced there; see its header for the
# variables and the step/refused helpers).
step "java tests" clients/java/java.sh test
step "java example" clients/java/java.sh example --addr "$addr" "java-$example_name"
step "java jar installs and runs from outside the tree" clients/java/test-install.sh "$addr"
step "java example over mutual TLS with an API key" \
  clients/java/java.sh example --addr "$tls_addr" "${tls_flags[@]}" --api-key "$api_key" "javatls-$example_name"
# Negative control: the same example with an unknown key.
expected=UNAUTHENTICATED step "java example with an unknown key is refused" \
  refused clients/java/java.sh example --addr "$tls_addr" "${tls_flags[@]}" --api-key "hf_not-$api_key" "javano-$example_name"
