"""The store in the resource's own Redis (redis-py): fence-record-1.lua compares and records in one
step, so guards in many processes (or languages) agree on the newest token of each lock.

The record of a lock lives at `holdfast-fence:{<lock>}` (one hash slot on a Cluster) and is kept
`keep_ms` after its last accepted request: the longest a stale holder may be paused and still be
caught (default 30 days). The store is only as durable as its Redis, so it refuses, at start, a
Redis that can lose acknowledged writes (appendonly must be yes and appendfsync always) unless
allow_lossy_redis=True says that losing the newest token on a Redis restart is acceptable.

It fails closed in bounded time: a check that Redis does not answer within `timeout` seconds
(default 1) raises FenceStoreUnavailable, which the guards answer 503 / UNAVAILABLE. The store
enforces that bound itself around every check (so it holds for a client you built, whatever its
settings), and the client from_url builds also has socket_connect_timeout and socket_timeout set
to it and no retries, so no call of its own outlives the bound by much.
"""

import importlib.resources

from holdfast.fencing import bounded
from holdfast.fencing.decision import Decision
from holdfast.fencing.refusals import FenceStoreUnavailable
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
    except redis.RedisError as err:
        raise ConnectionError(f"the fence store cannot read the setting {name} of Redis at {where(client)}: it "
                              f"{_in_words(err)}") from None


def refuse_lossy(client):
    """Raises UnsafeRedis unless the Redis has appendonly yes and appendfsync always."""
    for name, wanted in (("appendonly", "yes"), ("appendfsync", "always")):
        value = _config(client, name)
        if value != wanted:
            raise UnsafeRedis(f"Redis has {name} {value}, and the fence store needs {name} {wanted}: otherwise a Redis "
                              "restart can forget the newest token and let a stale holder write; set it, or pass "
                              "allow_lossy_redis=True to accept that")


def where(client):
    """The Redis a client talks to, for errors: host:port (or its socket path), never a password."""
    kwargs = getattr(getattr(client, "connection_pool", None), "connection_kwargs", {})
    if "path" in kwargs:
        return f"unix:{kwargs['path']}"
    return f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"


def _in_words(error):
    """What a redis-py error says about the Redis, in words."""
    import redis

    if isinstance(error, redis.TimeoutError):
        return "did not answer within the client's socket timeout"
    if isinstance(error, redis.ConnectionError):
        return "cannot be reached (the connection was refused or closed)"
    if isinstance(error, redis.ResponseError):
        code = str(error).split(" ", 1)[0]
        return f"answered the check with an error ({code})" if code.isupper() else "answered the check with an error"
    return "failed the check"


class RedisStore:
    """check(lock, token) against the resource's Redis; `client` is a redis.Redis (decode_responses
    either way). `timeout` (seconds, default 1) bounds each check: see the module's doc."""

    def __init__(self, client, keep_ms=KEEP_MS, allow_lossy_redis=False, timeout=bounded.DEFAULT_TIMEOUT_S):
        if int(keep_ms) <= 0:
            raise ValueError(f"keep_ms must be a positive number of milliseconds, got {keep_ms}")
        self._timeout = bounded.check_timeout(timeout)
        self._keep_ms = int(keep_ms)
        self.where = where(client)
        if not allow_lossy_redis:
            refuse_lossy(client)
        self._script = client.register_script(SCRIPT)

    @classmethod
    def from_url(cls, url, timeout=bounded.DEFAULT_TIMEOUT_S, **options):
        """A store on the Redis at `url` (redis://host:port/db), with a client built for the bound:
        socket_connect_timeout and socket_timeout of `timeout` seconds, no retries."""
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        timeout = bounded.check_timeout(timeout)
        client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout,
                                      retry_on_timeout=False, retry=Retry(NoBackoff(), 0))
        return cls(client, timeout=timeout, **options)

    def check(self, lock, token):
        """Decision(accepted, newest) for `token` on `lock`, recorded when accepted (one Lua call);
        raises FenceStoreUnavailable when Redis does not answer within the timeout."""
        import redis

        try:
            accepted, newest = bounded.within(self._timeout, self._record, lock, token)
        except bounded.Timeout:
            raise FenceStoreUnavailable(lock, f"Redis at {self.where} did not answer within {self._timeout:g} s") from None
        except redis.RedisError as error:
            raise FenceStoreUnavailable(lock, f"Redis at {self.where} {_in_words(error)}") from None
        return Decision(accepted == 1, int(newest))

    def _record(self, lock, token):
        return self._script(keys=[fence_key(lock)], args=[encode_token(token), self._keep_ms])
