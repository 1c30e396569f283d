"""A small ASGI app behind AsgiFenceMiddleware (memory store), served by uvicorn in test_fencing_guards.

It answers 200 with the admitted fence, "lock token", as its body; /open/... is behind a second
guard given guards=fencing.writes (reads unguarded)."""

from holdfast import fencing


async def storage(scope, receive, send):
    fence = scope.get("holdfast.fence")
    body = f"{fence.lock} {fence.token}".encode() if fence else b"unguarded"
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": body})


guarded = fencing.AsgiFenceMiddleware(storage, fencing.MemoryStore())
open_reads = fencing.AsgiFenceMiddleware(storage, fencing.MemoryStore(), guards=fencing.writes)


async def app(scope, receive, send):
    route = open_reads if scope["type"] == "http" and scope["path"].startswith("/open/") else guarded
    await route(scope, receive, send)
