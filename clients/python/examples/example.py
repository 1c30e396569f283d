"""Holds a lock, prints its fencing token, releases it.

    python3 clients/python/examples/example.py --addr 127.0.0.1:50051 reports
    HOLDFAST_API_KEY=… python3 clients/python/examples/example.py --addr locks.internal:50051 \
        --tls-ca ca.crt --tls-cert client.crt --tls-key client.key reports
"""

import argparse
import os
import pathlib
import sys

import holdfast


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--addr", default="127.0.0.1:50051", help="holdfast server host:port")
    parser.add_argument("--ttl-ms", type=int, default=10_000)
    parser.add_argument("--wait-ms", type=int, default=5_000)
    parser.add_argument("--tls-ca", type=pathlib.Path, help="PEM CA that signed the server's certificate (turns TLS on)")
    parser.add_argument("--tls-cert", type=pathlib.Path, help="mutual TLS: PEM client certificate")
    parser.add_argument("--tls-key", type=pathlib.Path, help="mutual TLS: the client certificate's PEM key")
    parser.add_argument("--api-key", default=os.environ.get("HOLDFAST_API_KEY"), help="API key (default $HOLDFAST_API_KEY)")
    parser.add_argument("name", help="the lock's name")
    args = parser.parse_args()
    read = lambda path: path.read_bytes() if path else None  # noqa: E731

    try:
        with holdfast.channel(args.addr, ca=read(args.tls_ca), cert=read(args.tls_cert), key=read(args.tls_key),
                              api_key=args.api_key) as channel:
            with holdfast.lock(channel, args.name, ttl_ms=args.ttl_ms, wait_ms=args.wait_ms) as lease:
                print(f"holding {args.name} with fencing token {lease.fencing_token}")
                lease.check()  # before any side effect: raises LeaseLost if the lease is gone
    except (holdfast.NotAcquired, holdfast.HoldfastError) as err:  # one line: what is wrong, and where
        sys.exit(f"example: {err}")
    print(f"released {args.name}")


if __name__ == "__main__":
    main()
