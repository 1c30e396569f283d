"""The guard's rules, shared by the gRPC interceptor and the WSGI and ASGI middleware: the order of
checks of clients/conformance/signed-fence.md. Steps 1 to 7 (screen) never ask the store; step 8
(record) asks it.

    guard = FenceGuard(store, keys=KeyRing.from_url(url), lock="orders")

  1. a field sent twice, no fence, a malformed one, unsigned headers disagreeing with the signed
     fence: BadFence (400 / INVALID_ARGUMENT)
  2. only unsigned headers while the guard requires signed fences: SignedFenceRequired (403)
  3. 4. a key id not in the ring, a signature that does not verify: UnknownFenceKey, BadFenceSignature (403)
  5. 6. a fence for another namespace, for another lock than the resource's: 403
  7. with lease_end_skew_ms, a signed lease end that has passed by more than it: FenceLeaseEnded (409)
  8. the store: StaleToken (409), FenceStoreUnavailable (503)
"""

import contextlib
import contextvars
import time

from holdfast.fencing.decision import StaleToken
from holdfast.fencing.refusals import (FenceForAnotherLock, FenceForAnotherNamespace, FenceLeaseEnded, FenceRefused,
                                       FenceStoreUnavailable, SignedFenceRequired)
from holdfast.fencing.signed import KeyRing, parse_signed
from holdfast.fencing.wire import BadFence, Fence, _decode_lock, _decode_token, once, parse

_current = contextvars.ContextVar("holdfast_fence", default=None)


def current_fence():
    """The Fence the request being handled was admitted with (None outside a guarded request):
    lock, token, namespace, lease_end_ms, key_id, signed."""
    return _current.get()


def every_request(*request):
    """The default rule of which requests a guard guards: all of them."""
    return True


def _resource_lock(lock):
    """The function giving a request's resource lock, from the guard's `lock` option."""
    if lock is None or callable(lock):
        return lock
    if not isinstance(lock, str) or lock == "":
        raise ValueError(f"lock must be the resource's lock name or a function of the request, got {lock!r}")
    return lambda request: lock


