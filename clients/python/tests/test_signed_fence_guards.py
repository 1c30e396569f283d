"""The guards with signed fences, through real calls (wsgiref, uvicorn and grpcio servers in this
process) over each store on its real backend (memory, redis-server, PostgreSQL), each store wrapped
to count the checks it is asked:

- a forged token, a fence of another lock, of another namespace, of an unknown key, a truncated or
  altered fence, a fence header twice, unsigned headers that disagree: each refused with the
  status and body of signed-fence.md, and the store saw no request (control: an unsigned guard lets
  the forged token through to the store, which records it);
- Kleppmann's scenario with signed fences: the paused holder's late write refused, no update lost;
- the admitted fence as the handler reads it (current_fence());
- rotation at the guard; the lease-end check on and off; every method guarded;
- the store's backend killed (or frozen) by PID: 503 fence_store_unavailable within the bound.
  (PostgreSQL: the postmaster and its backends, which would otherwise answer for a while.)
"""

import concurrent.futures
import json
import os
import signal
import threading
import time
import unittest
import wsgiref.simple_server

import fence_processes
import fence_signing
import support
from fence_signing import OUTSIDER_SEED, RING_SEED, SECOND_SEED, sign_fence
from test_fencing_guards import Quiet, http_call

import grpc
import redis
from holdfast import fencing
from holdfast.fencing import postgres, wire

RING = fence_signing.ring(RING_SEED, SECOND_SEED)
MAX_TOKEN = "18446744073709551615"
WRITE = "/fencetest.Storage/Write"
# A generous ceiling for a 1 s bound on a busy 2-core machine: the point is that it does not hang.
CEILING_S = 3.0


def now_ms():
    return time.time_ns() // 1_000_000


class CountingStore:
    """A real store, counting the checks it is asked."""

    def __init__(self, store):
        self.store, self.calls = store, 0
        self._lock = threading.Lock()

    def check(self, lock, token):
        with self._lock:
            self.calls += 1
        return self.store.check(lock, token)


def admitted_json():
    return json.dumps(fencing.current_fence()._asdict()).encode()


class Items:
    """A tiny storage: PUT /locks/LOCK stores the body under LOCK; every answer is the admitted fence."""

    def __init__(self):
        self.items = {}

    def wsgi(self, environ, start_response):
        if environ["REQUEST_METHOD"] == "PUT":
            self.items[environ["PATH_INFO"]] = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        start_response("200 OK", [("Content-Type", "application/json")])
        return [admitted_json()]

    async def asgi(self, scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": admitted_json()})


def lock_of_path(path):
    return path.removeprefix("/locks/")


def wsgi_server(app):
    server = wsgiref.simple_server.make_server("127.0.0.1", 0, app, handler_class=Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"127.0.0.1:{server.server_port}"


class UvicornThread:
    """uvicorn serving `app` from a thread of this process (so the test counts its store's calls)."""

    def __init__(self, app):
        import uvicorn

        port = support.free_port()
        self.addr = f"127.0.0.1:{port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        fence_processes.wait_until(lambda: self.server.started or not self.thread.is_alive(), "uvicorn to start")

    def stop(self):
        self.server.should_exit = True
        self.thread.join(timeout=10)


def grpc_server(interceptor):
    server = grpc.server(concurrent.futures.ThreadPoolExecutor(4), interceptors=[interceptor])
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("fencetest.Storage", {
        "Write": grpc.unary_unary_rpc_method_handler(lambda request, context: admitted_json())})])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


def resource_of_call(details):
    return dict(details.invocation_metadata)["x-resource"]


class Transports:
    """One request with fence `pairs` ((field, value): field fence, lock or token) to the resource
    `lock`, over HTTP (WSGI, ASGI) or gRPC; answers (status, error word, message, body)."""

    def http(self, addr, lock, pairs, method="PUT", body="x"):
        headers = [(wire.HTTP_NAMES[field], value) for field, value in pairs]
        status, raw = http_call(addr, method, f"/locks/{lock}", headers)
        parsed = json.loads(raw) if raw else {}
        return status, parsed.get("error"), parsed.get("message"), parsed

    def grpc(self, channel, lock, pairs):
        metadata = [(wire.GRPC_NAMES[field], value) for field, value in pairs] + [("x-resource", lock)]
        try:
            return "OK", None, None, json.loads(channel.unary_unary(WRITE)(b"", metadata=metadata, timeout=10))
        except grpc.RpcError as error:
            return error.code().name, None, error.details(), {}


