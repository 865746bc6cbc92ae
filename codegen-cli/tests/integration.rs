// This crate's integration tests, one binary: each file in this folder is a module here
// rather than a test target of its own, so that the dependencies' code is compiled and
// linked once instead of once per file (minutes of the test stage and most of its
// disk). Run one file's tests with a filter: `cargo test -p kubegen --test integration
// cli::`.

mod cli;
mod crd_controller_gen;
mod crd_errors;
mod crd_rejected;
mod crdgen;
mod manifests;
mod roundtrip;
mod rust_errors;
mod rust_input;
