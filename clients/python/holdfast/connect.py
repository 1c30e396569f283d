"""Channels to a holdfast server: plaintext, TLS or mutual TLS, with an API key on every call.

    channel = holdfast.channel("locks.internal:50051", ca=read("ca.crt"), cert=read("client.crt"),
                               key=read("client.key"), api_key=os.environ["HOLDFAST_API_KEY"])
    with channel, holdfast.lock(channel, "reports") as lease:
        ...

The key goes as the metadata `authorization: Bearer <key>` through a client interceptor rather
than call credentials, which gRPC sends only over TLS: a server on loopback may take keys over
plaintext.
"""

import collections

import grpc
import grpc.aio

from holdfast.errors import check_address, remember_address


class _CallDetails(collections.namedtuple("_CallDetails", ("method", "timeout", "metadata", "credentials",
                                                           "wait_for_ready", "compression")),
                   grpc.ClientCallDetails):
    pass


def _with_key(details, header):
    metadata = [*(details.metadata or ()), header]
    return _CallDetails(details.method, details.timeout, metadata, details.credentials,
                        getattr(details, "wait_for_ready", None), getattr(details, "compression", None))


class _ApiKey(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
              grpc.StreamStreamClientInterceptor):
    def __init__(self, api_key):
        self._header = ("authorization", f"Bearer {api_key}")

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(_with_key(details, self._header), request)

    def intercept_unary_stream(self, continuation, details, request):
        return continuation(_with_key(details, self._header), request)

    def intercept_stream_stream(self, continuation, details, request_iterator):
        return continuation(_with_key(details, self._header), request_iterator)


class _AsyncUnaryKey(grpc.aio.UnaryUnaryClientInterceptor):
    def __init__(self, header):
        self._header = header

    async def intercept_unary_unary(self, continuation, details, request):
        return await continuation(_with_key(details, self._header), request)


# grpc.aio files an interceptor under its first matching kind only: one object per kind.
class _AsyncStreamKey(grpc.aio.UnaryStreamClientInterceptor):
    def __init__(self, header):
        self._header = header

    async def intercept_unary_stream(self, continuation, details, request):
        return await continuation(_with_key(details, self._header), request)


class _AsyncSessionKey(grpc.aio.StreamStreamClientInterceptor):
    def __init__(self, header):
        self._header = header

    async def intercept_stream_stream(self, continuation, details, request_iterator):
        return await continuation(_with_key(details, self._header), request_iterator)


def _tls(ca, cert, key, server_name, tls, options):
    """(credentials or None for plaintext, options) for these settings."""
    if (cert is None) != (key is None):
        raise ValueError("cert and key go together (mutual TLS)")
    if not (tls or ca or cert or server_name):
        return None, list(options)
    names = [("grpc.ssl_target_name_override", server_name)] if server_name else []
    return grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert), [*options, *names]


def channel(addr, *, ca=None, cert=None, key=None, server_name=None, tls=False, api_key=None, options=()):
    """A grpc.Channel to `addr` (host:port).

    ca: PEM bytes of the CA that signed the server's certificate (None with tls=True: the system's);
    cert, key: this client's PEM certificate and private key, for mutual TLS; server_name: the name
    the server's certificate must carry when it is not the host in `addr`; api_key: sent on every call.
    """
    check_address(addr)
    credentials, options = _tls(ca, cert, key, server_name, tls, options)
    ch = grpc.secure_channel(addr, credentials, options) if credentials else grpc.insecure_channel(addr, options)
    return remember_address(grpc.intercept_channel(ch, _ApiKey(api_key)) if api_key else ch, addr)


def aio_channel(addr, *, ca=None, cert=None, key=None, server_name=None, tls=False, api_key=None, options=()):
    """The grpc.aio channel `channel` would make, for holdfast.alock and holdfast.aio."""
    check_address(addr)
    credentials, options = _tls(ca, cert, key, server_name, tls, options)
    header = ("authorization", f"Bearer {api_key}")
    interceptors = [_AsyncUnaryKey(header), _AsyncStreamKey(header), _AsyncSessionKey(header)] if api_key else None
    if credentials:
        return remember_address(grpc.aio.secure_channel(addr, credentials, options, interceptors=interceptors), addr)
    return remember_address(grpc.aio.insecure_channel(addr, options, interceptors=interceptors), addr)
