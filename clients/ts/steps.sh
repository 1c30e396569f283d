# The TypeScript SDK's steps of clients/test-clients.sh (sourced there; see its header for the
# variables and the step/refused helpers).
step "typescript example" node clients/ts/dist/clients/ts/examples/with-lock.js
step "typescript package installs into an empty project" bash clients/ts/test-install.sh
step "typescript example over mutual TLS with an API key (from env)" \
  env HOLDFAST_ADDR="$tls_addr" HOLDFAST_TLS_CA="$certs/ca.crt" HOLDFAST_TLS_CERT="$certs/client.crt" \
  HOLDFAST_TLS_KEY="$certs/client.key" HOLDFAST_API_KEY="$api_key" node clients/ts/dist/clients/ts/examples/with-lock.js
