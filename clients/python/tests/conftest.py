"""pytest's setup for the client's tests, read before any test module imports grpc."""

import os

# The tests start servers, holders and uvicorn as child processes while channels are open. With
# grpcio 1.80 on Python 3.9 (whose subprocess forks, where 3.10+ uses vfork) gRPC's fork handlers
# can abort such a child between fork and exec (grpc/grpc#43055); the children exec at once and
# need none of them. The children inherit the setting.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
