"""A small ASGI app behind AsgiFenceMiddleware (memory store), served by uvicorn in test_fencing_guards.

It answers 200 with the admitted fence, "lock token", as its body."""

from holdfast import fencing


async def storage(scope, receive, send):
    fence = scope.get("holdfast.fence")
    body = f"{fence.lock} {fence.token}".encode() if fence else b"unguarded"
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": body})


app = fencing.AsgiFenceMiddleware(storage, fencing.MemoryStore())
