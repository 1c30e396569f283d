#!/usr/bin/env bash
# Test certificates, made with openssl (EC P-256, valid one day) in DIR:
#   make-certs.sh DIR                    ca.{crt,key}, server.{crt,key} (localhost, 127.0.0.1, ::1)
#                                        signed by ca, client.{crt,key} (CN=test-client) signed by
#                                        ca, and other-ca.{crt,key} with other-client.{crt,key}, a
#                                        client certificate the server does not trust
#   make-certs.sh DIR leaf NAME CN [CA]  one more certificate NAME.{crt,key} for CN (with the
#                                        server names above), signed by CA (default: ca)
set -euo pipefail
dir="$1"
mkdir -p "$dir"
cd "$dir"

ca() { # NAME CN
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -keyout "$1.key" -out "$1.crt" -subj "/CN=$2" 2>/dev/null
}

leaf() { # NAME CN CA
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$1.key" -out "$1.csr" -subj "/O=holdfast-test/CN=$2" \
    -addext 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1' 2>/dev/null
  openssl x509 -req -in "$1.csr" -CA "$3.crt" -CAkey "$3.key" -set_serial "0x$(openssl rand -hex 8)" \
    -days 1 -copy_extensions copyall -out "$1.crt" 2>/dev/null
  rm -f "$1.csr"
}

if [ "${2:-}" = leaf ]; then
  leaf "$3" "$4" "${5:-ca}"
  exit 0
fi
ca ca holdfast-test-ca
leaf server localhost ca
leaf client test-client ca
ca other-ca holdfast-other-ca
leaf other-client test-client other-ca
