# The Python client's steps of clients/test-clients.sh (sourced there; see its header for the
# variables and the step/refused helpers). Everything runs from PyPI-installed venvs in a cache
# outside the repository (venvs.sh): the dev venv (dev-venv.sh: the package editable, its extras,
# pytest, uvicorn, pyflakes, on pyenv's Python 3.9) for the lint, tests and examples; the install
# test makes its own.
step "python dev venv (pip: holdfast editable, extras, test and lint groups)" bash clients/python/dev-venv.sh
py_dev="$(bash clients/python/dev-venv.sh 2>/dev/null)/bin/python" || py_dev=false
step "python lint (pyflakes)" bash clients/python/lint.sh
step "python tests (pytest)" "$py_dev" -m pytest clients/python/tests
step "python example" "$py_dev" clients/python/examples/example.py --addr "$addr" "py-$example_name"
step "python asyncio example" "$py_dev" clients/python/examples/async_example.py --addr "$addr" "pyaio-$example_name"
step "python fencing example" "$py_dev" clients/python/examples/fenced_storage.py demo --addr "$addr" "pyfence-$example_name"
# Against the fence-signing server (its grants' signed fences, its /fence-keys): a stale and a forged write refused.
step "python fencing example with signed fences (a stale and a forged write refused)" \
  "$py_dev" clients/python/examples/fenced_storage.py demo --addr "$HOLDFAST_SIGNED_ADDR" --fence-keys "$HOLDFAST_FENCE_KEYS_URL" \
  "pysigned-$example_name"
step "python example over mutual TLS with an API key" \
  "$py_dev" clients/python/examples/example.py --addr "$tls_addr" "${tls_flags[@]}" --api-key "$api_key" "pytls-$example_name"
# Negative controls: the same example without the client certificate, or without a known key.
expected=UNAVAILABLE step "python example without a client certificate is refused" \
  refused "$py_dev" clients/python/examples/example.py --addr "$tls_addr" --tls-ca "$certs/ca.crt" --api-key "$api_key" "pyno-$example_name"
expected=UNAUTHENTICATED step "python example with an unknown key is refused" \
  refused "$py_dev" clients/python/examples/example.py --addr "$tls_addr" "${tls_flags[@]}" --api-key "hf_not-$api_key" "pyno-$example_name"
step "python wheel and sdist install from PyPI into fresh venvs (3.9, 3.13, Debian's), programs run" \
  bash clients/python/test-install.sh "$addr"