def triple(fence, lock, token):
    """What a holder sends: the signed fence and the unsigned pair."""
    return [("fence", fence), ("lock", wire.encode_lock(lock)), ("token", str(token))]


class SignedGuardCases(Transports):
    """The cases over one store; a subclass's make_store() gives the real store."""

    @classmethod
    def setUpClass(cls):
        cls.store = CountingStore(cls.make_store())
        cls.items = Items()
        options = {"keys": RING}
        cls.wsgi, cls.wsgi_addr = wsgi_server(fencing.FenceMiddleware(
            cls.items.wsgi, cls.store, lock=lambda environ: lock_of_path(environ["PATH_INFO"]), **options))
        cls.uvicorn = UvicornThread(fencing.AsgiFenceMiddleware(
            cls.items.asgi, cls.store, lock=lambda scope: lock_of_path(scope["path"]), **options))
        cls.grpc_server, grpc_addr = grpc_server(fencing.FenceInterceptor(cls.store, lock=resource_of_call, **options))
        cls.channel = grpc.insecure_channel(grpc_addr)
        # The negative control: the same store behind a guard without keys (unsigned fences, as before).
        cls.unsigned, cls.unsigned_addr = wsgi_server(fencing.FenceMiddleware(
            cls.items.wsgi, cls.store, lock=lambda environ: lock_of_path(environ["PATH_INFO"])))

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.grpc_server.stop(None)
        cls.uvicorn.stop()
        for server in (cls.wsgi, cls.unsigned):
            server.shutdown()
            server.server_close()
        cls.drop_store()

    def send(self, transport, lock, pairs):
        if transport == "grpc":
            return self.grpc(self.channel, lock, pairs)
        return self.http(self.wsgi_addr if transport == "wsgi" else self.uvicorn.addr, lock, pairs)

    def refusals(self, lock):
        """(name, pairs, error, HTTP status, gRPC code) of each request the guard must refuse before its store."""
        end = now_ms() + 60_000
        good = sign_fence(RING_SEED, lock, 7, end)
        body, signature = good.rsplit(":", 1)
        forged = good.replace(f":{lock}:7:", f":{lock}:{MAX_TOKEN}:")
        altered = f"{body}:{signature[:40]}{'A' if signature[40] != 'A' else 'B'}{signature[41:]}"
        other_lock = sign_fence(RING_SEED, lock + "-other", 7, end)
        other_namespace = sign_fence(RING_SEED, lock, 7, end, namespace="team-a")
        outsider = sign_fence(OUTSIDER_SEED, lock, 7, end)
        return [
            ("forged unsigned token", [("lock", lock), ("token", MAX_TOKEN)], "signed_fence_required", 403, "PERMISSION_DENIED"),
            ("forged token in a signed fence", triple(forged, lock, MAX_TOKEN), "bad_fence_signature", 403, "PERMISSION_DENIED"),
            ("fence of another lock", triple(other_lock, lock + "-other", 7), "fence_for_another_lock", 403, "PERMISSION_DENIED"),
            ("fence of another namespace", triple(other_namespace, lock, 7), "fence_for_another_namespace", 403,
             "PERMISSION_DENIED"),
            ("fence of an unknown key", triple(outsider, lock, 7), "unknown_fence_key", 403, "PERMISSION_DENIED"),
            ("truncated fence", triple(good[:-5], lock, 7), "malformed_fence", 400, "INVALID_ARGUMENT"),
            ("altered signature", triple(altered, lock, 7), "bad_fence_signature", 403, "PERMISSION_DENIED"),
            ("fence header twice", [("fence", good), *triple(good, lock, 7)], "malformed_fence", 400, "INVALID_ARGUMENT"),
            ("unsigned token disagrees", triple(good, lock, 8), "malformed_fence", 400, "INVALID_ARGUMENT"),
            ("nothing", [], "missing_fence", 400, "INVALID_ARGUMENT"),
        ]

    def test_every_refusal_comes_before_the_store(self):
        for transport in ("wsgi", "asgi", "grpc"):
            lock = support.random_name("signed")
            for name, pairs, error, status, code in self.refusals(lock):
                with self.subTest(name, transport=transport):
                    before = self.store.calls
                    got_status, got_error, message, _ = self.send(transport, lock, pairs)
                    self.assertEqual((got_status, got_error) if transport != "grpc" else got_status,
                                     (status, error) if transport != "grpc" else code)
                    self.assertTrue(message)
                    self.assertNotIn(MAX_TOKEN, message)  # no fence or forged token echoed
                    self.assertEqual(self.store.calls, before, "the store was asked")
            # The counter counts: a good fence reaches the store once, and is admitted.
            before = self.store.calls
            status, _, _, admitted = self.send(transport, lock, triple(sign_fence(RING_SEED, lock, 7, now_ms() + 60_000),
                                                                           lock, 7))
            self.assertIn(status, (200, "OK"))
            self.assertEqual((admitted["lock"], admitted["token"], admitted["signed"]), (lock, 7, True))
            self.assertEqual(self.store.calls, before + 1)

    def test_negative_control_an_unsigned_guard_lets_the_forger_reach_the_store(self):
        lock = support.random_name("signed")
        before = self.store.calls
        status, _, _, admitted = self.http(self.unsigned_addr, lock, [("lock", lock), ("token", MAX_TOKEN)])
        self.assertEqual((status, admitted["token"]), (200, int(MAX_TOKEN)))
        self.assertEqual(self.store.calls, before + 1)
        # ... and from then on the real holder is refused: the attack signed fences stop.
        real = sign_fence(RING_SEED, lock, 7, now_ms() + 60_000)
        self.assertEqual(self.http(self.wsgi_addr, lock, triple(real, lock, 7))[:2], (409, "stale_fencing_token"))

    def test_kleppmann_with_signed_fences_the_paused_holder_is_refused_and_no_update_is_lost(self):
        lock = support.random_name("kleppmann")
        end = now_ms() + 60_000
        holder_a, holder_b = triple(sign_fence(RING_SEED, lock, 5, end), lock, 5), triple(sign_fence(RING_SEED, lock, 6, end), lock, 6)
        path = f"/locks/{lock}"
        put = lambda pairs, body: http_call(self.wsgi_addr, "PUT", path, [(wire.HTTP_NAMES[f], v) for f, v in pairs])  # noqa: E731
        self.assertEqual(put(holder_a, "a-1")[0], 200)
        self.assertEqual(put(holder_b, "b-1")[0], 200)  # A is paused meanwhile; B holds the lock now
        written = self.items.items[path]
        status, body = put(holder_a, "a-2")  # A resumes and writes without looking at its lease
        self.assertEqual((status, json.loads(body)["error"]), (409, "stale_fencing_token"))
        self.assertEqual(json.loads(body)["message"], f'stale fencing token for lock "{lock}": 5 is older than 6, the newest seen')
        self.assertEqual(self.items.items[path], written)  # no update lost
        self.assertEqual(put(holder_b, "b-2")[0], 200)  # and the current holder is never refused

    def test_the_handler_reads_the_admitted_fence(self):
        lock = support.random_name("signed")
        end = now_ms() + 60_000
        signed = sign_fence(SECOND_SEED, lock, 9, end)
        expected = {"lock": lock, "token": 9, "namespace": "default", "lease_end_ms": end,
                    "key_id": fence_signing.kid(SECOND_SEED), "signed": True}
        for transport in ("wsgi", "asgi", "grpc"):
            with self.subTest(transport):
                self.assertEqual(self.send(transport, lock, [("fence", signed)])[3], expected)


