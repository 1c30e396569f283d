"""The fence stores against real servers: atomic under concurrency (with a check-then-set store as
the negative control), Redis refusing a lossy config and keeping the newest token through a
SIGKILL, PostgreSQL keeping it through an immediate stop, and the in-transaction helpers."""

import concurrent.futures
import random
import threading
import unittest

import support
import fence_processes

import redis
from holdfast import fencing
from holdfast.fencing import postgres

LOCKS = 3
TOKENS_PER_LOCK = 150
WORKERS = 12


def hammer(store):
    """Checks shuffled tokens from many threads; returns the violations: an accepted token that the
    recorded newest went below afterwards, a refusal not explained by a newer token, or a final
    newest that is not the largest token."""
    locks = [support.random_name("fence") for _ in range(LOCKS)]
    work = [(lock, token) for lock in locks for token in range(1, TOKENS_PER_LOCK + 1)]
    random.shuffle(work)
    violations = []

    def one(lock, token):
        decision = store.check(lock, token)
        if decision.accepted:
            seen = store.check(lock, 0).newest  # token 0 is never newer: a read of the newest
            if seen < token:
                violations.append(f"{lock}: {token} accepted, then the newest went back to {seen}")
        elif decision.newest <= token:
            violations.append(f"{lock}: {token} refused with newest {decision.newest}")

    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        for future in [pool.submit(one, lock, token) for lock, token in work]:
            future.result()
    for lock in locks:
        final = store.check(lock, 0).newest
        if final != TOKENS_PER_LOCK:
            violations.append(f"{lock}: the newest ended at {final}, not {TOKENS_PER_LOCK}")
    return violations


class CheckThenSet:
    """The negative control: the same rule as two Redis round trips (GET, then SET), not one script.

    Left to the scheduler, two checks of one lock fall between each other's GET and SET only now
    and then, and on a busy machine a whole run can pass without it. Here they always do: each
    check, after its GET, waits for the next check of the same lock to have read too, then the
    larger token writes, the smaller writes over it, and only then does the larger return (so its
    caller's read sees the newest gone back)."""

    MEET_S = 1.0  # a check with no partner by then goes on alone (the last ones of a lock)

    def __init__(self, client):
        self._client = client
        self._mutex = threading.Lock()
        self._open = {}  # lock -> the meeting its first reader waits in

    def check(self, lock, token):
        raw = self._client.get(f"naive:{{{lock}}}")
        decision = fencing.decide(None if raw is None else int(raw), token)
        if token == 0:  # a read of the newest: nothing to write
            return decision
        meeting = self._meet(lock, token)
        larger = token == max(meeting.tokens)
        if not larger:
            meeting.larger_written.wait(self.MEET_S)
        if decision.accepted:
            self._client.set(f"naive:{{{lock}}}", token, px=60_000)
        if larger:
            meeting.larger_written.set()
            if len(meeting.tokens) > 1:
                meeting.smaller_written.wait(self.MEET_S)
        else:
            meeting.smaller_written.set()
        return decision

    def _meet(self, lock, token):
        with self._mutex:
            meeting = self._open.pop(lock, None)
            if meeting is not None:  # the second reader: both have read now
                meeting.tokens.append(token)
                meeting.both_read.set()
                return meeting
            meeting = self._open[lock] = _Meeting(token)
        if not meeting.both_read.wait(self.MEET_S):
            with self._mutex:
                if self._open.get(lock) is meeting:
                    del self._open[lock]
        return meeting


class _Meeting:
    def __init__(self, token):
        self.tokens = [token]
        self.both_read = threading.Event()
        self.larger_written = threading.Event()
        self.smaller_written = threading.Event()


class RedisStoreTest(unittest.TestCase):
    def server(self, *args):
        server = fence_processes.RedisServer(*args).start()
        self.addCleanup(server.stop)
        return server

    def test_atomic_under_concurrency_and_the_check_then_set_control_is_not(self):
        server = self.server(*fence_processes.DURABLE)
        self.assertEqual(hammer(fencing.RedisStore.from_url(server.url)), [])
        self.assertNotEqual(hammer(CheckThenSet(redis.Redis.from_url(server.url))), [])

    def test_refuses_a_redis_that_can_lose_acknowledged_writes(self):
        for args, setting in ((("--appendonly", "no"), "appendonly no"),
                              (("--appendonly", "yes", "--appendfsync", "everysec"), "appendfsync everysec")):
            with self.subTest(setting):
                url = self.server(*args).url
                with self.assertRaises(fencing.UnsafeRedis) as raised:
                    fencing.RedisStore.from_url(url)
                self.assertIn(setting, str(raised.exception))
                self.assertIn("allow_lossy_redis", str(raised.exception))
                self.assertTrue(fencing.RedisStore.from_url(url, allow_lossy_redis=True).check("x", 1).accepted)

    def test_says_so_when_config_is_disabled(self):
        url = self.server(*fence_processes.DURABLE, "--rename-command", "CONFIG", "").url
        with self.assertRaises(fencing.UnsafeRedis) as raised:
            fencing.RedisStore.from_url(url)
        self.assertIn("CONFIG GET failed", str(raised.exception))

    def test_record_keeps_keep_ms_and_lives_under_the_lock_hash_tag(self):
        client = redis.Redis.from_url(self.server(*fence_processes.DURABLE).url)
        fencing.RedisStore(client, keep_ms=60_000).check("tenant/a", 7)
        self.assertEqual(client.get("holdfast-fence:{tenant/a}"), b"7")
        self.assertTrue(0 < client.pttl("holdfast-fence:{tenant/a}") <= 60_000)
        with self.assertRaises(ValueError):
            fencing.RedisStore(client, keep_ms=0)

    def newest_after_sigkill(self, *args, **options):
        server = self.server(*args)
        lock = support.random_name("fence")
        store = fencing.RedisStore.from_url(server.url, **options)
        self.assertTrue(store.check(lock, 41).accepted and store.check(lock, 42).accepted)
        server.kill()
        server.start()
        return fencing.RedisStore.from_url(server.url, **options).check(lock, 41)

    def test_a_durable_redis_keeps_the_newest_token_through_sigkill(self):
        self.assertEqual(self.newest_after_sigkill(*fence_processes.DURABLE), fencing.Decision(False, 42))

    def test_negative_control_a_lossy_redis_forgets_it(self):
        self.assertEqual(self.newest_after_sigkill("--appendonly", "no", allow_lossy_redis=True),
                         fencing.Decision(True, 41))


