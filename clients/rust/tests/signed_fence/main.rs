//! The fencing kit's resource side (features guard, redis-store, postgres-store): the conformance
//! vectors with wrong implementations as negative controls, the guard over HTTP and gRPC on each
//! store's real backend (redis-server and PostgreSQL processes of the tests' own), the stores'
//! outages, and, when clients/test-clients.sh runs a server that signs fences, real signed grants.

mod grpc;
mod guard;
mod live;
mod outage;
mod support;
mod vectors;
