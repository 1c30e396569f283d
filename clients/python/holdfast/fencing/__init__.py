"""The fencing kit: what lets a protected resource refuse a holder whose lease has ended.

Holders attach their lease's fence to each request (lease.fence(headers) for HTTP,
lease.fence_metadata() for gRPC); the resource puts a guard in front of its writes
(FenceInterceptor for a grpcio server, FenceMiddleware for WSGI, AsgiFenceMiddleware for ASGI)
over a store that compares and records the newest token per lock in one step: MemoryStore (one
process), RedisStore (the resource's Redis), or holdfast.fencing.postgres (PostgreSQL, inside the
resource's own transaction; needs psycopg2).
"""

from holdfast.fencing.decision import Decision, StaleToken, decide, enforce
from holdfast.fencing.grpc_guard import FenceInterceptor, current_fence
from holdfast.fencing.http_guard import AsgiFenceMiddleware, FenceMiddleware
from holdfast.fencing.memory import MemoryStore
from holdfast.fencing.redis_store import RedisStore, UnsafeRedis
from holdfast.fencing.wire import (GRPC_LOCK_KEY, GRPC_TOKEN_KEY, HTTP_LOCK_HEADER, HTTP_TOKEN_HEADER, BadFence, Fence,
                                   grpc_metadata, http_headers, parse, parse_asgi, parse_grpc, parse_wsgi)

__all__ = ["GRPC_LOCK_KEY", "GRPC_TOKEN_KEY", "HTTP_LOCK_HEADER", "HTTP_TOKEN_HEADER", "AsgiFenceMiddleware", "BadFence",
           "Decision", "Fence", "FenceInterceptor", "FenceMiddleware", "MemoryStore", "RedisStore", "StaleToken",
           "UnsafeRedis", "current_fence", "decide", "enforce", "grpc_metadata", "http_headers", "parse", "parse_asgi",
           "parse_grpc", "parse_wsgi"]