class MemoryStoreTest(unittest.TestCase):
    def test_atomic_under_concurrency(self):
        self.assertEqual(hammer(fencing.MemoryStore()), [])


class PostgresStoreTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.postgres = fence_processes.PostgresServer()
        cls.connect = staticmethod(fence_processes.pg_connect(cls.postgres.url))

    @classmethod
    def tearDownClass(cls):
        cls.postgres.stop()

    def store(self):
        store = postgres.PostgresStore(self.connect)
        self.addCleanup(store.close)
        return store

    def test_atomic_under_concurrency(self):
        self.assertEqual(hammer(self.store()), [])

    def test_the_fence_commits_or_rolls_back_with_the_resource_write(self):
        lock, table = support.random_name("fence"), support.random_name("notes").replace("-", "_")
        conn = self.connect()
        self.addCleanup(conn.close)
        with conn, conn.cursor() as cur:
            postgres.create_table(cur)
            cur.execute(f"CREATE TABLE {table} (body text)")
        with conn, conn.cursor() as cur:
            postgres.enforce_in(cur, lock, 8)
            cur.execute(f"INSERT INTO {table} VALUES ('from 8')")
        with self.assertRaises(fencing.StaleToken) as raised:
            with conn, conn.cursor() as cur:
                postgres.enforce_in(cur, lock, 7)
                cur.execute(f"INSERT INTO {table} VALUES ('from 7')")
        self.assertEqual((raised.exception.token, raised.exception.newest), (7, 8))
        with self.assertRaises(RuntimeError):  # a transaction that fails after its fence recorded nothing
            with conn, conn.cursor() as cur:
                postgres.enforce_in(cur, lock, 9)
                raise RuntimeError("the write failed")
        with conn, conn.cursor() as cur:
            cur.execute(f"SELECT body FROM {table}")
            self.assertEqual(cur.fetchall(), [("from 8",)])
            self.assertEqual(postgres.check_in(cur, lock, 0), fencing.Decision(False, 8))

    def test_fenced_update_changes_nothing_for_a_stale_token(self):
        table = support.random_name("accounts").replace("-", "_")
        conn = self.connect()
        self.addCleanup(conn.close)
        with conn, conn.cursor() as cur:
            cur.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, balance int, fence_token numeric(20,0))")
            cur.execute(f"INSERT INTO {table} (id, balance) VALUES (1, 100)")
            self.assertEqual(postgres.fenced_update(cur, table, {"balance": 150}, {"id": 1}, "acct", 5), 1)
            self.assertEqual(postgres.fenced_update(cur, table, {"balance": 160}, {"id": 1}, "acct", 5), 1)
            with self.assertRaises(fencing.StaleToken) as raised:
                postgres.fenced_update(cur, table, {"balance": 90}, {"id": 1}, "acct", 4)
            self.assertEqual((raised.exception.token, raised.exception.newest), (4, 5))
            self.assertEqual(postgres.fenced_update(cur, table, {"balance": 1}, {"id": 2}, "acct", 9), 0)  # no such row
            cur.execute(f"SELECT balance, fence_token FROM {table} WHERE id = 1")
            self.assertEqual(cur.fetchone(), (160, 5))


class PostgresRestartTest(unittest.TestCase):
    def test_the_newest_token_survives_an_immediate_stop(self):
        server = fence_processes.PostgresServer()
        self.addCleanup(server.stop)
        lock = support.random_name("fence")
        store = postgres.PostgresStore(fence_processes.pg_connect(server.url))
        self.assertTrue(store.check(lock, 41).accepted and store.check(lock, 42).accepted)
        old_pid = server.pid
        server.stop_immediately()
        with self.assertRaises(fencing.FenceStoreUnavailable):  # it really was down
            store.check(lock, 43)
        server.start_again()
        self.assertNotEqual(server.pid, old_pid)
        again = postgres.PostgresStore(fence_processes.pg_connect(server.url))
        self.addCleanup(again.close)
        self.assertEqual(again.check(lock, 41), fencing.Decision(False, 42))


if __name__ == "__main__":
    unittest.main()
