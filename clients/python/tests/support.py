"""Real processes for the tests: a redis-server and a holdfast server on free loopback ports.

HOLDFAST_ADDR (and HOLDFAST_REDIS_URL, for tests that touch Redis) point the tests at a running
server instead; tests that must stop their server always start their own. The tests import the
installed holdfast package (clients/python/dev-venv.sh installs it editable).
"""

import os
import pathlib
import secrets
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import grpc

CLIENT_ROOT = pathlib.Path(__file__).resolve().parents[1]
REPO_ROOT = CLIENT_ROOT.parents[1]

START_TIMEOUT_S = 20.0


def random_name(prefix="py"):
    return f"{prefix}-{secrets.token_hex(8)}"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def redis_command(url, *args):
    """Sends one command over RESP and returns the reply line, or a bulk string's value (DEL, PING, ZSCORE)."""
    host, port = url.removeprefix("redis://").rstrip("/").split(":")
    payload = f"*{len(args)}\r\n".encode() + b"".join(
        f"${len(arg.encode())}\r\n{arg}\r\n".encode() for arg in args)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(payload)
        reply = sock.makefile("rb")
        line = reply.readline().decode().strip()
        if line.startswith("$") and line != "$-1":
            return reply.readline().decode().strip()
        return line


def lock_keys(name, prefix="hf"):
    """The Redis keys of one lock, as src/engine/keys.ts builds them (names without % { })."""
    return [f"{prefix}:{{{name}}}:{suffix}" for suffix in ("h", "q", "d")]


class Processes:
    """A redis-server and a holdfast server (with `server_args` added to serve), each killed by PID on stop().

    signed=True: the server signs fences with a key made for it (holdfast fence-key new, which
    printed its JWK set into `fence_keys_file`) and serves the set at `fence_keys_url` (its HTTP
    listener's /fence-keys)."""

    def __init__(self, server_args=(), ready_credentials=None, signed=False):
        self.redis = None
        self.server = None
        self.addr = None
        self.redis_url = None
        self.fence_keys_url = None
        self.fence_keys_file = None
        self._server_args = list(server_args)
        self._signed = signed
        self._key_dir = None
        # A TLS server is ready when a TLS channel is (an insecure one never would be).
        self._ready_credentials = ready_credentials

    def start(self):
        try:
            self._start_redis()
            self._start_server()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_redis(self):
        port = free_port()
        self.redis = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.redis_url = f"redis://127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:  # redis-server says nothing we could wait on: ask until it answers
            if self.redis.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.redis.returncode}")
            try:
                if redis_command(self.redis_url, "PING") == "+PONG":
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.02)
        # A Redis new to holdfast: its servers grant at once instead of waiting out the quarantine.
        cli = REPO_ROOT / "dist" / "src" / "cli.js"
        subprocess.run(["node", str(cli), "skip-first-quarantine", "--redis", self.redis_url],
                       check=True, stdout=subprocess.DEVNULL, cwd=REPO_ROOT)

    def _signing_args(self, cli):
        """serve's flags to sign fences with a new key, and publish it over HTTP."""
        self._key_dir = tempfile.TemporaryDirectory(prefix="fence-key-")
        key = pathlib.Path(self._key_dir.name) / "fence-key.pem"
        self.fence_keys_file = str(pathlib.Path(self._key_dir.name) / "fence-keys.json")
        with open(self.fence_keys_file, "wb") as jwks:  # `fence-key new` prints the key's public JWK set
            subprocess.run(["node", str(cli), "fence-key", "new", "--out", str(key)], check=True,
                           stdout=jwks, stderr=subprocess.DEVNULL, cwd=REPO_ROOT)
        http = f"127.0.0.1:{free_port()}"
        self.fence_keys_url = f"http://{http}/fence-keys"
        return ["--fence-signing-key", str(key), "--http-listen", http]

    def _start_server(self):
        cli = REPO_ROOT / "dist" / "src" / "cli.js"
        if not cli.exists():
            raise RuntimeError(f"{cli} is missing: build the server first (npx tsc -p .)")
        self.addr = f"127.0.0.1:{free_port()}"
        signing = self._signing_args(cli) if self._signed else []
        self.server = subprocess.Popen(
            ["node", str(cli), "serve", "--listen", self.addr, "--redis", self.redis_url, "--log-level", "warn",
             *signing, *self._server_args],
            cwd=REPO_ROOT)
        creds = self._ready_credentials
        with grpc.secure_channel(self.addr, creds) if creds else grpc.insecure_channel(self.addr) as channel:
            grpc.channel_ready_future(channel).result(timeout=START_TIMEOUT_S)

    def pause(self):
        """Freezes the holdfast server (SIGSTOP): the network goes silent, nothing is released."""
        os.kill(self.server.pid, signal.SIGSTOP)

    def resume(self):
        os.kill(self.server.pid, signal.SIGCONT)

    def stop(self):
        for proc in (self.server, self.redis):
            if proc is None or proc.poll() is not None:
                continue
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
            proc.wait(timeout=10)
        if self._key_dir is not None:
            self._key_dir.cleanup()


