# The Go client's steps of clients/test-clients.sh (sourced there; see its header for the
# variables and the step/refused helpers).
step "go lint (gofmt -l, go vet)" clients/go/lint.sh
step "go test" clients/go/go.sh test -count=1 -v ./...
step "go example" clients/go/go.sh run ./examples/hold --addr "$addr" "go-$example_name"
step "go session example" clients/go/go.sh run ./examples/session --addr "$addr" "gosess-$example_name"
step "go client installs offline by its README" clients/go/test-install.sh
step "go fencing example (a stale write refused)" clients/go/go.sh run ./examples/fenced --addr "$addr" "gofence-$example_name"
step "go example over mutual TLS with an API key (from HOLDFAST_API_KEY)" \
  env HOLDFAST_API_KEY="$api_key" clients/go/go.sh run ./examples/hold --addr "$tls_addr" "${tls_flags[@]}" "gotls-$example_name"
# Negative control: the same example without a key.
expected=Unauthenticated step "go example without a key is refused" \
  refused clients/go/go.sh run ./examples/hold --addr "$tls_addr" "${tls_flags[@]}" "gono-$example_name"
