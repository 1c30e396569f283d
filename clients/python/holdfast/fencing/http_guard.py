"""HTTP guards: WSGI and ASGI middleware that let through only requests with a good fence, the
newest for its lock.

    app = FenceMiddleware(app, store)                                   # WSGI (Flask, Django, wsgiref ...)
    app = AsgiFenceMiddleware(app, store, keys=ring, lock="orders")     # ASGI (Starlette, FastAPI ...), signed

Every request is guarded unless `guards(method, path)` says otherwise (`guards=writes` leaves GET,
HEAD and OPTIONS alone). A refusal is answered with the status and JSON body of signed-fence.md's
table (error, message and its fields): 400, 403, 409 or 503. The admitted Fence is
current_fence() while the app is called, and environ["holdfast.fence"] / scope["holdfast.fence"].
`lock`, when a function, is called with the WSGI environ / the ASGI scope.
"""

import asyncio
import inspect
import json

from holdfast.fencing.guard import FenceGuard, _current, every_request
from holdfast.fencing.refusals import FenceRefused
from holdfast.fencing.wire import HTTP_NAMES, collect_asgi, collect_wsgi

READS = frozenset({"GET", "HEAD", "OPTIONS"})


def writes(method, path):
    """A rule that guards only the requests that may change the resource (not GET, HEAD, OPTIONS)."""
    return method.upper() not in READS


def refusal(error):
    """(status, reason, JSON body bytes) for a FenceRefused."""
    return error.status, error.http_reason(), json.dumps(error.http_body()).encode()


class FenceMiddleware:
    """WSGI middleware around `app`. The keyword arguments beyond `guards` are FenceGuard's: keys,
    namespace, lock, accept_unsigned, lease_end_skew_ms."""

    def __init__(self, app, store, guards=every_request, **options):
        self._app, self._guards = app, guards
        self.guard = FenceGuard(store, **options)

    def __call__(self, environ, start_response):
        if not self._guards(environ.get("REQUEST_METHOD", "GET"), environ.get("PATH_INFO", "")):
            return self._app(environ, start_response)
        try:
            fence = self.guard.admit(collect_wsgi(environ), HTTP_NAMES, environ)
        except FenceRefused as error:
            status, reason, body = refusal(error)
            start_response(f"{status} {reason}", [("Content-Type", "application/json"),
                                                  ("Content-Length", str(len(body)))])
            return [body]
        environ["holdfast.fence"] = fence
        token = _current.set(fence)
        try:
            return self._app(environ, start_response)
        finally:
            _current.reset(token)


class AsgiFenceMiddleware:
    """ASGI middleware around `app` (FenceMiddleware's arguments). Steps 1 to 7 run on the event
    loop (no I/O); a store whose check is a coroutine function is awaited, any other store's check
    runs in a worker thread, so a Redis or PostgreSQL round trip never blocks the loop."""

    def __init__(self, app, store, guards=every_request, **options):
        self._app, self._guards = app, guards
        self.guard = FenceGuard(store, **options)

    async def _record(self, fence):
        check = self.guard.store.check
        if inspect.iscoroutinefunction(check):
            with self.guard.store_failure(fence):
                decision = await check(fence.lock, fence.token)
            self.guard.judge(fence, decision)
            return
        await asyncio.to_thread(self.guard.record, fence)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not self._guards(scope["method"], scope["path"]):
            return await self._app(scope, receive, send)
        try:
            fence = self.guard.screen(collect_asgi(scope["headers"]), HTTP_NAMES, self.guard.resource_lock(scope))
            await self._record(fence)
        except FenceRefused as error:
            status, _, body = refusal(error)
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        token = _current.set(fence)
        try:
            return await self._app({**scope, "holdfast.fence": fence}, receive, send)
        finally:
            _current.reset(token)
