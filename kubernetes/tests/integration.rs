// This crate's integration tests, one binary: each file in this folder is a module here
// rather than a test target of its own, so that the dependencies' code is compiled and
// linked once instead of once per file (minutes of the test stage and most of its
// disk). Run one file's tests with a filter: `cargo test -p kubegen-kubernetes --test
// integration builtin_e2e::`.

mod builtin_e2e;
mod compact;
