"""Errors that say what is wrong: a call to a wrong address raises holdfast.HoldfastError, one line
naming the address and the cause, never gRPC's own exception, against real listeners: a holdfast
server, one with TLS and its HTTP listener (--http-listen), and a closed port."""

import asyncio
import tempfile
import unittest

import support

import grpc
import holdfast
import holdfast.aio


class AddressErrorTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.pem = staticmethod(support.make_certs(cls.dir.name))
        cls.http_addr = f"127.0.0.1:{support.free_port()}"
        file = lambda name: f"{cls.dir.name}/{name}"  # noqa: E731
        ready = grpc.ssl_channel_credentials(cls.pem("ca.crt"), cls.pem("client.key"), cls.pem("client.crt"))
        cls.tls = support.Processes(["--tls-cert", file("server.crt"), "--tls-key", file("server.key"),
                                     "--http-listen", cls.http_addr], ready_credentials=ready).start()
        cls.addr, _, cls.processes = support.shared_server()

    @classmethod
    def tearDownClass(cls):
        cls.tls.stop()
        if cls.processes:
            cls.processes.stop()
        cls.dir.cleanup()

    def refused(self, call, addr, *words):
        """Runs call(); it must raise HoldfastError, one line with `addr` and every one of `words`."""
        with self.assertRaises(holdfast.HoldfastError) as raised:
            call()
        message = str(raised.exception)
        self.assertNotIn("\n", message)
        self.assertIn(addr, message)
        for word in words:
            self.assertIn(word, message)
        self.assertIsInstance(raised.exception, grpc.RpcError)  # code written against grpc.RpcError still catches it
        return raised.exception

    def inspect(self, channel):
        with channel:
            return holdfast.inspect(channel, support.random_name(), timeout=10)

    def test_an_address_without_a_port(self):
        self.refused(lambda: holdfast.channel("127.0.0.1"), "127.0.0.1", "has no port")
        self.refused(lambda: self.inspect(grpc.insecure_channel("127.0.0.1")), "127.0.0.1", "has no port")

    def test_an_address_with_a_scheme(self):
        url = f"http://{self.addr}"
        self.refused(lambda: holdfast.channel(url), url, "URL scheme", f"e.g. {self.addr}")
        self.refused(lambda: holdfast.aio_channel(url), url, "URL scheme")
        self.refused(lambda: self.inspect(grpc.insecure_channel(url)), url, "URL scheme")

    def test_the_servers_http_listener(self):
        self.refused(lambda: self.inspect(holdfast.channel(self.http_addr)), self.http_addr,
                     "HTTP/1, not gRPC", "--http-listen", "--listen port")

    def test_connection_refused(self):
        closed = f"127.0.0.1:{support.free_port()}"
        error = self.refused(lambda: self.inspect(holdfast.channel(closed)), closed, "UNAVAILABLE", "connection refused")
        self.assertEqual(error.code(), grpc.StatusCode.UNAVAILABLE)

        def hold():
            with holdfast.channel(closed) as channel, holdfast.lock(channel, support.random_name(), wait_ms=1000):
                pass
        self.refused(hold, closed, "connection refused")

        async def hold_async():
            async with holdfast.aio_channel(closed) as channel:
                await holdfast.aio.inspect(channel, "x", timeout=10)
        self.refused(lambda: asyncio.run(hold_async()), closed, "connection refused")

    def test_tls_mismatch_either_way(self):
        self.refused(lambda: self.inspect(holdfast.channel(self.tls.addr)), self.tls.addr, "TLS mismatch")
        self.refused(lambda: self.inspect(holdfast.channel(self.addr, ca=self.pem("ca.crt"))), self.addr, "TLS mismatch")

    def test_negative_control_the_same_calls_succeed_at_the_right_address(self):
        self.assertEqual(len(self.inspect(holdfast.channel(self.addr)).holders), 0)
        tls = holdfast.channel(self.tls.addr, ca=self.pem("ca.crt"), server_name="localhost")
        self.assertEqual(len(self.inspect(tls).holders), 0)


if __name__ == "__main__":
    unittest.main()
