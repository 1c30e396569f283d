from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class LockMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LOCK_MODE_UNSPECIFIED: _ClassVar[LockMode]
    LOCK_MODE_EXCLUSIVE: _ClassVar[LockMode]
    LOCK_MODE_SHARED: _ClassVar[LockMode]

class LostReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LOST_REASON_UNSPECIFIED: _ClassVar[LostReason]
    LOST_REASON_EXPIRED: _ClassVar[LostReason]
    LOST_REASON_TAKEN: _ClassVar[LostReason]
    LOST_REASON_BACKEND_UNAVAILABLE: _ClassVar[LostReason]
    LOST_REASON_SERVER_SHUTDOWN: _ClassVar[LostReason]
    LOST_REASON_MAX_HOLD: _ClassVar[LostReason]
    LOST_REASON_RELEASED: _ClassVar[LostReason]
    LOST_REASON_FAILOVER: _ClassVar[LostReason]
    LOST_REASON_DISCONNECTED: _ClassVar[LostReason]

class WatchEvent(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WATCH_EVENT_UNSPECIFIED: _ClassVar[WatchEvent]
    WATCH_EVENT_STATE: _ClassVar[WatchEvent]
    WATCH_EVENT_GRANTED: _ClassVar[WatchEvent]
    WATCH_EVENT_RELEASED: _ClassVar[WatchEvent]
    WATCH_EVENT_EXPIRED: _ClassVar[WatchEvent]
    WATCH_EVENT_LOST: _ClassVar[WatchEvent]
    WATCH_EVENT_VALUE_CHANGED: _ClassVar[WatchEvent]
    WATCH_EVENT_DEADLOCK: _ClassVar[WatchEvent]
LOCK_MODE_UNSPECIFIED: LockMode
LOCK_MODE_EXCLUSIVE: LockMode
LOCK_MODE_SHARED: LockMode
LOST_REASON_UNSPECIFIED: LostReason
LOST_REASON_EXPIRED: LostReason
LOST_REASON_TAKEN: LostReason
LOST_REASON_BACKEND_UNAVAILABLE: LostReason
LOST_REASON_SERVER_SHUTDOWN: LostReason
LOST_REASON_MAX_HOLD: LostReason
LOST_REASON_RELEASED: LostReason
LOST_REASON_FAILOVER: LostReason
LOST_REASON_DISCONNECTED: LostReason
WATCH_EVENT_UNSPECIFIED: WatchEvent
WATCH_EVENT_STATE: WatchEvent
WATCH_EVENT_GRANTED: WatchEvent
WATCH_EVENT_RELEASED: WatchEvent
WATCH_EVENT_EXPIRED: WatchEvent
WATCH_EVENT_LOST: WatchEvent
WATCH_EVENT_VALUE_CHANGED: WatchEvent
WATCH_EVENT_DEADLOCK: WatchEvent

class AcquireRequest(_message.Message):
    __slots__ = ("name", "owner", "ttl_ms", "wait_timeout_ms", "mode", "limit", "request_id", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    WAIT_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    owner: str
    ttl_ms: int
    wait_timeout_ms: int
    mode: LockMode
    limit: int
    request_id: str
    value: str
    def __init__(self, name: _Optional[str] = ..., owner: _Optional[str] = ..., ttl_ms: _Optional[int] = ..., wait_timeout_ms: _Optional[int] = ..., mode: _Optional[_Union[LockMode, str]] = ..., limit: _Optional[int] = ..., request_id: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class AcquireResponse(_message.Message):
    __slots__ = ("acquired", "token", "fencing_token", "ttl_ms", "hold_count", "lease_started_after_ms", "signed_fence")
    ACQUIRED_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    FENCING_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    HOLD_COUNT_FIELD_NUMBER: _ClassVar[int]
    LEASE_STARTED_AFTER_MS_FIELD_NUMBER: _ClassVar[int]
    SIGNED_FENCE_FIELD_NUMBER: _ClassVar[int]
    acquired: bool
    token: str
    fencing_token: int
    ttl_ms: int
    hold_count: int
    lease_started_after_ms: int
    signed_fence: str
    def __init__(self, acquired: bool = ..., token: _Optional[str] = ..., fencing_token: _Optional[int] = ..., ttl_ms: _Optional[int] = ..., hold_count: _Optional[int] = ..., lease_started_after_ms: _Optional[int] = ..., signed_fence: _Optional[str] = ...) -> None: ...

class ReleaseRequest(_message.Message):
    __slots__ = ("name", "token", "hold_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    HOLD_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    token: str
    hold_id: str
    def __init__(self, name: _Optional[str] = ..., token: _Optional[str] = ..., hold_id: _Optional[str] = ...) -> None: ...

class ReleaseResponse(_message.Message):
    __slots__ = ("released", "hold_count")
    RELEASED_FIELD_NUMBER: _ClassVar[int]
    HOLD_COUNT_FIELD_NUMBER: _ClassVar[int]
    released: bool
    hold_count: int
    def __init__(self, released: bool = ..., hold_count: _Optional[int] = ...) -> None: ...

class RenewRequest(_message.Message):
    __slots__ = ("name", "token", "ttl_ms")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    name: str
    token: str
    ttl_ms: int
    def __init__(self, name: _Optional[str] = ..., token: _Optional[str] = ..., ttl_ms: _Optional[int] = ...) -> None: ...

class RenewResponse(_message.Message):
    __slots__ = ("ttl_ms", "signed_fence")
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    SIGNED_FENCE_FIELD_NUMBER: _ClassVar[int]
    ttl_ms: int
    signed_fence: str
    def __init__(self, ttl_ms: _Optional[int] = ..., signed_fence: _Optional[str] = ...) -> None: ...

class HoldRequest(_message.Message):
    __slots__ = ("name", "owner", "ttl_ms", "wait_timeout_ms", "mode", "limit", "max_hold_ms", "release_on_disconnect", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    WAIT_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    MAX_HOLD_MS_FIELD_NUMBER: _ClassVar[int]
    RELEASE_ON_DISCONNECT_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    owner: str
    ttl_ms: int
    wait_timeout_ms: int
    mode: LockMode
    limit: int
    max_hold_ms: int
    release_on_disconnect: bool
    value: str
    def __init__(self, name: _Optional[str] = ..., owner: _Optional[str] = ..., ttl_ms: _Optional[int] = ..., wait_timeout_ms: _Optional[int] = ..., mode: _Optional[_Union[LockMode, str]] = ..., limit: _Optional[int] = ..., max_hold_ms: _Optional[int] = ..., release_on_disconnect: bool = ..., value: _Optional[str] = ...) -> None: ...

class HoldResponse(_message.Message):
    __slots__ = ("acquired", "renewed", "lost")
    ACQUIRED_FIELD_NUMBER: _ClassVar[int]
    RENEWED_FIELD_NUMBER: _ClassVar[int]
    LOST_FIELD_NUMBER: _ClassVar[int]
    acquired: HoldAcquired
    renewed: HoldRenewed
    lost: HoldLost
    def __init__(self, acquired: _Optional[_Union[HoldAcquired, _Mapping]] = ..., renewed: _Optional[_Union[HoldRenewed, _Mapping]] = ..., lost: _Optional[_Union[HoldLost, _Mapping]] = ...) -> None: ...

class HoldAcquired(_message.Message):
    __slots__ = ("token", "fencing_token", "ttl_ms", "hold_count", "lease_started_after_ms", "hold_id", "signed_fence")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    FENCING_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    HOLD_COUNT_FIELD_NUMBER: _ClassVar[int]
    LEASE_STARTED_AFTER_MS_FIELD_NUMBER: _ClassVar[int]
    HOLD_ID_FIELD_NUMBER: _ClassVar[int]
    SIGNED_FENCE_FIELD_NUMBER: _ClassVar[int]
    token: str
    fencing_token: int
    ttl_ms: int
    hold_count: int
    lease_started_after_ms: int
    hold_id: str
    signed_fence: str
    def __init__(self, token: _Optional[str] = ..., fencing_token: _Optional[int] = ..., ttl_ms: _Optional[int] = ..., hold_count: _Optional[int] = ..., lease_started_after_ms: _Optional[int] = ..., hold_id: _Optional[str] = ..., signed_fence: _Optional[str] = ...) -> None: ...

class HoldRenewed(_message.Message):
    __slots__ = ("ttl_ms", "lease_started_after_ms", "signed_fences")
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    LEASE_STARTED_AFTER_MS_FIELD_NUMBER: _ClassVar[int]
    SIGNED_FENCES_FIELD_NUMBER: _ClassVar[int]
    ttl_ms: int
    lease_started_after_ms: int
    signed_fences: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, ttl_ms: _Optional[int] = ..., lease_started_after_ms: _Optional[int] = ..., signed_fences: _Optional[_Iterable[str]] = ...) -> None: ...

class HoldLost(_message.Message):
    __slots__ = ("reason", "code", "name")
    REASON_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    reason: str
    code: LostReason
    name: str
    def __init__(self, reason: _Optional[str] = ..., code: _Optional[_Union[LostReason, str]] = ..., name: _Optional[str] = ...) -> None: ...

class InspectRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class InspectResponse(_message.Message):
    __slots__ = ("name", "holders", "waiters", "fencing_token", "limit", "grants_resume_in_ms")
    NAME_FIELD_NUMBER: _ClassVar[int]
    HOLDERS_FIELD_NUMBER: _ClassVar[int]
    WAITERS_FIELD_NUMBER: _ClassVar[int]
    FENCING_TOKEN_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    GRANTS_RESUME_IN_MS_FIELD_NUMBER: _ClassVar[int]
    name: str
    holders: _containers.RepeatedCompositeFieldContainer[Holder]
    waiters: int
    fencing_token: int
    limit: int
    grants_resume_in_ms: int
    def __init__(self, name: _Optional[str] = ..., holders: _Optional[_Iterable[_Union[Holder, _Mapping]]] = ..., waiters: _Optional[int] = ..., fencing_token: _Optional[int] = ..., limit: _Optional[int] = ..., grants_resume_in_ms: _Optional[int] = ...) -> None: ...

class Holder(_message.Message):
    __slots__ = ("owner", "fencing_token", "ttl_ms", "hold_count", "mode", "value")
    OWNER_FIELD_NUMBER: _ClassVar[int]
    FENCING_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    HOLD_COUNT_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    owner: str
    fencing_token: int
    ttl_ms: int
    hold_count: int
    mode: LockMode
    value: str
    def __init__(self, owner: _Optional[str] = ..., fencing_token: _Optional[int] = ..., ttl_ms: _Optional[int] = ..., hold_count: _Optional[int] = ..., mode: _Optional[_Union[LockMode, str]] = ..., value: _Optional[str] = ...) -> None: ...

class CheckFencingTokenRequest(_message.Message):
    __slots__ = ("name", "fencing_token")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FENCING_TOKEN_FIELD_NUMBER: _ClassVar[int]
    name: str
    fencing_token: int
    def __init__(self, name: _Optional[str] = ..., fencing_token: _Optional[int] = ...) -> None: ...

class CheckFencingTokenResponse(_message.Message):
    __slots__ = ("live", "ttl_ms", "mode", "latest_fencing_token")
    LIVE_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    LATEST_FENCING_TOKEN_FIELD_NUMBER: _ClassVar[int]
    live: bool
    ttl_ms: int
    mode: LockMode
    latest_fencing_token: int
    def __init__(self, live: bool = ..., ttl_ms: _Optional[int] = ..., mode: _Optional[_Union[LockMode, str]] = ..., latest_fencing_token: _Optional[int] = ...) -> None: ...

class SetValueRequest(_message.Message):
    __slots__ = ("name", "token", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    token: str
    value: str
    def __init__(self, name: _Optional[str] = ..., token: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class SetValueResponse(_message.Message):
    __slots__ = ("fencing_token",)
    FENCING_TOKEN_FIELD_NUMBER: _ClassVar[int]
    fencing_token: int
    def __init__(self, fencing_token: _Optional[int] = ...) -> None: ...

class WatchRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class WatchResponse(_message.Message):
    __slots__ = ("event", "holder", "lost_reason", "name", "holders", "waiters", "fencing_token", "deadlock")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    LOST_REASON_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    HOLDERS_FIELD_NUMBER: _ClassVar[int]
    WAITERS_FIELD_NUMBER: _ClassVar[int]
    FENCING_TOKEN_FIELD_NUMBER: _ClassVar[int]
    DEADLOCK_FIELD_NUMBER: _ClassVar[int]
    event: WatchEvent
    holder: Holder
    lost_reason: LostReason
    name: str
    holders: _containers.RepeatedCompositeFieldContainer[Holder]
    waiters: int
    fencing_token: int
    deadlock: str
    def __init__(self, event: _Optional[_Union[WatchEvent, str]] = ..., holder: _Optional[_Union[Holder, _Mapping]] = ..., lost_reason: _Optional[_Union[LostReason, str]] = ..., name: _Optional[str] = ..., holders: _Optional[_Iterable[_Union[Holder, _Mapping]]] = ..., waiters: _Optional[int] = ..., fencing_token: _Optional[int] = ..., deadlock: _Optional[str] = ...) -> None: ...

class AcquireSetRequest(_message.Message):
    __slots__ = ("names", "owner", "ttl_ms", "wait_timeout_ms", "mode", "value")
    NAMES_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    WAIT_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    owner: str
    ttl_ms: int
    wait_timeout_ms: int
    mode: LockMode
    value: str
    def __init__(self, names: _Optional[_Iterable[str]] = ..., owner: _Optional[str] = ..., ttl_ms: _Optional[int] = ..., wait_timeout_ms: _Optional[int] = ..., mode: _Optional[_Union[LockMode, str]] = ..., value: _Optional[str] = ...) -> None: ...

class SetMember(_message.Message):
    __slots__ = ("name", "token", "fencing_token", "ttl_ms", "hold_id", "signed_fence")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    FENCING_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    HOLD_ID_FIELD_NUMBER: _ClassVar[int]
    SIGNED_FENCE_FIELD_NUMBER: _ClassVar[int]
    name: str
    token: str
    fencing_token: int
    ttl_ms: int
    hold_id: str
    signed_fence: str
    def __init__(self, name: _Optional[str] = ..., token: _Optional[str] = ..., fencing_token: _Optional[int] = ..., ttl_ms: _Optional[int] = ..., hold_id: _Optional[str] = ..., signed_fence: _Optional[str] = ...) -> None: ...

class AcquireSetResponse(_message.Message):
    __slots__ = ("acquired", "members", "lease_started_after_ms")
    ACQUIRED_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    LEASE_STARTED_AFTER_MS_FIELD_NUMBER: _ClassVar[int]
    acquired: bool
    members: _containers.RepeatedCompositeFieldContainer[SetMember]
    lease_started_after_ms: int
    def __init__(self, acquired: bool = ..., members: _Optional[_Iterable[_Union[SetMember, _Mapping]]] = ..., lease_started_after_ms: _Optional[int] = ...) -> None: ...

class ReleaseSetRequest(_message.Message):
    __slots__ = ("members",)
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    members: _containers.RepeatedCompositeFieldContainer[ReleaseRequest]
    def __init__(self, members: _Optional[_Iterable[_Union[ReleaseRequest, _Mapping]]] = ...) -> None: ...

class ReleaseSetResponse(_message.Message):
    __slots__ = ("released", "not_held")
    RELEASED_FIELD_NUMBER: _ClassVar[int]
    NOT_HELD_FIELD_NUMBER: _ClassVar[int]
    released: int
    not_held: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, released: _Optional[int] = ..., not_held: _Optional[_Iterable[str]] = ...) -> None: ...

class HoldSetRequest(_message.Message):
    __slots__ = ("names", "owner", "ttl_ms", "wait_timeout_ms", "mode", "max_hold_ms", "value")
    NAMES_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    WAIT_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    MAX_HOLD_MS_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    owner: str
    ttl_ms: int
    wait_timeout_ms: int
    mode: LockMode
    max_hold_ms: int
    value: str
    def __init__(self, names: _Optional[_Iterable[str]] = ..., owner: _Optional[str] = ..., ttl_ms: _Optional[int] = ..., wait_timeout_ms: _Optional[int] = ..., mode: _Optional[_Union[LockMode, str]] = ..., max_hold_ms: _Optional[int] = ..., value: _Optional[str] = ...) -> None: ...

class HoldSetResponse(_message.Message):
    __slots__ = ("acquired", "renewed", "lost")
    ACQUIRED_FIELD_NUMBER: _ClassVar[int]
    RENEWED_FIELD_NUMBER: _ClassVar[int]
    LOST_FIELD_NUMBER: _ClassVar[int]
    acquired: HoldSetAcquired
    renewed: HoldRenewed
    lost: HoldLost
    def __init__(self, acquired: _Optional[_Union[HoldSetAcquired, _Mapping]] = ..., renewed: _Optional[_Union[HoldRenewed, _Mapping]] = ..., lost: _Optional[_Union[HoldLost, _Mapping]] = ...) -> None: ...

class HoldSetAcquired(_message.Message):
    __slots__ = ("members", "lease_started_after_ms")
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    LEASE_STARTED_AFTER_MS_FIELD_NUMBER: _ClassVar[int]
    members: _containers.RepeatedCompositeFieldContainer[SetMember]
    lease_started_after_ms: int
    def __init__(self, members: _Optional[_Iterable[_Union[SetMember, _Mapping]]] = ..., lease_started_after_ms: _Optional[int] = ...) -> None: ...

class SessionRequest(_message.Message):
    __slots__ = ("op_id", "acquire", "release", "renew", "hold", "inspect", "set_value", "check_fencing_token", "cancel", "close", "ping", "acquire_set", "release_set", "hold_set", "deadline_ms")
    OP_ID_FIELD_NUMBER: _ClassVar[int]
    ACQUIRE_FIELD_NUMBER: _ClassVar[int]
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    RENEW_FIELD_NUMBER: _ClassVar[int]
    HOLD_FIELD_NUMBER: _ClassVar[int]
    INSPECT_FIELD_NUMBER: _ClassVar[int]
    SET_VALUE_FIELD_NUMBER: _ClassVar[int]
    CHECK_FENCING_TOKEN_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    CLOSE_FIELD_NUMBER: _ClassVar[int]
    PING_FIELD_NUMBER: _ClassVar[int]
    ACQUIRE_SET_FIELD_NUMBER: _ClassVar[int]
    RELEASE_SET_FIELD_NUMBER: _ClassVar[int]
    HOLD_SET_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_MS_FIELD_NUMBER: _ClassVar[int]
    op_id: int
    acquire: AcquireRequest
    release: ReleaseRequest
    renew: RenewRequest
    hold: HoldRequest
    inspect: InspectRequest
    set_value: SetValueRequest
    check_fencing_token: CheckFencingTokenRequest
    cancel: int
    close: SessionClose
    ping: SessionPing
    acquire_set: AcquireSetRequest
    release_set: ReleaseSetRequest
    hold_set: HoldSetRequest
    deadline_ms: int
    def __init__(self, op_id: _Optional[int] = ..., acquire: _Optional[_Union[AcquireRequest, _Mapping]] = ..., release: _Optional[_Union[ReleaseRequest, _Mapping]] = ..., renew: _Optional[_Union[RenewRequest, _Mapping]] = ..., hold: _Optional[_Union[HoldRequest, _Mapping]] = ..., inspect: _Optional[_Union[InspectRequest, _Mapping]] = ..., set_value: _Optional[_Union[SetValueRequest, _Mapping]] = ..., check_fencing_token: _Optional[_Union[CheckFencingTokenRequest, _Mapping]] = ..., cancel: _Optional[int] = ..., close: _Optional[_Union[SessionClose, _Mapping]] = ..., ping: _Optional[_Union[SessionPing, _Mapping]] = ..., acquire_set: _Optional[_Union[AcquireSetRequest, _Mapping]] = ..., release_set: _Optional[_Union[ReleaseSetRequest, _Mapping]] = ..., hold_set: _Optional[_Union[HoldSetRequest, _Mapping]] = ..., deadline_ms: _Optional[int] = ...) -> None: ...

class SessionPing(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SessionPong(_message.Message):
    __slots__ = ("received_after_ms",)
    RECEIVED_AFTER_MS_FIELD_NUMBER: _ClassVar[int]
    received_after_ms: int
    def __init__(self, received_after_ms: _Optional[int] = ...) -> None: ...

class SessionClose(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SessionResponse(_message.Message):
    __slots__ = ("op_id", "acquire", "release", "renew", "hold", "inspect", "set_value", "check_fencing_token", "error", "renewed", "lost", "pong", "acquire_set", "release_set", "hold_set")
    OP_ID_FIELD_NUMBER: _ClassVar[int]
    ACQUIRE_FIELD_NUMBER: _ClassVar[int]
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    RENEW_FIELD_NUMBER: _ClassVar[int]
    HOLD_FIELD_NUMBER: _ClassVar[int]
    INSPECT_FIELD_NUMBER: _ClassVar[int]
    SET_VALUE_FIELD_NUMBER: _ClassVar[int]
    CHECK_FENCING_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    RENEWED_FIELD_NUMBER: _ClassVar[int]
    LOST_FIELD_NUMBER: _ClassVar[int]
    PONG_FIELD_NUMBER: _ClassVar[int]
    ACQUIRE_SET_FIELD_NUMBER: _ClassVar[int]
    RELEASE_SET_FIELD_NUMBER: _ClassVar[int]
    HOLD_SET_FIELD_NUMBER: _ClassVar[int]
    op_id: int
    acquire: AcquireResponse
    release: ReleaseResponse
    renew: RenewResponse
    hold: HoldAcquired
    inspect: InspectResponse
    set_value: SetValueResponse
    check_fencing_token: CheckFencingTokenResponse
    error: OpError
    renewed: SessionRenewed
    lost: HoldLost
    pong: SessionPong
    acquire_set: AcquireSetResponse
    release_set: ReleaseSetResponse
    hold_set: HoldSetAcquired
    def __init__(self, op_id: _Optional[int] = ..., acquire: _Optional[_Union[AcquireResponse, _Mapping]] = ..., release: _Optional[_Union[ReleaseResponse, _Mapping]] = ..., renew: _Optional[_Union[RenewResponse, _Mapping]] = ..., hold: _Optional[_Union[HoldAcquired, _Mapping]] = ..., inspect: _Optional[_Union[InspectResponse, _Mapping]] = ..., set_value: _Optional[_Union[SetValueResponse, _Mapping]] = ..., check_fencing_token: _Optional[_Union[CheckFencingTokenResponse, _Mapping]] = ..., error: _Optional[_Union[OpError, _Mapping]] = ..., renewed: _Optional[_Union[SessionRenewed, _Mapping]] = ..., lost: _Optional[_Union[HoldLost, _Mapping]] = ..., pong: _Optional[_Union[SessionPong, _Mapping]] = ..., acquire_set: _Optional[_Union[AcquireSetResponse, _Mapping]] = ..., release_set: _Optional[_Union[ReleaseSetResponse, _Mapping]] = ..., hold_set: _Optional[_Union[HoldSetAcquired, _Mapping]] = ...) -> None: ...

class OpError(_message.Message):
    __slots__ = ("code", "message")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class SessionRenewed(_message.Message):
    __slots__ = ("ttl_ms", "lease_started_after_ms", "locks")
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    LEASE_STARTED_AFTER_MS_FIELD_NUMBER: _ClassVar[int]
    LOCKS_FIELD_NUMBER: _ClassVar[int]
    ttl_ms: int
    lease_started_after_ms: int
    locks: int
    def __init__(self, ttl_ms: _Optional[int] = ..., lease_started_after_ms: _Optional[int] = ..., locks: _Optional[int] = ...) -> None: ...
