"""The guards through real calls: a grpcio server with FenceInterceptor, a wsgiref server with
FenceMiddleware and uvicorn with AsgiFenceMiddleware refuse a stale token and a bad fence and
let the newest through; and leases from a real holdfast server attach their fence in one call."""

import concurrent.futures
import http.client
import json
import subprocess
import sys
import threading
import unittest
import wsgiref.simple_server

import support
import fence_processes

import grpc
import holdfast
from holdfast import fencing

WRITE = "/fencetest.Storage/Write"
FOLLOW = "/fencetest.Storage/Follow"


def admitted(request, context):
    fence = fencing.current_fence()
    return f"{fence.lock} {fence.token}".encode()


def grpc_server(store):
    server = grpc.server(concurrent.futures.ThreadPoolExecutor(4), interceptors=[fencing.FenceInterceptor(store)])
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("fencetest.Storage", {
        "Write": grpc.unary_unary_rpc_method_handler(admitted),
        "Follow": grpc.unary_stream_rpc_method_handler(lambda request, context: iter([admitted(request, context)] * 2)),
    })])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


class GrpcGuardTest(unittest.TestCase):
    def setUp(self):
        server, addr = grpc_server(fencing.MemoryStore())
        self.addCleanup(server.stop, None)
        self.channel = grpc.insecure_channel(addr)
        self.addCleanup(self.channel.close)

    def write(self, metadata):
        return self.channel.unary_unary(WRITE)(b"", metadata=metadata, timeout=10)

    def test_refuses_a_stale_token_and_lets_the_newest_and_the_same_through(self):
        lock = support.random_name("fence")
        self.assertEqual(self.write(fencing.grpc_metadata(lock, 6)), f"{lock} 6".encode())
        with self.assertRaises(grpc.RpcError) as raised:
            self.write(fencing.grpc_metadata(lock, 5))
        self.assertEqual(raised.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
        self.assertEqual(raised.exception.details(), f'stale fencing token for lock "{lock}": 5 is older than 6, the newest seen')
        self.assertEqual(self.write(fencing.grpc_metadata(lock, 6)), f"{lock} 6".encode())
        self.assertEqual(self.write(fencing.grpc_metadata(lock, 7)), f"{lock} 7".encode())

    def test_streaming_methods_are_guarded_too(self):
        lock = support.random_name("fence")
        follow = self.channel.unary_stream(FOLLOW)
        self.assertEqual(list(follow(b"", metadata=fencing.grpc_metadata(lock, 3), timeout=10)), [f"{lock} 3".encode()] * 2)
        with self.assertRaises(grpc.RpcError) as raised:
            list(follow(b"", metadata=fencing.grpc_metadata(lock, 2), timeout=10))
        self.assertEqual(raised.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)

    def test_a_missing_or_malformed_fence_is_invalid_argument_naming_the_key(self):
        for metadata, key in (([], "holdfast-fence-token"), ([("holdfast-fence-token", "1")], "holdfast-fence-lock"),
                              ([("holdfast-fence-lock", "a"), ("holdfast-fence-token", "01")], "holdfast-fence-token")):
            with self.subTest(metadata=metadata), self.assertRaises(grpc.RpcError) as raised:
                self.write(metadata)
            self.assertEqual(raised.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn(key, raised.exception.details())


    def test_a_fence_key_sent_twice_is_invalid_argument_and_records_nothing(self):
        lock = support.random_name("fence")
        with self.assertRaises(grpc.RpcError) as raised:
            self.write([("holdfast-fence-lock", lock), ("holdfast-fence-token", "6"), ("holdfast-fence-token", "5")])
        self.assertEqual(raised.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("holdfast-fence-token must be sent once", raised.exception.details())
        self.assertEqual(self.write(fencing.grpc_metadata(lock, 5)), f"{lock} 5".encode())  # 6 was never recorded

def http_call(addr, method, path, headers):
    """(status, body) of one request; `headers` is a dict, or (name, value) pairs to send a header twice."""
    host, port = addr.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.putrequest(method, path)
        for name, value in [*(headers.items() if isinstance(headers, dict) else headers), ("Content-Length", "1")]:
            connection.putheader(name, value)
        connection.endheaders(b"x")
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


class HttpGuardCases:
    """The same refusals through a real HTTP server (a subclass sets `addr`)."""

    def test_refuses_a_stale_token_409_and_lets_the_newest_through(self):
        lock = support.random_name("fence/é")
        self.assertEqual(http_call(self.addr, "PUT", "/items/a", fencing.http_headers(lock, 10)), (200, f"{lock} 10".encode()))
        status, body = http_call(self.addr, "PUT", "/items/a", fencing.http_headers(lock, 9))
        self.assertEqual((status, json.loads(body)),
                         (409, {"error": "stale_fencing_token", "lock": lock, "token": "9", "newest": "10",
                                "message": f'stale fencing token for lock "{lock}": 9 is older than 10, the newest seen'}))
        self.assertEqual(http_call(self.addr, "POST", "/items/a", fencing.http_headers(lock, 10))[0], 200)
        self.assertEqual(http_call(self.addr, "DELETE", "/items/a", fencing.http_headers(lock, 11))[0], 200)

    def test_a_bad_fence_is_400_naming_the_header(self):
        for headers, kind, header in (({}, "missing_fence", "Holdfast-Fence-Token"),
                                      ({"Holdfast-Fence-Token": "3"}, "missing_fence", "Holdfast-Fence-Lock"),
                                      ({"Holdfast-Fence-Lock": "a%zz", "Holdfast-Fence-Token": "3"}, "malformed_fence",
                                       "Holdfast-Fence-Lock")):
            with self.subTest(headers=headers):
                status, body = http_call(self.addr, "PUT", "/items/a", headers)
                self.assertEqual(status, 400)
                self.assertEqual((json.loads(body)["error"], json.loads(body)["header"]), (kind, header))

    def test_a_token_header_sent_twice_is_400_and_records_nothing(self):
        lock = support.random_name("fence")
        status, body = http_call(self.addr, "PUT", "/items/a", [("Holdfast-Fence-Lock", lock),
                                                                ("Holdfast-Fence-Token", "6"), ("Holdfast-Fence-Token", "5")])
        self.assertEqual((status, json.loads(body)["error"], json.loads(body)["header"]),
                         (400, "malformed_fence", "Holdfast-Fence-Token"))
        self.assertEqual(http_call(self.addr, "PUT", "/items/a", fencing.http_headers(lock, 5))[0], 200)

    def test_every_method_is_guarded_by_default(self):
        for method in ("GET", "HEAD", "OPTIONS", "PUT"):
            with self.subTest(method):
                status, body = http_call(self.addr, method, "/items/a", {})
                self.assertEqual(status, 400)
                if method != "HEAD":
                    self.assertEqual(json.loads(body), {"error": "missing_fence", "field": "token",
                                                        "header": "Holdfast-Fence-Token",
                                                        "message": "missing fence: header Holdfast-Fence-Token is required"})

    def test_the_writes_rule_leaves_reads_unguarded(self):
        # The apps serve /open/... behind a second guard given guards=fencing.writes.
        self.assertEqual(http_call(self.addr, "GET", "/open/items/a", {}), (200, b"unguarded"))
        self.assertEqual(http_call(self.addr, "PUT", "/open/items/a", {})[0], 400)


def wsgi_storage(environ, start_response):
    fence = environ.get("holdfast.fence")
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [f"{fence.lock} {fence.token}".encode() if fence else b"unguarded"]


class Quiet(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


def wsgi_router(guarded, open_reads):
    """/open/... to `open_reads` (the writes rule), the rest to `guarded`."""
    return lambda environ, start_response: (
        open_reads if environ["PATH_INFO"].startswith("/open/") else guarded)(environ, start_response)


class WsgiGuardTest(HttpGuardCases, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        app = wsgi_router(fencing.FenceMiddleware(wsgi_storage, fencing.MemoryStore()),
                          fencing.FenceMiddleware(wsgi_storage, fencing.MemoryStore(), guards=fencing.writes))
        cls.server = wsgiref.simple_server.make_server("127.0.0.1", 0, app, handler_class=Quiet)
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()
        cls.addr = f"127.0.0.1:{cls.server.server_port}"

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()


class AsgiGuardTest(HttpGuardCases, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        port = support.free_port()
        cls.uvicorn = subprocess.Popen([sys.executable, "-m", "uvicorn", "--app-dir", str(support.CLIENT_ROOT / "tests"),
                                        "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
                                        "asgi_fence_app:app"])
        cls.addr = f"127.0.0.1:{port}"

        def answers():
            if cls.uvicorn.poll() is not None:
                raise RuntimeError(f"uvicorn exited with {cls.uvicorn.returncode}")
            try:
                return http_call(cls.addr, "GET", "/", {})[0] == 400  # guarded: no fence
            except OSError:
                return False
        fence_processes.wait_until(answers, "uvicorn to answer")

    @classmethod
    def tearDownClass(cls):
        cls.uvicorn.kill()
        cls.uvicorn.wait(timeout=10)


class LeaseFenceTest(support.ServerTestCase):
    """Two holders of one lock from a real holdfast server: the second's fence wins, the first's is refused."""

    def test_lease_fence_attaches_the_grants_token(self):
        server, addr = grpc_server(fencing.MemoryStore())
        self.addCleanup(server.stop, None)
        guarded = grpc.insecure_channel(addr)
        self.addCleanup(guarded.close)
        name = support.random_name("fence")
        with holdfast.lock(self.channel, name, ttl_ms=5000, wait_ms=5000) as first:
            pass
        with holdfast.lock(self.channel, name, ttl_ms=5000, wait_ms=5000) as second:
            headers = second.fence({"X-Other": "kept"})
            self.assertEqual(headers, {"X-Other": "kept", "Holdfast-Fence-Lock": name,
                                       "Holdfast-Fence-Token": str(second.fencing_token)})
            write = guarded.unary_unary(WRITE)
            self.assertEqual(write(b"", metadata=second.fence_metadata([("x-other", "kept")]), timeout=10),
                             f"{name} {second.fencing_token}".encode())
            with self.assertRaises(grpc.RpcError) as raised:
                write(b"", metadata=first.fence_metadata(), timeout=10)
            self.assertEqual(raised.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
        self.assertGreater(second.fencing_token, first.fencing_token)


if __name__ == "__main__":
    unittest.main()
