"""Holds a lock from asyncio (holdfast.alock on grpc.aio), prints its fencing token, releases it.

    python3 clients/python/examples/async_example.py --addr 127.0.0.1:50051 reports
"""

import argparse
import asyncio
import pathlib
import sys

import holdfast

import grpc


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--addr", default="127.0.0.1:50051", help="holdfast server host:port")
    parser.add_argument("--ttl-ms", type=int, default=10_000)
    parser.add_argument("--wait-ms", type=int, default=5_000)
    parser.add_argument("name", help="the lock's name")
    args = parser.parse_args()

    async with grpc.aio.insecure_channel(args.addr) as channel:
        try:
            async with holdfast.alock(channel, args.name, ttl_ms=args.ttl_ms, wait_ms=args.wait_ms) as lease:
                print(f"holding {args.name} with fencing token {lease.fencing_token} ({holdfast.__name__} from {pathlib.Path(holdfast.__file__).parent})")
                lease.check()  # before any side effect: raises LeaseLost if the lease is gone
        except (holdfast.NotAcquired, holdfast.HoldfastError) as err:
            sys.exit(f"example: {err}")
    print(f"released {args.name}")


if __name__ == "__main__":
    asyncio.run(main())
