"""Why a guard refuses a request: one exception per refusal of clients/conformance/signed-fence.md,
each with its HTTP status, gRPC status code, JSON body and message (the same words over both).

Bodies carry only the fields the table lists: never the fence, its signature or another token.
"""

import http


class FenceRefused(Exception):
    """A guard's refusal. `error` is the body's error word, `status` the HTTP status, `grpc_code` the
    name of the grpc.StatusCode, `fields` the body's other fields (strings)."""

    error = ""
    status = 0
    grpc_code = ""

    def __init__(self, message, **fields):
        self.fields = fields
        super().__init__(message)

    def http_body(self):
        """The JSON body of the HTTP refusal: error, message and the fields of the table."""
        return {"error": self.error, "message": str(self), **self.fields}

    def http_reason(self):
        return http.HTTPStatus(self.status).phrase


class _Worded(FenceRefused):
    """A refusal whose message is `words` filled with its body's fields (`fields`, given in order)."""

    words = ""
    field_names = ()

    def __init__(self, *values):
        fields = {name: str(value) for name, value in zip(self.field_names, values)}
        super().__init__(self.words.format(**fields), **fields)


class SignedFenceRequired(_Worded):
    """Only unsigned headers came, and the guard requires a signed fence."""

    error, status, grpc_code = "signed_fence_required", 403, "PERMISSION_DENIED"
    words, field_names = "this resource requires a signed fence (header {header})", ("header",)


class UnknownFenceKey(_Worded):
    error, status, grpc_code = "unknown_fence_key", 403, "PERMISSION_DENIED"
    words, field_names = 'fence signed by unknown key "{key_id}"', ("key_id",)


class BadFenceSignature(_Worded):
    error, status, grpc_code = "bad_fence_signature", 403, "PERMISSION_DENIED"
    words, field_names = 'fence signature does not verify with key "{key_id}"', ("key_id",)


class FenceForAnotherNamespace(_Worded):
    error, status, grpc_code = "fence_for_another_namespace", 403, "PERMISSION_DENIED"
    words = 'fence for namespace "{namespace}" refused: this resource is protected in namespace "{expected}"'
    field_names = ("namespace", "expected")


class FenceForAnotherLock(_Worded):
    error, status, grpc_code = "fence_for_another_lock", 403, "PERMISSION_DENIED"
    words = 'fence for lock "{lock}" refused: this resource is protected by lock "{expected}"'
    field_names = ("lock", "expected")


class FenceLeaseEnded(_Worded):
    """The fence's signed lease end has certainly passed by the guard's clock (beyond the skew allowance)."""

    error, status, grpc_code = "fence_lease_ended", 409, "FAILED_PRECONDITION"
    words = ('fence for lock "{lock}" (token {token}) refused: its lease ended at {lease_end_ms}, now is {now_ms} '
             "(skew allowance {skew_ms} ms)")
    field_names = ("lock", "token", "lease_end_ms", "now_ms", "skew_ms")


class FenceStoreUnavailable(FenceRefused):
    """The fence store could not answer (its backend is down, or slower than the store's timeout):
    the guard fails closed."""

    error, status, grpc_code = "fence_store_unavailable", 503, "UNAVAILABLE"

    def __init__(self, lock, cause):
        self.lock, self.cause = lock, cause
        super().__init__(f'fence store unavailable for lock "{lock}": {cause}', lock=lock)
