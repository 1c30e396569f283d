"""A grpcio server interceptor that lets through only requests whose fence is the newest.

    server = grpc.server(executor, interceptors=[FenceInterceptor(store)])

Each guarded call must carry holdfast-fence-lock and holdfast-fence-token metadata: a missing or
malformed fence ends the call with INVALID_ARGUMENT naming the key, a stale token with
FAILED_PRECONDITION naming the lock and both tokens. The store is asked in the handler's own
thread (the interceptor itself runs on the server's polling thread, which must not block), and
current_fence() gives the handler the fence it was let in with.
"""

import contextvars

import grpc

from holdfast.fencing.decision import StaleToken, enforce
from holdfast.fencing.wire import BadFence, parse_grpc

_current = contextvars.ContextVar("holdfast_fence", default=None)


def current_fence():
    """The Fence of the call being handled (None outside a guarded call)."""
    return _current.get()


def _admit(store, metadata, context):
    """The request's Fence once the store accepts it; aborts the call otherwise."""
    try:
        fence = parse_grpc(metadata)
        enforce(store, fence.lock, fence.token)
        return fence
    except BadFence as bad:
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(bad))
    except StaleToken as stale:
        context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(stale))


def _guard_unary_response(behavior, store, metadata):
    def guarded(request, context):
        token = _current.set(_admit(store, metadata, context))
        try:
            return behavior(request, context)
        finally:
            _current.reset(token)
    return guarded


def _guard_stream_response(behavior, store, metadata):
    def guarded(request, context):
        token = _current.set(_admit(store, metadata, context))
        try:
            yield from behavior(request, context)
        finally:
            _current.reset(token)
    return guarded


_KINDS = (  # (handler attribute, wrapper, factory) per RPC kind
    ("unary_unary", _guard_unary_response, grpc.unary_unary_rpc_method_handler),
    ("unary_stream", _guard_stream_response, grpc.unary_stream_rpc_method_handler),
    ("stream_unary", _guard_unary_response, grpc.stream_unary_rpc_method_handler),
    ("stream_stream", _guard_stream_response, grpc.stream_stream_rpc_method_handler),
)


class FenceInterceptor(grpc.ServerInterceptor):
    """Guards every method, or only those `guards(method)` is true for (method: "/pkg.Service/Name")."""

    def __init__(self, store, guards=None):
        self._store = store
        self._guards = guards or (lambda method: True)

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None or not self._guards(handler_call_details.method):
            return handler
        metadata = handler_call_details.invocation_metadata
        for kind, wrap, factory in _KINDS:
            behavior = getattr(handler, kind)
            if behavior is not None:
                return factory(wrap(behavior, self._store, metadata),
                               request_deserializer=handler.request_deserializer,
                               response_serializer=handler.response_serializer)
        return handler
