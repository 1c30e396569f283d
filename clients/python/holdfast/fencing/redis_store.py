"""The store in the resource's own Redis (redis-py): fence-record-1.lua compares and records in one
step, so guards in many processes (or languages) agree on the newest token of each lock.

The record of a lock lives at `holdfast-fence:{<lock>}` (one hash slot on a Cluster) and is kept
`keep_ms` after its last accepted request: the longest a stale holder may be paused and still be
caught (default 30 days). The store is only as durable as its Redis, so it refuses, at start, a
Redis that can lose acknowledged writes (appendonly must be yes and appendfsync always) unless
allow_lossy_redis=True says that losing the newest token on a Redis restart is acceptable.
"""

import importlib.resources

from holdfast.fencing.decision import Decision
from holdfast.fencing.wire import encode_token

KEEP_MS = 30 * 24 * 3600 * 1000
SCRIPT = importlib.resources.files("holdfast.fencing").joinpath("fence-record-1.lua").read_text(encoding="utf-8")


class UnsafeRedis(Exception):
    """The Redis given to RedisStore can lose an acknowledged fence record."""


def fence_key(lock):
    return f"holdfast-fence:{{{lock}}}"


def _config(client, name):
    import redis

    try:
        return client.config_get(name).get(name)
    except redis.ResponseError as err:
        raise UnsafeRedis(f"cannot read the Redis setting {name} (CONFIG GET failed: {err}): the fence store cannot "
                          "tell whether Redis keeps acknowledged writes; enable CONFIG, or pass "
                          "allow_lossy_redis=True to accept losing the newest tokens on a Redis restart") from None


def refuse_lossy(client):
    """Raises UnsafeRedis unless the Redis has appendonly yes and appendfsync always."""
    for name, wanted in (("appendonly", "yes"), ("appendfsync", "always")):
        value = _config(client, name)
        if value != wanted:
            raise UnsafeRedis(f"Redis has {name} {value}, and the fence store needs {name} {wanted}: otherwise a Redis "
                              "restart can forget the newest token and let a stale holder write; set it, or pass "
                              "allow_lossy_redis=True to accept that")


class RedisStore:
    """check(lock, token) against the resource's Redis; `client` is a redis.Redis (decode_responses either way)."""

    def __init__(self, client, keep_ms=KEEP_MS, allow_lossy_redis=False):
        if int(keep_ms) <= 0:
            raise ValueError(f"keep_ms must be a positive number of milliseconds, got {keep_ms}")
        if not allow_lossy_redis:
            refuse_lossy(client)
        self._keep_ms = int(keep_ms)
        self._script = client.register_script(SCRIPT)

    @classmethod
    def from_url(cls, url, **options):
        """A store on the Redis at `url` (redis://host:port/db)."""
        import redis

        return cls(redis.Redis.from_url(url), **options)

    def check(self, lock, token):
        """Decision(accepted, newest) for `token` on `lock`, recorded when accepted (one Lua call)."""
        accepted, newest = self._script(keys=[fence_key(lock)], args=[encode_token(token), self._keep_ms])
        return Decision(accepted == 1, int(newest))