class MemorySignedGuardTest(SignedGuardCases, unittest.TestCase):
    @classmethod
    def make_store(cls):
        return fencing.MemoryStore()

    @classmethod
    def drop_store(cls):
        pass


class RedisSignedGuardTest(SignedGuardCases, unittest.TestCase):
    @classmethod
    def make_store(cls):
        cls.redis = fence_processes.RedisServer(*fence_processes.DURABLE).start()
        return fencing.RedisStore.from_url(cls.redis.url)

    @classmethod
    def drop_store(cls):
        cls.redis.stop()


class PostgresSignedGuardTest(SignedGuardCases, unittest.TestCase):
    @classmethod
    def make_store(cls):
        cls.postgres = fence_processes.PostgresServer()
        cls.pg_store = postgres.PostgresStore.from_dsn(cls.postgres.url)
        return cls.pg_store

    @classmethod
    def drop_store(cls):
        cls.pg_store.close()
        cls.postgres.stop()


def admit(guard, pairs, request=None):
    raw = {field: [value for each, value in pairs if each == field] for field in ("fence", "lock", "token")}
    return guard.admit(raw, wire.HTTP_NAMES, request)


class GuardRulesTest(unittest.TestCase):
    def test_rotation_the_old_key_is_accepted_while_in_the_ring_and_refused_after(self):
        store = CountingStore(fencing.MemoryStore())
        lock = support.random_name("rotate")
        old, new = sign_fence(RING_SEED, lock, 3, now_ms() + 60_000), sign_fence(SECOND_SEED, lock, 4, now_ms() + 60_000)
        both = fencing.FenceGuard(store, keys=fence_signing.ring(RING_SEED, SECOND_SEED), lock=lock)
        self.assertEqual(admit(both, [("fence", old)]).key_id, fence_signing.kid(RING_SEED))
        rotated = fencing.FenceGuard(store, keys=fence_signing.ring(SECOND_SEED), lock=lock)
        calls = store.calls
        with self.assertRaises(fencing.UnknownFenceKey) as raised:
            admit(rotated, [("fence", old)])
        self.assertEqual(raised.exception.http_body()["key_id"], fence_signing.kid(RING_SEED))
        self.assertEqual(store.calls, calls)
        self.assertEqual(admit(rotated, [("fence", new)]).token, 4)

    def test_lease_end_check_refuses_an_ended_lease_with_no_newer_writer_and_is_off_by_default(self):
        store = CountingStore(fencing.MemoryStore())
        lock = support.random_name("lease")
        ended = sign_fence(RING_SEED, lock, 3, now_ms() - 10_000)
        checking = fencing.FenceGuard(store, keys=RING, lock=lock, lease_end_skew_ms=1000)
        with self.assertRaises(fencing.FenceLeaseEnded) as raised:
            admit(checking, [("fence", ended)])
        body = raised.exception.http_body()
        self.assertEqual((raised.exception.status, body["error"], body["skew_ms"], body["token"]),
                         (409, "fence_lease_ended", "1000", "3"))
        self.assertEqual(store.calls, 0)  # refused before the store, and nobody newer wrote
        self.assertEqual(admit(checking, [("fence", sign_fence(RING_SEED, lock, 3, now_ms() + 60_000))]).token, 3)
        self.assertEqual(admit(checking, [("fence", sign_fence(RING_SEED, lock, 3))]).lease_end_ms, None)  # no end stated
        # Negative control: the same ended fence through a guard without the allowance is admitted.
        self.assertEqual(admit(fencing.FenceGuard(store, keys=RING, lock=lock), [("fence", ended)]).token, 3)

    def test_options_are_checked(self):
        store = fencing.MemoryStore()
        for options, words in (({"keys": RING}, "needs lock="), ({"lease_end_skew_ms": 5}, "needs keys"),
                               ({"keys": RING, "lock": "x", "lease_end_skew_ms": -1}, "lease_end_skew_ms"),
                               ({"namespace": ""}, "namespace"), ({"keys": "not a ring", "lock": "x"}, "KeyRing")):
            with self.subTest(options=options), self.assertRaises((ValueError, TypeError)) as raised:
                fencing.FenceGuard(store, **options)
            self.assertIn(words, str(raised.exception))

    def test_accept_unsigned_admits_the_unsigned_pair_and_still_binds_the_lock(self):
        guard = fencing.FenceGuard(fencing.MemoryStore(), keys=RING, lock="orders", accept_unsigned=True)
        self.assertEqual(admit(guard, [("lock", "orders"), ("token", "4")]), fencing.Fence("orders", 4))
        with self.assertRaises(fencing.FenceForAnotherLock):
            admit(guard, [("lock", "payments"), ("token", "5")])


