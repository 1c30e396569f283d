"""Holds a lock, prints its fencing token, releases it.

    python3 clients/python/examples/example.py --addr 127.0.0.1:50051 reports
"""

import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import grpc  # noqa: E402
import holdfast  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--addr", default="127.0.0.1:50051", help="holdfast server host:port")
    parser.add_argument("--ttl-ms", type=int, default=10_000)
    parser.add_argument("--wait-ms", type=int, default=5_000)
    parser.add_argument("name", help="the lock's name")
    args = parser.parse_args()

    with grpc.insecure_channel(args.addr) as channel:
        try:
            with holdfast.lock(channel, args.name, ttl_ms=args.ttl_ms, wait_ms=args.wait_ms) as lease:
                print(f"holding {args.name} with fencing token {lease.fencing_token}")
                lease.check()  # before any side effect: raises LeaseLost if the lease is gone
        except holdfast.NotAcquired as err:
            sys.exit(f"example: {err}")
    print(f"released {args.name}")


if __name__ == "__main__":
    main()
