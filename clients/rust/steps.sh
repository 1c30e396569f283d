# The Rust client's steps of clients/test-clients.sh (sourced there).
