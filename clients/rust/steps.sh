# The Rust client's steps of clients/test-clients.sh (sourced there; see its header for the
# variables and the step/refused helpers). Builds go to ~/.cache/holdfast-dev (clients/rust/cargo.sh).
rust_tls_env=(HOLDFAST_ADDR="$tls_addr" HOLDFAST_TLS_CA="$certs/ca.crt" HOLDFAST_TLS_CERT="$certs/client.crt"
  HOLDFAST_TLS_KEY="$certs/client.key")
step "rust lint (cargo fmt --check, cargo clippy -D warnings)" clients/rust/lint.sh
# --all-features: the fencing kit's tests too (tests/signed_fence: redis-server and PostgreSQL of
# their own; real signed grants from HOLDFAST_SIGNED_ADDR and HOLDFAST_FENCE_KEYS_URL when set).
step "rust test (cargo test --all-features)" env HOLDFAST_TEST_TLS_ADDR="$tls_addr" HOLDFAST_TEST_CERTS="$certs" \
  HOLDFAST_TEST_API_KEY="$api_key" clients/rust/cargo.sh test --all-features
step "rust example" clients/rust/cargo.sh run --quiet --example hold -- "rust-$example_name"
step "rust example over mutual TLS with an API key (from HOLDFAST_API_KEY)" \
  env "${rust_tls_env[@]}" HOLDFAST_API_KEY="$api_key" clients/rust/cargo.sh run --quiet --example hold -- "rusttls-$example_name"
# Negative control: the same example without a key.
expected="unauthenticated" step "rust example without a key is refused" \
  refused env "${rust_tls_env[@]}" clients/rust/cargo.sh run --quiet --example hold -- "rustno-$example_name"
step "rust crate installs from its .crate by its README" clients/rust/test-install.sh "$addr"
