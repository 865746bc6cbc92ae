// This crate's integration tests, one binary: each file in this folder is a module here
// rather than a test target of its own, so that the dependencies' code is compiled and
// linked once instead of once per file (minutes of the test stage and most of its
// disk). Run one file's tests with a filter: `cargo test -p kubegen-apiserver --test
// integration admin_api::`.

mod admin_api;
mod builtin_validation;
mod cel_validation;
mod kube_apiserver_parity;
mod module_graph;
