"""A grpcio server interceptor that lets through only requests with a good fence, the newest for its lock.

    server = grpc.server(executor, interceptors=[FenceInterceptor(store)])                        # unsigned
    server = grpc.server(executor, interceptors=[FenceInterceptor(store, keys=ring, lock="orders")])  # signed

It guards every method unless `guards(method)` says otherwise (method: "/pkg.Service/Name"), and
ends a refused call with the status of signed-fence.md's table (INVALID_ARGUMENT, PERMISSION_DENIED,
FAILED_PRECONDITION, UNAVAILABLE) and its message; the handler never runs then. The checks and the
store run in the handler's own thread (the interceptor itself runs on the server's polling thread,
which must not block), and current_fence() gives the handler the Fence it was let in with. `lock`,
when a function, is called with the call's grpc.HandlerCallDetails (method, invocation_metadata).
"""

import grpc

from holdfast.fencing.guard import FenceGuard, _current, current_fence, every_request
from holdfast.fencing.refusals import FenceRefused
from holdfast.fencing.wire import GRPC_NAMES, collect_grpc

__all__ = ["FenceInterceptor", "current_fence"]


def _admit(guard, details, context):
    """The request's Fence once the guard admits it; aborts the call otherwise."""
    try:
        return guard.admit(collect_grpc(details.invocation_metadata), GRPC_NAMES, details)
    except FenceRefused as refused:
        context.abort(getattr(grpc.StatusCode, refused.grpc_code), str(refused))


def _guard_unary_response(behavior, guard, details):
    def guarded(request, context):
        token = _current.set(_admit(guard, details, context))
        try:
            return behavior(request, context)
        finally:
            _current.reset(token)
    return guarded


def _guard_stream_response(behavior, guard, details):
    def guarded(request, context):
        token = _current.set(_admit(guard, details, context))
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
    """Guards every method, or only those `guards(method)` is true for. The other keyword
    arguments are FenceGuard's: keys, namespace, lock, accept_unsigned, lease_end_skew_ms."""

    def __init__(self, store, guards=None, **options):
        self.guard = FenceGuard(store, **options)
        self._guards = guards or every_request

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None or not self._guards(handler_call_details.method):
            return handler
        for kind, wrap, factory in _KINDS:
            behavior = getattr(handler, kind)
            if behavior is not None:
                return factory(wrap(behavior, self.guard, handler_call_details),
                               request_deserializer=handler.request_deserializer,
                               response_serializer=handler.response_serializer)
        return handler
