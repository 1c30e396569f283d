"""clients/conformance/fencing.json: the wire encoding, parsing, and every store's decisions;
the shipped fence-record-1.lua is the conformance copy byte for byte."""

import importlib.resources
import json
import unittest

import support
import fence_processes

from holdfast import fencing
from holdfast.fencing import postgres

CASES = json.loads((support.REPO_ROOT / "clients" / "conformance" / "fencing.json").read_text(encoding="utf-8"))


class WireTest(unittest.TestCase):
    def test_attach(self):
        for case in CASES["attach"]:
            with self.subTest(case["name"]):
                headers = fencing.http_headers(case["lock"], int(case["token"]))
                self.assertEqual(headers, {"Holdfast-Fence-Lock": case["headers"]["lock"],
                                           "Holdfast-Fence-Token": case["headers"]["token"]})
                self.assertEqual(fencing.grpc_metadata(case["lock"], int(case["token"])),
                                 [("holdfast-fence-lock", case["headers"]["lock"]),
                                  ("holdfast-fence-token", case["headers"]["token"])])

    def test_parse(self):
        for case in CASES["parse"]:
            raw = case["headers"]
            for transport in ("http", "grpc"):
                with self.subTest(case["name"], transport=transport):
                    if transport == "http":
                        environ = {f"HTTP_HOLDFAST_FENCE_{field.upper()}": value for field, value in raw.items()}
                        parse = lambda: fencing.parse_wsgi(environ)  # noqa: E731
                        names = {"lock": "Holdfast-Fence-Lock", "token": "Holdfast-Fence-Token"}
                    else:
                        metadata = [(f"holdfast-fence-{field}", value) for field, value in raw.items()]
                        parse = lambda: fencing.parse_grpc(metadata)  # noqa: E731
                        names = {"lock": "holdfast-fence-lock", "token": "holdfast-fence-token"}
                    if "expect" in case:
                        self.assertEqual(parse(), fencing.Fence(case["expect"]["lock"], int(case["expect"]["token"])))
                        continue
                    with self.assertRaises(fencing.BadFence) as raised:
                        parse()
                    self.assertEqual((raised.exception.kind, raised.exception.field), (case["error"], case["field"]))
                    self.assertEqual(raised.exception.header, names[case["field"]])
                    self.assertIn(names[case["field"]], str(raised.exception))

    def test_asgi_headers_parse_alike(self):
        headers = [(b"holdfast-fence-lock", b"tenant%2Fa%20b%2F%C3%A9"), (b"holdfast-fence-token", b"3")]
        self.assertEqual(fencing.parse_asgi(headers), fencing.Fence("tenant/a b/é", 3))

    def test_a_fence_sent_twice_is_malformed(self):
        # docs/fencing.md: a header (or metadata key) sent twice is malformed, even where the first
        # value alone would pass: a guard must not pick one of two fences.
        cases = {"token": [("lock", "dup"), ("token", "6"), ("token", "5")],
                 "lock": [("lock", "a"), ("token", "6"), ("lock", "b")]}
        transports = {
            "grpc": (fencing.parse_grpc, lambda field, value: (f"holdfast-fence-{field}", value), "holdfast-fence-{}"),
            "asgi": (fencing.parse_asgi, lambda field, value: (f"holdfast-fence-{field}".encode(), value.encode()),
                     "Holdfast-Fence-{}"),
        }
        for field, pairs in cases.items():
            for transport, (parse, pair, header) in transports.items():
                with self.subTest(field, transport=transport):
                    with self.assertRaises(fencing.BadFence) as raised:
                        parse([pair(*each) for each in pairs])
                    self.assertEqual((raised.exception.kind, raised.exception.field, raised.exception.header),
                                     ("malformed", field, header.format(field if transport == "grpc" else field.title())))
                    self.assertIn("must be sent once", str(raised.exception))
                    # Negative control: the same request without its last (repeated) value parses.
                    self.assertEqual(parse([pair(*each) for each in pairs[:-1]]).token, 6)

    def test_refusal_message(self):
        stale = fencing.StaleToken("orders", 5, 6)
        expected = CASES["refusal"]["message"].format(lock="orders", token=5, newest=6)
        self.assertEqual(str(stale), expected)
        # fencing.json's body, and the message every refusal body has (signed-fence.md's table).
        self.assertEqual(stale.http_body(), {"error": "stale_fencing_token", "lock": "orders", "token": "5", "newest": "6",
                                             "message": expected})

    def test_shipped_script_is_the_conformance_copy(self):
        shipped = importlib.resources.files("holdfast.fencing").joinpath("fence-record-1.lua").read_bytes()
        self.assertEqual(shipped, (support.REPO_ROOT / "clients" / "conformance" / "fence-record-1.lua").read_bytes())


class DecideCases:
    """The `decide` cases against one store (a subclass makes `store`)."""

    def test_decide(self):
        for case in CASES["decide"]:
            with self.subTest(case["name"]):
                lock = support.random_name("fence")
                if case["newest"] is not None:
                    self.assertTrue(self.store.check(lock, int(case["newest"])).accepted)
                decision = self.store.check(lock, int(case["token"]))
                self.assertEqual(decision, fencing.Decision(case["accepted"], int(case["newestAfter"])))
                self.assertEqual(self.store.check(lock, 0).newest, int(case["newestAfter"]))  # what was recorded


class MemoryDecideTest(DecideCases, unittest.TestCase):
    def setUp(self):
        self.store = fencing.MemoryStore()


class RedisDecideTest(DecideCases, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.redis = fence_processes.RedisServer(*fence_processes.DURABLE).start()
        cls.store = fencing.RedisStore.from_url(cls.redis.url)

    @classmethod
    def tearDownClass(cls):
        cls.redis.stop()


class PostgresDecideTest(DecideCases, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.postgres = fence_processes.PostgresServer()
        cls.store = postgres.PostgresStore(fence_processes.pg_connect(cls.postgres.url))

    @classmethod
    def tearDownClass(cls):
        cls.store.close()
        cls.postgres.stop()


if __name__ == "__main__":
    unittest.main()
