"""A small storage service guarded by holdfast's fencing kit, and holders that write to it.

    # the resource: an HTTP key-value store whose writes must carry the newest fence
    python3 fenced_storage.py serve --listen 127.0.0.1:8080 [--redis-url redis://127.0.0.1:6379] \
        [--fence-keys http://127.0.0.1:9090/fence-keys --lock reports]   # signed fences for one lock
    # a holder: holds the lock through holdfast and writes one value with its fence
    python3 fenced_storage.py write --addr 127.0.0.1:50051 --storage 127.0.0.1:8080 reports KEY VALUE
    # both in one process: two holders write in turn, then the first one's late write is refused
    # (with --fence-keys, through a storage that requires signed fences, and a forger's write too)
    python3 fenced_storage.py demo --addr 127.0.0.1:50051 [--fence-keys http://127.0.0.1:9090/fence-keys] reports

PUT /items/KEY stores the body; GET /items/KEY reads it. The guard (holdfast.fencing.FenceMiddleware,
with guards=fencing.writes: reads need no fence) answers 409 to a write whose fencing token is
older than the newest it has seen for that lock, and 400 to a write without a fence. With
--fence-keys (the holdfast server's JWK set: its /fence-keys URL, or a file) and --lock, it admits
only fences the server signed for that lock (403 otherwise), before it asks its store. The default
store is in memory, as the items are: both are lost together when the service stops. --unguarded
serves without the guard, for comparison only.
"""

import argparse
import http.client
import sys
import threading
import wsgiref.simple_server

import holdfast
from holdfast import fencing


class Storage:
    """The WSGI app: items in a dict."""

    def __init__(self):
        self.items = {}
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        key = environ["PATH_INFO"].removeprefix("/items/")
        if environ["REQUEST_METHOD"] == "PUT":
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            with self._lock:
                self.items[key] = body
            start_response("204 No Content", [])
            return []
        with self._lock:
            value = self.items.get(key)
        if value is None:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"no such item\n"]
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        return [value]


class Quiet(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


def key_ring(source):
    """The KeyRing of a JWK set at a URL (fetched once) or in a file."""
    if source.startswith(("http://", "https://")):
        return fencing.KeyRing.from_url(source)
    return fencing.KeyRing.from_file(source)


def make_server(listen, redis_url=None, allow_lossy_redis=False, unguarded=False, fence_keys=None, lock=None):
    host, port = listen.rsplit(":", 1)
    app = Storage()
    if not unguarded:
        store = fencing.RedisStore.from_url(redis_url, allow_lossy_redis=allow_lossy_redis) if redis_url else fencing.MemoryStore()
        signed = {"keys": key_ring(fence_keys), "lock": lock} if fence_keys else {"lock": lock}
        app = fencing.FenceMiddleware(app, store, guards=fencing.writes, **signed)
    return wsgiref.simple_server.make_server(host, int(port), app, server_class=wsgiref.simple_server.WSGIServer,
                                             handler_class=Quiet)


def put(storage, key, value, headers):
    """PUT /items/key; returns (status, body)."""
    host, port = storage.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("PUT", f"/items/{key}", body=value.encode(), headers=headers)
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def write_holding(addr, storage, name, key, value, wait_ms=10_000):
    """Holds `name`, writes key=value with the lease's fence; returns (fencing token, fence headers, status, body)."""
    with holdfast.channel(addr) as channel, holdfast.lock(channel, name, ttl_ms=10_000, wait_ms=wait_ms) as lease:
        lease.check()
        headers = lease.fence()
        return (lease.fencing_token, headers, *put(storage, key, value, headers))


def demo(addr, name, fence_keys=None):
    """Two holders write in turn, then the first one's late write must be refused (409); with
    `fence_keys` the storage requires fences the server signed for `name`, and a forger's write (the
    largest token, without a signed fence) must be refused too (403)."""
    server = make_server("127.0.0.1:0", fence_keys=fence_keys, lock=name if fence_keys else None)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    storage = f"127.0.0.1:{server.server_port}"
    try:
        first_token, first_fence, status, _ = write_holding(addr, storage, name, "report", "from the first holder")
        print(f"first holder (fencing token {first_token}) wrote: {status}")
        second_token, _, status, _ = write_holding(addr, storage, name, "report", "from the second holder")
        print(f"second holder (fencing token {second_token}) wrote: {status}")
        status, body = put(storage, "report", "late write from the first holder", first_fence)
        print(f"the first holder's late write, with token {first_token}: {status} {body}")
        if not fence_keys:
            return status == 409
        largest = 2**64 - 1  # a token newer than any holder's, as a forger would send
        forged_status, body = put(storage, "report", "a forger's write", fencing.http_headers(name, largest))
        print(f"a forger's write, with token {largest} and no signed fence: {forged_status} {body}")
        return status == 409 and forged_status == 403
    finally:
        server.shutdown()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the storage service")
    serve.add_argument("--listen", default="127.0.0.1:8080", help="host:port to serve HTTP on")
    serve.add_argument("--redis-url", help="keep the fences in this Redis (default: in memory, like the items)")
    serve.add_argument("--allow-lossy-redis", action="store_true", help="accept a Redis that can lose acknowledged writes")
    serve.add_argument("--unguarded", action="store_true", help="no fencing guard (to compare; loses updates)")
    serve.add_argument("--fence-keys", help="require fences signed by these keys: a JWK set's URL (the server's "
                                            "/fence-keys) or file")
    serve.add_argument("--lock", help="the lock protecting the items (required with --fence-keys)")
    for name in ("write", "demo"):
        holder = commands.add_parser(name, help="hold a lock and write" if name == "write" else "two holders and a late write")
        holder.add_argument("--addr", default="127.0.0.1:50051", help="holdfast server host:port")
        holder.add_argument("name", help="the lock's name")
    commands.choices["demo"].add_argument("--fence-keys", help="the storage requires fences signed by these keys (a JWK "
                                                               "set's URL or file) for the lock, and a forger is refused")
    write = commands.choices["write"]
    write.add_argument("--storage", default="127.0.0.1:8080", help="the storage service's host:port")
    write.add_argument("--wait-ms", type=int, default=10_000, help="how long to wait for the lock")
    write.add_argument("key")
    write.add_argument("value")
    args = parser.parse_args()

    if args.command == "serve":
        if args.fence_keys and not args.lock:
            parser.error("--fence-keys needs --lock: the lock whose fences the storage admits")
        server = make_server(args.listen, args.redis_url, args.allow_lossy_redis, args.unguarded, args.fence_keys, args.lock)
        print(f"storage on 127.0.0.1:{server.server_port}", flush=True)
        server.serve_forever()
    elif args.command == "write":
        token, _, status, body = write_holding(args.addr, args.storage, args.name, args.key, args.value, args.wait_ms)
        print(f"wrote with fencing token {token}: {status} {body}")
        sys.exit(0 if status < 300 else 1)
    else:
        sys.exit(0 if demo(args.addr, args.name, args.fence_keys) else "fenced_storage: a write was not refused")


if __name__ == "__main__":
    main()
