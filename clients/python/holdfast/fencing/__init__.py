"""The fencing kit: what lets a protected resource refuse a holder whose lease has ended, and a
fence holdfast did not issue for the resource's lock.

Holders attach their lease's fence to each request (lease.fence(headers) for HTTP,
lease.fence_metadata() for gRPC): the signed fence, when the server signs them, and the unsigned
lock and token. The resource puts a guard in front of its handlers (FenceInterceptor for a grpcio
server, FenceMiddleware for WSGI, AsgiFenceMiddleware for ASGI), given a KeyRing of the server's
public keys and the resource's lock, over a store that compares and records the newest token per
lock in one step: MemoryStore (one process), RedisStore (the resource's Redis), or
holdfast.fencing.postgres (PostgreSQL, inside the resource's own transaction; needs psycopg2).
Order of checks, statuses and bodies: clients/conformance/signed-fence.md.
"""

from holdfast.fencing.decision import Decision, StaleToken, decide, enforce
from holdfast.fencing.grpc_guard import FenceInterceptor
from holdfast.fencing.guard import FenceGuard, current_fence, every_request
from holdfast.fencing.http_guard import AsgiFenceMiddleware, FenceMiddleware, writes
from holdfast.fencing.memory import MemoryStore
from holdfast.fencing.redis_store import RedisStore, UnsafeRedis
from holdfast.fencing.refusals import (BadFenceSignature, FenceForAnotherLock, FenceForAnotherNamespace, FenceLeaseEnded,
                                       FenceRefused, FenceStoreUnavailable, SignedFenceRequired, UnknownFenceKey)
from holdfast.fencing.signed import BadKeyRing, KeyRing, SignedFence, key_id, parse_signed
from holdfast.fencing.wire import (GRPC_FENCE_KEY, GRPC_LOCK_KEY, GRPC_TOKEN_KEY, HTTP_FENCE_HEADER, HTTP_LOCK_HEADER,
                                   HTTP_TOKEN_HEADER, BadFence, Fence, grpc_metadata, http_headers, parse, parse_asgi,
                                   parse_grpc, parse_wsgi)

__all__ = ["GRPC_FENCE_KEY", "GRPC_LOCK_KEY", "GRPC_TOKEN_KEY", "HTTP_FENCE_HEADER", "HTTP_LOCK_HEADER",
           "HTTP_TOKEN_HEADER", "AsgiFenceMiddleware", "BadFence", "BadFenceSignature", "BadKeyRing", "Decision", "Fence",
           "FenceForAnotherLock", "FenceForAnotherNamespace", "FenceGuard", "FenceInterceptor", "FenceLeaseEnded",
           "FenceMiddleware", "FenceRefused", "FenceStoreUnavailable", "KeyRing", "MemoryStore", "RedisStore",
           "SignedFence", "SignedFenceRequired", "StaleToken", "UnknownFenceKey", "UnsafeRedis", "current_fence", "decide",
           "enforce", "every_request", "grpc_metadata", "http_headers", "key_id", "parse", "parse_asgi", "parse_grpc",
           "parse_signed", "parse_wsgi", "writes"]