class KeyRingSourcesTest(unittest.TestCase):
    def test_from_file_and_from_url_fetched_once(self):
        import http.server

        text = fence_signing.jwks(RING_SEED, SECOND_SEED)
        path = support.CLIENT_ROOT / "tests" / ".fence-keys-test.json"
        self.addCleanup(lambda: path.unlink(missing_ok=True))
        path.write_text(text)
        self.assertEqual(fencing.KeyRing.from_file(str(path)).key_ids, RING.key_ids)
        served = []

        class Keys(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                served.append(self.path)
                status = 200 if self.path == "/fence-keys" else 404
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(text.encode() if status == 200 else b"{}")

            def log_message(self, *args):
                pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Keys)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        base = f"http://127.0.0.1:{server.server_port}"
        ring = fencing.KeyRing.from_url(f"{base}/fence-keys")
        self.assertEqual(ring.key_ids, RING.key_ids)
        lock = support.random_name("ring")
        admit(fencing.FenceGuard(fencing.MemoryStore(), keys=ring, lock=lock), [("fence", sign_fence(RING_SEED, lock, 1))])
        self.assertEqual(served, ["/fence-keys"])  # fetched once, when the ring was built
        with self.assertRaises(fencing.BadKeyRing) as raised:
            fencing.KeyRing.from_url(f"{base}/missing")
        self.assertIn(f"{base}/missing", str(raised.exception))
        self.assertIn("HTTP 404", str(raised.exception))
        with self.assertRaises(fencing.BadKeyRing) as raised:
            fencing.KeyRing.from_url(f"http://127.0.0.1:{support.free_port()}/fence-keys", timeout=5)
        self.assertIn("cannot fetch it", str(raised.exception))
        with self.assertRaises(fencing.BadKeyRing):
            fencing.KeyRing.from_jwks('{"keys": []}')