def make_certs(directory):
    """Test certificates in `directory`, made by test/support/make-certs.sh (see there): ca, server,
    client (CN=test-client), other-ca and other-client. Returns a function reading one as bytes."""
    subprocess.run(["bash", str(REPO_ROOT / "test" / "support" / "make-certs.sh"), str(directory)], check=True)
    return lambda name: (pathlib.Path(directory) / name).read_bytes()


def signed_server():
    """(addr, fence_keys_url, processes): the signing server clients/test-clients.sh names
    (HOLDFAST_SIGNED_ADDR, HOLDFAST_FENCE_KEYS_URL, HOLDFAST_FENCE_KEYS_FILE), or a new one (stop it after)."""
    addr, url = os.environ.get("HOLDFAST_SIGNED_ADDR"), os.environ.get("HOLDFAST_FENCE_KEYS_URL")
    if addr and url and os.environ.get("HOLDFAST_FENCE_KEYS_FILE"):
        return addr, url, None
    processes = Processes(signed=True).start()
    return processes.addr, processes.fence_keys_url, processes


def shared_server():
    """(addr, redis_url, processes): the server named by HOLDFAST_ADDR, or a new one (stop it after)."""
    addr, redis_url = os.environ.get("HOLDFAST_ADDR"), os.environ.get("HOLDFAST_REDIS_URL")
    if addr and redis_url:
        return addr, redis_url, None
    processes = Processes().start()
    return processes.addr, processes.redis_url, processes


class StallingProxy:
    """A loopback TCP proxy in front of `target` (host:port) that can freeze the network.

    stall() stops forwarding in both directions without closing anything (bytes wait, none are
    lost); resume() delivers them in order and forwards again. One thread per direction per
    connection: a stalled thread holds the chunk it read, and the kernel buffers the rest.
    """

    def __init__(self, target):
        host, port = target.rsplit(":", 1)
        self._target = (host, int(port))
        self._forwarding = threading.Event()
        self._forwarding.set()
        self._sockets = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.addr = f"127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, name="proxy-accept", daemon=True).start()

    def stall(self):
        self._forwarding.clear()

    def resume(self):
        self._forwarding.set()

    def close(self):
        self.resume()
        with self._lock:
            sockets, self._sockets = [self._listener, *self._sockets], []
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in accept or recv
            except OSError:
                pass
            sock.close()

    def _accept(self):
        while True:
            try:
                client, _ = self._listener.accept()
                upstream = socket.create_connection(self._target)
            except OSError:
                return
            with self._lock:
                self._sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), name="proxy-pump", daemon=True).start()

    def _pump(self, source, sink):
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                data = b""
            self._forwarding.wait()
            try:
                if not data:
                    sink.shutdown(socket.SHUT_WR)
                    return
                sink.sendall(data)
            except OSError:
                return


class ServerTestCase(unittest.TestCase):
    """Tests against shared_server(): `addr`, `redis_url` and an open `channel` for the class."""

    @classmethod
    def setUpClass(cls):
        cls.addr, cls.redis_url, cls.processes = shared_server()
        cls.channel = grpc.insecure_channel(cls.addr)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        if cls.processes:
            cls.processes.stop()
