#!/usr/bin/env bash
# Regenerates the client's stubs, holdfast/v1/*_pb2*.py and .pyi, from proto/ with grpcio-tools
# at a pinned version, which pip installs into a venv in a cache outside the repository (see
# venvs.sh). Called by clients/generate.sh; clients/check-generated.sh checks the committed stubs
# are what this makes.
# The version sets the package's floors in pyproject.toml: its stubs refuse to load on a grpcio
# older than itself or a protobuf older than its protoc (1.72.1 writes protobuf 6.30.0 code).
set -euo pipefail
source "$(dirname "$0")/venvs.sh"
repo="$(cd "$client_dir/../.." && pwd)"
GRPCIO_TOOLS=1.72.1

generators=("grpcio-tools==$GRPCIO_TOOLS" "grpcio==$GRPCIO_TOOLS" protobuf==6.30.0)
install() { quiet_pip "$1" "${generators[@]}"; }
venv="$(cached_venv py-gen "$(dev_python)" install "${generators[@]}")"
rm -f "$client_dir"/holdfast/v1/*_pb2*.py "$client_dir"/holdfast/v1/*_pb2*.pyi
(cd "$repo/proto" && "$venv/bin/python" -m grpc_tools.protoc -I . --python_out="$client_dir" \
  --pyi_out="$client_dir" --grpc_python_out="$client_dir" holdfast/v1/*.proto)