class StoreDownTest(Transports, unittest.TestCase):
    """The store's backend killed (or frozen) by PID: the guard answers 503 within the bound."""

    def guarded(self, store):
        server, addr = wsgi_server(fencing.FenceMiddleware(Items().wsgi, store, keys=RING,
                                                           lock=lambda environ: lock_of_path(environ["PATH_INFO"])))
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        return addr

    def write(self, addr, lock, token):
        """(status, error, message, elapsed seconds) of one signed write."""
        started = time.monotonic()
        status, error, message, _ = self.http(addr, lock, triple(sign_fence(RING_SEED, lock, token, now_ms() + 60_000), lock, token))
        return status, error, message, time.monotonic() - started

    def assert_unavailable_in_time(self, addr, lock, words):
        status, error, message, elapsed = self.write(addr, lock, 2)
        self.assertEqual((status, error), (503, "fence_store_unavailable"))
        self.assertIn(f'fence store unavailable for lock "{lock}": {words}', message)
        self.assertLess(elapsed, CEILING_S)

    def test_redis_killed(self):
        server = fence_processes.RedisServer(*fence_processes.DURABLE).start()
        self.addCleanup(server.stop)
        addr, lock = self.guarded(fencing.RedisStore.from_url(server.url)), support.random_name("down")
        self.assertEqual(self.write(addr, lock, 1)[0], 200)
        server.kill()  # SIGKILL by PID
        self.assert_unavailable_in_time(addr, lock, f"Redis at 127.0.0.1:{server.port} cannot be reached")

    def test_redis_frozen_with_a_client_without_timeouts_the_store_bounds_the_wait(self):
        server = fence_processes.RedisServer(*fence_processes.DURABLE).start()
        self.addCleanup(server.stop)
        client = redis.Redis.from_url(server.url)  # the user's own client: no socket timeout at all
        addr, lock = self.guarded(fencing.RedisStore(client, timeout=1.0)), support.random_name("down")
        self.assertEqual(self.write(addr, lock, 1)[0], 200)
        os.kill(server.proc.pid, signal.SIGSTOP)
        self.addCleanup(os.kill, server.proc.pid, signal.SIGCONT)
        self.assert_unavailable_in_time(addr, lock, f"Redis at 127.0.0.1:{server.port} did not answer within 1 s")
        # Negative control: the same client asked directly is still waiting after the ceiling.
        direct = threading.Thread(target=lambda: client.ping(), daemon=True)
        direct.start()
        direct.join(CEILING_S)
        self.assertTrue(direct.is_alive())
        os.kill(server.proc.pid, signal.SIGCONT)
        direct.join(10)

    def test_postgres_killed(self):
        server = fence_processes.PostgresServer()
        self.addCleanup(server.stop)
        store = postgres.PostgresStore.from_dsn(server.url)
        self.addCleanup(store.close)
        addr, lock = self.guarded(store), support.random_name("down")
        self.assertEqual(self.write(addr, lock, 1)[0], 200)
        server.kill()  # the postmaster and its backends, by PID
        self.assert_unavailable_in_time(addr, lock, "PostgreSQL at 127.0.0.1:")

    def test_timeout_option_is_checked(self):
        with self.assertRaises(ValueError) as raised:
            fencing.RedisStore.from_url("redis://127.0.0.1:1", timeout=0)
        self.assertIn("timeout", str(raised.exception))


if __name__ == "__main__":
    unittest.main()
