"""HTTP guards: WSGI and ASGI middleware that let through only requests whose fence is the newest.

    app = FenceMiddleware(app, store)           # WSGI (Flask, Django, wsgiref ...)
    app = AsgiFenceMiddleware(app, store)       # ASGI (Starlette, FastAPI ...)

A missing or malformed Holdfast-Fence-Lock / Holdfast-Fence-Token header is answered 400, a stale
token 409, each with a JSON body (fencing.json's `refusal`). `guards(method, path)` picks the
requests to guard (default: every request that is not GET, HEAD or OPTIONS). The admitted Fence is
in environ["holdfast.fence"] / scope["holdfast.fence"].
"""

import asyncio
import inspect
import json

from holdfast.fencing.decision import StaleToken, enforce
from holdfast.fencing.wire import BadFence, parse_asgi, parse_wsgi

READS = frozenset({"GET", "HEAD", "OPTIONS"})


def writes(method, path):
    """The default choice of requests to guard: those that may change the resource."""
    return method.upper() not in READS


def refusal(error):
    """(status, reason, JSON body bytes) for a BadFence or StaleToken."""
    if isinstance(error, StaleToken):
        return 409, "Conflict", json.dumps(error.http_body()).encode()
    body = {"error": f"{error.kind}_fence", "field": error.field, "header": error.header, "message": str(error)}
    return 400, "Bad Request", json.dumps(body).encode()


class FenceMiddleware:
    """WSGI middleware around `app`."""

    def __init__(self, app, store, guards=writes):
        self._app, self._store, self._guards = app, store, guards

    def __call__(self, environ, start_response):
        if not self._guards(environ.get("REQUEST_METHOD", "GET"), environ.get("PATH_INFO", "")):
            return self._app(environ, start_response)
        try:
            fence = parse_wsgi(environ)
            enforce(self._store, fence.lock, fence.token)
        except (BadFence, StaleToken) as error:
            status, reason, body = refusal(error)
            start_response(f"{status} {reason}", [("Content-Type", "application/json"),
                                                  ("Content-Length", str(len(body)))])
            return [body]
        environ["holdfast.fence"] = fence
        return self._app(environ, start_response)


class AsgiFenceMiddleware:
    """ASGI middleware around `app`. A store whose check is a coroutine function is awaited; any
    other store's check runs in a worker thread, so a Redis or PostgreSQL round trip never blocks
    the event loop."""

    def __init__(self, app, store, guards=writes):
        self._app, self._store, self._guards = app, store, guards

    async def _enforce(self, fence):
        if inspect.iscoroutinefunction(self._store.check):
            decision = await self._store.check(fence.lock, fence.token)
            if not decision.accepted:
                raise StaleToken(fence.lock, fence.token, decision.newest)
            return
        await asyncio.to_thread(enforce, self._store, fence.lock, fence.token)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not self._guards(scope["method"], scope["path"]):
            return await self._app(scope, receive, send)
        try:
            fence = parse_asgi(scope["headers"])
            await self._enforce(fence)
        except (BadFence, StaleToken) as error:
            status, _, body = refusal(error)
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        scope = {**scope, "holdfast.fence": fence}
        return await self._app(scope, receive, send)
