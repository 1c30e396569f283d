# The Python client's steps of clients/test-clients.sh (sourced there; see its header for the
# variables and the step/refused helpers).
PYTHON="${PYTHON:-/usr/bin/python3}"
step "python lint (pyflakes)" clients/python/lint.sh
step "python unit tests" "$PYTHON" -m unittest discover -s clients/python/tests -v
step "python example" "$PYTHON" clients/python/examples/example.py --addr "$addr" "py-$example_name"
step "python asyncio example" "$PYTHON" clients/python/examples/async_example.py --addr "$addr" "pyaio-$example_name"
step "python wheel installs offline into a fresh venv, examples run" bash clients/python/test-install.sh "$addr"
step "python fencing example" "$PYTHON" clients/python/examples/fenced_storage.py demo --addr "$addr" "pyfence-$example_name"
step "python example over mutual TLS with an API key" \
  "$PYTHON" clients/python/examples/example.py --addr "$tls_addr" "${tls_flags[@]}" --api-key "$api_key" "pytls-$example_name"
# Negative controls: the same example without the client certificate, or without a known key.
expected=UNAVAILABLE step "python example without a client certificate is refused" \
  refused "$PYTHON" clients/python/examples/example.py --addr "$tls_addr" --tls-ca "$certs/ca.crt" --api-key "$api_key" "pyno-$example_name"
expected=UNAUTHENTICATED step "python example with an unknown key is refused" \
  refused "$PYTHON" clients/python/examples/example.py --addr "$tls_addr" "${tls_flags[@]}" --api-key "hf_not-$api_key" "pyno-$example_name"
