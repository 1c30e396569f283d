"""Kleppmann's scenario against a real holdfast server that signs fences: holder A passes its lease
check, is frozen (SIGSTOP) past its lease, holder B gets the lock and writes, A resumes and writes.
Through the guarded storage service (examples/fenced_storage.py), unsigned or requiring fences the
server signed for its lock (--fence-keys, --lock), A's write is refused and B's stays; the negative
control, the same service unguarded, loses B's update. A holder of another lock is refused by the
signed storage (403) and never reaches its store."""

import http.client
import os
import signal
import subprocess
import sys
import unittest

import support

EXAMPLE = support.CLIENT_ROOT / "examples" / "fenced_storage.py"
HOLDER = support.CLIENT_ROOT / "tests" / "fence_holder.py"
TTL_MS = 2000


def get(storage, key):
    host, port = storage.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("GET", f"/items/{key}")
        return connection.getresponse().read().decode()
    finally:
        connection.close()


class KleppmannTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Frequent keepalive pings, so the server notices the frozen holder in about 1.5 s (not 15).
        cls.processes = support.Processes(["--keepalive-time-ms", "500", "--keepalive-timeout-ms", "1000"], signed=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.processes.stop()

    def spawn(self, *args, **options):
        proc = subprocess.Popen([sys.executable, *map(str, args)], stdout=subprocess.PIPE, text=True, **options)

        def end():
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.kill()
            proc.wait(timeout=10)
            proc.stdout.close()
            if proc.stdin:
                proc.stdin.close()
        self.addCleanup(end)
        return proc

    def storage(self, *flags):
        proc = self.spawn(EXAMPLE, "serve", "--listen", "127.0.0.1:0", *flags)
        line = proc.stdout.readline()
        self.assertTrue(line.startswith("storage on "), line)
        return line.split()[-1]

    def signed_storage(self, name):
        return self.storage("--fence-keys", self.processes.fence_keys_url, "--lock", name)

    def scenario(self, storage, name=None):
        """Runs A and B; returns (A's write line, B's write line, the item's final value)."""
        name, key = name or support.random_name("kleppmann"), "ledger"
        holder_a = self.spawn(HOLDER, self.processes.addr, storage, name, key, TTL_MS, stdin=subprocess.PIPE)
        self.assertTrue(holder_a.stdout.readline().startswith("holding "))
        os.kill(holder_a.pid, signal.SIGSTOP)  # paused right after its check, before its write
        holder_a.stdin.write("from A, paused\n")
        holder_a.stdin.flush()
        # B waits for the lock: granted only once A's lease has run out on the server.
        holder_b = subprocess.run([sys.executable, str(EXAMPLE), "write", "--addr", self.processes.addr, "--storage",
                                   storage, "--wait-ms", "30000", name, key, "from B"],
                                  capture_output=True, text=True, timeout=60)
        self.assertEqual(holder_b.returncode, 0, holder_b.stderr)
        os.kill(holder_a.pid, signal.SIGCONT)
        written_a = holder_a.stdout.readline().strip()
        self.assertEqual(holder_a.wait(timeout=30), 0)
        return written_a, holder_b.stdout.strip(), get(storage, key)

    def test_the_guard_refuses_the_paused_holder_and_keeps_the_update(self):
        written_a, written_b, final = self.scenario(self.storage())
        self.assertRegex(written_b, r"^wrote with fencing token \d+: 204")  # the current holder is never refused
        self.assertRegex(written_a, r'^wrote 409 \{"error": "stale_fencing_token"')
        self.assertEqual(final, "from B")

    def test_with_signed_fences_the_guard_refuses_the_paused_holder_and_keeps_the_update(self):
        name = support.random_name("kleppmann")
        written_a, written_b, final = self.scenario(self.signed_storage(name), name)
        self.assertRegex(written_b, r"^wrote with fencing token \d+: 204")
        self.assertRegex(written_a, r'^wrote 409 \{"error": "stale_fencing_token"')
        self.assertEqual(final, "from B")

    def test_the_signed_storage_refuses_a_holder_of_another_lock(self):
        name = support.random_name("kleppmann")
        storage = self.signed_storage(name)
        other = subprocess.run([sys.executable, str(EXAMPLE), "write", "--addr", self.processes.addr, "--storage", storage,
                                name + "-other", "ledger", "misdirected"], capture_output=True, text=True, timeout=60)
        self.assertEqual(other.returncode, 1, other.stderr)
        self.assertRegex(other.stdout, r'^wrote with fencing token \d+: 403 \{"error": "fence_for_another_lock"')
        self.assertEqual(get(storage, "ledger"), "no such item\n")

    def test_negative_control_without_the_guard_the_update_is_lost(self):
        written_a, written_b, final = self.scenario(self.storage("--unguarded"))
        self.assertRegex(written_b, r": 204")
        self.assertEqual(written_a, "wrote 204")
        self.assertEqual(final, "from A, paused")


if __name__ == "__main__":
    unittest.main()
