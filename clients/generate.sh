#!/usr/bin/env bash
# Regenerates every client's stubs from proto/ with the local plugins in buf.gen.yaml:
# ts-proto from node_modules, Debian's protoc 3.21 (python), grpc_python_plugin,
# protoc-gen-go, protoc-gen-go-grpc, protoc's java and grpc_java_plugin (protoc-gen-grpc-java).
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in /usr/bin/protoc /usr/bin/grpc_python_plugin /usr/bin/protoc-gen-go /usr/bin/protoc-gen-go-grpc /usr/bin/grpc_java_plugin \
  node_modules/.bin/buf node_modules/.bin/protoc-gen-ts_proto; do
  [ -x "$tool" ] || { echo "generate.sh: $tool is missing (see clients/test-clients.sh for the packages)" >&2; exit 1; }
done
node_modules/.bin/buf generate
