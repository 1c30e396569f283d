"""A holder for the Kleppmann scenario: holds the lock, checks its lease, prints "holding TOKEN",
then waits for a line on stdin (the test pauses it here, past its lease) and writes that line to
the storage service with its fence, printing the status it got. It does not check the lease again
before the write: the pause falls between the check and the write, where no check can help.

    fence_holder.py ADDR STORAGE NAME KEY TTL_MS
"""

import sys

import holdfast
import support

sys.path.insert(0, str(support.CLIENT_ROOT / "examples"))
import fenced_storage


def main():
    addr, storage, name, key, ttl_ms = sys.argv[1:]
    with holdfast.channel(addr) as channel, holdfast.lock(channel, name, ttl_ms=int(ttl_ms), wait_ms=10_000) as lease:
        lease.check()
        print(f"holding {lease.fencing_token}", flush=True)
        value = sys.stdin.readline().strip()
        status, body = fenced_storage.put(storage, key, value, lease.fence())
        print(f"wrote {status} {body}", flush=True)


if __name__ == "__main__":
    main()
