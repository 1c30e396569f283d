//! The client against live servers: clients/test-clients.sh starts them, clients/rust/steps.sh
//! passes their addresses. The tests that freeze a server start their own.

mod deadlock;
mod errors;
mod hold;
mod session;
mod support;
mod tls;
