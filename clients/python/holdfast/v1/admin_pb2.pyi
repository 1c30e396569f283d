from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetServerStatsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetServerStatsResponse(_message.Message):
    __slots__ = ("waiters", "wait_lines", "subscriptions", "wait_line_timers", "claims_in_flight", "kept_leases", "named_holds", "watchdog_timer_armed", "hold_streams", "calls_in_flight")
    WAITERS_FIELD_NUMBER: _ClassVar[int]
    WAIT_LINES_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTIONS_FIELD_NUMBER: _ClassVar[int]
    WAIT_LINE_TIMERS_FIELD_NUMBER: _ClassVar[int]
    CLAIMS_IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    KEPT_LEASES_FIELD_NUMBER: _ClassVar[int]
    NAMED_HOLDS_FIELD_NUMBER: _ClassVar[int]
    WATCHDOG_TIMER_ARMED_FIELD_NUMBER: _ClassVar[int]
    HOLD_STREAMS_FIELD_NUMBER: _ClassVar[int]
    CALLS_IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    waiters: int
    wait_lines: int
    subscriptions: int
    wait_line_timers: int
    claims_in_flight: int
    kept_leases: int
    named_holds: int
    watchdog_timer_armed: bool
    hold_streams: int
    calls_in_flight: int
    def __init__(self, waiters: _Optional[int] = ..., wait_lines: _Optional[int] = ..., subscriptions: _Optional[int] = ..., wait_line_timers: _Optional[int] = ..., claims_in_flight: _Optional[int] = ..., kept_leases: _Optional[int] = ..., named_holds: _Optional[int] = ..., watchdog_timer_armed: bool = ..., hold_streams: _Optional[int] = ..., calls_in_flight: _Optional[int] = ...) -> None: ...

class GetFenceKeysRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class FenceKey(_message.Message):
    __slots__ = ("key_id", "algorithm", "public_key")
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_KEY_FIELD_NUMBER: _ClassVar[int]
    key_id: str
    algorithm: str
    public_key: bytes
    def __init__(self, key_id: _Optional[str] = ..., algorithm: _Optional[str] = ..., public_key: _Optional[bytes] = ...) -> None: ...

class GetFenceKeysResponse(_message.Message):
    __slots__ = ("signing_key_id", "keys")
    SIGNING_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    signing_key_id: str
    keys: _containers.RepeatedCompositeFieldContainer[FenceKey]
    def __init__(self, signing_key_id: _Optional[str] = ..., keys: _Optional[_Iterable[_Union[FenceKey, _Mapping]]] = ...) -> None: ...
