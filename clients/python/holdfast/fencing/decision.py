"""What a store answers, and how a refusal reads (the words of fencing.json's `refusal`)."""

import collections

from holdfast.fencing.refusals import FenceRefused

# accepted: the token was not older than the newest recorded, and is now recorded;
# newest: the newest token for the lock after this check (an int).
Decision = collections.namedtuple("Decision", ["accepted", "newest"])


def decide(newest, token):
    """The rule every store applies atomically: a token equal to or newer than the newest is accepted."""
    if newest is not None and token < newest:
        return Decision(False, newest)
    return Decision(True, token)


class StaleToken(FenceRefused):
    """A request's fencing token is older than the newest one seen for its lock: its holder's lease
    ended and someone else has held the lock since."""

    error, status, grpc_code = "stale_fencing_token", 409, "FAILED_PRECONDITION"

    def __init__(self, lock, token, newest):
        self.lock, self.token, self.newest = lock, token, newest
        super().__init__(f'stale fencing token for lock "{lock}": {token} is older than {newest}, the newest seen',
                         lock=lock, token=str(token), newest=str(newest))


def enforce(store, lock, token):
    """Checks (and records) the token in the store; raises StaleToken when it is refused."""
    decision = store.check(lock, token)
    if not decision.accepted:
        raise StaleToken(lock, token, decision.newest)
    return decision