class FenceGuard:
    """What a guard checks, and in which order (see the module's doc).

    store:             compares and records the newest token per lock (MemoryStore, RedisStore,
                       postgres.PostgresStore, or your own with check(lock, token) -> Decision)
    keys:              a KeyRing; with it, signed fences are verified and required. Without it the
                       guard reads the unsigned headers only, as before signed fences.
    namespace:         the holdfast namespace the resource's locks live in (default "default")
    lock:              the lock protecting the resource the request touches: a name, or a function of
                       the request (the gRPC HandlerCallDetails, the WSGI environ, the ASGI scope)
                       returning one. Required with keys; without keys, optional (then it also
                       checks unsigned fences' lock).
    accept_unsigned:   with keys, also admit unsigned fences (no signature, namespace or lease end
                       to check: for an upgrade while some holders still send none)
    lease_end_skew_ms: turns on the lease-end check: a signed fence whose lease ended more than this
                       many milliseconds ago by this machine's clock is refused. It assumes the
                       server's clock and this one differ by less than the allowance.
    """

    def __init__(self, store, keys=None, namespace="default", lock=None, accept_unsigned=False,
                 lease_end_skew_ms=None):
        if keys is not None and not isinstance(keys, KeyRing):
            raise TypeError(f"keys must be a holdfast.fencing.KeyRing (KeyRing.from_url, from_file, from_jwks), "
                            f"got {type(keys).__name__}")
        if keys is not None and lock is None:
            raise ValueError("a guard with keys needs lock=: the lock (or a function of the request giving the lock) "
                             "that protects the resource; without it a fence for any lock would pass")
        if not isinstance(namespace, str) or namespace == "":
            raise ValueError(f"namespace must be a non-empty string, got {namespace!r}")
        if lease_end_skew_ms is not None and (isinstance(lease_end_skew_ms, bool) or not isinstance(lease_end_skew_ms, int)
                                              or lease_end_skew_ms < 0):
            raise ValueError(f"lease_end_skew_ms must be a whole number of milliseconds >= 0, got {lease_end_skew_ms!r}")
        if lease_end_skew_ms is not None and keys is None:
            raise ValueError("lease_end_skew_ms needs keys: only a signed fence states its lease's end")
        self.store = store
        self.keys = keys
        self.namespace = namespace
        self.accept_unsigned = bool(accept_unsigned) or keys is None
        self.lease_end_skew_ms = lease_end_skew_ms
        self._lock_of = _resource_lock(lock)

    def resource_lock(self, request):
        """The lock of the resource `request` touches, or None when the guard was given no lock."""
        if self._lock_of is None:
            return None
        lock = self._lock_of(request)
        if not isinstance(lock, str):
            raise TypeError(f"the guard's lock function returned {lock!r}, not a lock name")
        return lock

    def read(self, raw, names):
        """Steps 1 and 2: the Fence that `raw` ({"fence": [...], "lock": [...], "token": [...]}, each
        field's values; `names` the transport's names for them) carries, and its SignedFence or None."""
        signed_raw, lock_raw, token_raw = once(raw, names)
        if self.keys is None:  # a guard without keys reads what guards read before signed fences
            return parse(lock_raw, token_raw, names["lock"], names["token"]), None
        if signed_raw is None:
            if lock_raw is None and token_raw is None:
                raise BadFence("missing", "fence", names["fence"])
            if not self.accept_unsigned:
                raise SignedFenceRequired(names["fence"])
            return parse(lock_raw, token_raw, names["lock"], names["token"]), None
        signed = parse_signed(signed_raw, names["fence"])
        if lock_raw is not None and _decode_lock(lock_raw, names["lock"]) != signed.lock:
            raise BadFence("malformed", "lock", names["lock"], f"names another lock than {names['fence']}")
        if token_raw is not None and _decode_token(token_raw, names["token"]) != signed.token:
            raise BadFence("malformed", "token", names["token"], f"carries another token than {names['fence']}")
        return Fence(signed.lock, signed.token, signed.namespace, signed.lease_end_ms, signed.key_id, True), signed

    def screen(self, raw, names, resource_lock, now_ms=None):
        """Steps 1 to 7: the admitted-so-far Fence, or a FenceRefused. The store is not asked."""
        fence, signed = self.read(raw, names)
        if signed is not None:
            self.keys.verify(signed)
            if fence.namespace != self.namespace:
                raise FenceForAnotherNamespace(fence.namespace, self.namespace)
        if resource_lock is not None and fence.lock != resource_lock:
            raise FenceForAnotherLock(fence.lock, resource_lock)
        if signed is not None and self.lease_end_skew_ms is not None and fence.lease_end_ms is not None:
            now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
            if now_ms > fence.lease_end_ms + self.lease_end_skew_ms:
                raise FenceLeaseEnded(fence.lock, fence.token, fence.lease_end_ms, now_ms, self.lease_end_skew_ms)
        return fence

    def record(self, fence):
        """Step 8: the store compares and records the token; raises StaleToken or FenceStoreUnavailable
        (also for a store that fails otherwise: the guard fails closed)."""
        with self.store_failure(fence):
            decision = self.store.check(fence.lock, fence.token)
        return self.judge(fence, decision)

    @staticmethod
    @contextlib.contextmanager
    def store_failure(fence):
        """Turns a store's failure other than a refusal into FenceStoreUnavailable."""
        try:
            yield
        except FenceRefused:
            raise
        except Exception:
            raise FenceStoreUnavailable(fence.lock, "the store could not check the fencing token") from None

    @staticmethod
    def judge(fence, decision):
        """The store's Decision for `fence`; raises StaleToken when it refused the token."""
        if not decision.accepted:
            raise StaleToken(fence.lock, fence.token, decision.newest)
        return decision

    def admit(self, raw, names, request):
        """Steps 1 to 8 for one request; returns its Fence or raises FenceRefused."""
        fence = self.screen(raw, names, self.resource_lock(request))
        self.record(fence)
        return fence
