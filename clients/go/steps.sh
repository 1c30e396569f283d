# The Go client's steps of clients/test-clients.sh (sourced there; see its header for the
# variables and the step/refused helpers). Every module's dependencies come from the Go module
# proxy (the module cache is go's own, $(go env GOMODCACHE)).
step "go lint (gofmt -l, go vet, go mod tidy -diff; every module)" clients/go/lint.sh
step "go test (the client module)" go -C clients/go test -count=1 -v ./...
step "go test (the Redis fence store module, fencing/fenceredis)" go -C clients/go/fencing/fenceredis test -count=1 -v ./...
step "go test (the PostgreSQL fence store on a real PostgreSQL)" go -C clients/go/fencing/internal/postgrestest test -count=1 -v ./...
# Signed fences end to end against test-clients.sh's fence-signing server (HOLDFAST_SIGNED_ADDR,
# HOLDFAST_FENCE_KEYS_URL, HOLDFAST_FENCE_KEYS_FILE; the test fails without them): the ring from
# its /fence-keys, every kind of grant's fence, Kleppmann, the lease-end check.
step "go signed fences end to end (signed_live_test.go, against \$HOLDFAST_SIGNED_ADDR)" \
  go -C clients/go test -count=1 -v -tags signedlive -run '^TestSignedLive' .
step "go fencing example with signed fences (a stale and a forged write refused)" \
  go -C clients/go/examples run ./fenced --addr "$HOLDFAST_SIGNED_ADDR" --keys "$HOLDFAST_FENCE_KEYS_URL" "gosigned-$example_name"
step "go example" go -C clients/go/examples run ./hold --addr "$addr" "go-$example_name"
step "go session example" go -C clients/go/examples run ./session --addr "$addr" "gosess-$example_name"
step "go fencing example (a stale write refused)" go -C clients/go/examples run ./fenced --addr "$addr" "gofence-$example_name"
step "go example over mutual TLS with an API key (from HOLDFAST_API_KEY)" \
  env HOLDFAST_API_KEY="$api_key" go -C clients/go/examples run ./hold --addr "$tls_addr" "${tls_flags[@]}" "gotls-$example_name"
# Negative control: the same example without a key.
expected=Unauthenticated step "go example without a key is refused" \
  refused go -C clients/go/examples run ./hold --addr "$tls_addr" "${tls_flags[@]}" "gono-$example_name"
step "go client installs from its release folder and from a checkout, as its README says" clients/go/test-install.sh
