"""Leader election with the Python client on a real server: observers follow the leader, a
resigned leader is replaced at once, a SIGKILLed one within its ttl plus a margin, and fencing
tokens rise with each new leader."""

import os
import queue
import signal
import subprocess
import sys
import threading
import time
import unittest

import support

import holdfast

TTL_MS = 1500
MARGIN_S = 3.0
# A candidate in its own process, so that it can be SIGKILLed: prints its fencing token once elected.
CANDIDATE = """
import sys, time, grpc
import holdfast
leader = holdfast.campaign(grpc.insecure_channel(sys.argv[1]), sys.argv[2], sys.argv[3], ttl_ms=int(sys.argv[4]))
print(leader.fencing_token, flush=True)
time.sleep(3600)
"""


class ElectionTest(support.ServerTestCase):
    def observing(self, name):
        """Observes `name` in a thread; returns (observer, queue of leaders)."""
        leaders = queue.Queue()
        observer = holdfast.observe(self.channel, name)

        def run():
            for leader in observer:
                leaders.put(leader)

        threading.Thread(target=run, daemon=True).start()
        self.addCleanup(observer.cancel)
        return leaders

    def next_leader(self, leaders, timeout):
        deadline = time.monotonic() + timeout
        while True:
            leader = leaders.get(timeout=max(0.0, deadline - time.monotonic()))
            if leader is not None:
                return leader

    def test_resign_hands_over_at_once_and_tokens_rise(self):
        name = support.random_name("py-elect")
        leaders = self.observing(name)
        self.assertIsNone(leaders.get(timeout=10))
        first = holdfast.campaign(self.channel, name, "first:1", ttl_ms=TTL_MS)
        seen = self.next_leader(leaders, 5)
        self.assertEqual((seen.value, seen.fencing_token), ("first:1", first.fencing_token))
        first.proclaim("first:2")
        self.assertEqual(self.next_leader(leaders, 5).value, "first:2")

        won = queue.Queue()
        threading.Thread(target=lambda: won.put(holdfast.campaign(self.channel, name, "second", ttl_ms=TTL_MS)),
                         daemon=True).start()
        resigned_at = time.monotonic()
        first.resign()
        with won.get(timeout=10) as second:
            self.assertLess(time.monotonic() - resigned_at, TTL_MS / 1000)  # not left to run out
            self.assertGreater(second.fencing_token, first.fencing_token)
            self.assertEqual(self.next_leader(leaders, 5).value, "second")
            self.assertFalse(second.lost.is_set())
        self.assertFalse(first.lost.is_set(), "a resign is not a loss")

    def test_killed_leader_is_replaced_within_its_ttl_plus_a_margin(self):
        name = support.random_name("py-elect")
        leaders = self.observing(name)
        child = subprocess.Popen([sys.executable, "-c", CANDIDATE, self.addr, name, "killed",
                                  str(TTL_MS)], stdout=subprocess.PIPE, text=True)
        self.addCleanup(child.stdout.close)
        self.addCleanup(child.kill)
        killed_token = int(child.stdout.readline())
        self.assertEqual(self.next_leader(leaders, 10).value, "killed")
        won = queue.Queue()
        threading.Thread(target=lambda: won.put(holdfast.campaign(self.channel, name, "next", ttl_ms=TTL_MS)),
                         daemon=True).start()
        killed_at = time.monotonic()
        os.kill(child.pid, signal.SIGKILL)
        with won.get(timeout=TTL_MS / 1000 + MARGIN_S) as leader:
            self.assertEqual(self.next_leader(leaders, MARGIN_S).value, "next")
            self.assertLess(time.monotonic() - killed_at, TTL_MS / 1000 + MARGIN_S)
            self.assertGreater(leader.fencing_token, killed_token)


if __name__ == "__main__":
    unittest.main()
